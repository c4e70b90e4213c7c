#!/usr/bin/python3
"""A steady acks=all, idempotent load through librdkafka (python3-confluent-kafka) for the cluster-operations
tests: one record per partition every interval_ms, and one JSON line per delivery report on stdout:
{"p": partition, "v": value, "t": epoch ms, "err": null or the error, "retriable": bool}.

Usage: acked_load.py < {"bootstrap": "...", "topic": "t", "partitions": [0, 1], "interval_ms": 10[, "debug": "broker,msg"]}
(debug: librdkafka's debug contexts, logged on stderr)
Runs until SIGTERM (or stdin closes), then waits for the outstanding reports (30 s at most) and exits.
"""
import json
import signal
import sys
import time

from confluent_kafka import Producer

req = json.loads(sys.stdin.readline())
running = True


def stop(*_):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
producer = Producer({
    "bootstrap.servers": req["bootstrap"],
    "acks": "all",
    "enable.idempotence": True,
    "linger.ms": 0,
    "retry.backoff.ms": 50,
    "message.timeout.ms": 60000,
    **({"debug": req["debug"]} if req.get("debug") else {}),
})


def report(err, msg):
    line = {"p": msg.partition(), "v": msg.value().decode(), "t": int(time.time() * 1000), "err": None if err is None else str(err),
            "retriable": False if err is None else bool(err.retriable())}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


i = 0
interval = req.get("interval_ms", 10) / 1000.0
while running:
    for p in req["partitions"]:
        producer.produce(req["topic"], value=f"{req['topic']}-{p}-{i}".encode(), partition=p, on_delivery=report)
    i += 1
    producer.poll(interval)
producer.flush(30)
