// Native IO core benchmark (node dist/bench/native.bench.js), tinybench, ~10 s in all:
//  1. CRC32C throughput on 16 KiB and 1 MiB buffers: native (SSE4.2 when the CPU has it) vs native
//     slicing-by-8 vs a JS slicing-by-8 (bench/lib/crc32c-js.ts). MB/s and ratio to JS.
//  2. Offset index lookup, 1M entries, random targets: native mmap'd index vs a JS binary search over
//     a Buffer holding the same bytes (bench/lib/js-index.ts). ns/lookup and ratio.
// Env: BENCH_TASK_MS (time per task, default 700).
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Bench } from 'tinybench'
import { native } from '../src/addon/index.js'
import { crc32cJs } from './lib/crc32c-js.js'
import { JsOffsetIndex } from './lib/js-index.js'

const taskMs = Number(process.env.BENCH_TASK_MS ?? 700)

function meanMs(bench: Bench, name: string): number {
  const task = bench.getTask(name)
  const result = task?.result
  if (result === undefined || !('latency' in result)) throw new Error(`benchmark task ${name} did not complete`)
  return result.latency.mean
}

async function crcBench(): Promise<Record<string, string | number>[]> {
  const rows: Record<string, string | number>[] = []
  for (const [label, size] of [['16 KiB', 16 * 1024], ['1 MiB', 1024 * 1024]] as const) {
    const data = randomBytes(size)
    const expected = crc32cJs(data)
    if (native.crc32c(data) !== expected || native.crc32cSoftware(data) !== expected) {
      throw new Error('CRC32C implementations disagree')
    }
    let sink = 0
    const bench = new Bench({ time: taskMs, warmupTime: 100 })
    bench
      .add('native', () => {
        sink ^= native.crc32c(data)
      })
      .add('native-software', () => {
        sink ^= native.crc32cSoftware(data)
      })
      .add('js', () => {
        sink ^= crc32cJs(data)
      })
    await bench.run()
    if (sink === 0.5) console.log(sink) // keeps the results observable
    const mbps = (name: string) => size / 1e6 / (meanMs(bench, name) / 1000)
    const js = mbps('js')
    rows.push(
      { bench: `crc32c ${label}`, impl: native.crc32cHardware() ? 'native (SSE4.2)' : 'native (table)', 'MB/s': Math.round(mbps('native')), 'x JS': (mbps('native') / js).toFixed(1) },
      { bench: `crc32c ${label}`, impl: 'native slicing-by-8', 'MB/s': Math.round(mbps('native-software')), 'x JS': (mbps('native-software') / js).toFixed(1) },
      { bench: `crc32c ${label}`, impl: 'JS slicing-by-8', 'MB/s': Math.round(js), 'x JS': '1.0' },
    )
  }
  return rows
}

async function indexBench(): Promise<Record<string, string | number>[]> {
  const n = 1_000_000
  const dir = mkdtempSync(join(tmpdir(), 'skein-native-bench-'))
  try {
    const path = join(dir, '00000000000000000000.index')
    const index = native.openIndex(path, 8, n * 8)
    let key = 0
    for (let i = 0; i < n; i++) {
      key += 1 + (i % 5)
      index.append(key, i * 4096)
    }
    index.flush()
    const js = new JsOffsetIndex(readFileSync(path))
    const maxKey = key
    const batch = 1000
    const targets = Array.from({ length: 64 * batch }, () => Math.floor(Math.random() * (maxKey + 10)))
    for (const t of targets.slice(0, 2000)) {
      if (index.lookup(t) !== js.lookup(t)) throw new Error(`index implementations disagree at ${t}`)
    }
    let cursor = 0
    let sink = 0
    const bench = new Bench({ time: taskMs, warmupTime: 100 })
    bench
      .add('native', () => {
        const start = (cursor = (cursor + batch) % targets.length)
        for (let i = 0; i < batch; i++) sink += index.lookup(targets[start + i]!)
      })
      .add('js', () => {
        const start = (cursor = (cursor + batch) % targets.length)
        for (let i = 0; i < batch; i++) sink += js.lookup(targets[start + i]!)
      })
    await bench.run()
    if (sink === 0.5) console.log(sink)
    index.close(false)
    const nsNative = (meanMs(bench, 'native') * 1e6) / batch
    const nsJs = (meanMs(bench, 'js') * 1e6) / batch
    return [
      { bench: 'index lookup 1M entries', impl: 'native mmap', 'ns/lookup': nsNative.toFixed(0), 'x JS': (nsJs / nsNative).toFixed(2) },
      { bench: 'index lookup 1M entries', impl: 'JS Buffer binary search', 'ns/lookup': nsJs.toFixed(0), 'x JS': '1.00' },
    ]
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const started = performance.now()
console.log(`CRC32C kernel: ${native.crc32cHardware() ? 'SSE4.2 crc32 instruction' : 'slicing-by-8 table'}`)
console.table(await crcBench())
console.table(await indexBench())
console.log(`native bench done in ${((performance.now() - started) / 1000).toFixed(1)} s`)
