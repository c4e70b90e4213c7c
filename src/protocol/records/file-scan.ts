// Walking the batches of a segment file by their headers (fs.readSync into small reusable buffers).
// Used by the log for offset translation, timestamp search, read planning and crash recovery.

import { readSync } from 'node:fs'
import {
  ATTRIBUTES_OFFSET,
  BATCH_LENGTH_OFFSET,
  CRC_OFFSET,
  CURRENT_MAGIC,
  LOG_OVERHEAD,
  MAGIC_OFFSET,
  MIN_BATCH_LENGTH,
  RECORD_BATCH_OVERHEAD,
  batchInfoAt,
} from './batch.js'
import type { BatchInfo, Crc32c, IntegrityProblem } from './batch.js'

// One owner thread per module instance (each worker loads its own copy), so scratch buffers are safe.
const header = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD)
const CHUNK_BYTES = 256 * 1024
let chunk: Buffer | undefined

function readFully(fd: number, buf: Buffer, length: number, position: number): number {
  let done = 0
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, position + done)
    if (n === 0) break
    done += n
  }
  return done
}

/**
 * Reads the header of the batch at position of fd (file length end). Returns null when fewer than a
 * whole header remain or batchLength is impossible; the batch body and CRC are not checked.
 */
export function readBatchHeader(fd: number, position: number, end: number): BatchInfo | null {
  if (end - position < RECORD_BATCH_OVERHEAD) return null
  if (readFully(fd, header, RECORD_BATCH_OVERHEAD, position) < RECORD_BATCH_OVERHEAD) return null
  const batchLength = header.readInt32BE(BATCH_LENGTH_OFFSET)
  if (batchLength < MIN_BATCH_LENGTH || end - position < LOG_OVERHEAD + batchLength) return null
  return batchInfoAt(header, 0, position)
}

/** What a file scan did: where the last whole (and, with a CRC, valid) batch ends, and why it stopped. */
export interface FileScanResult {
  /** End position of the last batch accepted; a log is truncated here after a crash. */
  validEnd: number
  /** Set when the scan stopped on bad bytes before end; null when it reached end or was stopped. */
  problem: IntegrityProblem | 'rejected' | null
}

/**
 * What onBatch tells the scan: continue, stop after this batch ('stop'), stop before it ('stop-before',
 * which leaves validEnd at its start), or reject it as invalid ('reject', same as stop-before but
 * reported as a problem).
 */
export type ScanDecision = void | 'stop' | 'stop-before' | 'reject'

/**
 * Calls onBatch for each batch header from start to end of fd, in order. With crc32c, each batch is
 * also checked whole (magic 2, every byte present, CRC32C over 21..end) before onBatch sees it, reading
 * the file in 256 KiB chunks and streaming the CRC across chunks for batches bigger than that, so
 * memory stays bounded whatever the file says. Without crc32c only headers are read (61 bytes each).
 */
export function scanFileBatches(
  fd: number,
  start: number,
  end: number,
  crc32c: Crc32c | null,
  onBatch: (batch: BatchInfo) => ScanDecision,
): FileScanResult {
  let pos = start
  while (pos < end) {
    const info = crc32c === null ? readBatchHeader(fd, pos, end) : readVerifiedBatch(fd, pos, end, crc32c)
    if (info === null || typeof info === 'string') return { validEnd: pos, problem: info ?? 'truncated-batch' }
    const decision = onBatch(info)
    if (decision === 'stop-before') return { validEnd: pos, problem: null }
    if (decision === 'reject') return { validEnd: pos, problem: 'rejected' }
    pos += info.size
    if (decision === 'stop') return { validEnd: pos, problem: null }
  }
  return { validEnd: pos, problem: null }
}

function readVerifiedBatch(fd: number, pos: number, end: number, crc32c: Crc32c): BatchInfo | IntegrityProblem {
  if (end - pos < RECORD_BATCH_OVERHEAD) return 'truncated-header'
  if (readFully(fd, header, RECORD_BATCH_OVERHEAD, pos) < RECORD_BATCH_OVERHEAD) return 'truncated-header'
  const batchLength = header.readInt32BE(BATCH_LENGTH_OFFSET)
  if (batchLength < MIN_BATCH_LENGTH) return 'bad-length'
  const size = LOG_OVERHEAD + batchLength
  if (end - pos < size) return 'truncated-batch'
  if (header.readInt8(MAGIC_OFFSET) !== CURRENT_MAGIC) return 'bad-magic'
  chunk ??= Buffer.allocUnsafe(CHUNK_BYTES)
  let crc = crc32c(header.subarray(ATTRIBUTES_OFFSET))
  let at = pos + RECORD_BATCH_OVERHEAD
  const batchEnd = pos + size
  while (at < batchEnd) {
    const n = Math.min(CHUNK_BYTES, batchEnd - at)
    if (readFully(fd, chunk, n, at) < n) return 'truncated-batch'
    crc = crc32c(chunk.subarray(0, n), crc)
    at += n
  }
  if (crc !== header.readUInt32BE(CRC_OFFSET)) return 'bad-crc'
  return batchInfoAt(header, 0, pos)
}
