#!/usr/bin/python3
"""librdkafka through python3-confluent-kafka, driven by the integration tests.

Usage: confluent_client.py OP < request.json ; prints one JSON document. Bytes travel as base64 so keys,
values and headers can be compared byte for byte. Every wait is bounded; a timeout is an error exit.
"""
import base64
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic


def b64(data):
    return None if data is None else base64.b64encode(data).decode()


def unb64(text):
    return None if text is None else base64.b64decode(text)


def admin(req):
    return AdminClient({"bootstrap.servers": req["bootstrap"], "socket.timeout.ms": 10000})


def wait_all(futures, timeout=15):
    out = {}
    for name, fut in futures.items():
        try:
            res = fut.result(timeout=timeout)
            out[str(name)] = {"ok": True, "result": res}
        except Exception as err:  # the test asserts on the error text
            out[str(name)] = {"ok": False, "error": str(err)}
    return out


def op_create_topics(req):
    topics = [NewTopic(t["name"], num_partitions=t["partitions"], replication_factor=1, config=t.get("config", {})) for t in req["topics"]]
    client = admin(req)  # kept referenced: a collected handle fails its futures
    res = wait_all(client.create_topics(topics, operation_timeout=10, request_timeout=15))
    return {k: {"ok": v["ok"], "error": v.get("error")} for k, v in res.items()}


def op_delete_topics(req):
    client = admin(req)
    res = wait_all(client.delete_topics(req["topics"], operation_timeout=10, request_timeout=15))
    return {k: {"ok": v["ok"], "error": v.get("error")} for k, v in res.items()}


def op_list_topics(req):
    client = admin(req)
    md = client.list_topics(timeout=15)
    return {
        "brokers": [{"id": b.id, "host": b.host, "port": b.port} for b in md.brokers.values()],
        "controller": md.controller_id,
        "topics": {
            name: {
                "error": None if t.error is None else t.error.code(),
                "partitions": sorted(
                    [{"id": p.id, "leader": p.leader, "replicas": list(p.replicas), "isrs": list(p.isrs)} for p in t.partitions.values()],
                    key=lambda p: p["id"],
                ),
            }
            for name, t in md.topics.items()
        },
    }


def op_describe_configs(req):
    client = admin(req)
    res = client.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, req["topic"])], request_timeout=15)
    out = {}
    for _, fut in res.items():
        configs = fut.result(timeout=15)
        for name, entry in configs.items():
            out[name] = {"value": entry.value, "is_default": entry.is_default, "read_only": entry.is_read_only, "source": int(entry.source)}
    return out


def op_alter_configs(req):
    resource = ConfigResource(ConfigResource.Type.TOPIC, req["topic"], set_config=req["config"])
    client = admin(req)
    res = wait_all(client.alter_configs([resource], request_timeout=15))
    return {k: {"ok": v["ok"], "error": v.get("error")} for k, v in res.items()}


def op_produce(req):
    conf = {"bootstrap.servers": req["bootstrap"], "acks": str(req.get("acks", 1)), "compression.type": req.get("compression", "none"),
            "linger.ms": 20, "enable.idempotence": False, "message.timeout.ms": 15000}
    producer = Producer(conf)
    reports = [None] * len(req["messages"])

    def on_delivery(index):
        def cb(err, msg):
            reports[index] = {"error": None if err is None else str(err), "partition": msg.partition(), "offset": msg.offset()}
        return cb

    for i, m in enumerate(req["messages"]):
        kwargs = {"value": unb64(m.get("value")), "key": unb64(m.get("key")), "on_delivery": on_delivery(i)}
        if m.get("partition") is not None:
            kwargs["partition"] = m["partition"]
        if m.get("headers"):
            kwargs["headers"] = [(k, unb64(v)) for k, v in m["headers"]]
        if m.get("timestamp") is not None:
            kwargs["timestamp"] = m["timestamp"]
        producer.produce(req["topic"], **kwargs)
    remaining = producer.flush(20)
    if remaining:
        raise SystemExit(f"{remaining} messages not delivered within 20 s")
    return {"reports": reports}


def op_consume(req):
    """assign() with explicit offsets: no group coordinator needed (group.id is mandatory in librdkafka
    but only used for commits, which are disabled)."""
    consumer = Consumer({"bootstrap.servers": req["bootstrap"], "group.id": "skein-unused", "enable.auto.commit": False,
                         "enable.auto.offset.store": False, "enable.partition.eof": True, "auto.offset.reset": "error",
                         "socket.timeout.ms": 10000})
    parts = [TopicPartition(req["topic"], p, req.get("offset", 0)) for p in req["partitions"]]
    consumer.assign(parts)
    want_eof = set(req["partitions"])
    out = []
    deadline = time.time() + req.get("timeout", 20)
    while want_eof and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() == KafkaError._PARTITION_EOF:
                want_eof.discard(msg.partition())
                continue
            raise SystemExit(f"consumer error: {msg.error()}")
        out.append({"partition": msg.partition(), "offset": msg.offset(), "key": b64(msg.key()), "value": b64(msg.value()),
                    "timestamp": msg.timestamp()[1], "headers": [[k, b64(v)] for k, v in (msg.headers() or [])]})
    consumer.close()
    if want_eof:
        raise SystemExit(f"no end of partition for {sorted(want_eof)} within the timeout")
    return {"messages": out}


def op_offsets(req):
    consumer = Consumer({"bootstrap.servers": req["bootstrap"], "group.id": "skein-unused", "enable.auto.commit": False})
    out = {}
    low, high = consumer.get_watermark_offsets(TopicPartition(req["topic"], req["partition"]), timeout=15)
    out["low"], out["high"] = low, high
    out["for_times"] = []
    for ts in req["timestamps"]:
        found = consumer.offsets_for_times([TopicPartition(req["topic"], req["partition"], ts)], timeout=15)
        out["for_times"].append(found[0].offset)
    consumer.close()
    return out


OPS = {name[3:]: fn for name, fn in globals().items() if name.startswith("op_")}

if __name__ == "__main__":
    request = json.load(sys.stdin)
    print(json.dumps(OPS[sys.argv[1]](request)))
