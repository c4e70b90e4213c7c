#!/usr/bin/python3
"""Transactions through python3-confluent-kafka (librdkafka), driven by transactions-confluent.test.ts.

Usage: confluent_txn.py OP < request.json ; prints one JSON document. Every wait is bounded; a timeout
is an error exit.
  produce: {bootstrap, topic, transactional_id, transactions: [{values: [str], commit: bool}]}
  consume: {bootstrap, topic, group, isolation, expected} -> {values: [str]} (stops at expected + quiet)
  copy:    {bootstrap, input, output, group, transactional_id, expected, batch}: consume-transform-produce
           with send_offsets_to_transaction, one transaction per batch -> {copied, transactions}
"""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer


def txn_producer(req):
    return Producer({"bootstrap.servers": req["bootstrap"], "transactional.id": req["transactional_id"], "transaction.timeout.ms": 30000})


def op_produce(req):
    p = txn_producer(req)
    p.init_transactions(30)
    for t in req["transactions"]:
        p.begin_transaction()
        for v in t["values"]:
            p.produce(req["topic"], value=v.encode())
        p.flush(30)
        if t["commit"]:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    return {"ok": True}


def op_consume(req):
    c = Consumer({"bootstrap.servers": req["bootstrap"], "group.id": req["group"], "auto.offset.reset": "earliest",
                  "isolation.level": req["isolation"], "enable.auto.commit": False})
    c.subscribe([req["topic"]])
    values = []
    deadline = time.time() + 30
    quiet_until = None
    while time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            values.append(m.value().decode())
            continue
        if len(values) >= req["expected"]:
            quiet_until = quiet_until or time.time() + 1.0
            if time.time() > quiet_until:
                break
    c.close()
    return {"values": values}


def op_copy(req):
    c = Consumer({"bootstrap.servers": req["bootstrap"], "group.id": req["group"], "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    p = txn_producer(req)
    p.init_transactions(30)
    c.subscribe([req["input"]])
    copied = 0
    transactions = 0
    deadline = time.time() + 60
    while copied < req["expected"] and time.time() < deadline:
        msgs = [m for m in c.consume(num_messages=req["batch"], timeout=0.5) if m.error() is None]
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce(req["output"], key=m.key(), value=m.value().decode().upper().encode())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        copied += len(msgs)
        transactions += 1
    c.close()
    return {"copied": copied, "transactions": transactions}


def main():
    op = sys.argv[1]
    req = json.load(sys.stdin)
    try:
        out = {"produce": op_produce, "consume": op_consume, "copy": op_copy}[op](req)
    except KafkaException as err:
        out = {"error": str(err)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
