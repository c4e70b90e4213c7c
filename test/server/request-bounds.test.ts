// Requests that would make the broker do or send far more than they are worth (issue 30): a Fetch naming
// one partition thousands of times, a Fetch asking for more than fetch.max.bytes, a ListOffsets naming
// 3,000,000 partitions while another client measures its round trips. Each is sent raw, built with the
// generated encoders, against an in-process broker or (to measure its memory) a broker process.
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as ListOffsets from '../../src/protocol/messages/02-list-offsets.gen.js'
import * as ApiVersions from '../../src/protocol/messages/18-api-versions.gen.js'
import { readResponseHeader } from '../../src/protocol/header.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'
import { batchOf, RawClient, recordsBuffer, startBrokerProcess, startTestBroker, type BrokerProcess, type TestBroker } from '../harness/index.js'

const INT32_MAX = 2147483647
const FETCH_VERSION = 12

/** Writes one request frame on a fresh socket and answers the size its response frame declares. */
function answerSize(host: string, port: number, frame: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port })
    let head = Buffer.alloc(0)
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error('no answer within 20 s'))
    }, 20_000)
    socket.on('connect', () => socket.write(frame))
    socket.on('data', (d: Buffer) => {
      head = Buffer.concat([head, d])
      if (head.length < 4) return
      clearTimeout(timer)
      socket.destroy()
      resolve(head.readInt32BE(0))
    })
    socket.on('error', reject)
  })
}

/** ~100 KB batches of 1000-byte values. */
function bigBatch(tag: string): Buffer {
  return batchOf(Array.from({ length: 100 }, (_, i) => ({ key: null, value: Buffer.alloc(1000, `${tag}${i % 10}`) })))
}

function fetchOf(topics: { topic: string; partitions: number[] }[], maxBytes: number): Fetch.FetchRequest {
  return Fetch.createFetchRequest({
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes,
    sessionEpoch: -1,
    topics: topics.map((t) =>
      Fetch.createFetchTopic({ topic: t.topic, partitions: t.partitions.map((partition) => Fetch.createFetchPartition({ partition, fetchOffset: 0n, partitionMaxBytes: 2 * 1024 * 1024 })) }),
    ),
  })
}

describe('Fetch naming one partition many times', () => {
  let tb: TestBroker
  let client: RawClient
  let stored = 0

  beforeAll(async () => {
    tb = await startTestBroker()
    client = await RawClient.connect(tb.host, tb.port, 20_000)
    expect((await client.createTopic('amplified', 2)).errorCode).toBe(ErrorCode.NONE)
    for (let i = 0; i < 10; i++) {
      const batch = bigBatch(`b${i}`)
      stored += batch.length
      expect((await client.produce('amplified', 0, batch)).errorCode).toBe(ErrorCode.NONE)
    }
    expect((await client.produce('amplified', 1, bigBatch('p1'))).errorCode).toBe(ErrorCode.NONE)
  }, 60_000)

  afterAll(async () => {
    client?.close()
    await tb?.stop()
  })

  it('answers a partition named 2000 times once: about the partition\'s ~1 MB, not 2 GB', async () => {
    const req = fetchOf([{ topic: 'amplified', partitions: Array.from({ length: 2000 }, () => 0) }], INT32_MAX)
    const { bytes } = client.frame(1, FETCH_VERSION, (w) => Fetch.encodeFetchRequest(w, req, FETCH_VERSION))
    expect(bytes.length).toBeLessThan(100 * 1024)
    const size = await answerSize(tb.host, tb.port, bytes)
    expect(size).toBeGreaterThanOrEqual(stored)
    expect(size).toBeLessThan(stored + 64 * 1024)
  }, 60_000)

  it('keeps the first place of a repeated partition and answers each partition once', async () => {
    const req = fetchOf([{ topic: 'amplified', partitions: [1, 0, 1, 0, 0] }, { topic: 'amplified', partitions: [1] }], INT32_MAX)
    const res = await client.call(1, FETCH_VERSION, (w) => Fetch.encodeFetchRequest(w, req, FETCH_VERSION), Fetch.decodeFetchResponse)
    expect(res.errorCode).toBe(ErrorCode.NONE)
    expect(res.responses.map((t) => t.partitions.map((p) => p.partitionIndex))).toEqual([[1, 0]])
    for (const p of res.responses[0]!.partitions) {
      expect(p.errorCode).toBe(ErrorCode.NONE)
      expect(recordsBuffer(p).length).toBeGreaterThan(0)
    }
  }, 30_000)
})

describe('fetch.max.bytes', () => {
  let tb: TestBroker
  let client: RawClient
  const FETCH_MAX = 150_000

  beforeAll(async () => {
    tb = await startTestBroker([`fetch.max.bytes=${FETCH_MAX}`])
    client = await RawClient.connect(tb.host, tb.port, 20_000)
    expect((await client.createTopic('capped', 3)).errorCode).toBe(ErrorCode.NONE)
    for (const partition of [0, 1, 2]) expect((await client.produce('capped', partition, bigBatch(`c${partition}`))).errorCode).toBe(ErrorCode.NONE)
  }, 60_000)

  afterAll(async () => {
    client?.close()
    await tb?.stop()
  })

  it('bounds the answer by the broker\'s fetch.max.bytes below the request\'s max_bytes, the first batch whole', async () => {
    const req = fetchOf([{ topic: 'capped', partitions: [0, 1, 2] }], INT32_MAX)
    const res = await client.call(1, FETCH_VERSION, (w) => Fetch.encodeFetchRequest(w, req, FETCH_VERSION), Fetch.decodeFetchResponse)
    const sizes = res.responses[0]!.partitions.map((p) => recordsBuffer(p).length)
    // Each partition holds one ~100 KB batch: the first comes whole (minOneMessage), the others do not fit.
    expect(sizes[0]).toBeGreaterThan(100_000)
    expect(sizes[1]).toBe(0)
    expect(sizes[2]).toBe(0)
  }, 30_000)

  it('still honours a request max_bytes below fetch.max.bytes', async () => {
    const req = fetchOf([{ topic: 'capped', partitions: [0, 1, 2] }], 1)
    const res = await client.call(1, FETCH_VERSION, (w) => Fetch.encodeFetchRequest(w, req, FETCH_VERSION), Fetch.decodeFetchResponse)
    const sizes = res.responses[0]!.partitions.map((p) => recordsBuffer(p).length)
    expect(sizes[0]).toBeGreaterThan(100_000)
    expect(sizes.slice(1)).toEqual([0, 0])
  }, 30_000)
})

const LIST_OFFSETS_VERSION = 5

/**
 * The body of a ListOffsets v5 naming `count` partitions (0, 1, 2, ...) of one topic, written directly:
 * the generated encoder would need `count` objects first. Checked against the encoder below.
 */
function listOffsetsBody(topic: string, count: number): Buffer {
  const name = Buffer.from(topic)
  const head = 4 + 1 + 4 + 2 + name.length + 4
  const body = Buffer.alloc(head + count * 16)
  let o = body.writeInt32BE(-1, 0) // replica id
  o = body.writeInt8(0, o) // isolation level
  o = body.writeInt32BE(1, o) // one topic
  o = body.writeInt16BE(name.length, o)
  o += name.copy(body, o)
  o = body.writeInt32BE(count, o)
  for (let i = 0; i < count; i++) {
    o = body.writeInt32BE(i, o) // partition index
    o = body.writeInt32BE(-1, o) // current leader epoch
    o = body.writeBigInt64BE(-1n, o) // timestamp: latest
  }
  return body
}

/** Sends `body` as a ListOffsets request on `c` (a frame built by the harness around it). */
function listOffsetsFrame(c: RawClient, body: Buffer): { correlationId: number; bytes: Buffer } {
  return c.frame(2, LIST_OFFSETS_VERSION, (w) => w.writeRaw(body))
}

/** ApiVersions and Metadata round trips on their own connection until stopped; the slowest pair's time. */
function probeLatency(host: string, port: number, broker?: BrokerProcess): { stop(): Promise<{ maxMs: number; rounds: number; peakRssKiB: number }> } {
  let stopped = false
  let maxMs = 0
  let rounds = 0
  let peakRssKiB = broker?.rssKiB() ?? 0
  const running = (async () => {
    const c = await RawClient.connect(host, port, 90_000)
    try {
      while (!stopped) {
        const started = performance.now()
        expect((await c.apiVersions()).errorCode).toBe(ErrorCode.NONE)
        expect((await c.metadata(['listed'])).topics[0]!.errorCode).toBe(ErrorCode.NONE)
        maxMs = Math.max(maxMs, performance.now() - started)
        rounds++
        if (broker !== undefined) peakRssKiB = Math.max(peakRssKiB, broker.rssKiB())
        await new Promise((r) => setTimeout(r, 5))
      }
    } finally {
      c.close()
    }
  })()
  return {
    async stop() {
      stopped = true
      await running
      return { maxMs, rounds, peakRssKiB }
    },
  }
}

describe('list-taking requests stay bounded', () => {
  let broker: BrokerProcess
  let client: RawClient

  beforeAll(async () => {
    broker = await startBrokerProcess()
    client = await RawClient.connect(broker.host, broker.port, 30_000)
    expect((await client.createTopic('listed', 4)).errorCode).toBe(ErrorCode.NONE)
    // Warm up: the probes' first round trips are not the broker's first ones.
    await client.metadata(['listed'])
  }, 60_000)

  afterAll(async () => {
    client?.close()
    await broker?.kill('SIGTERM')
  })

  it('builds the same bytes as the generated encoder', () => {
    const req = ListOffsets.createListOffsetsRequest({
      replicaId: -1,
      topics: [ListOffsets.createListOffsetsTopic({ name: 'listed', partitions: [0, 1, 2].map((partitionIndex) => ListOffsets.createListOffsetsPartition({ partitionIndex, timestamp: -1n, currentLeaderEpoch: -1 })) })],
    })
    const w = new Writer(64)
    ListOffsets.encodeListOffsetsRequest(w, req, LIST_OFFSETS_VERSION)
    expect(listOffsetsBody('listed', 3)).toEqual(w.toBuffer())
  })

  it('refuses a ListOffsets of 3,000,000 partitions at once, others answered in milliseconds meanwhile, memory bounded', async () => {
    const body = listOffsetsBody('listed', 3_000_000)
    const hostile = await RawClient.connect(broker.host, broker.port, 30_000)
    // Built before the probe starts: copying 48 MB in this process would show in its round trips.
    const { correlationId, bytes } = listOffsetsFrame(hostile, body)
    expect(bytes.length).toBeGreaterThan(48_000_000)
    const rssBefore = broker.rssKiB()
    const probe = probeLatency(broker.host, broker.port, broker)
    await new Promise((r) => setTimeout(r, 200))
    // Answered (as before issue 30, after seconds) or refused.
    const outcome = hostile.waitFor(correlationId, 90_000).then(
      () => 'answered',
      () => 'closed',
    )
    await hostile.write(bytes)
    const how = await outcome
    await new Promise((r) => setTimeout(r, 300))
    const { maxMs, rounds, peakRssKiB } = await probe.stop()
    hostile.close()
    const grownMiB = (peakRssKiB - rssBefore) / 1024
    console.log(`3,000,000-partition ListOffsets ${how}: other client's slowest ApiVersions+Metadata ${maxMs.toFixed(1)} ms over ${rounds} rounds; broker RSS +${grownMiB.toFixed(0)} MiB`)
    // More list elements than request.max.list.elements (100,000): refused, the connection closed.
    expect(how).toBe('closed')
    expect(maxMs).toBeLessThan(1000)
    // The 48 MB frame is held while it arrives and is judged; nothing is built from it.
    expect(grownMiB).toBeLessThan(160)
    expect((await client.apiVersions()).errorCode).toBe(ErrorCode.NONE)
  }, 240_000)

  it('assembles a large frame as it arrives, in odd pieces, with the next frame in the same piece', async () => {
    const c = await RawClient.connect(broker.host, broker.port, 30_000)
    try {
      const large = listOffsetsFrame(c, listOffsetsBody('listed', 90_000))
      const small = c.frame(18, 3, (w) => ApiVersions.encodeApiVersionsRequest(w, ApiVersions.createApiVersionsRequest({ clientSoftwareName: 'bounds', clientSoftwareVersion: '1' }), 3))
      const answers = [c.waitFor(large.correlationId, 30_000), c.waitFor(small.correlationId, 30_000)]
      const both = Buffer.concat([large.bytes, small.bytes])
      // Past the connection's 1 MiB from which a frame is assembled as it arrives.
      expect(large.bytes.length).toBeGreaterThan(1024 * 1024)
      for (let at = 0; at < both.length; at += 100_003) {
        await c.write(both.subarray(at, Math.min(both.length, at + 100_003)))
        await new Promise((r) => setTimeout(r, 2))
      }
      const [largeFrame] = await Promise.all(answers)
      const r = new Reader(largeFrame!)
      readResponseHeader(r, 2, LIST_OFFSETS_VERSION)
      expect(ListOffsets.decodeListOffsetsResponse(r, LIST_OFFSETS_VERSION).topics[0]!.partitions.length).toBe(90_000)
      expect(c.received).toEqual([large.correlationId, small.correlationId])
    } finally {
      c.close()
    }
  }, 60_000)

  it('answers a ListOffsets at the bound (99,000 partitions, mostly unknown) in slices, others answered meanwhile', async () => {
    const count = 99_000
    const { correlationId, bytes } = listOffsetsFrame(client, listOffsetsBody('listed', count))
    const probe = probeLatency(broker.host, broker.port)
    await new Promise((r) => setTimeout(r, 100))
    const answer = client.waitFor(correlationId, 60_000)
    await client.write(bytes)
    const frame = await answer
    const { maxMs, rounds } = await probe.stop()
    console.log(`${count}-partition ListOffsets: other client's slowest ApiVersions+Metadata ${maxMs.toFixed(1)} ms over ${rounds} rounds`)
    const r = new Reader(frame)
    readResponseHeader(r, 2, LIST_OFFSETS_VERSION)
    const res = ListOffsets.decodeListOffsetsResponse(r, LIST_OFFSETS_VERSION)
    const partitions = res.topics[0]!.partitions
    expect(partitions.length).toBe(count)
    expect(partitions.slice(0, 5).map((p) => p.errorCode)).toEqual([0, 0, 0, 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])
    expect(partitions[count - 1]!.partitionIndex).toBe(count - 1)
    expect(maxMs).toBeLessThan(1000)
  }, 120_000)
})
