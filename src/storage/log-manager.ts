// The partitions of one data directory that this thread owns (all of them, or those `owns` selects
// when partitions are sharded across threads over one directory).
//
// Directory layout: <dataDir>/<topic>-<partition>/ per partition (see segment.ts and checkpoint.ts for
// the files inside); the directory's own `.lock` and `.kafka_cleanshutdown` belong to its DataDirectory
// (data-directory.ts). A partition being deleted is first renamed <topic>-<partition>.<hex>-delete (so
// a new partition of the same name can be created at once) and then removed; a leftover `-delete`
// directory found on open is removed by its owner. Entries whose names are not partition directories
// are ignored (skipped silently, never touched).

import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { checkLogConfig, mergeLogConfig, STORAGE_DEFAULTS } from '../config/log-config.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { LogCleaner } from './log-cleaner.js'
import type { LogCleanerSettings } from './log-cleaner.js'
import { parsePartitionDirName, partitionDirName, validatePartition, validateTopicName } from './partition-names.js'
import { LeaseTable } from './lease-table.js'
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
}

const DELETE_DIR = /^(.+)\.[0-9a-f]+-delete$/

function key(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`
}

export class LogManager {
  readonly dataDir: string
  private readonly defaults: LogConfig
  private readonly logs = new Map<string, PartitionLog>()
  private readonly leases = new LeaseTable()
  private readonly ctx: PartitionLogContext
  private readonly checkpointIntervalMs: number
  /** Compaction of this manager's logs whose cleanup.policy includes compact (log-cleaner.ts). */
  readonly cleaner: LogCleaner
  private lastCheckpoint: number
  private closed = false

  private constructor(opts: LogManagerOptions) {
    this.dataDir = opts.dataDir
    this.defaults = checkLogConfig({ ...opts.defaults })
    this.ctx = { leases: this.leases, now: opts.now ?? Date.now, highWatermarkFollowsLeo: opts.highWatermarkFollowsLeo ?? true }
    if (opts.producerIdExpirationMs !== undefined) this.ctx.producerIdExpirationMs = opts.producerIdExpirationMs
    this.checkpointIntervalMs = opts.checkpointIntervalMs ?? STORAGE_DEFAULTS.checkpointIntervalMs
    this.lastCheckpoint = this.ctx.now()
    this.cleaner = new LogCleaner({ ...opts.cleaner, logs: () => this.logs.values(), now: this.ctx.now })
  }

  /** Creates dataDir if needed, then opens and recovers every owned partition directory in it. */
  static open(opts: LogManagerOptions): LogManager {
    const m = new LogManager(opts)
    mkdirSync(m.dataDir, { recursive: true })
    const owns = opts.owns ?? (() => true)
    for (const name of readdirSync(m.dataDir)) {
      const path = join(m.dataDir, name)
      const doomed = DELETE_DIR.exec(name)
      if (doomed !== null) {
        const tp = parsePartitionDirName(doomed[1]!)
        if (tp !== null && owns(tp.topic, tp.partition)) rmSync(path, { recursive: true, force: true })
        continue
      }
      const tp = parsePartitionDirName(name)
      if (tp === null || !owns(tp.topic, tp.partition) || !statSync(path).isDirectory()) continue
      const log = PartitionLog.open(path, tp.topic, tp.partition, m.defaults, m.ctx, opts.cleanShutdown)
      m.logs.set(key(tp.topic, tp.partition), log)
    }
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
    const log = PartitionLog.open(join(this.dataDir, partitionDirName(topic, partition)), topic, partition, config, this.ctx, true)
    this.logs.set(key(topic, partition), log)
    return log
  }

  /**
   * Closes the partition and removes its directory (renamed to `<dir>.<hex>-delete` first). Segment
   * descriptors pinned by leases stay readable until released.
   */
  delete(topic: string, partition: number): void {
    validateTopicName(topic)
    validatePartition(partition)
    const log = this.get(topic, partition)
    if (log === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `${topic}-${partition}`)
    this.logs.delete(key(topic, partition))
    log.closeForDelete()
    const doomed = `${log.dir}.${randomBytes(8).toString('hex')}-delete`
    renameSync(log.dir, doomed)
    rmSync(doomed, { recursive: true, force: true })
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
    const work: Promise<void>[] = []
    for (const log of this.logs.values()) {
      if (log.unflushedMessages() > 0 && log.timeSinceLastFlush(now) >= log.config.flushMs) work.push(log.flush())
    }
    await Promise.all(work)
    if (now - this.lastCheckpoint >= this.checkpointIntervalMs) {
      this.lastCheckpoint = now
      await Promise.all([...this.logs.values()].map((log) => log.writeCheckpoints()))
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
    const results = await Promise.allSettled([...this.logs.values()].map((log) => log.close()))
    this.logs.clear()
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
  }
}
