// The Schema Registry formats as Streams serdes (Confluent's wire format: magic byte, schema id, payload),
// over the registry's serializers (src/registry/serdes). Those look schemas up over HTTP, so each serde
// does that work in prepare(), which the runtime awaits (a serializer's once per topic when a task
// starts; a deserializer's before a record is processed, only when its schema is not cached yet), so
// that serialize() and deserialize() run synchronously inside processing.
import { JsonSchema } from '../../registry/jsonschema/index.js'
import { ProtobufSchema } from '../../registry/protobuf/index.js'
import type { SchemaReference, SchemaType } from '../../registry/schema-type/types.js'
import { AvroDeserializer, avscTypeWithReferences, JsonSchemaDeserializer, ProtobufDeserializer, type DeserializerOptions, type SerializerOptions } from '../../registry/serdes/index.js'
import { TopicNameStrategy, encodeHeader, encodeMessageIndexes } from '../../registry/serdes/wire.js'
import { SerializationException } from './errors.js'
import type { Serde } from './serdes.js'

interface AsyncDeserializer<T> {
  deserialize(topic: string, data: Uint8Array): Promise<T>
}

/** What a serializer needs per topic once its schema is resolved: the id and a synchronous encoder. */
interface Writer<T> {
  id: number
  encode(value: T): Buffer
}

/** The schema id to write with, as the registry serializers choose it (latest, registered or looked up). */
async function writerId(opts: SerializerOptions, type: SchemaType, topic: string, recordName: string | undefined): Promise<{ id: number; schema: string; references: SchemaReference[] }> {
  const subject = (opts.subjectNameStrategy ?? TopicNameStrategy)(topic, opts.isKey ?? false, recordName)
  if (opts.useLatestVersion) {
    const latest = await opts.client.latest(subject)
    return { id: latest.id, schema: latest.schema, references: latest.references }
  }
  if (opts.schema === undefined) throw new SerializationException('no schema to serialize with')
  const schema = { schema: opts.schema, schemaType: type, references: opts.references ?? [] }
  const id = (opts.autoRegister ?? true) ? await opts.client.register(subject, schema, opts.normalize) : (await opts.client.lookup(subject, schema, opts.normalize)).id
  return { id, schema: opts.schema, references: schema.references }
}

/**
 * A Streams serde over the registry. Serializing: prepare(topic) resolves the writer schema and its id
 * (registering it when auto.register.schemas) once per topic; serialize() then encodes synchronously.
 * Deserializing: prepare(topic, bytes) decodes the record in advance with the registry deserializer
 * (fetching the writer schema when it is not cached) and keeps the result for the synchronous
 * deserialize() of the same bytes.
 */
function registrySerde<T>(name: string, resolve: ((topic: string) => Promise<Writer<T>>) | null, de: AsyncDeserializer<T> | null): Serde<T> {
  const decoded = new WeakMap<Buffer, T>()
  const failed = new WeakMap<Buffer, Error>()
  const writers = new Map<string, Writer<T>>()
  const pending = new Map<string, Promise<void>>()
  return {
    name,
    serializer: {
      prepare(topic) {
        if (resolve === null || writers.has(topic)) return undefined
        let p = pending.get(topic)
        if (p === undefined) {
          p = resolve(topic).then((w) => {
            writers.set(topic, w)
          })
          pending.set(topic, p)
          p.catch(() => pending.delete(topic))
        }
        return p
      },
      serialize(topic, value) {
        if (value === null) return null
        if (resolve === null) throw new SerializationException(`${name} serde has no serializer configured`)
        const w = writers.get(topic)
        if (w === undefined) throw new SerializationException(`${name}: the writer schema for topic '${topic}' is not resolved (prepare was not awaited)`)
        return Buffer.concat([encodeHeader(w.id), w.encode(value)])
      },
    },
    deserializer: {
      prepare(topic, data) {
        if (data === null || de === null || decoded.has(data)) return undefined
        return de.deserialize(topic, data).then(
          (v) => {
            decoded.set(data, v)
          },
          (e: unknown) => {
            failed.set(data, e as Error)
          },
        )
      },
      deserialize(topic, data) {
        if (data === null) return null
        const f = failed.get(data)
        if (f !== undefined) throw new SerializationException(`${name}: ${f.message}`, { cause: f })
        if (!decoded.has(data)) throw new SerializationException(`${name}: record for topic '${topic}' was not prepared (its schema must be fetched first)`)
        return decoded.get(data)!
      },
    },
  }
}

function avroWriter<T>(opts: SerializerOptions): (topic: string) => Promise<Writer<T>> {
  const parsed = opts.schema !== undefined ? (JSON.parse(opts.schema) as { name?: string; namespace?: string }) : undefined
  const recordName = parsed?.name === undefined ? undefined : parsed.name.includes('.') || parsed.namespace === undefined ? parsed.name : `${parsed.namespace}.${parsed.name}`
  return async (topic) => {
    const { id, schema, references } = await writerId(opts, 'AVRO', topic, recordName)
    const type = avscTypeWithReferences(schema, await opts.client.resolveReferences(references))
    return {
      id,
      encode: (v: T) => {
        try {
          return type.toBuffer(v)
        } catch (e) {
          throw new SerializationException(`value does not match the Avro schema: ${(e as Error).message}`)
        }
      },
    }
  }
}

function jsonWriter<T>(opts: SerializerOptions & { validate?: boolean }): (topic: string) => Promise<Writer<T>> {
  let title: unknown
  try {
    title = opts.schema !== undefined ? (JSON.parse(opts.schema) as { title?: unknown }).title : undefined
  } catch {
    title = undefined
  }
  return async (topic) => {
    const { id, schema, references } = await writerId(opts, 'JSON', topic, typeof title === 'string' ? title : undefined)
    const parsed = opts.validate ? JsonSchema.parse(schema, references, await opts.client.resolveReferences(references)) : undefined
    return {
      id,
      encode: (v: T) => {
        const errors = parsed?.validate(v)
        if (errors) throw new SerializationException(`value does not match the JSON schema: ${errors}`)
        return Buffer.from(JSON.stringify(v), 'utf8')
      },
    }
  }
}

function protobufWriter<T extends Record<string, unknown>>(opts: SerializerOptions & { messageName?: string }): (topic: string) => Promise<Writer<T>> {
  return async (topic) => {
    const { id, schema, references } = await writerId(opts, 'PROTOBUF', topic, opts.messageName)
    const parsed = ProtobufSchema.parse(schema, references, await opts.client.resolveReferences(references))
    const type = opts.messageName !== undefined ? parsed.message(opts.messageName) : parsed.firstMessage()
    if (type === undefined) throw new SerializationException(`message ${opts.messageName ?? '(first)'} not found in the schema`)
    const indexes = encodeMessageIndexes(parsed.messageIndexes(type.fullName)!)
    return {
      id,
      encode: (v: T) => {
        const problem = type.verify(v)
        if (problem) throw new SerializationException(`value does not match ${type.fullName}: ${problem}`)
        return Buffer.concat([indexes, Buffer.from(type.encode(type.fromObject(v)).finish())])
      },
    }
  }
}

export const AvroSerde = <T = unknown>(opts: { serializer?: SerializerOptions; deserializer?: DeserializerOptions }): Serde<T> =>
  registrySerde<T>('Avro', opts.serializer ? avroWriter<T>(opts.serializer) : null, opts.deserializer ? (new AvroDeserializer(opts.deserializer) as AsyncDeserializer<T>) : null)

/** JSON Schema: `serializer.validate` checks each value against the writer schema (json.fail.invalid.schema). */
export const JsonSchemaSerde = <T = unknown>(opts: { serializer?: SerializerOptions & { validate?: boolean }; deserializer?: DeserializerOptions }): Serde<T> =>
  registrySerde<T>('JsonSchema', opts.serializer ? jsonWriter<T>(opts.serializer) : null, opts.deserializer ? (new JsonSchemaDeserializer(opts.deserializer) as AsyncDeserializer<T>) : null)

export const ProtobufSerde = <T extends Record<string, unknown> = Record<string, unknown>>(opts: { serializer?: SerializerOptions & { messageName?: string }; deserializer?: DeserializerOptions }): Serde<T> =>
  registrySerde<T>('Protobuf', opts.serializer ? protobufWriter<T>(opts.serializer) : null, opts.deserializer ? (new ProtobufDeserializer(opts.deserializer) as unknown as AsyncDeserializer<T>) : null)
