#!/usr/bin/python3
"""Produces records to one partition and reads them back with a librdkafka consumer (python3-confluent-kafka)
that has a client.rack, for the fetch-from-follower test (KIP-392). Prints one JSON line:
{"produced": n, "consumed": n, "in_order": bool, "rxbytes": {broker id: bytes received from it}} where
rxbytes are librdkafka's own per-broker statistics (what 0101_fetch_from_follower of librdkafka's suite checks).

Usage: rack_consumer.py < {"bootstrap": "...", "topic": "t", "count": 500, "size": 1000, "rack": "RACK2", "timeout": 60}
"""
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

req = json.loads(sys.stdin.readline())
count, size = req["count"], req["size"]

producer = Producer({"bootstrap.servers": req["bootstrap"], "acks": "all"})
for i in range(count):
    producer.produce(req["topic"], partition=0, value=(f"msg={i}\n".encode() + b"x" * size)[:size])
producer.flush(30)

stats = {}


def on_stats(text):
    global stats
    stats = json.loads(text)


consumer = Consumer({
    "bootstrap.servers": req["bootstrap"],
    "group.id": "rack-consumer",
    "client.rack": req["rack"],
    "enable.auto.commit": False,
    "statistics.interval.ms": 500,
    "stats_cb": on_stats,
})
consumer.assign([TopicPartition(req["topic"], 0, 0)])
consumed, in_order = 0, True
deadline = time.time() + req["timeout"]
while consumed < count and time.time() < deadline:
    m = consumer.poll(1.0)
    if m is None or m.error() is not None:
        continue
    if not m.value().startswith(f"msg={consumed}\n".encode()):
        in_order = False
    consumed += 1
# One more statistics report after the last record, so that it counts every fetch answer.
stats = {}
end = time.time() + 10
while not stats and time.time() < end:
    consumer.poll(0.2)
consumer.close()
# librdkafka may list one node under several entries: the broker it was configured with or learned (a
# connection that fetches: the bytes counted), and the logical GroupCoordinator (a connection of its own for
# the group's requests, never a fetch: left out, as its nodeid would otherwise hide the broker's entry).
rxbytes = {}
for b in stats.get("brokers", {}).values():
    if b.get("nodeid", -1) >= 0 and b.get("source") != "logical":
        rxbytes[str(b["nodeid"])] = rxbytes.get(str(b["nodeid"]), 0) + b["rxbytes"]
print(json.dumps({"produced": count, "consumed": consumed, "in_order": in_order, "rxbytes": rxbytes}))
