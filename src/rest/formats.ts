// Embedded formats: how a record's key or value travels in a REST body and what bytes it becomes in
// Kafka. binary: base64 text, the bytes as they are. json (v2) / JSON (v3): any JSON, written as its UTF-8
// text. STRING (v3): a string, written as UTF-8. avro, jsonschema, protobuf: JSON data checked against a
// schema from the Schema Registry and written in Confluent's wire format (magic byte, schema id, payload)
// by the serializers of src/registry/serdes. The schema is named as kafka-rest names it: by id, by
// subject version, as raw schema text (registered if new), or the subject's latest; the subject comes
// from subject_name_strategy (TopicNameStrategy by default). Resolved schemas and serializers are
// cached, so that a stream of records costs no registry round trip per record.
import type { ConnectionOptions } from 'node:tls'
import avsc from 'avsc'
import type { SchemaReference, SchemaType } from '../registry/schema-type/types.js'
import {
  AvroDeserializer,
  AvroSerializer,
  avroFromJson,
  JsonSchemaDeserializer,
  JsonSchemaSerializer,
  ProtobufDeserializer,
  ProtobufSerializer,
  RecordNameStrategy,
  RegistryClientError,
  SchemaRegistryClient,
  SerializationError,
  type SubjectNameStrategy,
  TopicNameStrategy,
  TopicRecordNameStrategy,
  decodeHeader,
} from '../registry/serdes/index.js'
import { parseSchema } from '../registry/schemas.js'
import { Errors, RestError } from './errors.js'

/** The schema formats by their REST names (v3 `type`, v2 content type) and registry names. */
export type SchemaFormat = 'AVRO' | 'JSONSCHEMA' | 'PROTOBUF'
const REGISTRY_TYPE: Record<SchemaFormat, SchemaType> = { AVRO: 'AVRO', JSONSCHEMA: 'JSON', PROTOBUF: 'PROTOBUF' }
const FORMAT_OF_TYPE: Record<SchemaType, SchemaFormat> = { AVRO: 'AVRO', JSON: 'JSONSCHEMA', PROTOBUF: 'PROTOBUF' }

export const STRATEGIES: Record<string, SubjectNameStrategy> = {
  TOPIC_NAME: TopicNameStrategy,
  RECORD_NAME: RecordNameStrategy,
  TOPIC_RECORD_NAME: TopicRecordNameStrategy,
}

/** How a request names the schema of a key or value (kafka-rest's SchemaManager arguments). */
export interface SchemaSpec {
  format?: SchemaFormat
  schemaId?: number
  schemaVersion?: number
  rawSchema?: string
  subject?: string
  strategy?: string
}

export interface ResolvedSchema {
  format: SchemaFormat
  subject: string
  id: number
  version: number
  schema: string
  references: SchemaReference[]
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** base64 text to bytes, refusing anything that is not base64 (kafka-rest's message). */
export function decodeBase64(data: unknown): Buffer {
  // Jackson's MIME-NO-LINEFEEDS variant, as kafka-rest reads base64: no line feeds, padded.
  if (typeof data !== 'string' || data.length % 4 !== 0 || !BASE64.test(data)) {
    throw Errors.badRequest(`data=${typeof data === 'string' ? data.slice(0, 64) : JSON.stringify(data)} is not a base64 string.`)
  }
  return Buffer.from(data, 'base64')
}

/** The name a Record*Strategy uses: Avro full name, JSON Schema title, first Protobuf message. */
function recordName(format: SchemaFormat, schema: string): string | undefined {
  try {
    if (format === 'AVRO') {
      const json = JSON.parse(schema) as { name?: unknown; namespace?: unknown }
      if (typeof json.name !== 'string') return undefined
      return json.name.includes('.') || typeof json.namespace !== 'string' || json.namespace === '' ? json.name : `${json.namespace}.${json.name}`
    }
    if (format === 'JSONSCHEMA') {
      const t = (JSON.parse(schema) as { title?: unknown }).title
      return typeof t === 'string' ? t : undefined
    }
    const parsed = parseSchema('PROTOBUF', schema, [], []) as unknown as { firstMessage(): { fullName: string } | null }
    return parsed.firstMessage()?.fullName.replace(/^\./, '')
  } catch {
    return undefined
  }
}

interface Serializer {
  serialize(topic: string, value: never): Promise<Buffer>
}

/** A small map that forgets its oldest entries past a size. */
class Bounded<V> {
  private readonly map = new Map<string, V>()
  constructor(private readonly max: number) {}
  get(k: string): V | undefined {
    return this.map.get(k)
  }
  set(k: string, v: V): void {
    if (this.map.size >= this.max) this.map.delete(this.map.keys().next().value!)
    this.map.set(k, v)
  }
  delete(k: string): void {
    this.map.delete(k)
  }
}

/** How long a "latest version of the subject" resolution is reused (as Confluent's latest.cache.ttl). */
const LATEST_TTL_MS = 30_000

export class SchemaSupport {
  private readonly resolved = new Bounded<{ at: number; latest: boolean; value: Promise<ResolvedSchema> }>(4096)
  private readonly serializers = new Bounded<Serializer>(1024)
  private readonly avroTypes = new Bounded<Promise<avsc.Type | null>>(1024)
  private readonly deserializers: Partial<Record<SchemaFormat, { deserialize(topic: string, data: Uint8Array): Promise<unknown> }>> = {}

  constructor(readonly client: SchemaRegistryClient | null) {}

  static fromUrls(urls: readonly string[] | null, tls?: ConnectionOptions): SchemaSupport {
    return new SchemaSupport(urls === null || urls.length === 0 ? null : new SchemaRegistryClient({ url: [...urls], timeoutMs: 30_000, tls }))
  }

  private registry(): SchemaRegistryClient {
    if (this.client === null) throw Errors.invalidPayload('Schema Registry must be configured when using schemas.')
    return this.client
  }

  /** The schema a key or value is written with (cached; "latest" for LATEST_TTL_MS). */
  resolve(topic: string, isKey: boolean, spec: SchemaSpec): Promise<ResolvedSchema> {
    const key = `${topic}\u0000${isKey}\u0000${JSON.stringify(spec)}`
    const hit = this.resolved.get(key)
    if (hit !== undefined && (!hit.latest || Date.now() - hit.at < LATEST_TTL_MS)) return hit.value
    const latest = spec.schemaId === undefined && spec.schemaVersion === undefined && spec.rawSchema === undefined
    const value = this.resolveNow(topic, isKey, spec)
    this.resolved.set(key, { at: Date.now(), latest, value })
    value.catch(() => this.resolved.delete(key))
    return value
  }

  private subjectFor(topic: string, isKey: boolean, spec: SchemaSpec, format: SchemaFormat | undefined, schema: string | undefined): string {
    if (spec.subject !== undefined) return spec.subject
    const name = spec.strategy ?? 'TOPIC_NAME'
    const strategy = STRATEGIES[name]
    if (strategy === undefined) throw Errors.badRequest(`Unsupported subject_name_strategy ${name}`)
    try {
      return strategy(topic, isKey, format !== undefined && schema !== undefined ? recordName(format, schema) : undefined)
    } catch {
      throw Errors.badRequest(`Cannot use${spec.strategy === undefined ? ' default' : ''} schema_subject_strategy${spec.strategy === undefined ? '' : `=${name}`} without schema_id or schema.`)
    }
  }

  private async resolveNow(topic: string, isKey: boolean, spec: SchemaSpec): Promise<ResolvedSchema> {
    const client = this.registry()
    const failed = (what: string, e: unknown): RestError => {
      if (e instanceof RestError) return e
      if (e instanceof RegistryClientError && e.status === 403) return new RestError(403, 40301, `${what}: ${e.message}`)
      return Errors.badRequest(`${what}: ${(e as Error).message}`)
    }
    if (spec.schemaId !== undefined) {
      let registered
      try {
        registered = await client.schemaById(spec.schemaId)
      } catch (e) {
        throw failed(`Error when fetching schema by id. schemaId = ${spec.schemaId}`, e)
      }
      const format = FORMAT_OF_TYPE[registered.schemaType]
      if (spec.format !== undefined && spec.format !== format) throw Errors.badRequest(`schema ${spec.schemaId} is ${format}, not ${spec.format}`)
      const subject = this.subjectFor(topic, isKey, spec, format, registered.schema)
      let version: number
      try {
        version = (await client.lookup(subject, registered)).version
      } catch (e) {
        throw failed(`Error when fetching schema version. subject = ${subject}, schema = ${registered.schema.slice(0, 200)}`, e)
      }
      return { format, subject, id: spec.schemaId, version, schema: registered.schema, references: registered.references }
    }
    if (spec.schemaVersion !== undefined) {
      const subject = this.subjectFor(topic, isKey, spec, undefined, undefined)
      let v
      try {
        v = await client.version(subject, spec.schemaVersion)
      } catch (e) {
        throw failed(`Schema does not exist for subject: ${subject}, version: ${spec.schemaVersion}`, e)
      }
      return { format: FORMAT_OF_TYPE[v.schemaType], subject, id: v.id, version: v.version, schema: v.schema, references: v.references }
    }
    if (spec.rawSchema !== undefined) {
      const format = spec.format
      if (format === undefined) throw Errors.badRequest('a raw schema needs its type (AVRO, JSONSCHEMA or PROTOBUF)')
      try {
        parseSchema(REGISTRY_TYPE[format], spec.rawSchema, [], [])
      } catch (e) {
        throw Errors.badRequest(`Error parsing schema with format = ${format}: ${(e as Error).message}`)
      }
      const subject = this.subjectFor(topic, isKey, spec, format, spec.rawSchema)
      const registered = { schema: spec.rawSchema, schemaType: REGISTRY_TYPE[format], references: [] }
      let id: number
      let version: number
      try {
        id = await client.register(subject, registered)
        version = (await client.lookup(subject, registered)).version
      } catch (e) {
        throw failed(`Error when registering schema. format = ${format}, subject = ${subject}`, e)
      }
      return { format, subject, id, version, schema: spec.rawSchema, references: [] }
    }
    const subject = this.subjectFor(topic, isKey, spec, undefined, undefined)
    let latest
    try {
      latest = await client.latest(subject)
    } catch (e) {
      throw failed(`Error when fetching latest schema version. subject = ${subject}`, e)
    }
    const format = FORMAT_OF_TYPE[latest.schemaType]
    if (spec.format !== undefined && spec.format !== format) throw Errors.badRequest(`the latest schema of ${subject} is ${format}, not ${spec.format}`)
    return { format, subject, id: latest.id, version: latest.version, schema: latest.schema, references: latest.references }
  }

  /** A value in the wire format of its schema; JSON data that does not fit the schema is a 422. */
  async serialize(topic: string, s: ResolvedSchema, data: unknown): Promise<Buffer> {
    const client = this.registry()
    const key = `${s.format}\u0000${s.subject}\u0000${s.id}`
    let ser = this.serializers.get(key)
    // The subject was resolved above (the schema is registered under it), so registering again only
    // looks the id up, once: the serializer caches it.
    const opts = { client, schema: s.schema, references: s.references, autoRegister: true, subjectNameStrategy: () => s.subject }
    if (ser === undefined) {
      ser = s.format === 'AVRO' ? new AvroSerializer(opts) : s.format === 'JSONSCHEMA' ? new JsonSchemaSerializer({ ...opts, validate: true }) : new ProtobufSerializer(opts)
      this.serializers.set(key, ser)
    }
    let value: unknown = data
    if (s.format === 'AVRO') value = await this.avroValue(s, data)
    if (s.format === 'PROTOBUF' && (data === null || typeof data !== 'object' || Array.isArray(data))) throw Errors.jsonConversion('a Protobuf message must be a JSON object')
    try {
      return await ser.serialize(topic, value as never)
    } catch (e) {
      if (e instanceof SerializationError) throw Errors.jsonConversion(e.message)
      throw e
    }
  }

  /** Avro data arrives in Avro's JSON encoding (unions wrapped, bytes as text): avsc reads it with fromString. */
  private async avroValue(s: ResolvedSchema, data: unknown): Promise<unknown> {
    const type = await this.avroType(s.id, s.schema, s.references)
    if (type === null) return data
    try {
      return avroFromJson(type, data)
    } catch (e) {
      throw Errors.jsonConversion((e as Error).message)
    }
  }

  /** The avsc type of a registered schema, for Avro's JSON encoding; null with references (not rendered). */
  private avroType(id: number, schema: string, references: SchemaReference[]): Promise<avsc.Type | null> {
    let t = this.avroTypes.get(String(id))
    if (t === undefined) {
      t = Promise.resolve(references.length > 0 ? null : avsc.Type.forSchema(JSON.parse(schema) as avsc.Schema))
      this.avroTypes.set(String(id), t)
    }
    return t
  }

  /** A stored key or value in JSON, decoded with the writer's schema (Avro in its JSON encoding). */
  async deserialize(format: SchemaFormat, topic: string, data: Buffer): Promise<unknown> {
    const client = this.registry()
    let d = this.deserializers[format]
    if (d === undefined) {
      d = format === 'AVRO' ? new AvroDeserializer({ client }) : format === 'JSONSCHEMA' ? new JsonSchemaDeserializer({ client }) : new ProtobufDeserializer({ client })
      this.deserializers[format] = d
    }
    try {
      const value = await d.deserialize(topic, data)
      if (format !== 'AVRO') return value
      const { id } = decodeHeader(data)
      const registered = await client.schemaById(id)
      const type = await this.avroType(id, registered.schema, registered.references)
      return type === null ? plainJson(value) : JSON.parse(type.toString(value))
    } catch (e) {
      if (e instanceof RestError) throw e
      if (e instanceof SerializationError || e instanceof RegistryClientError) throw new RestError(500, 50002, `Kafka error: Error deserializing ${format} message: ${e.message}`)
      throw e
    }
  }
}

/** Buffers as Avro's JSON encoding writes bytes (one char per byte). */
function plainJson(v: unknown): unknown {
  if (Buffer.isBuffer(v)) return v.toString('latin1')
  if (Array.isArray(v)) return v.map(plainJson)
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plainJson(x)]))
  return v
}
