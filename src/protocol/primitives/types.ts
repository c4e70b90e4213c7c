// Shapes shared by the reader, the writer and the generated message codecs.
import type { FileRegion } from '../../domain/file-region.js'

/** Record batches assembled from memory and file regions (a Fetch response's records). */
export interface RecordsPayload {
  chunks: (Buffer | FileRegion)[]
}

/**
 * A `records` field. Decoding always yields `Buffer | null` (a zero-copy view of the input);
 * encoders also accept a RecordsPayload, whose length prefix is the sum of its chunks.
 */
export type Records = Buffer | RecordsPayload | null

/** A tagged field the codec does not know; kept so it survives decode -> encode. */
export interface TaggedField {
  tag: number
  data: Buffer
}

export function isFileRegion(chunk: Buffer | FileRegion): chunk is FileRegion {
  return !Buffer.isBuffer(chunk)
}

export function isRecordsPayload(records: Records): records is RecordsPayload {
  return records !== null && !Buffer.isBuffer(records)
}

/** Total byte length of a records value (0 for null). */
export function recordsLength(records: Records): number {
  if (records === null) return 0
  if (Buffer.isBuffer(records)) return records.length
  let n = 0
  for (const c of records.chunks) n += c.length
  return n
}

/** The Kafka wire form of the zero UUID (16 zero bytes, base64url without padding). */
export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA'
