// Hostile input on raw sockets: bad frame sizes, truncated and abandoned frames, unknown APIs and
// versions, garbage bodies, random bytes, hostile legacy message sets (Produce v0-2) and limits (Fetch
// v0-3), clients vanishing mid-request and mid-response, slow loris.
// After each the broker must still serve a normal client, and a child-process broker's memory must stay
// bounded while hundreds of connections announce 100 MiB requests they never send.
import { randomBytes } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { readdirSync, readlinkSync, rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as ApiVersions from '../../src/protocol/messages/18-api-versions.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import { decodeProduceResponse, encodeProduceRequest } from '../../src/protocol/messages/00-produce.gen.js'
import { decodeFetchResponse, encodeFetchRequest } from '../../src/protocol/messages/01-fetch.gen.js'
import { buildLegacyMessageSet, encodeLegacyMessages } from '../../src/protocol/records/legacy-message-set.js'
import * as DeleteTopics from '../../src/protocol/messages/20-delete-topics.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { API_KEYS } from '../../src/protocol/api-keys.gen.js'
import { readResponseHeader } from '../../src/protocol/header.js'
import { batchOf, decodeAllRecords, RawClient, recordsBuffer, startBrokerProcess, startTestBroker, type TestBroker } from '../harness/index.js'

const MAX_REQUEST = 1024 * 1024
const IDLE_MS = 600
let tb: TestBroker
let healthRound = 0

function int32(n: number): Buffer {
  const b = Buffer.alloc(4)
  b.writeInt32BE(n, 0)
  return b
}

/** A normal client still gets ApiVersions, Metadata and a produce/fetch round trip. */
async function expectHealthy(host = tb.host, port = tb.port): Promise<void> {
  const c = await RawClient.connect(host, port)
  try {
    const av = await c.apiVersions()
    expect(av.errorCode).toBe(0)
    expect(av.apiKeys.some((k) => k.apiKey === 0)).toBe(true)
    const md = await c.metadata(['health'])
    expect(md.topics[0]!.errorCode).toBe(0)
    const value = Buffer.from(`health-${healthRound++}-${randomBytes(4).toString('hex')}`)
    const produced = await c.produce('health', 0, batchOf([{ key: null, value }]))
    expect(produced.errorCode).toBe(0)
    const fetched = await c.fetch('health', 0, Number(produced.baseOffset))
    expect(fetched.errorCode).toBe(0)
    expect(decodeAllRecords(recordsBuffer(fetched))[0]!.value).toEqual(value)
  } finally {
    c.close()
  }
}

/** Sends bytes on a fresh connection and reports whether the broker closed it within the time. */
async function sendAndExpectClose(data: Buffer, withinMs = 3000): Promise<RawClient> {
  const c = await RawClient.connect(tb.host, tb.port)
  await c.write(data)
  expect(await c.waitClosed(withinMs)).toBe(true)
  return c
}

function header(apiKey: number, apiVersion: number, correlationId = 7): Buffer {
  // Request header v1 (classic client id): enough for every non-flexible request.
  const clientId = Buffer.from('hostile')
  const b = Buffer.alloc(10 + clientId.length)
  b.writeInt16BE(apiKey, 0)
  b.writeInt16BE(apiVersion, 2)
  b.writeInt32BE(correlationId, 4)
  b.writeInt16BE(clientId.length, 8)
  clientId.copy(b, 10)
  return b
}

function framed(body: Buffer): Buffer {
  return Buffer.concat([int32(body.length), body])
}

beforeAll(async () => {
  tb = await startTestBroker([`socket.request.max.bytes=${MAX_REQUEST}`, `connections.max.idle.ms=${IDLE_MS}`, 'auto.create.topics.enable=true'])
  const c = await RawClient.connect(tb.host, tb.port)
  expect((await c.createTopic('health', 1)).errorCode).toBe(0)
  expect((await c.createTopic('big', 1)).errorCode).toBe(0)
  c.close()
  await expectHealthy()
})

afterAll(async () => {
  await tb?.stop()
})

describe('frame sizes', () => {
  it('closes the connection on a negative size', async () => {
    await sendAndExpectClose(int32(-1))
    await sendAndExpectClose(int32(-2147483648))
    await expectHealthy()
  })

  it('closes the connection on a zero size', async () => {
    await sendAndExpectClose(int32(0))
    await expectHealthy()
  })

  it('closes the connection on a size above socket.request.max.bytes without waiting for the body', async () => {
    await sendAndExpectClose(int32(MAX_REQUEST + 1))
    await sendAndExpectClose(int32(0x7fffffff))
    await expectHealthy()
  })

  it('accepts a size of exactly socket.request.max.bytes (then the body is judged on its own)', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    await c.write(int32(MAX_REQUEST))
    expect(await c.waitClosed(300)).toBe(false)
    c.close()
    await expectHealthy()
  })

  it('survives a truncated frame followed by a disconnect', async () => {
    for (let i = 0; i < 20; i++) {
      const c = await RawClient.connect(tb.host, tb.port)
      await c.write(Buffer.concat([int32(500), header(3, 9), randomBytes(i)]))
      c.close()
    }
    await expectHealthy()
  })

  it('closes a slow-loris connection holding a partial frame after connections.max.idle.ms', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    const started = Date.now()
    await c.write(Buffer.concat([int32(200), header(18, 3).subarray(0, 5)]))
    expect(await c.waitClosed(IDLE_MS * 5)).toBe(true)
    const elapsed = Date.now() - started
    expect(elapsed).toBeGreaterThanOrEqual(IDLE_MS - 50)
    await expectHealthy()
  })
})

describe('APIs and versions', () => {
  it('closes the connection on an unknown API key', async () => {
    // Keys no spec defines, and keys the specs define but this broker does not serve (taken from its own
    // ApiVersions answer, so the test keeps meaning "unserved" as handlers are added).
    const c = await RawClient.connect(tb.host, tb.port)
    const served = new Set((await c.apiVersions()).apiKeys.map((k) => k.apiKey))
    c.close()
    // Specs may define APIs not served yet (the share-group codecs came before their handlers); when
    // every one is served, only keys no spec defines remain.
    const unserved = API_KEYS.map((k) => k.apiKey).filter((k) => !served.has(k))
    for (const key of [999, -1, 32767, ...unserved.slice(0, 1), ...unserved.slice(-1)]) {
      expect(served.has(key)).toBe(false)
      await sendAndExpectClose(framed(Buffer.concat([header(key, 0), randomBytes(8)])))
    }
    await expectHealthy()
  })

  it('answers ApiVersions at an unsupported version in the v0 format with UNSUPPORTED_VERSION and its range', async () => {
    for (const version of [4, 9, 32767]) {
      const c = await RawClient.connect(tb.host, tb.port)
      const correlationId = 4242 + version
      // A v9 body is unknown; the broker must not try to parse it. Send some junk after the header.
      const response = c.waitFor(correlationId)
      await c.write(framed(Buffer.concat([header(18, version, correlationId), randomBytes(16)])))
      const frame = await response
      const r = new Reader(frame)
      expect(readResponseHeader(r, 18, 0).correlationId).toBe(correlationId)
      const res = ApiVersions.decodeApiVersionsResponse(r, 0)
      expect(res.errorCode).toBe(ErrorCode.UNSUPPORTED_VERSION)
      expect(res.apiKeys).toEqual([expect.objectContaining({ apiKey: 18, minVersion: 0, maxVersion: 3 })])
      expect(r.remaining).toBe(0)
      // The client may retry on the same connection at a supported version.
      expect((await c.apiVersions(3)).errorCode).toBe(0)
      c.close()
    }
    await expectHealthy()
  })

  it('closes the connection for other APIs at versions out of range', async () => {
    const cases: [number, number][] = [
      [3, 13], // Metadata above v12 (served v0-12)
      [3, 99],
      [1, 18], // Fetch above v17
      [0, 12],
      [2, 6], // ListOffsets above v5
      [19, 99],
    ]
    for (const [key, version] of cases) {
      const c = await sendAndExpectClose(framed(Buffer.concat([header(key, version), Buffer.alloc(64)])))
      expect(c.received).toEqual([])
    }
    await expectHealthy()
  })

  it('closes the connection on garbage after a valid header, and ignores trailing bytes after a valid body', async () => {
    // Metadata v4 with a topic array claiming 2^31-1 entries: must fail fast, not allocate.
    const hugeArray = Buffer.concat([header(3, 4), int32(0x7fffffff), Buffer.from([1])])
    await sendAndExpectClose(framed(hugeArray))
    // A string length pointing past the frame.
    const longString = Buffer.concat([header(3, 4), int32(1), Buffer.from([0x7f, 0xff]), Buffer.from('abc')])
    await sendAndExpectClose(framed(longString))
    // Flexible request header (v2) whose tagged-field section claims more fields than there are bytes.
    const flexible = Buffer.concat([header(3, 9).subarray(0, 8), Buffer.from([0, 0]), Buffer.from([0x7f])])
    await sendAndExpectClose(framed(flexible))
    for (let i = 0; i < 30; i++) {
      const c = await RawClient.connect(tb.host, tb.port)
      await c.write(framed(Buffer.concat([header(3, 1 + (i % 9), 100 + i), randomBytes(1 + i * 7)])))
      // Either a decodable accident answered with a response, or the connection closed: never a hang
      // with the socket still open and silent.
      const closed = await c.waitClosed(2000)
      if (!closed) expect(c.received).toEqual([100 + i])
      c.close()
    }
    // A complete Metadata v1 body (topics = null) with junk after it is answered; Kafka ignores the tail.
    const c = await RawClient.connect(tb.host, tb.port)
    const w = c.frame(3, 1, (wr) => Metadata.encodeMetadataRequest(wr, Metadata.createMetadataRequest({ topics: null }), 1))
    const withTail = Buffer.concat([w.bytes, randomBytes(32)])
    withTail.writeInt32BE(withTail.length - 4, 0)
    const response = c.waitFor(w.correlationId)
    await c.write(withTail)
    const res = new Reader(await response)
    readResponseHeader(res, 3, 1)
    const md = Metadata.decodeMetadataResponse(res, 1)
    expect(md.brokers.map((b) => b.port)).toEqual([tb.port])
    c.close()
    await expectHealthy()
  })

  it('survives random bytes, framed and unframed', async () => {
    for (let i = 0; i < 60; i++) {
      const c = await RawClient.connect(tb.host, tb.port)
      const body = randomBytes(8 + ((i * 37) % 300))
      await c.write(i % 2 === 0 ? framed(body) : body)
      const closed = await c.waitClosed(i % 2 === 0 ? 2000 : 50)
      if (!closed && i % 2 === 0) expect(c.received.length).toBeLessThanOrEqual(1)
      c.close()
    }
    await expectHealthy()
  })
})

describe('hostile legacy message sets (Produce v0-2)', () => {
  const produceLegacy = async (c: RawClient, records: Buffer, version: number): Promise<number> => {
    const res = await c.call(0, version, (w) => encodeProduceRequest(w, c.produceRequest('health', 0, records, 1), version), decodeProduceResponse)
    return res.responses[0]!.partitionResponses[0]!.errorCode
  }
  const wrapper = (value: Buffer | null, codec = 1): Buffer => encodeLegacyMessages([{ offset: 0, magic: 1, attributes: codec, timestamp: 1, key: null, value }])

  it('answers truncated sets, bad CRCs, lying sizes, bombs and nested wrappers with an error code, writing nothing', async () => {
    const good = buildLegacyMessageSet([{ key: Buffer.from('k'), value: Buffer.from('v'.repeat(100)), timestamp: Date.now() }, { value: Buffer.from('w') }], 1)
    const cases: [string, Buffer, number[]][] = []
    for (const cut of [3, 12, 30, good.length - 1]) cases.push([`truncated at ${cut}`, good.subarray(0, cut), [ErrorCode.CORRUPT_MESSAGE]])
    const badCrc = Buffer.from(good)
    badCrc[40]! ^= 0xff
    cases.push(['bad CRC', badCrc, [ErrorCode.CORRUPT_MESSAGE]])
    for (const size of [-1, 0, 0x7fffffff, 0x40000000]) {
      const b = Buffer.from(good)
      b.writeInt32BE(size, 8)
      cases.push([`size ${size}`, b, [ErrorCode.CORRUPT_MESSAGE]])
    }
    // 256 MiB of zeros in gzip (about 250 KiB): the bound for the default max.message.bytes is 16 MiB.
    cases.push(['gzip bomb', wrapper(gzipSync(Buffer.alloc(256 * 1024 * 1024))), [ErrorCode.CORRUPT_MESSAGE]])
    cases.push(['nested wrapper', wrapper(gzipSync(buildLegacyMessageSet([{ value: Buffer.from('x') }], 1, 1))), [ErrorCode.INVALID_RECORD]])
    cases.push(['two wrappers', Buffer.concat([wrapper(gzipSync(good)), wrapper(gzipSync(good))]), [ErrorCode.INVALID_RECORD]])
    cases.push(['null wrapper value', wrapper(null), [ErrorCode.INVALID_RECORD]])
    cases.push(['garbage compressed value', wrapper(randomBytes(200), 2), [ErrorCode.CORRUPT_MESSAGE]])
    cases.push(['random bytes', randomBytes(300), [ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNSUPPORTED_COMPRESSION_TYPE]])
    // Connected once the cases are built (connections.max.idle.ms is short here).
    const c = await RawClient.connect(tb.host, tb.port)
    const logEnd = async (): Promise<bigint> => (await c.listOffset('health', 0, -1n)).offset
    const before = await logEnd()
    for (const [name, records, codes] of cases) {
      for (const version of [0, 2]) {
        const started = Date.now()
        const code = await produceLegacy(c, records, version)
        expect(codes, `${name}, v${version}: ${code}`).toContain(code)
        expect(Date.now() - started, name).toBeLessThan(5000)
      }
    }
    expect(await logEnd()).toBe(before)
    // The same connection still produces a sound set.
    expect(await produceLegacy(c, good, 2)).toBe(ErrorCode.NONE)
    c.close()
    await expectHealthy()
  })

  it('closes the connection when the records length runs past the frame', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    const { bytes } = c.frame(0, 2, (w) => encodeProduceRequest(w, c.produceRequest('health', 0, buildLegacyMessageSet([{ value: Buffer.from('x') }], 1), 1), 2))
    // The records length prefix is the last int32 before the set's bytes: claim 1 MiB more.
    const set = buildLegacyMessageSet([{ value: Buffer.from('x') }], 1)
    const at = bytes.length - set.length - 4
    bytes.writeInt32BE(set.length + MAX_REQUEST, at)
    await c.write(bytes)
    expect(await c.waitClosed(3000)).toBe(true)
    await expectHealthy()
  })

  it('Fetch v0-3 with hostile limits: negative and zero sizes, no crash', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    for (const version of [0, 1, 2, 3]) {
      for (const [maxBytes, partitionMaxBytes] of [[0, 0], [-1, 1], [1, -5], [0x7fffffff, 0x7fffffff]] as const) {
        const req = c.fetchRequest('health', 0, 0, { maxBytes, partitionMaxBytes })
        const res = await c.call(1, version, (w) => encodeFetchRequest(w, req, version), decodeFetchResponse)
        const p = res.responses[0]!.partitions[0]!
        expect([ErrorCode.NONE, ErrorCode.INVALID_FETCH_SIZE]).toContain(p.errorCode)
      }
    }
    c.close()
    await expectHealthy()
  })
})

describe('clients that vanish', () => {
  it('survives a disconnect in the middle of a produce request', async () => {
    for (let i = 0; i < 10; i++) {
      const c = await RawClient.connect(tb.host, tb.port)
      const req = c.produceRequest('health', 0, batchOf([{ value: randomBytes(1000) }]), 1)
      const full = c.frame(0, 7, (w) => encodeProduceRequest(w, req, 7)).bytes
      await c.write(full.subarray(0, Math.floor(full.length * (0.2 + i / 15))))
      c.close()
    }
    await expectHealthy()
  })

  it('survives disconnects in the middle of large fetch responses and of long polls', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    for (let i = 0; i < 6; i++) {
      expect((await c.produce('big', 0, batchOf([{ value: randomBytes(700 * 1024) }]))).errorCode).toBe(0)
    }
    c.close()
    for (let i = 0; i < 8; i++) {
      const f = await RawClient.connect(tb.host, tb.port)
      const req = f.fetchRequest('big', 0, 0, { maxBytes: 8 * 1024 * 1024, partitionMaxBytes: 8 * 1024 * 1024 })
      const { bytes } = f.frame(1, 12, (w) => encodeFetchRequest(w, req, 12))
      // Stop reading, then vanish once the first bytes of the ~4 MiB response arrive.
      const firstBytes = new Promise<void>((resolve) => f.socket.once('data', () => resolve()))
      await f.write(bytes)
      await firstBytes
      f.socket.pause()
      f.socket.resetAndDestroy()
    }
    for (let i = 0; i < 5; i++) {
      const f = await RawClient.connect(tb.host, tb.port)
      const req = f.fetchRequest('health', 0, 1_000_000, { maxWaitMs: 5000, minBytes: 1 })
      await f.write(f.frame(1, 12, (w) => encodeFetchRequest(w, req, 12)).bytes)
      await new Promise((r) => setTimeout(r, 30))
      f.close()
    }
    await expectHealthy()
    // Everything is still fetchable whole after the aborted responses.
    const again = await RawClient.connect(tb.host, tb.port)
    const p = await again.fetch('big', 0, 0, { maxBytes: 8 * 1024 * 1024, partitionMaxBytes: 8 * 1024 * 1024 })
    expect(decodeAllRecords(recordsBuffer(p)).length).toBe(6)
    // The aborted responses released their segment leases: once the topic is deleted no descriptor
    // of this process (broker and shard worker share it) still points into its directory.
    const openIntoBig = (): string[] =>
      readdirSync('/proc/self/fd').flatMap((fd) => {
        try {
          const target = readlinkSync(`/proc/self/fd/${fd}`)
          return target.startsWith(tb.dataDir) && /\/big-0/.test(target) ? [target] : []
        } catch {
          return []
        }
      })
    expect(openIntoBig().length).toBeGreaterThan(0) // the check below can see the segment files
    const del = await again.call(20, 4, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, DeleteTopics.createDeleteTopicsRequest({ topicNames: ['big'], timeoutMs: 10000 }), 4), DeleteTopics.decodeDeleteTopicsResponse)
    expect(del.responses[0]!.errorCode).toBe(0)
    again.close()
    const deadline = Date.now() + 5000
    while (openIntoBig().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
    expect(openIntoBig()).toEqual([])
  })
})

describe('memory under hostile load (child process)', () => {
  it('stays bounded with 200 connections announcing 100 MiB requests', async () => {
    const proc = await startBrokerProcess({ overrides: ['socket.request.max.bytes=104857600', 'connections.max.idle.ms=60000'] })
    const clients: RawClient[] = []
    try {
      const admin = await RawClient.connect(proc.host, proc.port)
      expect((await admin.createTopic('health', 1)).errorCode).toBe(0)
      admin.close()
      await expectHealthy(proc.host, proc.port)
      const before = proc.rssKiB()
      for (let i = 0; i < 200; i++) {
        const c = await RawClient.connect(proc.host, proc.port)
        await c.write(Buffer.concat([int32(100 * 1024 * 1024 - 1), header(0, 7), randomBytes(64)]))
        clients.push(c)
      }
      // Let the broker read everything, then measure with all 200 still holding their partial frames.
      await new Promise((r) => setTimeout(r, 500))
      const during = proc.rssKiB()
      expect(clients.every((c) => !c.closed)).toBe(true)
      await expectHealthy(proc.host, proc.port)
      const growthMiB = (during - before) / 1024
      console.info(`[hostile] broker RSS ${Math.round(before / 1024)} MiB before, ${Math.round(during / 1024)} MiB with 200 x 100 MiB announced frames (+${growthMiB.toFixed(1)} MiB)`)
      // 200 x 100 MiB = 20 GiB if sizes were trusted; a few KiB per connection is what it should cost.
      expect(growthMiB).toBeLessThan(64)
      for (const c of clients) c.close()
      clients.length = 0
      await new Promise((r) => setTimeout(r, 200))
      await expectHealthy(proc.host, proc.port)
    } finally {
      for (const c of clients) c.close()
      const exit = await proc.kill('SIGTERM')
      expect(exit).toBe(0)
      rmSync(proc.dataDir, { recursive: true, force: true })
    }
  })
})
