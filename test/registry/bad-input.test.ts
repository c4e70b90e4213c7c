// Bad input gets an error code, never a crash or a hang: malformed bodies, wrong field types, schemas that
// are deeply nested or recursive, huge schemas, odd paths and subjects.
import { describe, expect, it } from 'vitest'
import { MemoryStore, SchemaRegistryService, handle } from '../../src/registry/index.js'

const svc = new SchemaRegistryService(new MemoryStore(), { maxSchemaSize: 64 * 1024 })
const call = async (method: string, path: string, body?: string) => (await handle(svc, { method, path, body })) as { status: number; body: any }

describe('bad input', () => {
  it.each([
    ['an empty body', ''],
    ['a JSON array', '[]'],
    ['a number', '42'],
    ['schema not a string', '{"schema": 5}'],
    ['references not an array', '{"schema":"\\"int\\"","references":"x"}'],
    ['a reference without a name', '{"schema":"\\"int\\"","references":[{"subject":"a","version":1}]}'],
    ['a schemaType of the wrong type', '{"schema":"\\"int\\"","schemaType":{}}'],
    ['an Avro schema that is not JSON', '{"schema":"{type: record"}'],
    ['a protobuf schema that does not parse', '{"schema":"message {","schemaType":"PROTOBUF"}'],
    ['a JSON schema that is a string', '{"schema":"\\"hello\\"","schemaType":"JSON"}'],
  ])('refuses %s with a 4xx', async (_what, body) => {
    const res = await call('POST', '/subjects/bad/versions', body)
    expect(res.status).toBeGreaterThanOrEqual(400)
    expect(res.status).toBeLessThan(500)
    expect(typeof res.body.error_code).toBe('number')
  })

  it('refuses a schema over the size limit', async () => {
    const big = JSON.stringify({ type: 'enum', name: 'E', symbols: Array.from({ length: 20000 }, (_, i) => `S${i}`) })
    expect((await call('POST', '/subjects/big/versions', JSON.stringify({ schema: big }))).body.error_code).toBe(42209)
  })

  it('survives deeply nested schemas', async () => {
    let avro: unknown = 'int'
    for (let i = 0; i < 3000; i++) avro = { type: 'array', items: avro }
    const a = await call('POST', '/subjects/deep-avro/versions', JSON.stringify({ schema: JSON.stringify(avro) }))
    expect(a.status).toBeLessThan(500)
    expect(typeof a.body.error_code === 'number' || typeof a.body.id === 'number').toBe(true)
    let json: unknown = { type: 'string' }
    for (let i = 0; i < 3000; i++) json = { type: 'array', items: json }
    const j = await call('POST', '/subjects/deep-json/versions', JSON.stringify({ schema: JSON.stringify(json), schemaType: 'JSON' }))
    expect(j.status).toBeLessThan(500)
    expect(typeof j.body.error_code === 'number' || typeof j.body.id === 'number').toBe(true)
  })

  it('compares recursive JSON schemas with many branches in bounded time', async () => {
    const defs: Record<string, unknown> = {}
    for (let i = 0; i < 8; i++) defs[`n${i}`] = { oneOf: [...Array.from({ length: 8 }, (_, k): Record<string, string> => ({ $ref: `#/definitions/n${(i + k) % 8}` })), { type: 'string' }] }
    const schema = JSON.stringify({ definitions: defs, $ref: '#/definitions/n0' })
    await call('PUT', '/config/rec', JSON.stringify({ compatibility: 'FULL' }))
    expect((await call('POST', '/subjects/rec/versions', JSON.stringify({ schema, schemaType: 'JSON' }))).status).toBe(200)
    const started = Date.now()
    const again = await call('POST', '/compatibility/subjects/rec/versions/latest', JSON.stringify({ schema: schema.replace('"string"', '"integer"'), schemaType: 'JSON' }))
    expect(again.status).toBe(200)
    expect(typeof again.body.is_compatible).toBe('boolean')
    expect(Date.now() - started).toBeLessThan(20_000)
  })

  it('answers odd paths and subjects', async () => {
    expect((await call('GET', '/subjects/%E0%A4%A/versions')).status).toBe(404)
    expect((await call('GET', '/schemas/ids/abc')).body.error_code).toBe(40403)
    expect((await call('GET', '/schemas/ids/99999999999999999999')).body.error_code).toBe(40403)
    expect((await call('POST', '/subjects/%00bad/versions', '{"schema":"\\"int\\""}')).body.error_code).toBe(42208)
    expect((await call('GET', '/subjects/a%2Fb/versions')).body.error_code).toBe(40401)
  })
})
