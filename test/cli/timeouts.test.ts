// Peers that are not a working Kafka broker: one that accepts connections and never answers is bounded by
// request.timeout.ms per request and default.api.timeout.ms per operation (settable as each Kafka tool
// sets client configs), and one that speaks another protocol (HTTP, binary garbage) is named as not a
// Kafka broker at once, rather than as a frame-size error.
import { writeFileSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http'
import { createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Cluster, DEFAULT_API_TIMEOUT_MS, DEFAULT_REQUEST_TIMEOUT_MS } from '../../src/client/cluster-connections.js'
import { NotKafkaBrokerError } from '../../src/client/errors.js'
import { parseArgs } from '../../src/cli/args.js'
import { clientOptions } from '../../src/cli/common.js'
import { oneLine, skein } from './helpers.js'

function listen<S extends Server | HttpServer>(server: S): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)))
}

let silent: Server
let silentPort: number
let http: HttpServer
let httpPort: number
let garbage: Server
let garbagePort: number
const sockets: Socket[] = []
let dir: string

beforeAll(async () => {
  // Accepts, reads and never answers.
  silent = createServer((s) => {
    sockets.push(s)
    s.on('data', () => {})
  })
  silentPort = await listen(silent)
  http = createHttpServer((_req, res) => res.end('hello'))
  httpPort = await listen(http)
  // Answers any request with a well-sized frame that is no Kafka response (wrong correlation id).
  garbage = createServer((s) => {
    sockets.push(s)
    s.once('data', () => s.write(Buffer.from([0, 0, 0, 8, 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4])))
  })
  garbagePort = await listen(garbage)
  dir = mkdtempSync(join(tmpdir(), 'skein-timeouts-'))
})

afterAll(async () => {
  for (const s of sockets) s.destroy()
  await Promise.all([silent, http, garbage].map((srv) => new Promise((r) => srv.close(r))))
  rmSync(dir, { recursive: true, force: true })
})

describe('a peer that accepts and never answers', () => {
  it('has Kafka client defaults: request.timeout.ms 30 s, default.api.timeout.ms 60 s', () => {
    expect(DEFAULT_REQUEST_TIMEOUT_MS).toBe(30_000)
    expect(DEFAULT_API_TIMEOUT_MS).toBe(60_000)
    const cluster = new Cluster({ bootstrapServers: '127.0.0.1:1' })
    expect([cluster.requestTimeoutMs, cluster.apiTimeoutMs]).toEqual([30_000, 60_000])
    const cli = clientOptions(parseArgs({ command: 'skein x', usage: '', summary: '', options: [] }, []), 'x')
    expect([cli.requestTimeoutMs, cli.apiTimeoutMs]).toEqual([30_000, 60_000])
  })

  it('skein topics gives up after default.api.timeout.ms, naming the last request that timed out', async () => {
    const t0 = Date.now()
    const r = await skein(['topics', '--list', '--bootstrap-server', `127.0.0.1:${silentPort}`, '--command-property', 'request.timeout.ms=1000', '--command-property', 'default.api.timeout.ms=2500'])
    expect(r.code).toBe(1)
    expect(oneLine(r.stderr)).toBe(`skein topics: timed out after 2500 ms (default.api.timeout.ms); last error: ApiVersions request to 127.0.0.1:${silentPort} timed out after 1000 ms (request.timeout.ms)`)
    expect(Date.now() - t0).toBeLessThan(8000)
  })

  it('default.api.timeout.ms from --command-config bounds a request still waiting for its 30 s request.timeout.ms', async () => {
    const file = join(dir, 'admin.properties')
    writeFileSync(file, '# admin client configs\ndefault.api.timeout.ms=2000\n')
    for (const cmd of [['topics', '--describe'], ['configs', '--entity-type', 'brokers', '--entity-name', '0', '--describe']]) {
      const t0 = Date.now()
      const r = await skein([...cmd, '--bootstrap-server', `127.0.0.1:${silentPort}`, '--command-config', file])
      expect(r.code, cmd.join(' ')).toBe(1)
      expect(oneLine(r.stderr)).toBe(`skein ${cmd[0]}: timed out after 2000 ms (default.api.timeout.ms)`)
      expect(Date.now() - t0).toBeLessThan(8000)
    }
  })

  it('skein groups uses --timeout as kafka-consumer-groups does; the console tools take consumer and producer properties', async () => {
    const g = await skein(['groups', '--list', '--timeout', '1500', '--bootstrap-server', `127.0.0.1:${silentPort}`])
    expect(g.code).toBe(1)
    expect(oneLine(g.stderr)).toBe('skein groups: timed out after 1500 ms (--timeout)')
    const c = await skein(['consume', '--topic', 't', '--bootstrap-server', `127.0.0.1:${silentPort}`, '--consumer-property', 'default.api.timeout.ms=1500'])
    expect(c.code).toBe(1)
    expect(oneLine(c.stderr)).toBe('skein consume: timed out after 1500 ms (default.api.timeout.ms)')
    // The producer waits for metadata at most max.block.ms, as Kafka's.
    const p = await skein(['produce', '--topic', 't', '--bootstrap-server', `127.0.0.1:${silentPort}`, '--command-property', 'default.api.timeout.ms=1500', '--command-property', 'max.block.ms=1500'], { input: 'a\n' })
    expect(p.code).toBe(1)
    expect(p.stderr).toContain('timed out after 1500 ms (default.api.timeout.ms)')
  })

  it('an unknown admin config is a warning, as in Kafka; a bad value is a usage error', async () => {
    const r = await skein(['topics', '--list', '--bootstrap-server', `127.0.0.1:${silentPort}`, '--command-property', 'default.api.timeout.ms=1000', '--command-property', 'no.such.config=1'])
    expect(r.stderr).toContain("skein topics: warning: the configuration 'no.such.config' was supplied but isn't a known config")
    const bad = await skein(['topics', '--list', '--command-property', 'request.timeout.ms=soon'])
    expect(bad.code).toBe(1)
    expect(oneLine(bad.stderr)).toBe('skein topics: property request.timeout.ms=soon: expected an integer >= 1')
  })
})

describe('a peer that is not a Kafka broker', () => {
  it('an HTTP server is named as such at once', async () => {
    const t0 = Date.now()
    for (const cmd of [['topics', '--list'], ['groups', '--list'], ['consume', '--topic', 't']]) {
      const r = await skein([...cmd, '--bootstrap-server', `127.0.0.1:${httpPort}`])
      expect(r.code, cmd.join(' ')).toBe(1)
      expect(oneLine(r.stderr)).toBe(`skein ${cmd[0]}: 127.0.0.1:${httpPort} is not a Kafka broker: it answered ApiVersions with 'HTTP/1.1 400 Bad Request'`)
    }
    expect(Date.now() - t0).toBeLessThan(10000)
  })

  it('a well-framed answer that is not a Kafka response is named too, in hex', async () => {
    const cluster = new Cluster({ bootstrapServers: `127.0.0.1:${garbagePort}`, retries: 0 })
    try {
      const err = await cluster.refreshMetadata(null).then(() => null, (e: unknown) => e)
      expect(err).toBeInstanceOf(NotKafkaBrokerError)
      expect((err as Error).message).toBe(`127.0.0.1:${garbagePort} is not a Kafka broker: it answered ApiVersions with bytes de ad be ef 01 02 03 04`)
    } finally {
      await cluster.close()
    }
  })
})
