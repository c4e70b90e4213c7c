// Shard benchmark (node dist/bench/shard.bench.js): append throughput of 100-byte records in 16 KiB
// batches across 6 partitions through ShardRouter, with ioThreads 0 (inline), 1 and 2.
// Each round is one router.append call with one batch per partition; ROUNDS_IN_FLIGHT rounds are kept
// outstanding, as a server with several producer connections would. Every batch is a fresh Buffer that
// owns its memory (a decoded request body), so the worker runs get it transferred, not copied.
// Env: BENCH_SECONDS (per setting, default 3), BENCH_APPEND_MB (cap per setting, default 512).
import { rmSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { silentLogger } from '../src/observability/logger.js'
import { ShardRouter } from '../src/shard/index.js'
import { DEFAULT_LOG_CONFIG } from '../src/storage/index.js'
import { makeBenchBatch } from './lib/storage-fixtures.js'

const MiB = 1024 * 1024
const seconds = Number(process.env.BENCH_SECONDS ?? 3)
const capBytes = Number(process.env.BENCH_APPEND_MB ?? 512) * MiB
const PARTITIONS = 6
const ROUNDS_IN_FLIGHT = 4

interface Row {
  ioThreads: number
  'records/s': string
  'MB/s': string
  batches: number
  'appends/message': string
}

async function run(ioThreads: number): Promise<Row> {
  const { batch, records } = makeBenchBatch(100, 16 * 1024)
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-shard-'))
  const router = await ShardRouter.start({
    dataDir: dir, ioThreads, logger: silentLogger(), defaults: { ...DEFAULT_LOG_CONFIG, segmentBytes: 64 * MiB },
  })
  try {
    const topic = 'bench'
    for (const c of await router.createPartitions(Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition })))) {
      if (!c.ok) throw new Error(c.message)
    }
    const fresh = (): Buffer => {
      const b = Buffer.allocUnsafeSlow(batch.length)
      batch.copy(b)
      return b
    }
    let batches = 0
    let bytes = 0
    const messagesBefore = router.messageCounts.reduce((a, b) => a + b, 0)
    const t0 = performance.now()
    const deadline = t0 + seconds * 1000
    const loop = async (): Promise<void> => {
      while (performance.now() < deadline && bytes < capBytes) {
        const items = Array.from({ length: PARTITIONS }, (_, partition) => ({ topic, partition, records: fresh(), leaderEpoch: 0 }))
        for (const r of await router.append(items)) {
          if (!r.ok) throw new Error(r.message)
          batches++
          bytes += batch.length
        }
      }
    }
    await Promise.all(Array.from({ length: ROUNDS_IN_FLIGHT }, loop))
    const elapsed = (performance.now() - t0) / 1000
    const messages = router.messageCounts.reduce((a, b) => a + b, 0) - messagesBefore
    return {
      ioThreads,
      'records/s': Math.round((batches * records) / elapsed).toLocaleString('en-US'),
      'MB/s': (bytes / MiB / elapsed).toFixed(1),
      batches,
      'appends/message': (batches / messages).toFixed(1),
    }
  } finally {
    await router.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

const rows: Row[] = []
for (const ioThreads of [0, 1, 2]) rows.push(await run(ioThreads))
console.log(`ShardRouter append: 100-byte records, 16 KiB batches, ${PARTITIONS} partitions, ${ROUNDS_IN_FLIGHT} rounds in flight, ${seconds}s per setting`)
console.table(rows)
