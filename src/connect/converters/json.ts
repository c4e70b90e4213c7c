// Kafka's own converters: StringConverter, ByteArrayConverter, JsonConverter (with and without the
// {"schema": ..., "payload": ...} envelope of schemas.enable, Kafka's schema JSON), and
// SimpleHeaderConverter (the default header.converter). The JSON schema format and the value mapping
// follow org.apache.kafka.connect.json.JsonConverter: int64 is a JSON number, bytes are base64, Decimal
// is base64 of the unscaled bytes (decimal.format=BASE64) or a number (NUMERIC), Date/Time/Timestamp are
// their int32/int64 encodings.
import { ConfigDef, Validators } from '../api/config-def.js'
import {
  DataException,
  DATE_NAME,
  type Field,
  DECIMAL_NAME,
  DateType,
  Decimal,
  inferSchemaType,
  mapEntries,
  type Schema,
  SchemaBuilder,
  type SchemaAndValue,
  type SchemaType,
  Schemas,
  Struct,
  TIME_NAME,
  TIMESTAMP_NAME,
  TimeType,
  TimestampType,
  validateValue,
} from '../api/data.js'
import type { ConnectHeaders, Converter, HeaderConverter } from '../api/plugin.js'

export class StringConverter implements Converter {
  private encoding: BufferEncoding = 'utf8'

  configure(props: Record<string, string>, _isKey: boolean): void {
    // The worker passes key.converter.* / value.converter.* with the prefix removed.
    const enc = props['converter.encoding'] ?? props['encoding'] ?? 'UTF-8'
    this.encoding = enc.toLowerCase().replace('-', '') === 'utf8' ? 'utf8' : (enc.toLowerCase() as BufferEncoding)
    if (!Buffer.isEncoding(this.encoding)) throw new DataException(`unsupported encoding ${enc}`)
  }

  config(): ConfigDef {
    return new ConfigDef().define('converter.encoding', 'STRING', 'UTF-8', 'HIGH', 'The name of the character encoding used to serialize and deserialize strings.')
  }

  fromConnectData(_topic: string, _headers: ConnectHeaders | null, _schema: Schema | null, value: unknown): Buffer | null {
    if (value === null || value === undefined) return null
    return Buffer.from(valueToString(value), this.encoding)
  }

  toConnectData(_topic: string, _headers: ConnectHeaders | null, value: Buffer | null): SchemaAndValue {
    return { schema: Schemas.OPTIONAL_STRING, value: value === null ? null : value.toString(this.encoding) }
  }
}

export class ByteArrayConverter implements Converter, HeaderConverter {
  configure(): void {}

  config(): ConfigDef {
    return new ConfigDef()
  }

  fromConnectData(_topic: string, _headers: ConnectHeaders | null, schema: Schema | null, value: unknown): Buffer | null {
    if (schema !== null && schema.type !== 'bytes') throw new DataException(`Invalid schema type for ByteArrayConverter: ${schema.type.toUpperCase()}`)
    if (value === null || value === undefined) return null
    if (!(value instanceof Uint8Array)) throw new DataException(`ByteArrayConverter is not compatible with objects of type ${typeof value}`)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  }

  toConnectData(_topic: string, _headers: ConnectHeaders | null, value: Buffer | null): SchemaAndValue {
    return { schema: Schemas.OPTIONAL_BYTES, value }
  }

  // As a HeaderConverter (Kafka's ByteArrayConverter is both): header values pass through as bytes.
  fromConnectHeader(topic: string, _headerKey: string, schema: Schema | null, value: unknown): Buffer | null {
    return this.fromConnectData(topic, null, schema, value)
  }

  toConnectHeader(_topic: string, _headerKey: string, value: Buffer | null): SchemaAndValue {
    return { schema: Schemas.OPTIONAL_BYTES, value }
  }
}

/** A value's text as Kafka's StringConverter / Values.convertToString writes it. */
export function valueToString(value: unknown): string {
  if (typeof value === 'string') return value
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64')
  if (value instanceof Date) return value.toISOString()
  if (value instanceof Struct) return value.toString()
  if (value instanceof Map) return JSON.stringify(Object.fromEntries([...value].map(([k, v]) => [String(k), jsonSafe(v)])))
  if (typeof value === 'object' && value !== null) return JSON.stringify(jsonSafe(value))
  return String(value)
}

function jsonSafe(v: unknown): unknown {
  if (typeof v === 'bigint') return Number(v)
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64')
  if (v instanceof Map) return Object.fromEntries([...v].map(([k, x]) => [String(k), jsonSafe(x)]))
  if (v instanceof Struct) return Object.fromEntries(v.schema.fields!.map((f) => [f.name, jsonSafe(v.get(f))]))
  if (Array.isArray(v)) return v.map(jsonSafe)
  if (v instanceof Date) return v.getTime()
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, jsonSafe(x)]))
  return v
}

// ---- JSON ----

const JSON_TYPE: Record<SchemaType, string> = {
  int8: 'int8', int16: 'int16', int32: 'int32', int64: 'int64', float32: 'float', float64: 'double',
  boolean: 'boolean', string: 'string', bytes: 'bytes', array: 'array', map: 'map', struct: 'struct',
}
const FROM_JSON_TYPE: Record<string, SchemaType> = Object.fromEntries(Object.entries(JSON_TYPE).map(([k, v]) => [v, k as SchemaType]))

/** A Connect schema as Kafka's JsonConverter writes it in the envelope. */
export function schemaToJson(schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = { type: JSON_TYPE[schema.type] }
  if (schema.type === 'struct') out['fields'] = schema.fields!.map((f) => ({ ...schemaToJson(f.schema), field: f.name }))
  if (schema.type === 'array') out['items'] = schemaToJson(schema.valueSchema!)
  if (schema.type === 'map') {
    out['keys'] = schemaToJson(schema.keySchema!)
    out['values'] = schemaToJson(schema.valueSchema!)
  }
  out['optional'] = schema.optional
  if (schema.name != null) out['name'] = schema.name
  if (schema.version != null) out['version'] = schema.version
  if (schema.doc != null) out['doc'] = schema.doc
  if (schema.parameters != null) out['parameters'] = { ...schema.parameters }
  if (schema.defaultValue !== undefined && schema.defaultValue !== null) out['default'] = valueToJson(schema, schema.defaultValue, 'BASE64')
  return out
}

export function schemaFromJson(json: unknown): Schema {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) throw new DataException('Schema must be a JSON object')
  const j = json as Record<string, unknown>
  const type = FROM_JSON_TYPE[String(j['type'])]
  if (type === undefined) throw new DataException(`Unknown schema type: ${String(j['type'])}`)
  let b: SchemaBuilder
  if (type === 'array') {
    if (j['items'] === undefined) throw new DataException('Array schema did not specify the element type')
    b = SchemaBuilder.array(schemaFromJson(j['items']))
  } else if (type === 'map') {
    if (j['keys'] === undefined || j['values'] === undefined) throw new DataException('Map schema did not specify the key and value types')
    b = SchemaBuilder.map(schemaFromJson(j['keys']), schemaFromJson(j['values']))
  } else {
    b = SchemaBuilder.type(type)
    if (type === 'struct') {
      const fields = j['fields']
      if (!Array.isArray(fields)) throw new DataException('Struct schema\'s "fields" argument is not an array.')
      for (const f of fields) {
        const name = (f as Record<string, unknown>)?.['field']
        if (typeof name !== 'string') throw new DataException('Struct schema\'s field name not specified properly')
        b.field(name, schemaFromJson(f))
      }
    }
  }
  if (j['optional'] === true) b.optional()
  if (typeof j['name'] === 'string') b.name(j['name'])
  if (typeof j['version'] === 'number') b.version(j['version'])
  if (typeof j['doc'] === 'string') b.doc(j['doc'])
  if (typeof j['parameters'] === 'object' && j['parameters'] !== null) b.parameters(Object.fromEntries(Object.entries(j['parameters']).map(([k, v]) => [k, String(v)])))
  if (j['default'] !== undefined && j['default'] !== null) {
    const s = b.build()
    b.defaultValue(valueFromJson(s, j['default']))
  }
  return b.build()
}

export type DecimalFormat = 'BASE64' | 'NUMERIC'

/** A Connect value as JSON (schema known), as JsonConverter.convertToJson. */
export function valueToJson(schema: Schema | null, value: unknown, decimalFormat: DecimalFormat = 'BASE64', replaceNullWithDefault = true): unknown {
  if (value === null || value === undefined) {
    if (schema === null) return null
    if (replaceNullWithDefault && schema.defaultValue !== undefined && schema.defaultValue !== null) return valueToJson(schema, schema.defaultValue, decimalFormat)
    if (schema.optional) return null
    throw new DataException('Conversion error: null value for field that is required and has no default value')
  }
  if (schema === null) return schemalessToJson(value)
  switch (schema.name) {
    case DECIMAL_NAME: {
      const text = typeof value === 'string' ? value : String(value)
      if (decimalFormat === 'NUMERIC') return new RawJsonNumber(text)
      return Decimal.fromLogical(schema, text).toString('base64')
    }
    case DATE_NAME:
      return DateType.fromLogical(value as Date)
    case TIME_NAME:
      return TimeType.fromLogical(value as Date)
    case TIMESTAMP_NAME:
      return TimestampType.fromLogical(value as Date)
  }
  validateValue(schema, value)
  switch (schema.type) {
    case 'int64':
      return typeof value === 'bigint' && (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) ? new RawJsonNumber(value.toString()) : Number(value)
    case 'bytes':
      return Buffer.from(value as Uint8Array).toString('base64')
    case 'array':
      return (value as unknown[]).map((v) => valueToJson(schema.valueSchema!, v, decimalFormat, replaceNullWithDefault))
    case 'map': {
      const m = value as Map<unknown, unknown>
      if (schema.keySchema!.type === 'string') return Object.fromEntries([...m].map(([k, v]) => [String(k), valueToJson(schema.valueSchema!, v, decimalFormat, replaceNullWithDefault)]))
      return [...m].map(([k, v]) => [valueToJson(schema.keySchema!, k, decimalFormat), valueToJson(schema.valueSchema!, v, decimalFormat, replaceNullWithDefault)])
    }
    case 'struct': {
      const s = value as Struct
      const out: Record<string, unknown> = {}
      for (const f of schema.fields!) out[f.name] = valueToJson(f.schema, replaceNullWithDefault ? s.get(f) : s.getWithoutDefault(f.name), decimalFormat, replaceNullWithDefault)
      return out
    }
    default:
      return value
  }
}

function schemalessToJson(value: unknown): unknown {
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : new RawJsonNumber(value.toString())
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64')
  if (value instanceof Date) return value.getTime()
  if (value instanceof Struct) return valueToJson(value.schema, value)
  if (Array.isArray(value)) return value.map(schemalessToJson)
  if (value instanceof Map || (typeof value === 'object' && value !== null)) return Object.fromEntries(mapEntries(value).map(([k, v]) => [k, schemalessToJson(v)]))
  return value
}

/** JSON (parsed) to a Connect value of schema, as JsonConverter.convertToConnect. */
export function valueFromJson(schema: Schema, json: unknown): unknown {
  if (json === null || json === undefined) {
    if (schema.defaultValue !== undefined && schema.defaultValue !== null) return schema.defaultValue
    if (schema.optional) return null
    throw new DataException(`Invalid null value for required ${schema.type.toUpperCase()} field`)
  }
  const wrong = (): never => invalidJson(schema, json)
  if (json instanceof ExactJsonNumber) {
    // A number with more digits than a double holds: exact where the schema can keep it.
    if (schema.name === DECIMAL_NAME) return json.text
    if (schema.type === 'int64' && json.isInteger) return BigInt(json.text)
    if (schema.type === 'float32' || schema.type === 'float64') return Number(json.text)
    return wrong()
  }
  switch (schema.name) {
    case DECIMAL_NAME:
      if (typeof json === 'number') return String(json)
      if (typeof json === 'string') return Decimal.toLogical(schema, Buffer.from(json, 'base64'))
      return wrong()
    case DATE_NAME:
      if (typeof json !== 'number') wrong()
      return DateType.toLogical(json as number)
    case TIME_NAME:
      if (typeof json !== 'number') wrong()
      return TimeType.toLogical(json as number)
    case TIMESTAMP_NAME:
      if (typeof json !== 'number') wrong()
      return TimestampType.toLogical(json as number)
  }
  switch (schema.type) {
    case 'int8':
    case 'int16':
    case 'int32':
    case 'int64':
      if (typeof json !== 'number' || !Number.isInteger(json)) wrong()
      return json
    case 'float32':
    case 'float64':
      if (typeof json !== 'number') wrong()
      return json
    case 'boolean':
      if (typeof json !== 'boolean') wrong()
      return json
    case 'string':
      if (typeof json !== 'string') wrong()
      return json
    case 'bytes':
      if (typeof json !== 'string') wrong()
      return Buffer.from(json as string, 'base64')
    case 'array':
      if (!Array.isArray(json)) wrong()
      return (json as unknown[]).map((v) => valueFromJson(schema.valueSchema!, v))
    case 'map': {
      const out = new Map<unknown, unknown>()
      if (schema.keySchema!.type === 'string' && typeof json === 'object' && !Array.isArray(json)) {
        for (const [k, v] of Object.entries(json as object)) out.set(k, valueFromJson(schema.valueSchema!, v))
      } else if (Array.isArray(json)) {
        for (const e of json) {
          if (!Array.isArray(e) || e.length !== 2) wrong()
          out.set(valueFromJson(schema.keySchema!, e[0]), valueFromJson(schema.valueSchema!, e[1]))
        }
      } else wrong()
      return out
    }
    case 'struct': {
      if (typeof json !== 'object' || Array.isArray(json)) wrong()
      const s = new Struct(schema)
      for (const f of schema.fields!) s.put(f, valueFromJson(f.schema, (json as Record<string, unknown>)[f.name]))
      return s
    }
  }
}

function invalidJson(schema: Schema, json: unknown): never {
  throw new DataException(`Invalid JSON for ${schema.type.toUpperCase()} schema: ${JSON.stringify(json)}`)
}

/** Schemaless JSON to Connect values: objects become plain objects, integers int64 numbers (bigint beyond 2^53). */
function schemalessFromJson(json: unknown): unknown {
  if (json instanceof ExactJsonNumber) return json.isInteger ? BigInt(json.text) : Number(json.text)
  if (Array.isArray(json)) return json.map(schemalessFromJson)
  if (typeof json === 'object' && json !== null) {
    if (!containsExact(json)) return json
    return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, schemalessFromJson(v)]))
  }
  return json
}

/** A JSON number whose text has more significant digits than a double keeps exactly. */
class ExactJsonNumber {
  constructor(readonly text: string) {}
  get isInteger(): boolean {
    return /^-?\d+$/.test(this.text)
  }
}

function containsExact(v: unknown): boolean {
  if (v instanceof ExactJsonNumber) return true
  if (Array.isArray(v)) return v.some(containsExact)
  if (typeof v === 'object' && v !== null) return Object.values(v).some(containsExact)
  return false
}

/** Number tokens of 16 or more digits (a double is exact to 15), outside strings: matched with the strings so these are skipped. */
const LONG_NUMBER_OR_STRING = /"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]{15,}/g

/**
 * JSON.parse, except that numbers with more digits than a double holds (int64 beyond 2^53, long NUMERIC
 * decimals) come back as ExactJsonNumber with their text, as Jackson's BigInteger/BigDecimal nodes keep
 * them in Kafka. Such numbers are swapped for marker strings with a per-call random tag before parsing.
 */
export function parseJsonExact(text: string): unknown {
  // Cheap pre-check without copying the text: 16 digits once signs, points and exponents are removed
  // can only come from a run of 16 or more of those characters.
  if (!/[\d.eE+-]{16,}/.test(text)) return JSON.parse(text)
  const tag = `\u0000exact-${Math.random().toString(36).slice(2)}:`
  const numbers: string[] = []
  const marked = text.replace(LONG_NUMBER_OR_STRING, (m) => {
    if (m.startsWith('"')) return m
    const digits = m.replace(/^-/, '').split(/[eE]/)[0]!.replace('.', '').replace(/^0+/, '')
    if (digits.length < 16) return m
    numbers.push(m)
    return JSON.stringify(`${tag}${numbers.length - 1}`)
  })
  if (numbers.length === 0) return JSON.parse(text)
  return JSON.parse(marked, (_k, v) => (typeof v === 'string' && v.startsWith(tag) ? new ExactJsonNumber(numbers[Number(v.slice(tag.length))]!) : v))
}

/** A number written verbatim into JSON text (exact int64 and NUMERIC decimals). */
class RawJsonNumber {
  constructor(readonly text: string) {}
}

/** JSON.stringify that writes RawJsonNumber verbatim. */
export function stringifyJson(v: unknown): string {
  if (!containsRaw(v)) return JSON.stringify(v)
  const marks: string[] = []
  const text = JSON.stringify(v, (_k, x) => {
    if (x instanceof RawJsonNumber) {
      marks.push(x.text)
      return `\u0000RAW${marks.length - 1}\u0000`
    }
    return x
  })
  return text.replace(/"\\u0000RAW(\d+)\\u0000"/g, (_m, i: string) => marks[Number(i)]!)
}

function containsRaw(v: unknown): boolean {
  if (v instanceof RawJsonNumber) return true
  if (Array.isArray(v)) return v.some(containsRaw)
  if (typeof v === 'object' && v !== null) return Object.values(v).some(containsRaw)
  return false
}

export class JsonConverter implements Converter {
  private schemasEnable = true
  private decimalFormat: DecimalFormat = 'BASE64'
  private replaceNullWithDefault = true
  private readonly schemaCache = new Map<string, Schema>()
  private cacheSize = 1000

  config(): ConfigDef {
    return new ConfigDef()
      .define('schemas.enable', 'BOOLEAN', true, 'HIGH', 'Include schemas within each of the serialized values and keys.')
      .define('schemas.cache.size', 'INT', 1000, 'HIGH', 'The maximum number of schemas that can be cached in this converter instance.', { validator: Validators.atLeast(0) })
      .define('decimal.format', 'STRING', 'BASE64', 'LOW', 'Controls which format this converter will serialize decimals in: BASE64 or NUMERIC.', { validator: Validators.inIgnoreCase('BASE64', 'NUMERIC') })
      .define('replace.null.with.default', 'BOOLEAN', true, 'LOW', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>, _isKey: boolean): void {
    const c = this.config().parse(props)
    this.schemasEnable = c['schemas.enable'] as boolean
    this.cacheSize = c['schemas.cache.size'] as number
    this.decimalFormat = (c['decimal.format'] as string).toUpperCase() as DecimalFormat
    this.replaceNullWithDefault = c['replace.null.with.default'] as boolean
  }

  fromConnectData(_topic: string, _headers: ConnectHeaders | null, schema: Schema | null, value: unknown): Buffer | null {
    if (schema === null && (value === null || value === undefined)) return null
    const payload = valueToJson(schema, value, this.decimalFormat, this.replaceNullWithDefault)
    const doc = this.schemasEnable ? { schema: schema === null ? null : schemaToJson(schema), payload } : payload
    return Buffer.from(stringifyJson(doc), 'utf8')
  }

  toConnectData(_topic: string, _headers: ConnectHeaders | null, value: Buffer | null): SchemaAndValue {
    if (value === null) return { schema: null, value: null }
    if (this.schemasEnable && this.lastEnvelope !== undefined) {
      const fast = this.envelopeByLastPrefix(this.lastEnvelope, value)
      if (fast !== undefined) return fast
    }
    const text = value.toString('utf8')
    if (this.schemasEnable) {
      const fast = this.envelopeBySchemaText(text)
      if (fast !== undefined) return fast
    }
    let json: unknown
    try {
      json = parseJsonExact(text)
    } catch (err) {
      throw new DataException(`Converting byte[] to Kafka Connect data failed due to serialization error: ${(err as Error).message}`)
    }
    if (!this.schemasEnable) return { schema: null, value: schemalessFromJson(json) }
    if (typeof json !== 'object' || json === null || Array.isArray(json) || !('schema' in json) || !('payload' in json) || Object.keys(json).length !== 2) {
      throw new DataException('JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in your converter configuration.')
    }
    const env = json as { schema: unknown; payload: unknown }
    if (env.schema === null) return { schema: null, value: schemalessFromJson(env.payload) }
    const schema = this.cachedSchema(env.schema)
    return { schema, value: valueFromJson(schema, env.payload) }
  }

  private cachedSchema(json: unknown): Schema {
    const key = JSON.stringify(json)
    let s = this.schemaCache.get(key)
    if (s === undefined) {
      s = schemaFromJson(json)
      this.cacheSchema(key, s)
    }
    return s
  }

  private cacheSchema(key: string, s: Schema): void {
    if (this.cacheSize <= 0) return
    if (this.schemaCache.size >= this.cacheSize) this.schemaCache.delete(this.schemaCache.keys().next().value!)
    this.schemaCache.set(key, s)
  }

  /**
   * The envelope as Kafka's JsonConverter writes it, `{"schema":S,"payload":P}` without spaces, read
   * without parsing S again: S's text is the cache key, only P is parsed. Undefined when the text has
   * another form or anything in it is invalid; the general path then reads it (and names the error).
   */
  private envelopeBySchemaText(text: string): SchemaAndValue | undefined {
    if (!text.startsWith(ENVELOPE_SCHEMA) || text.charCodeAt(text.length - 1) !== 0x7d) return undefined
    const end = endOfJsonContainer(text, ENVELOPE_SCHEMA.length)
    if (end < 0 || !text.startsWith(ENVELOPE_PAYLOAD, end)) return undefined
    try {
      const schemaText = text.slice(ENVELOPE_SCHEMA.length, end)
      let schema = this.schemaCache.get(schemaText)
      if (schema === undefined) {
        schema = schemaFromJson(parseJsonExact(schemaText))
        this.cacheSchema(schemaText, schema)
      }
      const payload = parseJsonExact(text.slice(end + ENVELOPE_PAYLOAD.length, text.length - 1))
      const result = { schema, value: valueFromJson(schema, payload) }
      if (this.cacheSize > 0) this.lastEnvelope = { prefix: Buffer.from(`${ENVELOPE_SCHEMA}${schemaText}${ENVELOPE_PAYLOAD}`, 'utf8'), schema, flat: flatStructFields(schema) }
      return result
    } catch {
      return undefined
    }
  }

  /** The envelope prefix (up to the payload) of the last record read by its schema's text. */
  private lastEnvelope: LastEnvelope | undefined

  /**
   * A record whose bytes start with the last envelope's prefix (a topic's records usually share one
   * schema): compared as bytes, and only the payload is decoded and parsed. Undefined when the prefix
   * differs or anything fails (the general path then reads the record and names the error).
   */
  private envelopeByLastPrefix(last: LastEnvelope, value: Buffer): SchemaAndValue | undefined {
    const n = last.prefix.length
    if (value.length <= n || value[value.length - 1] !== 0x7d || value.compare(last.prefix, 0, n, 0, n) !== 0) return undefined
    try {
      const payload = value.toString('utf8', n, value.length - 1)
      const flat = last.flat === null ? undefined : flatStructFromJson(last.schema, last.flat, payload)
      return { schema: last.schema, value: flat ?? valueFromJson(last.schema, parseJsonExact(payload)) }
    } catch {
      return undefined
    }
  }
}

interface LastEnvelope {
  prefix: Buffer
  schema: Schema
  /** The fields when the schema is a struct of primitives (flatStructFields), else null. */
  flat: FlatField[] | null
}

interface FlatField {
  field: Field
  /** An integer type (int8..int64, Date, Time, Timestamp): its JSON number may need the exact path. */
  integer: boolean
}

/** A struct schema's fields when they are all primitives other than Decimal (read by flatStructFromJson), else null. */
function flatStructFields(schema: Schema): FlatField[] | null {
  if (schema.type !== 'struct') return null
  const out: FlatField[] = []
  for (const field of schema.fields!) {
    const t = field.schema.type
    if (t === 'array' || t === 'map' || t === 'struct' || field.schema.name === DECIMAL_NAME) return null
    out.push({ field, integer: t === 'int8' || t === 'int16' || t === 'int32' || t === 'int64' })
  }
  return out
}

/**
 * A struct of primitives from its payload text by JSON.parse alone, as valueFromJson(parseJsonExact())
 * reads it. JSON.parse keeps every number exactly except integers of 16 or more digits, which
 * parseJsonExact keeps as text: a field holding a number that large (|n| >= 1e15) returns undefined and
 * the exact path reads the record. So does a payload that is not an object (null, or an error to name).
 */
function flatStructFromJson(schema: Schema, fields: FlatField[], payload: string): Struct | undefined {
  const json: unknown = JSON.parse(payload)
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined
  const o = json as Record<string, unknown>
  const s = new Struct(schema)
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!
    const v = o[f.field.name]
    if (f.integer && typeof v === 'number' && !(v > -1e15 && v < 1e15)) return undefined
    s.put(f.field, valueFromJson(f.field.schema, v))
  }
  return s
}

const ENVELOPE_SCHEMA = '{"schema":'
const ENVELOPE_PAYLOAD = ',"payload":'

/** The end (exclusive) of the JSON object or array that starts at text[from], by brackets outside strings; -1 if none. */
function endOfJsonContainer(text: string, from: number): number {
  const first = text.charCodeAt(from)
  if (first !== 0x7b && first !== 0x5b) return -1
  let depth = 0
  for (let i = from; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22) {
      // a string: skip to its closing quote, over escapes
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i)
        if (d === 0x5c) i++
        else if (d === 0x22) break
      }
    } else if (c === 0x7b || c === 0x5b) depth++
    else if ((c === 0x7d || c === 0x5d) && --depth === 0) return i + 1
  }
  return -1
}

// ---- headers ----

/**
 * Kafka's SimpleHeaderConverter: values are written as their string form (structs, maps and arrays as
 * JSON), and read back by inferring the type from the text (booleans, integers by size, decimals,
 * arrays and maps as JSON), else as a string.
 */
export class SimpleHeaderConverter implements HeaderConverter {
  configure(): void {}

  config(): ConfigDef {
    return new ConfigDef()
  }

  fromConnectHeader(_topic: string, _key: string, schema: Schema | null, value: unknown): Buffer | null {
    if (value === null || value === undefined) return null
    if (value instanceof Uint8Array && (schema === null || schema.type === 'bytes')) return Buffer.from(value)
    return Buffer.from(valueToString(value), 'utf8')
  }

  toConnectHeader(_topic: string, _key: string, value: Buffer | null): SchemaAndValue {
    if (value === null) return { schema: null, value: null }
    const text = value.toString('utf8')
    return inferFromString(text)
  }
}

/** Kafka's Values.parseString, reduced: booleans, integers (smallest type), floats, JSON arrays/maps, else string. */
export function inferFromString(text: string): SchemaAndValue {
  const t = text.trim()
  if (t === 'true' || t === 'false') return { schema: Schemas.BOOLEAN, value: t === 'true' }
  if (/^[+-]?\d+$/.test(t)) {
    const n = BigInt(t)
    if (n >= -128n && n <= 127n) return { schema: Schemas.INT8, value: Number(n) }
    if (n >= -32768n && n <= 32767n) return { schema: Schemas.INT16, value: Number(n) }
    if (n >= -(2n ** 31n) && n < 2n ** 31n) return { schema: Schemas.INT32, value: Number(n) }
    if (n >= -(2n ** 63n) && n < 2n ** 63n) return { schema: Schemas.INT64, value: n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n }
  }
  if (/^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$/.test(t)) return { schema: Schemas.FLOAT64, value: Number(t) }
  if ((t.startsWith('[') && t.endsWith(']')) || (t.startsWith('{') && t.endsWith('}'))) {
    try {
      const v = JSON.parse(t)
      return { schema: null, value: v }
    } catch {
      // not JSON: a string
    }
  }
  return { schema: Schemas.STRING, value: text }
}

/** The schema type a schemaless value would get, for transforms that need one. */
export function schemaTypeOf(value: unknown): SchemaType | null {
  return inferSchemaType(value)
}
