// A/B comparisons that need benchmark.js's statistics (node dist/bench/ab.bench.js): each pair runs
// side by side in one process, and the table says whether the difference is significant (benchmark.js
// compares the two sample sets with a Mann-Whitney U / t-test) rather than trusting one mean.
//  1. Produce-path batch check of a 16 KiB batch: CRC32C by the native addon vs by JavaScript.
//  2. Index lookup of random offsets in a 1M-entry offset index: native mmap vs a JS Buffer search.
import benchmark from 'benchmark'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { native } from '../src/addon/index.js'
import { checkBatchIntegrity } from '../src/protocol/records/batch.js'
import { buildRecordBatch } from '../src/protocol/records/builder.js'
import { crc32cJs } from './lib/crc32c-js.js'
import { JsOffsetIndex } from './lib/js-index.js'

interface Row {
  comparison: string
  variant: string
  'ops/s': number
  '± %': string
  samples: number
  verdict: string
}

function runPair(comparison: string, a: [string, () => void], b: [string, () => void]): Promise<Row[]> {
  return new Promise((resolve) => {
    const suite = new benchmark.Suite()
    suite.add(a[0], a[1], { maxTime: 2 }).add(b[0], b[1], { maxTime: 2 })
    suite.on('complete', function (this: benchmark.Suite) {
      const benches = (this as unknown as benchmark[]).slice(0, 2)
      const [x, y] = benches
      // compare(): 1 when x is faster, -1 when slower, 0 when the samples cannot tell them apart.
      const cmp = x!.compare(y!)
      const faster = x!.hz >= y!.hz ? x! : y!
      const slower = faster === x ? y! : x!
      const significant = cmp !== 0 && (cmp > 0) === (faster === x)
      const ratio = `${(faster as unknown as { name: string }).name} ${(faster.hz / slower.hz).toFixed(2)}x faster`
      const verdict = significant ? `${ratio} (significant)` : `${ratio} (not significant)`
      resolve(
        benches.map((bm, i) => ({
          comparison,
          variant: (bm as unknown as { name: string }).name,
          'ops/s': Math.round(bm.hz),
          '± %': bm.stats.rme.toFixed(1),
          samples: bm.stats.sample.length,
          verdict: i === 0 ? verdict : '',
        })),
      )
    })
    suite.run({ async: true })
  })
}

const nativeCrc = (data: Uint8Array, seed?: number): number => native.crc32c(data, seed)
const records = Array.from({ length: 148 }, (_, i) => ({ value: Buffer.alloc(100, i & 0xff) }))
const batch = buildRecordBatch(records, nativeCrc)
let sink = 0

const rows: Row[] = []
rows.push(
  ...(await runPair(
    `validate a ${batch.length} B batch (header + CRC32C)`,
    ['native CRC32C', () => void (sink += checkBatchIntegrity(batch, 0, batch.length, nativeCrc) === null ? 1 : 0)],
    ['JS CRC32C', () => void (sink += checkBatchIntegrity(batch, 0, batch.length, crc32cJs) === null ? 1 : 0)],
  )),
)

const dir = mkdtempSync(join(tmpdir(), 'skein-ab-'))
try {
  const n = 1_000_000
  const path = join(dir, '00000000000000000000.index')
  const index = native.openIndex(path, 8, n * 8)
  for (let i = 0; i < n; i++) index.append(i * 3, i * 4096)
  index.flush()
  const js = new JsOffsetIndex(readFileSync(path))
  const targets = Array.from({ length: 1 << 16 }, () => Math.floor(Math.random() * n * 3))
  let cursor = 0
  rows.push(
    ...(await runPair(
      'offset index lookup, 1M entries, random targets',
      ['native mmap', () => void (sink += index.lookup(targets[(cursor = (cursor + 1) & 0xffff)]!))],
      ['JS Buffer search', () => void (sink += js.lookup(targets[(cursor = (cursor + 1) & 0xffff)]!))],
    )),
  )
  index.close(false)
} finally {
  rmSync(dir, { recursive: true, force: true })
}
if (sink === 0.5) console.log(sink)
console.log('A/B comparisons (benchmark.js)')
console.table(rows)
