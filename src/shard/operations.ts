// The shard operations, defined once. Each entry of SHARD_OPERATIONS is one thing the main thread can ask
// of a shard: the type of its arguments, the type of its answer and the code that runs on the shard's
// thread. The rest is derived from the table, as ApiVersions is from the handler table:
// - the message (messages.ts): an operation travels as its name and its arguments (ShardOp);
// - the router's typed calls: ShardRouter.call(name, items) for partition operations and
//   callShard(shard, name, args) for shard operations, with thin named wrappers (append, read, ...);
// - the executor's dispatch: it looks the name up here and applies the entry.
// Adding an operation is adding an entry (a named wrapper on the router is optional).
//
// Arguments reach a worker shard by structured clone, so they are plain data; the router sends the
// caller's item objects as they are (no copy), so a caller must not change an item until it is answered.
// Test-only operations are not here: see test-hooks.ts.

import { ErrorCode } from '../domain/errors.js'
import { fsyncDir } from '../storage/durability.js'
import type { CleanResult, EpochEndOffset } from '../storage/index.js'
import type { LogManager, PartitionLog } from '../storage/index.js'
import type {
  AppendResult, FollowerAppendResult, IsolationLevel, LogConfig, OffsetAndTimestamp, PartitionState, ProducerDescription, ReadResult, ReplicaLogState, TopicPartition,
} from '../storage/types.js'
import type { ShardInfo, ShardLoad } from './messages.js'

/** What an operation sees of the shard it runs on (ShardExecutor). */
export interface ShardContext {
  readonly shardIndex: number
  readonly logs: LogManager
  /** The partition's log; throws UNKNOWN_TOPIC_OR_PARTITION when this shard hosts no such partition. */
  log(topic: string, partition: number): PartitionLog
  info(): ShardInfo
  /**
   * Brings back a data directory taken offline by a full disk (LogManager.reopenLogDir), logging each
   * partition whose recovery repaired anything; answers what was opened. Throws when it cannot.
   */
  reopenLogDir(logDir: string): ShardLoad
  /** Flushes, checkpoints and closes the shard's logs; the shard refuses further work. Idempotent. */
  close(): Promise<void>
}

interface OperationBase<A, R> {
  /**
   * Runs on the owning shard's thread, in the order the operations were sent. Throw a KafkaError for a
   * Kafka error answer. A returned promise is awaited before the next operation runs, of this batch or
   * of a later one (truncate, truncateFullyAndStartAt, moveAside, completeMove and close return one),
   * unless the operation is a background one.
   */
  readonly apply: (shard: ShardContext, args: A) => R | Promise<R>
  /** Also runs on a closed shard (close itself); other operations then answer KAFKA_STORAGE_ERROR. */
  readonly whenClosed?: boolean
  /** The shard runs nothing else until it completes (a swap that no append may fall into). */
  readonly exclusive?: boolean
  /** Its promise does not hold back the operations sent after it (a log cleaner pass, which yields between slices, must not stall appends and reads). */
  readonly background?: boolean
}

/** An operation on one partition: the router sends each item to the shard that owns its partition. */
export interface PartitionOperation<A extends TopicPartition, R> extends OperationBase<A, R> {
  readonly target: 'partition'
  /** The answer for a partition id outside [0, 2^31-1], checked by the router (default UNKNOWN_TOPIC_OR_PARTITION). */
  readonly invalidPartition?: ErrorCode
  /**
   * args.records is a record buffer whose ownership passes to the router: frame-pool memory is pinned
   * until the shard answers, a Buffer that owns its memory is transferred to a worker, any other is copied.
   */
  readonly carriesRecords?: boolean
}

/** An operation on a shard as a whole: the caller names the shard. */
export interface ShardOperation<A, R> extends OperationBase<A, R> {
  readonly target: 'shard'
}

// Entries are used type-erased; onPartition and onShard check each one's types where it is written.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyPartitionOperation = PartitionOperation<any, unknown>
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOperation = AnyPartitionOperation | ShardOperation<any, unknown>
export type OperationTable = Readonly<Record<string, AnyOperation>>

/** An entry for a partition operation; A and R are checked here, where the entry is written. */
export function onPartition<A extends TopicPartition, R>(
  apply: (shard: ShardContext, args: A) => R | Promise<R>,
  opts: { invalidPartition?: ErrorCode; carriesRecords?: A extends { records: Uint8Array } ? true : never; exclusive?: boolean; background?: boolean } = {},
): PartitionOperation<A, R> {
  return { target: 'partition', apply, ...opts }
}

/** An entry for a shard operation. */
export function onShard<A, R>(apply: (shard: ShardContext, args: A) => R | Promise<R>, opts: { whenClosed?: boolean } = {}): ShardOperation<A, R> {
  return { target: 'shard', apply, ...opts }
}

// ---- Argument and answer types (the router's public item types) ----

export interface CreatePartitionItem extends TopicPartition {
  overrides?: Partial<LogConfig>
  /** The data directory to create it in (one of log.dirs); default the one with the fewest partitions. */
  logDir?: string
}

export interface MoveItem extends TopicPartition {
  /** The data directory to move the partition into. */
  logDir: string
}

/** A shard's data directories: which are offline (and of those, which for a full disk), and its partitions in each online one. */
export interface LogDirStatus {
  offline: string[]
  offlineForSpace: string[]
  partitionCounts: [string, number][]
}

export interface UpdateConfigItem extends TopicPartition {
  overrides: Partial<LogConfig>
}

export interface AppendItem extends TopicPartition {
  /** Ownership passes to the router (see carriesRecords); a worker shard receives it as a Uint8Array. */
  records: Buffer
  leaderEpoch: number
}

export interface ReadItem extends TopicPartition {
  offset: number
  maxBytes: number
  maxOffset?: number
  minOneBatch?: boolean
  /** read_committed caps the read at the last stable offset and lists aborted transactions; default read_uncommitted. */
  isolation?: IsolationLevel
  /** Up to the log end offset instead of the high watermark (a coordinator loading the partition it leads). */
  logEnd?: boolean
}

export interface ShardReadResult extends ReadResult {
  /** The shard holding the read's lease (for releaseLeases). */
  shard: number
}

/** A follower's fetch of one partition from this leader (readForFollower). */
export interface FollowerReadItem extends TopicPartition {
  offset: number
  maxBytes: number
  /** The epoch of the follower's last fetched batch (Fetch v12+), -1 when not given. */
  lastFetchedEpoch: number
  /** The leader's new high watermark, raised before the read (saves a round trip); omitted: unchanged. */
  highWatermark?: number
}

export interface ShardFollowerReadResult extends ShardReadResult {
  /** Set when the follower's log diverged: the epoch and end offset it must truncate to. */
  divergingEpoch?: EpochEndOffset
}

/** The leader's batches for a follower's log, and the leader's offsets from the same answer. */
export interface FollowerAppendItem extends TopicPartition {
  /** Whole batches (a trailing partial one is ignored); may be empty. Ownership passes to the router. */
  records: Buffer
  /** The leader's high watermark: the follower's becomes min(it, its LEO), never lower than it was. */
  highWatermark: number
  /** The leader's log start offset: the follower's moves up to it (no further than its high watermark). */
  logStartOffset: number
}

export interface TruncateItem extends TopicPartition {
  offset: number
}

export interface BecomeLeaderItem extends TopicPartition {
  leaderEpoch: number
  /** The in-sync replicas are the leader alone (and min ISR allows it): appends move the HW themselves. */
  highWatermarkFollowsLeo: boolean
}

export interface HighWatermarkItem extends TopicPartition {
  /** Raise the high watermark to this (never lower it); omitted: unchanged. */
  highWatermark?: number
  /** Switch the mode (see BecomeLeaderItem); omitted: unchanged. */
  followsLeo?: boolean
}

export interface EndOffsetForEpochItem extends TopicPartition {
  leaderEpoch: number
}

/** A transaction marker for one partition (the transaction coordinator's WriteTxnMarkers). */
export interface TxnMarkerItem extends TopicPartition {
  producerId: number
  producerEpoch: number
  coordinatorEpoch: number
  /** COMMIT (true) or ABORT (false). */
  commit: boolean
  /** The leader epoch written into the marker batch (the partition's current one); default the latest append's. */
  leaderEpoch?: number
}

export interface ListOffsetsItem extends TopicPartition {
  /** A time in ms or a special timestamp of domain/list-offsets.ts (PartitionLog.fetchOffsetByTimestamp). */
  timestamp: number
  /** read_committed: latest (-1) is the last stable offset instead of the high watermark. */
  isolation?: IsolationLevel
}

export interface DeleteRecordsItem extends TopicPartition {
  /** Delete records before this offset; -1 means the high watermark. */
  offset: number
}

export interface CompactItem extends TopicPartition {
  /** Clean even when min.cleanable.dirty.ratio / max.compaction.lag.ms would not ask for it. */
  force?: boolean
}

function asBuffer(records: Uint8Array): Buffer {
  // Structured clone delivers a Uint8Array; view the same memory as a Buffer without copying.
  return Buffer.isBuffer(records) ? records : Buffer.from(records.buffer, records.byteOffset, records.byteLength)
}

async function makeTruncationDurable(log: PartitionLog): Promise<void> {
  await log.flush()
  await fsyncDir(log.dir)
  await log.writeCheckpoints()
}

// ---- The table ----

export const SHARD_OPERATIONS = {
  /** Opens or creates the partition's log (idempotent). */
  create: onPartition(
    (shard, a: CreatePartitionItem): PartitionState => shard.logs.create(a.topic, a.partition, a.overrides, a.logDir).state(),
    { invalidPartition: ErrorCode.INVALID_PARTITIONS },
  ),
  /** Closes the partition and renames its directory for deletion (removed in the background). */
  delete: onPartition((shard, a: TopicPartition): null => {
    shard.log(a.topic, a.partition)
    shard.logs.delete(a.topic, a.partition)
    return null
  }),
  /** Closes the partition and renames its directory `...-stray`, kept on disk; answers the new name. */
  moveAside: onPartition((shard, a: TopicPartition): Promise<string> => shard.logs.moveAside(a.topic, a.partition)),
  updateConfig: onPartition((shard, a: UpdateConfigItem): null => {
    shard.log(a.topic, a.partition).updateConfig(a.overrides)
    return null
  }),
  append: onPartition(
    (shard, a: AppendItem): AppendResult => shard.log(a.topic, a.partition).append(asBuffer(a.records), { leaderEpoch: a.leaderEpoch }),
    { carriesRecords: true },
  ),
  /** File regions of whole batches; a non-empty result pins its segments until releaseLease. */
  read: onPartition((shard, a: ReadItem): ShardReadResult => {
    // The item carries the read options itself (maxOffset, minOneBatch, isolation); the fresh result gets
    // its shard added in place (no copies: this runs for every partition of every Fetch).
    const result = shard.log(a.topic, a.partition).read(a.offset, a.maxBytes, a) as ShardReadResult
    result.shard = shard.shardIndex
    return result
  }),
  /**
   * A follower's fetch: the diverging-epoch check against the follower's last fetched epoch, then file
   * regions up to the LEO (PartitionLog.readForFollower); pins segments like read.
   */
  readForFollower: onPartition((shard, a: FollowerReadItem): ShardFollowerReadResult => {
    const log = shard.log(a.topic, a.partition)
    if (a.highWatermark !== undefined) log.maybeIncrementHighWatermark(a.highWatermark)
    const result = log.readForFollower(a.offset, a.maxBytes, a.lastFetchedEpoch) as ShardFollowerReadResult
    result.shard = shard.shardIndex
    return result
  }),
  /**
   * A follower appends its leader's batches verbatim (PartitionLog.appendAsFollower), then takes the
   * leader's high watermark (capped at its LEO) and log start offset.
   */
  appendAsFollower: onPartition(
    (shard, a: FollowerAppendItem): FollowerAppendResult => {
      const log = shard.log(a.topic, a.partition)
      const result = log.appendAsFollower(asBuffer(a.records))
      result.highWatermark = log.maybeIncrementHighWatermark(a.highWatermark)
      log.maybeIncrementLogStartOffset(a.logStartOffset)
      result.logStartOffset = log.logStartOffset
      return result
    },
    { carriesRecords: true },
  ),
  /**
   * Cuts the log back to an offset (a follower's truncation by leader epoch or to its high watermark),
   * then makes the cut durable before answering: the segment fsynced, the directory (deleted segments)
   * and the checkpoints written, so that a crash cannot bring the cut tail back.
   */
  truncate: onPartition(async (shard, a: TruncateItem): Promise<ReplicaLogState> => {
    const log = shard.log(a.topic, a.partition)
    if (log.truncateTo(a.offset)) await makeTruncationDurable(log)
    return log.replicaState()
  }),
  /** Empties the log and starts it again at an offset (the leader no longer has what the follower would fetch). */
  truncateFullyAndStartAt: onPartition(async (shard, a: TruncateItem): Promise<ReplicaLogState> => {
    const log = shard.log(a.topic, a.partition)
    log.truncateFullyAndStartAt(a.offset)
    await makeTruncationDurable(log)
    return log.replicaState()
  }),
  /** This replica leads from leaderEpoch on: the epoch starts at its LEO; the high watermark mode is set. */
  becomeLeader: onPartition((shard, a: BecomeLeaderItem): ReplicaLogState => {
    const log = shard.log(a.topic, a.partition)
    log.assignLeaderEpoch(a.leaderEpoch)
    log.setHighWatermarkFollowsLeo(a.highWatermarkFollowsLeo)
    return log.replicaState()
  }),
  /** This replica follows: its high watermark comes from its leader from now on. */
  becomeFollower: onPartition((shard, a: TopicPartition): ReplicaLogState => {
    const log = shard.log(a.topic, a.partition)
    log.setHighWatermarkFollowsLeo(false)
    return log.replicaState()
  }),
  /** The leader moves its high watermark (only up) and/or switches whether it follows the LEO. */
  setHighWatermark: onPartition((shard, a: HighWatermarkItem): number => {
    const log = shard.log(a.topic, a.partition)
    if (a.followsLeo !== undefined) log.setHighWatermarkFollowsLeo(a.followsLeo)
    return a.highWatermark === undefined ? log.highWatermark : log.maybeIncrementHighWatermark(a.highWatermark)
  }),
  /** OffsetForLeaderEpoch: the end offset of an epoch in this replica's log (LeaderEpochCache.endOffsetFor). */
  endOffsetForEpoch: onPartition((shard, a: EndOffsetForEpochItem): EpochEndOffset => shard.log(a.topic, a.partition).endOffsetForEpoch(a.leaderEpoch)),
  /** Offsets and newest leader epoch of a replica. */
  replicaState: onPartition((shard, a: TopicPartition): ReplicaLogState => shard.log(a.topic, a.partition).replicaState()),
  /** Appends a COMMIT or ABORT control batch of a producer's transaction (WriteTxnMarkers). */
  writeTxnMarker: onPartition((shard, a: TxnMarkerItem): { offset: number } => shard.log(a.topic, a.partition).appendTxnMarker(a)),
  /** The producers with state on the partition (DescribeProducers). */
  describeProducers: onPartition((shard, a: TopicPartition): ProducerDescription[] => shard.log(a.topic, a.partition).describeProducers()),
  listOffsets: onPartition(
    (shard, a: ListOffsetsItem): OffsetAndTimestamp => shard.log(a.topic, a.partition).fetchOffsetByTimestamp(a.timestamp, a.isolation),
  ),
  /** Raises the log start offset; answers the new one. */
  deleteRecords: onPartition((shard, a: DeleteRecordsItem): number => shard.log(a.topic, a.partition).deleteRecordsBefore(a.offset)),
  state: onPartition((shard, a: TopicPartition): PartitionState => shard.log(a.topic, a.partition).state()),
  /** One log cleaner pass over a compacted partition now; force ignores min.cleanable.dirty.ratio. */
  compact: onPartition(
    (shard, a: CompactItem): Promise<CleanResult> => shard.logs.cleaner.clean(shard.log(a.topic, a.partition), { force: a.force === true }),
    { background: true },
  ),
  /** Unpins the segments of a read (unknown or released ids are ignored). */
  releaseLease: onShard((shard, a: { leaseId: number }): null => {
    shard.logs.releaseLease(a.leaseId)
    return null
  }),
  /** States of every partition the shard owns. */
  states: onShard((shard, _: null): PartitionState[] => shard.logs.partitions().map((p) => p.state())),
  /** Data directories: offline ones, partitions per online one. */
  logDirStatus: onShard((shard, _: null): LogDirStatus => ({
    offline: [...shard.logs.offlineDirs], offlineForSpace: [...shard.logs.offlineForSpace], partitionCounts: [...shard.logs.partitionCounts()],
  })),
  /**
   * Takes a data directory offline here too (another shard found it failed; diskFull: for lack of space,
   * so that it may come back); answers whether it was online.
   */
  markLogDirOffline: onShard((shard, a: { logDir: string; diskFull?: boolean }): boolean =>
    shard.logs.markLogDirOffline(a.logDir, new Error(a.diskFull === true ? 'ENOSPC: full, found by another shard' : 'failed on another shard'))),
  /** Reopens a data directory that a full disk took offline, once space is back (ShardContext.reopenLogDir). */
  reopenLogDir: onShard((shard, a: { logDir: string }): ShardLoad => shard.reopenLogDir(a.logDir)),
  /** Writes a probe file into each online data directory; answers those found failed now. */
  probeLogDirs: onShard((shard, _: null): string[] => shard.logs.probeLogDirs()),
  /** States of the future copies (moves between data directories) under way. */
  futureStates: onShard((shard, _: null): PartitionState[] =>
    shard.logs.partitions().flatMap((p) => {
      const f = shard.logs.futureLog(p.topic, p.partition)
      return f === undefined ? [] : [f.state()]
    })),
  /** Starts moving a partition into another data directory (AlterReplicaLogDirs); answers whether a copy is under way. */
  startMove: onPartition((shard, a: MoveItem): boolean => shard.logs.startMove(a.topic, a.partition, a.logDir)),
  /** Copies up to maxBytes more into the partition's future copy. */
  moveStep: onPartition((shard, a: TopicPartition & { maxBytes: number }): 'copying' | 'caught-up' | 'none' => shard.logs.moveStep(a.topic, a.partition, a.maxBytes)),
  /** Swaps a caught-up copy in, with the shard's other work held back. */
  completeMove: onPartition((shard, a: TopicPartition): Promise<boolean> => shard.logs.completeMove(a.topic, a.partition), { exclusive: true }),
  /** Diagnostics of the shard itself. */
  shardInfo: onShard((shard, _: null): ShardInfo => shard.info()),
  /** Flush, checkpoint and close the shard's logs; the shard refuses further work. */
  close: onShard(async (shard, _: null): Promise<null> => {
    await shard.close()
    return null
  }, { whenClosed: true }),
} as const satisfies OperationTable

// ---- Types derived from the table ----

export type ShardOperations = typeof SHARD_OPERATIONS
export type OpName = keyof ShardOperations
export type PartitionOpName = { [K in OpName]: ShardOperations[K]['target'] extends 'partition' ? K : never }[OpName]
export type ShardOpName = { [K in OpName]: ShardOperations[K]['target'] extends 'shard' ? K : never }[OpName]
/** The arguments of operation K (one item of a partition operation). */
export type OpArgs<K extends OpName> = Parameters<ShardOperations[K]['apply']>[1]
/** What operation K answers. */
export type OpValue<K extends OpName> = Awaited<ReturnType<ShardOperations[K]['apply']>>
/** One operation as sent to a shard: its name and its arguments. */
export type ShardOp = { [K in OpName]: { op: K; args: OpArgs<K> } }[OpName]
