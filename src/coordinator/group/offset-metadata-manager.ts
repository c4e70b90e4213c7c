// Committed offsets of one __consumer_offsets partition (Kafka's OffsetMetadataManager): OffsetCommit,
// TxnOffsetCommit (offsets pending until their transaction's marker lands here), OffsetFetch,
// OffsetDelete and retention. Offsets change only by replaying records, so live state and a reload are
// the same function of the log; the only exception is the TxnOffsetCommit bookkeeping, which also
// follows the appends it makes. Groups are the GroupMetadataManager's (classic) and the
// ConsumerGroupManager's (KIP-848): commits and fetches are validated against them (classic: generation,
// member, static instance; consumer groups: member and member epoch, STALE_MEMBER_EPOCH), and an offset
// for a group id neither knows makes a simple classic group.
import { ErrorCode } from '../../domain/errors.js'
import type { CoordinatorRecord, StoredRecord } from '../runtime/partition-writer.js'
import { noRecords, type CoordinatorResult, type StateMachineContext } from '../runtime/runtime.js'
import type { ClassicGroup } from './classic-group.js'
import type { ConsumerGroupManager } from './consumer-group-manager.js'
import type { GroupMetadataManager } from './group-metadata-manager.js'
import { decodeOffsetCommitValue, encodeOffsetCommitKey, encodeOffsetCommitValue, type OffsetCommitKey } from './offset-commit-group-metadata-records.js'
import type {
  FetchedOffset,
  GroupCoordinatorConfig,
  OffsetCommitInput,
  OffsetDeleteResult,
  OffsetFetchMember,
  OffsetFetchResult,
  PartitionErrors,
  TopicsView,
  TxnOffsetCommitInput,
} from './types.js'

export interface OffsetAndMetadata {
  offset: bigint
  leaderEpoch: number
  metadata: string
  commitTimestamp: number
  /** -1 unless committed with an explicit retention (OffsetCommit v2-4). */
  expireTimestamp: number
}

export class OffsetMetadataManager {
  /** group -> topic -> partition -> committed offset */
  readonly offsets = new Map<string, Map<string, Map<number, OffsetAndMetadata>>>()
  /** TxnOffsetCommit offsets not yet committed: producer id -> group -> topic -> partition -> offset */
  readonly pendingTxnOffsets = new Map<number, Map<string, Map<string, Map<number, OffsetAndMetadata>>>>()
  /** Next sequence of each transactional producer's batches in this partition (its producer state). */
  readonly txnSequences = new Map<number, { epoch: number; next: number }>()

  constructor(
    private readonly ctx: StateMachineContext<unknown>,
    private readonly config: GroupCoordinatorConfig,
    private readonly topics: TopicsView,
    private readonly groups: GroupMetadataManager,
    private readonly consumerGroups: ConsumerGroupManager,
  ) {}

  /** Offsets of a group id no group holds make it a simple (classic) group, as in Kafka. */
  private ensureGroup(groupId: string): void {
    if (this.consumerGroups.group(groupId) === undefined) this.groups.getOrCreateSimpleGroup(groupId)
  }

  private now(): number {
    return this.ctx.clock.now()
  }

  // ---- replay -----------------------------------------------------------------------------------

  /**
   * An OffsetCommit record. Written by a transactional producer (TxnOffsetCommit), it stays pending
   * until the producer's transaction ends; otherwise it is committed, or deleted by a tombstone.
   */
  replay(key: OffsetCommitKey, record: StoredRecord): void {
    if (record.producerId !== undefined && record.producerId >= 0 && record.value !== null) {
      const v = decodeOffsetCommitValue(record.value)
      this.addPendingTxnOffset(record.producerId, key.group, key.topic, key.partition, { offset: v.offset, leaderEpoch: v.leaderEpoch, metadata: v.metadata, commitTimestamp: v.commitTimestamp, expireTimestamp: v.expireTimestamp })
      if (record.sequence !== undefined && record.producerEpoch !== undefined) this.txnSequences.set(record.producerId, { epoch: record.producerEpoch, next: record.sequence + 1 })
      return
    }
    if (record.value === null) {
      this.removeOffset(key.group, key.topic, key.partition)
      // As Kafka: a tombstone also drops what open transactions hold for that partition.
      for (const byGroup of this.pendingTxnOffsets.values()) {
        const byPartition = byGroup.get(key.group)?.get(key.topic)
        if (byPartition === undefined) continue
        byPartition.delete(key.partition)
        if (byPartition.size === 0) byGroup.get(key.group)!.delete(key.topic)
        if (byGroup.get(key.group)!.size === 0) byGroup.delete(key.group)
      }
      return
    }
    const v = decodeOffsetCommitValue(record.value)
    this.ensureGroup(key.group)
    let byTopic = this.offsets.get(key.group)
    if (byTopic === undefined) this.offsets.set(key.group, (byTopic = new Map()))
    let byPartition = byTopic.get(key.topic)
    if (byPartition === undefined) byTopic.set(key.topic, (byPartition = new Map()))
    byPartition.set(key.partition, { offset: v.offset, leaderEpoch: v.leaderEpoch, metadata: v.metadata, commitTimestamp: v.commitTimestamp, expireTimestamp: v.expireTimestamp })
  }

  private removeOffset(groupId: string, topic: string, partition: number): void {
    const byTopic = this.offsets.get(groupId)
    const byPartition = byTopic?.get(topic)
    if (byTopic === undefined || byPartition === undefined) return
    byPartition.delete(partition)
    if (byPartition.size === 0) byTopic.delete(topic)
    if (byTopic.size === 0) this.offsets.delete(groupId)
  }

  // ---- OffsetCommit -----------------------------------------------------------------------------

  /** Kafka's ClassicGroup.validateOffsetCommit; NONE when the commit may proceed. */
  private commitError(group: ClassicGroup, req: OffsetCommitInput): ErrorCode {
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE
    // A "simple" commit: no membership, the group only stores offsets (manual assignment).
    if (req.generationId < 0 && group.is('Empty')) return ErrorCode.NONE
    if (req.generationId >= 0 || req.memberId !== '' || req.groupInstanceId !== null) {
      const memberError = this.groups.validateMember(group, req.memberId, req.groupInstanceId)
      if (memberError !== ErrorCode.NONE) return memberError
      if (req.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION
    } else if (!group.is('Empty')) {
      return ErrorCode.UNKNOWN_MEMBER_ID
    }
    if (group.is('CompletingRebalance')) return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE
  }

  commitOffsets(req: OffsetCommitInput): CoordinatorResult<PartitionErrors[]> {
    const all = (errorCode: ErrorCode): PartitionErrors[] =>
      req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) }))
    const consumerGroup = this.consumerGroups.group(req.groupId)
    if (consumerGroup !== undefined) {
      const error = consumerGroup.offsetCommitError(req.memberId, req.generationId, false, req.consumerProtocolCapable === true)
      if (error !== ErrorCode.NONE) return noRecords(all(error))
      const { records, result } = this.commitRecords(req)
      return { records, result }
    }
    let group = this.groups.group(req.groupId)
    let created = false
    if (group === undefined) {
      if (req.generationId >= 0) return noRecords(all(ErrorCode.ILLEGAL_GENERATION))
      // A simple group: it exists for its offsets (replaying them recreates it).
      group = this.groups.getOrCreateSimpleGroup(req.groupId)
      created = true
    }
    const error = this.commitError(group, req)
    if (error !== ErrorCode.NONE) return noRecords(all(error))
    const member = group.members.get(req.memberId)
    // A commit from a member of the group counts as a heartbeat.
    if (member !== undefined && (group.is('Stable') || group.is('PreparingRebalance'))) this.groups.rescheduleHeartbeat(group, member)
    const { records, result } = this.commitRecords(req)
    // A simple group that got no offset is not kept (it would list as an empty group until expiry).
    if (created && records.length === 0) this.groups.removeGroup(req.groupId)
    return {
      records,
      result,
      onAppended: (error) => {
        if (error !== null && created && this.groups.group(req.groupId) === group && !this.offsets.has(req.groupId)) this.groups.removeGroup(req.groupId)
      },
    }
  }

  /** The OffsetCommit records of a validated commit, and each partition's answer. */
  private commitRecords(req: OffsetCommitInput): { records: CoordinatorRecord[]; result: PartitionErrors[] } {
    const now = this.now()
    const records: CoordinatorRecord[] = []
    const result: PartitionErrors[] = req.topics.map((t) => {
      const count = this.topics.partitionCount(t.name)
      return {
        name: t.name,
        partitions: t.partitions.map((p) => {
          if (count === undefined || p.partitionIndex < 0 || p.partitionIndex >= count) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }
          const metadata = p.committedMetadata ?? ''
          if (Buffer.byteLength(metadata) > this.config.offsetMetadataMaxBytes) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.OFFSET_METADATA_TOO_LARGE }
          records.push({
            key: encodeOffsetCommitKey(req.groupId, t.name, p.partitionIndex),
            value: encodeOffsetCommitValue({
              offset: p.committedOffset,
              leaderEpoch: p.committedLeaderEpoch,
              metadata,
              commitTimestamp: now,
              expireTimestamp: req.retentionTimeMs >= 0 ? now + req.retentionTimeMs : -1,
            }),
          })
          return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE }
        }),
      }
    })
    return { records, result }
  }

  // ---- transactional offsets (TxnOffsetCommit, KIP-98 / KIP-447) -----------------------------------

  private addPendingTxnOffset(producerId: number, groupId: string, topic: string, partition: number, o: OffsetAndMetadata): void {
    let byGroup = this.pendingTxnOffsets.get(producerId)
    if (byGroup === undefined) this.pendingTxnOffsets.set(producerId, (byGroup = new Map()))
    let byTopic = byGroup.get(groupId)
    if (byTopic === undefined) byGroup.set(groupId, (byTopic = new Map()))
    let byPartition = byTopic.get(topic)
    if (byPartition === undefined) byTopic.set(topic, (byPartition = new Map()))
    byPartition.set(partition, o)
  }

  /** A COMMIT marker moves the producer's pending offsets into the committed ones; ABORT drops them. */
  replayTxnMarker(producerId: number, commit: boolean): void {
    const byGroup = this.pendingTxnOffsets.get(producerId)
    this.pendingTxnOffsets.delete(producerId)
    if (byGroup === undefined || !commit) return
    for (const [groupId, byTopic] of byGroup) {
      this.ensureGroup(groupId)
      let committed = this.offsets.get(groupId)
      if (committed === undefined) this.offsets.set(groupId, (committed = new Map()))
      for (const [topic, byPartition] of byTopic) {
        let c = committed.get(topic)
        if (c === undefined) committed.set(topic, (c = new Map()))
        for (const [partition, o] of byPartition) c.set(partition, o)
      }
    }
  }

  /** True when some producer's open transaction holds an offset for this group partition. */
  hasPendingTxnOffset(groupId: string, topic: string, partition: number): boolean {
    for (const byGroup of this.pendingTxnOffsets.values()) if (byGroup.get(groupId)?.get(topic)?.has(partition) === true) return true
    return false
  }

  /** Kafka's validation of a TxnOffsetCommit against the group (KIP-447 generation/member fencing). */
  private txnCommitError(group: ClassicGroup | undefined, req: TxnOffsetCommitInput): ErrorCode {
    const consumerGroup = this.consumerGroups.group(req.groupId)
    if (consumerGroup !== undefined) return consumerGroup.offsetCommitError(req.memberId, req.generationId, true, true)
    if (group === undefined) return req.generationId >= 0 || req.memberId !== '' ? ErrorCode.ILLEGAL_GENERATION : ErrorCode.NONE
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if (req.memberId !== '' || req.groupInstanceId !== null) {
      const memberError = this.groups.validateMember(group, req.memberId, req.groupInstanceId)
      if (memberError !== ErrorCode.NONE) return memberError
    }
    if (req.generationId >= 0 && req.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE
  }

  /**
   * TxnOffsetCommit: the offsets are written as one transactional batch of the producer (sequence
   * numbers continue the producer's last batch in this partition) and stay pending until the
   * transaction's marker lands here.
   */
  txnCommitOffsets(req: TxnOffsetCommitInput): CoordinatorResult<PartitionErrors[]> {
    const all = (errorCode: ErrorCode): PartitionErrors[] =>
      req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) }))
    const group = this.groups.group(req.groupId)
    const error = this.txnCommitError(group, req)
    if (error !== ErrorCode.NONE) return noRecords(all(error))
    const now = this.now()
    const records: CoordinatorRecord[] = []
    const staged: { topic: string; partition: number; o: OffsetAndMetadata }[] = []
    const result: PartitionErrors[] = req.topics.map((t) => {
      const count = this.topics.partitionCount(t.name)
      return {
        name: t.name,
        partitions: t.partitions.map((p) => {
          if (count === undefined || p.partitionIndex < 0 || p.partitionIndex >= count) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }
          const metadata = p.committedMetadata ?? ''
          if (Buffer.byteLength(metadata) > this.config.offsetMetadataMaxBytes) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.OFFSET_METADATA_TOO_LARGE }
          const o: OffsetAndMetadata = { offset: p.committedOffset, leaderEpoch: p.committedLeaderEpoch, metadata, commitTimestamp: now, expireTimestamp: -1 }
          records.push({ key: encodeOffsetCommitKey(req.groupId, t.name, p.partitionIndex), value: encodeOffsetCommitValue(o) })
          staged.push({ topic: t.name, partition: p.partitionIndex, o })
          return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE }
        }),
      }
    })
    if (records.length === 0) return noRecords(result)
    const known = this.txnSequences.get(req.producerId)
    const baseSequence = known !== undefined && known.epoch === req.producerEpoch ? known.next : 0
    return {
      records,
      result,
      replay: false,
      transactional: { producerId: req.producerId, producerEpoch: req.producerEpoch, baseSequence },
      onAppended: (err) => {
        if (err !== null) {
          // The partition's producer state disagrees (it expired, or batches were cleaned away): the
          // next attempt starts over at 0 (a new producer state), the one after at the tracked value.
          if (baseSequence !== 0) this.txnSequences.set(req.producerId, { epoch: req.producerEpoch, next: 0 })
          else this.txnSequences.delete(req.producerId)
          return
        }
        this.txnSequences.set(req.producerId, { epoch: req.producerEpoch, next: baseSequence + records.length })
        for (const s of staged) this.addPendingTxnOffset(req.producerId, req.groupId, s.topic, s.partition, s.o)
      },
    }
  }

  /** The transaction coordinator wrote the producer's marker to this partition. */
  onTxnCompleted(producerId: number, commit: boolean): CoordinatorResult<void> {
    this.replayTxnMarker(producerId, commit)
    return noRecords(undefined)
  }

  committed(groupId: string, topic: string, partition: number): OffsetAndMetadata | undefined {
    return this.offsets.get(groupId)?.get(topic)?.get(partition)
  }

  /**
   * topics null = every committed offset of the group. member: who asks (OffsetFetch v9); a consumer
   * group checks it (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH), as Kafka does.
   */
  fetchOffsets(groupId: string, topics: { name: string; partitions: number[] }[] | null, requireStable = false, member: OffsetFetchMember = { memberId: null, memberEpoch: -1 }): OffsetFetchResult {
    const consumerGroup = this.consumerGroups.group(groupId)
    if (consumerGroup !== undefined) {
      const error = consumerGroup.offsetFetchError(member.memberId, member.memberEpoch)
      if (error !== ErrorCode.NONE) return { errorCode: error, topics: [] }
    }
    const byTopic = this.offsets.get(groupId)
    const fetched = (partitionIndex: number, o: OffsetAndMetadata | undefined, topic?: string): FetchedOffset =>
      requireStable && topic !== undefined && this.hasPendingTxnOffset(groupId, topic, partitionIndex)
        ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT }
        : o === undefined
        ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.NONE }
        : { partitionIndex, committedOffset: o.offset, committedLeaderEpoch: o.leaderEpoch, metadata: o.metadata, errorCode: ErrorCode.NONE }
    if (topics === null) {
      const out: OffsetFetchResult['topics'] = []
      for (const [name, byPartition] of byTopic ?? []) {
        out.push({ name, partitions: [...byPartition.entries()].sort((a, b) => a[0] - b[0]).map(([p, o]) => fetched(p, o, name)) })
      }
      return { errorCode: ErrorCode.NONE, topics: out }
    }
    return {
      errorCode: ErrorCode.NONE,
      topics: topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => fetched(p, byTopic?.get(t.name)?.get(p), t.name)) })),
    }
  }

  /** Every committed offset of a group, for lag. */
  committedOffsets(groupId: string): { topic: string; partition: number; offset: bigint }[] {
    const out: { topic: string; partition: number; offset: bigint }[] = []
    for (const [topic, byPartition] of this.offsets.get(groupId) ?? []) for (const [partition, o] of byPartition) out.push({ topic, partition, offset: o.offset })
    return out
  }

  deleteOffsets(groupId: string, topics: { name: string; partitions: number[] }[]): CoordinatorResult<OffsetDeleteResult> {
    const consumerGroup = this.consumerGroups.group(groupId)
    const group = this.groups.group(groupId)
    let subscribed: ReadonlySet<string> | null
    if (consumerGroup !== undefined) subscribed = new Set(consumerGroup.subscribedTopicNames().keys())
    else if (group === undefined || group.is('Dead')) return noRecords({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] })
    else subscribed = group.is('Empty') ? new Set<string>() : group.subscribedTopics()
    if (subscribed === null) return noRecords({ errorCode: ErrorCode.NON_EMPTY_GROUP, topics: [] })
    const records: CoordinatorRecord[] = []
    const result = topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((partitionIndex) => {
        if (subscribed.has(t.name)) return { partitionIndex, errorCode: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC as ErrorCode }
        if (this.committed(groupId, t.name, partitionIndex) !== undefined) records.push({ key: encodeOffsetCommitKey(groupId, t.name, partitionIndex), value: null })
        return { partitionIndex, errorCode: ErrorCode.NONE as ErrorCode }
      }),
    }))
    return { records, result: { errorCode: ErrorCode.NONE, topics: result } }
  }


  // ---- deletion and retention -------------------------------------------------------------------

  /**
   * Kafka's onPartitionsDeleted: tombstones for every group's offsets of the deleted partitions, the
   * committed ones and those open transactions hold, so a topic re-created under the same name starts
   * without them.
   */
  onPartitionsDeleted(partitions: readonly { topic: string; partition: number }[]): CoordinatorRecord[] {
    const byTopic = new Map<string, Set<number>>()
    for (const p of partitions) {
      let set = byTopic.get(p.topic)
      if (set === undefined) byTopic.set(p.topic, (set = new Set()))
      set.add(p.partition)
    }
    const keys = new Set<string>()
    const records: CoordinatorRecord[] = []
    const collect = (offsets: Map<string, Map<string, Map<number, OffsetAndMetadata>>>): void => {
      for (const [groupId, topics] of offsets) {
        for (const [topic, byPartition] of topics) {
          const deleted = byTopic.get(topic)
          if (deleted === undefined) continue
          for (const partition of byPartition.keys()) {
            const id = `${groupId}\u0000${topic}\u0000${partition}`
            if (!deleted.has(partition) || keys.has(id)) continue
            keys.add(id)
            records.push({ key: encodeOffsetCommitKey(groupId, topic, partition), value: null })
          }
        }
      }
    }
    collect(this.offsets)
    for (const pending of this.pendingTxnOffsets.values()) collect(pending)
    return records
  }

  /**
   * Every partition holding offsets (committed or pending) that the topics port does not know: what is
   * left of topics deleted while this partition could not be told (the broker stopped in between).
   */
  partitionsOfDeletedTopics(): { topic: string; partition: number }[] {
    const out = new Map<string, { topic: string; partition: number }>()
    const scan = (offsets: Map<string, Map<string, Map<number, OffsetAndMetadata>>>): void => {
      for (const topics of offsets.values()) {
        for (const [topic, byPartition] of topics) {
          const count = this.topics.partitionCount(topic)
          for (const partition of byPartition.keys()) if (count === undefined || partition >= count) out.set(`${topic}\u0000${partition}`, { topic, partition })
        }
      }
    }
    scan(this.offsets)
    for (const pending of this.pendingTxnOffsets.values()) scan(pending)
    return [...out.values()]
  }

  /** Tombstones for every committed offset of a group (DeleteGroups). */
  offsetTombstones(groupId: string): CoordinatorRecord[] {
    return this.committedOffsets(groupId).map(({ topic, partition }) => ({ key: encodeOffsetCommitKey(groupId, topic, partition), value: null }))
  }

  /**
   * offsets.retention.minutes (KIP-211) for one group: an offset of a topic nobody in the group
   * subscribes to (`subscribed`; none for an empty group) expires `retention` after its base: the commit,
   * or for an empty classic consumer group when it became empty (`emptySince`); an offset committed with
   * an explicit retention (OffsetCommit v2-4) at its expire timestamp. Pushes the tombstones onto
   * `records`; returns how many offsets remain.
   */
  expireOffsets(groupId: string, subscribed: ReadonlySet<string>, emptySince: (() => number) | undefined, now: number, records: CoordinatorRecord[]): number {
    const retention = this.config.offsetsRetentionMs
    let remaining = 0
    for (const [topic, byPartition] of this.offsets.get(groupId) ?? []) {
      for (const [partition, o] of byPartition) {
        let expired = false
        if (!subscribed.has(topic)) {
          const base = emptySince !== undefined ? emptySince() : o.commitTimestamp
          expired = o.expireTimestamp >= 0 ? now >= o.expireTimestamp : now - base >= retention
        }
        if (expired) records.push({ key: encodeOffsetCommitKey(groupId, topic, partition), value: null })
        else remaining++
      }
    }
    return remaining
  }
}
