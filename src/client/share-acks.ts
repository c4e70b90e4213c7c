// The share consumer's pieces that need no broker (KIP-932): acknowledgements turned into the wire's
// acknowledgement batches, the records of a ShareFetch answer limited to what the broker acquired for this
// member, and the epochs of a share session with one leader. share-consumer.ts drives them.
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { FetchedRecordsCursor, type ConsumedRecord } from './record-batches.js'

/** How a record is settled (Kafka's AcknowledgeType). */
export const AcknowledgeType = { ACCEPT: 'ACCEPT', RELEASE: 'RELEASE', REJECT: 'REJECT' } as const
export type AcknowledgeType = (typeof AcknowledgeType)[keyof typeof AcknowledgeType]

/** The wire's acknowledge types: GAP marks acquired offsets that hold no record (control records, compaction). */
export const WireAckType = { GAP: 0, ACCEPT: 1, RELEASE: 2, REJECT: 3 } as const

export function wireAckType(type: AcknowledgeType): number {
  switch (type) {
    case 'ACCEPT':
      return WireAckType.ACCEPT
    case 'RELEASE':
      return WireAckType.RELEASE
    case 'REJECT':
      return WireAckType.REJECT
  }
  throw new TypeError(`unknown acknowledge type '${String(type)}': ACCEPT, RELEASE or REJECT`)
}

/** A record of a share group: a consumed record and how many times it has been delivered (1 the first time). */
export interface ShareConsumerRecord extends ConsumedRecord {
  deliveryCount: number
}

/** Offsets first..last, all acknowledged with one wire type. */
export interface AckRange {
  first: number
  last: number
  type: number
}

export interface WireAckBatch {
  firstOffset: bigint
  lastOffset: bigint
  acknowledgeTypes: number[]
}

/** Largest batch written with one type per offset; longer contiguous stretches go as one batch per type. */
export const MAX_MIXED_BATCH = 512

/**
 * The acknowledgement batches of one partition: contiguous offsets of one type become one batch with a
 * single type, short contiguous stretches of mixed types one batch with a type per offset (as Kafka's
 * client writes them), in offset order. A range overlapping an earlier one is dropped: the broker refuses
 * overlapping batches whole (INVALID_REQUEST), and a single offset is never acknowledged twice in one go.
 */
export function acknowledgementBatches(ranges: readonly AckRange[]): WireAckBatch[] {
  const sorted = [...ranges].sort((a, b) => a.first - b.first)
  // Runs: maximal stretches of contiguous offsets with one type.
  const runs: AckRange[] = []
  for (const r of sorted) {
    const prev = runs[runs.length - 1]
    if (prev !== undefined && r.first <= prev.last) continue
    if (prev !== undefined && r.first === prev.last + 1 && r.type === prev.type) prev.last = r.last
    else runs.push({ ...r })
  }
  const out: WireAckBatch[] = []
  let group: AckRange[] = []
  const flush = (): void => {
    if (group.length === 0) return
    const first = group[0]!.first
    const last = group[group.length - 1]!.last
    const types: number[] = []
    if (group.length === 1) types.push(group[0]!.type)
    else for (const r of group) for (let o = r.first; o <= r.last; o++) types.push(r.type)
    out.push({ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: types })
    group = []
  }
  for (const run of runs) {
    const head = group[0]
    const tail = group[group.length - 1]
    const contiguous = tail !== undefined && run.first === tail.last + 1
    if (!contiguous || run.last - head!.first + 1 > MAX_MIXED_BATCH) flush()
    group.push(run)
  }
  flush()
  return out
}

/** What the broker acquired for this member in one partition of a ShareFetch answer. */
export interface AcquiredRange {
  firstOffset: bigint
  lastOffset: bigint
  deliveryCount: number
}

export interface AcquiredData {
  /** The acquired records, in offset order, each with its delivery count. */
  records: ShareConsumerRecord[]
  /** Acquired offsets without a record in the data: acknowledged as gaps, never handed out. */
  gaps: AckRange[]
  /** Acquired offsets of a batch that failed its checks (CRC, format), and after it: rejected. */
  rejected: AckRange[]
  /** The decoding error behind `rejected`, for the application. */
  error: Error | null
}

const MAX_OFFSET = BigInt(Number.MAX_SAFE_INTEGER)

/**
 * The records of one partition's ShareFetch data that the broker acquired for this member: the data holds
 * whole batches, of which only the offsets inside AcquiredRecords are this member's (other members may
 * hold the rest). Acquired offsets that hold no record (control batches, compacted away) become gaps, as
 * in Kafka's client. Ranges that are malformed (first > last, negative or past 2^53) or overlap an earlier
 * one are ignored: a broker's answer never makes this loop or its output larger than the data and ranges sent.
 */
export function acquiredRecords(
  data: Buffer | null,
  acquired: readonly AcquiredRange[],
  opts: { topic: string; partition: number; checkCrcs?: boolean },
): AcquiredData {
  const ranges: { first: number; last: number; deliveryCount: number }[] = []
  for (const a of acquired) {
    if (a.firstOffset < 0n || a.lastOffset < a.firstOffset || a.lastOffset > MAX_OFFSET) continue
    ranges.push({ first: Number(a.firstOffset), last: Number(a.lastOffset), deliveryCount: a.deliveryCount })
  }
  ranges.sort((a, b) => a.first - b.first)
  const valid: typeof ranges = []
  for (const r of ranges) if (valid.length === 0 || r.first > valid[valid.length - 1]!.last) valid.push(r)
  const out: AcquiredData = { records: [], gaps: [], rejected: [], error: null }
  if (valid.length === 0) return out

  const decoded: ConsumedRecord[] = []
  const cursor = new FetchedRecordsCursor(data, { topic: opts.topic, partition: opts.partition, fetchOffset: valid[0]!.first, checkCrcs: opts.checkCrcs ?? true })
  try {
    cursor.take(decoded, Number.POSITIVE_INFINITY)
  } catch (err) {
    out.error = err as Error
  }
  // Where the good data ends: acquired offsets from here on are rejected when decoding failed.
  const failedFrom = out.error === null ? Infinity : Math.max(cursor.nextOffset, decoded.length > 0 ? decoded[decoded.length - 1]!.offset + 1 : 0)

  let i = 0
  let lastOffset = -1
  const gap = (first: number, last: number): void => {
    if (first > last) return
    if (last < failedFrom) out.gaps.push({ first, last, type: WireAckType.GAP })
    else if (first >= failedFrom) out.rejected.push({ first, last, type: WireAckType.REJECT })
    else {
      out.gaps.push({ first, last: failedFrom - 1, type: WireAckType.GAP })
      out.rejected.push({ first: failedFrom, last, type: WireAckType.REJECT })
    }
  }
  for (const r of valid) {
    let next = r.first
    while (i < decoded.length && decoded[i]!.offset <= r.last) {
      const rec = decoded[i++]!
      // Offsets go up; a record that does not (malformed data) is skipped rather than delivered twice.
      if (rec.offset <= lastOffset || rec.offset < r.first) continue
      lastOffset = rec.offset
      gap(next, rec.offset - 1)
      ;(rec as ShareConsumerRecord).deliveryCount = r.deliveryCount
      out.records.push(rec as ShareConsumerRecord)
      next = rec.offset + 1
    }
    gap(next, r.last)
  }
  return out
}

/** The wire's share session epochs (KIP-932): 0 opens a session, -1 closes it, else 1, 2, ... wrapping to 1. */
export const SHARE_INITIAL_EPOCH = 0
export const SHARE_FINAL_EPOCH = -1

export function nextShareEpoch(epoch: number): number {
  return epoch >= 0x7fffffff ? 1 : epoch + 1
}

/** A partition of a share session, by topic id. */
export interface SessionPartition {
  topicId: string
  partition: number
}

export const sessionKey = (topicId: string, partition: number): string => `${topicId}:${partition}`

/**
 * One share session with one leader, as the client keeps it (Kafka's ShareSessionHandler): the epoch the
 * next request carries and the partitions the broker has in the session. A request names the partitions
 * to add (all of them when it opens the session) and those to forget; the client's view changes only when
 * the broker answered without a top-level error, so a refused request is sent again as it was.
 */
export class ShareSessionState {
  /** The epoch of the next request. */
  epoch = SHARE_INITIAL_EPOCH
  /** The partitions in the session, as the broker has them after the last answered request. */
  readonly partitions = new Map<string, SessionPartition>()

  /** True when the next request opens a session (which cannot carry acknowledgements). */
  get isNew(): boolean {
    return this.epoch === SHARE_INITIAL_EPOCH
  }

  /** What a ShareFetch for these partitions names: the ones to add and the ones to forget. */
  diff(wanted: ReadonlyMap<string, SessionPartition>): { added: SessionPartition[]; forgotten: SessionPartition[] } {
    const added: SessionPartition[] = []
    const forgotten: SessionPartition[] = []
    for (const [k, p] of wanted) if (this.isNew || !this.partitions.has(k)) added.push(p)
    if (!this.isNew) for (const [k, p] of this.partitions) if (!wanted.has(k)) forgotten.push(p)
    return { added, forgotten }
  }

  /** A ShareFetch answered without a top-level error: the session holds `wanted`, the epoch moves on. */
  fetched(wanted: ReadonlyMap<string, SessionPartition>): void {
    this.partitions.clear()
    for (const [k, p] of wanted) this.partitions.set(k, p)
    this.epoch = nextShareEpoch(this.epoch)
  }

  /** A ShareAcknowledge answered without a top-level error: the epoch moves on. */
  acknowledged(): void {
    this.epoch = nextShareEpoch(this.epoch)
  }

  /**
   * A request failed. The session's own errors, and a broken connection (the broker drops the session with
   * it), start a new session; any other top-level error leaves the session as it was (the broker checks
   * those before it moves the epoch), so the same request goes again.
   */
  failed(error: unknown): void {
    if (!(error instanceof KafkaError) || SESSION_ERRORS.has(error.code)) this.reset()
  }

  /** Forgets the session: the next request opens a new one. */
  reset(): void {
    this.epoch = SHARE_INITIAL_EPOCH
    this.partitions.clear()
  }
}

const SESSION_ERRORS: ReadonlySet<number> = new Set([ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH, ErrorCode.SHARE_SESSION_LIMIT_REACHED])
