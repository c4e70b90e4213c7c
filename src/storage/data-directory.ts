// DataDirectory: the owner of one data directory as a whole (Kafka's log dir), as opposed to the
// partitions in it (LogManager, one per thread that owns some of them). It locks the directory, reads and
// clears the clean-shutdown marker when it opens it, and writes the marker when every log in it closed.
//
// Files:
// - <dataDir>/.lock: empty; carries an exclusive flock for as long as the owner has the directory open
//   (Kafka's `.lock`). The file stays; the lock dies with the owning process, so a crash leaves nothing
//   stale and the next owner simply takes it.
// - <dataDir>/.kafka_cleanshutdown: empty; written after every partition was flushed, checkpointed and
//   closed, removed when the directory is opened again. Absent on open means the previous run did not
//   close its logs (or is unknown), so every partition re-validates its segments from its recovery point
//   on. Written without fsync: losing it in a power cut only costs a recovery, and the logs it vouches for
//   were fsynced before it was written.

import { closeSync, existsSync, mkdirSync, openSync, readdirSync, rmSync, statSync, statfsSync, constants } from 'node:fs'
import type { StatsFs } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { native } from '../addon/index.js'
import { STRAY_DIR_PATTERN } from './partition-names.js'
import { fsyncDir } from './durability.js'

export const DATA_DIR_LOCK = '.lock'
export const CLEAN_SHUTDOWN_MARKER = '.kafka_cleanshutdown'

export class DataDirectory {
  /** Absolute path of the directory. */
  readonly path: string
  /**
   * Whether the previous owner closed cleanly (the marker was there at open; it is gone now). Only the
   * first opening of each partition may trust it: a thread that reopens partitions later must recover.
   */
  readonly cleanShutdown: boolean
  #lockFd: number

  private constructor(path: string, lockFd: number, cleanShutdown: boolean) {
    this.path = path
    this.#lockFd = lockFd
    this.cleanShutdown = cleanShutdown
  }

  /**
   * Creates the directory if needed, takes its lock (throwing a clear error when another broker or log
   * holds it, before anything in it is touched), then reads and clears the clean-shutdown marker.
   */
  static open(dir: string): DataDirectory {
    const path = ensureDataDirectory(dir)
    const lockFd = lock(path)
    try {
      const marker = join(path, CLEAN_SHUTDOWN_MARKER)
      const clean = existsSync(marker)
      if (clean) rmSync(marker, { force: true })
      return new DataDirectory(path, lockFd, clean)
    } catch (err) {
      closeSync(lockFd)
      throw err
    }
  }

  get isOpen(): boolean {
    return this.#lockFd >= 0
  }

  /** fsync of the directory itself (off the event loop): makes renames of partitions in it durable. */
  sync(): Promise<void> {
    return fsyncDir(this.path)
  }

  /**
   * Releases the directory. With cleanly=true (every log in it was closed without error) the
   * clean-shutdown marker is written first, so the next open skips recovery. Idempotent: only the first
   * call counts.
   */
  close(cleanly: boolean): void {
    if (this.#lockFd < 0) return
    try {
      if (cleanly) closeSync(openSync(join(this.path, CLEAN_SHUTDOWN_MARKER), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o644))
    } finally {
      closeSync(this.#lockFd)
      this.#lockFd = -1
    }
  }
}

/**
 * How many more new partitions a filesystem holds, from its statfs: a new partition is a directory and an
 * empty .log, i.e. two inodes and one directory block. Where the filesystem counts no inodes (btrfs and
 * others report 0 for f_files), only the block count bounds it.
 */
export function partitionsThatFit(fs: Pick<StatsFs, 'bavail' | 'files' | 'ffree'>): number {
  const byBlocks = Number(fs.bavail)
  return Number(fs.files) > 0 ? Math.min(byBlocks, Math.floor(Number(fs.ffree) / 2)) : byBlocks
}

/** partitionsThatFit for the filesystem of dir. */
export function roomForPartitions(dir: string): number {
  return partitionsThatFit(statfsSync(dir))
}

/** The partition directories set aside in dir (`<topic>-<partition>.<uuid>-stray`, see LogManager.moveAside). */
export function strayDirectories(dir: string): string[] {
  return readdirSync(dir).filter((name) => STRAY_DIR_PATTERN.test(name))
}

/**
 * Filesystems (statfs f_type, linux/magic.h) that only look like directories: a data directory there
 * would not hold data, and Node's recursive mkdir loops forever under /proc (mkdir answers ENOENT for
 * every level).
 */
const PSEUDO_FILESYSTEMS = new Map<number, string>([
  [0x9fa0, 'proc'], [0x62656572, 'sysfs'], [0x1cd1, 'devpts'], [0x27e0eb, 'cgroup'], [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'], [0x73636673, 'securityfs'], [0x74726163, 'tracefs'], [0xcafe4a11, 'bpf'],
  [0x42494e4d, 'binfmt_misc'], [0x6e736673, 'nsfs'], [0x62656570, 'configfs'], [0x6165676c, 'pstore'],
  [0xde5e81e4, 'efivarfs'], [0x19800202, 'mqueue'], [0x958458f6, 'hugetlbfs'], [0x0187, 'autofs'],
])

/**
 * Makes sure dir exists and can hold data, creating it and its missing parents one level at a time;
 * returns its absolute path. Throws a one-line Error for a path on a pseudo-filesystem (/proc, /sys,
 * ...), for a path through a file, and for a level that cannot be created.
 */
export function ensureDataDirectory(dir: string): string {
  const path = resolve(dir)
  const missing: string[] = []
  let existing = path
  for (;;) {
    let isDir: boolean
    try {
      isDir = statSync(existing).isDirectory()
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOTDIR') throw new Error(`log directory ${path}: a level of ${existing} is a file, not a directory`)
      if (code !== 'ENOENT') throw new Error(`log directory ${path}: cannot stat ${existing}: ${(err as Error).message}`)
      missing.push(existing)
      existing = dirname(existing)
      continue
    }
    if (!isDir) throw new Error(`log directory ${path}: ${existing} is not a directory`)
    break
  }
  const pseudo = PSEUDO_FILESYSTEMS.get(Number(statfsSync(existing).type))
  if (pseudo !== undefined) {
    throw new Error(`log directory ${path} is on a pseudo-filesystem (${pseudo} at ${existing}), which cannot hold data: choose a directory on a disk`)
  }
  for (const level of missing.reverse()) {
    try {
      mkdirSync(level)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new Error(`log directory ${path}: cannot create ${level}: ${(err as Error).message}`)
    }
  }
  return path
}

function lock(path: string): number {
  try {
    return native.lockFile(join(path, DATA_DIR_LOCK))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EWOULDBLOCK' || code === 'EAGAIN') {
      throw new Error(`data directory ${path} is in use by another broker or log (${DATA_DIR_LOCK} is locked)`)
    }
    throw err
  }
}
