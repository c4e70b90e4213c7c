// The log cleaner over real segment files: compaction to the latest value per key, tombstones and their
// delete horizon, min/max compaction lag, the dirty ratio, the active segment, reads and ListOffsets
// across the gaps compaction leaves, batch metadata kept, grouping of small segments, retention policy.
import { existsSync, readdirSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { BatchHeaderView, buildRecordBatch, iterateBatches } from '../../src/protocol/records/index.js'
import type { RecordInput } from '../../src/protocol/records/index.js'
import { deflateBatch, inflateBatch } from '../../src/protocol/records/inflate.js'
import { DELETE_HORIZON_MASK } from '../../src/storage/cleaner/index.js'
import { CLEANER_OFFSET_CHECKPOINT } from '../../src/storage/index.js'
import type { LogManager, PartitionLog } from '../../src/storage/index.js'
import { T0, openManager, regionBytes, tempDir } from './helpers.js'

const dirs: Array<() => void> = []
const managers: LogManager[] = []
afterEach(async () => {
  for (const m of managers.splice(0)) await m.close()
  for (const c of dirs.splice(0)) c()
})

/** A clock tests move by hand. */
function clock(start = T0): { now: () => number; set: (t: number) => void; advance: (ms: number) => void } {
  let t = start
  return { now: () => t, set: (v) => (t = v), advance: (ms) => (t += ms) }
}

const COMPACT = { cleanupPolicy: 'compact' as const, segmentBytes: 2048, indexIntervalBytes: 256, minCleanableDirtyRatio: 0.01 }

function setup(overrides: Parameters<typeof openManager>[1] = {}, c = clock()): { m: LogManager; log: PartitionLog; dir: string; c: ReturnType<typeof clock> } {
  const d = tempDir('skein-cleaner-')
  dirs.push(d.cleanup)
  const m = openManager(d.path, { ...COMPACT, ...overrides }, { now: c.now })
  managers.push(m)
  const log = m.create('t', 0)
  return { m, log, dir: log.dir, c }
}

function kv(key: string | null, value: string | null, timestamp = T0): RecordInput {
  return { key: key === null ? null : Buffer.from(key), value: value === null ? null : Buffer.from(value), timestamp }
}

function append(log: PartitionLog, records: RecordInput[], opts: Parameters<typeof buildRecordBatch>[2] = {}): { baseOffset: number; lastOffset: number } {
  return log.append(buildRecordBatch(records, native.crc32c, opts), { leaderEpoch: 0 })
}

interface Rec {
  offset: number
  key: string | null
  value: string | null
  timestamp: number
}

/** Every record readable from offset on, decoded with the codec-aware decoder. */
function readRecords(m: LogManager, log: PartitionLog, from = log.logStartOffset): Rec[] {
  const r = log.read(from, 1 << 30)
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  const out: Rec[] = []
  for (const b of iterateBatches(bytes)) {
    const inflated = inflateBatch(bytes.subarray(b.position), 1 << 26)
    for (const rec of inflated.records) {
      out.push({
        offset: inflated.header.baseOffset + rec.offsetDelta,
        key: rec.key?.toString() ?? null,
        value: rec.value?.toString() ?? null,
        timestamp: inflated.header.baseTimestamp + rec.timestampDelta,
      })
    }
  }
  return out
}

/** Writes rounds x keys updates, values `k<i>-v<round>`, batches of `perBatch` records. */
function writeUpdates(log: PartitionLog, keys: number, rounds: number, perBatch = 5, ts = T0): Map<string, { offset: number; value: string }> {
  const latest = new Map<string, { offset: number; value: string }>()
  let pending: RecordInput[] = []
  const flush = (): void => {
    if (pending.length === 0) return
    const { baseOffset } = append(log, pending)
    pending.forEach((r, i) => latest.set(r.key!.toString(), { offset: baseOffset + i, value: r.value!.toString() }))
    pending = []
  }
  for (let round = 0; round < rounds; round++) {
    for (let k = 0; k < keys; k++) {
      pending.push(kv(`k${k}`, `k${k}-v${round}`, ts))
      if (pending.length === perBatch) flush()
    }
  }
  flush()
  return latest
}

function latestByKey(recs: Rec[]): Map<string, Rec> {
  const m = new Map<string, Rec>()
  for (const r of recs) if (r.key !== null) m.set(r.key, r)
  return m
}

describe('compaction', () => {
  it('keeps only the latest record per key, at its original offset, and leaves the active segment alone', async () => {
    const { m, log } = setup()
    const latest = writeUpdates(log, 20, 30)
    const before = log.state()
    const activeBase = log.segmentBaseOffsets().at(-1)!
    const activeBefore = readRecords(m, log, activeBase)
    expect(before.segmentCount).toBeGreaterThan(5)

    const r = await m.cleaner.clean(log)
    expect(r.cleaned).toBe(true)
    expect(r.endOffset).toBe(activeBase)
    expect(r.recordsRemoved).toBeGreaterThan(0)

    const after = log.state()
    expect(after.logEndOffset).toBe(before.logEndOffset)
    expect(after.logStartOffset).toBe(before.logStartOffset)
    expect(after.sizeBytes).toBeLessThan(before.sizeBytes / 3)
    expect(log.segmentBaseOffsets().at(-1)).toBe(activeBase)

    const recs = readRecords(m, log)
    // Below the active segment: one record per key, each the latest of that key there.
    const cleanPart = recs.filter((x) => x.offset < activeBase)
    expect(new Set(cleanPart.map((x) => x.key)).size).toBe(cleanPart.length)
    // The active segment is byte-for-byte what it was.
    expect(readRecords(m, log, activeBase)).toEqual(activeBefore)
    // Every key still reads back as its latest value, at the offset it was written at.
    const got = latestByKey(recs)
    expect(got.size).toBe(latest.size)
    for (const [k, v] of latest) expect(got.get(k)).toMatchObject({ offset: v.offset, value: v.value })
    // Offsets only grow.
    for (let i = 1; i < recs.length; i++) expect(recs[i]!.offset).toBeGreaterThan(recs[i - 1]!.offset)
    // The clean/dirty boundary is persisted.
    expect(existsSync(join(log.dir, CLEANER_OFFSET_CHECKPOINT))).toBe(true)
    expect(readdirSync(log.dir).filter((n) => n.endsWith('.cleaned') || n.endsWith('.swap'))).toEqual([])
  })
})

/** The raw batches of the whole log (header views over a copy). */
function batches(m: LogManager, log: PartitionLog, from = log.logStartOffset): BatchHeaderView[] {
  const r = log.read(from, 1 << 30)
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  return [...iterateBatches(bytes)].map((b) => new BatchHeaderView(bytes, b.position))
}

/** Rolls the active segment by appending a filler batch big enough to overflow segment.bytes. */
function roll(log: PartitionLog, key = 'filler'): void {
  const before = log.segmentBaseOffsets().length
  while (log.segmentBaseOffsets().length === before) append(log, [kv(key, 'x'.repeat(600))])
}

describe('tombstones', () => {
  it('keeps a tombstone for delete.retention.ms after the pass that first sees it, then drops it', async () => {
    const c = clock()
    const { m, log } = setup({ deleteRetentionMs: 60_000 }, c)
    append(log, [kv('a', 'a1'), kv('b', 'b1'), kv('c', 'c1')])
    append(log, [kv('a', null), kv('b', 'b2')])
    roll(log)
    const r1 = await m.cleaner.clean(log)
    expect(r1.cleaned).toBe(true)
    let recs = readRecords(m, log).filter((x) => x.key !== 'filler')
    // a's value is gone, its tombstone stays (consumers must see the delete); b has its latest value.
    expect(recs.map((x) => [x.key, x.value])).toEqual([['c', 'c1'], ['a', null], ['b', 'b2']])
    // The tombstone's batch carries the delete horizon; record timestamps are unchanged.
    const stamped = batches(m, log).find((b) => b.baseOffset === 3)!
    expect(stamped.attributes & DELETE_HORIZON_MASK).toBe(DELETE_HORIZON_MASK)
    expect(stamped.baseTimestamp).toBe(T0 + 60_000)
    expect(recs.every((x) => x.timestamp === T0)).toBe(true)
    expect(m.cleaner.inspect(log)!.tombstonesDue).toBe(false)

    // Before the horizon even a forced pass keeps it.
    c.advance(59_999)
    await m.cleaner.clean(log, { force: true })
    expect(readRecords(m, log).some((x) => x.key === 'a')).toBe(true)

    // At the horizon the periodic cleaner takes the log up by itself (nothing is dirty) and drops it.
    c.advance(1)
    expect(m.cleaner.inspect(log)!.tombstonesDue).toBe(true)
    const results = await m.cleaner.cleanFilthiest()
    expect(results.map((x) => x.reason)).toEqual(['cleaned'])
    recs = readRecords(m, log).filter((x) => x.key !== 'filler')
    expect(recs.map((x) => [x.key, x.value])).toEqual([['c', 'c1'], ['b', 'b2']])
    expect(m.cleaner.inspect(log)!.tombstonesDue).toBe(false)
  })

  it('with delete.retention.ms=0 a tombstone goes on the second pass, and the horizon survives a reopen', async () => {
    const c = clock()
    const { m, log, dir } = setup({ deleteRetentionMs: 0 }, c)
    append(log, [kv('a', 'a1'), kv('a', null)])
    roll(log)
    await m.cleaner.clean(log)
    expect(readRecords(m, log).filter((x) => x.key === 'a').map((x) => x.value)).toEqual([null])
    await m.close()
    managers.length = 0
    const m2 = openManager(join(dir, '..'), { ...COMPACT, deleteRetentionMs: 0 }, { now: c.now })
    managers.push(m2)
    const log2 = m2.get('t', 0)!
    // The horizon is read back from the batch headers; the clean range was checkpointed.
    const ltc = m2.cleaner.inspect(log2)!
    expect(ltc.tombstonesDue).toBe(true)
    expect(ltc.cleanableBytes).toBe(0)
    await m2.cleaner.cleanFilthiest()
    expect(readRecords(m2, log2).filter((x) => x.key === 'a')).toEqual([])
  })
})

describe('when a log is cleaned', () => {
  it('min.compaction.lag.ms keeps young segments out of the dirty range', async () => {
    const c = clock(T0)
    const { m, log } = setup({ minCompactionLagMs: 3_600_000 }, c)
    writeUpdates(log, 10, 20, 5, T0)
    const ltc = m.cleaner.inspect(log)!
    expect(ltc.firstUncleanableOffset).toBe(0)
    expect(ltc.eligible).toBe(false)
    const size = log.state().sizeBytes
    expect((await m.cleaner.clean(log, { force: true })).reason).toBe('nothing-to-clean')
    expect(log.state().sizeBytes).toBe(size)
    c.advance(3_600_001)
    expect(m.cleaner.inspect(log)!.eligible).toBe(true)
    expect((await m.cleaner.clean(log)).cleaned).toBe(true)
    expect(log.state().sizeBytes).toBeLessThan(size)
  })

  it('below min.cleanable.dirty.ratio a log waits (unless forced); past it, it is cleaned', async () => {
    const { m, log } = setup({ minCleanableDirtyRatio: 0.5 })
    // Distinct keys: cleaning removes nothing, so the clean part stays big.
    writeUpdates(log, 400, 1)
    roll(log)
    await m.cleaner.clean(log)
    const base = log.segmentBaseOffsets().at(-1)!
    roll(log, 'k0')
    const ltc = m.cleaner.inspect(log)!
    expect(ltc.firstDirtyOffset).toBe(base)
    expect(ltc.dirtyRatio).toBeGreaterThan(0)
    expect(ltc.dirtyRatio).toBeLessThanOrEqual(0.5)
    expect(ltc.eligible).toBe(false)
    expect((await m.cleaner.clean(log)).reason).toBe('not-eligible')
    expect(await m.cleaner.cleanFilthiest()).toEqual([])
    // Much more dirty data tips the ratio.
    writeUpdates(log, 10, 100)
    const ltc2 = m.cleaner.inspect(log)!
    expect(ltc2.dirtyRatio).toBeGreaterThan(0.5)
    expect(ltc2.eligible).toBe(true)
    const results = await m.cleaner.cleanFilthiest()
    expect(results.map((x) => x.reason)).toEqual(['cleaned'])
  })

  it('max.compaction.lag.ms makes an old dirty log eligible under the ratio, and rolls the active segment', async () => {
    const c = clock(T0)
    const { m, log } = setup({ minCleanableDirtyRatio: 1, maxCompactionLagMs: 3_600_000, segmentBytes: 1 << 20 }, c)
    writeUpdates(log, 5, 4, 5, T0)
    // One segment only: it is active, so nothing is cleanable yet.
    expect(log.segmentBaseOffsets()).toEqual([0])
    c.advance(3_600_001)
    // The next append rolls: the segment is older than max.compaction.lag.ms (Kafka's maxSegmentMs).
    append(log, [kv('k0', 'late', T0 + 3_600_001)])
    expect(log.segmentBaseOffsets().length).toBe(2)
    const ltc = m.cleaner.inspect(log)!
    expect(ltc.dirtyRatio).toBe(1)
    expect(ltc.compactionDelayMs).toBeGreaterThan(0)
    expect(ltc.eligible).toBe(true)
    expect((await m.cleaner.clean(log)).cleaned).toBe(true)
    expect(readRecords(m, log).length).toBe(5 + 1)
  })

  it('never cleans beyond the high watermark', async () => {
    const d = tempDir('skein-cleaner-')
    dirs.push(d.cleanup)
    const m = openManager(d.path, COMPACT, { highWatermarkFollowsLeo: false })
    managers.push(m)
    const log = m.create('t', 0)
    writeUpdates(log, 5, 40)
    expect(log.highWatermark).toBe(0)
    expect(m.cleaner.inspect(log)!.cleanableBytes).toBe(0)
    log.setHighWatermark(log.logEndOffset)
    expect(m.cleaner.inspect(log)!.cleanableBytes).toBeGreaterThan(0)
  })
})

describe('reads of a compacted log', () => {
  it('fetching a compacted-away offset returns the next batch; offsets, index and ListOffsets work across gaps', async () => {
    const { m, log } = setup({ indexIntervalBytes: 64 })
    // Keys whose updates are far apart leave long gaps.
    for (let round = 0; round < 40; round++) append(log, [kv(`k${round % 4}`, `v${round}`, T0 + round * 1000), kv('hot', `h${round}`, T0 + round * 1000)])
    roll(log)
    await m.cleaner.clean(log)
    const recs = readRecords(m, log)
    const offsets = recs.map((x) => x.offset)
    // Gaps exist and the log start did not move.
    expect(offsets[0]).toBeGreaterThan(0)
    expect(log.logStartOffset).toBe(0)
    // From the log start (a compacted-away offset) the read starts at the first surviving batch.
    const first = log.read(0, 1 << 20)
    expect(first.regions.length).toBeGreaterThan(0)
    m.releaseLease(first.leaseId)
    expect(readRecords(m, log, 0)[0]!.offset).toBe(offsets[0])
    // From every offset, removed or not, the first record returned is the first survivor at or after it
    // (whole batches: the batch holding it may start earlier).
    for (let o = 0; o < log.logEndOffset; o++) {
      const got = readRecords(m, log, o)
      const next = offsets.find((x) => x >= o)!
      expect(got.some((x) => x.offset === next)).toBe(true)
      expect(got.every((x) => x.offset >= o || got.indexOf(x) < got.length)).toBe(true)
      const batch = batches(m, log, o)[0]!
      expect(batch.lastOffset).toBeGreaterThanOrEqual(o)
    }
    // Small budgets walk the log batch by batch across the gaps.
    const walked: number[] = []
    let at = 0
    while (at < log.logEndOffset) {
      const r = log.read(at, 1)
      const bytes = regionBytes(r)
      m.releaseLease(r.leaseId)
      const bs = [...iterateBatches(bytes)]
      expect(bs.length).toBe(1)
      const view = new BatchHeaderView(bytes, 0)
      for (const rec of inflateBatch(bytes, 1 << 20).records) walked.push(view.baseOffset + rec.offsetDelta)
      at = view.lastOffset + 1
    }
    expect(walked).toEqual(offsets)
    // ListOffsets by timestamp lands on a surviving batch; earliest is the log start.
    const ts = log.offsetForTimestamp(T0 + 10_500)!
    const batchAt = batches(m, log, ts.offset)[0]!
    expect(batchAt.maxTimestamp).toBeGreaterThanOrEqual(T0 + 10_500)
    expect(ts.offset).toBeLessThanOrEqual(offsets.find((x) => recs.find((r) => r.offset === x)!.timestamp >= T0 + 10_500)!)
    expect(log.maxTimestamp()!.timestamp).toBeGreaterThanOrEqual(T0 + 39_000)
  })
})

describe('batches kept by the cleaner', () => {
  it('keep producer id, epoch, base sequence, leader epoch and last offset; an emptied last batch of a producer stays empty', async () => {
    const { m, log } = setup()
    // Producer 7 writes two batches; every record of both is later superseded.
    log.append(buildRecordBatch([kv('p', '1'), kv('q', '1'), kv('keep', 'yes')], native.crc32c, { producerId: 7, producerEpoch: 3, baseSequence: 0 }), { leaderEpoch: 5 })
    log.append(buildRecordBatch([kv('p', '2'), kv('q', '2')], native.crc32c, { producerId: 7, producerEpoch: 3, baseSequence: 3 }), { leaderEpoch: 5 })
    append(log, [kv('p', '3'), kv('q', '3')])
    roll(log)
    await m.cleaner.clean(log)
    const bs = batches(m, log).filter((b) => b.baseOffset < 7)
    const [first, second] = bs
    // First batch: 'keep' survives; header intact, last offset still 2 although records 0 and 1 went.
    expect(first).toMatchObject({ baseOffset: 0, lastOffset: 2, producerId: 7, producerEpoch: 3, baseSequence: 0, partitionLeaderEpoch: 5, recordCount: 1 })
    // Second batch: emptied, kept as a header so the producer's last sequence survives.
    expect(second).toMatchObject({ baseOffset: 3, lastOffset: 4, producerId: 7, producerEpoch: 3, baseSequence: 3, recordCount: 0 })
    expect(second!.computeCrc(native.crc32c)).toBe(second!.crc)
    // The batch without a producer that was emptied is gone entirely (none at offsets 5-6 but the latest).
    expect(readRecords(m, log).filter((x) => x.key === 'p' || x.key === 'q').map((x) => x.offset)).toEqual([5, 6])
  })

  it('keeps control and transactional batches whole and out of the offset map', async () => {
    const { m, log } = setup()
    append(log, [kv('a', 'old')])
    log.append(buildRecordBatch([kv('a', 'txn-1'), kv('a', 'txn-2')], native.crc32c, { producerId: 9, producerEpoch: 0, baseSequence: 0, transactional: true }), { leaderEpoch: 0 })
    // A commit marker: key = version 0 + type 1, value = version 0 + coordinator epoch 0. Producers may
    // not send control batches, so it goes in as a transactional batch whose control bit is set on disk.
    const marker = { key: Buffer.from([0, 0, 0, 1]), value: Buffer.from([0, 0, 0, 0, 0, 0]) }
    const { baseOffset: markerOffset } = log.append(buildRecordBatch([marker], native.crc32c, { producerId: 9, producerEpoch: 0, baseSequence: 2, transactional: true }), { leaderEpoch: 0 })
    roll(log)
    const r = log.read(markerOffset, 1)
    const region = r.regions[0]!
    const bytes = regionBytes(r)
    m.releaseLease(r.leaseId)
    const view = new BatchHeaderView(bytes, 0)
    bytes.writeInt16BE(view.attributes | 0x20, 21)
    bytes.writeUInt32BE(view.computeCrc(native.crc32c), 17)
    writeSync(region.fd, bytes.subarray(0, view.sizeInBytes), 0, view.sizeInBytes, region.position)
    await m.cleaner.clean(log)
    const recs = readRecords(m, log).filter((x) => x.key !== 'filler')
    // 'old' stays: the transactional records do not supersede it until transactions exist.
    expect(recs.map((x) => x.value)).toEqual(['old', 'txn-1', 'txn-2', '\u0000\u0000\u0000\u0000\u0000\u0000'])
    const bs = batches(m, log)
    expect(bs[1]!.isTransactional).toBe(true)
    expect(bs[2]!.isControl).toBe(true)
  })

  it('recompresses a filtered batch with its own codec', async () => {
    const { m, log } = setup()
    for (const codec of [1, 2, 3, 4] as const) {
      const header = { baseOffset: 0, partitionLeaderEpoch: -1, attributes: 0, baseTimestamp: T0, producerId: -1, producerEpoch: -1, baseSequence: -1 }
      const records = ['x', 'y', 'x', 'z'].map((k, i) => ({ attributes: 0, timestampDelta: i, offsetDelta: i, key: Buffer.from(`${k}${codec}`), value: Buffer.from(`${k}-${codec}-${i}`), headers: [] }))
      log.append(deflateBatch(header, records, codec), { leaderEpoch: 0 })
    }
    roll(log)
    await m.cleaner.clean(log)
    const bs = batches(m, log).filter((b) => b.compression !== 0)
    expect(bs.map((b) => b.compression)).toEqual([1, 2, 3, 4])
    expect(bs.map((b) => b.recordCount)).toEqual([3, 3, 3, 3])
    const recs = readRecords(m, log).filter((x) => x.key !== 'filler')
    expect(recs.map((x) => x.value)).toEqual([1, 2, 3, 4].flatMap((c) => [`y-${c}-1`, `x-${c}-2`, `z-${c}-3`]))
    expect(recs.map((x) => x.timestamp)).toEqual([1, 2, 3, 4].flatMap(() => [T0 + 1, T0 + 2, T0 + 3]))
  })

  it('drops keyless records that reached a compacted log (written before cleanup.policy changed)', async () => {
    const { m, log } = setup({ cleanupPolicy: 'delete' })
    append(log, [kv(null, 'no key'), kv('a', 'a1')])
    roll(log)
    log.updateConfig({ cleanupPolicy: 'compact' })
    await m.cleaner.clean(log)
    expect(readRecords(m, log).filter((x) => x.key !== 'filler').map((x) => x.value)).toEqual(['a1'])
  })
})

describe('passes', () => {
  it('group small cleaned segments into one, up to segment.bytes', async () => {
    const { m, log } = setup({ segmentBytes: 4096 })
    writeUpdates(log, 8, 120)
    await m.cleaner.clean(log)
    // Each full segment became a small one (a group is sized by its sources, as in Kafka).
    const cleanedBases = log.segmentBaseOffsets().slice(0, -1)
    expect(cleanedBases.length).toBeGreaterThan(3)
    writeUpdates(log, 8, 60)
    await m.cleaner.clean(log, { force: true })
    // The next pass merges those small segments into the first one.
    const bases = log.segmentBaseOffsets()
    expect(bases[0]).toBe(cleanedBases[0])
    expect(bases.filter((b) => cleanedBases.includes(b))).toEqual([cleanedBases[0]])
    expect(latestByKey(readRecords(m, log)).size).toBe(8)
  })

  it('a small offset map cleans part of the dirty range per pass and continues from there', async () => {
    const d = tempDir('skein-cleaner-')
    dirs.push(d.cleanup)
    const m = openManager(d.path, COMPACT, { cleaner: { dedupeBufferBytes: 16 * 24 } })
    managers.push(m)
    const log = m.create('t', 0)
    const latest = writeUpdates(log, 30, 10)
    const activeBase = log.segmentBaseOffsets().at(-1)!
    const r1 = await m.cleaner.clean(log)
    expect(r1.cleaned).toBe(true)
    expect(r1.endOffset).toBeLessThan(activeBase)
    const results = await m.cleaner.cleanFilthiest()
    expect(results.length).toBeGreaterThan(0)
    expect(results.at(-1)!.endOffset).toBe(activeBase)
    const got = latestByKey(readRecords(m, log))
    for (const [k, v] of latest) expect(got.get(k)).toMatchObject({ offset: v.offset, value: v.value })
  })

  it('yields while it runs: appends to another partition go on during a pass', async () => {
    const d = tempDir('skein-cleaner-')
    dirs.push(d.cleanup)
    const m = openManager(d.path, { ...COMPACT, segmentBytes: 64 * 1024 }, { cleaner: { sliceBytes: 64 * 1024 } })
    managers.push(m)
    const log = m.create('t', 0)
    const other = m.create('other', 0)
    writeUpdates(log, 200, 40, 20)
    roll(log)
    let done = false
    const pass = m.cleaner.clean(log).then((r) => {
      done = true
      return r
    })
    let appendsDuring = 0
    while (!done) {
      append(other, [kv('x', 'y')])
      if (!done) appendsDuring++
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect((await pass).cleaned).toBe(true)
    expect(appendsDuring).toBeGreaterThan(3)
  })

  it('a partition deleted during a pass aborts it and leaves no files behind', async () => {
    const d = tempDir('skein-cleaner-')
    dirs.push(d.cleanup)
    const m = openManager(d.path, { ...COMPACT, segmentBytes: 64 * 1024 }, { cleaner: { sliceBytes: 64 * 1024 } })
    managers.push(m)
    const log = m.create('t', 0)
    writeUpdates(log, 200, 40, 20)
    roll(log)
    const pass = m.cleaner.clean(log)
    await new Promise((resolve) => setImmediate(resolve))
    m.delete('t', 0)
    const r = await pass
    expect(r.reason).toBe('aborted')
    await m.removalsDone()
    expect(readdirSync(d.path)).toEqual([])
  })

  it('retention removing segments during a pass aborts the swap; the log stays whole', async () => {
    const c = clock()
    const { m, log } = setup({ cleanupPolicy: 'compact,delete', retentionMs: 1000, segmentBytes: 64 * 1024 }, c)
    const m2 = m
    writeUpdates(log, 200, 40, 20, T0)
    roll(log)
    const pass = m2.cleaner.clean(log)
    await new Promise((resolve) => setImmediate(resolve))
    c.advance(10_000)
    expect(log.applyRetention()).toBeGreaterThan(0)
    const r = await pass
    expect(['aborted', 'cleaned']).toContain(r.reason)
    expect(readdirSync(log.dir).filter((n) => n.endsWith('.cleaned') || n.endsWith('.swap'))).toEqual([])
    const recs = readRecords(m, log)
    for (let i = 1; i < recs.length; i++) expect(recs[i]!.offset).toBeGreaterThan(recs[i - 1]!.offset)
  })
})

describe('cleanup.policy and retention', () => {
  it('retention deletes segments only when the policy includes delete', async () => {
    const c = clock()
    for (const [policy, expectDeleted] of [['compact', false], ['compact,delete', true], ['delete', true]] as const) {
      const { m, log } = setup({ cleanupPolicy: policy, retentionMs: 1000 }, c)
      writeUpdates(log, 5, 40, 5, c.now())
      const segments = log.state().segmentCount
      c.advance(10_000)
      const deleted = m.applyRetention()
      expect(deleted > 0).toBe(expectDeleted)
      expect(log.state().segmentCount < segments).toBe(expectDeleted)
      // The cleaner takes only logs whose policy includes compact.
      expect(m.cleaner.inspect(log) === null).toBe(policy === 'delete')
    }
  })
})
