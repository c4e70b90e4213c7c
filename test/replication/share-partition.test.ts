// The share-partition state machine (KIP-932) with a fake clock: acquisition, locks and their expiry,
// delivery counts and the limit, ACCEPT / RELEASE / REJECT / GAP, the SPSO moving, the in-flight bound,
// hostile acknowledgements, and the persisted snapshot.
import { describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { AcknowledgeType, RecordState, SharePartition, type BatchHeader, type ShareLimits } from '../../src/replication/share/share-partition.js'
import { ShareSessionCache, nextShareEpoch } from '../../src/replication/share/share-sessions.js'

const LIMITS: ShareLimits = { deliveryCountLimit: 5, maxInFlightRecords: 100 }
const LOCK_MS = 30_000
const { ACCEPT, RELEASE, REJECT, GAP } = AcknowledgeType

/** Batches of `size` records from `from` to `to` (inclusive), as the log would return them. */
function batches(from: number, to: number, size = 1): BatchHeader[] {
  const out: BatchHeader[] = []
  for (let o = from; o <= to; o += size) out.push({ firstOffset: o, lastOffset: Math.min(to, o + size - 1), isControl: false, aborted: false })
  return out
}

function ack(first: number, last: number, ...types: number[]): { firstOffset: number; lastOffset: number; acknowledgeTypes: number[] } {
  return { firstOffset: first, lastOffset: last, acknowledgeTypes: types }
}

describe('SharePartition', () => {
  it('acquires new records for one member at a time, with delivery count 1, from the SPSO on', () => {
    const sp = new SharePartition(10)
    let now = 1000
    expect(sp.nextFetchOffset()).toBe(10)
    const a = sp.acquire('m1', batches(10, 14), 500, now + LOCK_MS, LIMITS)
    expect(a).toEqual([{ firstOffset: 10, lastOffset: 14, deliveryCount: 1 }])
    expect(sp.startOffset).toBe(10)
    expect(sp.endOffset).toBe(15)
    // Another member reading the same batches gets nothing: they are held.
    now += 10
    expect(sp.acquire('m2', batches(10, 14), 500, now + LOCK_MS, LIMITS)).toEqual([])
    expect(sp.nextFetchOffset()).toBe(15)
    // Records before the SPSO are never acquired.
    const sp2 = new SharePartition(3)
    expect(sp2.acquire('m1', batches(0, 5, 3), 500, LOCK_MS, LIMITS)).toEqual([{ firstOffset: 3, lastOffset: 5, deliveryCount: 1 }])
  })

  it('ACCEPT moves the SPSO past acknowledged records and they are never delivered again', () => {
    const sp = new SharePartition(0)
    sp.acquire('m1', batches(0, 9), 500, LOCK_MS, LIMITS)
    expect(sp.acknowledge('m1', [ack(0, 4, ACCEPT)], LIMITS)).toEqual({ ok: true, released: false })
    expect(sp.startOffset).toBe(5)
    expect(sp.stateAt(3)?.state).toBe(RecordState.ARCHIVED)
    // Acknowledging the middle leaves the SPSO where the first unacknowledged record is.
    sp.acknowledge('m1', [ack(7, 9, ACCEPT)], LIMITS)
    expect(sp.startOffset).toBe(5)
    expect(sp.stateAt(8)?.state).toBe(RecordState.ACKNOWLEDGED)
    sp.acknowledge('m1', [ack(5, 6, ACCEPT)], LIMITS)
    expect(sp.startOffset).toBe(10)
    expect(sp.runCount).toBe(0)
    expect(sp.acquire('m2', batches(0, 9), 500, LOCK_MS, LIMITS)).toEqual([])
  })

  it('RELEASE makes records available again, redelivered with delivery count 2 (to any member)', () => {
    const sp = new SharePartition(0)
    sp.acquire('m1', batches(0, 4), 500, LOCK_MS, LIMITS)
    expect(sp.acknowledge('m1', [ack(1, 2, RELEASE)], LIMITS)).toEqual({ ok: true, released: true })
    expect(sp.nextFetchOffset()).toBe(1)
    const again = sp.acquire('m2', batches(0, 4), 500, 2 * LOCK_MS, LIMITS)
    expect(again).toEqual([{ firstOffset: 1, lastOffset: 2, deliveryCount: 2 }])
    expect(sp.stateAt(1)).toEqual({ state: RecordState.ACQUIRED, deliveryCount: 2, owner: 'm2' })
    expect(sp.stateAt(0)?.owner).toBe('m1')
  })

  it('REJECT and GAP archive records; one type per offset is applied offset by offset', () => {
    const sp = new SharePartition(0)
    sp.acquire('m1', batches(0, 5, 6), 500, LOCK_MS, LIMITS)
    expect(sp.acknowledge('m1', [ack(0, 5, ACCEPT, REJECT, GAP, RELEASE, RELEASE, ACCEPT)], LIMITS)).toEqual({ ok: true, released: true })
    expect(sp.startOffset).toBe(3)
    expect(sp.stateAt(3)?.state).toBe(RecordState.AVAILABLE)
    expect(sp.stateAt(4)?.state).toBe(RecordState.AVAILABLE)
    expect(sp.stateAt(5)?.state).toBe(RecordState.ACKNOWLEDGED)
    expect(sp.acquire('m2', batches(0, 5, 6), 500, LOCK_MS, LIMITS)).toEqual([{ firstOffset: 3, lastOffset: 4, deliveryCount: 2 }])
  })

  it('an expired lock makes records available again; the late acknowledgement is INVALID_RECORD_STATE', () => {
    const sp = new SharePartition(0)
    let now = 0
    sp.acquire('m1', batches(0, 2), 500, now + 3000, LIMITS)
    expect(sp.nextLockExpiry()).toBe(3000)
    now = 2999
    expect(sp.expireLocks(now, LIMITS)).toBe(false)
    expect(sp.stateAt(0)?.state).toBe(RecordState.ACQUIRED)
    now = 3000
    expect(sp.expireLocks(now, LIMITS)).toBe(true)
    expect(sp.nextLockExpiry()).toBeUndefined()
    const late = sp.acknowledge('m1', [ack(0, 2, ACCEPT)], LIMITS)
    expect(late.ok).toBe(false)
    expect(!late.ok && late.errorCode).toBe(ErrorCode.INVALID_RECORD_STATE)
    // Redelivered with delivery count 2, to m2 now; m1 may not acknowledge m2's records.
    expect(sp.acquire('m2', batches(0, 2), 500, now + 3000, LIMITS)).toEqual([{ firstOffset: 0, lastOffset: 2, deliveryCount: 2 }])
    const stolen = sp.acknowledge('m1', [ack(0, 0, ACCEPT)], LIMITS)
    expect(!stolen.ok && stolen.errorCode).toBe(ErrorCode.INVALID_RECORD_STATE)
    expect(sp.acknowledge('m2', [ack(0, 2, ACCEPT)], LIMITS).ok).toBe(true)
    expect(sp.startOffset).toBe(3)
  })

  it('past group.share.delivery.count.limit a released or timed-out record is archived, not delivered again', () => {
    const sp = new SharePartition(0)
    for (let delivery = 1; delivery <= 5; delivery++) {
      const got = sp.acquire('m1', batches(0, 0), 500, delivery * 1000, LIMITS)
      expect(got).toEqual([{ firstOffset: 0, lastOffset: 0, deliveryCount: delivery }])
      if (delivery % 2 === 0) sp.expireLocks(delivery * 1000, LIMITS)
      else sp.acknowledge('m1', [ack(0, 0, RELEASE)], LIMITS)
    }
    // The 5th delivery's release archived it: the SPSO moved on.
    expect(sp.startOffset).toBe(1)
    expect(sp.acquire('m1', batches(0, 0), 500, 10_000, LIMITS)).toEqual([])
    // The limit from the group config applies at the time of the release.
    const sp2 = new SharePartition(0)
    sp2.acquire('m1', batches(0, 0), 500, 1000, LIMITS)
    sp2.acknowledge('m1', [ack(0, 0, RELEASE)], { ...LIMITS, deliveryCountLimit: 2 })
    sp2.acquire('m1', batches(0, 0), 500, 1000, LIMITS)
    expect(sp2.releaseMember('m1', { ...LIMITS, deliveryCountLimit: 2 })).toBe(false)
    expect(sp2.startOffset).toBe(1)
  })

  it('releasing a member (its session closed) frees only its records', () => {
    const sp = new SharePartition(0)
    sp.acquire('m1', batches(0, 1), 500, LOCK_MS, LIMITS)
    sp.acquire('m2', batches(2, 3), 500, LOCK_MS, LIMITS)
    expect(sp.releaseMember('m1', LIMITS)).toBe(true)
    expect(sp.stateAt(0)?.state).toBe(RecordState.AVAILABLE)
    expect(sp.stateAt(2)?.owner).toBe('m2')
    expect(sp.acquire('m3', batches(0, 3), 500, LOCK_MS, LIMITS)).toEqual([{ firstOffset: 0, lastOffset: 1, deliveryCount: 2 }])
  })

  it('MaxRecords caps redeliveries per offset and new records by whole batches', () => {
    const sp = new SharePartition(0)
    // New records: whole batches, so a batch of 10 goes over a MaxRecords of 5.
    expect(sp.acquire('m1', batches(0, 19, 10), 5, LOCK_MS, LIMITS)).toEqual([{ firstOffset: 0, lastOffset: 9, deliveryCount: 1 }])
    expect(sp.endOffset).toBe(10)
    sp.acknowledge('m1', [ack(0, 9, RELEASE)], LIMITS)
    // Available records are acquired offset by offset up to MaxRecords.
    expect(sp.acquire('m2', batches(0, 19, 10), 4, LOCK_MS, LIMITS)).toEqual([{ firstOffset: 0, lastOffset: 3, deliveryCount: 2 }])
    expect(sp.nextFetchOffset()).toBe(4)
    expect(sp.acquire('m3', batches(0, 19, 10), 100, LOCK_MS, LIMITS)).toEqual([
      { firstOffset: 4, lastOffset: 9, deliveryCount: 2 },
      { firstOffset: 10, lastOffset: 19, deliveryCount: 1 },
    ])
  })

  it('bounds the in-flight window by group.share.partition.max.record.locks (one batch may go over)', () => {
    const limits = { ...LIMITS, maxInFlightRecords: 10 }
    const sp = new SharePartition(0)
    expect(sp.acquire('m1', batches(0, 99, 4), 1000, LOCK_MS, limits)).toEqual([{ firstOffset: 0, lastOffset: 11, deliveryCount: 1 }])
    expect(sp.endOffset - sp.startOffset).toBe(12)
    expect(sp.canAcquire(limits)).toBe(false)
    expect(sp.acquire('m2', batches(12, 99, 4), 1000, LOCK_MS, limits)).toEqual([])
    // Acknowledging the head moves the SPSO and makes room.
    sp.acknowledge('m1', [ack(0, 5, ACCEPT)], limits)
    expect(sp.canAcquire(limits)).toBe(true)
    expect(sp.acquire('m2', batches(12, 99, 4), 1000, LOCK_MS, limits)).toEqual([{ firstOffset: 12, lastOffset: 15, deliveryCount: 1 }])
    // A stuck record at the SPSO keeps the window from growing however many records after it are done.
    sp.acknowledge('m1', [ack(6, 11, ACCEPT)], limits)
    sp.acknowledge('m2', [ack(12, 15, ACCEPT)], limits)
    expect(sp.startOffset).toBe(16)
    expect(sp.runCount).toBe(0)
  })

  it('never acquires control batches or aborted ones, and archives holes between batches', () => {
    const sp = new SharePartition(0)
    const log: BatchHeader[] = [
      { firstOffset: 0, lastOffset: 0, isControl: false, aborted: true },
      { firstOffset: 1, lastOffset: 1, isControl: true, aborted: false },
      { firstOffset: 2, lastOffset: 6, isControl: false, aborted: false },
      { firstOffset: 7, lastOffset: 7, isControl: true, aborted: false },
      // 8-9 compacted away.
      { firstOffset: 10, lastOffset: 11, isControl: false, aborted: false },
    ]
    expect(sp.acquire('m1', log, 500, LOCK_MS, LIMITS)).toEqual([
      { firstOffset: 2, lastOffset: 6, deliveryCount: 1 },
      { firstOffset: 10, lastOffset: 11, deliveryCount: 1 },
    ])
    expect(sp.startOffset).toBe(2)
    expect(sp.stateAt(8)?.state).toBe(RecordState.ARCHIVED)
    // An acknowledgement over the whole range passes over what was never delivered.
    expect(sp.acknowledge('m1', [ack(2, 11, ACCEPT)], LIMITS).ok).toBe(true)
    expect(sp.startOffset).toBe(12)
  })

  it('answers hostile acknowledgements with an error and changes nothing', () => {
    const sp = new SharePartition(0)
    sp.acquire('m1', batches(0, 9), 500, LOCK_MS, LIMITS)
    const code = (r: ReturnType<SharePartition['acknowledge']>): number => (r.ok ? 0 : r.errorCode)
    // Beyond the SPEO.
    expect(code(sp.acknowledge('m1', [ack(5, 10, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    expect(code(sp.acknowledge('m1', [ack(1_000_000, 2 ** 52, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    // Reversed, overlapping, out of order, negative.
    expect(code(sp.acknowledge('m1', [ack(5, 4, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    expect(code(sp.acknowledge('m1', [ack(0, 4, ACCEPT), ack(4, 6, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    expect(code(sp.acknowledge('m1', [ack(6, 7, ACCEPT), ack(0, 1, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    expect(code(sp.acknowledge('m1', [ack(-1, 1, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    // Bad types: unknown, or neither one nor one per offset.
    expect(code(sp.acknowledge('m1', [ack(0, 1, 4)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    expect(code(sp.acknowledge('m1', [ack(0, 2, ACCEPT, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    expect(code(sp.acknowledge('m1', [ack(0, 2)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    // Another member's records; all or nothing: the good first batch is not applied either.
    expect(code(sp.acknowledge('m2', [ack(0, 1, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_RECORD_STATE)
    expect(code(sp.acknowledge('m1', [ack(0, 1, ACCEPT), ack(8, 12, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
    for (let o = 0; o < 10; o++) expect(sp.stateAt(o)).toEqual({ state: RecordState.ACQUIRED, deliveryCount: 1, owner: 'm1' })
    // Twice: the second finds the records acknowledged already.
    expect(code(sp.acknowledge('m1', [ack(5, 6, ACCEPT)], LIMITS))).toBe(0)
    expect(code(sp.acknowledge('m1', [ack(5, 6, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_RECORD_STATE)
    // Below the SPSO: done with already, skipped.
    sp.acknowledge('m1', [ack(0, 4, ACCEPT)], LIMITS)
    expect(code(sp.acknowledge('m1', [ack(0, 4, REJECT)], LIMITS))).toBe(0)
    // Never acquired (nothing fetched yet).
    expect(code(new SharePartition(0).acknowledge('m1', [ack(0, 0, ACCEPT)], LIMITS))).toBe(ErrorCode.INVALID_REQUEST)
  })

  it('follows the log start offset (DeleteRecords, retention)', () => {
    const sp = new SharePartition(0)
    sp.acquire('m1', batches(0, 9), 500, LOCK_MS, LIMITS)
    sp.advanceToLogStart(4)
    expect(sp.startOffset).toBe(4)
    expect(sp.stateAt(4)?.owner).toBe('m1')
    sp.advanceToLogStart(50)
    expect(sp.startOffset).toBe(50)
    expect(sp.endOffset).toBe(50)
    expect(sp.nextLockExpiry()).toBeUndefined()
    expect(sp.acquire('m1', batches(50, 51), 500, LOCK_MS, LIMITS)).toEqual([{ firstOffset: 50, lastOffset: 51, deliveryCount: 1 }])
  })

  it('snapshots its state for the persister and starts again from it (acquired records saved available)', () => {
    const sp = new SharePartition(0)
    sp.acquire('m1', batches(0, 9), 500, LOCK_MS, LIMITS)
    sp.acknowledge('m1', [ack(0, 1, ACCEPT), ack(3, 3, ACCEPT), ack(4, 4, REJECT), ack(5, 5, RELEASE)], LIMITS)
    const snap = sp.snapshot()
    expect(snap).toEqual({
      startOffset: 2,
      stateBatches: [
        { firstOffset: 2, lastOffset: 2, deliveryState: RecordState.AVAILABLE, deliveryCount: 1 },
        { firstOffset: 3, lastOffset: 3, deliveryState: RecordState.ACKNOWLEDGED, deliveryCount: 1 },
        { firstOffset: 4, lastOffset: 4, deliveryState: RecordState.ARCHIVED, deliveryCount: 1 },
        { firstOffset: 5, lastOffset: 9, deliveryState: RecordState.AVAILABLE, deliveryCount: 1 },
      ],
    })
    const loaded = new SharePartition(snap.startOffset, snap)
    expect(loaded.startOffset).toBe(2)
    expect(loaded.endOffset).toBe(10)
    expect(loaded.acquire('m2', batches(0, 12), 500, LOCK_MS, LIMITS)).toEqual([
      { firstOffset: 2, lastOffset: 2, deliveryCount: 2 },
      { firstOffset: 5, lastOffset: 9, deliveryCount: 2 },
      { firstOffset: 10, lastOffset: 12, deliveryCount: 1 },
    ])
  })
})

describe('ShareSessionCache', () => {
  it('opens, replaces and bounds sessions; drops those of closed connections', () => {
    let max = 2
    const cache = new ShareSessionCache(() => max)
    const conn = { isClosed: false }
    const a = cache.create('g', 'm1', conn, 0).session!
    expect(a.epoch).toBe(1)
    const again = cache.create('g', 'm1', conn, 0).session!
    expect(cache.get('g', 'm1')).toBe(again)
    expect(cache.size).toBe(1)
    const closing = { isClosed: false }
    cache.create('g', 'm2', closing, 0)
    expect(cache.create('g', 'm3', conn, 0).session).toBeUndefined()
    closing.isClosed = true
    const made = cache.create('g', 'm3', conn, 0)
    expect(made.session).toBeDefined()
    expect(made.evicted.map((s) => s.memberId)).toEqual(['m2'])
    max = 10
    expect(nextShareEpoch(0)).toBe(1)
    expect(nextShareEpoch(0x7fffffff)).toBe(1)
    expect(nextShareEpoch(-1)).toBe(-1)
  })
})
