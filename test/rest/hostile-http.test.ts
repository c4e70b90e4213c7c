// What an HTTP caller can send the REST Proxy and the Schema Registry without hurting them (issue 31):
// JSON nested past the documented depth (400, not a 500 from a stack overflow), request targets past
// 8 KiB (414), and a chunked upload that goes on after its answer (the process survives, the rest is not
// read), and pages of other origins (cross-origin form posts, WebSockets, DNS rebinding). Real sockets: a broker, the registry's HTTP server and the REST Proxy (helpers.ts).
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_JSON_DEPTH } from '../../src/http/index.js'
import { call, sleep, startRest, type RestSetup } from './helpers.js'

let s: RestSetup
beforeAll(async () => {
  s = await startRest({ registry: true })
  const created = await call(s.base, 'POST', `/v3/clusters/${s.clusterId}/topics`, { body: { topic_name: 'deep', partitions_count: 1 } })
  expect(created.status).toBe(201)
}, 60_000)
afterAll(async () => {
  await s?.stop()
})

/** JSON arrays nested n deep. */
const nested = (n: number): string => '['.repeat(n) + ']'.repeat(n)

describe('REST Proxy and Schema Registry under hostile HTTP input', () => {
  it(`answers 400 for JSON nested deeper than ${MAX_JSON_DEPTH} levels, and accepts exactly ${MAX_JSON_DEPTH}`, async () => {
    const v2 = 'application/vnd.kafka.json.v2+json'
    // {"records":[{"value": <n>}]}: three levels around the value.
    let a = await call(s.base, 'POST', '/topics/deep', { body: `{"records":[{"value":${nested(MAX_JSON_DEPTH - 3)}}]}`, contentType: v2 })
    expect(a.status).toBe(200)
    a = await call(s.base, 'POST', '/topics/deep', { body: `{"records":[{"value":${nested(100_000)}}]}`, contentType: v2 })
    expect(a.status).toBe(400)
    expect(a.body.message).toMatch(/nested deeper than 1000 levels/)
    a = await call(s.base, 'POST', `/v3/clusters/${s.clusterId}/topics`, { body: `{"topic_name":"x","configs":${nested(100_000)}}` })
    expect(a.status).toBe(400)
    // v3 streamed produce answers record by record: this record's answer is the 400.
    a = await call(s.base, 'POST', `/v3/clusters/${s.clusterId}/topics/deep/records`, { body: `{"value":{"type":"JSON","data":${nested(100_000)}}}` })
    expect(a.body.error_code).toBe(400)
    expect(a.body.message).toMatch(/nested deeper than 1000 levels/)
    a = await call(s.registryUrl!, 'POST', '/subjects/deep-value/versions', { body: `{"schema":"\\"string\\"","references":${nested(100_000)}}` })
    expect(a.status).toBe(400)
    // Still serving.
    expect((await call(s.base, 'GET', '/topics')).status).toBe(200)
  })

  it('refuses other origins\' pages: a cross-origin text/plain POST, a WebSocket, a rebound Host name', async () => {
    const { port } = new URL(s.base)
    // What a form on http://evil.example can send: text/plain, no preflight.
    let r = await fetch(`${s.base}/v3/clusters/${s.clusterId}/topics`, { method: 'POST', headers: { 'Content-Type': 'text/plain', Origin: 'http://evil.example' }, body: '{"topic_name":"planted"}' })
    expect(r.status).toBe(403)
    r = await fetch(`${s.base}/topics/deep`, { method: 'POST', headers: { 'Content-Type': 'application/vnd.kafka.json.v2+json', Origin: 'http://evil.example' }, body: '{"records":[{"value":1}]}' })
    expect(r.status).toBe(403)
    expect((await call(s.base, 'GET', `/v3/clusters/${s.clusterId}/topics/planted`)).status).toBe(404)
    r = await fetch(`${s.registryUrl}/subjects/planted-value/versions`, { method: 'POST', headers: { 'Content-Type': 'text/plain', Origin: 'http://evil.example' }, body: '{"schema":"\\"string\\""}' })
    expect(r.status).toBe(403)
    // The proxy's own pages (same origin) and clients without Origin still write.
    r = await fetch(`${s.base}/v3/clusters/${s.clusterId}/topics`, { method: 'POST', headers: { 'Content-Type': 'application/json', Origin: s.base }, body: '{"topic_name":"same-origin"}' })
    expect(r.status).toBe(201)
    // DNS rebinding: evil.example resolving to 127.0.0.1 sends Host: evil.example.
    // (fetch will not send another Host: a raw request.)
    const answer = await new Promise<string>((resolve) => {
      const sock = connect(Number(port), '127.0.0.1', () => sock.write(`GET /v3/clusters HTTP/1.1\r\nHost: evil.example:${port}\r\nConnection: close\r\n\r\n`))
      let text = ''
      sock.on('data', (d) => (text += d.toString()))
      sock.on('close', () => resolve(text))
      sock.on('error', () => resolve(text))
    })
    expect(answer).toMatch(/^HTTP\/1.1 403 /)
  })

  it('answers 414 for a request target over 8 KiB', async () => {
    // 16 KiB: one TCP segment on loopback. uWebSockets.js answers 505 itself to a request line that
    // arrives in more than one read (docs/http.md), which a 100 KiB one may, depending on the machine's load.
    let a = await call(s.base, 'GET', `/topics/${'t'.repeat(16 * 1024)}`)
    expect(a.status).toBe(414)
    a = await call(s.registryUrl!, 'GET', `/subjects/${'s'.repeat(20 * 1024)}/versions`)
    expect(a.status).toBe(414)
    // Just under the bound is an ordinary request (an unknown topic).
    a = await call(s.base, 'GET', `/topics/${'t'.repeat(8000)}`)
    expect(a.status).toBe(404)
  })

  it('survives 100 MiB of chunked junk to /v3/.../records, answering 400 and closing instead of reading it all', async () => {
    const { port } = new URL(s.base)
    const sock = connect(Number(port), '127.0.0.1')
    await new Promise<void>((r) => sock.once('connect', () => r()))
    sock.on('error', () => undefined)
    let response = ''
    let closed = false
    sock.on('data', (d) => (response += d.toString()))
    const whenClosed = new Promise<void>((r) => sock.once('close', () => r()))
    void whenClosed.then(() => (closed = true))
    sock.write(`POST /v3/clusters/${s.clusterId}/topics/deep/records HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`)
    const junk = Buffer.alloc(256 * 1024, 0x7e) // '~' is no JSON
    const framed = Buffer.concat([Buffer.from(`${junk.length.toString(16)}\r\n`), junk, Buffer.from('\r\n')])
    let written = 0
    const deadline = Date.now() + 20_000
    while (!closed && written < 100 * 1024 * 1024 && Date.now() < deadline) {
      if (!sock.write(framed)) await Promise.race([new Promise((r) => sock.once('drain', r)), whenClosed, sleep(200)])
      written += junk.length
    }
    await Promise.race([whenClosed, sleep(5000)])
    expect(response).toMatch(/^HTTP\/1.1 200 [\s\S]*"error_code":400/)
    expect(closed).toBe(true)
    expect(written).toBeLessThan(100 * 1024 * 1024)
    expect((await call(s.base, 'GET', '/topics')).status).toBe(200)
  }, 60_000)
})
