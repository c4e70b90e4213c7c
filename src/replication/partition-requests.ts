// What the replica manager takes and answers, declared here so that replication/ needs nothing above it.
// The handlers' PartitionService and the control plane's ReplicaManagerPort
// (server/handlers/common/ports.ts) ask for the same shapes: the broker hands a ReplicaManager to both,
// and the compiler checks there that it fits them structurally; ports.ts re-exports the shapes it asks for
// unchanged, so each is declared once, here.
import type { ErrorCode } from '../domain/errors.js'
import type { FileRegion } from '../domain/file-region.js'
import type { PartitionState, TopicPartition } from '../storage/types.js'

/** A partition by topic name and index: the log's own shape (storage/types.ts). */
export type TopicPartitionRef = TopicPartition

/** Produce's acks: 0 no answer, 1 once the leader's log has the records, -1 (all) once every in-sync replica has. */
export type RequiredAcks = 0 | 1 | -1

export interface LeaderAppend extends TopicPartitionRef {
  /** One or more RecordBatches; the replica manager owns the buffer from here on. */
  records: Buffer
}

export interface LeaderAppendOptions {
  acks: RequiredAcks
  /** How long acks=all may wait for the in-sync replicas (Produce's timeoutMs). */
  timeoutMs: number
}

export interface ConsumerRead extends TopicPartitionRef {
  offset: number
  maxBytes: number
  isolation?: 'read_uncommitted' | 'read_committed'
  /** Up to the log end offset, not the high watermark (a coordinator loading a partition it now leads). */
  logEnd?: boolean
}

export interface OffsetLookup extends TopicPartitionRef {
  /** -2 earliest, -1 latest, -3 max timestamp, -4 earliest local, else a timestamp in ms. */
  timestamp: number
  isolation?: 'read_uncommitted' | 'read_committed'
}

export interface OffsetForTimestamp {
  /** -1 when no record matches. */
  offset: number
  timestamp: number
  /** The leader epoch of the offset found, -1 with offset -1. */
  leaderEpoch: number
}

export interface RecordsDeletion extends TopicPartitionRef {
  /** Delete records before this offset; -1 means the high watermark. */
  offset: number
}

export interface TxnMarker extends TopicPartitionRef {
  producerId: number
  producerEpoch: number
  coordinatorEpoch: number
  /** COMMIT (true) or ABORT (false). */
  commit: boolean
}

export interface LogDirDescription {
  path: string
  /** NONE, or KAFKA_STORAGE_ERROR for a failed (offline) directory. */
  errorCode: number
  /** Size and free space of the volume; -1 when they cannot be read. */
  totalBytes: bigint
  usableBytes: bigint
  partitions: PartitionState[]
  /** Copies being moved into this directory (AlterReplicaLogDirs). */
  futures: PartitionState[]
}

/** One partition of a follower's fetch from this leader (Fetch with a replica id). */
export interface FollowerRead extends TopicPartitionRef {
  fetchOffset: number
  maxBytes: number
  /** -1: not given. */
  currentLeaderEpoch: number
  /** The epoch of the follower's last batch (-1: none; no divergence check). */
  lastFetchedEpoch: number
}

/** One partition of OffsetForLeaderEpoch. */
export interface EpochLookup extends TopicPartitionRef {
  /** -1: not given. */
  currentLeaderEpoch: number
  leaderEpoch: number
}

/** One partition of a LeaderAndIsr request (already fenced by controller epoch and broker epoch). */
export interface PartitionLeaderAndIsr extends TopicPartitionRef {
  /** Kafka's topic id (base64url). */
  topicId: string
  controllerEpoch: number
  leader: number
  leaderEpoch: number
  isr: readonly number[]
  /** The partition state's version in the store (zkVersion); AlterPartition requests carry it back. */
  partitionEpoch: number
  replicas: readonly number[]
  /** 1 while RECOVERING after an unclean election. */
  leaderRecoveryState: number
}

/** A leader named in a LeaderAndIsr request, at its inter-broker endpoint (where followers fetch). */
export interface LiveLeader {
  brokerId: number
  host: string
  port: number
}

export interface StopReplicaPartition extends TopicPartitionRef {
  /** -2: the topic is being deleted; -1: not given; else the leader epoch the controller knows. */
  leaderEpoch: number
  deletePartition: boolean
}

export interface PartitionErrorCode extends TopicPartitionRef {
  errorCode: ErrorCode
}

/** A follower's read of a led partition: records up to the log end (held until released) and the leader's offsets. */
export interface FollowerPartitionRead {
  /** Whole batches from the fetch offset, sent with sendfile; held until releaseLeases. */
  regions: FileRegion[]
  bytes: number
  logStartOffset: number
  logEndOffset: number
  highWatermark: number
  lastStableOffset: number
  abortedTransactions: readonly { producerId: number; firstOffset: number }[]
  /** Listed in leader.replication.throttled.replicas: the bytes sent count against leader.replication.throttled.rate. */
  throttled?: boolean
  /** The follower's log diverged: truncate to this epoch's end offset (no records then). */
  divergingEpoch?: { leaderEpoch: number; endOffset: number }
  /** The fetching follower is in the partition's ISR after this read. */
  inSync?: boolean
}
