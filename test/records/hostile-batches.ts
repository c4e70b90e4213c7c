// Hand-built hostile producer batches (issue 30): each has a sound header and a correct CRC, so only a
// look at its records can refuse it. Shared by the record-walk, append-path and end-to-end tests.
import { constants as zlibConstants, crc32, deflateRawSync, gzipSync } from 'node:zlib'
import { native } from '../../src/addon/index.js'
import {
  ATTRIBUTES_OFFSET,
  COMPRESSION_MASK,
  CRC_OFFSET,
  CompressionType,
  LAST_OFFSET_DELTA_OFFSET,
  RECORD_BATCH_OVERHEAD,
  RECORD_COUNT_OFFSET,
} from '../../src/protocol/records/batch.js'
import { buildRecordBatch } from '../../src/protocol/records/builder.js'
import { compress } from '../../src/protocol/records/compression.js'
import { writeVarint } from '../../src/protocol/records/varint.js'

const MIB = 1024 * 1024
/** Zeros per deflate segment: large, so the per-segment flush bytes stay few (the bomb must fit max.message.bytes). */
const SEGMENT = 64 * MIB

/** A one-record uncompressed batch stamped now, the header the hostile batches start from. */
export function goodBatch(value = 'good', timestamp = Date.now()): Buffer {
  return buildRecordBatch([{ key: Buffer.from('k'), value: Buffer.from(value), timestamp }], native.crc32c)
}

/** header's batch with body as its records section, codec in its attributes, length and CRC made right. */
export function withBody(header: Buffer, body: Buffer, codec: number, recordCount = header.readInt32BE(RECORD_COUNT_OFFSET)): Buffer {
  const batch = Buffer.concat([header.subarray(0, RECORD_BATCH_OVERHEAD), body])
  batch.writeInt32BE(batch.length - 12, 8)
  batch.writeInt16BE((batch.readInt16BE(ATTRIBUTES_OFFSET) & ~COMPRESSION_MASK) | codec, ATTRIBUTES_OFFSET)
  batch.writeInt32BE(recordCount, RECORD_COUNT_OFFSET)
  batch.writeInt32BE(recordCount - 1, LAST_OFFSET_DELTA_OFFSET)
  batch.writeUInt32BE(native.crc32c(batch.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
  return batch
}

/** The records section of a batch (uncompressed). */
export function recordsSection(batch: Buffer): Buffer {
  return batch.subarray(RECORD_BATCH_OVERHEAD)
}

/**
 * A gzip stream of `zeroBytes` zeros preceded by `prefix` and followed by `suffix`, built without
 * holding the zeros: independent raw-deflate segments (sync-flushed, so they concatenate) of one
 * 64 MiB block of zeros repeated, then gzip's header and trailer around them.
 */
export function gzipOfZeros(zeroBytes: number, prefix = Buffer.alloc(0), suffix = Buffer.alloc(0)): Buffer {
  const sync = { finishFlush: zlibConstants.Z_SYNC_FLUSH, level: 9 }
  const zeros = Buffer.alloc(SEGMENT)
  const zeroSegment = deflateRawSync(zeros, sync)
  const parts: Buffer[] = [Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff])]
  let crc = crc32(prefix)
  if (prefix.length > 0) parts.push(deflateRawSync(prefix, sync))
  let left = zeroBytes
  while (left >= SEGMENT) {
    parts.push(zeroSegment)
    crc = crc32(zeros, crc)
    left -= SEGMENT
  }
  if (left > 0) {
    parts.push(deflateRawSync(Buffer.alloc(left), sync))
    crc = crc32(Buffer.alloc(left), crc)
  }
  parts.push(deflateRawSync(suffix)) // the final block
  crc = crc32(suffix, crc)
  const trailer = Buffer.alloc(8)
  trailer.writeUInt32LE(crc >>> 0, 0)
  trailer.writeUInt32LE((prefix.length + zeroBytes + suffix.length) % 2 ** 32, 4)
  parts.push(trailer)
  return Buffer.concat(parts)
}

/** The five batches of issue 30, by name. */
export function hostileBatches(): Record<string, Buffer> {
  const good = goodBatch()
  // A record whose value is 1 GiB of zeros: every byte up to the bomb limit is a legal value byte, so
  // only the decompressed-size bound stops it.
  const valueBytes = 1024 * MIB
  const head = Buffer.alloc(32)
  let p = writeVarint(head, 0, 0) // length, patched below
  const fieldsStart = p
  head[p++] = 0 // attributes
  p = writeVarint(head, p, 0) // timestampDelta
  p = writeVarint(head, p, 0) // offsetDelta
  p = writeVarint(head, p, -1) // key: null
  p = writeVarint(head, p, valueBytes)
  const recordLength = p - fieldsStart + valueBytes + 1 // + header count
  const prefix = Buffer.alloc(16)
  let q = writeVarint(prefix, 0, recordLength)
  q += head.copy(prefix, q, fieldsStart, p)
  return {
    'gzip batch of 1 GiB of zeros': withBody(good, gzipOfZeros(valueBytes, prefix.subarray(0, q), Buffer.from([0])), CompressionType.GZIP),
    'gzipped text that is not a record set': withBody(good, gzipSync(Buffer.from('this is plain text, not a record set. '.repeat(100))), CompressionType.GZIP),
    'a batch flagged gzip whose payload is not gzip': withBody(good, Buffer.from(recordsSection(good)), CompressionType.GZIP),
    'a 1-record batch declaring 1,000,000 records': withBody(good, compress(CompressionType.GZIP, recordsSection(good)), CompressionType.GZIP, 1_000_000),
    'an uncompressed batch with bytes after its last record': withBody(good, Buffer.concat([recordsSection(good), Buffer.from([0, 1, 2, 3, 4, 5, 6, 7])]), CompressionType.NONE),
  }
}
