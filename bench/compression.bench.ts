// Record compression benchmark (node dist/bench/compression.bench.js), ~10 s in all.
// The measurement is `skein bench compression`'s (src/cli/bench-compression.ts): each codec and level on
// Kafka record batches cut at batch.size 16384, ratio and compress / bounded-decompress MB/s per core;
// here on two synthetic datasets (JSON events and access-log lines) so that runs compare. Added: the cost
// of a whole-batch recompression (inflateBatch + deflateBatch) as the broker's append path does it when a
// topic's compression.type differs from the producer's.
// Env: BENCH_TASK_MS (time per measurement, default 250).
import { Bench } from 'tinybench'
import { CODECS, cutBatches, DEFAULT_LEVELS, measure, resultTable, textChart } from '../src/cli/bench-compression.js'
import { deflateBatch, inflateBatch } from '../src/protocol/records/inflate.js'
import { type CompressionType } from '../src/protocol/records/batch.js'
import type { RecordInput } from '../src/protocol/records/builder.js'

const taskMs = Number(process.env.BENCH_TASK_MS ?? 250)
const TARGET = 256 * 1024

/** A deterministic pseudo-random sequence, so runs compare. */
function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 0x1_0000_0000
  }
}

function jsonRecords(): RecordInput[] {
  const r = rng(1)
  const actions = ['page_view', 'click', 'add_to_cart', 'purchase', 'search', 'logout']
  const out: RecordInput[] = []
  let size = 0
  for (let i = 0; size < TARGET; i++) {
    const event = {
      eventId: `${(r() * 1e16).toString(16)}-${i}`,
      userId: `user-${Math.floor(r() * 5000)}`,
      action: actions[Math.floor(r() * actions.length)],
      ts: 1_700_000_000_000 + i * 37,
      page: `/catalog/${Math.floor(r() * 300)}/item/${Math.floor(r() * 10000)}`,
      price: Math.round(r() * 10000) / 100,
      device: { os: r() < 0.5 ? 'android' : 'ios', version: `${Math.floor(r() * 5) + 10}.${Math.floor(r() * 10)}` },
    }
    const value = Buffer.from(JSON.stringify(event))
    out.push({ key: Buffer.from(event.userId), value, timestamp: event.ts })
    size += value.length + 20
  }
  return out
}

function logRecords(): RecordInput[] {
  const r = rng(2)
  const paths = ['/api/v1/orders', '/api/v1/users/me', '/static/app.js', '/health', '/api/v1/search?q=shoes']
  const out: RecordInput[] = []
  let size = 0
  for (let i = 0; size < TARGET; i++) {
    const ip = `10.${Math.floor(r() * 255)}.${Math.floor(r() * 255)}.${Math.floor(r() * 255)}`
    const status = r() < 0.9 ? 200 : r() < 0.5 ? 404 : 500
    const line = `${ip} - - [14/Nov/2023:22:13:${String(i % 60).padStart(2, '0')} +0000] "GET ${paths[Math.floor(r() * paths.length)]} HTTP/1.1" ${status} ${Math.floor(r() * 50000)} "-" "Mozilla/5.0 (X11; Linux x86_64)" rt=${(r() * 0.5).toFixed(3)}`
    const value = Buffer.from(line)
    out.push({ key: null, value, timestamp: 1_700_000_000_000 + i })
    size += value.length + 12
  }
  return out
}

async function recompressMicros(batches: readonly Buffer[], codec: number): Promise<number> {
  const compressed = batches.map((b) => {
    const inflated = inflateBatch(b, 1 << 24)
    return deflateBatch(inflated.header, inflated.records, codec as CompressionType)
  })
  let sink = 0
  const bench = new Bench({ time: taskMs, warmupTime: 50 })
  bench.add('recompress', () => {
    for (const c of compressed) {
      const b = inflateBatch(c, 1 << 24)
      sink ^= deflateBatch(b.header, b.records, (codec === 4 ? 1 : codec + 1) as CompressionType).length
    }
  })
  await bench.run()
  if (sink === 0.5) console.log(sink)
  const result = bench.getTask('recompress')?.result
  if (result === undefined || !('latency' in result)) throw new Error('benchmark task recompress did not complete')
  return (result.latency.mean * 1000) / compressed.length
}

async function main(): Promise<void> {
  for (const [dataset, records] of [['json events', jsonRecords()], ['log lines', logRecords()]] as const) {
    const batches = cutBatches(records.map((r) => r.value as Buffer), 16384, 1_700_000_000_000)
    const results = CODECS.flatMap((codec) => DEFAULT_LEVELS[codec].map((level) => measure(batches, codec, level, taskMs)))
    console.log(`\nRecord compression, ${dataset}: ${records.length} records in ${batches.length} batches of batch.size 16384`)
    process.stdout.write(resultTable(results) + textChart(results))
    const recompress: string[] = []
    for (let codec = 1; codec <= 4; codec++) recompress.push(`${CODECS[codec]} -> ${CODECS[codec === 4 ? 1 : codec + 1]}: ${(await recompressMicros(batches, codec)).toFixed(0)} µs`)
    console.log(`Batch recompression (inflateBatch + deflateBatch, per batch): ${recompress.join(', ')}`)
  }
}

await main()
