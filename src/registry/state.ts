// The registry's state, rebuilt by replaying the `_schemas` topic from its start and kept current by
// applying each record that follows (Confluent's KafkaStoreMessageHandler semantics):
//   SCHEMA key + value   -> that subject version is (re)written, soft-deleted if "deleted": true;
//   SCHEMA key + null    -> that version is gone (hard delete);
//   CONFIG / MODE        -> subject-level (or global, subject null; or context-level, ":.ctx:") setting,
//                           removed by a null value;
//   DELETE_SUBJECT       -> every version up to "version" is soft-deleted;
//   CLEAR_SUBJECT        -> the subject's versions are dropped (Confluent writes it when clearing);
//   CONTEXT              -> a context exists; NOOP and unknown key types change nothing.
// Ids are per context and only grow: the next id is one more than the largest ever seen in the context,
// hard-deleted ones included. A record that cannot be parsed is counted and skipped, never fatal: the
// topic may hold records of a newer implementation.
import { DEFAULT_CONTEXT, contextOf } from './contexts.js'
import {
  type ConfigValue,
  type ModeValue,
  type RegistryRecord,
  type SchemaValue,
  parseConfigValue,
  parseDeleteSubjectValue,
  parseKey,
  parseModeValue,
  parseSchemaValue,
} from './schemas-topic-records.js'
import type { SchemaReference } from './schema-type/types.js'

export interface StoredSchema {
  schemaType: SchemaValue['schemaType']
  schema: string
  references: SchemaReference[]
}

const idKey = (context: string, id: number) => `${context}\u0000${id}`
const versionKey = (subject: string, version: number) => `${subject}\u0000${version}`
export const referenceKey = (r: SchemaReference) => `${r.subject}\u0000${r.version}`

/** The identity of a schema within a context: type, text and references. */
export function schemaIdentity(schemaType: string, schema: string, references: SchemaReference[]): string {
  return `${schemaType}\u0000${JSON.stringify(references.map((r) => [r.name, r.subject, r.version]))}\u0000${schema}`
}

export class RegistryState {
  /** Subject (qualified) -> version -> value. */
  readonly subjects = new Map<string, Map<number, SchemaValue>>()
  /** Config by subject; null is the global config. */
  readonly configs = new Map<string | null, ConfigValue>()
  readonly modes = new Map<string | null, ModeValue>()
  readonly contexts = new Set<string>([DEFAULT_CONTEXT])
  private readonly maxIds = new Map<string, number>()
  /** (context, id) -> the subject versions that carry it. */
  private readonly idUsers = new Map<string, Set<string>>()
  /** (context, identity) -> id, for "the same schema gets the same id". */
  private readonly idsByIdentity = new Map<string, number>()
  /** (referenced subject, version) -> the subject versions whose schema refers to it. */
  private readonly referrers = new Map<string, Set<string>>()
  /** Records seen and records skipped because they could not be read. */
  applied = 0
  skipped = 0
  lastError?: string

  applyAll(records: Iterable<RegistryRecord>): this {
    for (const r of records) this.apply(r.key, r.value)
    return this
  }

  apply(keyBytes: Uint8Array | string | null, valueBytes: Uint8Array | string | null): void {
    this.applied++
    try {
      if (keyBytes === null) throw new Error('record without key')
      const key = parseKey(keyBytes)
      if (!key) return
      switch (key.keytype) {
        case 'SCHEMA':
          if (valueBytes === null) this.removeVersion(key.subject, key.version)
          else this.putVersion(key.subject, key.version, parseSchemaValue(valueBytes))
          return
        case 'CONFIG':
          if (valueBytes === null) this.configs.delete(key.subject)
          else this.configs.set(key.subject, parseConfigValue(valueBytes))
          return
        case 'MODE':
          if (valueBytes === null) this.modes.delete(key.subject)
          else this.modes.set(key.subject, parseModeValue(valueBytes))
          return
        case 'DELETE_SUBJECT': {
          if (valueBytes === null) return
          const v = parseDeleteSubjectValue(valueBytes)
          const versions = this.subjects.get(v.subject)
          if (versions) for (const [n, sv] of versions) if (n <= v.version && !sv.deleted) versions.set(n, { ...sv, deleted: true })
          return
        }
        case 'CLEAR_SUBJECT':
          if (valueBytes === null) return
          for (const n of [...(this.subjects.get(key.subject)?.keys() ?? [])]) this.removeVersion(key.subject, n)
          return
        case 'CONTEXT':
          if (valueBytes === null) {
            if (key.context !== DEFAULT_CONTEXT) this.contexts.delete(key.context)
          } else this.contexts.add(key.context)
          return
        case 'NOOP':
          return
      }
    } catch (e) {
      this.skipped++
      this.lastError = (e as Error).message
    }
  }

  private putVersion(subject: string, version: number, value: SchemaValue): void {
    // The key is authoritative for where the value lives.
    const v: SchemaValue = { ...value, subject, version }
    const context = contextOf(subject)
    this.contexts.add(context)
    let versions = this.subjects.get(subject)
    if (!versions) this.subjects.set(subject, (versions = new Map()))
    const previous = versions.get(version)
    if (previous) this.unindex(previous)
    versions.set(version, v)
    this.maxIds.set(context, Math.max(this.maxIds.get(context) ?? 0, v.id))
    const users = this.idUsers.get(idKey(context, v.id)) ?? new Set()
    users.add(versionKey(subject, version))
    this.idUsers.set(idKey(context, v.id), users)
    this.idsByIdentity.set(`${context}\u0000${schemaIdentity(v.schemaType, v.schema, v.references)}`, v.id)
    for (const r of v.references) {
      const set = this.referrers.get(referenceKey(r)) ?? new Set()
      set.add(versionKey(subject, version))
      this.referrers.set(referenceKey(r), set)
    }
  }

  private unindex(v: SchemaValue): void {
    const context = contextOf(v.subject)
    const users = this.idUsers.get(idKey(context, v.id))
    users?.delete(versionKey(v.subject, v.version))
    if (users && users.size === 0) {
      this.idUsers.delete(idKey(context, v.id))
      this.idsByIdentity.delete(`${context}\u0000${schemaIdentity(v.schemaType, v.schema, v.references)}`)
    }
    for (const r of v.references) this.referrers.get(referenceKey(r))?.delete(versionKey(v.subject, v.version))
  }

  private removeVersion(subject: string, version: number): void {
    const versions = this.subjects.get(subject)
    const previous = versions?.get(version)
    if (!versions || !previous) return
    this.unindex(previous)
    versions.delete(version)
    if (versions.size === 0) this.subjects.delete(subject)
  }

  // --- queries ---------------------------------------------------------------------------------------

  /** The largest id ever seen in a context (0 if none): ids are assigned above it. */
  maxId(context: string): number {
    return this.maxIds.get(context) ?? 0
  }

  /** The schema an id designates in a context, from any subject version that still carries it. */
  schemaById(context: string, id: number): StoredSchema | undefined {
    const users = this.idUsers.get(idKey(context, id))
    if (!users) return undefined
    for (const user of users) {
      const sep = user.lastIndexOf('\u0000')
      const v = this.subjects.get(user.slice(0, sep))?.get(Number(user.slice(sep + 1)))
      if (v) return { schemaType: v.schemaType, schema: v.schema, references: v.references }
    }
    return undefined
  }

  /** Subject versions carrying an id in a context, sorted by subject then version. */
  versionsById(context: string, id: number): SchemaValue[] {
    const out: SchemaValue[] = []
    for (const user of this.idUsers.get(idKey(context, id)) ?? []) {
      const sep = user.lastIndexOf('\u0000')
      const v = this.subjects.get(user.slice(0, sep))?.get(Number(user.slice(sep + 1)))
      if (v) out.push(v)
    }
    return out.sort((a, b) => (a.subject < b.subject ? -1 : a.subject > b.subject ? 1 : a.version - b.version))
  }

  idByIdentity(context: string, identity: string): number | undefined {
    return this.idsByIdentity.get(`${context}\u0000${identity}`)
  }

  /** Versions of a subject in ascending order, soft-deleted ones included only if asked. */
  versions(subject: string, includeDeleted: boolean): SchemaValue[] {
    const versions = this.subjects.get(subject)
    if (!versions) return []
    return [...versions.values()].filter((v) => includeDeleted || !v.deleted).sort((a, b) => a.version - b.version)
  }

  /** Subject versions that reference the given one. */
  referencedBy(subject: string, version: number): SchemaValue[] {
    const out: SchemaValue[] = []
    for (const user of this.referrers.get(referenceKey({ name: '', subject, version })) ?? []) {
      const sep = user.lastIndexOf('\u0000')
      const v = this.subjects.get(user.slice(0, sep))?.get(Number(user.slice(sep + 1)))
      if (v) out.push(v)
    }
    return out
  }

  /** Every id in use in a context, ascending. */
  ids(context: string): number[] {
    const prefix = `${context}\u0000`
    const out: number[] = []
    for (const k of this.idUsers.keys()) if (k.startsWith(prefix)) out.push(Number(k.slice(prefix.length)))
    return out.sort((a, b) => a - b)
  }
}
