// The registry's HTTP front (src/registry/http.ts) as clients see it: Confluent's content type on every
// answer, raw schema text from the /schema endpoints, 404/405 from the route table, 415 for a body in a
// type Confluent does not read, 413 past the body limit, and percent-encoded subjects.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryStore, SchemaRegistryService, handle } from '../../src/registry/index.js'
import { startRegistryHttp } from '../../src/registry/http.js'
import type { HttpServer } from '../../src/http/index.js'

let server: HttpServer
let base: string
beforeAll(async () => {
  const svc = new SchemaRegistryService(new MemoryStore())
  server = await startRegistryHttp((req) => handle(svc, req), { listeners: ['http://127.0.0.1:0'], maxBodyBytes: 64 * 1024 })
  base = server.listeners[0]!.url
})
afterAll(async () => {
  await server.close()
})

const CT = 'application/vnd.schemaregistry.v1+json'
const schema = JSON.stringify({ type: 'record', name: 'R', fields: [{ name: 'a', type: 'int' }] })

describe('registry over HTTP', () => {
  it('registers, fetches by id and serves the raw schema text', async () => {
    let r = await fetch(`${base}/subjects/a%2Fb-value/versions`, { method: 'POST', headers: { 'Content-Type': CT }, body: JSON.stringify({ schema }) })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe(CT)
    const { id } = (await r.json()) as { id: number }
    r = await fetch(`${base}/subjects`)
    expect(await r.json()).toEqual(['a/b-value'])
    r = await fetch(`${base}/schemas/ids/${id}/schema`)
    expect(await r.text()).toBe(schema)
    r = await fetch(`${base}/subjects/a%2Fb-value/versions/latest?deleted=false`)
    expect(((await r.json()) as { version: number }).version).toBe(1)
  })

  it('answers errors in Confluent\'s shape', async () => {
    let r = await fetch(`${base}/nothing/here`)
    expect(r.status).toBe(404)
    expect(((await r.json()) as { error_code: number }).error_code).toBe(404)
    r = await fetch(`${base}/subjects`, { method: 'POST', headers: { 'Content-Type': CT }, body: '{}' })
    expect(r.status).toBe(405)
    r = await fetch(`${base}/subjects/x/versions`, { method: 'POST', headers: { 'Content-Type': 'text/xml' }, body: '<schema/>' })
    expect(r.status).toBe(415)
    expect(await r.json()).toEqual({ error_code: 415, message: 'HTTP 415 Unsupported Media Type' })
    r = await fetch(`${base}/subjects/x/versions`, { method: 'POST', headers: { 'Content-Type': CT }, body: '{"schema":' })
    expect(r.status).toBe(400)
    r = await fetch(`${base}/subjects/x/versions`, { method: 'POST', headers: { 'Content-Type': CT }, body: JSON.stringify({ schema: 'x'.repeat(70 * 1024) }) })
    expect(r.status).toBe(413)
    expect(((await r.json()) as { error_code: number }).error_code).toBe(413)
  })
})
