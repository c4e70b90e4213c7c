// Random-offset fetch latency against the size of the retained log. One partition is filled through the
// broker's Produce path (64 KiB batches of 100-byte records, several requests in flight on one raw
// connection) up to a size, then single Fetch requests (max.wait 0, partition max bytes 1: the broker
// answers with the one batch holding the offset) at uniformly random offsets are timed one at a time.
// The log then grows to the next size and the fetches are repeated, so the sizes share one partition
// and differ only in how much log (how many segments, index entries) lies around the offsets. On a
// machine with more RAM than log, the page cache holds it all: this measures the lookup (segment, offset
// index, scan to the batch) and the response path, not the disk. 200 fetches at each size warm the path
// first and are not counted.
import { performance } from 'node:perf_hooks'
import { native } from '../../src/addon/index.js'
import { buildRecordBatch } from '../../src/protocol/records/index.js'
import { RawClient, recordsBuffer } from '../../test/harness/raw-client.js'
import { LatencyRecorder } from '../../src/cli/stats.js'

const BATCH_BYTES = 64 * 1024
const IN_FLIGHT = 16

export interface FetchPoint {
  logBytes: number
  logEndOffset: number
  fetches: number
  fillMBps: number
  latencyMs: { avg: number; p50: number; p99: number; max: number }
}

function batchOf100ByteRecords(): { batch: Buffer; records: number } {
  const value = Buffer.alloc(100, 0x63)
  const build = (n: number): Buffer => buildRecordBatch(Array.from({ length: n }, () => ({ value, timestamp: Date.now() })), native.crc32c)
  let records = Math.floor((BATCH_BYTES - 61) / 108)
  let batch = build(records)
  while (batch.length > BATCH_BYTES && records > 1) batch = build(--records)
  return { batch, records }
}

/** Grows partition 0 of `topic` to each size in turn (bytes, ascending) and times `fetches` random fetches at each. */
export async function fetchLatencyBySize(port: number, topic: string, sizes: readonly number[], fetches: number): Promise<FetchPoint[]> {
  const client = await RawClient.connect('127.0.0.1', port, 30000)
  try {
    const created = await client.createTopic(topic, 1)
    if (created.errorCode !== 0) throw new Error(`CreateTopics ${topic}: error ${created.errorCode} ${created.errorMessage ?? ''}`)
    const { batch, records } = batchOf100ByteRecords()
    let written = 0
    let leo = 0
    const points: FetchPoint[] = []
    for (const size of sizes) {
      const t0 = performance.now()
      const before = written
      const lane = async (): Promise<void> => {
        while (written < size) {
          written += batch.length
          const r = await client.produce(topic, 0, batch, 1)
          if (r.errorCode !== 0) throw new Error(`Produce: error ${r.errorCode}`)
          leo = Math.max(leo, Number(r.baseOffset) + records)
        }
      }
      await Promise.all(Array.from({ length: IN_FLIGHT }, lane))
      const fillMBps = (written - before) / 2 ** 20 / ((performance.now() - t0) / 1000)
      const lat = new LatencyRecorder(fetches, 1)
      // The first fetches of each size warm the path (JIT, index pages) and are not counted.
      const warmup = Math.min(200, fetches)
      for (let i = -warmup; i < fetches; i++) {
        const offset = Math.floor(Math.random() * leo)
        const f0 = performance.now()
        const p = await client.fetch(topic, 0, offset, { maxWaitMs: 0, partitionMaxBytes: 1, maxBytes: 1 })
        if (i >= 0) lat.record(performance.now() - f0)
        if (p.errorCode !== 0) throw new Error(`Fetch at ${offset}: error ${p.errorCode}`)
        const got = recordsBuffer(p)
        // The answer must be the batch holding the offset: base offset <= offset < base + count.
        if (got.length < 61) throw new Error(`Fetch at ${offset} returned ${got.length} bytes`)
        const base = Number(got.readBigInt64BE(0))
        const count = got.readInt32BE(57)
        if (base > offset || offset >= base + count) throw new Error(`Fetch at ${offset} returned batch ${base}..${base + count - 1}`)
      }
      const [p50, p99] = lat.percentiles([0.5, 0.99])
      points.push({ logBytes: written, logEndOffset: leo, fetches, fillMBps, latencyMs: { avg: lat.avg, p50: p50!, p99: p99!, max: lat.max } })
    }
    return points
  } finally {
    client.close()
  }
}
