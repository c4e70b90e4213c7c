"""A produce-then-consume round trip over a secured listener, with kafka-python or confluent-kafka
(librdkafka). Reads JSON from stdin: {"client": "kafka-python"|"confluent", "bootstrap", "topic",
"value", "security": {...client-native config...}}; prints JSON: {"ok": true, "values": [...]} or
{"ok": false, "error": "<type>: <message>"}."""
import json
import sys
import time

req = json.load(sys.stdin)
client = req["client"]
bootstrap = req["bootstrap"]
topic = req["topic"]
value = req["value"].encode()
security = req.get("security", {})


def kafka_python():
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.errors import KafkaError
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, request_timeout_ms=10000, max_block_ms=10000, api_version_auto_timeout_ms=10000, **security)
        md = producer.send(topic, value=value, partition=0).get(timeout=15)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, consumer_timeout_ms=5000, api_version_auto_timeout_ms=10000, **security)
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek(tp, md.offset)
        values = []
        for msg in consumer:
            values.append(msg.value.decode())
            break
        consumer.close()
        return {"ok": True, "offset": md.offset, "values": values}
    except Exception as e:  # noqa: BLE001 - the test asserts on the error's type and message
        return {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}


def confluent():
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
    errors = []
    conf = {"bootstrap.servers": bootstrap, "error_cb": lambda e: errors.append(str(e)), "socket.timeout.ms": 10000}
    conf.update(security)
    producer = Producer(dict(conf, **{"message.timeout.ms": 6000}))
    reports = []
    producer.produce(topic, value=value, partition=0, on_delivery=lambda err, msg: reports.append((err, msg)))
    producer.flush(15)
    if not reports or reports[0][0] is not None:
        return {"ok": False, "error": "%s; %s" % (reports[0][0] if reports else "no delivery report", "; ".join(errors))}
    offset = reports[0][1].offset()
    consumer = Consumer(dict(conf, **{"group.id": "secure-rt", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(topic, 0, offset)])
    values = []
    deadline = time.time() + 15
    while time.time() < deadline and not values:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            errors.append(str(msg.error()))
            continue
        values.append(msg.value().decode())
    consumer.close()
    return {"ok": bool(values), "offset": offset, "values": values, "error": "; ".join(errors)}


print(json.dumps(kafka_python() if client == "kafka-python" else confluent()))
