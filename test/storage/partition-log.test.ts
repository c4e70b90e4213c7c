import { existsSync, fstatSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP } from '../../src/domain/list-offsets.js'
import { BatchHeaderView, buildRecordBatch, CRC_OFFSET } from '../../src/protocol/records/index.js'
import { native } from '../../src/addon/index.js'
import { LogManager, validateTopicName } from '../../src/storage/index.js'
import { LOG_SUFFIX, fileInDir, segmentFileName } from '../../src/storage/segment.js'
import { T0, config, decodeAll, makeBatch, openManager, readAll, regionBytes, tempDir } from './helpers.js'

function codeOf(fn: () => unknown): number {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(KafkaError)
    return (err as KafkaError).code
  }
  throw new Error('expected a KafkaError')
}

let dir: ReturnType<typeof tempDir>
beforeEach(() => {
  dir = tempDir()
})
afterEach(() => dir.cleanup())

describe('append', () => {
  it('assigns consecutive offsets in place, moves LEO and HW, keeps the leader epoch', async () => {
    const m = openManager(dir.path)
    const log = m.create('orders', 0)
    const a = log.append(makeBatch('a', 3), { leaderEpoch: 5, now: T0 })
    expect(a).toEqual({ baseOffset: 0, lastOffset: 2, logAppendTime: -1, logStartOffset: 0, recordCount: 3 })
    const payload = Buffer.concat([makeBatch('b', 2), makeBatch('c', 4)])
    const b = log.append(payload, { leaderEpoch: 6, now: T0 })
    expect(b).toMatchObject({ baseOffset: 3, lastOffset: 8, recordCount: 6 })
    expect(new BatchHeaderView(payload, 0).baseOffset).toBe(3)
    expect(log.logEndOffset).toBe(9)
    expect(log.highWatermark).toBe(9)
    const recs = readAll(m, log)
    expect(recs.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
    expect(recs.map((r) => r.value!.toString())).toEqual(['a-0', 'a-1', 'a-2', 'b-0', 'b-1', 'c-0', 'c-1', 'c-2', 'c-3'])
    const r = log.read(0, 1 << 20)
    const bytes = regionBytes(r)
    expect(new BatchHeaderView(bytes, 0).partitionLeaderEpoch).toBe(5)
    m.releaseLease(r.leaseId)
    await m.close()
  })

  it('writes nothing when any batch of the payload is invalid', async () => {
    const m = openManager(dir.path, { maxMessageBytes: 500 })
    const log = m.create('t', 0)
    log.append(makeBatch('ok', 2), { leaderEpoch: 0 })
    const before = log.state()
    const bad = makeBatch('bad', 2)
    bad[bad.length - 1]! ^= 1
    const cases: [Buffer, number][] = [
      [Buffer.concat([makeBatch('x'), bad]), ErrorCode.CORRUPT_MESSAGE],
      [Buffer.concat([makeBatch('x'), makeBatch('y').subarray(0, 20)]), ErrorCode.CORRUPT_MESSAGE],
      [Buffer.concat([makeBatch('x'), makeBatch('big', 1, T0, 600)]), ErrorCode.MESSAGE_TOO_LARGE],
      [Buffer.alloc(0), ErrorCode.INVALID_RECORD],
    ]
    for (const [payload, code] of cases) {
      expect(codeOf(() => log.append(payload, { leaderEpoch: 0 }))).toBe(code)
      expect(log.state()).toEqual(before)
    }
    const logFile = join(log.dir, '00000000000000000000.log')
    expect(statSync(logFile).size).toBe(before.sizeBytes)
    await m.close()
  })

  it('rejects a payload larger than segment.bytes with RECORD_LIST_TOO_LARGE', async () => {
    const m = openManager(dir.path, { segmentBytes: 1000 })
    const log = m.create('t', 0)
    const payload = Buffer.concat(Array.from({ length: 20 }, (_, i) => makeBatch(`p${i}`, 1, T0, 40)))
    expect(codeOf(() => log.append(payload, { leaderEpoch: 0 }))).toBe(ErrorCode.RECORD_LIST_TOO_LARGE)
    expect(log.logEndOffset).toBe(0)
    await m.close()
  })

  it('stamps LogAppendTime into the batch and returns it', async () => {
    const m = openManager(dir.path, { messageTimestampType: 'LogAppendTime' })
    const log = m.create('t', 0)
    const res = log.append(makeBatch('a', 2, 5), { leaderEpoch: 0, now: T0 + 77 })
    expect(res.logAppendTime).toBe(T0 + 77)
    const r = log.read(0, 10_000)
    const v = new BatchHeaderView(regionBytes(r), 0)
    expect(v.isLogAppendTime).toBe(true)
    expect(v.maxTimestamp).toBe(T0 + 77)
    expect(v.crc).toBe(v.computeCrc(native.crc32c))
    m.releaseLease(r.leaseId)
    // Under LogAppendTime every record carries the batch's time: the first one answers MAX_TIMESTAMP.
    expect(log.maxTimestamp()).toEqual({ offset: 0, timestamp: T0 + 77 })
    await m.close()
  })

  it('answers MAX_TIMESTAMP with the record that has the largest timestamp, inside its batch', async () => {
    // Kafka 3.8+ (KAFKA-16310) names that record, not the batch's last offset: librdkafka's 0081 checks it.
    const m = openManager(dir.path)
    const log = m.create('t', 0)
    log.append(makeBatch('a', 2, T0 + 100), { leaderEpoch: 0 })
    log.append(buildRecordBatch([T0 + 500, T0 + 520, T0 + 510].map((timestamp, i) => ({ value: Buffer.from(`m${i}`), timestamp })), native.crc32c), { leaderEpoch: 0 })
    log.append(makeBatch('b', 2, T0 + 300), { leaderEpoch: 0 })
    expect(log.fetchOffsetByTimestamp(MAX_TIMESTAMP)).toEqual({ offset: 3, timestamp: T0 + 520 })
    await m.close()
  })
})

describe('read', () => {
  it('finds every offset, mid-batch ones included, through the sparse index', async () => {
    const m = openManager(dir.path, { indexIntervalBytes: 256 })
    const log = m.create('t', 0)
    for (let i = 0; i < 200; i++) log.append(makeBatch(`b${i}`, 3, T0, 20), { leaderEpoch: 0 })
    expect(log.logEndOffset).toBe(600)
    for (let off = 0; off < 600; off += 7) {
      const r = log.read(off, 1)
      expect(r.regions).toHaveLength(1)
      const bytes = regionBytes(r)
      const v = new BatchHeaderView(bytes, 0)
      expect(v.baseOffset).toBe(off - (off % 3))
      expect(v.sizeInBytes).toBe(bytes.length)
      m.releaseLease(r.leaseId)
    }
    await m.close()
  })

  it('returns whole batches up to maxBytes, at least one with minOneBatch', async () => {
    const m = openManager(dir.path)
    const log = m.create('t', 0)
    const sizes: number[] = []
    for (let i = 0; i < 5; i++) {
      const b = makeBatch(`b${i}`, 1, T0, 100)
      sizes.push(b.length)
      log.append(b, { leaderEpoch: 0 })
    }
    const two = log.read(0, sizes[0]! + sizes[1]! + 10)
    expect(two.bytes).toBe(sizes[0]! + sizes[1]!)
    expect(decodeAll(regionBytes(two)).map((r) => r.offset)).toEqual([0, 1])
    m.releaseLease(two.leaseId)
    const one = log.read(2, 10)
    expect(one.bytes).toBe(sizes[2])
    m.releaseLease(one.leaseId)
    const none = log.read(2, 10, { minOneBatch: false })
    expect(none.regions).toEqual([])
    expect(none.leaseId).toBe(0)
    const atLeo = log.read(5, 1000)
    expect(atLeo.regions).toEqual([])
    expect(atLeo.logEndOffset).toBe(5)
    expect(codeOf(() => log.read(6, 1000))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
    expect(codeOf(() => log.read(-1, 1000))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
    await m.close()
  })

  it('spans segments and returns one region per segment', async () => {
    const m = openManager(dir.path, { segmentBytes: 1024 })
    const log = m.create('t', 0)
    for (let i = 0; i < 40; i++) log.append(makeBatch(`b${i}`, 2, T0, 50), { leaderEpoch: 0 })
    const state = log.state()
    expect(state.segmentCount).toBeGreaterThan(4)
    const r = log.read(3, 1 << 20)
    expect(r.regions.length).toBe(state.segmentCount)
    expect(new Set(r.regions.map((x) => x.fd)).size).toBe(state.segmentCount)
    const recs = decodeAll(regionBytes(r))
    expect(recs[0]!.offset).toBe(2)
    expect(recs.map((x) => x.offset)).toEqual(Array.from({ length: 78 }, (_, i) => i + 2))
    m.releaseLease(r.leaseId)
    // A bounded read stops at a batch boundary inside a later segment.
    const bounded = log.read(0, 1500)
    expect(bounded.bytes).toBeLessThanOrEqual(1500)
    expect(bounded.regions.length).toBe(2)
    m.releaseLease(bounded.leaseId)
    await m.close()
  })

  it('never returns batches at or past maxOffset / the high watermark', async () => {
    const m = openManager(dir.path, {}, { highWatermarkFollowsLeo: false })
    const log = m.create('t', 0)
    for (let i = 0; i < 4; i++) log.append(makeBatch(`b${i}`, 2), { leaderEpoch: 0 })
    expect(log.highWatermark).toBe(0)
    log.setHighWatermark(4)
    expect(log.highWatermark).toBe(4)
    const r = log.read(0, 1 << 20, { maxOffset: log.highWatermark })
    expect(decodeAll(regionBytes(r)).map((x) => x.offset)).toEqual([0, 1, 2, 3])
    m.releaseLease(r.leaseId)
    expect(log.read(4, 1 << 20, { maxOffset: 4 }).regions).toEqual([])
    // HW in the middle of a batch: that batch is not committed yet.
    const mid = log.read(2, 1 << 20, { maxOffset: 3 })
    expect(mid.regions).toEqual([])
    log.setHighWatermark(1000)
    expect(log.highWatermark).toBe(8)
    log.setHighWatermark(-5)
    expect(log.highWatermark).toBe(0)
    await m.close()
  })
})

describe('segment roll', () => {
  it('rolls when the next payload does not fit in segment.bytes', async () => {
    const m = openManager(dir.path, { segmentBytes: 500 })
    const log = m.create('t', 0)
    const b = makeBatch('x', 1, T0, 100)
    for (let i = 0; i < 9; i++) log.append(makeBatch(`x${i}`, 1, T0, 100), { leaderEpoch: 0 })
    const perSegment = Math.floor(500 / b.length)
    expect(log.state().segmentCount).toBe(Math.ceil(9 / perSegment))
    const files = readdirSync(log.dir).filter((f) => f.endsWith('.log')).sort()
    expect(files[1]).toBe(String(perSegment).padStart(20, '0') + '.log')
    for (const f of files) expect(statSync(join(log.dir, f)).size).toBeLessThanOrEqual(500)
    await m.close()
  })

  it('rolls by segment.ms measured from the first batch timestamp (injected clock)', async () => {
    let now = T0
    const m = openManager(dir.path, { segmentMs: 1000 }, { now: () => now })
    const log = m.create('t', 0)
    log.append(makeBatch('a', 1, now), { leaderEpoch: 0 })
    now += 500
    log.append(makeBatch('b', 1, now), { leaderEpoch: 0 })
    expect(log.state().segmentCount).toBe(1)
    now += 600
    log.append(makeBatch('c', 1, now), { leaderEpoch: 0 })
    expect(log.segmentBaseOffsets()).toEqual([0, 2])
    await m.close()
  })

  it('rolls by segment.ms from creation time when batches carry no timestamp', async () => {
    let now = T0
    const m = openManager(dir.path, { segmentMs: 1000 }, { now: () => now })
    const log = m.create('t', 0)
    log.append(makeBatch('a', 1, -1), { leaderEpoch: 0 })
    now += 1001
    log.append(makeBatch('b', 1, -1), { leaderEpoch: 0 })
    expect(log.segmentBaseOffsets()).toEqual([0, 1])
    await m.close()
  })

  it('rolls when the offset or time index is full, and lookups still work', async () => {
    // 3 offset entries, 2 time entries (one kept for the roll): index every batch.
    const m = openManager(dir.path, { segmentIndexBytes: 24, indexIntervalBytes: 1 })
    const log = m.create('t', 0)
    for (let i = 0; i < 12; i++) log.append(makeBatch(`b${i}`, 1, T0 + i), { leaderEpoch: 0 })
    const bases = log.segmentBaseOffsets()
    expect(bases.length).toBeGreaterThan(3)
    expect(bases).toEqual(bases.map((_, i) => i * bases[1]!))
    for (let off = 0; off < 12; off++) {
      const r = log.read(off, 1)
      expect(new BatchHeaderView(regionBytes(r), 0).baseOffset).toBe(off)
      m.releaseLease(r.leaseId)
    }
    for (let i = 0; i < 12; i++) expect(log.offsetForTimestamp(T0 + i)?.offset).toBe(i)
    // Rolled segments have their indexes trimmed to the used size.
    const idx = readdirSync(log.dir).filter((f) => f.endsWith('.index')).sort()
    expect(statSync(join(log.dir, idx[0]!)).size % 8).toBe(0)
    expect(statSync(join(log.dir, idx[0]!)).size).toBeLessThanOrEqual(24)
    await m.close()
  })
})

describe('retention and log start', () => {
  it('deletes segments past retention.ms, never the active one while it holds nothing expired', async () => {
    let now = T0
    const m = openManager(dir.path, { segmentBytes: 400, retentionMs: 10_000 }, { now: () => now })
    const log = m.create('t', 0)
    for (let i = 0; i < 6; i++) log.append(makeBatch(`old${i}`, 1, T0, 100), { leaderEpoch: 0 })
    now = T0 + 8_000
    for (let i = 0; i < 3; i++) log.append(makeBatch(`new${i}`, 1, now, 100), { leaderEpoch: 0 })
    const before = log.segmentBaseOffsets()
    expect(log.applyRetention(T0 + 9_000)).toBe(0)
    const deleted = log.applyRetention(T0 + 10_001)
    expect(deleted).toBeGreaterThan(0)
    const after = log.segmentBaseOffsets()
    expect(after).toEqual(before.slice(deleted))
    expect(log.logStartOffset).toBe(after[0])
    expect(readAll(m, log)[0]!.offset).toBe(log.logStartOffset)
    expect(readAll(m, log).map((r) => r.value!.toString().slice(0, 4))).toContain('new0')
    expect(codeOf(() => log.read(0, 100))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
    await m.close()
  })

  it('rolls and deletes an expired non-empty active segment', async () => {
    const m = openManager(dir.path, { retentionMs: 1000 })
    const log = m.create('t', 0)
    log.append(makeBatch('a', 3, T0), { leaderEpoch: 0 })
    expect(log.applyRetention(T0 + 5000)).toBe(1)
    expect(log.segmentBaseOffsets()).toEqual([3])
    expect(log.logStartOffset).toBe(3)
    expect(log.logEndOffset).toBe(3)
    expect(log.read(3, 100).regions).toEqual([])
    // The empty active segment is never deleted.
    expect(log.applyRetention(T0 + 50_000)).toBe(0)
    expect(log.append(makeBatch('b', 1, T0 + 50_000), { leaderEpoch: 0 }).baseOffset).toBe(3)
    await m.close()
  })

  it('deletes the oldest segments beyond retention.bytes', async () => {
    const m = openManager(dir.path, { segmentBytes: 300, retentionBytes: 700 })
    const log = m.create('t', 0)
    for (let i = 0; i < 12; i++) log.append(makeBatch(`b${i}`, 1, T0, 100), { leaderEpoch: 0 })
    const before = log.state()
    const deleted = log.applyRetention(T0)
    expect(deleted).toBeGreaterThan(0)
    const after = log.state()
    expect(after.segmentCount).toBe(before.segmentCount - deleted)
    expect(after.sizeBytes).toBeGreaterThanOrEqual(700 - 300)
    expect(after.sizeBytes).toBeLessThanOrEqual(before.sizeBytes)
    // One more deletion would drop below retention.bytes.
    const firstSize = statSync(join(log.dir, String(log.segmentBaseOffsets()[0]).padStart(20, '0') + '.log')).size
    expect(after.sizeBytes - firstSize).toBeLessThan(700)
    expect(log.logStartOffset).toBe(log.segmentBaseOffsets()[0])
    await m.close()
  })

  it('retention leaves compact-only topics alone', async () => {
    const m = openManager(dir.path, { segmentBytes: 300, retentionBytes: 0, retentionMs: 0, cleanupPolicy: 'compact' })
    const log = m.create('t', 0)
    // Compacted topics take keyed records only.
    const keyed = (tag: string) => buildRecordBatch([{ key: Buffer.from(tag), value: Buffer.from(`${tag}${'.'.repeat(100)}`), timestamp: T0 }], native.crc32c)
    for (let i = 0; i < 6; i++) log.append(keyed(`b${i}`), { leaderEpoch: 0 })
    expect(log.applyRetention(T0 + 1e9)).toBe(0)
    await m.close()
  })

  it('deleteRecordsBefore raises the log start and deletes segments wholly below it', async () => {
    const m = openManager(dir.path, { segmentBytes: 300 })
    const log = m.create('t', 0)
    for (let i = 0; i < 10; i++) log.append(makeBatch(`b${i}`, 2, T0, 80), { leaderEpoch: 0 })
    const bases = log.segmentBaseOffsets()
    const cut = bases[2]! + 1
    expect(log.deleteRecordsBefore(cut)).toBe(cut)
    expect(log.logStartOffset).toBe(cut)
    expect(log.segmentBaseOffsets()).toEqual(bases.slice(2))
    expect(codeOf(() => log.read(cut - 1, 100))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
    // Reading at the log start returns the batch containing it.
    const r = log.read(cut, 1)
    expect(new BatchHeaderView(regionBytes(r), 0).baseOffset).toBe(cut - 1)
    m.releaseLease(r.leaseId)
    expect(log.deleteRecordsBefore(2)).toBe(cut)
    expect(codeOf(() => log.deleteRecordsBefore(log.highWatermark + 1))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
    expect(log.deleteRecordsBefore(-1)).toBe(20)
    expect(log.offsetForTimestamp(T0)).toBeNull()
    await m.close()
    const m2 = openManager(dir.path, { segmentBytes: 300 })
    expect(m2.get('t', 0)!.logStartOffset).toBe(20)
    await m2.close()
  })
})

describe('timestamps', () => {
  it('finds the first batch with maxTimestamp >= t, earliest and latest', async () => {
    const m = openManager(dir.path, { segmentBytes: 600, indexIntervalBytes: 100 })
    const log = m.create('t', 0)
    // Batches of 2 records; timestamps rise by 10 per batch, with one out-of-order batch.
    const stamps = [100, 110, 120, 115, 130, 140, 150, 160, 170, 180, 190, 200]
    for (const [i, ts] of stamps.entries()) log.append(makeBatch(`b${i}`, 2, T0 + ts, 60), { leaderEpoch: 0 })
    expect(log.state().segmentCount).toBeGreaterThan(1)
    expect(log.offsetForTimestamp(0)).toEqual({ offset: 0, timestamp: T0 + 100 })
    expect(log.offsetForTimestamp(T0 + 100)).toEqual({ offset: 0, timestamp: T0 + 100 })
    expect(log.offsetForTimestamp(T0 + 101)).toEqual({ offset: 2, timestamp: T0 + 110 })
    expect(log.offsetForTimestamp(T0 + 116)).toEqual({ offset: 4, timestamp: T0 + 120 })
    expect(log.offsetForTimestamp(T0 + 125)).toEqual({ offset: 8, timestamp: T0 + 130 })
    for (const [i, ts] of stamps.entries()) {
      if (i === 3) continue
      expect(log.offsetForTimestamp(T0 + ts)?.offset).toBe(2 * i)
    }
    expect(log.offsetForTimestamp(T0 + 201)).toBeNull()
    expect(log.maxTimestamp()).toEqual({ offset: 22, timestamp: T0 + 200 })
    await m.close()
    // Same answers after a clean reopen (time index final entries) and after a rebuild.
    for (const clean of [true, false]) {
      const m2 = openManager(dir.path, { segmentBytes: 600, indexIntervalBytes: 100 }, { cleanShutdown: clean })
      const l2 = m2.get('t', 0)!
      expect(l2.offsetForTimestamp(T0 + 125)).toEqual({ offset: 8, timestamp: T0 + 130 })
      expect(l2.offsetForTimestamp(T0 + 170)?.offset).toBe(16)
      expect(l2.maxTimestamp()).toEqual({ offset: 22, timestamp: T0 + 200 })
      await m2.close()
    }
  })

  it('answers the first record at or after the time, not the first of its batch: offset and timestamp of that record', async () => {
    // Kafka's LogSegment.findOffsetByTimestamp: records are decoded (decompressed when the batch is) and
    // the first one, in offset order, whose timestamp is >= the target is the answer.
    const stamped = (tss: number[], tag: string): Buffer =>
      buildRecordBatch(tss.map((ts, i) => ({ value: Buffer.from(`${tag}${i}`), timestamp: T0 + ts })), native.crc32c)
    for (const compressionType of ['producer', 'zstd', 'gzip'] as const) {
      const m = openManager(join(dir.path, compressionType), { compressionType, segmentBytes: 600, indexIntervalBytes: 100 })
      const log = m.create('t', 0)
      log.append(stamped([10, 20, 30, 40, 50], 'a'), { leaderEpoch: 0 }) // offsets 0-4
      log.append(stamped([60, 70, 80, 90, 100], 'b'), { leaderEpoch: 0 }) // offsets 5-9
      log.append(stamped([150, 110, 170], 'c'), { leaderEpoch: 0 }) // offsets 10-12, out of order
      expect(log.offsetForTimestamp(T0)).toEqual({ offset: 0, timestamp: T0 + 10 })
      expect(log.offsetForTimestamp(T0 + 25)).toEqual({ offset: 2, timestamp: T0 + 30 })
      expect(log.offsetForTimestamp(T0 + 30)).toEqual({ offset: 2, timestamp: T0 + 30 })
      expect(log.offsetForTimestamp(T0 + 55)).toEqual({ offset: 5, timestamp: T0 + 60 })
      expect(log.offsetForTimestamp(T0 + 95)).toEqual({ offset: 9, timestamp: T0 + 100 })
      expect(log.offsetForTimestamp(T0 + 105)).toEqual({ offset: 10, timestamp: T0 + 150 })
      expect(log.offsetForTimestamp(T0 + 160)).toEqual({ offset: 12, timestamp: T0 + 170 })
      expect(log.offsetForTimestamp(T0 + 171)).toBeNull()
      expect(log.fetchOffsetByTimestamp(T0 + 75)).toEqual({ offset: 7, timestamp: T0 + 80 })
      // From a log start inside a batch, records below it are not answers.
      log.deleteRecordsBefore(3)
      expect(log.offsetForTimestamp(T0 + 15)).toEqual({ offset: 3, timestamp: T0 + 40 })
      await m.close()
    }
  })

  it('answers per record for LogAppendTime too: every record carries its batch\'s append time', async () => {
    const m = openManager(dir.path, { messageTimestampType: 'LogAppendTime' })
    const log = m.create('t', 0)
    log.append(makeBatch('a', 3), { leaderEpoch: 0, now: T0 + 1000 })
    log.append(makeBatch('b', 3), { leaderEpoch: 0, now: T0 + 2000 })
    log.deleteRecordsBefore(1)
    expect(log.offsetForTimestamp(T0)).toEqual({ offset: 1, timestamp: T0 + 1000 })
    expect(log.offsetForTimestamp(T0 + 1001)).toEqual({ offset: 3, timestamp: T0 + 2000 })
    await m.close()
  })

  it('returns null for an empty log', async () => {
    const m = openManager(dir.path)
    const log = m.create('t', 0)
    expect(log.offsetForTimestamp(0)).toBeNull()
    expect(log.maxTimestamp()).toBeNull()
    await m.close()
  })
  it('fetchOffsetByTimestamp answers ListOffsets: special timestamps, isolation, none found, bad values', async () => {
    const m = openManager(dir.path, {}, { highWatermarkFollowsLeo: false })
    const log = m.create('t', 0)
    const empty = { offset: -1, timestamp: -1 }
    expect(log.fetchOffsetByTimestamp(MAX_TIMESTAMP)).toEqual(empty)
    expect(log.fetchOffsetByTimestamp(T0)).toEqual(empty)
    for (const [i, ts] of [100, 300, 200].entries()) log.append(makeBatch(`b${i}`, 2, T0 + ts), { leaderEpoch: 0 })
    // An open transaction from offset 6: read_committed's latest stops there.
    const open = buildRecordBatch([{ value: Buffer.from('t'), timestamp: T0 + 400 }], native.crc32c, { producerId: 7, producerEpoch: 0, baseSequence: 0, transactional: true })
    log.append(open, { leaderEpoch: 0 })
    log.setHighWatermark(7)
    log.deleteRecordsBefore(1)
    expect(log.fetchOffsetByTimestamp(EARLIEST_TIMESTAMP)).toEqual({ offset: 1, timestamp: -1 })
    expect(log.fetchOffsetByTimestamp(EARLIEST_LOCAL_TIMESTAMP)).toEqual({ offset: 1, timestamp: -1 })
    expect(log.fetchOffsetByTimestamp(LATEST_TIMESTAMP)).toEqual({ offset: 7, timestamp: -1 })
    expect(log.fetchOffsetByTimestamp(LATEST_TIMESTAMP, 'read_uncommitted')).toEqual({ offset: 7, timestamp: -1 })
    expect(log.fetchOffsetByTimestamp(LATEST_TIMESTAMP, 'read_committed')).toEqual({ offset: 6, timestamp: -1 })
    expect(log.fetchOffsetByTimestamp(MAX_TIMESTAMP)).toEqual({ offset: 6, timestamp: T0 + 400 })
    // The first batch at or after the time, not below the log start offset.
    expect(log.fetchOffsetByTimestamp(0)).toEqual({ offset: 1, timestamp: T0 + 100 })
    expect(log.fetchOffsetByTimestamp(T0 + 150)).toEqual({ offset: 2, timestamp: T0 + 300 })
    expect(log.fetchOffsetByTimestamp(T0 + 401)).toEqual(empty)
    expect(codeOf(() => log.fetchOffsetByTimestamp(-5))).toBe(ErrorCode.INVALID_REQUEST)
    await m.close()
  })
})

describe('leases', () => {
  it('keep a segment deleted by retention readable until released', async () => {
    const m = openManager(dir.path, { segmentBytes: 300, retentionMs: 1000 })
    const log = m.create('t', 0)
    for (let i = 0; i < 6; i++) log.append(makeBatch(`b${i}`, 1, T0, 100), { leaderEpoch: 0 })
    const r = log.read(0, 1 << 20)
    const expected = regionBytes(r)
    expect(log.applyRetention(T0 + 10_000)).toBeGreaterThan(0)
    expect(readdirSync(log.dir).filter((f) => f.startsWith('00000000000000000000'))).toEqual([])
    // Files are gone from the directory, the descriptors still read the same bytes.
    expect(regionBytes(r).equals(expected)).toBe(true)
    expect(decodeAll(expected)[0]!.value!.toString().startsWith('b0-0')).toBe(true)
    const fd = r.regions[0]!.fd
    m.releaseLease(r.leaseId)
    await log.flush() // the fsync of the rolled segments also pinned them until it finished
    expect(() => fstatSync(fd)).toThrow()
    m.releaseLease(r.leaseId)
    m.releaseLease(987654)
    expect(m.openLeases()).toBe(0)
    await m.close()
  })

  it('keep a deleted partition readable until released', async () => {
    const m = openManager(dir.path)
    const log = m.create('gone', 3)
    log.append(makeBatch('x', 2), { leaderEpoch: 0 })
    const r = log.read(0, 1000)
    m.delete('gone', 3)
    expect(m.get('gone', 3)).toBeUndefined()
    // Renamed at once (Kafka's `<topic>-<partition>.<uuid>-delete`), removed in the background.
    expect(readdirSync(dir.path)).toEqual([expect.stringMatching(/^gone-3\.[0-9a-f]{32}-delete$/)])
    await m.removalsDone()
    expect(readdirSync(dir.path)).toEqual([])
    expect(decodeAll(regionBytes(r)).map((x) => x.value!.toString())).toEqual(['x-0', 'x-1'])
    m.releaseLease(r.leaseId)
    expect(() => fstatSync(r.regions[0]!.fd)).toThrow()
    expect(codeOf(() => m.delete('gone', 3))).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    // The name can be reused at once.
    expect(m.create('gone', 3).logEndOffset).toBe(0)
    await m.close()
  })
})

describe('names and reopening', () => {
  it('validates topic names and partitions before touching the filesystem', async () => {
    const m = openManager(dir.path)
    const bad = ['', '.', '..', 'a/b', '../x', 'a\\b', 'x'.repeat(250), 'sp ace', 'tab\t', 'ü']
    for (const t of bad) {
      expect(codeOf(() => validateTopicName(t))).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION)
      expect(codeOf(() => m.create(t, 0))).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION)
    }
    for (const p of [-1, 1.5, NaN, 2 ** 31]) expect(codeOf(() => m.create('ok', p))).toBe(ErrorCode.INVALID_PARTITIONS)
    expect(readdirSync(dir.path)).toEqual([])
    expect(existsSync(join(dir.path, '..', 'x-0'))).toBe(false)
    for (const good of ['a', 'A.b_c-d', 'x'.repeat(249), '...']) expect(() => validateTopicName(good)).not.toThrow()
    expect(codeOf(() => m.create('ok', 0, { segmentBytes: -3 }))).toBe(ErrorCode.INVALID_CONFIG)
    await m.close()
  })

  it('create is idempotent and reopening finds every owned partition', async () => {
    const m = openManager(dir.path)
    const a = m.create('a-b', 0)
    expect(m.create('a-b', 0)).toBe(a)
    a.append(makeBatch('x', 3), { leaderEpoch: 0 })
    m.create('a-b', 1).append(makeBatch('y', 1), { leaderEpoch: 0 })
    m.create('c', 0)
    await m.close()
    expect(readFileSync(join(dir.path, 'a-b-0', 'recovery-point-offset-checkpoint'), 'utf8')).toBe('0\n1\na-b 0 3\n')
    // A log start of 0 is what an absent checkpoint means: no file is written for it.
    expect(existsSync(join(dir.path, 'a-b-0', 'log-start-offset-checkpoint'))).toBe(false)
    const m2 = LogManager.open({ dataDir: dir.path, defaults: config(), cleanShutdown: true, owns: (t) => t === 'a-b' })
    expect(m2.partitions().map((p) => `${p.topic}/${p.partition}`).sort()).toEqual(['a-b/0', 'a-b/1'])
    expect(m2.get('a-b', 0)!.logEndOffset).toBe(3)
    expect(readAll(m2, m2.get('a-b', 0)!).map((r) => r.value!.toString())).toEqual(['x-0', 'x-1', 'x-2'])
    expect(m2.get('c', 0)).toBeUndefined()
    await m2.close()
  })

  it('names segment files as path.join does, under a plain or a trailing-slash directory', () => {
    for (const d of [dir.path, `${dir.path}/`, '/', 'data/t-0', 'relative']) {
      for (const name of [segmentFileName(0, LOG_SUFFIX), `${segmentFileName(2 ** 40, LOG_SUFFIX)}.cleaned`, 'leader-epoch-checkpoint']) {
        expect(fileInDir(d, name)).toBe(join(d, name))
      }
    }
  })

  it('flush.messages fsyncs and moves the recovery point', async () => {
    let now = T0
    const m = openManager(dir.path, { flushMessages: 4 }, { now: () => now, checkpointIntervalMs: 1000 })
    const log = m.create('t', 0)
    log.append(makeBatch('a', 2), { leaderEpoch: 0 })
    expect(log.unflushedMessages()).toBe(2)
    log.append(makeBatch('b', 2), { leaderEpoch: 0 })
    await log.flush()
    expect(log.unflushedMessages()).toBe(0)
    now += 2000
    await m.flushDue(now)
    expect(readFileSync(join(log.dir, 'recovery-point-offset-checkpoint'), 'utf8')).toBe('0\n1\nt 0 4\n')
    log.updateConfig({ flushMessages: 2 ** 63, flushMs: 100 })
    log.append(makeBatch('c', 1), { leaderEpoch: 0 })
    expect(log.unflushedMessages()).toBe(1)
    await m.flushDue(now + 200)
    expect(log.unflushedMessages()).toBe(0)
    await m.close()
  })
})

describe('CRC of stored batches', () => {
  it('the stored CRC always matches after offset assignment', async () => {
    const m = openManager(dir.path)
    const log = m.create('t', 0)
    for (let i = 0; i < 5; i++) log.append(makeBatch(`b${i}`, 2), { leaderEpoch: i })
    const r = log.read(0, 1 << 20)
    const bytes = regionBytes(r)
    let pos = 0
    while (pos < bytes.length) {
      const v = new BatchHeaderView(bytes, pos)
      expect(bytes.readUInt32BE(pos + CRC_OFFSET)).toBe(v.computeCrc(native.crc32c))
      pos += v.sizeInBytes
    }
    m.releaseLease(r.leaseId)
    await m.close()
  })
})
