// Sequential whole-batch reads of a segment file for the cleaner: one pread of up to CHUNK bytes serves
// many batches; a batch bigger than the chunk gets a buffer of its own size, which is bounded by the
// file (a length running past the end stops the reader, as recovery would). Returned buffers are views
// valid until the next call.

import { readSync } from 'node:fs'
import { ATTRIBUTES_OFFSET, BATCH_LENGTH_OFFSET, LOG_OVERHEAD, MIN_BATCH_LENGTH, RECORD_BATCH_OVERHEAD, RECORD_COUNT_OFFSET, readInt64, LAST_OFFSET_DELTA_OFFSET, MAX_TIMESTAMP_OFFSET, PRODUCER_ID_OFFSET } from '../../protocol/records/batch.js'

const CHUNK = 1024 * 1024

export interface ReadBatch {
  /** The whole batch (a view; copy it to keep it). */
  bytes: Buffer
  position: number
  baseOffset: number
  lastOffset: number
  attributes: number
  recordCount: number
  maxTimestamp: number
  producerId: number
}

export class BatchReader {
  private buf: Buffer = Buffer.allocUnsafe(0)
  /** Bytes of buf holding file data read from chunkStart. */
  private valid = 0
  private chunkStart = 0
  private position: number

  constructor(
    private readonly fd: number,
    start: number,
    private readonly end: number,
  ) {
    this.position = start
  }

  /** Where the next batch starts (the end of the last one returned). */
  get nextPosition(): number {
    return this.position
  }

  /** The next whole batch, or null at the end (or at bytes that are not a batch). */
  next(): ReadBatch | null {
    const remaining = this.end - this.position
    if (remaining < RECORD_BATCH_OVERHEAD) return null
    let at = this.position - this.chunkStart
    if (at < 0 || at + RECORD_BATCH_OVERHEAD > this.valid) at = this.fill(Math.min(CHUNK, remaining))
    if (at + RECORD_BATCH_OVERHEAD > this.valid) return null
    const length = this.buf.readInt32BE(at + BATCH_LENGTH_OFFSET)
    if (length < MIN_BATCH_LENGTH || LOG_OVERHEAD + length > remaining) return null
    const size = LOG_OVERHEAD + length
    if (at + size > this.valid) at = this.fill(Math.max(size, Math.min(CHUNK, remaining)))
    if (at + size > this.valid) return null
    const bytes = this.buf.subarray(at, at + size)
    const baseOffset = readInt64(bytes, 0)
    this.position += size
    return {
      bytes,
      position: this.position - size,
      baseOffset,
      lastOffset: baseOffset + bytes.readInt32BE(LAST_OFFSET_DELTA_OFFSET),
      attributes: bytes.readInt16BE(ATTRIBUTES_OFFSET),
      recordCount: bytes.readInt32BE(RECORD_COUNT_OFFSET),
      maxTimestamp: readInt64(bytes, MAX_TIMESTAMP_OFFSET),
      producerId: readInt64(bytes, PRODUCER_ID_OFFSET),
    }
  }

  /** Reads length bytes from the current position into buf (grown when a batch needs it). */
  private fill(length: number): number {
    if (this.buf.length < length) this.buf = Buffer.allocUnsafe(Math.max(length, CHUNK))
    else if (this.buf.length > CHUNK && length <= CHUNK) this.buf = Buffer.allocUnsafe(CHUNK)
    let done = 0
    while (done < length) {
      const n = readSync(this.fd, this.buf, done, length - done, this.position + done)
      if (n === 0) break
      done += n
    }
    this.valid = done
    this.chunkStart = this.position
    return 0
  }
}

const header = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD)

/**
 * Calls onHeader with the 61 header bytes (a reused view) and position of each batch from start to end
 * of fd, reading headers only; stops at bytes that are not a whole batch.
 */
export function scanHeaders(fd: number, start: number, end: number, onHeader: (header: Buffer, position: number) => void): void {
  let pos = start
  while (end - pos >= RECORD_BATCH_OVERHEAD) {
    let done = 0
    while (done < RECORD_BATCH_OVERHEAD) {
      const n = readSync(fd, header, done, RECORD_BATCH_OVERHEAD - done, pos + done)
      if (n === 0) return
      done += n
    }
    const length = header.readInt32BE(BATCH_LENGTH_OFFSET)
    if (length < MIN_BATCH_LENGTH || LOG_OVERHEAD + length > end - pos) return
    onHeader(header, pos)
    pos += LOG_OVERHEAD + length
  }
}
