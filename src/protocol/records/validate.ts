// Validation of producer payloads (one or more RecordBatch v2 back to back) and in-place offset
// assignment, following Kafka's LogValidator for magic v2 but on headers only: no record is decoded.

import { ErrorCode, KafkaError } from '../../domain/errors.js'
import {
  ATTRIBUTES_OFFSET,
  BATCH_LENGTH_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  COMPRESSION_MASK,
  CONTROL_MASK,
  CRC_OFFSET,
  CURRENT_MAGIC,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MAX_TIMESTAMP_OFFSET,
  MIN_BATCH_LENGTH,
  NO_TIMESTAMP,
  PARTITION_LEADER_EPOCH_OFFSET,
  RECORD_BATCH_OVERHEAD,
  RECORD_COUNT_OFFSET,
  TIMESTAMP_TYPE_MASK,
  readInt64,
  writeInt64,
} from './batch.js'
import type { CompressionType, Crc32c } from './batch.js'
import { deflateBatch, inflateBatch } from './inflate.js'

/** The topic settings a producer payload is checked against. */
export interface BatchValidationPolicy {
  /** max.message.bytes: the largest batch (LOG_OVERHEAD + batchLength) accepted. */
  maxMessageBytes: number
  /** message.timestamp.type */
  timestampType: 'CreateTime' | 'LogAppendTime'
  /** message.timestamp.before.max.ms (CreateTime only) */
  timestampBeforeMaxMs: number
  /** message.timestamp.after.max.ms (CreateTime only) */
  timestampAfterMaxMs: number
  /** Wall clock (ms) the timestamps are checked against. */
  now: number
}

/** One validated batch of a payload. */
export interface ValidatedBatch {
  position: number
  size: number
  recordCount: number
  maxTimestamp: number
}

/** Smallest encoding of one uncompressed record: length, attributes, timestampDelta, offsetDelta,
 * key length, value length and header count, one byte each. */
const MIN_RECORD_SIZE = 7
const MAX_SAFE_TIMESTAMP = Number.MAX_SAFE_INTEGER

function invalid(message: string): KafkaError {
  return new KafkaError(ErrorCode.INVALID_RECORD, message)
}

/**
 * Checks every batch of a producer payload and returns their positions, or throws the KafkaError
 * Kafka would answer with. Nothing is modified. Checks, in order per batch: whole header and sane
 * batchLength (CORRUPT_MESSAGE), magic (0/1 -> INVALID_RECORD since produce v3+ requires v2, other ->
 * CORRUPT_MESSAGE), size vs max.message.bytes (MESSAGE_TOO_LARGE), CRC32C (CORRUPT_MESSAGE), compression
 * codec (UNSUPPORTED_COMPRESSION_TYPE), control flag, record count and lastOffsetDelta (INVALID_RECORD),
 * timestamps (INVALID_TIMESTAMP).
 *
 * CreateTime bounds are checked on the header: maxTimestamp against after.max.ms and baseTimestamp
 * (the first record's) against before.max.ms. Kafka checks every record; a batch whose later records
 * are older than its first one is not caught without decoding the records.
 */
export function validateProducerBatches(payload: Buffer, policy: BatchValidationPolicy, crc32c: Crc32c): ValidatedBatch[] {
  const batches: ValidatedBatch[] = []
  let pos = 0
  const end = payload.length
  if (end === 0) throw invalid('a produce payload must hold at least one record batch')
  while (pos < end) {
    if (end - pos < LOG_OVERHEAD + 5) throw corrupt(`${end - pos} trailing bytes at ${pos} are not a record batch`)
    const batchLength = payload.readInt32BE(pos + BATCH_LENGTH_OFFSET)
    const magic = payload.readInt8(pos + MAGIC_OFFSET)
    if (magic === 0 || magic === 1) throw invalid(`magic v${magic} batches are not accepted; produce v3+ requires v2`)
    if (magic !== CURRENT_MAGIC) throw corrupt(`unknown magic ${magic} at ${pos}`)
    if (batchLength < MIN_BATCH_LENGTH) throw corrupt(`batchLength ${batchLength} at ${pos} is below ${MIN_BATCH_LENGTH}`)
    const size = LOG_OVERHEAD + batchLength
    if (size > end - pos) throw corrupt(`batch at ${pos} declares ${size} bytes but only ${end - pos} remain`)
    if (size > policy.maxMessageBytes) {
      throw new KafkaError(ErrorCode.MESSAGE_TOO_LARGE, `batch of ${size} bytes exceeds max.message.bytes ${policy.maxMessageBytes}`)
    }
    const stored = payload.readUInt32BE(pos + CRC_OFFSET)
    const computed = crc32c(payload.subarray(pos + ATTRIBUTES_OFFSET, pos + size))
    if (stored !== computed) throw corrupt(`batch at ${pos}: CRC ${stored} != computed ${computed}`)

    const attributes = payload.readInt16BE(pos + ATTRIBUTES_OFFSET)
    const compression = attributes & COMPRESSION_MASK
    if (compression > 4) throw new KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `compression codec ${compression}`)
    if ((attributes & CONTROL_MASK) !== 0) throw invalid('producers may not send control batches')
    const recordCount = payload.readInt32BE(pos + RECORD_COUNT_OFFSET)
    if (recordCount <= 0) throw invalid(`recordCount ${recordCount}: a producer batch holds at least one record`)
    const lastOffsetDelta = payload.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET)
    if (lastOffsetDelta !== recordCount - 1) throw invalid(`lastOffsetDelta ${lastOffsetDelta} != recordCount ${recordCount} - 1`)
    // Without decoding we cannot count records, but an uncompressed batch cannot hold more records than
    // its bytes allow; this stops a tiny batch from claiming (and burning) two billion offsets.
    if (compression === 0 && recordCount > (size - RECORD_BATCH_OVERHEAD) / MIN_RECORD_SIZE) {
      throw invalid(`recordCount ${recordCount} does not fit in ${size - RECORD_BATCH_OVERHEAD} record bytes`)
    }

    const baseTimestamp = readInt64(payload, pos + BASE_TIMESTAMP_OFFSET)
    const maxTimestamp = readInt64(payload, pos + MAX_TIMESTAMP_OFFSET)
    checkTimestamps(baseTimestamp, maxTimestamp, policy)
    batches.push({ position: pos, size, recordCount, maxTimestamp })
    pos += size
  }
  return batches
}

function checkTimestamps(baseTimestamp: number, maxTimestamp: number, policy: BatchValidationPolicy): void {
  for (const ts of [baseTimestamp, maxTimestamp]) {
    if (ts < NO_TIMESTAMP || ts > MAX_SAFE_TIMESTAMP) throw new KafkaError(ErrorCode.INVALID_TIMESTAMP, `timestamp ${ts} out of range`)
  }
  if (maxTimestamp !== NO_TIMESTAMP && maxTimestamp < baseTimestamp) {
    throw new KafkaError(ErrorCode.INVALID_TIMESTAMP, `maxTimestamp ${maxTimestamp} < baseTimestamp ${baseTimestamp}`)
  }
  if (policy.timestampType !== 'CreateTime') return
  if (maxTimestamp !== NO_TIMESTAMP && maxTimestamp > policy.now + policy.timestampAfterMaxMs) {
    throw new KafkaError(ErrorCode.INVALID_TIMESTAMP, `timestamp ${maxTimestamp} is more than ${policy.timestampAfterMaxMs} ms ahead of ${policy.now}`)
  }
  if (baseTimestamp !== NO_TIMESTAMP && baseTimestamp < policy.now - policy.timestampBeforeMaxMs) {
    throw new KafkaError(ErrorCode.INVALID_TIMESTAMP, `timestamp ${baseTimestamp} is more than ${policy.timestampBeforeMaxMs} ms behind ${policy.now}`)
  }
}

function corrupt(message: string): KafkaError {
  return new KafkaError(ErrorCode.CORRUPT_MESSAGE, message)
}

/** What assignOffsetsInPlace wrote. */
export interface OffsetAssignment {
  baseOffset: number
  lastOffset: number
  /** maxTimestamp of every batch after assignment (LogAppendTime replaces it). */
  maxTimestamps: number[]
}

/**
 * Rewrites validated batches in place: baseOffset (consecutive from baseOffset) and
 * partitionLeaderEpoch, both outside the CRC'd range. With logAppendTime >= 0 it also sets the
 * timestampType bit and maxTimestamp, which are covered by the CRC, so the CRC is recomputed.
 */
export function assignOffsetsInPlace(
  payload: Buffer,
  batches: readonly ValidatedBatch[],
  baseOffset: number,
  leaderEpoch: number,
  logAppendTime: number,
  crc32c: Crc32c,
): OffsetAssignment {
  let next = baseOffset
  const maxTimestamps: number[] = []
  for (const b of batches) {
    writeInt64(payload, b.position, next)
    payload.writeInt32BE(leaderEpoch, b.position + PARTITION_LEADER_EPOCH_OFFSET)
    let maxTimestamp = b.maxTimestamp
    if (logAppendTime >= 0) {
      const attributes = payload.readInt16BE(b.position + ATTRIBUTES_OFFSET)
      payload.writeInt16BE(attributes | TIMESTAMP_TYPE_MASK, b.position + ATTRIBUTES_OFFSET)
      writeInt64(payload, b.position + MAX_TIMESTAMP_OFFSET, logAppendTime)
      maxTimestamp = logAppendTime
      const crc = crc32c(payload.subarray(b.position + ATTRIBUTES_OFFSET, b.position + b.size))
      payload.writeUInt32BE(crc, b.position + CRC_OFFSET)
    }
    maxTimestamps.push(maxTimestamp)
    next += b.recordCount
  }
  return { baseOffset, lastOffset: next - 1, maxTimestamps }
}

/** What a topic needs looked at inside producer batches (see rewriteProducerBatches). */
export interface RecordRewritePolicy {
  /** The codec stored batches must have (compression.type), or null for 'producer'. */
  targetCodec: CompressionType | null
  /** cleanup.policy includes compact: every record needs a key. */
  requireKeys: boolean
  /** Bound on one batch's decompressed records (decodedSizeLimit(max.message.bytes)). */
  maxRecordBytes: number
  /** max.message.bytes, checked again on recompressed batches. */
  maxMessageBytes: number
}

/** The payload to append after rewriteProducerBatches: the original one when nothing changed. */
export interface RewrittenPayload {
  payload: Buffer
  batches: ValidatedBatch[]
  /** How many batches were rebuilt with another codec. */
  rebuilt: number
}

/**
 * The decoding part of Kafka's LogValidator, run only when a topic needs it: a batch is decoded when
 * its codec differs from targetCodec or when keys are required, and rebuilt (same producer fields,
 * attributes and timestamps, CRC recomputed; offsets are assigned afterwards by assignOffsetsInPlace)
 * when its codec differs. Throws KafkaError(INVALID_RECORD) for a keyless record on a compacted topic,
 * for records that do not decode (or inflate past maxRecordBytes) or whose count or offset deltas
 * disagree with the header, and MESSAGE_TOO_LARGE when a rebuilt batch exceeds max.message.bytes.
 * Batches that need nothing are neither decoded nor copied; when none changes, payload is returned as is.
 */
export function rewriteProducerBatches(payload: Buffer, batches: readonly ValidatedBatch[], policy: RecordRewritePolicy, crc32c: Crc32c): RewrittenPayload {
  const { targetCodec, requireKeys } = policy
  const needsDecode = (b: ValidatedBatch): boolean =>
    requireKeys || (targetCodec !== null && (payload.readInt16BE(b.position + ATTRIBUTES_OFFSET) & COMPRESSION_MASK) !== targetCodec)
  if (!batches.some(needsDecode)) return { payload, batches: [...batches], rebuilt: 0 }
  const parts: Buffer[] = []
  const out: ValidatedBatch[] = []
  let position = 0
  let rebuilt = 0
  for (const b of batches) {
    let bytes = payload.subarray(b.position, b.position + b.size)
    if (needsDecode(b)) {
      const inflated = inflateBatch(bytes, policy.maxRecordBytes)
      const records = inflated.records
      if (records.length !== b.recordCount) throw invalid(`batch declares ${b.recordCount} records but holds ${records.length}`)
      for (let i = 0; i < records.length; i++) {
        const r = records[i]!
        if (r.offsetDelta !== i) throw invalid(`record ${i} has offsetDelta ${r.offsetDelta}; a producer batch numbers its records from 0`)
        if (requireKeys && r.key === null) throw invalid('compacted topic cannot accept a record without a key')
      }
      if (targetCodec !== null && inflated.compression !== targetCodec) {
        bytes = deflateBatch(inflated.header, records, targetCodec, crc32c)
        rebuilt++
        if (bytes.length > policy.maxMessageBytes) {
          throw new KafkaError(ErrorCode.MESSAGE_TOO_LARGE, `batch of ${bytes.length} bytes after recompression exceeds max.message.bytes ${policy.maxMessageBytes}`)
        }
      }
    }
    parts.push(bytes)
    out.push({ position, size: bytes.length, recordCount: b.recordCount, maxTimestamp: b.maxTimestamp })
    position += bytes.length
  }
  if (rebuilt === 0) return { payload, batches: [...batches], rebuilt: 0 }
  return { payload: Buffer.concat(parts, position), batches: out, rebuilt }
}
