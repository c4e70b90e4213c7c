// The registry's REST API through its route table (no HTTP server yet): Confluent's paths, bodies and
// error codes, id assignment (global, stable for the same schema, never reused), soft and hard deletes,
// config and mode, compatibility levels (latest and transitive), references, contexts, and a restart that
// replays the log into the same answers.
import { beforeEach, describe, expect, it } from 'vitest'
import { MemoryStore, SchemaRegistryService, handle, serializeBody } from '../../src/registry/index.js'

let store: MemoryStore
let svc: SchemaRegistryService

async function call(method: string, path: string, body?: unknown, query: Record<string, string> = {}) {
  const res = await handle(svc, { method, path, query, body: body === undefined ? undefined : JSON.stringify(body) })
  return res as { status: number; body: any }
}

const record = (fields: unknown[]) => JSON.stringify({ type: 'record', name: 'User', namespace: 'com.acme', fields })
const V1 = record([{ name: 'name', type: 'string' }])
const V2 = record([{ name: 'name', type: 'string' }, { name: 'age', type: 'int', default: 0 }])
const V3_BAD = record([{ name: 'name', type: 'string' }, { name: 'email', type: 'string' }])

beforeEach(() => {
  store = new MemoryStore()
  svc = new SchemaRegistryService(store)
})

describe('registering and reading schemas', () => {
  it('assigns ids globally and returns the same id for the same schema', async () => {
    expect(await call('POST', '/subjects/users-value/versions', { schema: V1 })).toEqual({ status: 200, body: { id: 1 } })
    // Same schema, differently formatted: same id and no new version.
    expect((await call('POST', '/subjects/users-value/versions', { schema: JSON.stringify(JSON.parse(V1), null, 2) })).body).toEqual({ id: 1 })
    expect((await call('GET', '/subjects/users-value/versions')).body).toEqual([1])
    // Same schema under another subject: the same id, version 1 there.
    expect((await call('POST', '/subjects/other-value/versions', { schema: V1 })).body).toEqual({ id: 1 })
    expect((await call('POST', '/subjects/users-value/versions', { schema: V2 })).body).toEqual({ id: 2 })
    expect((await call('GET', '/subjects')).body).toEqual(['other-value', 'users-value'])
    expect((await call('GET', '/subjects', undefined, { offset: '1', limit: '5' })).body).toEqual(['users-value'])
    expect((await call('GET', '/subjects/users-value/versions', undefined, { limit: '1' })).body).toEqual([1])
    expect((await call('GET', '/schemas/ids/1/subjects')).body).toEqual(['other-value', 'users-value'])
    expect((await call('GET', '/schemas/ids/1/versions')).body).toEqual([
      { subject: 'other-value', version: 1 },
      { subject: 'users-value', version: 1 },
    ])
  })

  it('serves versions, schemas by id and raw schema text', async () => {
    await call('POST', '/subjects/users-value/versions', { schema: V1 })
    await call('POST', '/subjects/users-value/versions', { schema: V2 })
    const latest = await call('GET', '/subjects/users-value/versions/latest')
    expect(latest.body).toEqual({ subject: 'users-value', version: 2, id: 2, schema: JSON.stringify(JSON.parse(V2)) })
    expect((await call('GET', '/subjects/users-value/versions/1')).body.id).toBe(1)
    expect((await call('GET', '/subjects/users-value/versions/-1')).body.version).toBe(2)
    expect((await call('GET', '/schemas/ids/2')).body).toEqual({ schema: JSON.stringify(JSON.parse(V2)) })
    const raw = await call('GET', '/schemas/ids/2/schema')
    expect(serializeBody(raw.body)).toBe(JSON.stringify(JSON.parse(V2)))
    expect(serializeBody((await call('GET', '/subjects/users-value/versions/1/schema')).body)).toBe(JSON.stringify(JSON.parse(V1)))
    expect((await call('GET', '/schemas/types')).body).toEqual(['JSON', 'PROTOBUF', 'AVRO'])
    expect((await call('GET', '/schemas')).body.map((s: { id: number }) => s.id)).toEqual([1, 2])
  })

  it('looks a schema up under a subject (POST /subjects/{subject})', async () => {
    await call('POST', '/subjects/users-value/versions', { schema: V1 })
    await call('POST', '/subjects/users-value/versions', { schema: V2 })
    expect((await call('POST', '/subjects/users-value', { schema: V1 })).body).toEqual({ subject: 'users-value', version: 1, id: 1, schema: JSON.stringify(JSON.parse(V1)) })
    expect(await call('POST', '/subjects/users-value', { schema: '"string"' })).toEqual({ status: 404, body: { error_code: 40403, message: 'Schema not found' } })
    expect((await call('POST', '/subjects/nobody', { schema: V1 })).body.error_code).toBe(40401)
  })

  it('answers with Confluent’s error codes', async () => {
    await call('POST', '/subjects/users-value/versions', { schema: V1 })
    expect(await call('GET', '/subjects/nobody/versions')).toEqual({ status: 404, body: { error_code: 40401, message: "Subject 'nobody' not found." } })
    expect(await call('GET', '/subjects/users-value/versions/9')).toEqual({ status: 404, body: { error_code: 40402, message: 'Version 9 not found.' } })
    expect((await call('GET', '/subjects/users-value/versions/zero')).body.error_code).toBe(42202)
    expect((await call('GET', '/subjects/users-value/versions/0')).status).toBe(422)
    expect(await call('GET', '/schemas/ids/99')).toEqual({ status: 404, body: { error_code: 40403, message: 'Schema 99 not found' } })
    const invalid = await call('POST', '/subjects/users-value/versions', { schema: '{"type":"recrod"}' })
    expect(invalid.status).toBe(422)
    expect(invalid.body.error_code).toBe(42201)
    expect((await call('POST', '/subjects/users-value/versions', { schema: '{}', schemaType: 'XML' })).body.error_code).toBe(42201)
    expect((await call('POST', '/subjects/users-value/versions', 'not an object')).status).toBe(422)
    const malformed = await handle(svc, { method: 'POST', path: '/subjects/users-value/versions', body: '{"schema":' })
    expect(malformed.status).toBe(400)
    expect((await call('GET', '/nowhere')).status).toBe(404)
    expect((await call('PATCH', '/subjects')).status).toBe(405)
  })

  it('refuses an incompatible schema with 409 and says why', async () => {
    await call('POST', '/subjects/users-value/versions', { schema: V1 })
    const res = await call('POST', '/subjects/users-value/versions', { schema: V3_BAD })
    expect(res.status).toBe(409)
    expect(res.body.error_code).toBe(40901)
    expect(res.body.message).toContain('Schema being registered is incompatible with an earlier schema for subject "users-value"')
    expect(res.body.message).toContain("READER_FIELD_MISSING_DEFAULT_VALUE")
    expect(res.body.message).toContain('{oldSchemaVersion: 1}')
    // The failed registration left nothing behind.
    expect((await call('GET', '/subjects/users-value/versions')).body).toEqual([1])
  })
})

describe('compatibility levels', () => {
  const A = record([{ name: 'a', type: 'string' }])
  const AB = record([{ name: 'a', type: 'string' }, { name: 'b', type: 'string' }])
  const ABdefault = record([{ name: 'a', type: 'string' }, { name: 'b', type: 'string', default: '' }])
  const B = record([{ name: 'b', type: 'string', default: '' }])

  it('checks BACKWARD against the latest version only, BACKWARD_TRANSITIVE against all', async () => {
    await call('PUT', '/config/s', { compatibility: 'NONE' })
    await call('POST', '/subjects/s/versions', { schema: A })
    await call('POST', '/subjects/s/versions', { schema: B })
    await call('PUT', '/config/s', { compatibility: 'BACKWARD' })
    // Reads B's data (b has a default and a is absent in the reader), but not A's: fine for BACKWARD.
    const next = record([{ name: 'b', type: 'string', default: '' }, { name: 'c', type: 'int', default: 1 }])
    expect((await call('POST', '/compatibility/subjects/s/versions', { schema: next })).body).toEqual({ is_compatible: true })
    // Reads version 2's data but not version 1's (a was a string there).
    const aInt = record([{ name: 'b', type: 'string', default: '' }, { name: 'a', type: 'int', default: 0 }])
    expect((await call('POST', '/compatibility/subjects/s/versions', { schema: aInt })).body).toEqual({ is_compatible: true })
    await call('PUT', '/config/s', { compatibility: 'BACKWARD_TRANSITIVE' })
    const againstAll = await call('POST', '/compatibility/subjects/s/versions', { schema: aInt }, { verbose: 'true' })
    expect(againstAll.body.is_compatible).toBe(false)
    expect(againstAll.body.messages.join()).toContain('TYPE_MISMATCH')
    expect(againstAll.body.messages).toContain('{oldSchemaVersion: 1}')
    // Against one named version only.
    expect((await call('POST', '/compatibility/subjects/s/versions/1', { schema: A })).body).toEqual({ is_compatible: true })
  })

  it('checks FORWARD the other way round and FULL both ways', async () => {
    await call('PUT', '/config/f', { compatibility: 'FORWARD' })
    await call('POST', '/subjects/f/versions', { schema: A })
    // Old readers can read data with an added field (ignored) but not data lacking a field they need.
    expect((await call('POST', '/compatibility/subjects/f/versions/latest', { schema: AB })).body.is_compatible).toBe(true)
    expect((await call('POST', '/compatibility/subjects/f/versions/latest', { schema: B })).body.is_compatible).toBe(false)
    await call('PUT', '/config/f', { compatibility: 'FULL' })
    expect((await call('POST', '/compatibility/subjects/f/versions/latest', { schema: AB })).body.is_compatible).toBe(false)
    expect((await call('POST', '/compatibility/subjects/f/versions/latest', { schema: ABdefault })).body.is_compatible).toBe(true)
    const verbose = await call('POST', '/compatibility/subjects/f/versions/latest', { schema: AB }, { verbose: 'true' })
    expect(verbose.body.messages[0]).toContain("in the new schema has no default value and is missing in the old schema")
  })

  it('lets NONE register anything and refuses a different schema type', async () => {
    await call('POST', '/subjects/t/versions', { schema: A })
    const json = await call('POST', '/subjects/t/versions', { schema: '{"type":"object"}', schemaType: 'JSON' })
    expect(json.status).toBe(409)
    expect(json.body.message).toContain('Incompatible because of different schema type')
    await call('PUT', '/config/t', { compatibility: 'NONE' })
    expect((await call('POST', '/subjects/t/versions', { schema: '{"type":"object"}', schemaType: 'JSON' })).body).toEqual({ id: 2 })
  })
})

describe('deletes', () => {
  it('soft-deletes then hard-deletes versions and subjects with Confluent’s codes', async () => {
    await call('POST', '/subjects/s/versions', { schema: '"string"' })
    await call('PUT', '/config/s', { compatibility: 'NONE' })
    await call('POST', '/subjects/s/versions', { schema: '"int"' })
    expect((await call('DELETE', '/subjects/s/versions/1', undefined, { permanent: 'true' })).body.error_code).toBe(40407)
    expect((await call('DELETE', '/subjects/s/versions/1')).body).toBe(1)
    expect((await call('DELETE', '/subjects/s/versions/1')).body.error_code).toBe(40406)
    expect((await call('GET', '/subjects/s/versions')).body).toEqual([2])
    expect((await call('GET', '/subjects/s/versions', undefined, { deleted: 'true' })).body).toEqual([1, 2])
    expect((await call('GET', '/subjects/s/versions/1')).body.error_code).toBe(40402)
    expect((await call('GET', '/subjects/s/versions/1', undefined, { deleted: 'true' })).body.version).toBe(1)
    // A soft-deleted version's id still resolves (consumers may hold data written with it).
    expect((await call('GET', '/schemas/ids/1')).status).toBe(200)
    expect((await call('DELETE', '/subjects/s/versions/1', undefined, { permanent: 'true' })).body).toBe(1)
    expect((await call('GET', '/schemas/ids/1')).status).toBe(404)

    expect((await call('DELETE', '/subjects/s', undefined, { permanent: 'true' })).body.error_code).toBe(40405)
    expect((await call('DELETE', '/subjects/s')).body).toEqual([2])
    expect((await call('DELETE', '/subjects/s')).body.error_code).toBe(40404)
    expect((await call('GET', '/subjects')).body).toEqual([])
    expect((await call('GET', '/subjects', undefined, { deleted: 'true' })).body).toEqual(['s'])
    expect((await call('DELETE', '/subjects/s', undefined, { permanent: 'true' })).body).toEqual([2])
    expect((await call('GET', '/subjects/s/versions', undefined, { deleted: 'true' })).body.error_code).toBe(40401)
    // The subject's own config went with it.
    expect((await call('GET', '/config/s')).body.error_code).toBe(40408)
  })

  it('never reuses an id, even after every schema was hard-deleted', async () => {
    await call('POST', '/subjects/s/versions', { schema: '"string"' })
    await call('DELETE', '/subjects/s')
    await call('DELETE', '/subjects/s', undefined, { permanent: 'true' })
    expect((await call('POST', '/subjects/s/versions', { schema: '"long"' })).body).toEqual({ id: 2 })
  })

  it('re-registering a soft-deleted schema gives a new version with the old id', async () => {
    await call('POST', '/subjects/s/versions', { schema: '"string"' })
    await call('DELETE', '/subjects/s/versions/1')
    expect((await call('POST', '/subjects/s/versions', { schema: '"string"' })).body).toEqual({ id: 1 })
    expect((await call('GET', '/subjects/s/versions', undefined, { deleted: 'true' })).body).toEqual([2])
  })
})

describe('references', () => {
  const address = JSON.stringify({ type: 'record', name: 'Address', namespace: 'com.acme', fields: [{ name: 'street', type: 'string' }] })
  const person = JSON.stringify({ type: 'record', name: 'Person', namespace: 'com.acme', fields: [{ name: 'home', type: 'com.acme.Address' }] })

  it('registers a schema that references another and protects the referenced one', async () => {
    expect((await call('POST', '/subjects/address/versions', { schema: address })).body).toEqual({ id: 1 })
    const refs = [{ name: 'com.acme.Address', subject: 'address', version: 1 }]
    expect((await call('POST', '/subjects/person/versions', { schema: person, references: refs })).body).toEqual({ id: 2 })
    expect((await call('GET', '/subjects/person/versions/1')).body.references).toEqual(refs)
    expect((await call('GET', '/schemas/ids/2')).body.references).toEqual(refs)
    expect((await call('GET', '/subjects/address/versions/1/referencedby')).body).toEqual([2])
    expect((await call('DELETE', '/subjects/address/versions/1')).body.error_code).toBe(42206)
    expect((await call('POST', '/subjects/person/versions', { schema: person })).body.error_code).toBe(42201)
    expect((await call('POST', '/subjects/p2/versions', { schema: person, references: [{ name: 'x', subject: 'address', version: 7 }] })).body.error_code).toBe(42201)
  })

  it('resolves JSON Schema and Protobuf references too', async () => {
    const addr = JSON.stringify({ type: 'object', properties: { street: { type: 'string' } } })
    await call('POST', '/subjects/addr-json/versions', { schema: addr, schemaType: 'JSON' })
    const user = JSON.stringify({ type: 'object', properties: { home: { $ref: 'addr.json' } } })
    expect((await call('POST', '/subjects/user-json/versions', { schema: user, schemaType: 'JSON', references: [{ name: 'addr.json', subject: 'addr-json', version: 1 }] })).status).toBe(200)
    await call('POST', '/subjects/common-proto/versions', { schema: 'syntax = "proto3"; package common; message Money { int64 units = 1; }', schemaType: 'PROTOBUF' })
    const order = 'syntax = "proto3"; package shop; import "common.proto"; message Order { common.Money total = 1; }'
    const res = await call('POST', '/subjects/order-proto/versions', { schema: order, schemaType: 'PROTOBUF', references: [{ name: 'common.proto', subject: 'common-proto', version: -1 }] })
    expect(res.status).toBe(200)
    // Version -1 (latest) is pinned to the version it resolved to.
    expect((await call('GET', '/subjects/order-proto/versions/1')).body.references).toEqual([{ name: 'common.proto', subject: 'common-proto', version: 1 }])
  })
})

describe('config and mode', () => {
  it('reads and writes global and subject compatibility', async () => {
    expect((await call('GET', '/config')).body).toEqual({ compatibilityLevel: 'BACKWARD' })
    expect((await call('PUT', '/config', { compatibility: 'full' })).body).toEqual({ compatibility: 'FULL' })
    expect((await call('GET', '/config')).body).toEqual({ compatibilityLevel: 'FULL' })
    expect((await call('GET', '/config/s')).body.error_code).toBe(40408)
    expect((await call('GET', '/config/s', undefined, { defaultToGlobal: 'true' })).body).toEqual({ compatibilityLevel: 'FULL' })
    expect((await call('PUT', '/config/s', { compatibility: 'FORWARD_TRANSITIVE', normalize: true })).body).toEqual({ compatibility: 'FORWARD_TRANSITIVE', normalize: true })
    expect((await call('GET', '/config/s')).body).toEqual({ compatibilityLevel: 'FORWARD_TRANSITIVE', normalize: true })
    expect((await call('PUT', '/config/s', { compatibility: 'SIDEWAYS' })).body.error_code).toBe(42203)
    expect((await call('DELETE', '/config/s')).body).toEqual({ compatibilityLevel: 'FORWARD_TRANSITIVE', normalize: true })
    expect((await call('GET', '/config/s')).body.error_code).toBe(40408)
    expect((await call('DELETE', '/config')).body).toEqual({ compatibilityLevel: 'FULL' })
    expect((await call('GET', '/config')).body).toEqual({ compatibilityLevel: 'BACKWARD' })
  })

  it('normalize makes equivalent Avro schemas the same', async () => {
    await call('PUT', '/config/n', { normalize: true })
    const a = JSON.stringify({ type: 'record', name: 'R', namespace: 'x', fields: [{ name: 'f', type: 'int', 'b-prop': 1, 'a-prop': 2 }] })
    const b = JSON.stringify({ type: 'record', name: 'x.R', fields: [{ name: 'f', type: 'int', 'a-prop': 2, 'b-prop': 1 }] })
    expect((await call('POST', '/subjects/n/versions', { schema: a })).body).toEqual({ id: 1 })
    expect((await call('POST', '/subjects/n/versions', { schema: b })).body).toEqual({ id: 1 })
    expect((await call('POST', '/subjects/plain/versions', { schema: b })).body).toEqual({ id: 2 })
  })

  it('READONLY refuses writes; IMPORT keeps given ids and versions', async () => {
    expect((await call('GET', '/mode')).body).toEqual({ mode: 'READWRITE' })
    expect((await call('PUT', '/mode/locked', { mode: 'READONLY' })).body).toEqual({ mode: 'READONLY' })
    const refused = await call('POST', '/subjects/locked/versions', { schema: '"string"' })
    expect(refused.status).toBe(422)
    expect(refused.body.error_code).toBe(42205)
    expect((await call('PUT', '/mode', { mode: 'BOGUS' })).body.error_code).toBe(42204)
    expect((await call('PUT', '/mode', { mode: 'IMPORT' })).body).toEqual({ mode: 'IMPORT' })
    expect((await call('POST', '/subjects/imported/versions', { schema: '"string"', id: 100, version: 3 })).body).toEqual({ id: 100 })
    expect((await call('GET', '/subjects/imported/versions')).body).toEqual([3])
    expect((await call('POST', '/subjects/other/versions', { schema: '"int"', id: 100, version: 1 })).body.error_code).toBe(42207)
    await call('PUT', '/mode', { mode: 'READWRITE' })
    // Ids continue above the largest imported one.
    expect((await call('POST', '/subjects/after/versions', { schema: '"boolean"' })).body).toEqual({ id: 101 })
    expect((await call('POST', '/subjects/x/versions', { schema: '"int"', id: 5 })).body.error_code).toBe(42205)
    expect((await call('PUT', '/mode', { mode: 'IMPORT' })).body.error_code).toBe(42205)
    expect((await call('DELETE', '/mode/locked')).body).toEqual({ mode: 'READONLY' })
    expect((await call('GET', '/mode/locked')).body.error_code).toBe(40409)
  })
})

describe('contexts', () => {
  it('keeps a separate id space per context', async () => {
    expect((await call('POST', '/subjects/a/versions', { schema: '"string"' })).body).toEqual({ id: 1 })
    expect((await call('POST', '/subjects/:.staging:a/versions', { schema: '"int"' })).body).toEqual({ id: 1 })
    expect((await call('GET', '/contexts')).body).toEqual(['.', '.staging'])
    expect((await call('GET', '/schemas/ids/1', undefined, { subject: ':.staging:a' })).body).toEqual({ schema: '"int"' })
    expect((await call('GET', '/schemas/ids/1')).body).toEqual({ schema: '"string"' })
    expect((await call('GET', '/subjects', undefined, { subjectPrefix: ':.staging:' })).body).toEqual([':.staging:a'])
    expect((await call('DELETE', '/contexts/.staging')).body.error_code).toBe(42211)
  })
})

describe('restart', () => {
  it('rebuilds the same registry by replaying its log', async () => {
    await call('POST', '/subjects/a/versions', { schema: V1 })
    await call('POST', '/subjects/a/versions', { schema: V2 })
    await call('PUT', '/config/a', { compatibility: 'FULL' })
    await call('DELETE', '/subjects/a/versions/1')
    await call('POST', '/subjects/b/versions', { schema: '"string"' })
    const before = [await call('GET', '/subjects'), await call('GET', '/subjects/a/versions', undefined, { deleted: 'true' }), await call('GET', '/config/a'), await call('GET', '/schemas/ids/3')]
    svc = new SchemaRegistryService(new MemoryStore(store.log))
    const after = [await call('GET', '/subjects'), await call('GET', '/subjects/a/versions', undefined, { deleted: 'true' }), await call('GET', '/config/a'), await call('GET', '/schemas/ids/3')]
    expect(after).toEqual(before)
    expect((await call('POST', '/subjects/c/versions', { schema: '"long"' })).body).toEqual({ id: 4 })
  })

  it('serializes concurrent registrations: distinct schemas get distinct ids, equal ones the same', async () => {
    const schemas = Array.from({ length: 20 }, (_, i) => JSON.stringify({ type: 'enum', name: `E${i % 10}`, symbols: ['A'] }))
    const results = await Promise.all(schemas.map((schema, i) => call('POST', `/subjects/s${i}/versions`, { schema }).then((r) => r.body.id as number)))
    expect(new Set(results).size).toBe(10)
    results.forEach((id, i) => expect(id).toBe(results[i % 10]))
    expect(Math.max(...results)).toBe(10)
  })
})
