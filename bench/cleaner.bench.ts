// Log cleaner benchmark (node dist/bench/cleaner.bench.js).
// 1. Cleaner throughput: a compacted partition of KEYS keys, each updated many times (100-byte values,
//    50-record batches, 1 MiB segments), cleaned in one pass on the calling thread (LogManager): MB of
//    log cleaned per second (a pass reads the dirty range twice: offset map, then copy), and how much of
//    it is left.
// 2. Interference: one shard thread (ShardRouter, ioThreads=1) holds that compacted partition and a
//    second one. Appends to the second partition (16 KiB batches, 4 in flight) are timed alone, then
//    while ShardRouter.compact cleans the first; the ratio says how much of its append rate a partition
//    keeps while the shard's cleaner runs (it yields every slice). Everything is fsync-free except the
//    cleaner's own fsyncs of the segments it writes.
// Env: BENCH_CLEANER_MB (log size to clean, default 48), BENCH_SECONDS (baseline append time, default 2).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { cpus } from 'node:os'
import { native } from '../src/addon/index.js'
import { silentLogger } from '../src/observability/logger.js'
import { buildRecordBatch } from '../src/protocol/records/index.js'
import { ShardRouter } from '../src/shard/index.js'
import type { CleanResult } from '../src/storage/index.js'
import { DEFAULT_LOG_CONFIG, LogManager } from '../src/storage/index.js'
import type { LogConfig } from '../src/storage/index.js'
import { makeBenchBatch } from './lib/storage-fixtures.js'

const MiB = 1024 * 1024
const logBytes = Number(process.env.BENCH_CLEANER_MB ?? 48) * MiB
const seconds = Number(process.env.BENCH_SECONDS ?? 2)
const KEYS = 20_000
const PER_BATCH = 50
const IN_FLIGHT = 4
const compacted: Partial<LogConfig> = { cleanupPolicy: 'compact', segmentBytes: MiB, segmentIndexBytes: 256 * 1024, minCleanableDirtyRatio: 0 }

/** Batches of updates cycling over KEYS keys, about logBytes in all. */
function* updates(): Generator<Buffer> {
  let written = 0
  let seq = 0
  while (written < logBytes) {
    const batch = buildRecordBatch(Array.from({ length: PER_BATCH }, () => {
      const k = seq++ % KEYS
      return { key: Buffer.from(`key-${k}`), value: Buffer.from(`${seq}`.padEnd(100, '.')) }
    }), native.crc32c)
    written += batch.length
    yield batch
  }
}

async function cleanerThroughput(): Promise<Record<string, string | number>> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-cleaner-'))
  const m = LogManager.open({ dataDir: dir, defaults: { ...DEFAULT_LOG_CONFIG, ...compacted }, cleanShutdown: true })
  try {
    const log = m.create('compacted', 0)
    for (const b of updates()) log.append(b, { leaderEpoch: 0 })
    const before = log.state().sizeBytes
    const t0 = performance.now()
    const r = await m.cleaner.clean(log, { force: true })
    const s = (performance.now() - t0) / 1000
    if (!r.cleaned) throw new Error(`pass did not clean: ${r.reason}`)
    return {
      'log MB': (before / MiB).toFixed(1), 'log MB/s': (before / MiB / s).toFixed(1), 'MB read/s': (r.bytesRead / MiB / s).toFixed(1),
      'kept %': ((100 * log.state().sizeBytes) / before).toFixed(1), 'records removed': r.recordsRemoved,
    }
  } finally {
    await m.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function interference(): Promise<Array<Record<string, string>>> {
  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-cleaner-shard-'))
  const router = await ShardRouter.start({
    dataDir: dir, ioThreads: 1, logger: silentLogger(), cleaner: { enable: false }, defaults: { ...DEFAULT_LOG_CONFIG, segmentBytes: 64 * MiB },
  })
  try {
    for (const c of await router.createPartitions([{ topic: 'compacted', partition: 0, overrides: compacted }, { topic: 'hot', partition: 0 }])) {
      if (!c.ok) throw new Error(c.message)
    }
    let pending: Buffer[] = []
    for (const b of updates()) {
      pending.push(b)
      if (pending.length === 20) {
        for (const r of await router.append(pending.map((records) => ({ topic: 'compacted', partition: 0, records, leaderEpoch: 0 })))) if (!r.ok) throw new Error(r.message)
        pending = []
      }
    }
    for (const r of await router.append(pending.map((records) => ({ topic: 'compacted', partition: 0, records, leaderEpoch: 0 })))) if (!r.ok) throw new Error(r.message)

    const { batch } = makeBenchBatch(100, 16 * 1024)
    const appendUntil = async (stop: () => boolean): Promise<{ bytes: number; seconds: number }> => {
      let bytes = 0
      const t0 = performance.now()
      const loop = async (): Promise<void> => {
        while (!stop()) {
          const b = Buffer.allocUnsafeSlow(batch.length)
          batch.copy(b)
          const [r] = await router.append([{ topic: 'hot', partition: 0, records: b, leaderEpoch: 0 }])
          if (!r!.ok) throw new Error(r!.message)
          bytes += batch.length
        }
      }
      await Promise.all(Array.from({ length: IN_FLIGHT }, loop))
      return { bytes, seconds: (performance.now() - t0) / 1000 }
    }
    const baselineEnd = performance.now() + seconds * 1000
    const alone = await appendUntil(() => performance.now() >= baselineEnd)

    let result: CleanResult | undefined
    let failure: string | undefined
    const pass = router.compact([{ topic: 'compacted', partition: 0, force: true }]).then(([o]) => {
      if (o!.ok) result = o!.value
      else failure = o!.message
    })
    // A call made in this turn would share the compact's batch (and wait for it): start next turn.
    await new Promise((resolve) => setImmediate(resolve))
    const during = await appendUntil(() => result !== undefined || failure !== undefined)
    await pass
    if (result === undefined || !result.cleaned) throw new Error(`compact failed: ${failure ?? result?.reason}`)
    const aloneRate = alone.bytes / MiB / alone.seconds
    const duringRate = during.bytes / MiB / during.seconds
    return [
      { setting: 'appends alone', 'append MB/s': aloneRate.toFixed(1), 'cleaner MB/s': '-', 'seconds': alone.seconds.toFixed(2), ratio: '1.00' },
      {
        setting: 'appends while cleaning', 'append MB/s': duringRate.toFixed(1), 'cleaner MB/s': (logBytes / MiB / (result.durationMs / 1000)).toFixed(1),
        'seconds': during.seconds.toFixed(2), ratio: (duringRate / aloneRate).toFixed(2),
      },
    ]
  } finally {
    await router.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

console.log(`cleaner benchmark: ${(logBytes / MiB).toFixed(0)} MiB of updates over ${KEYS} keys; ${cpus()[0]?.model ?? 'unknown cpu'} x${cpus().length}, node ${process.version}`)
console.log('\n1. one cleaning pass on this thread')
console.table([await cleanerThroughput()])
console.log('\n2. appends to another partition of the same shard thread, alone and during a pass')
console.table(await interference())
