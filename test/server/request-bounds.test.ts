// Requests that would make the broker do or send far more than they are worth (issue 30): a Fetch naming
// one partition thousands of times, a Fetch asking for more than fetch.max.bytes. Each is sent raw, built
// with the generated encoders, against an in-process broker.
import { connect } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import { batchOf, RawClient, recordsBuffer, startTestBroker, type TestBroker } from '../harness/index.js'

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
