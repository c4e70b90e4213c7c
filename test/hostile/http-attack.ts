// The HTTP half of the hostile neighbour (issue 31: one HTTP request could end the broker process, and with
// it Kafka): against the broker's embedded REST Proxy and Schema Registry, over raw sockets, so nothing is
// smoothed over by a client library: chunked junk that goes on after its answer, bodies declared larger
// than the limit, uploads cut off half way, slow request heads (slowloris), URLs past the limit, JSON
// nested 100,000 deep, contradictory framing, other origins' posts and WebSockets, a rebound Host name.
// Each request is counted by what came of it: its status, the connection closed by the server, or
// silence. A 500 (an exception escaped a handler) and silence are failures; the suite asserts none.
import { connect, type Socket } from 'node:net'

export interface HttpAttackSummary {
  requests: number
  /** Answers by status code. */
  statuses: Record<string, number>
  /** Connections the server closed without an answer. */
  closed: number
  /** What should not happen: a 500, or no answer and no close within the wait. */
  failures: string[]
}

interface Target {
  host: string
  port: number
}

function target(base: string): Target {
  const u = new URL(base)
  return { host: u.hostname, port: Number(u.port) }
}

/**
 * Opens a connection, lets `write` send what it likes (it may keep writing until the server answers or
 * closes), and resolves the status of the first answer (null when the server closed without one, 'silent'
 * when nothing happened within waitMs).
 */
function exchange(t: Target, write: (s: Socket, done: () => boolean) => Promise<void> | void, waitMs: number): Promise<number | null | 'silent'> {
  return new Promise((resolve) => {
    const s = connect(t.port, t.host)
    let text = ''
    let settled = false
    const finish = (v: number | null | 'silent'): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      s.destroy()
      resolve(v)
    }
    const timer = setTimeout(() => finish('silent'), waitMs)
    s.on('error', () => undefined)
    s.on('data', (d: Buffer) => {
      text += d.toString('latin1')
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(text)
      if (m !== null && text.includes('\r\n\r\n')) finish(Number(m[1]))
    })
    s.on('close', () => finish(null))
    s.on('connect', () => {
      void Promise.resolve(write(s, () => settled)).catch(() => undefined)
    })
  })
}

/** Writes chunked body chunks of `chunk` bytes until `total` bytes are out or the exchange settled. */
async function pumpChunked(s: Socket, done: () => boolean, total: number, fill: number): Promise<void> {
  const chunk = Buffer.alloc(256 * 1024, fill)
  const framed = Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')])
  for (let sent = 0; sent < total && !done(); sent += chunk.length) {
    if (!s.write(framed)) await new Promise<void>((r) => { s.once('drain', r); s.once('close', r) })
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** The whole HTTP attack; `scale` 1 for the smoke, larger for the full run. */
export async function runHttpAttack(restBase: string, registryBase: string, plan: 'smoke' | 'full'): Promise<HttpAttackSummary> {
  const rest = target(restBase)
  const registry = target(registryBase)
  const summary: HttpAttackSummary = { requests: 0, statuses: {}, closed: 0, failures: [] }
  const waitMs = plan === 'smoke' ? 10_000 : 20_000
  const junkBytes = (plan === 'smoke' ? 20 : 200) * 1024 * 1024
  const clusters = (await (await fetch(`${restBase}/v3/clusters`)).json()) as { data: { cluster_id: string }[] }
  const cluster = clusters.data[0]!.cluster_id
  const head = (t: Target, method: string, path: string, headers: Record<string, string> = {}): string =>
    `${method} ${path} HTTP/1.1\r\nHost: ${t.host}:${t.port}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`

  const count = async (name: string, t: Target, write: (s: Socket, done: () => boolean) => Promise<void> | void): Promise<void> => {
    summary.requests++
    const outcome = await exchange(t, write, waitMs)
    if (outcome === 'silent') summary.failures.push(`${name}: no answer within ${waitMs} ms`)
    else if (outcome === null) summary.closed++
    else {
      summary.statuses[outcome] = (summary.statuses[outcome] ?? 0) + 1
      if (outcome === 500) summary.failures.push(`${name}: 500`)
    }
  }

  const attacks: (() => Promise<void>)[] = [
    // Chunked junk that goes on after its 400 (the crash of issue 31), to the streamed and the buffered produce.
    () => count('chunked junk to v3 records', rest, async (s, done) => {
      s.write(head(rest, 'POST', `/v3/clusters/${cluster}/topics/good/records`, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }))
      await pumpChunked(s, done, junkBytes, 0x7e)
    }),
    () => count('chunked junk to v2 produce', rest, async (s, done) => {
      s.write(head(rest, 'POST', '/topics/good', { 'Content-Type': 'application/vnd.kafka.json.v2+json', 'Transfer-Encoding': 'chunked' }))
      await pumpChunked(s, done, junkBytes, 0x7b)
    }),
    () => count('chunked junk to the registry', registry, async (s, done) => {
      s.write(head(registry, 'POST', '/subjects/hostile-value/versions', { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }))
      await pumpChunked(s, done, junkBytes, 0x5b)
    }),
    // A body declared far past the limit: refused before it is read.
    () => count('1 GiB declared to v2 produce', rest, (s) => void s.write(head(rest, 'POST', '/topics/good', { 'Content-Type': 'application/vnd.kafka.json.v2+json', 'Content-Length': String(2 ** 30) }))),
    () => count('negative Content-Length', rest, (s) => void s.write(head(rest, 'POST', '/topics/good', { 'Content-Type': 'application/vnd.kafka.json.v2+json', 'Content-Length': '-5' }))),
    () => count('Content-Length and chunked together', rest, (s) => void s.write(`${head(rest, 'POST', '/topics/good', { 'Content-Type': 'application/vnd.kafka.json.v2+json', 'Content-Length': '4', 'Transfer-Encoding': 'chunked' })}0\r\n\r\n`)),
    // Past the limits of the request line and of JSON nesting.
    () => count('a 9 KiB URL', rest, (s) => void s.write(head(rest, 'GET', `/topics/${'u'.repeat(9 * 1024)}`))),
    () => count('a 1 MiB URL', rest, (s) => void s.write(head(rest, 'GET', `/topics/${'u'.repeat(1024 * 1024)}`))),
    ...[
      ['v2 produce', rest, '/topics/good', 'application/vnd.kafka.json.v2+json', (d: string) => `{"records":[{"value":${d}}]}`],
      ['v3 topics', rest, `/v3/clusters/${cluster}/topics`, 'application/json', (d: string) => `{"topic_name":"x","configs":${d}}`],
      ['v3 records', rest, `/v3/clusters/${cluster}/topics/good/records`, 'application/json', (d: string) => `{"value":{"type":"JSON","data":${d}}}`],
      ['the registry', registry, '/subjects/hostile-value/versions', 'application/json', (d: string) => `{"schema":"\\"string\\"","references":${d}}`],
    ].map(([name, t, path, type, body]) => () => {
      const depth = 100_000
      const text = (body as (d: string) => string)('['.repeat(depth) + ']'.repeat(depth))
      return count(`JSON 100,000 deep to ${name as string}`, t as Target, (s) => void s.write(head(t as Target, 'POST', path as string, { 'Content-Type': type as string, 'Content-Length': String(Buffer.byteLength(text)) }) + text))
    }),
    // Other origins' pages and a rebound DNS name.
    () => {
      const body = '{"topic_name":"hostile-planted"}'
      return count('a cross-origin text/plain post', rest, (s) => void s.write(head(rest, 'POST', `/v3/clusters/${cluster}/topics`, { 'Content-Type': 'text/plain', Origin: 'http://evil.example', 'Content-Length': String(body.length) }) + body))
    },
    () => count('a cross-origin WebSocket', rest, (s) => void s.write(head(rest, 'GET', '/ws/topics/good', { Upgrade: 'websocket', Connection: 'Upgrade', 'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version': '13', Origin: 'http://evil.example' }))),
    () => count('a rebound Host name', rest, (s) => void s.write(`GET /v3/clusters HTTP/1.1\r\nHost: evil.example:${rest.port}\r\n\r\n`)),
  ]
  // Uploads cut off half way, and slow heads, many at once.
  const cutOff = Array.from({ length: plan === 'smoke' ? 10 : 50 }, (_, i) => async (): Promise<void> => {
    summary.requests++
    const s = connect(rest.port, rest.host)
    s.on('error', () => undefined)
    await new Promise<void>((r) => s.once('connect', () => r()))
    s.write(head(rest, 'POST', i % 2 === 0 ? '/topics/good' : `/v3/clusters/${cluster}/topics/good/records`, { 'Content-Type': i % 2 === 0 ? 'application/vnd.kafka.json.v2+json' : 'application/json', 'Content-Length': String(1024 * 1024) }))
    s.write(Buffer.alloc(64 * 1024, 0x7b))
    await sleep(50)
    s.destroy()
    summary.closed++
  })
  const slowHeads = Array.from({ length: plan === 'smoke' ? 20 : 100 }, () => async (): Promise<void> => {
    summary.requests++
    const s = connect(rest.port, rest.host)
    s.on('error', () => undefined)
    await new Promise<void>((r) => s.once('connect', () => r()))
    const text = head(rest, 'GET', '/v3/clusters')
    for (let i = 0; i < Math.min(text.length - 2, 30) && !s.destroyed; i++) {
      s.write(text[i]!)
      await sleep(100)
    }
    s.destroy()
    summary.closed++
  })
  await Promise.all([...attacks, ...cutOff, ...slowHeads].map((f) => f()))
  return summary
}
