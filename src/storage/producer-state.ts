// Idempotent producer state of one partition (Kafka's ProducerStateManager + ProducerAppendInfo): for
// each producer id that wrote here, its epoch and the metadata of its last 5 batches (the in-flight
// window of Kafka clients). PartitionLog.append asks checkAppend BEFORE writing and applies the answer
// after the write; everything is read from batch headers (producerId @43, producerEpoch @51,
// baseSequence @53, lastOffsetDelta @23), no record is decoded.
//
// Rules for a batch with producerId >= 0 (Kafka's, in this order):
// * duplicate: same epoch as the producer's and (firstSeq, lastSeq) equal to one of the 5 cached batches
//   -> the cached batch's offsets are answered and nothing of the payload is written;
// * epoch older than the producer's -> INVALID_PRODUCER_EPOCH (Kafka 2.7+ answers this to Produce;
//   PRODUCER_FENCED belongs to the transaction coordinator);
// * newer epoch -> the batch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER;
// * same epoch -> baseSequence must follow the last batch's lastSeq (int32 wraparound: MAX -> 0), else
//   OUT_OF_ORDER_SEQUENCE_NUMBER;
// * no state for the producer id here -> sequence 0 starts it; any other sequence gets
//   UNKNOWN_PRODUCER_ID. That is Kafka 0.11-2.4's answer (Found no record of producerId ...); Kafka
//   2.5+ (KIP-360) accepts any sequence there instead. Skein answers UNKNOWN_PRODUCER_ID because, as in
//   Kafka 2.5+, state outlives the data (retention and DeleteRecords do not remove it), so the case only
//   arises once the producer's state expired (producer.id.expiration.ms) or the partition was
//   recreated, and the client should learn that its earlier writes can no longer be deduplicated
//   (librdkafka and the Java client bump their epoch and go on; kafkajs fails the send).
// * baseSequence < 0 or producerEpoch < 0 with a producer id -> INVALID_RECORD (Kafka's LogValidator
//   checks the sequence; a negative epoch cannot come from InitProducerId).
//
// Transactions: a transactional batch (attribute bit 4) of a producer with no open transaction here
// opens one at its first offset (currentTxnFirstOffset); a non-transactional batch of a producer with an
// open transaction is INVALID_TXN_STATE; a marker (control batch, written by the transaction coordinator
// through appendTxnMarker) closes it. A marker with an epoch older than the producer's is
// INVALID_PRODUCER_EPOCH, one whose coordinator epoch is older than the last marker's is
// TRANSACTION_COORDINATOR_FENCED; a newer marker epoch becomes the producer's epoch (the coordinator
// bumps it when it aborts for a fenced or timed-out producer). The first offsets of the open
// transactions give the first unstable offset, and with it the partition's last stable offset (LSO).
// Non-transactional batches cost one attribute bit test more than before.
//
// Snapshot files: `<20-digit offset>.snapshot` in the partition directory, Kafka's ProducerSnapshot
// version 1 layout (big-endian), the state of every producer after all batches below <offset>:
//   version int16 (= 1) | crc uint32 (CRC32C of every byte after this field) | count int32 |
//   count x { producerId int64 | epoch int16 | lastSequence int32 | lastOffset int64 |
//             offsetDelta int32 (lastOffset - firstOffset of the last batch) | timestamp int64 |
//             coordinatorEpoch int32 | currentTxnFirstOffset int64 (-1: none open) }      (46 bytes)
// Written atomically (tmp + fsync + rename) when a segment rolls (at its base offset) and at close (at
// the LEO). As in Kafka only the LAST batch of each producer is in a snapshot: after a restart the
// duplicate window is that batch plus the batches replayed from the log since the snapshot.
// Recovery: snapshots past the LEO (the log was truncated) or below the first segment (its data is
// gone) are deleted; a snapshot that fails its size, version or CRC check is deleted and the next older
// one tried; the log is then replayed, headers only (plus the key of each marker), from the snapshot's
// offset (or from the first segment) to the LEO. Open transactions come back from the snapshot and the
// replay; when .txnindex files must be rebuilt the caller asks for a snapshot at or below the first
// offset to rebuild, and the replay reports every ABORT marker from there (txn-index.ts). Producers whose last write is older than producer.id.expiration.ms are dropped
// on load and by the shard's expiration timer.

import { readdirSync, readSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { native } from '../addon/index.js'
import { STORAGE_DEFAULTS } from '../config/log-config.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import {
  ATTRIBUTES_OFFSET,
  TRANSACTIONAL_MASK,
  BASE_SEQUENCE_OFFSET,
  BATCH_LENGTH_OFFSET,
  CONTROL_MASK,
  LAST_OFFSET_DELTA_OFFSET,
  LOG_OVERHEAD,
  MAX_TIMESTAMP_OFFSET,
  MIN_BATCH_LENGTH,
  PRODUCER_EPOCH_OFFSET,
  PRODUCER_ID_OFFSET,
  RECORD_BATCH_OVERHEAD,
  readInt64,
  writeInt64,
} from '../protocol/records/batch.js'
import { readWholeFile, writeFileAtomic } from './durability.js'
import type { AbortedTxnEntry } from './txn-index.js'
import { CONTROL_RECORD_PEEK_BYTES, CONTROL_TYPE_ABORT, CONTROL_TYPE_COMMIT, parseControlRecord } from './txn-marker.js'

export const SNAPSHOT_SUFFIX = '.snapshot'
/** Batches remembered per producer for duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN). */
export const NUM_BATCHES_TO_RETAIN = 5

const SNAPSHOT_VERSION = 1
const CRC_OFFSET = 2
const ENTRIES_OFFSET = 6
const ENTRY_BYTES = 46
/** Larger snapshot files are treated as corrupt rather than read (over 5 million producers). */
const MAX_SNAPSHOT_BYTES = 256 * 1024 * 1024
const INT32_MAX = 0x7fffffff
const NO_SEQUENCE = -1
/**
 * A snapshot keeps one batch per producer; on load the log is read this far back from the snapshot's
 * offset (across segments) for up to 4 older batches of each producer, so that retries of
 * in-flight batches written just before a restart are still recognised. Bounded: header reads only.
 */
const LOOKBACK_BYTES = 1024 * 1024

/** One appended batch of a producer. Offsets are absolute; sequences are int32. */
export interface BatchMetadata {
  firstSeq: number
  lastSeq: number
  firstOffset: number
  lastOffset: number
  /** The batch's maxTimestamp as stored (the append time under LogAppendTime). */
  timestamp: number
}

export interface ProducerStateEntry {
  producerId: number
  producerEpoch: number
  /** The last batches, oldest first, at most NUM_BATCHES_TO_RETAIN; empty after a snapshot entry without one. */
  batches: BatchMetadata[]
  /** Timestamp of the last batch written; expiration counts from it, as Kafka's does. */
  lastTimestamp: number
  /** Epoch of the transaction coordinator that wrote this producer's last marker here; -1 before any. */
  coordinatorEpoch: number
  /** First offset of the producer's open transaction here; -1 when none is open. */
  currentTxnFirstOffset: number
}

/** A transaction a marker closed: where it started (-1 when none was open) and the LSO entry for an abort. */
export interface CompletedTxn {
  producerId: number
  firstOffset: number
  lastOffset: number
  commit: boolean
  /** The first unstable offset once this transaction is closed, else lastOffset + 1 (Kafka's lastStableOffset(completedTxn)). */
  lastStableOffset: number
}

/** Options of load. */
export interface ProducerStateLoadOptions {
  /** Use a snapshot at or below this offset only (the replay must see every marker from there). */
  snapshotAtOrBefore?: number
  /** Called for every ABORT marker at or past reportAbortsFrom that closed an open transaction, in order. */
  onAbortedTxn?: (entry: AbortedTxnEntry) => void
  reportAbortsFrom?: number
  /** The directory's names when the caller has just read them (saves a readdir per partition at start). */
  listing?: readonly string[]
}

/** A validated payload's effect on producer state, applied by applyAppend once the bytes are written. */
export interface ProducerAppend {
  readonly updates: ReadonlyMap<number, ProducerStateEntry>
}

/** What checkAppend found: nothing idempotent, a duplicate of a cached batch, or updates to apply. */
export type ProducerAppendCheck = { kind: 'none' } | { kind: 'duplicate'; batch: BatchMetadata } | ({ kind: 'append' } & ProducerAppend)

/** The header fields of one batch at `position` of payload, for checkAppend. */
export interface PayloadBatch {
  position: number
  recordCount: number
  maxTimestamp: number
}

/** What load needs of a segment: LogSegment fits. */
export interface ReplaySegment {
  readonly baseOffset: number
  readonly fd: number
  readonly size: number
  /** The batch holding offset (its position), or null past the end. */
  translateOffset(offset: number): { position: number } | null
  /** A batch start at or before position (from the offset index), or 0. */
  indexedBatchStartAtOrBefore(position: number): number
}

/** A batch with a producer id as read from a segment during load. */
interface StoredProducerBatch extends BatchMetadata {
  producerId: number
  producerEpoch: number
  transactional: boolean
  /** Control batches: the control type (CONTROL_TYPE_ABORT / _COMMIT / other), null when unreadable; undefined for data. */
  controlType?: number | null
  /** Control batches: the coordinator epoch of the marker, -1 when unreadable. */
  coordinatorEpoch?: number
}

const NONE: ProducerAppendCheck = { kind: 'none' }

/** baseSequence + delta with Kafka's int32 wraparound (DefaultRecordBatch.incrementSequence). */
export function incrementSequence(sequence: number, increment: number): number {
  if (sequence > INT32_MAX - increment) return increment - (INT32_MAX - sequence) - 1
  return sequence + increment
}

/** lastSeq - delta, wrapping below 0 back to MAX (DefaultRecordBatch.decrementSequence). */
export function decrementSequence(sequence: number, decrement: number): number {
  if (sequence < decrement) return INT32_MAX - (decrement - sequence) + 1
  return sequence - decrement
}

function inSequence(lastSeq: number, nextSeq: number): boolean {
  return nextSeq === lastSeq + 1 || (nextSeq === 0 && lastSeq === INT32_MAX)
}

export function snapshotFileName(offset: number): string {
  return String(offset).padStart(20, '0') + SNAPSHOT_SUFFIX
}

function parseSnapshotFileName(name: string): number | null {
  if (!name.endsWith(SNAPSHOT_SUFFIX)) return null
  const digits = name.slice(0, -SNAPSHOT_SUFFIX.length)
  if (!/^\d{20}$/.test(digits)) return null
  const n = Number(digits)
  return Number.isSafeInteger(n) ? n : null
}

function copyEntry(e: ProducerStateEntry): ProducerStateEntry {
  return {
    producerId: e.producerId,
    producerEpoch: e.producerEpoch,
    batches: e.batches.slice(),
    lastTimestamp: e.lastTimestamp,
    coordinatorEpoch: e.coordinatorEpoch,
    currentTxnFirstOffset: e.currentTxnFirstOffset,
  }
}

function addBatch(e: ProducerStateEntry, epoch: number, batch: BatchMetadata): void {
  // A new epoch starts a new sequence space: the old epoch's batches can no longer be duplicates.
  if (epoch !== e.producerEpoch) {
    e.producerEpoch = epoch
    e.batches = []
  }
  e.batches.push(batch)
  if (e.batches.length > NUM_BATCHES_TO_RETAIN) e.batches.shift()
  e.lastTimestamp = batch.timestamp
}

export class ProducerStateManager {
  readonly dir: string
  /** producer.id.expiration.ms */
  expirationMs: number
  private readonly producers = new Map<number, ProducerStateEntry>()
  /** First offset of each open transaction, by producer id; the smallest is the first unstable offset. */
  private readonly ongoing = new Map<number, number>()
  /** Cached min of ongoing (-1 when none); undefined when it must be recomputed. */
  private firstUnstable: number | undefined = -1
  /** Offsets of the snapshot files in dir, ascending. */
  private snapshots: number[] = []
  private writing: Promise<void> = Promise.resolve()

  constructor(dir: string, expirationMs = STORAGE_DEFAULTS.producerIdExpirationMs) {
    this.dir = dir
    this.expirationMs = expirationMs
  }

  /** Number of producers with state here. */
  get size(): number {
    return this.producers.size
  }

  /** The producer's state (a copy), or undefined. */
  entry(producerId: number): ProducerStateEntry | undefined {
    const e = this.producers.get(producerId)
    return e === undefined ? undefined : copyEntry(e)
  }

  /** Every producer's state (copies), by producer id; for DescribeProducers and the log cleaner. */
  activeProducers(): ProducerStateEntry[] {
    return [...this.producers.values()].map(copyEntry).sort((a, b) => a.producerId - b.producerId)
  }

  /** Offsets of the snapshot files, ascending. */
  snapshotOffsets(): number[] {
    return this.snapshots.slice()
  }

  /**
   * Checks the idempotent batches of a validated payload that would be written at baseOffset. Throws
   * the KafkaError Kafka answers (see the file header); returns the cached batch when the payload is a
   * retry of one (the first such batch: clients send one batch per partition), else the state updates
   * for applyAppend. Nothing changes until applyAppend. logAppendTime >= 0 replaces batch timestamps.
   */
  checkAppend(payload: Buffer, batches: readonly PayloadBatch[], baseOffset: number, logAppendTime: number): ProducerAppendCheck {
    let updates: Map<number, ProducerStateEntry> | undefined
    let offset = baseOffset
    for (const b of batches) {
      const firstOffset = offset
      offset += b.recordCount
      const pos = b.position
      const transactional = (payload.readInt16BE(pos + ATTRIBUTES_OFFSET) & TRANSACTIONAL_MASK) !== 0
      // The high word decides the sign; only producer ids >= 0 are idempotent (Kafka's hasProducerId).
      if (payload.readInt32BE(pos + PRODUCER_ID_OFFSET) < 0) {
        if (transactional) throw new KafkaError(ErrorCode.INVALID_RECORD, 'a transactional batch must carry a producer id')
        continue
      }
      const producerId = readInt64(payload, pos + PRODUCER_ID_OFFSET)
      if (!Number.isSafeInteger(producerId)) {
        throw new KafkaError(ErrorCode.INVALID_RECORD, `producerId ${producerId} is beyond 2^53 and cannot have been handed out`)
      }
      const epoch = payload.readInt16BE(pos + PRODUCER_EPOCH_OFFSET)
      const firstSeq = payload.readInt32BE(pos + BASE_SEQUENCE_OFFSET)
      if (epoch < 0) throw new KafkaError(ErrorCode.INVALID_RECORD, `producer ${producerId} sent epoch ${epoch}`)
      if (firstSeq < 0) throw new KafkaError(ErrorCode.INVALID_RECORD, `invalid sequence number ${firstSeq} in a batch of producer ${producerId}`)
      const lastSeq = incrementSequence(firstSeq, payload.readInt32BE(pos + LAST_OFFSET_DELTA_OFFSET))
      const committed = this.producers.get(producerId)
      if (committed !== undefined && committed.producerEpoch === epoch) {
        for (const m of committed.batches) {
          if (m.firstSeq === firstSeq && m.lastSeq === lastSeq) return { kind: 'duplicate', batch: { ...m } }
        }
      }
      const current = updates?.get(producerId) ?? committed
      this.checkBatch(producerId, current, epoch, firstSeq, firstOffset)
      updates ??= new Map()
      const next = current === undefined
        ? { producerId, producerEpoch: epoch, batches: [], lastTimestamp: -1, coordinatorEpoch: -1, currentTxnFirstOffset: -1 }
        : updates.has(producerId) ? current : copyEntry(current)
      if (transactional) {
        if (next.currentTxnFirstOffset < 0) next.currentTxnFirstOffset = firstOffset
      } else if (next.currentTxnFirstOffset >= 0) {
        throw new KafkaError(
          ErrorCode.INVALID_TXN_STATE,
          `expected a transactional write from producer ${producerId} at offset ${firstOffset}: its transaction from offset ${next.currentTxnFirstOffset} is open`,
        )
      }
      const timestamp = logAppendTime >= 0 ? logAppendTime : b.maxTimestamp
      addBatch(next, epoch, { firstSeq, lastSeq, firstOffset, lastOffset: offset - 1, timestamp })
      updates.set(producerId, next)
    }
    return updates === undefined ? NONE : { kind: 'append', updates }
  }

  private checkBatch(producerId: number, current: ProducerStateEntry | undefined, epoch: number, firstSeq: number, offset: number): void {
    if (current === undefined) {
      if (firstSeq !== 0) {
        throw new KafkaError(
          ErrorCode.UNKNOWN_PRODUCER_ID,
          `found no record of producer ${producerId} at offset ${offset} (sequence ${firstSeq}); its state may have expired`,
        )
      }
      return
    }
    if (epoch < current.producerEpoch) {
      throw new KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH, `epoch ${epoch} of producer ${producerId} at offset ${offset} is older than ${current.producerEpoch}`)
    }
    if (epoch !== current.producerEpoch) {
      if (firstSeq !== 0) {
        throw new KafkaError(
          ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
          `producer ${producerId} starts epoch ${epoch} at sequence ${firstSeq} (offset ${offset}); a new epoch starts at 0`,
        )
      }
      return
    }
    const lastSeq = current.batches.at(-1)?.lastSeq ?? NO_SEQUENCE
    if (!inSequence(lastSeq, firstSeq)) {
      throw new KafkaError(
        ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
        `producer ${producerId} sent sequence ${firstSeq} at offset ${offset}; its last sequence is ${lastSeq}`,
      )
    }
  }

  /** Makes a checked append part of the state, once its bytes are in the log. */
  applyAppend(append: ProducerAppend): void {
    for (const [id, e] of append.updates) {
      this.producers.set(id, e)
      if (e.currentTxnFirstOffset >= 0 && !this.ongoing.has(id)) this.openTxn(id, e.currentTxnFirstOffset)
    }
  }

  private openTxn(producerId: number, firstOffset: number): void {
    this.ongoing.set(producerId, firstOffset)
    if (this.firstUnstable !== undefined && (this.firstUnstable < 0 || firstOffset < this.firstUnstable)) this.firstUnstable = firstOffset
  }

  private closeTxn(producerId: number): void {
    const first = this.ongoing.get(producerId)
    if (first === undefined) return
    this.ongoing.delete(producerId)
    if (first === this.firstUnstable) this.firstUnstable = undefined
  }

  /** First offset of the oldest open transaction, or -1 when none is open. */
  /** No producer has state here (nothing a snapshot would hold). */
  isEmpty(): boolean {
    return this.producers.size === 0 && this.ongoing.size === 0
  }

  firstUnstableOffset(): number {
    if (this.firstUnstable === undefined) {
      let min = -1
      for (const first of this.ongoing.values()) if (min < 0 || first < min) min = first
      this.firstUnstable = min
    }
    return this.firstUnstable
  }

  /** Open transactions here: producer id and first offset, oldest first. */
  openTransactions(): { producerId: number; firstOffset: number }[] {
    return [...this.ongoing].map(([producerId, firstOffset]) => ({ producerId, firstOffset })).sort((a, b) => a.firstOffset - b.firstOffset)
  }

  /**
   * Checks a marker of producerId before it is written (see the file header for the errors). A producer
   * without state here is fine: Kafka writes the marker anyway.
   */
  checkMarker(producerId: number, producerEpoch: number, coordinatorEpoch: number): void {
    const e = this.producers.get(producerId)
    if (e === undefined) return
    if (producerEpoch < e.producerEpoch) {
      throw new KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH, `marker epoch ${producerEpoch} of producer ${producerId} is older than ${e.producerEpoch}`)
    }
    if (coordinatorEpoch < e.coordinatorEpoch) {
      throw new KafkaError(
        ErrorCode.TRANSACTION_COORDINATOR_FENCED,
        `marker of producer ${producerId} from coordinator epoch ${coordinatorEpoch}; epoch ${e.coordinatorEpoch} wrote here already`,
      )
    }
  }

  /** Applies a marker written at offset (checked by checkMarker, or replayed): closes the open transaction. */
  applyMarker(producerId: number, producerEpoch: number, coordinatorEpoch: number, commit: boolean, offset: number, timestamp: number): CompletedTxn {
    let e = this.producers.get(producerId)
    if (e === undefined) {
      e = { producerId, producerEpoch, batches: [], lastTimestamp: timestamp, coordinatorEpoch, currentTxnFirstOffset: -1 }
      this.producers.set(producerId, e)
    }
    if (producerEpoch !== e.producerEpoch) {
      e.producerEpoch = producerEpoch
      e.batches = []
    }
    e.coordinatorEpoch = coordinatorEpoch
    e.lastTimestamp = timestamp
    const firstOffset = e.currentTxnFirstOffset
    e.currentTxnFirstOffset = -1
    this.closeTxn(producerId)
    const unstable = this.firstUnstableOffset()
    return { producerId, firstOffset, lastOffset: offset, commit, lastStableOffset: unstable >= 0 && unstable <= offset ? unstable : offset + 1 }
  }

  /** Drops producers whose last write is producer.id.expiration.ms old (and not in a transaction). */
  removeExpired(now: number): number {
    let n = 0
    for (const [id, e] of this.producers) {
      if (this.isExpired(e, now)) {
        this.producers.delete(id)
        n++
      }
    }
    return n
  }

  private isExpired(e: ProducerStateEntry, now: number): boolean {
    return e.currentTxnFirstOffset < 0 && now - e.lastTimestamp >= this.expirationMs
  }

  /**
   * Rebuilds the state when the partition opens: see the file header. segments are the log's, oldest
   * first, already recovered; logEndOffset is the LEO after recovery.
   */
  load(segments: readonly ReplaySegment[], logEndOffset: number, now: number, opts: ProducerStateLoadOptions = {}): { snapshotOffset: number | null; batchesReplayed: number } {
    return this.rebuild(segments, logEndOffset, now, opts, true)
  }

  /** load; removeTemporary: delete .snapshot.tmp files (at open only: later, one may be a write in progress). */
  private rebuild(segments: readonly ReplaySegment[], logEndOffset: number, now: number, opts: ProducerStateLoadOptions, removeTemporary: boolean): { snapshotOffset: number | null; batchesReplayed: number } {
    this.producers.clear()
    this.ongoing.clear()
    this.firstUnstable = undefined
    const firstBase = segments[0]?.baseOffset ?? logEndOffset
    const found: number[] = []
    for (const name of opts.listing ?? readdirSync(this.dir)) {
      if (name.endsWith(`${SNAPSHOT_SUFFIX}.tmp`)) {
        if (removeTemporary) rmSync(join(this.dir, name), { force: true })
        continue
      }
      const offset = parseSnapshotFileName(name)
      if (offset === null) continue
      if (offset > logEndOffset || offset < firstBase) rmSync(join(this.dir, name), { force: true })
      else found.push(offset)
    }
    found.sort((a, b) => a - b)
    let snapshotOffset: number | null = null
    // Newer snapshots than the bound stay on disk but are not used this time.
    const bound = opts.snapshotAtOrBefore ?? Number.MAX_SAFE_INTEGER
    const newer: number[] = []
    while (found.length > 0 && found[found.length - 1]! > bound) newer.unshift(found.pop()!)
    while (found.length > 0) {
      const offset = found[found.length - 1]!
      const entries = readSnapshot(join(this.dir, snapshotFileName(offset)))
      if (entries !== null) {
        for (const e of entries) if (!this.isExpired(e, now)) this.producers.set(e.producerId, e)
        snapshotOffset = offset
        break
      }
      rmSync(join(this.dir, snapshotFileName(offset)), { force: true })
      found.pop()
    }
    this.snapshots = [...found, ...newer]
    for (const e of this.producers.values()) if (e.currentTxnFirstOffset >= 0) this.ongoing.set(e.producerId, e.currentTxnFirstOffset)
    if (snapshotOffset !== null) this.restoreOlderBatches(segments, snapshotOffset, logEndOffset)
    const batchesReplayed = this.replay(segments, snapshotOffset ?? firstBase, logEndOffset, opts)
    return { snapshotOffset, batchesReplayed }
  }

  /** Applies the producer batches of the log in [from, logEndOffset) without checks (Kafka's replay). */
  private replay(segments: readonly ReplaySegment[], from: number, logEndOffset: number, opts: ProducerStateLoadOptions): number {
    const reportFrom = opts.onAbortedTxn === undefined ? Number.MAX_SAFE_INTEGER : (opts.reportAbortsFrom ?? 0)
    let n = 0
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i]!
      const next = segments[i + 1]?.baseOffset ?? logEndOffset
      if (next <= from) continue
      const start = from > seg.baseOffset ? (seg.translateOffset(from)?.position ?? seg.size) : 0
      walkProducerBatches(seg, start, seg.size, (b) => {
        if (b.firstOffset < from || b.firstOffset >= logEndOffset) return
        if (this.replayBatch(b, reportFrom, opts.onAbortedTxn)) n++
      })
    }
    return n
  }

  /**
   * Applies one stored batch without checks (Kafka's replay of the log, and a follower's append of the
   * leader's batches): data batches extend their producer's state, transaction markers close the
   * producer's transaction (an ABORT at or past reportFrom that closed one is reported). Returns false
   * for a control batch that is not a transaction marker.
   */
  private replayBatch(b: StoredProducerBatch, reportFrom: number, onAbortedTxn: ((entry: AbortedTxnEntry) => void) | undefined): boolean {
    if (b.controlType !== undefined) {
      // Only transaction markers end transactions; other control records (or unreadable ones) do not.
      if (b.controlType !== CONTROL_TYPE_ABORT && b.controlType !== CONTROL_TYPE_COMMIT) return false
      const done = this.applyMarker(b.producerId, b.producerEpoch, b.coordinatorEpoch ?? -1, b.controlType === CONTROL_TYPE_COMMIT, b.lastOffset, b.timestamp)
      if (!done.commit && done.firstOffset >= 0 && done.lastOffset >= reportFrom) {
        onAbortedTxn?.({ producerId: done.producerId, firstOffset: done.firstOffset, lastOffset: done.lastOffset, lastStableOffset: done.lastStableOffset })
      }
      return true
    }
    let e = this.producers.get(b.producerId)
    if (e === undefined) {
      e = { producerId: b.producerId, producerEpoch: b.producerEpoch, batches: [], lastTimestamp: -1, coordinatorEpoch: -1, currentTxnFirstOffset: -1 }
      this.producers.set(b.producerId, e)
    }
    addBatch(e, b.producerEpoch, { firstSeq: b.firstSeq, lastSeq: b.lastSeq, firstOffset: b.firstOffset, lastOffset: b.lastOffset, timestamp: b.timestamp })
    if (b.transactional && e.currentTxnFirstOffset < 0) {
      e.currentTxnFirstOffset = b.firstOffset
      this.openTxn(b.producerId, b.firstOffset)
    }
    return true
  }

  /**
   * A follower appended the leader's batches (whole, verified batches with their offsets): their
   * producers' state follows them exactly as the leader's did, without the leader's checks (Kafka's
   * AppendOrigin.REPLICATION). Every ABORT marker that closed a transaction is reported.
   */
  applyReplicated(payload: Buffer, onAbortedTxn: (entry: AbortedTxnEntry) => void): void {
    walkPayloadProducerBatches(payload, (b) => {
      this.replayBatch(b, 0, onAbortedTxn)
    })
  }

  /**
   * The log was truncated to logEndOffset: snapshots past it go now and any still being written go
   * once written (their bytes describe offsets that no longer exist), then the state is rebuilt from
   * the newest snapshot at or below snapshotAtOrBefore by replaying the log (see load).
   */
  truncateAndReload(segments: readonly ReplaySegment[], logEndOffset: number, now: number, opts: ProducerStateLoadOptions): void {
    const stale = (offset: number): boolean => offset > logEndOffset
    this.writing = this.writing.then(() => {
      for (const name of readdirSync(this.dir)) {
        const offset = parseSnapshotFileName(name)
        if (offset !== null && stale(offset) && !this.snapshots.includes(offset)) rmSync(join(this.dir, name), { force: true })
      }
    }).catch(() => undefined)
    // A .tmp here may be the snapshot of a roll being written (its rename would fail without it).
    this.rebuild(segments, logEndOffset, now, opts, false)
  }

  /**
   * See LOOKBACK_BYTES: older batches of the snapshot's producers, from the bytes just before it. Those
   * bytes may span segments: a snapshot written at close just after a roll has only the last batch in
   * the active segment, the ones before it in the segment before.
   */
  private restoreOlderBatches(segments: readonly ReplaySegment[], snapshotOffset: number, logEndOffset: number): void {
    if (this.producers.size === 0 || segments.length === 0 || snapshotOffset <= segments[0]!.baseOffset) return
    let last = segments.length - 1
    while (last > 0 && segments[last]!.baseOffset >= snapshotOffset) last--
    // Byte ranges to read, newest segment first, LOOKBACK_BYTES in all.
    const ranges: { seg: ReplaySegment; start: number; end: number }[] = []
    let budget = LOOKBACK_BYTES
    for (let i = last; i >= 0 && budget > 0; i--) {
      const seg = segments[i]!
      const segmentEnd = segments[i + 1]?.baseOffset ?? logEndOffset
      const end = i === last && snapshotOffset < segmentEnd ? (seg.translateOffset(snapshotOffset)?.position ?? seg.size) : seg.size
      const start = seg.indexedBatchStartAtOrBefore(Math.max(0, end - budget))
      ranges.push({ seg, start, end })
      budget -= end - start
    }
    const older = new Map<number, BatchMetadata[]>()
    for (const { seg, start, end } of ranges.reverse()) {
      walkProducerBatches(seg, start, end, (b) => {
        if (b.controlType !== undefined) return
        const e = this.producers.get(b.producerId)
        const kept = e?.batches[0]
        if (e === undefined || kept === undefined || e.batches.length !== 1 || e.producerEpoch !== b.producerEpoch || b.lastOffset >= kept.firstOffset) return
        const list = older.get(b.producerId) ?? []
        list.push({ firstSeq: b.firstSeq, lastSeq: b.lastSeq, firstOffset: b.firstOffset, lastOffset: b.lastOffset, timestamp: b.timestamp })
        if (list.length >= NUM_BATCHES_TO_RETAIN) list.shift()
        older.set(b.producerId, list)
      })
    }
    for (const [id, list] of older) {
      const e = this.producers.get(id)!
      e.batches = [...list, ...e.batches]
    }
  }

  /**
   * Writes the state as the snapshot for offset (every batch below it applied). The bytes are taken
   * now; the file is written in the background, one snapshot at a time.
   */
  takeSnapshot(offset: number): Promise<void> {
    const bytes = encodeSnapshot([...this.producers.values()])
    if (!this.snapshots.includes(offset)) {
      this.snapshots.push(offset)
      this.snapshots.sort((a, b) => a - b)
    }
    const path = join(this.dir, snapshotFileName(offset))
    const write = this.writing.then(() => writeFileAtomic(path, bytes)).catch((err: unknown) => {
      // The old file at this offset (if any) is intact; a half-written .tmp only takes space.
      rmSync(`${path}.tmp`, { force: true })
      throw err
    })
    this.writing = write.catch(() => undefined)
    return write
  }

  /** Resolves when every snapshot write started so far has finished. */
  async drain(): Promise<void> {
    await this.writing
  }

  /** The log start moved: snapshots below the first segment's base offset lose their data; delete them. */
  deleteSnapshotsBefore(offset: number): void {
    const keep: number[] = []
    for (const s of this.snapshots) {
      if (s < offset) rmSync(join(this.dir, snapshotFileName(s)), { force: true })
      else keep.push(s)
    }
    this.snapshots = keep
  }

  /** The log was emptied: no producer state survives (Kafka's truncateFullyAndStartAt). */
  truncateFully(): void {
    this.producers.clear()
    this.ongoing.clear()
    this.firstUnstable = -1
    this.deleteSnapshotsBefore(Number.MAX_SAFE_INTEGER)
  }
}

/** Kafka's ProducerSnapshot v1 bytes for entries (see the file header). */
export function encodeSnapshot(entries: readonly ProducerStateEntry[]): Buffer {
  const buf = Buffer.alloc(ENTRIES_OFFSET + 4 + entries.length * ENTRY_BYTES)
  buf.writeInt16BE(SNAPSHOT_VERSION, 0)
  buf.writeInt32BE(entries.length, ENTRIES_OFFSET)
  let p = ENTRIES_OFFSET + 4
  for (const e of entries) {
    const last = e.batches.at(-1)
    writeInt64(buf, p, e.producerId)
    buf.writeInt16BE(e.producerEpoch, p + 8)
    buf.writeInt32BE(last?.lastSeq ?? NO_SEQUENCE, p + 10)
    writeInt64(buf, p + 14, last?.lastOffset ?? -1)
    buf.writeInt32BE(last === undefined ? 0 : last.lastOffset - last.firstOffset, p + 22)
    writeInt64(buf, p + 26, e.lastTimestamp)
    buf.writeInt32BE(e.coordinatorEpoch, p + 34)
    writeInt64(buf, p + 38, e.currentTxnFirstOffset)
    p += ENTRY_BYTES
  }
  buf.writeUInt32BE(native.crc32c(buf.subarray(ENTRIES_OFFSET)), CRC_OFFSET)
  return buf
}

/** Decodes snapshot bytes; null when the size, version, CRC or a field is wrong. */
export function decodeSnapshot(buf: Buffer): ProducerStateEntry[] | null {
  if (buf.length < ENTRIES_OFFSET + 4 || buf.readInt16BE(0) !== SNAPSHOT_VERSION) return null
  const count = buf.readInt32BE(ENTRIES_OFFSET)
  if (count < 0 || buf.length !== ENTRIES_OFFSET + 4 + count * ENTRY_BYTES) return null
  if (native.crc32c(buf.subarray(ENTRIES_OFFSET)) !== buf.readUInt32BE(CRC_OFFSET)) return null
  const out: ProducerStateEntry[] = []
  let p = ENTRIES_OFFSET + 4
  for (let i = 0; i < count; i++, p += ENTRY_BYTES) {
    const producerId = readInt64(buf, p)
    const lastSeq = buf.readInt32BE(p + 10)
    const lastOffset = readInt64(buf, p + 14)
    const offsetDelta = buf.readInt32BE(p + 22)
    if (!Number.isSafeInteger(producerId) || producerId < 0 || !Number.isSafeInteger(lastOffset) || offsetDelta < 0) return null
    const batches: BatchMetadata[] = []
    const timestamp = readInt64(buf, p + 26)
    if (lastOffset >= 0 && lastSeq >= 0) {
      batches.push({ firstSeq: decrementSequence(lastSeq, offsetDelta), lastSeq, firstOffset: lastOffset - offsetDelta, lastOffset, timestamp })
    }
    out.push({
      producerId,
      producerEpoch: buf.readInt16BE(p + 8),
      batches,
      lastTimestamp: timestamp,
      coordinatorEpoch: buf.readInt32BE(p + 34),
      currentTxnFirstOffset: readInt64(buf, p + 38),
    })
  }
  return out
}

/**
 * Calls visit for each idempotent data batch whose header lies in [start, end) of seg, in order
 * (61-byte header reads; stops at the first impossible header).
 */
function walkProducerBatches(seg: ReplaySegment, start: number, end: number, visit: (b: StoredProducerBatch) => void): void {
  const header = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD + CONTROL_RECORD_PEEK_BYTES)
  let pos = start
  while (end - pos >= RECORD_BATCH_OVERHEAD) {
    if (readSync(seg.fd, header, 0, RECORD_BATCH_OVERHEAD, pos) < RECORD_BATCH_OVERHEAD) return
    const batchLength = header.readInt32BE(BATCH_LENGTH_OFFSET)
    if (batchLength < MIN_BATCH_LENGTH) return
    const batchStart = pos
    const batchSize = LOG_OVERHEAD + batchLength
    pos += batchSize
    if (header.readInt32BE(PRODUCER_ID_OFFSET) < 0) continue
    const producerId = readInt64(header, PRODUCER_ID_OFFSET)
    if (!Number.isSafeInteger(producerId)) continue
    const attributes = header.readInt16BE(ATTRIBUTES_OFFSET)
    const firstOffset = readInt64(header, 0)
    const delta = header.readInt32BE(LAST_OFFSET_DELTA_OFFSET)
    const firstSeq = header.readInt32BE(BASE_SEQUENCE_OFFSET)
    const b: StoredProducerBatch = {
      producerId,
      producerEpoch: header.readInt16BE(PRODUCER_EPOCH_OFFSET),
      firstSeq,
      lastSeq: incrementSequence(firstSeq, delta),
      firstOffset,
      lastOffset: firstOffset + delta,
      timestamp: readInt64(header, MAX_TIMESTAMP_OFFSET),
      transactional: (attributes & TRANSACTIONAL_MASK) !== 0,
    }
    if ((attributes & CONTROL_MASK) !== 0) {
      // A marker: its type and coordinator epoch are in its one record, a few bytes past the header.
      const peek = Math.min(batchSize, header.length)
      const got = readSync(seg.fd, header, 0, peek, batchStart)
      const info = parseControlRecord(header.subarray(0, got))
      b.controlType = info?.type ?? null
      b.coordinatorEpoch = info?.coordinatorEpoch ?? -1
    }
    visit(b)
  }
}

/** Calls visit for each batch with a producer id in a payload of whole batches (a follower's append). */
function walkPayloadProducerBatches(payload: Buffer, visit: (b: StoredProducerBatch) => void): void {
  let pos = 0
  while (payload.length - pos >= RECORD_BATCH_OVERHEAD) {
    const batchLength = payload.readInt32BE(pos + BATCH_LENGTH_OFFSET)
    if (batchLength < MIN_BATCH_LENGTH || payload.length - pos < LOG_OVERHEAD + batchLength) return
    const batchStart = pos
    const batchSize = LOG_OVERHEAD + batchLength
    pos += batchSize
    if (payload.readInt32BE(batchStart + PRODUCER_ID_OFFSET) < 0) continue
    const producerId = readInt64(payload, batchStart + PRODUCER_ID_OFFSET)
    if (!Number.isSafeInteger(producerId)) continue
    const attributes = payload.readInt16BE(batchStart + ATTRIBUTES_OFFSET)
    const firstOffset = readInt64(payload, batchStart)
    const delta = payload.readInt32BE(batchStart + LAST_OFFSET_DELTA_OFFSET)
    const firstSeq = payload.readInt32BE(batchStart + BASE_SEQUENCE_OFFSET)
    const b: StoredProducerBatch = {
      producerId,
      producerEpoch: payload.readInt16BE(batchStart + PRODUCER_EPOCH_OFFSET),
      firstSeq,
      lastSeq: incrementSequence(firstSeq, delta),
      firstOffset,
      lastOffset: firstOffset + delta,
      timestamp: readInt64(payload, batchStart + MAX_TIMESTAMP_OFFSET),
      transactional: (attributes & TRANSACTIONAL_MASK) !== 0,
    }
    if ((attributes & CONTROL_MASK) !== 0) {
      const info = parseControlRecord(payload.subarray(batchStart, batchStart + Math.min(batchSize, RECORD_BATCH_OVERHEAD + CONTROL_RECORD_PEEK_BYTES)))
      b.controlType = info?.type ?? null
      b.coordinatorEpoch = info?.coordinatorEpoch ?? -1
    }
    visit(b)
  }
}

function readSnapshot(path: string): ProducerStateEntry[] | null {
  const buf = readWholeFile(path, MAX_SNAPSHOT_BYTES)
  return buf === null ? null : decodeSnapshot(buf)
}

