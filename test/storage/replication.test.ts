// What followers need from storage: the leader epoch cache (Kafka's rules and file format), appending
// the leader's batches verbatim (byte-identical segment files, producer and transaction state as the
// leader's), the diverging-epoch check of a follower's fetch, truncation (segments, indexes, producer
// state, .txnindex, epoch cache, high watermark) durable across a reopen, and the high-watermark
// checkpoint.
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { buildRecordBatch } from '../../src/protocol/records/index.js'
import {
  LEADER_EPOCH_CHECKPOINT, LeaderEpochCache, REPLICATION_OFFSET_CHECKPOINT, formatEpochCheckpoint, parseEpochCheckpoint,
  PartitionLog, type LogManager,
} from '../../src/storage/index.js'
import { T0, decodeAll, makeBatch, openManager, regionBytes, tempDir } from './helpers.js'

let clock = T0
const now = (): number => clock
let dirs: ReturnType<typeof tempDir>[] = []
beforeEach(() => {
  clock = T0
  dirs = []
})
afterEach(() => {
  for (const d of dirs) d.cleanup()
})

function newDir(): string {
  const d = tempDir('skein-repl-')
  dirs.push(d)
  return d.path
}

function open(path: string, overrides = {}, cleanShutdown = true, followsLeo = false): LogManager {
  return openManager(path, overrides, { now, cleanShutdown, highWatermarkFollowsLeo: followsLeo })
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

function idem(pid: number, epoch: number, seq: number, n = 1): Buffer {
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${seq + i}`), value: Buffer.from(`p${pid}-${seq + i}`), timestamp: clock })),
    native.crc32c,
    { producerId: pid, producerEpoch: epoch, baseSequence: seq },
  )
}

function txn(pid: number, epoch: number, seq: number): Buffer {
  return buildRecordBatch([{ key: Buffer.from('t'), value: Buffer.from(`t${pid}-${seq}`), timestamp: clock }], native.crc32c, {
    producerId: pid, producerEpoch: epoch, baseSequence: seq, transactional: true,
  })
}

/** Copies the leader's log to the follower the way a fetcher does: follower reads from its LEO, appended verbatim. */
function replicate(lm: LogManager, leader: PartitionLog, follower: PartitionLog, maxBytes = 1 << 20): void {
  for (;;) {
    const r = leader.readForFollower(follower.logEndOffset, maxBytes, follower.latestEpoch)
    expect(r.divergingEpoch).toBeUndefined()
    if (r.bytes === 0) break
    follower.appendAsFollower(regionBytes(r))
    lm.releaseLease(r.leaseId)
  }
  follower.maybeIncrementHighWatermark(leader.highWatermark)
}

function logFiles(log: PartitionLog): Map<string, Buffer> {
  const out = new Map<string, Buffer>()
  for (const name of readdirSync(log.dir).sort()) if (name.endsWith('.log')) out.set(name, readFileSync(join(log.dir, name)))
  return out
}

describe('the leader epoch cache', () => {
  it("keeps Kafka's checkpoint format and refuses anything else", () => {
    const text = formatEpochCheckpoint([{ epoch: 0, startOffset: 0 }, { epoch: 3, startOffset: 120 }])
    expect(text).toBe('0\n2\n0 0\n3 120\n')
    expect(parseEpochCheckpoint(text)).toEqual([{ epoch: 0, startOffset: 0 }, { epoch: 3, startOffset: 120 }])
    expect(parseEpochCheckpoint('0\n0\n')).toEqual([])
    for (const bad of ['1\n0\n', '0\n2\n0 0\n', '0\n1\n0 x\n', '0\n2\n3 10\n2 20\n', '0\n2\n2 20\n3 10\n', '0\n1\n0 0\njunk\n', '0\n1\n-1 0\n']) {
      expect(parseEpochCheckpoint(bad), JSON.stringify(bad)).toBeNull()
    }
  })

  it("assigns monotonically and answers endOffsetFor by Kafka's rules", () => {
    const c = LeaderEpochCache.empty(newDir())
    expect(c.endOffsetFor(0, 10)).toEqual({ leaderEpoch: -1, endOffset: -1 })
    expect(c.assign(1, 5)).toBe(true)
    expect(c.assign(1, 8)).toBe(false)
    expect(c.assign(3, 20)).toBe(true)
    expect(c.assign(6, 40)).toBe(true)
    expect(c.all()).toEqual([{ epoch: 1, startOffset: 5 }, { epoch: 3, startOffset: 20 }, { epoch: 6, startOffset: 40 }])
    // The latest epoch ends at the LEO; an epoch between entries: the floor epoch, ending where the next starts.
    expect(c.endOffsetFor(6, 55)).toEqual({ leaderEpoch: 6, endOffset: 55 })
    expect(c.endOffsetFor(3, 55)).toEqual({ leaderEpoch: 3, endOffset: 40 })
    expect(c.endOffsetFor(4, 55)).toEqual({ leaderEpoch: 3, endOffset: 40 })
    // Older than every entry: the requested epoch, ending where the first known one starts.
    expect(c.endOffsetFor(0, 55)).toEqual({ leaderEpoch: 0, endOffset: 5 })
    // Newer than every entry, or undefined: unknown.
    expect(c.endOffsetFor(7, 55)).toEqual({ leaderEpoch: -1, endOffset: -1 })
    expect(c.endOffsetFor(-1, 55)).toEqual({ leaderEpoch: -1, endOffset: -1 })
    expect(c.epochForOffset(4)).toBe(-1)
    expect(c.epochForOffset(20)).toBe(3)
    expect(c.epochForOffset(100)).toBe(6)
    // A lower start offset, or an older epoch at a later offset, drops the entries it contradicts.
    expect(c.assign(5, 30)).toBe(true)
    expect(c.all()).toEqual([{ epoch: 1, startOffset: 5 }, { epoch: 3, startOffset: 20 }, { epoch: 5, startOffset: 30 }])
    c.truncateFromEnd(20)
    expect(c.all()).toEqual([{ epoch: 1, startOffset: 5 }])
    c.assign(2, 10)
    c.assign(4, 15)
    c.truncateFromStart(12)
    expect(c.all()).toEqual([{ epoch: 2, startOffset: 12 }, { epoch: 4, startOffset: 15 }])
    expect(c.assign(-1, 3)).toBe(false)
  })
})

describe('a follower appending its leader’s batches', () => {
  it('ends with segment files, producer state, aborted transactions and epochs identical to the leader’s', async () => {
    const lm = open(newDir(), { segmentBytes: 400 })
    const fm = open(newDir(), { segmentBytes: 400 })
    const leader = lm.create('t', 0)
    const follower = fm.create('t', 0)
    leader.assignLeaderEpoch(0)
    let seq = 0
    for (let i = 0; i < 6; i++, seq += 2) leader.append(idem(7, 0, seq, 2), { leaderEpoch: 0, now: clock })
    leader.append(txn(9, 1, 0), { leaderEpoch: 0, now: clock })
    leader.appendTxnMarker({ producerId: 9, producerEpoch: 1, coordinatorEpoch: 4, commit: false })
    // A leader change: epoch 3 from the LEO.
    leader.assignLeaderEpoch(3)
    for (let i = 0; i < 5; i++, seq += 2) leader.append(idem(7, 0, seq, 2), { leaderEpoch: 3, now: clock })
    leader.append(txn(9, 1, 1), { leaderEpoch: 3, now: clock })
    leader.appendTxnMarker({ producerId: 9, producerEpoch: 1, coordinatorEpoch: 4, commit: true })
    leader.append(makeBatch('plain', 3), { leaderEpoch: 3, now: clock })
    leader.setHighWatermark(leader.logEndOffset)
    expect(leader.segmentBaseOffsets().length).toBeGreaterThan(3)

    // Small fetches (one batch at a time) and one large one give the same files.
    replicate(lm, leader, follower, 1)
    expect(follower.logEndOffset).toBe(leader.logEndOffset)
    expect(follower.highWatermark).toBe(leader.highWatermark)
    expect(follower.segmentBaseOffsets()).toEqual(leader.segmentBaseOffsets())
    expect(logFiles(follower)).toEqual(logFiles(leader))
    expect(follower.describeProducers()).toEqual(leader.describeProducers())
    expect(follower.txnIndex.all()).toEqual(leader.txnIndex.all())
    expect(follower.epochEntries()).toEqual([{ epoch: 0, startOffset: 0 }, { epoch: 3, startOffset: 14 }])
    expect(follower.epochEntries()).toEqual(leader.epochEntries())
    expect(follower.lastStableOffset).toBe(leader.lastStableOffset)

    // The follower takes over: a retry of the producer's last batch is a duplicate there too.
    follower.assignLeaderEpoch(5)
    const retry = follower.append(idem(7, 0, seq - 2, 2), { leaderEpoch: 5, now: clock })
    expect(retry.duplicate).toBe(true)
    const next = follower.append(idem(7, 0, seq, 1), { leaderEpoch: 5, now: clock })
    expect(next.baseOffset).toBe(leader.logEndOffset)
    expect(codeOf(() => follower.append(idem(7, 0, seq + 5, 1), { leaderEpoch: 5, now: clock }))).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    await lm.close()
    await fm.close()
  })

  it('refuses damaged batches and offsets behind its LEO, writing nothing; leaves a trailing partial batch', async () => {
    const lm = open(newDir())
    const fm = open(newDir())
    const leader = lm.create('t', 0)
    const follower = fm.create('t', 0)
    for (let i = 0; i < 3; i++) leader.append(makeBatch(`b${i}`, 2), { leaderEpoch: 1, now: clock })
    const r = leader.readForFollower(0, 1 << 20, -1)
    const bytes = regionBytes(r)
    lm.releaseLease(r.leaseId)
    const corrupt = Buffer.from(bytes)
    corrupt[corrupt.length - 1]! ^= 1
    expect(codeOf(() => follower.appendAsFollower(corrupt))).toBe(ErrorCode.CORRUPT_MESSAGE)
    expect(follower.logEndOffset).toBe(0)
    // Whole batches are taken, the cut one is left.
    const partial = follower.appendAsFollower(bytes.subarray(0, bytes.length - 5))
    expect(partial).toMatchObject({ batches: 2, lastOffset: 3, lastEpoch: 1, logEndOffset: 4 })
    expect(codeOf(() => follower.appendAsFollower(bytes))).toBe(ErrorCode.CORRUPT_MESSAGE)
    expect(follower.appendAsFollower(Buffer.alloc(0))).toMatchObject({ batches: 0, logEndOffset: 4 })
    await lm.close()
    await fm.close()
  })
})

describe("a follower's fetch on the leader", () => {
  it('answers the diverging epoch, or OFFSET_OUT_OF_RANGE for an epoch it does not know', async () => {
    const lm = open(newDir())
    const leader = lm.create('t', 0)
    for (let i = 0; i < 5; i++) leader.append(makeBatch(`a${i}`, 2), { leaderEpoch: 0, now: clock })
    leader.assignLeaderEpoch(2)
    for (let i = 0; i < 5; i++) leader.append(makeBatch(`b${i}`, 2), { leaderEpoch: 2, now: clock })
    expect(leader.epochEntries()).toEqual([{ epoch: 0, startOffset: 0 }, { epoch: 2, startOffset: 10 }])
    // The follower wrote epoch 1 up to 12: the leader's epoch 0 ended at 10.
    expect(leader.readForFollower(12, 1 << 20, 1)).toMatchObject({ bytes: 0, divergingEpoch: { leaderEpoch: 0, endOffset: 10 } })
    // Epoch 0 up to 11: past its end here.
    expect(leader.readForFollower(11, 1 << 20, 0).divergingEpoch).toEqual({ leaderEpoch: 0, endOffset: 10 })
    // In step: data up to the LEO, whatever the high watermark.
    leader.setHighWatermark(12)
    const ok = leader.readForFollower(14, 1 << 20, 2)
    expect(ok.divergingEpoch).toBeUndefined()
    expect(decodeAll(regionBytes(ok)).map((x) => x.offset)).toEqual([14, 15, 16, 17, 18, 19])
    lm.releaseLease(ok.leaseId)
    // A consumer's read stops at the high watermark.
    const consumer = leader.read(10, 1 << 20)
    expect(decodeAll(regionBytes(consumer)).map((x) => x.offset)).toEqual([10, 11])
    lm.releaseLease(consumer.leaseId)
    expect(codeOf(() => leader.readForFollower(14, 1 << 20, 7))).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
    expect(leader.endOffsetForEpoch(1)).toEqual({ leaderEpoch: 0, endOffset: 10 })
    expect(leader.endOffsetForEpoch(2)).toEqual({ leaderEpoch: 2, endOffset: 20 })
    await lm.close()
  })
})

describe('truncation', () => {
  it('cuts segments, indexes, producer state, aborted transactions, epochs and the high watermark; a reopen keeps the cut', async () => {
    const path = newDir()
    const m = open(path, { segmentBytes: 500, indexIntervalBytes: 1 })
    const log = m.create('t', 0)
    let seq = 0
    for (let i = 0; i < 8; i++, seq++) log.append(idem(7, 0, seq), { leaderEpoch: 1, now: clock })
    log.append(txn(9, 0, 0), { leaderEpoch: 1, now: clock })
    log.appendTxnMarker({ producerId: 9, producerEpoch: 0, coordinatorEpoch: 0, commit: false })
    const keep = log.logEndOffset
    log.assignLeaderEpoch(2)
    for (let i = 0; i < 8; i++, seq++) log.append(idem(7, 0, seq), { leaderEpoch: 2, now: clock })
    log.append(txn(9, 0, 1), { leaderEpoch: 2, now: clock })
    log.appendTxnMarker({ producerId: 9, producerEpoch: 0, coordinatorEpoch: 0, commit: false })
    log.setHighWatermark(log.logEndOffset)
    const segmentsBefore = log.segmentBaseOffsets()
    expect(segmentsBefore.length).toBeGreaterThan(3)
    expect(log.txnIndex.all()).toHaveLength(2)

    expect(log.truncateTo(keep + 3)).toBe(true)
    expect(log.logEndOffset).toBe(keep + 3)
    expect(log.highWatermark).toBe(keep + 3)
    expect(log.segmentBaseOffsets().every((b) => b < keep + 3)).toBe(true)
    expect(log.epochEntries()).toEqual([{ epoch: 1, startOffset: 0 }, { epoch: 2, startOffset: keep }])
    expect(log.txnIndex.all()).toHaveLength(1)
    expect(log.describeProducers().find((p) => p.producerId === 7)!.lastSequence).toBe(10)
    // Reads see exactly the offsets kept; the next append continues the sequence from the cut.
    const all = log.read(0, 1 << 20)
    expect(decodeAll(regionBytes(all)).map((x) => x.offset)).toEqual(Array.from({ length: keep + 3 }, (_, i) => i))
    m.releaseLease(all.leaseId)
    expect(log.append(idem(7, 0, 11), { leaderEpoch: 4, now: clock }).baseOffset).toBe(keep + 3)
    expect(log.truncateTo(1000)).toBe(false)

    // Into the middle of an older segment: the batch holding the offset goes whole.
    const mid = log.segmentBaseOffsets()[1]! + 1
    log.truncateTo(mid)
    expect(log.logEndOffset).toBeLessThanOrEqual(mid)
    const end = log.logEndOffset
    expect(log.epochEntries()).toEqual([{ epoch: 1, startOffset: 0 }])
    expect(log.txnIndex.all()).toHaveLength(0)
    log.append(makeBatch('after', 2), { leaderEpoch: 6, now: clock })
    await log.flush()
    await log.writeCheckpoints()
    expect(readFileSync(join(log.dir, LEADER_EPOCH_CHECKPOINT), 'utf8')).toBe(`0\n2\n1 0\n6 ${end}\n`)
    await m.close()

    for (const clean of [true, false]) {
      const again = open(path, { segmentBytes: 500, indexIntervalBytes: 1 }, clean)
      const reopened = again.get('t', 0)!
      expect(reopened.logEndOffset).toBe(end + 2)
      expect(reopened.epochEntries()).toEqual([{ epoch: 1, startOffset: 0 }, { epoch: 6, startOffset: end }])
      const r = reopened.read(0, 1 << 20, { logEnd: true })
      expect(decodeAll(regionBytes(r)).map((x) => x.offset)).toEqual(Array.from({ length: end + 2 }, (_, i) => i))
      again.releaseLease(r.leaseId)
      await again.close()
    }
  })

  it("drops the epoch a replica started as leader without writing anything when it follows again, so its fetches stop diverging", async () => {
    // Broker A leads at epoch 1, then at epoch 2 (from its LEO, nothing written), then B leads at epoch 3
    // from the same LEO. A's fetch from B names epoch 2, which B never had: B answers the diverging epoch
    // 1 ending at the LEO. The truncation there cuts no record, but must drop A's empty epoch 2 (Kafka's
    // truncateTo), else every fetch of A would diverge again and A never caught up.
    const am = open(newDir())
    const bm = open(newDir())
    const a = am.create('t', 0)
    const b = bm.create('t', 0)
    a.assignLeaderEpoch(1)
    for (let i = 0; i < 3; i++) a.append(makeBatch(`a${i}`, 2), { leaderEpoch: 1, now: clock })
    replicate(am, a, b)
    a.assignLeaderEpoch(2)
    b.assignLeaderEpoch(3)
    b.append(makeBatch('b', 2), { leaderEpoch: 3, now: clock })
    const diverged = b.readForFollower(a.logEndOffset, 1 << 20, a.latestEpoch)
    expect(diverged.divergingEpoch).toEqual({ leaderEpoch: 1, endOffset: 6 })
    expect(a.truncateTo(diverged.divergingEpoch!.endOffset)).toBe(false)
    expect(a.epochEntries()).toEqual([{ epoch: 1, startOffset: 0 }])
    expect(a.latestEpoch).toBe(1)
    replicate(bm, b, a)
    expect(a.logEndOffset).toBe(b.logEndOffset)
    expect(a.epochEntries()).toEqual(b.epochEntries())
    await am.close()
    await bm.close()
  })

  it('empties the log at a new start (the leader no longer has what the follower needs)', async () => {
    const m = open(newDir())
    const log = m.create('t', 0)
    for (let i = 0; i < 3; i++) log.append(makeBatch(`b${i}`, 2), { leaderEpoch: 1, now: clock })
    log.truncateFullyAndStartAt(50)
    expect(log.replicaState()).toEqual({ logStartOffset: 50, logEndOffset: 50, highWatermark: 50, latestEpoch: -1 })
    expect(log.appendAsFollower(buildRecordBatch([{ value: Buffer.from('x'), timestamp: clock }], native.crc32c, { baseOffset: 50, partitionLeaderEpoch: 4 }))).toMatchObject({ logEndOffset: 51, lastEpoch: 4 })
    expect(log.epochEntries()).toEqual([{ epoch: 4, startOffset: 50 }])
    await m.close()
  })
})

describe('recovery and checkpoints of a replica', () => {
  it('rebuilds the epochs of batches written after the last checkpoint when it opens after a crash', async () => {
    const path = newDir()
    const m = open(path)
    const log = m.create('t', 0)
    log.append(makeBatch('a', 2), { leaderEpoch: 1, now: clock })
    await log.flush()
    await log.writeCheckpoints()
    // Not in the file yet: a crash now.
    log.append(makeBatch('b', 2), { leaderEpoch: 4, now: clock })
    expect(readFileSync(join(log.dir, LEADER_EPOCH_CHECKPOINT), 'utf8')).toBe('0\n1\n1 0\n')
    const again = open(path, {}, false)
    expect(again.get('t', 0)!.epochEntries()).toEqual([{ epoch: 1, startOffset: 0 }, { epoch: 4, startOffset: 2 }])
    await again.close()
    void m
  })

  it('writes the high watermark to replication-offset-checkpoint and starts from it, unless it follows the LEO', async () => {
    const path = newDir()
    const m = open(path)
    const log = m.create('t', 0)
    for (let i = 0; i < 4; i++) log.append(makeBatch(`b${i}`, 2), { leaderEpoch: 0, now: clock })
    expect(log.highWatermark).toBe(0)
    expect(log.maybeIncrementHighWatermark(5)).toBe(5)
    expect(log.maybeIncrementHighWatermark(3)).toBe(5)
    expect(log.maybeIncrementHighWatermark(100)).toBe(8)
    log.setHighWatermark(6)
    await m.checkpointHighWatermarks()
    expect(readFileSync(join(log.dir, REPLICATION_OFFSET_CHECKPOINT), 'utf8')).toBe('0\n1\nt 0 6\n')
    await m.close()
    const again = open(path)
    expect(again.get('t', 0)!.highWatermark).toBe(6)
    again.get('t', 0)!.setHighWatermarkFollowsLeo(true)
    expect(again.get('t', 0)!.highWatermark).toBe(8)
    await again.close()
    // A single broker's partitions open with the HW at the LEO and write no such file.
    const single = open(newDir(), {}, true, true)
    const s = single.create('t', 0)
    s.append(makeBatch('x', 2), { leaderEpoch: 0, now: clock })
    await single.close()
    expect(readdirSync(s.dir)).not.toContain(REPLICATION_OFFSET_CHECKPOINT)
  })

  it('calls the periodic checkpoints only on the partitions that have something to write', async () => {
    const m = open(newDir())
    const logs = Array.from({ length: 50 }, (_, p) => m.create('t', p))
    for (const log of logs) {
      log.append(makeBatch('b', 2), { leaderEpoch: 0, now: clock })
      log.setHighWatermark(2)
    }
    await m.checkpointHighWatermarks()
    clock += 120_000
    await m.flushDue(clock)
    for (const log of logs) expect(log.checkpointsDue).toBe(false)
    // Two partitions move on: only they are due, and only they are asked to write (at 100,000 idle
    // partitions a call each, every 5 s, held the broker's thread).
    logs[7]!.append(makeBatch('c', 1), { leaderEpoch: 0, now: clock })
    logs[7]!.setHighWatermark(3)
    logs[31]!.setHighWatermark(1)
    expect(logs.filter((l) => l.highWatermarkCheckpointDue).map((l) => l.partition)).toEqual([7, 31])
    const hwCalls = vi.spyOn(PartitionLog.prototype, 'writeHighWatermarkCheckpoint')
    const allCalls = vi.spyOn(PartitionLog.prototype, 'writeCheckpoints')
    try {
      await m.checkpointHighWatermarks()
      expect(hwCalls.mock.contexts.map((l) => (l as PartitionLog).partition)).toEqual([7, 31])
      expect(readFileSync(join(logs[7]!.dir, REPLICATION_OFFSET_CHECKPOINT), 'utf8')).toBe('0\n1\nt 7 3\n')
      logs[7]!.append(makeBatch('d', 1), { leaderEpoch: 0, now: clock })
      logs[7]!.setHighWatermark(4)
      clock += 120_000
      await m.flushDue(clock)
      // The checkpoint pass: partition 7's HW moved again; 31 wrote its HW above and has nothing left.
      expect(allCalls.mock.contexts.map((l) => (l as PartitionLog).partition)).toEqual([7])
    } finally {
      hwCalls.mockRestore()
      allCalls.mockRestore()
    }
    await m.close()
  })
})
