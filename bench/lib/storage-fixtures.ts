// Fixtures for the storage benchmark: record batches of a given shape and logs with N segments.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { native } from '../../src/addon/index.js'
import { buildRecordBatch } from '../../src/protocol/records/index.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../../src/storage/index.js'
import type { LogConfig, PartitionLog } from '../../src/storage/index.js'

/** One uncompressed batch of recordBytes-sized values filling about batchBytes. */
export function makeBenchBatch(recordBytes: number, batchBytes: number): { batch: Buffer; records: number } {
  const value = Buffer.alloc(recordBytes, 0x61)
  const build = (n: number): Buffer => buildRecordBatch(Array.from({ length: n }, () => ({ value, timestamp: Date.now() })), native.crc32c)
  // Records carry a few bytes of varint framing each: start from an estimate, then shrink to fit.
  let records = Math.max(1, Math.floor((batchBytes - 61) / (recordBytes + 8)))
  let batch = build(records)
  while (batch.length > batchBytes && records > 1) batch = build(--records)
  return { batch, records }
}

export interface BenchLog {
  manager: LogManager
  log: PartitionLog
  dir: string
  cleanup(): Promise<void>
}

export function openBenchLog(overrides: Partial<LogConfig> = {}): BenchLog {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-'))
  const manager = LogManager.open({ dataDir: dir, defaults: { ...DEFAULT_LOG_CONFIG, ...overrides }, cleanShutdown: true })
  const log = manager.create('bench', 0)
  return {
    manager,
    log,
    dir,
    async cleanup() {
      await manager.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** Appends copies of batch until the log has `segments` full segments of segmentBytes. */
export function fillSegments(log: PartitionLog, batch: Buffer, segments: number, segmentBytes: number): void {
  const total = segments * Math.floor(segmentBytes / batch.length)
  for (let i = 0; i < total; i++) log.append(batch, { leaderEpoch: 0 })
}

export function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}
