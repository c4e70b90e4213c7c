// A small RecordBatch v2 encoder (uncompressed) for tests, benchmarks and internal writers.
// Record layout (varints are zig-zag): length varint | attributes int8 | timestampDelta varlong |
// offsetDelta varint | keyLength varint (-1 = null) | key | valueLength varint (-1 = null) | value |
// headerCount varint | headers (keyLength varint, key, valueLength varint, value)*.

import {
  ATTRIBUTES_OFFSET,
  CRC_OFFSET,
  CURRENT_MAGIC,
  LOG_OVERHEAD,
  NO_TIMESTAMP,
  RECORD_BATCH_OVERHEAD,
  TIMESTAMP_TYPE_MASK,
  TRANSACTIONAL_MASK,
  CONTROL_MASK,
  writeInt64,
} from './batch.js'
import type { Crc32c } from './batch.js'
import { readVarint, readVarlong, sizeOfVarint, sizeOfVarlong, writeVarint, writeVarlong } from './varint.js'

export interface RecordHeader {
  key: string
  value: Buffer | null
}

export interface RecordInput {
  key?: Buffer | null
  value: Buffer | null
  /** Defaults to the batch's baseTimestamp. */
  timestamp?: number
  headers?: RecordHeader[]
}

export interface BuildBatchOptions {
  baseOffset?: number
  /** Default: the first record's timestamp, else Date.now(). */
  baseTimestamp?: number
  partitionLeaderEpoch?: number
  producerId?: number
  producerEpoch?: number
  baseSequence?: number
  transactional?: boolean
  control?: boolean
  logAppendTime?: boolean
}

function recordBodySize(r: RecordInput, timestampDelta: number, offsetDelta: number): number {
  let n = 1 + sizeOfVarlong(timestampDelta) + sizeOfVarint(offsetDelta)
  n += r.key == null ? sizeOfVarint(-1) : sizeOfVarint(r.key.length) + r.key.length
  n += r.value == null ? sizeOfVarint(-1) : sizeOfVarint(r.value.length) + r.value.length
  const headers = r.headers ?? []
  n += sizeOfVarint(headers.length)
  for (const h of headers) {
    const k = Buffer.byteLength(h.key)
    n += sizeOfVarint(k) + k
    n += h.value == null ? sizeOfVarint(-1) : sizeOfVarint(h.value.length) + h.value.length
  }
  return n
}

/** Encodes records into one uncompressed RecordBatch v2 with a valid CRC. */
export function buildRecordBatch(records: readonly RecordInput[], crc32c: Crc32c, opts: BuildBatchOptions = {}): Buffer {
  const baseTimestamp = opts.baseTimestamp ?? records[0]?.timestamp ?? Date.now()
  const sizes: number[] = []
  let total = RECORD_BATCH_OVERHEAD
  let maxTimestamp = records.length === 0 ? NO_TIMESTAMP : baseTimestamp
  records.forEach((r, i) => {
    const ts = r.timestamp ?? baseTimestamp
    if (ts > maxTimestamp) maxTimestamp = ts
    const body = recordBodySize(r, ts - baseTimestamp, i)
    sizes.push(body)
    total += sizeOfVarint(body) + body
  })
  const buf = Buffer.alloc(total)
  writeInt64(buf, 0, opts.baseOffset ?? 0)
  buf.writeInt32BE(total - LOG_OVERHEAD, 8)
  buf.writeInt32BE(opts.partitionLeaderEpoch ?? -1, 12)
  buf.writeInt8(CURRENT_MAGIC, 16)
  let attributes = 0
  if (opts.logAppendTime) attributes |= TIMESTAMP_TYPE_MASK
  if (opts.transactional) attributes |= TRANSACTIONAL_MASK
  if (opts.control) attributes |= CONTROL_MASK
  buf.writeInt16BE(attributes, ATTRIBUTES_OFFSET)
  buf.writeInt32BE(records.length - 1, 23)
  writeInt64(buf, 27, baseTimestamp)
  writeInt64(buf, 35, maxTimestamp)
  writeInt64(buf, 43, opts.producerId ?? -1)
  buf.writeInt16BE(opts.producerEpoch ?? -1, 51)
  buf.writeInt32BE(opts.baseSequence ?? -1, 53)
  buf.writeInt32BE(records.length, 57)
  let pos = RECORD_BATCH_OVERHEAD
  records.forEach((r, i) => {
    pos = writeVarint(buf, pos, sizes[i]!)
    buf[pos++] = 0
    pos = writeVarlong(buf, pos, (r.timestamp ?? baseTimestamp) - baseTimestamp)
    pos = writeVarint(buf, pos, i)
    pos = writeBytes(buf, pos, r.key ?? null)
    pos = writeBytes(buf, pos, r.value)
    const headers = r.headers ?? []
    pos = writeVarint(buf, pos, headers.length)
    for (const h of headers) {
      pos = writeBytes(buf, pos, Buffer.from(h.key))
      pos = writeBytes(buf, pos, h.value)
    }
  })
  buf.writeUInt32BE(crc32c(buf.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
  return buf
}

function writeBytes(buf: Buffer, pos: number, data: Buffer | null): number {
  if (data === null) return writeVarint(buf, pos, -1)
  pos = writeVarint(buf, pos, data.length)
  data.copy(buf, pos)
  return pos + data.length
}

/** A record decoded from an uncompressed batch (absolute offset and timestamp). */
export interface DecodedRecord {
  offset: number
  timestamp: number
  key: Buffer | null
  value: Buffer | null
  headers: RecordHeader[]
}

/**
 * Decodes the records of one uncompressed batch at pos of buf. For tests and tools (the broker's hot
 * path never decodes records). Throws RangeError on malformed or compressed input.
 */
export function decodeRecords(buf: Buffer, pos = 0): DecodedRecord[] {
  const end = pos + LOG_OVERHEAD + buf.readInt32BE(pos + 8)
  if (end > buf.length) throw new RangeError('batch extends past the buffer')
  const attributes = buf.readInt16BE(pos + ATTRIBUTES_OFFSET)
  if ((attributes & 0x07) !== 0) throw new RangeError('compressed batches are not decoded here')
  const baseOffset = buf.readInt32BE(pos) * 0x1_0000_0000 + buf.readUInt32BE(pos + 4)
  const baseTimestamp = buf.readInt32BE(pos + 27) * 0x1_0000_0000 + buf.readUInt32BE(pos + 31)
  const count = buf.readInt32BE(pos + 57)
  const out: DecodedRecord[] = []
  let p = pos + RECORD_BATCH_OVERHEAD
  const need = <T>(v: T | null): T => {
    if (v === null) throw new RangeError('malformed record')
    return v
  }
  const bytes = (): Buffer | null => {
    const len = need(readVarint(buf, p, end))
    p = len.next
    if (len.value < 0) return null
    if (p + len.value > end) throw new RangeError('record field extends past the batch')
    const b = buf.subarray(p, p + len.value)
    p += len.value
    return b
  }
  for (let i = 0; i < count; i++) {
    const len = need(readVarint(buf, p, end))
    p = len.next + 1 // attributes
    const tsDelta = need(readVarlong(buf, p, end))
    p = tsDelta.next
    const offDelta = need(readVarint(buf, p, end))
    p = offDelta.next
    const key = bytes()
    const value = bytes()
    const hc = need(readVarint(buf, p, end))
    p = hc.next
    const headers: RecordHeader[] = []
    for (let h = 0; h < hc.value; h++) {
      const k = bytes()
      headers.push({ key: k === null ? '' : k.toString(), value: bytes() })
    }
    out.push({ offset: baseOffset + offDelta.value, timestamp: baseTimestamp + tsDelta.value, key, value, headers })
  }
  return out
}
