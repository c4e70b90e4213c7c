// The group coordinator as the broker (and library users) call it: one GroupCoordinatorState (the
// state machine of one partition) per partition of __consumer_offsets, run by the CoordinatorRuntime,
// a group living on partition abs(hash(groupId)) % offsets.topic.num.partitions. Classic groups
// (JoinGroup/SyncGroup/Heartbeat) and KIP-848 consumer groups (ConsumerGroupHeartbeat) share the
// offsets APIs; KIP-932 share groups (ShareGroupHeartbeat) keep no offsets here, and the offsets APIs
// answer GROUP_ID_NOT_FOUND for them, as Kafka's ShareGroup does. Every method answers in plain types with Kafka error codes; nothing here knows about
// sockets, protocol versions or the broker's shard threads.
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import type { Clock } from '../runtime/clock.js'
import type { PartitionWriter } from '../runtime/partition-writer.js'
import { CoordinatorRuntime, noRecords, type CoordinatorLogger } from '../runtime/runtime.js'
import { ClassicGroup } from './classic-group.js'
import { assignmentEntries } from './consumer-group-records.js'
import { GroupCoordinatorState } from './group-coordinator-state.js'
import { groupPartition } from './partitioner.js'
import type {
  ConsumerGroupHeartbeatInput,
  ConsumerGroupHeartbeatResult,
  DescribedConsumerGroup,
  DescribedGroup,
  DescribedShareGroup,
  GroupCoordinatorConfig,
  GroupStateName,
  HeartbeatInput,
  JoinGroupInput,
  JoinGroupResult,
  LeaveGroupResult,
  ListedGroup,
  MemberIdentity,
  OffsetCommitInput,
  OffsetDeleteResult,
  OffsetFetchMember,
  OffsetFetchResult,
  PartitionErrors,
  PartitionLag,
  ShareGroupHeartbeatInput,
  ShareGroupHeartbeatResult,
  SyncGroupInput,
  SyncGroupResult,
  TopicsView,
  TxnOffsetCommitInput,
} from './types.js'

export interface GroupCoordinatorOptions {
  config: GroupCoordinatorConfig
  writer: PartitionWriter
  topics: TopicsView
  clock: Clock
  log: CoordinatorLogger
  /** Share-partition state through the share coordinators (Kafka's Persister); absent: nothing initialized. */
  shareStates?: ShareGroupStatePort
}

/**
 * The group coordinator's way to share-partition state (KIP-932, Kafka's Persister as the group
 * coordinator uses it): the broker gives it (broker/coordinators/share-group-states.ts).
 */
export interface ShareGroupStatePort {
  /**
   * InitializeShareGroupState for the share-partitions assigned to a group's members whose state was
   * never initialized (start offset -1: the share-partition's leader takes share.auto.offset.reset on
   * its first load, as Kafka's). Rejects when one could not be initialized.
   */
  initialize(groupId: string, assigned: readonly [topicId: string, partitions: readonly number[]][]): Promise<void>
  /**
   * DeleteShareGroupState for every share-partition state the group has (the group deleted): those named
   * (from its ShareGroupStatePartitionMetadata), or, for a group without that record, every partition.
   */
  deleteGroup(groupId: string, statePartitions: readonly [topicId: string, partitions: readonly number[]][] | undefined): Promise<void>
}

export class GroupCoordinator {
  readonly runtime: CoordinatorRuntime<GroupCoordinatorState>
  readonly config: GroupCoordinatorConfig
  readonly #log: CoordinatorLogger
  readonly #topics: TopicsView
  readonly #shareStates: ShareGroupStatePort | undefined

  constructor(opts: GroupCoordinatorOptions) {
    this.config = opts.config
    this.#log = opts.log
    this.#topics = opts.topics
    this.#shareStates = opts.shareStates
    this.runtime = new CoordinatorRuntime<GroupCoordinatorState>({
      writer: opts.writer,
      clock: opts.clock,
      log: opts.log,
      newStateMachine: (ctx) => new GroupCoordinatorState(ctx, opts.config, opts.topics),
    })
  }

  /** The __consumer_offsets partition that holds the group (Kafka's partitionFor). */
  partitionFor(groupId: string): number {
    return groupPartition(groupId, this.config.offsetsTopicPartitions)
  }

  /** Becomes coordinator of every partition: replays them all (concurrently). */
  async loadAll(): Promise<void> {
    const loads = []
    for (let p = 0; p < this.config.offsetsTopicPartitions; p++) loads.push(this.runtime.load(p))
    const results = await Promise.allSettled(loads)
    const failed = results.find((r) => r.status === 'rejected')
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
  }

  close(): void {
    this.runtime.close()
  }

  /** Turns anything an operation threw into an error code; unexpected errors are logged as bugs. */
  private codeOf(err: unknown, op: string): ErrorCode {
    if (err instanceof KafkaError) return err.code
    this.#log.error({ op, err: (err as Error)?.stack ?? String(err) }, 'group coordinator operation failed unexpectedly')
    return ErrorCode.UNKNOWN_SERVER_ERROR
  }

  async joinGroup(req: JoinGroupInput): Promise<JoinGroupResult> {
    const partition = this.partitionFor(req.groupId)
    try {
      // An empty consumer group with this id gives way first (its tombstones replayed), then the join.
      await this.runtime.write(partition, 'join-group-convert', (s) => s.emptyConsumerGroupTombstones(req.groupId))
      return await this.runtime.write(partition, 'join-group', (s) => s.joinGroup(req))
    } catch (err) {
      return ClassicGroup.joinError(req.memberId, this.codeOf(err, 'join-group'))
    }
  }

  async syncGroup(req: SyncGroupInput): Promise<SyncGroupResult> {
    try {
      return await this.runtime.write(this.partitionFor(req.groupId), 'sync-group', (s) => s.groupMetadata.syncGroup(req))
    } catch (err) {
      return { errorCode: this.codeOf(err, 'sync-group'), protocolType: null, protocolName: null, assignment: Buffer.alloc(0) }
    }
  }

  async heartbeat(req: HeartbeatInput): Promise<ErrorCode> {
    try {
      return await this.runtime.write(this.partitionFor(req.groupId), 'heartbeat', (s) => s.groupMetadata.heartbeat(req))
    } catch (err) {
      return this.codeOf(err, 'heartbeat')
    }
  }

  async leaveGroup(groupId: string, members: MemberIdentity[]): Promise<LeaveGroupResult> {
    try {
      return await this.runtime.write(this.partitionFor(groupId), 'leave-group', (s) => s.groupMetadata.leaveGroup(groupId, members))
    } catch (err) {
      return { errorCode: this.codeOf(err, 'leave-group'), members: [] }
    }
  }

  /** ConsumerGroupHeartbeat (KIP-848): join, heartbeat, leave; answers with the member's assignment. */
  async consumerGroupHeartbeat(req: ConsumerGroupHeartbeatInput): Promise<ConsumerGroupHeartbeatResult> {
    try {
      return await this.runtime.write(this.partitionFor(req.groupId), 'consumer-group-heartbeat', (s) =>
        // A share group's id is not a consumer group's (Kafka: "Group X is not a consumer group.").
        s.shareGroups.group(req.groupId) !== undefined
          ? noRecords({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: `Group ${req.groupId} is not a consumer group.`, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null })
          : s.consumerGroups.heartbeat(req),
      )
    } catch (err) {
      return { errorCode: this.codeOf(err, 'consumer-group-heartbeat'), errorMessage: null, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null }
    }
  }

  /** ConsumerGroupDescribe: one answer per group id, GROUP_ID_NOT_FOUND for those that are not consumer groups. */
  async consumerGroupDescribe(groupIds: string[]): Promise<DescribedConsumerGroup[]> {
    return Promise.all(
      groupIds.map(async (groupId) => {
        try {
          return await this.runtime.read(this.partitionFor(groupId), (s) => s.consumerGroups.describe(groupId))
        } catch (err) {
          return { groupId, errorCode: this.codeOf(err, 'consumer-group-describe'), errorMessage: null, groupState: '', groupEpoch: 0, assignmentEpoch: 0, assignorName: '', members: [] }
        }
      }),
    )
  }

  /** ShareGroupHeartbeat (KIP-932): join, heartbeat, leave; answers with the member's assignment. */
  async shareGroupHeartbeat(req: ShareGroupHeartbeatInput): Promise<ShareGroupHeartbeatResult> {
    try {
      const p = this.partitionFor(req.groupId)
      const res = await this.runtime.write(p, 'share-group-heartbeat', (s) => s.shareGroups.heartbeat(req))
      // The member's share-partitions get their state initialized before it hears of them, as Kafka's
      // coordinator initializes them before assigning: the partitions' leaders serve no other.
      // Those not yet recorded as initialized are recorded as initializing first, and as initialized after
      // (ShareGroupStatePartitionMetadata), so the group's state can always be found again.
      if (this.#shareStates !== undefined && res.errorCode === ErrorCode.NONE && res.memberEpoch > 0) {
        try {
          const todo = await this.runtime.write(p, 'share-group-state-initializing', (s) => {
            const member = s.shareGroups.group(req.groupId)?.members.get(req.memberId)?.assignedPartitions
            return s.shareGroups.stateInitializing(req.groupId, member === undefined ? [] : assignmentEntries(member))
          })
          if (todo.length > 0) {
            await this.#shareStates.initialize(req.groupId, todo)
            await this.runtime.write(p, 'share-group-state-initialized', (s) => s.shareGroups.stateInitialized(req.groupId, todo))
          }
        } catch (err) {
          // Tried again on the next heartbeat; meanwhile its fetches of those partitions are refused.
          this.#log.warn({ groupId: req.groupId, err: (err as Error)?.message }, 'could not initialize the share-partitions of a share group member')
        }
      }
      return res
    } catch (err) {
      return { errorCode: this.codeOf(err, 'share-group-heartbeat'), errorMessage: null, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null }
    }
  }

  /**
   * Records share-partition state set outside a heartbeat (AlterShareGroupOffsets initialized it, or
   * DeleteShareGroupOffsets deleted whole topics of it) in the group's ShareGroupStatePartitionMetadata.
   */
  async shareGroupStateChanged(groupId: string, change: { initialized?: readonly [topicId: string, partitions: readonly number[]][]; deletedTopicIds?: readonly string[] }): Promise<void> {
    const p = this.partitionFor(groupId)
    if (change.initialized !== undefined && change.initialized.length > 0) await this.runtime.write(p, 'share-group-state-initialized', (s) => s.shareGroups.stateInitialized(groupId, change.initialized!))
    if (change.deletedTopicIds !== undefined && change.deletedTopicIds.length > 0) await this.runtime.write(p, 'share-group-state-deleted', (s) => s.shareGroups.stateTopicsDeleted(groupId, change.deletedTopicIds!))
  }

  /** ShareGroupDescribe: one answer per group id, GROUP_ID_NOT_FOUND for those that are not share groups. */
  async shareGroupDescribe(groupIds: string[]): Promise<DescribedShareGroup[]> {
    return Promise.all(
      groupIds.map(async (groupId) => {
        try {
          return await this.runtime.read(this.partitionFor(groupId), (s) => s.shareGroups.describe(groupId))
        } catch (err) {
          return { groupId, errorCode: this.codeOf(err, 'share-group-describe'), errorMessage: null, groupState: '', groupEpoch: 0, assignmentEpoch: 0, assignorName: '', members: [] }
        }
      }),
    )
  }

  async commitOffsets(req: OffsetCommitInput): Promise<PartitionErrors[]> {
    try {
      return await this.runtime.write(this.partitionFor(req.groupId), 'commit-offsets', (s) =>
        s.shareGroups.group(req.groupId) !== undefined
          ? noRecords(req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.GROUP_ID_NOT_FOUND as ErrorCode })) })))
          : s.offsetMetadata.commitOffsets(req),
      )
    } catch (err) {
      const code = this.codeOf(err, 'commit-offsets')
      return req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })) }))
    }
  }

  /**
   * TxnOffsetCommit: written now, visible to fetchOffsets once the transaction's COMMIT marker reaches
   * the group's partition (onTxnCompleted or replay). A sequence refused by the partition's producer
   * state is retried once with the sequence the state machine falls back to.
   */
  async txnCommitOffsets(req: TxnOffsetCommitInput): Promise<PartitionErrors[]> {
    const partition = this.partitionFor(req.groupId)
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.runtime.write(partition, 'txn-commit-offsets', (s) =>
          s.shareGroups.group(req.groupId) !== undefined
            ? noRecords(req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.GROUP_ID_NOT_FOUND as ErrorCode })) })))
            : s.offsetMetadata.txnCommitOffsets(req),
        )
      } catch (err) {
        const code = this.codeOf(err, 'txn-commit-offsets')
        if (attempt === 0 && (code === ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER || code === ErrorCode.UNKNOWN_PRODUCER_ID)) continue
        return req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: code })) }))
      }
    }
  }

  /** A transaction marker of producerId was written to partition: apply (commit) or drop (abort) its pending offsets. */
  async onTxnCompleted(partition: number, producerId: number, commit: boolean): Promise<void> {
    await this.runtime.write(partition, 'txn-completed', (s) => s.offsetMetadata.onTxnCompleted(producerId, commit))
  }

  /**
   * Committed offsets of a group; topics null = all of them. Missing ones are -1. requireStable:
   * UNSTABLE_OFFSET_COMMIT for offsets a transaction holds. member: the consumer-group member asking
   * (OffsetFetch v9), checked against its epoch.
   */
  async fetchOffsets(groupId: string, topics: { name: string; partitions: number[] }[] | null, requireStable = false, member?: OffsetFetchMember): Promise<OffsetFetchResult> {
    try {
      return await this.runtime.read(this.partitionFor(groupId), (s) =>
        s.shareGroups.group(groupId) !== undefined ? { errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] } : s.offsetMetadata.fetchOffsets(groupId, topics, requireStable, member),
      )
    } catch (err) {
      return { errorCode: this.codeOf(err, 'fetch-offsets'), topics: [] }
    }
  }

  async deleteOffsets(groupId: string, topics: { name: string; partitions: number[] }[]): Promise<OffsetDeleteResult> {
    try {
      return await this.runtime.write(this.partitionFor(groupId), 'delete-offsets', (s) =>
        s.shareGroups.group(groupId) !== undefined ? noRecords({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] }) : s.offsetMetadata.deleteOffsets(groupId, topics),
      )
    } catch (err) {
      return { errorCode: this.codeOf(err, 'delete-offsets'), topics: [] }
    }
  }

  async describeGroups(groupIds: string[]): Promise<DescribedGroup[]> {
    return Promise.all(
      groupIds.map(async (groupId) => {
        try {
          return await this.runtime.read(this.partitionFor(groupId), (s) => s.groupMetadata.describeGroup(groupId))
        } catch (err) {
          return { groupId, errorCode: this.codeOf(err, 'describe-groups'), state: 'Dead' as GroupStateName, protocolType: '', protocolData: '', members: [] }
        }
      }),
    )
  }

  /** Every group this broker coordinates, optionally only those in the given states (case-insensitive). */
  async listGroups(statesFilter: string[] = []): Promise<{ errorCode: ErrorCode; groups: ListedGroup[] }> {
    const wanted = new Set(statesFilter.map((s) => s.toLowerCase()))
    const groups: ListedGroup[] = []
    for (const [partition] of this.runtime.activeStateMachines()) {
      const listed = await this.runtime.read(partition, (s) => s.listGroups()).catch(() => [] as ListedGroup[])
      for (const g of listed) if (wanted.size === 0 || wanted.has(g.state.toLowerCase())) groups.push(g)
    }
    return { errorCode: this.runtime.anyLoading() ? ErrorCode.COORDINATOR_LOAD_IN_PROGRESS : ErrorCode.NONE, groups }
  }

  async deleteGroups(groupIds: string[]): Promise<{ groupId: string; errorCode: ErrorCode }[]> {
    const byPartition = new Map<number, string[]>()
    for (const id of new Set(groupIds)) {
      const p = this.partitionFor(id)
      byPartition.set(p, [...(byPartition.get(p) ?? []), id])
    }
    const answers = new Map<string, ErrorCode>()
    await Promise.all(
      [...byPartition].map(async ([p, wanted]) => {
        let ids = wanted
        try {
          // An empty share group's share-partition state goes first (Kafka's persister.deleteState), so a
          // group made again under the id starts afresh; a group whose state stays is not deleted.
          if (this.#shareStates !== undefined) {
            const shares = await this.runtime.read(p, (s) => ids.flatMap((id) => {
              const g = s.shareGroups.group(id)
              return g !== undefined && s.shareGroups.deleteGroupError(g) === ErrorCode.NONE ? [{ id, statePartitions: s.shareGroups.statePartitions(id) }] : []
            }))
            const failed = new Set<string>()
            await Promise.all(shares.map(({ id, statePartitions }) => this.#shareStates!.deleteGroup(id, statePartitions).catch((err: unknown) => {
              failed.add(id)
              answers.set(id, this.codeOf(err, 'delete-share-group-state'))
            })))
            ids = ids.filter((id) => !failed.has(id))
            if (ids.length === 0) return
          }
          const results = await this.runtime.write(p, 'delete-groups', (s) => s.deleteGroups(ids))
          for (const r of results) answers.set(r.groupId, r.errorCode)
        } catch (err) {
          const code = this.codeOf(err, 'delete-groups')
          for (const id of ids) answers.set(id, code)
        }
      }),
    )
    return groupIds.map((groupId) => ({ groupId, errorCode: answers.get(groupId)! }))
  }

  /**
   * Kafka's onPartitionsDeleted (DeleteTopics): tombstones for every group's offsets of those
   * partitions, on every partition of __consumer_offsets this broker coordinates. Resolves with the
   * number of offsets removed; a partition that cannot write now (still loading) catches up when loaded.
   */
  async onPartitionsDeleted(partitions: readonly { topic: string; partition: number }[]): Promise<number> {
    let removed = 0
    await Promise.all(
      this.runtime.activeStateMachines().map(async ([p]) => {
        try {
          removed += await this.runtime.write(p, 'on-partitions-deleted', (s) => s.onPartitionsDeleted(partitions))
        } catch (err) {
          this.#log.error({ partition: p, err: (err as Error)?.message }, 'could not delete the offsets of deleted partitions')
        }
      }),
    )
    return removed
  }

  /**
   * Consumer lag of a group: for every partition it has committed an offset for, the committed
   * offset against the partition's log end offset and high watermark (lag = HW - committed).
   */
  async groupLag(groupId: string): Promise<PartitionLag[]> {
    const committed = await this.runtime.read(this.partitionFor(groupId), (s) => s.offsetMetadata.committedOffsets(groupId))
    committed.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1))
    const ends = await this.#topics.offsets(committed.map((c) => ({ topic: c.topic, partition: c.partition })))
    return committed.map((c, i) => {
      const end = ends[i]
      const committedOffset = Number(c.offset)
      if (end === null || end === undefined) return { topic: c.topic, partition: c.partition, committedOffset, logEndOffset: -1, highWatermark: -1, lag: -1 }
      return { topic: c.topic, partition: c.partition, committedOffset, logEndOffset: end.logEndOffset, highWatermark: end.highWatermark, lag: Math.max(0, end.highWatermark - committedOffset) }
    })
  }
}
