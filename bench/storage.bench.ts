// Storage benchmark (node dist/bench/storage.bench.js):
//  1. append throughput of 100-byte records in 16 KiB batches through PartitionLog.append, against a
//     plain sequential fs.writeSync of the same bytes in the same run;
//  2. random-offset read (lookup) latency with 1, 10 and 100 segments, which should stay flat.
// Env: BENCH_APPEND_MB (default 256), BENCH_SECONDS (cap per append run, default 5), BENCH_READS.
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fillSegments, makeBenchBatch, openBenchLog, percentile } from './lib/storage-fixtures.js'

const MiB = 1024 * 1024
const targetBytes = Number(process.env.BENCH_APPEND_MB ?? 256) * MiB
const capMs = Number(process.env.BENCH_SECONDS ?? 5) * 1000
const reads = Number(process.env.BENCH_READS ?? 20000)

function appendBench(): Record<string, string | number>[] {
  const { batch, records } = makeBenchBatch(100, 16 * 1024)
  const rows: Record<string, string | number>[] = []

  const b = openBenchLog()
  let bytes = 0
  let n = 0
  let t0 = performance.now()
  while (bytes < targetBytes && performance.now() - t0 < capMs) {
    b.log.append(batch, { leaderEpoch: 0 })
    bytes += batch.length
    n++
  }
  const logMs = performance.now() - t0
  const logBytes = bytes
  const logRecords = n * records

  const dir = mkdtempSync(join(tmpdir(), 'skein-bench-plain-'))
  const fd = openSync(join(dir, 'plain.log'), 'w')
  bytes = 0
  t0 = performance.now()
  let pos = 0
  while (bytes < logBytes) {
    writeSync(fd, batch, 0, batch.length, pos)
    pos += batch.length
    bytes += batch.length
  }
  const plainMs = performance.now() - t0
  closeSync(fd)
  rmSync(dir, { recursive: true, force: true })

  const logMBs = logBytes / MiB / (logMs / 1000)
  const plainMBs = logBytes / MiB / (plainMs / 1000)
  rows.push({
    case: `PartitionLog.append (${batch.length} B batches, ${records} x 100 B records)`,
    'MiB': +(logBytes / MiB).toFixed(0),
    'MB/s': +logMBs.toFixed(1),
    'records/s': Math.round(logRecords / (logMs / 1000)),
    'vs plain': `${((logMBs / plainMBs) * 100).toFixed(0)}%`,
  })
  rows.push({
    case: 'fs.writeSync of the same bytes',
    'MiB': +(logBytes / MiB).toFixed(0),
    'MB/s': +plainMBs.toFixed(1),
    'records/s': Math.round(logRecords / (plainMs / 1000)),
    'vs plain': '100%',
  })
  void b.cleanup()
  return rows
}

async function readBench(): Promise<Record<string, string | number>[]> {
  const rows: Record<string, string | number>[] = []
  const { batch } = makeBenchBatch(100, 4 * 1024)
  for (const segments of [1, 10, 100]) {
    const b = openBenchLog({ segmentBytes: 256 * 1024, indexIntervalBytes: 4096 })
    fillSegments(b.log, batch, segments, 256 * 1024)
    const leo = b.log.logEndOffset
    const samples = new Float64Array(reads)
    let x = 12345
    for (let i = 0; i < reads; i++) {
      x ^= x << 13
      x ^= x >>> 17
      x ^= x << 5
      const off = (x >>> 0) % leo
      const t = performance.now()
      const r = b.log.read(off, 64 * 1024)
      samples[i] = (performance.now() - t) * 1000
      b.manager.releaseLease(r.leaseId)
    }
    samples.sort()
    rows.push({
      case: `random read, ${b.log.state().segmentCount} segments, ${leo} offsets`,
      'p50 µs': +percentile(samples, 50).toFixed(1),
      'p99 µs': +percentile(samples, 99).toFixed(1),
      'max µs': +samples[samples.length - 1]!.toFixed(1),
    })
    await b.cleanup()
  }
  return rows
}

console.log('Storage: append throughput')
console.table(appendBench())
console.log('Storage: read lookup latency (read() planning a 64 KiB fetch, regions only)')
console.table(await readBench())
