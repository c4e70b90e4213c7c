#!/usr/bin/python3
"""A steady acks=all, idempotent load through librdkafka (python3-confluent-kafka) for the cluster-operations
tests: one record per partition every interval_ms, and one JSON line per delivery report on stdout:
{"p": partition, "v": value, "t": epoch ms, "err": null or the error, "retriable": bool}.
A fatal error of the idempotent producer (librdkafka raises one when the broker's answer contradicts its
sequence bookkeeping, e.g. OUT_OF_ORDER_SEQUENCE_NUMBER for the next batch after every earlier one was
acknowledged) ends the load: one line {"fatal": the error} and exit status 1 (nothing more can be produced).

Usage: acked_load.py < {"bootstrap": "...", "topic": "t", "partitions": [0, 1], "interval_ms": 10[, "debug": "broker,msg"]}
(debug: librdkafka's debug contexts, logged on stderr)
Runs until SIGTERM (or stdin closes), then waits for the outstanding reports (30 s at most) and exits.
"""
import json
import signal
import sys
import time

from confluent_kafka import KafkaException, Producer

req = json.loads(sys.stdin.readline())
running = True


fatal_error = None


def stop(*_):
    global running
    running = False


def on_error(err):
    global fatal_error, running
    if err.fatal():
        fatal_error = str(err)
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
    "error_cb": lambda err: on_error(err),
})


def report(err, msg):
    line = {"p": msg.partition(), "v": msg.value().decode(), "t": int(time.time() * 1000), "err": None if err is None else str(err),
            "retriable": False if err is None else bool(err.retriable())}
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


i = 0
interval = req.get("interval_ms", 10) / 1000.0
try:
    while running:
        for p in req["partitions"]:
            producer.produce(req["topic"], value=f"{req['topic']}-{p}-{i}".encode(), partition=p, on_delivery=report)
        i += 1
        producer.poll(interval)
except KafkaException as e:
    # produce() only says "Fatal error"; error_cb, served by poll, names it.
    for _ in range(20):
        if fatal_error is not None:
            break
        producer.poll(0.05)
    fatal_error = fatal_error or str(e.args[0])
if fatal_error is not None:
    sys.stdout.write(json.dumps({"fatal": fatal_error}) + "\n")
    sys.stdout.flush()
    sys.exit(1)
producer.flush(30)
