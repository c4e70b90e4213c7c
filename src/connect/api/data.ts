// Connect's data model (org.apache.kafka.connect.data): schemas, structs and the logical types, as
// converters, transforms and connectors exchange them. A value goes with an optional Schema; without one
// (schemaless) it is plain JSON-like data. JS types per schema type:
//   int8/int16/int32, float32/float64: number; int64: number, or bigint beyond 2^53; boolean; string;
//   bytes: Buffer; array: unknown[]; map: Map; struct: Struct;
//   logical Decimal: string (the decimal's text, exact), Date/Time/Timestamp: Date.
// Schemaless maps are plain objects (what JSON gives), and schemaless values are never Structs.

export type SchemaType = 'int8' | 'int16' | 'int32' | 'int64' | 'float32' | 'float64' | 'boolean' | 'string' | 'bytes' | 'array' | 'map' | 'struct'

export const PRIMITIVE_TYPES: readonly SchemaType[] = ['int8', 'int16', 'int32', 'int64', 'float32', 'float64', 'boolean', 'string', 'bytes']

export interface Field {
  readonly name: string
  readonly index: number
  readonly schema: Schema
}

export interface Schema {
  readonly type: SchemaType
  readonly optional: boolean
  readonly defaultValue?: unknown
  readonly name?: string | null
  readonly version?: number | null
  readonly doc?: string | null
  readonly parameters?: Readonly<Record<string, string>> | null
  /** struct only, in order. */
  readonly fields?: readonly Field[]
  /** map only. */
  readonly keySchema?: Schema
  /** array and map. */
  readonly valueSchema?: Schema
}

export class DataException extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'DataException'
  }
}

/** Kafka's SchemaBuilder: fluent construction of a Schema. */
export class SchemaBuilder {
  private _optional = false
  private _default: unknown = undefined
  private _name: string | null = null
  private _version: number | null = null
  private _doc: string | null = null
  private _parameters: Record<string, string> | null = null
  private readonly _fields: Field[] = []

  constructor(readonly type: SchemaType, private readonly keySchema?: Schema, private readonly valueSchema?: Schema) {}

  static int8(): SchemaBuilder { return new SchemaBuilder('int8') }
  static int16(): SchemaBuilder { return new SchemaBuilder('int16') }
  static int32(): SchemaBuilder { return new SchemaBuilder('int32') }
  static int64(): SchemaBuilder { return new SchemaBuilder('int64') }
  static float32(): SchemaBuilder { return new SchemaBuilder('float32') }
  static float64(): SchemaBuilder { return new SchemaBuilder('float64') }
  static bool(): SchemaBuilder { return new SchemaBuilder('boolean') }
  static string(): SchemaBuilder { return new SchemaBuilder('string') }
  static bytes(): SchemaBuilder { return new SchemaBuilder('bytes') }
  static struct(): SchemaBuilder { return new SchemaBuilder('struct') }
  static array(valueSchema: Schema): SchemaBuilder { return new SchemaBuilder('array', undefined, valueSchema) }
  static map(keySchema: Schema, valueSchema: Schema): SchemaBuilder { return new SchemaBuilder('map', keySchema, valueSchema) }
  static type(type: SchemaType): SchemaBuilder { return new SchemaBuilder(type) }

  /** A builder holding everything of schema (fields included), to change a part of it. */
  static from(schema: Schema): SchemaBuilder {
    const b = new SchemaBuilder(schema.type, schema.keySchema, schema.valueSchema)
    if (schema.optional) b.optional()
    if (schema.name != null) b.name(schema.name)
    if (schema.version != null) b.version(schema.version)
    if (schema.doc != null) b.doc(schema.doc)
    if (schema.parameters != null) b.parameters(schema.parameters)
    for (const f of schema.fields ?? []) b.field(f.name, f.schema)
    if (schema.defaultValue !== undefined) b._default = schema.defaultValue
    return b
  }

  optional(): this { this._optional = true; return this }
  required(): this { this._optional = false; return this }
  name(name: string): this { this._name = name; return this }
  version(v: number): this { this._version = v; return this }
  doc(doc: string): this { this._doc = doc; return this }
  parameter(key: string, value: string): this { (this._parameters ??= {})[key] = value; return this }
  parameters(p: Readonly<Record<string, string>>): this { this._parameters = { ...(this._parameters ?? {}), ...p }; return this }
  defaultValue(v: unknown): this {
    validateValue(this.build(), v, 'default value')
    this._default = v
    return this
  }
  field(name: string, schema: Schema): this {
    if (this.type !== 'struct') throw new DataException(`cannot add a field to a ${this.type} schema`)
    if (this._fields.some((f) => f.name === name)) throw new DataException(`Cannot create field because of field name duplication ${name}`)
    this._fields.push({ name, index: this._fields.length, schema })
    return this
  }

  build(): Schema {
    const s: { -readonly [K in keyof Schema]: Schema[K] } = { type: this.type, optional: this._optional }
    if (this._default !== undefined) s.defaultValue = this._default
    if (this._name !== null) s.name = this._name
    if (this._version !== null) s.version = this._version
    if (this._doc !== null) s.doc = this._doc
    if (this._parameters !== null) s.parameters = { ...this._parameters }
    if (this.type === 'struct') s.fields = [...this._fields]
    if (this.keySchema !== undefined) s.keySchema = this.keySchema
    if (this.valueSchema !== undefined) s.valueSchema = this.valueSchema
    return Object.freeze(s)
  }
}

/** Kafka's Schema.*_SCHEMA constants. */
export const Schemas = {
  INT8: SchemaBuilder.int8().build(),
  INT16: SchemaBuilder.int16().build(),
  INT32: SchemaBuilder.int32().build(),
  INT64: SchemaBuilder.int64().build(),
  FLOAT32: SchemaBuilder.float32().build(),
  FLOAT64: SchemaBuilder.float64().build(),
  BOOLEAN: SchemaBuilder.bool().build(),
  STRING: SchemaBuilder.string().build(),
  BYTES: SchemaBuilder.bytes().build(),
  OPTIONAL_INT8: SchemaBuilder.int8().optional().build(),
  OPTIONAL_INT16: SchemaBuilder.int16().optional().build(),
  OPTIONAL_INT32: SchemaBuilder.int32().optional().build(),
  OPTIONAL_INT64: SchemaBuilder.int64().optional().build(),
  OPTIONAL_FLOAT32: SchemaBuilder.float32().optional().build(),
  OPTIONAL_FLOAT64: SchemaBuilder.float64().optional().build(),
  OPTIONAL_BOOLEAN: SchemaBuilder.bool().optional().build(),
  OPTIONAL_STRING: SchemaBuilder.string().optional().build(),
  OPTIONAL_BYTES: SchemaBuilder.bytes().optional().build(),
} as const

// Logical types: a name and a parameter on a primitive schema.
export const DECIMAL_NAME = 'org.apache.kafka.connect.data.Decimal'
export const DECIMAL_SCALE = 'scale'
export const DATE_NAME = 'org.apache.kafka.connect.data.Date'
export const TIME_NAME = 'org.apache.kafka.connect.data.Time'
export const TIMESTAMP_NAME = 'org.apache.kafka.connect.data.Timestamp'
const MS_PER_DAY = 86400000

export const Decimal = {
  builder: (scale: number): SchemaBuilder => SchemaBuilder.bytes().name(DECIMAL_NAME).parameter(DECIMAL_SCALE, String(scale)).version(1),
  schema: (scale: number): Schema => Decimal.builder(scale).build(),
  scale(schema: Schema): number {
    const s = schema.parameters?.[DECIMAL_SCALE]
    if (s === undefined) throw new DataException('Invalid Decimal schema: scale parameter not found.')
    return Number(s)
  },
  /** The unscaled value as big-endian two's complement bytes (BigDecimal.unscaledValue().toByteArray()). */
  fromLogical(schema: Schema, value: string): Buffer {
    const scale = Decimal.scale(schema)
    return bigIntToBytes(unscaled(value, scale))
  },
  toLogical(schema: Schema, bytes: Uint8Array): string {
    return formatUnscaled(bytesToBigInt(bytes), Decimal.scale(schema))
  },
}

export const DateType = {
  builder: (): SchemaBuilder => SchemaBuilder.int32().name(DATE_NAME).version(1),
  schema: (): Schema => DateType.builder().build(),
  fromLogical(d: Date): number {
    if (d.getTime() % MS_PER_DAY !== 0) throw new DataException('Kafka Connect Date type should not have any time fields set to non-zero values.')
    return Math.floor(d.getTime() / MS_PER_DAY)
  },
  toLogical: (days: number): Date => new Date(days * MS_PER_DAY),
}

export const TimeType = {
  builder: (): SchemaBuilder => SchemaBuilder.int32().name(TIME_NAME).version(1),
  schema: (): Schema => TimeType.builder().build(),
  fromLogical(d: Date): number {
    const ms = d.getTime()
    if (ms < 0 || ms >= MS_PER_DAY) throw new DataException('Kafka Connect Time type should not have any date fields set to non-zero values.')
    return ms
  },
  toLogical: (ms: number): Date => new Date(ms),
}

export const TimestampType = {
  builder: (): SchemaBuilder => SchemaBuilder.int64().name(TIMESTAMP_NAME).version(1),
  schema: (): Schema => TimestampType.builder().build(),
  fromLogical: (d: Date): number => d.getTime(),
  toLogical: (ms: number | bigint): Date => new Date(Number(ms)),
}

/** The exact unscaled integer of a decimal text at a scale (more digits than the scale: rejected). */
export function unscaled(text: string, scale: number): bigint {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim())
  if (m === null || (m[2] === '' && (m[3] ?? '') === '')) throw new DataException(`'${text}' is not a decimal number`)
  let digits = (m[2] ?? '') + (m[3] ?? '')
  let exp = -(m[3] ?? '').length + Number(m[4] ?? 0)
  // Move to the wanted scale: exp must become -scale.
  const shift = exp + scale
  if (shift >= 0) digits += '0'.repeat(shift)
  else {
    const cut = digits.slice(digits.length + shift)
    if (/[1-9]/.test(cut)) throw new DataException(`'${text}' has more than ${scale} digits after the point`)
    digits = digits.slice(0, digits.length + shift)
  }
  exp = -scale
  const v = BigInt(digits === '' ? '0' : digits)
  return m[1] === '-' ? -v : v
}

export function formatUnscaled(v: bigint, scale: number): string {
  const neg = v < 0n
  let s = (neg ? -v : v).toString()
  if (scale > 0) {
    s = s.padStart(scale + 1, '0')
    s = `${s.slice(0, s.length - scale)}.${s.slice(s.length - scale)}`
  } else if (scale < 0) s += '0'.repeat(-scale)
  return neg ? `-${s}` : s
}

export function bigIntToBytes(v: bigint): Buffer {
  // Minimal two's complement, big-endian, as BigInteger.toByteArray.
  const out: number[] = []
  let x = v
  for (;;) {
    const byte = Number(x & 0xffn)
    out.unshift(byte)
    x >>= 8n
    if ((x === 0n && (byte & 0x80) === 0) || (x === -1n && (byte & 0x80) !== 0)) break
  }
  return Buffer.from(out)
}

export function bytesToBigInt(b: Uint8Array): bigint {
  if (b.length === 0) return 0n
  let v = 0n
  for (const byte of b) v = (v << 8n) | BigInt(byte)
  if ((b[0]! & 0x80) !== 0) v -= 1n << BigInt(b.length * 8)
  return v
}

/** Kafka's Struct: values of a struct schema's fields. */
export class Struct {
  private readonly values: unknown[]

  constructor(readonly schema: Schema) {
    if (schema.type !== 'struct') throw new DataException(`Not a struct schema: ${schema.type}`)
    this.values = new Array(schema.fields!.length).fill(null)
  }

  private field(name: string): Field {
    const f = this.schema.fields!.find((x) => x.name === name)
    if (f === undefined) throw new DataException(`${name} is not a valid field name`)
    return f
  }

  /** The field's value, or its default when unset. */
  get(name: string | Field): unknown {
    const f = typeof name === 'string' ? this.field(name) : name
    const v = this.values[f.index]
    return v === null || v === undefined ? (f.schema.defaultValue ?? null) : v
  }

  /** The value without falling back to the default (Kafka's getWithoutDefault). */
  getWithoutDefault(name: string): unknown {
    return this.values[this.field(name).index] ?? null
  }

  put(name: string | Field, value: unknown): this {
    const f = typeof name === 'string' ? this.field(name) : name
    validateValue(f.schema, value, `field ${f.name}`)
    this.values[f.index] = value
    return this
  }

  /** Checks that every required field has a value. */
  validate(): void {
    for (const f of this.schema.fields!) {
      const v = this.values[f.index]
      if ((v === null || v === undefined) && !f.schema.optional && f.schema.defaultValue === undefined) throw new DataException(`Invalid value: null used for required field: "${f.name}", schema type: ${f.schema.type.toUpperCase()}`)
    }
  }

  toString(): string {
    return `Struct{${this.schema.fields!.filter((f) => this.values[f.index] != null).map((f) => `${f.name}=${String(this.values[f.index])}`).join(',')}}`
  }
}

/** Whether two schemas are equal (structurally, as Kafka's ConnectSchema.equals). */
export function schemaEquals(a: Schema | null | undefined, b: Schema | null | undefined): boolean {
  if (a === b) return true
  if (a == null || b == null) return false
  if (a.type !== b.type || a.optional !== b.optional || (a.name ?? null) !== (b.name ?? null) || (a.version ?? null) !== (b.version ?? null)) return false
  if (JSON.stringify(a.parameters ?? null) !== JSON.stringify(b.parameters ?? null)) return false
  const fa = a.fields ?? [], fb = b.fields ?? []
  if (fa.length !== fb.length) return false
  for (let i = 0; i < fa.length; i++) if (fa[i]!.name !== fb[i]!.name || !schemaEquals(fa[i]!.schema, fb[i]!.schema)) return false
  return schemaEquals(a.keySchema, b.keySchema) && schemaEquals(a.valueSchema, b.valueSchema)
}

const INT_RANGE: Partial<Record<SchemaType, [number, number]>> = { int8: [-128, 127], int16: [-32768, 32767], int32: [-(2 ** 31), 2 ** 31 - 1] }

/** Kafka's ConnectSchema.validateValue: throws a DataException when value does not fit schema. */
export function validateValue(schema: Schema, value: unknown, what = 'value'): void {
  if (value === null || value === undefined) {
    if (!schema.optional && schema.defaultValue === undefined) throw new DataException(`Invalid value: null used for required ${what}, schema type: ${schema.type.toUpperCase()}`)
    return
  }
  const bad = (): never => {
    throw new DataException(`Invalid Java object for schema with type ${schema.type.toUpperCase()}${schema.name ? ` (${schema.name})` : ''}: ${describe(value)} for ${what}`)
  }
  switch (schema.name) {
    case DECIMAL_NAME:
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'bigint') bad()
      return
    case DATE_NAME:
    case TIME_NAME:
    case TIMESTAMP_NAME:
      if (!(value instanceof Date)) bad()
      return
  }
  switch (schema.type) {
    case 'int8':
    case 'int16':
    case 'int32': {
      const [lo, hi] = INT_RANGE[schema.type]!
      if (typeof value !== 'number' || !Number.isInteger(value) || value < lo || value > hi) bad()
      return
    }
    case 'int64':
      if (!(typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value)))) bad()
      return
    case 'float32':
    case 'float64':
      if (typeof value !== 'number') bad()
      return
    case 'boolean':
      if (typeof value !== 'boolean') bad()
      return
    case 'string':
      if (typeof value !== 'string') bad()
      return
    case 'bytes':
      if (!(value instanceof Uint8Array)) bad()
      return
    case 'array':
      if (!Array.isArray(value)) bad()
      for (const v of value as unknown[]) validateValue(schema.valueSchema!, v, `element of ${what}`)
      return
    case 'map':
      if (!(value instanceof Map)) bad()
      for (const [k, v] of value as Map<unknown, unknown>) {
        validateValue(schema.keySchema!, k, `key of ${what}`)
        validateValue(schema.valueSchema!, v, `value of ${what}`)
      }
      return
    case 'struct':
      if (!(value instanceof Struct) || !schemaEquals(value.schema, schema)) bad()
      ;(value as Struct).validate()
  }
}

function describe(v: unknown): string {
  if (v instanceof Struct) return 'Struct'
  if (v instanceof Map) return 'Map'
  if (Buffer.isBuffer(v)) return 'Buffer'
  return typeof v === 'object' ? (Array.isArray(v) ? 'Array' : 'Object') : `${typeof v} ${String(v)}`
}

/** The schema Kafka's ConnectSchema.schemaType would infer for a schemaless value (null when none). */
export function inferSchemaType(value: unknown): SchemaType | null {
  if (typeof value === 'string') return 'string'
  if (typeof value === 'boolean') return 'boolean'
  if (typeof value === 'bigint') return 'int64'
  if (typeof value === 'number') return Number.isInteger(value) ? 'int64' : 'float64'
  if (value instanceof Uint8Array) return 'bytes'
  if (Array.isArray(value)) return 'array'
  if (value instanceof Map) return 'map'
  if (value instanceof Struct) return 'struct'
  if (typeof value === 'object' && value !== null) return 'map'
  return null
}

/** A schema and a value together (Kafka's SchemaAndValue). */
export interface SchemaAndValue {
  schema: Schema | null
  value: unknown
}

export const NULL_SCHEMA_AND_VALUE: SchemaAndValue = Object.freeze({ schema: null, value: null })

/** A schemaless map's entries, whether a plain object or a Map. */
export function mapEntries(value: unknown): [string, unknown][] {
  if (value instanceof Map) return [...value].map(([k, v]) => [String(k), v])
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array)) return Object.entries(value)
  throw new DataException(`expected a map, got ${describe(value)}`)
}

export function isSchemalessMap(value: unknown): value is Record<string, unknown> | Map<string, unknown> {
  return value instanceof Map || (typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array) && !(value instanceof Struct) && !(value instanceof Date))
}
