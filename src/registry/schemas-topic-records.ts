// The `_schemas` topic's record formats, as Confluent Schema Registry writes them (storage.SchemaKey,
// ConfigKey, ModeKey, DeleteSubjectKey, ClearSubjectKey, ContextKey, NoopKey and their values), so that a
// topic written by one implementation can be read by the other. Keys are compact JSON in Confluent's
// property order, byte for byte ({"keytype":"SCHEMA","subject":"s","version":1,"magic":1}): a compacted
// topic only collapses records whose key bytes are equal. The global config and mode use subject null.
// Values are JSON; a null value (tombstone) deletes a SCHEMA version, a CONFIG or a MODE.
import type { SchemaReference, SchemaType } from './schema-type/types.js'

export const SCHEMAS_TOPIC = '_schemas'

export type KeyType = 'SCHEMA' | 'CONFIG' | 'MODE' | 'NOOP' | 'DELETE_SUBJECT' | 'CLEAR_SUBJECT' | 'CONTEXT'

export type RegistryKey =
  | { keytype: 'SCHEMA'; subject: string; version: number; magic: number }
  | { keytype: 'CONFIG' | 'MODE'; subject: string | null; magic: number }
  | { keytype: 'DELETE_SUBJECT' | 'CLEAR_SUBJECT'; subject: string; magic: number }
  | { keytype: 'NOOP'; magic: number }
  | { keytype: 'CONTEXT'; tenant: string; context: string; magic: number }

export interface SchemaValue {
  subject: string
  version: number
  id: number
  schemaType: SchemaType
  references: SchemaReference[]
  schema: string
  deleted: boolean
  /** Confluent's data contract fields, kept as they were read so they survive a rewrite. */
  metadata?: unknown
  ruleSet?: unknown
}

export interface ConfigValue {
  compatibilityLevel?: string
  normalize?: boolean
  /** Every other property Confluent may have written (alias, validateFields, defaultMetadata, ...). */
  extra: Record<string, unknown>
}

export interface ModeValue {
  mode: string
}

export interface DeleteSubjectValue {
  subject: string
  version: number
}

// --- keys -------------------------------------------------------------------------------------------

export const Keys = {
  schema: (subject: string, version: number) => `{"keytype":"SCHEMA","subject":${JSON.stringify(subject)},"version":${version},"magic":1}`,
  config: (subject: string | null) => `{"keytype":"CONFIG","subject":${JSON.stringify(subject)},"magic":0}`,
  mode: (subject: string | null) => `{"keytype":"MODE","subject":${JSON.stringify(subject)},"magic":0}`,
  deleteSubject: (subject: string) => `{"keytype":"DELETE_SUBJECT","subject":${JSON.stringify(subject)},"magic":0}`,
  clearSubject: (subject: string) => `{"keytype":"CLEAR_SUBJECT","subject":${JSON.stringify(subject)},"magic":0}`,
  context: (tenant: string, context: string) => `{"keytype":"CONTEXT","tenant":${JSON.stringify(tenant)},"context":${JSON.stringify(context)},"magic":0}`,
  noop: () => '{"keytype":"NOOP","magic":0}',
}

// --- values -----------------------------------------------------------------------------------------

export const Values = {
  schema(v: SchemaValue): string {
    const o: Record<string, unknown> = { subject: v.subject, version: v.version, id: v.id }
    // Confluent leaves schemaType out for Avro, and readers default to AVRO.
    if (v.schemaType !== 'AVRO') o['schemaType'] = v.schemaType
    if (v.references.length > 0) o['references'] = v.references.map((r) => ({ name: r.name, subject: r.subject, version: r.version }))
    if (v.metadata !== undefined) o['metadata'] = v.metadata
    if (v.ruleSet !== undefined) o['ruleSet'] = v.ruleSet
    o['schema'] = v.schema
    o['deleted'] = v.deleted
    return JSON.stringify(o)
  },
  config(subject: string | null, v: ConfigValue): string {
    const o: Record<string, unknown> = {}
    if (subject !== null) o['subject'] = subject
    Object.assign(o, v.extra)
    if (v.normalize !== undefined) o['normalize'] = v.normalize
    if (v.compatibilityLevel !== undefined) o['compatibilityLevel'] = v.compatibilityLevel
    return JSON.stringify(o)
  },
  mode(subject: string | null, v: ModeValue): string {
    return JSON.stringify(subject !== null ? { subject, mode: v.mode } : { mode: v.mode })
  },
  deleteSubject: (v: DeleteSubjectValue) => JSON.stringify({ subject: v.subject, version: v.version }),
  clearSubject: (subject: string) => JSON.stringify({ subject }),
  context: (tenant: string, context: string) => JSON.stringify({ tenant, context }),
  noop: () => '{}',
}

export class RecordFormatError extends Error {}

function text(b: Uint8Array | string): string {
  return typeof b === 'string' ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8')
}

function object(b: Uint8Array | string, what: string): Record<string, unknown> {
  let v: unknown
  try {
    v = JSON.parse(text(b))
  } catch (e) {
    throw new RecordFormatError(`${what} is not JSON: ${(e as Error).message}`)
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new RecordFormatError(`${what} is not a JSON object`)
  return v as Record<string, unknown>
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)
const int = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) ? v : undefined)

/** Parses a key; undefined for key types this registry does not know (Confluent's ASSOC, future ones). */
export function parseKey(bytes: Uint8Array | string): RegistryKey | undefined {
  const o = object(bytes, 'key')
  const magic = int(o['magic']) ?? 0
  switch (o['keytype']) {
    case 'SCHEMA': {
      const subject = str(o['subject'])
      const version = int(o['version'])
      if (subject === undefined || version === undefined) throw new RecordFormatError('SCHEMA key without subject or version')
      if (magic !== 0 && magic !== 1) throw new RecordFormatError(`Can't deserialize schema for the magic byte ${magic}`)
      return { keytype: 'SCHEMA', subject, version, magic }
    }
    case 'CONFIG':
    case 'MODE':
      return { keytype: o['keytype'], subject: str(o['subject']) ?? null, magic }
    case 'DELETE_SUBJECT':
    case 'CLEAR_SUBJECT': {
      const subject = str(o['subject'])
      if (subject === undefined) throw new RecordFormatError(`${o['keytype']} key without subject`)
      return { keytype: o['keytype'], subject, magic }
    }
    case 'NOOP':
      return { keytype: 'NOOP', magic }
    case 'CONTEXT':
      return { keytype: 'CONTEXT', tenant: str(o['tenant']) ?? 'default', context: str(o['context']) ?? '', magic }
    default:
      return undefined
  }
}

function references(v: unknown): SchemaReference[] {
  if (!Array.isArray(v)) return []
  return v.flatMap((r) => {
    if (typeof r !== 'object' || r === null) return []
    const ref = r as Record<string, unknown>
    const name = str(ref['name'])
    const subject = str(ref['subject'])
    const version = int(ref['version'])
    return name !== undefined && subject !== undefined && version !== undefined ? [{ name, subject, version }] : []
  })
}

export function parseSchemaValue(bytes: Uint8Array | string): SchemaValue {
  const o = object(bytes, 'SCHEMA value')
  const subject = str(o['subject'])
  const version = int(o['version'])
  const id = int(o['id'])
  const schema = str(o['schema'])
  if (subject === undefined || version === undefined || id === undefined || schema === undefined) {
    throw new RecordFormatError('SCHEMA value without subject, version, id or schema')
  }
  const type = str(o['schemaType']) ?? 'AVRO'
  if (type !== 'AVRO' && type !== 'JSON' && type !== 'PROTOBUF') throw new RecordFormatError(`unknown schemaType ${type}`)
  const value: SchemaValue = { subject, version, id, schemaType: type, references: references(o['references']), schema, deleted: o['deleted'] === true }
  if (o['metadata'] !== undefined && o['metadata'] !== null) value.metadata = o['metadata']
  if (o['ruleSet'] !== undefined && o['ruleSet'] !== null) value.ruleSet = o['ruleSet']
  return value
}

export function parseConfigValue(bytes: Uint8Array | string): ConfigValue {
  const o = object(bytes, 'CONFIG value')
  const extra: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(o)) if (k !== 'subject' && k !== 'compatibilityLevel' && k !== 'normalize' && k !== 'offset' && k !== 'ts' && v !== null) extra[k] = v
  return { compatibilityLevel: str(o['compatibilityLevel']), normalize: typeof o['normalize'] === 'boolean' ? o['normalize'] : undefined, extra }
}

export function parseModeValue(bytes: Uint8Array | string): ModeValue {
  const mode = str(object(bytes, 'MODE value')['mode'])
  if (mode === undefined) throw new RecordFormatError('MODE value without mode')
  return { mode }
}

export function parseDeleteSubjectValue(bytes: Uint8Array | string): DeleteSubjectValue {
  const o = object(bytes, 'DELETE_SUBJECT value')
  const subject = str(o['subject'])
  const version = int(o['version'])
  if (subject === undefined || version === undefined) throw new RecordFormatError('DELETE_SUBJECT value without subject or version')
  return { subject, version }
}

/** A record of the topic as the registry writes it: key and value as strings (value null = tombstone). */
export interface RegistryRecord {
  key: string
  value: string | null
}
