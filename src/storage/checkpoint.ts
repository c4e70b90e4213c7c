// Per-partition checkpoint files and the data directory's clean-shutdown marker.
//
// Checkpoint format (Kafka's OffsetCheckpointFile, text, '\n' line ends):
//   line 1: version, always 0
//   line 2: number of entries (here always 1: one owner per partition, one file per partition dir)
//   line 3: "<topic> <partition> <offset>"
// Files: <dataDir>/<topic>-<partition>/recovery-point-offset-checkpoint (offset below which every
// segment has been fsynced) and .../log-start-offset-checkpoint (DeleteRecords / retention floor).
// Written atomically (tmp + fsync + rename + dir fsync), so a crash leaves the old or the new value.
// Recovery: a missing or malformed file (or one naming another partition) reads as absent, which means
// "recover everything" for the recovery point and "first segment's base offset" for the log start.
// Both meanings equal those of the value 0, so a partition writes no file while its value is 0 (a new
// partition writes none until its offsets move: creating thousands of partitions costs no fsyncs).
//
// Clean-shutdown marker: an empty file <dataDir>/.kafka_cleanshutdown, written by the owner of the whole
// directory after every partition was closed, and removed when the directory is opened again. If it is
// absent on open, the previous run did not close its logs and every partition re-validates its segments
// from its recovery point on.
//
// Directory lock: <dataDir>/.lock carries an exclusive flock held by the directory's owner for as long as
// it has the directory open (Kafka's `.lock`). The file itself is empty and stays; the lock dies with the
// owning process, so a crash leaves nothing stale.

import { closeSync, existsSync, openSync, readFileSync, rmSync, constants } from 'node:fs'
import { join } from 'node:path'
import { native } from '../addon/index.js'
import { fsyncDir, fsyncFd, writeFileAtomic } from './durability.js'

export const RECOVERY_POINT_CHECKPOINT = 'recovery-point-offset-checkpoint'
export const LOG_START_OFFSET_CHECKPOINT = 'log-start-offset-checkpoint'
export const CLEAN_SHUTDOWN_MARKER = '.kafka_cleanshutdown'
const MAX_CHECKPOINT_BYTES = 4096

/** Reads one partition's offset from a checkpoint file, or undefined when absent or unusable. */
export function readCheckpoint(path: string, topic: string, partition: number): number | undefined {
  let text: string
  try {
    const buf = readFileSync(path)
    if (buf.length > MAX_CHECKPOINT_BYTES) return undefined
    text = buf.toString('utf8')
  } catch {
    return undefined
  }
  const lines = text.split('\n')
  if (lines[0] !== '0') return undefined
  const count = Number(lines[1])
  if (!Number.isInteger(count) || count < 0 || count > 1000) return undefined
  for (let i = 0; i < count; i++) {
    const parts = (lines[2 + i] ?? '').split(' ')
    if (parts.length !== 3) return undefined
    const offset = Number(parts[2])
    if (parts[0] === topic && Number(parts[1]) === partition && Number.isSafeInteger(offset) && offset >= 0) return offset
  }
  return undefined
}

export function formatCheckpoint(topic: string, partition: number, offset: number): string {
  return `0\n1\n${topic} ${partition} ${offset}\n`
}

export function writeCheckpoint(path: string, topic: string, partition: number, offset: number): Promise<void> {
  return writeFileAtomic(path, formatCheckpoint(topic, partition, offset))
}

/** True if the marker existed (the last run closed cleanly); removes it either way. */
export function readAndClearCleanShutdownMarker(dataDir: string): boolean {
  const path = join(dataDir, CLEAN_SHUTDOWN_MARKER)
  if (!existsSync(path)) return false
  rmSync(path, { force: true })
  return true
}

/**
 * Writes the marker. Synchronous so that a shutdown path can call it last; the fsyncs go through the
 * addon but are awaited by writeCleanShutdownMarkerDurably when the caller can wait.
 */
export function writeCleanShutdownMarker(dataDir: string): void {
  const fd = openSync(join(dataDir, CLEAN_SHUTDOWN_MARKER), constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o644)
  closeSync(fd)
}

/** writeCleanShutdownMarker, then fsync of the file and the directory. */
export async function writeCleanShutdownMarkerDurably(dataDir: string): Promise<void> {
  writeCleanShutdownMarker(dataDir)
  const fd = openSync(join(dataDir, CLEAN_SHUTDOWN_MARKER), constants.O_RDONLY)
  try {
    await fsyncFd(fd, false)
  } finally {
    closeSync(fd)
  }
  await fsyncDir(dataDir)
}

export const DATA_DIR_LOCK = '.lock'

/** Takes the data directory's lock; throws a clear error when another process (or owner) holds it. */
export function lockDataDir(dataDir: string): number {
  try {
    return native.lockFile(join(dataDir, DATA_DIR_LOCK))
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EWOULDBLOCK' || code === 'EAGAIN') {
      throw new Error(`data directory ${dataDir} is in use by another broker or log (${DATA_DIR_LOCK} is locked)`)
    }
    throw err
  }
}

export function unlockDataDir(fd: number): void {
  if (fd >= 0) closeSync(fd)
}
