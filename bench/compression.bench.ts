// Record compression benchmark (node dist/bench/compression.bench.js), tinybench, ~10 s in all.
// For each codec (src/protocol/records/compression.ts, as the broker uses it): compression ratio and
// compress / bounded-decompress throughput in MB/s of uncompressed data, on ~16 KiB records sections of
// realistic data (JSON events and access-log lines, encoded as RecordBatch v2 records), plus the cost
// of a whole-batch recompression (inflateBatch + deflateBatch) as the append path does it.
// Env: BENCH_TASK_MS (time per task, default 250).
import { Bench } from 'tinybench'
import { native } from '../src/addon/index.js'
import { buildRecordBatch, type RecordInput } from '../src/protocol/records/builder.js'
import { CODEC_NAMES, compress, decompress } from '../src/protocol/records/compression.js'
import { deflateBatch, inflateBatch } from '../src/protocol/records/inflate.js'
import { RECORD_BATCH_OVERHEAD, type CompressionType } from '../src/protocol/records/batch.js'

const taskMs = Number(process.env.BENCH_TASK_MS ?? 250)
const TARGET = 16 * 1024

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

function meanMs(bench: Bench, name: string): number {
  const result = bench.getTask(name)?.result
  if (result === undefined || !('latency' in result)) throw new Error(`benchmark task ${name} did not complete`)
  return result.latency.mean
}

const mbps = (bytes: number, ms: number): number => Math.round(bytes / 1e6 / (ms / 1000))

async function main(): Promise<void> {
  const rows: Record<string, string | number>[] = []
  for (const [dataset, records] of [['json events', jsonRecords()], ['log lines', logRecords()]] as const) {
    const batch = buildRecordBatch(records, native.crc32c)
    const section = batch.subarray(RECORD_BATCH_OVERHEAD)
    const inflated = inflateBatch(batch, 1 << 24)
    for (let codec = 1; codec <= 4; codec++) {
      const z = compress(codec, section)
      if (!decompress(codec, z, section.length).equals(section)) throw new Error(`codec ${codec} does not round trip`)
      const compressedBatch = deflateBatch(inflated.header, inflated.records, codec as CompressionType)
      let sink = 0
      const bench = new Bench({ time: taskMs, warmupTime: 50 })
      bench
        .add('compress', () => {
          sink ^= compress(codec, section).length
        })
        .add('decompress', () => {
          sink ^= decompress(codec, z, 1 << 24).length
        })
        .add('recompress', () => {
          // What the append path does for a batch whose codec differs: decode, re-encode, CRC.
          const b = inflateBatch(compressedBatch, 1 << 24)
          sink ^= deflateBatch(b.header, b.records, (codec === 4 ? 1 : codec + 1) as CompressionType).length
        })
      await bench.run()
      if (sink === 0.5) console.log(sink)
      rows.push({
        data: dataset,
        codec: CODEC_NAMES[codec]!,
        'records': records.length,
        'bytes in': section.length,
        'bytes out': z.length,
        ratio: Number((section.length / z.length).toFixed(2)),
        'compress MB/s': mbps(section.length, meanMs(bench, 'compress')),
        'decompress MB/s': mbps(section.length, meanMs(bench, 'decompress')),
        'batch recompress µs': Math.round(meanMs(bench, 'recompress') * 1000),
      })
    }
  }
  console.log('Record compression, ~16 KiB records sections (MB/s of uncompressed bytes; recompress = inflateBatch + deflateBatch to the next codec)')
  console.table(rows)
}

await main()
