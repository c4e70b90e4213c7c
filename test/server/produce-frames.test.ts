// The Produce receive path (frames copied once into frame-pool shared memory, batches handed to the
// shard threads as views of it): many connections pipelining large frames that arrive in many socket
// reads, acks=0 and acks=1, partitions on every shard; what a consumer reads back must be byte for byte
// what was sent, in each producer's order. The pool runs with poisoning on, so memory reused while
// anything still viewed it would show up as corrupt records. Also: the pool is reused and bounded,
// malformed or oversized produce frames still close the connection without holding pool memory, and a
// graceful stop answers the produce requests it accepted.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { framePool } from '../../src/shard/frame-pool.js'
import { batchOf, decodeAllRecords, decodeResponse, RawClient, recordsBuffer, startTestBroker, tempDataDir, type TestBroker } from '../harness/index.js'

const TOPIC = 'frames'
const PARTITIONS = 8
const MAX_REQUEST = 4 * 1024 * 1024
let tb: TestBroker

beforeAll(async () => {
  framePool.poison = true
  tb = await startTestBroker(['io.threads=2', `socket.request.max.bytes=${MAX_REQUEST}`])
  const c = await RawClient.connect(tb.host, tb.port)
  expect((await c.createTopic(TOPIC, PARTITIONS)).errorCode).toBe(0)
  c.close()
  const shards = new Set(Array.from({ length: PARTITIONS }, (_, p) => tb.broker.router.shardOf(TOPIC, p)))
  expect(shards.size).toBe(2)
})

afterAll(async () => {
  await tb?.stop()
  framePool.poison = false
})

interface Sent {
  key: string
  value: Buffer
}

/** One request: a batch for every partition, values of random bytes; keys say who sent what. */
function produceFrame(c: RawClient, conn: number, req: number, acks: number, recordsPerBatch: number): { correlationId: number; bytes: Buffer; sent: Sent[][] } {
  const sent: Sent[][] = []
  const partitionData = Array.from({ length: PARTITIONS }, (_, p) => {
    const records = Array.from({ length: recordsPerBatch }, (_, i) => ({ key: `c${conn}-r${req}-p${p}-i${i}`, value: randomBytes(100 + ((conn * 131 + req * 17 + i * 7) % 900)) }))
    sent.push(records)
    return Produce.createPartitionProduceData({ index: p, records: batchOf(records.map((r) => ({ key: Buffer.from(r.key), value: r.value }))) })
  })
  const request = Produce.createProduceRequest({ acks, timeoutMs: 30000, topicData: [Produce.createTopicProduceData({ name: TOPIC, partitionData })] })
  const { correlationId, bytes } = c.frame(0, 7, (w) => Produce.encodeProduceRequest(w, request, 7))
  return { correlationId, bytes, sent }
}

/** Writes bytes in small random pieces, yielding between them, so the broker sees many partial reads. */
async function writeInPieces(c: RawClient, bytes: Buffer): Promise<void> {
  let off = 0
  while (off < bytes.length) {
    const n = Math.min(bytes.length - off, 1 + Math.floor(Math.random() * 24 * 1024))
    await c.write(bytes.subarray(off, off + n))
    off += n
    if (Math.random() < 0.3) await new Promise((r) => setImmediate(r))
  }
}

async function readPartition(c: RawClient, partition: number, endOffset: number): Promise<{ key: string; value: Buffer }[]> {
  const out: { key: string; value: Buffer }[] = []
  let offset = 0
  while (offset < endOffset) {
    const data = await c.fetch(TOPIC, partition, offset, { partitionMaxBytes: 1024 * 1024 })
    expect(data.errorCode).toBe(0)
    const records = decodeAllRecords(recordsBuffer(data)).filter((r) => r.offset >= offset)
    expect(records.length).toBeGreaterThan(0)
    for (const r of records) {
      expect(r.offset).toBe(offset)
      out.push({ key: r.key!.toString(), value: r.value! })
      offset++
    }
  }
  return out
}

describe('produce frames in shared memory', () => {
  it('keeps every record intact and in order with many connections, split frames, acks 0 and 1, every shard', async () => {
    const before = framePool.stats()
    const CONNS = 6
    const REQUESTS = 10
    const clients = await Promise.all(Array.from({ length: CONNS }, () => RawClient.connect(tb.host, tb.port, 30000)))
    const expected: Sent[][] = Array.from({ length: PARTITIONS }, () => [])
    const perConn: Sent[][][] = clients.map(() => Array.from({ length: PARTITIONS }, () => []))
    let frames = 0
    let totalBytes = 0
    await Promise.all(clients.map(async (c, conn) => {
      const waits: Promise<Buffer>[] = []
      for (let req = 0; req < REQUESTS; req++) {
        // Every third request is acks=0; the last one of each connection is acks=1, so its response
        // (written in request order) means every earlier request of the connection was finished.
        const acks = req % 3 === 1 && req !== REQUESTS - 1 ? 0 : 1
        const f = produceFrame(c, conn, req, acks, 20 + ((conn + req) % 3) * 15)
        frames++
        totalBytes += f.bytes.length
        if (acks === 1) waits.push(c.waitFor(f.correlationId, 30000))
        for (const [p, records] of f.sent.entries()) {
          expected[p]!.push(...records)
          perConn[conn]![p]!.push(...records)
        }
        await writeInPieces(c, f.bytes)
      }
      for (const frame of await Promise.all(waits)) {
        const res = decodeResponse(frame, 0, 7, Produce.decodeProduceResponse)
        for (const p of res.responses[0]!.partitionResponses) expect(p.errorCode).toBe(0)
      }
    }))
    // Large frames, most spanning several socket reads.
    expect(totalBytes / frames).toBeGreaterThan(100 * 1024)
    const reader = clients[0]!
    for (let p = 0; p < PARTITIONS; p++) {
      const got = await readPartition(reader, p, expected[p]!.length)
      expect(got.length).toBe(expected[p]!.length)
      // Same multiset of records, bytes compared...
      const byKey = new Map(expected[p]!.map((r) => [r.key, r.value]))
      for (const r of got) {
        const want = byKey.get(r.key)
        expect(want, `unexpected record ${r.key}`).toBeDefined()
        expect(r.value.equals(want!), `record ${r.key} differs`).toBe(true)
        byKey.delete(r.key)
      }
      expect(byKey.size).toBe(0)
      // ...and each connection's records in the order it sent them.
      for (let conn = 0; conn < CONNS; conn++) {
        expect(got.filter((r) => r.key.startsWith(`c${conn}-`)).map((r) => r.key)).toEqual(perConn[conn]![p]!.map((r) => r.key))
      }
    }
    for (const c of clients) c.close()
    // Every frame came from the pool, the pool was reused and stayed within its bound, and nothing
    // is left pinned once every request has been answered.
    const after = framePool.stats()
    expect(after.pooledFrames - before.pooledFrames).toBe(frames)
    expect(after.unpooledFrames).toBe(before.unpooledFrames)
    expect(after.recycled).toBeGreaterThan(before.recycled)
    expect(after.slabs).toBeLessThanOrEqual(8)
    expect(after.pinnedSlabs).toBe(0)
  })

  it('gives a frame above the pooled size memory of its own and keeps its records intact', async () => {
    const before = framePool.stats()
    const c = await RawClient.connect(tb.host, tb.port, 30000)
    try {
      expect((await c.createTopic('frames-big', 1, { 'max.message.bytes': String(MAX_REQUEST) })).errorCode).toBe(0)
      const value = randomBytes(3 * 1024 * 1024)
      const batch = batchOf([{ key: Buffer.from('big'), value }])
      const produced = await c.produce('frames-big', 0, batch)
      expect(produced.errorCode).toBe(0)
      const data = await c.fetch('frames-big', 0, 0, { partitionMaxBytes: 4 * 1024 * 1024 })
      const got = decodeAllRecords(recordsBuffer(data)).find((r) => r.key?.toString() === 'big')
      expect(got?.value?.equals(value)).toBe(true)
      expect(framePool.stats().unpooledFrames).toBe(before.unpooledFrames + 1)
    } finally {
      c.close()
    }
  })

  it('closes the connection on a malformed produce frame and releases its pool memory', async () => {
    const c = await RawClient.connect(tb.host, tb.port)
    // A produce v7 header, then garbage: the body cannot be decoded.
    const body = Buffer.concat([Buffer.from([0, 0, 0, 7, 0, 0, 0, 9, 0, 2]), Buffer.from('pf'), randomBytes(5000).fill(0xff)])
    const size = Buffer.alloc(4)
    size.writeInt32BE(body.length)
    await c.write(Buffer.concat([size, body]))
    expect(await c.waitClosed(5000)).toBe(true)
    for (let i = 0; i < 100 && framePool.stats().pinnedSlabs > 0; i++) await new Promise((r) => setTimeout(r, 20))
    expect(framePool.stats().pinnedSlabs).toBe(0)
  })

  it('holds no pool memory for partial produce frames, however many wait', async () => {
    const before = framePool.stats()
    // 40 connections each announce a 2 MiB produce request (the largest pooled size) and send 64 KiB of
    // it: a partial frame holds only the bytes that arrived, as plain buffers; pool memory is taken
    // only for a complete frame.
    const stalled = await Promise.all(Array.from({ length: 40 }, () => RawClient.connect(tb.host, tb.port)))
    for (const c of stalled) {
      const head = Buffer.alloc(64 * 1024, 0x5a)
      head.writeInt32BE(2 * 1024 * 1024, 0)
      head.writeInt16BE(0, 4)
      head.writeInt16BE(7, 6)
      await c.write(head)
    }
    await new Promise((r) => setTimeout(r, 200))
    expect(framePool.stats()).toMatchObject({ pinnedSlabs: 0, pooledFrames: before.pooledFrames, unpooledFrames: before.unpooledFrames })
    // Meanwhile a complete produce request is served from the pool, its records intact.
    const c = await RawClient.connect(tb.host, tb.port, 30000)
    try {
      const f = produceFrame(c, 77, 0, 1, 30)
      const wait = c.waitFor(f.correlationId, 30000)
      await c.write(f.bytes)
      const res = decodeResponse(await wait, 0, 7, Produce.decodeProduceResponse)
      const p5 = res.responses[0]!.partitionResponses[5]!
      expect(p5.errorCode).toBe(0)
      const data = await c.fetch(TOPIC, 5, Number(p5.baseOffset), { partitionMaxBytes: 1024 * 1024 })
      const got = decodeAllRecords(recordsBuffer(data)).filter((r) => r.key?.toString().startsWith('c77-'))
      expect(got.map((r) => r.value)).toEqual(f.sent[5]!.map((r) => r.value))
      expect(framePool.stats().pooledFrames).toBe(before.pooledFrames + 1)
    } finally {
      c.close()
    }
    for (const s of stalled) s.close()
    expect(framePool.stats().pinnedSlabs).toBe(0)
    expect(framePool.stats().slabs).toBeLessThanOrEqual(8)
  })

  it('closes the connection on a produce frame above socket.request.max.bytes without allocating for it', async () => {
    const before = framePool.stats()
    const c = await RawClient.connect(tb.host, tb.port)
    const head = Buffer.alloc(6)
    head.writeInt32BE(MAX_REQUEST + 1, 0)
    head.writeInt16BE(0, 4) // API key 0: Produce
    await c.write(head)
    expect(await c.waitClosed(5000)).toBe(true)
    const after = framePool.stats()
    expect(after.pooledFrames + after.unpooledFrames).toBe(before.pooledFrames + before.unpooledFrames)
  })
})

describe('graceful stop with produce requests in flight', () => {
  it('answers the produce requests it accepted, and they survive a restart byte for byte', async () => {
    let broker = await startTestBroker(['io.threads=2'], { dataDir: tempDataDir('frames-stop') })
    try {
      const c = await RawClient.connect(broker.host, broker.port, 30000)
      expect((await c.createTopic(TOPIC, PARTITIONS)).errorCode).toBe(0)
      const frames = Array.from({ length: 12 }, (_, req) => produceFrame(c, 0, req, 1, 40))
      const waits = frames.map((f) => c.waitFor(f.correlationId, 30000).then((frame) => frame, () => null))
      await c.write(Buffer.concat(frames.map((f) => f.bytes)))
      // Stop once the first answer is out: the rest are still being received or appended.
      await waits[0]
      await broker.broker.stop()
      const answered = (await Promise.all(waits)).filter((f) => f !== null).length
      expect(answered).toBe(frames.length)
      expect(framePool.stats().pinnedSlabs).toBe(0)
      c.close()
      broker = await broker.restart()
      const r = await RawClient.connect(broker.host, broker.port, 30000)
      try {
        for (let p = 0; p < PARTITIONS; p++) {
          const want = frames.flatMap((f) => f.sent[p]!)
          const got = await readPartition(r, p, want.length)
          expect(got.map((x) => x.key)).toEqual(want.map((x) => x.key))
          for (const [i, x] of got.entries()) expect(x.value.equals(want[i]!.value)).toBe(true)
        }
      } finally {
        r.close()
      }
    } finally {
      await broker.stop()
    }
  })
})
