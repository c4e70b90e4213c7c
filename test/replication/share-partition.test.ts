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
    expect(sp.lockTimeouts).toBe(0)
    now = 3000
    expect(sp.expireLocks(now, LIMITS)).toBe(true)
    expect(sp.nextLockExpiry()).toBeUndefined()
    // Counted for /metrics (AcquisitionLockTimeoutPerSec): offsets 0-2.
    expect(sp.lockTimeouts).toBe(3)
    expect(sp.inFlightCount).toBe(3)
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

/**
 * A per-offset model of the same rules, written the plain way: a map from offset to its state. The
 * share-partition keeps runs and rewrites them in single passes; random operations must leave both alike.
 */
class ModelPartition {
  start = 0
  end = 0
  readonly recs = new Map<number, { state: number; dc: number; owner: string | undefined; lockUntil: number }>()

  acquire(member: string, log: BatchHeader[], maxRecords: number, lockUntil: number, limits: ShareLimits): Map<number, number> {
    const got = new Map<number, number>()
    let count = 0
    for (const b of log) {
      for (let o = Math.max(b.firstOffset, this.start); o <= Math.min(b.lastOffset, this.end - 1); o++) {
        const r = this.recs.get(o)!
        if (r.state !== RecordState.AVAILABLE) continue
        if (b.isControl || b.aborted) r.state = RecordState.ARCHIVED
        else if (count < maxRecords) {
          Object.assign(r, { state: RecordState.ACQUIRED, dc: r.dc + 1, owner: member, lockUntil })
          got.set(o, r.dc)
          count++
        }
      }
    }
    for (const b of log) {
      if (count >= maxRecords) break
      if (b.lastOffset < this.end) continue
      if (this.end - this.start >= limits.maxInFlightRecords) break
      for (let o = this.end; o < b.firstOffset; o++) this.recs.set(o, { state: RecordState.ARCHIVED, dc: 0, owner: undefined, lockUntil: 0 })
      for (let o = Math.max(b.firstOffset, this.end); o <= b.lastOffset; o++) {
        if (b.isControl || b.aborted) this.recs.set(o, { state: RecordState.ARCHIVED, dc: 0, owner: undefined, lockUntil: 0 })
        else {
          this.recs.set(o, { state: RecordState.ACQUIRED, dc: 1, owner: member, lockUntil })
          got.set(o, 1)
          count++
        }
      }
      this.end = b.lastOffset + 1
    }
    this.compact()
    return got
  }

  acknowledge(member: string, batches: { firstOffset: number; lastOffset: number; acknowledgeTypes: number[] }[], limits: ShareLimits): number {
    let prev = -1
    for (const b of batches) {
      if (b.firstOffset < 0 || b.lastOffset < b.firstOffset || b.firstOffset <= prev) return ErrorCode.INVALID_REQUEST
      prev = b.lastOffset
      const n = b.acknowledgeTypes.length
      if (n !== 1 && n !== b.lastOffset - b.firstOffset + 1) return ErrorCode.INVALID_REQUEST
      if (b.acknowledgeTypes.some((t) => t < 0 || t > 3)) return ErrorCode.INVALID_REQUEST
    }
    for (const b of batches) {
      if (b.lastOffset < this.start) continue
      if (b.lastOffset >= this.end) return ErrorCode.INVALID_REQUEST
      for (let o = Math.max(b.firstOffset, this.start); o <= b.lastOffset; o++) {
        const r = this.recs.get(o)!
        if (r.state === RecordState.ARCHIVED && r.dc === 0) continue
        if (r.state !== RecordState.ACQUIRED || r.owner !== member) return ErrorCode.INVALID_RECORD_STATE
      }
    }
    for (const b of batches) {
      for (let o = Math.max(b.firstOffset, this.start); o <= b.lastOffset; o++) {
        const r = this.recs.get(o)!
        if (r.state !== RecordState.ACQUIRED) continue
        const t = b.acknowledgeTypes.length === 1 ? b.acknowledgeTypes[0]! : b.acknowledgeTypes[o - b.firstOffset]!
        if (t === ACCEPT) r.state = RecordState.ACKNOWLEDGED
        else if (t === RELEASE) r.state = r.dc < limits.deliveryCountLimit ? RecordState.AVAILABLE : RecordState.ARCHIVED
        else r.state = RecordState.ARCHIVED
        r.owner = undefined
        r.lockUntil = 0
      }
    }
    this.compact()
    return 0
  }

  release(pick: (r: { state: number; owner: string | undefined; lockUntil: number }) => boolean, limits: ShareLimits): void {
    for (const r of this.recs.values()) {
      if (r.state !== RecordState.ACQUIRED || !pick(r)) continue
      r.state = r.dc < limits.deliveryCountLimit ? RecordState.AVAILABLE : RecordState.ARCHIVED
      r.owner = undefined
      r.lockUntil = 0
    }
    this.compact()
  }

  compact(): void {
    while (this.start < this.end) {
      const r = this.recs.get(this.start)!
      if (r.state !== RecordState.ACKNOWLEDGED && r.state !== RecordState.ARCHIVED) break
      this.recs.delete(this.start++)
    }
  }
}

describe('SharePartition against a per-offset model', () => {
  it('agrees with it over random acquisitions, acknowledgements, releases and lock timeouts', () => {
    let seed = 7
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    const limits: ShareLimits = { deliveryCountLimit: 3, maxInFlightRecords: 40 }
    for (let round = 0; round < 30; round++) {
      // A log of batches with markers, aborted batches and compacted holes.
      const log: BatchHeader[] = []
      let next = 0
      while (next < 400) {
        if (rand(8) === 0) next += 1 + rand(4)
        const size = 1 + rand(6)
        log.push({ firstOffset: next, lastOffset: next + size - 1, isControl: rand(10) === 0, aborted: rand(12) === 0 })
        next += size
      }
      const sp = new SharePartition(0)
      const model = new ModelPartition()
      let now = 0
      for (let step = 0; step < 300; step++) {
        now += rand(50)
        const member = `m${rand(3)}`
        const op = rand(10)
        if (op < 4) {
          // A read from the next fetch offset: the batch holding it and some after.
          const from = sp.nextFetchOffset()
          const at = log.findIndex((b) => b.lastOffset >= from)
          if (at < 0) continue
          const read = log.slice(at, at + 1 + rand(8))
          const maxRecords = 1 + rand(15)
          const lockUntil = now + 100 + rand(200)
          const got = sp.acquire(member, read, maxRecords, lockUntil, limits)
          const gotMap = new Map<number, number>()
          for (const a of got) for (let o = a.firstOffset; o <= a.lastOffset; o++) gotMap.set(o, a.deliveryCount)
          expect(gotMap).toEqual(model.acquire(member, read, maxRecords, lockUntil, limits))
        } else if (op < 8) {
          // Acknowledgements: mostly of what the member holds, sometimes anything at all.
          const held = [...model.recs.entries()].filter(([, r]) => r.owner === member).map(([o]) => o)
          const batches: { firstOffset: number; lastOffset: number; acknowledgeTypes: number[] }[] = []
          let o = held.length > 0 && rand(4) > 0 ? held[rand(held.length)]! : model.start - 2 + rand(model.end - model.start + 6)
          for (let n = 1 + rand(4); n > 0 && o >= 0; n--) {
            const last = o + rand(5)
            const perOffset = rand(2) === 0
            const types = perOffset ? Array.from({ length: last - o + 1 }, () => rand(20) === 0 ? 4 : rand(4)) : [rand(4)]
            batches.push({ firstOffset: o, lastOffset: last, acknowledgeTypes: types })
            o = last + 1 + rand(3)
          }
          const real = sp.acknowledge(member, batches, limits)
          expect(real.ok ? 0 : real.errorCode).toBe(model.acknowledge(member, batches, limits))
        } else if (op === 8) {
          sp.releaseMember(member, limits)
          model.release((r) => r.owner === member, limits)
        } else {
          sp.expireLocks(now, limits)
          model.release((r) => r.lockUntil <= now, limits)
        }
        expect([sp.startOffset, sp.endOffset]).toEqual([model.start, model.end])
        for (let off = model.start; off < model.end; off++) {
          const m = model.recs.get(off)!
          expect(sp.stateAt(off), `offset ${off} at step ${step}`).toEqual({ state: m.state, deliveryCount: m.dc, owner: m.owner })
        }
      }
    }
  })
})

