// Helpers of the idempotence and transaction tests: batch headers straight from the broker's log, and
// everything a partition holds as Skein's consumer reads it (read_committed or not).
import { expect } from 'vitest'
import { Consumer, type ConsumedRecord } from '../../src/client/index.js'
import { recordsBuffer, type RawClient } from '../harness/index.js'

export interface BatchHeader {
  baseOffset: number
  producerId: number
  producerEpoch: number
  baseSequence: number
  count: number
  transactional: boolean
  control: boolean
}

/** The headers of every batch in a Fetch answer's records. */
export function batchHeaders(buf: Buffer): BatchHeader[] {
  const out: BatchHeader[] = []
  for (let pos = 0; pos + 61 <= buf.length; pos += 12 + buf.readInt32BE(pos + 8)) {
    if (pos + 12 + buf.readInt32BE(pos + 8) > buf.length) break
    const attributes = buf.readInt16BE(pos + 21)
    out.push({
      baseOffset: Number(buf.readBigInt64BE(pos)),
      producerId: Number(buf.readBigInt64BE(pos + 43)),
      producerEpoch: buf.readInt16BE(pos + 51),
      baseSequence: buf.readInt32BE(pos + 53),
      count: buf.readInt32BE(pos + 57),
      transactional: (attributes & 0x10) !== 0,
      control: (attributes & 0x20) !== 0,
    })
  }
  return out
}

/** Every batch header of a partition, fetched straight from the broker. */
export async function headersOf(raw: RawClient, topic: string, partition: number): Promise<BatchHeader[]> {
  const out: BatchHeader[] = []
  for (let offset = 0; ; ) {
    const p = await raw.fetch(topic, partition, offset, { partitionMaxBytes: 8 << 20, maxBytes: 8 << 20 })
    expect(p.errorCode).toBe(0)
    const hs = batchHeaders(recordsBuffer(p))
    if (hs.length === 0) return out
    out.push(...hs)
    const last = hs[hs.length - 1]!
    offset = last.baseOffset + last.count
  }
}

/** Reads partitions from the start with the Skein consumer until `expected` records arrived (plus a quiet moment). */
export async function consumeAll(bootstrap: string, topic: string, partitions: number[], expected: number, isolationLevel: 'read_committed' | 'read_uncommitted' = 'read_uncommitted'): Promise<ConsumedRecord[]> {
  const consumer = new Consumer({ bootstrapServers: bootstrap, isolationLevel, fetchMaxWaitMs: 100 })
  const out: ConsumedRecord[] = []
  try {
    consumer.assign(partitions.map((partition) => ({ topic, partition })))
    for (const partition of partitions) consumer.seek(topic, partition, 'earliest')
    const deadline = Date.now() + 30_000
    while (out.length < expected && Date.now() < deadline) out.push(...(await consumer.poll(200)))
    // Anything beyond `expected` (a duplicate) would show up now.
    for (let i = 0; i < 3; i++) out.push(...(await consumer.poll(100)))
  } finally {
    await consumer.close()
  }
  return out
}
