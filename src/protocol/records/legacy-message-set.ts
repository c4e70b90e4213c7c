// Legacy message sets (message format v0 and v1, "magic 0/1"), for Produce v0-2 and Fetch v0-3: the
// up-conversion of a produced set to one RecordBatch v2 (Kafka's LogValidator, which converts what an
// old producer sends to the log's format v2) and the down-conversion of stored v2 batches to a set an
// old consumer can parse (Kafka's RecordsUtil.downConvert / LazyDownConversionRecords).
//
// Layout of one message (big-endian), back to back in a set, no header for the set:
//   offset int64 @0 | size int32 @8 (bytes after this field) | crc uint32 @12 (CRC-32, the zlib/IEEE
//   one, not CRC-32C, over magic..end) | magic int8 @16 | attributes int8 @17 |
//   timestamp int64 @18 (magic 1 only) | keyLength int32 (-1 = null) | key | valueLength int32 (-1 = null) | value
// attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4; zstd needs v2), bit 3 timestamp type
// (magic 1: 1 = LogAppendTime). Magic 0 has no timestamp (Kafka reads it as NO_TIMESTAMP, -1).
// A compressed message is a wrapper: its value is the compressed bytes of an inner message set (each inner
// message with its own CRC, the wrapper's magic and codec 0). Magic 0 inner offsets are absolute; magic 1
// inner offsets are relative (0..n-1) and the wrapper's offset is the absolute offset of the last one. A
// magic 1 wrapper with the LogAppendTime bit gives its timestamp to every inner message.
//
// Up-conversion (upConvertMessageSet), what Kafka 3.9's LogValidator does with toMagic 2:
//   * every message is checked before anything is built: whole messages, sizes (at least the format's
//     overhead, at most max.message.bytes), CRC-32 (CORRUPT_MESSAGE), one magic for the set, codec;
//     structural faults are CORRUPT_MESSAGE (Skein also refuses trailing partial bytes, which Kafka's
//     ByteBufferLogInputStream drops silently).
//   * a compressed wrapper must be the only message of the set (INVALID_RECORD "Compressed outer record has
//     more than one batch"), have a value, decompress within decodedSizeLimit(max.message.bytes)
//     (CORRUPT_MESSAGE otherwise: a compression bomb stops at the bound, never allocates past it), and
//     hold at least one inner message, none compressed (a nested wrapper is INVALID_RECORD) and each with
//     the wrapper's magic (INVALID_RECORD).
//   * a message (magic 1) carrying the LogAppendTime bit is refused with INVALID_TIMESTAMP when the topic
//     is LogAppendTime or the timestamp is -1 (Kafka's validateTimestamp: "Producer should not set
//     timestamp type to LogAppendTime").
//   * the records become ONE batch v2: offset deltas 0..n-1, producer id -1 (not idempotent), CreateTime,
//     baseTimestamp the first record's timestamp, magic 0 records with timestamp -1 (NO_TIMESTAMP, as
//     Kafka's builder writes them; a LogAppendTime topic stamps the batch at append as for any batch),
//     no headers. A compressed set is recompressed with its own codec (Kafka's target codec when
//     compression.type is 'producer'; the append path recompresses for any other compression.type), an
//     uncompressed set stays uncompressed. The batch then takes the normal append path, which validates
//     it again (keys on compacted topics, timestamp bounds, max.message.bytes) and assigns offsets.
//   * record count: bounded by the bytes (26 bytes is the smallest message), so by the request size for an
//     uncompressed set and by decodedSizeLimit for a compressed one.
// Down-conversion (downConvertBatches), Kafka's rule for the magic: Fetch v0-1 get magic 0, v2-3 magic 1.
//   Control batches are dropped, record headers are dropped, compressed batches are decompressed (bounded
//   by maxRecordBytes each) and sent uncompressed, one message per record at its absolute offset, records
//   below the fetch offset skipped. Magic 1 messages carry the record's timestamp, or for a LogAppendTime
//   batch the batch's maxTimestamp with the LogAppendTime bit (Kafka's builder). The output stops at a
//   message boundary before maxBytes; with minOneMessage a first message larger than maxBytes is sent
//   whole (Kafka's minOneMessage), so a consumer always makes progress.
import { crc32 } from 'node:zlib'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import {
  BATCH_LENGTH_OFFSET,
  COMPRESSION_MASK,
  CONTROL_MASK,
  CURRENT_MAGIC,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  NO_TIMESTAMP,
  RECORD_BATCH_OVERHEAD,
  TIMESTAMP_TYPE_MASK,
  readInt64,
  writeInt64,
} from './batch.js'
import type { CompressionType, Crc32c } from './batch.js'
import { compress, decompress } from './compression.js'
import { decodedSizeLimit, deflateBatch, inflateBatch, type InflatedRecord } from './inflate.js'

/** offset int64 + size int32, before every message. */
export const LEGACY_LOG_OVERHEAD = 12
/** crc, magic, attributes, key length, value length: the smallest magic 0 message after its size field. */
export const RECORD_OVERHEAD_V0 = 14
/** RECORD_OVERHEAD_V0 and the timestamp. */
export const RECORD_OVERHEAD_V1 = 22
const CRC_AT = 12
const MAGIC_AT = 16
const ATTRIBUTES_AT = 17
const TIMESTAMP_AT = 18

export type LegacyMagic = 0 | 1

/** One message of a legacy set. */
export interface LegacyMessage {
  offset: number
  magic: LegacyMagic
  attributes: number
  /** -1 for magic 0. */
  timestamp: number
  key: Buffer | null
  value: Buffer | null
}

function corrupt(message: string): KafkaError {
  return new KafkaError(ErrorCode.CORRUPT_MESSAGE, message)
}

function invalid(message: string): KafkaError {
  return new KafkaError(ErrorCode.INVALID_RECORD, message)
}

/** CRC-32 (IEEE), as magic 0/1 messages carry it. */
export function legacyCrc(data: Uint8Array): number {
  return crc32(data) >>> 0
}

/**
 * Reads and checks the message at pos (the set ends at end): whole, size within the format's bounds and
 * maxSize, magic 0 or 1, CRC-32, key and value filling the message exactly. Throws CORRUPT_MESSAGE for
 * structural faults and a bad CRC, INVALID_RECORD for a magic 2 batch (a Produce v0-2 set may hold only
 * magic 0/1). Key and value are views into buf.
 */
function readMessage(buf: Buffer, pos: number, end: number, maxSize: number): { message: LegacyMessage; next: number } {
  if (end - pos < LEGACY_LOG_OVERHEAD) throw corrupt(`${end - pos} trailing bytes at ${pos} are not a message`)
  const size = buf.readInt32BE(pos + 8)
  if (size < RECORD_OVERHEAD_V0) throw corrupt(`message at ${pos}: size ${size} is less than the minimum record overhead (${RECORD_OVERHEAD_V0})`)
  if (size > end - pos - LEGACY_LOG_OVERHEAD) throw corrupt(`message at ${pos} declares ${size} bytes but only ${end - pos - LEGACY_LOG_OVERHEAD} remain`)
  if (LEGACY_LOG_OVERHEAD + size > maxSize) {
    throw new KafkaError(ErrorCode.MESSAGE_TOO_LARGE, `message of ${LEGACY_LOG_OVERHEAD + size} bytes exceeds max.message.bytes ${maxSize}`)
  }
  const magic = buf.readInt8(pos + MAGIC_AT)
  if (magic === CURRENT_MAGIC) throw invalid('Produce requests with version < 3 are only allowed to contain record batches with magic version < 2')
  if (magic !== 0 && magic !== 1) throw corrupt(`unknown magic ${magic} at ${pos}`)
  const messageEnd = pos + LEGACY_LOG_OVERHEAD + size
  if (magic === 1 && size < RECORD_OVERHEAD_V1) throw corrupt(`message at ${pos}: size ${size} is less than the minimum magic 1 record overhead (${RECORD_OVERHEAD_V1})`)
  const stored = buf.readUInt32BE(pos + CRC_AT)
  const computed = legacyCrc(buf.subarray(pos + MAGIC_AT, messageEnd))
  if (stored !== computed) throw corrupt(`message at ${pos} is corrupt (stored crc = ${stored}, computed crc = ${computed})`)
  const attributes = buf.readUInt8(pos + ATTRIBUTES_AT)
  const timestamp = magic === 1 ? readInt64(buf, pos + TIMESTAMP_AT) : NO_TIMESTAMP
  let p = pos + (magic === 1 ? TIMESTAMP_AT + 8 : TIMESTAMP_AT)
  const field = (what: string): Buffer | null => {
    const n = buf.readInt32BE(p)
    p += 4
    if (n === -1) return null
    if (n < -1 || n > messageEnd - p) throw corrupt(`message at ${pos} has a bad ${what} length ${n}`)
    const b = buf.subarray(p, p + n)
    p += n
    return b
  }
  const key = field('key')
  if (messageEnd - p < 4) throw corrupt(`message at ${pos} ends before its value length`)
  const value = field('value')
  if (p !== messageEnd) throw corrupt(`message at ${pos} has ${messageEnd - p} bytes after its value`)
  return { message: { offset: readInt64(buf, pos), magic, attributes, timestamp, key, value }, next: messageEnd }
}

/** The topic settings an up-conversion follows. */
export interface UpConvertPolicy {
  /** max.message.bytes: the largest message accepted, and decodedSizeLimit(it) bounds a decompressed set. */
  maxMessageBytes: number
  /** message.timestamp.type */
  timestampType: 'CreateTime' | 'LogAppendTime'
  /** CRC-32C for the v2 batch; the native addon's by default. */
  crc32c?: Crc32c
}

export interface UpConverted {
  /** One RecordBatch v2, base offset 0, ready for the append path. */
  batch: Buffer
  recordCount: number
  magic: LegacyMagic
  /** The set's codec, which the batch keeps. */
  codec: CompressionType
}

/**
 * Up-converts a produced legacy message set to one RecordBatch v2 (see the file header for the rules and
 * errors). Nothing is built until every message has been checked.
 */
export function upConvertMessageSet(set: Buffer, policy: UpConvertPolicy): UpConverted {
  if (set.length === 0) throw invalid('a produce payload must hold at least one message')
  const shallow: LegacyMessage[] = []
  let magic: LegacyMagic | undefined
  let codec = 0
  for (let pos = 0; pos < set.length; ) {
    const { message, next } = readMessage(set, pos, set.length, policy.maxMessageBytes)
    if (magic === undefined) magic = message.magic
    else if (message.magic !== magic) throw invalid(`Batch magic ${message.magic} is not the same as the first batch's magic byte ${magic}`)
    const c = message.attributes & COMPRESSION_MASK
    if (c > 3) throw new KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `compression codec ${c} is not supported with magic ${message.magic}`)
    if (c !== 0) codec = c
    shallow.push(message)
    pos = next
  }
  let messages = shallow
  if (codec !== 0) {
    if (shallow.length > 1) throw invalid('Compressed outer record has more than one batch')
    messages = innerMessages(shallow[0]!, codec, decodedSizeLimit(policy.maxMessageBytes))
  }
  const records: InflatedRecord[] = new Array(messages.length)
  const baseTimestamp = messages[0]!.timestamp
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]!
    if ((m.attributes & TIMESTAMP_TYPE_MASK) !== 0 && m.magic === 1 && (policy.timestampType === 'LogAppendTime' || m.timestamp === NO_TIMESTAMP)) {
      throw new KafkaError(ErrorCode.INVALID_TIMESTAMP, `Invalid timestamp type in message ${i}. Producer should not set timestamp type to LogAppendTime.`)
    }
    records[i] = { attributes: 0, timestampDelta: m.timestamp - baseTimestamp, offsetDelta: i, key: m.key, value: m.value, headers: [] }
  }
  const header = { baseOffset: 0, partitionLeaderEpoch: -1, attributes: 0, baseTimestamp, producerId: -1, producerEpoch: -1, baseSequence: -1 }
  const batch = deflateBatch(header, records, codec as CompressionType, policy.crc32c)
  return { batch, recordCount: records.length, magic: magic!, codec: codec as CompressionType }
}

/**
 * The inner messages of a compressed wrapper, checked: decompressed within maxRecordBytes, at least one,
 * each whole with a good CRC, the wrapper's magic and no codec of its own. Magic 1 inner offsets are made
 * absolute and a LogAppendTime wrapper's timestamp (and bit) given to each.
 */
function innerMessages(wrapper: LegacyMessage, codec: number, maxRecordBytes: number): LegacyMessage[] {
  if (wrapper.value === null) throw invalid('Found invalid compressed record set with null value')
  let inner: Buffer
  try {
    inner = decompress(codec, wrapper.value, maxRecordBytes)
  } catch (err) {
    if (err instanceof KafkaError && err.code === ErrorCode.INVALID_RECORD) throw corrupt(`compressed message set: ${err.message.replace(/^[A-Z_]+: /, '')}`)
    throw err
  }
  if (inner.length === 0) throw invalid('Found invalid compressed record set with no inner records')
  const out: LegacyMessage[] = []
  const logAppendTime = wrapper.magic === 1 && (wrapper.attributes & TIMESTAMP_TYPE_MASK) !== 0
  for (let pos = 0; pos < inner.length; ) {
    const { message, next } = readMessage(inner, pos, inner.length, Number.MAX_SAFE_INTEGER)
    if (message.magic !== wrapper.magic) throw invalid(`Record's magic ${message.magic} does not match outer magic ${wrapper.magic}`)
    if ((message.attributes & COMPRESSION_MASK) !== 0) throw invalid('Compressed outer record should not have an inner record with a compression attribute set')
    if (logAppendTime) {
      message.timestamp = wrapper.timestamp
      message.attributes |= TIMESTAMP_TYPE_MASK
    }
    out.push(message)
    pos = next
  }
  if (wrapper.magic === 1) {
    const shift = wrapper.offset - out[out.length - 1]!.offset
    for (const m of out) m.offset += shift
  }
  return out
}

/**
 * Decodes a legacy set (as a consumer would: wrappers decompressed within maxRecordBytes, magic 1 inner
 * offsets made absolute), checking every message as upConvertMessageSet does. For tests and tools.
 */
export function decodeLegacyMessageSet(set: Buffer, maxRecordBytes = decodedSizeLimit(0)): LegacyMessage[] {
  const out: LegacyMessage[] = []
  for (let pos = 0; pos < set.length; ) {
    const { message, next } = readMessage(set, pos, set.length, Number.MAX_SAFE_INTEGER)
    const codec = message.attributes & COMPRESSION_MASK
    if (codec === 0) out.push(message)
    else out.push(...innerMessages(message, codec, maxRecordBytes))
    pos = next
  }
  return out
}

/** Size of a message, offset and size fields included. */
export function legacyMessageSize(magic: LegacyMagic, key: Buffer | null, value: Buffer | null): number {
  return LEGACY_LOG_OVERHEAD + (magic === 1 ? RECORD_OVERHEAD_V1 : RECORD_OVERHEAD_V0) + (key?.length ?? 0) + (value?.length ?? 0)
}

/** Writes one message at pos of out (legacyMessageSize bytes); returns the position after it. */
export function writeLegacyMessage(out: Buffer, pos: number, m: LegacyMessage): number {
  const size = legacyMessageSize(m.magic, m.key, m.value)
  writeInt64(out, pos, m.offset)
  out.writeInt32BE(size - LEGACY_LOG_OVERHEAD, pos + 8)
  out.writeInt8(m.magic, pos + MAGIC_AT)
  out.writeUInt8(m.attributes & 0xff, pos + ATTRIBUTES_AT)
  let p = pos + TIMESTAMP_AT
  if (m.magic === 1) {
    writeInt64(out, p, m.timestamp)
    p += 8
  }
  for (const b of [m.key, m.value]) {
    if (b === null) {
      out.writeInt32BE(-1, p)
      p += 4
    } else {
      out.writeInt32BE(b.length, p)
      b.copy(out, p + 4)
      p += 4 + b.length
    }
  }
  out.writeUInt32BE(legacyCrc(out.subarray(pos + MAGIC_AT, p)), pos + CRC_AT)
  return p
}

/** Encodes messages back to back, uncompressed. */
export function encodeLegacyMessages(messages: readonly LegacyMessage[]): Buffer {
  let total = 0
  for (const m of messages) total += legacyMessageSize(m.magic, m.key, m.value)
  const out = Buffer.allocUnsafe(total)
  let pos = 0
  for (const m of messages) pos = writeLegacyMessage(out, pos, m)
  return out
}

/** A record for buildLegacyMessageSet. */
export interface LegacyRecordInput {
  key?: Buffer | null
  value: Buffer | null
  /** magic 1 only; default -1. */
  timestamp?: number
}

/**
 * A message set as an old producer sends it: uncompressed, one message per record at offsets 0..n-1 (the
 * broker assigns its own), or with a codec one wrapper holding them (magic 1: relative inner offsets, the
 * wrapper at n-1 with the largest timestamp). For tests and tools.
 */
export function buildLegacyMessageSet(records: readonly LegacyRecordInput[], magic: LegacyMagic, codec: 0 | 1 | 2 | 3 = 0): Buffer {
  const messages: LegacyMessage[] = records.map((r, i) => ({
    offset: i,
    magic,
    attributes: 0,
    timestamp: magic === 1 ? (r.timestamp ?? NO_TIMESTAMP) : NO_TIMESTAMP,
    key: r.key ?? null,
    value: r.value,
  }))
  const plain = encodeLegacyMessages(messages)
  if (codec === 0) return plain
  let maxTimestamp = NO_TIMESTAMP
  for (const m of messages) if (m.timestamp > maxTimestamp) maxTimestamp = m.timestamp
  return encodeLegacyMessages([{ offset: records.length - 1, magic, attributes: codec, timestamp: maxTimestamp, key: null, value: compress(codec, plain) }])
}

/** How downConvertBatches converts and where it stops. */
export interface DownConvertOptions {
  /** 0 for Fetch v0-1, 1 for Fetch v2-3. */
  toMagic: LegacyMagic
  /** Records below it (in the first batch read) are not sent. */
  fetchOffset: number
  /** The output stops at a message boundary before this many bytes... */
  maxBytes: number
  /** ...except that the first message is sent whole whatever its size. */
  minOneMessage: boolean
  /** Bound on one batch's decompressed records (decodedSizeLimit(max.message.bytes)). */
  maxRecordBytes: number
}

export interface DownConverted {
  set: Buffer
  /** Messages in the set. */
  count: number
}

/**
 * Down-converts stored RecordBatch v2 entries (whole batches back to back, as a fetch reads them) to a
 * legacy message set (see the file header). Malformed batches throw KafkaError(INVALID_RECORD); trailing
 * bytes that are not a whole batch are ignored.
 */
export function downConvertBatches(data: Buffer, opts: DownConvertOptions): DownConverted {
  const picked: LegacyMessage[] = []
  let bytes = 0
  let pos = 0
  outer: while (data.length - pos >= RECORD_BATCH_OVERHEAD) {
    const size = LOG_OVERHEAD + data.readInt32BE(pos + BATCH_LENGTH_OFFSET)
    if (size < RECORD_BATCH_OVERHEAD || size > data.length - pos) break
    const batch = data.subarray(pos, pos + size)
    pos += size
    if (batch.readInt8(MAGIC_OFFSET) !== CURRENT_MAGIC) throw invalid(`stored batch with magic ${batch.readInt8(MAGIC_OFFSET)}`)
    const { header, records } = inflateBatch(batch, opts.maxRecordBytes)
    if ((header.attributes & CONTROL_MASK) !== 0) continue
    const logAppendTime = (header.attributes & TIMESTAMP_TYPE_MASK) !== 0
    const attributes = opts.toMagic === 1 && logAppendTime ? TIMESTAMP_TYPE_MASK : 0
    for (const r of records) {
      const offset = header.baseOffset + r.offsetDelta
      if (offset < opts.fetchOffset) continue
      const n = legacyMessageSize(opts.toMagic, r.key, r.value)
      if (bytes + n > opts.maxBytes && !(opts.minOneMessage && picked.length === 0)) break outer
      const timestamp = opts.toMagic === 0 ? NO_TIMESTAMP : logAppendTime ? header.maxTimestamp : header.baseTimestamp + r.timestampDelta
      picked.push({ offset, magic: opts.toMagic, attributes, timestamp, key: r.key, value: r.value })
      bytes += n
    }
  }
  return { set: encodeLegacyMessages(picked), count: picked.length }
}
