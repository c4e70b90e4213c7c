// The state machine of one __consumer_offsets partition (Kafka's GroupCoordinatorShard; "shard" in
// Skein means a worker thread, hence the other name). It composes the GroupMetadataManager (classic
// groups: membership, rebalances), the ConsumerGroupManager (KIP-848 consumer groups) and the
// OffsetMetadataManager (committed and transactional offsets), the ShareGroupManager (KIP-932 share
// groups), routes each replayed record to the one
// that owns its key, and runs what needs several: a classic JoinGroup where a consumer or share group exists,
// DeleteGroups, ListGroups and the periodic offset retention, which deletes empty groups left without
// offsets. Operations that touch only one of them are called on it directly (GroupCoordinator:
// `state.consumerGroups.heartbeat(...)`, `state.offsetMetadata.commitOffsets(...)`). A group id names a
// classic, a consumer or a share group, never two.
//
// Every operation returns a CoordinatorResult: the records to append and the answer. Offsets change
// only by replaying records; classic membership is changed by the operations and made durable by
// GroupMetadata records (see group-metadata-manager.ts).
import { ErrorCode } from '../../domain/errors.js'
import type { CoordinatorRecord, StoredRecord } from '../runtime/partition-writer.js'
import { noRecords, type CoordinatorResult, type CoordinatorStateMachine, type StateMachineContext } from '../runtime/runtime.js'
import { ClassicGroup } from './classic-group.js'
import { ConsumerGroupManager } from './consumer-group-manager.js'
import { GroupMetadataManager } from './group-metadata-manager.js'
import { OffsetMetadataManager } from './offset-metadata-manager.js'
import { ShareGroupManager } from './share-group-manager.js'
import { CoordinatorRecordError, decodeGroupRecordKey } from './offset-commit-group-metadata-records.js'
import type { GroupCoordinatorConfig, JoinGroupInput, JoinGroupResult, ListedGroup, TopicsView } from './types.js'

const EXPIRE_OFFSETS_TIMER = 'expire-offsets'
const DELETED_TOPICS_TIMER = 'offsets-of-deleted-topics'

export class GroupCoordinatorState implements CoordinatorStateMachine {
  readonly groupMetadata: GroupMetadataManager
  readonly consumerGroups: ConsumerGroupManager
  readonly offsetMetadata: OffsetMetadataManager
  readonly shareGroups: ShareGroupManager
  #warnedUnknown = false

  constructor(
    private readonly ctx: StateMachineContext<GroupCoordinatorState>,
    private readonly config: GroupCoordinatorConfig,
    topics: TopicsView,
  ) {
    this.groupMetadata = new GroupMetadataManager(ctx, config)
    this.consumerGroups = new ConsumerGroupManager(ctx, config, topics, this.groupMetadata)
    this.offsetMetadata = new OffsetMetadataManager(ctx, config, topics, this.groupMetadata, this.consumerGroups)
    this.shareGroups = new ShareGroupManager(ctx, config, topics, (groupId) => {
      const classic = this.groupMetadata.group(groupId)
      return (classic !== undefined && !classic.is('Dead')) || this.consumerGroups.group(groupId) !== undefined
    })
  }

  // ---- replay -----------------------------------------------------------------------------------

  replay(record: StoredRecord): void {
    // A transaction marker: the producer's pending offsets become committed, or are dropped.
    if (record.control !== undefined) {
      if (record.producerId !== undefined) this.offsetMetadata.replayTxnMarker(record.producerId, record.control === 'commit')
      return
    }
    try {
      const key = decodeGroupRecordKey(record.key)
      if (key.type === 'offset-commit') this.offsetMetadata.replay(key, record)
      else if (key.type === 'group-metadata') this.groupMetadata.replay(key.group, record.value)
      else if (key.type === 'consumer-group') this.consumerGroups.replay(key, record.value)
      else if (key.type === 'share-group') this.shareGroups.replay(key, record.value)
      else if (!this.#warnedUnknown) {
        this.#warnedUnknown = true
        this.ctx.log.warn({ partition: this.ctx.partition, offset: record.offset, keyVersion: key.version }, 'skipping coordinator records of an unknown type')
      }
    } catch (err) {
      if (!(err instanceof CoordinatorRecordError)) throw err
      this.ctx.log.error({ partition: this.ctx.partition, offset: record.offset, err: err.message }, 'skipping a malformed coordinator record')
    }
  }

  onLoaded(): void {
    this.groupMetadata.onLoaded()
    this.consumerGroups.onLoaded()
    this.shareGroups.onLoaded()
    this.scheduleOffsetExpiry()
    // Offsets of topics deleted while this partition was not loaded (a stop between the deletion and
    // its tombstones) go now, so nothing of a deleted topic comes back.
    if (this.offsetMetadata.partitionsOfDeletedTopics().length > 0) this.ctx.timer.schedule(DELETED_TOPICS_TIMER, 0, () => this.removeOffsetsOfDeletedTopics())
  }

  onUnloaded(): void {
    this.groupMetadata.onUnloaded()
  }

  // ---- operations on groups and their offsets ---------------------------------------------------

  /**
   * A classic JoinGroup: a non-empty consumer group with that id answers INCONSISTENT_GROUP_PROTOCOL
   * (classic members do not join consumer groups here); an empty one gives way first
   * (emptyConsumerGroupTombstones). A share group, empty or not, answers INCONSISTENT_GROUP_PROTOCOL
   * too (Kafka's classicGroupJoin: share groups are never converted).
   */
  joinGroup(req: JoinGroupInput): CoordinatorResult<JoinGroupResult> {
    if (this.consumerGroups.group(req.groupId) !== undefined || this.shareGroups.group(req.groupId) !== undefined) return noRecords(ClassicGroup.joinError(req.memberId, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
    return this.groupMetadata.joinGroup(req)
  }

  /** Before a classic join: the tombstones of an empty consumer group with that id (Kafka converts empty groups). */
  emptyConsumerGroupTombstones(groupId: string): CoordinatorResult<void> {
    const group = this.consumerGroups.group(groupId)
    if (group === undefined || !group.isEmpty()) return noRecords(undefined)
    this.ctx.log.info({ groupId }, 'empty consumer group becomes a classic group')
    return { records: this.consumerGroups.groupTombstones(group), result: undefined }
  }

  listGroups(): ListedGroup[] {
    return [...this.groupMetadata.listGroups(), ...this.consumerGroups.listGroups(), ...this.shareGroups.listGroups()]
  }

  deleteGroups(groupIds: string[]): CoordinatorResult<{ groupId: string; errorCode: ErrorCode }[]> {
    const records: CoordinatorRecord[] = []
    const result = groupIds.map((groupId) => {
      const shareGroup = this.shareGroups.group(groupId)
      if (shareGroup !== undefined) {
        const errorCode = this.shareGroups.deleteGroupError(shareGroup)
        if (errorCode === ErrorCode.NONE) records.push(...this.shareGroups.groupTombstones(shareGroup))
        return { groupId, errorCode }
      }
      const consumerGroup = this.consumerGroups.group(groupId)
      if (consumerGroup !== undefined) {
        const errorCode = this.consumerGroups.deleteGroupError(consumerGroup)
        if (errorCode === ErrorCode.NONE) records.push(...this.offsetMetadata.offsetTombstones(groupId), ...this.consumerGroups.groupTombstones(consumerGroup))
        return { groupId, errorCode }
      }
      const errorCode = this.groupMetadata.deleteGroupError(groupId)
      if (errorCode !== ErrorCode.NONE) return { groupId, errorCode }
      records.push(...this.offsetMetadata.offsetTombstones(groupId), this.groupMetadata.deleteGroup(this.groupMetadata.group(groupId)!))
      return { groupId, errorCode: ErrorCode.NONE as ErrorCode }
    })
    return { records, result }
  }

  /** Kafka's onPartitionsDeleted: the deleted partitions' offsets of every group get tombstones. */
  onPartitionsDeleted(partitions: readonly { topic: string; partition: number }[]): CoordinatorResult<number> {
    const records = this.offsetMetadata.onPartitionsDeleted(partitions)
    if (records.length > 0) this.ctx.log.info({ partition: this.ctx.partition, tombstones: records.length }, 'removing offsets of deleted partitions')
    return { records, result: records.length }
  }

  removeOffsetsOfDeletedTopics(): CoordinatorResult<void> {
    const gone = this.offsetMetadata.partitionsOfDeletedTopics()
    const records = this.offsetMetadata.onPartitionsDeleted(gone)
    if (records.length > 0) this.ctx.log.info({ partition: this.ctx.partition, tombstones: records.length, topics: [...new Set(gone.map((p) => p.topic))] }, 'removing offsets of topics that no longer exist')
    return { records, result: undefined }
  }

  private scheduleOffsetExpiry(): void {
    this.ctx.timer.schedule(EXPIRE_OFFSETS_TIMER, this.config.offsetsRetentionCheckIntervalMs, () => this.expireOffsets())
  }

  /**
   * offsets.retention.minutes (KIP-211), every offsets.retention.check.interval.ms: expired offsets get
   * tombstones (OffsetMetadataManager.expireOffsets says which), and an empty group left without
   * offsets is deleted. Groups whose subscriptions cannot be read keep everything.
   */
  expireOffsets(): CoordinatorResult<void> {
    this.scheduleOffsetExpiry()
    const now = this.ctx.clock.now()
    const records: CoordinatorRecord[] = []
    for (const group of this.groupMetadata.allGroups()) {
      const empty = group.is('Empty')
      const subscribed = empty ? new Set<string>() : group.subscribedTopics()
      if (subscribed === null) continue
      // An empty consumer-protocol group's offsets age from when it became empty; otherwise from their commit.
      const base = empty && group.protocolType !== null ? (): number => group.currentStateTimestamp : undefined
      const remaining = this.offsetMetadata.expireOffsets(group.groupId, subscribed, base, now, records)
      if (empty && remaining === 0 && group.pendingMembers.size === 0) {
        this.ctx.log.info({ groupId: group.groupId }, 'deleting empty group without offsets')
        // Its offsets' tombstones are already in `records`; only the group's own is new.
        records.push(this.groupMetadata.deleteGroup(group))
      }
    }
    // Consumer groups (Kafka's condition): offsets of topics no member subscribes to expire from their commit.
    for (const group of this.consumerGroups.allGroups()) {
      const remaining = this.offsetMetadata.expireOffsets(group.groupId, new Set(group.subscribedTopicNames().keys()), undefined, now, records)
      if (group.isEmpty() && remaining === 0) {
        this.ctx.log.info({ groupId: group.groupId }, 'deleting empty consumer group without offsets')
        records.push(...this.consumerGroups.groupTombstones(group))
      }
    }
    if (records.length > 0) this.ctx.log.info({ partition: this.ctx.partition, tombstones: records.length }, 'expiring offsets')
    return { records, result: undefined }
  }

}
