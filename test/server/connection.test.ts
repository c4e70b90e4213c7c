// One connection's contract, seen from a raw socket: pipelined requests are answered strictly in request
// order even when a later one completes first, acks=0 produces take their place without a response, and a
// client that stops reading makes the broker stop reading too (bounded memory, nothing lost).
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as ApiVersions from '../../src/protocol/messages/18-api-versions.gen.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { batchOf, decodeAllRecords, decodeBatches, decodeResponse, RawClient, recordsBuffer, startBrokerProcess, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker

beforeAll(async () => {
  tb = await startTestBroker()
  const c = await RawClient.connect(tb.host, tb.port)
  for (const t of ['order-poll', 'order-poll-2', 'order-acks', 'order-mixed']) expect((await c.createTopic(t, 2)).errorCode).toBe(0)
  expect((await c.createTopic('regions', 24)).errorCode).toBe(0)
  c.close()
})

afterAll(async () => {
  await tb?.stop()
})

function apiVersionsFrame(c: RawClient): { correlationId: number; bytes: Buffer } {
  const req = ApiVersions.createApiVersionsRequest({ clientSoftwareName: 'skein-test', clientSoftwareVersion: '1' })
  return c.frame(18, 3, (w) => ApiVersions.encodeApiVersionsRequest(w, req, 3))
}

function metadataFrame(c: RawClient, topics: string[]): { correlationId: number; bytes: Buffer } {
  const req = Metadata.createMetadataRequest({ topics: topics.map((name) => Metadata.createMetadataRequestTopic({ name })), allowAutoTopicCreation: false })
  return c.frame(3, 9, (w) => Metadata.encodeMetadataRequest(w, req, 9))
}

function fetchFrame(c: RawClient, topic: string, offset: number, maxWaitMs: number): { correlationId: number; bytes: Buffer } {
  const req = c.fetchRequest(topic, 0, offset, { maxWaitMs, minBytes: 1 })
  return c.frame(1, 12, (w) => Fetch.encodeFetchRequest(w, req, 12))
}

describe('response order', () => {
  it('holds ApiVersions and Metadata behind a long-poll Fetch that times out', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    try {
      const fetch = fetchFrame(c, 'order-poll', 0, 700)
      const av = apiVersionsFrame(c)
      const md = metadataFrame(c, ['order-poll'])
      const waits = [c.waitFor(fetch.correlationId, 5000), c.waitFor(av.correlationId, 5000), c.waitFor(md.correlationId, 5000)]
      const sentAt = Date.now()
      await c.write(Buffer.concat([fetch.bytes, av.bytes, md.bytes]))
      const [fetchRes, avRes, mdRes] = await Promise.all(waits)
      expect(c.received).toEqual([fetch.correlationId, av.correlationId, md.correlationId])
      // ApiVersions was ready at once but had to wait for the fetch's max wait.
      expect(c.receivedAt.get(av.correlationId)! - sentAt).toBeGreaterThanOrEqual(650)
      const f = decodeResponse(fetchRes!, 1, 12, Fetch.decodeFetchResponse)
      expect(f.responses[0]!.partitions[0]!.errorCode).toBe(0)
      expect(recordsBuffer(f.responses[0]!.partitions[0]!).length).toBe(0)
      expect(decodeResponse(avRes!, 18, 3, ApiVersions.decodeApiVersionsResponse).errorCode).toBe(0)
      expect(decodeResponse(mdRes!, 3, 9, Metadata.decodeMetadataResponse).topics[0]!.name).toBe('order-poll')
    } finally {
      c.close()
    }
  })

  it('holds later responses behind a long-poll Fetch woken by a produce from another connection', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    const producer = await RawClient.connect(tb.host, tb.port)
    try {
      const fetch = fetchFrame(c, 'order-poll-2', 0, 10_000)
      const av = apiVersionsFrame(c)
      const waits = [c.waitFor(fetch.correlationId, 12_000), c.waitFor(av.correlationId, 12_000)]
      await c.write(Buffer.concat([fetch.bytes, av.bytes]))
      await new Promise((r) => setTimeout(r, 300))
      expect(c.received).toEqual([]) // ApiVersions is done but must not overtake the fetch
      const producedAt = Date.now()
      expect((await producer.produce('order-poll-2', 0, batchOf([{ value: Buffer.from('wake up') }]))).errorCode).toBe(0)
      const [fetchRes] = await Promise.all(waits)
      expect(c.received).toEqual([fetch.correlationId, av.correlationId])
      expect(c.receivedAt.get(fetch.correlationId)! - producedAt).toBeLessThan(5000)
      const p = decodeResponse(fetchRes!, 1, 12, Fetch.decodeFetchResponse).responses[0]!.partitions[0]!
      expect(decodeAllRecords(recordsBuffer(p)).map((r) => r.value?.toString())).toEqual(['wake up'])
    } finally {
      c.close()
      producer.close()
    }
  })

  it('keeps order when acks=0 produces are interleaved with acks=1 produces and other requests', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    try {
      const expectAnswers: number[] = []
      const produceOffset = new Map<number, number>()
      const frames: Buffer[] = []
      for (let i = 0; i < 40; i++) {
        const acks = i % 3 === 0 ? 1 : i % 3 === 1 ? 0 : -1
        const req = c.produceRequest('order-acks', 0, batchOf([{ key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`) }]), acks)
        const f = c.frame(0, 7, (w) => Produce.encodeProduceRequest(w, req, 7))
        frames.push(f.bytes)
        if (acks !== 0) {
          expectAnswers.push(f.correlationId)
          produceOffset.set(f.correlationId, i)
        }
        if (i % 10 === 5) {
          const av = apiVersionsFrame(c)
          frames.push(av.bytes)
          expectAnswers.push(av.correlationId)
        }
      }
      // An acks=0 produce that fails (unknown topic) still gets no response and blocks nothing.
      const bad = c.frame(0, 7, (w) => Produce.encodeProduceRequest(w, c.produceRequest('no-such-topic', 0, batchOf([{ value: Buffer.from('x') }]), 0), 7))
      frames.push(bad.bytes)
      const last = apiVersionsFrame(c)
      frames.push(last.bytes)
      expectAnswers.push(last.correlationId)
      const waits = expectAnswers.map((id) => c.waitFor(id, 10_000))
      await c.write(Buffer.concat(frames))
      const answers = await Promise.all(waits)
      expect(c.received).toEqual(expectAnswers)
      expect(c.unmatched).toEqual([])
      // Offsets were assigned in request order, acks=0 ones included: request i got offset i.
      for (const [n, id] of expectAnswers.entries()) {
        const offset = produceOffset.get(id)
        if (offset === undefined) {
          expect(decodeResponse(answers[n]!, 18, 3, ApiVersions.decodeApiVersionsResponse).errorCode).toBe(0)
          continue
        }
        const p = decodeResponse(answers[n]!, 0, 7, Produce.decodeProduceResponse).responses[0]!.partitionResponses[0]!
        expect(p.errorCode).toBe(0)
        expect(Number(p.baseOffset)).toBe(offset)
      }
      expect(produceOffset.size).toBe(27)
      const fetched = await c.fetch('order-acks', 0, 0)
      expect(Number(fetched.highWatermark)).toBe(40)
      const records = decodeAllRecords(recordsBuffer(fetched))
      expect(records.map((r) => r.value?.toString())).toEqual(Array.from({ length: 40 }, (_, i) => `v${i}`))
      expect(records.map((r) => r.offset)).toEqual(Array.from({ length: 40 }, (_, i) => i))
    } finally {
      c.close()
    }
  })
})

describe('zero-copy fetch answers', () => {
  it('many partitions, regions larger and smaller than the socket buffer, a reader that lags: every byte arrives, whole batches, within the limits', async () => {
    const c = await RawClient.connect(tb.host, tb.port, 60_000)
    const PARTITIONS = 24
    const KiB = 1024
    // Per partition: big single-record batches (600 KiB) on every third partition, else batches of 50
    // small records; 1 to 4 batches each.
    const produced: string[][] = []
    for (let p = 0; p < PARTITIONS; p++) {
      const values: string[] = []
      for (let b = 0; b < (p % 4) + 1; b++) {
        const batch = p % 3 === 0 ? [`p${p}-b${b}-`.padEnd(600 * KiB, 'x')] : Array.from({ length: 50 }, (_, i) => `p${p}-b${b}-${i}-`.padEnd(100, 'y'))
        expect((await c.produce('regions', p, batchOf(batch.map((v) => ({ value: Buffer.from(v) }))))).errorCode).toBe(0)
        values.push(...batch)
      }
      produced.push(values)
    }
    const PART_MAX = 1300 * KiB
    const MAX = 8 * 1024 * KiB
    const next = Array.from({ length: PARTITIONS }, () => 0)
    const got: string[][] = Array.from({ length: PARTITIONS }, () => [])
    let fetches = 0
    while (got.some((g, p) => g.length < produced[p]!.length)) {
      expect(++fetches).toBeLessThan(40)
      const req = Fetch.createFetchRequest({
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: MAX,
        topics: [Fetch.createFetchTopic({ topic: 'regions', partitions: next.map((offset, partition) => Fetch.createFetchPartition({ partition, fetchOffset: BigInt(offset), partitionMaxBytes: PART_MAX })) })],
      })
      const f = c.frame(1, 12, (w) => Fetch.encodeFetchRequest(w, req, 12))
      // Not reading for a while: the answer (several MiB) fills the socket buffers, so the broker's
      // synchronous sendfile stops part-way and the rest waits for writability.
      c.socket.pause()
      const answer = c.waitFor(f.correlationId)
      c.socket.write(f.bytes)
      await new Promise((r) => setTimeout(r, 300))
      c.socket.resume()
      const res = decodeResponse(await answer, 1, 12, Fetch.decodeFetchResponse)
      let total = 0
      let withData = 0
      for (const part of res.responses[0]!.partitions) {
        expect(part.errorCode).toBe(0)
        const buf = recordsBuffer(part)
        const batches = decodeBatches(buf)
        // Whole batches only, byte for byte: decoding consumed the whole buffer and every CRC matched.
        let size = 0
        for (let i = 0; i < batches.length; i++) size += 12 + buf.readInt32BE(size + 8)
        expect(size).toBe(buf.length)
        if (buf.length > 0) {
          withData++
          // Over the partition limit only when it is a single batch (a batch is never split).
          if (buf.length > PART_MAX) expect(batches.length).toBe(1)
        }
        total += buf.length
        const p = part.partitionIndex
        for (const b of batches) {
          for (const r of b.records) {
            expect(r.offset).toBe(next[p])
            got[p]!.push(r.value!.toString())
            next[p]!++
          }
        }
      }
      expect(withData).toBeGreaterThan(0)
      // Over maxBytes only by the first partition's minimum of one batch.
      expect(total).toBeLessThanOrEqual(MAX + 600 * KiB + 100)
    }
    for (let p = 0; p < PARTITIONS; p++) expect(got[p]).toEqual(produced[p])
    expect(fetches).toBeGreaterThan(1)
    c.close()
  })
})

describe('backpressure (child-process broker)', () => {
  it('stops reading from a client that does not read its responses, with bounded memory and nothing lost', async () => {
    const proc = await startBrokerProcess()
    const admin = await RawClient.connect(proc.host, proc.port)
    const c = await RawClient.connect(proc.host, proc.port, 60_000)
    try {
      expect((await admin.createTopic('bp-out', 1)).errorCode).toBe(0)
      expect((await admin.createTopic('bp-in', 1)).errorCode).toBe(0)
      const MiB = 1024 * 1024
      const VALUE = 1000 * 1024 // under max.message.bytes (1 MiB + 12) with the batch overhead
      for (let i = 0; i < 2; i++) expect((await admin.produce('bp-out', 0, batchOf([{ value: randomBytes(VALUE) }]))).errorCode).toBe(0)
      const before = proc.rssKiB()
      // 150 fetches of ~2 MiB each (300 MiB if responses were buffered), then 80 produces of 512 KiB,
      // all pipelined while this client reads nothing.
      c.socket.pause()
      const fetchReq = c.fetchRequest('bp-out', 0, 0, { maxBytes: 4 * MiB, partitionMaxBytes: 4 * MiB })
      const ids: number[] = []
      const produceIds: number[] = []
      for (let i = 0; i < 150; i++) {
        const f = c.frame(1, 12, (w) => Fetch.encodeFetchRequest(w, fetchReq, 12))
        ids.push(f.correlationId)
        c.socket.write(f.bytes)
      }
      for (let i = 0; i < 80; i++) {
        const req = c.produceRequest('bp-in', 0, batchOf([{ value: randomBytes(512 * 1024) }]), 1)
        const f = c.frame(0, 7, (w) => Produce.encodeProduceRequest(w, req, 7))
        ids.push(f.correlationId)
        produceIds.push(f.correlationId)
        c.socket.write(f.bytes)
      }
      let peak = before
      for (let i = 0; i < 15; i++) {
        await new Promise((r) => setTimeout(r, 100))
        peak = Math.max(peak, proc.rssKiB())
      }
      const stalled = await admin.listOffset('bp-in', 0, -1n, 5)
      console.info(`[backpressure] RSS ${Math.round(before / 1024)} MiB before, peak ${Math.round(peak / 1024)} MiB while stalled; bp-in LEO ${stalled.offset} of 80`)
      // The broker stopped reading: the produces queued behind unread fetch responses were not taken in.
      expect(Number(stalled.offset)).toBeLessThan(80)
      expect((peak - before) / 1024).toBeLessThan(48)
      // Now read everything: every response arrives, complete and in request order.
      const waits = ids.map((id) => c.waitFor(id, 60_000))
      c.socket.resume()
      const frames = await Promise.all(waits)
      expect(c.received).toEqual(ids)
      for (const [n, frame] of frames.entries()) {
        if (n < 150) {
          if (n % 30 !== 0) continue // decoding every 2 MiB response is slow; sample them
          const p = decodeResponse(frame, 1, 12, Fetch.decodeFetchResponse).responses[0]!.partitions[0]!
          expect(decodeAllRecords(recordsBuffer(p)).map((r) => r.value!.length)).toEqual([VALUE, VALUE])
        } else {
          expect(decodeResponse(frame, 0, 7, Produce.decodeProduceResponse).responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
        }
      }
      expect(Number((await admin.listOffset('bp-in', 0, -1n, 5)).offset)).toBe(80)
      expect(produceIds.length).toBe(80)
    } finally {
      admin.close()
      c.close()
      expect(await proc.kill('SIGTERM')).toBe(0)
      rmSync(proc.dataDir, { recursive: true, force: true })
    }
  })
})
