// What validating every produced record costs (issue 30), per codec (npm run bench:validation):
// PartitionLog.append of the same ~16 KiB producer batches (100 records of ~100 B each, keyed), with
// the record walk (validated: every record's structure, compressed batches decompressed in bounded
// chunks) and without it (unvalidated: header and CRC only, what the append path did before, switched
// by benchOnlySkipRecordWalk). The two run side by side in one process, alternating A B A B, each round
// on a fresh partition that is deleted afterwards; the table gives the median round of each: records
// appended per second of wall time, and CPU time (user + system) per record.
// Env: BENCH_ROUNDS (rounds per variant, default 6), BENCH_ROUND_MS (default 500).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { native } from '../src/addon/index.js'
import { CompressionType } from '../src/protocol/records/batch.js'
import { buildRecordBatch } from '../src/protocol/records/builder.js'
import { deflateBatch, inflateBatch } from '../src/protocol/records/inflate.js'
import { benchOnlySkipRecordWalk } from '../src/protocol/records/validate.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../src/storage/index.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6)
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 500)
const RECORDS = 100
const CODECS = [
  ['none', CompressionType.NONE],
  ['lz4', CompressionType.LZ4],
  ['zstd', CompressionType.ZSTD],
  ['snappy', CompressionType.SNAPPY],
  ['gzip', CompressionType.GZIP],
] as const

/** 100 keyed records of ~100 B of JSON-like text (compressible as real payloads are), in codec. */
function producerBatch(codec: CompressionType): Buffer {
  const now = Date.now()
  const records = Array.from({ length: RECORDS }, (_, i) => ({
    key: Buffer.from(`user-${(i * 7919) % 1000}`),
    value: Buffer.from(JSON.stringify({ id: i, at: now + i, event: i % 3 === 0 ? 'click' : 'view', page: `/items/${(i * 31) % 97}`, pad: 'x'.repeat(20) })),
    timestamp: now + i,
  }))
  const plain = buildRecordBatch(records, native.crc32c)
  if (codec === CompressionType.NONE) return plain
  const inflated = inflateBatch(plain, 1 << 20)
  return deflateBatch(inflated.header, inflated.records, codec)
}

interface Round {
  recordsPerSecond: number
  cpuNsPerRecord: number
}

const dir = mkdtempSync(join(tmpdir(), 'skein-bench-validation-'))
const manager = LogManager.open({ dataDir: dir, defaults: { ...DEFAULT_LOG_CONFIG, compressionType: 'producer' }, cleanShutdown: true })
let partition = 0

/** Appends batch to a fresh partition for ROUND_MS, then deletes the partition. */
function round(batch: Buffer, validated: boolean): Round {
  benchOnlySkipRecordWalk(!validated)
  const p = partition++
  const log = manager.create('bench', p)
  let n = 0
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  let t = t0
  while (t - t0 < ROUND_MS) {
    for (let i = 0; i < 32; i++) log.append(batch, { leaderEpoch: 0 })
    n += 32
    t = performance.now()
  }
  const cpu = process.cpuUsage(cpu0)
  manager.delete('bench', p)
  benchOnlySkipRecordWalk(false)
  const records = n * RECORDS
  return { recordsPerSecond: records / ((t - t0) / 1000), cpuNsPerRecord: ((cpu.user + cpu.system) * 1000) / records }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2
}

const rows: Record<string, string | number>[] = []
try {
  for (const [name, codec] of CODECS) {
    const batch = producerBatch(codec)
    // Warm-up of both paths (JIT, codec contexts), not measured.
    round(batch, true)
    round(batch, false)
    const a: Round[] = []
    const b: Round[] = []
    for (let i = 0; i < ROUNDS; i++) {
      a.push(round(batch, true))
      b.push(round(batch, false))
    }
    const va = median(a.map((r) => r.recordsPerSecond))
    const vb = median(b.map((r) => r.recordsPerSecond))
    const ca = median(a.map((r) => r.cpuNsPerRecord))
    const cb = median(b.map((r) => r.cpuNsPerRecord))
    rows.push({
      codec: name,
      'batch B': batch.length,
      'validated rec/s': Math.round(va),
      'unvalidated rec/s': Math.round(vb),
      'throughput ratio': +(va / vb).toFixed(3),
      'validated CPU ns/rec': Math.round(ca),
      'unvalidated CPU ns/rec': Math.round(cb),
      'CPU ratio': +(ca / cb).toFixed(3),
    })
  }
} finally {
  await manager.close()
  rmSync(dir, { recursive: true, force: true })
}
console.log(`PartitionLog.append, ${RECORDS} records per batch, ${ROUNDS} alternating rounds of ${ROUND_MS} ms per variant (medians)`)
console.table(rows)
