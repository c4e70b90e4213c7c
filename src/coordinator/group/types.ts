// The group coordinator's operations in plain types: handlers translate the wire messages (any version)
// into these and back, so the state machine never depends on a protocol version.
import type { ErrorCode } from '../../domain/errors.js'

export interface GroupCoordinatorConfig {
  /** offsets.topic.num.partitions */
  offsetsTopicPartitions: number
  /** offsets.retention.minutes, in ms */
  offsetsRetentionMs: number
  /** offsets.retention.check.interval.ms */
  offsetsRetentionCheckIntervalMs: number
  /** group.initial.rebalance.delay.ms */
  initialRebalanceDelayMs: number
  /** group.min.session.timeout.ms */
  minSessionTimeoutMs: number
  /** group.max.session.timeout.ms */
  maxSessionTimeoutMs: number
  /** group.max.size */
  maxGroupSize: number
  /** offset.metadata.max.bytes */
  offsetMetadataMaxBytes: number
  /** How long a new member may take to complete its first join (Kafka: 5 minutes). */
  newMemberJoinTimeoutMs?: number
  /** group.consumer.session.timeout.ms (KIP-848 groups); default 45000. */
  consumerGroupSessionTimeoutMs?: number
  /** group.consumer.heartbeat.interval.ms; default 5000. */
  consumerGroupHeartbeatIntervalMs?: number
  /** group.consumer.max.size; default unlimited. */
  consumerGroupMaxSize?: number
  /** group.consumer.assignors as built-in names, the first the default; default ['uniform', 'range']. */
  consumerGroupAssignors?: readonly string[]
  /**
   * A consumer group's own session timeout and heartbeat interval (the group configs
   * consumer.session.timeout.ms / consumer.heartbeat.interval.ms, else the broker's), read at each use.
   */
  consumerGroupConfig?: (groupId: string) => { sessionTimeoutMs: number; heartbeatIntervalMs: number }
  /** group.share.session.timeout.ms (KIP-932 share groups); default 45000. */
  shareGroupSessionTimeoutMs?: number
  /** group.share.heartbeat.interval.ms; default 5000. */
  shareGroupHeartbeatIntervalMs?: number
  /** group.share.max.size; default 200. */
  shareGroupMaxSize?: number
  /** A share group's own session timeout and heartbeat interval (the group configs share.session.timeout.ms / share.heartbeat.interval.ms, else the broker's), read at each use. */
  shareGroupConfig?: (groupId: string) => { sessionTimeoutMs: number; heartbeatIntervalMs: number }
}

export interface ProtocolMetadata {
  name: string
  metadata: Buffer
}

export interface JoinGroupInput {
  groupId: string
  /** '' for a member joining for the first time. */
  memberId: string
  groupInstanceId: string | null
  protocolType: string
  protocols: ProtocolMetadata[]
  sessionTimeoutMs: number
  /** JoinGroup v0 has none: pass the session timeout. */
  rebalanceTimeoutMs: number
  clientId: string
  clientHost: string
  /** JoinGroup v4+: a member without an id first gets MEMBER_ID_REQUIRED with its new id (KIP-394). */
  requireKnownMemberId: boolean
}

export interface JoinGroupMember {
  memberId: string
  groupInstanceId: string | null
  metadata: Buffer
}

export interface JoinGroupResult {
  errorCode: ErrorCode
  generationId: number
  protocolType: string | null
  protocolName: string | null
  leader: string
  memberId: string
  /** Filled for the leader only: every member's metadata for the selected protocol. */
  members: JoinGroupMember[]
}

export interface SyncGroupInput {
  groupId: string
  generationId: number
  memberId: string
  groupInstanceId: string | null
  /** v5+; null skips the check. */
  protocolType: string | null
  protocolName: string | null
  /** The leader's assignment; empty from followers. */
  assignments: { memberId: string; assignment: Buffer }[]
}

export interface SyncGroupResult {
  errorCode: ErrorCode
  protocolType: string | null
  protocolName: string | null
  assignment: Buffer
}

export interface HeartbeatInput {
  groupId: string
  generationId: number
  memberId: string
  groupInstanceId: string | null
}

export interface MemberIdentity {
  /** '' to name a static member by its instance id alone (admin removal). */
  memberId: string
  groupInstanceId: string | null
}

export interface LeaveGroupResult {
  errorCode: ErrorCode
  members: (MemberIdentity & { errorCode: ErrorCode })[]
}

export interface OffsetCommitPartitionInput {
  partitionIndex: number
  committedOffset: bigint
  committedLeaderEpoch: number
  committedMetadata: string | null
}

export interface OffsetCommitInput {
  groupId: string
  /** The generation (classic groups) or member epoch (consumer groups); -1 from outside the group's membership (manual assignment). */
  generationId: number
  memberId: string
  groupInstanceId: string | null
  /** OffsetCommit v2-4 retention; -1 = the broker's offsets.retention.minutes. */
  retentionTimeMs: number
  /**
   * The request can carry a KIP-848 member epoch (OffsetCommit v9+); members of a consumer group that
   * commit with an older version get UNSUPPORTED_VERSION, as in Kafka. Default false.
   */
  consumerProtocolCapable?: boolean
  topics: { name: string; partitions: OffsetCommitPartitionInput[] }[]
}

/** TxnOffsetCommit: offsets that become visible when the producer's transaction commits. */
export interface TxnOffsetCommitInput {
  transactionalId: string
  groupId: string
  producerId: number
  producerEpoch: number
  /** -1 / '' / null when the producer does not send group metadata (before v3, KIP-447). */
  generationId: number
  memberId: string
  groupInstanceId: string | null
  topics: { name: string; partitions: OffsetCommitPartitionInput[] }[]
}

export interface PartitionErrors {
  name: string
  partitions: { partitionIndex: number; errorCode: ErrorCode }[]
}

export interface FetchedOffset {
  partitionIndex: number
  /** -1 when nothing is committed. */
  committedOffset: bigint
  committedLeaderEpoch: number
  metadata: string
  errorCode: ErrorCode
}

export interface OffsetFetchResult {
  errorCode: ErrorCode
  topics: { name: string; partitions: FetchedOffset[] }[]
}

export type GroupStateName = 'Empty' | 'PreparingRebalance' | 'CompletingRebalance' | 'Stable' | 'Dead'

/** Who may read a group's offsets (OffsetFetch v9 names a consumer-group member and its epoch). */
export interface OffsetFetchMember {
  /** null: not a member (an admin, or a client outside the group). */
  memberId: string | null
  /** -1 when not a member. */
  memberEpoch: number
}

export interface DescribedMember {
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  metadata: Buffer
  assignment: Buffer
}

export interface DescribedGroup {
  groupId: string
  errorCode: ErrorCode
  state: GroupStateName
  protocolType: string
  /** The selected protocol when Stable, else ''. */
  protocolData: string
  members: DescribedMember[]
}

export interface ListedGroup {
  groupId: string
  protocolType: string
  /** Kafka's state names: the classic ones, or a consumer group's Empty/Assigning/Reconciling/Stable. */
  state: string
  /** ListGroups v5: 'classic', 'consumer' or 'share'. */
  groupType: 'classic' | 'consumer' | 'share'
}

// ---- KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe) -------------------------

export interface TopicPartitionsById {
  topicId: string
  partitions: number[]
}

export interface ConsumerGroupHeartbeatInput {
  groupId: string
  /** '' for a member joining without an id (v0): the coordinator makes one. */
  memberId: string
  /** 0 to join, -1 to leave, -2 for a static member leaving for now, else the member's epoch. */
  memberEpoch: number
  instanceId: string | null
  rackId: string | null
  /** -1: unchanged. */
  rebalanceTimeoutMs: number
  /** null: unchanged. */
  subscribedTopicNames: string[] | null
  subscribedTopicRegex: string | null
  serverAssignor: string | null
  /** The partitions the member owns; null: unchanged. */
  topicPartitions: TopicPartitionsById[] | null
  clientId: string
  clientHost: string
}

export interface ConsumerGroupHeartbeatResult {
  errorCode: ErrorCode
  errorMessage: string | null
  memberId: string | null
  memberEpoch: number
  heartbeatIntervalMs: number
  /** The partitions the member may use now; null when the member already has them. */
  assignment: TopicPartitionsById[] | null
}

export interface DescribedTopicPartitions {
  topicId: string
  topicName: string
  partitions: number[]
}

export interface DescribedConsumerGroupMember {
  memberId: string
  instanceId: string | null
  rackId: string | null
  memberEpoch: number
  clientId: string
  clientHost: string
  subscribedTopicNames: string[]
  subscribedTopicRegex: string | null
  assignment: DescribedTopicPartitions[]
  targetAssignment: DescribedTopicPartitions[]
}

export interface DescribedConsumerGroup {
  groupId: string
  errorCode: ErrorCode
  errorMessage: string | null
  groupState: string
  groupEpoch: number
  assignmentEpoch: number
  assignorName: string
  members: DescribedConsumerGroupMember[]
}

// ---- KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe) ----------------------------------

export interface ShareGroupHeartbeatInput {
  groupId: string
  /** Chosen by the client (ShareGroupHeartbeat v1); '' is refused. */
  memberId: string
  /** 0 to join, -1 to leave, else the member's epoch. */
  memberEpoch: number
  rackId: string | null
  /** null: unchanged. */
  subscribedTopicNames: string[] | null
  clientId: string
  clientHost: string
}

export interface ShareGroupHeartbeatResult {
  errorCode: ErrorCode
  errorMessage: string | null
  memberId: string | null
  memberEpoch: number
  heartbeatIntervalMs: number
  /** The member's partitions (topic ids); null when unchanged since its last heartbeat. */
  assignment: TopicPartitionsById[] | null
}

export interface DescribedShareGroupMember {
  memberId: string
  rackId: string | null
  memberEpoch: number
  clientId: string
  clientHost: string
  subscribedTopicNames: string[]
  assignment: DescribedTopicPartitions[]
}

export interface DescribedShareGroup {
  groupId: string
  errorCode: ErrorCode
  errorMessage: string | null
  groupState: string
  groupEpoch: number
  assignmentEpoch: number
  assignorName: string
  members: DescribedShareGroupMember[]
  /**
   * Not on the wire: the topic ids whose share-partition state the group has (initialized or being
   * initialized, ShareGroupStatePartitionMetadata); null when the group has no such record.
   */
  stateTopicIds?: string[] | null
}

export interface OffsetDeleteResult {
  errorCode: ErrorCode
  topics: PartitionErrors[]
}

/** One partition's consumer lag: how far the committed offset trails the high watermark. */
export interface PartitionLag {
  topic: string
  partition: number
  committedOffset: number
  logEndOffset: number
  highWatermark: number
  /** highWatermark - committedOffset, never negative; -1 when the partition no longer exists. */
  lag: number
}

/** What the coordinator needs to know about topics (a port; the broker implements it). */
export interface TopicsView {
  /** Number of partitions of a topic, undefined when it does not exist. */
  partitionCount(topic: string): number | undefined
  /** A topic's id (Kafka's base64url Uuid), undefined when it does not exist. */
  topicId(topic: string): string | undefined
  /** The name of the topic with this id, undefined when none has it. */
  topicName(topicId: string): string | undefined
  /** Log end offset and high watermark per partition; null for a partition that does not exist. */
  offsets(partitions: readonly { topic: string; partition: number }[]): Promise<({ logEndOffset: number; highWatermark: number } | null)[]>
}
