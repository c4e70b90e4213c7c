// Consume at the batch level: one raw connection reads a topic from the start with Fetch v12 requests
// for all its partitions, one at a time, and counts records from each record batch's header
// (recordCount) without decoding the records, as a follower replica or a batch-forwarding mirror reads.
// It measures what the broker's zero-copy fetch path serves when the consumer's per-record decoding is
// taken out, so that the consume figures can be split into broker cost and client cost. Each batch's
// CRC is not checked either (that is per byte, on the consumer's side).
import { performance } from 'node:perf_hooks'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import { RawClient } from '../../test/harness/raw-client.js'

export interface RawConsumeResult {
  records: number
  bytes: number
  fetches: number
  recordsPerSec: number
  mbPerSec: number
}

// Record batch v2 header: baseOffset int64 @0, batchLength int32 @8 (bytes after this field),
// lastOffsetDelta int32 @23, recordCount int32 @57; 61 bytes in all.
const BATCH_HEADER_BYTES = 61

/** Reads `records` records of `topic` (partitions 0..partitions-1) from offset 0; rejects if the log holds fewer. */
export async function rawConsume(port: number, topic: string, partitions: number, records: number): Promise<RawConsumeResult> {
  const client = await RawClient.connect('127.0.0.1', port, 30000)
  try {
    const next = new Array<number>(partitions).fill(0)
    let counted = 0
    let bytes = 0
    let fetches = 0
    let idleFetches = 0
    const request = (): Promise<Fetch.FetchResponse> => {
      const req = Fetch.createFetchRequest({
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: 16 * 1024 * 1024,
        topics: [Fetch.createFetchTopic({
          topic,
          partitions: next.map((offset, partition) => Fetch.createFetchPartition({ partition, fetchOffset: BigInt(offset), partitionMaxBytes: 2 * 1024 * 1024 })),
        })],
      })
      fetches++
      return client.call(1, 12, (w) => Fetch.encodeFetchRequest(w, req, 12), Fetch.decodeFetchResponse)
    }
    const t0 = performance.now()
    while (counted < records) {
      const res = await request()
      let progressed = false
      for (const p of res.responses[0]!.partitions) {
        if (p.errorCode !== 0) throw new Error(`Fetch ${topic}-${p.partitionIndex}: error ${p.errorCode}`)
        const buf = p.records
        if (!Buffer.isBuffer(buf)) continue
        bytes += buf.length
        let pos = 0
        // Whole batches only: the last one may be cut at the partition's max bytes.
        while (pos + BATCH_HEADER_BYTES <= buf.length) {
          const batchEnd = pos + 12 + buf.readInt32BE(pos + 8)
          if (batchEnd > buf.length) break
          const base = Number(buf.readBigInt64BE(pos))
          if (base + buf.readInt32BE(pos + 23) >= next[p.partitionIndex]!) {
            counted += buf.readInt32BE(pos + 57)
            next[p.partitionIndex] = base + buf.readInt32BE(pos + 23) + 1
            progressed = true
          }
          pos = batchEnd
        }
      }
      if (!progressed && ++idleFetches > 50) throw new Error(`${topic} holds fewer than ${records} records (read ${counted})`)
    }
    const seconds = (performance.now() - t0) / 1000
    return { records: counted, bytes, fetches, recordsPerSec: counted / seconds, mbPerSec: bytes / 2 ** 20 / seconds }
  } finally {
    client.close()
  }
}
