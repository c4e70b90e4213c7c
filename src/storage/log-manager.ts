// The partitions of the data directories (Kafka's log.dirs) that this thread owns (all of them, or those
// `owns` selects when partitions are sharded across threads over the directories).
//
// Directory layout: <dataDir>/<topic>-<partition>/ per partition, in one of the data directories (see
// segment.ts and checkpoint.ts for the files inside, checkpoints included: each partition's are in its
// own directory, so every data directory carries those of its partitions); each directory's own `.lock`,
// `.kafka_cleanshutdown` and meta.properties belong to its DataDirectory (data-directory.ts) and the broker.
// Several directories (JBOD): a new partition goes to the online directory holding the fewest partitions
// of this manager (Kafka's nextLogDirs; the router names the directory when it balances across shards).
// A partition found in two directories stops the open (Kafka: "duplicate log directories"), except
// for a `-future` copy (below).
// A directory fails (Kafka's LogDirFailureChannel) when an I/O error hits one of its partitions
// (isLogDirFailure; a full disk too when diskFullFailsLogDir, as in a cluster): its partitions are closed
// without writing anything more, forgotten, and answer KAFKA_STORAGE_ERROR until the next start; the other
// directories go on serving. A directory taken offline by a full disk (ENOSPC, EDQUOT: offlineForSpace)
// may instead be reopened while running (reopenLogDir, once the caller found space back): its partitions
// open again with the recovery of an unclean start (from their recovery points: a torn tail cut, indexes
// rebuilt), since nothing was flushed or checkpointed when they were closed. Without diskFullFailsLogDir
// (a single broker) a full disk only refuses the writes that do not fit: a failed append leaves nothing of
// itself in the log, and writes succeed again once space returns.
// Moving a partition between directories (AlterReplicaLogDirs): its copy is written into
// `<dest>/<topic>-<partition>.<uuid>-future` (a future log, filled by re-appending the current log's batches
// verbatim), then swapped in one step: current renamed `-delete`, future renamed `<topic>-<partition>`.
// Recovery: a `-future` directory found on open whose partition has no current directory is what a
// swap cut short between its two renames left: it becomes the partition; one beside a current directory
// is an unfinished copy and is removed (the move is asked for again; nothing acknowledged is only there).
// Deletion (Kafka's scheme): a partition being deleted is renamed `<topic>-<partition>.<uuid>-delete`,
// the topic cut short so that the name fits 255 bytes (partition-names.ts logDirNameWithSuffix), so a new
// partition of the same name can be created at once; the caller fsyncs the data directory, which makes
// the deletion durable, and the renamed directory is removed in the background, one at a time. A
// `-delete` directory found on open (the removal was cut short) is removed by the manager told to
// (removeLeftovers: one per data directory, since a shortened name no longer says whose it was).
// Partitions set aside (moveAside: not in cluster-metadata.json) are renamed `...-stray` the same way
// and left on disk, never opened again. Entries whose names are not partition directories are ignored
// (skipped silently, never touched).

import { readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { performance } from 'node:perf_hooks'
import { dirname, join, resolve } from 'node:path'
import { checkLogConfig, mergeLogConfig, STORAGE_DEFAULTS } from '../config/log-config.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { LogCleaner } from './log-cleaner.js'
import type { LogCleanerSettings } from './log-cleaner.js'
import {
  DELETE_DIR_PATTERN, DELETE_DIR_SUFFIX, STRAY_DIR_SUFFIX, logDirNameWithSuffix, parsePartitionDirName, partitionDirName, validatePartition, validateTopicName,
} from './partition-names.js'
import { ensureDataDirectory } from './data-directory.js'
import { fsyncDir } from './durability.js'
import { LeaseTable } from './lease-table.js'
import { OpenFileCache, openFilesPerThread } from './open-files.js'
import { readRegions } from './regions.js'
import { PartitionLog } from './partition-log.js'
import type { PartitionLogContext } from './partition-log.js'
import type { LogConfig } from './types.js'

export interface LogManagerOptions {
  /** The (first) data directory; with dataDirs, ignored. */
  dataDir: string
  /** Every data directory (log.dirs); default [dataDir]. */
  dataDirs?: readonly string[]
  /** Data directories already known to have failed (another shard found it): nothing in them is opened. */
  offlineDirs?: readonly string[]
  /** Called once per data directory when an I/O error takes it offline (see the header). */
  onLogDirFailure?: (dir: string, err: unknown) => void
  /**
   * Whether a full disk (ENOSPC, EDQUOT) takes its directory offline like any other I/O error (Kafka; a
   * cluster, where other replicas take over) or only refuses the writes (a single broker). Default false.
   */
  diskFullFailsLogDir?: boolean
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

/** Suffix of a partition's copy being written into another data directory (AlterReplicaLogDirs). */
export const FUTURE_DIR_SUFFIX = '-future'
/** Kafka's LocalLog.FutureDirPattern. */
export const FUTURE_DIR_PATTERN = /^(\S+)-(\S+)\.(\S+)-future$/

/** Errors of a full disk: refused writes, not a failed directory (the space may come back). */
const DISK_FULL = /\b(ENOSPC|EDQUOT)\b/
/** Errors of the device or filesystem itself, never of one partition's files: no probe needed to believe them. */
const DEVICE_FAILURE = /\b(EIO|EROFS)\b/
/** Errors that mean the directory itself is gone or broken (Kafka: any IOException of a log). */
const DIR_FAILURE = /\b(EIO|ENOENT|ENOTDIR|EACCES|EPERM|EROFS|ENODEV|ENXIO|ESTALE|EBADF)\b/

/**
 * Whether err, thrown by a partition's file work, means its data directory failed: an errno of a missing,
 * unreadable or broken directory, also when a KafkaError wraps it in its message; a full disk does not.
 */
export function isLogDirFailure(err: unknown): boolean {
  const text = errorText(err)
  return text !== undefined && !DISK_FULL.test(text) && DIR_FAILURE.test(text)
}

/** Whether err, thrown by a partition's file work, is a full disk (ENOSPC, EDQUOT), also wrapped in a KafkaError's message. */
export function isDiskFull(err: unknown): boolean {
  const text = errorText(err)
  return text !== undefined && DISK_FULL.test(text)
}

function errorText(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined
  const code = (err as NodeJS.ErrnoException).code
  return `${typeof code === 'string' ? code : ''} ${err.message}`
}

/** Writes and removes a probe file in dir; answers the error when that fails as a failed directory would. */
function probeDirectory(dir: string): Error | undefined {
  const probe = join(dir, '.skein-dir-probe')
  try {
    writeFileSync(probe, '')
    rmSync(probe, { force: true })
    return undefined
  } catch (err) {
    return isLogDirFailure(err) ? (err as Error) : undefined
  }
}

/** A partition's copy in another data directory while AlterReplicaLogDirs moves it (see the header). */
interface FutureLog {
  log: PartitionLog
  /** The data directory it is written into. */
  logDir: string
}

/**
 * A map of logs (or future copies) that keeps how many each data directory holds, so that choosing a new
 * partition's directory costs O(directories), not O(partitions) (issue 30: 100,000 partitions over several
 * log.dirs). A value's directory is read when it enters and leaves (a log never changes data directory in
 * place: a move is a new log).
 */
class CountedByDir<V> extends Map<string, V> {
  readonly counts = new Map<string, number>()

  constructor(private readonly dirOf: (value: V) => string) {
    super()
  }

  override set(k: string, value: V): this {
    const old = super.get(k)
    if (old !== undefined) this.#add(this.dirOf(old), -1)
    this.#add(this.dirOf(value), 1)
    return super.set(k, value)
  }

  override delete(k: string): boolean {
    const old = super.get(k)
    if (old !== undefined) this.#add(this.dirOf(old), -1)
    return super.delete(k)
  }

  override clear(): void {
    this.counts.clear()
    super.clear()
  }

  #add(dir: string, n: number): void {
    const now = (this.counts.get(dir) ?? 0) + n
    if (now === 0) this.counts.delete(dir)
    else this.counts.set(dir, now)
  }
}

export class LogManager {
  /** The first data directory. */
  readonly dataDir: string
  /** Every data directory, absolute. */
  readonly dataDirs: readonly string[]
  /** Data directories taken offline by an I/O error (or found so by another shard). */
  readonly offlineDirs = new Set<string>()
  /** Offline data directories that a full disk (ENOSPC, EDQUOT) took offline: reopenLogDir may bring them back. */
  readonly offlineForSpace = new Set<string>()
  /** Partitions of an offline directory, by key, that directory and their settings: they answer KAFKA_STORAGE_ERROR. */
  private readonly offlinePartitions = new Map<string, { dir: string; config: LogConfig }>()
  private readonly removeLeftovers: boolean
  private readonly owns: (topic: string, partition: number) => boolean
  private readonly defaults: LogConfig
  private readonly logs = new CountedByDir<PartitionLog>((log) => LogManager.logDirOf(log))
  /** Copies being written into another directory (AlterReplicaLogDirs), by key. */
  private readonly futures = new CountedByDir<FutureLog>((f) => f.logDir)
  private readonly onLogDirFailure: (dir: string, err: unknown) => void
  private readonly diskFullFailsLogDir: boolean
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
    this.dataDirs = (opts.dataDirs ?? [opts.dataDir]).map((d) => resolve(d))
    this.dataDir = this.dataDirs[0]!
    for (const d of opts.offlineDirs ?? []) this.offlineDirs.add(resolve(d))
    this.onLogDirFailure = opts.onLogDirFailure ?? (() => {})
    this.diskFullFailsLogDir = opts.diskFullFailsLogDir ?? false
    this.defaults = checkLogConfig({ ...opts.defaults })
    this.files = new OpenFileCache(opts.maxOpenFiles ?? openFilesPerThread(STORAGE_DEFAULTS.segmentOpenFilesMax, 1))
    this.ctx = { leases: this.leases, files: this.files, now: opts.now ?? Date.now, highWatermarkFollowsLeo: opts.highWatermarkFollowsLeo ?? true, diskFullIsTransient: !this.diskFullFailsLogDir,
      onBackgroundFailure: (log, err) => this.reportPartitionError(log, err),
    }
    if (opts.producerIdExpirationMs !== undefined) this.ctx.producerIdExpirationMs = opts.producerIdExpirationMs
    this.checkpointIntervalMs = opts.checkpointIntervalMs ?? STORAGE_DEFAULTS.checkpointIntervalMs
    this.lastCheckpoint = this.ctx.now()
    this.cleaner = new LogCleaner({ ...opts.cleaner, logs: () => this.logs.values(), now: this.ctx.now })
    this.onRemovalFailed = opts.onRemovalFailed ?? (() => {})
    this.removeLeftovers = opts.removeLeftovers ?? true
    this.owns = opts.owns ?? (() => true)
  }

  /** Creates dataDir if needed, then opens and recovers every owned partition directory in it. */
  static open(opts: LogManagerOptions): LogManager {
    const started = performance.now()
    const m = new LogManager(opts)
    const owns = opts.owns ?? (() => true)
    const removeLeftovers = opts.removeLeftovers ?? true
    const futures: { dataDir: string; name: string }[] = []
    for (const dataDir of m.dataDirs) {
      if (m.offlineDirs.has(dataDir)) continue
      ensureDataDirectory(dataDir)
      for (const name of readdirSync(dataDir)) {
        const path = join(dataDir, name)
        if (DELETE_DIR_PATTERN.test(name)) {
          if (removeLeftovers) m.removeLater(path)
          continue
        }
        if (FUTURE_DIR_PATTERN.test(name)) {
          futures.push({ dataDir, name })
          continue
        }
        const tp = parsePartitionDirName(name)
        if (tp === null || !owns(tp.topic, tp.partition) || !statSync(path).isDirectory()) continue
        const other = m.get(tp.topic, tp.partition)
        if (other !== undefined) throw new Error(`duplicate log directories for ${tp.topic}-${tp.partition} are found in both ${other.dir} and ${path}; remove one of them`)
        const log = PartitionLog.open(path, tp.topic, tp.partition, m.defaults, m.ctx, opts.cleanShutdown)
        m.logs.set(key(tp.topic, tp.partition), log)
      }
    }
    // Future copies: finish a swap cut short, drop an unfinished copy (see the header).
    for (const { dataDir, name } of futures) {
      const tp = parsePartitionDirName(name.slice(0, name.lastIndexOf('.')))
      if (tp === null || !owns(tp.topic, tp.partition)) continue
      const path = join(dataDir, name)
      if (m.get(tp.topic, tp.partition) !== undefined) {
        rmSync(path, { recursive: true, force: true })
        continue
      }
      const target = join(dataDir, partitionDirName(tp.topic, tp.partition))
      renameSync(path, target)
      m.logs.set(key(tp.topic, tp.partition), PartitionLog.open(target, tp.topic, tp.partition, m.defaults, m.ctx, opts.cleanShutdown))
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

  /** The offline data directory of a partition that was in one, else undefined. */
  offlineDirOf(topic: string, partition: number): string | undefined {
    return this.offlinePartitions.get(key(topic, partition))?.dir
  }

  /** The data directory holding a log (its parent directory). */
  static logDirOf(log: PartitionLog): string {
    return dirname(log.dir)
  }

  /** Partitions (and future copies) of this manager per online data directory. */
  partitionCounts(): Map<string, number> {
    const counts = new Map<string, number>()
    for (const d of this.dataDirs) if (!this.offlineDirs.has(d)) counts.set(d, 0)
    // Kept as logs come and go (CountedByDir): O(directories), whatever the number of partitions.
    for (const [d, n] of counts) counts.set(d, n + (this.logs.counts.get(d) ?? 0) + (this.futures.counts.get(d) ?? 0))
    return counts
  }

  /** Kafka's nextLogDirs: the online directory with the fewest partitions (ties: log.dirs order). */
  private nextLogDir(): string {
    // One online directory: nothing to choose. With several, partitionCounts is O(directories) (counting
    // every log per new partition made creating n partitions cost O(n²): 190 partitions/s at 100,000).
    const online = this.dataDirs.filter((d) => !this.offlineDirs.has(d))
    if (online.length === 1) return online[0]!
    let best: string | undefined
    let fewest = Infinity
    for (const [d, n] of this.partitionCounts()) {
      if (n < fewest) {
        best = d
        fewest = n
      }
    }
    if (best === undefined) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `every log directory is offline (${this.dataDirs.join(', ')})`)
    return best
  }

  private checkOnlineDir(logDir: string): string {
    const d = resolve(logDir)
    if (!this.dataDirs.includes(d)) throw new KafkaError(ErrorCode.LOG_DIR_NOT_FOUND, `${logDir} is not one of log.dirs`)
    if (this.offlineDirs.has(d)) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `log directory ${d} is offline`)
    return d
  }

  /**
   * Opens or creates the partition's log, in logDir when given (it must be an online data directory),
   * else in nextLogDir; idempotent (an existing log is returned as is, wherever it is). A partition of an
   * offline directory is KAFKA_STORAGE_ERROR.
   */
  create(topic: string, partition: number, overrides: Partial<LogConfig> = {}, logDir?: string): PartitionLog {
    validateTopicName(topic)
    validatePartition(partition)
    if (this.closed) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, 'log manager is closed')
    const existing = this.get(topic, partition)
    if (existing !== undefined) return existing
    const offline = this.offlineDirOf(topic, partition)
    if (offline !== undefined) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `${topic}-${partition} is in the offline log directory ${offline}`)
    const dataDir = logDir !== undefined && !this.offlineDirs.has(resolve(logDir)) ? this.checkOnlineDir(logDir) : this.nextLogDir()
    const config = mergeLogConfig(this.defaults, overrides)
    const dir = join(dataDir, partitionDirName(topic, partition))
    let log: PartitionLog
    try {
      log = PartitionLog.open(dir, topic, partition, config, this.ctx, true)
    } catch (err) {
      if (this.failsLogDir(err)) this.suspectLogDir(dataDir, err)
      if (err instanceof KafkaError) throw err
      // An I/O error (no space, no inodes, a file in the way): Kafka's storage error, without a stack.
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot create partition ${topic}-${partition} in ${dir}: ${(err as Error).message}`)
    }
    this.logs.set(key(topic, partition), log)
    return log
  }

  /**
   * An I/O error of a partition suggests its data directory failed: the directory is probed (a file
   * written and removed in it) and taken offline only when that fails too, so that a problem of one
   * partition's own directory (a file in its way) stays that partition's; EIO, EROFS and (with
   * diskFullFailsLogDir) a full disk take it offline without a probe. Answers whether it went offline.
   */
  suspectLogDir(logDir: string, err: unknown): boolean {
    const d = resolve(logDir)
    if (!this.dataDirs.includes(d) || this.offlineDirs.has(d)) return false
    // A full filesystem still lets the probe's empty file be created (a free inode), and a device error
    // may spare the probe's block: neither is probed.
    const certain = (this.diskFullFailsLogDir && isDiskFull(err)) || DEVICE_FAILURE.test(errorText(err) ?? '')
    if (!certain && probeDirectory(d) === undefined) return false
    return this.markLogDirOffline(d, err)
  }

  /**
   * Whether err, thrown by a partition's file work, may mean its directory failed (suspectLogDir decides):
   * isLogDirFailure, and a full disk when diskFullFailsLogDir.
   */
  /** An error of a partition's I/O that no caller sees otherwise: its log dir is suspected if the error says so. */
  reportPartitionError(log: PartitionLog, err: unknown): void {
    if (this.failsLogDir(err)) this.suspectLogDir(LogManager.logDirOf(log), err)
  }

  failsLogDir(err: unknown): boolean {
    return isLogDirFailure(err) || (this.diskFullFailsLogDir && isDiskFull(err))
  }

  /**
   * Takes a data directory offline (see the header): its partitions and future copies are closed without
   * writing and forgotten, and answer KAFKA_STORAGE_ERROR from now on. Returns false when it already was
   * (or is not one of this manager's). onLogDirFailure hears of it once.
   */
  markLogDirOffline(logDir: string, err?: unknown): boolean {
    const d = resolve(logDir)
    if (!this.dataDirs.includes(d) || this.offlineDirs.has(d)) return false
    this.offlineDirs.add(d)
    if (isDiskFull(err)) this.offlineForSpace.add(d)
    for (const [k, log] of [...this.logs]) {
      if (LogManager.logDirOf(log) !== d) continue
      this.logs.delete(k)
      this.offlinePartitions.set(k, { dir: d, config: log.config })
      // Nothing more is written there: no flush, no checkpoint (closeForDelete writes nothing).
      log.closeForDelete()
    }
    for (const [k, f] of [...this.futures]) {
      if (f.logDir === d) {
        this.futures.delete(k)
        f.log.closeForDelete()
      } else if (this.offlinePartitions.has(k)) {
        // A copy (in a directory still online) of a partition that just went offline: nothing to copy from.
        const [topic, partition] = k.split('\u0000')
        this.abandonMove(topic!, Number(partition))
      }
    }
    this.onLogDirFailure(d, err)
    return true
  }

  /**
   * Brings back a directory taken offline by a full disk (offlineForSpace), once the caller found room in
   * it again: the owned partitions found in it open with the recovery of an unclean start (their tails
   * were never flushed nor checkpointed at the failure: a torn tail is cut, indexes are rebuilt), with the
   * settings they had; `-delete` leftovers are removed, and a `-future` copy of a partition served from
   * another directory is dropped (others wait for the next start). All or nothing: when a partition cannot
   * be opened, those opened are closed again, the directory stays offline and the error is thrown.
   * Answers the partitions opened, for the caller's recovery log lines; none when it was not offline.
   */
  reopenLogDir(logDir: string): PartitionLog[] {
    const d = resolve(logDir)
    if (this.closed || !this.offlineDirs.has(d)) return []
    const opened: PartitionLog[] = []
    const doomed: string[] = []
    try {
      for (const name of readdirSync(d)) {
        const path = join(d, name)
        if (DELETE_DIR_PATTERN.test(name)) {
          if (this.removeLeftovers) doomed.push(path)
          continue
        }
        if (FUTURE_DIR_PATTERN.test(name)) {
          const tp = parsePartitionDirName(name.slice(0, name.lastIndexOf('.')))
          if (tp !== null && this.owns(tp.topic, tp.partition) && this.get(tp.topic, tp.partition) !== undefined) doomed.push(path)
          continue
        }
        const tp = parsePartitionDirName(name)
        if (tp === null || !this.owns(tp.topic, tp.partition) || !statSync(path).isDirectory()) continue
        const other = this.get(tp.topic, tp.partition)
        if (other !== undefined) throw new Error(`duplicate log directories for ${tp.topic}-${tp.partition} are found in both ${other.dir} and ${path}; remove one of them`)
        const config = this.offlinePartitions.get(key(tp.topic, tp.partition))?.config ?? this.defaults
        opened.push(PartitionLog.open(path, tp.topic, tp.partition, config, this.ctx, false))
      }
    } catch (err) {
      for (const log of opened) log.closeForDelete()
      throw err
    }
    this.offlineDirs.delete(d)
    this.offlineForSpace.delete(d)
    for (const [k, o] of [...this.offlinePartitions]) if (o.dir === d) this.offlinePartitions.delete(k)
    for (const log of opened) this.logs.set(key(log.topic, log.partition), log)
    for (const path of doomed) {
      if (!FUTURE_DIR_PATTERN.test(path)) {
        this.removeLater(path)
        continue
      }
      try {
        rmSync(path, { recursive: true, force: true })
      } catch {
        // Left for the next start, which drops it too.
      }
    }
    return opened
  }

  /**
   * Runs task on a log; an I/O error that means its directory failed takes the directory offline and is
   * swallowed (reported through onLogDirFailure), any other is rethrown.
   */
  private async guarded(log: PartitionLog, task: (log: PartitionLog) => Promise<void>): Promise<void> {
    try {
      await task(log)
    } catch (err) {
      if (!this.failsLogDir(err) || !this.suspectLogDir(LogManager.logDirOf(log), err)) throw err
    }
  }

  // ---- moving a partition between data directories (AlterReplicaLogDirs)

  /** The directory a partition is being moved to, or undefined. */
  futureDirOf(topic: string, partition: number): string | undefined {
    return this.futures.get(key(topic, partition))?.logDir
  }

  /** The future copy's log, for DescribeLogDirs (isFutureKey). */
  futureLog(topic: string, partition: number): PartitionLog | undefined {
    return this.futures.get(key(topic, partition))?.log
  }

  /**
   * Starts moving a partition into logDir (Kafka's maybeCreateFutureReplica): an empty future log
   * `<logDir>/<topic>-<partition>.<uuid>-future`, starting at the current log's start offset. Nothing
   * happens when the partition already is there or already moves there; a move to another directory
   * replaces the earlier one. Returns whether a copy is (now) under way.
   */
  startMove(topic: string, partition: number, logDir: string): boolean {
    const current = this.get(topic, partition)
    if (current === undefined) {
      const offline = this.offlineDirOf(topic, partition)
      if (offline !== undefined) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `${topic}-${partition} is in the offline log directory ${offline}`)
      throw new KafkaError(ErrorCode.REPLICA_NOT_AVAILABLE, `${topic}-${partition} is not hosted here`)
    }
    const dest = this.checkOnlineDir(logDir)
    const k = key(topic, partition)
    const existing = this.futures.get(k)
    if (LogManager.logDirOf(current) === dest) {
      if (existing !== undefined) this.abandonMove(topic, partition)
      return false
    }
    if (existing !== undefined) {
      if (existing.logDir === dest) return true
      this.abandonMove(topic, partition)
    }
    const uniqueId = logDirNameWithSuffix(topic, partition, DELETE_DIR_SUFFIX)
    const name = `${partitionDirName(topic, partition)}.${uniqueId.slice(uniqueId.lastIndexOf('.') + 1, -DELETE_DIR_SUFFIX.length)}${FUTURE_DIR_SUFFIX}`
    let log: PartitionLog
    try {
      log = PartitionLog.open(join(dest, name), topic, partition, current.config, this.ctx, true)
      log.truncateFullyAndStartAt(current.logStartOffset)
    } catch (err) {
      if (this.failsLogDir(err)) this.suspectLogDir(dest, err)
      throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `cannot create the future log of ${topic}-${partition} in ${dest}: ${(err as Error).message}`)
    }
    this.futures.set(k, { log, logDir: dest })
    return true
  }

  /** Drops a move under way: the future copy is closed and its directory removed. */
  abandonMove(topic: string, partition: number): void {
    const k = key(topic, partition)
    const f = this.futures.get(k)
    if (f === undefined) return
    this.futures.delete(k)
    f.log.closeForDelete()
    const doomed = join(f.logDir, logDirNameWithSuffix(topic, partition, DELETE_DIR_SUFFIX))
    try {
      renameSync(f.log.dir, doomed)
      this.removeLater(doomed)
    } catch {
      // Already gone (an offline directory): nothing to remove.
    }
  }

  /**
   * One step of a move (Kafka's ReplicaAlterLogDirsThread): copies up to maxBytes of batches from the
   * current log into the future copy, verbatim (epochs, producer state and indexes rebuilt by the
   * append as on a follower), keeping its log start with the current one's. Answers 'caught-up' when the
   * copy reached the current log end: then completeMove swaps it in.
   */
  moveStep(topic: string, partition: number, maxBytes: number): 'copying' | 'caught-up' | 'none' {
    const f = this.futures.get(key(topic, partition))
    const current = this.get(topic, partition)
    if (f === undefined || current === undefined) return 'none'
    this.copyInto(f, current, maxBytes)
    return f.log.logEndOffset < current.logEndOffset ? 'copying' : 'caught-up'
  }

  private copyInto(f: FutureLog, current: PartitionLog, maxBytes: number): void {
    const future = f.log
    try {
      // The current log was truncated (a follower's) past what was copied: start the copy again.
      const e = future.latestEpoch
      const diverged = future.logEndOffset > current.logEndOffset ||
        (e >= 0 && (() => {
          const end = current.endOffsetForEpoch(e)
          return end.leaderEpoch !== e || end.endOffset < future.logEndOffset
        })())
      if (diverged || future.logEndOffset < current.logStartOffset) future.truncateFullyAndStartAt(current.logStartOffset)
      future.setHighWatermarkFollowsLeo(current.highWatermarkFollowsLeo)
      if (!current.highWatermarkFollowsLeo) future.setHighWatermark(Math.min(current.highWatermark, future.logEndOffset))
      future.maybeIncrementLogStartOffset(current.logStartOffset)
      let copied = 0
      while (future.logEndOffset < current.logEndOffset && copied < maxBytes) {
        const read = current.read(future.logEndOffset, Math.min(maxBytes - copied, 1024 * 1024), { logEnd: true })
        try {
          if (read.bytes === 0) break
          future.appendAsFollower(readRegions(read.regions))
          copied += read.bytes
        } finally {
          if (read.leaseId !== 0) this.leases.release(read.leaseId)
        }
      }
    } catch (err) {
      if (this.failsLogDir(err) && !this.suspectLogDir(f.logDir, err)) this.suspectLogDir(LogManager.logDirOf(current), err)
      throw err
    }
  }

  /**
   * Ends a move whose copy caught up (Kafka's replaceCurrentWithFutureLog): copies what was appended
   * since, closes the copy (flushed, checkpointed), renames the current directory `-delete` and the copy
   * `<topic>-<partition>`, and serves the partition from there. The caller runs it with the partition's
   * other work held back (an exclusive shard operation), so no append falls between the last copy and the
   * swap. Answers whether the swap happened.
   */
  async completeMove(topic: string, partition: number): Promise<boolean> {
    const k = key(topic, partition)
    const f = this.futures.get(k)
    const current = this.get(topic, partition)
    if (f === undefined || current === undefined) return false
    this.copyInto(f, current, Number.MAX_SAFE_INTEGER)
    const future = f.log
    try {
      future.setHighWatermarkFollowsLeo(current.highWatermarkFollowsLeo)
      if (!current.highWatermarkFollowsLeo) future.setHighWatermark(Math.min(current.highWatermark, future.logEndOffset))
      await future.close()
      this.futures.delete(k)
      this.logs.delete(k)
      await current.close()
      const currentDir = LogManager.logDirOf(current)
      const doomed = join(currentDir, logDirNameWithSuffix(topic, partition, DELETE_DIR_SUFFIX))
      renameSync(current.dir, doomed)
      const target = join(f.logDir, partitionDirName(topic, partition))
      renameSync(future.dir, target)
      await Promise.all([fsyncDir(currentDir), fsyncDir(f.logDir)])
      const moved = PartitionLog.open(target, topic, partition, current.config, this.ctx, true)
      moved.setHighWatermarkFollowsLeo(current.highWatermarkFollowsLeo)
      if (!current.highWatermarkFollowsLeo) moved.setHighWatermark(Math.min(current.highWatermark, moved.logEndOffset))
      this.logs.set(k, moved)
      this.removeLater(doomed)
      return true
    } catch (err) {
      if (this.failsLogDir(err) && !this.suspectLogDir(f.logDir, err)) this.suspectLogDir(LogManager.logDirOf(current), err)
      throw err
    }
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
    if (log === undefined) {
      // Its data is still in an offline directory: deleted only once that directory is back (Kafka answers
      // a StopReplica for an offline partition KAFKA_STORAGE_ERROR and the controller retries later).
      const offline = this.offlineDirOf(topic, partition)
      if (offline !== undefined) throw new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, `${topic}-${partition} is in the offline log directory ${offline}`)
      throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `${topic}-${partition}`)
    }
    this.logs.delete(key(topic, partition))
    log.closeForDelete()
    // Renamed within its own data directory: another one may be another filesystem (EXDEV).
    const doomed = join(LogManager.logDirOf(log), logDirNameWithSuffix(topic, partition, DELETE_DIR_SUFFIX))
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
      renameSync(log.dir, join(LogManager.logDirOf(log), name))
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
    await inParallel(due, (log) => this.guarded(log, (l) => l.flush()))
    if (now - this.lastCheckpoint >= this.checkpointIntervalMs) {
      this.lastCheckpoint = now
      await inParallel(this.#logsWhere((l) => l.checkpointsDue), (log) => this.guarded(log, (l) => l.writeCheckpoints()))
    }
  }

  /**
   * Writes the high-watermark checkpoints that changed (replica.high.watermark.checkpoint.interval.ms).
   * Only those partitions get a call: a promise chain for each of 100,000 idle partitions every 5 s took
   * 180-310 ms of the thread in a bare script, in one piece, and more inside a broker's large heap.
   */
  async checkpointHighWatermarks(): Promise<void> {
    await Promise.all(this.#logsWhere((l) => l.highWatermarkCheckpointDue).map((log) => this.guarded(log, (l) => l.writeHighWatermarkCheckpoint())))
  }

  #logsWhere(due: (log: PartitionLog) => boolean): PartitionLog[] {
    const out: PartitionLog[] = []
    for (const log of this.logs.values()) if (due(log)) out.push(log)
    return out
  }

  /**
   * Whether each online data directory can still be written: creates and removes a probe file in each
   * (Kafka learns of a failed directory from the I/O of its logs only; a directory whose partitions are
   * idle would go unnoticed until used). A failure takes the directory offline. Answers the directories
   * taken offline now.
   */
  probeLogDirs(): string[] {
    const failed: string[] = []
    for (const d of this.dataDirs) {
      if (this.offlineDirs.has(d)) continue
      const err = probeDirectory(d)
      if (err !== undefined && this.markLogDirOffline(d, err)) failed.push(d)
    }
    return failed
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
    // An unfinished copy stays on disk and is removed at the next open (its partition is still current).
    for (const f of this.futures.values()) f.log.closeForDelete()
    this.futures.clear()
    let failed: { reason: unknown } | undefined
    await inParallel(logs, async (log) => {
      try {
        await this.guarded(log, (l) => l.close())
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
