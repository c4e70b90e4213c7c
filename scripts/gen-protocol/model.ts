// Typed model of Kafka's JSON message specs (clients/src/main/resources/common/message/*.json).
// Parsing and validation live here; emit.ts only turns this model into TypeScript. Tests use the
// same model to build sample messages for every API and version.

import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

/** Inclusive version range; `max` is Infinity for open ranges ("3+"); empty when min > max. */
export interface VersionRange {
  min: number
  max: number
}

export const NO_VERSIONS: VersionRange = { min: 1, max: 0 }

export function parseVersions(text: string | undefined, what: string): VersionRange {
  if (text === undefined || text === 'none') return NO_VERSIONS
  const s = text.trim()
  let m = /^(\d+)\+$/.exec(s)
  if (m) return { min: Number(m[1]), max: Infinity }
  m = /^(\d+)-(\d+)$/.exec(s)
  if (m) return { min: Number(m[1]), max: Number(m[2]) }
  m = /^(\d+)$/.exec(s)
  if (m) return { min: Number(m[1]), max: Number(m[1]) }
  throw new Error(`${what}: bad version range '${text}'`)
}

export function isEmpty(r: VersionRange): boolean {
  return r.min > r.max
}

export function contains(r: VersionRange, v: number): boolean {
  return v >= r.min && v <= r.max
}

export function intersect(a: VersionRange, b: VersionRange): VersionRange {
  const r = { min: Math.max(a.min, b.min), max: Math.min(a.max, b.max) }
  return isEmpty(r) ? NO_VERSIONS : r
}

export function formatVersions(r: VersionRange): string {
  if (isEmpty(r)) return 'none'
  if (r.max === Infinity) return `${r.min}+`
  if (r.min === r.max) return `${r.min}`
  return `${r.min}-${r.max}`
}

export const PRIMITIVES = ['bool', 'int8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'float64', 'string', 'bytes', 'uuid', 'records'] as const
export type PrimitiveName = (typeof PRIMITIVES)[number]

export type FieldType =
  | { kind: 'primitive'; name: PrimitiveName }
  | { kind: 'array'; element: FieldType }
  | { kind: 'struct'; struct: StructSpec }

/** A field's value when absent: parsed from `default`, else the type's zero value. */
export type DefaultValue =
  | { kind: 'null' }
  | { kind: 'number'; value: number }
  | { kind: 'bigint'; value: bigint }
  | { kind: 'bool'; value: boolean }
  | { kind: 'string'; value: string }
  | { kind: 'uuid' }
  | { kind: 'bytes' }
  | { kind: 'array' }
  | { kind: 'struct'; struct: StructSpec }

export interface FieldSpec {
  /** JSON name, e.g. `TransactionalId`. */
  name: string
  /** camelCase TS property name, e.g. `transactionalId`. */
  prop: string
  type: FieldType
  versions: VersionRange
  nullableVersions: VersionRange
  taggedVersions: VersionRange
  tag: number | undefined
  ignorable: boolean
  default: DefaultValue
  /** Field-level override of the message's flexibleVersions (only RequestHeader.ClientId uses it). */
  flexibleVersions: VersionRange | undefined
  zeroCopy: boolean
  about: string
  entityType: string | undefined
}

export interface StructSpec {
  /** JSON type name, e.g. `TopicProduceData`. */
  name: string
  /** Exported TS name; differs from `name` only when request and response both define it. */
  tsName: string
  fields: FieldSpec[]
  /** Versions in which the struct can occur (the versions of the field that holds it). */
  versions: VersionRange
}

export type MessageKind = 'request' | 'response' | 'header' | 'data'

export interface MessageSpec {
  /** Spec file name, e.g. `ProduceRequest.json`. */
  file: string
  /** The folder it was read from, as generated headers name it (`shared/kafka-protocol`); '' when parsed from text. */
  specPath: string
  name: string
  kind: MessageKind
  apiKey: number | undefined
  validVersions: VersionRange
  flexibleVersions: VersionRange
  deprecatedVersions: VersionRange
  latestVersionUnstable: boolean
  listeners: string[]
  /** The top-level struct (named like the message). */
  root: StructSpec
  /** Every nested struct, in definition order (root excluded). */
  structs: StructSpec[]
}

export interface ApiSpec {
  apiKey: number
  /** `Produce` (the request name without `Request`). */
  name: string
  request: MessageSpec
  response: MessageSpec
}

export interface ProtocolModel {
  apis: ApiSpec[]
  data: MessageSpec[]
  headers: MessageSpec[]
  /** The folders the specs were read from, as generated headers name them. */
  specPaths: string[]
}

/** A folder of protocol specs and the name generated headers give it. */
export interface SpecFolder {
  dir: string
  /** Repo-relative (or sibling) path named in GENERATED headers, e.g. `shared/kafka-protocol`. */
  label: string
}

/** Strips `//` line comments (the specs have no `//` inside strings except in URLs, handled below). */
export function stripComments(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      let inString = false
      for (let i = 0; i < line.length; i++) {
        const c = line[i]
        if (c === '"' && line[i - 1] !== '\\') inString = !inString
        else if (!inString && c === '/' && line[i + 1] === '/') return line.slice(0, i)
      }
      return line
    })
    .join('\n')
}

export function camelCase(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1)
}

interface RawField {
  name: string
  type: string
  versions?: string
  nullableVersions?: string
  taggedVersions?: string
  tag?: number
  ignorable?: boolean
  default?: string | number | boolean
  flexibleVersions?: string
  zeroCopy?: boolean
  about?: string
  entityType?: string
  fields?: RawField[]
}

interface RawMessage {
  apiKey?: number
  type: MessageKind
  name: string
  validVersions: string
  flexibleVersions: string
  deprecatedVersions?: string
  latestVersionUnstable?: boolean
  listeners?: string[]
  fields: RawField[]
  commonStructs?: { name: string; versions: string; fields: RawField[] }[]
}

function parseInteger(text: string, what: string): number {
  const s = text.trim()
  const neg = s.startsWith('-')
  const body = neg ? s.slice(1) : s
  const v = /^0x[0-9a-f]+$/i.test(body) ? parseInt(body.slice(2), 16) : /^\d+$/.test(body) ? Number(body) : NaN
  if (Number.isNaN(v)) throw new Error(`${what}: bad integer default '${text}'`)
  return neg ? -v : v
}

const INT_RANGES: Record<string, [number, number]> = {
  int8: [-128, 127],
  int16: [-32768, 32767],
  uint16: [0, 65535],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
}

function parseDefault(raw: RawField, type: FieldType, nullable: VersionRange, what: string): DefaultValue {
  const d = raw.default === undefined ? undefined : String(raw.default)
  if (d === 'null') {
    if (isEmpty(nullable)) throw new Error(`${what}: default null on a field that is never nullable`)
    return { kind: 'null' }
  }
  if (type.kind === 'array') {
    if (d !== undefined && d !== '') throw new Error(`${what}: arrays only take a null default`)
    return { kind: 'array' }
  }
  if (type.kind === 'struct') {
    if (d !== undefined) throw new Error(`${what}: structs only take a null default`)
    return { kind: 'struct', struct: type.struct }
  }
  switch (type.name) {
    case 'bool':
      if (d === undefined) return { kind: 'bool', value: false }
      if (d !== 'true' && d !== 'false') throw new Error(`${what}: bad bool default '${d}'`)
      return { kind: 'bool', value: d === 'true' }
    case 'int8':
    case 'int16':
    case 'uint16':
    case 'int32':
    case 'uint32': {
      const v = d === undefined ? 0 : parseInteger(d, what)
      const [lo, hi] = INT_RANGES[type.name]!
      if (v < lo || v > hi) throw new Error(`${what}: default ${d} out of ${type.name} range`)
      return { kind: 'number', value: v }
    }
    case 'int64': {
      if (d === undefined) return { kind: 'bigint', value: 0n }
      const neg = d.trim().startsWith('-')
      const body = neg ? d.trim().slice(1) : d.trim()
      const v = BigInt(body)
      return { kind: 'bigint', value: neg ? -v : v }
    }
    case 'float64': {
      const v = d === undefined ? 0 : Number(d)
      if (Number.isNaN(v)) throw new Error(`${what}: bad float64 default '${d}'`)
      return { kind: 'number', value: v }
    }
    case 'string':
      return { kind: 'string', value: d ?? '' }
    case 'uuid':
      if (d !== undefined) throw new Error(`${what}: uuid defaults are not supported`)
      return { kind: 'uuid' }
    case 'bytes':
      if (d !== undefined && d !== '') throw new Error(`${what}: bytes only take a null default`)
      return { kind: 'bytes' }
    case 'records':
      // Kafka treats an absent records field as null.
      return { kind: 'null' }
  }
}

class MessageParser {
  private readonly structs = new Map<string, StructSpec>()
  private readonly order: StructSpec[] = []
  private readonly common = new Map<string, { versions: string; fields: RawField[] }>()

  constructor(private readonly raw: RawMessage, private readonly file: string) {
    for (const c of raw.commonStructs ?? []) this.common.set(c.name, c)
  }

  parse(): MessageSpec {
    const raw = this.raw
    const validVersions = parseVersions(raw.validVersions, `${this.file} validVersions`)
    const root: StructSpec = { name: raw.name, tsName: raw.name, fields: [], versions: validVersions }
    root.fields = this.fields(raw.fields, raw.name, validVersions)
    // A commonStruct nobody references is still part of the message's vocabulary.
    for (const [name, c] of this.common) {
      if (!this.structs.has(name)) this.defineStruct(name, c.fields, parseVersions(c.versions, `${this.file} ${name}`))
    }
    return {
      file: this.file,
      specPath: '',
      name: raw.name,
      kind: raw.type,
      apiKey: raw.apiKey,
      validVersions,
      flexibleVersions: parseVersions(raw.flexibleVersions, `${this.file} flexibleVersions`),
      deprecatedVersions: parseVersions(raw.deprecatedVersions, `${this.file} deprecatedVersions`),
      latestVersionUnstable: raw.latestVersionUnstable === true,
      listeners: raw.listeners ?? [],
      root,
      structs: this.order,
    }
  }

  private defineStruct(name: string, rawFields: RawField[], versions: VersionRange): StructSpec {
    if (this.structs.has(name)) throw new Error(`${this.file}: struct ${name} is defined twice`)
    const s: StructSpec = { name, tsName: name, fields: [], versions }
    this.structs.set(name, s)
    this.order.push(s)
    s.fields = this.fields(rawFields, name, versions)
    return s
  }

  private type(raw: RawField, what: string, versions: VersionRange): FieldType {
    let t = raw.type
    if (t.startsWith('[]')) {
      t = t.slice(2)
      if ((PRIMITIVES as readonly string[]).includes(t)) {
        if (raw.fields) throw new Error(`${what}: primitive array with fields`)
        if (t === 'records' || t === 'bytes') throw new Error(`${what}: arrays of ${t} are not supported`)
        return { kind: 'array', element: { kind: 'primitive', name: t as PrimitiveName } }
      }
      return { kind: 'array', element: { kind: 'struct', struct: this.structRef(t, raw, what, versions) } }
    }
    if ((PRIMITIVES as readonly string[]).includes(t)) {
      if (raw.fields) throw new Error(`${what}: primitive with fields`)
      return { kind: 'primitive', name: t as PrimitiveName }
    }
    if (!/^[A-Z]\w*$/.test(t)) throw new Error(`${what}: unknown type '${raw.type}'`)
    return { kind: 'struct', struct: this.structRef(t, raw, what, versions) }
  }

  private structRef(name: string, raw: RawField, what: string, versions: VersionRange): StructSpec {
    if (raw.fields) return this.defineStruct(name, raw.fields, versions)
    const existing = this.structs.get(name)
    if (existing) return existing
    const c = this.common.get(name)
    if (!c) throw new Error(`${what}: struct type ${name} has no fields and is not a commonStruct`)
    return this.defineStruct(name, c.fields, parseVersions(c.versions, `${this.file} ${name}`))
  }

  private fields(raws: RawField[], owner: string, ownerVersions: VersionRange): FieldSpec[] {
    const out: FieldSpec[] = []
    const props = new Set<string>()
    const tags = new Set<number>()
    for (const raw of raws) {
      const what = `${this.file} ${owner}.${raw.name}`
      const versions = parseVersions(raw.versions, `${what} versions`)
      const type = this.type(raw, what, intersect(versions, ownerVersions))
      const nullableVersions = parseVersions(raw.nullableVersions, `${what} nullableVersions`)
      if (!isEmpty(nullableVersions)) {
        const ok = type.kind !== 'primitive' || type.name === 'string' || type.name === 'bytes' || type.name === 'records'
        if (!ok) throw new Error(`${what}: type ${raw.type} cannot be nullable`)
      }
      const taggedVersions = parseVersions(raw.taggedVersions, `${what} taggedVersions`)
      if (!isEmpty(taggedVersions) !== (raw.tag !== undefined)) throw new Error(`${what}: tag and taggedVersions go together`)
      if (raw.tag !== undefined) {
        if (!Number.isInteger(raw.tag) || raw.tag < 0) throw new Error(`${what}: bad tag ${raw.tag}`)
        if (tags.has(raw.tag)) throw new Error(`${what}: duplicate tag ${raw.tag}`)
        tags.add(raw.tag)
        if (taggedVersions.max !== Infinity) throw new Error(`${what}: taggedVersions must be open-ended`)
      }
      const prop = camelCase(raw.name)
      if (props.has(prop) || prop === '_unknownTaggedFields') throw new Error(`${what}: duplicate property ${prop}`)
      props.add(prop)
      out.push({
        name: raw.name,
        prop,
        type,
        versions,
        nullableVersions,
        taggedVersions,
        tag: raw.tag,
        ignorable: raw.ignorable === true,
        default: parseDefault(raw, type, nullableVersions, what),
        flexibleVersions: raw.flexibleVersions === undefined ? undefined : parseVersions(raw.flexibleVersions, `${what} flexibleVersions`),
        zeroCopy: raw.zeroCopy === true,
        about: raw.about ?? '',
        entityType: raw.entityType,
      })
    }
    return out
  }
}

export function parseMessage(text: string, file: string): MessageSpec {
  const raw = JSON.parse(stripComments(text)) as RawMessage
  if (!raw.name || !raw.type || !Array.isArray(raw.fields)) throw new Error(`${file}: not a message spec`)
  return new MessageParser(raw, file).parse()
}

/**
 * When a request and its response both define a struct with the same name, both are renamed
 * with a `Request`/`Response` prefix (AlterClientQuotas: EntityData -> RequestEntityData and
 * ResponseEntityData), so one module can export both.
 */
function disambiguate(api: ApiSpec): void {
  const req = new Set(api.request.structs.map((s) => s.name))
  for (const s of api.response.structs) {
    if (req.has(s.name)) {
      for (const r of api.request.structs) if (r.name === s.name) r.tsName = `Request${r.name}`
      s.tsName = `Response${s.name}`
    }
  }
  const names = new Set<string>()
  for (const s of [api.request.root, ...api.request.structs, api.response.root, ...api.response.structs]) {
    if (names.has(s.tsName)) throw new Error(`${api.name}: type name ${s.tsName} is used twice`)
    names.add(s.tsName)
  }
}

/**
 * Reads the protocol specs of one or more folders (a folder given as a plain path is labelled
 * `shared/kafka-protocol`). Each message is described once: a file name or API key found in two folders
 * is an error, so a folder of extra specs can never shadow the shared set.
 */
export function loadModel(folders: string | readonly SpecFolder[]): ProtocolModel {
  const list: readonly SpecFolder[] = typeof folders === 'string' ? [{ dir: folders, label: SHARED_SPEC_LABEL }] : folders
  const seen = new Map<string, string>()
  const files: { folder: SpecFolder; file: string }[] = []
  for (const folder of list) {
    for (const file of readdirSync(folder.dir).filter((f) => f.endsWith('.json'))) {
      const other = seen.get(file)
      if (other !== undefined) throw new Error(`${file} is in both ${other} and ${folder.label}: a message is described once`)
      seen.set(file, folder.label)
      files.push({ folder, file })
    }
  }
  files.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0))
  const requests = new Map<number, MessageSpec>()
  const responses = new Map<number, MessageSpec>()
  const data: MessageSpec[] = []
  const headers: MessageSpec[] = []
  for (const { folder, file } of files) {
    const msg = parseMessage(readFileSync(join(folder.dir, file), 'utf8'), file)
    msg.specPath = folder.label
    if (msg.kind === 'request' || msg.kind === 'response') {
      if (msg.apiKey === undefined) throw new Error(`${file}: ${msg.kind} without apiKey`)
      const map = msg.kind === 'request' ? requests : responses
      if (map.has(msg.apiKey)) throw new Error(`${file}: apiKey ${msg.apiKey} defined twice`)
      map.set(msg.apiKey, msg)
    } else if (msg.kind === 'header') headers.push(msg)
    else if (msg.kind === 'data') data.push(msg)
    else throw new Error(`${file}: unknown message type ${String(msg.kind)}`)
  }
  const apis: ApiSpec[] = []
  for (const [apiKey, request] of [...requests].sort((a, b) => a[0] - b[0])) {
    const response = responses.get(apiKey)
    if (!response) throw new Error(`${request.file}: no response spec for apiKey ${apiKey}`)
    if (!request.name.endsWith('Request') || response.name !== request.name.replace(/Request$/, 'Response')) {
      throw new Error(`${request.file}: unexpected request/response names ${request.name}/${response.name}`)
    }
    const api: ApiSpec = { apiKey, name: request.name.slice(0, -'Request'.length), request, response }
    disambiguate(api)
    apis.push(api)
  }
  for (const key of responses.keys()) if (!requests.has(key)) throw new Error(`response for apiKey ${key} has no request`)
  return { apis, data, headers, specPaths: list.map((f) => f.label) }
}

/** `DescribeCluster` -> `describe-cluster`. */
export function kebabCase(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/([A-Z])([A-Z][a-z])/g, '$1-$2')
    .toLowerCase()
}

/** File name of an API module: `00-produce.gen.ts`. */
export function apiModuleFile(api: ApiSpec): string {
  return `${String(api.apiKey).padStart(2, '0')}-${kebabCase(api.name)}.gen.ts`
}

/** File name of a data or header module: `request-header.gen.ts`. */
export function messageModuleFile(msg: MessageSpec): string {
  return `${kebabCase(msg.name)}.gen.ts`
}

/** Versions in which a field sits inline (present but not tagged). */
export function isInline(f: FieldSpec, version: number): boolean {
  return contains(f.versions, version) && !contains(f.taggedVersions, version)
}

export function isTagged(f: FieldSpec, version: number): boolean {
  return contains(f.taggedVersions, version)
}

export function isPresent(f: FieldSpec, version: number): boolean {
  return contains(f.versions, version) || contains(f.taggedVersions, version)
}

export const SHARED_SPEC_LABEL = 'shared/kafka-protocol'
/** The repo's own protocol specs: APIs the shared folder lacks (see its README). */
export const EXTRA_SPEC_PATH = 'scripts/kafka-protocol-extra'

/** Default spec folder: $SKEIN_PROTOCOL_SPECS, else <repo>/../shared/kafka-protocol. */
export function defaultSpecDir(repoRoot: string): string {
  return process.env['SKEIN_PROTOCOL_SPECS'] ?? join(repoRoot, '..', 'shared', 'kafka-protocol')
}

/** Every folder the protocol is generated from: the shared specs, then the repo's extra ones. */
export function defaultSpecFolders(repoRoot: string): SpecFolder[] {
  return [
    { dir: defaultSpecDir(repoRoot), label: SHARED_SPEC_LABEL },
    { dir: join(repoRoot, EXTRA_SPEC_PATH), label: EXTRA_SPEC_PATH },
  ]
}

/**
 * One record type of a coordinator's log: a key definition (`XxxKey`) and its value definition
 * (`XxxValue`). In Kafka's coordinator record files the key's version names the record type, so the
 * key's validVersions are the record type's ids.
 */
export interface CoordinatorRecordType {
  /** `OffsetCommit` for OffsetCommitKey / OffsetCommitValue. */
  name: string
  key: MessageSpec
  value: MessageSpec
}

/** The record definitions of one coordinator (a folder of `type: data` JSON files). */
export interface CoordinatorRecordSet {
  /** `GroupCoordinator` for a folder named `group-coordinator`. */
  name: string
  /** Ordered by key version. */
  types: CoordinatorRecordType[]
}

/** `group-coordinator` -> `GroupCoordinator`. */
export function pascalCase(kebab: string): string {
  return kebab
    .split(/[-_]/)
    .filter((p) => p !== '')
    .map((p) => p.charAt(0).toUpperCase() + p.slice(1))
    .join('')
}

/**
 * Reads a folder of coordinator record definitions: every file a `type: data` message named
 * `<Type>Key` or `<Type>Value`, each key with its value, key version ranges closed and disjoint.
 */
export function loadRecordSet(dir: string, folderName: string): CoordinatorRecordSet {
  const keys = new Map<string, MessageSpec>()
  const values = new Map<string, MessageSpec>()
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
  for (const file of files) {
    const msg = parseMessage(readFileSync(join(dir, file), 'utf8'), file)
    if (msg.kind !== 'data') throw new Error(`${file}: a coordinator record must be a data message, not ${msg.kind}`)
    const m = /^(\w+)(Key|Value)$/.exec(msg.name)
    if (!m) throw new Error(`${file}: a coordinator record is named <Type>Key or <Type>Value, not ${msg.name}`)
    const map = m[2] === 'Key' ? keys : values
    if (map.has(m[1]!)) throw new Error(`${file}: ${msg.name} is defined twice`)
    map.set(m[1]!, msg)
  }
  const types: CoordinatorRecordType[] = []
  for (const [name, key] of keys) {
    const value = values.get(name)
    if (!value) throw new Error(`${key.file}: no ${name}Value next to it`)
    if (isEmpty(key.validVersions) || key.validVersions.max === Infinity || key.validVersions.min < 0 || key.validVersions.max > 0x7fff) {
      throw new Error(`${key.file}: key versions must be a closed int16 range, not ${formatVersions(key.validVersions)}`)
    }
    types.push({ name, key, value })
  }
  for (const [name, value] of values) if (!keys.has(name)) throw new Error(`${value.file}: no ${name}Key next to it`)
  types.sort((a, b) => a.key.validVersions.min - b.key.validVersions.min)
  for (let i = 1; i < types.length; i++) {
    const prev = types[i - 1]!.key
    const next = types[i]!.key
    if (next.validVersions.min <= prev.validVersions.max) throw new Error(`${next.file}: key versions ${formatVersions(next.validVersions)} overlap ${prev.name}'s ${formatVersions(prev.validVersions)}`)
  }
  return { name: pascalCase(folderName), types }
}
