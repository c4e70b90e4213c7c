// Decoding and re-encoding whole RecordBatch v2 entries, compressed or not: for the append path when a
// topic needs its records looked at (compression.type differs from the producer's codec, or a compacted
// topic must reject keyless records) and for the log cleaner, which rewrites batches without the records
// it drops.
//
// Contract (stable; the log cleaner builds on it):
//   inflateBatch(batch, maxRecordBytes) -> { header, compression, records }
//     batch is one whole batch (LOG_OVERHEAD + batchLength bytes, more bytes after it are ignored).
//     The CRC is not checked here (the append path and recovery already did). Records keep their
//     offsetDelta / timestampDelta relative to the header; key, value and header values are views into
//     the batch (uncompressed) or into the decompressed buffer, never copies. maxRecordBytes bounds the
//     decompressed records section. Malformed input throws KafkaError(INVALID_RECORD), an unknown codec
//     KafkaError(UNSUPPORTED_COMPRESSION_TYPE).
//   deflateBatch(header, records, codec) -> Buffer
//     a complete batch with codec in its attributes, recordCount = records.length and a CRC32C from the
//     native addon. Records are written with the offsetDelta and timestampDelta they carry (gaps left by
//     the cleaner stay). lastOffsetDelta and maxTimestamp are taken from header when given (the cleaner
//     keeps a batch's last offset even when its last record is dropped), else computed from the records.
//
// Record layout inside the records section (varints zig-zag): length varint | attributes int8 |
// timestampDelta varlong | offsetDelta varint | keyLength varint (-1 = null) | key | valueLength varint |
// value | headerCount varint | (headerKeyLength varint, headerKey, headerValueLength varint, value)*.

import { native } from '../../addon/index.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import {
  ATTRIBUTES_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BATCH_LENGTH_OFFSET,
  COMPRESSION_MASK,
  CRC_OFFSET,
  CURRENT_MAGIC,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MAX_TIMESTAMP_OFFSET,
  MIN_BATCH_LENGTH,
  NO_TIMESTAMP,
  PARTITION_LEADER_EPOCH_OFFSET,
  PRODUCER_EPOCH_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORD_BATCH_OVERHEAD,
  RECORD_COUNT_OFFSET,
  readInt64,
  writeInt64,
} from './batch.js'
import type { CompressionType, Crc32c } from './batch.js'
import { compress, decompress } from './compression.js'
import { readVarlong, sizeOfVarint, writeVarint, writeVarlong } from './varint.js'

/** The header fields of a RecordBatch v2 (everything but batchLength, magic and crc). */
export interface RecordBatchHeader {
  baseOffset: number
  partitionLeaderEpoch: number
  /** As stored, codec bits included (timestampType bit 3, transactional bit 4, control bit 5). */
  attributes: number
  lastOffsetDelta: number
  baseTimestamp: number
  maxTimestamp: number
  producerId: number
  producerEpoch: number
  baseSequence: number
  recordCount: number
}

/** A record header; the key is kept as bytes so a rewrite is byte-exact. */
export interface InflatedRecordHeader {
  key: Buffer
  value: Buffer | null
}

/** One record of a batch, relative to its batch header. */
export interface InflatedRecord {
  /** Record attributes (unused by Kafka so far, kept as read). */
  attributes: number
  timestampDelta: number
  offsetDelta: number
  key: Buffer | null
  value: Buffer | null
  headers: InflatedRecordHeader[]
}

export interface InflatedBatch {
  header: RecordBatchHeader
  /** The codec the batch was stored with (attributes & 7). */
  compression: CompressionType
  records: InflatedRecord[]
  /** Size of the whole batch read (LOG_OVERHEAD + batchLength). */
  sizeInBytes: number
}

/**
 * What deflateBatch needs: the header fields, of which lastOffsetDelta and maxTimestamp are optional
 * (computed from the records when absent) and recordCount is ignored (records.length is written).
 * The codec bits of attributes are replaced by the codec argument.
 */
export type DeflateBatchHeader = Omit<RecordBatchHeader, 'lastOffsetDelta' | 'maxTimestamp' | 'recordCount'> & {
  lastOffsetDelta?: number
  maxTimestamp?: number
}

/** Smallest encoding of one record: seven one-byte fields (see the layout above). */
const MIN_RECORD_SIZE = 7
const TIMESTAMP_TYPE_MASK = 0x08
/** Largest decoded records section accepted whatever max.message.bytes says (Buffer and memory limits). */
const MAX_DECODED_LIMIT = 512 * 1024 * 1024
const MIN_DECODED_LIMIT = 16 * 1024 * 1024

/**
 * The decompressed-size bound the broker uses for a topic: max(4 x max.message.bytes, 16 MiB), at most
 * 512 MiB. A legitimate batch is at most max.message.bytes compressed, and record data rarely compresses
 * better than 4:1 at that size; small limits get 16 MiB so that small highly-compressible batches pass.
 */
export function decodedSizeLimit(maxMessageBytes: number): number {
  return Math.min(MAX_DECODED_LIMIT, Math.max(maxMessageBytes * 4, MIN_DECODED_LIMIT))
}

function invalid(message: string): KafkaError {
  return new KafkaError(ErrorCode.INVALID_RECORD, message)
}

/** Reads the header of the batch at the start of buf (at least RECORD_BATCH_OVERHEAD bytes). */
export function readRecordBatchHeader(buf: Buffer): RecordBatchHeader {
  return {
    baseOffset: readInt64(buf, 0),
    partitionLeaderEpoch: buf.readInt32BE(PARTITION_LEADER_EPOCH_OFFSET),
    attributes: buf.readInt16BE(ATTRIBUTES_OFFSET),
    lastOffsetDelta: buf.readInt32BE(LAST_OFFSET_DELTA_OFFSET),
    baseTimestamp: readInt64(buf, BASE_TIMESTAMP_OFFSET),
    maxTimestamp: readInt64(buf, MAX_TIMESTAMP_OFFSET),
    producerId: readInt64(buf, PRODUCER_ID_OFFSET),
    producerEpoch: buf.readInt16BE(PRODUCER_EPOCH_OFFSET),
    baseSequence: buf.readInt32BE(BASE_SEQUENCE_OFFSET),
    recordCount: buf.readInt32BE(RECORD_COUNT_OFFSET),
  }
}

/**
 * Decodes the batch at the start of batch (see the contract above). maxRecordBytes bounds the
 * decompressed records section; use decodedSizeLimit(maxMessageBytes) for the broker's bound.
 */
export function inflateBatch(batch: Buffer, maxRecordBytes: number): InflatedBatch {
  if (batch.length < RECORD_BATCH_OVERHEAD) throw invalid(`${batch.length} bytes are not a whole batch header`)
  const batchLength = batch.readInt32BE(BATCH_LENGTH_OFFSET)
  if (batchLength < MIN_BATCH_LENGTH || LOG_OVERHEAD + batchLength > batch.length) {
    throw invalid(`batchLength ${batchLength} does not fit the ${batch.length} bytes given`)
  }
  const magic = batch.readInt8(MAGIC_OFFSET)
  if (magic !== CURRENT_MAGIC) throw invalid(`magic ${magic} batches cannot be decoded`)
  const size = LOG_OVERHEAD + batchLength
  const header = readRecordBatchHeader(batch)
  const codec = (header.attributes & COMPRESSION_MASK) as CompressionType
  const body = batch.subarray(RECORD_BATCH_OVERHEAD, size)
  const records = decompress(codec, body, codec === 0 ? body.length : maxRecordBytes)
  if (header.recordCount < 0 || header.recordCount > records.length / MIN_RECORD_SIZE) {
    throw invalid(`recordCount ${header.recordCount} does not fit in ${records.length} record bytes`)
  }
  return { header, compression: codec, records: decodeRecordsSection(records, header.recordCount), sizeInBytes: size }
}

/** Called once per record by forEachRecord; key, value and header bytes are views into the section. */
export type RecordVisitor = (
  attributes: number,
  timestampDelta: number,
  offsetDelta: number,
  key: Buffer | null,
  value: Buffer | null,
  headers: InflatedRecordHeader[],
) => void

/**
 * Walks exactly count records filling buf (a batch's records section, uncompressed) and calls visit for
 * each, in order; the one place where record fields are parsed and checked (every length against its
 * record's end, no trailing bytes), shared by the broker (inflateBatch) and the client's consumer.
 * Record layout (zig-zag varints): length | attributes int8 | timestampDelta varlong | offsetDelta varint
 * | keyLength varint (-1 = null) | key | valueLength varint | value | headerCount varint | (keyLength,
 * key, valueLength, value)*. A malformed record throws KafkaError(INVALID_RECORD). Hot path of
 * consuming: varints are read inline, no object per record beyond what visit makes.
 */
export function forEachRecord(buf: Buffer, count: number, visit: RecordVisitor): void {
  const end = buf.length
  let p = 0
  // Varint reader sharing the position p with the loop (no result object per read).
  const varint = (limit: number): number => {
    let raw = 0
    for (let shift = 0; shift < 35; shift += 7) {
      if (p >= limit) throw invalid('record truncated inside a varint')
      const b = buf[p++]!
      raw |= (b & 0x7f) << shift
      if ((b & 0x80) === 0) return (raw >>> 1) ^ -(raw & 1)
    }
    throw invalid('varint longer than 5 bytes')
  }
  const bytes = (limit: number): Buffer | null => {
    const n = varint(limit)
    if (n < 0) {
      if (n !== -1) throw invalid(`negative length ${n}`)
      return null
    }
    if (n > limit - p) throw invalid(`field of ${n} bytes runs past its record`)
    const b = buf.subarray(p, p + n)
    p += n
    return b
  }
  for (let i = 0; i < count; i++) {
    const length = varint(end)
    if (length < MIN_RECORD_SIZE - 1 || length > end - p) throw invalid(`record ${i} has a bad length ${length}`)
    const recordEnd = p + length
    const attributes = buf[p++]!
    // Deltas of up to 4 bytes (+-2^27 ms, 37 hours) are read as int32 varints; longer ones go through
    // the 64-bit reader (an int32 read of 5 bytes could silently drop high bits).
    let tsLen = 0
    while (tsLen < 10 && p + tsLen < recordEnd && (buf[p + tsLen]! & 0x80) !== 0) tsLen++
    let timestampDelta: number
    if (tsLen < 4) {
      timestampDelta = varint(recordEnd)
    } else {
      const ts = readVarlong(buf, p, recordEnd)
      if (ts === null) throw invalid(`record ${i} has a bad timestampDelta`)
      timestampDelta = ts.value
      p = ts.next
    }
    const offsetDelta = varint(recordEnd)
    const key = bytes(recordEnd)
    const value = bytes(recordEnd)
    const headerCount = varint(recordEnd)
    // Each header takes at least two bytes (two lengths).
    if (headerCount < 0 || headerCount > (recordEnd - p) / 2) throw invalid(`record ${i} has a bad header count ${headerCount}`)
    const headers: InflatedRecordHeader[] = new Array(headerCount)
    for (let h = 0; h < headerCount; h++) {
      const hk = bytes(recordEnd)
      if (hk === null) throw invalid(`record ${i} has a null header key`)
      headers[h] = { key: hk, value: bytes(recordEnd) }
    }
    if (p !== recordEnd) throw invalid(`record ${i} declares ${length} bytes but its fields take ${length - (recordEnd - p)}`)
    visit(attributes, timestampDelta, offsetDelta, key, value, headers)
  }
  if (p !== end) throw invalid(`${end - p} bytes follow the last of ${count} records`)
}

/** Decodes exactly count records filling buf. */
function decodeRecordsSection(buf: Buffer, count: number): InflatedRecord[] {
  const out: InflatedRecord[] = []
  forEachRecord(buf, count, (attributes, timestampDelta, offsetDelta, key, value, headers) => {
    out.push({ attributes, timestampDelta, offsetDelta, key, value, headers })
  })
  return out
}

function sizeOfVarlong(value: number): number {
  if (value >= -0x40000000 && value < 0x40000000) return sizeOfVarint(value)
  let v = value < 0 ? -2 * value - 1 : 2 * value
  let n = 1
  while (v >= 128) {
    v = Math.floor(v / 128)
    n++
  }
  return n
}

function sizeOfBytes(b: Buffer | null): number {
  return b === null ? 1 : sizeOfVarint(b.length) + b.length
}

function recordBodySize(r: InflatedRecord): number {
  let n = 1 + sizeOfVarlong(r.timestampDelta) + sizeOfVarint(r.offsetDelta) + sizeOfBytes(r.key) + sizeOfBytes(r.value)
  n += sizeOfVarint(r.headers.length)
  for (const h of r.headers) n += sizeOfBytes(h.key) + sizeOfBytes(h.value)
  return n
}

function writeBytes(buf: Buffer, pos: number, b: Buffer | null): number {
  if (b === null) return writeVarint(buf, pos, -1)
  pos = writeVarint(buf, pos, b.length)
  b.copy(buf, pos)
  return pos + b.length
}

/** Encodes records into a records section (uncompressed). */
export function encodeRecordsSection(records: readonly InflatedRecord[]): Buffer {
  const sizes = new Array<number>(records.length)
  let total = 0
  for (let i = 0; i < records.length; i++) {
    const s = recordBodySize(records[i]!)
    sizes[i] = s
    total += sizeOfVarint(s) + s
  }
  const buf = Buffer.allocUnsafe(total)
  let p = 0
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!
    p = writeVarint(buf, p, sizes[i]!)
    buf[p++] = r.attributes & 0xff
    p = writeVarlong(buf, p, r.timestampDelta)
    p = writeVarint(buf, p, r.offsetDelta)
    p = writeBytes(buf, p, r.key)
    p = writeBytes(buf, p, r.value)
    p = writeVarint(buf, p, r.headers.length)
    for (const h of r.headers) {
      p = writeBytes(buf, p, h.key)
      p = writeBytes(buf, p, h.value)
    }
  }
  return buf
}

/**
 * Builds one RecordBatch v2 from header and records, compressed with codec (see the contract above).
 * crc32c defaults to the native addon's.
 */
export function deflateBatch(header: DeflateBatchHeader, records: readonly InflatedRecord[], codec: CompressionType, crc32c: Crc32c = native.crc32c): Buffer {
  let lastOffsetDelta = header.lastOffsetDelta
  if (lastOffsetDelta === undefined) {
    lastOffsetDelta = records.length === 0 ? -1 : 0
    for (const r of records) if (r.offsetDelta > lastOffsetDelta) lastOffsetDelta = r.offsetDelta
  }
  let maxTimestamp = header.maxTimestamp
  if (maxTimestamp === undefined) {
    if ((header.attributes & TIMESTAMP_TYPE_MASK) !== 0) throw new RangeError('a LogAppendTime batch needs its maxTimestamp')
    maxTimestamp = NO_TIMESTAMP
    for (const r of records) {
      const ts = header.baseTimestamp + r.timestampDelta
      if (ts > maxTimestamp) maxTimestamp = ts
    }
  }
  const section = encodeRecordsSection(records)
  const body = compress(codec, section)
  const buf = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + body.length)
  writeInt64(buf, 0, header.baseOffset)
  buf.writeInt32BE(buf.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET)
  buf.writeInt32BE(header.partitionLeaderEpoch, PARTITION_LEADER_EPOCH_OFFSET)
  buf.writeInt8(CURRENT_MAGIC, MAGIC_OFFSET)
  buf.writeInt16BE((header.attributes & ~COMPRESSION_MASK) | codec, ATTRIBUTES_OFFSET)
  buf.writeInt32BE(lastOffsetDelta, LAST_OFFSET_DELTA_OFFSET)
  writeInt64(buf, BASE_TIMESTAMP_OFFSET, header.baseTimestamp)
  writeInt64(buf, MAX_TIMESTAMP_OFFSET, maxTimestamp)
  writeInt64(buf, PRODUCER_ID_OFFSET, header.producerId)
  buf.writeInt16BE(header.producerEpoch, PRODUCER_EPOCH_OFFSET)
  buf.writeInt32BE(header.baseSequence, BASE_SEQUENCE_OFFSET)
  buf.writeInt32BE(records.length, RECORD_COUNT_OFFSET)
  body.copy(buf, RECORD_BATCH_OVERHEAD)
  buf.writeUInt32BE(crc32c(buf.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
  return buf
}
