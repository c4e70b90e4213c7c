// The services a handler may use, each as narrow as the handlers need it. A handler sees these through
// its RequestContext and nothing else of the broker, so a handler file shows what it touches and a test
// can hand it fakes. The broker implements them (src/broker/, the partitions src/replication/replica-manager.ts)
// and builds them once.
//
// PartitionService is the seam for replication: handlers append "as leader" and read "up to the high
// watermark"; whether that means one local log (today) or a leader waiting for its in-sync replicas
// (acks=all, delayed produce) is the service's business, not the handlers'.
import type { AclBinding, AclFilter } from '../../../domain/acl.js'
import type { AlterUserScramCredentialsRequest, AlterUserScramCredentialsResult } from '../../../protocol/messages/51-alter-user-scram-credentials.gen.js'
import type { DescribeUserScramCredentialsResult } from '../../../protocol/messages/50-describe-user-scram-credentials.gen.js'
import type { DescribeClientQuotasRequest, EntryData as DescribeClientQuotasEntry } from '../../../protocol/messages/48-describe-client-quotas.gen.js'
import type { AlterClientQuotasRequest, ResponseEntryData as AlterClientQuotasResult } from '../../../protocol/messages/49-alter-client-quotas.gen.js'
import type { BrokerConfig, ConfigValue, ResolvedConfig } from '../../../config/index.js'
import type { GroupCoordinator } from '../../../coordinator/group/group-coordinator.js'
import type { DescribedTopicPartitions } from '../../../coordinator/group/types.js'
import type { ProducerIdAndEpoch } from '../../../coordinator/transaction/types.js'
import type { TransactionCoordinator } from '../../../coordinator/transaction/txn-coordinator.js'
import type { ShareCoordinator } from '../../../coordinator/share/share-coordinator.js'
import type { StateBatch as ShareStateBatch } from '../../../coordinator/share/state-batches.js'
import type { ErrorCode } from '../../../domain/errors.js'
import type { FileRegion } from '../../../domain/file-region.js'
import type { Outcome } from '../../../domain/outcome.js'
import type {
  AbortedTransaction as AbortedTransactionRange,
  IsolationLevel,
  ProducerDescription as ProducerStateView,
  TopicPartition as TopicPartitionRef,
} from '../../../storage/types.js'
import type { BrokerNode, PartitionLeadership, TopicInfo } from '../../../cluster/metadata-image.js'
import type { FetchSessionCache, PartitionWatchPort } from './fetch-sessions.js'

export type { PartitionWatchPort }
import type { LeaderAndIsrRequest } from '../../../protocol/messages/04-leader-and-isr.gen.js'
import type { StopReplicaRequest } from '../../../protocol/messages/05-stop-replica.gen.js'
import type { UpdateMetadataRequest } from '../../../protocol/messages/06-update-metadata.gen.js'
import type { AlterPartitionRequest, AlterPartitionResponse } from '../../../protocol/messages/56-alter-partition.gen.js'

// Handlers import only common/, protocol, domain and config: the coordinators' types they need come through here.
export type { DescribedTopicPartitions, Outcome, ProducerIdAndEpoch }
// One home per type: these shapes are the log's (storage/types.ts) and the metadata image's
// (cluster/metadata-image.ts), under the names handlers use; this file restates none of them.
export type { AbortedTransactionRange, IsolationLevel, ProducerStateView, TopicPartitionRef }
export type { BrokerNode, PartitionLeadership, TopicInfo }
// The replica manager's own request and answer shapes (replication/partition-requests.ts), where the
// handlers ask for exactly those: one declaration, the replica manager's.
export type {
  RequiredAcks,
  LeaderAppend,
  LeaderAppendOptions,
  OffsetForTimestamp,
  RecordsDeletion,
  TxnMarker,
  LogDirDescription,
  FollowerRead,
  EpochLookup,
  LiveLeader,
  StopReplicaPartition,
  PartitionErrorCode,
} from '../../../replication/partition-requests.js'
import type {
  LeaderAppend,
  LeaderAppendOptions,
  OffsetForTimestamp,
  RecordsDeletion,
  TxnMarker,
  LogDirDescription,
  FollowerRead,
  EpochLookup,
  LiveLeader,
  StopReplicaPartition,
  PartitionErrorCode,
} from '../../../replication/partition-requests.js'

// ---------------------------------------------------------------------------------------------------
// Partitions

export interface LeaderAppendResult {
  baseOffset: number
  /** The time written into the batches when message.timestamp.type=LogAppendTime, else -1. */
  logAppendTime: number
  logStartOffset: number
}

export interface ConsumerRead extends TopicPartitionRef {
  offset: number
  /** At most this many bytes, except that a first batch larger than that is returned whole. */
  maxBytes: number
  /** read_committed stops at the last stable offset and lists aborted transactions. Default read_uncommitted. */
  isolation?: IsolationLevel
  /** Up to the log end offset, not the high watermark: a coordinator loading a partition it now leads. */
  logEnd?: boolean
}

export interface PartitionRead {
  /** Whole batches from the fetch offset, sent with sendfile; held until releaseLeases. */
  regions: FileRegion[]
  /** Sum of the regions' lengths. */
  bytes: number
  logStartOffset: number
  logEndOffset: number
  highWatermark: number
  lastStableOffset: number
  /** read_committed only: aborted transactions overlapping the returned range. */
  abortedTransactions: readonly AbortedTransactionRange[]
}

export interface OffsetLookup extends TopicPartitionRef {
  /** -2 earliest, -1 latest, -3 max timestamp, -4 earliest local, else a timestamp in ms. */
  timestamp: number
  /** read_committed: latest (-1) is the last stable offset instead of the high watermark. */
  isolation?: IsolationLevel
}

export interface ReplicaLogState extends TopicPartitionRef {
  sizeBytes: number
  logEndOffset: number
  highWatermark: number
}

export interface FollowerPartitionRead extends PartitionRead {
  logEndOffset: number
  /** Listed in leader.replication.throttled.replicas: the bytes sent count against leader.replication.throttled.rate. */
  throttled?: boolean
  /** The follower's log diverged: truncate to this epoch's end offset (no records then). */
  divergingEpoch?: { leaderEpoch: number; endOffset: number }
  /** The fetching follower is in the partition's ISR after this read (a fetch session reads it again until it is). */
  inSync?: boolean
}


/**
 * The partitions this broker holds (Kafka's ReplicaManager). Every batch method answers one Outcome per
 * item, in order, and sends one message per shard for the whole batch.
 */
export interface PartitionService {
  /**
   * NONE when this broker leads the partition and the client's leader epoch (-1: not given) is current,
   * else UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH (older epoch) or
   * UNKNOWN_LEADER_EPOCH (newer epoch).
   */
  leaderError(topic: string, partition: number, currentLeaderEpoch?: number): ErrorCode
  /**
   * A consumer's read: as leaderError, except that with `fromFollower` (Fetch v11+, KIP-392) a follower of
   * the partition serves it too (up to its own high watermark).
   */
  readError(topic: string, partition: number, currentLeaderEpoch: number, fromFollower: boolean): ErrorCode
  /**
   * KIP-392: the in-sync followers of a partition this broker leads whose log end has reached fetchOffset
   * (where a consumer at fetchOffset may be sent), undefined when this broker does not lead it.
   */
  readReplicaCandidates(topic: string, partition: number, fetchOffset: number): { brokerId: number; logEndOffset: number; lastCaughtUpMs: number }[] | undefined
  /** A followed partition's log as its fetcher last left it; undefined on its leader or when not hosted. */
  followerLog(topic: string, partition: number): { logStartOffset: number; logEndOffset: number; highWatermark: number } | undefined
  /**
   * Appends to partitions this broker leads, stamping its leader epoch into the batches; resolves as
   * `acks` asks. Appends wake the fetches waiting on those partitions.
   */
  appendAsLeader(items: readonly LeaderAppend[], options: LeaderAppendOptions): Promise<Outcome<LeaderAppendResult>[]>
  /** Consumer reads, up to the high watermark (read_committed: the last stable offset). */
  read(items: readonly ConsumerRead[]): Promise<Outcome<PartitionRead>[]>
  /** Lets go of the segments behind reads (once their regions have been sent). */
  releaseLeases(reads: readonly PartitionRead[]): void
  /** A partition's part of a Fetch answer, for the topic's metrics (BytesOutPerSec, Total/FailedFetchRequestsPerSec). */
  countFetched(topic: string, bytes: number, failed: boolean): void
  /**
   * Resolves true when one of the partitions got new records for this reader, false after timeoutMs or
   * at shutdown: for a consumer (the default) when the high watermark moved, for a follower when the log
   * end moved. A change of role or leadership wakes both.
   */
  waitForAppends(partitions: readonly TopicPartitionRef[], timeoutMs: number, reader?: 'consumer' | 'follower'): Promise<boolean>
  listOffsets(items: readonly OffsetLookup[]): Promise<Outcome<OffsetForTimestamp>[]>
  /** Raises the log start offsets; the value is the new log start offset. */
  deleteRecords(items: readonly RecordsDeletion[]): Promise<Outcome<number>[]>
  describeProducers(items: readonly TopicPartitionRef[]): Promise<Outcome<ProducerStateView[]>[]>
  /** Appends transaction markers (COMMIT/ABORT control batches); they wake waiting fetches too. */
  writeTxnMarkers(items: readonly TxnMarker[]): Promise<Outcome<{ offset: number }>[]>
  /** The log dirs with the given partitions (unknown ones left out), or with every partition (null). */
  logDirs(partitions: readonly TopicPartitionRef[] | null): Promise<LogDirDescription[]>
  /** AlterReplicaLogDirs: one error code per item (NONE once the move is under way). */
  alterReplicaLogDirs(items: readonly (TopicPartitionRef & { logDir: string })[]): Promise<number[]>
  /**
   * A follower's fetch (replicaId >= 0) from partitions this broker leads: records up to the log end
   * offset, the follower's position recorded (high watermark, ISR expansion), the diverging epoch when
   * its log went another way. Errors as leaderError, and NOT_LEADER_OR_FOLLOWER for a broker that is
   * not a replica.
   */
  readForFollower(replicaId: number, items: readonly FollowerRead[]): Promise<Outcome<FollowerPartitionRead>[]>
  /** A standing watch for a follower's fetch session over partitions this broker leads (see PartitionWatchPort). */
  watchForFollower(): PartitionWatchPort
  /**
   * A follower's Fetch answer is built: `bytes` of records go out (ReplicationBytesOutPerSec), of which
   * `throttledBytes` for partitions read `throttled` (recorded against leader.replication.throttled.rate).
   */
  countReplicationSent(bytes: number, throttledBytes: number): void
  /**
   * OffsetForLeaderEpoch: the end offset of each epoch in this broker's log; replicaId -2 (debugging)
   * may ask a follower, others need the leader.
   */
  endOffsetsForEpochs(replicaId: number, items: readonly EpochLookup[]): Promise<Outcome<{ leaderEpoch: number; endOffset: number }>[]>
}

// ---------------------------------------------------------------------------------------------------
// Replicas: what the controller's LeaderAndIsr and StopReplica ask of this broker

/** One partition of a LeaderAndIsr request (already fenced by controller epoch and broker epoch). */
export interface PartitionLeaderAndIsr extends TopicPartitionRef {
  /** Kafka's topic id (base64url); the zero UUID when the controller sent none. */
  topicId: string
  controllerEpoch: number
  leader: number
  leaderEpoch: number
  isr: readonly number[]
  /** The partition state's version in the store (zkVersion); AlterPartition requests carry it back. */
  partitionEpoch: number
  replicas: readonly number[]
  addingReplicas: readonly number[]
  removingReplicas: readonly number[]
  /** The replica was just created (a new partition or a new replica of it). */
  isNew: boolean
  /** 1 while RECOVERING after an unclean election. */
  leaderRecoveryState: number
}

/**
 * The replica manager as the control plane drives it (Kafka's ReplicaManager.becomeLeaderOrFollower and
 * stopReplicas). Requests reach it in order, already checked against the controller epoch and this
 * broker's epoch; it answers per partition.
 */
export interface ReplicaManagerPort {
  /**
   * Applies each partition whose leader epoch is newer than the one this broker has (a partition it did
   * not host is created): leader when `leader` is this broker, follower of `leader` otherwise. Answers
   * NONE, or STALE_CONTROLLER_EPOCH for an epoch not newer than the current one (Kafka's answer), or
   * UNKNOWN_TOPIC_OR_PARTITION when this broker is not among the replicas.
   */
  becomeLeaderOrFollower(controllerId: number, controllerEpoch: number, partitions: readonly PartitionLeaderAndIsr[], liveLeaders: readonly LiveLeader[]): Promise<PartitionErrorCode[]>
  /**
   * Stops serving partitions (and deletes their logs with deletePartition), unless the request's leader
   * epoch is older than this broker's (FENCED_LEADER_EPOCH); -2 and -1 always apply.
   */
  stopReplicas(controllerId: number, controllerEpoch: number, partitions: readonly StopReplicaPartition[]): Promise<PartitionErrorCode[]>
}

// ---------------------------------------------------------------------------------------------------
// The control plane: requests between the controller and brokers

/** A controller request's answer: a top-level error (STALE_CONTROLLER_EPOCH, STALE_BROKER_EPOCH) or one per partition. */
export interface ControlAnswer {
  errorCode: number
  partitionErrors: { topic: string; partition: number; errorCode: number }[]
}

/**
 * What LeaderAndIsr, UpdateMetadata, StopReplica (controller -> broker) and AlterPartition,
 * ControlledShutdown (broker -> controller) do on this broker. The first three take requests in the
 * newest message shape (handlers of older versions convert), are applied one at a time in arrival order,
 * and are refused as a whole when their controller epoch is older than the newest seen
 * (STALE_CONTROLLER_EPOCH) or their broker epoch older than this broker's registration
 * (STALE_BROKER_EPOCH). The last two are answered by this broker's controller when it is the active one,
 * else NOT_CONTROLLER.
 */
export interface ControlPlaneService {
  leaderAndIsr(request: LeaderAndIsrRequest): Promise<ControlAnswer>
  updateMetadata(request: UpdateMetadataRequest): Promise<ControlAnswer>
  stopReplica(request: StopReplicaRequest): Promise<ControlAnswer>
  alterPartition(request: AlterPartitionRequest, version: number): Promise<AlterPartitionResponse>
  controlledShutdown(brokerId: number, brokerEpoch: bigint): Promise<{ errorCode: number; remaining: TopicPartitionRef[] }>
  /**
   * ElectLeaders on the active controller: per partition (null: all), an error code and message keyed
   * `${topic}:${partition}`; undefined when this broker is not the controller (NOT_CONTROLLER).
   */
  electLeaders(electionType: number, partitions: readonly TopicPartitionRef[] | null): Promise<Map<string, { errorCode: number; errorMessage: string | null }> | undefined>
  /** AlterPartitionReassignments on the active controller (replicas null: cancel); undefined when not the controller. */
  alterPartitionReassignments(requests: readonly { tp: TopicPartitionRef; replicas: number[] | null }[]): Promise<Map<string, { errorCode: number; errorMessage: string | null }> | undefined>
  /** ListPartitionReassignments on the active controller (partitions null: all); undefined when not the controller. */
  listPartitionReassignments(partitions: readonly TopicPartitionRef[] | null): Promise<OngoingReassignmentView[] | undefined>
}

/** A partition reassignment in progress: its replicas (target and original), those being added and removed. */
export interface OngoingReassignmentView extends TopicPartitionRef {
  replicas: number[]
  addingReplicas: number[]
  removingReplicas: number[]
}

// ---------------------------------------------------------------------------------------------------
// Metadata

/** What the cluster looks like, read-only: brokers, topics and who leads which partition. */
export interface MetadataView {
  readonly nodeId: number
  readonly clusterId: string
  readonly controllerId: number
  /** Every live broker, at the endpoint clients connected through `listenerName` use. */
  brokers(listenerName: string): BrokerNode[]
  /** This broker, at the endpoint clients connected through `listenerName` use. */
  localBroker(listenerName: string): BrokerNode
  topic(name: string): TopicInfo | undefined
  topicById(topicId: string): TopicInfo | undefined
  /** Every topic, by name. */
  topics(): readonly TopicInfo[]
  /** Topics Kafka treats as internal (never auto-created by clients, isInternal in Metadata). */
  isInternalTopic(name: string): boolean
  /** Throws KafkaError(INVALID_TOPIC_EXCEPTION) unless `name` follows Kafka's topic naming rule. */
  validateTopicName(name: string): void
  /** Leader, epoch and replicas of a partition; undefined when it does not exist. */
  partition(topic: string, partition: number): PartitionLeadership | undefined
}

// ---------------------------------------------------------------------------------------------------
// Administration

export interface CreateTopicRequest {
  name: string
  /** -1: num.partitions */
  numPartitions: number
  /** -1: default.replication.factor */
  replicationFactor: number
  /** Manual assignment: partition -> broker ids; replaces numPartitions/replicationFactor. */
  assignments?: { partitionIndex: number; brokerIds: number[] }[]
  configs: Record<string, string | null>
  validateOnly: boolean
  /**
   * How long to wait until every partition has a leader in this broker's metadata (CreateTopics'
   * timeoutMs); 0 answers once the topic is written. Default 30000.
   */
  timeoutMs?: number
}

/** Topic lifecycle. Failures throw KafkaError with Kafka's code and message. */
export interface TopicAdmin {
  /** Creates a topic (or only checks it, validateOnly) and answers it as created. */
  create(req: CreateTopicRequest): Promise<TopicInfo>
  /** Metadata's auto-creation with num.partitions and the broker defaults. */
  autoCreate(name: string): Promise<TopicInfo>
  /**
   * Queues the topic for deletion and waits (up to timeoutMs, default 30000) until it is gone from this
   * broker's metadata: REQUEST_TIMED_OUT after that (it stays queued).
   */
  delete(name: string, timeoutMs?: number): Promise<void>
  /** CreatePartitions: grows a topic to `count` partitions, waiting (timeoutMs) until they have leaders. */
  addPartitions(name: string, count: number, assignments: number[][] | null, validateOnly: boolean, timeoutMs?: number): Promise<void>
  /** Replaces a topic's config overrides (AlterConfigs semantics; incremental callers merge first). */
  setConfigs(name: string, configs: Record<string, string | null>, validateOnly: boolean): Promise<void>
}

/** Which dynamic broker config layer a BROKER resource addresses ('' = cluster default, own id = this broker). */
export type BrokerConfigScope = 'perBroker' | 'clusterDefault'

export interface ConfigService {
  /** The broker's configuration now, dynamic layers applied; a new object after each alteration. */
  readonly broker: BrokerConfig
  /** The dynamic broker configs as stored (canonical name -> string value). */
  dynamicBrokerConfigs(scope: BrokerConfigScope): Readonly<Record<string, string>>
  /**
   * Replaces one dynamic broker layer with `values`, with Kafka's rules for dynamic updates (throws
   * KafkaError INVALID_REQUEST); unless validateOnly, persisted first and then applied to every partition.
   */
  replaceDynamicBrokerConfigs(scope: BrokerConfigScope, values: ReadonlyMap<string, string>, validateOnly: boolean): Promise<void>
}

/** Group configs (GROUP config resources, KIP-848 / KIP-932): the group's overrides over the broker defaults. */
export interface GroupConfigAdmin {
  /** The group's overrides as stored (name -> string); INVALID_REQUEST for an empty name. */
  groupConfigs(group: string): Readonly<Record<string, string>>
  /** Every group config with its effective value and DescribeConfigs source. */
  describe(group: string): ResolvedConfig[]
  /** The effective value of one group config for a group (its override, else the broker default). */
  effective(group: string, name: string): ConfigValue
  /** Replaces the group's overrides, checked with Kafka's GroupConfig rules (INVALID_CONFIG); persisted unless validateOnly. */
  replaceGroupConfigs(group: string, values: ReadonlyMap<string, string>, validateOnly: boolean): Promise<void>
}

// ---------------------------------------------------------------------------------------------------
// Coordinators

/** A coordinator over its internal topic (__consumer_offsets, __transaction_state). */
export interface CoordinatorService<C> {
  readonly topicName: string
  /** The coordinator, creating its topic on first use; rejects (KafkaError) when it cannot be had now. */
  coordinator(): Promise<C>
  /** The coordinator if it already runs; for requests that must not create the topic. */
  readonly current: C | undefined
  /** Whether the internal topic exists (describe and list requests create nothing). */
  topicExists(): boolean
}

export type GroupCoordinatorApi = Pick<
  GroupCoordinator,
  | 'partitionFor'
  | 'joinGroup'
  | 'syncGroup'
  | 'heartbeat'
  | 'leaveGroup'
  | 'commitOffsets'
  | 'txnCommitOffsets'
  | 'fetchOffsets'
  | 'deleteOffsets'
  | 'describeGroups'
  | 'listGroups'
  | 'deleteGroups'
  | 'consumerGroupHeartbeat'
  | 'consumerGroupDescribe'
  | 'shareGroupHeartbeat'
  | 'shareGroupDescribe'
  | 'shareGroupStateChanged'
>

/** OffsetFetch's answer for one group. */
export type OffsetFetchResult = Awaited<ReturnType<GroupCoordinatorApi['fetchOffsets']>>
/** An offset commit's answer for one topic: an error code per partition. */
export type PartitionErrors = Awaited<ReturnType<GroupCoordinatorApi['commitOffsets']>>[number]

export type TransactionCoordinatorApi = Pick<
  TransactionCoordinator,
  'partitionFor' | 'initProducerId' | 'addPartitions' | 'endTxn' | 'describeTransactions' | 'listTransactions'
>

export interface GroupCoordinatorService extends CoordinatorService<GroupCoordinatorApi> {
  /**
   * DeleteTopics: every group's offsets of the deleted partitions are removed (Kafka's
   * onPartitionsDeleted); resolves once their tombstones are written. Nothing to do when no
   * coordinator runs (no __consumer_offsets yet).
   */
  onPartitionsDeleted(partitions: readonly TopicPartitionRef[]): Promise<void>
}

export interface TransactionCoordinatorService extends CoordinatorService<TransactionCoordinatorApi> {
  /** Whether `name` is one of Kafka's transaction state names (Empty, Ongoing, ...). */
  isStateName(name: string): boolean
  /**
   * WriteTxnMarkers: writes markers to partitions this broker leads (NOT_LEADER_OR_FOLLOWER for others),
   * one answer per item; markers in __consumer_offsets also complete the group's pending offsets.
   */
  writeLocalMarkers(items: readonly TxnMarker[]): Promise<{ errorCode: number }[]>
}

/** What the share-state handlers (83-87) call of the share coordinator, one share-partition at a time. */
export type ShareStateCoordinatorApi = Pick<ShareCoordinator, 'partitionFor' | 'initialize' | 'read' | 'write' | 'delete' | 'readSummary'>
export type { ShareStateBatch }

/** The share coordinator over __share_group_state (KIP-932): durable share-partition state. */
export type ShareStateCoordinatorService = CoordinatorService<ShareStateCoordinatorApi>

/** A share-partition of a group, as the share-group offsets APIs name it. */
export interface ShareOffsetRef {
  topic: string
  topicId: string
  partition: number
}

/** One share-partition's answer: an error code, and for reads its start offset (-1: no state). */
export interface ShareOffsetAnswer {
  errorCode: number
  errorMessage: string | null
  /** The share-partition start offset; -1 when it was never initialized (or on an error). */
  startOffset: number
}

/**
 * The share-group offsets APIs' way to share-partition state (KIP-932: DescribeShareGroupOffsets,
 * AlterShareGroupOffsets, DeleteShareGroupOffsets): the share coordinator of each share-partition, here
 * or on another broker, as Kafka's group coordinator reaches it through the persister. One answer per
 * share-partition, in order.
 */
export interface ShareGroupOffsetsService {
  /** Each share-partition's start offset (ReadShareGroupStateSummary). */
  startOffsets(group: string, parts: readonly ShareOffsetRef[]): Promise<ShareOffsetAnswer[]>
  /** Initializes each share-partition again at its start offset with a new state epoch (no in-flight records). */
  reset(group: string, parts: readonly (ShareOffsetRef & { startOffset: number })[]): Promise<ShareOffsetAnswer[]>
  /** Deletes each share-partition's state. */
  remove(group: string, parts: readonly ShareOffsetRef[]): Promise<ShareOffsetAnswer[]>
}

/** Producer ids for idempotent producers (InitProducerId without a transactional id). */
export interface ProducerIdService {
  /** A new id, or with `current` (KIP-360) the same id with its epoch bumped. Throws KafkaError. */
  initProducerId(current: ProducerIdAndEpoch | null): Promise<ProducerIdAndEpoch>
}

// ---------------------------------------------------------------------------------------------------
// Fetch sessions

/** The fetch session cache (KIP-227, Kafka's FetchSessionCache): see ./fetch-sessions.ts. */
export type FetchSessionService = Pick<FetchSessionCache, 'get' | 'create' | 'remove' | 'touch'>

// ---------------------------------------------------------------------------------------------------
// Share partitions (KIP-932): the share-partitions this broker leads and the members' share sessions
// (replication/share/share-partition-manager.ts declares the shapes; ShareFetch and ShareAcknowledge use them).

export type {
  SharePartitionService,
  ShareSession,
  SharePartitionRef,
  ShareAcknowledgeItem,
  ShareFetchPartitionResult,
} from '../../../replication/share/share-partition-manager.js'
export type { AcknowledgementBatch as ShareAcknowledgementBatch } from '../../../replication/share/share-partition.js'

// ---------------------------------------------------------------------------------------------------
// The rest

export interface HandlerLog {
  /** The logger's level (DescribeConfigs' BROKER_LOGGER answer). */
  readonly level: string
  debug(obj: object, msg: string): void
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

/** The client connection a request came on. */
export interface AclCreationOutcome {
  errorCode: number
  errorMessage: string | null
}

/** The authorizer (broker/acls.ts): every handler asks it before acting; disabled, it allows everything. */
export interface AuthorizationService {
  /** authorizer.class.name is set. */
  readonly enabled: boolean
  /** May the connection's principal, from its host, do the operation on the resource. */
  authorize(conn: ClientConnection, operation: number, resourceType: number, name: string): boolean
  /** May the principal do the operation on some resource of the type (KIP-679). */
  authorizeByResourceType(conn: ClientConnection, operation: number, resourceType: number): boolean
  describe(filter: AclFilter): AclBinding[]
  create(bindings: readonly AclBinding[]): Promise<AclCreationOutcome[]>
  /** For each filter, the bindings it matched and removed. */
  delete(filters: readonly AclFilter[]): Promise<AclBinding[][]>
}

/** SCRAM credentials in the cluster metadata (broker/scram-credentials.ts). */
export interface ScramCredentialAdmin {
  describe(users: readonly string[] | null): Promise<DescribeUserScramCredentialsResult[]>
  alter(req: AlterUserScramCredentialsRequest): Promise<AlterUserScramCredentialsResult[]>
}

/** One request's controller mutation quota (controller_mutation_rate, KIP-599). */
export interface ControllerMutationQuota {
  /** The client's bucket is in debt: new-version requests refuse further topics (THROTTLING_QUOTA_EXCEEDED). */
  isExceeded(): boolean
  /** Partitions created or deleted. */
  record(partitions: number): void
  /** The throttle time the response carries (0 when the bucket is not in debt). */
  throttleTimeMs(): number
}

/** Client quotas (broker/client-quota-configs.ts): DescribeClientQuotas, AlterClientQuotas and the mutation quota. */
export interface ClientQuotaAdmin {
  /** The matching entities; throws a KafkaError (INVALID_REQUEST, UNSUPPORTED_VERSION) for a malformed filter. */
  describe(req: DescribeClientQuotasRequest): Promise<DescribeClientQuotasEntry[]>
  alter(req: AlterClientQuotasRequest): Promise<AlterClientQuotasResult[]>
  /** The controller mutation quota of the connection's user and this client-id; null when none applies. */
  controllerMutationQuota(conn: ClientConnection, clientId: string | null): ControllerMutationQuota | null
}

/** One connection's SASL exchange (SaslHandshake, SaslAuthenticate); absent on PLAINTEXT and SSL listeners. */
export interface SaslExchange {
  handshake(mechanism: string, version: number): { errorCode: number; mechanisms: string[] }
  authenticate(authBytes: Buffer): Promise<{ errorCode: number; errorMessage: string | null; authBytes: Buffer; sessionLifetimeMs: bigint }>
}

export interface ClientConnection {
  readonly isClosed: boolean
  /** "User:<name>" (User:ANONYMOUS without authentication). */
  readonly principal: string
  readonly sasl: SaslExchange | undefined
  /** The listener it was accepted on (Metadata answers with that listener's endpoints). */
  readonly listenerName: string
  /** The client's address, without the port (JoinGroup's client host). */
  readonly clientHost: string
}

export interface ApiVersionRange {
  apiKey: number
  minVersion: number
  maxVersion: number
}
