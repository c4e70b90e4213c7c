// Validation of producer payloads (one or more RecordBatch v2 back to back) and in-place offset
// assignment, following Kafka's LogValidator for magic v2: headers and CRC, then one pass over every
// batch's records (record-walk.ts), decompressing compressed batches in bounded chunks on the way
// without building a record object or keeping the decompressed batch: gzip, snappy and lz4 batches in
// one native call (walkCompressedRecords) when they are sound, everything else (zstd, and any batch
// the native walk does not vouch for) through compression.ts decompressInChunks and the TypeScript
// walker, which names the fault. The bytes stored stay the client's: nothing is re-encoded unless compression.type asks for
// another codec (rewriteProducerBatches).

import { ErrorCode, KafkaError, RecordValidationError, type RecordError } from '../../domain/errors.js'
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
import { decompressInChunks } from './compression.js'
import { decodedSizeLimit, deflateBatch, inflateBatch, type InflatedRecord } from './inflate.js'
import { RecordSectionWalker, walkCompressedRecords, type RecordFault, type RecordWalkRules } from './record-walk.js'

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
  /** cleanup.policy includes compact: named with the timestamp errors when records must be decoded anyway. */
  requireKeys?: boolean
  /** The partition, for record error messages (Kafka names it in them). */
  topic?: string
  partition?: number
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

/**
 * Whether produced batches get the record walk. Only bench/validation.bench.ts turns it off, to measure
 * what the walk costs against the header-only validation that came before it.
 */
let recordWalkEnabled = true

/** For bench/validation.bench.ts only: skip (true) or restore (false) the record walk. */
export function benchOnlySkipRecordWalk(skip: boolean): void {
  recordWalkEnabled = !skip
}

/** Whether compressed batches try the addon's fused decompress-and-walk first (walkCompressedRecords). */
let fusedWalkEnabled = true

/**
 * For comparisons only (the differential tests in test/records/, bench/validation-codec.bench.ts):
 * skip (true) or restore (false) the fused walk, so every batch takes the TypeScript path.
 */
export function compareOnlySkipFusedWalk(skip: boolean): void {
  fusedWalkEnabled = !skip
}

function invalid(message: string): KafkaError {
  return new KafkaError(ErrorCode.INVALID_RECORD, message)
}

/**
 * Checks every batch of a producer payload and returns their positions, or throws the KafkaError
 * Kafka would answer with. Nothing is modified. Checks, in order per batch: whole header and sane
 * batchLength (CORRUPT_MESSAGE), magic (0/1 -> INVALID_RECORD since produce v3+ requires v2, other ->
 * CORRUPT_MESSAGE), size vs max.message.bytes (MESSAGE_TOO_LARGE), CRC32C (CORRUPT_MESSAGE), compression
 * codec (UNSUPPORTED_COMPRESSION_TYPE), control flag, record count and lastOffsetDelta (INVALID_RECORD),
 * header timestamps (INVALID_TIMESTAMP), then the record walk (see walkBatchRecords): records that do
 * not decode, a compressed payload that does not decompress with its codec or inflates past
 * decodedSizeLimit(max.message.bytes), a record count or offset deltas that disagree with the header,
 * bytes after the last record -> CORRUPT_MESSAGE; keyless records on a compacted topic and CreateTime
 * records outside message.timestamp.before/after.max.ms -> a RecordValidationError naming each of them
 * (INVALID_TIMESTAMP when any timestamp is at fault, else INVALID_RECORD, as Kafka's
 * processRecordErrors). Record indexes count from the payload's first record (Kafka's batch index:
 * producers send one batch).
 */
export function validateProducerBatches(payload: Buffer, policy: BatchValidationPolicy, crc32c: Crc32c): ValidatedBatch[] {
  const batches: ValidatedBatch[] = []
  let pos = 0
  let firstRecordIndex = 0
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
    const headerWithinBounds = timestampsWithinBounds(baseTimestamp, maxTimestamp, policy)
    if (recordWalkEnabled) {
      walkBatchRecords(payload, pos, size, compression, recordCount, baseTimestamp, firstRecordIndex, policy)
    } else if (!headerWithinBounds) {
      throwRecordTimestampErrors(payload.subarray(pos, pos + size), firstRecordIndex, policy)
    }
    batches.push({ position: pos, size, recordCount, maxTimestamp })
    pos += size
    firstRecordIndex += recordCount
  }
  return batches
}

/**
 * Walks the records of the batch at pos (one pass, decompressing in bounded chunks) and throws what
 * Kafka answers for its first structural fault (CORRUPT_MESSAGE) or for the records at fault (a
 * RecordValidationError). Nothing of the batch is kept.
 */
function walkBatchRecords(
  payload: Buffer,
  pos: number,
  size: number,
  compression: number,
  recordCount: number,
  baseTimestamp: number,
  firstRecordIndex: number,
  policy: BatchValidationPolicy,
): void {
  const rules: RecordWalkRules = {
    requireKeys: policy.requireKeys === true,
    checkTimestamps: policy.timestampType === 'CreateTime',
    low: policy.now - policy.timestampBeforeMaxMs,
    high: policy.now + policy.timestampAfterMaxMs,
  }
  const maxBytes = decodedSizeLimit(policy.maxMessageBytes)
  if (compression !== 0 && fusedWalkEnabled) {
    // One native call decompresses and walks a sound batch; anything else is judged below.
    const faults = walkCompressedRecords(compression, payload.subarray(pos + RECORD_BATCH_OVERHEAD, pos + size), maxBytes, recordCount, baseTimestamp, rules)
    if (faults !== null) {
      if (faults.length > 0) throwRecordFaults(faults, readInt64(payload, pos), firstRecordIndex, policy)
      return
    }
  }
  const walker = new RecordSectionWalker(recordCount, baseTimestamp, rules)
  if (compression === 0) {
    walker.push(payload, pos + RECORD_BATCH_OVERHEAD, pos + size)
  } else {
    try {
      const section = payload.subarray(pos + RECORD_BATCH_OVERHEAD, pos + size)
      decompressInChunks(compression, section, maxBytes, (chunk) => walker.push(chunk))
    } catch (err) {
      // The codecs answer INVALID_RECORD (the cleaner's contract); a produced batch that does not
      // decompress is a corrupt message, as Kafka answers.
      if (err instanceof KafkaError && err.code === ErrorCode.INVALID_RECORD && !(err instanceof RecordValidationError)) {
        throw corrupt(`batch at ${pos}: ${err.message.replace(/^[A-Z_]+: /, '')}`)
      }
      throw err
    }
  }
  walker.finish()
  if (walker.faults.length > 0) throwRecordFaults(walker.faults, readInt64(payload, pos), firstRecordIndex, policy)
}

/** Kafka's answer for records at fault: INVALID_TIMESTAMP when any timestamp is, else INVALID_RECORD. */
function throwRecordFaults(faults: readonly RecordFault[], baseOffset: number, firstRecordIndex: number, policy: BatchValidationPolicy): never {
  // The bounds as Kafka prints them: Java longs (Long.MAX_VALUE defaults, wrapping as Java's do).
  const low = BigInt.asIntN(64, BigInt(policy.now) - javaLong(policy.timestampBeforeMaxMs))
  const high = BigInt.asIntN(64, BigInt(policy.now) + javaLong(policy.timestampAfterMaxMs))
  let timestampFaults = 0
  const errors: RecordError[] = faults.map((f) => {
    if (f.kind === 'keyless') return keylessRecordError(firstRecordIndex + f.index, policy)
    timestampFaults++
    return {
      batchIndex: firstRecordIndex + f.index,
      message: `Timestamp ${f.timestamp} of message with offset ${baseOffset + f.offsetDelta} is out of range. The timestamp should be within [${low}, ${high}]`,
    }
  })
  if (timestampFaults > 0) throw new RecordValidationError(ErrorCode.INVALID_TIMESTAMP, 'One or more records have been rejected due to invalid timestamp', errors)
  throw new RecordValidationError(ErrorCode.INVALID_RECORD, recordErrorsSummary(errors), errors)
}

/**
 * Without the record walk (benchOnlySkipRecordWalk): decodes a batch whose header is out of the CreateTime bounds and throws Kafka's answer naming each
 * record out of range (a keyless record on a compacted topic is named for that instead, as Kafka checks
 * the key first). Returns when no record is out of range after all (the header was only a bound).
 */
function throwRecordTimestampErrors(batch: Buffer, firstRecordIndex: number, policy: BatchValidationPolicy): void {
  const { header, records } = inflateBatch(batch, decodedSizeLimit(policy.maxMessageBytes))
  // The bounds as Kafka prints them: Java longs (Long.MAX_VALUE defaults, wrapping as Java's do).
  const low = BigInt.asIntN(64, BigInt(policy.now) - javaLong(policy.timestampBeforeMaxMs))
  const high = BigInt.asIntN(64, BigInt(policy.now) + javaLong(policy.timestampAfterMaxMs))
  const errors: RecordError[] = []
  let timestampErrors = 0
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!
    if (policy.requireKeys === true && r.key === null) {
      errors.push(keylessRecordError(firstRecordIndex + i, policy))
      continue
    }
    const ts = header.baseTimestamp + r.timestampDelta
    if (ts === NO_TIMESTAMP || (policy.now - ts <= policy.timestampBeforeMaxMs && ts - policy.now <= policy.timestampAfterMaxMs)) continue
    timestampErrors++
    errors.push({
      batchIndex: firstRecordIndex + i,
      message: `Timestamp ${ts} of message with offset ${header.baseOffset + r.offsetDelta} is out of range. The timestamp should be within [${low}, ${high}]`,
    })
  }
  if (timestampErrors > 0) throw new RecordValidationError(ErrorCode.INVALID_TIMESTAMP, 'One or more records have been rejected due to invalid timestamp', errors)
}

/** A config long as Java holds it (Long.MAX_VALUE is 2^63 once it is a JavaScript number). */
function javaLong(n: number): bigint {
  return n >= 2 ** 63 ? 2n ** 63n - 1n : BigInt(Math.trunc(n))
}

function keylessRecordError(batchIndex: number, where: { topic?: string; partition?: number }): RecordError {
  return { batchIndex, message: `Compacted topic cannot accept message without key${inPartition(where)}` }
}

function inPartition({ topic, partition }: { topic?: string; partition?: number }): string {
  return topic === undefined ? '' : ` in topic partition ${topic}-${partition}`
}

/** Kafka's summary of record errors (LogValidator.processRecordErrors). */
function recordErrorsSummary(errors: readonly RecordError[]): string {
  const shown = errors
    .slice(0, 3)
    .map((e) => `RecordError(batchIndex=${e.batchIndex}, message=${e.message === null ? 'null' : `'${e.message}'`})`)
    .join(', ')
  return `One or more records have been rejected due to ${errors.length} record errors in total, and only showing the first three errors at most: [${shown}]`
}

/**
 * Throws for header timestamps that no batch may have; answers whether the header lies within the
 * CreateTime bounds (always true for LogAppendTime topics).
 */
function timestampsWithinBounds(baseTimestamp: number, maxTimestamp: number, policy: BatchValidationPolicy): boolean {
  for (const ts of [baseTimestamp, maxTimestamp]) {
    if (ts < NO_TIMESTAMP || ts > MAX_SAFE_TIMESTAMP) throw new KafkaError(ErrorCode.INVALID_TIMESTAMP, `timestamp ${ts} out of range`)
  }
  if (maxTimestamp !== NO_TIMESTAMP && maxTimestamp < baseTimestamp) {
    throw new KafkaError(ErrorCode.INVALID_TIMESTAMP, `maxTimestamp ${maxTimestamp} < baseTimestamp ${baseTimestamp}`)
  }
  if (policy.timestampType !== 'CreateTime') return true
  if (maxTimestamp !== NO_TIMESTAMP && maxTimestamp > policy.now + policy.timestampAfterMaxMs) return false
  if (baseTimestamp !== NO_TIMESTAMP && baseTimestamp < policy.now - policy.timestampBeforeMaxMs) return false
  return true
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
  /** The partition, for record error messages (Kafka names it in them). */
  topic?: string
  partition?: number
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
 * when its codec differs. Keyless records on a compacted topic refuse their batch with a
 * RecordValidationError (INVALID_RECORD) naming every one of them, as Kafka does; records that do not
 * decode (or inflate past maxRecordBytes) or whose count or offset deltas disagree with the header throw
 * KafkaError(INVALID_RECORD), and a rebuilt batch beyond max.message.bytes MESSAGE_TOO_LARGE.
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
  let firstRecordIndex = 0
  for (const b of batches) {
    let bytes = payload.subarray(b.position, b.position + b.size)
    if (needsDecode(b)) {
      const inflated = inflateBatch(bytes, policy.maxRecordBytes)
      const records = inflated.records
      if (records.length !== b.recordCount) throw invalid(`batch declares ${b.recordCount} records but holds ${records.length}`)
      for (let i = 0; i < records.length; i++) {
        const r = records[i]!
        if (r.offsetDelta !== i) throw invalid(`record ${i} has offsetDelta ${r.offsetDelta}; a producer batch numbers its records from 0`)
      }
      if (requireKeys) throwKeylessRecordErrors(records, firstRecordIndex, policy)
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
    firstRecordIndex += b.recordCount
  }
  if (rebuilt === 0) return { payload, batches: [...batches], rebuilt: 0 }
  return { payload: Buffer.concat(parts, position), batches: out, rebuilt }
}

/** A compacted topic takes no record without a key: the batch is refused, naming each keyless record. */
function throwKeylessRecordErrors(records: readonly InflatedRecord[], firstRecordIndex: number, where: { topic?: string; partition?: number }): void {
  let errors: RecordError[] | undefined
  for (let i = 0; i < records.length; i++) {
    if (records[i]!.key === null) (errors ??= []).push(keylessRecordError(firstRecordIndex + i, where))
  }
  if (errors !== undefined) throw new RecordValidationError(ErrorCode.INVALID_RECORD, recordErrorsSummary(errors), errors)
}
