// The log cleaner and transactions: committed transactional records are compacted like any others,
// aborted ones are removed (and never supersede committed values), records of open transactions and
// everything from the LSO on are left alone, and a marker stays while its transaction has records in the
// log; once they are gone it is stamped with a delete horizon and dropped after delete.retention.ms
// (Kafka's rule), with the .txnindex entry of an aborted one, so read_committed reads stay right.
import { join } from 'node:path'
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

function setup(now: () => number = () => T0, deleteRetentionMs?: number): { m: LogManager; log: PartitionLog } {
  const d = tempDir('skein-txn-cleaner-')
  dirs.push(d.cleanup)
  const m = openManager(d.path, { cleanupPolicy: 'compact', segmentBytes: 1024, indexIntervalBytes: 256, minCleanableDirtyRatio: 0.01, ...(deleteRetentionMs === undefined ? {} : { deleteRetentionMs }) }, { now })
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

  it("drops a marker once its transaction's records are gone and delete.retention.ms has passed since it was stamped; the aborted one's .txnindex entry goes too", async () => {
    let now = T0
    const { m, log } = setup(() => now, 60_000)
    put(log, [['a', 'a1']], 21)
    end(log, 21, true) // marker A: commit of producer 21
    put(log, [['b', 'b-aborted']], 22)
    end(log, 22, false) // marker B: abort of producer 2
    put(log, [['a', 'a2']], 21)
    end(log, 21, true) // marker C: producer 21's last batch
    put(log, [['c', 'c2']], 22)
    end(log, 22, true) // marker D: its record c2 stays
    put(log, [['a', 'a-plain']]) // supersedes a1 and a2
    roll(log)
    const markerOffsets = (): number[] => {
      const r = log.read(log.logStartOffset, 1 << 30)
      const bytes = regionBytes(r)
      m.releaseLease(r.leaseId)
      return [...iterateBatches(bytes)].filter((b) => (bytes.readInt16BE(b.position + 21) & CONTROL_MASK) !== 0).map((b) => b.baseOffset)
    }
    const all = markerOffsets()
    expect(all).toHaveLength(4)
    const [A, B, C, D] = all as [number, number, number, number]
    const expected = new Map([['a', 'a-plain'], ['c', 'c2']])
    expect(committedView(m, log).values).toEqual(expected)
    expect(log.txnIndex.all().map((e) => e.lastOffset)).toEqual([B])

    // Pass 1 removes the records (a1, a2 superseded, b aborted); their markers were walked with them and stay.
    await m.cleaner.clean(log, { force: true })
    expect(markerOffsets()).toEqual([A, B, C, D])
    expect(committedView(m, log).values).toEqual(expected)
    // Pass 2 finds A and B without records: stamped with now + delete.retention.ms; B's index entry goes.
    // C is producer 21's last batch (it keeps its epoch) and D's record is still there.
    now += 1000
    await m.cleaner.clean(log, { force: true })
    expect(markerOffsets()).toEqual([A, B, C, D])
    expect(log.txnIndex.all()).toEqual([])
    const horizonOf = (offset: number): number | null => {
      const r = log.read(offset, 1 << 20)
      const bytes = regionBytes(r)
      m.releaseLease(r.leaseId)
      const h = new BatchHeaderView(bytes, 0)
      return (h.attributes & 0x40) !== 0 ? h.baseTimestamp : null
    }
    expect([horizonOf(A), horizonOf(B), horizonOf(C), horizonOf(D)]).toEqual([now + 60_000, now + 60_000, null, null])
    expect(committedView(m, log).values).toEqual(expected)
    // Before the horizon they stay; at it, the periodic cleaner takes the log up by itself and drops them.
    now += 59_999
    await m.cleaner.clean(log, { force: true })
    expect(markerOffsets()).toEqual([A, B, C, D])
    now += 1
    expect(m.cleaner.inspect(log)!.tombstonesDue).toBe(true)
    expect((await m.cleaner.cleanFilthiest()).map((r) => r.reason)).toEqual(['cleaned'])
    expect(markerOffsets()).toEqual([C, D])
    // read_committed still sees exactly the committed values (c2 is not taken for aborted).
    expect(committedView(m, log).values).toEqual(expected)
    expect(allRecords(m, log)).toEqual(['c=c2', 'a=a-plain'])
    // A reopen (producer state and .txnindex from the files) agrees.
    await m.close()
    managers.length = 0
    const m2 = openManager(join(log.dir, '..'), { cleanupPolicy: 'compact', segmentBytes: 1024, indexIntervalBytes: 256, minCleanableDirtyRatio: 0.01, deleteRetentionMs: 60_000 }, { now: () => now })
    managers.push(m2)
    const log2 = m2.get('t', 0)!
    expect(log2.txnIndex.all()).toEqual([])
    expect(committedView(m2, log2).values).toEqual(expected)
    expect(log2.lastStableOffset).toBe(log2.logEndOffset)
  })

  it('a marker of a transaction whose records are all still there is never stamped', async () => {
    let now = T0
    const { m, log } = setup(() => now, 0)
    put(log, [['k', 'v']], 3)
    end(log, 3, true)
    put(log, [['other', 'x']], 4)
    end(log, 4, true)
    roll(log)
    for (let i = 0; i < 3; i++) {
      now += 10
      await m.cleaner.clean(log, { force: true })
    }
    expect(committedView(m, log).markers).toBe(2)
    expect(committedView(m, log).values).toEqual(new Map([['k', 'v'], ['other', 'x']]))
  })
})
