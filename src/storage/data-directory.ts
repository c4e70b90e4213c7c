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

import { closeSync, existsSync, mkdirSync, openSync, rmSync, statfsSync, constants } from 'node:fs'
import type { StatsFs } from 'node:fs'
import { join, resolve } from 'node:path'
import { native } from '../addon/index.js'

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
    const path = resolve(dir)
    mkdirSync(path, { recursive: true })
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
