// RecordBatch v2 headers, read and rewritten in place without decoding a single record.
//
// Layout (big-endian), as on the wire and in a segment's .log file:
//   baseOffset int64 @0 | batchLength int32 @8 (bytes after this field) | partitionLeaderEpoch int32 @12
//   magic int8 @16 | crc uint32 @17 (CRC32C of bytes 21..end) | attributes int16 @21
//   lastOffsetDelta int32 @23 | baseTimestamp int64 @27 | maxTimestamp int64 @35 | producerId int64 @43
//   producerEpoch int16 @51 | baseSequence int32 @53 | recordCount int32 @57 | records @61
// attributes: bits 0-2 compression, bit 3 timestampType (1 = LogAppendTime), bit 4 transactional,
// bit 5 control. baseOffset and partitionLeaderEpoch sit before the CRC'd range, which is what lets the
// broker assign offsets without recomputing the CRC (unless it also sets LogAppendTime).

/** CRC32C over data continuing from seed; production code passes the native addon's crc32c. */
export type Crc32c = (data: Uint8Array, seed?: number) => number

export const BASE_OFFSET_OFFSET = 0
export const BATCH_LENGTH_OFFSET = 8
export const PARTITION_LEADER_EPOCH_OFFSET = 12
export const MAGIC_OFFSET = 16
export const CRC_OFFSET = 17
export const ATTRIBUTES_OFFSET = 21
export const LAST_OFFSET_DELTA_OFFSET = 23
export const BASE_TIMESTAMP_OFFSET = 27
export const MAX_TIMESTAMP_OFFSET = 35
export const PRODUCER_ID_OFFSET = 43
export const PRODUCER_EPOCH_OFFSET = 51
export const BASE_SEQUENCE_OFFSET = 53
export const RECORD_COUNT_OFFSET = 57
export const RECORDS_OFFSET = 61

/** baseOffset + batchLength: the part of a batch not counted by batchLength. */
export const LOG_OVERHEAD = 12
/** Size of a v2 header, i.e. of a batch with no records. */
export const RECORD_BATCH_OVERHEAD = 61
/** Smallest legal batchLength (a header with no records). */
export const MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD
export const CURRENT_MAGIC = 2
export const NO_TIMESTAMP = -1

export const COMPRESSION_MASK = 0x07
export const TIMESTAMP_TYPE_MASK = 0x08
export const TRANSACTIONAL_MASK = 0x10
export const CONTROL_MASK = 0x20

export const CompressionType = { NONE: 0, GZIP: 1, SNAPPY: 2, LZ4: 3, ZSTD: 4 } as const
export type CompressionType = (typeof CompressionType)[keyof typeof CompressionType]

const TWO_32 = 0x1_0000_0000

/** Reads an int64 as a number (exact up to 2^53, which covers offsets and ms timestamps). */
export function readInt64(buf: Uint8Array, pos: number): number {
  const b = buf as Buffer
  return b.readInt32BE(pos) * TWO_32 + b.readUInt32BE(pos + 4)
}

/** Writes a safe integer as an int64. */
export function writeInt64(buf: Uint8Array, pos: number, value: number): void {
  const b = buf as Buffer
  const hi = Math.floor(value / TWO_32)
  b.writeInt32BE(hi, pos)
  b.writeUInt32BE(value - hi * TWO_32, pos + 4)
}

/**
 * A zero-copy view of one batch header at `position` in `buf` (at least RECORD_BATCH_OVERHEAD bytes
 * must be present there). Getters read the bytes each time, so the view follows in-place rewrites.
 */
export class BatchHeaderView {
  constructor(
    readonly buf: Buffer,
    readonly position: number,
  ) {}

  get baseOffset(): number { return readInt64(this.buf, this.position + BASE_OFFSET_OFFSET) }
  get batchLength(): number { return this.buf.readInt32BE(this.position + BATCH_LENGTH_OFFSET) }
  /** Whole batch size in bytes: LOG_OVERHEAD + batchLength. */
  get sizeInBytes(): number { return LOG_OVERHEAD + this.batchLength }
  get partitionLeaderEpoch(): number { return this.buf.readInt32BE(this.position + PARTITION_LEADER_EPOCH_OFFSET) }
  get magic(): number { return this.buf.readInt8(this.position + MAGIC_OFFSET) }
  get crc(): number { return this.buf.readUInt32BE(this.position + CRC_OFFSET) }
  get attributes(): number { return this.buf.readInt16BE(this.position + ATTRIBUTES_OFFSET) }
  get compression(): number { return this.attributes & COMPRESSION_MASK }
  get isLogAppendTime(): boolean { return (this.attributes & TIMESTAMP_TYPE_MASK) !== 0 }
  get isTransactional(): boolean { return (this.attributes & TRANSACTIONAL_MASK) !== 0 }
  get isControl(): boolean { return (this.attributes & CONTROL_MASK) !== 0 }
  get lastOffsetDelta(): number { return this.buf.readInt32BE(this.position + LAST_OFFSET_DELTA_OFFSET) }
  get lastOffset(): number { return this.baseOffset + this.lastOffsetDelta }
  get baseTimestamp(): number { return readInt64(this.buf, this.position + BASE_TIMESTAMP_OFFSET) }
  get maxTimestamp(): number { return readInt64(this.buf, this.position + MAX_TIMESTAMP_OFFSET) }
  get producerId(): number { return readInt64(this.buf, this.position + PRODUCER_ID_OFFSET) }
  get producerEpoch(): number { return this.buf.readInt16BE(this.position + PRODUCER_EPOCH_OFFSET) }
  get baseSequence(): number { return this.buf.readInt32BE(this.position + BASE_SEQUENCE_OFFSET) }
  get recordCount(): number { return this.buf.readInt32BE(this.position + RECORD_COUNT_OFFSET) }

  /** CRC32C of bytes 21..end of this batch, as it should be stored at @17. */
  computeCrc(crc32c: Crc32c): number {
    const start = this.position + ATTRIBUTES_OFFSET
    return crc32c(this.buf.subarray(start, this.position + this.sizeInBytes))
  }
}

/** The header fields the log needs, copied out of a batch (for scans over files and payloads). */
export interface BatchInfo {
  /** Position of the batch in the buffer or file scanned. */
  position: number
  /** LOG_OVERHEAD + batchLength. */
  size: number
  baseOffset: number
  lastOffset: number
  maxTimestamp: number
  recordCount: number
  attributes: number
  /** The epoch of the leader that wrote the batch (its partitionLeaderEpoch field). */
  partitionLeaderEpoch: number
}

/** Copies the fields of BatchInfo out of a header that starts at `pos` of buf. */
export function batchInfoAt(buf: Buffer, pos: number, position = pos): BatchInfo {
  const baseOffset = readInt64(buf, pos)
  return {
    position,
    size: LOG_OVERHEAD + buf.readInt32BE(pos + BATCH_LENGTH_OFFSET),
    baseOffset,
    lastOffset: baseOffset + buf.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET),
    maxTimestamp: readInt64(buf, pos + MAX_TIMESTAMP_OFFSET),
    recordCount: buf.readInt32BE(pos + RECORD_COUNT_OFFSET),
    attributes: buf.readInt16BE(pos + ATTRIBUTES_OFFSET),
    partitionLeaderEpoch: buf.readInt32BE(pos + PARTITION_LEADER_EPOCH_OFFSET),
  }
}

/** Why a stored batch failed its integrity check (recovery reports this, then truncates). */
export type IntegrityProblem = 'truncated-header' | 'bad-length' | 'truncated-batch' | 'bad-magic' | 'bad-crc'

/**
 * Checks the batch at pos of buf (end = end of valid bytes) the way recovery must before serving it:
 * a whole header, a sane batchLength, all its bytes present, magic 2 and a matching CRC. Returns null
 * when it is sound. Producer rules (record counts, timestamps, control) are validateProducerBatches'.
 */
export function checkBatchIntegrity(buf: Buffer, pos: number, end: number, crc32c: Crc32c): IntegrityProblem | null {
  if (end - pos < RECORD_BATCH_OVERHEAD) return 'truncated-header'
  const batchLength = buf.readInt32BE(pos + BATCH_LENGTH_OFFSET)
  if (batchLength < MIN_BATCH_LENGTH) return 'bad-length'
  if (end - pos < LOG_OVERHEAD + batchLength) return 'truncated-batch'
  if (buf.readInt8(pos + MAGIC_OFFSET) !== CURRENT_MAGIC) return 'bad-magic'
  const crc = crc32c(buf.subarray(pos + ATTRIBUTES_OFFSET, pos + LOG_OVERHEAD + batchLength))
  if (crc !== buf.readUInt32BE(pos + CRC_OFFSET)) return 'bad-crc'
  return null
}

/** Yields every whole batch header in buf, stopping at trailing partial bytes. No CRC check. */
export function* iterateBatches(buf: Buffer, start = 0, end = buf.length): Generator<BatchInfo> {
  let pos = start
  while (end - pos >= RECORD_BATCH_OVERHEAD) {
    const batchLength = buf.readInt32BE(pos + BATCH_LENGTH_OFFSET)
    if (batchLength < MIN_BATCH_LENGTH || end - pos < LOG_OVERHEAD + batchLength) return
    yield batchInfoAt(buf, pos)
    pos += LOG_OVERHEAD + batchLength
  }
}

