// One share-partition (KIP-932, Kafka's SharePartition): the state a share group keeps for one
// topic-partition on the partition's leader. Free of sockets, logs and timers: callers pass the time in
// (`now`, ms) and the batch headers they read, so tests drive it with a fake clock.
//
// The in-flight records lie between the share-partition start offset (SPSO, the first record not yet
// done with) and end offset (SPEO, one past the last record ever acquired). They are kept as runs of
// consecutive offsets with one state, delivery count, owner and lock deadline each (`Run`), covering
// [SPSO, SPEO) with no hole: offsets the log does not have (compacted away, control records, aborted
// records under read_committed) are ARCHIVED runs that were never delivered. A run is split where an
// acknowledgement or a lock covers part of it, and merged back with equal neighbours.
//
// States and moves (Kafka's RecordState): new records are ACQUIRED by one member (delivery count 1) with a
// lock until now + the group's lock duration; AVAILABLE ones are ACQUIRED again (count + 1). ACCEPT ->
// ACKNOWLEDGED; RELEASE, an expired lock, a closed session -> AVAILABLE, or ARCHIVED once the count has
// reached group.share.delivery.count.limit; REJECT and GAP -> ARCHIVED. ACKNOWLEDGED and ARCHIVED are
// final: once every record from the SPSO on is final, the SPSO moves past them and they are forgotten.
//
// Memory is bounded by the window: new records are acquired only while SPEO - SPSO is below
// group.share.partition.max.record.locks (Kafka's in-flight limit; the last batch may go over it), and
// there are never more runs than offsets in the window.

export const RecordState = { AVAILABLE: 0, ACQUIRED: 1, ACKNOWLEDGED: 2, ARCHIVED: 4 } as const
export type RecordState = (typeof RecordState)[keyof typeof RecordState]

/** ShareFetch / ShareAcknowledge AcknowledgeTypes (Kafka's AcknowledgeType; GAP marks an offset with no record). */
export const AcknowledgeType = { GAP: 0, ACCEPT: 1, RELEASE: 2, REJECT: 3 } as const

/** What a share-partition asks of its acquisitions (group and broker configs, read at each use). */
export interface ShareLimits {
  /** group.share.delivery.count.limit */
  deliveryCountLimit: number
  /** group.share.partition.max.record.locks: SPEO - SPSO at most this before new records are acquired. */
  maxInFlightRecords: number
}

/** A record batch as the log holds it, from its header alone. */
export interface BatchHeader {
  firstOffset: number
  lastOffset: number
  /** Transaction markers: never delivered. */
  isControl: boolean
  /** Records of an aborted transaction under read_committed: never delivered. */
  aborted: boolean
}

/** AcquiredRecords of a ShareFetch answer. */
export interface AcquiredRange {
  firstOffset: number
  lastOffset: number
  deliveryCount: number
}

/** One acknowledgement batch (ShareFetch / ShareAcknowledge AcknowledgementBatches). */
export interface AcknowledgementBatch {
  firstOffset: number
  lastOffset: number
  /** One type for the whole range, or one per offset. */
  acknowledgeTypes: readonly number[]
}

/** Kafka's PersisterStateBatch: a range of offsets with one state and delivery count. */
export interface StateBatch {
  firstOffset: number
  lastOffset: number
  deliveryState: RecordState
  deliveryCount: number
}

/** What a share-partition persists (Kafka's writeState / readState): the SPSO and the runs after it. */
export interface ShareSnapshot {
  startOffset: number
  /** Non-AVAILABLE runs past the SPSO; an acquired record is saved AVAILABLE (its lock does not survive). */
  stateBatches: StateBatch[]
}

export type AckResult = { ok: true; released: boolean } | { ok: false; errorCode: number; message: string }

const ERR_INVALID_REQUEST = 42
const ERR_INVALID_RECORD_STATE = 121

interface Run {
  first: number
  last: number
  state: RecordState
  deliveryCount: number
  /** The member holding it while ACQUIRED. */
  owner: string | undefined
  /** When its lock ends while ACQUIRED (ms). */
  lockUntil: number
}

function isFinal(state: RecordState): boolean {
  return state === RecordState.ACKNOWLEDGED || state === RecordState.ARCHIVED
}

export class SharePartition {
  #start: number
  #end: number
  /** Covers [#start, #end) in order, without holes. */
  #runs: Run[] = []

  constructor(startOffset: number, snapshot?: ShareSnapshot) {
    this.#start = startOffset
    this.#end = startOffset
    if (snapshot !== undefined) this.#restore(snapshot)
  }

  /** The share-partition start offset (SPSO). */
  get startOffset(): number {
    return this.#start
  }

  /** The share-partition end offset (SPEO): one past the last record acquired so far. */
  get endOffset(): number {
    return this.#end
  }

  /** Records whose acquisition lock timed out here, in all (Kafka's AcquisitionLockTimeoutPerSec count). */
  lockTimeouts = 0

  /** Records between the SPSO and the SPEO: acquired, available again or acknowledged above the start (Kafka's InFlightMessageCount). */
  get inFlightCount(): number {
    return this.#end - this.#start
  }

  /** Runs held in memory (bounded by the window). */
  get runCount(): number {
    return this.#runs.length
  }

  /** Where the next read should start: the first AVAILABLE record, else the SPEO. */
  nextFetchOffset(): number {
    for (const r of this.#runs) if (r.state === RecordState.AVAILABLE) return r.first
    return this.#end
  }

  /** Whether a fetch could acquire anything: an AVAILABLE record, or room in the window for new ones. */
  canAcquire(limits: ShareLimits): boolean {
    return this.#end - this.#start < limits.maxInFlightRecords || this.#runs.some((r) => r.state === RecordState.AVAILABLE)
  }

  /** The state of one offset (tests, describe); undefined outside the window. */
  stateAt(offset: number): { state: RecordState; deliveryCount: number; owner: string | undefined } | undefined {
    if (offset < this.#start) return { state: RecordState.ARCHIVED, deliveryCount: 0, owner: undefined }
    const i = this.#find(offset)
    if (i < 0) return undefined
    const r = this.#runs[i]!
    return { state: r.state, deliveryCount: r.deliveryCount, owner: r.owner }
  }

  /**
   * Acquires for `member` the records of `batches` (contiguous, as read from the log from
   * nextFetchOffset()) that are AVAILABLE or new, up to about maxRecords (whole batches for new records),
   * locked until lockUntil. Control and aborted batches are archived, never acquired; a hole between
   * batches is archived too (no record there). Answers the acquired ranges, in offset order.
   */
  acquire(member: string, batches: readonly BatchHeader[], maxRecords: number, lockUntil: number, limits: ShareLimits): AcquiredRange[] {
    const acquired: Run[] = []
    let count = 0
    const take = (r: Run): void => {
      r.state = RecordState.ACQUIRED
      r.deliveryCount++
      r.owner = member
      r.lockUntil = lockUntil
      acquired.push(r)
      count += r.last - r.first + 1
    }
    // The parts already in the window, in one pass over the runs: AVAILABLE records are delivered again
    // (or archived when their batch turned out aborted, e.g. after share.isolation.level became read_committed).
    const ranges: { first: number; last: number }[] = []
    const skips: boolean[] = []
    for (const b of batches) {
      const first = Math.max(b.firstOffset, this.#start)
      const last = Math.min(b.lastOffset, this.#end - 1)
      if (first > last || (ranges.length > 0 && first <= ranges[ranges.length - 1]!.last)) continue
      ranges.push({ first, last })
      skips.push(b.isControl || b.aborted)
    }
    this.#rewrite(ranges, (piece, k) => {
      if (piece.state !== RecordState.AVAILABLE) return undefined
      if (skips[k] === true) {
        piece.state = RecordState.ARCHIVED
        return undefined
      }
      if (count >= maxRecords) return undefined
      const room = maxRecords - count
      if (piece.last - piece.first + 1 <= room) {
        take(piece)
        return undefined
      }
      const rest: Run = { ...piece, first: piece.first + room }
      piece.last = piece.first + room - 1
      take(piece)
      return [piece, rest]
    })
    // The parts past the SPEO: new records, whole batches, while the window has room.
    for (const b of batches) {
      if (count >= maxRecords) break
      if (b.lastOffset < b.firstOffset || b.lastOffset < this.#end) continue
      if (this.#end - this.#start >= limits.maxInFlightRecords) break
      if (b.firstOffset > this.#end) this.#append(this.#end, b.firstOffset - 1, RecordState.ARCHIVED, 0, undefined, 0)
      const from = Math.max(b.firstOffset, this.#end)
      if (b.isControl || b.aborted) this.#append(from, b.lastOffset, RecordState.ARCHIVED, 0, undefined, 0)
      else take(this.#append(from, b.lastOffset, RecordState.ACQUIRED, 0, member, lockUntil))
    }
    const out: AcquiredRange[] = []
    for (const r of acquired) {
      const prev = out[out.length - 1]
      if (prev !== undefined && prev.lastOffset + 1 === r.first && prev.deliveryCount === r.deliveryCount) prev.lastOffset = r.last
      else out.push({ firstOffset: r.first, lastOffset: r.last, deliveryCount: r.deliveryCount })
    }
    this.#compact()
    return out
  }

  /**
   * Applies one request's acknowledgements for `member`, all or nothing (Kafka's SharePartition.acknowledge):
   * INVALID_REQUEST for malformed batches or offsets past the SPEO, INVALID_RECORD_STATE for a record this
   * member does not hold (never acquired, its lock expired, acknowledged already). Offsets below the SPSO
   * are done with already and skipped. `released` says whether records became AVAILABLE (waiting fetches
   * may take them).
   */
  acknowledge(member: string, batches: readonly AcknowledgementBatch[], limits: ShareLimits): AckResult {
    const checked = checkAcknowledgementBatches(batches)
    if (checked !== undefined) return { ok: false, errorCode: ERR_INVALID_REQUEST, message: checked }
    // Check every record first: nothing changes unless all of it can.
    for (const b of batches) {
      if (b.lastOffset < this.#start) continue
      if (b.lastOffset >= this.#end) return { ok: false, errorCode: ERR_INVALID_REQUEST, message: 'Batch record not found. The last offset in request is past acquired records.' }
      let i = this.#find(Math.max(b.firstOffset, this.#start))
      for (; i < this.#runs.length && this.#runs[i]!.first <= b.lastOffset; i++) {
        const r = this.#runs[i]!
        // Never delivered (no record, a marker, an aborted record): nobody holds it, nothing to acknowledge.
        if (r.state === RecordState.ARCHIVED && r.deliveryCount === 0) continue
        if (r.state !== RecordState.ACQUIRED) return { ok: false, errorCode: ERR_INVALID_RECORD_STATE, message: 'The record is not in the acquired state.' }
        if (r.owner !== member) return { ok: false, errorCode: ERR_INVALID_RECORD_STATE, message: 'Member is not the owner of the record.' }
      }
    }
    // Then all of it in one pass over the runs, however many batches and however fragmented the window.
    const ranges: { first: number; last: number }[] = []
    const sources: AcknowledgementBatch[] = []
    for (const b of batches) {
      if (b.lastOffset < this.#start) continue
      ranges.push({ first: Math.max(b.firstOffset, this.#start), last: b.lastOffset })
      sources.push(b)
    }
    let released = false
    this.#rewrite(ranges, (piece, k) => {
      // Only never-delivered records are not ACQUIRED here (checked above): nothing to do for them.
      if (piece.state !== RecordState.ACQUIRED) return undefined
      const b = sources[k]!
      const types = b.acknowledgeTypes
      if (types.length === 1) {
        released = this.#settle(piece, types[0]!, limits) || released
        return undefined
      }
      // One type per offset: consecutive equal types are settled as one piece.
      const pieces: Run[] = []
      let from = piece.first
      let type = types[from - b.firstOffset]!
      for (let o = piece.first; o <= piece.last; o++) {
        const next = o < piece.last ? types[o + 1 - b.firstOffset]! : -1
        if (next === type) continue
        const p: Run = { ...piece, first: from, last: o }
        released = this.#settle(p, type, limits) || released
        pieces.push(p)
        from = o + 1
        type = next
      }
      return pieces
    })
    this.#compact()
    return { ok: true, released }
  }

  /** Releases every record `member` holds (its share session closed): AVAILABLE, or ARCHIVED past the limit. */
  releaseMember(member: string, limits: ShareLimits): boolean {
    let released = false
    for (const r of this.#runs) {
      if (r.state !== RecordState.ACQUIRED || r.owner !== member) continue
      released = this.#release(r, limits) || released
    }
    this.#compact()
    return released
  }

  /** The earliest lock deadline of the ACQUIRED records, or undefined when none is held. */
  nextLockExpiry(): number | undefined {
    let next: number | undefined
    for (const r of this.#runs) if (r.state === RecordState.ACQUIRED && (next === undefined || r.lockUntil < next)) next = r.lockUntil
    return next
  }

  /** Ends the locks due by `now` (Kafka's acquisition lock timeout): AVAILABLE, or ARCHIVED past the limit. */
  expireLocks(now: number, limits: ShareLimits): boolean {
    let released = false
    for (const r of this.#runs) {
      if (r.state !== RecordState.ACQUIRED || r.lockUntil > now) continue
      this.lockTimeouts += r.last - r.first + 1
      released = this.#release(r, limits) || released
    }
    this.#compact()
    return released
  }

  /**
   * The log start offset moved past the SPSO (retention, DeleteRecords): what lies below it is gone and
   * archived, locks included, and the SPSO (and the SPEO when it is below too) moves up to it.
   */
  advanceToLogStart(logStartOffset: number): void {
    if (logStartOffset <= this.#start) return
    if (logStartOffset >= this.#end) {
      this.#runs = []
      this.#start = this.#end = logStartOffset
      return
    }
    this.#split(logStartOffset)
    const i = this.#find(logStartOffset)
    this.#runs.splice(0, i)
    this.#start = logStartOffset
    this.#compact()
  }

  /** The state to persist (see ShareSnapshot). */
  snapshot(): ShareSnapshot {
    const stateBatches: StateBatch[] = []
    for (const r of this.#runs) {
      const deliveryState = r.state === RecordState.ACQUIRED ? RecordState.AVAILABLE : r.state
      const prev = stateBatches[stateBatches.length - 1]
      if (prev !== undefined && prev.deliveryState === deliveryState && prev.deliveryCount === r.deliveryCount && prev.lastOffset + 1 === r.first) prev.lastOffset = r.last
      else stateBatches.push({ firstOffset: r.first, lastOffset: r.last, deliveryState, deliveryCount: r.deliveryCount })
    }
    return { startOffset: this.#start, stateBatches }
  }

  #restore(snapshot: ShareSnapshot): void {
    this.#start = this.#end = snapshot.startOffset
    for (const b of snapshot.stateBatches) {
      if (b.lastOffset < this.#end || b.lastOffset < b.firstOffset) continue
      const first = Math.max(b.firstOffset, this.#end)
      // A hole between saved batches was AVAILABLE then (Kafka saves only what is not).
      if (first > this.#end) this.#append(this.#end, first - 1, RecordState.AVAILABLE, 0, undefined, 0)
      const state = b.deliveryState === RecordState.ACQUIRED ? RecordState.AVAILABLE : b.deliveryState
      this.#append(first, b.lastOffset, state, Math.max(0, b.deliveryCount), undefined, 0)
    }
    this.#compact()
  }

  /** One acknowledgement type on an ACQUIRED run; true when it became AVAILABLE. */
  #settle(r: Run, type: number, limits: ShareLimits): boolean {
    if (type === AcknowledgeType.RELEASE) return this.#release(r, limits)
    r.state = type === AcknowledgeType.ACCEPT ? RecordState.ACKNOWLEDGED : RecordState.ARCHIVED
    r.owner = undefined
    r.lockUntil = 0
    return false
  }

  /** Back to AVAILABLE, or ARCHIVED once delivered deliveryCountLimit times; true when AVAILABLE. */
  #release(r: Run, limits: ShareLimits): boolean {
    const available = r.deliveryCount < limits.deliveryCountLimit
    r.state = available ? RecordState.AVAILABLE : RecordState.ARCHIVED
    r.owner = undefined
    r.lockUntil = 0
    return available
  }

  #append(first: number, last: number, state: RecordState, deliveryCount: number, owner: string | undefined, lockUntil: number): Run {
    const run: Run = { first, last, state, deliveryCount, owner, lockUntil }
    this.#runs.push(run)
    this.#end = last + 1
    return run
  }

  /** Index of the run holding `offset`, or -1 outside the window. */
  #find(offset: number): number {
    let lo = 0
    let hi = this.#runs.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const r = this.#runs[mid]!
      if (offset < r.first) hi = mid - 1
      else if (offset > r.last) lo = mid + 1
      else return mid
    }
    return -1
  }

  /** Splits the run holding `offset` so that a run starts there. */
  #split(offset: number): void {
    const i = this.#find(offset)
    if (i < 0) return
    const r = this.#runs[i]!
    if (r.first === offset) return
    this.#runs.splice(i + 1, 0, { ...r, first: offset })
    r.last = offset - 1
  }

  /**
   * Rewrites the runs under `ranges` (in order, disjoint, inside the window) in one pass: each piece of a
   * run that lies in range k goes to `edit(piece, k)`, which changes it in place or answers the pieces to
   * put in its stead. Linear in the runs, the ranges and the pieces made: no per-range search or splice.
   */
  #rewrite(ranges: readonly { first: number; last: number }[], edit: (piece: Run, k: number) => Run[] | undefined): void {
    if (ranges.length === 0) return
    const runs = this.#runs
    let i = this.#find(ranges[0]!.first)
    if (i < 0) return
    const out = runs.slice(0, i)
    let k = 0
    for (; i < runs.length && k < ranges.length; i++) {
      const r = runs[i]!
      let pos = r.first
      while (pos <= r.last) {
        while (k < ranges.length && ranges[k]!.last < pos) k++
        const g = ranges[k]
        if (g === undefined || g.first > r.last) {
          out.push(pos === r.first ? r : { ...r, first: pos })
          break
        }
        if (g.first > pos) {
          out.push({ ...r, first: pos, last: g.first - 1 })
          pos = g.first
        }
        const end = Math.min(r.last, g.last)
        const piece = pos === r.first && end === r.last ? r : { ...r, first: pos, last: end }
        const replaced = edit(piece, k)
        if (replaced === undefined) out.push(piece)
        else for (const p of replaced) out.push(p)
        pos = end + 1
      }
    }
    for (; i < runs.length; i++) out.push(runs[i]!)
    this.#runs = out
  }

  /** Moves the SPSO past the final runs at the front and merges equal neighbours. */
  #compact(): void {
    let drop = 0
    while (drop < this.#runs.length && isFinal(this.#runs[drop]!.state)) drop++
    if (drop > 0) {
      this.#start = drop === this.#runs.length ? this.#end : this.#runs[drop]!.first
      this.#runs.splice(0, drop)
    }
    if (this.#runs.length < 2) return
    const merged: Run[] = [this.#runs[0]!]
    for (let i = 1; i < this.#runs.length; i++) {
      const r = this.#runs[i]!
      const prev = merged[merged.length - 1]!
      if (prev.state === r.state && prev.deliveryCount === r.deliveryCount && prev.owner === r.owner && prev.lockUntil === r.lockUntil) prev.last = r.last
      else merged.push(r)
    }
    this.#runs = merged
  }
}

/**
 * Kafka's checks of a request's acknowledgement batches (KafkaApis.validateAcknowledgementBatches), as a
 * message for INVALID_REQUEST, or undefined when they are well formed: first <= last, in order without
 * overlap, one type or one per offset, each type 0-3.
 */
export function checkAcknowledgementBatches(batches: readonly AcknowledgementBatch[]): string | undefined {
  let prevLast = -1
  for (const b of batches) {
    if (!Number.isSafeInteger(b.firstOffset) || !Number.isSafeInteger(b.lastOffset) || b.firstOffset < 0) return 'Invalid acknowledgement batch offsets'
    if (b.lastOffset < b.firstOffset) return 'First offset of an acknowledgement batch is greater than its last offset'
    if (b.firstOffset <= prevLast) return 'Acknowledgement batches overlap or are out of order'
    prevLast = b.lastOffset
    const n = b.acknowledgeTypes.length
    if (n !== 1 && n !== b.lastOffset - b.firstOffset + 1) return 'Size of acknowledge types must be 1 or equal to the number of offsets in the batch'
    for (const t of b.acknowledgeTypes) if (t < AcknowledgeType.GAP || t > AcknowledgeType.REJECT) return `Invalid acknowledge type: ${t}`
  }
  return undefined
}
