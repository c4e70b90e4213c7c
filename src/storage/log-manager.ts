// The partitions of one data directory that this thread owns (all of them, or those `owns` selects
// when partitions are sharded across threads over one directory).
//
// Directory layout: <dataDir>/<topic>-<partition>/ per partition (see segment.ts and checkpoint.ts for
// the files inside); the directory's own `.lock` and `.kafka_cleanshutdown` belong to its DataDirectory
// (data-directory.ts).
// Deletion (Kafka's scheme): a partition being deleted is renamed `<topic>-<partition>.<uuid>-delete`,
// the topic cut short so that the name fits 255 bytes (partition-names.ts logDirNameWithSuffix), so a new
// partition of the same name can be created at once; the caller fsyncs the data directory, which makes
// the deletion durable, and the renamed directory is removed in the background, one at a time. A
// `-delete` directory found on open (the removal was cut short) is removed by the manager told to
// (removeLeftovers: one per data directory, since a shortened name no longer says whose it was).
// Partitions set aside (moveAside: not in cluster-metadata.json) are renamed `...-stray` the same way
// and left on disk, never opened again. Entries whose names are not partition directories are ignored
// (skipped silently, never touched).

import { readdirSync, renameSync, statSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { performance } from 'node:perf_hooks'
import { join } from 'node:path'
import { checkLogConfig, mergeLogConfig, STORAGE_DEFAULTS } from '../config/log-config.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { LogCleaner } from './log-cleaner.js'
import type { LogCleanerSettings } from './log-cleaner.js'
import {
  DELETE_DIR_PATTERN, DELETE_DIR_SUFFIX, STRAY_DIR_SUFFIX, logDirNameWithSuffix, parsePartitionDirName, partitionDirName, validatePartition, validateTopicName,
} from './partition-names.js'
import { ensureDataDirectory } from './data-directory.js'
import { LeaseTable } from './lease-table.js'
import { OpenFileCache, openFilesPerThread } from './open-files.js'
import { PartitionLog } from './partition-log.js'
import type { PartitionLogContext } from './partition-log.js'
import type { LogConfig } from './types.js'

export interface LogManagerOptions {
  dataDir: string
  /** Settings of partitions without overrides; checked against the topic-config table (INVALID_CONFIG). */
  defaults: LogConfig
  /** DataDirectory.cleanShutdown, read once by the owner of the directory (false for a reopen after a crash). */
  cleanShutdown: boolean
  /** Open only these partition directories (sharding); default all. */
  owns?: (topic: string, partition: number) => boolean
  now?: () => number
  /**
   * The mode partitions open in: the high watermark follows the LEO on append (a single broker), or is
   * set from outside (a cluster, until the replication layer switches a partition). Default true.
   */
  highWatermarkFollowsLeo?: boolean
  /** How often flushDue writes changed checkpoints (log.flush.offset.checkpoint.interval.ms); default the table's. */
  checkpointIntervalMs?: number
  /** The log cleaner's memory, throttle and hooks (it runs only when called: see LogManager.cleaner). */
  cleaner?: LogCleanerSettings
  /** producer.id.expiration.ms: idempotent producer state idle this long is dropped; default the table's. */
  producerIdExpirationMs?: number
  /**
   * How many segment files this manager keeps open at most (its share of log.segment.open.files.max, see
   * open-files.ts); default the whole of it, capped at half the open-file limit. Partitions beyond it
   * cost disk, not descriptors.
   */
  maxOpenFiles?: number
  /** Remove the `-delete` directories an earlier run left (one manager per data directory). Default true. */
  removeLeftovers?: boolean
  /** Where a failed background removal of a deleted partition's directory is reported. */
  onRemovalFailed?: (path: string, err: unknown) => void
}

function key(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`
}

export class LogManager {
  readonly dataDir: string
  private readonly defaults: LogConfig
  private readonly logs = new Map<string, PartitionLog>()
  private readonly leases = new LeaseTable()
  /** Every segment descriptor and index mapping of these logs (open-files.ts). */
  readonly files: OpenFileCache
  private readonly ctx: PartitionLogContext
  private readonly checkpointIntervalMs: number
  /** Compaction of this manager's logs whose cleanup.policy includes compact (log-cleaner.ts). */
  readonly cleaner: LogCleaner
  private lastCheckpoint: number
  private closed = false
  /** Renamed `-delete` directories waiting for their background removal, and the removal running. */
  private readonly removals: string[] = []
  private removing: Promise<void> | null = null
  private readonly onRemovalFailed: (path: string, err: unknown) => void
  /** How long open() took to open and recover the partitions (ms). */
  loadMs = 0

  private constructor(opts: LogManagerOptions) {
    this.dataDir = opts.dataDir
    this.defaults = checkLogConfig({ ...opts.defaults })
    this.files = new OpenFileCache(opts.maxOpenFiles ?? openFilesPerThread(STORAGE_DEFAULTS.segmentOpenFilesMax, 1))
    this.ctx = { leases: this.leases, files: this.files, now: opts.now ?? Date.now, highWatermarkFollowsLeo: opts.highWatermarkFollowsLeo ?? true }
    if (opts.producerIdExpirationMs !== undefined) this.ctx.producerIdExpirationMs = opts.producerIdExpirationMs
    this.checkpointIntervalMs = opts.checkpointIntervalMs ?? STORAGE_DEFAULTS.checkpointIntervalMs
    this.lastCheckpoint = this.ctx.now()
    this.cleaner = new LogCleaner({ ...opts.cleaner, logs: () => this.logs.values(), now: this.ctx.now })
    this.onRemovalFailed = opts.onRemovalFailed ?? (() => {})
  }

  /** Creates dataDir if needed, then opens and recovers every owned partition directory in it. */
  static open(opts: LogManagerOptions): LogManager {
    const started = performance.now()
    const m = new LogManager(opts)
    ensureDataDirectory(m.dataDir)
    const owns = opts.owns ?? (() => true)
    const removeLeftovers = opts.removeLeftovers ?? true
    for (const name of readdirSync(m.dataDir)) {
      const path = join(m.dataDir, name)
      if (DELETE_DIR_PATTERN.test(name)) {
        if (removeLeftovers) m.removeLater(path)
        continue
      }
      const tp = parsePartitionDirName(name)
      if (tp === null || !owns(tp.topic, tp.partition) || !statSync(path).isDirectory()) continue
      const log = PartitionLog.open(path, tp.topic, tp.partition, m.defaults, m.ctx, opts.cleanShutdown)
      m.logs.set(key(tp.topic, tp.partition), log)
    }
    m.loadMs = performance.now() - started
    return m
  }

  partitions(): PartitionLog[] {
    return [...this.logs.values()]
  }

  get(topic: string, partition: number): PartitionLog | undefined {
    return this.logs.get(key(topic, partition))
  }

  /** Opens or creates the partition's log; idempotent (an existing log is returned as is). */
  create(topic: string, partition: number, overrides: Partial<LogConfig> = {}): PartitionLog {
    validateTopicName(topic)
    validatePartition(partition)
    if (this.closed) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, 'log manager is closed')
    const existing = this.get(topic, partition)
    if (existing !== undefined) return existing
    const config = mergeLogConfig(this.defaults, overrides)
    const dir = join(this.dataDir, partitionDirName(topic, partition))
    let log: PartitionLog
    try {
      log = PartitionLog.open(dir, topic, partition, config, this.ctx, true)
    } catch (err) {
      if (err instanceof KafkaError) throw err
      // An I/O error (no space, no inodes, a file in the way): Kafka's storage error, without a stack.
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot create partition ${topic}-${partition} in ${dir}: ${(err as Error).message}`)
    }
    this.logs.set(key(topic, partition), log)
    return log
  }

  /**
   * Closes the partition and renames its directory `<topic>-<partition>.<uuid>-delete` (see the header);
   * the directory is removed in the background. The deletion is durable once the caller has fsynced
   * the data directory. Segment descriptors pinned by leases stay readable until released.
   */
  delete(topic: string, partition: number): void {
    validateTopicName(topic)
    validatePartition(partition)
    const log = this.get(topic, partition)
    if (log === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `${topic}-${partition}`)
    this.logs.delete(key(topic, partition))
    log.closeForDelete()
    const doomed = join(this.dataDir, logDirNameWithSuffix(topic, partition, DELETE_DIR_SUFFIX))
    try {
      renameSync(log.dir, doomed)
    } catch (err) {
      // A directory removed by hand is deleted already: nothing to rename or remove.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot rename ${log.dir} for deletion: ${(err as Error).message}`)
    }
    this.removeLater(doomed)
  }

  /**
   * Closes the partition (flushed and checkpointed, as at shutdown) and renames its directory
   * `<topic>-<partition>.<uuid>-stray`: set aside, kept on disk, never opened again. Returns the new
   * name. Durable once the caller has fsynced the data directory.
   */
  async moveAside(topic: string, partition: number): Promise<string> {
    const log = this.get(topic, partition)
    if (log === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `${topic}-${partition}`)
    this.logs.delete(key(topic, partition))
    await log.close()
    const name = logDirNameWithSuffix(topic, partition, STRAY_DIR_SUFFIX)
    try {
      renameSync(log.dir, join(this.dataDir, name))
    } catch (err) {
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot move ${log.dir} aside: ${(err as Error).message}`)
    }
    return name
  }

  /** Queues the removal of a renamed `-delete` directory (one at a time, off the shard's turn). */
  private removeLater(path: string): void {
    this.removals.push(path)
    this.removing ??= this.drainRemovals()
  }

  private async drainRemovals(): Promise<void> {
    // Stops at close: what is left is removed at the next open.
    while (!this.closed && this.removals.length > 0) {
      const path = this.removals.shift()!
      try {
        await rm(path, { recursive: true, force: true })
      } catch (err) {
        this.onRemovalFailed(path, err)
      }
    }
    this.removing = null
  }

  /** Resolves when every deleted partition's directory queued so far is removed (tests). */
  async removalsDone(): Promise<void> {
    while (this.removing !== null) await this.removing
  }

  releaseLease(leaseId: number): void {
    this.leases.release(leaseId)
  }

  /** Leases not yet released (for tests and metrics). */
  openLeases(): number {
    return this.leases.size
  }

  /** Retention over every partition; returns the number of segments deleted. */
  applyRetention(now: number = this.ctx.now()): number {
    let n = 0
    for (const log of this.logs.values()) n += log.applyRetention(now)
    return n
  }

  /** Drops idempotent producer state older than producer.id.expiration.ms; returns how many producers. */
  removeExpiredProducers(now: number = this.ctx.now()): number {
    let n = 0
    for (const log of this.logs.values()) n += log.removeExpiredProducers(now)
    return n
  }

  /**
   * Housekeeping: flushes partitions whose flush.ms elapsed with unflushed data, and every
   * checkpointIntervalMs writes the recovery-point and log-start checkpoints that changed.
   */
  async flushDue(now: number = this.ctx.now()): Promise<void> {
    const due = [...this.logs.values()].filter((log) => log.unflushedMessages() > 0 && log.timeSinceLastFlush(now) >= log.config.flushMs)
    await inParallel(due, (log) => log.flush())
    if (now - this.lastCheckpoint >= this.checkpointIntervalMs) {
      this.lastCheckpoint = now
      await inParallel([...this.logs.values()], (log) => log.writeCheckpoints())
    }
  }

  /** Writes the high-watermark checkpoints that changed (replica.high.watermark.checkpoint.interval.ms). */
  async checkpointHighWatermarks(): Promise<void> {
    await Promise.all([...this.logs.values()].map((log) => log.writeHighWatermarkCheckpoint()))
  }

  /** Flushes, checkpoints and closes every partition (not the clean-shutdown marker). */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    // A pass in progress stops at its next slice and removes its files.
    await this.cleaner.shutdown()
    await this.removing
    const logs = [...this.logs.values()]
    this.logs.clear()
    let failed: { reason: unknown } | undefined
    await inParallel(logs, async (log) => {
      try {
        await log.close()
      } catch (err) {
        failed ??= { reason: err }
      }
    })
    if (failed !== undefined) throw failed.reason
  }
}

/**
 * Partition tasks that hold files open across their awaits (fsyncs, checkpoint writes) run at most this
 * many at a time, so that flushing or closing 100,000 partitions does not open 100,000 files at once.
 */
const FILE_TASKS_IN_PARALLEL = 32

/** Runs task over items, FILE_TASKS_IN_PARALLEL at a time; rejects with the first failure after all ran. */
async function inParallel<T>(items: readonly T[], task: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  let failure: { err: unknown } | undefined
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++]!
      try {
        await task(item)
      } catch (err) {
        failure ??= { err }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(FILE_TASKS_IN_PARALLEL, items.length) }, worker))
  if (failure !== undefined) throw failure.err
}
