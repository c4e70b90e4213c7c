// The fault suite's checker: judges a recorded history of sends, polls and replica logs against Kafka's
// promises, with no knowledge of the broker (it imports nothing from src/). Values are unique per history
// (each workload writes its own prefix and a counter), so a value names one send.
//
// What it counts (after Jepsen's Kafka queue checker and Kafka's own validate_delivery):
// - lost: an acknowledged acks=all send (a committed one, for a transactional send) whose value the
//   final read after healing did not return ("unseen"), or that a consumer skipped:
//   it polled an offset below the send's acknowledged offset and then one above it on the same partition,
//   without the offset in between.
// - inconsistent offsets: one (partition, offset) with two different values anywhere (acks, polls,
//   replica logs).
// - duplicates: one value at two different (partition, offset)s. An error only with idempotence on.
// - aborted reads: a value from a send that definitely did not happen (an aborted transaction, or a
//   failure the workload knows was refused before any append) returned by a poll.
// - non-monotonic: a producer's acknowledged offsets on one partition not increasing in send order, or a
//   consumer's polled offsets on one partition not increasing.
// Replica logs are compared byte for byte up to the high watermark by compareReplicaLogs.

export type SendOutcome = 'ok' | 'fail'

export interface SendOp {
  type: 'send'
  /** Which producer (one producer sends in order). */
  client: string
  /** Order of the send within its client (the order the application handed records to the producer). */
  seq: number
  value: string
  outcome: SendOutcome
  /** With outcome ok: where it was written. */
  partition?: number
  offset?: number
  acks: number
  /** A transactional send: its transaction's fate ('committed' sends count as acknowledged only then). */
  transaction?: 'committed' | 'aborted' | 'unknown'
  /** A failure known to leave nothing behind (refused before any append, or its transaction aborted). */
  definite?: boolean
  error?: string
  /** When the outcome was known (ms since the epoch). */
  time: number
}

export interface PollOp {
  type: 'poll'
  /** Which consumer instance (offsets must increase per consumer and partition). */
  client: string
  partition: number
  offset: number
  value: string
  isolation: 'read_committed' | 'read_uncommitted'
  time: number
}

/** A record found in a replica's log below the high watermark. */
export interface ReplicaOp {
  type: 'replica'
  broker: number
  partition: number
  offset: number
  value: string
}

export type Op = SendOp | PollOp | ReplicaOp

export interface CheckOptions {
  /** Every producer of the history was idempotent: duplicates are errors. */
  idempotent: boolean
  /**
   * The consumers that read everything after healing: an acknowledged value they did not read is lost
   * (unseen), even if a consumer read it before (an unclean election can take back what was read).
   * Default: every consumer in the history.
   */
  finalReaders?: readonly string[]
}

export interface Finding {
  kind: 'lost' | 'unseen' | 'skipped' | 'inconsistent' | 'duplicate' | 'aborted-read' | 'nonmonotonic-send' | 'nonmonotonic-poll'
  detail: string
}

export interface CheckResult {
  /** Acknowledged sends (acks=all, committed when transactional). */
  acknowledged: number
  /** Distinct acknowledged values lost (unseen or skipped). */
  lost: number
  unseen: number
  skipped: number
  inconsistent: number
  duplicates: number
  abortedReads: number
  nonMonotonicSends: number
  nonMonotonicPolls: number
  /** Failed sends (indefinite) whose value was read anyway: allowed (the write happened), counted for the report. */
  failedButVisible: number
  /** Findings that break a promise (duplicates only with idempotence). */
  errors: Finding[]
  /** At most a few examples per kind, for messages. */
  examples: Finding[]
  ok: boolean
}

const MAX_EXAMPLES_PER_KIND = 5

function key(partition: number, offset: number): string {
  return `${partition}@${offset}`
}

function isAcknowledged(s: SendOp): boolean {
  if (s.outcome !== 'ok' || s.acks !== -1) return false
  return s.transaction === undefined || s.transaction === 'committed'
}

export function check(history: readonly Op[], options: CheckOptions): CheckResult {
  // An acknowledgement without an offset (null, or -1) has no position: librdkafka delivers a retried
  // idempotent batch that way when the leader answers it as one it already has. The value must still be
  // read back, and at one position only.
  const sends = history
    .filter((o): o is SendOp => o.type === 'send')
    .map((s) => ((s.offset as number | null | undefined) === null || (s.offset !== undefined && s.offset < 0) ? { ...s, offset: undefined } : s))
  const polls = history.filter((o): o is PollOp => o.type === 'poll')
  const replicas = history.filter((o): o is ReplicaOp => o.type === 'replica')
  const findings: Finding[] = []

  // (partition, offset) -> values, and value -> positions, over every source.
  const valuesAt = new Map<string, Set<string>>()
  const positionsOf = new Map<string, Set<string>>()
  const note = (partition: number, offset: number, value: string): void => {
    const k = key(partition, offset)
    let vs = valuesAt.get(k)
    if (vs === undefined) valuesAt.set(k, (vs = new Set()))
    vs.add(value)
    let ps = positionsOf.get(value)
    if (ps === undefined) positionsOf.set(value, (ps = new Set()))
    ps.add(k)
  }
  for (const s of sends) if (s.outcome === 'ok' && s.partition !== undefined && s.offset !== undefined && s.transaction !== 'aborted') note(s.partition, s.offset, s.value)
  for (const p of polls) note(p.partition, p.offset, p.value)
  for (const r of replicas) note(r.partition, r.offset, r.value)

  let inconsistent = 0
  for (const [k, vs] of valuesAt) {
    if (vs.size > 1) {
      inconsistent++
      findings.push({ kind: 'inconsistent', detail: `${k} holds ${[...vs].join(', ')}` })
    }
  }
  let duplicates = 0
  for (const [v, ps] of positionsOf) {
    if (ps.size > 1) {
      duplicates++
      findings.push({ kind: 'duplicate', detail: `${v} at ${[...ps].join(', ')}` })
    }
  }

  // Lost: unseen by the final read, or skipped by a consumer that read around it.
  const polledValues = new Set(polls.map((p) => p.value))
  const finalReaders = options.finalReaders === undefined ? undefined : new Set(options.finalReaders)
  const finallyRead = finalReaders === undefined ? polledValues : new Set(polls.filter((p) => finalReaders.has(p.client)).map((p) => p.value))
  const acknowledged = sends.filter(isAcknowledged)
  const lostValues = new Set<string>()
  let unseen = 0
  for (const s of acknowledged) {
    if (!finallyRead.has(s.value)) {
      unseen++
      lostValues.add(s.value)
      findings.push({ kind: 'unseen', detail: `${s.value} (acknowledged at ${s.partition}@${s.offset}) not read after healing` })
    }
  }
  const ackedAt = new Map<string, SendOp>()
  for (const s of acknowledged) if (s.partition !== undefined && s.offset !== undefined) ackedAt.set(key(s.partition, s.offset), s)
  const pollsByReader = groupBy(polls, (p) => `${p.client}/${p.partition}`)
  let skipped = 0
  let nonMonotonicPolls = 0
  for (const [reader, ps] of pollsByReader) {
    // In the order the consumer returned them (the history is in arrival order per client).
    const seenOffsets = new Set(ps.map((p) => p.offset))
    for (let i = 1; i < ps.length; i++) {
      const prev = ps[i - 1]!
      const cur = ps[i]!
      if (cur.offset <= prev.offset) {
        nonMonotonicPolls++
        findings.push({ kind: 'nonmonotonic-poll', detail: `${reader}: offset ${cur.offset} after ${prev.offset}` })
        continue
      }
      for (let o = prev.offset + 1; o < cur.offset; o++) {
        const s = ackedAt.get(key(cur.partition, o))
        // An offset the consumer read later anyway (a re-read) is not a skip.
        if (s !== undefined && !seenOffsets.has(o)) {
          // A read_uncommitted consumer cannot skip committed data; read_committed skips aborted data only.
          skipped++
          lostValues.add(s.value)
          findings.push({ kind: 'skipped', detail: `${reader} read ${prev.offset} then ${cur.offset}, skipping acknowledged ${s.value} at ${o}` })
        }
      }
    }
  }

  // Aborted reads: definitely failed sends (or aborted transactions) returned by a poll.
  let abortedReads = 0
  let failedButVisible = 0
  const sendByValue = new Map(sends.map((s) => [s.value, s]))
  const abortedReadValues = new Set<string>()
  for (const p of polls) {
    const s = sendByValue.get(p.value)
    if (s === undefined) continue
    const aborted = s.transaction === 'aborted' || (s.outcome === 'fail' && s.definite === true)
    if (aborted && (p.isolation === 'read_committed' || s.transaction === undefined) && !abortedReadValues.has(s.value)) {
      abortedReadValues.add(s.value)
      abortedReads++
      findings.push({ kind: 'aborted-read', detail: `${p.client} read ${s.value} at ${p.partition}@${p.offset}, whose send ${s.transaction === 'aborted' ? 'was aborted' : `failed (${s.error ?? 'error'})`}` })
    }
  }
  const failedValues = new Set(sends.filter((s) => s.outcome === 'fail' && s.definite !== true && s.transaction !== 'aborted').map((s) => s.value))
  for (const v of failedValues) if (polledValues.has(v)) failedButVisible++

  // Non-monotonic sends: per producer and partition, acknowledged offsets increase with seq.
  let nonMonotonicSends = 0
  const okSends = sends.filter((s) => s.outcome === 'ok' && s.partition !== undefined && s.offset !== undefined)
  for (const [producer, ss] of groupBy(okSends, (s) => `${s.client}/${s.partition}`)) {
    const ordered = [...ss].sort((a, b) => a.seq - b.seq)
    for (let i = 1; i < ordered.length; i++) {
      if (ordered[i]!.offset! <= ordered[i - 1]!.offset!) {
        nonMonotonicSends++
        findings.push({ kind: 'nonmonotonic-send', detail: `${producer}: send #${ordered[i]!.seq} at ${ordered[i]!.offset} after #${ordered[i - 1]!.seq} at ${ordered[i - 1]!.offset}` })
      }
    }
  }

  const errors = findings.filter((f) => f.kind !== 'duplicate' || options.idempotent)
  const examples: Finding[] = []
  const perKind = new Map<string, number>()
  for (const f of findings) {
    const n = perKind.get(f.kind) ?? 0
    if (n < MAX_EXAMPLES_PER_KIND) examples.push(f)
    perKind.set(f.kind, n + 1)
  }
  return {
    acknowledged: acknowledged.length,
    lost: lostValues.size,
    unseen,
    skipped,
    inconsistent,
    duplicates,
    abortedReads,
    nonMonotonicSends,
    nonMonotonicPolls,
    failedButVisible,
    errors,
    examples,
    ok: errors.length === 0,
  }
}

/** Where the longest gap of longestAckGap lies: its partition and its ends (ms since the epoch). */
export function longestAckGapSpan(history: readonly Op[], partitions: readonly number[], from: number, to: number): { partition: number; start: number; end: number } | undefined {
  let span: { partition: number; start: number; end: number } | undefined
  for (const partition of partitions) {
    const times = history
      .filter((o): o is SendOp => o.type === 'send' && o.outcome === 'ok' && o.partition === partition && o.time >= from && o.time <= to)
      .map((s) => s.time)
      .sort((a, b) => a - b)
    let last = from
    for (const t of [...times, to]) {
      if (span === undefined || t - last > span.end - span.start) span = { partition, start: last, end: t }
      last = t
    }
  }
  return span
}

/**
 * The longest time without an acknowledged write, per partition, between `from` and `to` (ms since
 * the epoch): the unavailability a fault caused. Partitions with no acknowledgement at all in the window
 * count the whole window.
 */
export function longestAckGap(history: readonly Op[], partitions: readonly number[], from: number, to: number): number {
  const span = longestAckGapSpan(history, partitions, from, to)
  return span === undefined ? 0 : span.end - span.start
}

// ---- replica logs ----

/** Byte offset in a log's concatenated segments where the batch holding `offset` or any later one starts. */
function bytesBelow(log: Buffer, highWatermark: number): number {
  let pos = 0
  while (log.length - pos >= 12) {
    const size = log.readInt32BE(pos + 8)
    if (size <= 0) break
    const end = pos + 12 + size
    if (end > log.length) break
    const baseOffset = Number(log.readBigInt64BE(pos))
    if (baseOffset >= highWatermark) break
    pos = end
  }
  return pos
}

export interface ReplicaComparison {
  identical: boolean
  /** Bytes compared (the reference's bytes below the high watermark). */
  bytes: number
  detail: string
}

/**
 * Whether every replica's log (its segment files concatenated in base-offset order) holds the same
 * bytes as the others for every batch below the high watermark.
 */
export function compareReplicaLogs(logs: ReadonlyMap<number, Buffer>, highWatermark: number): ReplicaComparison {
  const entries = [...logs.entries()]
  if (entries.length === 0) return { identical: true, bytes: 0, detail: 'no replicas' }
  const [refBroker, refLog] = entries[0]!
  const refEnd = bytesBelow(refLog, highWatermark)
  const reference = refLog.subarray(0, refEnd)
  for (const [broker, log] of entries.slice(1)) {
    const prefix = log.subarray(0, bytesBelow(log, highWatermark))
    if (!prefix.equals(reference)) {
      let at = 0
      while (at < Math.min(prefix.length, reference.length) && prefix[at] === reference[at]) at++
      return { identical: false, bytes: refEnd, detail: `broker ${broker} differs from broker ${refBroker} at byte ${at} (${prefix.length} vs ${reference.length} bytes below HW ${highWatermark})` }
    }
  }
  return { identical: true, bytes: refEnd, detail: `${entries.length} replicas identical over ${refEnd} bytes below HW ${highWatermark}` }
}

function groupBy<T>(items: readonly T[], by: (t: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>()
  for (const item of items) {
    const k = by(item)
    let list = out.get(k)
    if (list === undefined) out.set(k, (list = []))
    list.push(item)
  }
  return out
}
