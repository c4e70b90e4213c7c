"""confluent-kafka-python's Schema Registry serdes (Debian's python3-confluent-kafka) against Skein.

Reads one JSON request on stdin, prints one JSON answer on stdout. Operations:
  produce_json   SerializingProducer + JSONSerializer: registers the schema, writes the values
  consume_json   DeserializingConsumer + JSONDeserializer: reads `count` values from the start
  consume_protobuf  DeserializingConsumer + ProtobufDeserializer of a message class built at run time
                 from the request's fields (no protoc): reads `count` values as dicts
Values cross as JSON.
"""
import json
import sys

from confluent_kafka import DeserializingConsumer, SerializingProducer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer


def produce_json(req):
    registry = SchemaRegistryClient({"url": req["registry"]})
    serializer = JSONSerializer(req["schema"], registry, lambda obj, ctx: obj)
    producer = SerializingProducer({"bootstrap.servers": req["bootstrap"], "value.serializer": serializer})
    errors = []
    for value in req["values"]:
        producer.produce(req["topic"], value=value, on_delivery=lambda err, msg: errors.append(str(err)) if err else None)
    producer.flush(30)
    return {"errors": errors}


def consume(req, deserializer):
    consumer = DeserializingConsumer({
        "bootstrap.servers": req["bootstrap"],
        "group.id": req.get("group", "py-serdes"),
        "auto.offset.reset": "earliest",
        "value.deserializer": deserializer,
    })
    consumer.subscribe([req["topic"]])
    values = []
    try:
        for _ in range(300):
            if len(values) >= req["count"]:
                break
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            values.append(msg.value())
    finally:
        consumer.close()
    return {"values": values}


def consume_json(req):
    return consume(req, JSONDeserializer(req["schema"], lambda obj, ctx: obj))


def protobuf_class(package, message, fields):
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.json_format import MessageToDict

    file_proto = descriptor_pb2.FileDescriptorProto(name=package + ".proto", package=package, syntax="proto3")
    msg = file_proto.message_type.add(name=message)
    types = {"string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING, "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
             "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64, "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
             "double": descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE}
    for f in fields:
        msg.field.add(name=f["name"], number=f["number"], type=types[f["type"]], label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_proto)
    descriptor = pool.FindMessageTypeByName(package + "." + message)
    if hasattr(message_factory, "GetMessageClass"):
        cls = message_factory.GetMessageClass(descriptor)
    else:
        cls = message_factory.MessageFactory(pool).GetPrototype(descriptor)
    return cls, MessageToDict


def consume_protobuf(req):
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer

    cls, to_dict = protobuf_class(req["package"], req["message"], req["fields"])
    try:
        deserializer = ProtobufDeserializer(cls, {"use.deprecated.format": False})
    except TypeError:
        deserializer = ProtobufDeserializer(cls)
    answer = consume(req, deserializer)
    answer["values"] = [to_dict(v, preserving_proto_field_name=True) for v in answer["values"]]
    return answer


OPS = {"produce_json": produce_json, "consume_json": consume_json, "consume_protobuf": consume_protobuf}

if __name__ == "__main__":
    request = json.load(sys.stdin)
    print(json.dumps(OPS[sys.argv[1]](request)))
