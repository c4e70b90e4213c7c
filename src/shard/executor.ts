// A shard: the LogManager of the partitions one thread owns, its retention and flush timers, and the
// code that applies a ShardBatch to it. The same class runs inside a worker thread (worker.ts) and on
// the main thread when io.threads=0, so both paths behave identically.
//
// Invariant: only the owning thread touches these PartitionLogs, so nothing here locks. Operations of a
// batch run one after another in the order sent.

import { errorName, ErrorCode, KafkaError } from '../domain/errors.js'
import { LogManager } from '../storage/index.js'
import type { LogCleanerSettings } from '../storage/index.js'
import type { LogConfig, OffsetAndTimestamp, PartitionState, ReadResult } from '../storage/types.js'
import { shardOf } from './hash.js'
import {
  DEFAULT_CLEANER_CONFIG, DEFAULT_PRODUCER_EXPIRATION, EARLIEST_LOCAL_TIMESTAMP, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP,
  type OpResult, type ShardCleanerConfig, type ShardInfo, type ShardOp, type ShardProducerExpiration,
} from './messages.js'

export interface ShardExecutorOptions {
  dataDir: string
  defaults: LogConfig
  shardIndex: number
  shardCount: number
  cleanShutdown: boolean
  retentionCheckIntervalMs: number
  flushSchedulerIntervalMs: number
  highWatermarkFollowsLeo: boolean
  /** Idempotent producer state expiration (default: Kafka's, 1 day checked every 10 minutes). */
  producerExpiration?: ShardProducerExpiration
  /** How often recovery checkpoints are written (LogManager checkpointIntervalMs). */
  checkpointIntervalMs: number
  /** The periodic log cleaner (default: Kafka's defaults, enabled). */
  cleaner?: ShardCleanerConfig
  /** Test hooks of the cleaner (swap steps). */
  cleanerHooks?: Pick<LogCleanerSettings, 'onSwapStep'>
  /** Errors of the retention/flush/cleaner timers (they have no caller to return them to). */
  onBackgroundError: (err: unknown, task: BackgroundTask) => void
  /** Threads started for this shard so far, for ShardInfo (default 1). */
  threadStarts?: () => number
  /** Ends the thread for the crashForTest hook; absent on the main thread, where the hook is refused. */
  crash?: () => never
}

export type BackgroundTask = 'retention' | 'flush' | 'cleaner' | 'producer-expiration'

// setInterval cannot wait longer than 2^31-1 ms (it fires at once instead), and Kafka's "never" is Long.MAX.
const MAX_TIMER_MS = 2 ** 31 - 1

function failure(err: unknown): OpResult {
  if (err instanceof KafkaError) return { ok: false, errorCode: err.code, message: err.message }
  const message = err instanceof Error ? (err.stack ?? err.message) : String(err)
  return { ok: false, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, message, unexpected: true }
}

function unknownPartition(topic: string, partition: number): never {
  throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `${topic}-${partition} is not hosted here`)
}

function asBuffer(records: Uint8Array): Buffer {
  // Structured clone delivers a Uint8Array; view the same memory as a Buffer without copying.
  return Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength)
}

export class ShardExecutor {
  readonly shardIndex: number
  readonly logs: LogManager
  readonly #opts: ShardExecutorOptions
  readonly #timers: NodeJS.Timeout[] = []
  #closed = false
  #closing: Promise<void> | undefined

  private constructor(opts: ShardExecutorOptions, logs: LogManager) {
    this.shardIndex = opts.shardIndex
    this.#opts = opts
    this.logs = logs
    this.#schedule(opts.retentionCheckIntervalMs, 'retention', () => {
      logs.applyRetention()
    })
    // flushDue also writes the recovery checkpoints, so it runs at least every checkpoint interval even
    // when log.flush.scheduler.interval.ms is Kafka's "never"; the flush.ms test inside is per partition.
    this.#schedule(Math.min(opts.flushSchedulerIntervalMs, opts.checkpointIntervalMs), 'flush', () => logs.flushDue())
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
            opts.onBackgroundError(new Error(`cleaning ${r.topic}-${r.partition} ${r.reason}: ${r.message ?? ''}`), 'cleaner')
          }
        }
      })
    }
  }

  /** Opens (and recovers) the partitions this shard owns. */
  static open(opts: ShardExecutorOptions): ShardExecutor {
    const cleaner = opts.cleaner ?? DEFAULT_CLEANER_CONFIG
    const logs = LogManager.open({
      cleaner: { dedupeBufferBytes: cleaner.dedupeBufferBytes, ioMaxBytesPerSecond: cleaner.ioMaxBytesPerSecond, ...opts.cleanerHooks },
      dataDir: opts.dataDir,
      defaults: opts.defaults,
      cleanShutdown: opts.cleanShutdown,
      owns: (topic, partition) => shardOf(topic, partition, opts.shardCount) === opts.shardIndex,
      highWatermarkFollowsLeo: opts.highWatermarkFollowsLeo,
      checkpointIntervalMs: opts.checkpointIntervalMs,
      producerIdExpirationMs: (opts.producerExpiration ?? DEFAULT_PRODUCER_EXPIRATION).expirationMs,
    })
    return new ShardExecutor(opts, logs)
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

  /** Applies a batch in order; one result per op. Never rejects. */
  async execute(ops: readonly ShardOp[]): Promise<OpResult[]> {
    const results: OpResult[] = []
    for (const op of ops) {
      if (op.op === 'close') {
        try {
          await this.close()
          results.push({ ok: true, value: null })
        } catch (err) {
          results.push(failure(err))
        }
        continue
      }
      if (this.#closed) {
        results.push({ ok: false, errorCode: ErrorCode.KAFKA_STORAGE_ERROR, message: `${errorName(ErrorCode.KAFKA_STORAGE_ERROR)}: shard ${this.shardIndex} is closed` })
        continue
      }
      try {
        const value = this.#apply(op)
        // Only compact is asynchronous; the other operations complete before the next one starts.
        results.push({ ok: true, value: value instanceof Promise ? await value : value })
      } catch (err) {
        results.push(failure(err))
      }
    }
    return results
  }

  #apply(op: Exclude<ShardOp, { op: 'close' }>): unknown {
    const logs = this.logs
    switch (op.op) {
      case 'create':
        return logs.create(op.topic, op.partition, op.overrides).state()
      case 'delete':
        if (logs.get(op.topic, op.partition) === undefined) unknownPartition(op.topic, op.partition)
        logs.delete(op.topic, op.partition)
        return null
      case 'updateConfig':
        (logs.get(op.topic, op.partition) ?? unknownPartition(op.topic, op.partition)).updateConfig(op.overrides)
        return null
      case 'append':
        return (logs.get(op.topic, op.partition) ?? unknownPartition(op.topic, op.partition)).append(asBuffer(op.records), { leaderEpoch: op.leaderEpoch })
      case 'read': {
        const log = logs.get(op.topic, op.partition) ?? unknownPartition(op.topic, op.partition)
        // The op carries the read options itself (maxOffset, minOneBatch, isolation); the fresh result
        // gets its shard added in place (no copies: this runs for every partition of every Fetch).
        const result = log.read(op.offset, op.maxBytes, op) as ReadResult & { shard: number }
        result.shard = this.shardIndex
        return result
      }
      case 'writeTxnMarker':
        return (logs.get(op.topic, op.partition) ?? unknownPartition(op.topic, op.partition)).appendTxnMarker(
          { producerId: op.producerId, producerEpoch: op.producerEpoch, coordinatorEpoch: op.coordinatorEpoch, commit: op.commit },
        )
      case 'describeProducers':
        return (logs.get(op.topic, op.partition) ?? unknownPartition(op.topic, op.partition)).describeProducers()
      case 'listOffsets':
        return this.#listOffsets(op.topic, op.partition, op.timestamp, op.isolation === 'read_committed')
      case 'deleteRecords':
        return (logs.get(op.topic, op.partition) ?? unknownPartition(op.topic, op.partition)).deleteRecordsBefore(op.offset)
      case 'state':
        return (logs.get(op.topic, op.partition) ?? unknownPartition(op.topic, op.partition)).state()
      case 'compact':
        return logs.cleaner.clean(logs.get(op.topic, op.partition) ?? unknownPartition(op.topic, op.partition), { force: op.force === true })
      case 'releaseLease':
        logs.releaseLease(op.leaseId)
        return null
      case 'states':
        return logs.partitions().map((p): PartitionState => p.state())
      case 'shardInfo':
        return {
          shard: this.shardIndex, openedClean: this.#opts.cleanShutdown, threadStarts: this.#opts.threadStarts?.() ?? 1, partitions: logs.partitions().length,
        } satisfies ShardInfo
      case 'crashForTest':
        if (this.#opts.crash === undefined || process.env.SKEIN_TEST_HOOKS !== '1') {
          throw new KafkaError(ErrorCode.INVALID_REQUEST, 'crashForTest needs a worker thread and SKEIN_TEST_HOOKS=1')
        }
        return this.#opts.crash()
    }
  }

  // ListOffsets: -2 earliest (log start), -1 latest (the high watermark, what a READ_UNCOMMITTED consumer
  // may read up to, equal to the LEO on a single broker; for READ_COMMITTED the last stable offset), -3 the batch with the largest timestamp, -4
  // earliest local (= earliest, there is no tiered storage); otherwise the first offset whose batch has a
  // timestamp >= t, or (-1, -1) when there is none, as Kafka answers.
  #listOffsets(topic: string, partition: number, timestamp: number, readCommitted: boolean): OffsetAndTimestamp {
    const log = this.logs.get(topic, partition) ?? unknownPartition(topic, partition)
    switch (timestamp) {
      case EARLIEST_TIMESTAMP:
      case EARLIEST_LOCAL_TIMESTAMP:
        return { offset: log.logStartOffset, timestamp: -1 }
      case LATEST_TIMESTAMP:
        return { offset: readCommitted ? log.lastStableOffset : log.highWatermark, timestamp: -1 }
      case MAX_TIMESTAMP:
        return log.maxTimestamp() ?? { offset: -1, timestamp: -1 }
    }
    if (timestamp < 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `unsupported ListOffsets timestamp ${timestamp}`)
    return log.offsetForTimestamp(timestamp) ?? { offset: -1, timestamp: -1 }
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
