// The log of one partition: an ordered list of segments, the last one active. Owned by one thread,
// so no method interleaves with another; only flush work runs in the background (fsync off-thread).
//
// Offsets: logStartOffset <= highWatermark <= logEndOffset (LEO). recoveryPoint: every batch below it
// has been fsynced; on an unclean open, segments from the one holding the recovery point on are
// re-validated batch by batch and their indexes rebuilt.
//
// Replication: the leader epoch cache (leader-epoch-cache.ts) records which leader epoch started at which
// offset; leader appends assign their epoch, follower appends (appendAsFollower: the leader's batches,
// verbatim, at their offsets) the epochs of their batches. truncateTo cuts the log back (segments,
// indexes, producer state, .txnindex, epoch cache) for a follower whose tail diverged from its leader.
// The high watermark either follows the LEO on every append (a partition whose in-sync replicas are
// its leader alone: no main-thread round trip) or is set from outside (the leader computes it from its
// followers' positions; a follower takes it from its leader), and is then checkpointed to
// replication-offset-checkpoint (checkpoint.ts) so that a restarted replica starts from it.
//
// Transactions: the producer state tracks each producer's open transaction; the last stable offset (LSO)
// is the first offset of the oldest open one, or the high watermark when none is open. Markers
// (appendTxnMarker) close transactions; aborts go to the .txnindex files (txn-index.ts), which
// read_committed reads consult. On open, the .txnindex files of recovered segments (and corrupt ones)
// are rebuilt by the producer state replay, which restarts from a snapshot at or below them.

import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { native } from '../addon/index.js'
import { mergeLogConfig } from '../config/log-config.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP } from '../domain/list-offsets.js'
import { scanFileBatches } from '../protocol/records/file-scan.js'
import { targetCodec } from '../protocol/records/compression.js'
import { decodedSizeLimit } from '../protocol/records/inflate.js'
import { assignOffsetsInPlace, rewriteProducerBatches, validateProducerBatches } from '../protocol/records/validate.js'
import { LOG_START_OFFSET_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT, readCheckpoint, writeCheckpoint } from './checkpoint.js'
import { LEADER_EPOCH_CHECKPOINT, LeaderEpochCache, type EpochEndOffset } from './leader-epoch-cache.js'
import { checkBatchIntegrity, LOG_OVERHEAD, MIN_BATCH_LENGTH, RECORD_BATCH_OVERHEAD, PARTITION_LEADER_EPOCH_OFFSET, LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET, BATCH_LENGTH_OFFSET, readInt64 } from '../protocol/records/batch.js'
import { recoverInterruptedSwaps, swapCleanedIntoPlace } from './segment-swap.js'
import type { SwapStep } from './segment-swap.js'
import type { LeaseTable } from './lease-table.js'
import type { OpenFileCache } from './open-files.js'
import { ProducerStateManager } from './producer-state.js'
import type { BatchMetadata } from './producer-state.js'
import { INDEX_SUFFIX, LOG_SUFFIX, LogSegment, TIME_INDEX_SUFFIX, parseSegmentFileName, segmentFileName } from './segment.js'
import { readBatchHeader } from '../protocol/records/file-scan.js'
import { TransactionIndex } from './txn-index.js'
import { buildMarkerBatch } from './txn-marker.js'
import type { AppendedBatch, SegmentSettings } from './segment.js'
import type {
  AppendOptions,
  AppendResult,
  FileRegion,
  FollowerAppendResult,
  ReplicaLogState,
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
  /** The thread's bounded cache of open segment files (open-files.ts). */
  files: OpenFileCache
  now: () => number
  /**
   * The high watermark mode a partition opens in: following the LEO on every append (single broker),
   * or set from outside (a cluster; setHighWatermarkFollowsLeo changes it per partition).
   */
  highWatermarkFollowsLeo: boolean
  /** producer.id.expiration.ms for the idempotent producer state (default: the config table's, STORAGE_DEFAULTS). */
  producerIdExpirationMs?: number
  /**
   * A full disk only refuses writes (a single broker; in a cluster it takes the log dir offline): a roll's
   * producer snapshot or leader-epoch checkpoint that finds it full is left for later instead of failing
   * the partition for good.
   */
  diskFullIsTransient?: boolean
  /**
   * A background write of a partition (a roll's flush or producer snapshot) failed, and the partition with
   * it: no caller gets that error, so its log dir is judged here (Kafka hands such IOExceptions to the
   * LogDirFailureChannel).
   */
  onBackgroundFailure?: (log: PartitionLog, err: Error) => void
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
  /** Set when segments were re-validated: the base offset recovery started from, and the bytes it read. */
  recoveredFrom?: number
  bytesRevalidated?: number
}

/**
 * Whether opening the log found anything to repair or re-validate, i.e. whether it deserves a line in the
 * broker's log (Kafka logs each recovered log): re-validated bytes, a cut tail, dropped segments, rebuilt
 * indexes or .txnindex files, cleaner leftovers. An empty segment re-validated after a crash is not.
 */
export function recoveryWorthLogging(r: RecoveryReport): boolean {
  return (r.bytesRevalidated ?? 0) > 0 || r.bytesTruncated > 0 || r.segmentsDropped > 0 || r.indexesRebuilt > 0 ||
    (r.abortedTxnsRebuilt ?? 0) > 0 || r.cleanedFilesDeleted > 0 || r.swapsCompleted > 0
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
  private writtenHighWatermark = -1
  /** Whether appends move the high watermark to the LEO (see the file header). */
  private hwFollowsLeo: boolean
  /** Counts truncations: a flush that started before one must not move the recovery point after it. */
  private truncations = 0
  /** Which leader epoch started where (leader-epoch-checkpoint). */
  private epochCache: LeaderEpochCache
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
    this.hwFollowsLeo = ctx.highWatermarkFollowsLeo
    this.epochCache = LeaderEpochCache.empty(dir)
  }

  get config(): LogConfig { return this._config }
  get logStartOffset(): number { return this._logStartOffset }
  get logEndOffset(): number { return this._logEndOffset }
  get highWatermark(): number { return this._highWatermark }
  /** Whether appends move the high watermark to the LEO (a partition whose ISR is its leader alone). */
  get highWatermarkFollowsLeo(): boolean { return this.hwFollowsLeo }
  /** The newest leader epoch of the epoch cache, -1 when it has none. */
  get latestEpoch(): number { return this.epochCache.latestEpoch() }
  /** The first offset of the oldest open transaction, capped at the high watermark. */
  get lastStableOffset(): number {
    const unstable = this.producerState.firstUnstableOffset()
    return unstable >= 0 && unstable < this._highWatermark ? unstable : this._highWatermark
  }
  get isClosed(): boolean { return this.closed || this.failure !== null }

  private get active(): LogSegment {
    return this.segments[this.segments.length - 1]!
  }

  private settings(): SegmentSettings {
    return { indexIntervalBytes: this._config.indexIntervalBytes, segmentIndexBytes: this._config.segmentIndexBytes, files: this.ctx.files }
  }

  /** What a segment of this log is created with (the log cleaner writes its `.cleaned` segments so). */
  segmentSettings(): SegmentSettings {
    return this.settings()
  }

  /**
   * Opens (creating the directory, whose parent must exist, and a first segment when needed) the
   * partition log in dir, and recovers it: see the file header of segment.ts for what recovery checks.
   * A directory this call created is removed again when the partition cannot be set up in it.
   */
  static open(dir: string, topic: string, partition: number, config: LogConfig, ctx: PartitionLogContext, cleanShutdown: boolean): PartitionLog {
    // A new partition has nothing on disk to recover.
    let created: boolean
    try {
      mkdirSync(dir)
      created = true
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      created = false
    }
    const log = new PartitionLog(topic, partition, dir, config, ctx)
    if (!created) {
      log.load(cleanShutdown)
      return log
    }
    try {
      log.initEmpty()
    } catch (err) {
      log.closeForDelete()
      rmSync(dir, { recursive: true, force: true })
      throw err
    }
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
    this.writtenHighWatermark = 0
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
    const highWatermarkRead = listed.has(REPLICATION_OFFSET_CHECKPOINT) ? readCheckpoint(join(this.dir, REPLICATION_OFFSET_CHECKPOINT), this.topic, this.partition) : undefined
    const epochs = LeaderEpochCache.load(this.dir, listed.has(LEADER_EPOCH_CHECKPOINT))
    this.epochCache = epochs.cache
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
        this.emptyAt(this._logStartOffset)
      }
    }
    this.recoveryPoint = Math.min(recoveryCp, this._logEndOffset)
    this.loadTransactionState(now)
    this.listing = undefined
    this.loadEpochs(epochs.found)
    // A missing file reads as the log start (nothing known to be committed): no write until it moves.
    this.writtenHighWatermark = highWatermarkRead ?? this._logStartOffset
    this._highWatermark = this.hwFollowsLeo ? this._logEndOffset : Math.min(Math.max(highWatermarkRead ?? this._logStartOffset, this._logStartOffset), this._logEndOffset)
  }

  /**
   * The epoch cache after recovery (see leader-epoch-cache.ts): entries past the log end and before its
   * start dropped; epochs of recovered segments (or of the whole log, without a usable file) assigned
   * again from their batches.
   */
  private loadEpochs(found: boolean): void {
    const firstBase = this.segments[0]!.baseOffset
    const rebuildFrom = !found ? firstBase : this.firstRecoveredBase
    if (rebuildFrom !== null && this._logEndOffset > firstBase) {
      this.epochCache.truncateFromEnd(rebuildFrom)
      this.assignEpochsFrom(rebuildFrom)
    }
    this.epochCache.truncateFromEnd(this._logEndOffset)
    this.epochCache.truncateFromStart(this._logStartOffset)
    this.leaderEpoch = Math.max(0, this.epochCache.latestEpoch())
  }

  /** Assigns the epoch of every batch from offset on (headers only). */
  private assignEpochsFrom(offset: number): void {
    for (let i = this.segmentIndexFor(offset); i < this.segments.length; i++) {
      const seg = this.segments[i]!
      const start = offset > seg.baseOffset ? (seg.translateOffset(offset)?.position ?? seg.size) : 0
      scanFileBatches(seg.fd, start, seg.size, null, (b) => {
        this.epochCache.assign(b.partitionLeaderEpoch, b.baseOffset)
      })
    }
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
      const sizeBefore = segment.size
      const r = segment.recover(limit, this._config.segmentIndexBytes)
      this.firstRecoveredBase ??= base
      this.recovery.recoveredFrom ??= base
      this.recovery.bytesRevalidated = (this.recovery.bytesRevalidated ?? 0) + sizeBefore
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

  /** Every segment and its state go; one empty segment at offset (the offsets are the caller's). */
  private emptyAt(offset: number): void {
    // Files go: the listing taken at open no longer holds.
    this.listing = undefined
    this.producerState.truncateFully()
    this.txnIndex.deleteAll()
    for (const s of this.segments) s.delete()
    this.segments = [this.track(LogSegment.create(this.dir, offset, this.settings(), this.ctx.now()))]
    this._logStartOffset = offset
    this._logEndOffset = offset
    this.epochCache.clear()
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
   * writes nothing when any batch is invalid. Every record is walked once (structure, keys on a
   * compacted topic, CreateTime bounds) without being decoded into objects; batches whose codec differs
   * from compression.type are rebuilt with it (see rewriteProducerBatches), others are stored as sent.
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
    // Keys on a compacted topic were checked by validateProducerBatches' record walk: only a codec
    // change makes records worth decoding here.
    if (codec !== null) {
      const rewritten = rewriteProducerBatches(
        records,
        validated,
        { targetCodec: codec, requireKeys: false, maxRecordBytes: decodedSizeLimit(config.maxMessageBytes), maxMessageBytes: config.maxMessageBytes, topic: this.topic, partition: this.partition },
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
    this.epochCache.assign(opts.leaderEpoch, baseOffset)
    if (producerCheck.kind === 'append') this.producerState.applyAppend(producerCheck)
    this._logEndOffset = assigned.lastOffset + 1
    if (this.hwFollowsLeo) this._highWatermark = this._logEndOffset
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
    const leaderEpoch = marker.leaderEpoch ?? this.leaderEpoch
    const bytes = buildMarkerBatch({ producerId, producerEpoch, coordinatorEpoch, commit, timestamp: now, leaderEpoch, baseOffset: offset })
    const segment = this.maybeRoll(bytes.length, offset, now, now)
    segment.append(bytes, [{ position: 0, size: bytes.length, lastOffset: offset, maxTimestamp: now }])
    const done = this.producerState.applyMarker(producerId, producerEpoch, coordinatorEpoch, commit, offset, now)
    if (!commit && done.firstOffset >= 0) {
      this.txnIndex.append({ producerId, firstOffset: done.firstOffset, lastOffset: offset, lastStableOffset: done.lastStableOffset }, segment.baseOffset)
    }
    this.epochCache.assign(leaderEpoch, offset)
    this._logEndOffset = offset + 1
    if (this.hwFollowsLeo) this._highWatermark = this._logEndOffset
    if (this._logEndOffset - this.recoveryPoint >= this._config.flushMessages) this.inBackground(this.flushUpTo(this._logEndOffset))
    return { offset }
  }

  // ---------------------------------------------------------------- replication

  /**
   * A follower's append (Kafka's appendAsFollower): the leader's batches, verbatim, at the offsets the
   * leader gave them. Each batch must be whole and intact (magic 2 and CRC, else CORRUPT_MESSAGE) and
   * start at or after the LEO and past the previous one (a compacted leader's log has gaps); a trailing
   * partial batch is left for the next fetch. The producer and transaction state follow the batches as
   * the leader's did, without the leader's checks (it made them), and each batch's leader epoch goes to
   * the epoch cache. Batches are written one by one with a leader append's roll rules, so a follower of
   * a leader written one batch per produce request rolls where the leader did (identical segment files).
   */
  appendAsFollower(records: Buffer, now: number = this.ctx.now()): FollowerAppendResult {
    this.checkUsable()
    // Every batch is checked before any is written: a damaged payload writes nothing.
    let end = 0
    let expected = this._logEndOffset
    while (records.length - end >= RECORD_BATCH_OVERHEAD) {
      const batchLength = records.readInt32BE(end + BATCH_LENGTH_OFFSET)
      if (batchLength < MIN_BATCH_LENGTH) throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `batch at position ${end} has length ${batchLength}`)
      if (records.length - end < LOG_OVERHEAD + batchLength) break
      const problem = checkBatchIntegrity(records, end, records.length, native.crc32c)
      if (problem !== null) throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `batch at position ${end} of the leader's records for ${this.topic}-${this.partition}: ${problem}`)
      const base = readInt64(records, end)
      const last = base + records.readInt32BE(end + LAST_OFFSET_DELTA_OFFSET)
      if (base < expected || last < base) {
        throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `the leader's batch at offsets ${base}..${last} does not follow offset ${expected - 1} of ${this.topic}-${this.partition}`)
      }
      expected = last + 1
      end += LOG_OVERHEAD + batchLength
    }
    let pos = 0
    let batches = 0
    let lastOffset = -1
    let lastEpoch = -1
    while (pos < end) {
      const size = LOG_OVERHEAD + records.readInt32BE(pos + BATCH_LENGTH_OFFSET)
      const base = readInt64(records, pos)
      const last = base + records.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET)
      const maxTimestamp = readInt64(records, pos + MAX_TIMESTAMP_OFFSET)
      const epoch = records.readInt32BE(pos + PARTITION_LEADER_EPOCH_OFFSET)
      const batch = records.subarray(pos, pos + size)
      const segment = this.maybeRoll(size, last, maxTimestamp, now)
      segment.append(batch, [{ position: 0, size, lastOffset: last, maxTimestamp }])
      this.epochCache.assign(epoch, base)
      if (epoch >= 0) this.leaderEpoch = epoch
      this.producerState.applyReplicated(batch, (entry) => this.txnIndex.append(entry, segment.baseOffset))
      this._logEndOffset = last + 1
      lastOffset = last
      lastEpoch = epoch
      batches++
      pos += size
    }
    if (this.hwFollowsLeo) this._highWatermark = this._logEndOffset
    if (batches > 0 && this._logEndOffset - this.recoveryPoint >= this._config.flushMessages) this.inBackground(this.flushUpTo(this._logEndOffset))
    return {
      batches,
      bytes: pos,
      lastOffset,
      lastEpoch,
      latestEpoch: this.epochCache.latestEpoch(),
      logStartOffset: this._logStartOffset,
      logEndOffset: this._logEndOffset,
      highWatermark: this._highWatermark,
    }
  }

  /**
   * Removes every batch at or past offset (Kafka's truncateTo, for a follower whose tail diverged from
   * its leader's log): later segments are deleted, the one holding offset is cut at the start of the
   * batch containing it and becomes the active segment (its indexes rebuilt from what stays); the
   * producer state is reloaded from a snapshot at or below that segment, the .txnindex entries of cut
   * markers go, the epoch cache loses the epochs starting past the new end; the high watermark and the
   * recovery point come down with the LEO. An offset inside a batch cuts that whole batch (the LEO becomes
   * its base offset); one below the log start empties the log at it; one at or past the LEO cuts nothing
   * but an epoch started at the LEO (see the body). Returns whether anything was cut.
   * The caller writes the checkpoints next (writeCheckpoints), as a crash must not bring the cut tail back.
   */
  truncateTo(offset: number): boolean {
    this.checkUsable()
    if (!Number.isSafeInteger(offset) || offset < 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `cannot truncate ${this.topic}-${this.partition} to ${offset}`)
    if (offset >= this._logEndOffset) {
      // Nothing to cut, but an epoch this replica started as leader at its LEO without writing anything
      // goes (Kafka's truncateTo does the same): its fetches would otherwise name that epoch, which the
      // new leader never had, and diverge again on every fetch.
      this.epochCache.truncateFromEnd(this._logEndOffset)
      this.leaderEpoch = Math.max(0, this.epochCache.latestEpoch())
      return false
    }
    if (offset < this._logStartOffset) {
      this.truncateFullyAndStartAt(offset)
      return true
    }
    this.truncations++
    this.listing = undefined
    const i = this.segmentIndexFor(offset)
    for (const doomed of this.segments.splice(i + 1)) doomed.delete()
    let seg = this.segments[i]!
    const cut = seg.translateOffset(offset)
    const newEnd = cut === null ? offset : Math.min(cut.baseOffset, offset)
    if (cut !== null) {
      if (cut.position === 0) {
        seg.delete()
        seg = this.track(LogSegment.create(this.dir, seg.baseOffset, this.settings(), this.ctx.now()))
        this.segments[i] = seg
      } else {
        seg.truncateToPosition(cut.position, this._config.segmentIndexBytes)
      }
    }
    this._logEndOffset = newEnd
    if (this._highWatermark > newEnd) this._highWatermark = newEnd
    if (this.recoveryPoint > newEnd) this.recoveryPoint = newEnd
    const rebuildFrom = seg.baseOffset
    this.txnIndex.load(this.segments[0]!.baseOffset, rebuildFrom)
    this.producerState.truncateAndReload(this.segments, newEnd, this.ctx.now(), {
      snapshotAtOrBefore: rebuildFrom,
      reportAbortsFrom: rebuildFrom,
      onAbortedTxn: (entry) => this.txnIndex.append(entry, this.segments[this.segmentIndexFor(entry.lastOffset)]!.baseOffset),
    })
    this.epochCache.truncateFromEnd(newEnd)
    this.leaderEpoch = Math.max(0, this.epochCache.latestEpoch())
    return true
  }

  /**
   * Kafka's truncateFullyAndStartAt: the whole log goes and it starts again, empty, at offset (a
   * follower whose leader no longer has the offsets it would fetch next). Log start, LEO, high watermark
   * and recovery point all become offset; producer state, .txnindex and epoch cache are emptied.
   */
  truncateFullyAndStartAt(offset: number): void {
    this.checkUsable()
    if (!Number.isSafeInteger(offset) || offset < 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `cannot restart ${this.topic}-${this.partition} at ${offset}`)
    this.truncations++
    this.listing = undefined
    this.emptyAt(offset)
    this._highWatermark = offset
    this.recoveryPoint = offset
  }

  /**
   * This replica leads the partition from leaderEpoch on: the epoch starts at the LEO (Kafka's
   * maybeAssignEpochStartOffset on becoming leader) and is written into transaction markers.
   */
  assignLeaderEpoch(leaderEpoch: number): void {
    this.checkUsable()
    if (!Number.isInteger(leaderEpoch) || leaderEpoch < 0 || leaderEpoch > INT32_MAX) throw new KafkaError(ErrorCode.INVALID_REQUEST, `leader epoch ${leaderEpoch}`)
    this.epochCache.assign(leaderEpoch, this._logEndOffset, false)
    this.leaderEpoch = leaderEpoch
  }

  /** Kafka's endOffsetForEpoch (see LeaderEpochCache.endOffsetFor): (-1, -1) when the epoch is unknown. */
  endOffsetForEpoch(leaderEpoch: number): EpochEndOffset {
    return this.epochCache.endOffsetFor(leaderEpoch, this._logEndOffset)
  }

  /** The leader epoch cache's entries, oldest first (tests, tools). */
  epochEntries(): { epoch: number; startOffset: number }[] {
    return this.epochCache.all()
  }

  /**
   * Switches the high watermark between following the LEO on every append (a partition whose in-sync
   * replicas are its leader alone) and being set from outside. Turning it on moves it to the LEO now.
   */
  setHighWatermarkFollowsLeo(follows: boolean): void {
    this.hwFollowsLeo = follows
    if (follows) this._highWatermark = this._logEndOffset
  }

  /** Raises the high watermark to offset (clamped to the LEO); a lower value changes nothing. Returns the HW. */
  maybeIncrementHighWatermark(offset: number): number {
    if (Number.isSafeInteger(offset) && offset > this._highWatermark) this._highWatermark = Math.min(offset, this._logEndOffset)
    return this._highWatermark
  }

  /**
   * Raises the log start offset to the leader's (a follower; Kafka's LeaderOffsetIncremented), no
   * further than the high watermark, deleting the segments wholly below it.
   */
  maybeIncrementLogStartOffset(offset: number): void {
    const target = Math.min(offset, this._highWatermark)
    if (!Number.isSafeInteger(target) || target <= this._logStartOffset) return
    this._logStartOffset = target
    this.epochCache.truncateFromStart(target)
    this.deleteSegments(this.deletable((_s, next) => next !== undefined && next.baseOffset <= this._logStartOffset))
  }

  /** Offsets and newest epoch, for the replication layer. */
  replicaState(): ReplicaLogState {
    return { logStartOffset: this._logStartOffset, logEndOffset: this._logEndOffset, highWatermark: this._highWatermark, latestEpoch: this.epochCache.latestEpoch() }
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
    // The new segment first, then the old one's index files: when either finds the disk full (or fails
    // otherwise) the old segment stays the active one, whole, and the append is refused.
    let seg: LogSegment
    try {
      seg = this.track(LogSegment.create(this.dir, base, this.settings(), this.ctx.now()))
    } catch (err) {
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `roll of ${this.topic}-${this.partition} at offset ${base} failed: ${(err as Error).message}`)
    }
    try {
      old.onBecomeInactive()
    } catch (err) {
      seg.delete()
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `roll of ${this.topic}-${this.partition} at offset ${base} failed: ${(err as Error).message}`)
    }
    this.segments.push(seg)
    // As Kafka: the rolled segment is flushed off the append path, which moves the recovery point.
    this.inBackground(this.flushUpTo(base))
    // and the producer state at the new base offset is snapshotted, so a restart replays one segment at most
    // (only that: without it the next open replays more).
    this.inBackground(this.producerState.takeSnapshot(base).catch((err: unknown) => {
      if (!this.isTransientDiskFull(err)) throw err
    }))
    return seg
  }

  /**
   * A write or file creation refused by a full disk (ENOSPC, EDQUOT) where a full disk only refuses writes
   * (see PartitionLogContext.diskFullIsTransient); nothing written before is lost by it, unlike an fsync error.
   */
  private isTransientDiskFull(err: unknown): boolean {
    const e = err as NodeJS.ErrnoException | undefined
    return this.ctx.diskFullIsTransient === true && (e?.code === 'ENOSPC' || e?.code === 'EDQUOT') && (e.syscall === 'write' || e.syscall === 'open')
  }

  private inBackground(p: Promise<void>): void {
    const tracked = p.catch((err: Error) => {
      this.failure ??= err
      this.ctx.onBackgroundFailure?.(this, err)
    }).finally(() => this.background.delete(tracked))
    this.background.add(tracked)
  }

  /** fsyncs every segment holding offsets in [recoveryPoint, offset) and moves the recovery point. */
  private async flushUpTo(offset: number): Promise<void> {
    if (offset <= this.recoveryPoint) return
    const from = this.recoveryPoint
    const truncations = this.truncations
    const targets = this.segments.filter((s, i) => {
      const next = this.segments[i + 1]?.baseOffset ?? Infinity
      return next > from && s.baseOffset < offset && !s.deleted
    })
    // Each segment pins its own descriptor for its fsync; a segment deleted meanwhile needs none.
    try {
      for (const s of targets) await s.flush()
      await this.txnIndex.flush()
    } catch (err) {
      // An index write that found the disk full lost nothing (it is written again, whole, next time): the
      // recovery point stays. A failed fsync is never forgiven: the kernel may have dropped those pages.
      if (this.isTransientDiskFull(err)) return
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `fsync of ${this.topic}-${this.partition} failed: ${(err as Error).message}`)
    }
    // The epochs of the offsets now below the recovery point must be in the file: recovery does not
    // read those batches again (leader-epoch-cache.ts).
    if (this.epochCache.isDirty) {
      try {
        await this.epochCache.checkpoint()
      } catch (err) {
        // The recovery point stays; the cache stays dirty and a later flush or checkpoint writes it.
        if (this.isTransientDiskFull(err)) return
        throw err
      }
    }
    // A truncation meanwhile may have cut what was flushed, and later appends are not flushed yet.
    if (truncations === this.truncations && offset > this.recoveryPoint) this.recoveryPoint = Math.min(offset, this._logEndOffset)
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

  /** Whether writeCheckpoints has anything to write (asked of every partition before any is called). */
  get checkpointsDue(): boolean {
    return this.epochCache.isDirty || this.highWatermarkCheckpointDue || this.recoveryPoint !== this.writtenRecoveryPoint || this._logStartOffset !== this.writtenLogStartOffset
  }

  /** Whether writeHighWatermarkCheckpoint has anything to write. */
  get highWatermarkCheckpointDue(): boolean {
    return !this.hwFollowsLeo && this._highWatermark !== this.writtenHighWatermark && !this.isClosed
  }

  /**
   * Writes the recovery-point, log-start, high-watermark (when it does not follow the LEO) and leader
   * epoch checkpoints that changed since their last write.
   */
  async writeCheckpoints(): Promise<void> {
    if (this.epochCache.isDirty) await this.epochCache.checkpoint()
    await this.writeHighWatermarkCheckpoint()
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

  /**
   * Writes replication-offset-checkpoint when the high watermark changed since its last write and does
   * not follow the LEO (replica.high.watermark.checkpoint.interval.ms, and with the other checkpoints).
   */
  async writeHighWatermarkCheckpoint(): Promise<void> {
    const hw = this._highWatermark
    if (!this.highWatermarkCheckpointDue) return
    await writeCheckpoint(join(this.dir, REPLICATION_OFFSET_CHECKPOINT), this.topic, this.partition, hw)
    this.writtenHighWatermark = hw
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
   * minOneBatch), none reaching maxOffset (default and cap: the high watermark, or the LEO with logEnd).
   * Regions pin their segments under the returned lease until LogManager.releaseLease.
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
    const limit = opts.logEnd === true ? this._logEndOffset : this._highWatermark
    let maxOffset = opts.maxOffset === undefined || opts.maxOffset > limit ? limit : opts.maxOffset
    if (readCommitted && lastStableOffset < maxOffset) maxOffset = lastStableOffset
    const minOne = opts.minOneBatch ?? true
    // read_committed: the offset after the returned batches bounds the aborted transactions listed.
    let upperBound = maxOffset
    const regions: FileRegion[] = []
    // A region's fd is taken under a pin (retain), so that opening the next segment's files cannot
    // make the cache close it; the lease takes the pins over.
    const pinned: LogSegment[] = []
    let bytes = 0
    let target = offset
    let full = false
    try {
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
            seg.retain()
            pinned.push(seg)
            regions.push({ fd: seg.fd, position: first.position, length: end - first.position })
            bytes += end - first.position
          } else {
            full = true
          }
        }
        if (segmentEnd >= maxOffset) break
        target = segmentEnd
      }
    } catch (err) {
      for (const s of pinned) s.release()
      throw err
    }
    return {
      regions,
      bytes,
      leaseId: pinned.length === 0 ? 0 : this.ctx.leases.adopt(pinned),
      logStartOffset: this._logStartOffset,
      logEndOffset: this._logEndOffset,
      highWatermark: this._highWatermark,
      lastStableOffset,
      abortedTransactions: readCommitted && bytes > 0 ? this.txnIndex.collect(offset, upperBound) : [],
    }
  }

  /**
   * A follower's fetch from this leader (Kafka's Partition.readRecords for a follower): when the
   * follower names the epoch of its last fetched batch, that epoch's end offset here decides first
   * whether its log diverged (an older epoch here, or an end before its fetch offset): then nothing is
   * read and the answer carries the diverging epoch and its end offset, to which it truncates. An epoch
   * unknown here is OFFSET_OUT_OF_RANGE, as is a fetch offset below the log start. Otherwise batches up
   * to the LEO.
   */
  readForFollower(offset: number, maxBytes: number, lastFetchedEpoch: number): ReadResult & { divergingEpoch?: EpochEndOffset } {
    if (this.closed) throw new KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, `${this.topic}-${this.partition} is closed`)
    if (lastFetchedEpoch >= 0) {
      const end = this.epochCache.endOffsetFor(lastFetchedEpoch, this._logEndOffset)
      if (end.leaderEpoch < 0 || end.endOffset < 0) {
        throw new KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, `the end offset of epoch ${lastFetchedEpoch} of ${this.topic}-${this.partition} is not known here`)
      }
      if (offset < this._logStartOffset) {
        throw new KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, `offset ${offset} is below the log start offset ${this._logStartOffset} of ${this.topic}-${this.partition}`)
      }
      if (end.leaderEpoch < lastFetchedEpoch || end.endOffset < offset) {
        return {
          regions: [],
          bytes: 0,
          leaseId: 0,
          logStartOffset: this._logStartOffset,
          logEndOffset: this._logEndOffset,
          highWatermark: this._highWatermark,
          lastStableOffset: this.lastStableOffset,
          abortedTransactions: [],
          divergingEpoch: end,
        }
      }
    }
    return this.read(offset, maxBytes, { logEnd: true })
  }

  /**
   * ListOffsets for one partition (Kafka's UnifiedLog.fetchOffsetByTimestamp with the caps Partition
   * adds): EARLIEST (-2) and EARLIEST_LOCAL (-4, no tiered storage) the log start offset; LATEST (-1) the
   * high watermark, what a read_uncommitted consumer may read up to, or for read_committed the last stable
   * offset; MAX_TIMESTAMP (-3) the batch with the largest timestamp; a time in ms the first record whose
   * timestamp is >= it (offset and timestamp of that record). (-1, -1) when nothing matches, as Kafka answers; another negative value
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
   * ListOffsets by timestamp (Kafka's UnifiedLog.fetchOffsetByTimestamp for a time): the first record at
   * or past the log start whose timestamp is >= timestamp, as { offset, timestamp } of that record (the
   * matching batch is decoded: LogSegment.findOffsetByTimestamp); null when none.
   */
  offsetForTimestamp(timestamp: number): OffsetAndTimestamp | null {
    const maxRecordBytes = decodedSizeLimit(this._config.maxMessageBytes)
    for (let i = 0; i < this.segments.length; i++) {
      const seg = this.segments[i]!
      if (seg.maxTimestampSoFar < timestamp) continue
      const next = this.segments[i + 1]?.baseOffset ?? this._logEndOffset
      if (next <= this._logStartOffset) continue
      const hit = seg.findOffsetByTimestamp(timestamp, this._logStartOffset, maxRecordBytes)
      if (hit !== null) return hit
    }
    return null
  }

  /**
   * ListOffsets MAX_TIMESTAMP (-3): the largest timestamp in the log and the offset of the first record
   * that carries it, as Kafka 3.8+ answers (KAFKA-16310: the record, not the last offset of its batch;
   * under LogAppendTime every record of the batch has it, so the batch's first); null when no batch has a
   * timestamp. The segment holding it is decoded only around that batch (findOffsetByTimestamp).
   */
  maxTimestamp(): OffsetAndTimestamp | null {
    let best: LogSegment | null = null
    for (const seg of this.segments) {
      if (seg.maxTimestampSoFar >= 0 && (best === null || seg.maxTimestampSoFar > best.maxTimestampSoFar)) best = seg
    }
    if (best === null) return null
    // No record of the segment is later than its max, so the first at or after it is the first with it.
    const hit = best.findOffsetByTimestamp(best.maxTimestampSoFar, this._logStartOffset, decodedSizeLimit(this._config.maxMessageBytes))
    if (hit !== null) return hit
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
      this.epochCache.truncateFromStart(target)
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
    this.epochCache.truncateFromStart(this._logStartOffset)
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
      logDir: dirname(this.dir),
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
    await this.epochCache.drain()
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
