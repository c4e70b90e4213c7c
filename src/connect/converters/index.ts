// The built-in converters under Kafka's and Confluent's class names (simple names are aliases).
import type { PluginDescriptor } from '../api/plugin.js'
import { ByteArrayConverter, JsonConverter, SimpleHeaderConverter, StringConverter } from './json.js'
import { AvroConverter, JsonSchemaConverter, ProtobufConverter } from './schema-registry-converters.js'

export * from './json.js'
export * from './schema-registry-converters.js'

export const CONVERTER_PLUGINS: readonly PluginDescriptor[] = [
  { className: 'org.apache.kafka.connect.storage.StringConverter', kind: 'converter', aliases: ['StringConverter'], create: () => new StringConverter() },
  { className: 'org.apache.kafka.connect.converters.ByteArrayConverter', kind: 'converter', aliases: ['ByteArrayConverter'], create: () => new ByteArrayConverter() },
  { className: 'org.apache.kafka.connect.json.JsonConverter', kind: 'converter', aliases: ['JsonConverter'], create: () => new JsonConverter() },
  { className: 'io.confluent.connect.avro.AvroConverter', kind: 'converter', aliases: ['AvroConverter'], create: () => new AvroConverter() },
  { className: 'io.confluent.connect.json.JsonSchemaConverter', kind: 'converter', aliases: ['JsonSchemaConverter'], create: () => new JsonSchemaConverter() },
  { className: 'io.confluent.connect.protobuf.ProtobufConverter', kind: 'converter', aliases: ['ProtobufConverter'], create: () => new ProtobufConverter() },
  { className: 'org.apache.kafka.connect.converters.ByteArrayConverter', kind: 'header_converter', aliases: ['ByteArrayConverter'], create: () => new ByteArrayConverter() },
  { className: 'org.apache.kafka.connect.storage.SimpleHeaderConverter', kind: 'header_converter', aliases: ['SimpleHeaderConverter'], create: () => new SimpleHeaderConverter() },
]
