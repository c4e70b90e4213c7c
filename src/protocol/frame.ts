// Size-prefixed frames: int32 size (bytes that follow), then header, then body. A response frame
// is a chunk list so that record data can go from file regions straight to the socket.

import { ProtocolDecodeError } from './primitives/errors.js'
import type { FileRegion } from '../domain/file-region.js'
import { Writer } from './primitives/writer.js'
import { writeRequestHeader, writeResponseHeader, type RequestHeader } from './header.js'

export interface Frame {
  /** Buffers and file regions, in order; the first chunk starts with the size prefix. */
  chunks: (Buffer | FileRegion)[]
  /** Total bytes, size prefix included. */
  length: number
}

/** Joins a header Writer and a body Writer into one frame with a 4-byte size prefix. */
export function frameFrom(header: Writer, body: Writer): Frame {
  const size = header.length + body.length
  const prefix = Buffer.allocUnsafe(4)
  prefix.writeInt32BE(size, 0)
  const headerChunks = header.chunks()
  const first = headerChunks.length === 1 && Buffer.isBuffer(headerChunks[0]) ? Buffer.concat([prefix, headerChunks[0]]) : prefix
  const chunks: (Buffer | FileRegion)[] = [first]
  if (first === prefix) chunks.push(...headerChunks)
  chunks.push(...body.chunks())
  return { chunks, length: size + 4 }
}

/**
 * Starts a frame in a single Writer: reserves the size prefix. Write the header and body next,
 * then call endFrame with the returned mark.
 */
export function beginFrame(w: Writer): number {
  return w.reserveInt32()
}

export function endFrame(w: Writer, mark: number): void {
  w.patchInt32(mark, w.length - mark - 4)
}

/** A whole response frame: size, response header for (apiKey, apiVersion), then the body. */
export function encodeResponseFrame(apiKey: number, apiVersion: number, correlationId: number, writeBody: (w: Writer) => void): Frame {
  const w = new Writer(512)
  const mark = beginFrame(w)
  writeResponseHeader(w, apiKey, apiVersion, correlationId)
  writeBody(w)
  endFrame(w, mark)
  return { chunks: w.chunks(), length: w.length }
}

/** A whole request frame (clients and tests); requests never carry file regions. */
export function encodeRequestFrame(header: RequestHeader, writeBody: (w: Writer) => void): Buffer {
  const w = new Writer(256)
  const mark = beginFrame(w)
  writeRequestHeader(w, header)
  writeBody(w)
  endFrame(w, mark)
  return w.toBuffer()
}

/**
 * Length of the frame starting at `offset` (size prefix included) once its 4-byte prefix is
 * available, else undefined. Sizes below 0 or above `maxSize` throw before anything is buffered.
 */
export function frameLength(buf: Buffer, offset: number, maxSize: number): number | undefined {
  if (buf.length - offset < 4) return undefined
  const size = buf.readInt32BE(offset)
  if (size < 0 || size > maxSize) throw new ProtocolDecodeError(`frame size ${size} is outside 0..${maxSize}`)
  return size + 4
}
