// Record batches on the client side. Producing: RecordBatchWriter encodes records one by one into a
// buffer sized for batch.size (no per-record objects kept), then seals it into a RecordBatch v2, compressing
// the records section when asked; the buffers come from a BatchBufferPool and go back to it once nothing
// reads them. Consuming: decodeFetchedRecords walks the batches of a Fetch answer,
// checks CRCs, inflates compressed batches (bounded), skips control batches and, for read_committed,
// the records of aborted transactions.
import { native } from '../addon/index.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import {
  ATTRIBUTES_OFFSET,
  BASE_TIMESTAMP_OFFSET,
  BASE_SEQUENCE_OFFSET,
  BATCH_LENGTH_OFFSET,
  COMPRESSION_MASK,
  CONTROL_MASK,
  CRC_OFFSET,
  CURRENT_MAGIC,
  CompressionType,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MAX_TIMESTAMP_OFFSET,
  PARTITION_LEADER_EPOCH_OFFSET,
  PRODUCER_EPOCH_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORD_BATCH_OVERHEAD,
  RECORD_COUNT_OFFSET,
  TIMESTAMP_TYPE_MASK,
  TRANSACTIONAL_MASK,
  readInt64,
  writeInt64,
} from '../protocol/records/batch.js'
import { compress, decompress } from '../protocol/records/compression.js'
import { forEachRecord } from '../protocol/records/inflate.js'
import { sizeOfVarint, sizeOfVarlong, writeVarint, writeVarlong } from '../protocol/records/varint.js'

export type CompressionName = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd'

export const COMPRESSION_CODECS: Record<CompressionName, CompressionType> = {
  none: CompressionType.NONE,
  gzip: CompressionType.GZIP,
  snappy: CompressionType.SNAPPY,
  lz4: CompressionType.LZ4,
  zstd: CompressionType.ZSTD,
}

/** Kafka's compression.type spelling for producers ('uncompressed' is accepted for 'none'). */
export function parseCompression(name: string): CompressionName {
  const n = name.trim().toLowerCase()
  if (n === 'uncompressed') return 'none'
  if (n in COMPRESSION_CODECS) return n as CompressionName
  throw new KafkaError(ErrorCode.INVALID_CONFIG, `compression type '${name}' is not one of none, gzip, snappy, lz4, zstd`)
}

export interface Header {
  key: string
  value: Buffer | null
}

/**
 * Free batch buffers of batch.size bytes, as Kafka's producer BufferPool: a sealed batch's buffer comes
 * back once nothing views it any more (its Produce request was answered and its socket write finished),
 * and the next batch writes into it instead of faulting in fresh pages (fresh 64 KiB buffers per batch
 * were a tenth of the perf producer's CPU, in page faults). Holds at most maxBytes of free buffers.
 */
export class BatchBufferPool {
  private readonly free: Buffer[] = []

  constructor(
    readonly bufferSize: number,
    private readonly maxBytes: number,
  ) {}

  /** A buffer of n bytes: a pooled one when n is the pool's size, else a fresh one. */
  take(n: number): Buffer {
    if (n !== this.bufferSize) return Buffer.allocUnsafe(n)
    // allocUnsafeSlow: a buffer of its own, never a slice of node's shared 8 KiB slab.
    return this.free.pop() ?? Buffer.allocUnsafeSlow(n)
  }

  /** Returns a buffer from take(); the caller guarantees that nothing reads or writes it any more. */
  give(buf: Buffer): void {
    if (buf.length === this.bufferSize && buf.byteOffset === 0 && (this.free.length + 1) * this.bufferSize <= this.maxBytes) this.free.push(buf)
  }

  /** Buffers waiting for reuse (tests). */
  get freeCount(): number {
    return this.free.length
  }
}

const EMPTY = Buffer.alloc(0)

/**
 * Appends records to one future batch. The buffer starts at batch.size (or the first record's size when
 * larger, so an oversized record still makes a batch of its own, as in Kafka) and never grows: a record
 * that does not fit is refused and goes to the next batch. Each record is encoded straight into the
 * buffer (varints written in place, key and value copied once); nothing is allocated per record.
 */
export class RecordBatchWriter {
  private buf: Buffer
  private pos = RECORD_BATCH_OVERHEAD
  private count = 0
  private baseTimestamp = 0
  private maxTimestamp = -1
  private built: Buffer | null = null

  constructor(
    capacity: number,
    private readonly pool: BatchBufferPool | null = null,
  ) {
    const n = Math.max(capacity, RECORD_BATCH_OVERHEAD + 64)
    this.buf = pool !== null ? pool.take(n) : Buffer.allocUnsafe(n)
  }

  get recordCount(): number {
    return this.count
  }

  /** Bytes used so far (header included, uncompressed). */
  get sizeInBytes(): number {
    return this.pos
  }

  /** Encoded size of one record, for sizing a batch before the first append. */
  static recordSize(key: Buffer | null, value: Buffer | null, headers: readonly Header[] | undefined): number {
    const body = 3 + RecordBatchWriter.fieldsSize(key, value, headers)
    return sizeOfVarint(body) + body
  }

  /** Bytes of a record's key, value and headers as encoded (their length varints included). */
  static fieldsSize(key: Buffer | null, value: Buffer | null, headers: readonly Header[] | undefined): number {
    let n = fieldSize(key) + fieldSize(value)
    if (headers === undefined || headers.length === 0) return n + 1
    n += sizeOfVarint(headers.length)
    for (const h of headers) {
      const k = Buffer.byteLength(h.key)
      n += sizeOfVarint(k) + k + fieldSize(h.value)
    }
    return n
  }

  /** Appends a record; false when it does not fit (the batch then is full). */
  tryAppend(timestamp: number, key: Buffer | null, value: Buffer | null, headers?: readonly Header[]): boolean {
    return this.tryAppendSized(timestamp, key, value, headers, RecordBatchWriter.fieldsSize(key, value, headers))
  }

  /** tryAppend with fields = RecordBatchWriter.fieldsSize(key, value, headers), already computed by the caller. */
  tryAppendSized(timestamp: number, key: Buffer | null, value: Buffer | null, headers: readonly Header[] | undefined, fields: number): boolean {
    if (this.built !== null) throw new Error('the batch is already built')
    if (this.count === 0) this.baseTimestamp = timestamp
    const tsDelta = timestamp - this.baseTimestamp
    // attributes (1 byte) + timestampDelta + offsetDelta + the fields.
    const body = 1 + sizeOfVarlong(tsDelta) + sizeOfVarint(this.count) + fields
    const total = sizeOfVarint(body) + body
    if (this.pos + total > this.buf.length) {
      if (this.count > 0) return false
      // A first record larger than the buffer gets a buffer of its own size.
      this.pool?.give(this.buf)
      this.buf = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + total)
    }
    const buf = this.buf
    let p = writeVarint(buf, this.pos, body)
    buf[p++] = 0
    p = tsDelta >= 0 && tsDelta < 64 ? ((buf[p] = tsDelta << 1), p + 1) : writeVarlong(buf, p, tsDelta)
    p = writeVarint(buf, p, this.count)
    p = writeField(buf, p, key)
    p = writeField(buf, p, value)
    if (headers === undefined || headers.length === 0) {
      buf[p++] = 0
    } else {
      p = writeVarint(buf, p, headers.length)
      for (const h of headers) {
        const len = Buffer.byteLength(h.key)
        p = writeVarint(buf, p, len)
        p += buf.write(h.key, p)
        p = writeField(buf, p, h.value)
      }
    }
    this.pos = p
    this.count++
    if (timestamp > this.maxTimestamp) this.maxTimestamp = timestamp
    return true
  }

  /**
   * The finished batch (baseOffset 0; the broker assigns offsets), compressed with codec. Uncompressed, it
   * is a view of this writer's buffer: call release() only when nothing reads it any more. withCrc false
   * leaves the CRC for stampProducerState, which an idempotent producer calls anyway when it sends the
   * batch (so the CRC is computed once, over the final header).
   */
  build(codec: CompressionType = CompressionType.NONE, withCrc = true): Buffer {
    if (this.built !== null) return this.built
    let batch: Buffer
    if (codec === CompressionType.NONE) {
      batch = this.buf.subarray(0, this.pos)
    } else {
      const compressed = compress(codec, this.buf.subarray(RECORD_BATCH_OVERHEAD, this.pos))
      batch = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + compressed.length)
      compressed.copy(batch, RECORD_BATCH_OVERHEAD)
      // The records were copied (compressed) into batch: the writer's buffer is free at once.
      this.pool?.give(this.buf)
      this.buf = EMPTY
    }
    writeInt64(batch, 0, 0)
    batch.writeInt32BE(batch.length - LOG_OVERHEAD, BATCH_LENGTH_OFFSET)
    batch.writeInt32BE(-1, 12)
    batch.writeInt8(CURRENT_MAGIC, MAGIC_OFFSET)
    batch.writeInt16BE(codec, ATTRIBUTES_OFFSET)
    batch.writeInt32BE(this.count - 1, 23)
    writeInt64(batch, 27, this.baseTimestamp)
    writeInt64(batch, 35, this.maxTimestamp)
    writeInt64(batch, 43, -1)
    batch.writeInt16BE(-1, 51)
    batch.writeInt32BE(-1, 53)
    batch.writeInt32BE(this.count, 57)
    if (withCrc) batch.writeUInt32BE(native.crc32c(batch.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
    this.built = batch
    return batch
  }

  /**
   * Hands the buffer back to the pool. The caller guarantees that no one still reads the built batch (its
   * Produce request was answered and written out); the writer is unusable afterwards.
   */
  release(): void {
    if (this.buf !== EMPTY) this.pool?.give(this.buf)
    this.buf = EMPTY
    this.built = EMPTY
  }
}

/**
 * Writes an idempotent or transactional producer's fields into a built batch's header (producerId @43,
 * producerEpoch @51, baseSequence @53, the transactional attribute bit) and recomputes the CRC, which
 * covers them. Called when the batch is first sent and again if an epoch bump gives it a new sequence.
 */
export function stampProducerState(batch: Buffer, producerId: number, producerEpoch: number, baseSequence: number, transactional: boolean): void {
  writeInt64(batch, PRODUCER_ID_OFFSET, producerId)
  batch.writeInt16BE(producerEpoch, PRODUCER_EPOCH_OFFSET)
  batch.writeInt32BE(baseSequence, BASE_SEQUENCE_OFFSET)
  const attributes = batch.readInt16BE(ATTRIBUTES_OFFSET)
  batch.writeInt16BE(transactional ? attributes | TRANSACTIONAL_MASK : attributes & ~TRANSACTIONAL_MASK, ATTRIBUTES_OFFSET)
  batch.writeUInt32BE(native.crc32c(batch.subarray(ATTRIBUTES_OFFSET)), CRC_OFFSET)
}

function fieldSize(b: Buffer | null): number {
  return b === null ? 1 : sizeOfVarint(b.length) + b.length
}

function writeField(buf: Buffer, pos: number, data: Buffer | null): number {
  if (data === null) {
    buf[pos] = 1 // zig-zag -1: null
    return pos + 1
  }
  const n = data.length
  pos = n < 64 ? ((buf[pos] = n << 1), pos + 1) : writeVarint(buf, pos, n)
  // TypedArray#set: a builtin memmove, no trip through Buffer#copy's argument checks.
  buf.set(data, pos)
  return pos + n
}

/** A record as a consumer sees it. */
export interface ConsumedRecord {
  topic: string
  partition: number
  offset: number
  timestamp: number
  timestampType: 'CreateTime' | 'LogAppendTime'
  key: Buffer | null
  value: Buffer | null
  headers: Header[]
  leaderEpoch: number
}

export interface AbortedTxn {
  producerId: bigint
  firstOffset: bigint
}

export interface DecodeOptions {
  topic: string
  partition: number
  /** Records before this offset are dropped (a fetch may start inside a batch). */
  fetchOffset: number
  /** read_committed: drop records of aborted transactions (abortedTransactions from the Fetch answer). */
  readCommitted?: boolean
  abortedTransactions?: readonly AbortedTxn[] | null
  /** Largest decompressed records section accepted per batch. Default 64 MiB. */
  maxBatchBytes?: number
  /** Verify each batch's CRC32C (Kafka's check.crcs). Default true. */
  checkCrcs?: boolean
}

export interface DecodedFetch {
  records: ConsumedRecord[]
  /** The offset after the last whole batch seen (control and aborted batches included). */
  nextOffset: number
  /** Bytes of whole batches consumed from the data. */
  bytes: number
}

/**
 * The records of a Fetch answer's partition data. A trailing partial batch (Fetch may cut the last one)
 * is ignored; a CRC mismatch throws KafkaError(CORRUPT_MESSAGE), a malformed record
 * KafkaError(INVALID_RECORD). Records are appended to `into` when given, else to a new array.
 * (FetchedRecordsCursor decodes the same data a batch at a time.)
 */
export function decodeFetchedRecords(data: Buffer | null, opts: DecodeOptions, into?: ConsumedRecord[]): DecodedFetch {
  const out: ConsumedRecord[] = into ?? []
  const cursor = new FetchedRecordsCursor(data, opts)
  cursor.take(out, Number.POSITIVE_INFINITY)
  return { records: out, nextOffset: cursor.nextOffset, bytes: cursor.bytes }
}

/**
 * Walks the batches of one partition's Fetch data and hands out its records a batch at a time, as
 * Kafka's consumer does for max.poll.records: only the batch being handed out is decoded, so the
 * records an application holds at once stay few (they die young, which is what keeps garbage
 * collection cheap). This is the consumer's hot loop: records are decoded straight into ConsumedRecord
 * objects (no intermediate objects, varints read inline, no BigInt for timestamp deltas that fit 28
 * bits); key, value and header values are views into data, never copies. Compressed batches are
 * inflated (bounded by maxBatchBytes) when reached. Checks (CRC, magic, lengths) happen as batches are
 * reached, so an error surfaces with the records before it already handed out.
 */
export class FetchedRecordsCursor {
  /** The offset after the last whole batch in the data: where the next fetch of the partition starts. */
  readonly endOffset: number
  private readonly data: Buffer | null
  private readonly opts: DecodeOptions
  private readonly aborted: AbortedTxn[]
  private readonly abortingPids = new Set<number>()
  private pos = 0
  private seenOffset: number
  private pending: ConsumedRecord[] = []
  private pendingIndex = 0

  constructor(data: Buffer | null, opts: DecodeOptions) {
    this.data = data
    this.opts = opts
    this.seenOffset = opts.fetchOffset
    this.aborted = opts.readCommitted === true && opts.abortedTransactions != null ? [...opts.abortedTransactions].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1)) : []
    // Batch headers only (no CRC, no records): where this data ends in offsets.
    let end = opts.fetchOffset
    let p = 0
    while (data !== null && data.length - p >= RECORD_BATCH_OVERHEAD) {
      const batchLength = data.readInt32BE(p + BATCH_LENGTH_OFFSET)
      if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD || data.length - p < LOG_OVERHEAD + batchLength) break
      const last = readInt64(data, p) + data.readInt32BE(p + LAST_OFFSET_DELTA_OFFSET)
      if (last + 1 > end) end = last + 1
      p += LOG_OVERHEAD + batchLength
    }
    this.endOffset = end
  }

  /** The offset after the last whole batch reached so far (control and aborted batches included). */
  get nextOffset(): number {
    return this.seenOffset
  }

  /** Bytes of whole batches reached so far. */
  get bytes(): number {
    return this.pos
  }

  /** True when every record has been handed out. */
  get exhausted(): boolean {
    if (this.pendingIndex < this.pending.length) return false
    this.fill()
    return this.pendingIndex >= this.pending.length
  }

  /** Appends up to max records to out; returns how many. */
  take(out: ConsumedRecord[], max: number): number {
    let n = 0
    while (n < max) {
      if (this.pendingIndex >= this.pending.length && !this.fill()) break
      const pending = this.pending
      const stop = Math.min(pending.length, this.pendingIndex + (max - n))
      for (let i = this.pendingIndex; i < stop; i++) out.push(pending[i]!)
      n += stop - this.pendingIndex
      this.pendingIndex = stop
    }
    if (this.pendingIndex >= this.pending.length && this.pending.length > 0) {
      this.pending = []
      this.pendingIndex = 0
    }
    return n
  }

  /** Decodes the next batch that has records to hand out; false when the data has none left. */
  private fill(): boolean {
    const data = this.data
    const opts = this.opts
    if (data === null) return false
    this.pending = []
    this.pendingIndex = 0
    while (data.length - this.pos >= RECORD_BATCH_OVERHEAD) {
      const start = this.pos
      const batchLength = data.readInt32BE(start + BATCH_LENGTH_OFFSET)
      const size = LOG_OVERHEAD + batchLength
      if (batchLength < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `batch at byte ${start} of ${opts.topic}-${opts.partition} has length ${batchLength}`)
      if (data.length - start < size) break
      const end = start + size
      const magic = data.readInt8(start + MAGIC_OFFSET)
      if (magic !== CURRENT_MAGIC) throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `${opts.topic}-${opts.partition}: message format v${magic} is not supported by this client`)
      if (opts.checkCrcs !== false && native.crc32c(data.subarray(start + ATTRIBUTES_OFFSET, end)) !== data.readUInt32BE(start + CRC_OFFSET)) {
        throw new KafkaError(ErrorCode.CORRUPT_MESSAGE, `${opts.topic}-${opts.partition}: batch at offset ${readInt64(data, start)} fails its CRC check`)
      }
      this.pos = end
      const baseOffset = readInt64(data, start)
      const lastOffset = baseOffset + data.readInt32BE(start + LAST_OFFSET_DELTA_OFFSET)
      const attributes = data.readInt16BE(start + ATTRIBUTES_OFFSET)
      const producerId = readInt64(data, start + PRODUCER_ID_OFFSET)
      if (lastOffset + 1 > this.seenOffset) this.seenOffset = lastOffset + 1
      if (lastOffset < opts.fetchOffset) continue
      // Aborted transactions whose first offset we have reached start dropping that producer's batches.
      const aborted = this.aborted
      while (aborted.length > 0 && aborted[0]!.firstOffset <= BigInt(lastOffset)) this.abortingPids.add(Number(aborted.shift()!.producerId))
      if ((attributes & CONTROL_MASK) !== 0) {
        // The abort (or commit) marker ends the producer's transaction.
        this.abortingPids.delete(producerId)
        continue
      }
      if ((attributes & TRANSACTIONAL_MASK) !== 0 && this.abortingPids.has(producerId)) continue
      const recordCount = data.readInt32BE(start + RECORD_COUNT_OFFSET)
      const codec = attributes & COMPRESSION_MASK
      const body = data.subarray(start + RECORD_BATCH_OVERHEAD, end)
      const section = codec === 0 ? body : decompress(codec, body, opts.maxBatchBytes ?? 64 * 1024 * 1024)
      if (recordCount < 0 || recordCount > section.length / MIN_RECORD_SIZE) {
        throw invalidRecord(`${opts.topic}-${opts.partition}: recordCount ${recordCount} does not fit in ${section.length} record bytes`)
      }
      const logAppendTime = (attributes & TIMESTAMP_TYPE_MASK) !== 0
      const batch: BatchContext = {
        topic: opts.topic,
        partition: opts.partition,
        baseOffset,
        baseTimestamp: readInt64(data, start + BASE_TIMESTAMP_OFFSET),
        maxTimestamp: readInt64(data, start + MAX_TIMESTAMP_OFFSET),
        logAppendTime,
        leaderEpoch: data.readInt32BE(start + PARTITION_LEADER_EPOCH_OFFSET),
        fetchOffset: opts.fetchOffset,
      }
      decodeRecords(section, recordCount, batch, this.pending)
      if (this.pending.length > 0) return true
    }
    return false
  }
}

/** Smallest encoding of one record: seven one-byte fields. */
const MIN_RECORD_SIZE = 7

interface BatchContext {
  topic: string
  partition: number
  baseOffset: number
  baseTimestamp: number
  maxTimestamp: number
  logAppendTime: boolean
  leaderEpoch: number
  fetchOffset: number
}

function invalidRecord(message: string): KafkaError {
  return new KafkaError(ErrorCode.INVALID_RECORD, message)
}

/**
 * Decodes exactly count records filling buf (a batch's records section) into out, skipping offsets
 * before fetchOffset. Parsing and checks are the protocol's forEachRecord (one record walker for broker
 * and client); this only builds the ConsumedRecord.
 */
function decodeRecords(buf: Buffer, count: number, b: BatchContext, out: ConsumedRecord[]): void {
  forEachRecord(buf, count, (_attributes, timestampDelta, offsetDelta, key, value, rawHeaders) => {
    const offset = b.baseOffset + offsetDelta
    if (offset < b.fetchOffset) return
    // Most records have no headers: their (fresh, empty) array serves as the record's own.
    let headers = rawHeaders as unknown as Header[]
    if (rawHeaders.length > 0) {
      headers = new Array(rawHeaders.length)
      for (let h = 0; h < rawHeaders.length; h++) headers[h] = { key: rawHeaders[h]!.key.toString(), value: rawHeaders[h]!.value }
    }
    out.push({
      topic: b.topic,
      partition: b.partition,
      offset,
      timestamp: b.logAppendTime ? b.maxTimestamp : b.baseTimestamp + timestampDelta,
      timestampType: b.logAppendTime ? 'LogAppendTime' : 'CreateTime',
      key,
      value,
      headers,
      leaderEpoch: b.leaderEpoch,
    })
  })
}
