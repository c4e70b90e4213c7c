// Kafka's record compression codecs, by the attribute id a RecordBatch carries in bits 0-2:
// 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd. Synchronous: the shard worker threads call these while
// appending, and the log cleaner while rewriting segments.
//
// Decompression is bounded: nothing here allocates or produces more than the caller's maxBytes, so a
// decompression bomb (a few KB that inflate to gigabytes) or a corrupt stream ends in
// KafkaError(INVALID_RECORD) instead of exhausting memory. How each codec is bounded:
//   gzip    zlib's maxOutputLength stops inflation at the limit.
//   snappy  every raw block starts with its uncompressed length (varint); it is checked against what is
//           left of the budget, and against snappy's best possible ratio (64 bytes from a 3-byte copy),
//           before the native decoder allocates it. Xerial framing (Java, librdkafka: magic
//           \x82SNAPPY\x00, int32 version, int32 compatible version, then [int32 length, raw block]...)
//           is detected by its magic; anything else is one raw block (kafkajs-snappy, @platformatic/kafka).
//   lz4     Kafka's LZ4 is the frame format. The frame is parsed here (a declared content size is checked
//           up front) and each block is decoded natively into at most the frame's block max size (64 KiB
//           to 4 MiB), with a running total; linked blocks get the previous 64 KiB as their dictionary.
//   zstd    a declared frame content size is checked up front; decoding streams into 128 KiB chunks with
//           a running total, and the window the decoder may allocate is capped (ZSTD_d_windowLogMax).
//
// decompressInChunks streams instead (the produce path's record walk, validate.ts): output is handed to
// a callback chunk by chunk and never gathered, so a batch is checked in memory bounded by the codec's
// chunk, not by its decompressed size (zstd frames declaring at most one chunk in all are decoded in
// one call into that chunk). gzip drives one zlib handle synchronously in 64 KiB chunks (Node
// has no public synchronous streaming inflate; without the handle it falls back to gunzipBounded), zstd
// streams into one reused chunk, lz4 hands over each block (at most the frame's block max size),
// xerial snappy each block; a raw snappy block is decoded whole (the snappy package decodes whole
// blocks only), bounded by its declared length, which is checked before anything is allocated.
//
// Compression uses Kafka's defaults: gzip level 6 (Deflater's default), lz4 frames with independent
// 64 KiB blocks, zstd level 3. Snappy is written as one raw block, not xerial-framed as Kafka's Java
// broker does: every client decodes raw blocks (snappy-java and librdkafka fall back to them), while
// @platformatic/kafka cannot read xerial framing.

import { createRequire } from 'node:module'
import { constants as bufferConstants } from 'node:buffer'
import { constants as zlibConstants, createGunzip, gunzipSync, gzipSync, type Gunzip } from 'node:zlib'
import { compressFrameSync, uncompressSync as lz4BlockUncompressSync } from 'lz4-napi'
import { compressSync as snappyCompressSync, uncompressSync as snappyUncompressSync } from 'snappy'
import { native } from '../../addon/index.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import { CompressionType } from './batch.js'

/** Kafka's compression.type values (topic and broker config, validated by the config tables), in Kafka's documented order. */
export const COMPRESSION_TYPE_NAMES = ['uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer'] as const
export type CompressionTypeName = (typeof COMPRESSION_TYPE_NAMES)[number]

/** Codec names as Kafka spells them in logs, by attribute id. */
export const CODEC_NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const

/**
 * The codec a topic's compression.type asks stored batches to have, or null for 'producer' (keep the
 * producer's codec). 'uncompressed' is codec 0.
 */
export function targetCodec(compressionType: CompressionTypeName): CompressionType | null {
  switch (compressionType) {
    case 'producer':
      return null
    case 'uncompressed':
      return CompressionType.NONE
    case 'gzip':
      return CompressionType.GZIP
    case 'snappy':
      return CompressionType.SNAPPY
    case 'lz4':
      return CompressionType.LZ4
    case 'zstd':
      return CompressionType.ZSTD
  }
}

function invalid(message: string): KafkaError {
  return new KafkaError(ErrorCode.INVALID_RECORD, message)
}

function unsupported(codec: number): KafkaError {
  return new KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `compression codec ${codec}`)
}

function checkMaxBytes(maxBytes: number): void {
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError(`maxBytes ${maxBytes} must be a non-negative integer`)
}

/** Compresses data with codec (0-4) at Kafka's default level. */
export function compress(codec: number, data: Buffer): Buffer {
  switch (codec) {
    case CompressionType.NONE:
      return data
    case CompressionType.GZIP:
      return gzipSync(data, { level: 6 })
    case CompressionType.SNAPPY:
      return snappyCompressSync(data)
    case CompressionType.LZ4:
      return compressFrameSync(data)
    case CompressionType.ZSTD:
      return zstdCompress(data)
    default:
      throw unsupported(codec)
  }
}

/**
 * Decompresses data compressed with codec (0-4), producing at most maxBytes bytes. Throws
 * KafkaError(INVALID_RECORD) when the data is corrupt or would inflate past maxBytes (nothing larger
 * than maxBytes, plus one codec block, is ever allocated), KafkaError(UNSUPPORTED_COMPRESSION_TYPE) for
 * an unknown codec. Codec 0 returns data itself (checked against maxBytes).
 */
export function decompress(codec: number, data: Buffer, maxBytes: number): Buffer {
  checkMaxBytes(maxBytes)
  switch (codec) {
    case CompressionType.NONE:
      if (data.length > maxBytes) throw invalid(`${data.length} uncompressed bytes exceed the limit of ${maxBytes}`)
      return data
    case CompressionType.GZIP:
      return gunzipBounded(data, maxBytes)
    case CompressionType.SNAPPY:
      return snappyDecompressBounded(data, maxBytes)
    case CompressionType.LZ4:
      return lz4DecompressBounded(data, maxBytes)
    case CompressionType.ZSTD:
      return zstdDecompressBounded(data, maxBytes)
    default:
      throw unsupported(codec)
  }
}

/** Receives decompressed bytes; the chunk may be reused after the call returns (copy what you keep). */
export type ChunkSink = (chunk: Buffer) => void

/**
 * Decompresses data compressed with codec (1-4), handing the output to onChunk in order, at most
 * maxBytes in all; returns the number of bytes produced. Errors as for decompress; an error thrown by
 * onChunk ends the decompression and is rethrown as is.
 */
export function decompressInChunks(codec: number, data: Buffer, maxBytes: number, onChunk: ChunkSink): number {
  checkMaxBytes(maxBytes)
  switch (codec) {
    case CompressionType.NONE:
      if (data.length > maxBytes) throw invalid(`${data.length} uncompressed bytes exceed the limit of ${maxBytes}`)
      onChunk(data)
      return data.length
    case CompressionType.GZIP:
      return gunzipInChunks(data, maxBytes, onChunk)
    case CompressionType.SNAPPY:
      return snappyInChunks(data, maxBytes, onChunk)
    case CompressionType.LZ4:
      return lz4InChunks(data, maxBytes, onChunk)
    case CompressionType.ZSTD:
      return zstdInChunks(data, maxBytes, onChunk)
    default:
      throw unsupported(codec)
  }
}

// ---- gzip ----

/** The native side of a node:zlib stream: what Node's own synchronous zlib calls drive. */
interface ZlibHandle {
  writeSync(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void
  reset(): void
  onerror: (message: string, errno: number) => void
}
interface GunzipEngine {
  stream: Gunzip
  handle: ZlibHandle
  /** [avail_out, avail_in] after each writeSync. */
  state: Uint32Array
  out: Buffer
  error: string | undefined
}
const GUNZIP_CHUNK = 64 * 1024
/** One per thread (the shard workers each load this module); null when this Node has no usable handle. */
let gunzipEngine: GunzipEngine | null | undefined

function getGunzipEngine(): GunzipEngine | null {
  if (gunzipEngine !== undefined) return gunzipEngine
  const stream = createGunzip()
  const internals = stream as unknown as { _handle?: ZlibHandle; _writeState?: Uint32Array }
  const handle = internals._handle
  const state = internals._writeState
  if (handle === undefined || typeof handle.writeSync !== 'function' || !(state instanceof Uint32Array)) {
    stream.close()
    gunzipEngine = null
    return null
  }
  const engine: GunzipEngine = { stream, handle, state, out: Buffer.allocUnsafe(GUNZIP_CHUNK), error: undefined }
  // Synchronous writes report errors through onerror, during writeSync.
  handle.onerror = (message) => {
    engine.error = message
  }
  gunzipEngine = engine
  return engine
}

function gunzipInChunks(data: Buffer, maxBytes: number, onChunk: ChunkSink): number {
  if (data.length === 0) throw invalid('empty gzip stream')
  const engine = getGunzipEngine()
  if (engine === null) {
    const out = gunzipBounded(data, maxBytes)
    onChunk(out)
    return out.length
  }
  const { handle, state, out } = engine
  let inOff = 0
  let inLeft = data.length
  let produced = 0
  let ok = false
  try {
    for (;;) {
      handle.writeSync(zlibConstants.Z_FINISH, data, inOff, inLeft, out, 0, out.length)
      if (engine.error !== undefined) throw invalid(`corrupt gzip data: ${engine.error}`)
      const outLeft = state[0]!
      const consumed = inLeft - state[1]!
      const have = out.length - outLeft
      inOff += consumed
      inLeft -= consumed
      if (have > 0) {
        produced += have
        if (produced > maxBytes) throw invalid(`gzip data inflates past the limit of ${maxBytes} bytes`)
        onChunk(out.subarray(0, have))
      }
      if (outLeft !== 0) break // zlib stopped with room to spare: the stream is complete
      if (have === 0 && consumed === 0) throw invalid('gzip decoder made no progress')
    }
    ok = true
  } finally {
    if (ok) {
      handle.reset()
    } else {
      // A failed stream may have left zlib in any state: start the next batch on a fresh one.
      engine.stream.close()
      gunzipEngine = undefined
    }
  }
  return produced
}

function gunzipBounded(data: Buffer, maxBytes: number): Buffer {
  if (data.length === 0) throw invalid('empty gzip stream')
  try {
    // maxOutputLength must be at least 1; an empty result still passes with a limit of 0 below.
    const out = gunzipSync(data, { maxOutputLength: Math.max(1, Math.min(maxBytes, bufferConstants.MAX_LENGTH)) })
    if (out.length > maxBytes) throw invalid(`gzip data inflates past the limit of ${maxBytes} bytes`)
    return out
  } catch (err) {
    if (err instanceof KafkaError) throw err
    const e = err as NodeJS.ErrnoException
    if (e.code === 'ERR_BUFFER_TOO_LARGE') throw invalid(`gzip data inflates past the limit of ${maxBytes} bytes`)
    throw invalid(`corrupt gzip data: ${e.message}`)
  }
}

// ---- snappy ----

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00])
const XERIAL_HEADER_SIZE = 16
/** A 3-byte copy element yields at most 64 bytes: the most a raw snappy block can expand. */
const SNAPPY_MAX_RATIO = 64 / 3

/** Whether data starts with xerial's snappy framing magic. */
export function isXerialSnappy(data: Buffer): boolean {
  return data.length >= XERIAL_HEADER_SIZE && data.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)
}

function snappyDecompressBounded(data: Buffer, maxBytes: number): Buffer {
  if (!isXerialSnappy(data)) return snappyBlock(data, maxBytes)
  const parts: Buffer[] = []
  const produced = eachXerialBlock(data, maxBytes, snappyBlock, (block) => parts.push(block))
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, produced)
}

function snappyInChunks(data: Buffer, maxBytes: number, onChunk: ChunkSink): number {
  if (!isXerialSnappy(data)) {
    const block = snappyBlockScratch(data, maxBytes)
    onChunk(block)
    return block.length
  }
  return eachXerialBlock(data, maxBytes, snappyBlockScratch, onChunk)
}

/**
 * Walks xerial's framing (header, then int32-length-prefixed raw snappy blocks), decoding each block
 * within what is left of maxBytes and handing it on; returns the bytes produced.
 */
function eachXerialBlock(data: Buffer, maxBytes: number, decode: (block: Buffer, limit: number) => Buffer, onBlock: (block: Buffer) => void): number {
  let produced = 0
  let pos = XERIAL_HEADER_SIZE
  while (pos < data.length) {
    if (data.length - pos < 4) throw invalid('truncated xerial snappy block length')
    const n = data.readInt32BE(pos)
    pos += 4
    if (n < 0 || n > data.length - pos) throw invalid(`xerial snappy block of ${n} bytes at ${pos - 4} runs past the data`)
    const block = decode(data.subarray(pos, pos + n), maxBytes - produced)
    produced += block.length
    onBlock(block)
    pos += n
  }
  return produced
}

/** The uncompressed length a raw snappy block declares, checked against maxBytes and snappy's best ratio. */
function snappyDeclaredLength(block: Buffer, maxBytes: number): number {
  let length = 0
  let pos = 0
  for (let shift = 0; ; shift += 7) {
    if (pos >= block.length || shift > 28) throw invalid('corrupt snappy block length')
    const b = block[pos++]!
    length += (b & 0x7f) * 2 ** shift
    if ((b & 0x80) === 0) break
  }
  if (length > maxBytes) throw invalid(`snappy block declares ${length} bytes, past the limit of ${maxBytes}`)
  if (length > Math.ceil((block.length - pos) * SNAPPY_MAX_RATIO)) {
    throw invalid(`snappy block of ${block.length} bytes cannot hold the ${length} bytes it declares`)
  }
  return length
}

/** One raw snappy block; its varint preamble (uncompressed length) is checked before decoding. */
function snappyBlock(block: Buffer, maxBytes: number): Buffer {
  const length = snappyDeclaredLength(block, maxBytes)
  try {
    const out = snappyUncompressSync(block, { asBuffer: true }) as Buffer
    if (out.length !== length) throw invalid(`snappy block produced ${out.length} bytes, declared ${length}`)
    return out
  } catch (err) {
    if (err instanceof KafkaError) throw err
    throw invalid(`corrupt snappy data: ${(err as Error).message}`)
  }
}

/** The addon's snappy decoder into a caller's buffer, when this build has it. */
const snappyIntoNative = native.snappyUncompressInto?.bind(native)
/** Scratch output of snappyBlockScratch, reused up to this size (larger blocks get their own buffer). */
const SNAPPY_SCRATCH_MAX = 4 * 1024 * 1024
let snappyScratch: Buffer | undefined

/**
 * A raw snappy block decoded into a buffer that is reused by the next call (for chunk sinks, which
 * copy what they keep); the declared length is checked first, as in snappyBlock.
 */
function snappyBlockScratch(block: Buffer, maxBytes: number): Buffer {
  if (snappyIntoNative === undefined) return snappyBlock(block, maxBytes)
  const length = snappyDeclaredLength(block, maxBytes)
  let out: Buffer
  if (length > SNAPPY_SCRATCH_MAX) {
    out = Buffer.allocUnsafe(length)
  } else {
    if (snappyScratch === undefined || snappyScratch.length < length) snappyScratch = Buffer.allocUnsafe(Math.max(length, 64 * 1024))
    out = snappyScratch.subarray(0, length)
  }
  if (snappyIntoNative(block, out) !== length) throw invalid('corrupt snappy data')
  return out
}

// ---- lz4 (frame format) ----

const LZ4_MAGIC = 0x184d2204
const LZ4_SKIPPABLE_MASK = 0xfffffff0
const LZ4_SKIPPABLE_MAGIC = 0x184d2a50
const LZ4_BLOCK_MAX_SIZES: Record<number, number> = { 4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024 }
/** Linked blocks may refer back this far into what earlier blocks produced. */
const LZ4_WINDOW = 64 * 1024

function lz4DecompressBounded(data: Buffer, maxBytes: number): Buffer {
  const parts: Buffer[] = []
  // Without the scratch buffer blocks are fresh buffers (or views of data): they can be kept as they are.
  const produced = lz4InChunks(data, maxBytes, (block) => parts.push(block), false)
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, produced)
}

/**
 * scratch: blocks are decoded by the addon into one reused buffer (the chunks handed over are only
 * valid during the call); false decodes each into a fresh buffer with lz4-napi.
 */
function lz4InChunks(data: Buffer, maxBytes: number, onChunk: ChunkSink, scratch = true): number {
  let produced = 0
  let pos = 0
  if (data.length === 0) throw invalid('empty lz4 data')
  while (pos < data.length) {
    if (data.length - pos < 4) throw invalid('truncated lz4 frame magic')
    const magic = data.readUInt32LE(pos)
    if ((magic & LZ4_SKIPPABLE_MASK) >>> 0 === LZ4_SKIPPABLE_MAGIC) {
      if (data.length - pos < 8) throw invalid('truncated lz4 skippable frame')
      const n = data.readUInt32LE(pos + 4)
      if (n > data.length - pos - 8) throw invalid('lz4 skippable frame runs past the data')
      pos += 8 + n
      continue
    }
    if (magic !== LZ4_MAGIC) throw invalid(`bad lz4 frame magic 0x${magic.toString(16)}`)
    const frame = lz4Frame(data, pos + 4, maxBytes, produced, onChunk, scratch && lz4IntoNative !== undefined)
    pos = frame.end
    produced = frame.produced
  }
  return produced
}

/**
 * Decodes one frame whose descriptor starts at pos, handing each block to onChunk. Returns the end
 * position and the running total of bytes produced.
 */
function lz4Frame(
  data: Buffer,
  pos: number,
  maxBytes: number,
  producedBefore: number,
  onChunk: ChunkSink,
  scratch: boolean,
): { end: number; produced: number } {
  if (data.length - pos < 3) throw invalid('truncated lz4 frame descriptor')
  const flg = data[pos]!
  const bd = data[pos + 1]!
  if (flg >> 6 !== 1) throw invalid(`unsupported lz4 frame version ${flg >> 6}`)
  if ((flg & 0x02) !== 0 || (bd & 0x8f) !== 0) throw invalid('reserved lz4 frame descriptor bits are set')
  const independent = (flg & 0x20) !== 0
  const blockChecksum = (flg & 0x10) !== 0
  const hasContentSize = (flg & 0x08) !== 0
  const contentChecksum = (flg & 0x04) !== 0
  const hasDictId = (flg & 0x01) !== 0
  const blockMax = LZ4_BLOCK_MAX_SIZES[(bd >> 4) & 0x07]
  if (blockMax === undefined) throw invalid(`bad lz4 block max size id ${(bd >> 4) & 0x07}`)
  if (hasDictId) throw invalid('lz4 frames with a dictionary id are not supported')
  pos += 2
  if (hasContentSize) {
    if (data.length - pos < 9) throw invalid('truncated lz4 frame descriptor')
    const high = data.readUInt32LE(pos + 4)
    const size = high * 0x1_0000_0000 + data.readUInt32LE(pos)
    if (high > 0x1fffff || producedBefore + size > maxBytes) {
      throw invalid(`lz4 frame declares ${size} bytes, past the limit of ${maxBytes}`)
    }
    pos += 8
  }
  pos += 1 // header checksum: the batch CRC already covers these bytes
  let produced = producedBefore
  // Linked blocks may refer to the last 64 KiB the frame produced: kept here, never more.
  let window: Buffer | null = null
  // With scratch: blocks are decoded at lz4Scratch[windowLength...), after the window they may refer to.
  let windowLength = 0
  const work = scratch ? lz4ScratchFor(blockMax) : null
  for (;;) {
    if (data.length - pos < 4) throw invalid('truncated lz4 block header')
    const word = data.readUInt32LE(pos)
    pos += 4
    if (word === 0) break // EndMark
    const uncompressed = (word & 0x80000000) !== 0
    const size = word & 0x7fffffff
    if (size > blockMax || size > data.length - pos) throw invalid(`lz4 block of ${size} bytes is corrupt or truncated`)
    const block = data.subarray(pos, pos + size)
    pos += size + (blockChecksum ? 4 : 0)
    if (pos > data.length) throw invalid('truncated lz4 block checksum')
    let out: Buffer
    if (work !== null) {
      const room = Math.min(blockMax, maxBytes - produced + 1)
      const start = independent ? 0 : windowLength
      let n: number
      if (uncompressed) {
        if (size > room) throw invalid(`lz4 data inflates past the limit of ${maxBytes} bytes`)
        n = block.copy(work, start)
      } else {
        n = lz4IntoNative!(block, work, start, start + room)
        if (n < 0) {
          // The decoder cannot tell a corrupt block from one that needs more room than the budget left.
          throw invalid(room < blockMax ? `corrupt lz4 block, or lz4 data inflating past the limit of ${maxBytes} bytes` : 'corrupt lz4 block')
        }
      }
      out = work.subarray(start, start + n)
      produced += n
      if (produced > maxBytes) throw invalid(`lz4 data inflates past the limit of ${maxBytes} bytes`)
      onChunk(out)
      if (!independent) {
        // Keep the last 64 KiB at the front for the next block.
        const kept = Math.min(LZ4_WINDOW, start + n)
        work.copyWithin(0, start + n - kept, start + n)
        windowLength = kept
      }
      continue
    }
    if (uncompressed) {
      out = block
    } else {
      // Decode into at most blockMax bytes, or what is left of the budget plus one byte (to detect overrun).
      const room = Math.min(blockMax, maxBytes - produced + 1)
      const input = Buffer.allocUnsafe(4 + size)
      input.writeUInt32LE(room, 0)
      block.copy(input, 4)
      try {
        out = independent || window === null ? lz4BlockUncompressSync(input) : lz4BlockUncompressSync(input, window)
      } catch (err) {
        throw invalid(`corrupt lz4 block: ${(err as Error).message}`)
      }
    }
    produced += out.length
    if (produced > maxBytes) throw invalid(`lz4 data inflates past the limit of ${maxBytes} bytes`)
    if (!independent) window = lz4Window(window, out)
    onChunk(out)
  }
  if (contentChecksum) {
    if (data.length - pos < 4) throw invalid('truncated lz4 content checksum')
    pos += 4
  }
  return { end: pos, produced }
}

/** The addon's LZ4 block decoder, when this build has it. */
const lz4IntoNative = native.lz4UncompressInto?.bind(native)
let lz4Scratch: Buffer | undefined

/** The reused decode buffer: a 64 KiB window and one block of blockMax (at most 4 MiB) after it. */
function lz4ScratchFor(blockMax: number): Buffer {
  const size = LZ4_WINDOW + blockMax
  if (lz4Scratch === undefined || lz4Scratch.length < size) lz4Scratch = Buffer.allocUnsafe(size)
  return lz4Scratch
}

/** The last 64 KiB of what the frame produced, after block: the dictionary of the next linked block. */
function lz4Window(window: Buffer | null, block: Buffer): Buffer {
  if (block.length >= LZ4_WINDOW || window === null) return Buffer.from(block.subarray(Math.max(0, block.length - LZ4_WINDOW)))
  const keep = Math.min(window.length, LZ4_WINDOW - block.length)
  return Buffer.concat([window.subarray(window.length - keep), block], keep + block.length)
}

// ---- zstd ----

/** The zstd-napi binding, loaded on first use so that a broker without it still serves other codecs. */
interface ZstdBinding {
  DCtx: new () => ZstdDCtx
  CCtx: new () => ZstdCCtx
  getFrameContentSize(frame: Uint8Array): number | null
  findFrameCompressedSize(frame: Uint8Array): number
  dStreamOutSize(): number
  DParameter: { windowLogMax: number }
  CParameter: { compressionLevel: number }
  ResetDirective: { sessionOnly: number }
  compressBound(n: number): number
}
interface ZstdDCtx {
  decompress(dst: Uint8Array, src: Uint8Array): number
  decompressStream(dst: Uint8Array, src: Uint8Array): [number, number, number]
  setParameter(param: number, value: number): void
  reset(directive: number): void
}
interface ZstdCCtx {
  compress2(dst: Uint8Array, src: Uint8Array): number
  setParameter(param: number, value: number): void
}

const require = createRequire(import.meta.url)
let zstd: ZstdBinding | undefined
let zstdError: Error | undefined
let zstdDctx: ZstdDCtx | undefined
let zstdCctx: ZstdCCtx | undefined
/** 2^24 = 16 MiB: covers every level up to 19 (level 19 uses 2^23); higher-level frames are rejected. */
const ZSTD_WINDOW_LOG_MAX = 24
/** Kafka's default compression.zstd.level. */
const ZSTD_LEVEL = 3

function loadZstd(): ZstdBinding {
  if (zstd !== undefined) return zstd
  if (zstdError === undefined) {
    try {
      const b = require('zstd-napi/binding') as ZstdBinding
      zstd = b
      return b
    } catch (err) {
      zstdError = err as Error
    }
  }
  throw new KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, `zstd is unavailable: ${zstdError!.message.split('\n')[0]}`)
}

function zstdCompress(data: Buffer): Buffer {
  const b = loadZstd()
  if (zstdCctx === undefined) {
    zstdCctx = new b.CCtx()
    zstdCctx.setParameter(b.CParameter.compressionLevel, ZSTD_LEVEL)
  }
  const out = Buffer.allocUnsafe(b.compressBound(data.length))
  const n = zstdCctx.compress2(out, data)
  return out.subarray(0, n)
}

function zstdDecompressBounded(data: Buffer, maxBytes: number): Buffer {
  const b = loadZstd()
  if (data.length === 0) throw invalid('empty zstd data')
  const { declared, allDeclared } = zstdDeclaredSize(b, data, maxBytes)
  const dctx = getZstdDctx(b)
  if (allDeclared) {
    // Every frame states its size (librdkafka, zstd-napi one-shot): decode once into exactly that.
    const out = Buffer.allocUnsafe(declared)
    try {
      const n = dctx.decompress(out, data)
      if (n !== declared) throw invalid(`zstd frames produced ${n} bytes, declared ${declared}`)
      return out
    } catch (err) {
      dctx.reset(b.ResetDirective.sessionOnly)
      if (err instanceof KafkaError) throw err
      throw invalid(`corrupt zstd data: ${(err as Error).message}`)
    }
  }
  const parts: Buffer[] = []
  const produced = zstdStream(b, dctx, data, maxBytes, (chunk) => parts.push(Buffer.from(chunk)))
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts, produced)
}

function zstdInChunks(data: Buffer, maxBytes: number, onChunk: ChunkSink): number {
  const b = loadZstd()
  if (data.length === 0) throw invalid('empty zstd data')
  const { declared, allDeclared } = zstdDeclaredSize(b, data, maxBytes)
  const dctx = getZstdDctx(b)
  zstdChunk ??= Buffer.allocUnsafe(b.dStreamOutSize())
  if (allDeclared && declared <= zstdChunk.length) {
    // Every frame states its size and all of it fits one chunk (librdkafka's and Java's batches of
    // up to 128 KiB): one decode call into the reused chunk, no streaming state. The same memory as
    // one streamed chunk; a failure is left to the stream below, which names it.
    const out = zstdChunk.subarray(0, declared)
    let n = -1
    try {
      n = dctx.decompress(out, data)
    } catch {
      dctx.reset(b.ResetDirective.sessionOnly)
    }
    if (n === declared) {
      if (n > 0) onChunk(out)
      return n
    }
  }
  return zstdStream(b, dctx, data, maxBytes, onChunk)
}

function getZstdDctx(b: ZstdBinding): ZstdDCtx {
  if (zstdDctx === undefined) {
    zstdDctx = new b.DCtx()
    zstdDctx.setParameter(b.DParameter.windowLogMax, ZSTD_WINDOW_LOG_MAX)
  }
  return zstdDctx
}

/** Checks the frames' declared content sizes against maxBytes before any decoding. */
function zstdDeclaredSize(b: ZstdBinding, data: Buffer, maxBytes: number): { declared: number; allDeclared: boolean } {
  // Declared sizes first: a frame that says it is too big is refused before any work.
  let declared = 0
  let allDeclared = true
  try {
    for (let frame = data; frame.length > 0; ) {
      const size = b.getFrameContentSize(frame)
      if (size === null) {
        allDeclared = false
        break
      }
      declared += size
      if (declared > maxBytes) throw invalid(`zstd frame declares ${size} bytes, past the limit of ${maxBytes}`)
      frame = frame.subarray(b.findFrameCompressedSize(frame))
    }
  } catch (err) {
    if (err instanceof KafkaError) throw err
    throw invalid(`corrupt zstd data: ${(err as Error).message}`)
  }
  return { declared, allDeclared }
}

/** One output chunk per thread, reused by every streamed zstd decompression. */
let zstdChunk: Buffer | undefined

/** Streams data through dctx into the reused chunk, handing each filled part to onChunk. */
function zstdStream(b: ZstdBinding, dctx: ZstdDCtx, data: Buffer, maxBytes: number, onChunk: ChunkSink): number {
  zstdChunk ??= Buffer.allocUnsafe(b.dStreamOutSize())
  const chunk = zstdChunk
  let produced = 0
  let input = data
  let pending = 1
  try {
    for (;;) {
      // At most what is left of the budget plus one byte, so an overrun is seen without producing more.
      const out = chunk.subarray(0, Math.min(chunk.length, maxBytes - produced + 1))
      const [remaining, written, consumed] = dctx.decompressStream(out, input)
      input = input.subarray(consumed)
      pending = remaining
      if (written > 0) {
        produced += written
        if (produced > maxBytes) throw invalid(`zstd data inflates past the limit of ${maxBytes} bytes`)
        onChunk(out.subarray(0, written))
      }
      if (input.length === 0 && written < out.length) break
      if (consumed === 0 && written === 0) throw invalid('zstd decoder made no progress')
    }
  } catch (err) {
    dctx.reset(b.ResetDirective.sessionOnly)
    if (err instanceof KafkaError) throw err
    throw invalid(`corrupt zstd data: ${(err as Error).message}`)
  }
  if (pending !== 0) {
    dctx.reset(b.ResetDirective.sessionOnly)
    throw invalid('truncated zstd frame')
  }
  return produced
}
