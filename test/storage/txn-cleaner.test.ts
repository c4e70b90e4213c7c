// The log cleaner and transactions: committed transactional records are compacted like any others,
// aborted ones are removed (and never supersede committed values), records of open transactions and
// everything from the LSO on are left alone, and markers stay, so read_committed reads stay right.
import { afterEach, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { BatchHeaderView, CONTROL_MASK, TRANSACTIONAL_MASK, buildRecordBatch, decodeRecords, iterateBatches } from '../../src/protocol/records/index.js'
import type { LogManager, PartitionLog } from '../../src/storage/index.js'
import { CONTROL_TYPE_ABORT, parseControlRecord } from '../../src/storage/txn-marker.js'
import { T0, openManager, regionBytes, tempDir } from './helpers.js'

const dirs: Array<() => void> = []
const managers: LogManager[] = []
afterEach(async () => {
  for (const m of managers.splice(0)) await m.close()
  for (const c of dirs.splice(0)) c()
})

function setup(): { m: LogManager; log: PartitionLog } {
  const d = tempDir('skein-txn-cleaner-')
  dirs.push(d.cleanup)
  const m = openManager(d.path, { cleanupPolicy: 'compact', segmentBytes: 1024, indexIntervalBytes: 256, minCleanableDirtyRatio: 0.01 }, { now: () => T0 })
  managers.push(m)
  return { m, log: m.create('t', 0) }
}

const seqs = new Map<number, number>()
function put(log: PartitionLog, pairs: [string, string][], pid = -1): void {
  const seq = seqs.get(pid) ?? 0
  if (pid >= 0) seqs.set(pid, seq + pairs.length)
  const batch = buildRecordBatch(
    pairs.map(([k, v]) => ({ key: Buffer.from(k), value: Buffer.from(v), timestamp: T0 })),
    native.crc32c,
    pid < 0 ? {} : { producerId: pid, producerEpoch: 0, baseSequence: seq, transactional: true },
  )
  log.append(batch, { leaderEpoch: 0 })
}

function end(log: PartitionLog, pid: number, commit: boolean): void {
  log.appendTxnMarker({ producerId: pid, producerEpoch: 0, coordinatorEpoch: 0, commit }, T0)
}

/** Plain filler batches until the active segment rolls (so everything before can be cleaned). */
function roll(log: PartitionLog): void {
  const before = log.segmentBaseOffsets().length
  while (log.segmentBaseOffsets().length === before) put(log, [['filler', 'x'.repeat(300)]])
}

/** What a read_committed consumer sees, latest value per key (Kafka's client rule). */
function committedView(m: LogManager, log: PartitionLog): { values: Map<string, string>; markers: number } {
  const r = log.read(log.logStartOffset, 1 << 30, { isolation: 'read_committed' })
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  const aborted = [...r.abortedTransactions].sort((a, b) => a.firstOffset - b.firstOffset)
  const abortedPids = new Set<number>()
  const values = new Map<string, string>()
  let markers = 0
  for (const b of iterateBatches(bytes)) {
    const view = bytes.subarray(b.position, b.position + b.size)
    const h = new BatchHeaderView(view, 0)
    while (aborted.length > 0 && aborted[0]!.firstOffset <= b.lastOffset) abortedPids.add(aborted.shift()!.producerId)
    if ((h.attributes & CONTROL_MASK) !== 0) {
      markers++
      if (parseControlRecord(view)?.type === CONTROL_TYPE_ABORT) abortedPids.delete(h.producerId)
      continue
    }
    if ((h.attributes & TRANSACTIONAL_MASK) !== 0 && abortedPids.has(h.producerId)) continue
    for (const rec of decodeRecords(view, 0)) values.set(rec.key!.toString(), rec.value!.toString())
  }
  values.delete('filler')
  return { values, markers }
}

function allRecords(m: LogManager, log: PartitionLog): string[] {
  const r = log.read(log.logStartOffset, 1 << 30)
  const bytes = regionBytes(r)
  m.releaseLease(r.leaseId)
  const out: string[] = []
  for (const b of iterateBatches(bytes)) {
    const view = bytes.subarray(b.position, b.position + b.size)
    if ((view.readInt16BE(21) & CONTROL_MASK) !== 0) continue
    for (const rec of decodeRecords(view, 0)) if (rec.key!.toString() !== 'filler') out.push(`${rec.key}=${rec.value}`)
  }
  return out
}

describe('cleaning a log with transactions', () => {
  it('compacts committed records, removes aborted ones and keeps every marker', async () => {
    const { m, log } = setup()
    put(log, [['a', 'a-plain'], ['b', 'b-plain']])
    put(log, [['a', 'a-committed']], 1)
    put(log, [['b', 'b-aborted'], ['c', 'c-aborted']], 2)
    end(log, 1, true)
    end(log, 2, false)
    put(log, [['c', 'c-plain']])
    roll(log)
    const before = committedView(m, log)
    expect(before.values).toEqual(new Map([['a', 'a-committed'], ['b', 'b-plain'], ['c', 'c-plain']]))
    const r = await m.cleaner.clean(log, { force: true })
    expect(r.cleaned).toBe(true)
    const after = committedView(m, log)
    expect(after.values).toEqual(before.values)
    expect(after.markers).toBe(2)
    // a-plain was superseded by the committed value; the aborted records are gone; b-plain stays
    // (the aborted b does not supersede it).
    expect(allRecords(m, log)).toEqual(['b=b-plain', 'a=a-committed', 'c=c-plain'])
  })

  it('never cleans from the LSO on: open transactions and the records after them stay', async () => {
    const { m, log } = setup()
    put(log, [['k', 'v1']])
    put(log, [['k', 'open-1']], 7)
    roll(log)
    put(log, [['k', 'v2']])
    roll(log)
    expect(log.lastStableOffset).toBe(1)
    await m.cleaner.clean(log, { force: true })
    expect(allRecords(m, log)).toEqual(['k=v1', 'k=open-1', 'k=v2'])
    // Once the transaction aborts, its record goes and v1 is superseded by v2.
    end(log, 7, false)
    roll(log)
    await m.cleaner.clean(log, { force: true })
    expect(allRecords(m, log)).toEqual(['k=v2'])
    expect(committedView(m, log).values).toEqual(new Map([['k', 'v2']]))
    expect(committedView(m, log).markers).toBe(1)
  })
})
