// How keys, values and header values are shown to WebSocket clients and the console: as UTF-8 text, as
// base64, or ('auto') decoded with the Schema Registry when the bytes are in Confluent's wire format
// (magic byte 0, schema id) and a registry is configured, else as text when they are valid UTF-8, else
// base64. The decoded form says which one it chose.
import type { ConnectionOptions } from 'node:tls'
import { isUtf8 } from 'node:buffer'
import { AvroDeserializer, JsonSchemaDeserializer, ProtobufDeserializer, SchemaRegistryClient } from '../registry/serdes/index.js'

export type Encoding = 'auto' | 'utf8' | 'base64'
export const ENCODINGS: readonly Encoding[] = ['auto', 'utf8', 'base64']

/** 'string' and 'base64' are plain bytes; the others were decoded with the writer's registered schema. */
export type FieldFormat = 'string' | 'base64' | 'avro' | 'json' | 'protobuf'

export interface DecodedField {
  data: unknown
  format: FieldFormat
  schemaId?: number
}

/** JSON for what avsc and protobufjs return: Buffers as base64, bigints and Longs as text. */
function jsonSafe(v: unknown): unknown {
  if (v === null || v === undefined) return v ?? null
  if (Buffer.isBuffer(v)) return v.toString('base64')
  if (typeof v === 'bigint') return v.toString()
  if (Array.isArray(v)) return v.map(jsonSafe)
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>
    if (typeof o.toJSON === 'function') return jsonSafe(o.toJSON())
    const out: Record<string, unknown> = {}
    for (const k of Object.keys(o)) out[k] = jsonSafe(o[k])
    return out
  }
  return v
}

export class RecordDecoder {
  private readonly client: SchemaRegistryClient | null
  private readonly avro: AvroDeserializer | null
  private readonly json: JsonSchemaDeserializer | null
  private readonly protobuf: ProtobufDeserializer | null
  /** Schema ids the registry does not know (or that failed): not asked again. */
  private readonly unknownIds = new Set<number>()

  constructor(registryUrls: readonly string[] | null, registryTls?: ConnectionOptions) {
    this.client = registryUrls === null || registryUrls.length === 0 ? null : new SchemaRegistryClient({ url: [...registryUrls], timeoutMs: 10_000, tls: registryTls })
    this.avro = this.client && new AvroDeserializer({ client: this.client })
    this.json = this.client && new JsonSchemaDeserializer({ client: this.client })
    this.protobuf = this.client && new ProtobufDeserializer({ client: this.client })
  }

  get hasRegistry(): boolean {
    return this.client !== null
  }

  /** Plain bytes as text or base64 (never asks the registry). */
  plain(bytes: Buffer, encoding: Encoding): DecodedField {
    if (encoding === 'base64' || (encoding === 'auto' && !isUtf8(bytes))) return { data: bytes.toString('base64'), format: 'base64' }
    return { data: bytes.toString('utf8'), format: 'string' }
  }

  /** Whether decode() may need the registry for these bytes (wire format and a registry). */
  mayUseRegistry(bytes: Buffer | null, encoding: Encoding): boolean {
    return encoding === 'auto' && this.client !== null && bytes !== null && bytes.length >= 5 && bytes[0] === 0 && !this.unknownIds.has(bytes.readInt32BE(1))
  }

  async decode(topic: string, bytes: Buffer | null, encoding: Encoding): Promise<DecodedField | null> {
    if (bytes === null) return null
    if (!this.mayUseRegistry(bytes, encoding)) return this.plain(bytes, encoding)
    const id = bytes.readInt32BE(1)
    try {
      const registered = await this.client!.schemaById(id)
      if (registered.schemaType === 'AVRO') return { data: jsonSafe(await this.avro!.deserialize(topic, bytes)), format: 'avro', schemaId: id }
      if (registered.schemaType === 'JSON') return { data: jsonSafe(await this.json!.deserialize(topic, bytes)), format: 'json', schemaId: id }
      return { data: jsonSafe(await this.protobuf!.deserialize(topic, bytes)), format: 'protobuf', schemaId: id }
    } catch {
      // Not a registered schema after all (a plain value starting with a zero byte), or undecodable.
      if (this.unknownIds.size >= 10_000) this.unknownIds.clear()
      this.unknownIds.add(id)
      return this.plain(bytes, encoding)
    }
  }
}
