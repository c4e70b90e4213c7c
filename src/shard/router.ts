// ShardRouter: the main thread's door to the partition shards. Each partition has exactly one owner
// shard (shardOf), each shard is one thread (a Piscina pool pinned to a single worker) or, with
// ioThreads=0, the main thread itself. Calls made in the same event-loop turn are queued per shard and
// sent as ONE message per shard (flushed from setImmediate, after the turn's I/O callbacks), so a fetch
// or produce touching many partitions costs one round trip per shard, not per partition.
//
// What can be asked of a shard is the operation table (operations.ts): call(name, items) runs a
// partition operation once per item on the item's owner shard, callShard(shard, name, args) a shard
// operation; the named methods (append, read, listOffsets, ...) are thin wrappers over these two.
//
// A shard thread takes several batches at once (concurrentTasksPerWorker): every operation but one runs
// to completion before the thread looks at the next message, so batches still apply in the order sent;
// the exception, compact (a log cleaner pass that yields between slices), must not hold back the
// appends and reads sent after it.
//
// Ownership of record buffers (operations with carriesRecords: append) passes to the router. Records in
// shared memory (a Produce frame from the frame pool, see frame-pool.ts) cross to the worker as they are:
// the router pins their slab until the shard has answered, so the memory is not reused while a shard
// reads it. A Buffer that exclusively owns its ArrayBuffer is transferred to the worker (the caller's
// Buffer becomes empty); any other is copied.

import { existsSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { Piscina } from 'piscina'
import { ErrorCode, errorName } from '../domain/errors.js'
import type { Outcome } from '../domain/outcome.js'
import { createLogger, type Logger } from '../observability/logger.js'
import { DataDirectory } from '../storage/index.js'
import type { AppendResult, LogConfig, OffsetAndTimestamp, PartitionState, ProducerDescription, TopicPartition } from '../storage/types.js'
import type { CleanResult } from '../storage/index.js'
import { ShardExecutor } from './executor.js'
import { pinFrame, unpinFrame } from './frame-pool.js'
import { shardOf } from './hash.js'
import { DEFAULT_CLEANER_CONFIG, DEFAULT_PRODUCER_EXPIRATION, type ShardProducerExpiration } from './messages.js'
import type { OpResult, ShardBatch, ShardCleanerConfig, ShardInfo, ShardReply, ShardWorkerData } from './messages.js'
import {
  SHARD_OPERATIONS,
  type AnyPartitionOperation, type AppendItem, type CompactItem, type CreatePartitionItem, type DeleteRecordsItem, type ListOffsetsItem, type OpArgs, type OpValue,
  type PartitionOpName, type ReadItem, type ShardOpName, type ShardReadResult, type TxnMarkerItem, type UpdateConfigItem,
} from './operations.js'

export type {
  AppendItem, CompactItem, CreatePartitionItem, DeleteRecordsItem, ListOffsetsItem, ReadItem, ShardReadResult, TxnMarkerItem, UpdateConfigItem,
} from './operations.js'

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

export type { Outcome }

export interface LeaseRef {
  shard: number
  leaseId: number
}

const LONG_MAX = 2 ** 63

/** One shard as the router sees it: a thread (Piscina) or the inline executor. */
interface ShardBackend {
  readonly inline: boolean
  run(ops: string[], args: unknown[], transferList: ArrayBuffer[]): Promise<OpResult[]>
  destroy(): Promise<void>
}

class InlineShard implements ShardBackend {
  readonly inline = true
  readonly #executor: ShardExecutor

  constructor(executor: ShardExecutor) {
    this.#executor = executor
  }

  run(ops: string[], args: unknown[]): Promise<OpResult[]> {
    return this.#executor.execute(ops, args)
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

  async run(ops: string[], args: unknown[], transferList: ArrayBuffer[]): Promise<OpResult[]> {
    const reply = await this.#pool.run({ ops, args }, { transferList })
    return reply.results
  }

  destroy(): Promise<void> {
    return this.#pool.destroy()
  }
}

/** One queued operation (the name and arguments of a ShardOp, not yet sent). */
interface Pending {
  op: string
  args: unknown
  /** The operation's record buffer (carriesRecords), to be transferred or copied to a worker. */
  records: Uint8Array | undefined
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
  readonly #directory: DataDirectory

  private constructor(directory: DataDirectory, ioThreads: number, shards: ShardBackend[], logger: Logger) {
    this.#directory = directory
    this.dataDir = directory.path
    this.ioThreads = ioThreads
    this.#shards = shards
    this.#queues = shards.map(() => [])
    this.messageCounts = shards.map(() => 0)
    this.#logger = logger
  }

  /**
   * Opens the data directory (its lock and clean-shutdown marker: DataDirectory), then every shard
   * (each recovers the partitions it owns). Rejects when the directory is in use or a shard cannot open
   * its partitions.
   */
  static async start(opts: ShardRouterOptions): Promise<ShardRouter> {
    if (!Number.isInteger(opts.ioThreads) || opts.ioThreads < 0) throw new RangeError(`ioThreads must be an integer >= 0, got ${opts.ioThreads}`)
    // One owner per data directory: a second broker (or library user) on the same directory stops here,
    // before it recovers partitions or touches the clean-shutdown marker.
    const directory = DataDirectory.open(opts.dataDir)
    try {
      return await ShardRouter.#open(opts, directory)
    } catch (err) {
      directory.close(false)
      throw err
    }
  }

  static async #open(opts: ShardRouterOptions, directory: DataDirectory): Promise<ShardRouter> {
    const logger = opts.logger ?? createLogger()
    const dataDir = directory.path
    const cleanShutdown = directory.cleanShutdown
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
      return new ShardRouter(directory, 0, shards, logger)
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
    const router = new ShardRouter(directory, opts.ioThreads, shards, logger)
    // An empty batch makes each worker load its module, i.e. open and recover its partitions.
    const ready = await Promise.allSettled(shards.map((s) => s.run([], [], [])))
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

  /**
   * Runs partition operation `op` of the operation table once per item, each on the shard that owns the
   * item's partition; answers one Outcome per item, in order, never a rejection for one bad item. Items
   * are sent as they are: do not change one until it is answered.
   */
  call<K extends PartitionOpName>(op: K, items: readonly OpArgs<K>[]): Promise<Outcome<OpValue<K>>[]> {
    const operation: AnyPartitionOperation = SHARD_OPERATIONS[op]
    const sent = new Array<Promise<OpResult>>(items.length)
    for (let i = 0; i < items.length; i++) sent[i] = this.#sendToOwner(op, operation, items[i]!)
    return this.#outcomes(sent)
  }

  /** Runs shard operation `op` of the operation table on one shard. */
  async callShard<K extends ShardOpName>(shard: number, op: K, args: OpArgs<K>): Promise<Outcome<OpValue<K>>> {
    if (!(Number.isInteger(shard) && shard >= 0 && shard < this.#shards.length)) return this.#outcome(await this.#reject(ErrorCode.INVALID_REQUEST, `no shard ${shard}`))
    return this.#outcome(await this.#send(shard, op, args, undefined))
  }

  createPartitions(items: readonly CreatePartitionItem[]): Promise<Outcome<PartitionState>[]> {
    return this.call('create', items)
  }

  deletePartitions(items: readonly TopicPartition[]): Promise<Outcome<null>[]> {
    return this.call('delete', items)
  }

  updateConfigs(items: readonly UpdateConfigItem[]): Promise<Outcome<null>[]> {
    return this.call('updateConfig', items)
  }

  /** Appends record batches. The router takes ownership of each `records` Buffer (see the file header). */
  append(items: readonly AppendItem[]): Promise<Outcome<AppendResult>[]> {
    return this.call('append', items)
  }

  /** Reads file regions; each non-empty result pins its segments until releaseLeases({shard, leaseId}). */
  read(items: readonly ReadItem[]): Promise<Outcome<ShardReadResult>[]> {
    return this.call('read', items)
  }

  /**
   * Appends one COMMIT or ABORT control batch per item (Kafka's EndTransactionMarker), closing the
   * producer's open transaction on that partition: an abort is recorded in the .txnindex and the last
   * stable offset moves on. A marker for a producer with no open transaction there is written too (as
   * Kafka does). Errors: INVALID_PRODUCER_EPOCH when the producer has a newer epoch on the partition,
   * TRANSACTION_COORDINATOR_FENCED when a newer coordinator epoch wrote a marker there.
   */
  writeTxnMarkers(items: readonly TxnMarkerItem[]): Promise<Outcome<{ offset: number }>[]> {
    return this.call('writeTxnMarker', items)
  }

  /** The producers with state on each partition, by producer id (DescribeProducers). */
  describeProducers(items: readonly TopicPartition[]): Promise<Outcome<ProducerDescription[]>[]> {
    return this.call('describeProducers', items)
  }

  /** Fire and forget; batched with the other work of this turn. Unknown or released ids are ignored. */
  releaseLeases(items: readonly LeaseRef[]): void {
    if (this.#closed) return
    for (const { shard, leaseId } of items) {
      if (leaseId === 0 || !(shard >= 0 && shard < this.#shards.length)) continue
      this.#enqueue(shard, 'releaseLease', { leaseId } satisfies OpArgs<'releaseLease'>, undefined, undefined)
    }
  }

  /** ListOffsets (PartitionLog.fetchOffsetByTimestamp). */
  listOffsets(items: readonly ListOffsetsItem[]): Promise<Outcome<OffsetAndTimestamp>[]> {
    return this.call('listOffsets', items)
  }

  /** DeleteRecords: raises the log start offset; the value is the new log start offset. */
  deleteRecords(items: readonly DeleteRecordsItem[]): Promise<Outcome<number>[]> {
    return this.call('deleteRecords', items)
  }

  /**
   * Runs one log cleaner pass over each partition now (see LogCleaner.clean); partitions whose
   * cleanup.policy does not include compact answer reason 'not-compacted'. Other work of the shard goes
   * on while a pass runs.
   */
  compact(items: readonly CompactItem[]): Promise<Outcome<CleanResult>[]> {
    return this.call('compact', items)
  }

  /** States of the given partitions (unknown ones are left out), or of every partition, sorted. */
  async states(items?: readonly TopicPartition[]): Promise<PartitionState[]> {
    if (items !== undefined) {
      const outcomes = await this.call('state', items)
      return outcomes.flatMap((o) => (o.ok ? [o.value] : []))
    }
    const perShard = await Promise.all(this.#shards.map((_, shard) => this.callShard(shard, 'states', null)))
    const all: PartitionState[] = []
    for (const r of perShard) {
      if (r.ok) all.push(...r.value)
      else this.#logger.error({ errorCode: r.errorCode, message: r.message }, 'shard states failed')
    }
    return all.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
  }

  /** What each shard reports about itself (whether it recovered, thread restarts), in shard order. */
  shardInfo(): Promise<Outcome<ShardInfo>[]> {
    return Promise.all(this.#shards.map((_, shard) => this.callShard(shard, 'shardInfo', null)))
  }

  /**
   * Sends everything still queued, closes every shard (flush, checkpoints, fds), stops the workers and
   * releases the data directory, with the clean-shutdown marker only if every shard closed cleanly.
   * Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close()
    return this.#closing
  }

  async #close(): Promise<void> {
    let cleanly = false
    try {
      // Sent past the closing check of #send: after everything already queued, in the same turn's message.
      const results = await Promise.all(this.#shards.map((_, shard) => new Promise<OpResult>((resolve) => this.#enqueue(shard, 'close', null, undefined, resolve))))
      this.#closed = true
      await Promise.allSettled(this.#shards.map((s) => s.destroy()))
      const failed = results.filter((r): r is Extract<OpResult, { ok: false }> => !r.ok)
      if (failed.length > 0) throw new Error(`shards did not close cleanly: ${failed.map((f) => f.message).join('; ')}`)
      cleanly = true
    } finally {
      this.#directory.close(cleanly)
    }
  }

  async #outcomes<T>(sent: Promise<OpResult>[]): Promise<Outcome<T>[]> {
    const results = await Promise.all(sent)
    const outcomes = results as Outcome<T>[]
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!
      if (!r.ok) outcomes[i] = this.#outcome<T>(r)
    }
    return outcomes
  }

  /** A successful result already is an Outcome; a failure loses its internal `unexpected` flag (logged). */
  #outcome<T>(r: OpResult): Outcome<T> {
    if (r.ok) return r as Outcome<T>
    if (r.unexpected === true) this.#logger.error({ errorCode: r.errorCode, error: r.message }, 'unexpected shard error')
    if (r.recordErrors !== undefined) return { ok: false, errorCode: r.errorCode, message: r.message, recordErrors: r.recordErrors }
    return { ok: false, errorCode: r.errorCode, message: r.message }
  }

  #reject(errorCode: ErrorCode, message: string): Promise<OpResult> {
    return Promise.resolve({ ok: false, errorCode, message: `${errorName(errorCode)}: ${message}` })
  }

  #sendToOwner(op: string, operation: AnyPartitionOperation, args: TopicPartition): Promise<OpResult> {
    if (!isPartitionId(args.partition)) return this.#reject(operation.invalidPartition ?? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `invalid partition ${args.topic}-${args.partition}`)
    const shard = this.shardOf(args.topic, args.partition)
    if (operation.carriesRecords !== true) return this.#send(shard, op, args, undefined)
    const records = (args as TopicPartition & { records: Uint8Array }).records
    const sent = this.#send(shard, op, args, records)
    // Frame-pool memory stays pinned until the shard has answered: whatever the caller does meanwhile
    // (an acks=0 produce need not wait), the slab is not reused under the shard's reads and writes.
    if (!pinFrame(records)) return sent
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
  }

  #send(shard: number, op: string, args: unknown, records: Uint8Array | undefined): Promise<OpResult> {
    if (this.#closed || this.#closing !== undefined) return this.#reject(ErrorCode.KAFKA_STORAGE_ERROR, 'the shard router is closed')
    return new Promise((resolve) => this.#enqueue(shard, op, args, records, resolve))
  }

  #enqueue(shard: number, op: string, args: unknown, records: Uint8Array | undefined, resolve: ((r: OpResult) => void) | undefined): void {
    this.#queues[shard]!.push({ op, args, records, resolve })
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
    // Count how many pending record buffers for worker shards share each ArrayBuffer: only a sole owner
    // may be transferred. Inline shards and shared memory need no transfer, so the map exists only when
    // some append does.
    let owners: Map<ArrayBufferLike, number> | null = null
    for (let shard = 0; shard < batches.length; shard++) {
      if (this.#shards[shard]!.inline) continue
      for (const p of batches[shard]!) {
        if (p.records === undefined) continue
        const ab = p.records.buffer
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
      const ops = new Array<string>(batch.length)
      const args = new Array<unknown>(batch.length)
      for (let i = 0; i < batch.length; i++) {
        const p = batch[i]!
        ops[i] = p.op
        args[i] = p.args
        const records = p.records
        // Shared memory: structured clone passes a view of it, not a copy (the caller keeps it alive).
        if (backend.inline || records === undefined || records.buffer instanceof SharedArrayBuffer) continue
        if (exclusivelyOwned(records) && owners?.get(records.buffer) === 1) {
          transferList.push(records.buffer as ArrayBuffer)
          continue
        }
        // Structured clone would copy the whole underlying ArrayBuffer (a pool slab or a request frame);
        // copy just these bytes into a buffer of our own and transfer that.
        const copy = new Uint8Array(records.byteLength)
        copy.set(records)
        transferList.push(copy.buffer)
        args[i] = { ...(p.args as object), records: copy }
      }
      this.messageCounts[shard]!++
      backend.run(ops, args, transferList).then(
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
