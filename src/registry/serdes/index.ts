// Serializers and deserializers for records in Confluent's wire format, for the three schema types:
// Avro (binary encoding via avsc), JSON Schema (JSON text, optionally validated), Protobuf (protobufjs,
// with the message-index path). The subject is chosen by a subject name strategy; the schema is
// registered automatically (auto.register.schemas), taken as the subject's latest version
// (use.latest.version), or looked up. These serdes use only the registry client (HTTP) and the schema
// parsers: nothing of the broker.
import avsc from 'avsc'
import type protobuf from 'protobufjs'
import { flattenReferences } from '../avro/index.js'
import { JsonSchema } from '../jsonschema/index.js'
import { ProtobufSchema } from '../protobuf/index.js'
import type { ResolvedReference, SchemaReference, SchemaType } from '../schema-type/types.js'
import { type RegisteredSchema, type SchemaRegistryClient } from './client.js'
import {
  SerializationError,
  type SubjectNameStrategy,
  TopicNameStrategy,
  decodeHeader,
  decodeMessageIndexes,
  encodeHeader,
  encodeMessageIndexes,
} from './wire.js'

export * from './client.js'
export * from './wire.js'

export interface SerializerOptions {
  client: SchemaRegistryClient
  /** The writer schema's text. Optional with useLatestVersion, where the subject's latest is used. */
  schema?: string
  references?: SchemaReference[]
  /** auto.register.schemas (default true). */
  autoRegister?: boolean
  /** use.latest.version: serialize with the subject's latest registered schema. */
  useLatestVersion?: boolean
  /** use.schema.id: serialize with this registered schema, whatever the subject holds. */
  useSchemaId?: number
  subjectNameStrategy?: SubjectNameStrategy
  isKey?: boolean
  normalize?: boolean
}

/** Finds the id to write: registered, latest, or looked up, as the serializer is configured. */
async function writerId(opts: SerializerOptions, type: SchemaType, topic: string, recordName: string | undefined): Promise<{ id: number; schema: RegisteredSchema }> {
  if (opts.useSchemaId !== undefined) return { id: opts.useSchemaId, schema: await opts.client.schemaById(opts.useSchemaId) }
  const subject = (opts.subjectNameStrategy ?? TopicNameStrategy)(topic, opts.isKey ?? false, recordName)
  if (opts.useLatestVersion) {
    const latest = await opts.client.latest(subject)
    return { id: latest.id, schema: latest }
  }
  if (opts.schema === undefined) throw new SerializationError('no schema to serialize with')
  const schema: RegisteredSchema = { schema: opts.schema, schemaType: type, references: opts.references ?? [] }
  if (opts.autoRegister ?? true) return { id: await opts.client.register(subject, schema, opts.normalize), schema }
  return { id: (await opts.client.lookup(subject, schema, opts.normalize)).id, schema }
}

/**
 * The writer id per topic, resolved once: registering or looking up the same schema again would only
 * answer the same id (the client caches it too, but keyed by the schema text, which costs a string
 * build per record). The subject's latest version is not cached here: it can change.
 */
class WriterIds {
  private readonly byTopic = new Map<string, Promise<{ id: number; schema: RegisteredSchema }>>()
  constructor(private readonly type: SchemaType) {}

  get(opts: SerializerOptions, topic: string, recordName: string | undefined): Promise<{ id: number; schema: RegisteredSchema }> {
    if (opts.useLatestVersion) return writerId(opts, this.type, topic, recordName)
    let w = this.byTopic.get(topic)
    if (w === undefined) {
      if (this.byTopic.size >= 1024) this.byTopic.clear()
      w = writerId(opts, this.type, topic, recordName)
      this.byTopic.set(topic, w)
      w.catch(() => this.byTopic.delete(topic))
    }
    return w
  }
}

/**
 * A value given in Avro's JSON encoding (unions wrapped, bytes as text) as avsc holds it; a plain JSON
 * value that already fits the schema (an unwrapped union) is taken as it is. Throws what avsc said.
 */
export function avroFromJson(type: avsc.Type, json: unknown): unknown {
  try {
    return type.fromString(JSON.stringify(json))
  } catch (err) {
    if (type.isValid(json)) return json
    throw err
  }
}

/**
 * An Avro type built by avsc from a registered schema text, the referenced schemas defined first (depth
 * first, each once): the one way the serializers here, the Streams serdes and Connect's AvroConverter load
 * references. rootOptions apply to the schema itself (Connect reads unions unwrapped: wrapUnions 'auto').
 */
export function avscTypeWithReferences(schema: string, resolved: ResolvedReference[], rootOptions: Partial<avsc.ForSchemaOptions> = {}): avsc.Type {
  const registry: Record<string, avsc.Type> = {}
  for (const text of flattenReferences(resolved)) avsc.Type.forSchema(JSON.parse(text), { registry })
  return avsc.Type.forSchema(JSON.parse(schema), { ...rootOptions, registry })
}

/** The full name of a schema's root named type (for the Record*Strategy subjects). */
function avroRecordName(schema: string): string | undefined {
  const json = safeJson(schema)
  const name = json?.['name']
  if (typeof name !== 'string') return undefined
  const ns = json?.['namespace']
  return name.includes('.') || typeof ns !== 'string' || ns === '' ? name : `${ns}.${name}`
}

export class AvroSerializer {
  private type?: Promise<avsc.Type>
  private readonly writers = new WriterIds('AVRO')
  private readonly recordName?: string

  constructor(private readonly opts: SerializerOptions) {
    this.recordName = opts.schema !== undefined ? avroRecordName(opts.schema) : undefined
  }

  async serialize(topic: string, value: unknown): Promise<Buffer> {
    const { id, schema } = await this.writers.get(this.opts, topic, this.recordName)
    this.type ??= this.opts.client.resolveReferences(schema.references).then((resolved) => avscTypeWithReferences(schema.schema, resolved))
    const type = await this.type
    let payload: Buffer
    try {
      payload = type.toBuffer(value)
    } catch (e) {
      throw new SerializationError(`value does not match the Avro schema: ${(e as Error).message}`)
    }
    return Buffer.concat([encodeHeader(id), payload])
  }
}

export interface DeserializerOptions {
  client: SchemaRegistryClient
  /** For Avro: a reader schema to resolve the writer's data into (schema evolution). */
  readerSchema?: string
  /** For JSON: validate each document against the writer's schema. */
  validate?: boolean
  /** For Protobuf: protobufjs toObject options (defaults: longs and enums as strings, bytes as base64). */
  toObject?: protobuf.IConversionOptions
}

export class AvroDeserializer {
  private readonly writers = new Map<number, Promise<{ decode: (payload: Buffer) => unknown }>>()
  constructor(private readonly opts: DeserializerOptions) {}

  async deserialize(_topic: string, data: Uint8Array): Promise<unknown> {
    const { id, offset } = decodeHeader(data)
    let w = this.writers.get(id)
    if (!w) {
      w = (async () => {
        const registered = await this.opts.client.schemaById(id)
        if (registered.schemaType !== 'AVRO') throw new SerializationError(`schema ${id} is ${registered.schemaType}, not AVRO`)
        const writer = avscTypeWithReferences(registered.schema, await this.opts.client.resolveReferences(registered.references))
        if (this.opts.readerSchema === undefined) return { decode: (p: Buffer) => writer.fromBuffer(p) }
        const reader = avsc.Type.forSchema(JSON.parse(this.opts.readerSchema))
        const resolver = reader.createResolver(writer)
        return { decode: (p: Buffer) => reader.fromBuffer(p, resolver) }
      })()
      this.writers.set(id, w)
      w.catch(() => this.writers.delete(id))
    }
    const payload = Buffer.from(data.buffer, data.byteOffset + offset, data.byteLength - offset)
    const writer = await w
    try {
      return writer.decode(payload)
    } catch (e) {
      throw new SerializationError(`cannot decode Avro record with schema ${id}: ${(e as Error).message}`)
    }
  }
}

export class JsonSchemaSerializer {
  private parsed?: Promise<JsonSchema>
  private readonly writers = new WriterIds('JSON')
  private readonly recordName?: string

  constructor(private readonly opts: SerializerOptions & { validate?: boolean }) {
    const title = opts.schema !== undefined ? safeJson(opts.schema)?.['title'] : undefined
    this.recordName = typeof title === 'string' ? title : undefined
  }

  async serialize(topic: string, value: unknown): Promise<Buffer> {
    const { id, schema } = await this.writers.get(this.opts, topic, this.recordName)
    if (this.opts.validate) {
      this.parsed ??= this.opts.client.resolveReferences(schema.references).then((r) => JsonSchema.parse(schema.schema, schema.references, r))
      const errors = (await this.parsed).validate(value)
      if (errors) throw new SerializationError(`value does not match the JSON schema: ${errors}`)
    }
    return Buffer.concat([encodeHeader(id), Buffer.from(JSON.stringify(value), 'utf8')])
  }
}

export class JsonSchemaDeserializer {
  private readonly schemas = new Map<number, Promise<JsonSchema>>()
  constructor(private readonly opts: DeserializerOptions) {}

  async deserialize(_topic: string, data: Uint8Array): Promise<unknown> {
    const { id, offset } = decodeHeader(data)
    const text = Buffer.from(data.buffer, data.byteOffset + offset, data.byteLength - offset).toString('utf8')
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch (e) {
      throw new SerializationError(`record with schema ${id} is not JSON: ${(e as Error).message}`)
    }
    if (this.opts.validate) {
      let s = this.schemas.get(id)
      if (!s) {
        s = this.opts.client.schemaById(id).then(async (r) => JsonSchema.parse(r.schema, r.references, await this.opts.client.resolveReferences(r.references)))
        this.schemas.set(id, s)
        s.catch(() => this.schemas.delete(id))
      }
      const errors = (await s).validate(value)
      if (errors) throw new SerializationError(`record does not match JSON schema ${id}: ${errors}`)
    }
    return value
  }
}

export class ProtobufSerializer {
  private readonly writers = new WriterIds('PROTOBUF')
  private parsed?: Promise<{ schema: ProtobufSchema; type: protobuf.Type; indexes: number[] }>

  /** `messageName`: the full name of the message to write (default: the schema's first message). */
  constructor(private readonly opts: SerializerOptions & { messageName?: string }) {}

  private recordNameCache?: { name: string | undefined }
  private recordName(): string | undefined {
    this.recordNameCache ??= { name: this.findRecordName() }
    return this.recordNameCache.name
  }

  private findRecordName(): string | undefined {
    if (this.opts.messageName) return this.opts.messageName.replace(/^\./, '')
    if (this.opts.schema === undefined) return undefined
    try {
      return ProtobufSchema.parse(this.opts.schema, [], []).firstMessage()?.fullName.replace(/^\./, '')
    } catch {
      return undefined
    }
  }

  async serialize(topic: string, value: Record<string, unknown>): Promise<Buffer> {
    const { id, schema } = await this.writers.get(this.opts, topic, this.recordName())
    this.parsed ??= (async () => {
      const parsed = ProtobufSchema.parse(schema.schema, schema.references, await this.opts.client.resolveReferences(schema.references))
      const type = this.opts.messageName ? parsed.message(this.opts.messageName) : parsed.firstMessage()
      if (!type) throw new SerializationError(`message ${this.opts.messageName ?? '(first)'} not found in the schema`)
      return { schema: parsed, type, indexes: parsed.messageIndexes(type.fullName)! }
    })()
    const { type, indexes } = await this.parsed
    const problem = type.verify(value)
    if (problem) throw new SerializationError(`value does not match ${type.fullName}: ${problem}`)
    const payload = type.encode(type.fromObject(value)).finish()
    return Buffer.concat([encodeHeader(id), encodeMessageIndexes(indexes), payload])
  }
}

export class ProtobufDeserializer {
  private readonly schemas = new Map<number, Promise<ProtobufSchema>>()
  constructor(private readonly opts: DeserializerOptions) {}

  /** The decoded message as a plain object, and the full name of its type. */
  async deserializeWithType(_topic: string, data: Uint8Array): Promise<{ message: Record<string, unknown>; typeName: string }> {
    const { id, offset } = decodeHeader(data)
    const { indexes, offset: payloadAt } = decodeMessageIndexes(data, offset)
    let s = this.schemas.get(id)
    if (!s) {
      s = this.opts.client.schemaById(id).then(async (r) => {
        if (r.schemaType !== 'PROTOBUF') throw new SerializationError(`schema ${id} is ${r.schemaType}, not PROTOBUF`)
        return ProtobufSchema.parse(r.schema, r.references, await this.opts.client.resolveReferences(r.references))
      })
      this.schemas.set(id, s)
      s.catch(() => this.schemas.delete(id))
    }
    const type = (await s).messageAt(indexes)
    if (!type) throw new SerializationError(`schema ${id} has no message at index path [${indexes.join(', ')}]`)
    try {
      const decoded = type.decode(data.subarray(payloadAt))
      return { message: type.toObject(decoded, this.opts.toObject ?? { longs: String, enums: String, bytes: String }), typeName: type.fullName.replace(/^\./, '') }
    } catch (e) {
      throw new SerializationError(`cannot decode ${type.fullName} with schema ${id}: ${(e as Error).message}`)
    }
  }

  async deserialize(topic: string, data: Uint8Array): Promise<Record<string, unknown>> {
    return (await this.deserializeWithType(topic, data)).message
  }
}

function safeJson(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text)
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : undefined
  } catch {
    return undefined
  }
}
