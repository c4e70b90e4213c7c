// Compatibility levels over a subject's history, as Confluent's CompatibilityChecker and
// SchemaValidatorBuilder apply them: BACKWARD (the new schema reads data written with the previous one),
// FORWARD (the previous schema reads data written with the new one), FULL (both), each against the latest
// version or, for the _TRANSITIVE levels, against every earlier version (newest first, stopping at the
// first that fails), and NONE. Messages are Confluent's: the incompatibilities with "new"/"old" filled
// in, then "{oldSchemaVersion: n}" and "{oldSchema: '...'}".
import type { CompatibilityLevel, ParsedSchema } from './schema-type/types.js'

export interface PreviousSchema {
  version: number
  schema: ParsedSchema
}

const MAX_SCHEMA_IN_MESSAGE = 10 * 1024

function describeOld(previous: PreviousSchema): string[] {
  const text = previous.schema.canonical
  return [
    `{oldSchemaVersion: ${previous.version}}`,
    text.length <= MAX_SCHEMA_IN_MESSAGE ? `{oldSchema: '${text}'}` : `{oldSchema: <truncated> '${text.slice(0, MAX_SCHEMA_IN_MESSAGE)}...'}`,
  ]
}

function checkPair(direction: 'BACKWARD' | 'FORWARD' | 'FULL', candidate: ParsedSchema, previous: PreviousSchema): string[] {
  if (candidate.schemaType !== previous.schema.schemaType) return ['Incompatible because of different schema type']
  const messages: string[] = []
  if (direction === 'FORWARD' || direction === 'FULL') {
    const found = previous.schema.checkCanRead(candidate).map((i) => i.render('old', 'new'))
    messages.push(...found)
    if (found.length > 0 && direction === 'FORWARD') messages.push(...describeOld(previous))
  }
  if (direction === 'BACKWARD' || direction === 'FULL') {
    const found = candidate.checkCanRead(previous.schema).map((i) => i.render('new', 'old'))
    messages.push(...found)
    if (found.length > 0) messages.push(...describeOld(previous))
  }
  return messages
}

/**
 * Checks `candidate` against a subject's live versions (oldest first) at a level; an empty list means
 * compatible.
 */
export function checkCompatibility(level: CompatibilityLevel, candidate: ParsedSchema, previous: PreviousSchema[]): string[] {
  if (level === 'NONE' || previous.length === 0) return []
  const direction = level.replace('_TRANSITIVE', '') as 'BACKWARD' | 'FORWARD' | 'FULL'
  const against = level.endsWith('_TRANSITIVE') ? [...previous].reverse() : [previous[previous.length - 1]!]
  for (const p of against) {
    const messages = checkPair(direction, candidate, p)
    if (messages.length > 0) return messages
  }
  return []
}
