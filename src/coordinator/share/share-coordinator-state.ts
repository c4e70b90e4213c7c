// The state machine of one __share_group_state partition (Kafka's ShareCoordinatorShard, KIP-932): the
// persisted state of every share-partition whose key ("group:topicId:partition") lands on it, rebuilt by
// replaying the partition's records.
//
// Records (Kafka's, scripts/coordinator-records/share-coordinator/): key version 0 is a ShareSnapshot (the
// whole state of a share-partition: state epoch, leader epoch, start offset, state batches, and its
// snapshot epoch), key version 1 a ShareUpdate (a write laid over the latest snapshot: leader epoch, start
// offset or -1, the batches written). A null value (tombstone) of either key deletes the share-partition's
// state (DeleteShareGroupState writes both). A write becomes a ShareSnapshot when there is none yet or when
// share.coordinator.snapshot.update.records.per.snapshot ShareUpdates were written since the last one (the
// new snapshot is the merged state, its snapshot epoch one higher); else a ShareUpdate. So a replay applies
// at most that many updates on top of each snapshot.
//
// Pruning (Kafka's ShareCoordinatorOffsetsManager): a share-partition needs its records from its last
// snapshot on (or from its first update when it has no snapshot), a deleted one none; every
// share.coordinator.state.topic.prune.interval.ms the coordinator deletes the records before the lowest
// offset any share-partition of the partition still needs (all of them when none has state), so the log,
// and a load, hold about one snapshot and share.coordinator.snapshot.update.records.per.snapshot updates
// per share-partition.
//
// Crash recovery: an operation is answered only after its record is appended with acks=all (the
// partition's in-sync replicas have it), so no answered write is lost with a broker; a load replays the
// partition from its log start, snapshots and updates in order (an update with no snapshot before it
// stands alone), and skips (logs, counts) a record it cannot read rather than refusing to load.
//
// Rules (Kafka's ShareCoordinatorShard):
// * Write: FENCED_LEADER_EPOCH when the request's leader epoch is below the highest seen for the
//   share-partition (a write from an older leader); FENCED_STATE_EPOCH when its state epoch is below the
//   state's (the state was initialized again since); INVALID_REQUEST for a negative partition or malformed
//   batches. A leader epoch or state epoch of -1 keeps the current one.
// * Read: FENCED_LEADER_EPOCH when the request's leader epoch is below the highest seen; else the state
//   (start offset -1 and state epoch 0 when none was ever written) and the request's leader epoch becomes
//   the highest seen (kept in memory only, as Kafka's; a write records it).
// * Initialize: FENCED_STATE_EPOCH when the request's state epoch is below the state's; else a new
//   ShareSnapshot: the given start offset and state epoch, no batch, the snapshot epoch one higher.
// * Delete: tombstones for both keys; the share-partition is forgotten.
// * Read summary: the start offset and state epoch, with the read's leader-epoch fencing.
import { ErrorCode } from '../../domain/errors.js'
import { CoordinatorRecordError, recordCodec, safeNumber } from '../runtime/record-error.js'
import type { CoordinatorRecord, StoredRecord } from '../runtime/partition-writer.js'
import { noRecords, type CoordinatorResult, type CoordinatorStateMachine, type StateMachineContext } from '../runtime/runtime.js'
import {
  decodeShareCoordinatorRecordKey,
  decodeShareSnapshotValueRecord,
  decodeShareUpdateValueRecord,
  encodeShareSnapshotKeyRecord,
  encodeShareSnapshotValueRecord,
  encodeShareUpdateKeyRecord,
  encodeShareUpdateValueRecord,
} from './generated/records.gen.js'
import { combineStateBatches, invalidBatch, type StateBatch } from './state-batches.js'

export type { StateBatch }

/** A share-partition, as the coordinator keys it. */
export interface SharePartitionKey {
  groupId: string
  topicId: string
  partition: number
}

/** The persisted state of a share-partition (Kafka's ShareGroupOffset). */
export interface ShareGroupOffset {
  snapshotEpoch: number
  stateEpoch: number
  leaderEpoch: number
  startOffset: number
  stateBatches: StateBatch[]
}

export interface PartitionAnswer {
  errorCode: number
  errorMessage: string | null
}

export interface ReadAnswer extends PartitionAnswer {
  stateEpoch: number
  startOffset: number
  stateBatches: StateBatch[]
}

export interface WriteParams {
  stateEpoch: number
  leaderEpoch: number
  /** -1: not written. */
  startOffset: number
  stateBatches: readonly StateBatch[]
}

export interface ShareCoordinatorStateConfig {
  /** share.coordinator.snapshot.update.records.per.snapshot */
  snapshotUpdateRecordsPerSnapshot: number
  /** share.coordinator.state.topic.prune.interval.ms; 0 or undefined: never prune. */
  pruneIntervalMs?: number
  /** Deletes the partition's records before an offset (the runtime's partition writer). */
  prune?: (partition: number, offset: number) => Promise<void>
}

const SNAPSHOT_KEY_VERSION = 0
const UPDATE_KEY_VERSION = 1
const VALUE_VERSION = 0
/** What Kafka answers for a share-partition with no state (PartitionFactory's defaults). */
const DEFAULT_START_OFFSET = -1
const DEFAULT_STATE_EPOCH = 0
const UINT16_MAX = 65535

export function coordinatorKeyOf(k: SharePartitionKey): string {
  return `${k.groupId}:${k.topicId}:${k.partition}`
}

function ok(): PartitionAnswer {
  return { errorCode: ErrorCode.NONE, errorMessage: null }
}

function fail(errorCode: number, errorMessage: string | null = null): PartitionAnswer {
  return { errorCode, errorMessage }
}

function copyBatches(b: readonly StateBatch[]): StateBatch[] {
  return b.map((x) => ({ ...x }))
}

export class ShareCoordinatorState implements CoordinatorStateMachine {
  readonly #states = new Map<string, ShareGroupOffset>()
  /** The highest leader epoch seen per share-partition (replayed records and reads). */
  readonly #leaderEpochs = new Map<string, number>()
  /** ShareUpdates since the last ShareSnapshot, per share-partition. */
  readonly #updatesSinceSnapshot = new Map<string, number>()
  /** The first offset each share-partition with state still needs (its last snapshot's, else its first update's). */
  readonly #neededFrom = new Map<string, number>()
  /** The offset after the last record replayed. */
  #end = 0
  /** The log start this state machine last pruned to. */
  #prunedTo = 0
  skippedRecords = 0

  constructor(
    private readonly ctx: StateMachineContext<ShareCoordinatorState>,
    private readonly config: ShareCoordinatorStateConfig,
  ) {}

  /** Share-partitions with state here. */
  get size(): number {
    return this.#states.size
  }

  /** The state of a share-partition (tests). */
  state(k: SharePartitionKey): ShareGroupOffset | undefined {
    const s = this.#states.get(coordinatorKeyOf(k))
    return s === undefined ? undefined : { ...s, stateBatches: copyBatches(s.stateBatches) }
  }

  updatesSinceSnapshot(k: SharePartitionKey): number {
    return this.#updatesSinceSnapshot.get(coordinatorKeyOf(k)) ?? 0
  }

  // -------------------------------------------------------------------------------------------------
  // Replay

  /** The offset before which no record is needed: the lowest any share-partition needs, else the end. */
  redundantOffset(): number {
    let min = this.#end
    for (const o of this.#neededFrom.values()) if (o < min) min = o
    return min
  }

  replay(record: StoredRecord): void {
    if (record.offset + 1 > this.#end) this.#end = record.offset + 1
    if (record.control !== undefined) return
    try {
      const key = recordCodec('share coordinator record key', () => decodeShareCoordinatorRecordKey(record.key))
      if (key.type === 'unknown') return
      const k = coordinatorKeyOf({ groupId: key.key.groupId, topicId: key.key.topicId, partition: key.key.partition })
      if (record.value === null) {
        this.#forget(k)
        return
      }
      if (key.type === 'ShareSnapshot') {
        const { value } = recordCodec('ShareSnapshotValue', () => decodeShareSnapshotValueRecord(record.value!))
        this.#states.set(k, {
          snapshotEpoch: value.snapshotEpoch,
          stateEpoch: value.stateEpoch,
          leaderEpoch: value.leaderEpoch,
          startOffset: safeNumber(value.startOffset, 'start offset'),
          stateBatches: value.stateBatches.map((b) => ({
            firstOffset: safeNumber(b.firstOffset, 'first offset'), lastOffset: safeNumber(b.lastOffset, 'last offset'), deliveryState: b.deliveryState, deliveryCount: b.deliveryCount,
          })),
        })
        this.#raiseLeaderEpoch(k, value.leaderEpoch)
        this.#updatesSinceSnapshot.set(k, 0)
        this.#neededFrom.set(k, record.offset)
        return
      }
      const { value } = recordCodec('ShareUpdateValue', () => decodeShareUpdateValueRecord(record.value!))
      const batches = value.stateBatches.map((b) => ({
        firstOffset: safeNumber(b.firstOffset, 'first offset'), lastOffset: safeNumber(b.lastOffset, 'last offset'), deliveryState: b.deliveryState, deliveryCount: b.deliveryCount,
      }))
      const startOffset = safeNumber(value.startOffset, 'start offset')
      const current = this.#states.get(k)
      this.#raiseLeaderEpoch(k, value.leaderEpoch)
      this.#updatesSinceSnapshot.set(k, (this.#updatesSinceSnapshot.get(k) ?? 0) + 1)
      if (!this.#neededFrom.has(k)) this.#neededFrom.set(k, record.offset)
      if (current === undefined) {
        // An update with no snapshot before it (it was deleted by retention): what it says is all there is.
        this.#states.set(k, { snapshotEpoch: value.snapshotEpoch, stateEpoch: DEFAULT_STATE_EPOCH, leaderEpoch: value.leaderEpoch, startOffset, stateBatches: combineStateBatches([], batches, startOffset) })
        return
      }
      this.#states.set(k, merge(current, value.leaderEpoch, startOffset, batches))
    } catch (err) {
      if (!(err instanceof CoordinatorRecordError)) throw err
      this.skippedRecords++
      this.ctx.log.warn({ partition: this.ctx.partition, offset: record.offset, err: err.message }, 'skipping an unreadable __share_group_state record')
    }
  }

  onLoaded(): void {
    this.#schedulePrune()
  }

  onUnloaded(): void {}

  #schedulePrune(): void {
    const { pruneIntervalMs, prune } = this.config
    if (prune === undefined || pruneIntervalMs === undefined || pruneIntervalMs <= 0) return
    this.ctx.timer.schedule('prune', pruneIntervalMs, (s) => {
      s.#pruneNow(prune)
      s.#schedulePrune()
      return noRecords(undefined)
    })
  }

  #pruneNow(prune: (partition: number, offset: number) => Promise<void>): void {
    const offset = this.redundantOffset()
    if (offset <= this.#prunedTo) return
    const { partition } = this.ctx
    prune(partition, offset).then(
      () => {
        if (offset > this.#prunedTo) this.#prunedTo = offset
      },
      (err: unknown) => this.ctx.log.warn({ partition, offset, err: (err as Error)?.message }, 'cannot prune __share_group_state; trying again at the next interval'),
    )
  }

  // -------------------------------------------------------------------------------------------------
  // Operations (each run by the runtime, in order, on the main thread)

  write(k: SharePartitionKey, p: WriteParams): CoordinatorResult<PartitionAnswer> {
    const invalid = this.#invalidKey(k) ?? p.stateBatches.map(invalidBatch).find((m) => m !== undefined)
    if (invalid !== undefined) return noRecords(fail(ErrorCode.INVALID_REQUEST, invalid))
    const key = coordinatorKeyOf(k)
    const fenced = this.#fenced(key, p.leaderEpoch, p.stateEpoch)
    if (fenced !== undefined) return noRecords(fenced)
    const current = this.#states.get(key)
    const updates = this.#updatesSinceSnapshot.get(key) ?? 0
    let record: CoordinatorRecord
    if (current === undefined || updates >= this.config.snapshotUpdateRecordsPerSnapshot) {
      const startOffset = p.startOffset === -1 ? (current?.startOffset ?? -1) : p.startOffset
      record = snapshotRecord(k, {
        snapshotEpoch: current === undefined ? 0 : nextSnapshotEpoch(current.snapshotEpoch),
        stateEpoch: p.stateEpoch === -1 ? (current?.stateEpoch ?? DEFAULT_STATE_EPOCH) : p.stateEpoch,
        leaderEpoch: p.leaderEpoch === -1 ? (current?.leaderEpoch ?? -1) : p.leaderEpoch,
        startOffset,
        stateBatches: combineStateBatches(current?.stateBatches ?? [], p.stateBatches, startOffset),
      })
    } else {
      record = {
        key: encodeShareUpdateKeyRecord({ groupId: k.groupId, topicId: k.topicId, partition: k.partition }, UPDATE_KEY_VERSION),
        value: encodeShareUpdateValueRecord({
          snapshotEpoch: current.snapshotEpoch,
          leaderEpoch: p.leaderEpoch,
          startOffset: BigInt(p.startOffset),
          stateBatches: combineStateBatches([], p.stateBatches, p.startOffset).map(batchToRecord),
        }, VALUE_VERSION),
      }
    }
    return { records: [record], result: ok() }
  }

  read(k: SharePartitionKey, leaderEpoch: number): ReadAnswer {
    const invalid = this.#invalidKey(k)
    if (invalid !== undefined) return { ...fail(ErrorCode.INVALID_REQUEST, invalid), stateEpoch: DEFAULT_STATE_EPOCH, startOffset: DEFAULT_START_OFFSET, stateBatches: [] }
    const key = coordinatorKeyOf(k)
    const seen = this.#leaderEpochs.get(key)
    if (seen !== undefined && seen > leaderEpoch) {
      return { ...fail(ErrorCode.FENCED_LEADER_EPOCH, 'the leader epoch of the request is older than the share-partition\'s'), stateEpoch: DEFAULT_STATE_EPOCH, startOffset: DEFAULT_START_OFFSET, stateBatches: [] }
    }
    const s = this.#states.get(key)
    if (s === undefined) return { ...ok(), stateEpoch: DEFAULT_STATE_EPOCH, startOffset: DEFAULT_START_OFFSET, stateBatches: [] }
    if (leaderEpoch !== -1) this.#leaderEpochs.set(key, leaderEpoch)
    return { ...ok(), stateEpoch: s.stateEpoch, startOffset: s.startOffset, stateBatches: copyBatches(s.stateBatches) }
  }

  /** ReadShareGroupStateSummary: the read's fencing, without the batches or the leader epoch taken. */
  summary(k: SharePartitionKey, leaderEpoch: number): { errorCode: number; errorMessage: string | null; stateEpoch: number; startOffset: number } {
    const invalid = this.#invalidKey(k)
    if (invalid !== undefined) return { ...fail(ErrorCode.INVALID_REQUEST, invalid), stateEpoch: DEFAULT_STATE_EPOCH, startOffset: DEFAULT_START_OFFSET }
    const key = coordinatorKeyOf(k)
    const seen = this.#leaderEpochs.get(key)
    if (seen !== undefined && seen > leaderEpoch) return { ...fail(ErrorCode.FENCED_LEADER_EPOCH), stateEpoch: DEFAULT_STATE_EPOCH, startOffset: DEFAULT_START_OFFSET }
    const s = this.#states.get(key)
    return { ...ok(), stateEpoch: s?.stateEpoch ?? DEFAULT_STATE_EPOCH, startOffset: s?.startOffset ?? DEFAULT_START_OFFSET }
  }

  initialize(k: SharePartitionKey, stateEpoch: number, startOffset: number): CoordinatorResult<PartitionAnswer> {
    const invalid = this.#invalidKey(k) ?? (startOffset < -1 || !Number.isSafeInteger(startOffset) ? `invalid start offset ${startOffset}` : undefined)
    if (invalid !== undefined) return noRecords(fail(ErrorCode.INVALID_REQUEST, invalid))
    const key = coordinatorKeyOf(k)
    const current = this.#states.get(key)
    if (current !== undefined && current.stateEpoch > stateEpoch) return noRecords(fail(ErrorCode.FENCED_STATE_EPOCH, 'the state epoch of the request is older than the share-partition\'s'))
    return {
      records: [snapshotRecord(k, {
        snapshotEpoch: current === undefined ? 0 : nextSnapshotEpoch(current.snapshotEpoch),
        stateEpoch,
        leaderEpoch: current?.leaderEpoch ?? -1,
        startOffset,
        stateBatches: [],
      })],
      result: ok(),
    }
  }

  delete(k: SharePartitionKey): CoordinatorResult<PartitionAnswer> {
    const invalid = this.#invalidKey(k)
    if (invalid !== undefined) return noRecords(fail(ErrorCode.INVALID_REQUEST, invalid))
    if (!this.#states.has(coordinatorKeyOf(k))) return noRecords(ok())
    const keyFields = { groupId: k.groupId, topicId: k.topicId, partition: k.partition }
    return {
      records: [
        { key: encodeShareSnapshotKeyRecord(keyFields, SNAPSHOT_KEY_VERSION), value: null },
        { key: encodeShareUpdateKeyRecord(keyFields, UPDATE_KEY_VERSION), value: null },
      ],
      result: ok(),
    }
  }

  // -------------------------------------------------------------------------------------------------

  #invalidKey(k: SharePartitionKey): string | undefined {
    if (k.groupId === '') return 'empty group id'
    if (!Number.isInteger(k.partition) || k.partition < 0) return `invalid partition ${k.partition}`
    return undefined
  }

  #fenced(key: string, leaderEpoch: number, stateEpoch: number): PartitionAnswer | undefined {
    const seen = this.#leaderEpochs.get(key)
    if (seen !== undefined && seen > leaderEpoch && leaderEpoch !== -1) return fail(ErrorCode.FENCED_LEADER_EPOCH, 'the leader epoch of the request is older than the share-partition\'s')
    const current = this.#states.get(key)
    if (current !== undefined && current.stateEpoch > stateEpoch && stateEpoch !== -1) return fail(ErrorCode.FENCED_STATE_EPOCH, 'the state epoch of the request is older than the share-partition\'s')
    return undefined
  }

  #raiseLeaderEpoch(key: string, leaderEpoch: number): void {
    const seen = this.#leaderEpochs.get(key)
    if (seen === undefined || seen < leaderEpoch) this.#leaderEpochs.set(key, leaderEpoch)
  }

  #forget(key: string): void {
    this.#neededFrom.delete(key)
    this.#states.delete(key)
    this.#leaderEpochs.delete(key)
    this.#updatesSinceSnapshot.delete(key)
  }
}

function nextSnapshotEpoch(e: number): number {
  return e >= UINT16_MAX ? 0 : e + 1
}

function merge(current: ShareGroupOffset, leaderEpoch: number, startOffset: number, batches: readonly StateBatch[]): ShareGroupOffset {
  const start = startOffset === -1 ? current.startOffset : startOffset
  return {
    snapshotEpoch: current.snapshotEpoch,
    stateEpoch: current.stateEpoch,
    leaderEpoch: leaderEpoch === -1 ? current.leaderEpoch : leaderEpoch,
    startOffset: start,
    stateBatches: combineStateBatches(current.stateBatches, batches, start),
  }
}

function batchToRecord(b: StateBatch): { firstOffset: bigint; lastOffset: bigint; deliveryState: number; deliveryCount: number } {
  return { firstOffset: BigInt(b.firstOffset), lastOffset: BigInt(b.lastOffset), deliveryState: b.deliveryState, deliveryCount: b.deliveryCount }
}

function snapshotRecord(k: SharePartitionKey, s: ShareGroupOffset): CoordinatorRecord {
  return {
    key: encodeShareSnapshotKeyRecord({ groupId: k.groupId, topicId: k.topicId, partition: k.partition }, SNAPSHOT_KEY_VERSION),
    value: encodeShareSnapshotValueRecord({
      snapshotEpoch: s.snapshotEpoch,
      stateEpoch: s.stateEpoch,
      leaderEpoch: s.leaderEpoch,
      startOffset: BigInt(s.startOffset),
      stateBatches: s.stateBatches.map(batchToRecord),
    }, VALUE_VERSION),
  }
}
