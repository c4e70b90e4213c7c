// Decoding fetched record data in tests: walks whole RecordBatch v2 entries, checks each CRC, and
// inflates compressed batches (gzip, snappy raw or xerial-framed, lz4 frame, zstd) so the records a
// client produced can be compared byte for byte. Test-only: the broker never decodes records.
import { gunzipSync } from 'node:zlib'
import { decompressFrameSync } from 'lz4-napi'
import { uncompressSync as snappyUncompress } from 'snappy'
import { createRequire } from 'node:module'
import {
  ATTRIBUTES_OFFSET,
  COMPRESSION_MASK,
  CRC_OFFSET,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  TIMESTAMP_TYPE_MASK,
  readInt64,
} from '../../src/protocol/records/batch.js'
import { decodeRecords, type RecordHeader } from '../../src/protocol/records/builder.js'
import { crc32c } from './raw-client.js'

export const CODEC_NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const

export interface FetchedRecord {
  offset: number
  timestamp: number
  key: Buffer | null
  value: Buffer | null
  headers: RecordHeader[]
}

export interface FetchedBatch {
  baseOffset: number
  lastOffset: number
  compression: (typeof CODEC_NAMES)[number]
  logAppendTime: boolean
  records: FetchedRecord[]
}

const require = createRequire(import.meta.url)

/**
 * zstd-napi, loaded on first use: its native part is built by its install script, and a checkout where
 * that did not run should still run every test that does not need zstd.
 */
export function loadZstd(): typeof import('zstd-napi') {
  return require('zstd-napi') as typeof import('zstd-napi')
}

/** Whether zstd-napi loads; when not, says why on the console (tests needing it are then skipped). */
export function hasZstdNapi(): boolean {
  try {
    loadZstd()
    return true
  } catch (err) {
    console.warn(`[skein tests] zstd-napi does not load (${(err as Error).message.split('\n')[0]}): zstd checks are SKIPPED. Build it with: cd node_modules/zstd-napi && node-gyp rebuild`)
    return false
  }
}

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00])

function inflateSnappy(data: Buffer): Buffer {
  if (data.length >= 16 && data.subarray(0, 8).equals(XERIAL_MAGIC)) {
    // Xerial framing (Java clients): magic, version, compatible version, then int32-sized blocks.
    const parts: Buffer[] = []
    let pos = 16
    while (pos < data.length) {
      const n = data.readInt32BE(pos)
      pos += 4
      parts.push(snappyUncompress(data.subarray(pos, pos + n)) as Buffer)
      pos += n
    }
    return Buffer.concat(parts)
  }
  return snappyUncompress(data) as Buffer
}

function inflate(codec: number, data: Buffer): Buffer {
  switch (codec) {
    case 1:
      return gunzipSync(data)
    case 2:
      return inflateSnappy(data)
    case 3:
      return decompressFrameSync(data)
    case 4:
      return loadZstd().decompress(data)
    default:
      throw new Error(`unknown compression codec ${codec}`)
  }
}

/**
 * Every batch in `buf` (fetched record data). A trailing partial batch (allowed in Fetch responses) is
 * ignored; a bad CRC throws.
 */
export function decodeBatches(buf: Buffer): FetchedBatch[] {
  const out: FetchedBatch[] = []
  let pos = 0
  while (buf.length - pos >= LOG_OVERHEAD) {
    const size = buf.readInt32BE(pos + 8)
    const end = pos + LOG_OVERHEAD + size
    if (end > buf.length) break
    const batch = buf.subarray(pos, end)
    const crc = batch.readUInt32BE(CRC_OFFSET)
    if (crc32c(batch.subarray(ATTRIBUTES_OFFSET)) !== crc) throw new Error(`batch at ${pos} has a bad CRC`)
    const attributes = batch.readInt16BE(ATTRIBUTES_OFFSET)
    const codec = attributes & COMPRESSION_MASK
    const baseOffset = readInt64(batch, 0)
    const lastOffset = baseOffset + batch.readInt32BE(23)
    let records: FetchedRecord[]
    if (codec === 0) {
      records = decodeRecords(batch)
    } else {
      // Rebuild an uncompressed batch around the inflated records so the one decoder reads both.
      const inflated = inflate(codec, batch.subarray(RECORD_BATCH_OVERHEAD))
      const plain = Buffer.concat([batch.subarray(0, RECORD_BATCH_OVERHEAD), inflated])
      plain.writeInt32BE(plain.length - LOG_OVERHEAD, 8)
      plain.writeInt16BE(attributes & ~COMPRESSION_MASK, ATTRIBUTES_OFFSET)
      records = decodeRecords(plain)
    }
    if ((attributes & TIMESTAMP_TYPE_MASK) !== 0) {
      // LogAppendTime: every record's timestamp is the batch's max timestamp.
      const ts = readInt64(batch, 35)
      for (const r of records) r.timestamp = ts
    }
    out.push({ baseOffset, lastOffset, compression: CODEC_NAMES[codec] ?? 'none', logAppendTime: (attributes & TIMESTAMP_TYPE_MASK) !== 0, records })
    pos = end
  }
  return out
}

export function decodeAllRecords(buf: Buffer): FetchedRecord[] {
  return decodeBatches(buf).flatMap((b) => b.records)
}
