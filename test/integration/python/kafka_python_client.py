#!/usr/bin/python3
"""kafka-python (Debian's python3-kafka) driven by the integration tests.

Usage: kafka_python_client.py OP < request.json ; prints one JSON document. Bytes travel as base64.
api_version is left to kafka-python's own probing, so what it negotiates is what is tested.
"""
import base64
import json
import sys

import kafka.codec
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError


def b64(data):
    return None if data is None else base64.b64encode(data).decode()


def unb64(text):
    return None if text is None else base64.b64decode(text)


def op_codecs(_req):
    return {"gzip": kafka.codec.has_gzip(), "snappy": kafka.codec.has_snappy(), "lz4": kafka.codec.has_lz4(),
            "zstd": bool(getattr(kafka.codec, "has_zstd", lambda: False)())}


def op_create_topics(req):
    admin = KafkaAdminClient(bootstrap_servers=req["bootstrap"], request_timeout_ms=15000)
    topics = [NewTopic(t["name"], t["partitions"], 1) for t in req["topics"]]
    try:
        res = admin.create_topics(topics, timeout_ms=10000)
        out = {name: code for name, code, *_ in res.topic_errors}
    except KafkaError as err:  # kafka-python raises for the first failed topic; report its code
        out = {t.name: err.errno for t in topics}
    admin.close()
    return out


def op_delete_topics(req):
    admin = KafkaAdminClient(bootstrap_servers=req["bootstrap"], request_timeout_ms=15000)
    res = admin.delete_topics(req["topics"], timeout_ms=10000)
    out = {name: code for name, code in res.topic_error_codes}
    admin.close()
    return out


def op_list_topics(req):
    admin = KafkaAdminClient(bootstrap_servers=req["bootstrap"], request_timeout_ms=15000)
    out = sorted(admin.list_topics())
    admin.close()
    return out


def op_produce(req):
    producer = KafkaProducer(bootstrap_servers=req["bootstrap"], acks=req.get("acks", 1), compression_type=req.get("compression"),
                             linger_ms=20, request_timeout_ms=15000, max_block_ms=15000)
    futures = []
    for m in req["messages"]:
        headers = [(k, unb64(v)) for k, v in m.get("headers", [])]
        futures.append(producer.send(req["topic"], value=unb64(m.get("value")), key=unb64(m.get("key")), partition=m.get("partition"),
                                     headers=headers, timestamp_ms=m.get("timestamp")))
    producer.flush(timeout=20)
    reports = []
    for f in futures:
        md = f.get(timeout=20)
        reports.append({"partition": md.partition, "offset": md.offset})
    producer.close(timeout=10)
    return {"reports": reports}


def op_consume(req):
    """group_id=None: no coordinator; assign() then seek_to_beginning(), read to the end offsets."""
    consumer = KafkaConsumer(bootstrap_servers=req["bootstrap"], group_id=None, enable_auto_commit=False,
                             consumer_timeout_ms=req.get("idle_ms", 3000), request_timeout_ms=15000)
    parts = [TopicPartition(req["topic"], p) for p in req["partitions"]]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    end = consumer.end_offsets(parts)
    out = []
    for msg in consumer:
        out.append({"partition": msg.partition, "offset": msg.offset, "key": b64(msg.key), "value": b64(msg.value),
                    "timestamp": msg.timestamp, "headers": [[k, b64(v)] for k, v in msg.headers]})
        if all(consumer.position(tp) >= end[tp] for tp in parts):
            break
    consumer.close()
    return {"messages": out, "end": {str(tp.partition): off for tp, off in end.items()}}


def op_offsets_for_times(req):
    """KafkaConsumer.offsets_for_times (ListOffsets by timestamp) for each time of req["times"]."""
    consumer = KafkaConsumer(bootstrap_servers=req["bootstrap"], group_id=None, request_timeout_ms=15000)
    tp = TopicPartition(req["topic"], req["partition"])
    out = []
    for t in req["times"]:
        found = consumer.offsets_for_times({tp: t})[tp]
        out.append(None if found is None else {"offset": found.offset, "timestamp": found.timestamp})
    consumer.close()
    return out


OPS = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}

if __name__ == "__main__":
    request = json.load(sys.stdin)
    print(json.dumps(OPS[sys.argv[1]](request)))
