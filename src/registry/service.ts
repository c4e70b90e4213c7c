// The Schema Registry's operations, independent of HTTP: each REST resource of Confluent's registry maps
// onto one method here (routes.ts holds the table). Reads answer from the replayed state; writes are
// records for the `_schemas` topic handed to a RegistryStore, which resolves once they have been read
// back into the state (read-your-writes), so a write's effect is visible to the caller's next request.
// Writes are serialized through one queue, so id and version assignment sees every earlier write.
import { checkCompatibility, type PreviousSchema } from './compatibility.js'
import { DEFAULT_CONTEXT, contextConfigSubject, contextOf, qualify } from './contexts.js'
import { Errors, RegistryError } from './errors.js'
import { Keys, type RegistryRecord, type SchemaValue, Values } from './schemas-topic-records.js'
import { parseSchema } from './schemas.js'
import { RegistryState, schemaIdentity } from './state.js'
import {
  type CompatibilityLevel,
  type Mode,
  type ParsedSchema,
  type ResolvedReference,
  SCHEMA_TYPES,
  type SchemaReference,
  type SchemaType,
  parseCompatibilityLevel,
  parseMode,
} from './schema-type/types.js'

/** Where the registry's records go and how they come back. */
export interface RegistryStore {
  readonly state: RegistryState
  /** Appends records to the log; resolves once they (and everything before them) are in `state`. */
  write(records: RegistryRecord[]): Promise<void>
}

/**
 * A store whose log is an array in memory: records are applied to the state as they are appended. It is
 * the registry for tests and single-process use, and a replayable log (`log`) like the topic.
 */
export class MemoryStore implements RegistryStore {
  readonly state = new RegistryState()
  readonly log: RegistryRecord[] = []

  constructor(initial: RegistryRecord[] = []) {
    for (const r of initial) this.append(r)
  }

  private append(r: RegistryRecord): void {
    this.log.push(r)
    this.state.apply(r.key, r.value)
  }

  async write(records: RegistryRecord[]): Promise<void> {
    for (const r of records) this.append(r)
  }
}

export interface RegistryOptions {
  /** schema.compatibility.level: the default when neither subject nor context nor global config sets one. */
  defaultCompatibility?: CompatibilityLevel
  /** Largest schema text accepted, in characters. */
  maxSchemaSize?: number
}

export interface SchemaRequest {
  schema?: unknown
  schemaType?: unknown
  references?: unknown
  id?: unknown
  version?: unknown
  metadata?: unknown
  ruleSet?: unknown
}

export interface SchemaEntry {
  subject: string
  version: number
  id: number
  schemaType?: SchemaType
  references?: SchemaReference[]
  schema: string
  deleted?: boolean
}

export interface ConfigEntry {
  compatibilityLevel: CompatibilityLevel
  normalize?: boolean
}

const MAX_VERSION = 2 ** 31 - 1

function entry(v: SchemaValue, withDeleted = false): SchemaEntry {
  const e: SchemaEntry = { subject: v.subject, version: v.version, id: v.id, schema: v.schema }
  // Confluent leaves schemaType out for Avro and references out when there are none.
  if (v.schemaType !== 'AVRO') e.schemaType = v.schemaType
  if (v.references.length > 0) e.references = v.references
  if (withDeleted && v.deleted) e.deleted = true
  return e
}

/** A version path parameter: a number in [1, 2^31-1], "latest" or -1 (latest). */
export function parseVersion(version: string | number): number | 'latest' {
  if (version === 'latest' || version === -1 || version === '-1') return 'latest'
  const n = typeof version === 'number' ? version : /^[0-9]+$/.test(version) ? Number(version) : NaN
  if (!Number.isInteger(n) || n < 1 || n > MAX_VERSION) throw Errors.invalidVersion(String(version))
  return n
}

function validSubject(subject: string): boolean {
  // Confluent refuses control characters and the reserved names; an empty subject only inside a context.
  if (subject === '' || subject.length > 1024 * 8) return false
  if (/[\u0000-\u001f\u007f]/.test(subject)) return false
  const { subject: bare } = qualify(subject)
  return bare !== '__GLOBAL' && bare !== '__EMPTY'
}

export class SchemaRegistryService {
  private queue: Promise<unknown> = Promise.resolve()
  private readonly parsedCache = new Map<string, ParsedSchema>()
  readonly defaultCompatibility: CompatibilityLevel
  readonly maxSchemaSize: number

  constructor(
    readonly store: RegistryStore,
    options: RegistryOptions = {},
  ) {
    this.defaultCompatibility = options.defaultCompatibility ?? 'BACKWARD'
    this.maxSchemaSize = options.maxSchemaSize ?? 8 * 1024 * 1024
  }

  get state(): RegistryState {
    return this.store.state
  }

  /** Runs a write operation after every earlier one, so that each sees the state the others left. */
  private serialized<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op, op)
    this.queue = run.catch(() => undefined)
    return run
  }

  // --- schemas -------------------------------------------------------------------------------------

  schemaTypes(): SchemaType[] {
    // In the order Confluent lists them.
    return ['JSON', 'PROTOBUF', 'AVRO']
  }

  /** GET /schemas/ids/{id}: the schema, looked up in the subject's context, else the default, else any. */
  schemaById(id: number, subject?: string): { schema: string; schemaType?: SchemaType; references?: SchemaReference[] } {
    const contexts = subject !== undefined ? [contextOf(subject)] : [DEFAULT_CONTEXT, ...[...this.state.contexts].filter((c) => c !== DEFAULT_CONTEXT).sort()]
    for (const context of contexts) {
      const s = this.state.schemaById(context, id)
      if (s) {
        const out: { schema: string; schemaType?: SchemaType; references?: SchemaReference[] } = { schema: s.schema }
        if (s.schemaType !== 'AVRO') out.schemaType = s.schemaType
        if (s.references.length > 0) out.references = s.references
        return out
      }
    }
    throw Errors.schemaNotFound(id)
  }

  /** GET /schemas/ids/{id}/subjects */
  subjectsById(id: number, opts: { subject?: string; deleted?: boolean } = {}): string[] {
    const versions = this.versionsById(id, opts)
    return [...new Set(versions.map((v) => v.subject))]
  }

  /** GET /schemas/ids/{id}/versions */
  versionsById(id: number, opts: { subject?: string; deleted?: boolean } = {}): { subject: string; version: number }[] {
    this.schemaById(id, opts.subject)
    const context = opts.subject !== undefined ? contextOf(opts.subject) : this.contextOfId(id)
    return this.state
      .versionsById(context, id)
      .filter((v) => opts.deleted || !v.deleted)
      .map((v) => ({ subject: v.subject, version: v.version }))
  }

  private contextOfId(id: number): string {
    if (this.state.schemaById(DEFAULT_CONTEXT, id)) return DEFAULT_CONTEXT
    for (const c of [...this.state.contexts].sort()) if (this.state.schemaById(c, id)) return c
    return DEFAULT_CONTEXT
  }

  /** GET /schemas: every live version (or only the latest of each subject). */
  schemas(opts: { subjectPrefix?: string; deleted?: boolean; latestOnly?: boolean } = {}): SchemaEntry[] {
    const out: SchemaEntry[] = []
    for (const subject of this.subjectList({ deleted: opts.deleted, subjectPrefix: opts.subjectPrefix })) {
      const versions = this.state.versions(subject, opts.deleted ?? false)
      for (const v of opts.latestOnly ? versions.slice(-1) : versions) out.push(entry(v))
    }
    return out
  }

  // --- subjects ------------------------------------------------------------------------------------

  private subjectList(opts: { deleted?: boolean; deletedOnly?: boolean; subjectPrefix?: string }): string[] {
    const prefix = opts.subjectPrefix
    const out: string[] = []
    for (const [subject, versions] of this.state.subjects) {
      if (prefix !== undefined && prefix !== ':*:' && !subject.startsWith(prefix)) continue
      const values = [...versions.values()]
      const live = values.some((v) => !v.deleted)
      if (opts.deletedOnly ? values.some((v) => v.deleted) : live || opts.deleted) out.push(subject)
    }
    return out.sort()
  }

  /** GET /subjects */
  subjects(opts: { deleted?: boolean; deletedOnly?: boolean; subjectPrefix?: string } = {}): string[] {
    return this.subjectList(opts)
  }

  /** GET /subjects/{subject}/versions */
  versions(subject: string, opts: { deleted?: boolean; deletedOnly?: boolean } = {}): number[] {
    const all = this.state.versions(subject, true)
    const wanted = all.filter((v) => (opts.deletedOnly ? v.deleted : opts.deleted || !v.deleted))
    if (wanted.length === 0 && !all.some((v) => opts.deleted || opts.deletedOnly || !v.deleted)) throw Errors.subjectNotFound(subject)
    return wanted.map((v) => v.version)
  }

  private findVersion(subject: string, version: number | 'latest', includeDeleted: boolean): SchemaValue {
    const versions = this.state.versions(subject, includeDeleted)
    if (versions.length === 0) throw Errors.subjectNotFound(subject)
    const v = version === 'latest' ? versions[versions.length - 1] : versions.find((x) => x.version === version)
    if (!v) throw Errors.versionNotFound(version)
    return v
  }

  /** GET /subjects/{subject}/versions/{version} */
  version(subject: string, version: string | number, opts: { deleted?: boolean } = {}): SchemaEntry {
    return entry(this.findVersion(subject, parseVersion(version), opts.deleted ?? false))
  }

  /** GET /subjects/{subject}/versions/{version}/referencedby: ids of schemas that reference it. */
  referencedBy(subject: string, version: string | number): number[] {
    const v = this.findVersion(subject, parseVersion(version), true)
    return [...new Set(this.state.referencedBy(v.subject, v.version).filter((r) => !r.deleted).map((r) => r.id))].sort((a, b) => a - b)
  }

  // --- parsing with references ----------------------------------------------------------------------

  private parseReferences(value: unknown): SchemaReference[] {
    if (value === undefined || value === null) return []
    if (!Array.isArray(value)) throw Errors.unprocessable('references must be an array')
    return value.map((r) => {
      if (typeof r !== 'object' || r === null) throw Errors.unprocessable('a reference must be an object')
      const { name, subject, version } = r as Record<string, unknown>
      if (typeof name !== 'string' || typeof subject !== 'string') throw Errors.invalidSchema('A reference needs a name and a subject')
      const v = typeof version === 'number' ? version : typeof version === 'string' ? Number(version) : -1
      if (!Number.isInteger(v)) throw Errors.invalidSchema(`Invalid reference version ${String(version)}`)
      return { name, subject, version: v }
    })
  }

  /** Resolves references to registered schemas (version -1 means latest), recursively. */
  private resolveReferences(refs: SchemaReference[], depth = 0): { refs: SchemaReference[]; resolved: ResolvedReference[] } {
    if (depth > 32) throw Errors.invalidSchema('References nested too deeply')
    const fixed: SchemaReference[] = []
    const resolved: ResolvedReference[] = []
    for (const ref of refs) {
      const versions = this.state.versions(ref.subject, true)
      const target = ref.version === -1 ? versions.filter((v) => !v.deleted).pop() : versions.find((v) => v.version === ref.version)
      if (!target) throw Errors.invalidSchema(`Invalid schema reference ${ref.name}: subject ${ref.subject} version ${ref.version} not found`)
      const inner = this.resolveReferences(target.references, depth + 1)
      fixed.push({ name: ref.name, subject: ref.subject, version: target.version })
      resolved.push({ name: ref.name, subject: ref.subject, version: target.version, schemaType: target.schemaType, schema: target.schema, references: inner.resolved })
    }
    return { refs: fixed, resolved }
  }

  private parseRequest(request: SchemaRequest): { parsed: ParsedSchema; schemaType: SchemaType; refs: SchemaReference[] } {
    if (typeof request !== 'object' || request === null) throw Errors.unprocessable('Request body must be a JSON object')
    if (typeof request.schema !== 'string') throw Errors.invalidSchema('Empty schema')
    if (request.schema.length > this.maxSchemaSize) throw Errors.schemaTooLarge()
    const type = request.schemaType === undefined || request.schemaType === null ? 'AVRO' : String(request.schemaType).toUpperCase()
    if (!(SCHEMA_TYPES as readonly string[]).includes(type)) throw Errors.invalidSchema(`Invalid schema type ${String(request.schemaType)}`)
    const { refs, resolved } = this.resolveReferences(this.parseReferences(request.references))
    const parsed = parseSchema(type as SchemaType, request.schema, refs, resolved)
    return { parsed, schemaType: type as SchemaType, refs }
  }

  /** A stored version parsed (cached by its identity; references resolved as stored). */
  private parsedVersion(v: SchemaValue): ParsedSchema {
    const key = schemaIdentity(v.schemaType, v.schema, v.references)
    let p = this.parsedCache.get(key)
    if (!p) {
      p = parseSchema(v.schemaType, v.schema, v.references, this.resolveReferences(v.references).resolved)
      if (this.parsedCache.size > 10_000) this.parsedCache.clear()
      this.parsedCache.set(key, p)
    }
    return p
  }

  private storedText(parsed: ParsedSchema, normalize: boolean): string {
    return normalize ? parsed.normalized() : parsed.canonical
  }

  /** A live version of the subject holding the same schema, by text or, failing that, by parsed form. */
  private sameSchemaUnder(subject: string, schemaType: SchemaType, text: string, refs: SchemaReference[], normalize: boolean, includeDeleted: boolean): SchemaValue | undefined {
    const candidates = this.state.versions(subject, includeDeleted).reverse()
    const sameRefs = (v: SchemaValue) => JSON.stringify(v.references) === JSON.stringify(refs)
    const exact = candidates.find((v) => v.schemaType === schemaType && v.schema === text && sameRefs(v))
    if (exact) return exact
    for (const v of candidates) {
      if (v.schemaType !== schemaType || !sameRefs(v)) continue
      try {
        if (this.storedText(this.parsedVersion(v), normalize) === text) return v
      } catch {
        // A stored schema this registry cannot parse is not the same schema.
      }
    }
    return undefined
  }

  // --- register / lookup ---------------------------------------------------------------------------

  /** POST /subjects/{subject}/versions */
  register(subject: string, request: SchemaRequest, opts: { normalize?: boolean } = {}): Promise<{ id: number; version: number }> {
    if (!validSubject(subject)) return Promise.reject(Errors.invalidSubject(subject))
    return this.serialized(async () => {
      const mode = this.effectiveMode(subject)
      if (mode === 'READONLY' || mode === 'READONLY_OVERRIDE') {
        throw Errors.operationNotPermitted(`Subject ${subject} in context ${contextOf(subject)} is in read-only mode`)
      }
      const importing = mode === 'IMPORT'
      const { parsed, schemaType, refs } = this.parseRequest(request)
      const normalize = opts.normalize || this.effectiveConfig(subject).normalize === true
      const text = this.storedText(parsed, normalize)
      const context = contextOf(subject)
      const requestedId = typeof request.id === 'number' && request.id > 0 ? request.id : undefined
      const requestedVersion = typeof request.version === 'number' && request.version > 0 ? request.version : undefined
      if (requestedId !== undefined && !importing) throw Errors.operationNotPermitted('Setting the id is only allowed in IMPORT mode')
      if (requestedVersion !== undefined && !importing) {
        // Confluent allows an explicit version outside IMPORT only when it is the next one.
        const all = this.state.versions(subject, true)
        const next = all.length > 0 ? all[all.length - 1]!.version + 1 : 1
        if (requestedVersion !== next) throw Errors.invalidSchema('Version is not one more than previous version')
      }

      const existing = this.sameSchemaUnder(subject, schemaType, text, refs, normalize, false)
      if (existing && (requestedId === undefined || requestedId === existing.id)) return { id: existing.id, version: existing.version }

      const identity = schemaIdentity(schemaType, text, refs)
      let id = this.state.idByIdentity(context, identity)
      if (requestedId !== undefined) {
        const holder = this.state.schemaById(context, requestedId)
        if (holder && schemaIdentity(holder.schemaType, holder.schema, holder.references) !== identity) {
          throw Errors.idDoesNotMatch(`Overwrite new schema with id ${requestedId} is not permitted.`)
        }
        id = requestedId
      }

      const live = this.state.versions(subject, false)
      if (!importing) {
        const level = this.effectiveConfig(subject).compatibilityLevel
        const previous: PreviousSchema[] = live.map((v) => ({ version: v.version, schema: this.parsedVersion(v) }))
        const messages = checkCompatibility(level, parsed, previous)
        if (messages.length > 0) throw Errors.incompatibleSchema(subject, messages)
      }

      const all = this.state.versions(subject, true)
      const version = requestedVersion ?? (all.length > 0 ? all[all.length - 1]!.version + 1 : 1)
      if (importing && all.some((v) => v.version === version)) throw Errors.invalidSchema(`Version ${version} of subject ${subject} already exists`)
      if (id === undefined) id = this.state.maxId(context) + 1
      const records: RegistryRecord[] = []
      if (context !== DEFAULT_CONTEXT && !this.state.contexts.has(context)) records.push({ key: Keys.context('default', context), value: Values.context('default', context) })
      // Soft-deleted earlier versions of the same schema give way to the new one, as Confluent does.
      for (const old of all) {
        if (old.deleted && old.id === id && old.version < version && this.state.referencedBy(old.subject, old.version).length === 0) {
          records.push({ key: Keys.schema(subject, old.version), value: null })
        }
      }
      const value: SchemaValue = { subject, version, id, schemaType, references: refs, schema: text, deleted: false }
      if (request.metadata !== undefined && request.metadata !== null) value.metadata = request.metadata
      if (request.ruleSet !== undefined && request.ruleSet !== null) value.ruleSet = request.ruleSet
      records.push({ key: Keys.schema(subject, version), value: Values.schema(value) })
      await this.store.write(records)
      return { id, version }
    })
  }

  /** POST /subjects/{subject}: the version of the subject holding this schema. */
  lookup(subject: string, request: SchemaRequest, opts: { normalize?: boolean; deleted?: boolean } = {}): SchemaEntry {
    const all = this.state.versions(subject, true)
    if (all.length === 0 || (!opts.deleted && !all.some((v) => !v.deleted))) throw Errors.subjectNotFound(subject)
    const { parsed, schemaType, refs } = this.parseRequest(request)
    const normalize = opts.normalize || this.effectiveConfig(subject).normalize === true
    const found = this.sameSchemaUnder(subject, schemaType, this.storedText(parsed, normalize), refs, normalize, opts.deleted ?? false)
    if (!found) throw Errors.schemaNotFound()
    return entry(found)
  }

  // --- deletes -------------------------------------------------------------------------------------

  /** DELETE /subjects/{subject}/versions/{version} */
  deleteVersion(subject: string, version: string | number, opts: { permanent?: boolean } = {}): Promise<number> {
    const wanted = parseVersion(version)
    return this.serialized(async () => {
      this.checkWritable(subject)
      const all = this.state.versions(subject, true)
      if (all.length === 0) throw Errors.subjectNotFound(subject)
      const live = all.filter((v) => !v.deleted)
      const v = wanted === 'latest' ? (opts.permanent ? all : live)[opts.permanent ? all.length - 1 : live.length - 1] : all.find((x) => x.version === wanted)
      if (!v) throw Errors.versionNotFound(wanted)
      if (!opts.permanent && v.deleted) throw Errors.versionSoftDeleted(subject, v.version)
      if (opts.permanent && !v.deleted) throw Errors.versionNotSoftDeleted(subject, v.version)
      const referrers = this.state.referencedBy(v.subject, v.version).filter((r) => opts.permanent || !r.deleted)
      if (referrers.length > 0) throw Errors.referenceExists(`{magic=1,keytype=SCHEMA,subject=${subject},version=${v.version}}`)
      const records: RegistryRecord[] = []
      if (opts.permanent) {
        records.push({ key: Keys.schema(subject, v.version), value: null })
        // The last version gone: the subject's own config and mode go with it.
        if (all.length === 1) records.push(...this.subjectSettingsTombstones(subject))
      } else {
        records.push({ key: Keys.schema(subject, v.version), value: Values.schema({ ...v, deleted: true }) })
      }
      await this.store.write(records)
      return v.version
    })
  }

  private subjectSettingsTombstones(subject: string): RegistryRecord[] {
    const out: RegistryRecord[] = []
    if (this.state.configs.has(subject)) out.push({ key: Keys.config(subject), value: null })
    if (this.state.modes.has(subject)) out.push({ key: Keys.mode(subject), value: null })
    return out
  }

  /** DELETE /subjects/{subject}: the versions deleted. */
  deleteSubject(subject: string, opts: { permanent?: boolean } = {}): Promise<number[]> {
    return this.serialized(async () => {
      const all = this.state.versions(subject, true)
      if (all.length === 0) throw Errors.subjectNotFound(subject)
      const live = all.filter((v) => !v.deleted)
      if (!opts.permanent && live.length === 0) throw Errors.subjectSoftDeleted(subject)
      if (opts.permanent && live.length > 0) throw Errors.subjectNotSoftDeleted(subject)
      this.checkWritable(subject)
      const targets = opts.permanent ? all : live
      for (const v of targets) {
        const others = this.state.referencedBy(v.subject, v.version).filter((r) => r.subject !== subject && (opts.permanent || !r.deleted))
        if (others.length > 0) throw Errors.referenceExists(`{magic=1,keytype=SCHEMA,subject=${subject},version=${v.version}}`)
      }
      const records: RegistryRecord[] = []
      if (opts.permanent) {
        // Newest first, so that a version referenced by a later one of the same subject goes last.
        for (const v of [...all].reverse()) records.push({ key: Keys.schema(subject, v.version), value: null })
        records.push(...this.subjectSettingsTombstones(subject))
      } else {
        records.push({ key: Keys.deleteSubject(subject), value: Values.deleteSubject({ subject, version: all[all.length - 1]!.version }) })
      }
      await this.store.write(records)
      return targets.map((v) => v.version)
    })
  }

  private checkWritable(subject: string): void {
    const mode = this.effectiveMode(subject)
    if (mode === 'READONLY' || mode === 'READONLY_OVERRIDE') {
      throw Errors.operationNotPermitted(`Subject ${subject} in context ${contextOf(subject)} is in read-only mode`)
    }
  }

  // --- config --------------------------------------------------------------------------------------

  /** The config in force for a subject: its own, else its context's, else the global one, else default. */
  effectiveConfig(subject?: string): ConfigEntry {
    const chain: (string | null)[] = []
    if (subject !== undefined) {
      chain.push(subject)
      const ctxSubject = contextConfigSubject(contextOf(subject))
      if (ctxSubject !== null) chain.push(ctxSubject)
    }
    chain.push(null)
    let level: CompatibilityLevel | undefined
    let normalize: boolean | undefined
    for (const key of chain) {
      const c = this.state.configs.get(key)
      if (!c) continue
      level ??= parseCompatibilityLevel(c.compatibilityLevel)
      normalize ??= c.normalize
    }
    const out: ConfigEntry = { compatibilityLevel: level ?? this.defaultCompatibility }
    if (normalize !== undefined) out.normalize = normalize
    return out
  }

  /** GET /config and GET /config/{subject} */
  config(subject?: string, opts: { defaultToGlobal?: boolean } = {}): ConfigEntry {
    if (subject === undefined || opts.defaultToGlobal) return this.effectiveConfig(subject)
    const c = this.state.configs.get(subject)
    const level = parseCompatibilityLevel(c?.compatibilityLevel)
    if (!c || (!level && c.normalize === undefined)) throw Errors.subjectCompatibilityNotConfigured(subject)
    const out: ConfigEntry = { compatibilityLevel: level ?? this.effectiveConfig(subject).compatibilityLevel }
    if (c.normalize !== undefined) out.normalize = c.normalize
    return out
  }

  /** PUT /config and PUT /config/{subject}: answers {"compatibility": ..., "normalize"?: ...}. */
  setConfig(subject: string | undefined, body: unknown): Promise<{ compatibility?: CompatibilityLevel; normalize?: boolean }> {
    if (typeof body !== 'object' || body === null) return Promise.reject(Errors.unprocessable('Request body must be a JSON object'))
    const b = body as Record<string, unknown>
    const raw = b['compatibility'] ?? b['compatibilityLevel']
    const level = raw === undefined || raw === null ? undefined : parseCompatibilityLevel(raw)
    if (raw !== undefined && raw !== null && !level) return Promise.reject(Errors.invalidCompatibilityLevel())
    if (b['normalize'] !== undefined && b['normalize'] !== null && typeof b['normalize'] !== 'boolean') return Promise.reject(Errors.unprocessable('normalize must be a boolean'))
    if (subject !== undefined && !validSubject(subject) && !/^:\.[^:]*:$/.test(subject)) return Promise.reject(Errors.invalidSubject(subject))
    return this.serialized(async () => {
      const key = subject ?? null
      const previous = this.state.configs.get(key)
      const value = { compatibilityLevel: level ?? previous?.compatibilityLevel, normalize: (b['normalize'] as boolean | undefined) ?? previous?.normalize, extra: previous?.extra ?? {} }
      if (value.compatibilityLevel === undefined && subject === undefined) value.compatibilityLevel = this.defaultCompatibility
      await this.store.write([{ key: Keys.config(key), value: Values.config(key, value) }])
      const out: { compatibility?: CompatibilityLevel; normalize?: boolean } = {}
      const written = parseCompatibilityLevel(value.compatibilityLevel)
      if (written) out.compatibility = written
      if (value.normalize !== undefined) out.normalize = value.normalize
      return out
    })
  }

  /** DELETE /config and DELETE /config/{subject}: the config that was in force before. */
  deleteConfig(subject?: string): Promise<ConfigEntry> {
    return this.serialized(async () => {
      const key = subject ?? null
      const c = this.state.configs.get(key)
      if (!c && subject !== undefined) {
        if (this.state.versions(subject, true).length === 0) throw Errors.subjectNotFound(subject)
        throw Errors.subjectCompatibilityNotConfigured(subject)
      }
      const before = this.effectiveConfig(subject)
      if (c) await this.store.write([{ key: Keys.config(key), value: null }])
      return before
    })
  }

  // --- mode ----------------------------------------------------------------------------------------

  effectiveMode(subject?: string): Mode {
    const chain: (string | null)[] = []
    if (subject !== undefined) {
      chain.push(subject)
      const ctxSubject = contextConfigSubject(contextOf(subject))
      if (ctxSubject !== null) chain.push(ctxSubject)
    }
    chain.push(null)
    for (const key of chain) {
      const m = parseMode(this.state.modes.get(key)?.mode)
      if (m) return m
    }
    return 'READWRITE'
  }

  /** GET /mode and GET /mode/{subject} */
  mode(subject?: string, opts: { defaultToGlobal?: boolean } = {}): { mode: Mode } {
    if (subject === undefined || opts.defaultToGlobal) return { mode: this.effectiveMode(subject) }
    const m = parseMode(this.state.modes.get(subject)?.mode)
    if (!m) throw Errors.subjectModeNotConfigured(subject)
    return { mode: m }
  }

  /** PUT /mode and PUT /mode/{subject} */
  setMode(subject: string | undefined, body: unknown, opts: { force?: boolean } = {}): Promise<{ mode: Mode }> {
    const raw = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['mode'] : undefined
    const mode = parseMode(raw)
    if (!mode) return Promise.reject(Errors.invalidMode())
    return this.serialized(async () => {
      if (mode === 'IMPORT' && !opts.force) {
        // Importing assigns the ids given; only safe where no schema could collide.
        const nonEmpty = subject === undefined ? this.state.subjects.size > 0 : this.state.versions(subject, true).length > 0
        if (nonEmpty) throw Errors.operationNotPermitted('Cannot import since found existing subjects')
      }
      const key = subject ?? null
      await this.store.write([{ key: Keys.mode(key), value: Values.mode(key, { mode }) }])
      return { mode }
    })
  }

  /** DELETE /mode/{subject} */
  deleteMode(subject: string): Promise<{ mode: Mode }> {
    return this.serialized(async () => {
      const m = parseMode(this.state.modes.get(subject)?.mode)
      if (!m) throw Errors.subjectModeNotConfigured(subject)
      await this.store.write([{ key: Keys.mode(subject), value: null }])
      return { mode: m }
    })
  }

  // --- compatibility -------------------------------------------------------------------------------

  /**
   * POST /compatibility/subjects/{subject}/versions/{version} (one version) and
   * POST /compatibility/subjects/{subject}/versions (every version the level looks at).
   */
  testCompatibility(subject: string, version: string | number | undefined, request: SchemaRequest, opts: { verbose?: boolean; normalize?: boolean } = {}): { is_compatible: boolean; messages?: string[] } {
    const { parsed } = this.parseRequest(request)
    const level = this.effectiveConfig(subject).compatibilityLevel
    let previous: PreviousSchema[]
    let effectiveLevel: CompatibilityLevel = level
    if (version === undefined) {
      previous = this.state.versions(subject, false).map((v) => ({ version: v.version, schema: this.parsedVersion(v) }))
    } else {
      const v = this.findVersion(subject, parseVersion(version), false)
      previous = [{ version: v.version, schema: this.parsedVersion(v) }]
      effectiveLevel = level.replace('_TRANSITIVE', '') as CompatibilityLevel
    }
    const messages = checkCompatibility(effectiveLevel, parsed, previous)
    const out: { is_compatible: boolean; messages?: string[] } = { is_compatible: messages.length === 0 }
    if (opts.verbose) out.messages = messages
    return out
  }

  // --- contexts ------------------------------------------------------------------------------------

  /** GET /contexts */
  contexts(): string[] {
    return [...this.state.contexts].sort((a, b) => (a === DEFAULT_CONTEXT ? -1 : b === DEFAULT_CONTEXT ? 1 : a < b ? -1 : a > b ? 1 : 0))
  }

  /** DELETE /contexts/{context}: only an empty one. */
  deleteContext(context: string): Promise<void> {
    return this.serialized(async () => {
      if (context === DEFAULT_CONTEXT) throw Errors.operationNotPermitted('The default context cannot be deleted')
      if ([...this.state.subjects.keys()].some((s) => contextOf(s) === context)) throw Errors.contextNotEmpty(context)
      await this.store.write([{ key: Keys.context('default', context), value: null }])
    })
  }
}

export { RegistryError }
