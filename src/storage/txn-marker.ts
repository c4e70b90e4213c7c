// Transaction markers: the control batches that end a producer's transaction on a partition. As in
// Kafka, one uncompressed batch with the transactional and control attribute bits, the producer's id
// and epoch, baseSequence -1, and one record whose
//   key   = version int16 (0) | type int16 (0 = ABORT, 1 = COMMIT)        (ControlRecordType)
//   value = version int16 (0) | coordinatorEpoch int32                   (EndTransactionMarker)

import { native } from '../addon/index.js'
import { RECORD_BATCH_OVERHEAD } from '../protocol/records/batch.js'
import { buildRecordBatch } from '../protocol/records/builder.js'
import { readVarint, readVarlong } from '../protocol/records/varint.js'

export const CONTROL_TYPE_ABORT = 0
export const CONTROL_TYPE_COMMIT = 1
/** Bytes of a control batch's record section that hold its key, with room to spare (read on replay). */
export const CONTROL_RECORD_PEEK_BYTES = 32

export interface MarkerBatchOptions {
  producerId: number
  producerEpoch: number
  coordinatorEpoch: number
  commit: boolean
  timestamp: number
  leaderEpoch: number
  baseOffset: number
}

/** The bytes of one marker batch at baseOffset (the LEO it is appended at). */
export function buildMarkerBatch(o: MarkerBatchOptions): Buffer {
  const key = Buffer.alloc(4)
  key.writeInt16BE(0, 0)
  key.writeInt16BE(o.commit ? CONTROL_TYPE_COMMIT : CONTROL_TYPE_ABORT, 2)
  const value = Buffer.alloc(6)
  value.writeInt16BE(0, 0)
  value.writeInt32BE(o.coordinatorEpoch, 2)
  return buildRecordBatch([{ key, value, timestamp: o.timestamp }], native.crc32c, {
    producerId: o.producerId,
    producerEpoch: o.producerEpoch,
    baseSequence: -1,
    transactional: true,
    control: true,
    partitionLeaderEpoch: o.leaderEpoch,
    baseTimestamp: o.timestamp,
    baseOffset: o.baseOffset,
  })
}

/** What a control batch's first record says: its type and, for a transaction marker, the coordinator epoch (-1 when absent). */
export interface ControlRecordInfo {
  type: number
  coordinatorEpoch: number
}

/**
 * Reads the first record of the control batch whose bytes start at buf[0] (header plus at least that
 * record's key and value): the control type (ABORT 0, COMMIT 1, or another, such as a leader change) and
 * the EndTransactionMarker's coordinator epoch. null when the record cannot be read (an empty or cut batch).
 */
export function parseControlRecord(buf: Buffer): ControlRecordInfo | null {
  const end = buf.length
  const length = readVarint(buf, RECORD_BATCH_OVERHEAD, end)
  if (length === null) return null
  const tsDelta = readVarlong(buf, length.next + 1, end) // after attributes int8
  if (tsDelta === null) return null
  const offsetDelta = readVarint(buf, tsDelta.next, end)
  if (offsetDelta === null) return null
  const keyLength = readVarint(buf, offsetDelta.next, end)
  if (keyLength === null || keyLength.value < 4 || keyLength.next + keyLength.value > end) return null
  const type = buf.readInt16BE(keyLength.next + 2)
  let coordinatorEpoch = -1
  const valueLength = readVarint(buf, keyLength.next + keyLength.value, end)
  if (valueLength !== null && valueLength.value >= 6 && valueLength.next + 6 <= end) coordinatorEpoch = buf.readInt32BE(valueLength.next + 2)
  return { type, coordinatorEpoch }
}
