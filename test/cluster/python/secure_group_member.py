#!/usr/bin/python3
"""A librdkafka (python3-confluent-kafka) group member over SASL_SSL with SCRAM-SHA-256, driven by
test/cluster/secure-cluster-strict.test.ts.

Usage: secure_group_member.py < request.json, where the request has bootstrap, ca (the CA's PEM file),
user, password, group, topic and count. Joins the group, reads `count` records from wherever the group's
committed offsets are, commits synchronously and prints one JSON document {"values": [...], "assigned":
[...]}; an error (a failed commit, a consumer error, no `count` records in 45 s) is printed as
{"error": ...} with exit status 1.
"""
import json
import sys
import time

from confluent_kafka import Consumer


def main():
    req = json.load(sys.stdin)
    consumer = Consumer({
        "bootstrap.servers": req["bootstrap"],
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-256",
        "sasl.username": req["user"],
        "sasl.password": req["password"],
        "ssl.ca.location": req["ca"],
        "group.id": req["group"],
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })
    values = []
    assigned = []
    try:
        consumer.subscribe([req["topic"]], on_assign=lambda _c, parts: assigned.extend(p.partition for p in parts))
        deadline = time.time() + 45
        while len(values) < req["count"]:
            if time.time() > deadline:
                raise RuntimeError(f"read {len(values)} of {req['count']} records in 45 s")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                raise RuntimeError(str(msg.error()))
            values.append(msg.value().decode())
        consumer.commit(asynchronous=False)
    except Exception as err:  # the test shows the error text
        print(json.dumps({"error": str(err)}))
        sys.exit(1)
    finally:
        consumer.close()
    print(json.dumps({"values": values, "assigned": sorted(assigned)}))


main()
