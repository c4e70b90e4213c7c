// A shard: the LogManager of the partitions one thread owns, its retention, flush, checkpoint and cleaner
// timers, and the dispatch of a ShardBatch's operations to their entries in the operation table
// (operations.ts). The same class runs inside a worker thread (worker.ts) and on the main thread when
// io.threads=0, so both paths behave identically.
//
// Invariant: only the owning thread touches these PartitionLogs, so nothing here locks. Operations run
// one after another in the order sent, within a batch and across batches: a batch starts once the
// asynchronous operations of the batches before it (a truncation waiting for its fsyncs, moveAside,
// close) are done, although the router, and on a worker thread Piscina, hand the shard the next batch
// meanwhile. Only a background operation (a compaction pass, which yields between slices) runs alongside
// the operations sent after it.

import { performance } from 'node:perf_hooks'
import { errorName, ErrorCode, KafkaError, RecordValidationError } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import { LogManager, isDiskFull, recoveryWorthLogging, type PartitionLog, type RecoveryReport } from '../storage/index.js'
import type { LogCleanerSettings } from '../storage/index.js'
import type { LogConfig } from '../storage/types.js'
import { shardOf } from './hash.js'
import {
  DEFAULT_CLEANER_CONFIG, DEFAULT_PRODUCER_EXPIRATION,
  type OpResult, type ShardCleanerConfig, type ShardInfo, type ShardLoad, type ShardProducerExpiration,
} from './messages.js'
import { SHARD_OPERATIONS, type AnyOperation, type OperationTable, type ShardContext } from './operations.js'

export interface ShardExecutorOptions {
  dataDir: string
  /** Every data directory (log.dirs); default [dataDir]. */
  dataDirs?: readonly string[]
  defaults: LogConfig
  shardIndex: number
  shardCount: number
  cleanShutdown: boolean
  retentionCheckIntervalMs: number
  flushSchedulerIntervalMs: number
  highWatermarkFollowsLeo: boolean
  /** A full disk takes its data directory offline (a cluster) instead of only refusing writes (LogManager). */
  diskFullFailsLogDir?: boolean
  /** Idempotent producer state expiration (default: Kafka's, 1 day checked every 10 minutes). */
  producerExpiration?: ShardProducerExpiration
  /** log.flush.offset.checkpoint.interval.ms: how often changed recovery checkpoints are written (LogManager checkpointIntervalMs). */
  checkpointIntervalMs: number
  /** replica.high.watermark.checkpoint.interval.ms: how often changed high-watermark checkpoints are written (default 5000). */
  highWatermarkCheckpointIntervalMs?: number
  /** The periodic log cleaner (default: Kafka's defaults, enabled). */
  cleaner?: ShardCleanerConfig
  /** Test hooks of the cleaner (swap steps). */
  cleanerHooks?: Pick<LogCleanerSettings, 'onSwapStep'>
  /** Errors of the retention/flush/cleaner timers (they have no caller to return them to). */
  onBackgroundError: (err: unknown, task: BackgroundTask) => void
  /** Threads started for this shard so far, for ShardInfo (default 1). */
  threadStarts?: () => number
  /** This shard's bound on open segment files (storage/open-files.ts); default the LogManager's. */
  maxOpenFiles?: number
  /** Where the recovery of each partition opened is logged (INFO, one line each). Default: not logged. */
  logger?: Logger
  /** The operations this shard serves (default SHARD_OPERATIONS; a test worker adds test-hooks.ts's). */
  operations?: OperationTable
}

export type BackgroundTask = 'retention' | 'flush' | 'cleaner' | 'producer-expiration' | 'delete' | 'high-watermark-checkpoint'

// setInterval cannot wait longer than 2^31-1 ms (it fires at once instead), and Kafka's "never" is Long.MAX.
const MAX_TIMER_MS = 2 ** 31 - 1

function failure(err: unknown): OpResult {
  if (err instanceof RecordValidationError) return { ok: false, errorCode: err.code, message: err.message, recordErrors: err.recordErrors }
  if (err instanceof KafkaError) return { ok: false, errorCode: err.code, message: err.message }
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err)
  return { ok: false, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, message, unexpected: true }
}

/** The message of a partition's recovery line, e.g. "recovered t-3 from offset 1200: ...". */
function recoveryLine(topic: string, partition: number, r: RecoveryReport, logEndOffset: number): string {
  const done: string[] = []
  if (r.recoveredFrom !== undefined) done.push(`${r.segmentsRecovered} segment(s) re-validated from offset ${r.recoveredFrom} (${r.bytesRevalidated ?? 0} bytes)`)
  if (r.bytesTruncated > 0) done.push(`${r.bytesTruncated} bytes of a torn or corrupt tail truncated`)
  if (r.segmentsDropped > 0) done.push(`${r.segmentsDropped} segment(s) after it dropped`)
  if (r.indexesRebuilt > 0) done.push(`${r.indexesRebuilt} index pair(s) rebuilt`)
  if ((r.abortedTxnsRebuilt ?? 0) > 0) done.push(`${r.abortedTxnsRebuilt} aborted transaction(s) re-indexed from offset ${r.txnIndexRebuiltFrom}`)
  if (r.swapsCompleted + r.cleanedFilesDeleted > 0) done.push(`log cleaner leftovers: ${r.swapsCompleted} swap(s) completed, ${r.cleanedFilesDeleted} file(s) deleted`)
  return `recovered ${topic}-${partition}: ${done.join('; ')}; log end offset ${logEndOffset}`
}

/** What opening logs took and repaired; each partition whose recovery repaired anything gets its INFO line. */
function summarizeLoad(logs: readonly PartitionLog[], ms: number, logger: Logger | undefined): ShardLoad {
  const load: ShardLoad = { partitions: 0, recovered: 0, bytesTruncated: 0, segmentsDropped: 0, ms }
  for (const log of logs) {
    const r = log.recovery
    load.partitions++
    if (!recoveryWorthLogging(r)) continue
    load.recovered++
    load.bytesTruncated += r.bytesTruncated
    load.segmentsDropped += r.segmentsDropped
    logger?.info(
      { topic: log.topic, partition: log.partition, ...r, logStartOffset: log.logStartOffset, logEndOffset: log.logEndOffset },
      recoveryLine(log.topic, log.partition, r, log.logEndOffset),
    )
  }
  return load
}

function unknownPartition(logs: LogManager, topic: string, partition: number): never {
  const offline = logs.offlineDirOf(topic, partition)
  if (offline !== undefined) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `${topic}-${partition} is in the offline log directory ${offline}`)
  throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `${topic}-${partition} is not hosted here`)
}

function partitionOf(args: unknown): { topic: string; partition: number } | undefined {
  const a = args as { topic?: unknown; partition?: unknown } | null
  return a !== null && typeof a === 'object' && typeof a.topic === 'string' && typeof a.partition === 'number' ? { topic: a.topic, partition: a.partition } : undefined
}

export class ShardExecutor implements ShardContext {
  readonly shardIndex: number
  readonly logs: LogManager
  readonly #opts: ShardExecutorOptions
  /** The operation table by name (a Map: names come off the wire and must not reach Object.prototype). */
  readonly #operations: ReadonlyMap<string, AnyOperation>
  readonly #timers: NodeJS.Timeout[] = []
  #load: ShardLoad = { partitions: 0, recovered: 0, bytesTruncated: 0, segmentsDropped: 0, ms: 0 }
  #closed = false
  #closing: Promise<void> | undefined
  /** An exclusive operation running: other operations wait for it (see OperationBase.exclusive). */
  #exclusive: Promise<void> | undefined
  /**
   * Settles once the batches sent so far have run their operations (background ones aside): the next
   * batch waits for it. Without it, an append queued behind another partition's truncation was overtaken
   * by an append of the next batch: one idempotent producer's consecutive batches then reached the log
   * out of order, and the first was refused OUT_OF_ORDER_SEQUENCE_NUMBER after the second was written.
   */
  #previousBatch: Promise<void> = Promise.resolve()
  /** Batches started and not done: with none, a batch runs at once (no turn of the microtask queue on the hot path). */
  #unfinishedBatches = 0

  private constructor(opts: ShardExecutorOptions, logs: LogManager) {
    this.shardIndex = opts.shardIndex
    this.#opts = opts
    this.logs = logs
    this.#operations = new Map(Object.entries(opts.operations ?? SHARD_OPERATIONS))
    this.#schedule(opts.retentionCheckIntervalMs, 'retention', () => {
      logs.applyRetention()
    })
    // flushDue also writes the recovery checkpoints, so it runs at least every checkpoint interval even
    // when log.flush.scheduler.interval.ms is Kafka's "never"; the flush.ms test inside is per partition.
    // A checkpoint interval of 0 (Kafka: no periodic checkpoint task) leaves the flush scheduler's
    // period, on each pass of which flushDue then writes the changed checkpoints.
    const flushPeriodMs = opts.checkpointIntervalMs >= 1 ? Math.min(opts.flushSchedulerIntervalMs, opts.checkpointIntervalMs) : opts.flushSchedulerIntervalMs
    this.#schedule(flushPeriodMs, 'flush', () => logs.flushDue())
    // Kafka's highwatermark-checkpoint task: replicated partitions' high watermarks, so a restarted
    // replica starts from them (partitions whose HW follows the LEO write none).
    this.#schedule(opts.highWatermarkCheckpointIntervalMs ?? 5000, 'high-watermark-checkpoint', () => logs.checkpointHighWatermarks())
    // Kafka's producer-expiry-check: idempotent producer state idle for producer.id.expiration.ms goes.
    this.#schedule((opts.producerExpiration ?? DEFAULT_PRODUCER_EXPIRATION).checkIntervalMs, 'producer-expiration', () => {
      logs.removeExpiredProducers()
    })
    // The log cleaner: every log.cleaner.backoff.ms, clean the filthiest compacted logs until none is
    // eligible. Each pass yields between slices, so this shard's other work goes on meanwhile.
    const cleaner = opts.cleaner ?? DEFAULT_CLEANER_CONFIG
    if (cleaner.enable) {
      this.#schedule(cleaner.backoffMs, 'cleaner', async () => {
        for (const r of await logs.cleaner.cleanFilthiest()) {
          if (r.reason === 'failed' || r.reason === 'map-too-small') {
            const err = new Error(`cleaning ${r.topic}-${r.partition} ${r.reason}: ${r.message ?? ''}`)
            opts.onBackgroundError(err, 'cleaner')
            // An I/O error of a pass is its directory's, as any other's (Kafka's cleaner hands IOExceptions
            // to the LogDirFailureChannel): a failed (or, in a cluster, full) directory goes offline.
            const log = r.reason === 'failed' ? logs.get(r.topic, r.partition) : undefined
            if (log !== undefined) logs.reportPartitionError(log, err)
          }
        }
      })
    }
  }

  /**
   * Opens (and recovers) the partitions this shard owns; each partition whose recovery found anything
   * to re-validate or repair gets one INFO line (Kafka logs each log it recovers), the router the summary.
   */
  static open(opts: ShardExecutorOptions): ShardExecutor {
    const cleaner = opts.cleaner ?? DEFAULT_CLEANER_CONFIG
    const logs = LogManager.open({
      cleaner: { dedupeBufferBytes: cleaner.dedupeBufferBytes, ioMaxBytesPerSecond: cleaner.ioMaxBytesPerSecond, ...opts.cleanerHooks },
      dataDir: opts.dataDir,
      ...(opts.dataDirs === undefined ? {} : { dataDirs: opts.dataDirs }),
      onLogDirFailure: (dir, err) => {
        const fields = { dir, err: err instanceof Error ? err.message : String(err) }
        // A full disk may pass (the broker retries the directory): a warning; any other failure is for good.
        if (isDiskFull(err)) opts.logger?.warn(fields, `log directory ${dir} is full: its partitions go offline on this broker`)
        else opts.logger?.error(fields, `log directory ${dir} failed: its partitions go offline on this broker`)
      },
      diskFullFailsLogDir: opts.diskFullFailsLogDir ?? false,
      defaults: opts.defaults,
      cleanShutdown: opts.cleanShutdown,
      owns: (topic, partition) => shardOf(topic, partition, opts.shardCount) === opts.shardIndex,
      highWatermarkFollowsLeo: opts.highWatermarkFollowsLeo,
      checkpointIntervalMs: opts.checkpointIntervalMs,
      producerIdExpirationMs: (opts.producerExpiration ?? DEFAULT_PRODUCER_EXPIRATION).expirationMs,
      ...(opts.maxOpenFiles === undefined ? {} : { maxOpenFiles: opts.maxOpenFiles }),
      // Leftover `-delete` directories no longer say whose they were: shard 0 removes them all.
      removeLeftovers: opts.shardIndex === 0,
      onRemovalFailed: (path, err) => opts.onBackgroundError(new Error(`cannot remove deleted partition directory ${path}: ${(err as Error).message}`), 'delete'),
    })
    const executor = new ShardExecutor(opts, logs)
    executor.#load = summarizeLoad(logs.partitions(), Math.round(logs.loadMs), opts.logger)
    return executor
  }

  reopenLogDir(logDir: string): ShardLoad {
    const started = performance.now()
    const opened = this.logs.reopenLogDir(logDir)
    return summarizeLoad(opened, Math.round(performance.now() - started), this.#opts.logger)
  }

  get closed(): boolean {
    return this.#closed
  }

  #schedule(intervalMs: number, task: BackgroundTask, fn: () => void | Promise<void>): void {
    if (!(intervalMs >= 1 && intervalMs <= MAX_TIMER_MS)) return
    let running = false
    const timer = setInterval(() => {
      if (running || this.#closed) return
      running = true
      Promise.resolve()
        .then(fn)
        .catch((err: unknown) => this.#opts.onBackgroundError(err, task))
        .finally(() => {
          running = false
        })
    }, intervalMs)
    timer.unref()
    this.#timers.push(timer)
  }

  /**
   * Applies a batch in order, after the batches sent before it: operation ops[i] to args[i]; one result per
   * operation. Never rejects.
   */
  async execute(ops: readonly string[], args: readonly unknown[]): Promise<OpResult[]> {
    const previous = this.#unfinishedBatches > 0 ? this.#previousBatch : undefined
    let done!: () => void
    this.#previousBatch = new Promise((resolve) => (done = resolve))
    this.#unfinishedBatches++
    const results: OpResult[] = new Array(ops.length)
    const background: Promise<void>[] = []
    try {
      if (previous !== undefined) await previous
      for (let i = 0; i < ops.length; i++) {
        while (this.#exclusive !== undefined) await this.#exclusive
        const operation = this.#operations.get(ops[i]!)
        if (operation === undefined) {
          results[i] = { ok: false, errorCode: ErrorCode.INVALID_REQUEST, message: `${errorName(ErrorCode.INVALID_REQUEST)}: shard ${this.shardIndex} has no operation ${ops[i]}` }
          continue
        }
        if (this.#closed && operation.whenClosed !== true) {
          results[i] = { ok: false, errorCode: ErrorCode.KAFKA_STORAGE_ERROR, message: `${errorName(ErrorCode.KAFKA_STORAGE_ERROR)}: shard ${this.shardIndex} is closed` }
          continue
        }
        let release: (() => void) | undefined
        if (operation.exclusive === true) this.#exclusive = new Promise((resolve) => (release = resolve))
        try {
          const value = operation.apply(this, args[i])
          if (value instanceof Promise && operation.background === true) {
            background.push(value.then((v) => void (results[i] = { ok: true, value: v }), (err: unknown) => void (results[i] = this.#failed(operation, args[i], err))))
          } else {
            // The asynchronous operations (truncate, moveAside, completeMove, close) complete before the next one starts.
            results[i] = { ok: true, value: value instanceof Promise ? await value : value }
          }
        } catch (err) {
          results[i] = this.#failed(operation, args[i], err)
        } finally {
          if (release !== undefined) {
            this.#exclusive = undefined
            release()
          }
        }
      }
    } finally {
      this.#unfinishedBatches--
      done()
    }
    if (background.length > 0) await Promise.all(background)
    return results
  }

  /** The answer of an operation that threw; an I/O error of a partition's directory takes that directory offline (LogManager's header). */
  #failed(operation: AnyOperation, args: unknown, err: unknown): OpResult {
    const tp = operation.target === 'partition' ? partitionOf(args) : undefined
    const log = tp === undefined ? undefined : this.logs.get(tp.topic, tp.partition)
    if (log !== undefined) this.logs.reportPartitionError(log, err)
    return failure(err)
  }

  log(topic: string, partition: number): PartitionLog {
    return this.logs.get(topic, partition) ?? unknownPartition(this.logs, topic, partition)
  }

  info(): ShardInfo {
    return {
      shard: this.shardIndex, openedClean: this.#opts.cleanShutdown, threadStarts: this.#opts.threadStarts?.() ?? 1, partitions: this.logs.partitions().length, load: this.#load,
    }
  }

  /** Stops the timers and closes the LogManager (flush, checkpoints, fds). Idempotent. */
  close(): Promise<void> {
    if (this.#closing === undefined) {
      this.#closed = true
      for (const t of this.#timers) clearInterval(t)
      this.#closing = this.logs.close()
    }
    return this.#closing!
  }
}
