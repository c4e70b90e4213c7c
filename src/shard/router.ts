// ShardRouter: the main thread's door to the partition shards. Each partition has exactly one owner
// shard (shardOf), each shard is one thread (a Piscina pool pinned to a single worker) or, with
// ioThreads=0, the main thread itself. Calls made in the same event-loop turn are queued per shard and
// sent as ONE message per shard (flushed from setImmediate, after the turn's I/O callbacks), so a fetch
// or produce touching many partitions costs one round trip per shard, not per partition.
//
// A shard thread takes several batches at once (concurrentTasksPerWorker): every operation but one runs
// to completion before the thread looks at the next message, so batches still apply in the order sent;
// the exception, compact (a log cleaner pass that yields between slices), must not hold back the
// appends and reads sent after it.
//
// Ownership of record buffers passes to the router on append. Records in shared memory (a Produce
// frame from the frame pool, see frame-pool.ts) cross to the worker as they are: the router pins their
// slab until the shard has answered the append, so the memory is not reused while a shard reads it. A
// Buffer that exclusively owns its ArrayBuffer is transferred to the worker (the caller's Buffer
// becomes empty); any other is copied.

import { existsSync, mkdirSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Piscina } from 'piscina'
import { ErrorCode, errorName } from '../domain/errors.js'
import { createLogger, type Logger } from '../observability/logger.js'
import { lockDataDir, readAndClearCleanShutdownMarker, unlockDataDir, writeCleanShutdownMarker } from '../storage/index.js'
import type { AppendResult, IsolationLevel, LogConfig, OffsetAndTimestamp, PartitionState, ProducerDescription, ReadResult, TopicPartition } from '../storage/types.js'
import type { CleanResult } from '../storage/index.js'
import { ShardExecutor } from './executor.js'
import { pinFrame, unpinFrame } from './frame-pool.js'
import { shardOf } from './hash.js'
import { DEFAULT_CLEANER_CONFIG, DEFAULT_PRODUCER_EXPIRATION, type ShardProducerExpiration } from './messages.js'
import type { OpResult, ShardBatch, ShardCleanerConfig, ShardInfo, ShardOp, ShardReply, ShardWorkerData } from './messages.js'

export interface ShardRouterOptions {
  dataDir: string
  /** Number of shard worker threads; 0 runs every partition inline on the calling thread. */
  ioThreads: number
  defaults: LogConfig
  /** log.retention.check.interval.ms (default 300000). */
  retentionCheckIntervalMs?: number
  /** log.flush.scheduler.interval.ms (default Long.MAX: never). */
  flushSchedulerIntervalMs?: number
  /** After an append the HW moves to the LEO (single broker). Default true. */
  highWatermarkFollowsLeo?: boolean
  /** log.flush.offset.checkpoint.interval.ms: how often recovery checkpoints are written (default 60000). */
  checkpointIntervalMs?: number
  /**
   * The log cleaner (log.cleaner.* broker configs); default Kafka's. dedupeBufferBytes is the total
   * (log.cleaner.dedupe.buffer.size), divided evenly among the shards.
   */
  cleaner?: Partial<ShardCleanerConfig>
  /** producer.id.expiration.ms / .check.interval.ms for idempotent producer state; default Kafka's. */
  producerExpiration?: Partial<ShardProducerExpiration>
  /** Where unexpected (non-Kafka) errors are logged. Default: a pino logger on stdout. */
  logger?: Logger
  /** The compiled worker module; default dist/src/shard/worker.js (also when running from src/). */
  workerFile?: string
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; errorCode: number; message: string }

export interface ShardReadResult extends ReadResult {
  shard: number
}

export interface CreatePartitionItem extends TopicPartition {
  overrides?: Partial<LogConfig>
}

export interface UpdateConfigItem extends TopicPartition {
  overrides: Partial<LogConfig>
}

export interface AppendItem extends TopicPartition {
  records: Buffer
  leaderEpoch: number
}

export interface ReadItem extends TopicPartition {
  offset: number
  maxBytes: number
  maxOffset?: number
  minOneBatch?: boolean
  /** read_committed caps the read at the last stable offset and lists aborted transactions; default read_uncommitted. */
  isolation?: IsolationLevel
}

/** A transaction marker for one partition (the transaction coordinator's WriteTxnMarkers). */
export interface TxnMarkerItem extends TopicPartition {
  producerId: number
  producerEpoch: number
  coordinatorEpoch: number
  /** COMMIT (true) or ABORT (false). */
  commit: boolean
}

export interface ListOffsetsItem extends TopicPartition {
  /** -2 earliest, -1 latest, -3 max timestamp, -4 earliest local, else a timestamp in ms. */
  timestamp: number
  /** read_committed: latest (-1) is the last stable offset instead of the high watermark. */
  isolation?: IsolationLevel
}

export interface DeleteRecordsItem extends TopicPartition {
  /** Delete records before this offset; -1 means the high watermark. */
  offset: number
}

export interface CompactItem extends TopicPartition {
  /** Clean even when min.cleanable.dirty.ratio / max.compaction.lag.ms would not ask for it. */
  force?: boolean
}

export interface LeaseRef {
  shard: number
  leaseId: number
}

const LONG_MAX = 2 ** 63

/** One shard as the router sees it: a thread (Piscina) or the inline executor. */
interface ShardBackend {
  readonly inline: boolean
  run(ops: ShardOp[], transferList: ArrayBuffer[]): Promise<OpResult[]>
  destroy(): Promise<void>
}

class InlineShard implements ShardBackend {
  readonly inline = true
  readonly #executor: ShardExecutor

  constructor(executor: ShardExecutor) {
    this.#executor = executor
  }

  run(ops: ShardOp[]): Promise<OpResult[]> {
    return this.#executor.execute(ops)
  }

  destroy(): Promise<void> {
    return this.#executor.close()
  }
}

class WorkerShard implements ShardBackend {
  readonly inline = false
  readonly #pool: Piscina<ShardBatch, ShardReply>

  constructor(pool: Piscina<ShardBatch, ShardReply>) {
    this.#pool = pool
  }

  async run(ops: ShardOp[], transferList: ArrayBuffer[]): Promise<OpResult[]> {
    const reply = await this.#pool.run({ ops }, { transferList })
    return reply.results
  }

  destroy(): Promise<void> {
    return this.#pool.destroy()
  }
}

interface Pending {
  op: ShardOp
  resolve: ((r: OpResult) => void) | undefined
}

/** The compiled worker next to this module, or dist/src/shard/worker.js when running from src/ (vitest). */
function defaultWorkerFile(): string {
  const here = fileURLToPath(import.meta.url)
  if (here.endsWith('.ts')) return join(resolve(dirname(here), '..', '..'), 'dist', 'src', 'shard', 'worker.js')
  return join(dirname(here), 'worker.js')
}

/** A Buffer may be transferred only when it is the sole view of an ArrayBuffer that is not Node's pool. */
function exclusivelyOwned(buf: Uint8Array): boolean {
  const ab = buf.buffer
  return ab instanceof ArrayBuffer && buf.byteOffset === 0 && buf.byteLength === ab.byteLength && ab.byteLength > Buffer.poolSize
}

function isPartitionId(p: number): boolean {
  return Number.isInteger(p) && p >= 0 && p <= 0x7fffffff
}

export class ShardRouter {
  readonly ioThreads: number
  readonly dataDir: string
  /** Messages (batches) sent to each shard so far; tests use it to check batching. */
  readonly messageCounts: number[]
  readonly #shards: ShardBackend[]
  readonly #queues: Pending[][]
  readonly #logger: Logger
  #flushScheduled = false
  #closed = false
  #closing: Promise<void> | undefined
  #lockFd = -1

  private constructor(dataDir: string, ioThreads: number, shards: ShardBackend[], logger: Logger) {
    this.dataDir = dataDir
    this.ioThreads = ioThreads
    this.#shards = shards
    this.#queues = shards.map(() => [])
    this.messageCounts = shards.map(() => 0)
    this.#logger = logger
  }

  /**
   * Reads and clears the clean-shutdown marker once, here, then opens every shard (each recovers the
   * partitions it owns). Rejects when a shard cannot open its partitions.
   */
  static async start(opts: ShardRouterOptions): Promise<ShardRouter> {
    if (!Number.isInteger(opts.ioThreads) || opts.ioThreads < 0) throw new RangeError(`ioThreads must be an integer >= 0, got ${opts.ioThreads}`)
    const dataDir = resolve(opts.dataDir)
    mkdirSync(dataDir, { recursive: true })
    // One owner per data directory, as Kafka's `.lock`: a second broker (or library user) on the same
    // directory stops here, before it recovers partitions or touches the clean-shutdown marker.
    const lockFd = lockDataDir(dataDir)
    try {
      const router = await ShardRouter.#open(opts, dataDir)
      router.#lockFd = lockFd
      return router
    } catch (err) {
      unlockDataDir(lockFd)
      throw err
    }
  }

  static async #open(opts: ShardRouterOptions, dataDir: string): Promise<ShardRouter> {
    const logger = opts.logger ?? createLogger()
    const cleanShutdown = readAndClearCleanShutdownMarker(dataDir)
    const retentionCheckIntervalMs = opts.retentionCheckIntervalMs ?? 300_000
    const flushSchedulerIntervalMs = opts.flushSchedulerIntervalMs ?? LONG_MAX
    const highWatermarkFollowsLeo = opts.highWatermarkFollowsLeo ?? true
    const checkpointIntervalMs = opts.checkpointIntervalMs ?? 60_000
    const producerExpiration: ShardProducerExpiration = { ...DEFAULT_PRODUCER_EXPIRATION, ...opts.producerExpiration }
    const shardCount = Math.max(1, opts.ioThreads)
    const shards: ShardBackend[] = []
    const cleanerTotal = { ...DEFAULT_CLEANER_CONFIG, ...opts.cleaner }
    const cleaner: ShardCleanerConfig = { ...cleanerTotal, dedupeBufferBytes: Math.floor(cleanerTotal.dedupeBufferBytes / shardCount) }

    if (opts.ioThreads === 0) {
      const executor = ShardExecutor.open({
        dataDir, defaults: opts.defaults, shardIndex: 0, shardCount: 1, cleanShutdown, retentionCheckIntervalMs, flushSchedulerIntervalMs,
        highWatermarkFollowsLeo, checkpointIntervalMs, cleaner, producerExpiration, onBackgroundError: (err, task) => logger.error({ err, task }, 'shard background task failed'),
      })
      shards.push(new InlineShard(executor))
      return new ShardRouter(dataDir, 0, shards, logger)
    }

    const workerFile = opts.workerFile ?? defaultWorkerFile()
    if (!existsSync(workerFile)) throw new Error(`shard worker module ${workerFile} not found; build it with \`npx tsc -p tsconfig.json\``)
    for (let shardIndex = 0; shardIndex < shardCount; shardIndex++) {
      const workerData: ShardWorkerData = {
        dataDir, defaults: opts.defaults, shardIndex, shardCount, cleanShutdown, starts: new Int32Array(new SharedArrayBuffer(4)),
        retentionCheckIntervalMs, flushSchedulerIntervalMs, highWatermarkFollowsLeo, checkpointIntervalMs, cleaner, producerExpiration,
      }
      const pool = new Piscina<ShardBatch, ShardReply>({
        filename: pathToFileURL(workerFile).href,
        name: 'default',
        minThreads: 1,
        maxThreads: 1,
        concurrentTasksPerWorker: 16,
        idleTimeout: Infinity,
        // Atomics.wait would block the worker's event loop between tasks, starving its retention and
        // flush timers.
        atomics: 'disabled',
        // File regions handed to the main thread carry the worker's fds; if the worker dies they must not
        // be closed (and their numbers reused) under a pending sendfile. They leak instead, until exit.
        trackUnmanagedFds: false,
        workerData,
      })
      pool.on('error', (err: unknown) => logger.error({ err, shard: shardIndex }, 'shard worker error'))
      shards.push(new WorkerShard(pool))
    }
    const router = new ShardRouter(dataDir, opts.ioThreads, shards, logger)
    // An empty batch makes each worker load its module, i.e. open and recover its partitions.
    const ready = await Promise.allSettled(shards.map((s) => s.run([], [])))
    const failed = ready.find((r) => r.status === 'rejected')
    if (failed !== undefined) {
      await Promise.allSettled(shards.map((s) => s.destroy()))
      throw new Error(`a shard failed to open its partitions: ${String((failed as PromiseRejectedResult).reason)}`)
    }
    return router
  }

  /** The shard owning a partition (stable: FNV-1a of `${topic}-${partition}` modulo the shard count). */
  shardOf(topic: string, partition: number): number {
    return shardOf(topic, partition, this.#shards.length)
  }

  createPartitions(items: readonly CreatePartitionItem[]): Promise<Outcome<PartitionState>[]> {
    return this.#each(items, (i) => {
      if (!isPartitionId(i.partition)) return this.#reject(ErrorCode.INVALID_PARTITIONS, `invalid partition ${i.partition}`)
      return this.#send({ op: 'create', topic: i.topic, partition: i.partition, ...(i.overrides === undefined ? {} : { overrides: i.overrides }) })
    })
  }

  deletePartitions(items: readonly TopicPartition[]): Promise<Outcome<null>[]> {
    return this.#each(items, (i) => this.#sendFor(i, { op: 'delete', topic: i.topic, partition: i.partition }))
  }

  updateConfigs(items: readonly UpdateConfigItem[]): Promise<Outcome<null>[]> {
    return this.#each(items, (i) => this.#sendFor(i, { op: 'updateConfig', topic: i.topic, partition: i.partition, overrides: i.overrides }))
  }

  /** Appends record batches. The router takes ownership of each `records` Buffer (see the file header). */
  append(items: readonly AppendItem[]): Promise<Outcome<AppendResult>[]> {
    return this.#each(items, (i) => {
      const sent = this.#sendFor(i, { op: 'append', topic: i.topic, partition: i.partition, records: i.records, leaderEpoch: i.leaderEpoch })
      // Frame-pool memory stays pinned until the shard has answered: whatever the caller does meanwhile
      // (an acks=0 produce need not wait), the slab is not reused under the shard's reads and writes.
      if (!pinFrame(i.records)) return sent
      const records = i.records
      return sent.then(
        (r) => {
          unpinFrame(records)
          return r
        },
        (err: unknown) => {
          unpinFrame(records)
          throw err
        },
      )
    })
  }

  /** Reads file regions; each non-empty result pins its segments until releaseLeases({shard, leaseId}). */
  read(items: readonly ReadItem[]): Promise<Outcome<ShardReadResult>[]> {
    return this.#each(items, (i) => {
      const op: Extract<ShardOp, { op: 'read' }> = { op: 'read', topic: i.topic, partition: i.partition, offset: i.offset, maxBytes: i.maxBytes }
      if (i.maxOffset !== undefined) op.maxOffset = i.maxOffset
      if (i.minOneBatch !== undefined) op.minOneBatch = i.minOneBatch
      if (i.isolation !== undefined) op.isolation = i.isolation
      return this.#sendFor(i, op)
    })
  }

  /**
   * Appends one COMMIT or ABORT control batch per item (Kafka's EndTransactionMarker), closing the
   * producer's open transaction on that partition: an abort is recorded in the .txnindex and the last
   * stable offset moves on. A marker for a producer with no open transaction there is written too (as
   * Kafka does). Errors: INVALID_PRODUCER_EPOCH when the producer has a newer epoch on the partition,
   * TRANSACTION_COORDINATOR_FENCED when a newer coordinator epoch wrote a marker there.
   */
  writeTxnMarkers(items: readonly TxnMarkerItem[]): Promise<Outcome<{ offset: number }>[]> {
    return this.#each(items, (i) => this.#sendFor(i, {
      op: 'writeTxnMarker', topic: i.topic, partition: i.partition, producerId: i.producerId, producerEpoch: i.producerEpoch,
      coordinatorEpoch: i.coordinatorEpoch, commit: i.commit,
    }))
  }

  /** The producers with state on each partition, by producer id (DescribeProducers). */
  describeProducers(items: readonly TopicPartition[]): Promise<Outcome<ProducerDescription[]>[]> {
    return this.#each(items, (i) => this.#sendFor(i, { op: 'describeProducers', topic: i.topic, partition: i.partition }))
  }

  /** Fire and forget; batched with the other work of this turn. Unknown or released ids are ignored. */
  releaseLeases(items: readonly LeaseRef[]): void {
    if (this.#closed) return
    for (const { shard, leaseId } of items) {
      if (leaseId === 0 || !(shard >= 0 && shard < this.#shards.length)) continue
      this.#enqueue(shard, { op: 'releaseLease', leaseId }, undefined)
    }
  }

  listOffsets(items: readonly ListOffsetsItem[]): Promise<Outcome<OffsetAndTimestamp>[]> {
    return this.#each(items, (i) => this.#sendFor(i, {
      op: 'listOffsets', topic: i.topic, partition: i.partition, timestamp: i.timestamp, ...(i.isolation === undefined ? {} : { isolation: i.isolation }),
    }))
  }

  /** DeleteRecords: raises the log start offset; the value is the new log start offset. */
  deleteRecords(items: readonly DeleteRecordsItem[]): Promise<Outcome<number>[]> {
    return this.#each(items, (i) => this.#sendFor(i, { op: 'deleteRecords', topic: i.topic, partition: i.partition, offset: i.offset }))
  }

  /**
   * Runs one log cleaner pass over each partition now (see LogCleaner.clean); partitions whose
   * cleanup.policy does not include compact answer reason 'not-compacted'. Other work of the shard goes
   * on while a pass runs.
   */
  compact(items: readonly CompactItem[]): Promise<Outcome<CleanResult>[]> {
    return this.#each(items, (i) => this.#sendFor(i, { op: 'compact', topic: i.topic, partition: i.partition, ...(i.force === undefined ? {} : { force: i.force }) }))
  }

  /** States of the given partitions (unknown ones are left out), or of every partition, sorted. */
  async states(items?: readonly TopicPartition[]): Promise<PartitionState[]> {
    if (items !== undefined) {
      const outcomes = await this.#each(items, (i) => this.#sendFor(i, { op: 'state', topic: i.topic, partition: i.partition }))
      return outcomes.flatMap((o) => (o.ok ? [o.value as PartitionState] : []))
    }
    const perShard = await Promise.all(this.#shards.map((_, shard) => this.#send({ op: 'states' }, shard)))
    const all: PartitionState[] = []
    for (const r of perShard) {
      if (r.ok) all.push(...(r.value as PartitionState[]))
      else this.#logger.error({ errorCode: r.errorCode, message: r.message }, 'shard states failed')
    }
    return all.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
  }

  /** What each shard reports about itself (whether it recovered, thread restarts), in shard order. */
  async shardInfo(): Promise<Outcome<ShardInfo>[]> {
    const results = await Promise.all(this.#shards.map((_, shard) => this.#send({ op: 'shardInfo' }, shard)))
    return results.map((r) => this.#outcome<ShardInfo>(r))
  }

  /**
   * Test hook: makes a shard's worker thread exit (SKEIN_TEST_HOOKS=1 only). Piscina starts a
   * replacement, which reopens and recovers the shard's partitions on its next batch.
   */
  async crashShardForTest(shard: number): Promise<void> {
    if (process.env.SKEIN_TEST_HOOKS !== '1') throw new Error('crashShardForTest needs SKEIN_TEST_HOOKS=1')
    if (this.#shards[shard] === undefined || this.#shards[shard].inline) throw new Error(`crashShardForTest needs a worker shard; shard ${shard} is not one`)
    const r = await this.#send({ op: 'crashForTest' }, shard)
    // A crash fails the batch as a whole (UNKNOWN_SERVER_ERROR); anything else means it did not crash.
    if (r.ok || r.errorCode !== ErrorCode.UNKNOWN_SERVER_ERROR) throw new Error(`shard ${shard} did not crash: ${r.ok ? 'ok' : r.message}`)
  }

  /**
   * Sends everything still queued, closes every shard (flush, checkpoints, fds), stops the workers and,
   * only if every shard closed cleanly, writes the clean-shutdown marker. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    try {
      const results = await Promise.all(this.#shards.map((_, shard) => this.#send({ op: 'close' }, shard)))
      this.#closed = true
      await Promise.allSettled(this.#shards.map((s) => s.destroy()))
      const failed = results.filter((r): r is Extract<OpResult, { ok: false }> => !r.ok)
      if (failed.length > 0) throw new Error(`shards did not close cleanly: ${failed.map((f) => f.message).join('; ')}`)
      writeCleanShutdownMarker(this.dataDir)
    } finally {
      unlockDataDir(this.#lockFd)
      this.#lockFd = -1
    }
  }

  async #each<I, T>(items: readonly I[], send: (item: I) => Promise<OpResult>): Promise<Outcome<T>[]> {
    const results = await Promise.all(items.map(send))
    return results.map((r) => this.#outcome<T>(r))
  }

  #outcome<T>(r: OpResult): Outcome<T> {
    if (r.ok) return { ok: true, value: r.value as T }
    if (r.unexpected === true) this.#logger.error({ errorCode: r.errorCode, error: r.message }, 'unexpected shard error')
    return { ok: false, errorCode: r.errorCode, message: r.message }
  }

  #reject(errorCode: ErrorCode, message: string): Promise<OpResult> {
    return Promise.resolve({ ok: false, errorCode, message: `${errorName(errorCode)}: ${message}` })
  }

  #sendFor(tp: TopicPartition, op: ShardOp): Promise<OpResult> {
    if (!isPartitionId(tp.partition)) return this.#reject(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `${tp.topic}-${tp.partition}`)
    return this.#send(op, this.shardOf(tp.topic, tp.partition))
  }

  #send(op: ShardOp, shard = this.shardOf((op as TopicPartition).topic, (op as TopicPartition).partition)): Promise<OpResult> {
    if (this.#closed || (this.#closing !== undefined && op.op !== 'close')) {
      return this.#reject(ErrorCode.KAFKA_STORAGE_ERROR, 'the shard router is closed')
    }
    return new Promise((resolve) => this.#enqueue(shard, op, resolve))
  }

  #enqueue(shard: number, op: ShardOp, resolve: ((r: OpResult) => void) | undefined): void {
    this.#queues[shard]!.push({ op, resolve })
    if (!this.#flushScheduled) {
      this.#flushScheduled = true
      setImmediate(() => this.#flushNow())
    }
  }

  /** Sends each non-empty shard queue as one batch. */
  #flushNow(): void {
    this.#flushScheduled = false
    const batches = this.#queues.map((q, shard) => {
      this.#queues[shard] = []
      return q
    })
    // Count how many pending appends for worker shards share each ArrayBuffer: only a sole owner may be
    // transferred. Inline shards and shared memory need no transfer, so the map exists only when some
    // append does.
    let owners: Map<ArrayBufferLike, number> | null = null
    for (let shard = 0; shard < batches.length; shard++) {
      if (this.#shards[shard]!.inline) continue
      for (const p of batches[shard]!) {
        if (p.op.op !== 'append') continue
        const ab = p.op.records.buffer
        if (ab instanceof SharedArrayBuffer) continue
        owners ??= new Map()
        owners.set(ab, (owners.get(ab) ?? 0) + 1)
      }
    }
    for (let shard = 0; shard < batches.length; shard++) {
      const batch = batches[shard]!
      if (batch.length === 0) continue
      const backend = this.#shards[shard]!
      const transferList: ArrayBuffer[] = []
      const ops = batch.map((p) => {
        if (backend.inline || p.op.op !== 'append') return p.op
        const records = p.op.records
        // Shared memory: structured clone passes a view of it, not a copy (the caller keeps it alive).
        if (records.buffer instanceof SharedArrayBuffer) return p.op
        if (exclusivelyOwned(records) && owners?.get(records.buffer) === 1) {
          transferList.push(records.buffer as ArrayBuffer)
          return p.op
        }
        // Structured clone would copy the whole underlying ArrayBuffer (a pool slab or a request frame);
        // copy just these bytes into a buffer of our own and transfer that.
        const copy = new Uint8Array(records.byteLength)
        copy.set(records)
        transferList.push(copy.buffer)
        return { ...p.op, records: copy }
      })
      this.messageCounts[shard]!++
      backend.run(ops, transferList).then(
        (results) => {
          for (let i = 0; i < batch.length; i++) batch[i]!.resolve?.(results[i] ?? { ok: false, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, message: 'missing result' })
        },
        (err: unknown) => {
          this.#logger.error({ err, shard }, 'shard batch failed')
          const message = `${errorName(ErrorCode.UNKNOWN_SERVER_ERROR)}: shard ${shard} failed: ${err instanceof Error ? err.message : String(err)}`
          for (const p of batch) p.resolve?.({ ok: false, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, message })
        },
      )
    }
  }
}
