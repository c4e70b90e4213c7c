// The record batches of the validation benchmark (bench/validation.bench.ts): producer batches of 100
// keyed records in each codec, and a batch that only the record walk refuses (to check which variant a
// broker runs).
import { native } from '../../src/addon/index.js'
import { ATTRIBUTES_OFFSET, BATCH_LENGTH_OFFSET, CompressionType, CRC_OFFSET } from '../../src/protocol/records/batch.js'
import { buildRecordBatch } from '../../src/protocol/records/builder.js'
import { deflateBatch, inflateBatch } from '../../src/protocol/records/inflate.js'

export const RECORDS_PER_BATCH = 100

/** The codecs the validation benches measure, by the names Kafka's compression.type uses. */
export const VALIDATION_CODECS = [
  ['none', CompressionType.NONE],
  ['lz4', CompressionType.LZ4],
  ['zstd', CompressionType.ZSTD],
  ['snappy', CompressionType.SNAPPY],
  ['gzip', CompressionType.GZIP],
] as const

/**
 * 100 keyed records of ~100 B of JSON-like text (compressible as real payloads are; about 11 KB
 * uncompressed), timestamped from now, in codec: the codec's real compressed bytes, as a producer sends them.
 */
export function producerBatch(codec: CompressionType, now = Date.now()): Buffer {
  const records = Array.from({ length: RECORDS_PER_BATCH }, (_, i) => ({
    key: Buffer.from(`user-${(i * 7919) % 1000}`),
    value: Buffer.from(JSON.stringify({ id: i, at: now + i, event: i % 3 === 0 ? 'click' : 'view', page: `/items/${(i * 31) % 97}`, pad: 'x'.repeat(20) })),
    timestamp: now + i,
  }))
  const plain = buildRecordBatch(records, native.crc32c)
  if (codec === CompressionType.NONE) return plain
  const inflated = inflateBatch(plain, 1 << 20)
  return deflateBatch(inflated.header, inflated.records, codec)
}

/**
 * An uncompressed batch with 3 bytes after its last record, its length and CRC fixed up: its header and
 * CRC are sound, so only the record walk refuses it (CORRUPT_MESSAGE).
 */
export function trailingBytesBatch(): Buffer {
  const plain = buildRecordBatch([{ key: Buffer.from('k'), value: Buffer.from('v') }], native.crc32c)
  const batch = Buffer.concat([plain, Buffer.from([1, 2, 3])])
  batch.writeInt32BE(batch.readInt32BE(BATCH_LENGTH_OFFSET) + 3, BATCH_LENGTH_OFFSET)
  batch.writeUInt32BE(native.crc32c(batch.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
  return batch
}
