// The public shapes of the log storage engine. Storage knows nothing of sockets, protocol messages or
// threads: it speaks offsets, opaque RecordBatch bytes and file regions.
import type { FileRegion } from '../domain/file-region.js'

/** A byte range of a segment file (reads hand these out; the server sends them with sendfile). */
export type { FileRegion }

/** Per-partition log settings: the shape, defaults and bounds are config's (the topic-config table). */
export type { CleanupPolicy, CompressionTypeConfig, LogConfig, TimestampType } from '../config/log-config.js'

export interface TopicPartition {
  topic: string
  partition: number
}

export interface AppendOptions {
  /** Written into each batch's partitionLeaderEpoch field. */
  leaderEpoch: number
  /** Wall clock for LogAppendTime and roll/timestamp checks (ms). Defaults to Date.now(). */
  now?: number
}

export interface AppendResult {
  baseOffset: number
  lastOffset: number
  /** The time written into the batches when message.timestamp.type=LogAppendTime, else -1. */
  logAppendTime: number
  logStartOffset: number
  recordCount: number
  /** True when the payload retried a batch of an idempotent producer already written: the offsets are the original ones and nothing was written. */
  duplicate?: boolean
}

export interface ReadOptions {
  /** Exclusive upper bound on offsets returned; capped at the high watermark, or at the LEO with logEnd. */
  maxOffset?: number
  /**
   * Read up to the log end offset instead of the high watermark (Kafka's FetchIsolation.LOG_END): a
   * follower's fetch, and a coordinator loading the partition it now leads.
   */
  logEnd?: boolean
  /** Return at least one whole batch even when it is larger than maxBytes (Kafka's minOneMessage). Default true. */
  minOneBatch?: boolean
  /**
   * read_committed caps maxOffset at the last stable offset and lists the aborted transactions of the
   * returned range; read_uncommitted (the default) does neither.
   */
  isolation?: IsolationLevel
}

export type IsolationLevel = 'read_committed' | 'read_uncommitted'

/** An aborted transaction as Fetch lists it: the consumer drops the producer's batches from firstOffset to its ABORT marker. */
export interface AbortedTransaction {
  producerId: number
  firstOffset: number
}

export interface ReadResult {
  /** Whole batches, in offset order; the first one contains the fetch offset. */
  regions: FileRegion[]
  /** Sum of region lengths. */
  bytes: number
  /**
   * Pins the segment files behind the regions: their descriptors stay open (even if retention or
   * deletion removes the segment meanwhile) until releaseLease(leaseId). 0 when regions is empty.
   */
  leaseId: number
  logStartOffset: number
  logEndOffset: number
  highWatermark: number
  /** The first offset of the oldest open transaction, or the high watermark when none is open. */
  lastStableOffset: number
  /** read_committed only (else empty): aborted transactions overlapping the returned range, by first offset. */
  abortedTransactions: AbortedTransaction[]
}

/** A transaction marker to append (WriteTxnMarkers): one COMMIT or ABORT control batch. */
export interface TxnMarker {
  producerId: number
  producerEpoch: number
  coordinatorEpoch: number
  commit: boolean
  /** The leader epoch written into the marker batch; default the epoch of the latest append. */
  leaderEpoch?: number
}

/** One producer with state on a partition, as DescribeProducers answers. */
export interface ProducerDescription {
  producerId: number
  producerEpoch: number
  /** Sequence of its last batch, -1 when none is remembered. */
  lastSequence: number
  /** Timestamp of its last write (ms), -1 when unknown. */
  lastTimestamp: number
  /** Epoch of the coordinator that wrote its last marker here, -1 when none. */
  coordinatorEpoch: number
  /** First offset of its open transaction here, -1 when none is open. */
  currentTxnStartOffset: number
}

export interface OffsetAndTimestamp {
  offset: number
  timestamp: number
}

/** Snapshot of one partition's offsets and size, for metadata, ListOffsets and DescribeLogDirs. */
export interface PartitionState {
  topic: string
  partition: number
  logStartOffset: number
  logEndOffset: number
  highWatermark: number
  /** First offset of the oldest open transaction, or the high watermark when none is open. */
  lastStableOffset: number
  sizeBytes: number
  segmentCount: number
  /** The data directory (one of log.dirs) holding the partition. */
  logDir?: string
}

/** What a follower's append did (PartitionLog.appendAsFollower). */
export interface FollowerAppendResult {
  /** Batches written (0 for an empty payload). */
  batches: number
  /** Bytes of whole batches written. */
  bytes: number
  /** The last offset written, -1 when nothing was. */
  lastOffset: number
  /** The epoch of the last batch written, -1 when nothing was. */
  lastEpoch: number
  /** The newest epoch of the leader epoch cache, -1 when it has none. */
  latestEpoch: number
  logStartOffset: number
  logEndOffset: number
  highWatermark: number
}

/** A replica's offsets and newest leader epoch, for the replication layer. */
export interface ReplicaLogState {
  logStartOffset: number
  logEndOffset: number
  highWatermark: number
  /** The newest epoch of the leader epoch cache, -1 when it has none. */
  latestEpoch: number
}
