import { mkdtempSync, rmSync, readSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { native } from '../../src/addon/index.js'
import { buildRecordBatch, decodeRecords } from '../../src/protocol/records/index.js'
import type { DecodedRecord } from '../../src/protocol/records/index.js'
import { LONG_MAX } from '../../src/config/log-config.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../../src/storage/index.js'
import type { LogConfig, LogManagerOptions, PartitionLog, ReadResult } from '../../src/storage/index.js'

export const T0 = 1_700_000_000_000

export function tempDir(prefix = 'skein-storage-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) }
}

/**
 * The table's defaults, except a smaller index and no limit on how far a timestamp may lead the clock:
 * records built without a timestamp carry the wall clock, while most tests run storage on a clock fixed
 * at T0, which the table's one-hour message.timestamp.after.max.ms would refuse.
 */
export function config(overrides: Partial<LogConfig> = {}): LogConfig {
  return { ...DEFAULT_LOG_CONFIG, segmentIndexBytes: 64 * 1024, messageTimestampAfterMaxMs: LONG_MAX, ...overrides }
}

export function openManager(dataDir: string, overrides: Partial<LogConfig> = {}, opts: Partial<LogManagerOptions> = {}): LogManager {
  return LogManager.open({ dataDir, defaults: config(overrides), cleanShutdown: true, ...opts })
}

/** A batch of n records with values `<tag>-<i>` of about valueBytes each, all stamped ts. */
export function makeBatch(tag: string, n = 1, ts = T0, valueBytes = 0): Buffer {
  const pad = valueBytes > 0 ? '.'.repeat(valueBytes) : ''
  return buildRecordBatch(
    Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`${tag}-${i}${pad}`), timestamp: ts })),
    native.crc32c,
  )
}

/** The bytes of a read's regions, through the fds (as sendfile would send them). */
export function regionBytes(r: ReadResult): Buffer {
  const parts = r.regions.map((reg) => {
    const b = Buffer.alloc(reg.length)
    let done = 0
    while (done < reg.length) {
      const n = readSync(reg.fd, b, done, reg.length - done, reg.position + done)
      if (n === 0) throw new Error('short read')
      done += n
    }
    return b
  })
  return Buffer.concat(parts)
}

/** Decodes every record of every batch in buf. */
export function decodeAll(buf: Buffer): DecodedRecord[] {
  const out: DecodedRecord[] = []
  let pos = 0
  while (pos < buf.length) {
    out.push(...decodeRecords(buf, pos))
    pos += 12 + buf.readInt32BE(pos + 8)
  }
  return out
}

/** Reads the whole partition from offset (whole batches), releasing leases. */
export function readAll(m: LogManager, log: PartitionLog, from = log.logStartOffset): DecodedRecord[] {
  const r = log.read(from, 1 << 30)
  const recs = decodeAll(regionBytes(r))
  m.releaseLease(r.leaseId)
  return recs
}
