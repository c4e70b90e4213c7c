import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { SHARD_OPERATIONS, shardOf, type Outcome, type ShardRouter } from '../../src/shard/index.js'
import { fnv1a } from '../../src/shard/hash.js'
import { crashShardForTest } from '../../src/shard/test-hooks.js'
import { batch, readRegions, removeDir, spreadPartitions, startRouter, tempDir, value } from './helpers.js'

const CLEAN_SHUTDOWN = '.kafka_cleanshutdown'
const cleanup: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const fn of cleanup.splice(0).reverse()) await fn()
})

async function open(ioThreads: number, dir = tempDir()): Promise<{ router: ShardRouter; dir: string }> {
  const router = await startRouter(dir, ioThreads)
  cleanup.push(() => removeDir(dir))
  cleanup.push(() => router.close().catch(() => undefined))
  return { router, dir }
}

describe('fnv1a', () => {
  it('hashes the UTF-8 bytes of ASCII and non-ASCII strings alike (placement must never change)', () => {
    const reference = (s: string): number => {
      let h = 0x811c9dc5
      for (const b of Buffer.from(s, 'utf8')) h = Math.imul(h ^ b, 0x01000193) >>> 0
      return h >>> 0
    }
    expect(fnv1a('')).toBe(0x811c9dc5)
    // Published FNV-1a 32-bit test vectors.
    expect(fnv1a('a')).toBe(0xe40c292c)
    expect(fnv1a('foobar')).toBe(0xbf9cf968)
    for (const s of ['orders-0', 'perf-5', '__consumer_offsets-49', 'a.b_c-D-12', 'zaï-1', 'топик-3', '日本-7', 'emoji😀-2', 'x\u007f-9']) {
      expect(fnv1a(s)).toBe(reference(s))
    }
  })
})

describe('shardOf', () => {
  it('is stable, in range and spreads partitions', () => {
    expect(shardOf('orders', 3, 4)).toBe(shardOf('orders', 3, 4))
    expect(shardOf('orders', 3, 0)).toBe(0)
    const counts = [0, 0, 0, 0]
    for (let p = 0; p < 400; p++) counts[shardOf('orders', p, 4)]!++
    for (const c of counts) expect(c).toBeGreaterThan(50)
  })
})

/** The same scenario for every threading mode; returns what it observed so the modes can be compared. */
async function scenario(ioThreads: number): Promise<unknown> {
  const { router, dir } = await open(ioThreads)
  const topic = 'events'
  const parts = spreadPartitions(router, topic, 4)
  const created = await router.createPartitions(parts.map((partition) => ({ topic, partition })))
  expect(created.map((c) => value(c).logEndOffset)).toEqual([0, 0, 0, 0])
  // Idempotent create.
  expect(value((await router.createPartitions([{ topic, partition: 0 }]))[0])).toMatchObject({ topic, partition: 0 })

  const t0 = 1_700_000_000_000
  const batches = new Map<number, Buffer[]>()
  for (const round of [0, 1, 2]) {
    const items = parts.map((partition) => {
      const b = batch(`p${partition}r${round}`, 1 + partition, t0 + round * 1000)
      batches.set(partition, [...(batches.get(partition) ?? []), Buffer.from(b)])
      return { topic, partition, records: b, leaderEpoch: 0 }
    })
    const appended = await router.append(items)
    for (const [i, a] of appended.entries()) {
      const n = 1 + parts[i]!
      expect(value(a)).toMatchObject({ baseOffset: round * n, lastOffset: round * n + n - 1, recordCount: n })
    }
  }

  // Read every partition from 0 and compare the bytes (offsets are assigned, so compare after offset 8).
  const reads = await router.read(parts.map((partition) => ({ topic, partition, offset: 0, maxBytes: 1 << 20 })))
  const stripped = (b: Buffer) => b.subarray(8)
  for (const [i, r] of reads.entries()) {
    const rr = value(r)
    expect(rr.shard).toBe(router.shardOf(topic, parts[i]!))
    const bytes = readRegions(rr.regions)
    const expected = batches.get(parts[i]!)!
    expect(bytes.length).toBe(expected.reduce((n, b) => n + b.length, 0))
    let pos = 0
    for (const b of expected) {
      // Offset and leader epoch are rewritten by the broker; everything after the CRC field must match.
      expect(stripped(bytes.subarray(pos, pos + b.length)).subarray(13)).toEqual(stripped(b).subarray(13))
      pos += b.length
    }
    router.releaseLeases([{ shard: rr.shard, leaseId: rr.leaseId }])
  }
  // A read at the LEO is empty.
  const atEnd = value((await router.read([{ topic, partition: 0, offset: 3, maxBytes: 1000 }]))[0])
  expect(atEnd.regions).toEqual([])

  const offsets = await router.listOffsets([
    { topic, partition: 1, timestamp: -2 },
    { topic, partition: 1, timestamp: -1 },
    { topic, partition: 1, timestamp: -3 },
    { topic, partition: 1, timestamp: t0 + 1000 },
    { topic, partition: 1, timestamp: t0 + 99_000 },
  ])
  expect(offsets.map(value)).toEqual([
    { offset: 0, timestamp: -1 },
    { offset: 6, timestamp: -1 },
    { offset: 5, timestamp: t0 + 2001 }, // the record with the largest timestamp (Kafka 3.7+)
    { offset: 2, timestamp: t0 + 1000 }, // the first record at or after the time, with its own timestamp
    { offset: -1, timestamp: -1 },
  ])

  const deleted = await router.deleteRecords([{ topic, partition: 2, offset: 3 }, { topic, partition: 3, offset: 100 }])
  expect(value(deleted[0])).toBe(3)
  expect(deleted[1]).toMatchObject({ ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE })
  expect((await router.read([{ topic, partition: 2, offset: 0, maxBytes: 100 }]))[0]).toMatchObject({ ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE })

  const states = await router.states()
  expect(states.map((s) => [s.partition, s.logStartOffset, s.logEndOffset, s.highWatermark])).toEqual([
    [0, 0, 3, 3], [1, 0, 6, 6], [2, 3, 9, 9], [3, 0, 12, 12],
  ])
  expect((await router.states([{ topic, partition: 1 }, { topic: 'nope', partition: 0 }])).map((s) => s.partition)).toEqual([1])

  expect(value((await router.deletePartitions([{ topic, partition: 3 }]))[0])).toBeNull()
  expect((await router.states()).map((s) => s.partition)).toEqual([0, 1, 2])

  // Close and reopen: data persists, the marker is written on close and consumed on start.
  await router.close()
  expect(existsSync(join(dir, CLEAN_SHUTDOWN))).toBe(true)
  const again = await startRouter(dir, ioThreads)
  cleanup.push(() => again.close().catch(() => undefined))
  expect(existsSync(join(dir, CLEAN_SHUTDOWN))).toBe(false)
  const reopened = await again.states()
  // Each run has its own temp directory: compare the states without it.
  for (const s of reopened) {
    expect(s.logDir).toBe(again.dataDir)
    delete s.logDir
  }
  const reread = value((await again.read([{ topic, partition: 1, offset: 2, maxBytes: 1 << 20 }]))[0])
  const tail = readRegions(reread.regions)
  const appendedAfter = value((await again.append([{ topic, partition: 1, records: batch('after', 2), leaderEpoch: 1 }]))[0])
  return { reopened, tailLength: tail.length, tailFirstOffset: tail.readBigInt64BE(0), appendedAfter: { ...appendedAfter, logAppendTime: undefined } }
}

describe('ShardRouter gives the same results inline and on 1 or 2 worker threads', () => {
  beforeAll(() => {
    if (!existsSync(join(process.cwd(), 'dist/src/shard/worker.js'))) throw new Error('run `npx tsc -p tsconfig.json` first: workers load dist/')
  })

  it('create, append, read, listOffsets, deleteRecords, states, delete, close + reopen', async () => {
    const results = []
    for (const n of [0, 1, 2]) results.push(await scenario(n))
    expect(results[1]).toEqual(results[0])
    expect(results[2]).toEqual(results[0])
    expect(results[0]).toMatchObject({ tailFirstOffset: 2n, appendedAfter: { baseOffset: 6, lastOffset: 7 } })
  })
})

describe('batching', () => {
  it.each([0, 2])('sends one message per shard for the calls of one turn (ioThreads=%i)', async (ioThreads) => {
    const { router } = await open(ioThreads)
    const topic = 'batched'
    const parts = spreadPartitions(router, topic, 6)
    await router.createPartitions(parts.map((partition) => ({ topic, partition })))
    const before = [...router.messageCounts]
    const calls = [
      router.append(parts.map((partition) => ({ topic, partition, records: batch('x', 3), leaderEpoch: 0 }))),
      ...parts.map((partition) => router.append([{ topic, partition, records: batch('y', 1), leaderEpoch: 0 }])),
      router.listOffsets(parts.map((partition) => ({ topic, partition, timestamp: -1 }))),
      router.read(parts.map((partition) => ({ topic, partition, offset: 0, maxBytes: 100 }))),
    ]
    const [bulk, ...rest] = await Promise.all(calls)
    const touched = new Set(parts.map((p) => router.shardOf(topic, p)))
    expect(router.messageCounts.map((c, i) => c - before[i]!)).toEqual(router.messageCounts.map((_, i) => (touched.has(i) ? 1 : 0)))
    expect(bulk!.every((o) => o.ok)).toBe(true)
    // Ops of one batch run in order: the listOffsets after both appends sees 4 records per partition.
    const latest = rest[parts.length] as { ok: true; value: { offset: number } }[]
    expect(latest.map((o) => o.value.offset)).toEqual(parts.map(() => 4))
  })
})

describe('record buffers', () => {
  it('transfers an exclusively owned buffer, copies pooled or shared ones', async () => {
    const { router } = await open(1)
    const topic = 't'
    await router.createPartitions([0, 1, 2].map((partition) => ({ topic, partition })))
    const big = batch('big', 1000)
    const owned = Buffer.allocUnsafeSlow(big.length)
    big.copy(owned)
    expect(owned.buffer.byteLength).toBeGreaterThan(Buffer.poolSize)
    const small = batch('small', 1)
    const pooled = Buffer.from(small) // small Buffer.from copies land in the shared pool
    const shared = Buffer.allocUnsafeSlow(big.length * 2)
    big.copy(shared, 0)
    big.copy(shared, big.length)
    const a = shared.subarray(0, big.length)
    const b = shared.subarray(big.length)
    const results = await router.append([
      { topic, partition: 0, records: owned, leaderEpoch: 0 },
      { topic, partition: 1, records: pooled, leaderEpoch: 0 },
      { topic, partition: 2, records: a, leaderEpoch: 0 },
      { topic, partition: 2, records: b, leaderEpoch: 0 },
    ])
    expect(results.every((r) => r.ok)).toBe(true)
    expect(owned.byteLength).toBe(0) // transferred: detached here
    expect(pooled.byteLength).toBe(small.length)
    expect(a.byteLength).toBe(big.length)
    expect(b.byteLength).toBe(big.length)
    expect((await router.states([{ topic, partition: 2 }]))[0]!.logEndOffset).toBe(2000)
  })
})

describe('leases', () => {
  it.each([0, 2])('regions stay readable after deletePartitions until released (ioThreads=%i)', async (ioThreads) => {
    const { router } = await open(ioThreads)
    const topic = 'leased'
    await router.createPartitions([{ topic, partition: 0 }])
    const records = batch('keep', 5)
    const expected = Buffer.from(records)
    value((await router.append([{ topic, partition: 0, records, leaderEpoch: 0 }]))[0])
    const r = value((await router.read([{ topic, partition: 0, offset: 0, maxBytes: 1 << 20 }]))[0])
    expect(r.leaseId).not.toBe(0)
    value((await router.deletePartitions([{ topic, partition: 0 }]))[0])
    expect((await router.read([{ topic, partition: 0, offset: 0, maxBytes: 100 }]))[0]).toMatchObject({ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
    expect(readRegions(r.regions).subarray(61)).toEqual(expected.subarray(61))
    router.releaseLeases([{ shard: r.shard, leaseId: r.leaseId }, { shard: r.shard, leaseId: 987654 }])
    // Releasing twice or an unknown id is harmless; the router keeps working.
    router.releaseLeases([{ shard: r.shard, leaseId: r.leaseId }])
    expect((await router.states()).length).toBe(0)
  })
})

describe('error outcomes', () => {
  it.each([0, 2])('unknown partitions, bad batches and good items in one call (ioThreads=%i)', async (ioThreads) => {
    const { router } = await open(ioThreads)
    const topic = 'mixed'
    await router.createPartitions([{ topic, partition: 0 }, { topic, partition: 1 }])
    const corrupt = batch('c', 2)
    corrupt[corrupt.length - 1]! ^= 0xff // breaks the CRC
    const results = await router.append([
      { topic, partition: 0, records: batch('ok', 2), leaderEpoch: 0 },
      { topic: 'missing', partition: 0, records: batch('x', 1), leaderEpoch: 0 },
      { topic, partition: 1, records: corrupt, leaderEpoch: 0 },
      { topic, partition: 1, records: Buffer.from('not a batch at all'), leaderEpoch: 0 },
      { topic, partition: -1, records: batch('x', 1), leaderEpoch: 0 },
      { topic, partition: 1, records: batch('ok', 1), leaderEpoch: 0 },
    ])
    expect(results[0]).toMatchObject({ ok: true, value: { baseOffset: 0 } })
    expect(results[1]).toMatchObject({ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
    expect(results[2]).toMatchObject({ ok: false, errorCode: ErrorCode.CORRUPT_MESSAGE })
    expect(results[3]!.ok).toBe(false)
    expect([ErrorCode.CORRUPT_MESSAGE, ErrorCode.INVALID_RECORD]).toContain((results[3] as { errorCode: number }).errorCode)
    expect(results[4]).toMatchObject({ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
    // The failed appends wrote nothing: the good one lands at offset 0.
    expect(results[5]).toMatchObject({ ok: true, value: { baseOffset: 0 } })

    const reads = await router.read([{ topic: 'missing', partition: 0, offset: 0, maxBytes: 10 }, { topic, partition: 0, offset: 5, maxBytes: 10 }])
    expect(reads[0]).toMatchObject({ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
    expect(reads[1]).toMatchObject({ ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE })
    expect((await router.createPartitions([{ topic: 'bad/name', partition: 0 }, { topic: 'ok', partition: -2 }]))).toMatchObject([
      { ok: false, errorCode: ErrorCode.INVALID_TOPIC_EXCEPTION },
      { ok: false, errorCode: ErrorCode.INVALID_PARTITIONS },
    ])
    expect(await router.listOffsets([{ topic: 'missing', partition: 0, timestamp: -1 }])).toMatchObject([{ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }])
    expect(await router.deleteRecords([{ topic: 'missing', partition: 0, offset: 0 }])).toMatchObject([{ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }])
    expect(await router.deletePartitions([{ topic: 'missing', partition: 0 }])).toMatchObject([{ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }])
    expect(await router.updateConfigs([{ topic: 'missing', partition: 0, overrides: { retentionMs: 1 } }])).toMatchObject([{ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }])
    expect(value((await router.updateConfigs([{ topic, partition: 0, overrides: { retentionMs: 5000 } }]))[0])).toBeNull()
  })

  it('answers after close with an error instead of rejecting', async () => {
    const { router } = await open(0)
    await router.close()
    expect(await router.states([{ topic: 'a', partition: 0 }])).toEqual([])
    expect(await router.append([{ topic: 'a', partition: 0, records: batch('x', 1), leaderEpoch: 0 }])).toMatchObject([{ ok: false, errorCode: ErrorCode.KAFKA_STORAGE_ERROR }])
  })
})

describe('recovery checkpoints', () => {
  it('checkpointIntervalMs=0 writes changed checkpoints on each flush scheduler pass', async () => {
    const dir = tempDir()
    cleanup.push(() => removeDir(dir))
    const router = await startRouter(dir, 1, { checkpointIntervalMs: 0, flushSchedulerIntervalMs: 100 })
    cleanup.push(() => router.close().catch(() => undefined))
    value((await router.createPartitions([{ topic: 'cp', partition: 0, overrides: { flushMessages: 1 } }]))[0])
    value((await router.append([{ topic: 'cp', partition: 0, records: batch('x', 2), leaderEpoch: 0 }]))[0])
    const path = join(dir, 'cp-0', 'recovery-point-offset-checkpoint')
    const deadline = Date.now() + 5000
    while (!(existsSync(path) && readFileSync(path, 'utf8') === '0\n1\ncp 0 2\n') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
    expect(readFileSync(path, 'utf8')).toBe('0\n1\ncp 0 2\n')
  })
})

describe('worker crash', () => {
  it('a replacement worker recovers the shard and its partitions keep working', async () => {
    process.env.SKEIN_TEST_HOOKS = '1'
    cleanup.push(() => {
      delete process.env.SKEIN_TEST_HOOKS
    })
    const { router } = await open(2)
    const topic = 'crashy'
    const parts = spreadPartitions(router, topic, 4)
    await router.createPartitions(parts.map((partition) => ({ topic, partition })))
    for (const partition of parts) value((await router.append([{ topic, partition, records: batch(`before-${partition}`, 3), leaderEpoch: 0 }]))[0])
    const victim = router.shardOf(topic, parts[0]!)

    await crashShardForTest(router, victim)

    const states = await router.states()
    expect(states.map((s) => [s.partition, s.logEndOffset])).toEqual(parts.map((p) => [p, 3]))
    const appended = await router.append(parts.map((partition) => ({ topic, partition, records: batch(`after-${partition}`, 2), leaderEpoch: 0 })))
    expect(appended.map((a) => value(a).baseOffset)).toEqual(parts.map(() => 3))
    const r = value((await router.read([{ topic, partition: parts[0]!, offset: 0, maxBytes: 1 << 20 }]))[0])
    const bytes = readRegions(r.regions)
    expect(bytes.includes(Buffer.from(`before-${parts[0]}-2`))).toBe(true)
    expect(bytes.includes(Buffer.from(`after-${parts[0]}-1`))).toBe(true)
  })

  it('a replacement worker does not trust the clean-shutdown marker of the router start', async () => {
    process.env.SKEIN_TEST_HOOKS = '1'
    cleanup.push(() => {
      delete process.env.SKEIN_TEST_HOOKS
    })
    const dir = tempDir()
    cleanup.push(() => removeDir(dir))
    const topic = 'torn'
    const first = await startRouter(dir, 2)
    await first.createPartitions([{ topic, partition: 0 }])
    const whole = batch('whole', 4)
    const size = whole.length
    const doomed = batch('doomed', 2)
    value((await first.append([{ topic, partition: 0, records: whole, leaderEpoch: 0 }]))[0])
    value((await first.append([{ topic, partition: 0, records: doomed, leaderEpoch: 0 }]))[0])
    await first.close()
    // This start sees the marker: its first workers trust the segment files, rightly.
    const router = await startRouter(dir, 2)
    cleanup.push(() => router.close().catch(() => undefined))
    expect((await router.states())[0]).toMatchObject({ logEndOffset: 6 })
    const victim = router.shardOf(topic, 0)
    expect(value((await router.shardInfo())[victim])).toMatchObject({ shard: victim, openedClean: true, threadStarts: 1, partitions: 1 })
    // The second batch gets damaged on disk (only a recovery's CRC check notices), then the owning worker
    // dies without closing.
    const segment = join(dir, `${topic}-0`, '00000000000000000000.log')
    const bytes = readFileSync(segment)
    bytes[bytes.length - 3]! ^= 0xff
    writeFileSync(segment, bytes)
    await crashShardForTest(router, victim)
    expect(value((await router.shardInfo())[victim])).toMatchObject({ shard: victim, openedClean: false, threadStarts: 2, partitions: 1 })
    expect(value((await router.shardInfo())[1 - victim])).toMatchObject({ openedClean: true, threadStarts: 1 })
    // The replacement must have recovered the segment, i.e. cut it before the damaged batch.
    expect((await router.states())[0]).toMatchObject({ logEndOffset: 4, sizeBytes: size })
    expect(statSync(segment).size).toBe(size)
    expect(value((await router.append([{ topic, partition: 0, records: batch('next', 1), leaderEpoch: 0 }]))[0]).baseOffset).toBe(4)
    const all = readRegions(value((await router.read([{ topic, partition: 0, offset: 0, maxBytes: 1 << 20 }]))[0]).regions)
    expect(all.includes(Buffer.from('doomed'))).toBe(false)
    expect(all.includes(Buffer.from('next-0'))).toBe(true)
  })

  it('crashForTest is not a production operation: a worker started without SKEIN_TEST_HOOKS does not serve it', async () => {
    expect(Object.keys(SHARD_OPERATIONS)).not.toContain('crashForTest')
    const { router } = await open(1)
    // Sent past the typed surface, as the test hook does, but to a worker that has only the production table.
    const callShard = router.callShard as (shard: number, op: string, args: null) => Promise<Outcome<unknown>>
    const r = await callShard.call(router, 0, 'crashForTest', null)
    expect(r).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_REQUEST })
    expect(value((await router.shardInfo())[0])).toMatchObject({ threadStarts: 1 })
    expect(await router.callShard(5, 'states', null)).toMatchObject({ ok: false, errorCode: ErrorCode.INVALID_REQUEST })
  })

  it('the hook is refused without SKEIN_TEST_HOOKS and on the main thread', async () => {
    const { router } = await open(0)
    await expect(crashShardForTest(router, 0)).rejects.toThrow(/SKEIN_TEST_HOOKS/)
    process.env.SKEIN_TEST_HOOKS = '1'
    try {
      await expect(crashShardForTest(router, 0)).rejects.toThrow(/needs a worker shard/)
    } finally {
      delete process.env.SKEIN_TEST_HOOKS
    }
  })
})
