// What the cleaner keeps of one batch (Kafka's MemoryRecords.filterTo with the LogCleaner's
// shouldRetainRecord), as pure functions over batch bytes.
//
// A record is dropped when it has no key (a compacted log cannot place it), when the offset map holds a
// later offset for its key, or when it is a tombstone (null value) whose batch's delete horizon has
// passed. Batches keep their header: base offset, last offset (lastOffsetDelta, even when the last record
// goes), partition leader epoch, producer id / epoch / base sequence, codec and timestamp type; records
// keep their offset and timestamp deltas, so offsets have gaps but never move.
//
// Delete horizon (KIP-534, Kafka >= 3.1): the first pass that keeps a tombstone stamps its batch with
// `now + delete.retention.ms` (attribute bit 6, the horizon stored in baseTimestamp, record timestamp
// deltas rebased so every record keeps its timestamp); a later pass drops the tombstone once the clock
// passes the horizon. Consumers therefore have delete.retention.ms from the first cleaning to see it.
//
// Transactions (given a TxnFilter; without one, every transactional batch is kept whole and left out of
// the map): control batches never enter the map. A transactional batch at or past the stable bound (the
// LSO when the pass was planned) may belong to an open transaction: kept whole, not mapped. Below it, a
// batch of an aborted transaction (its producer id and offset inside a .txnindex range) is dropped and
// never mapped (it must not supersede committed values); a batch of a committed transaction is cleaned
// like any other. A batch that cannot be decoded is also kept whole and left out of the map: the cleaner
// never loses data it cannot read.
//
// Transaction markers (Kafka's LogCleaner with CleanedTransactionMetadata): a pass walks the log in
// offset order and notes, per producer, whether a transactional batch came since its last marker
// (TxnMarkerTracker). A COMMIT or ABORT marker below the stable bound whose transaction has no batch left
// in the log may go, on the tombstone rule: the first pass that finds it so stamps its batch with a delete
// horizon (now + delete.retention.ms, as for tombstones), a pass after the horizon drops it. A
// read_committed consumer therefore has delete.retention.ms to read past a marker whose records it saw.
// The .txnindex entry of such an ABORT marker goes with the stamping (the cleaner tells the log which):
// with the records gone no fetch needs it, and a stale entry would make consumers skip later batches of
// that producer. A marker that is its producer's last batch stays whole (it holds the producer's epoch
// and coordinator epoch for fencing; Kafka keeps an empty batch there).
//
// Producer state: when every record of a batch with a producer id is dropped, the batch is kept as an
// empty batch (header only, recordCount 0, its last offset and sequence intact) if it is that producer's
// last batch in the cleaned range, so an idempotent producer's sequence survives compaction; earlier
// emptied batches of the producer go. Kafka keys this on the producer state of the whole log; until
// producer state exists (step 4) the cleaned range stands in for it, which can keep one extra empty batch
// (61 bytes) per producer.

import { CONTROL_MASK, TRANSACTIONAL_MASK, TIMESTAMP_TYPE_MASK, COMPRESSION_MASK, PRODUCER_ID_OFFSET, LAST_OFFSET_DELTA_OFFSET, BASE_TIMESTAMP_OFFSET, readInt64 } from '../../protocol/records/batch.js'
import type { CompressionType } from '../../protocol/records/batch.js'
import { deflateBatch, inflateBatch } from '../../protocol/records/inflate.js'
import type { InflatedRecord, RecordBatchHeader } from '../../protocol/records/inflate.js'
import type { OffsetMap } from './offset-map.js'

/** Kafka's ControlRecordType of a transaction marker (the int16 after the control key's version). */
const CONTROL_TYPE_ABORT = 0
const CONTROL_TYPE_COMMIT = 1

/** Kafka's DefaultRecordBatch DELETE_HORIZON_FLAG_MASK: baseTimestamp holds the delete horizon. */
export const DELETE_HORIZON_MASK = 0x40

/** The aborted transactions of a log: which producer's offsets belong to one (from the .txnindex). */
export class AbortedRanges {
  readonly #byProducer = new Map<number, { firstOffset: number; lastOffset: number }[]>()

  constructor(entries: Iterable<{ producerId: number; firstOffset: number; lastOffset: number }>) {
    for (const e of entries) {
      const list = this.#byProducer.get(e.producerId) ?? []
      list.push({ firstOffset: e.firstOffset, lastOffset: e.lastOffset })
      this.#byProducer.set(e.producerId, list)
    }
  }

  /** Whether offset of producerId lies in one of its aborted transactions (a producer has few). */
  contains(producerId: number, offset: number): boolean {
    const list = this.#byProducer.get(producerId)
    if (list === undefined) return false
    for (const r of list) if (offset >= r.firstOffset && offset <= r.lastOffset) return true
    return false
  }
}

/** What the cleaner knows of a log's transactions (see the file header). */
export interface TxnFilter {
  aborted: AbortedRanges
  /** Transactional batches from here on may be in open transactions (the LSO when the pass was planned). */
  stableBound: number
}

/**
 * Kafka's CleanedTransactionMetadata, reduced to what decides a marker's fate: which producers have had a
 * transactional batch since their last marker, as one pass walks the log in offset order. A producer has
 * one transaction open at a time, so those batches are the marker's transaction.
 */
export class TxnMarkerTracker {
  readonly #withBatches = new Set<number>()

  /** A transactional (non-control) batch of producerId was walked, whatever the pass does with it. */
  onTransactionalBatch(producerId: number): void {
    this.#withBatches.add(producerId)
  }

  /** A COMMIT/ABORT marker of producerId: true when no batch of its transaction is left before it. */
  onMarker(producerId: number): boolean {
    return !this.#withBatches.delete(producerId)
  }
}

type TxnFate = 'keep-whole' | 'aborted' | 'plain'

/** How a batch is treated with respect to transactions. */
function txnFate(batch: Buffer, attributes: number, txn: TxnFilter | undefined): TxnFate {
  if ((attributes & (CONTROL_MASK | TRANSACTIONAL_MASK)) === 0) return 'plain'
  if ((attributes & CONTROL_MASK) !== 0 || txn === undefined) return 'keep-whole'
  const base = readInt64(batch, 0)
  if (base >= txn.stableBound) return 'keep-whole'
  return txn.aborted.contains(readInt64(batch, PRODUCER_ID_OFFSET), base) ? 'aborted' : 'plain'
}

export interface FilterContext {
  map: OffsetMap
  now: number
  /** Horizon stamped on batches whose tombstones are kept for the first time: now + delete.retention.ms. */
  newHorizon: number
  /** Last offset of each producer's last batch in the range being cleaned. */
  producerLastOffsets: ReadonlyMap<number, number>
  /** Bound on a batch's decompressed records (decodedSizeLimit(max.message.bytes)). */
  maxRecordBytes: number
  /** Transactions of the log; absent: every transactional batch is kept whole. */
  txn?: TxnFilter
  /** The pass's walk over transactions (with txn): markers whose transactions are gone may go. */
  markers?: TxnMarkerTracker
}

/** An aborted transaction whose records are all gone: its .txnindex entry (producer id, marker offset). */
export interface FinishedAbort {
  producerId: number
  markerOffset: number
}

export type FilterOutcome = (
  /** Keep the original bytes. */
  | { kind: 'keep'; records: number; tombstoneHorizon: number | null }
  /** Replace the batch with these bytes (filtered, or stamped with a horizon, or emptied). */
  | { kind: 'rewrite'; bytes: Buffer; records: number; removed: number; tombstoneHorizon: number | null }
  /** Drop the batch. */
  | { kind: 'drop'; removed: number }
) & {
  /** Set for an ABORT marker whose transaction has no records left: its .txnindex entry can go. */
  finishedAbort?: FinishedAbort
}

/**
 * Adds the keys of one dirty batch to the map (offsets are absolute). Returns false, adding nothing,
 * when the map has no room for the batch; special and undecodable batches add nothing and return true.
 */
export function mapBatchKeys(batch: Buffer, attributes: number, recordCount: number, map: OffsetMap, maxRecordBytes: number, txn?: TxnFilter): boolean {
  if (txnFate(batch, attributes, txn) !== 'plain') return true
  if (!map.hasRoomFor(recordCount)) return false
  let records: InflatedRecord[]
  let base: number
  try {
    const inflated = inflateBatch(batch, maxRecordBytes)
    records = inflated.records
    base = inflated.header.baseOffset
  } catch {
    return true
  }
  for (const r of records) if (r.key !== null) map.put(r.key, base + r.offsetDelta)
  return true
}

/** A batch with its timestamps rebased so that baseTimestamp holds the delete horizon (KIP-534). */
function stampHorizon(header: RecordBatchHeader, records: readonly InflatedRecord[], codec: CompressionType, horizon: number): Buffer {
  const shift = header.baseTimestamp - horizon
  const out = records.map((r) => ({ ...r, timestampDelta: r.timestampDelta + shift }))
  return deflateBatch({ ...header, attributes: header.attributes | DELETE_HORIZON_MASK, baseTimestamp: horizon }, out, codec)
}

const KEEP_WHOLE: FilterOutcome = { kind: 'keep', records: -1, tombstoneHorizon: null }

/** A COMMIT/ABORT marker (see the file header); any other control batch is kept whole. */
function filterMarker(batch: Buffer, attributes: number, ctx: FilterContext): FilterOutcome {
  if (ctx.txn === undefined || ctx.markers === undefined) return KEEP_WHOLE
  let inflated
  try {
    inflated = inflateBatch(batch, ctx.maxRecordBytes)
  } catch {
    return KEEP_WHOLE
  }
  const key = inflated.records[0]?.key
  const type = key !== undefined && key !== null && key.length >= 4 ? key.readInt16BE(2) : -1
  if (type !== CONTROL_TYPE_ABORT && type !== CONTROL_TYPE_COMMIT) return KEEP_WHOLE
  const producerId = readInt64(batch, PRODUCER_ID_OFFSET)
  const base = readInt64(batch, 0)
  const last = base + batch.readInt32BE(LAST_OFFSET_DELTA_OFFSET)
  const txnGone = ctx.markers.onMarker(producerId)
  if (!txnGone || base >= ctx.txn.stableBound) return KEEP_WHOLE
  const finishedAbort = type === CONTROL_TYPE_ABORT ? { producerId, markerOffset: last } : undefined
  const hasHorizon = (attributes & DELETE_HORIZON_MASK) !== 0
  const horizon = hasHorizon ? readInt64(batch, BASE_TIMESTAMP_OFFSET) : ctx.newHorizon
  if (ctx.producerLastOffsets.get(producerId) === last) return { ...KEEP_WHOLE, finishedAbort }
  if (hasHorizon && ctx.now >= horizon) return { kind: 'drop', removed: 1, finishedAbort }
  if (hasHorizon) return { kind: 'keep', records: 1, tombstoneHorizon: horizon, finishedAbort }
  return { kind: 'rewrite', bytes: stampHorizon(inflated.header, inflated.records, inflated.compression, horizon), records: inflated.records.length, removed: 0, tombstoneHorizon: horizon, finishedAbort }
}

/** Decides what stays of one batch (see the file header). */
export function filterBatch(batch: Buffer, attributes: number, ctx: FilterContext): FilterOutcome {
  if ((attributes & CONTROL_MASK) !== 0) return filterMarker(batch, attributes, ctx)
  if ((attributes & TRANSACTIONAL_MASK) !== 0) ctx.markers?.onTransactionalBatch(readInt64(batch, PRODUCER_ID_OFFSET))
  const fate = txnFate(batch, attributes, ctx.txn)
  if (fate === 'keep-whole') return KEEP_WHOLE
  let header: RecordBatchHeader
  let records: InflatedRecord[]
  let codec: CompressionType
  try {
    const inflated = inflateBatch(batch, ctx.maxRecordBytes)
    header = inflated.header
    records = inflated.records
    codec = inflated.compression
  } catch {
    return { kind: 'keep', records: -1, tombstoneHorizon: null }
  }
  const hasHorizon = (header.attributes & DELETE_HORIZON_MASK) !== 0
  const horizonPassed = hasHorizon && ctx.now >= header.baseTimestamp
  const retained: InflatedRecord[] = []
  let tombstones = 0
  for (const r of records) {
    if (r.key === null || fate === 'aborted') continue
    const latest = ctx.map.size === 0 ? -1 : ctx.map.get(r.key)
    if (latest > header.baseOffset + r.offsetDelta) continue
    if (r.value === null) {
      if (horizonPassed) continue
      tombstones++
    }
    retained.push(r)
  }
  const removed = records.length - retained.length
  const stamp = tombstones > 0 && !hasHorizon
  if (removed === 0 && !stamp) {
    return { kind: 'keep', records: records.length, tombstoneHorizon: tombstones > 0 ? header.baseTimestamp : null }
  }
  if (retained.length === 0) {
    const last = header.baseOffset + header.lastOffsetDelta
    if (header.producerId >= 0 && ctx.producerLastOffsets.get(header.producerId) === last) {
      const empty = deflateBatch(
        { ...header, attributes: header.attributes & ~(COMPRESSION_MASK | DELETE_HORIZON_MASK), baseTimestamp: header.maxTimestamp, maxTimestamp: header.maxTimestamp },
        [],
        0,
      )
      return { kind: 'rewrite', bytes: empty, records: 0, removed, tombstoneHorizon: null }
    }
    return { kind: 'drop', removed }
  }
  const logAppendTime = (header.attributes & TIMESTAMP_TYPE_MASK) !== 0
  let maxTimestamp = -1
  if (logAppendTime) maxTimestamp = header.maxTimestamp
  else for (const r of retained) maxTimestamp = Math.max(maxTimestamp, header.baseTimestamp + r.timestampDelta)
  if (stamp) {
    const bytes = stampHorizon({ ...header, maxTimestamp }, retained, codec, ctx.newHorizon)
    return { kind: 'rewrite', bytes, records: retained.length, removed, tombstoneHorizon: ctx.newHorizon }
  }
  const bytes = deflateBatch({ ...header, maxTimestamp }, retained, codec)
  return { kind: 'rewrite', bytes, records: retained.length, removed, tombstoneHorizon: tombstones > 0 ? header.baseTimestamp : null }
}
