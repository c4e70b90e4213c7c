// Whether a data directory taken offline by a full disk has room again (the broker's retry of such a
// directory, log.dir.failure.retry.interval.ms): the filesystem must report at least the headroom free
// (statfs, blocks available to unprivileged users), and a real write must succeed, since a quota (EDQUOT)
// or reserved blocks do not show in statfs.
//
// File: <dataDir>/.skein-space-probe, written (up to PROBE_WRITE_BYTES), fsynced and removed at once. It
// holds nothing; one left by a crash in the middle of a probe is overwritten and removed by the next
// probe, and ignored by everything else (not a partition directory name).

import { statfs, open, rm } from 'node:fs/promises'
import { join } from 'node:path'

export const SPACE_PROBE_FILE = '.skein-space-probe'
/** The most a probe writes: enough to prove that writes go through again, small enough to cost nothing. */
const PROBE_WRITE_BYTES = 1024 * 1024

export interface LogDirSpace {
  /** Whether the directory can be used again. */
  ready: boolean
  /** Bytes available (statfs bavail), -1 when statfs failed. */
  freeBytes: number
  /** The headroom asked for: minFreeBytes, or half the filesystem when that is smaller. */
  requiredBytes: number
  /** Why it is not ready (too little free space, or the error of the probe's write). */
  reason?: string
}

/**
 * Checks dir's filesystem for room: at least minFreeBytes free, capped at half its size so that a small
 * filesystem can come back too; then writes, fsyncs and removes a probe file. Never throws.
 */
export async function probeLogDirSpace(dir: string, minFreeBytes: number): Promise<LogDirSpace> {
  let freeBytes = -1
  let requiredBytes = minFreeBytes
  try {
    const s = await statfs(dir)
    freeBytes = s.bavail * s.bsize
    requiredBytes = Math.min(minFreeBytes, Math.floor((s.blocks * s.bsize) / 2))
  } catch (err) {
    return { ready: false, freeBytes, requiredBytes, reason: `statfs failed: ${(err as Error).message}` }
  }
  if (freeBytes < requiredBytes) return { ready: false, freeBytes, requiredBytes, reason: `${freeBytes} bytes free, ${requiredBytes} wanted` }
  const path = join(dir, SPACE_PROBE_FILE)
  try {
    const fh = await open(path, 'w')
    try {
      await fh.write(Buffer.alloc(Math.max(1, Math.min(PROBE_WRITE_BYTES, requiredBytes))))
      await fh.sync()
    } finally {
      await fh.close()
    }
    return { ready: true, freeBytes, requiredBytes }
  } catch (err) {
    return { ready: false, freeBytes, requiredBytes, reason: `probe write failed: ${(err as Error).message}` }
  } finally {
    await rm(path, { force: true }).catch(() => {})
  }
}
