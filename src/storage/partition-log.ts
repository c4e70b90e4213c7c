// The log of one partition: an ordered list of segments, the last one active. Owned by one thread,
// so no method interleaves with another; only flush work runs in the background (fsync off-thread).
//
// Offsets: logStartOffset <= highWatermark <= logEndOffset (LEO). recoveryPoint: every batch below it
// has been fsynced; on an unclean open, segments from the one holding the recovery point on are
// re-validated batch by batch and their indexes rebuilt.
//
// Transactions: the producer state tracks each producer's open transaction; the last stable offset (LSO)
// is the first offset of the oldest open one, or the high watermark when none is open. Markers
// (appendTxnMarker) close transactions; aborts go to the .txnindex files (txn-index.ts), which
// read_committed reads consult. On open, the .txnindex files of recovered segments (and corrupt ones)
// are rebuilt by the producer state replay, which restarts from a snapshot at or below them.

import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { native } from '../addon/index.js'
import { mergeLogConfig } from '../config/log-config.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP } from '../domain/list-offsets.js'
import { scanFileBatches } from '../protocol/records/file-scan.js'
import { targetCodec } from '../protocol/records/compression.js'
import { decodedSizeLimit } from '../protocol/records/inflate.js'
import { assignOffsetsInPlace, rewriteProducerBatches, validateProducerBatches } from '../protocol/records/validate.js'
import { LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, readCheckpoint, writeCheckpoint } from './checkpoint.js'
import { recoverInterruptedSwaps, swapCleanedIntoPlace } from './segment-swap.js'
import type { SwapStep } from './segment-swap.js'
import type { LeaseTable } from './lease-table.js'
import { ProducerStateManager } from './producer-state.js'
import type { BatchMetadata } from './producer-state.js'
import { INDEX_SUFFIX, LOG_SUFFIX, LogSegment, TIME_INDEX_SUFFIX, parseSegmentFileName, segmentFileName } from './segment.js'
import { readBatchHeader } from '../protocol/records/file-scan.js'
import { TransactionIndex } from './txn-index.js'
import { buildMarkerBatch } from './txn-marker.js'
import type { AppendedBatch } from './segment.js'
import type {
  AppendOptions,
  AppendResult,
  FileRegion,
  IsolationLevel,
  LogConfig,
  OffsetAndTimestamp,
  PartitionState,
  ProducerDescription,
  ReadOptions,
  ReadResult,
  TxnMarker,
} from './types.js'

/** What a PartitionLog gets from its LogManager. */
export interface PartitionLogContext {
  leases: LeaseTable
  now: () => number
  /** Single-broker mode: every append moves the high watermark to the new LEO. */
  highWatermarkFollowsLeo: boolean
  /** producer.id.expiration.ms for the idempotent producer state (default: the config table's, STORAGE_DEFAULTS). */
  producerIdExpirationMs?: number
}

/** What opening a partition found and repaired, for logs and tests. */
export interface RecoveryReport {
  /** Segments whose batches were re-validated and indexes rebuilt. */
  segmentsRecovered: number
  /** Bytes cut off torn or corrupt tails. */
  bytesTruncated: number
  /** Segments removed because they followed a corrupt point. */
  segmentsDropped: number
  /** Index pairs rebuilt because they were missing or inconsistent (clean shutdown case). */
  indexesRebuilt: number
  /** Base offset from which the .txnindex files were rebuilt from the log (absent: none needed it), and the aborted transactions found then. */
  txnIndexRebuiltFrom?: number
  abortedTxnsRebuilt?: number
  /** Log cleaner leftovers: `.cleaned` files deleted and interrupted `.swap`s completed (segment-swap.ts). */
  cleanedFilesDeleted: number
  swapsCompleted: number
}

const INT32_MIN = -0x80000000
const INT32_MAX = 0x7fffffff

export class PartitionLog {
  readonly topic: string
  readonly partition: number
  readonly dir: string
  private _config: LogConfig
  private readonly ctx: PartitionLogContext
  private segments: LogSegment[] = []
  private _logStartOffset = 0
  private _logEndOffset = 0
  private _highWatermark = 0
  private recoveryPoint = 0
  private lastFlushTime: number
  private writtenRecoveryPoint = -1
  private writtenLogStartOffset = -1
  private readonly background = new Set<Promise<void>>()
  /** Idempotent producers' epochs and last batches (producer-state.ts). */
  readonly producerState: ProducerStateManager
  /** Aborted transactions (.txnindex files). */
  readonly txnIndex: TransactionIndex
  /** Leader epoch written into markers: the one of the latest append (a single broker's epoch, 0, before any). */
  private leaderEpoch = 0
  /** Base of the first segment whose batches recovery re-validated during open (null: none). */
  private firstRecoveredBase: number | null = null
  private failure: Error | null = null
  private closed = false
  /** The directory listing while open() runs (see load), undefined otherwise. */
  private listing: readonly string[] | undefined
  /** Set by open(). */
  recovery: RecoveryReport = { segmentsRecovered: 0, bytesTruncated: 0, segmentsDropped: 0, indexesRebuilt: 0, cleanedFilesDeleted: 0, swapsCompleted: 0 }

  private constructor(topic: string, partition: number, dir: string, config: LogConfig, ctx: PartitionLogContext) {
    this.topic = topic
    this.partition = partition
    this.dir = dir
    this._config = config
    this.ctx = ctx
    this.lastFlushTime = ctx.now()
    this.producerState = new ProducerStateManager(dir, ctx.producerIdExpirationMs)
    this.txnIndex = new TransactionIndex(dir)
  }

  get config(): LogConfig { return this._config }
  get logStartOffset(): number { return this._logStartOffset }
  get logEndOffset(): number { return this._logEndOffset }
  get highWatermark(): number { return this._highWatermark }
  /** The first offset of the oldest open transaction, capped at the high watermark. */
  get lastStableOffset(): number {
    const unstable = this.producerState.firstUnstableOffset()
    return unstable >= 0 && unstable < this._highWatermark ? unstable : this._highWatermark
  }
  get isClosed(): boolean { return this.closed || this.failure !== null }

  private get active(): LogSegment {
    return this.segments[this.segments.length - 1]!
  }

  private settings(): { indexIntervalBytes: number; segmentIndexBytes: number } {
    return { indexIntervalBytes: this._config.indexIntervalBytes, segmentIndexBytes: this._config.segmentIndexBytes }
  }

  /**
   * Opens (creating the directory and a first segment when needed) the partition log in dir, and
   * recovers it: see the file header of segment.ts for what recovery checks.
   */
  static open(dir: string, topic: string, partition: number, config: LogConfig, ctx: PartitionLogContext, cleanShutdown: boolean): PartitionLog {
    // mkdirSync returns the directory when it created it: a new partition has nothing on disk to recover.
    const created = mkdirSync(dir, { recursive: true }) !== undefined
    const log = new PartitionLog(topic, partition, dir, config, ctx)
    if (created) log.initEmpty()
    else log.load(cleanShutdown)
    return log
  }

  /**
   * A partition whose directory was just created: one empty segment at offset 0 and nothing else, the
   * state load() would reach on an empty directory without its directory scans and checkpoint reads
   * (which cost most of the time of creating thousands of partitions).
   */
  private initEmpty(): void {
    this.segments.push(this.track(LogSegment.create(this.dir, 0, this.settings(), this.ctx.now(), '', true)))
    // Absent checkpoint files read as 0: nothing to write until the values move.
    this.writtenRecoveryPoint = 0
    this.writtenLogStartOffset = 0
  }

  /** Wires a segment to this log: index interval, and the count of lazily rebuilt indexes. */
  private track(seg: LogSegment): LogSegment {
    seg.indexIntervalBytes = this._config.indexIntervalBytes
    seg.onIndexRebuilt = () => {
      this.recovery.indexesRebuilt++
    }
    return seg
  }

  private load(cleanShutdown: boolean): void {
    const now = this.ctx.now()
    // One directory listing serves every scan of the open (thousands of partitions open at start);
    // it is read again after anything that renames or removes the files those scans look at.
    let names = readdirSync(this.dir)
    // A cleaning pass interrupted by a crash: drop its .cleaned files, finish its committed .swap.
    const swaps = recoverInterruptedSwaps(this.dir, names)
    this.recovery.cleanedFilesDeleted = swaps.cleanedFilesDeleted
    this.recovery.swapsCompleted = swaps.swapsCompleted
    if (swaps.cleanedFilesDeleted + swaps.swapsCompleted + swaps.indexSwapsDropped > 0) names = readdirSync(this.dir)
    this.listing = names
    const logs = new Set<number>()
    for (const name of names) {
      const base = parseSegmentFileName(name, LOG_SUFFIX)
      if (base !== null) logs.add(base)
    }
    for (const name of names) {
      // Temp files of an interrupted checkpoint write, and indexes whose .log is gone, are leftovers.
      // Any other name (not written by this engine) is left alone and ignored.
      const orphan = [INDEX_SUFFIX, TIME_INDEX_SUFFIX].some((sfx) => {
        const b = parseSegmentFileName(name, sfx)
        return b !== null && !logs.has(b)
      })
      if (orphan || name.endsWith('-checkpoint.tmp')) rmSync(join(this.dir, name), { force: true })
    }
    const bases = [...logs].sort((a, b) => a - b)
    const listed = new Set(names)
    const recoveryRead = listed.has(RECOVERY_POINT_CHECKPOINT) ? readCheckpoint(join(this.dir, RECOVERY_POINT_CHECKPOINT), this.topic, this.partition) : undefined
    const logStartRead = listed.has(LOG_START_OFFSET_CHECKPOINT) ? readCheckpoint(join(this.dir, LOG_START_OFFSET_CHECKPOINT), this.topic, this.partition) : undefined
    // A missing checkpoint reads as 0 (below), so 0 needs no write either.
    this.writtenRecoveryPoint = recoveryRead ?? 0
    this.writtenLogStartOffset = logStartRead ?? 0
    const recoveryCp = recoveryRead ?? 0
    const logStartCp = logStartRead ?? 0

    if (bases.length === 0) {
      this.segments.push(this.track(LogSegment.create(this.dir, logStartCp, this.settings(), now)))
      this._logStartOffset = logStartCp
      this._logEndOffset = logStartCp
    } else {
      this._logEndOffset = this.loadSegments(bases, recoveryCp, cleanShutdown, now)
      this._logStartOffset = Math.max(logStartCp, this.segments[0]!.baseOffset)
      if (this._logStartOffset > this._logEndOffset) {
        // The checkpointed log start lies past the data that survived (lost writes): start empty there.
        this.truncateFullyAndStartAt(this._logStartOffset)
      }
    }
    this.recoveryPoint = Math.min(recoveryCp, this._logEndOffset)
    this.loadTransactionState(now)
    this.listing = undefined
    this._highWatermark = this.ctx.highWatermarkFollowsLeo ? this._logEndOffset : this._logStartOffset
  }

  /**
   * Producer state and .txnindex files: files of recovered segments and corrupt files are rebuilt by a
   * replay from a producer snapshot at or below the first of them (see the file header).
   */
  private loadTransactionState(now: number): void {
    const firstBase = this.segments[0]!.baseOffset
    let rebuildFrom = this.firstRecoveredBase ?? Number.MAX_SAFE_INTEGER
    const listing = this.listing
    for (const f of TransactionIndex.scan(this.dir, listing)) {
      if (!f.valid && f.base >= firstBase && f.base < rebuildFrom) rebuildFrom = this.segments[this.segmentIndexFor(f.base)]!.baseOffset
    }
    this.txnIndex.load(firstBase, rebuildFrom, listing)
    if (rebuildFrom === Number.MAX_SAFE_INTEGER) {
      this.producerState.load(this.segments, this._logEndOffset, now, listing === undefined ? {} : { listing })
      return
    }
    this.recovery.txnIndexRebuiltFrom = rebuildFrom
    this.recovery.abortedTxnsRebuilt = 0
    this.producerState.load(this.segments, this._logEndOffset, now, {
      ...(listing === undefined ? {} : { listing }),
      snapshotAtOrBefore: rebuildFrom,
      reportAbortsFrom: rebuildFrom,
      onAbortedTxn: (entry) => {
        this.txnIndex.append(entry, this.segments[this.segmentIndexFor(entry.lastOffset)]!.baseOffset)
        this.recovery.abortedTxnsRebuilt! += 1
      },
    })
  }

  /** Opens and (where needed) recovers the segments; returns the LEO. */
  private loadSegments(bases: number[], recoveryCp: number, cleanShutdown: boolean, now: number): number {
    const last = bases.length - 1
    // Unclean: everything from the segment holding the recovery point on may hold unflushed bytes.
    let recoverFrom = 0
    if (!cleanShutdown) {
      recoverFrom = last
      for (let i = 0; i < bases.length; i++) {
        const next = bases[i + 1]
        if (next === undefined || next > recoveryCp) {
          recoverFrom = i
          break
        }
      }
    }
    let leo = bases[0]!
    for (let i = 0; i <= last; i++) {
      const base = bases[i]!
      const isLast = i === last
      const limit = bases[i + 1] ?? Number.MAX_SAFE_INTEGER
      const { segment, indexMissing } = LogSegment.open(this.dir, base, this.settings(), isLast, now)
      this.segments.push(this.track(segment))
      let mustRecover = indexMissing || (!cleanShutdown && i >= recoverFrom)
      if (!mustRecover && !isLast) {
        // A trusted inactive segment: its indexes are mapped, checked (and rebuilt if need be) on first use.
        segment.checkOnFirstUse(limit)
        leo = limit
        continue
      }
      if (!mustRecover) {
        // Clean shutdown: trust the .log; check the indexes (thoroughly for the active segment).
        const sane = segment.indexesLookSane(limit, isLast)
        const next = isLast && sane ? segment.readNextOffset() : limit
        mustRecover = !sane || !segment.indexesLookSane(next, false)
        if (!mustRecover) {
          segment.loadMaxTimestampFromIndex()
          leo = next
          continue
        }
        this.recovery.indexesRebuilt++
      }
      const r = segment.recover(limit, this._config.segmentIndexBytes)
      this.firstRecoveredBase ??= base
      this.recovery.segmentsRecovered++
      this.recovery.bytesTruncated += r.truncatedBytes
      leo = r.nextOffset
      if (r.truncatedBytes > 0 && !isLast) {
        // Bytes after a corrupt point cannot be trusted, nor can later segments: drop them. This
        // segment becomes the active one again (recover left room in its indexes).
        for (let j = i + 1; j <= last; j++) {
          for (const sfx of [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX]) rmSync(join(this.dir, segmentFileName(bases[j]!, sfx)), { force: true })
          this.recovery.segmentsDropped++
        }
        break
      }
      if (!isLast) segment.onBecomeInactive()
    }
    return leo
  }

  private truncateFullyAndStartAt(offset: number): void {
    // Files go: the listing taken at open no longer holds.
    this.listing = undefined
    this.producerState.truncateFully()
    this.txnIndex.deleteAll()
    for (const s of this.segments) s.delete()
    this.segments = [this.track(LogSegment.create(this.dir, offset, this.settings(), this.ctx.now()))]
    this._logStartOffset = offset
    this._logEndOffset = offset
  }

  private checkUsable(): void {
    if (this.closed) throw new KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${this.topic}-${this.partition} is closed`)
    if (this.failure !== null) {
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `${this.topic}-${this.partition} failed: ${this.failure.message}`)
    }
  }

  /**
   * Validates every batch of records (see validateProducerBatches), assigns offsets in place (the
   * caller's buffer is rewritten) and writes the whole payload with one write. Throws a KafkaError and
   * writes nothing when any batch is invalid. Records stay opaque unless the topic needs them: batches
   * whose codec differs from compression.type are rebuilt with it, and on a compacted topic every
   * record must have a key (see rewriteProducerBatches).
   */
  append(records: Buffer, opts: AppendOptions): AppendResult {
    this.checkUsable()
    const config = this._config
    const now = opts.now ?? this.ctx.now()
    if (!Number.isInteger(opts.leaderEpoch) || opts.leaderEpoch < INT32_MIN || opts.leaderEpoch > INT32_MAX) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, `leaderEpoch ${opts.leaderEpoch} is not an int32`)
    }
    const validated = validateProducerBatches(
      records,
      {
        maxMessageBytes: config.maxMessageBytes,
        timestampType: config.messageTimestampType,
        timestampBeforeMaxMs: config.messageTimestampBeforeMaxMs,
        timestampAfterMaxMs: config.messageTimestampAfterMaxMs,
        now,
        requireKeys: config.cleanupPolicy !== 'delete',
        topic: this.topic,
        partition: this.partition,
      },
      native.crc32c,
    )
    // Idempotent producers (producer-state.ts): a retry of a batch already written answers its offsets
    // and writes nothing; epoch and sequence errors refuse the payload. Applied once the bytes are written.
    const producerCheck = this.producerState.checkAppend(records, validated, this._logEndOffset, config.messageTimestampType === 'LogAppendTime' ? now : -1)
    if (producerCheck.kind === 'duplicate') return this.duplicateResult(producerCheck.batch)
    let batches = validated
    const codec = targetCodec(config.compressionType)
    const requireKeys = config.cleanupPolicy !== 'delete'
    if (codec !== null || requireKeys) {
      const rewritten = rewriteProducerBatches(
        records,
        validated,
        { targetCodec: codec, requireKeys, maxRecordBytes: decodedSizeLimit(config.maxMessageBytes), maxMessageBytes: config.maxMessageBytes, topic: this.topic, partition: this.partition },
        native.crc32c,
      )
      records = rewritten.payload
      batches = rewritten.batches
    }
    if (records.length > config.segmentBytes) {
      throw new KafkaError(ErrorCode.RECORD_LIST_TOO_LARGE, `${records.length} bytes do not fit in segment.bytes ${config.segmentBytes}`)
    }
    const logAppendTime = config.messageTimestampType === 'LogAppendTime' ? now : -1
    const baseOffset = this._logEndOffset
    const assigned = assignOffsetsInPlace(records, batches, baseOffset, opts.leaderEpoch, logAppendTime, native.crc32c)
    const appended: AppendedBatch[] = []
    let next = baseOffset
    let maxTimestamp = -1
    batches.forEach((b, i) => {
      next += b.recordCount
      const ts = assigned.maxTimestamps[i]!
      if (ts > maxTimestamp) maxTimestamp = ts
      appended.push({ position: b.position, size: b.size, lastOffset: next - 1, maxTimestamp: ts })
    })
    const segment = this.maybeRoll(records.length, assigned.lastOffset, maxTimestamp, now)
    segment.append(records, appended)
    this.leaderEpoch = opts.leaderEpoch
    if (producerCheck.kind === 'append') this.producerState.applyAppend(producerCheck)
    this._logEndOffset = assigned.lastOffset + 1
    if (this.ctx.highWatermarkFollowsLeo) this._highWatermark = this._logEndOffset
    if (this._logEndOffset - this.recoveryPoint >= config.flushMessages) this.inBackground(this.flushUpTo(this._logEndOffset))
    return {
      baseOffset,
      lastOffset: assigned.lastOffset,
      logAppendTime,
      logStartOffset: this._logStartOffset,
      recordCount: assigned.lastOffset - baseOffset + 1,
    }
  }

  /**
   * WriteTxnMarkers for this partition: appends one COMMIT or ABORT control batch of the producer at the
   * LEO (see txn-marker.ts), closes its open transaction, records an abort in the .txnindex, and so moves
   * the last stable offset. A producer without an open transaction here gets its marker written as well
   * (Kafka does; the coordinator may retry). Errors: see ProducerStateManager.checkMarker.
   */
  appendTxnMarker(marker: TxnMarker, now: number = this.ctx.now()): { offset: number } {
    this.checkUsable()
    const { producerId, producerEpoch, coordinatorEpoch, commit } = marker
    if (!Number.isSafeInteger(producerId) || producerId < 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `producer id ${producerId}`)
    if (!Number.isInteger(producerEpoch) || producerEpoch < 0 || producerEpoch > 0x7fff) throw new KafkaError(ErrorCode.INVALID_REQUEST, `producer epoch ${producerEpoch}`)
    if (!Number.isInteger(coordinatorEpoch) || coordinatorEpoch < INT32_MIN || coordinatorEpoch > INT32_MAX) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, `coordinator epoch ${coordinatorEpoch}`)
    }
    this.producerState.checkMarker(producerId, producerEpoch, coordinatorEpoch)
    const offset = this._logEndOffset
    const bytes = buildMarkerBatch({ producerId, producerEpoch, coordinatorEpoch, commit, timestamp: now, leaderEpoch: this.leaderEpoch, baseOffset: offset })
    const segment = this.maybeRoll(bytes.length, offset, now, now)
    segment.append(bytes, [{ position: 0, size: bytes.length, lastOffset: offset, maxTimestamp: now }])
    const done = this.producerState.applyMarker(producerId, producerEpoch, coordinatorEpoch, commit, offset, now)
    if (!commit && done.firstOffset >= 0) {
      this.txnIndex.append({ producerId, firstOffset: done.firstOffset, lastOffset: offset, lastStableOffset: done.lastStableOffset }, segment.baseOffset)
    }
    this._logEndOffset = offset + 1
    if (this.ctx.highWatermarkFollowsLeo) this._highWatermark = this._logEndOffset
    if (this._logEndOffset - this.recoveryPoint >= this._config.flushMessages) this.inBackground(this.flushUpTo(this._logEndOffset))
    return { offset }
  }

  /** DescribeProducers: every producer with state here, by producer id. */
  describeProducers(): ProducerDescription[] {
    if (this.closed) throw new KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${this.topic}-${this.partition} is closed`)
    return this.producerState.activeProducers().map((e) => ({
      producerId: e.producerId,
      producerEpoch: e.producerEpoch,
      lastSequence: e.batches.at(-1)?.lastSeq ?? -1,
      lastTimestamp: e.lastTimestamp,
      coordinatorEpoch: e.coordinatorEpoch,
      currentTxnStartOffset: e.currentTxnFirstOffset,
    }))
  }

  /** Kafka's LogSegment.shouldRoll: size, age, full indexes, relative offset overflow. */
  private maybeRoll(bytes: number, lastOffset: number, maxTimestamp: number, now: number): LogSegment {
    const seg = this.active
    const c = this._config
    const roll =
      seg.size > 0 &&
      (seg.size > c.segmentBytes - bytes ||
        seg.timeWaitedForRoll(now, maxTimestamp) > this.maxSegmentMs() ||
        seg.indexesFull() ||
        !seg.canHold(lastOffset))
    return roll ? this.roll() : seg
  }

  /**
   * Kafka's LogConfig.maxSegmentMs: a compacted log also rolls when max.compaction.lag.ms has passed, so
   * that records cannot stay in the (never cleaned) active segment longer than that.
   */
  private maxSegmentMs(): number {
    const c = this._config
    return c.cleanupPolicy.includes('compact') ? Math.min(c.segmentMs, c.maxCompactionLagMs) : c.segmentMs
  }

  /** Starts a new active segment at the LEO; the old one is trimmed and fsynced in the background. */
  private roll(): LogSegment {
    const old = this.active
    const base = this._logEndOffset
    old.onBecomeInactive()
    const seg = this.track(LogSegment.create(this.dir, base, this.settings(), this.ctx.now()))
    this.segments.push(seg)
    // As Kafka: the rolled segment is flushed off the append path, which moves the recovery point.
    this.inBackground(this.flushUpTo(base))
    // and the producer state at the new base offset is snapshotted, so a restart replays one segment at most.
    this.inBackground(this.producerState.takeSnapshot(base))
    return seg
  }

  private inBackground(p: Promise<void>): void {
    const tracked = p.catch((err: Error) => {
      this.failure ??= err
    }).finally(() => this.background.delete(tracked))
    this.background.add(tracked)
  }

  /** fsyncs every segment holding offsets in [recoveryPoint, offset) and moves the recovery point. */
  private async flushUpTo(offset: number): Promise<void> {
    if (offset <= this.recoveryPoint) return
    const from = this.recoveryPoint
    const targets = this.segments.filter((s, i) => {
      const next = this.segments[i + 1]?.baseOffset ?? Infinity
      return next > from && s.baseOffset < offset && !s.deleted
    })
    for (const s of targets) s.retain()
    try {
      for (const s of targets) await s.flush()
      await this.txnIndex.flush()
    } catch (err) {
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `fsync of ${this.topic}-${this.partition} failed: ${(err as Error).message}`)
    } finally {
      for (const s of targets) s.release()
    }
    if (offset > this.recoveryPoint) this.recoveryPoint = offset
    this.lastFlushTime = this.ctx.now()
  }

  /**
   * fsync of everything appended so far (after waiting for background flushes, whose pins on deleted
   * segments are then dropped); moves the recovery point to the LEO.
   */
  async flush(): Promise<void> {
    if (this.closed) return
    while (this.background.size > 0) await Promise.all([...this.background])
    await this.flushUpTo(this._logEndOffset)
  }

  /** Unflushed offsets (LEO - recovery point) and when the last flush finished, for flushDue. */
  unflushedMessages(): number {
    return this._logEndOffset - this.recoveryPoint
  }

  timeSinceLastFlush(now: number): number {
    return now - this.lastFlushTime
  }

  /** Writes the recovery-point and log-start checkpoints when they changed since the last write. */
  async writeCheckpoints(): Promise<void> {
    const rp = this.recoveryPoint
    if (rp !== this.writtenRecoveryPoint) {
      await writeCheckpoint(join(this.dir, RECOVERY_POINT_CHECKPOINT), this.topic, this.partition, rp)
      this.writtenRecoveryPoint = rp
    }
    const ls = this._logStartOffset
    if (ls !== this.writtenLogStartOffset) {
      await writeCheckpoint(join(this.dir, LOG_START_OFFSET_CHECKPOINT), this.topic, this.partition, ls)
      this.writtenLogStartOffset = ls
    }
  }

  /** Index of the segment holding offset: the last one whose base offset <= offset. */
  private segmentIndexFor(offset: number): number {
    let lo = 0
    let hi = this.segments.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1
      if (this.segments[mid]!.baseOffset <= offset) lo = mid
      else hi = mid - 1
    }
    return lo
  }

  /**
   * Whole batches from the one holding offset, up to maxBytes (the first batch even if larger, with
   * minOneBatch), none reaching maxOffset (default and cap: the LEO). Regions pin their segments under
   * the returned lease until LogManager.releaseLease.
   */
  read(offset: number, maxBytes: number, opts: ReadOptions = {}): ReadResult {
    if (this.closed) throw new KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${this.topic}-${this.partition} is closed`)
    if (!Number.isSafeInteger(offset) || offset < this._logStartOffset || offset > this._logEndOffset) {
      throw new KafkaError(
        ErrorCode.OFFSET_OUT_OF_RANGE,
        `offset ${offset} is outside [${this._logStartOffset}, ${this._logEndOffset}] of ${this.topic}-${this.partition}`,
      )
    }
    if (!Number.isFinite(maxBytes) || maxBytes < 0) throw new KafkaError(ErrorCode.INVALID_FETCH_SIZE, `maxBytes ${maxBytes}`)
    const readCommitted = opts.isolation === 'read_committed'
    const lastStableOffset = this.lastStableOffset
    let maxOffset = Math.min(opts.maxOffset ?? this._logEndOffset, this._logEndOffset)
    if (readCommitted && lastStableOffset < maxOffset) maxOffset = lastStableOffset
    const minOne = opts.minOneBatch ?? true
    // read_committed: the offset after the returned batches bounds the aborted transactions listed.
    let upperBound = maxOffset
    const regions: FileRegion[] = []
    const pinned: LogSegment[] = []
    let bytes = 0
    let target = offset
    let full = false
    for (let i = offset < maxOffset ? this.segmentIndexFor(offset) : this.segments.length; i < this.segments.length && !full; i++) {
      const seg = this.segments[i]!
      const segmentEnd = this.segments[i + 1]?.baseOffset ?? this._logEndOffset
      const first = seg.translateOffset(target)
      if (first !== null) {
        // Batches at or past maxOffset are excluded: stop at the start of the one holding maxOffset.
        const limit = maxOffset < segmentEnd ? (seg.translateOffset(maxOffset)?.position ?? seg.size) : seg.size
        const budgetEnd = first.position + (maxBytes - bytes)
        let end: number
        if (limit <= budgetEnd) {
          end = limit
          full = limit < seg.size
        } else {
          // The budget ends inside the segment: jump to the last indexed batch start within it and
          // walk at most index.interval.bytes of headers from there.
          end = Math.max(first.position, seg.indexedBatchStartAtOrBefore(budgetEnd))
          scanFileBatches(seg.fd, end, limit, null, (b) => {
            if (b.position + b.size > budgetEnd) return 'stop-before'
            end = b.position + b.size
          })
          if (end === first.position && minOne && bytes === 0) end = first.position + first.size
          full = true
        }
        if (readCommitted && end < limit) upperBound = readBatchHeader(seg.fd, end, seg.size)?.baseOffset ?? maxOffset
        if (end > first.position) {
          regions.push({ fd: seg.fd, position: first.position, length: end - first.position })
          pinned.push(seg)
          bytes += end - first.position
        } else {
          full = true
        }
      }
      if (segmentEnd >= maxOffset) break
      target = segmentEnd
    }
    return {
      regions,
      bytes,
      leaseId: pinned.length === 0 ? 0 : this.ctx.leases.acquire(pinned),
      logStartOffset: this._logStartOffset,
      logEndOffset: this._logEndOffset,
      highWatermark: this._highWatermark,
      lastStableOffset,
      abortedTransactions: readCommitted && bytes > 0 ? this.txnIndex.collect(offset, upperBound) : [],
    }
  }

  /**
   * ListOffsets for one partition (Kafka's UnifiedLog.fetchOffsetByTimestamp with the caps Partition
   * adds): EARLIEST (-2) and EARLIEST_LOCAL (-4, no tiered storage) the log start offset; LATEST (-1) the
   * high watermark, what a read_uncommitted consumer may read up to, or for read_committed the last stable
   * offset; MAX_TIMESTAMP (-3) the batch with the largest timestamp; a time in ms the first offset whose
   * batch has a timestamp >= it. (-1, -1) when nothing matches, as Kafka answers; another negative value
   * is INVALID_REQUEST.
   */
  fetchOffsetByTimestamp(timestamp: number, isolation: IsolationLevel = 'read_uncommitted'): OffsetAndTimestamp {
    switch (timestamp) {
      case EARLIEST_TIMESTAMP:
      case EARLIEST_LOCAL_TIMESTAMP:
        return { offset: this._logStartOffset, timestamp: -1 }
      case LATEST_TIMESTAMP:
        return { offset: isolation === 'read_committed' ? this.lastStableOffset : this._highWatermark, timestamp: -1 }
      case MAX_TIMESTAMP:
        return this.maxTimestamp() ?? { offset: -1, timestamp: -1 }
    }
    if (timestamp < 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `unsupported ListOffsets timestamp ${timestamp}`)
    return this.offsetForTimestamp(timestamp) ?? { offset: -1, timestamp: -1 }
  }

  /**
   * ListOffsets by timestamp: the first batch whose maxTimestamp >= timestamp, as
   * { offset: max(its base offset, logStartOffset), timestamp: its maxTimestamp }; null when none
   * (Kafka then answers with the LEO). Batch granularity: records are not decoded.
   */
  offsetForTimestamp(timestamp: number): OffsetAndTimestamp | null {
    for (let i = 0; i < this.segments.length; i++) {
      const seg = this.segments[i]!
      if (seg.maxTimestampSoFar < timestamp) continue
      const next = this.segments[i + 1]?.baseOffset ?? this._logEndOffset
      if (next <= this._logStartOffset) continue
      const b = seg.findByTimestamp(timestamp, this._logStartOffset)
      if (b !== null) return { offset: Math.max(b.baseOffset, this._logStartOffset), timestamp: b.maxTimestamp }
    }
    return null
  }

  /**
   * ListOffsets MAX_TIMESTAMP (-3): the largest timestamp in the log and the last offset of the batch
   * that carries it (Kafka's shallow offset of max timestamp); null when no batch has a timestamp.
   */
  maxTimestamp(): OffsetAndTimestamp | null {
    let best: LogSegment | null = null
    for (const seg of this.segments) {
      if (seg.maxTimestampSoFar >= 0 && (best === null || seg.maxTimestampSoFar > best.maxTimestampSoFar)) best = seg
    }
    if (best === null) return null
    return { offset: Math.max(best.offsetOfMaxTimestampSoFar, this._logStartOffset), timestamp: best.maxTimestampSoFar }
  }

  /** Sets the high watermark (replication), clamped to [logStartOffset, LEO]. */
  setHighWatermark(offset: number): void {
    if (!Number.isSafeInteger(offset)) throw new KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, `high watermark ${offset}`)
    this._highWatermark = Math.min(Math.max(offset, this._logStartOffset), this._logEndOffset)
  }

  /**
   * DeleteRecords: raises the log start offset to offset (-1 = the high watermark) and deletes the
   * segments wholly below it. offset > HW is OFFSET_OUT_OF_RANGE. Returns the new log start offset.
   * The log-start checkpoint is written by the next flushDue/close.
   */
  deleteRecordsBefore(offset: number): number {
    this.checkUsable()
    const target = offset === -1 ? this._highWatermark : offset
    if (!Number.isSafeInteger(target) || target < 0 || target > this._highWatermark) {
      throw new KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, `cannot delete records before ${offset}: high watermark is ${this._highWatermark}`)
    }
    if (target > this._logStartOffset) {
      this._logStartOffset = target
      this.deleteSegments(this.deletable((_s, next) => next !== undefined && next.baseOffset <= this._logStartOffset))
    }
    return this._logStartOffset
  }

  /**
   * Kafka's deletableSegments: the oldest segments, in order, while predicate holds and the segment is
   * wholly below the high watermark. The active segment qualifies only when it is not empty.
   */
  private deletable(predicate: (seg: LogSegment, next: LogSegment | undefined) => boolean): LogSegment[] {
    const out: LogSegment[] = []
    for (let i = 0; i < this.segments.length; i++) {
      const seg = this.segments[i]!
      const next = this.segments[i + 1]
      const upperBound = next?.baseOffset ?? this._logEndOffset
      const lastAndEmpty = next === undefined && seg.size === 0
      if (lastAndEmpty || upperBound > this._highWatermark || !predicate(seg, next)) break
      out.push(seg)
    }
    return out
  }

  private deleteSegments(doomed: LogSegment[]): number {
    if (doomed.length === 0) return 0
    // Never delete the active segment in place: roll first so the log keeps an active segment at the LEO.
    if (doomed.length === this.segments.length) this.roll()
    this.segments = this.segments.slice(doomed.length)
    for (const s of doomed) s.delete()
    this.producerState.deleteSnapshotsBefore(this.segments[0]!.baseOffset)
    this.txnIndex.deleteFilesBefore(this.segments[0]!.baseOffset)
    this._logStartOffset = Math.max(this._logStartOffset, this.segments[0]!.baseOffset)
    if (this.recoveryPoint < this._logStartOffset) this.recoveryPoint = this._logStartOffset
    if (this._highWatermark < this._logStartOffset) this._highWatermark = this._logStartOffset
    return doomed.length
  }

  /**
   * Deletes segments past retention.ms (by their largest timestamp) and beyond retention.bytes (oldest
   * first), when the cleanup policy includes delete, and segments wholly below the log start offset.
   * Returns the number of segments deleted.
   */
  applyRetention(now: number = this.ctx.now()): number {
    if (this.closed || this.failure !== null) return 0
    const c = this._config
    let deleted = 0
    if (c.cleanupPolicy.includes('delete')) {
      if (c.retentionMs >= 0) {
        deleted += this.deleteSegments(this.deletable((s) => now - s.largestTimestamp() > c.retentionMs))
      }
      if (c.retentionBytes >= 0) {
        let diff = this.sizeBytes() - c.retentionBytes
        deleted += this.deleteSegments(
          this.deletable((s) => {
            if (diff - s.size < 0) return false
            diff -= s.size
            return true
          }),
        )
      }
    }
    deleted += this.deleteSegments(this.deletable((_s, next) => next !== undefined && next.baseOffset <= this._logStartOffset))
    return deleted
  }

  private sizeBytes(): number {
    let n = 0
    for (const s of this.segments) n += s.size
    return n
  }

  /** Merges overrides onto the current config (ConfigException, INVALID_CONFIG, on a value the table refuses). */
  updateConfig(overrides: Partial<LogConfig>): void {
    this._config = mergeLogConfig(this._config, overrides)
    this.active.indexIntervalBytes = this._config.indexIntervalBytes
  }

  /** The answer to a retried batch: the offsets it got when first written; nothing is written. */
  private duplicateResult(batch: BatchMetadata): AppendResult {
    return {
      baseOffset: batch.firstOffset,
      lastOffset: batch.lastOffset,
      logAppendTime: this._config.messageTimestampType === 'LogAppendTime' ? batch.timestamp : -1,
      logStartOffset: this._logStartOffset,
      recordCount: batch.lastOffset - batch.firstOffset + 1,
      duplicate: true,
    }
  }

  /** Drops producer state older than producer.id.expiration.ms (the shard's expiration timer). */
  removeExpiredProducers(now: number = this.ctx.now()): number {
    return this.closed ? 0 : this.producerState.removeExpired(now)
  }

  state(): PartitionState {
    return {
      topic: this.topic,
      partition: this.partition,
      logStartOffset: this._logStartOffset,
      logEndOffset: this._logEndOffset,
      highWatermark: this._highWatermark,
      lastStableOffset: this.lastStableOffset,
      sizeBytes: this.sizeBytes(),
      segmentCount: this.segments.length,
    }
  }

  /** The segments, oldest first, the last one active: for the log cleaner, which runs on this thread. */
  segmentsForCleaning(): readonly LogSegment[] {
    return this.segments.slice()
  }

  /**
   * Log cleaner: replaces old (adjacent inactive segments of this log) with the cleaned files of old[0]'s
   * base offset written beside them (`.cleaned`, complete and fsynced; see segment-swap.ts for the steps
   * and their crash recovery). Runs within one turn, so no other operation sees a half-swapped log.
   * Returns false and touches nothing when old are no longer all in the log (retention or DeleteRecords
   * removed some meanwhile). Reads already planned keep their regions: the old files stay open under
   * their leases.
   */
  replaceSegments(old: readonly LogSegment[], onStep?: (step: SwapStep) => void): boolean {
    if (this.isClosed || old.length === 0) return false
    const at = this.segments.indexOf(old[0]!)
    if (at < 0 || at + old.length >= this.segments.length) return false
    for (let i = 0; i < old.length; i++) if (this.segments[at + i] !== old[i] || old[i]!.deleted) return false
    const base = old[0]!.baseOffset
    try {
      swapCleanedIntoPlace(this.dir, base, () => {
        for (const s of old) s.delete()
      }, onStep)
      // Written and fsynced by the cleaner just now: mapped on first use without a check.
      const { segment } = LogSegment.open(this.dir, base, this.settings(), false, this.ctx.now())
      this.segments.splice(at, old.length, this.track(segment))
    } catch (err) {
      // The files are between two states that only the recovery of the next open sorts out.
      this.failure ??= err instanceof Error ? err : new Error(String(err))
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `swap of cleaned segment ${base} of ${this.topic}-${this.partition} failed: ${this.failure.message}`)
    }
    return true
  }

  /** Base offsets of the segments, oldest first (for tests and DescribeLogDirs). */
  segmentBaseOffsets(): number[] {
    return this.segments.map((s) => s.baseOffset)
  }

  /** Waits for background flushes; then flush, checkpoints, and close of every segment. */
  async close(): Promise<void> {
    if (this.closed) return
    while (this.background.size > 0) await Promise.all([...this.background])
    if (this.failure === null) {
      await this.flush()
      // An empty log with no producer state has nothing a snapshot would save (a load replays nothing).
      if (!(this._logEndOffset === this.segments[0]!.baseOffset && this.producerState.isEmpty())) {
        await this.producerState.takeSnapshot(this._logEndOffset)
      }
      await this.writeCheckpoints()
    }
    await this.producerState.drain()
    this.closed = true
    this.txnIndex.close()
    for (const s of this.segments) s.close()
  }

  /**
   * Closes for deletion: no flush, indexes untrimmed. Leases (and in-flight background fsyncs) keep
   * their descriptors until released.
   */
  closeForDelete(): void {
    if (this.closed) return
    this.closed = true
    this.txnIndex.close()
    for (const s of this.segments) {
      s.deleted = true
      s.close()
    }
  }
}
