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
// A shard thread takes several batches at once (concurrentTasksPerWorker), and an inline shard is handed
// the next batch while one waits on I/O (a truncation's fsyncs): the executor still applies the
// operations in the order sent, a batch starting once those before it are done; only compact (a log
// cleaner pass that yields between slices) does not hold back the appends and reads sent after it.
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
import { inTimedChunks } from '../domain/main-thread-slices.js'
import type { Outcome } from '../domain/outcome.js'
import { createLogger, type Logger } from '../observability/logger.js'
import { DataDirectory, isDiskFull, probeLogDirSpace, roomForPartitions, type LogDirSpace } from '../storage/index.js'
import { openFilesPerThread } from '../storage/open-files.js'
import { STORAGE_DEFAULTS } from '../config/log-config.js'
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
  /** The first data directory (used when dataDirs is not given). */
  dataDir: string
  /**
   * Every data directory (log.dirs, Kafka's JBOD); default [dataDir]. New partitions go to the one with
   * the fewest partitions; a directory whose I/O fails goes offline with its partitions (onLogDirFailure).
   */
  dataDirs?: readonly string[]
  /**
   * Called once per data directory that fails (the router has taken it offline on every shard), and again
   * when a directory offline for lack of space turns out to have failed for good (a reopen's I/O error).
   */
  onLogDirFailure?: (dir: string) => void
  /** Called when a directory that a full disk took offline is back on every shard, its partitions reopened. */
  onLogDirRecovered?: (dir: string) => void
  /**
   * How often a data directory that a full disk (ENOSPC, EDQUOT, with diskFullFailsLogDir) took offline is
   * checked for room again (log.dir.failure.retry.interval.ms; probeLogDirSpace); once there is, its
   * partitions are reopened and onLogDirRecovered is called. 0 (the default): never, as Kafka.
   */
  logDirFailureRetryIntervalMs?: number
  /** The free space such a directory needs to come back (log.dir.failure.retry.min.free.bytes); default 1 GiB. */
  logDirFailureRetryMinFreeBytes?: number
  /**
   * Whether a full disk (ENOSPC) takes its directory offline like any I/O error (Kafka's behaviour, for a
   * cluster: other replicas take over) or only refuses the writes that do not fit (default false).
   */
  diskFullFailsLogDir?: boolean
  /** How often every online data directory is probed for writability (ms; default 5000, 0: never). */
  logDirProbeIntervalMs?: number
  /** Number of shard worker threads; 0 runs every partition inline on the calling thread. */
  ioThreads: number
  defaults: LogConfig
  /** log.retention.check.interval.ms (default 300000). */
  retentionCheckIntervalMs?: number
  /** log.flush.scheduler.interval.ms (default Long.MAX: never). */
  flushSchedulerIntervalMs?: number
  /**
   * The high watermark mode partitions open in: following the LEO on append (a single broker, default
   * true), or set by the replication layer (a cluster; it switches partitions whose ISR is the leader alone).
   */
  highWatermarkFollowsLeo?: boolean
  /** replica.high.watermark.checkpoint.interval.ms (default 5000). */
  highWatermarkCheckpointIntervalMs?: number
  /** log.flush.offset.checkpoint.interval.ms: how often recovery checkpoints are written (default 60000). */
  checkpointIntervalMs?: number
  /**
   * The log cleaner (log.cleaner.* broker configs); default Kafka's. dedupeBufferBytes is the total
   * (log.cleaner.dedupe.buffer.size), divided evenly among the shards.
   */
  cleaner?: Partial<ShardCleanerConfig>
  /** producer.id.expiration.ms / .check.interval.ms for idempotent producer state; default Kafka's. */
  producerExpiration?: Partial<ShardProducerExpiration>
  /**
   * log.segment.open.files.max: segment files (descriptors and index mappings) open at most in the
   * process, capped at half the open-file limit and divided among the shards (storage/open-files.ts).
   * Default the config table's.
   */
  maxOpenFiles?: number
  /**
   * Where unexpected (non-Kafka) errors and the partitions recovered at start are logged; worker shards
   * log at its level. Default: a logger on stdout at level warn (SKEIN_LOG_LEVEL overrides).
   */
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
  /** The first data directory (the broker keeps its own files there: cluster metadata, producer ids). */
  readonly dataDir: string
  /** Every data directory, absolute, in log.dirs order. */
  readonly dataDirs: readonly string[]
  /** Data directories that failed (on every shard). */
  readonly offlineDirs = new Set<string>()
  /**
   * Offline data directories that a full disk took offline, while log.dir.failure.retry.interval.ms is
   * on: they are checked for room and come back by themselves (the others stay offline until a restart).
   */
  readonly offlineForSpace = new Set<string>()
  #onLogDirFailure: ((dir: string) => void) | undefined
  #onLogDirRecovered: ((dir: string) => void) | undefined
  #probeTimer: NodeJS.Timeout | undefined
  #retryTimer: NodeJS.Timeout | undefined
  #retryMinFreeBytes = 1024 * 1024 * 1024
  /** When each offline directory went offline (ms), for the recovery's log line. */
  readonly #offlineSince = new Map<string, number>()
  /** Changes of the directories' states, one at a time (a check must not undo a reopen that ends meanwhile). */
  #dirWork: Promise<unknown> = Promise.resolve()
  #retrying = false
  /** Moves between data directories under way (AlterReplicaLogDirs), by partition key, and their target. */
  readonly #moves = new Map<string, string>()
  /** Messages (batches) sent to each shard so far; tests use it to check batching. */
  readonly messageCounts: number[]
  readonly #shards: ShardBackend[]
  readonly #queues: Pending[][]
  readonly #logger: Logger
  #flushScheduled = false
  #closed = false
  #closing: Promise<void> | undefined
  readonly #directories: DataDirectory[]

  private constructor(directories: DataDirectory[], ioThreads: number, shards: ShardBackend[], logger: Logger) {
    this.#directories = directories
    this.dataDirs = directories.map((d) => d.path)
    this.dataDir = this.dataDirs[0]!
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
    const paths = [...new Set((opts.dataDirs ?? [opts.dataDir]).map((d) => resolve(d)))]
    if (paths.length === 0) throw new Error('no data directory given')
    // One owner per data directory: a second broker (or library user) on the same directory stops here,
    // before it recovers partitions or touches the clean-shutdown marker.
    const directories: DataDirectory[] = []
    try {
      for (const p of paths) directories.push(DataDirectory.open(p))
      const router = await ShardRouter.#open(opts, directories)
      router.#onLogDirFailure = opts.onLogDirFailure
      router.#onLogDirRecovered = opts.onLogDirRecovered
      const probeMs = opts.logDirProbeIntervalMs ?? 5000
      if (probeMs > 0) {
        router.#probeTimer = setInterval(() => void router.checkLogDirs(true), probeMs)
        router.#probeTimer.unref()
      }
      const retryMs = opts.logDirFailureRetryIntervalMs ?? 0
      if (opts.logDirFailureRetryMinFreeBytes !== undefined) router.#retryMinFreeBytes = opts.logDirFailureRetryMinFreeBytes
      if (retryMs > 0 && (opts.diskFullFailsLogDir ?? false)) {
        router.#retryTimer = setInterval(() => void router.retryFullLogDirs(), retryMs)
        router.#retryTimer.unref()
      }
      return router
    } catch (err) {
      for (const d of directories) d.close(false)
      throw err
    }
  }

  static async #open(opts: ShardRouterOptions, directories: DataDirectory[]): Promise<ShardRouter> {
    // A library user who gives no logger hears of warnings and errors only (SKEIN_LOG_LEVEL says otherwise).
    const logger = opts.logger ?? createLogger({ level: process.env.SKEIN_LOG_LEVEL ?? 'warn' })
    const dataDir = directories[0]!.path
    const dataDirs = directories.map((d) => d.path)
    // A partition trusts a clean shutdown only when every directory had one (one marker per directory).
    const cleanShutdown = directories.every((d) => d.cleanShutdown)
    const retentionCheckIntervalMs = opts.retentionCheckIntervalMs ?? 300_000
    const flushSchedulerIntervalMs = opts.flushSchedulerIntervalMs ?? LONG_MAX
    const highWatermarkFollowsLeo = opts.highWatermarkFollowsLeo ?? true
    const diskFullFailsLogDir = opts.diskFullFailsLogDir ?? false
    const checkpointIntervalMs = opts.checkpointIntervalMs ?? 60_000
    const highWatermarkCheckpointIntervalMs = opts.highWatermarkCheckpointIntervalMs ?? 5000
    const producerExpiration: ShardProducerExpiration = { ...DEFAULT_PRODUCER_EXPIRATION, ...opts.producerExpiration }
    const shardCount = Math.max(1, opts.ioThreads)
    const shards: ShardBackend[] = []
    const cleanerTotal = { ...DEFAULT_CLEANER_CONFIG, ...opts.cleaner }
    const cleaner: ShardCleanerConfig = { ...cleanerTotal, dedupeBufferBytes: Math.floor(cleanerTotal.dedupeBufferBytes / shardCount) }
    const maxOpenFiles = openFilesPerThread(opts.maxOpenFiles ?? STORAGE_DEFAULTS.segmentOpenFilesMax, shardCount)

    if (opts.ioThreads === 0) {
      const executor = ShardExecutor.open({
        dataDir, dataDirs, defaults: opts.defaults, shardIndex: 0, shardCount: 1, cleanShutdown, retentionCheckIntervalMs, flushSchedulerIntervalMs,
        highWatermarkFollowsLeo, diskFullFailsLogDir, checkpointIntervalMs, highWatermarkCheckpointIntervalMs, cleaner, producerExpiration, maxOpenFiles, logger,
        onBackgroundError: (err, task) => logger.error({ err, task }, 'shard background task failed'),
      })
      shards.push(new InlineShard(executor))
      const inline = new ShardRouter(directories, 0, shards, logger)
      await inline.#logLoad(cleanShutdown)
      return inline
    }

    const workerFile = opts.workerFile ?? defaultWorkerFile()
    if (!existsSync(workerFile)) throw new Error(`shard worker module ${workerFile} not found; build it with \`npx tsc -p tsconfig.json\``)
    for (let shardIndex = 0; shardIndex < shardCount; shardIndex++) {
      const workerData: ShardWorkerData = {
        dataDir, dataDirs, defaults: opts.defaults, shardIndex, shardCount, cleanShutdown, starts: new Int32Array(new SharedArrayBuffer(4)),
        retentionCheckIntervalMs, flushSchedulerIntervalMs, highWatermarkFollowsLeo, diskFullFailsLogDir, checkpointIntervalMs, highWatermarkCheckpointIntervalMs, cleaner, producerExpiration, maxOpenFiles,
        logLevel: logger.level,
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
    const router = new ShardRouter(directories, opts.ioThreads, shards, logger)
    // An empty batch makes each worker load its module, i.e. open and recover its partitions.
    const ready = await Promise.allSettled(shards.map((s) => s.run([], [], [])))
    const failed = ready.find((r) => r.status === 'rejected')
    if (failed !== undefined) {
      await Promise.allSettled(shards.map((s) => s.destroy()))
      throw new Error(`a shard failed to open its partitions: ${String((failed as PromiseRejectedResult).reason)}`)
    }
    await router.#logLoad(cleanShutdown)
    return router
  }

  /** One summary line of what the shards opened and recovered (each recovered partition has its own line). */
  async #logLoad(cleanShutdown: boolean): Promise<void> {
    const total = { partitions: 0, recovered: 0, bytesTruncated: 0, segmentsDropped: 0, ms: 0 }
    for (const info of await this.shardInfo()) {
      if (!info.ok) continue
      const l = info.value.load
      total.partitions += l.partitions
      total.recovered += l.recovered
      total.bytesTruncated += l.bytesTruncated
      total.segmentsDropped += l.segmentsDropped
      total.ms = Math.max(total.ms, l.ms)
    }
    const how = cleanShutdown ? 'after a clean shutdown' : 'after an unclean shutdown (no clean-shutdown marker): logs re-validated from their recovery points'
    const repaired = total.recovered === 0 ? '' : `; ${total.recovered} recovered, ${total.bytesTruncated} bytes truncated, ${total.segmentsDropped} segments dropped`
    this.#logger.info({ dataDirs: this.dataDirs, cleanShutdown, ...total }, `loaded ${total.partitions} partitions in ${total.ms} ms ${how}${repaired}`)
  }

  /** How many more new partitions the online data directories' filesystems hold (free inodes and blocks). */
  roomForPartitions(): number {
    let room = 0
    for (const d of this.dataDirs) if (!this.offlineDirs.has(d)) room += roomForPartitions(d)
    return room
  }

  /**
   * Collects the data directories the shards found failed (an I/O error of a partition, or with probe a
   * probe file each shard writes) and takes each offline on every shard, then tells onLogDirFailure.
   * Answers the directories newly offline.
   */
  checkLogDirs(probe = false): Promise<string[]> {
    return this.#serialized(() => this.#checkLogDirs(probe))
  }

  #serialized<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#dirWork.then(work, work)
    this.#dirWork = next.catch(() => {})
    return next
  }

  async #checkLogDirs(probe: boolean): Promise<string[]> {
    if (this.#closed || this.#closing !== undefined) return []
    const found = new Set<string>()
    const answers = await Promise.all(this.#shards.map((_, shard) => (probe ? this.callShard(shard, 'probeLogDirs', null) : this.callShard(shard, 'logDirStatus', null))))
    for (const a of answers) {
      if (!a.ok) continue
      const dirs = Array.isArray(a.value) ? (a.value as string[]) : (a.value as { offline: string[] }).offline
      for (const d of dirs) if (!this.offlineDirs.has(d)) found.add(d)
    }
    // Which shard took which directory offline and why (a probe that found nothing new may still follow
    // an I/O error a shard met on its own).
    const status = probe || found.size > 0 ? await Promise.all(this.#shards.map((_, shard) => this.callShard(shard, 'logDirStatus', null))) : []
    for (const a of status) if (a.ok) for (const d of a.value.offline) if (!this.offlineDirs.has(d)) found.add(d)
    const newly = [...found]
    for (const d of newly) {
      // Lack of space only when every shard that met the failure met a full disk (an I/O error anywhere is for good).
      const reports = status.filter((a) => a.ok && a.value.offline.includes(d)).map((a) => (a.ok ? a.value.offlineForSpace.includes(d) : false))
      const forSpace = reports.length > 0 && reports.every((r) => r)
      this.offlineDirs.add(d)
      this.#offlineSince.set(d, Date.now())
      await Promise.all(this.#shards.map((_, shard) => this.callShard(shard, 'markLogDirOffline', { logDir: d, diskFull: forSpace })))
      for (const [k, target] of this.#moves) if (target === d) this.#moves.delete(k)
      const fields = { dir: d, offline: [...this.offlineDirs], of: this.dataDirs.length }
      if (forSpace && this.#retryTimer !== undefined) {
        this.offlineForSpace.add(d)
        this.#logger.warn(
          { ...fields, minFreeBytes: this.#retryMinFreeBytes },
          `log directory ${d} is full: offline on this broker until it has room again (checked every log.dir.failure.retry.interval.ms; no restart needed)`,
        )
      } else {
        this.#logger.error(fields, `log directory ${d} is offline${forSpace ? ' (full; log.dir.failure.retry.interval.ms=0: until a restart)' : ' until a restart'}`)
      }
      this.#onLogDirFailure?.(d)
    }
    return newly
  }

  /**
   * Checks each directory offline for lack of space (offlineForSpace) for room (probeLogDirSpace) and
   * reopens those that have it on every shard (their partitions recover as after an unclean stop), then
   * tells onLogDirRecovered. A reopen that fails takes the directory offline again on every shard: for
   * good when the error was not a full disk. Runs by itself every log.dir.failure.retry.interval.ms;
   * answers the directories back online.
   */
  async retryFullLogDirs(): Promise<string[]> {
    if (this.#retrying || this.offlineForSpace.size === 0) return []
    this.#retrying = true
    try {
      const back: string[] = []
      for (const d of [...this.offlineForSpace]) {
        if (this.#closed || this.#closing !== undefined) break
        const space = await probeLogDirSpace(d, this.#retryMinFreeBytes)
        if (!space.ready) {
          this.#logger.debug({ dir: d, ...space }, `log directory ${d} is still full`)
          continue
        }
        if (await this.#serialized(() => this.#reopenLogDir(d, space))) back.push(d)
      }
      return back
    } finally {
      this.#retrying = false
    }
  }

  async #reopenLogDir(d: string, space: LogDirSpace): Promise<boolean> {
    if (this.#closed || this.#closing !== undefined || !this.offlineForSpace.has(d)) return false
    const answers = await Promise.all(this.#shards.map((_, shard) => this.callShard(shard, 'reopenLogDir', { logDir: d })))
    const failed = answers.find((a) => !a.ok)
    if (failed !== undefined && !failed.ok) {
      // Shards that reopened it take it offline again, so that every shard agrees.
      const diskFull = isDiskFull(new Error(failed.message))
      await Promise.all(this.#shards.map((_, shard) => this.callShard(shard, 'markLogDirOffline', { logDir: d, diskFull })))
      if (diskFull) {
        this.#logger.warn({ dir: d, err: failed.message.split('\n')[0] }, `log directory ${d} could not be reopened, still full: it stays offline and is checked again`)
      } else {
        this.offlineForSpace.delete(d)
        this.#logger.error({ dir: d, err: failed.message.split('\n')[0] }, `log directory ${d} could not be reopened: offline until a restart`)
        this.#onLogDirFailure?.(d)
      }
      return false
    }
    const total = { partitions: 0, recovered: 0, bytesTruncated: 0, segmentsDropped: 0, ms: 0 }
    for (const a of answers) {
      if (!a.ok) continue
      total.partitions += a.value.partitions
      total.recovered += a.value.recovered
      total.bytesTruncated += a.value.bytesTruncated
      total.segmentsDropped += a.value.segmentsDropped
      total.ms = Math.max(total.ms, a.value.ms)
    }
    this.offlineDirs.delete(d)
    this.offlineForSpace.delete(d)
    const offlineMs = Date.now() - (this.#offlineSince.get(d) ?? Date.now())
    this.#offlineSince.delete(d)
    this.#logger.info(
      { dir: d, freeBytes: space.freeBytes, offlineMs, ...total },
      `log directory ${d} has room again (${space.freeBytes} bytes free): back online after ${offlineMs} ms, ${total.partitions} partitions reopened` +
        (total.recovered === 0 ? '' : `, ${total.recovered} recovered (${total.bytesTruncated} bytes truncated, ${total.segmentsDropped} segments dropped)`),
    )
    this.#onLogDirRecovered?.(d)
    return true
  }

  #lastDirCheck = 0

  #maybeCheckLogDirs(): void {
    const now = Date.now()
    if (now - this.#lastDirCheck < 200) return
    this.#lastDirCheck = now
    void this.checkLogDirs()
  }

  /** Online data directories and how many partitions each holds (for the choice of a new partition's). */
  async partitionsPerLogDir(): Promise<Map<string, number>> {
    const counts = new Map<string, number>()
    for (const d of this.dataDirs) if (!this.offlineDirs.has(d)) counts.set(d, 0)
    const answers = await Promise.all(this.#shards.map((_, shard) => this.callShard(shard, 'logDirStatus', null)))
    for (const a of answers) {
      if (!a.ok) continue
      for (const [d, n] of a.value.partitionCounts) if (counts.has(d)) counts.set(d, counts.get(d)! + n)
    }
    return counts
  }

  /**
   * Moves a partition into another of its broker's data directories (AlterReplicaLogDirs): starts the
   * copy and drives it in the background, step by step, then swaps it in (LogManager.completeMove).
   * Resolves once the move is under way (or found unnecessary); the copy goes on after.
   */
  async alterLogDir(tp: TopicPartition, logDir: string): Promise<Outcome<boolean>> {
    const [started] = await this.call('startMove', [{ topic: tp.topic, partition: tp.partition, logDir }])
    if (!started!.ok || !started!.value) return started!
    const k = `${tp.topic}\u0000${tp.partition}`
    const running = this.#moves.has(k)
    this.#moves.set(k, resolve(logDir))
    if (!running) void this.#driveMove(tp, k)
    return started!
  }

  /** Partitions being moved between data directories, by key `topic\0partition`, and their targets. */
  movesUnderWay(): ReadonlyMap<string, string> {
    return this.#moves
  }

  async #driveMove(tp: TopicPartition, k: string): Promise<void> {
    const stepBytes = 8 * 1024 * 1024
    try {
      for (;;) {
        if (this.#closed || this.#closing !== undefined || !this.#moves.has(k)) return
        const [step] = await this.call('moveStep', [{ topic: tp.topic, partition: tp.partition, maxBytes: stepBytes }])
        if (!step!.ok) throw new Error(step!.message)
        if (step!.value === 'none') return
        if (step!.value === 'copying') continue
        const [done] = await this.call('completeMove', [{ topic: tp.topic, partition: tp.partition }])
        if (!done!.ok) throw new Error(done!.message)
        this.#logger.info({ topic: tp.topic, partition: tp.partition, logDir: this.#moves.get(k) }, `moved ${tp.topic}-${tp.partition} to ${this.#moves.get(k)}`)
        return
      }
    } catch (err) {
      this.#logger.error({ topic: tp.topic, partition: tp.partition, err: (err as Error).message }, 'moving a partition between log directories failed')
      void this.checkLogDirs()
    } finally {
      this.#moves.delete(k)
    }
  }

  /** The future copies under way (DescribeLogDirs' isFutureKey entries). */
  async futureStates(): Promise<PartitionState[]> {
    const answers = await Promise.all(this.#shards.map((_, shard) => this.callShard(shard, 'futureStates', null)))
    return answers.flatMap((a) => (a.ok ? a.value : []))
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
    return this.#outcomes(op, sent)
  }

  /** Runs shard operation `op` of the operation table on one shard. */
  async callShard<K extends ShardOpName>(shard: number, op: K, args: OpArgs<K>): Promise<Outcome<OpValue<K>>> {
    if (!(Number.isInteger(shard) && shard >= 0 && shard < this.#shards.length)) return this.#outcome(await this.#reject(ErrorCode.INVALID_REQUEST, `no shard ${shard}`))
    return this.#outcome(await this.#send(shard, op, args, undefined))
  }

  /**
   * Creates partitions (or opens existing ones). Items without a logDir go to the online data directory
   * with the fewest partitions, counted over every shard (Kafka's nextLogDirs) and those of this call.
   * Sent in chunks of ~SLICE_MS of wall time (inTimedChunks): a topic of 100,000 partitions must not hold
   * the shards (worker threads, or the main thread with io.threads=0) away from every other request until
   * it is whole.
   */
  async createPartitions(items: readonly CreatePartitionItem[]): Promise<Outcome<PartitionState>[]> {
    if (this.dataDirs.length > 1 && items.some((i) => i.logDir === undefined)) {
      const counts = await this.partitionsPerLogDir()
      const placed = items.map((item) => {
        if (item.logDir !== undefined || counts.size === 0) return item
        let best = ''
        let fewest = Infinity
        for (const [d, n] of counts) if (n < fewest) [best, fewest] = [d, n]
        counts.set(best, fewest + 1)
        return { ...item, logDir: best }
      })
      return inTimedChunks(placed, (chunk) => this.call('create', chunk), undefined, 'wall')
    }
    return inTimedChunks(items, (chunk) => this.call('create', chunk), undefined, 'wall')
  }

  /**
   * Deletes partitions: each is closed and its directory renamed `<topic>-<partition>.<uuid>-delete`,
   * then the data directory is fsynced once, so the deletions are durable when this resolves; the
   * directories themselves are removed in the background (and at the next start if cut short). Sent in
   * chunks of ~SLICE_MS, as createPartitions.
   */
  async deletePartitions(items: readonly TopicPartition[]): Promise<Outcome<null>[]> {
    const results = await inTimedChunks(items, (chunk) => this.call('delete', chunk), undefined, 'wall')
    if (results.some((r) => r.ok)) await this.#syncDirectories()
    return results
  }

  /**
   * Sets partitions aside: each is closed (flushed) and its directory renamed
   * `<topic>-<partition>.<uuid>-stray`, kept on disk and never opened again; the data directory is
   * fsynced once. Answers each partition's new directory name.
   */
  async moveAside(items: readonly TopicPartition[]): Promise<Outcome<string>[]> {
    const results = await this.call('moveAside', items)
    if (results.some((r) => r.ok)) await this.#syncDirectories()
    return results
  }

  /** fsync of every online data directory (a rename in any of them is then durable). */
  async #syncDirectories(): Promise<void> {
    await Promise.all(this.#directories.filter((d) => !this.offlineDirs.has(d.path)).map((d) => d.sync().catch(() => {})))
  }

  /** Gives partitions their topic's config; many (a new topic's) are sent in chunks of ~SLICE_MS, as createPartitions. */
  updateConfigs(items: readonly UpdateConfigItem[]): Promise<Outcome<null>[]> {
    return inTimedChunks(items, (chunk) => this.call('updateConfig', chunk), undefined, 'wall')
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
    clearInterval(this.#probeTimer)
    clearInterval(this.#retryTimer)
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
      // An offline directory gets no clean-shutdown marker: its partitions were not closed.
      for (const d of this.#directories) {
        try {
          d.close(cleanly && !this.offlineDirs.has(d.path))
        } catch {
          d.close(false)
        }
      }
    }
  }

  async #outcomes<T>(op: string, sent: Promise<OpResult>[]): Promise<Outcome<T>[]> {
    const results = await Promise.all(sent)
    const outcomes = results as Outcome<T>[]
    // A storage error may be a data directory failing: look (at most every 200 ms).
    if (this.dataDirs.length > 0 && results.some((r) => !r.ok && r.errorCode === ErrorCode.KAFKA_STORAGE_ERROR)) this.#maybeCheckLogDirs()
    let unexpected = 0
    let first: Extract<OpResult, { ok: false }> | undefined
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!
      if (r.ok) continue
      if (r.unexpected === true) {
        unexpected++
        first ??= r
      }
      outcomes[i] = r.recordErrors !== undefined ? { ok: false, errorCode: r.errorCode, message: r.message, recordErrors: r.recordErrors } : { ok: false, errorCode: r.errorCode, message: r.message }
    }
    // One line per call, not per item: a call may carry 100,000 partitions failing the same way.
    if (first !== undefined) this.#logger.error({ op, failed: unexpected, of: results.length, errorCode: first.errorCode, error: first.message }, 'unexpected shard error')
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
