// Idempotent producer state: sequence and epoch rules, the 5-batch duplicate window, Kafka's snapshot
// layout, restarts (clean and crashed), recovery truncation, retention/DeleteRecords and expiration.
import { cpSync, readFileSync, readdirSync, truncateSync, writeFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { buildRecordBatch } from '../../src/protocol/records/index.js'
import type { LogManager, PartitionLog } from '../../src/storage/index.js'
import {
  decodeSnapshot,
  decrementSequence,
  encodeSnapshot,
  incrementSequence,
  snapshotFileName,
} from '../../src/storage/producer-state.js'
import type { ProducerStateEntry } from '../../src/storage/producer-state.js'
import { T0, openManager, readAll, tempDir } from './helpers.js'

const INT32_MAX = 0x7fffffff

function idem(producerId: number, epoch: number, seq: number, n = 1, tag = `p${producerId}e${epoch}s${seq}`, ts = T0): Buffer {
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`${tag}-${i}`), timestamp: ts })),
    native.crc32c,
    { producerId, producerEpoch: epoch, baseSequence: seq },
  )
}

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
let clock: number
const now = (): number => clock
beforeEach(() => {
  dir = tempDir('skein-pstate-')
  clock = T0
})
afterEach(() => dir.cleanup())

function open(path = dir.path, overrides = {}, opts: { cleanShutdown?: boolean; producerIdExpirationMs?: number } = {}): LogManager {
  return openManager(path, overrides, { now, cleanShutdown: opts.cleanShutdown ?? true, ...(opts.producerIdExpirationMs === undefined ? {} : { producerIdExpirationMs: opts.producerIdExpirationMs }) })
}

function append(log: PartitionLog, payload: Buffer) {
  return log.append(payload, { leaderEpoch: 0 })
}

describe('sequence and epoch checks', () => {
  it('accepts in-sequence batches, answers retries with the original offsets and refuses gaps', async () => {
    const m = open()
    const log = m.create('t', 0)
    expect(append(log, idem(7, 0, 0, 2))).toMatchObject({ baseOffset: 0, lastOffset: 1 })
    expect(append(log, idem(7, 0, 2, 3))).toMatchObject({ baseOffset: 2, lastOffset: 4 })
    const leo = log.logEndOffset
    const retry = append(log, idem(7, 0, 2, 3))
    expect(retry).toEqual({ baseOffset: 2, lastOffset: 4, logAppendTime: -1, logStartOffset: 0, recordCount: 3, duplicate: true })
    expect(log.logEndOffset).toBe(leo)
    expect(codeOf(() => append(log, idem(7, 0, 6)))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    // A batch overlapping a cached one without matching it exactly is out of order, not a duplicate.
    expect(codeOf(() => append(log, idem(7, 0, 2, 2)))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect(append(log, idem(7, 0, 5))).toMatchObject({ baseOffset: 5 })
    expect(log.logEndOffset).toBe(6)
    expect(readAll(m, log).map((r) => r.value!.toString())).toEqual(['p7e0s0-0', 'p7e0s0-1', 'p7e0s2-0', 'p7e0s2-1', 'p7e0s2-2', 'p7e0s5-0'])
    await m.close()
  })

  it('fences older epochs, requires sequence 0 for a new epoch, and keeps producers apart', async () => {
    const m = open()
    const log = m.create('t', 0)
    append(log, idem(1, 3, 0))
    append(log, idem(1, 3, 1))
    append(log, idem(2, 0, 0))
    expect(codeOf(() => append(log, idem(1, 2, 2)))).toBe(ErrorCode.INVALID_PRODUCER_EPOCH)
    expect(codeOf(() => append(log, idem(1, 4, 2)))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect(append(log, idem(1, 4, 0))).toMatchObject({ baseOffset: 3 })
    // The old epoch's batches are no longer duplicates: the whole epoch is fenced.
    expect(codeOf(() => append(log, idem(1, 3, 1)))).toBe(ErrorCode.INVALID_PRODUCER_EPOCH)
    expect(append(log, idem(2, 0, 1))).toMatchObject({ baseOffset: 4 })
    expect(log.producerState.entry(1)).toMatchObject({ producerEpoch: 4, batches: [{ firstSeq: 0, lastSeq: 0, firstOffset: 3, lastOffset: 3 }] })
    await m.close()
  })

  it('answers UNKNOWN_PRODUCER_ID to a producer it has no state for unless it starts at 0; refuses negative sequences and epochs', async () => {
    const m = open()
    const log = m.create('t', 0)
    expect(codeOf(() => append(log, idem(9, 0, 5)))).toBe(ErrorCode.UNKNOWN_PRODUCER_ID)
    expect(codeOf(() => append(log, idem(9, 0, -3)))).toBe(ErrorCode.INVALID_RECORD)
    expect(codeOf(() => append(log, idem(9, -2, 0)))).toBe(ErrorCode.INVALID_RECORD)
    expect(log.logEndOffset).toBe(0)
    expect(log.producerState.size).toBe(0)
    // producerId -1 is a plain producer: no checks, no state.
    append(log, buildRecordBatch([{ value: Buffer.from('x'), timestamp: T0 }], native.crc32c, { producerId: -1, baseSequence: 77 }))
    append(log, buildRecordBatch([{ value: Buffer.from('x'), timestamp: T0 }], native.crc32c, { producerId: -1, baseSequence: 77 }))
    expect(log.logEndOffset).toBe(2)
    expect(log.producerState.size).toBe(0)
    await m.close()
  })

  it('keeps the last 5 batches: older retries are out of order, recent ones duplicates', async () => {
    const m = open()
    const log = m.create('t', 0)
    for (let s = 0; s < 6; s++) append(log, idem(3, 0, s))
    expect(codeOf(() => append(log, idem(3, 0, 0)))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    for (let s = 1; s < 6; s++) expect(append(log, idem(3, 0, s))).toMatchObject({ baseOffset: s, duplicate: true })
    expect(log.logEndOffset).toBe(6)
    await m.close()
  })

  it('checks several batches of one payload in order and writes none of them on a gap', async () => {
    const m = open()
    const log = m.create('t', 0)
    expect(append(log, Buffer.concat([idem(4, 0, 0, 2), idem(4, 0, 2), idem(5, 0, 0)]))).toMatchObject({ baseOffset: 0, lastOffset: 3 })
    expect(codeOf(() => append(log, Buffer.concat([idem(4, 0, 3), idem(4, 0, 9)])))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect(log.logEndOffset).toBe(4)
    expect(log.producerState.entry(4)!.batches.map((b) => [b.firstSeq, b.lastSeq])).toEqual([[0, 1], [2, 2]])
    await m.close()
  })

  it('answers a retry under LogAppendTime with the append time of the original', async () => {
    const m = open(dir.path, { messageTimestampType: 'LogAppendTime' })
    const log = m.create('t', 0)
    clock = T0 + 5000
    expect(append(log, idem(6, 0, 0)).logAppendTime).toBe(T0 + 5000)
    clock = T0 + 9000
    expect(append(log, idem(6, 0, 0))).toMatchObject({ baseOffset: 0, logAppendTime: T0 + 5000, duplicate: true })
    await m.close()
  })

  it('wraps sequences around int32 like Kafka', () => {
    expect(incrementSequence(INT32_MAX - 1, 2)).toBe(0)
    expect(incrementSequence(INT32_MAX, 1)).toBe(0)
    expect(incrementSequence(5, 3)).toBe(8)
    expect(decrementSequence(0, 2)).toBe(INT32_MAX - 1)
    expect(decrementSequence(8, 3)).toBe(5)
  })
})

function entry(producerId: number, epoch: number, firstSeq: number, lastSeq: number, firstOffset: number, lastOffset: number, ts = T0): ProducerStateEntry {
  return { producerId, producerEpoch: epoch, batches: [{ firstSeq, lastSeq, firstOffset, lastOffset, timestamp: ts }], lastTimestamp: ts, coordinatorEpoch: -1, currentTxnFirstOffset: -1 }
}

describe('snapshots', () => {
  it('use Kafka ProducerSnapshot v1 layout and round-trip', () => {
    const e = entry(0x1_0000_0002, 7, 10, 14, 100, 104, T0)
    const buf = encodeSnapshot([e])
    expect(buf.length).toBe(2 + 4 + 4 + 46)
    expect(buf.readInt16BE(0)).toBe(1)
    expect(buf.readUInt32BE(2)).toBe(native.crc32c(buf.subarray(6)))
    expect(buf.readInt32BE(6)).toBe(1)
    expect(buf.readBigInt64BE(10)).toBe(0x1_0000_0002n)
    expect(buf.readInt16BE(18)).toBe(7)
    expect(buf.readInt32BE(20)).toBe(14)
    expect(buf.readBigInt64BE(24)).toBe(104n)
    expect(buf.readInt32BE(32)).toBe(4)
    expect(buf.readBigInt64BE(36)).toBe(BigInt(T0))
    expect(buf.readInt32BE(44)).toBe(-1)
    expect(buf.readBigInt64BE(48)).toBe(-1n)
    expect(decodeSnapshot(buf)).toEqual([e])
    // A sequence range that wrapped decodes back to the same first sequence.
    expect(decodeSnapshot(encodeSnapshot([entry(1, 0, INT32_MAX - 1, 1, 10, 13)]))![0]!.batches[0]!.firstSeq).toBe(INT32_MAX - 1)
    const bad = Buffer.from(buf)
    bad[30]! ^= 1
    expect(decodeSnapshot(bad)).toBeNull()
    expect(decodeSnapshot(buf.subarray(0, buf.length - 1))).toBeNull()
    const count = Buffer.from(buf)
    count.writeInt32BE(1_000_000_000, 6)
    expect(decodeSnapshot(count)).toBeNull()
  })

  it('a clean restart loads the snapshot written at the LEO (plus the batches before it): retries stay duplicates, sequences continue', async () => {
    let m = open()
    let log = m.create('t', 0)
    for (let s = 0; s < 6; s += 2) append(log, idem(11, 2, s, 2))
    append(log, idem(12, 0, 0))
    await m.close()
    const partDir = join(dir.path, 't-0')
    expect(readdirSync(partDir)).toContain(snapshotFileName(7))
    m = open()
    log = m.get('t', 0)!
    // The snapshot holds the last batch; the two before it are read back from the log just before it.
    expect(log.producerState.entry(11)).toMatchObject({
      producerEpoch: 2,
      batches: [{ firstSeq: 0, lastSeq: 1, firstOffset: 0, lastOffset: 1 }, { firstSeq: 2, lastSeq: 3 }, { firstSeq: 4, lastSeq: 5, firstOffset: 4, lastOffset: 5 }],
    })
    expect(append(log, idem(11, 2, 4, 2))).toMatchObject({ baseOffset: 4, duplicate: true })
    expect(append(log, idem(11, 2, 0, 2))).toMatchObject({ baseOffset: 0, duplicate: true })
    expect(codeOf(() => append(log, idem(11, 1, 6)))).toBe(ErrorCode.INVALID_PRODUCER_EPOCH)
    expect(codeOf(() => append(log, idem(12, 0, 2)))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect(append(log, idem(11, 2, 6))).toMatchObject({ baseOffset: 7 })
    expect(append(log, idem(12, 0, 1))).toMatchObject({ baseOffset: 8 })
    await m.close()
  })

  it('a clean restart just after a roll reads the batches before the snapshot from the segments before the active one', async () => {
    // The snapshot at the LEO holds the last batch only, and the active segment holds nothing older: the
    // 4 batches before it are in the previous segment. Without them a retry of an in-flight batch after
    // a clean restart (or a leadership move to a cleanly restarted replica) is OUT_OF_ORDER_SEQUENCE_NUMBER,
    // a fatal error for librdkafka's idempotent producer, instead of a duplicate.
    let m = open(dir.path, { segmentBytes: 400 })
    let log = m.create('t', 0)
    let s = 0
    while (log.segmentBaseOffsets().length < 2) append(log, idem(31, 0, s, 1, `v${s++}`))
    // The roll happened at the append of s - 1, the only batch of the active segment.
    expect(log.segmentBaseOffsets()[1]).toBe(s - 1)
    await m.close()
    m = open(dir.path, { segmentBytes: 400 })
    log = m.get('t', 0)!
    expect(log.producerState.entry(31)!.batches.map((b) => b.firstSeq)).toEqual([s - 5, s - 4, s - 3, s - 2, s - 1])
    for (let r = s - 5; r < s; r++) expect(append(log, idem(31, 0, r, 1, `v${r}`))).toMatchObject({ baseOffset: r, duplicate: true })
    expect(append(log, idem(31, 0, s))).toMatchObject({ baseOffset: s })
    await m.close()
  })

  it('a truncation while the snapshot of a roll is being written leaves the write alone and the log usable', async () => {
    // A follower rolls (its snapshot is written in the background, .tmp then rename) and truncates right
    // after, on its leader's diverging epoch. The reload must not delete the .tmp under the write: its
    // rename would fail and fail the partition (KAFKA_STORAGE_ERROR on every later append).
    const m = open(dir.path, { segmentBytes: 400 })
    const log = m.create('t', 0)
    let s = 0
    while (log.segmentBaseOffsets().length < 2) append(log, idem(41, 0, s, 1, `v${s++}`))
    const partDir = join(dir.path, 't-0')
    const tmp = `${snapshotFileName(s - 1)}.tmp`
    for (let i = 0; i < 10 && !readdirSync(partDir).includes(tmp); i++) await Promise.resolve()
    expect(readdirSync(partDir)).toContain(tmp)
    expect(log.truncateTo(s - 3)).toBe(true)
    await log.producerState.drain()
    // The snapshot of the cut roll is stale: it goes once written.
    expect(readdirSync(partDir).filter((n) => n.includes('.snapshot'))).not.toContain(snapshotFileName(s - 1))
    expect(append(log, idem(41, 0, s - 3, 1, 'again'))).toMatchObject({ baseOffset: s - 3 })
    await m.close()
  })

  it('resumes a sequence at int32 MAX from a snapshot: the next batch starts at 0', async () => {
    const m0 = open()
    const log0 = m0.create('t', 0)
    append(log0, idem(1, 0, 0))
    await m0.close()
    const partDir = join(dir.path, 't-0')
    for (const f of readdirSync(partDir)) if (f.endsWith('.snapshot')) writeFileSync(join(partDir, f), encodeSnapshot([entry(1, 0, INT32_MAX, INT32_MAX, 0, 0)]))
    const m = open()
    const log = m.get('t', 0)!
    expect(codeOf(() => append(log, idem(1, 0, 1)))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect(append(log, idem(1, 0, 0, 2))).toMatchObject({ baseOffset: 1, lastOffset: 2 })
    expect(append(log, idem(1, 0, 2))).toMatchObject({ baseOffset: 3 })
    await m.close()
  })

  it('after a crash, the snapshot of the last roll plus a replay of the log restore all 5 batches', async () => {
    const m = open(dir.path, { segmentBytes: 400 })
    const log = m.create('t', 0)
    for (let s = 0; s < 12; s++) append(log, idem(21, 0, s, 1, `v${s}`))
    for (let s = 0; s < 3; s++) append(log, idem(22, 1, s, 1, `w${s}`))
    expect(log.segmentBaseOffsets().length).toBeGreaterThan(2)
    await log.producerState.drain()
    const snaps = log.producerState.snapshotOffsets()
    expect(snaps.length).toBeGreaterThan(1)
    // The files as a crash would leave them: everything written (page cache), no close, no final snapshot.
    const crashed = join(dir.path, 'crashed')
    cpSync(join(dir.path, 't-0'), join(crashed, 't-0'), { recursive: true })
    const m2 = open(crashed, { segmentBytes: 400 }, { cleanShutdown: false })
    const log2 = m2.get('t', 0)!
    expect(log2.logEndOffset).toBe(15)
    expect(log2.producerState.entry(21)!.batches.map((b) => b.firstSeq)).toEqual([7, 8, 9, 10, 11])
    for (let s = 7; s < 12; s++) expect(append(log2, idem(21, 0, s))).toMatchObject({ baseOffset: s, duplicate: true })
    expect(append(log2, idem(22, 1, 2))).toMatchObject({ baseOffset: 14, duplicate: true })
    expect(append(log2, idem(21, 0, 12))).toMatchObject({ baseOffset: 15 })
    await m2.close()
    await m.close()
  })

  it('recovery truncation: a torn last batch is forgotten, later snapshots are deleted, a corrupt snapshot falls back', async () => {
    const m = open()
    const log = m.create('t', 0)
    for (let s = 0; s < 4; s++) append(log, idem(31, 0, s, 1, `x${s}`))
    await m.close()
    const partDir = join(dir.path, 't-0')
    // The last batch is torn (half written), and a snapshot claims to be past the LEO.
    const logFile = join(partDir, '00000000000000000000.log')
    truncateSync(logFile, statSync(logFile).size - 10)
    writeFileSync(join(partDir, snapshotFileName(50)), encodeSnapshot([entry(31, 0, 40, 40, 49, 49)]))
    // The clean snapshot at offset 4 is now past the LEO too (3) and must not be used.
    const m2 = open(dir.path, {}, { cleanShutdown: false })
    const log2 = m2.get('t', 0)!
    expect(log2.logEndOffset).toBe(3)
    expect(readdirSync(partDir).filter((f) => f.endsWith('.snapshot'))).toEqual([])
    expect(log2.producerState.entry(31)!.batches.map((b) => b.firstSeq)).toEqual([0, 1, 2])
    // The torn batch's retry is new data now, written once.
    expect(append(log2, idem(31, 0, 3, 1, 'x3'))).toEqual({ baseOffset: 3, lastOffset: 3, logAppendTime: -1, logStartOffset: 0, recordCount: 1 })
    await m2.close()

    // A corrupt latest snapshot is deleted and the log replayed instead.
    const snap = join(partDir, snapshotFileName(4))
    const bytes = readFileSync(snap)
    bytes[bytes.length - 1]! ^= 0xff
    writeFileSync(snap, bytes)
    const m3 = open()
    const log3 = m3.get('t', 0)!
    expect(readdirSync(partDir)).not.toContain(snapshotFileName(4))
    expect(log3.producerState.entry(31)!.batches.map((b) => b.firstSeq)).toEqual([0, 1, 2, 3])
    expect(append(log3, idem(31, 0, 3))).toMatchObject({ baseOffset: 3, duplicate: true })
    await m3.close()
  })

  it('DeleteRecords and retention keep producer state (sequences continue) but drop snapshots of deleted segments', async () => {
    let m = open(dir.path, { segmentBytes: 400 })
    let log = m.create('t', 0)
    for (let s = 0; s < 10; s++) append(log, idem(41, 0, s))
    await log.producerState.drain()
    expect(log.deleteRecordsBefore(-1)).toBe(10)
    await log.producerState.drain()
    const first = log.segmentBaseOffsets()[0]!
    expect(log.producerState.snapshotOffsets().every((o) => o >= first)).toBe(true)
    const partDir = join(dir.path, 't-0')
    for (const f of readdirSync(partDir)) if (f.endsWith('.snapshot')) expect(Number(f.slice(0, 20))).toBeGreaterThanOrEqual(first)
    expect(codeOf(() => append(log, idem(41, 0, 12)))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect(append(log, idem(41, 0, 9))).toMatchObject({ baseOffset: 9, duplicate: true })
    await m.close()
    m = open(dir.path, { segmentBytes: 400 })
    log = m.get('t', 0)!
    expect(log.logStartOffset).toBe(10)
    expect(append(log, idem(41, 0, 10))).toMatchObject({ baseOffset: 10 })
    await m.close()
  })
})

describe('expiration', () => {
  it('drops producers idle for producer.id.expiration.ms, on the timer and on load', async () => {
    let m = open(dir.path, {}, { producerIdExpirationMs: 60_000 })
    let log = m.create('t', 0)
    append(log, idem(51, 0, 0, 1, 'a', T0))
    append(log, idem(52, 0, 0, 1, 'b', T0 + 50_000))
    clock = T0 + 59_999
    expect(m.removeExpiredProducers()).toBe(0)
    clock = T0 + 60_000
    expect(m.removeExpiredProducers()).toBe(1)
    expect(log.producerState.entry(51)).toBeUndefined()
    expect(codeOf(() => append(log, idem(51, 0, 1, 1, 'a', clock)))).toBe(ErrorCode.UNKNOWN_PRODUCER_ID)
    expect(append(log, idem(51, 0, 0, 1, 'a', clock))).toMatchObject({ baseOffset: 2 })
    await m.close()
    clock = T0 + 115_000
    m = open(dir.path, {}, { producerIdExpirationMs: 60_000 })
    log = m.get('t', 0)!
    expect(log.producerState.activeProducers().map((e) => e.producerId)).toEqual([51])
    await m.close()
  })
})
