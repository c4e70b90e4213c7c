// Avro schemas as the registry sees them: a parser into a small model that keeps what schema resolution
// needs (full names, aliases, field defaults, enum defaults, logical types, extra properties), and the
// three string forms the registry uses:
//   - canonical: the stored form, a re-serialization like Java's Schema.toString() (keeps doc, defaults);
//   - normalized: what `normalize=true` compares, full names everywhere and properties sorted (as
//     Confluent's AvroSchemaUtils.toNormalizedString);
//   - Parsing Canonical Form (Avro specification, "Parsing Canonical Form for Schemas"), for fingerprints.
// Names, namespaces and aliases follow the specification's "Names" section; defaults are checked against
// their type ("Default values": a union's default matches its first branch).
// avsc is used as a second opinion on validity, because it is the encoder the serdes rely on.
import avsc from 'avsc'

export const AVRO_PRIMITIVES = ['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string'] as const
export type AvroPrimitiveName = (typeof AVRO_PRIMITIVES)[number]

type Props = Record<string, unknown>

export interface AvroPrimitive {
  type: AvroPrimitiveName
  logicalType?: string
  props: Props
}
export interface AvroField {
  name: string
  type: AvroType
  doc?: string
  hasDefault: boolean
  default?: unknown
  order?: 'ascending' | 'descending' | 'ignore'
  aliases: string[]
  props: Props
  pos: number
}
export interface AvroRecord {
  type: 'record' | 'error'
  name: string // full name
  namespace: string
  doc?: string
  aliases: string[] // full names
  fields: AvroField[]
  logicalType?: string
  props: Props
}
export interface AvroEnum {
  type: 'enum'
  name: string
  namespace: string
  doc?: string
  aliases: string[]
  symbols: string[]
  default?: string
  props: Props
}
export interface AvroFixed {
  type: 'fixed'
  name: string
  namespace: string
  doc?: string
  aliases: string[]
  size: number
  logicalType?: string
  props: Props
}
export interface AvroArray {
  type: 'array'
  items: AvroType
  logicalType?: string
  props: Props
}
export interface AvroMap {
  type: 'map'
  values: AvroType
  logicalType?: string
  props: Props
}
export interface AvroUnion {
  type: 'union'
  branches: AvroType[]
}
export type AvroNamed = AvroRecord | AvroEnum | AvroFixed
export type AvroType = AvroPrimitive | AvroNamed | AvroArray | AvroMap | AvroUnion

export class AvroParseError extends Error {}

const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/
const RESERVED_RECORD = new Set(['type', 'name', 'namespace', 'doc', 'aliases', 'fields'])
const RESERVED_ENUM = new Set(['type', 'name', 'namespace', 'doc', 'aliases', 'symbols', 'default'])
const RESERVED_FIXED = new Set(['type', 'name', 'namespace', 'doc', 'aliases', 'size'])
const RESERVED_FIELD = new Set(['name', 'type', 'doc', 'default', 'order', 'aliases'])

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function extraProps(obj: Record<string, unknown>, reserved: Set<string>): Props {
  const props: Props = {}
  for (const [k, v] of Object.entries(obj)) if (!reserved.has(k)) props[k] = v
  return props
}

/** Named types already known: from references first, then defined while parsing. */
export type AvroNames = Map<string, AvroNamed>

function checkFullName(full: string, what: string): void {
  for (const part of full.split('.')) {
    if (!NAME_RE.test(part)) throw new AvroParseError(`Illegal ${what} name: ${full}`)
  }
}

function resolveName(name: string, namespace: string): { full: string; namespace: string } {
  const dot = name.lastIndexOf('.')
  if (dot >= 0) return { full: name, namespace: name.slice(0, dot) }
  return { full: namespace ? `${namespace}.${name}` : name, namespace }
}

class Parser {
  constructor(readonly names: AvroNames) {}

  parse(json: unknown, namespace: string): AvroType {
    if (typeof json === 'string') return this.byName(json, namespace)
    if (Array.isArray(json)) return this.union(json, namespace)
    if (!isObject(json)) throw new AvroParseError(`Not a valid Avro schema: ${JSON.stringify(json)}`)
    const type = json['type']
    if (Array.isArray(type) || isObject(type)) {
      // {"type": {...}} or {"type": [...]}: the wrapper adds nothing but properties, which Java keeps only
      // for primitives; treat it as the inner schema.
      return this.parse(type, namespace)
    }
    if (typeof type !== 'string') throw new AvroParseError(`No type: ${JSON.stringify(json)}`)
    switch (type) {
      case 'record':
      case 'error':
        return this.record(json, type, namespace)
      case 'enum':
        return this.enumType(json, namespace)
      case 'fixed':
        return this.fixed(json, namespace)
      case 'array': {
        if (!('items' in json)) throw new AvroParseError(`Array has no items type: ${JSON.stringify(json)}`)
        const props = extraProps(json, new Set(['type', 'items']))
        return { type: 'array', items: this.parse(json['items'], namespace), ...logical(props), props }
      }
      case 'map': {
        if (!('values' in json)) throw new AvroParseError(`Map has no values type: ${JSON.stringify(json)}`)
        const props = extraProps(json, new Set(['type', 'values']))
        return { type: 'map', values: this.parse(json['values'], namespace), ...logical(props), props }
      }
      default:
        if ((AVRO_PRIMITIVES as readonly string[]).includes(type)) {
          const props = extraProps(json, new Set(['type']))
          return { type: type as AvroPrimitiveName, ...logical(props), props }
        }
        // {"type": "com.example.Named"} refers to a named type, with the wrapper's properties dropped.
        return this.byName(type, namespace)
    }
  }

  private byName(name: string, namespace: string): AvroType {
    if ((AVRO_PRIMITIVES as readonly string[]).includes(name)) return { type: name as AvroPrimitiveName, props: {} }
    const candidates = name.includes('.') ? [name] : [namespace ? `${namespace}.${name}` : name, name]
    for (const c of candidates) {
      const named = this.names.get(c)
      if (named) return named
    }
    throw new AvroParseError(`"${name}" is not a defined name. The type of the field must be a defined name or a {"type": ...} expression.`)
  }

  private union(branches: unknown[], namespace: string): AvroUnion {
    const parsed = branches.map((b) => this.parse(b, namespace))
    const seen = new Set<string>()
    for (const b of parsed) {
      if (b.type === 'union') throw new AvroParseError('Nested union: unions may not immediately contain other unions')
      const key = 'name' in b ? b.name : b.type
      if (seen.has(key)) throw new AvroParseError(`Duplicate in union: ${key}`)
      seen.add(key)
    }
    return { type: 'union', branches: parsed }
  }

  private define(named: AvroNamed): void {
    if ((AVRO_PRIMITIVES as readonly string[]).includes(named.name)) throw new AvroParseError(`Schemas may not be named after primitives: ${named.name}`)
    if (this.names.has(named.name)) throw new AvroParseError(`Can't redefine: ${named.name}`)
    this.names.set(named.name, named)
  }

  private header(json: Record<string, unknown>, namespace: string, what: string) {
    const name = json['name']
    if (typeof name !== 'string' || name === '') throw new AvroParseError(`No name in schema: ${JSON.stringify(json)}`)
    const ns = json['namespace']
    if (ns !== undefined && ns !== null && typeof ns !== 'string') throw new AvroParseError(`Invalid namespace: ${JSON.stringify(ns)}`)
    const resolved = resolveName(name, name.includes('.') ? '' : typeof ns === 'string' ? ns : namespace)
    checkFullName(resolved.full, what)
    const doc = json['doc']
    return {
      name: resolved.full,
      namespace: resolved.namespace,
      doc: typeof doc === 'string' ? doc : undefined,
      aliases: this.aliases(json['aliases'], resolved.namespace),
    }
  }

  private aliases(value: unknown, namespace: string): string[] {
    if (value === undefined || value === null) return []
    if (!Array.isArray(value) || value.some((a) => typeof a !== 'string')) throw new AvroParseError(`aliases not an array of strings: ${JSON.stringify(value)}`)
    return (value as string[]).map((a) => {
      const full = resolveName(a, namespace).full
      checkFullName(full, 'alias')
      return full
    })
  }

  private record(json: Record<string, unknown>, type: 'record' | 'error', namespace: string): AvroRecord {
    const head = this.header(json, namespace, 'record')
    const props = extraProps(json, RESERVED_RECORD)
    const record: AvroRecord = { type, ...head, fields: [], ...logical(props), props }
    this.define(record) // before the fields, so a record may refer to itself
    const fields = json['fields']
    if (!Array.isArray(fields)) throw new AvroParseError(`Record has no fields: ${JSON.stringify(json)}`)
    const fieldNames = new Set<string>()
    fields.forEach((f, pos) => {
      if (!isObject(f)) throw new AvroParseError(`Not a field: ${JSON.stringify(f)}`)
      const name = f['name']
      if (typeof name !== 'string' || !NAME_RE.test(name)) throw new AvroParseError(`Illegal field name: ${JSON.stringify(name)}`)
      if (fieldNames.has(name)) throw new AvroParseError(`Duplicate field ${name} in record ${record.name}`)
      fieldNames.add(name)
      if (!('type' in f)) throw new AvroParseError(`No field type: ${JSON.stringify(f)}`)
      const fieldType = this.parse(f['type'], record.namespace)
      const order = f['order']
      if (order !== undefined && order !== 'ascending' && order !== 'descending' && order !== 'ignore') {
        throw new AvroParseError(`Illegal field order: ${JSON.stringify(order)}`)
      }
      const aliases = f['aliases']
      if (aliases !== undefined && (!Array.isArray(aliases) || aliases.some((a) => typeof a !== 'string'))) {
        throw new AvroParseError(`Field aliases not an array of strings: ${JSON.stringify(aliases)}`)
      }
      const hasDefault = 'default' in f
      if (hasDefault && !isValidDefault(fieldType, f['default'])) {
        throw new AvroParseError(`Invalid default for field ${name}: ${JSON.stringify(f['default'])} not a ${describe(fieldType)}`)
      }
      const doc = f['doc']
      record.fields.push({
        name,
        type: fieldType,
        doc: typeof doc === 'string' ? doc : undefined,
        hasDefault,
        default: hasDefault ? f['default'] : undefined,
        order: order as AvroField['order'],
        aliases: (aliases as string[] | undefined) ?? [],
        props: extraProps(f, RESERVED_FIELD),
        pos,
      })
    })
    return record
  }

  private enumType(json: Record<string, unknown>, namespace: string): AvroEnum {
    const head = this.header(json, namespace, 'enum')
    const symbols = json['symbols']
    if (!Array.isArray(symbols) || symbols.some((s) => typeof s !== 'string')) throw new AvroParseError(`Enum symbols not an array of strings: ${JSON.stringify(symbols)}`)
    const seen = new Set<string>()
    for (const s of symbols as string[]) {
      if (!NAME_RE.test(s)) throw new AvroParseError(`Illegal enum symbol: ${s}`)
      if (seen.has(s)) throw new AvroParseError(`Duplicate enum symbol: ${s}`)
      seen.add(s)
    }
    const dflt = json['default']
    if (dflt !== undefined && (typeof dflt !== 'string' || !seen.has(dflt))) {
      throw new AvroParseError(`The Enum Default: ${JSON.stringify(dflt)} is not in the enum symbol set: ${JSON.stringify(symbols)}`)
    }
    const e: AvroEnum = { type: 'enum', ...head, symbols: symbols as string[], default: dflt as string | undefined, props: extraProps(json, RESERVED_ENUM) }
    this.define(e)
    return e
  }

  private fixed(json: Record<string, unknown>, namespace: string): AvroFixed {
    const head = this.header(json, namespace, 'fixed')
    const size = json['size']
    if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) throw new AvroParseError(`Invalid fixed size: ${JSON.stringify(size)}`)
    const props = extraProps(json, RESERVED_FIXED)
    const f: AvroFixed = { type: 'fixed', ...head, size, ...logical(props), props }
    this.define(f)
    return f
  }
}

function logical(props: Props): { logicalType?: string } {
  const lt = props['logicalType']
  return typeof lt === 'string' ? { logicalType: lt } : {}
}

function describe(t: AvroType): string {
  return 'name' in t ? t.name : t.type
}

/** Whether a JSON default value is valid for a type (specification, "Default values"). */
export function isValidDefault(type: AvroType, value: unknown): boolean {
  switch (type.type) {
    case 'null':
      return value === null
    case 'boolean':
      return typeof value === 'boolean'
    case 'int':
      return typeof value === 'number' && Number.isInteger(value) && value >= -2147483648 && value <= 2147483647
    case 'long':
      return typeof value === 'number' && Number.isInteger(value)
    case 'float':
    case 'double':
      // Java also accepts "NaN"/"Infinity" strings for floating point defaults.
      return typeof value === 'number' || value === 'NaN' || value === 'Infinity' || value === '-Infinity'
    case 'bytes':
    case 'string':
      return typeof value === 'string'
    case 'fixed':
      return typeof value === 'string' && value.length === type.size
    case 'enum':
      return typeof value === 'string' && type.symbols.includes(value)
    case 'array':
      return Array.isArray(value) && value.every((v) => isValidDefault(type.items, v))
    case 'map':
      return isObject(value) && Object.values(value).every((v) => isValidDefault(type.values, v))
    case 'union':
      return type.branches.length > 0 && isValidDefault(type.branches[0]!, value)
    case 'record':
    case 'error':
      if (!isObject(value)) return false
      return type.fields.every((f) => (f.name in value ? isValidDefault(f.type, value[f.name]) : f.hasDefault))
  }
}

export interface ParsedAvro {
  root: AvroType
  /** Named types this schema defines itself (not those it takes from references). */
  defined: AvroNamed[]
}

/**
 * Parses an Avro schema text. `referenced` are the texts of referenced schemas (Confluent's schema
 * references for Avro): they are parsed first, in order, so that their named types can be used by name.
 */
export function parseAvro(text: string, referenced: string[] = []): ParsedAvro {
  const names: AvroNames = new Map()
  for (const ref of referenced) {
    let json: unknown
    try {
      json = JSON.parse(ref)
    } catch (e) {
      throw new AvroParseError(`Invalid referenced schema: ${(e as Error).message}`)
    }
    new Parser(names).parse(json, '')
  }
  const before = new Set(names.keys())
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    // A bare primitive name without quotes is not JSON; Java's parser does not accept it either.
    throw new AvroParseError(`Invalid schema ${text.slice(0, 200)}: ${(e as Error).message}`)
  }
  const root = new Parser(names).parse(json, '')
  const defined = [...names.entries()].filter(([k]) => !before.has(k)).map(([, v]) => v)
  return { root, defined }
}

/** Confirms avsc can build the type too (it encodes records in the serdes); throws its message if not. */
export function checkWithAvsc(text: string, referenced: string[] = []): void {
  const registry: Record<string, unknown> = {}
  try {
    for (const ref of referenced) avsc.Type.forSchema(JSON.parse(ref), { registry, wrapUnions: true } as never)
    avsc.Type.forSchema(JSON.parse(text), { registry, wrapUnions: true } as never)
  } catch (e) {
    throw new AvroParseError((e as Error).message)
  }
}

// --- string forms ---------------------------------------------------------------------------------

/**
 * The stored form, as Java's Schema.toString(): keys in Java's order, namespaces written only where they
 * differ from the enclosing one, named types after their first definition written by name.
 */
export function canonicalString(root: AvroType, external: Set<string> = new Set()): string {
  const written = new Set<string>(external)
  const out = (t: AvroType, space: string): unknown => {
    switch (t.type) {
      case 'union':
        return t.branches.map((b) => out(b, space))
      case 'array':
        return withProps({ type: 'array', items: out(t.items, space) }, t.props)
      case 'map':
        return withProps({ type: 'map', values: out(t.values, space) }, t.props)
      case 'record':
      case 'error':
      case 'enum':
      case 'fixed': {
        if (written.has(t.name)) return t.namespace === space ? shortName(t.name) : t.name
        written.add(t.name)
        const o: Record<string, unknown> = { type: t.type, name: shortName(t.name) }
        if (t.namespace !== space && t.namespace !== '') o['namespace'] = t.namespace
        else if (t.namespace === '' && space !== '') o['namespace'] = ''
        if (t.doc !== undefined) o['doc'] = t.doc
        if (t.type === 'fixed') o['size'] = t.size
        if (t.type === 'enum') {
          o['symbols'] = t.symbols
          if (t.default !== undefined) o['default'] = t.default
        }
        if (t.type === 'record' || t.type === 'error') {
          o['fields'] = t.fields.map((f) => {
            const fo: Record<string, unknown> = { name: f.name, type: out(f.type, t.namespace) }
            if (f.doc !== undefined) fo['doc'] = f.doc
            if (f.hasDefault) fo['default'] = f.default
            if (f.order !== undefined && f.order !== 'ascending') fo['order'] = f.order
            if (f.aliases.length > 0) fo['aliases'] = f.aliases
            return withProps(fo, f.props)
          })
        }
        if (t.aliases.length > 0) o['aliases'] = t.aliases.map((a) => (aliasSpace(a) === t.namespace ? shortName(a) : a))
        return withProps(o, t.props)
      }
      default:
        return Object.keys(t.props).length === 0 ? t.type : withProps({ type: t.type }, t.props)
    }
  }
  return JSON.stringify(out(root, ''))
}

/** Confluent's normalized form: full names, field/type properties sorted, logical types first. */
export function normalizedString(root: AvroType, external: Set<string> = new Set()): string {
  const written = new Set<string>(external)
  const sorted = (props: Props): Props => Object.fromEntries(Object.entries(props).filter(([k]) => k !== 'logicalType').sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  const out = (t: AvroType): unknown => {
    switch (t.type) {
      case 'union':
        return t.branches.map(out)
      case 'array':
        return { type: 'array', items: out(t.items), ...lt(t.logicalType, t.props), ...sorted(t.props) }
      case 'map':
        return { type: 'map', values: out(t.values), ...lt(t.logicalType, t.props), ...sorted(t.props) }
      case 'record':
      case 'error':
      case 'enum':
      case 'fixed': {
        if (written.has(t.name)) return t.name
        written.add(t.name)
        const o: Record<string, unknown> = { name: t.name, type: t.type }
        if (t.type === 'enum') o['symbols'] = t.symbols
        if (t.type === 'fixed') o['size'] = t.size
        if (t.type === 'record' || t.type === 'error') {
          o['fields'] = t.fields.map((f) => {
            const fo: Record<string, unknown> = { name: f.name, type: out(f.type) }
            if (f.order !== undefined && f.order !== 'ascending') fo['order'] = f.order
            if (f.doc !== undefined) fo['doc'] = f.doc
            if (f.aliases.length > 0) fo['aliases'] = [...f.aliases].sort()
            if (f.hasDefault) fo['default'] = f.default
            return { ...fo, ...sorted(f.props) }
          })
        }
        Object.assign(o, lt('logicalType' in t ? t.logicalType : undefined, t.props))
        if (t.doc) o['doc'] = t.doc
        if (t.aliases.length > 0) o['aliases'] = [...t.aliases].sort()
        if (t.type === 'enum' && t.default !== undefined) o['default'] = t.default
        return { ...o, ...sorted(t.props) }
      }
      default:
        if (t.logicalType !== undefined || Object.keys(t.props).length > 0) return { type: t.type, ...lt(t.logicalType, t.props), ...sorted(t.props) }
        return t.type
    }
  }
  return JSON.stringify(out(root))
}

function lt(logicalType: string | undefined, props: Props): Props {
  if (logicalType === undefined) return {}
  const o: Props = { logicalType }
  if (logicalType === 'decimal') {
    if (props['precision'] !== undefined) o['precision'] = props['precision']
    if (props['scale'] !== undefined && props['scale'] !== 0) o['scale'] = props['scale']
  }
  return o
}

/**
 * Parsing Canonical Form (Avro specification): primitives as bare names, full names, only the
 * attributes that affect parsing (type, name, fields, symbols, items, values, size) in that order.
 */
export function parsingCanonicalForm(root: AvroType): string {
  const written = new Set<string>()
  const out = (t: AvroType): string => {
    switch (t.type) {
      case 'union':
        return `[${t.branches.map(out).join(',')}]`
      case 'array':
        return `{"type":"array","items":${out(t.items)}}`
      case 'map':
        return `{"type":"map","values":${out(t.values)}}`
      case 'record':
      case 'error':
      case 'enum':
      case 'fixed': {
        if (written.has(t.name)) return JSON.stringify(t.name)
        written.add(t.name)
        let s = `{"name":${JSON.stringify(t.name)},"type":${JSON.stringify(t.type === 'error' ? 'record' : t.type)}`
        if (t.type === 'enum') s += `,"symbols":[${t.symbols.map((x) => JSON.stringify(x)).join(',')}]`
        if (t.type === 'record' || t.type === 'error') s += `,"fields":[${t.fields.map((f) => `{"name":${JSON.stringify(f.name)},"type":${out(f.type)}}`).join(',')}]`
        if (t.type === 'fixed') s += `,"size":${t.size}`
        return s + '}'
      }
      default:
        return JSON.stringify(t.type)
    }
  }
  return out(root)
}

function withProps(o: Record<string, unknown>, props: Props): Record<string, unknown> {
  for (const [k, v] of Object.entries(props)) if (!(k in o)) o[k] = v
  return o
}

function shortName(full: string): string {
  const dot = full.lastIndexOf('.')
  return dot >= 0 ? full.slice(dot + 1) : full
}

function aliasSpace(full: string): string {
  const dot = full.lastIndexOf('.')
  return dot >= 0 ? full.slice(0, dot) : ''
}

/** Avro Java's Schema.Type name, as the compatibility messages print it. */
export function javaTypeName(t: AvroType): string {
  return (t.type === 'error' ? 'record' : t.type).toUpperCase()
}
