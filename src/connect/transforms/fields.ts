// Field-level single message transforms with Kafka's names and options (org.apache.kafka.connect.transforms):
// InsertField, ReplaceField, MaskField, ValueToKey, ExtractField, Cast, TimestampConverter, HeaderFrom.
// Each works on schemaless maps and on Structs; with a schema, the derived schema is built once per
// input schema.
import { ConfigDef, ConfigException, NO_DEFAULT, Validators, type Value } from '../api/config-def.js'
import {
  DataException,
  type Field,
  DATE_NAME,
  DateType,
  DECIMAL_NAME,
  type Schema,
  SchemaBuilder,
  type SchemaType,
  Schemas,
  Struct,
  TIME_NAME,
  TIMESTAMP_NAME,
  TimeType,
  TimestampType,
} from '../api/data.js'
import { type ConnectRecord, newRecord, type SinkRecord, type Transformation } from '../api/plugin.js'
import { compileDatePattern, formatDate, operatingSchema, operatingValue, parseDate, requireMap, requireStruct, SchemaCache, type Side, withSide } from './util.js'

abstract class SideTransform implements Transformation {
  constructor(protected readonly side: Side) {}
  abstract config(): ConfigDef
  abstract configure(props: Record<string, string>): void
  abstract apply(record: ConnectRecord): ConnectRecord | null
  close(): void {}
  version(): string {
    return '1.0.0'
  }
  protected parsed(props: Record<string, string>): Record<string, Value> {
    return this.config().parse(props)
  }
}

// ---- InsertField ----

interface InsertionSpec {
  name: string
  optional: boolean
}

function insertionSpec(spec: string | null): InsertionSpec | null {
  if (spec === null || spec === '') return null
  if (spec.endsWith('?')) return { name: spec.slice(0, -1), optional: true }
  if (spec.endsWith('!')) return { name: spec.slice(0, -1), optional: false }
  return { name: spec, optional: true }
}

export class InsertField extends SideTransform {
  private topic: InsertionSpec | null = null
  private partition: InsertionSpec | null = null
  private offset: InsertionSpec | null = null
  private timestamp: InsertionSpec | null = null
  private staticField: InsertionSpec | null = null
  private staticValue: string | null = null
  private readonly cache = new SchemaCache()

  config(): ConfigDef {
    return new ConfigDef()
      .define('topic.field', 'STRING', null, 'MEDIUM', 'Field name for Kafka topic. Suffix with ! to make this a required field, or ? to keep it optional (the default).')
      .define('partition.field', 'STRING', null, 'MEDIUM', 'Field name for Kafka partition. Suffix with ! to make this a required field, or ? to keep it optional (the default).')
      .define('offset.field', 'STRING', null, 'MEDIUM', 'Field name for Kafka offset - only applicable to sink connectors. Suffix with ! to make this a required field, or ? to keep it optional (the default).')
      .define('timestamp.field', 'STRING', null, 'MEDIUM', 'Field name for record timestamp. Suffix with ! to make this a required field, or ? to keep it optional (the default).')
      .define('static.field', 'STRING', null, 'MEDIUM', 'Field name for static data field. Suffix with ! to make this a required field, or ? to keep it optional (the default).')
      .define('static.value', 'STRING', null, 'MEDIUM', 'Static field value, if field name configured.')
      .define('replace.null.with.default', 'BOOLEAN', true, 'MEDIUM', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>): void {
    const c = this.parsed(props)
    this.topic = insertionSpec(c['topic.field'] as string | null)
    this.partition = insertionSpec(c['partition.field'] as string | null)
    this.offset = insertionSpec(c['offset.field'] as string | null)
    this.timestamp = insertionSpec(c['timestamp.field'] as string | null)
    this.staticField = insertionSpec(c['static.field'] as string | null)
    this.staticValue = c['static.value'] as string | null
    if (this.staticField !== null && this.staticValue === null) throw new ConfigException('static.value', 'No value specified for static field: static.field')
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    const value = operatingValue(record, this.side)
    const schema = operatingSchema(record, this.side)
    // Tombstones pass untouched, as in Kafka.
    if (value === null) return record
    const sinkOffset = (record as Partial<SinkRecord>).kafkaOffset
    const inserts: [InsertionSpec | null, unknown, Schema][] = [
      [this.topic, record.topic, Schemas.STRING],
      [this.partition, record.kafkaPartition, Schemas.INT32],
      [this.offset, sinkOffset ?? null, Schemas.INT64],
      [this.timestamp, record.timestamp === null ? null : new Date(record.timestamp), TimestampType.schema()],
      [this.staticField, this.staticValue, Schemas.STRING],
    ]
    if (this.offset !== null && sinkOffset === undefined) throw new DataException('Offset insertion is only supported for sink connectors, record is of type source')
    if (schema === null) {
      // Schemaless, as Kafka: the timestamp is its epoch millis, and null partitions, timestamps and static values are left out.
      const m = { ...requireMap(value, 'field insertion') }
      for (const [spec, v] of inserts) if (spec !== null && v !== null) m[spec.name] = v instanceof Date ? v.getTime() : v
      return withSide(record, this.side, null, m)
    }
    const struct = requireStruct(value, 'field insertion')
    const updated = this.cache.get(schema, (s) => {
      const b = SchemaBuilder.from({ ...s, fields: [] })
      for (const f of s.fields!) b.field(f.name, f.schema)
      for (const [spec, , fs] of inserts) if (spec !== null) b.field(spec.name, spec.optional ? SchemaBuilder.from(fs).optional().build() : fs)
      return b.build()
    })
    const out = new Struct(updated)
    for (const f of schema.fields!) out.put(f.name, struct.getWithoutDefault(f.name) ?? struct.get(f))
    for (const [spec, v] of inserts) if (spec !== null) out.put(spec.name, v)
    return withSide(record, this.side, updated, out)
  }
}

// ---- ReplaceField ----

export class ReplaceField extends SideTransform {
  private exclude: string[] = []
  private include: string[] = []
  private renames = new Map<string, string>()
  private reverse = new Map<string, string>()
  private readonly cache = new SchemaCache()

  config(): ConfigDef {
    return new ConfigDef()
      .define('exclude', 'LIST', [], 'MEDIUM', 'Fields to exclude. This takes precedence over the fields to include.')
      .define('include', 'LIST', [], 'MEDIUM', 'Fields to include. If specified, only these fields will be used.')
      .define('renames', 'LIST', [], 'MEDIUM', 'Field rename mappings.', {
        validator: Validators.listOf((_n, v) => (typeof v === 'string' && !/^[^:]+:[^:]+$/.test(v) ? 'Invalid rename mapping: ' + v : undefined)),
      })
      .define('blacklist', 'LIST', null, 'LOW', 'Deprecated. Use exclude instead.')
      .define('whitelist', 'LIST', null, 'LOW', 'Deprecated. Use include instead.')
      .define('replace.null.with.default', 'BOOLEAN', true, 'MEDIUM', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>): void {
    const c = this.parsed(props)
    this.exclude = (c['exclude'] as string[]).length > 0 ? (c['exclude'] as string[]) : ((c['blacklist'] as string[] | null) ?? [])
    this.include = (c['include'] as string[]).length > 0 ? (c['include'] as string[]) : ((c['whitelist'] as string[] | null) ?? [])
    this.renames = new Map((c['renames'] as string[]).map((r) => r.split(':') as [string, string]))
    this.reverse = new Map([...this.renames].map(([a, b]) => [b, a]))
  }

  private filter(name: string): boolean {
    return !this.exclude.includes(name) && (this.include.length === 0 || this.include.includes(name))
  }

  private renamed(name: string): string {
    return this.renames.get(name) ?? name
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    const value = operatingValue(record, this.side)
    const schema = operatingSchema(record, this.side)
    if (value === null) return record
    if (schema === null) {
      const m = requireMap(value, 'field replacement')
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(m)) if (this.filter(k)) out[this.renamed(k)] = v
      return withSide(record, this.side, null, out)
    }
    const struct = requireStruct(value, 'field replacement')
    const updated = this.cache.get(schema, (s) => {
      const b = SchemaBuilder.from({ ...s, fields: [] })
      for (const f of s.fields!) if (this.filter(f.name)) b.field(this.renamed(f.name), f.schema)
      return b.build()
    })
    const out = new Struct(updated)
    for (const f of updated.fields!) out.put(f.name, struct.get(this.reverse.get(f.name) ?? f.name))
    return withSide(record, this.side, updated, out)
  }
}

// ---- MaskField ----

const MASK_NULL: Partial<Record<SchemaType, unknown>> = { boolean: false, int8: 0, int16: 0, int32: 0, int64: 0, float32: 0, float64: 0, string: '' }

export class MaskField extends SideTransform {
  private fields: string[] = []
  private replacement: string | null = null

  config(): ConfigDef {
    return new ConfigDef()
      .define('fields', 'LIST', NO_DEFAULT, 'HIGH', 'Names of fields to mask.', { validator: Validators.nonEmptyList() })
      .define('replacement', 'STRING', null, 'LOW', 'Custom value replacement, that will be applied to all \'fields\' values (numeric or non-empty string values only).', {
        validator: (_n, v) => (v === '' ? 'String may not be empty' : undefined),
      })
      .define('replace.null.with.default', 'BOOLEAN', true, 'MEDIUM', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>): void {
    const c = this.parsed(props)
    this.fields = c['fields'] as string[]
    this.replacement = c['replacement'] as string | null
  }

  private masked(value: unknown, type: SchemaType | null): unknown {
    if (value === null) return null
    if (this.replacement !== null) {
      const t = type ?? (typeof value === 'number' ? 'float64' : typeof value === 'string' ? 'string' : null)
      if (t === 'string') return this.replacement
      if (t !== null && t.startsWith('int')) {
        if (!/^[+-]?\d+$/.test(this.replacement)) throw new DataException(`Unable to convert ${this.replacement} (${this.replacement}) to number`)
        return Number(this.replacement)
      }
      if (t === 'float32' || t === 'float64') return Number(this.replacement)
      throw new DataException(`Cannot mask value of type ${t ?? typeof value} with custom replacement.`)
    }
    if (value instanceof Date) return new Date(0)
    if (value instanceof Uint8Array) return Buffer.alloc(0)
    if (Array.isArray(value)) return []
    if (value instanceof Map) return new Map()
    if (type !== null && MASK_NULL[type] !== undefined) return MASK_NULL[type]
    if (typeof value === 'number') return 0
    if (typeof value === 'bigint') return 0n
    if (typeof value === 'string') return ''
    if (typeof value === 'boolean') return false
    throw new DataException(`Cannot mask value of type: ${typeof value}`)
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    const value = operatingValue(record, this.side)
    const schema = operatingSchema(record, this.side)
    if (value === null) return record
    if (schema === null) {
      const m = { ...requireMap(value, 'masking') }
      for (const f of this.fields) if (f in m) m[f] = this.masked(m[f], null)
      return withSide(record, this.side, null, m)
    }
    const struct = requireStruct(value, 'masking')
    const out = new Struct(schema)
    for (const f of schema.fields!) out.put(f, this.fields.includes(f.name) ? this.masked(struct.get(f), f.schema.name === DECIMAL_NAME ? 'string' : f.schema.type) : struct.get(f))
    return withSide(record, this.side, schema, out)
  }
}

// ---- ValueToKey ----

export class ValueToKey implements Transformation {
  private fields: string[] = []
  private readonly cache = new SchemaCache()

  config(): ConfigDef {
    return new ConfigDef()
      .define('fields', 'LIST', NO_DEFAULT, 'HIGH', 'Field names on the record value to extract as the record key.', { validator: Validators.nonEmptyList() })
      .define('replace.null.with.default', 'BOOLEAN', true, 'MEDIUM', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>): void {
    this.fields = this.config().parse(props)['fields'] as string[]
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    if (record.valueSchema === null) {
      const m = requireMap(record.value, 'copying fields from value to key')
      const key: Record<string, unknown> = {}
      for (const f of this.fields) key[f] = m[f] ?? null
      return newRecord(record, { keySchema: null, key })
    }
    const struct = requireStruct(record.value, 'copying fields from value to key')
    const keySchema = this.cache.get(record.valueSchema, (s) => {
      const b = SchemaBuilder.struct()
      for (const f of this.fields) {
        const field = s.fields!.find((x) => x.name === f)
        if (field === undefined) throw new DataException(`Field does not exist: ${f}`)
        b.field(f, field.schema)
      }
      return b.build()
    })
    const key = new Struct(keySchema)
    for (const f of this.fields) key.put(f, struct.get(f))
    return newRecord(record, { keySchema, key })
  }

  close(): void {}
}

// ---- ExtractField ----

export class ExtractField extends SideTransform {
  private path: string[] = []

  config(): ConfigDef {
    return new ConfigDef()
      .define('field', 'STRING', NO_DEFAULT, 'MEDIUM', 'Field name to extract.', { validator: Validators.nonEmptyString() })
      .define('field.syntax.version', 'STRING', 'V1', 'HIGH', 'Field syntax: V1 (a field name, dots included) or V2 (dots separate nested fields, backticks quote).', { validator: Validators.inIgnoreCase('V1', 'V2') })
      .define('replace.null.with.default', 'BOOLEAN', true, 'MEDIUM', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>): void {
    const c = this.parsed(props)
    const field = c['field'] as string
    this.path = (c['field.syntax.version'] as string).toUpperCase() === 'V2' ? splitFieldPath(field) : [field]
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    let value = operatingValue(record, this.side)
    let schema = operatingSchema(record, this.side)
    if (schema === null) {
      for (const p of this.path) {
        if (value === null || value === undefined) break
        value = requireMap(value, 'field extraction')[p] ?? null
      }
      return withSide(record, this.side, null, value ?? null)
    }
    for (const p of this.path) {
      if (value === null) break
      const f: Field | undefined = schema!.fields?.find((x) => x.name === p)
      if (f === undefined) throw new DataException(`Unknown field: ${p}`)
      value = requireStruct(value, 'field extraction').get(f)
      schema = f.schema
    }
    if (value === null && this.path.length > 0) {
      let s = operatingSchema(record, this.side)!
      for (const p of this.path) s = s.fields?.find((x) => x.name === p)?.schema ?? s
      schema = s
    }
    return withSide(record, this.side, schema, value)
  }
}

/** V2 field syntax: a.b.c, with `quoted.parts` in backticks. */
export function splitFieldPath(field: string): string[] {
  const parts: string[] = []
  let cur = ''
  let quoted = false
  for (let i = 0; i < field.length; i++) {
    const c = field[i]!
    if (c === '`') quoted = !quoted
    else if (c === '.' && !quoted) {
      parts.push(cur)
      cur = ''
    } else cur += c
  }
  parts.push(cur)
  return parts
}

// ---- Cast ----

const CASTABLE: SchemaType[] = ['int8', 'int16', 'int32', 'int64', 'float32', 'float64', 'boolean', 'string']

export class Cast extends SideTransform {
  private wholeValue: SchemaType | null = null
  private casts = new Map<string, SchemaType>()
  private readonly cache = new SchemaCache()

  config(): ConfigDef {
    return new ConfigDef()
      .define('spec', 'LIST', NO_DEFAULT, 'HIGH', 'List of fields and the type to cast them to of the form field1:type,field2:type to cast fields of Maps or Structs. A single type to cast the entire value. Valid types are int8, int16, int32, int64, float32, float64, boolean, and string. Note that binary fields can only be cast to string.', {
        validator: Validators.nonEmptyList(),
      })
      .define('replace.null.with.default', 'BOOLEAN', true, 'MEDIUM', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>): void {
    const spec = this.parsed(props)['spec'] as string[]
    this.casts.clear()
    this.wholeValue = null
    for (const item of spec) {
      const parts = item.split(':')
      if (parts.length === 1) {
        if (spec.length > 1) throw new ConfigException('spec', 'Cast transformations that specify a type to cast the entire value to may only specify a single cast in their spec')
        this.wholeValue = castType(parts[0]!)
      } else if (parts.length === 2) this.casts.set(parts[0]!.trim(), castType(parts[1]!))
      else throw new ConfigException('spec', `Invalid cast mapping: ${item}`)
    }
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    const value = operatingValue(record, this.side)
    const schema = operatingSchema(record, this.side)
    if (value === null) return record
    if (this.wholeValue !== null) {
      const out = castValue(value, this.wholeValue)
      return withSide(record, this.side, schema === null ? null : typedSchema(this.wholeValue, schema.optional), out)
    }
    if (schema === null) {
      const m = { ...requireMap(value, 'cast types') }
      for (const [f, t] of this.casts) if (f in m) m[f] = castValue(m[f], t)
      return withSide(record, this.side, null, m)
    }
    const struct = requireStruct(value, 'cast types')
    const updated = this.cache.get(schema, (s) => {
      const b = SchemaBuilder.from({ ...s, fields: [] })
      for (const f of s.fields!) {
        const t = this.casts.get(f.name)
        if (t === undefined) b.field(f.name, f.schema)
        else {
          if (f.schema.type === 'bytes' && t !== 'string' && f.schema.name === undefined) throw new DataException(`Unexpected type in Cast transformation: BYTES can only be cast to STRING`)
          b.field(f.name, typedSchema(t, f.schema.optional))
        }
      }
      return b.build()
    })
    const out = new Struct(updated)
    for (const f of schema.fields!) {
      const t = this.casts.get(f.name)
      const v = struct.get(f)
      out.put(f.name, t === undefined ? v : castValue(v, t))
    }
    return withSide(record, this.side, updated, out)
  }
}

function castType(t: string): SchemaType {
  const type = t.trim().toLowerCase() as SchemaType
  if (!CASTABLE.includes(type)) throw new ConfigException('spec', `Invalid type found in casting spec: ${t.trim()}`)
  return type
}

function typedSchema(t: SchemaType, optional: boolean): Schema {
  const b = SchemaBuilder.type(t)
  if (optional) b.optional()
  return b.build()
}

export function castValue(v: unknown, t: SchemaType): unknown {
  if (v === null || v === undefined) return null
  if (t === 'string') {
    if (v instanceof Date) return v.toISOString()
    if (v instanceof Uint8Array) return Buffer.from(v).toString('base64')
    return String(v)
  }
  let n: number
  if (typeof v === 'boolean') n = v ? 1 : 0
  else if (typeof v === 'number') n = v
  else if (typeof v === 'bigint') n = Number(v)
  else if (typeof v === 'string') {
    if (t === 'boolean') return v.trim().toLowerCase() === 'true'
    n = Number(v.trim())
    if (v.trim() === '' || Number.isNaN(n)) throw new DataException(`Value (${v}) was out of range for requested data type`)
  } else if (v instanceof Date) n = v.getTime()
  else throw new DataException(`Unexpected type in Cast transformation: ${typeof v}`)
  switch (t) {
    case 'boolean':
      return n !== 0
    case 'int8':
      return (Math.trunc(n) << 24) >> 24
    case 'int16':
      return (Math.trunc(n) << 16) >> 16
    case 'int32':
      return Math.trunc(n) | 0
    case 'int64':
      return Math.trunc(n)
    case 'float32':
      return Math.fround(n)
    default:
      return n
  }
}

// ---- TimestampConverter ----

type TimestampTarget = 'string' | 'unix' | 'Date' | 'Time' | 'Timestamp'

export class TimestampConverter extends SideTransform {
  private field = ''
  private target: TimestampTarget = 'Timestamp'
  private pattern: ReturnType<typeof compileDatePattern> | null = null
  private format = ''
  private precision: 'seconds' | 'milliseconds' | 'microseconds' | 'nanoseconds' = 'milliseconds'
  private readonly cache = new SchemaCache()

  config(): ConfigDef {
    return new ConfigDef()
      .define('field', 'STRING', '', 'HIGH', 'The field containing the timestamp, or empty if the entire value is a timestamp')
      .define('target.type', 'STRING', NO_DEFAULT, 'HIGH', 'The desired timestamp representation: string, unix, Date, Time, or Timestamp', { validator: Validators.in('string', 'unix', 'Date', 'Time', 'Timestamp') })
      .define('format', 'STRING', '', 'MEDIUM', 'A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when type=string or used to parse the input if the input is a string.')
      .define('unix.precision', 'STRING', 'milliseconds', 'LOW', 'The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or nanoseconds.', {
        validator: Validators.in('nanoseconds', 'microseconds', 'milliseconds', 'seconds'),
      })
      .define('replace.null.with.default', 'BOOLEAN', true, 'MEDIUM', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>): void {
    const c = this.parsed(props)
    this.field = c['field'] as string
    this.target = c['target.type'] as TimestampTarget
    this.format = c['format'] as string
    this.precision = c['unix.precision'] as typeof this.precision
    if (this.format !== '') {
      try {
        this.pattern = compileDatePattern(this.format)
      } catch (err) {
        throw new ConfigException('format', `TimestampConverter requires a SimpleDateFormat-compatible pattern for string timestamps: ${(err as Error).message}`)
      }
    }
    if (this.target === 'string' && this.pattern === null) throw new ConfigException('format', 'TimestampConverter requires format option to be specified when using string timestamps')
  }

  private toDate(v: unknown, schema: Schema | null): Date {
    if (v instanceof Date) return v
    if (typeof v === 'string') {
      if (this.pattern === null) throw new DataException('TimestampConverter requires format option to be specified when using string timestamps')
      return parseDate(this.pattern, v, this.format)
    }
    if (typeof v === 'number' || typeof v === 'bigint') {
      if (schema?.name === DATE_NAME) return DateType.toLogical(Number(v))
      if (schema?.name === TIME_NAME) return TimeType.toLogical(Number(v))
      const n = Number(v)
      const ms = this.precision === 'seconds' ? n * 1000 : this.precision === 'microseconds' ? Math.floor(n / 1000) : this.precision === 'nanoseconds' ? Math.floor(n / 1e6) : n
      return new Date(ms)
    }
    throw new DataException(`Expected a timestamp but found ${typeof v}`)
  }

  private fromDate(d: Date): unknown {
    switch (this.target) {
      case 'string':
        return formatDate(this.pattern!, d)
      case 'unix': {
        const ms = d.getTime()
        return this.precision === 'seconds' ? Math.floor(ms / 1000) : this.precision === 'microseconds' ? ms * 1000 : this.precision === 'nanoseconds' ? ms * 1e6 : ms
      }
      case 'Date':
        return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()))
      case 'Time':
        return new Date(d.getTime() - Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()))
      default:
        return d
    }
  }

  private targetSchema(optional: boolean): Schema {
    const b = this.target === 'string' ? SchemaBuilder.string() : this.target === 'unix' ? SchemaBuilder.int64() : this.target === 'Date' ? DateType.builder() : this.target === 'Time' ? TimeType.builder() : TimestampType.builder()
    if (optional) b.optional()
    return b.build()
  }

  private convert(v: unknown, schema: Schema | null): unknown {
    if (v === null || v === undefined) return null
    return this.fromDate(this.toDate(v, schema))
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    const value = operatingValue(record, this.side)
    const schema = operatingSchema(record, this.side)
    if (this.field === '') {
      return withSide(record, this.side, schema === null ? null : this.targetSchema(schema.optional), this.convert(value, schema))
    }
    if (value === null) return record
    if (schema === null) {
      const m = { ...requireMap(value, 'converting timestamp formats') }
      m[this.field] = this.convert(m[this.field], null)
      return withSide(record, this.side, null, m)
    }
    const struct = requireStruct(value, 'converting timestamp formats')
    const updated = this.cache.get(schema, (s) => {
      const b = SchemaBuilder.from({ ...s, fields: [] })
      for (const f of s.fields!) b.field(f.name, f.name === this.field ? this.targetSchema(f.schema.optional) : f.schema)
      return b.build()
    })
    const out = new Struct(updated)
    for (const f of schema.fields!) out.put(f.name, f.name === this.field ? this.convert(struct.get(f), f.schema) : struct.get(f))
    return withSide(record, this.side, updated, out)
  }
}

// ---- HeaderFrom ----

export class HeaderFrom extends SideTransform {
  private fields: string[] = []
  private headers: string[] = []
  private move = false
  private readonly cache = new SchemaCache()

  config(): ConfigDef {
    return new ConfigDef()
      .define('fields', 'LIST', NO_DEFAULT, 'HIGH', 'Field names in the record whose values are to be copied or moved to headers.', { validator: Validators.nonEmptyList() })
      .define('headers', 'LIST', NO_DEFAULT, 'HIGH', 'Header names, in the same order as the field names listed in the fields configuration property.', { validator: Validators.nonEmptyList() })
      .define('operation', 'STRING', NO_DEFAULT, 'HIGH', 'Either move if the fields are to be moved to the headers (removed from the key/value), or copy if the fields are to be copied to the headers (retained in the key/value).', {
        validator: Validators.in('move', 'copy'),
      })
      .define('replace.null.with.default', 'BOOLEAN', true, 'MEDIUM', 'Whether to replace fields that have a default value and that are null to the default value.')
  }

  configure(props: Record<string, string>): void {
    const c = this.parsed(props)
    this.fields = c['fields'] as string[]
    this.headers = c['headers'] as string[]
    if (this.fields.length !== this.headers.length) throw new ConfigException('fields', `'fields' config must have the same number of elements as 'headers' config.`)
    this.move = c['operation'] === 'move'
  }

  apply(record: ConnectRecord): ConnectRecord | null {
    const value = operatingValue(record, this.side)
    const schema = operatingSchema(record, this.side)
    const headers = record.headers.duplicate()
    if (value === null) return record
    if (schema === null) {
      const m = { ...requireMap(value, 'header ' + (this.move ? 'move' : 'copy')) }
      this.fields.forEach((f, i) => {
        headers.add(this.headers[i]!, m[f] ?? null, null)
        if (this.move) delete m[f]
      })
      return withSide(newRecord(record, { headers }), this.side, null, this.move ? m : value)
    }
    const struct = requireStruct(value, 'header ' + (this.move ? 'move' : 'copy'))
    this.fields.forEach((f, i) => {
      const field = schema.fields!.find((x) => x.name === f)
      if (field === undefined) throw new DataException(`Field does not exist: ${f}`)
      headers.add(this.headers[i]!, struct.get(field), field.schema)
    })
    if (!this.move) return newRecord(record, { headers })
    const updated = this.cache.get(schema, (s) => {
      const b = SchemaBuilder.from({ ...s, fields: [] })
      for (const f of s.fields!) if (!this.fields.includes(f.name)) b.field(f.name, f.schema)
      return b.build()
    })
    const out = new Struct(updated)
    for (const f of updated.fields!) out.put(f.name, struct.get(f.name))
    return withSide(newRecord(record, { headers }), this.side, updated, out)
  }
}

export { TIMESTAMP_NAME }
