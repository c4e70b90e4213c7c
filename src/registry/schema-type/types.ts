// Vocabulary shared by the registry's schema types, state machine and REST routes: Confluent's schema
// types, references, compatibility levels and modes, and the interface every parsed schema offers.

export const SCHEMA_TYPES = ['AVRO', 'JSON', 'PROTOBUF'] as const
export type SchemaType = (typeof SCHEMA_TYPES)[number]

/** A schema reference as Confluent writes it: the name the schema imports, resolved to subject + version. */
export interface SchemaReference {
  name: string
  subject: string
  version: number
}

/** A referenced schema fetched from the registry, with its own references resolved in turn. */
export interface ResolvedReference {
  name: string
  subject: string
  version: number
  schemaType: SchemaType
  schema: string
  references: ResolvedReference[]
}

export const COMPATIBILITY_LEVELS = [
  'NONE',
  'BACKWARD',
  'BACKWARD_TRANSITIVE',
  'FORWARD',
  'FORWARD_TRANSITIVE',
  'FULL',
  'FULL_TRANSITIVE',
] as const
export type CompatibilityLevel = (typeof COMPATIBILITY_LEVELS)[number]

export function parseCompatibilityLevel(value: unknown): CompatibilityLevel | undefined {
  if (typeof value !== 'string') return undefined
  const upper = value.toUpperCase()
  return (COMPATIBILITY_LEVELS as readonly string[]).includes(upper) ? (upper as CompatibilityLevel) : undefined
}

// FORWARD is Confluent's newer mode for schema linking; accepted and stored, treated like READWRITE here.
export const MODES = ['READWRITE', 'READONLY', 'READONLY_OVERRIDE', 'IMPORT', 'FORWARD'] as const
export type Mode = (typeof MODES)[number]

export function parseMode(value: unknown): Mode | undefined {
  if (typeof value !== 'string') return undefined
  const upper = value.toUpperCase()
  return (MODES as readonly string[]).includes(upper) ? (upper as Mode) : undefined
}

/**
 * One reason a schema pair is incompatible. `description` may hold two `%s` placeholders that
 * Confluent fills with the reader's and the writer's label ("new"/"old"), as SchemaValidatorBuilder does.
 */
export interface Incompatibility {
  errorType: string
  path: string
  description: string
  additionalInfo?: string
  /** The message as Confluent renders it, given the labels of the reader and writer schema. */
  render(readerLabel: string, writerLabel: string): string
}

export interface ParsedSchema {
  readonly schemaType: SchemaType
  /** The string the registry stores and returns: the schema re-serialized in a stable form. */
  readonly canonical: string
  readonly references: SchemaReference[]
  /** The form used when `normalize` is on: equivalent schemas written differently compare equal. */
  normalized(): string
  /**
   * Whether this schema, as the reader, can read data written with `writer`. An empty list means
   * compatible; otherwise one entry per incompatibility found.
   */
  checkCanRead(writer: ParsedSchema): Incompatibility[]
}

/** Fills `%s` placeholders in order, as Java's String.format does for the two labels. */
export function fillLabels(template: string, first: string, second: string): string {
  let n = 0
  return template.replace(/%s/g, () => (n++ === 0 ? first : second))
}
