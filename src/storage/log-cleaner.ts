// The log cleaner of one shard (Kafka's LogCleaner, LogCleanerManager and Cleaner in one class): picks
// the compacted log that most needs cleaning and rewrites its segments without obsolete records. It runs
// on the thread that owns the logs, in slices: after sliceMs of work (or sliceBytes read) it pauses for
// yieldMs, long enough for the shard's queued appends and reads (of its other partitions, and of this
// one) to be served and for their callers to send the next ones, and it sleeps longer when
// log.cleaner.io.max.bytes.per.second says so. A bare setImmediate would let through only what had
// already arrived, one round trip per slice.
//
// A log's offsets split at firstDirtyOffset (persisted per partition in `cleaner-offset-checkpoint`,
// same text format as the other checkpoints; absent or out of range means the log start): below it the
// log has been cleaned, from it to firstUncleanableOffset it is dirty. firstUncleanableOffset is the
// smallest of the active segment's base (the active segment is never cleaned), the high watermark, the
// last stable offset (records of open transactions are never cleaned), and the base of the first segment holding a record younger than min.compaction.lag.ms.
// A log is eligible when dirty / (clean + dirty) bytes > min.cleanable.dirty.ratio, when its oldest dirty
// batch is older than max.compaction.lag.ms, or when a tombstone kept by an earlier pass has reached its
// delete horizon (see cleaner/batch-filter.ts).
//
// One pass (Kafka's Cleaner.doClean): (1) build the offset map (key -> latest offset) over the dirty
// range, stopping at a batch boundary if the map fills; (2) group the segments below that end offset
// into runs of at most segment.bytes (and index size, and 2^31 offsets), oldest first; (3) write each
// group as one `<base>.log.cleaned` keeping what filterBatch keeps, fsync it, and swap it in (segment-swap.ts);
// (4) checkpoint the end offset as the new firstDirtyOffset. A crash anywhere leaves either the old
// segments or the new one (recovery completes or drops the swap), and at worst repeats work.
// Transaction markers whose transactions have no records left are stamped and later dropped like
// tombstones (batch-filter.ts); the .txnindex entries of such aborted transactions are removed before the
// group's swap: with their records already gone, losing the entry first is harmless whatever follows.

import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { setImmediate as immediate, setTimeout as sleep } from 'node:timers/promises'
import { decodedSizeLimit } from '../protocol/records/inflate.js'
import { readInt64, BASE_TIMESTAMP_OFFSET, ATTRIBUTES_OFFSET, LAST_OFFSET_DELTA_OFFSET, PRODUCER_ID_OFFSET, RECORD_COUNT_OFFSET, MAX_TIMESTAMP_OFFSET } from '../protocol/records/batch.js'
import { readCheckpoint, writeCheckpoint } from './checkpoint.js'
import { LONG_MAX, STORAGE_DEFAULTS } from '../config/log-config.js'
import type { PartitionLog } from './partition-log.js'
import { LogSegment } from './segment.js'
import type { AppendedBatch } from './segment.js'
import { BatchReader, scanHeaders } from './cleaner/batch-reader.js'
import { AbortedRanges, DELETE_HORIZON_MASK, TxnMarkerTracker, filterBatch, mapBatchKeys } from './cleaner/batch-filter.js'
import type { FilterContext, FinishedAbort, TxnFilter } from './cleaner/batch-filter.js'
import { OffsetMap } from './cleaner/offset-map.js'
import { CLEANED_SUFFIX, deleteCleanedFiles } from './segment-swap.js'
import type { SwapStep } from './segment-swap.js'

export const CLEANER_OFFSET_CHECKPOINT = 'cleaner-offset-checkpoint'
const DEFAULT_SLICE_BYTES = 1024 * 1024
const DEFAULT_SLICE_MS = 4
const DEFAULT_YIELD_MS = 1
const OUTPUT_FLUSH_BYTES = 1024 * 1024
const INT32_MAX = 0x7fffffff
const MAX_SLEEP_MS = 100

export interface LogCleanerSettings {
  /** Offset map memory a pass may use (this shard's share of log.cleaner.dedupe.buffer.size). */
  dedupeBufferBytes?: number
  /** log.cleaner.io.max.bytes.per.second: bytes read plus written per second, per shard. */
  ioMaxBytesPerSecond?: number
  /** Bytes processed between two yields to the event loop at most. Default 1 MiB. */
  sliceBytes?: number
  /** Milliseconds of work between two yields at most. Default 4. */
  sliceMs?: number
  /** How long each yield lasts (ms; 0 = one turn of the event loop). Default 1. */
  yieldMs?: number
  /** Test hook: called after each step of every segment swap (crash tests kill the process there). */
  onSwapStep?: (log: PartitionLog, step: SwapStep) => void
}

export interface LogCleanerOptions extends LogCleanerSettings {
  /** The logs this cleaner may clean (those of its thread). */
  logs: () => Iterable<PartitionLog>
  now: () => number
}

/** Why a log needs (or does not need) cleaning: Kafka's LogToClean. */
export interface LogToClean {
  log: PartitionLog
  firstDirtyOffset: number
  firstUncleanableOffset: number
  /** Bytes of the segments below firstDirtyOffset. */
  cleanBytes: number
  /** Bytes of the inactive segments overlapping [firstDirtyOffset, firstUncleanableOffset). */
  cleanableBytes: number
  /** cleanableBytes / (cleanBytes + cleanableBytes). */
  dirtyRatio: number
  /** How long past max.compaction.lag.ms the oldest dirty batch is (0 when not). */
  compactionDelayMs: number
  /** A kept tombstone's delete horizon has passed. */
  tombstonesDue: boolean
  eligible: boolean
}

export type CleanReason = 'cleaned' | 'not-compacted' | 'not-eligible' | 'nothing-to-clean' | 'aborted' | 'map-too-small' | 'failed'

/** What one pass over a log did. */
export interface CleanResult {
  topic: string
  partition: number
  cleaned: boolean
  reason: CleanReason
  /** Set when reason is 'failed' or 'aborted'. */
  message?: string
  firstDirtyOffset: number
  /** The new firstDirtyOffset (the dirty range was cleaned up to here). */
  endOffset: number
  segmentsBefore: number
  segmentsAfter: number
  bytesRead: number
  bytesWritten: number
  recordsRemoved: number
  durationMs: number
}

interface CleanerState {
  firstDirty: number
  /** Earliest delete horizon of the tombstones kept in the clean range; undefined when none. */
  tombstoneHorizon: number | undefined
  /** A pass failed on this log: the periodic cleaner leaves it alone until the log is reopened (Kafka's uncleanable partitions). */
  failed: string | undefined
}

class CleanAborted extends Error {}

interface PassStats {
  io: number
  sinceYield: number
  sliceStart: number
  start: number
  bytesRead: number
  bytesWritten: number
  recordsRemoved: number
}

/** Groups adjacent segments into runs that fit one segment (Kafka's groupSegmentsBySize). */
function groupSegments(segments: readonly SegmentInfo[], maxBytes: number, maxIndexBytes: number): SegmentInfo[][] {
  const groups: SegmentInfo[][] = []
  let i = 0
  while (i < segments.length) {
    const first = segments[i]!
    const group = [first]
    let bytes = first.size
    let indexBytes = first.indexBytes
    i++
    while (i < segments.length) {
      const s = segments[i]!
      if (bytes + s.size > maxBytes || indexBytes + s.indexBytes > maxIndexBytes || s.nextBase - 1 - first.base > INT32_MAX) break
      group.push(s)
      bytes += s.size
      indexBytes += s.indexBytes
      i++
    }
    groups.push(group)
  }
  return groups
}

/** What the pass needs of a segment, captured before the first yield (indexes may close later). */
interface SegmentInfo {
  segment: LogSegment
  base: number
  nextBase: number
  size: number
  indexBytes: number
}

export class LogCleaner {
  readonly #logs: () => Iterable<PartitionLog>
  readonly #now: () => number
  readonly #dedupeBytes: number
  readonly #ioMax: number
  readonly #sliceBytes: number
  readonly #sliceMs: number
  readonly #yieldMs: number
  readonly #onSwapStep: ((log: PartitionLog, step: SwapStep) => void) | undefined
  readonly #states = new WeakMap<PartitionLog, CleanerState>()
  #lock: Promise<unknown> = Promise.resolve()
  #stopping = false

  constructor(opts: LogCleanerOptions) {
    this.#logs = opts.logs
    this.#now = opts.now
    this.#dedupeBytes = opts.dedupeBufferBytes ?? STORAGE_DEFAULTS.cleanerDedupeBufferBytes
    this.#ioMax = opts.ioMaxBytesPerSecond ?? STORAGE_DEFAULTS.cleanerIoMaxBytesPerSecond
    this.#sliceBytes = Math.max(64 * 1024, opts.sliceBytes ?? DEFAULT_SLICE_BYTES)
    this.#sliceMs = Math.max(1, opts.sliceMs ?? DEFAULT_SLICE_MS)
    this.#yieldMs = Math.max(0, opts.yieldMs ?? DEFAULT_YIELD_MS)
    this.#onSwapStep = opts.onSwapStep
  }

  #state(log: PartitionLog): CleanerState {
    let st = this.#states.get(log)
    if (st === undefined) {
      const firstDirty = readCheckpoint(join(log.dir, CLEANER_OFFSET_CHECKPOINT), log.topic, log.partition) ?? log.logStartOffset
      st = { firstDirty, tombstoneHorizon: this.#scanTombstoneHorizon(log), failed: undefined }
      this.#states.set(log, st)
    }
    return st
  }

  /** After an open: the earliest horizon stamped on a batch of the inactive segments (header scan). */
  #scanTombstoneHorizon(log: PartitionLog): number | undefined {
    let min: number | undefined
    const segments = log.segmentsForCleaning()
    for (const s of segments.slice(0, -1)) {
      scanHeaders(s.fd, 0, s.size, (h) => {
        if ((h.readInt16BE(ATTRIBUTES_OFFSET) & DELETE_HORIZON_MASK) === 0) return
        const horizon = readInt64(h, BASE_TIMESTAMP_OFFSET)
        if (min === undefined || horizon < min) min = horizon
      })
    }
    return min
  }

  /** Kafka's LogToClean for log, or null when its cleanup.policy does not include compact. */
  inspect(log: PartitionLog, now: number = this.#now()): LogToClean | null {
    const c = log.config
    if (!c.cleanupPolicy.includes('compact') || log.isClosed) return null
    const st = this.#state(log)
    const segments = log.segmentsForCleaning()
    const active = segments[segments.length - 1]!
    const logStart = log.logStartOffset
    const leo = log.logEndOffset
    const nextBase = (i: number): number => segments[i + 1]?.baseOffset ?? leo
    let firstDirty = st.firstDirty
    if (firstDirty < logStart || firstDirty > leo) firstDirty = logStart
    let firstUncleanable = Math.min(active.baseOffset, log.highWatermark, log.lastStableOffset)
    if (c.minCompactionLagMs > 0) {
      for (let i = 0; i < segments.length - 1; i++) {
        const s = segments[i]!
        if (nextBase(i) <= firstDirty || s.baseOffset >= firstUncleanable) continue
        if (s.largestTimestamp() > now - c.minCompactionLagMs) {
          firstUncleanable = Math.min(firstUncleanable, s.baseOffset)
          break
        }
      }
    }
    let cleanBytes = 0
    let cleanableBytes = 0
    let earliestDirty = Infinity
    for (let i = 0; i < segments.length - 1; i++) {
      const s = segments[i]!
      if (s.baseOffset < firstDirty) cleanBytes += s.size
      if (nextBase(i) > firstDirty) {
        if (s.baseOffset < firstUncleanable) cleanableBytes += s.size
        const first = s.rollingBasedTimestamp()
        if (first !== undefined && first > 0 && first < earliestDirty) earliestDirty = first
      }
    }
    if (firstUncleanable < firstDirty) cleanableBytes = 0
    const total = cleanBytes + cleanableBytes
    const dirtyRatio = total === 0 ? 0 : cleanableBytes / total
    let compactionDelayMs = 0
    if (c.maxCompactionLagMs < LONG_MAX && earliestDirty !== Infinity) {
      const cleanUntil = now - c.maxCompactionLagMs
      if (earliestDirty < cleanUntil) compactionDelayMs = cleanUntil - earliestDirty
    }
    const tombstonesDue = st.tombstoneHorizon !== undefined && now >= st.tombstoneHorizon
    const eligible = (cleanableBytes > 0 && (compactionDelayMs > 0 || dirtyRatio > c.minCleanableDirtyRatio)) || tombstonesDue
    return {
      log, firstDirtyOffset: firstDirty, firstUncleanableOffset: Math.max(firstDirty, firstUncleanable), cleanBytes, cleanableBytes, dirtyRatio,
      compactionDelayMs, tombstonesDue, eligible,
    }
  }

  /** Runs fn after every pass started before it (one pass at a time per shard). */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#lock.then(fn, fn)
    this.#lock = run.catch(() => undefined)
    return run
  }

  /**
   * The periodic work (Kafka's cleaner thread loop): cleans the filthiest eligible log, then the next,
   * until none is eligible. A log whose pass failed or made no progress is not retried in this call.
   */
  cleanFilthiest(): Promise<CleanResult[]> {
    return this.#exclusive(async () => {
      const results: CleanResult[] = []
      const skip = new Set<PartitionLog>()
      for (let round = 0; round < 10_000 && !this.#stopping; round++) {
        const now = this.#now()
        let best: LogToClean | null = null
        for (const log of this.#logs()) {
          if (skip.has(log) || this.#states.get(log)?.failed !== undefined) continue
          const ltc = this.inspect(log, now)
          if (ltc !== null && ltc.eligible && (best === null || ltc.dirtyRatio > best.dirtyRatio)) best = ltc
        }
        if (best === null) break
        const r = await this.#guardedPass(best, now)
        results.push(r)
        if (!r.cleaned || r.endOffset <= r.firstDirtyOffset) skip.add(best.log)
      }
      return results
    })
  }

  /**
   * One pass over log now (on demand: tests, tools). It respects everything the periodic cleaner does
   * (active segment, high watermark, min.compaction.lag.ms) and, unless force, min.cleanable.dirty.ratio
   * and max.compaction.lag.ms too.
   */
  clean(log: PartitionLog, opts: { force?: boolean } = {}): Promise<CleanResult> {
    return this.#exclusive(async () => {
      const now = this.#now()
      const ltc = this.inspect(log, now)
      if (ltc === null) return this.#result(log, 'not-compacted')
      if (!ltc.eligible && opts.force !== true) return this.#result(log, 'not-eligible', ltc.firstDirtyOffset)
      return this.#guardedPass(ltc, now)
    })
  }

  /** Stops the cleaner: a running pass stops at its next slice (its files are removed). */
  async shutdown(): Promise<void> {
    this.#stopping = true
    await this.#lock
  }

  #result(log: PartitionLog, reason: CleanReason, firstDirty = -1, message?: string): CleanResult {
    const n = log.isClosed ? 0 : log.segmentsForCleaning().length
    return {
      topic: log.topic, partition: log.partition, cleaned: false, reason, ...(message === undefined ? {} : { message }), firstDirtyOffset: firstDirty, endOffset: firstDirty,
      segmentsBefore: n, segmentsAfter: n, bytesRead: 0, bytesWritten: 0, recordsRemoved: 0, durationMs: 0,
    }
  }

  async #guardedPass(ltc: LogToClean, now: number): Promise<CleanResult> {
    try {
      return await this.#pass(ltc, now)
    } catch (err) {
      if (err instanceof CleanAborted) return this.#result(ltc.log, 'aborted', ltc.firstDirtyOffset, err.message)
      const message = err instanceof Error ? err.message : String(err)
      if (!ltc.log.isClosed) this.#state(ltc.log).failed = message
      return this.#result(ltc.log, 'failed', ltc.firstDirtyOffset, message)
    }
  }

  async #progress(p: PassStats, bytes: number, log: PartitionLog): Promise<void> {
    p.io += bytes
    p.sinceYield += bytes
    if (p.sinceYield < this.#sliceBytes && performance.now() - p.sliceStart < this.#sliceMs) return
    p.sinceYield = 0
    if (this.#ioMax > 0 && this.#ioMax < Number.MAX_VALUE) {
      // Kafka's Throttler: sleep until the bytes done so far are within the rate.
      let due = (p.io / this.#ioMax) * 1000 - (performance.now() - p.start)
      while (due > 0 && !this.#stopping && !log.isClosed) {
        await sleep(Math.min(due, MAX_SLEEP_MS))
        due = (p.io / this.#ioMax) * 1000 - (performance.now() - p.start)
      }
    }
    if (this.#yieldMs > 0) await sleep(this.#yieldMs)
    else await immediate()
    p.sliceStart = performance.now()
    if (this.#stopping) throw new CleanAborted('the cleaner is shutting down')
    if (log.isClosed) throw new CleanAborted(`${log.topic}-${log.partition} was closed or deleted`)
  }

  async #pass(ltc: LogToClean, now: number): Promise<CleanResult> {
    const { log, firstDirtyOffset: firstDirty, firstUncleanableOffset: firstUncleanable } = ltc
    const c = log.config
    const st = this.#state(log)
    const segments = log.segmentsForCleaning()
    const leo = log.logEndOffset
    const infos: SegmentInfo[] = segments.slice(0, -1).map((segment, i) => ({
      segment, base: segment.baseOffset, nextBase: segments[i + 1]?.baseOffset ?? leo, size: segment.size, indexBytes: segment.offsetIndexEntries() * 8,
    }))
    const dirty = infos.filter((s) => s.base < firstUncleanable && s.nextBase > firstDirty)
    // Where the first dirty batch starts (an index lookup, done before any yield).
    const dirtyStart = dirty.length === 0 ? 0 : (dirty[0]!.segment.translateOffset(firstDirty)?.position ?? dirty[0]!.size)
    const maxRecordBytes = decodedSizeLimit(c.maxMessageBytes)
    const p: PassStats = { io: 0, sinceYield: 0, sliceStart: performance.now(), start: performance.now(), bytesRead: 0, bytesWritten: 0, recordsRemoved: 0 }
    // The segment being read is pinned (its descriptor held open across the yields, even if retention
    // deletes it meanwhile); the others are opened when their turn comes, through the open-file cache.
    const pin = (s: SegmentInfo): void => {
      if (!s.segment.tryRetain()) throw new CleanAborted(`segment ${s.base} of ${log.topic}-${log.partition} was deleted during cleaning`)
    }
    let writing: number | null = null
    try {
      // (1) The offset map over the dirty range, sized by the records it will hold (header scan).
      let wanted = 0
      for (const [i, s] of dirty.entries()) {
        scanHeaders(s.segment.fd, i === 0 ? dirtyStart : 0, s.size, (h) => {
          const base = readInt64(h, 0)
          if (base + h.readInt32BE(LAST_OFFSET_DELTA_OFFSET) >= firstDirty && base < firstUncleanable) wanted += Math.max(0, h.readInt32BE(RECORD_COUNT_OFFSET))
        })
      }
      const map = new OffsetMap(wanted, this.#dedupeBytes)
      // Transactions as of now: every transactional batch below firstUncleanable (<= the LSO) is decided.
      const txn: TxnFilter = { aborted: new AbortedRanges(log.txnIndex.all()), stableBound: Math.min(firstUncleanable, log.lastStableOffset) }
      let endOffset = firstUncleanable
      let full = false
      for (const [i, s] of dirty.entries()) {
        pin(s)
        try {
          const reader = new BatchReader(s.segment.fd, i === 0 ? dirtyStart : 0, s.size)
          for (let b = reader.next(); b !== null; b = reader.next()) {
            if (b.lastOffset < firstDirty) continue
            if (b.baseOffset >= firstUncleanable) break
            if (!mapBatchKeys(b.bytes, b.attributes, b.recordCount, map, maxRecordBytes, txn)) {
              endOffset = b.baseOffset
              full = true
              break
            }
            p.bytesRead += b.bytes.length
            await this.#progress(p, b.bytes.length, log)
          }
        } finally {
          s.segment.release()
        }
        if (full) break
      }
      if (full && endOffset <= firstDirty && !ltc.tombstonesDue) {
        const result = this.#result(log, 'map-too-small', firstDirty, `log.cleaner.dedupe.buffer.size leaves room for ${map.capacity} keys, fewer than the first dirty batch holds`)
        return result
      }

      // (2) Groups of the segments below endOffset, and each producer's last batch among them.
      const toClean = infos.filter((s) => s.base < endOffset)
      if (toClean.length === 0 || toClean.some((s) => s.segment.deleted)) {
        return this.#result(log, toClean.length === 0 ? 'nothing-to-clean' : 'aborted', firstDirty)
      }
      const groups = groupSegments(toClean, c.segmentBytes, c.segmentIndexBytes)
      const producerLastOffsets = new Map<number, number>()
      for (const s of toClean) {
        scanHeaders(s.segment.fd, 0, s.size, (h) => {
          const pid = readInt64(h, PRODUCER_ID_OFFSET)
          if (pid >= 0) producerLastOffsets.set(pid, readInt64(h, 0) + h.readInt32BE(LAST_OFFSET_DELTA_OFFSET))
        })
      }
      const ctx: FilterContext = { map, now, newHorizon: now + c.deleteRetentionMs, producerLastOffsets, maxRecordBytes, txn, markers: new TxnMarkerTracker() }
      let minHorizon = Infinity

      // (3) Each group into one cleaned segment, swapped in.
      for (const group of groups) {
        const base = group[0]!.base
        writing = base
        const cleaned = LogSegment.create(log.dir, base, log.segmentSettings(), now, CLEANED_SUFFIX)
        cleaned.indexIntervalBytes = c.indexIntervalBytes
        const finishedAborts: FinishedAbort[] = []
        try {
          let parts: Buffer[] = []
          let batches: AppendedBatch[] = []
          let pending = 0
          const flushOut = (): void => {
            if (parts.length === 0) return
            cleaned.append(parts.length === 1 ? parts[0]! : Buffer.concat(parts, pending), batches)
            p.bytesWritten += pending
            parts = []
            batches = []
            pending = 0
          }
          const add = (bytes: Buffer, lastOffset: number): void => {
            batches.push({ position: pending, size: bytes.length, lastOffset, maxTimestamp: readInt64(bytes, MAX_TIMESTAMP_OFFSET) })
            parts.push(bytes)
            pending += bytes.length
            if (pending >= OUTPUT_FLUSH_BYTES) flushOut()
          }
          for (const s of group) {
            pin(s)
            try {
              const reader = new BatchReader(s.segment.fd, 0, s.size)
              for (let b = reader.next(); b !== null; b = reader.next()) {
                const out = filterBatch(b.bytes, b.attributes, ctx)
                if (out.finishedAbort !== undefined) finishedAborts.push(out.finishedAbort)
                if (out.kind === 'keep') {
                  add(Buffer.from(b.bytes), b.lastOffset)
                  if (out.tombstoneHorizon !== null) minHorizon = Math.min(minHorizon, out.tombstoneHorizon)
                } else if (out.kind === 'rewrite') {
                  add(out.bytes, b.lastOffset)
                  p.recordsRemoved += out.removed
                  if (out.tombstoneHorizon !== null) minHorizon = Math.min(minHorizon, out.tombstoneHorizon)
                } else {
                  p.recordsRemoved += out.removed
                }
                p.bytesRead += b.bytes.length
                await this.#progress(p, b.bytes.length, log)
              }
            } finally {
              s.segment.release()
            }
          }
          flushOut()
          cleaned.onBecomeInactive()
          await cleaned.flush()
          if (group.some((s) => s.segment.deleted)) throw new CleanAborted(`segments of ${log.topic}-${log.partition} were deleted during cleaning`)
          // Kafka keeps the newest modification time of the replaced segments on the cleaned one.
          cleaned.setLastModified(Math.max(...group.map((s) => s.segment.lastModified())))
        } finally {
          cleaned.close()
        }
        if (this.#stopping) throw new CleanAborted('the cleaner is shutting down')
        if (finishedAborts.length > 0) log.txnIndex.remove(finishedAborts.map((a) => ({ producerId: a.producerId, lastOffset: a.markerOffset })))
        if (!log.replaceSegments(group.map((s) => s.segment), this.#onSwapStep === undefined ? undefined : (step) => this.#onSwapStep!(log, step))) {
          throw new CleanAborted(`segments of ${log.topic}-${log.partition} changed during cleaning`)
        }
        writing = null
      }

      // (4) The new clean/dirty boundary.
      st.firstDirty = endOffset
      st.tombstoneHorizon = minHorizon === Infinity ? undefined : minHorizon
      await writeCheckpoint(join(log.dir, CLEANER_OFFSET_CHECKPOINT), log.topic, log.partition, endOffset)
      return {
        topic: log.topic, partition: log.partition, cleaned: true, reason: 'cleaned', firstDirtyOffset: firstDirty, endOffset,
        segmentsBefore: segments.length, segmentsAfter: log.isClosed ? 0 : log.segmentsForCleaning().length,
        bytesRead: p.bytesRead, bytesWritten: p.bytesWritten, recordsRemoved: p.recordsRemoved, durationMs: performance.now() - p.start,
      }
    } finally {
      if (writing !== null) deleteCleanedFiles(log.dir, writing)
    }
  }
}
