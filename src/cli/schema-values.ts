// Schema'd values for the console tools, as Confluent's kafka-avro-console-producer /
// kafka-json-schema-console-producer / kafka-protobuf-console-producer and their consumers do it: with a
// Schema Registry, `skein produce` reads each value as JSON (Avro's JSON encoding for Avro) and writes it
// in the registry's wire format (magic byte, schema id, payload), registering the schema under the
// topic's subject (TopicNameStrategy) unless a schema id is given; `skein consume` prints each value as
// JSON, decoded with the schema its id names. Keys stay as they are.
import { readFileSync } from 'node:fs'
import avsc from 'avsc'
import { SCHEMA_TYPES, type SchemaType } from '../registry/schema-type/types.js'
import {
  AvroDeserializer,
  AvroSerializer,
  avroFromJson,
  JsonSchemaDeserializer,
  JsonSchemaSerializer,
  ProtobufDeserializer,
  ProtobufSerializer,
  SchemaRegistryClient,
  SerializationError,
  decodeHeader,
  type RegisteredSchema,
} from '../registry/serdes/index.js'
import { UsageError, type OptionSpec, type ParsedArgs } from './args.js'

export const REGISTRY_URL_OPTION: OptionSpec = {
  name: 'schema-registry-url',
  value: 'URL',
  desc: 'Schema Registry: values are JSON in the registry wire format (with --value-schema, --value-schema-file or --value-schema-id)',
}

export const PRODUCE_SCHEMA_OPTIONS: OptionSpec[] = [
  REGISTRY_URL_OPTION,
  { name: 'value-schema', value: 'SCHEMA', desc: 'The value schema text, registered under <topic>-value if new (needs --schema-registry-url)' },
  { name: 'value-schema-file', value: 'FILE', desc: 'The value schema read from a file (.avsc, .json, .proto)' },
  { name: 'value-schema-type', value: 'TYPE', desc: 'AVRO (default), JSON or PROTOBUF: the type of --value-schema / --value-schema-file' },
  { name: 'value-schema-id', value: 'ID', desc: 'Write values with this registered schema (its type is the registry\'s)' },
]

/** Confluent's console tools take these as --property items; accepted there too. */
const PROPERTY_NAMES: Record<string, string> = {
  'schema.registry.url': 'schema-registry-url',
  'value.schema': 'value-schema',
  'value.schema.file': 'value-schema-file',
  'value.schema.id': 'value-schema-id',
}

/** Moves Confluent's schema --property items out of a line reader's or formatter's properties. */
export function takeSchemaProperties(props: Map<string, string>): Map<string, string> {
  const out = new Map<string, string>()
  for (const [prop, flag] of Object.entries(PROPERTY_NAMES)) {
    const v = props.get(prop)
    if (v === undefined) continue
    out.set(flag, v)
    props.delete(prop)
  }
  return out
}

function setting(args: ParsedArgs, fromProps: ReadonlyMap<string, string>, name: string): string | undefined {
  return args.get(name) ?? fromProps.get(name)
}

/** Turns one input line's value into its wire bytes. */
export type ValueEncoder = (topic: string, value: Buffer) => Promise<Buffer>

/** The encoder the flags ask for, or null without a registry (values are written as they are). */
export function valueEncoder(args: ParsedArgs, fromProps: ReadonlyMap<string, string>): ValueEncoder | null {
  const url = setting(args, fromProps, 'schema-registry-url')
  const text = setting(args, fromProps, 'value-schema')
  const file = setting(args, fromProps, 'value-schema-file')
  const idText = setting(args, fromProps, 'value-schema-id')
  const typeText = setting(args, fromProps, 'value-schema-type')
  const given = [text, file, idText].filter((v) => v !== undefined).length
  if (url === undefined) {
    if (given > 0 || typeText !== undefined) throw new UsageError('--value-schema, --value-schema-file, --value-schema-type and --value-schema-id need --schema-registry-url')
    return null
  }
  if (given !== 1) throw new UsageError('with --schema-registry-url give exactly one of --value-schema, --value-schema-file and --value-schema-id')
  if (idText !== undefined && typeText !== undefined) throw new UsageError('--value-schema-id names a registered schema, whose type the registry knows: leave out --value-schema-type')
  const client = new SchemaRegistryClient({ url, timeoutMs: 30_000 })
  let schema: string | undefined = text
  if (file !== undefined) {
    try {
      schema = readFileSync(file, 'utf8')
    } catch (err) {
      throw new UsageError(`cannot read --value-schema-file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
  }
  let id: number | undefined
  if (idText !== undefined) {
    id = Number(idText)
    if (!Number.isInteger(id) || id < 0) throw new UsageError(`--value-schema-id ${idText}: expected a schema id`)
  }
  let type: SchemaType = 'AVRO'
  if (typeText !== undefined) {
    const upper = typeText.toUpperCase() === 'JSONSCHEMA' ? 'JSON' : typeText.toUpperCase()
    const parsed = SCHEMA_TYPES.find((t) => t === upper)
    if (parsed === undefined) throw new UsageError(`--value-schema-type ${typeText}: expected AVRO, JSON or PROTOBUF`)
    type = parsed
  }
  // The schema (and so the serializer) is known after the first lookup; every line then reuses it.
  let ready: Promise<(topic: string, line: string) => Promise<Buffer>> | undefined
  const build = async (): Promise<(topic: string, line: string) => Promise<Buffer>> => {
    let registered: RegisteredSchema | undefined
    if (id !== undefined) {
      registered = await client.schemaById(id)
      type = registered.schemaType
    }
    const opts = { client, schema, useSchemaId: id }
    if (type === 'AVRO') {
      const ser = new AvroSerializer(opts)
      const avroType = avsc.Type.forSchema(JSON.parse(registered?.schema ?? schema!) as avsc.Schema)
      return (topic, line) => ser.serialize(topic, avroValue(avroType, line))
    }
    if (type === 'JSON') {
      const ser = new JsonSchemaSerializer({ ...opts, validate: true })
      return (topic, line) => ser.serialize(topic, jsonValue(line))
    }
    const ser = new ProtobufSerializer(opts)
    return (topic, line) => {
      const v = jsonValue(line)
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new SerializationError('a Protobuf message must be a JSON object')
      return ser.serialize(topic, v as Record<string, unknown>)
    }
  }
  return async (topic, value) => {
    ready ??= build()
    return (await ready)(topic, value.toString('utf8'))
  }
}

/** One input line in Avro's JSON encoding (or plain JSON that fits the schema). */
function avroValue(type: avsc.Type, line: string): unknown {
  const json = jsonValue(line)
  try {
    return avroFromJson(type, json)
  } catch (err) {
    throw new SerializationError(`value does not match the Avro schema: ${(err as Error).message}`)
  }
}

function jsonValue(line: string): unknown {
  try {
    return JSON.parse(line)
  } catch (err) {
    throw new SerializationError(`value is not JSON: ${(err as Error).message}`)
  }
}

/** Turns a record's wire bytes into the JSON text printed for it. */
export type ValueDecoder = (topic: string, value: Buffer) => Promise<Buffer>

/** The decoder for --schema-registry-url, or null without it (values are printed as they are). */
export function valueDecoder(url: string | undefined): ValueDecoder | null {
  if (url === undefined) return null
  const client = new SchemaRegistryClient({ url, timeoutMs: 30_000 })
  const avro = new AvroDeserializer({ client })
  const json = new JsonSchemaDeserializer({ client })
  const protobuf = new ProtobufDeserializer({ client })
  const avroTypes = new Map<number, Promise<avsc.Type | null>>()
  return async (topic, value) => {
    const { id } = decodeHeader(value)
    const registered = await client.schemaById(id)
    if (registered.schemaType === 'JSON') return Buffer.from(JSON.stringify(await json.deserialize(topic, value)))
    if (registered.schemaType === 'PROTOBUF') return Buffer.from(JSON.stringify(await protobuf.deserialize(topic, value)))
    const decoded = await avro.deserialize(topic, value)
    let t = avroTypes.get(id)
    if (t === undefined) {
      // Avro's JSON encoding needs the schema's own type; with references, plain JSON is printed.
      t = Promise.resolve(registered.references.length > 0 ? null : avsc.Type.forSchema(JSON.parse(registered.schema) as avsc.Schema))
      avroTypes.set(id, t)
    }
    const type = await t
    return Buffer.from(type === null ? JSON.stringify(decoded, (_k, v: unknown) => (isBufferJson(v) ? Buffer.from(v.data).toString('latin1') : v)) : type.toString(decoded))
  }
}

function isBufferJson(v: unknown): v is { type: 'Buffer'; data: number[] } {
  return typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'Buffer' && Array.isArray((v as { data?: unknown }).data)
}
