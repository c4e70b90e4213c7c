// Confluent's Schema Registry converters: AvroConverter (io.confluent.connect.avro.AvroConverter),
// JsonSchemaConverter (io.confluent.connect.json.JsonSchemaConverter) and ProtobufConverter
// (io.confluent.connect.protobuf.ProtobufConverter). Records travel in Confluent's wire format (magic byte,
// schema id, payload) through src/registry/serdes; Connect schemas are mapped to and from each format as
// Confluent's AvroData / JsonSchemaData / ProtobufData do: struct <-> record / object / message, optional
// fields as unions with null (Avro) or oneOf with null (JSON Schema), int8/int16 kept as connect.type, a
// struct's name as the record name (default io.confluent.connect.avro.ConnectDefault), Decimal as the
// decimal logical type, Date/Time/Timestamp as date / time-millis / timestamp-millis.
import type { ConnectionOptions } from 'node:tls'
import { httpClientTls } from '../../client/http-tls.js'
import { HTTP_CLIENT_TLS_NAMES } from '../../config/client-http-tls.js'
import avsc from 'avsc'
import type protobuf from 'protobufjs'
import { ConfigDef } from '../api/config-def.js'
import {
  DataException,
  DATE_NAME,
  DECIMAL_NAME,
  DECIMAL_SCALE,
  DateType,
  Decimal,
  mapEntries,
  type Schema,
  SchemaBuilder,
  type SchemaAndValue,
  Schemas,
  Struct,
  TIME_NAME,
  TIMESTAMP_NAME,
  TimeType,
  TimestampType,
} from '../api/data.js'
import type { ConnectHeaders, Converter } from '../api/plugin.js'
import { ProtobufSchema } from '../../registry/protobuf/index.js'
import { flattenReferences } from '../../registry/avro/index.js'
import {
  AvroSerializer,
  avscTypeWithReferences,
  JsonSchemaSerializer,
  ProtobufDeserializer,
  ProtobufSerializer,
  SchemaRegistryClient,
  SUBJECT_NAME_STRATEGIES,
  decodeHeader,
  type SubjectNameStrategy,
  TopicNameStrategy,
} from '../../registry/serdes/index.js'

const AVRO_NAMESPACE = 'io.confluent.connect.avro'
const DEFAULT_RECORD_NAME = `${AVRO_NAMESPACE}.ConnectDefault`

const REGISTRY_TLS_PREFIX = 'schema.registry.'

function registryConfigDef(): ConfigDef {
  const def = new ConfigDef()
    .define('schema.registry.url', 'LIST', null, 'HIGH', 'Comma-separated list of URLs for Schema Registry instances.')
    .define('auto.register.schemas', 'BOOLEAN', true, 'MEDIUM', 'Whether to register the schema of a record with the registry when it is not registered yet.')
    .define('use.latest.version', 'BOOLEAN', false, 'LOW', "Serialize with the subject's latest registered schema instead of the record's own.")
    .define('key.subject.name.strategy', 'STRING', 'io.confluent.kafka.serializers.subject.TopicNameStrategy', 'MEDIUM', 'How the subject of a key schema is named.')
    .define('value.subject.name.strategy', 'STRING', 'io.confluent.kafka.serializers.subject.TopicNameStrategy', 'MEDIUM', 'How the subject of a value schema is named.')
    .define('basic.auth.user.info', 'PASSWORD', null, 'MEDIUM', 'user:password for the registry.')
    .define('connect.meta.data', 'BOOLEAN', true, 'LOW', 'Keep Connect metadata (connect.name, connect.version, connect.type, ...) in the written schemas.')
  // Confluent's schema.registry.ssl.*: the trust store (and client certificate) for https:// registry URLs.
  for (const name of HTTP_CLIENT_TLS_NAMES) def.define(`${REGISTRY_TLS_PREFIX}${name}`, /password/.test(name) ? 'PASSWORD' : 'STRING', null, 'LOW', `${name} for https:// schema.registry.url (client/http-tls.ts).`)
  return def
}

/** The registry client's TLS from schema.registry.ssl.*, or undefined when none is set. */
function registryTls(c: Record<string, unknown>): ConnectionOptions | undefined {
  const props = new Map<string, string>()
  for (const name of HTTP_CLIENT_TLS_NAMES) {
    const v = c[REGISTRY_TLS_PREFIX + name]
    if (v !== null && v !== undefined) props.set(name, String(v))
  }
  try {
    return httpClientTls(props, REGISTRY_TLS_PREFIX)
  } catch (err) {
    throw new DataException((err as Error).message)
  }
}

interface RegistrySettings {
  client: SchemaRegistryClient
  autoRegister: boolean
  useLatestVersion: boolean
  strategy: SubjectNameStrategy
  metadata: boolean
}

function registrySettings(props: Record<string, string>, isKey: boolean): RegistrySettings {
  const c = registryConfigDef().parse(props)
  const urls = c['schema.registry.url'] as string[] | null
  if (urls === null || urls.length === 0) throw new DataException('Missing required configuration "schema.registry.url" which has no default value.')
  const strategyName = String(c[isKey ? 'key.subject.name.strategy' : 'value.subject.name.strategy'])
  const strategy = SUBJECT_NAME_STRATEGIES[strategyName] ?? SUBJECT_NAME_STRATEGIES[strategyName.split('.').pop()!] ?? TopicNameStrategy
  return {
    client: new SchemaRegistryClient({ url: urls, basicAuth: (c['basic.auth.user.info'] as string | null) ?? undefined, tls: registryTls(c) }),
    autoRegister: c['auto.register.schemas'] as boolean,
    useLatestVersion: c['use.latest.version'] as boolean,
    strategy,
    metadata: c['connect.meta.data'] as boolean,
  }
}

/** Bounded cache of promises by key (schemas by text or id). */
class Cache<V> {
  private readonly map = new Map<string | number, V>()
  constructor(private readonly max = 1000) {}
  get(key: string | number, make: () => V): V {
    let v = this.map.get(key)
    if (v === undefined) {
      v = make()
      if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value!)
      this.map.set(key, v)
    }
    return v
  }
}

// ---- Avro ----

type AvroSchema = string | Record<string, unknown> | unknown[]

/** Connect schema -> Avro schema JSON (AvroData.fromConnectSchema). */
export function connectToAvroSchema(schema: Schema, metadata = true, names = new Set<string>()): AvroSchema {
  const base = avroBase(schema, metadata, names)
  return schema.optional ? ['null', base] : base
}

function avroBase(schema: Schema, metadata: boolean, names: Set<string>): AvroSchema {
  const meta = (o: Record<string, unknown>): Record<string, unknown> => {
    if (!metadata) return o
    if (schema.name != null && schema.type !== 'struct') o['connect.name'] = schema.name
    if (schema.version != null) o['connect.version'] = schema.version
    if (schema.doc != null) o['connect.doc'] = schema.doc
    if (schema.parameters != null && schema.name !== DECIMAL_NAME) o['connect.parameters'] = { ...schema.parameters }
    if (schema.defaultValue !== undefined && schema.defaultValue !== null && schema.type !== 'struct') o['connect.default'] = connectToAvroValue(schema, schema.defaultValue)
    return o
  }
  switch (schema.name) {
    case DECIMAL_NAME:
      return meta({ type: 'bytes', logicalType: 'decimal', precision: Number(schema.parameters?.['connect.decimal.precision'] ?? 64), scale: Decimal.scale(schema) })
    case DATE_NAME:
      return meta({ type: 'int', logicalType: 'date' })
    case TIME_NAME:
      return meta({ type: 'int', logicalType: 'time-millis' })
    case TIMESTAMP_NAME:
      return meta({ type: 'long', logicalType: 'timestamp-millis' })
  }
  switch (schema.type) {
    case 'int8':
    case 'int16':
      return meta({ type: 'int', ...(metadata ? { 'connect.type': schema.type } : {}) })
    case 'int32':
      return schema.name != null || schema.version != null || schema.doc != null || schema.parameters != null ? meta({ type: 'int' }) : 'int'
    case 'int64':
      return schema.name != null || schema.doc != null || schema.parameters != null ? meta({ type: 'long' }) : 'long'
    case 'float32':
      return schema.name != null || schema.doc != null ? meta({ type: 'float' }) : 'float'
    case 'float64':
      return schema.name != null || schema.doc != null ? meta({ type: 'double' }) : 'double'
    case 'boolean':
      return schema.name != null || schema.doc != null ? meta({ type: 'boolean' }) : 'boolean'
    case 'string':
      return schema.name != null || schema.doc != null || schema.parameters != null ? meta({ type: 'string' }) : 'string'
    case 'bytes':
      return schema.name != null || schema.doc != null ? meta({ type: 'bytes' }) : 'bytes'
    case 'array':
      return meta({ type: 'array', items: connectToAvroSchema(schema.valueSchema!, metadata, names) })
    case 'map':
      if (schema.keySchema!.type === 'string' && !schema.keySchema!.optional) return meta({ type: 'map', values: connectToAvroSchema(schema.valueSchema!, metadata, names) })
      return meta({
        type: 'array',
        items: { type: 'record', name: uniqueName(`${AVRO_NAMESPACE}.MapEntry`, names), fields: [
          { name: 'key', type: connectToAvroSchema(schema.keySchema!, metadata, names) },
          { name: 'value', type: connectToAvroSchema(schema.valueSchema!, metadata, names) },
        ] },
      })
    case 'struct': {
      const full = uniqueName(schema.name ?? DEFAULT_RECORD_NAME, names)
      const dot = full.lastIndexOf('.')
      const rec: Record<string, unknown> = { type: 'record', name: dot >= 0 ? full.slice(dot + 1) : full }
      if (dot >= 0) rec['namespace'] = full.slice(0, dot)
      if (schema.doc != null) rec['doc'] = schema.doc
      rec['fields'] = schema.fields!.map((f) => {
        const field: Record<string, unknown> = { name: f.name, type: connectToAvroSchema(f.schema, metadata, names) }
        if (f.schema.optional && (f.schema.defaultValue === undefined || f.schema.defaultValue === null)) field['default'] = null
        else if (f.schema.defaultValue !== undefined && f.schema.defaultValue !== null) field['default'] = avroDefault(f.schema, f.schema.defaultValue)
        return field
      })
      if (metadata && schema.version != null) rec['connect.version'] = schema.version
      if (metadata && schema.name != null) rec['connect.name'] = schema.name
      return rec
    }
  }
}

function uniqueName(name: string, names: Set<string>): string {
  let n = name
  for (let i = 1; names.has(n); i++) n = `${name}${i}`
  names.add(n)
  return n
}

function avroDefault(schema: Schema, value: unknown): unknown {
  const v = connectToAvroValue(schema, value)
  if (Buffer.isBuffer(v)) return v.toString('latin1')
  return v
}

/** A Connect value -> the value avsc writes for connectToAvroSchema(schema). */
export function connectToAvroValue(schema: Schema | null, value: unknown): unknown {
  if (value === null || value === undefined) {
    if (schema !== null && schema.defaultValue !== undefined && schema.defaultValue !== null) return connectToAvroValue(schema, schema.defaultValue)
    return null
  }
  if (schema === null) throw new DataException('the Avro converter needs a schema for non-null values')
  switch (schema.name) {
    case DECIMAL_NAME:
      return Decimal.fromLogical(schema, String(value))
    case DATE_NAME:
      return DateType.fromLogical(value as Date)
    case TIME_NAME:
      return TimeType.fromLogical(value as Date)
    case TIMESTAMP_NAME:
      return TimestampType.fromLogical(value as Date)
  }
  switch (schema.type) {
    case 'int64':
      return Number(value)
    case 'bytes':
      return Buffer.from(value as Uint8Array)
    case 'array':
      return (value as unknown[]).map((v) => connectToAvroValue(schema.valueSchema!, v))
    case 'map': {
      const entries = value instanceof Map ? [...value] : mapEntries(value)
      if (schema.keySchema!.type === 'string' && !schema.keySchema!.optional) return Object.fromEntries(entries.map(([k, v]) => [String(k), connectToAvroValue(schema.valueSchema!, v)]))
      return entries.map(([k, v]) => ({ key: connectToAvroValue(schema.keySchema!, k), value: connectToAvroValue(schema.valueSchema!, v) }))
    }
    case 'struct': {
      if (!(value instanceof Struct)) throw new DataException('a struct schema needs a Struct value')
      const out: Record<string, unknown> = {}
      for (const f of schema.fields!) out[f.name] = connectToAvroValue(f.schema, value.get(f))
      return out
    }
    default:
      return value
  }
}

/** Avro schema JSON -> Connect schema (AvroData.toConnectSchema). */
export function avroToConnectSchema(avro: unknown, optional = false, named = new Map<string, Schema>(), ns = ''): Schema {
  if (Array.isArray(avro)) {
    const nonNull = avro.filter((b) => b !== 'null' && !(typeof b === 'object' && (b as Record<string, unknown>)['type'] === 'null'))
    const hasNull = nonNull.length !== avro.length
    if (nonNull.length === 1) return avroToConnectSchema(nonNull[0], optional || hasNull, named, ns)
    // A general union: a struct with one optional field per branch, as Confluent's io.confluent.connect.avro.Union.
    const b = SchemaBuilder.struct().name(`${AVRO_NAMESPACE}.Union`)
    nonNull.forEach((branch, i) => {
      const s = avroToConnectSchema(branch, true, named, ns)
      b.field(s.name?.split('.').pop() ?? (typeof branch === 'string' ? branch : `branch${i}`), s)
    })
    if (optional || hasNull) b.optional()
    return b.build()
  }
  if (typeof avro === 'string') {
    const prim: Record<string, () => SchemaBuilder> = {
      int: SchemaBuilder.int32, long: SchemaBuilder.int64, float: SchemaBuilder.float32, double: SchemaBuilder.float64,
      boolean: SchemaBuilder.bool, string: SchemaBuilder.string, bytes: SchemaBuilder.bytes,
    }
    const make = prim[avro]
    if (make !== undefined) {
      const b = make()
      if (optional) b.optional()
      return b.build()
    }
    const ref = named.get(avro) ?? named.get(ns !== '' && !avro.includes('.') ? `${ns}.${avro}` : avro)
    if (ref === undefined) throw new DataException(`unknown Avro type ${avro}`)
    return optional && !ref.optional ? SchemaBuilder.from(ref).optional().build() : ref
  }
  if (typeof avro !== 'object' || avro === null) throw new DataException('invalid Avro schema')
  const a = avro as Record<string, unknown>
  const type = a['type']
  const finish = (b: SchemaBuilder): Schema => {
    if (typeof a['connect.name'] === 'string' && b.type !== 'struct') b.name(a['connect.name'])
    if (typeof a['connect.version'] === 'number') b.version(a['connect.version'])
    if (typeof a['connect.doc'] === 'string') b.doc(a['connect.doc'])
    if (typeof a['connect.parameters'] === 'object' && a['connect.parameters'] !== null) b.parameters(a['connect.parameters'] as Record<string, string>)
    if (optional) b.optional()
    return b.build()
  }
  switch (a['logicalType']) {
    case 'decimal':
      return finish(Decimal.builder(Number(a['scale'] ?? 0)).parameter('connect.decimal.precision', String(a['precision'] ?? 64)))
    case 'date':
      return finish(DateType.builder())
    case 'time-millis':
      return finish(TimeType.builder())
    case 'timestamp-millis':
      return finish(TimestampType.builder())
  }
  switch (type) {
    case 'int':
      return finish(a['connect.type'] === 'int8' ? SchemaBuilder.int8() : a['connect.type'] === 'int16' ? SchemaBuilder.int16() : SchemaBuilder.int32())
    case 'long':
    case 'float':
    case 'double':
    case 'boolean':
    case 'string':
    case 'bytes':
      return finish(SchemaBuilder.from(avroToConnectSchema(type, false, named, ns)))
    case 'array':
      return finish(SchemaBuilder.array(avroToConnectSchema(a['items'], false, named, ns)))
    case 'map':
      return finish(SchemaBuilder.map(Schemas.STRING, avroToConnectSchema(a['values'], false, named, ns)))
    case 'enum':
      return finish(SchemaBuilder.string().name(String(a['name'])).parameter('io.confluent.connect.avro.Enum', String(a['name'])))
    case 'fixed':
      return finish(SchemaBuilder.bytes().name(String(a['name'])).parameter('connect.fixed.size', String(a['size'])))
    case 'record': {
      const name = String(a['name'])
      const space = typeof a['namespace'] === 'string' ? a['namespace'] : ns
      const full = name.includes('.') || space === '' ? name : `${space}.${name}`
      const b = SchemaBuilder.struct()
      if (full !== DEFAULT_RECORD_NAME) b.name(typeof a['connect.name'] === 'string' ? a['connect.name'] : full)
      if (typeof a['doc'] === 'string') b.doc(a['doc'])
      for (const f of (a['fields'] as Record<string, unknown>[]) ?? []) {
        let fs = avroToConnectSchema(f['type'], false, named, space)
        if (f['default'] !== undefined && f['default'] !== null) {
          try {
            fs = SchemaBuilder.from(fs).defaultValue(avroToConnectValue(fs, f['default'])).build()
          } catch {
            // A default Connect cannot hold (e.g. a record default): the field keeps none.
          }
        }
        b.field(String(f['name']), fs)
      }
      if (typeof a['connect.version'] === 'number') b.version(a['connect.version'])
      if (optional) b.optional()
      const s = b.build()
      named.set(full, s)
      return s
    }
    default:
      if (typeof type === 'string' || Array.isArray(type) || typeof type === 'object') return avroToConnectSchema(type, optional, named, ns)
      throw new DataException(`unsupported Avro type ${JSON.stringify(type)}`)
  }
}

/** A value avsc read -> the Connect value of schema. */
export function avroToConnectValue(schema: Schema, value: unknown): unknown {
  if (value === null || value === undefined) return null
  switch (schema.name) {
    case DECIMAL_NAME:
      return Decimal.toLogical(schema, Buffer.isBuffer(value) ? value : Buffer.from(String(value), 'latin1'))
    case DATE_NAME:
      return DateType.toLogical(Number(value))
    case TIME_NAME:
      return TimeType.toLogical(Number(value))
    case TIMESTAMP_NAME:
      return TimestampType.toLogical(Number(value))
  }
  switch (schema.type) {
    case 'bytes':
      return Buffer.isBuffer(value) ? value : Buffer.from(String(value), 'latin1')
    case 'array':
      if (schema.valueSchema!.type === 'struct' && schema.valueSchema!.fields!.length === 2 && schema.valueSchema!.name === undefined) return (value as unknown[]).map((v) => avroToConnectValue(schema.valueSchema!, v))
      return (value as unknown[]).map((v) => avroToConnectValue(schema.valueSchema!, v))
    case 'map':
      return new Map(Object.entries(value as object).map(([k, v]) => [k, avroToConnectValue(schema.valueSchema!, v)]))
    case 'struct': {
      const s = new Struct(schema)
      const obj = value as Record<string, unknown>
      if (schema.name === `${AVRO_NAMESPACE}.Union`) {
        // avsc gives a wrapped union {branchName: value}: put it into the matching field.
        const [branch, v] = Object.entries(obj)[0] ?? []
        const f = schema.fields!.find((x) => branch !== undefined && (branch === x.name || branch.endsWith(`.${x.name}`)))
        if (f !== undefined) s.put(f, avroToConnectValue(f.schema, v))
        return s
      }
      for (const f of schema.fields!) s.put(f, avroToConnectValue(f.schema, obj[f.name]))
      return s
    }
    default:
      return value
  }
}

abstract class RegistryConverter implements Converter {
  protected settings!: RegistrySettings
  protected isKey = false

  config(): ConfigDef {
    return registryConfigDef()
  }

  configure(props: Record<string, string>, isKey: boolean): void {
    this.isKey = isKey
    this.settings = registrySettings(props, isKey)
  }

  abstract fromConnectData(topic: string, headers: ConnectHeaders | null, schema: Schema | null, value: unknown): Promise<Buffer | null>
  abstract toConnectData(topic: string, headers: ConnectHeaders | null, value: Buffer | null): Promise<SchemaAndValue>

  protected serializerOptions(schema: string) {
    return { client: this.settings.client, schema, autoRegister: this.settings.autoRegister, useLatestVersion: this.settings.useLatestVersion, subjectNameStrategy: this.settings.strategy, isKey: this.isKey }
  }
}

export class AvroConverter extends RegistryConverter {
  private readonly serializers = new Cache<AvroSerializer>()
  private readonly readers = new Cache<Promise<{ schema: Schema; type: avsc.Type }>>()

  async fromConnectData(topic: string, _headers: ConnectHeaders | null, schema: Schema | null, value: unknown): Promise<Buffer | null> {
    if (value === null || value === undefined) return null
    if (schema === null) throw new DataException('AvroConverter needs a schema (schemaless data cannot be written as Avro)')
    const text = JSON.stringify(connectToAvroSchema(schema, this.settings.metadata))
    const ser = this.serializers.get(text, () => new AvroSerializer(this.serializerOptions(text)))
    try {
      return await ser.serialize(topic, connectToAvroValue(schema, value))
    } catch (err) {
      throw new DataException(`Failed to serialize Avro data from topic ${topic}: ${(err as Error).message}`)
    }
  }

  async toConnectData(topic: string, _headers: ConnectHeaders | null, value: Buffer | null): Promise<SchemaAndValue> {
    if (value === null) return { schema: null, value: null }
    let id: number, offset: number
    try {
      ;({ id, offset } = decodeHeader(value))
    } catch (err) {
      throw new DataException(`Failed to deserialize data for topic ${topic} to Avro: ${(err as Error).message}`)
    }
    const reader = await this.readers.get(id, async () => {
      const registered = await this.settings.client.schemaById(id)
      if (registered.schemaType !== 'AVRO') throw new DataException(`schema ${id} is ${registered.schemaType}, not AVRO`)
      const resolved = await this.settings.client.resolveReferences(registered.references)
      const type = avscTypeWithReferences(registered.schema, resolved, { wrapUnions: 'auto' })
      // The referenced records become Connect schemas first (depth first, each once), as avsc's registry does.
      const named = new Map<string, Schema>()
      for (const text of flattenReferences(resolved)) avroToConnectSchema(JSON.parse(text), false, named)
      return { schema: avroToConnectSchema(JSON.parse(registered.schema), false, named), type }
    })
    let decoded: unknown
    try {
      decoded = reader.type.fromBuffer(value.subarray(offset))
    } catch (err) {
      throw new DataException(`Failed to deserialize data for topic ${topic} to Avro: ${(err as Error).message}`)
    }
    return { schema: reader.schema, value: avroToConnectValue(reader.schema, decoded) }
  }
}

// ---- JSON Schema ----

/** Connect schema -> JSON Schema (JsonSchemaData.fromConnectSchema). */
export function connectToJsonSchema(schema: Schema, top = true): Record<string, unknown> {
  const base = jsonSchemaBase(schema)
  if (top && schema.type === 'struct') base['$schema'] = 'http://json-schema.org/draft-07/schema#'
  if (schema.optional && !top) return { oneOf: [{ type: 'null' }, base] }
  return base
}

function jsonSchemaBase(schema: Schema): Record<string, unknown> {
  const o: Record<string, unknown> = {}
  const connectType = (t: string): void => {
    o['connect.type'] = t
  }
  switch (schema.type) {
    case 'int8':
    case 'int16':
    case 'int32':
    case 'int64':
      o['type'] = 'integer'
      connectType(schema.type)
      break
    case 'float32':
    case 'float64':
      o['type'] = 'number'
      connectType(schema.type)
      break
    case 'boolean':
      o['type'] = 'boolean'
      break
    case 'string':
      o['type'] = 'string'
      break
    case 'bytes':
      o['type'] = 'string'
      connectType('bytes')
      break
    case 'array':
      o['type'] = 'array'
      o['items'] = connectToJsonSchema(schema.valueSchema!, false)
      break
    case 'map':
      o['type'] = 'object'
      o['additionalProperties'] = connectToJsonSchema(schema.valueSchema!, false)
      connectType('map')
      break
    case 'struct': {
      o['type'] = 'object'
      if (schema.name != null) o['title'] = schema.name
      const props: Record<string, unknown> = {}
      schema.fields!.forEach((f) => {
        props[f.name] = { ...connectToJsonSchema(f.schema, false), 'connect.index': f.index }
      })
      o['properties'] = props
      const required = schema.fields!.filter((f) => !f.schema.optional).map((f) => f.name)
      if (required.length > 0) o['required'] = required
      break
    }
  }
  if (schema.name != null && schema.type !== 'struct') o['title'] = schema.name
  if (schema.doc != null) o['description'] = schema.doc
  if (schema.version != null) o['connect.version'] = schema.version
  if (schema.parameters != null) o['connect.parameters'] = { ...schema.parameters }
  return o
}

/** JSON Schema -> Connect schema (JsonSchemaData.toConnectSchema, the common shapes). */
export function jsonSchemaToConnect(js: unknown, optional = false): Schema {
  if (typeof js !== 'object' || js === null) throw new DataException('invalid JSON schema')
  const j = js as Record<string, unknown>
  const union = (j['oneOf'] ?? j['anyOf']) as unknown[] | undefined
  if (Array.isArray(union)) {
    const nonNull = union.filter((b) => (b as Record<string, unknown>)?.['type'] !== 'null')
    if (nonNull.length === 1) return jsonSchemaToConnect(nonNull[0], optional || nonNull.length !== union.length)
    throw new DataException('JSON Schema unions other than a type with null are not supported')
  }
  const ct = j['connect.type']
  const title = typeof j['title'] === 'string' ? j['title'] : undefined
  let b: SchemaBuilder
  let type = j['type']
  if (Array.isArray(type)) {
    const nn = type.filter((t) => t !== 'null')
    if (nn.length !== type.length) optional = true
    type = nn[0]
  }
  switch (type) {
    case 'integer':
      b = SchemaBuilder.type(ct === 'int8' || ct === 'int16' || ct === 'int32' ? ct : 'int64')
      break
    case 'number':
      b = ct === 'float32' ? SchemaBuilder.float32() : SchemaBuilder.float64()
      break
    case 'boolean':
      b = SchemaBuilder.bool()
      break
    case 'string':
      b = ct === 'bytes' ? SchemaBuilder.bytes() : SchemaBuilder.string()
      break
    case 'array':
      b = SchemaBuilder.array(jsonSchemaToConnect(j['items'] ?? {}))
      break
    case 'object': {
      if (ct === 'map' || (j['properties'] === undefined && typeof j['additionalProperties'] === 'object')) {
        b = SchemaBuilder.map(Schemas.STRING, jsonSchemaToConnect(j['additionalProperties']))
        break
      }
      b = SchemaBuilder.struct()
      const props = Object.entries((j['properties'] as Record<string, Record<string, unknown>>) ?? {})
      props.sort((x, y) => Number(x[1]['connect.index'] ?? 0) - Number(y[1]['connect.index'] ?? 0))
      const required = new Set((j['required'] as string[]) ?? [])
      for (const [name, p] of props) {
        let s = jsonSchemaToConnect(p)
        if (!required.has(name) && !s.optional) s = SchemaBuilder.from(s).optional().build()
        b.field(name, s)
      }
      break
    }
    default:
      throw new DataException(`unsupported JSON Schema type ${JSON.stringify(type)}`)
  }
  if (title !== undefined) b.name(title)
  if (typeof j['description'] === 'string') b.doc(j['description'])
  if (typeof j['connect.version'] === 'number') b.version(j['connect.version'])
  if (typeof j['connect.parameters'] === 'object' && j['connect.parameters'] !== null) b.parameters(j['connect.parameters'] as Record<string, string>)
  if (optional) b.optional()
  return b.build()
}

function connectToPlainJson(schema: Schema, value: unknown): unknown {
  if (value === null || value === undefined) return null
  switch (schema.name) {
    case DECIMAL_NAME:
      return Number(value)
    case DATE_NAME:
      return DateType.fromLogical(value as Date)
    case TIME_NAME:
      return TimeType.fromLogical(value as Date)
    case TIMESTAMP_NAME:
      return TimestampType.fromLogical(value as Date)
  }
  switch (schema.type) {
    case 'int64':
      return Number(value)
    case 'bytes':
      return Buffer.from(value as Uint8Array).toString('base64')
    case 'array':
      return (value as unknown[]).map((v) => connectToPlainJson(schema.valueSchema!, v))
    case 'map':
      return Object.fromEntries((value instanceof Map ? [...value] : mapEntries(value)).map(([k, v]) => [String(k), connectToPlainJson(schema.valueSchema!, v)]))
    case 'struct': {
      const s = value as Struct
      return Object.fromEntries(schema.fields!.map((f) => [f.name, connectToPlainJson(f.schema, s.get(f))]))
    }
    default:
      return value
  }
}

function plainJsonToConnect(schema: Schema, v: unknown): unknown {
  if (v === null || v === undefined) return null
  switch (schema.name) {
    case DECIMAL_NAME:
      return String(v)
    case DATE_NAME:
      return DateType.toLogical(Number(v))
    case TIME_NAME:
      return TimeType.toLogical(Number(v))
    case TIMESTAMP_NAME:
      return TimestampType.toLogical(Number(v))
  }
  switch (schema.type) {
    case 'bytes':
      return Buffer.from(String(v), 'base64')
    case 'array':
      return (v as unknown[]).map((x) => plainJsonToConnect(schema.valueSchema!, x))
    case 'map':
      return new Map(Object.entries(v as object).map(([k, x]) => [k, plainJsonToConnect(schema.valueSchema!, x)]))
    case 'struct': {
      const s = new Struct(schema)
      for (const f of schema.fields!) s.put(f, plainJsonToConnect(f.schema, (v as Record<string, unknown>)[f.name]))
      return s
    }
    default:
      return v
  }
}

export class JsonSchemaConverter extends RegistryConverter {
  private readonly serializers = new Cache<JsonSchemaSerializer>()
  private readonly schemas = new Cache<Promise<Schema>>()

  async fromConnectData(topic: string, _headers: ConnectHeaders | null, schema: Schema | null, value: unknown): Promise<Buffer | null> {
    if (value === null || value === undefined) return null
    if (schema === null) throw new DataException('JsonSchemaConverter needs a schema')
    const text = JSON.stringify(connectToJsonSchema(schema))
    const ser = this.serializers.get(text, () => new JsonSchemaSerializer(this.serializerOptions(text)))
    return ser.serialize(topic, connectToPlainJson(schema, value))
  }

  async toConnectData(topic: string, _headers: ConnectHeaders | null, value: Buffer | null): Promise<SchemaAndValue> {
    if (value === null) return { schema: null, value: null }
    let id: number, offset: number
    try {
      ;({ id, offset } = decodeHeader(value))
    } catch (err) {
      throw new DataException(`Failed to deserialize data for topic ${topic} to JSON schema: ${(err as Error).message}`)
    }
    const schema = await this.schemas.get(id, async () => jsonSchemaToConnect(JSON.parse((await this.settings.client.schemaById(id)).schema)))
    let json: unknown
    try {
      json = JSON.parse(value.subarray(offset).toString('utf8'))
    } catch (err) {
      throw new DataException(`Failed to deserialize data for topic ${topic}: ${(err as Error).message}`)
    }
    return { schema, value: plainJsonToConnect(schema, json) }
  }
}

// ---- Protobuf ----

const PROTO_SCALAR: Partial<Record<Schema['type'], string>> = {
  int8: 'int32', int16: 'int32', int32: 'int32', int64: 'int64', float32: 'float', float64: 'double', boolean: 'bool', string: 'string', bytes: 'bytes',
}

/**
 * Connect schema -> a proto3 file (ProtobufData.fromConnectSchema, the common shapes): a struct is a
 * message with fields numbered from 1 in order, nested structs nested messages, arrays repeated fields,
 * string-keyed maps map fields; logical types are written as their encodings (Date/Time int32,
 * Timestamp int64, Decimal string).
 */
export function connectToProto(schema: Schema): string {
  if (schema.type !== 'struct') throw new DataException('ProtobufConverter writes struct values only')
  const full = schema.name ?? 'ConnectDefault1'
  const dot = full.lastIndexOf('.')
  const pkg = dot >= 0 ? full.slice(0, dot) : ''
  const lines: string[] = ['syntax = "proto3";']
  if (pkg !== '') lines.push(`package ${pkg};`)
  lines.push(...protoMessage(schema, dot >= 0 ? full.slice(dot + 1) : full, ''))
  return lines.join('\n') + '\n'
}

function protoMessage(schema: Schema, name: string, indent: string): string[] {
  const out = [`${indent}message ${name} {`]
  const nested: string[] = []
  schema.fields!.forEach((f, i) => {
    const fieldType = (s: Schema, fname: string): string => {
      if (s.name === DECIMAL_NAME) return 'string'
      if (s.type === 'struct') {
        const n = `${fname[0]!.toUpperCase()}${fname.slice(1)}Message`
        nested.push(...protoMessage(s, n, indent + '  '))
        return n
      }
      const scalar = PROTO_SCALAR[s.type]
      if (scalar === undefined) throw new DataException(`cannot write ${s.type} inside a Protobuf field`)
      return scalar
    }
    let decl: string
    if (f.schema.type === 'array') decl = `repeated ${fieldType(f.schema.valueSchema!, f.name)} ${f.name}`
    else if (f.schema.type === 'map') decl = `map<${PROTO_SCALAR[f.schema.keySchema!.type] ?? 'string'}, ${fieldType(f.schema.valueSchema!, f.name)}> ${f.name}`
    else decl = `${f.schema.optional && f.schema.type !== 'struct' ? 'optional ' : ''}${fieldType(f.schema, f.name)} ${f.name}`
    out.push(`${indent}  ${decl} = ${i + 1};`)
  })
  return [...out, ...nested, `${indent}}`]
}

/** A protobufjs message type -> Connect schema. */
export function protoToConnect(type: protobuf.Type, optional = false): Schema {
  const b = SchemaBuilder.struct().name(type.fullName.replace(/^\./, ''))
  for (const f of [...type.fieldsArray].sort((x, y) => x.id - y.id)) {
    f.resolve()
    const scalar = (t: string, opt: boolean): Schema => {
      const map: Record<string, () => SchemaBuilder> = {
        int32: SchemaBuilder.int32, sint32: SchemaBuilder.int32, sfixed32: SchemaBuilder.int32, uint32: SchemaBuilder.int64, fixed32: SchemaBuilder.int64,
        int64: SchemaBuilder.int64, sint64: SchemaBuilder.int64, sfixed64: SchemaBuilder.int64, uint64: SchemaBuilder.int64, fixed64: SchemaBuilder.int64,
        float: SchemaBuilder.float32, double: SchemaBuilder.float64, bool: SchemaBuilder.bool, string: SchemaBuilder.string, bytes: SchemaBuilder.bytes,
      }
      const make = map[t]
      if (make !== undefined) {
        const s = make()
        if (opt) s.optional()
        return s.build()
      }
      const rt = f.resolvedType
      if (rt !== null && 'fieldsArray' in rt) return protoToConnect(rt as protobuf.Type, true)
      const sb = SchemaBuilder.string()
      if (opt) sb.optional()
      return sb.build()
    }
    const mf = f as unknown as protobuf.MapField
    if (f.map) b.field(f.name, SchemaBuilder.map(scalar(mf.keyType, false), scalar(f.type, true)).optional().build())
    else if (f.repeated) b.field(f.name, SchemaBuilder.array(scalar(f.type, false)).optional().build())
    else b.field(f.name, scalar(f.type, f.options?.['proto3_optional'] === true || (f as unknown as { proto3Optional?: boolean }).proto3Optional === true || f.resolvedType !== null))
  }
  if (optional) b.optional()
  return b.build()
}

function connectToProtoValue(schema: Schema, value: unknown): unknown {
  if (value === null || value === undefined) return undefined
  switch (schema.name) {
    case DECIMAL_NAME:
      return String(value)
    case DATE_NAME:
      return DateType.fromLogical(value as Date)
    case TIME_NAME:
      return TimeType.fromLogical(value as Date)
    case TIMESTAMP_NAME:
      return TimestampType.fromLogical(value as Date)
  }
  switch (schema.type) {
    case 'int64':
      return Number(value)
    case 'bytes':
      return Buffer.from(value as Uint8Array)
    case 'array':
      return (value as unknown[]).map((v) => connectToProtoValue(schema.valueSchema!, v))
    case 'map':
      return Object.fromEntries((value instanceof Map ? [...value] : mapEntries(value)).map(([k, v]) => [String(k), connectToProtoValue(schema.valueSchema!, v)]))
    case 'struct': {
      const s = value as Struct
      const out: Record<string, unknown> = {}
      for (const f of schema.fields!) {
        const v = connectToProtoValue(f.schema, s.get(f))
        if (v !== undefined) out[f.name] = v
      }
      return out
    }
    default:
      return value
  }
}

function protoValueToConnect(schema: Schema, v: unknown): unknown {
  if (v === null || v === undefined) return schema.optional ? null : defaultOf(schema)
  switch (schema.type) {
    case 'int64':
      return typeof v === 'string' ? (Number.isSafeInteger(Number(v)) ? Number(v) : BigInt(v)) : Number(v)
    case 'bytes':
      return typeof v === 'string' ? Buffer.from(v, 'base64') : Buffer.from(v as Uint8Array)
    case 'array':
      return (v as unknown[]).map((x) => protoValueToConnect(schema.valueSchema!, x))
    case 'map':
      return new Map(Object.entries(v as object).map(([k, x]) => [k, protoValueToConnect(schema.valueSchema!, x)]))
    case 'struct': {
      const s = new Struct(schema)
      for (const f of schema.fields!) s.put(f, protoValueToConnect(f.schema, (v as Record<string, unknown>)[f.name]))
      return s
    }
    default:
      return v
  }
}

/** proto3's implicit defaults for absent scalar fields. */
function defaultOf(schema: Schema): unknown {
  switch (schema.type) {
    case 'string':
      return ''
    case 'boolean':
      return false
    case 'bytes':
      return Buffer.alloc(0)
    case 'array':
      return []
    case 'map':
      return new Map()
    case 'struct':
      return null
    default:
      return 0
  }
}

export class ProtobufConverter extends RegistryConverter {
  private readonly serializers = new Cache<{ ser: ProtobufSerializer; schema: Schema }>()
  private deserializer?: ProtobufDeserializer
  private readonly schemas = new Cache<Schema>()

  async fromConnectData(topic: string, _headers: ConnectHeaders | null, schema: Schema | null, value: unknown): Promise<Buffer | null> {
    if (value === null || value === undefined) return null
    if (schema === null) throw new DataException('ProtobufConverter needs a schema')
    const text = connectToProto(schema)
    const { ser } = this.serializers.get(text, () => {
      ProtobufSchema.parse(text)
      return { ser: new ProtobufSerializer({ ...this.serializerOptions(text) }), schema }
    })
    return ser.serialize(topic, connectToProtoValue(schema, value) as Record<string, unknown>)
  }

  async toConnectData(topic: string, _headers: ConnectHeaders | null, value: Buffer | null): Promise<SchemaAndValue> {
    if (value === null) return { schema: null, value: null }
    this.deserializer ??= new ProtobufDeserializer({ client: this.settings.client, toObject: { longs: String, enums: String, bytes: String, defaults: false } })
    let id: number
    let message: Record<string, unknown>
    let typeName: string
    let registered: { schema: string }
    try {
      id = decodeHeader(value).id
      ;({ message, typeName } = await this.deserializer.deserializeWithType(topic, value))
      registered = await this.settings.client.schemaById(id)
    } catch (err) {
      throw new DataException(`Failed to deserialize Protobuf data from topic ${topic}: ${(err as Error).message}`)
    }
    const schema = this.schemas.get(`${id}\u0000${typeName}`, () => {
      const parsed = ProtobufSchema.parse(registered.schema)
      const type = parsed.message(typeName)
      if (type === undefined) throw new DataException(`message ${typeName} not found in schema ${id}`)
      return protoToConnect(type)
    })
    return { schema, value: protoValueToConnect(schema, message) }
  }
}

export { DECIMAL_SCALE }
