// Every compatibility level for every schema type: a subject history and a candidate, and whether each of
// NONE, BACKWARD, BACKWARD_TRANSITIVE, FORWARD, FORWARD_TRANSITIVE, FULL and FULL_TRANSITIVE accepts it
// (Confluent's "Compatibility types" table: BACKWARD = new reads old, FORWARD = old reads new, FULL =
// both; plain levels look at the latest version, _TRANSITIVE ones at every version).
import { describe, expect, it } from 'vitest'
import { type CompatibilityLevel, type ParsedSchema, AvroSchema, JsonSchema, ProtobufSchema, checkCompatibility } from '../../src/registry/index.js'

const LEVELS: CompatibilityLevel[] = ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE', 'FORWARD', 'FORWARD_TRANSITIVE', 'FULL', 'FULL_TRANSITIVE']

interface Case {
  name: string
  history: string[]
  candidate: string
  /** The levels that accept the candidate. */
  accepted: CompatibilityLevel[]
}

function run(parse: (s: string) => ParsedSchema, cases: Case[]) {
  for (const c of cases) {
    describe(c.name, () => {
      it.each(LEVELS)('%s', (level) => {
        const previous = c.history.map((s, i) => ({ version: i + 1, schema: parse(s) }))
        const messages = checkCompatibility(level, parse(c.candidate), previous)
        expect(messages.length === 0).toBe(c.accepted.includes(level))
      })
    })
  }
}

const ALL = LEVELS
const avroRec = (...fields: unknown[]) => JSON.stringify({ type: 'record', name: 'R', fields })
const f = (name: string, type: unknown, dflt?: unknown) => (dflt === undefined ? { name, type } : { name, type, default: dflt })

describe('Avro at every level', () => {
  run((s) => AvroSchema.parse(s), [
    { name: 'add a field with a default', history: [avroRec(f('a', 'int'))], candidate: avroRec(f('a', 'int'), f('b', 'string', '')), accepted: ALL },
    { name: 'add a field without a default', history: [avroRec(f('a', 'int'))], candidate: avroRec(f('a', 'int'), f('b', 'string')), accepted: ['NONE', 'FORWARD', 'FORWARD_TRANSITIVE'] },
    { name: 'remove a field with a default', history: [avroRec(f('a', 'int'), f('b', 'string', ''))], candidate: avroRec(f('a', 'int')), accepted: ALL },
    { name: 'remove a field without a default', history: [avroRec(f('a', 'int'), f('b', 'string'))], candidate: avroRec(f('a', 'int')), accepted: ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE'] },
    { name: 'promote int to long', history: [avroRec(f('a', 'int'))], candidate: avroRec(f('a', 'long')), accepted: ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE'] },
    {
      name: 'compatible with the latest but not the first version',
      history: [avroRec(f('a', 'string')), avroRec(f('b', 'string', ''))],
      candidate: avroRec(f('b', 'string', ''), f('a', 'int', 0)),
      // Version 1 cannot read the candidate's int "a" either, so FORWARD_TRANSITIVE fails too.
      accepted: ['NONE', 'BACKWARD', 'FORWARD', 'FULL'],
    },
    { name: 'change a field type', history: [avroRec(f('a', 'int'))], candidate: avroRec(f('a', 'string')), accepted: ['NONE'] },
  ])
})

const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => JSON.stringify({ type: 'object', properties, ...extra })
const S = { type: 'string' }

describe('JSON Schema at every level', () => {
  run((s) => JsonSchema.parse(s), [
    { name: 'add an optional property to a closed model', history: [obj({ a: S }, { additionalProperties: false })], candidate: obj({ a: S, b: S }, { additionalProperties: false }), accepted: ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE'] },
    { name: 'add an optional property to an open model', history: [obj({ a: S })], candidate: obj({ a: S, b: S }), accepted: ['NONE', 'FORWARD', 'FORWARD_TRANSITIVE'] },
    { name: 'widen integer to number', history: [JSON.stringify({ type: 'integer' })], candidate: JSON.stringify({ type: 'number' }), accepted: ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE'] },
    { name: 'extend an enum', history: [JSON.stringify({ enum: ['a'] })], candidate: JSON.stringify({ enum: ['a', 'b'] }), accepted: ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE'] },
    { name: 'change only the description', history: [JSON.stringify({ ...S, description: 'x' })], candidate: JSON.stringify({ ...S, description: 'y' }), accepted: ALL },
    {
      name: 'loosen then tighten a bound',
      history: [JSON.stringify({ ...S, maxLength: 5 }), JSON.stringify({ ...S, maxLength: 10 })],
      candidate: JSON.stringify({ ...S, maxLength: 8 }),
      // Version 2 (maxLength 10) reads the candidate's data, version 1 (maxLength 5) does not.
      accepted: ['NONE', 'FORWARD'],
    },
  ])
})

const proto = (body: string) => `syntax = "proto3";\npackage p;\n${body}`

describe('Protobuf at every level', () => {
  run((s) => ProtobufSchema.parse(s), [
    { name: 'add a field', history: [proto('message M { int32 a = 1; }')], candidate: proto('message M { int32 a = 1; string b = 2; }'), accepted: ALL },
    { name: 'change a field to a wire-compatible type', history: [proto('message M { int32 a = 1; }')], candidate: proto('message M { int64 a = 1; }'), accepted: ALL },
    { name: 'change a field to an incompatible type', history: [proto('message M { int32 a = 1; }')], candidate: proto('message M { string a = 1; }'), accepted: ['NONE'] },
    { name: 'remove a message', history: [proto('message M { int32 a = 1; }\nmessage N { int32 b = 1; }')], candidate: proto('message M { int32 a = 1; }'), accepted: ['NONE', 'FORWARD', 'FORWARD_TRANSITIVE'] },
    {
      name: 'incompatible with the first version only',
      history: [proto('message M { string a = 1; }'), proto('message M { int32 b = 2; }')],
      candidate: proto('message M { int32 a = 1; int32 b = 2; }'),
      accepted: ['NONE', 'BACKWARD', 'FORWARD', 'FULL'],
    },
  ])
})
