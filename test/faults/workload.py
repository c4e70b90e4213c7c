#!/usr/bin/python3
"""The fault suite's librdkafka workload (python3-confluent-kafka), one JSON line per event on stdout.

Debian's confluent_kafka/kafkatest verifiable producer and consumer are Python 2 code (dict.iteritems)
and do not run on Python 3, so this plays their part: a verifiable producer and consumer.

  workload.py produce --bootstrap B --topic T --prefix P [--rate N] [--acks -1] [--idempotent]
      sends P-0, P-1, ... (no key) until SIGTERM, then flushes; one line per delivery report:
      {"type":"send","client":P,"seq":i,"value":"P-i","outcome":"ok"|"fail","partition":p,"offset":o,
       "error":e,"acks":-1,"time":ms}
  workload.py consume --bootstrap B --topic T --partitions N --client C [--isolation read_committed]
      [--drain --timeout S]
      assigns every partition from the beginning (no group); one line per record:
      {"type":"poll","client":C,"partition":p,"offset":o,"value":v,"isolation":i,"time":ms}
      With --drain it exits once every partition's position is at or past its high watermark, or after
      --timeout seconds with a {"type":"drain-incomplete",...} line.
"""
import argparse
import json
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition, OFFSET_BEGINNING

running = True


def stop(_sig, _frame):
    global running
    running = False


signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)


def now_ms():
    return int(time.time() * 1000)


def emit(d):
    sys.stdout.write(json.dumps(d) + "\n")
    sys.stdout.flush()


def produce(args):
    conf = {
        "bootstrap.servers": args.bootstrap,
        "acks": str(args.acks),
        "enable.idempotence": args.idempotent,
        "linger.ms": 5,
        # Long enough to ride out a leader election (about the ZooKeeper session timeout).
        "message.timeout.ms": args.message_timeout_ms,
        "retry.backoff.ms": 100,
        "socket.timeout.ms": 5000,
        "topic.metadata.refresh.interval.ms": 2000,
    }
    seq_of = {}

    def report(err, msg):
        value = msg.value().decode()
        d = {"type": "send", "client": args.prefix, "seq": seq_of.pop(value), "value": value, "acks": args.acks, "time": now_ms()}
        if err is None:
            d.update(outcome="ok", partition=msg.partition(), offset=msg.offset())
        else:
            d.update(outcome="fail", error=err.name())
        emit(d)

    producer = Producer(conf)
    delay = 1.0 / args.rate if args.rate > 0 else 0
    i = 0
    next_at = time.time()
    while running:
        value = "%s-%d" % (args.prefix, i)
        try:
            producer.produce(args.topic, value=value.encode(), on_delivery=report)
            seq_of[value] = i
            i += 1
        except BufferError:
            producer.poll(0.1)
            continue
        next_at += delay
        while running:
            remaining = next_at - time.time()
            producer.poll(max(0.0, remaining))
            if remaining <= 0:
                break
    producer.flush(args.flush_timeout)
    for value, seq in list(seq_of.items()):  # never reported: the outcome is unknown
        emit({"type": "send", "client": args.prefix, "seq": seq, "value": value, "acks": args.acks, "outcome": "fail", "error": "UNREPORTED", "time": now_ms()})
    emit({"type": "done", "client": args.prefix, "sent": i})


def ends(consumer, topic, partitions):
    """partition -> (position, high watermark); None where unknown (no position yet, or a leader not answering)."""
    out = {}
    positions = {tp.partition: tp.offset for tp in consumer.position([TopicPartition(topic, p) for p in partitions])}
    for p in partitions:
        try:
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)
        except Exception:  # e.g. NOT_LEADER_FOR_PARTITION while metadata catches up: ask again later
            high = None
        pos = positions.get(p)
        out[p] = (pos if pos is not None and pos >= 0 else None, high)
    return out


def consume(args):
    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": "faults-" + args.client,  # required by the client; assign() joins no group
        "enable.auto.commit": False,
        "isolation.level": args.isolation,
        "enable.partition.eof": True,
        "topic.metadata.refresh.interval.ms": 2000,
        "socket.timeout.ms": 5000,
    })
    partitions = list(range(args.partitions))
    consumer.assign([TopicPartition(args.topic, p, OFFSET_BEGINNING) for p in partitions])
    deadline = time.time() + args.timeout if args.drain else None
    next_check = 0.0
    while running:
        if deadline is not None and time.time() > deadline:
            emit({"type": "drain-incomplete", "client": args.client, "ends": ends(consumer, args.topic, partitions)})
            break
        msg = consumer.poll(0.5)
        if msg is None or msg.error() is not None:
            if msg is not None and msg.error().code() != KafkaError._PARTITION_EOF:
                emit({"type": "consumer-error", "client": args.client, "error": msg.error().name(), "time": now_ms()})
            # Drained: every partition's position at or past its high watermark (asked of the leaders).
            if args.drain and time.time() >= next_check:
                next_check = time.time() + 1
                if all(pos is not None and high is not None and pos >= high for pos, high in ends(consumer, args.topic, partitions).values()):
                    break
            continue
        emit({"type": "poll", "client": args.client, "partition": msg.partition(), "offset": msg.offset(),
              "value": msg.value().decode(), "isolation": args.isolation, "time": now_ms()})
    consumer.close()
    emit({"type": "done", "client": args.client})


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="op", required=True)
    p = sub.add_parser("produce")
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--rate", type=int, default=100)
    p.add_argument("--acks", type=int, default=-1)
    p.add_argument("--idempotent", action="store_true")
    p.add_argument("--message-timeout-ms", type=int, default=60000)
    p.add_argument("--flush-timeout", type=float, default=30)
    c = sub.add_parser("consume")
    c.add_argument("--bootstrap", required=True)
    c.add_argument("--topic", required=True)
    c.add_argument("--partitions", type=int, required=True)
    c.add_argument("--client", required=True)
    c.add_argument("--isolation", default="read_committed")
    c.add_argument("--drain", action="store_true")
    c.add_argument("--timeout", type=float, default=60)
    args = parser.parse_args()
    produce(args) if args.op == "produce" else consume(args)


if __name__ == "__main__":
    main()
