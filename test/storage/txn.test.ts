// Transactions in the storage engine: open-transaction tracking and the last stable offset, markers
// (control batches), the .txnindex files and read_committed reads, restarts (clean, crashed, corrupt
// index), retention, DeleteRecords, and DescribeProducers.
import { readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { buildRecordBatch, decodeRecords, iterateBatches, CONTROL_MASK, TRANSACTIONAL_MASK } from '../../src/protocol/records/index.js'
import type { LogManager, PartitionLog } from '../../src/storage/index.js'
import { TXN_INDEX_ENTRY_BYTES, decodeTxnIndex, encodeTxnIndexEntry, txnIndexFileName } from '../../src/storage/txn-index.js'
import { CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT, buildMarkerBatch, parseControlRecord } from '../../src/storage/txn-marker.js'
import { T0, makeBatch, openManager, regionBytes, tempDir } from './helpers.js'

let dir: ReturnType<typeof tempDir>
let clock: number
const now = (): number => clock
beforeEach(() => {
  dir = tempDir('skein-txn-')
  clock = T0
})
afterEach(() => dir.cleanup())

function open(overrides = {}, cleanShutdown = true): LogManager {
  return openManager(dir.path, overrides, { now, cleanShutdown })
}

/** A transactional batch of n records of producer pid (epoch, sequence). */
function txn(pid: number, epoch: number, seq: number, n = 1, tag = `p${pid}s${seq}`): Buffer {
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${i}`), value: Buffer.from(`${tag}-${i}`), timestamp: clock })),
    native.crc32c,
    { producerId: pid, producerEpoch: epoch, baseSequence: seq, transactional: true },
  )
}

function idem(pid: number, epoch: number, seq: number): Buffer {
  return buildRecordBatch([{ value: Buffer.from(`i${pid}-${seq}`), timestamp: clock }], native.crc32c, { producerId: pid, producerEpoch: epoch, baseSequence: seq })
}

function append(log: PartitionLog, payload: Buffer) {
  return log.append(payload, { leaderEpoch: 0 })
}

function marker(log: PartitionLog, pid: number, epoch: number, commit: boolean, coordinatorEpoch = 0) {
  return log.appendTxnMarker({ producerId: pid, producerEpoch: epoch, coordinatorEpoch, commit })
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

/** What a read_committed consumer keeps (Kafka's client rule): batches below the read's end, aborted ones and markers dropped. */
function committedValues(m: LogManager, log: PartitionLog, from = log.logStartOffset): string[] {
  const r = log.read(from, 1 << 30, { isolation: 'read_committed' })
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  const aborted = [...r.abortedTransactions].sort((a, b) => a.firstOffset - b.firstOffset)
  const abortedPids = new Set<number>()
  const out: string[] = []
  for (const b of iterateBatches(bytes)) {
    const view = bytes.subarray(b.position, b.position + b.size)
    while (aborted.length > 0 && aborted[0]!.firstOffset <= b.lastOffset) abortedPids.add(aborted.shift()!.producerId)
    const attributes = view.readInt16BE(21)
    const pid = Number(view.readBigInt64BE(43))
    if ((attributes & CONTROL_MASK) !== 0) {
      if (parseControlRecord(view)?.type === CONTROL_TYPE_ABORT) abortedPids.delete(pid)
      continue
    }
    if ((attributes & TRANSACTIONAL_MASK) !== 0 && abortedPids.has(pid)) continue
    for (const rec of decodeRecords(view, 0)) out.push(rec.value!.toString())
  }
  return out
}

describe('markers', () => {
  it('builds Kafka EndTransactionMarker control batches', () => {
    const b = buildMarkerBatch({ producerId: 7, producerEpoch: 3, coordinatorEpoch: 42, commit: true, timestamp: T0, leaderEpoch: 5, baseOffset: 100 })
    expect(b.readInt16BE(21) & (CONTROL_MASK | TRANSACTIONAL_MASK)).toBe(CONTROL_MASK | TRANSACTIONAL_MASK)
    expect(Number(b.readBigInt64BE(0))).toBe(100)
    expect(Number(b.readBigInt64BE(43))).toBe(7)
    expect(b.readInt16BE(51)).toBe(3)
    expect(b.readInt32BE(53)).toBe(-1)
    const [rec] = decodeRecords(b, 0)
    expect([...rec!.key!]).toEqual([0, 0, 0, CONTROL_TYPE_COMMIT])
    expect([...rec!.value!]).toEqual([0, 0, 0, 0, 0, 42])
    expect(parseControlRecord(b)).toEqual({ type: CONTROL_TYPE_COMMIT, coordinatorEpoch: 42 })
    const a = buildMarkerBatch({ producerId: 7, producerEpoch: 3, coordinatorEpoch: 1, commit: false, timestamp: T0, leaderEpoch: 0, baseOffset: 0 })
    expect(parseControlRecord(a)).toEqual({ type: CONTROL_TYPE_ABORT, coordinatorEpoch: 1 })
    expect(parseControlRecord(a.subarray(0, 63))).toBeNull()
  })

  it('tracks open transactions, moves the LSO on markers and indexes aborts', async () => {
    const m = open()
    const log = m.create('t', 0)
    append(log, makeBatch('plain', 2)) // 0-1
    expect(log.lastStableOffset).toBe(2)
    append(log, txn(1, 0, 0, 2)) // 2-3 opens p1 at 2
    append(log, txn(2, 0, 0, 1)) // 4 opens p2 at 4
    expect(log.logEndOffset).toBe(5)
    expect(log.lastStableOffset).toBe(2)
    expect(log.state().lastStableOffset).toBe(2)
    expect(log.producerState.openTransactions()).toEqual([{ producerId: 1, firstOffset: 2 }, { producerId: 2, firstOffset: 4 }])
    expect(marker(log, 1, 0, false, 3)).toEqual({ offset: 5 }) // abort p1: LSO -> p2's 4
    expect(log.lastStableOffset).toBe(4)
    expect(log.txnIndex.all()).toEqual([{ producerId: 1, firstOffset: 2, lastOffset: 5, lastStableOffset: 4 }])
    append(log, txn(2, 0, 1, 1)) // 6
    expect(marker(log, 2, 0, true)).toEqual({ offset: 7 })
    expect(log.lastStableOffset).toBe(8)
    expect(log.logEndOffset).toBe(8)
    expect(log.txnIndex.all()).toHaveLength(1)
    const described = log.describeProducers()
    expect(described.map((d) => [d.producerId, d.producerEpoch, d.lastSequence, d.coordinatorEpoch, d.currentTxnStartOffset])).toEqual([
      [1, 0, 1, 3, -1],
      [2, 0, 1, 0, -1],
    ])
    expect(committedValues(m, log)).toEqual(['plain-0', 'plain-1', 'p2s0-0', 'p2s1-0'])
    await m.close()
  })

  it('writes a marker for a producer without an open transaction or any state', async () => {
    const m = open()
    const log = m.create('t', 0)
    expect(marker(log, 9, 2, true)).toEqual({ offset: 0 })
    expect(marker(log, 9, 2, false)).toEqual({ offset: 1 })
    expect(log.txnIndex.size).toBe(0)
    expect(log.lastStableOffset).toBe(2)
    expect(log.describeProducers()).toMatchObject([{ producerId: 9, producerEpoch: 2, lastSequence: -1, currentTxnStartOffset: -1 }])
    await m.close()
  })

  it('fences old producer epochs and old coordinator epochs; a newer marker epoch fences the producer', async () => {
    const m = open()
    const log = m.create('t', 0)
    append(log, txn(1, 2, 0))
    expect(codeOf(() => marker(log, 1, 1, true, 0))).toBe(ErrorCode.INVALID_PRODUCER_EPOCH)
    marker(log, 1, 2, true, 5)
    expect(codeOf(() => marker(log, 1, 2, true, 4))).toBe(ErrorCode.TRANSACTION_COORDINATOR_FENCED)
    // The coordinator aborts for a timed-out producer with a bumped epoch: the zombie's writes are refused.
    append(log, txn(1, 2, 1))
    marker(log, 1, 3, false, 5)
    expect(codeOf(() => append(log, txn(1, 2, 2)))).toBe(ErrorCode.INVALID_PRODUCER_EPOCH)
    expect(log.lastStableOffset).toBe(log.logEndOffset)
    expect(codeOf(() => marker(log, -1, 0, true))).toBe(ErrorCode.INVALID_REQUEST)
    await m.close()
  })

  it('refuses non-transactional writes inside an open transaction and transactional batches without a producer id', async () => {
    const m = open()
    const log = m.create('t', 0)
    append(log, txn(1, 0, 0))
    expect(codeOf(() => append(log, idem(1, 0, 1)))).toBe(ErrorCode.INVALID_TXN_STATE)
    const noPid = buildRecordBatch([{ value: Buffer.from('x') }], native.crc32c, { transactional: true })
    expect(codeOf(() => append(log, noPid))).toBe(ErrorCode.INVALID_RECORD)
    // A producer's marker cannot come from a client.
    const forged = buildMarkerBatch({ producerId: 1, producerEpoch: 0, coordinatorEpoch: 0, commit: true, timestamp: T0, leaderEpoch: 0, baseOffset: 0 })
    expect(codeOf(() => append(log, forged))).toBe(ErrorCode.INVALID_RECORD)
    expect(log.logEndOffset).toBe(1)
    await m.close()
  })
})

describe('read_committed reads', () => {
  it('stop at the LSO and list the aborted transactions of the returned range only', async () => {
    const m = open()
    const log = m.create('t', 0)
    append(log, txn(1, 0, 0, 3, 'a')) // 0-2 aborted
    marker(log, 1, 0, false) // 3
    append(log, txn(2, 0, 0, 2, 'c')) // 4-5 committed
    marker(log, 2, 0, true) // 6
    append(log, txn(1, 0, 3, 1, 'b')) // 7 aborted
    marker(log, 1, 0, false) // 8
    append(log, txn(3, 0, 0, 1, 'open')) // 9 open
    append(log, makeBatch('tail')) // 10
    expect(log.lastStableOffset).toBe(9)
    const uncommitted = log.read(0, 1 << 20)
    expect(uncommitted.abortedTransactions).toEqual([])
    expect(uncommitted.lastStableOffset).toBe(9)
    const all = regionBytes(uncommitted)
    m.releaseLease(uncommitted.leaseId)
    const committed = log.read(0, 1 << 20, { isolation: 'read_committed' })
    expect(committed.abortedTransactions).toEqual([{ producerId: 1, firstOffset: 0 }, { producerId: 1, firstOffset: 7 }])
    expect(committed.bytes).toBeLessThan(all.length)
    m.releaseLease(committed.leaseId)
    expect(committedValues(m, log)).toEqual(['c-0', 'c-1'])
    // From offset 4: the first abort ended before it.
    const later = log.read(4, 1 << 20, { isolation: 'read_committed' })
    expect(later.abortedTransactions).toEqual([{ producerId: 1, firstOffset: 7 }])
    m.releaseLease(later.leaseId)
    // A small budget returns one batch; aborts past it are left out.
    const small = log.read(0, 1, { isolation: 'read_committed' })
    expect(small.abortedTransactions).toEqual([{ producerId: 1, firstOffset: 0 }])
    m.releaseLease(small.leaseId)
    // At the LSO: nothing to read, no list.
    const atLso = log.read(9, 1 << 20, { isolation: 'read_committed' })
    expect(atLso.bytes).toBe(0)
    expect(atLso.abortedTransactions).toEqual([])
    marker(log, 3, 0, true)
    expect(committedValues(m, log)).toEqual(['c-0', 'c-1', 'open-0', 'tail-0'])
    await m.close()
  })
})

describe('restarts', () => {
  async function buildLog(m: LogManager): Promise<PartitionLog> {
    const log = m.create('t', 0, { segmentBytes: 400 })
    for (let i = 0; i < 6; i++) {
      append(log, txn(1, 0, i * 2, 2, `x${i}`))
      marker(log, 1, 0, i % 2 === 0) // even: commit, odd: abort
    }
    append(log, txn(2, 0, 0, 1, 'open'))
    return log
  }

  it('keeps open transactions, the LSO and the index across a clean restart', async () => {
    let m = open()
    let log = await buildLog(m)
    const lso = log.lastStableOffset
    const index = log.txnIndex.all()
    const values = committedValues(m, log)
    expect(index).toHaveLength(3)
    expect(log.segmentBaseOffsets().length).toBeGreaterThan(2)
    await m.close()
    m = open()
    log = m.get('t', 0)!
    expect(log.recovery.txnIndexRebuiltFrom).toBeUndefined()
    expect(log.lastStableOffset).toBe(lso)
    expect(log.txnIndex.all()).toEqual(index)
    expect(committedValues(m, log)).toEqual(values)
    expect(values).toEqual(['x0-0', 'x0-1', 'x2-0', 'x2-1', 'x4-0', 'x4-1'])
    marker(log, 2, 0, false)
    expect(log.txnIndex.all()).toHaveLength(4)
    expect(committedValues(m, log)).toEqual(values)
    await m.close()
  })

  it('rebuilds the .txnindex of recovered segments after a crash, and corrupt files on a clean open', async () => {
    let m = open()
    let log = await buildLog(m)
    await log.flush()
    // After the last flush: p2's open transaction is aborted, into the active segment's .txnindex.
    append(log, txn(3, 0, 0, 1, 'open3'))
    marker(log, 2, 0, false)
    const index = log.txnIndex.all()
    const lso = log.lastStableOffset
    expect(index.at(-1)).toMatchObject({ producerId: 2 })
    const active = log.segmentBaseOffsets().at(-1)!
    // Simulated crash: no clean-shutdown marker, and the unflushed index entry is lost.
    await m.close()
    truncateSync(join(log.dir, txnIndexFileName(active)), 0)
    const files = readdirSync(log.dir).filter((n) => n.endsWith('.txnindex')).sort()
    expect(files.length).toBeGreaterThan(1)
    m = open({}, false)
    log = m.get('t', 0)!
    expect(log.recovery.txnIndexRebuiltFrom).toBeLessThanOrEqual(active)
    expect(log.recovery.abortedTxnsRebuilt).toBeGreaterThanOrEqual(1)
    expect(log.txnIndex.all()).toEqual(index)
    expect(log.lastStableOffset).toBe(lso)
    await m.close()
    // A file that is not whole entries is rebuilt even after a clean shutdown.
    const first = join(log.dir, files[0]!)
    writeFileSync(first, Buffer.concat([readFileSync(first), Buffer.from([1, 2, 3])]))
    m = open()
    log = m.get('t', 0)!
    expect(log.recovery.txnIndexRebuiltFrom).toBe(0)
    expect(log.txnIndex.all()).toEqual(index)
    expect(statSync(first).size % TXN_INDEX_ENTRY_BYTES).toBe(0)
    await m.close()
  })

  it('retention and DeleteRecords drop the index files of deleted segments', async () => {
    const m = open()
    const log = await buildLog(m)
    marker(log, 2, 0, true)
    const before = readdirSync(log.dir).filter((n) => n.endsWith('.txnindex')).length
    const bases = log.segmentBaseOffsets()
    log.deleteRecordsBefore(bases[2]!)
    const after = readdirSync(log.dir).filter((n) => n.endsWith('.txnindex')).sort()
    expect(after.length).toBeLessThan(before)
    for (const name of after) expect(Number(name.slice(0, 20))).toBeGreaterThanOrEqual(bases[2]!)
    for (const e of log.txnIndex.all()) expect(e.lastOffset).toBeGreaterThanOrEqual(bases[2]!)
    await m.close()
  })
})

describe('.txnindex format', () => {
  it('is Kafka 34-byte entries', () => {
    const e = { producerId: 5, firstOffset: 10, lastOffset: 20, lastStableOffset: 11 }
    const b = encodeTxnIndexEntry(e)
    expect(b.length).toBe(34)
    expect(b.readInt16BE(0)).toBe(0)
    expect(Number(b.readBigInt64BE(2))).toBe(5)
    expect(Number(b.readBigInt64BE(26))).toBe(11)
    expect(decodeTxnIndex(Buffer.concat([b, b]))).toEqual([e, e])
    expect(decodeTxnIndex(b.subarray(0, 33))).toBeNull()
    const badVersion = Buffer.from(b)
    badVersion.writeInt16BE(1, 0)
    expect(decodeTxnIndex(badVersion)).toBeNull()
    expect(txnIndexFileName(7)).toBe('00000000000000000007.txnindex')
  })
})
