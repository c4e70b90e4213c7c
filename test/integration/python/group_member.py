#!/usr/bin/python3
"""One long-lived consumer-group member for the integration tests, librdkafka (python3-confluent-kafka) or
kafka-python (python3-kafka), steered over stdin and reporting over stdout.

Usage: group_member.py confluent|kafka-python < commands ; the first stdin line is a JSON request
  {"bootstrap", "group", "topic", "strategy": "range"|"roundrobin", "name"}
and later lines are commands: "close" (commit, LeaveGroup, exit 0). Every event is one JSON line:
  {"event": "ready"}                              consumer created and subscribed
  {"event": "assigned", "partitions": [...]}      the full assignment after a rebalance (eager protocol)
  {"event": "revoked", "partitions": [...]}
  {"event": "message", "partition", "offset", "value"}
  {"event": "committed", "offsets": {p: next}}    a synchronous commit succeeded
  {"event": "error", "error": "..."}              a commit or consume error (the test fails on it)
  {"event": "closed"}
Offsets are committed synchronously after every batch of messages, so when the test waits for the
commits before changing the group, no message is handed to two members. Auto-commit is off.
"""
import json
import os
import select
import signal
import sys


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def stdin_command():
    """A command line if one is waiting (never blocks); "close" when stdin hit EOF (the test went away)."""
    ready, _, _ = select.select([sys.stdin], [], [], 0)
    if not ready:
        return None
    line = sys.stdin.readline()
    return line.strip() if line else "close"


def run_confluent(req):
    from confluent_kafka import Consumer, KafkaError, TopicPartition  # noqa: F401

    consumer = Consumer({
        "bootstrap.servers": req["bootstrap"], "group.id": req["group"], "client.id": req.get("name", "librdkafka"),
        "partition.assignment.strategy": req["strategy"], "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 300, "max.poll.interval.ms": 10000,
        "fetch.wait.max.ms": 100, "socket.timeout.ms": 10000, "topic.metadata.refresh.interval.ms": 2000,
    })

    def on_assign(c, parts):
        emit({"event": "assigned", "partitions": sorted(p.partition for p in parts)})

    def on_revoke(c, parts):
        emit({"event": "revoked", "partitions": sorted(p.partition for p in parts)})

    consumer.subscribe([req["topic"]], on_assign=on_assign, on_revoke=on_revoke)
    emit({"event": "ready"})
    while True:
        cmd = stdin_command()
        if cmd == "close":
            break
        msgs = consumer.consume(num_messages=100, timeout=0.1)
        offsets = {}
        for m in msgs:
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    emit({"event": "error", "error": str(m.error())})
                continue
            emit({"event": "message", "partition": m.partition(), "offset": m.offset(), "value": m.value().decode()})
            offsets[m.partition()] = m.offset() + 1
        if offsets:
            try:
                consumer.commit(offsets=[TopicPartition(req["topic"], p, o) for p, o in offsets.items()], asynchronous=False)
                emit({"event": "committed", "offsets": offsets})
            except Exception as err:  # reported, the test decides
                emit({"event": "error", "error": "commit: %s" % err})
    consumer.close()  # LeaveGroup
    emit({"event": "closed"})


def run_kafka_python(req):
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.structs import OffsetAndMetadata

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor}[req["strategy"]]
    consumer = KafkaConsumer(
        bootstrap_servers=req["bootstrap"], group_id=req["group"], client_id=req.get("name", "kafka-python"),
        partition_assignment_strategy=[assignor], enable_auto_commit=False, auto_offset_reset="earliest",
        session_timeout_ms=6000, heartbeat_interval_ms=300, max_poll_interval_ms=10000, request_timeout_ms=15000,
        fetch_max_wait_ms=100, metadata_max_age_ms=2000,
    )

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit({"event": "revoked", "partitions": sorted(tp.partition for tp in revoked)})

        def on_partitions_assigned(self, assigned):
            emit({"event": "assigned", "partitions": sorted(tp.partition for tp in assigned)})

    consumer.subscribe([req["topic"]], listener=Listener())
    emit({"event": "ready"})
    while True:
        cmd = stdin_command()
        if cmd == "close":
            break
        batches = consumer.poll(timeout_ms=100)
        offsets = {}
        for tp, records in batches.items():
            for r in records:
                emit({"event": "message", "partition": tp.partition, "offset": r.offset, "value": r.value.decode()})
                offsets[tp.partition] = r.offset + 1
        if offsets:
            try:
                consumer.commit({TopicPartition(req["topic"], p): OffsetAndMetadata(o, None) for p, o in offsets.items()})
                emit({"event": "committed", "offsets": offsets})
            except Exception as err:  # reported, the test decides
                emit({"event": "error", "error": "commit: %s" % err})
    consumer.close()  # LeaveGroup
    emit({"event": "closed"})


if __name__ == "__main__":
    request = json.loads(sys.stdin.readline())
    # A runaway member (the test crashed without closing stdin) still ends: SIGALRM kills it.
    signal.signal(signal.SIGALRM, lambda *_: os._exit(3))
    signal.alarm(int(request.get("max_seconds", 120)))
    {"confluent": run_confluent, "kafka-python": run_kafka_python}[sys.argv[1]](request)
