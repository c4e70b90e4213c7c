// The share coordinator (KIP-932, Kafka's ShareCoordinatorService): keeps the state of share-partitions
// in __share_group_state, one ShareCoordinatorState per partition of it, run by the CoordinatorRuntime
// (loaded by replaying the partition when this broker becomes its leader, dropped when it stops being
// it). A share-partition lives on partition abs(javaStringHashCode("group:topicId:partition")) %
// partitions, Kafka's partitionFor of the coordinator key, so FindCoordinator with key type SHARE names the
// same partition's leader as Kafka would.
//
// Errors of a share-partition (the runtime's): NOT_COORDINATOR when its partition is not coordinated here,
// COORDINATOR_LOAD_IN_PROGRESS while it is replayed, COORDINATOR_NOT_AVAILABLE when it failed to load or a
// write could not be replicated; the state machine's FENCED_STATE_EPOCH / FENCED_LEADER_EPOCH /
// INVALID_REQUEST. Each share-partition of a request is answered on its own.
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import { javaStringHashCode, kafkaAbs } from '../group/partitioner.js'
import type { Clock } from '../runtime/clock.js'
import type { PartitionWriter } from '../runtime/partition-writer.js'
import { CoordinatorRuntime, type CoordinatorLogger } from '../runtime/runtime.js'
import {
  ShareCoordinatorState, coordinatorKeyOf, type PartitionAnswer, type ReadAnswer, type SharePartitionKey, type WriteParams,
} from './share-coordinator-state.js'

export interface ShareCoordinatorConfig {
  /** The partitions of __share_group_state (the topic's, whatever the config says now). */
  stateTopicPartitions: number
  /** share.coordinator.snapshot.update.records.per.snapshot */
  snapshotUpdateRecordsPerSnapshot: number
  /** share.coordinator.state.topic.prune.interval.ms (default 5 minutes, Kafka's); 0: never prune. */
  pruneIntervalMs?: number
}

/** Kafka's share.coordinator.state.topic.prune.interval.ms default. */
export const DEFAULT_PRUNE_INTERVAL_MS = 5 * 60 * 1000

export interface ShareCoordinatorOptions {
  config: ShareCoordinatorConfig
  writer: PartitionWriter
  clock: Clock
  log: CoordinatorLogger
}

/** The __share_group_state partition of a share-partition (Kafka's partitionFor over the coordinator key). */
export function shareStatePartition(key: SharePartitionKey | string, partitionCount: number): number {
  const k = typeof key === 'string' ? key : coordinatorKeyOf(key)
  return kafkaAbs(javaStringHashCode(k)) % partitionCount
}

function errorAnswer(err: unknown): PartitionAnswer {
  if (err instanceof KafkaError) return { errorCode: err.code, errorMessage: err.message || null }
  return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: (err as Error)?.message ?? String(err) }
}

export class ShareCoordinator {
  readonly runtime: CoordinatorRuntime<ShareCoordinatorState>
  readonly config: ShareCoordinatorConfig

  constructor(opts: ShareCoordinatorOptions) {
    this.config = opts.config
    this.runtime = new CoordinatorRuntime<ShareCoordinatorState>({
      writer: opts.writer,
      clock: opts.clock,
      log: opts.log,
      newStateMachine: (ctx) => new ShareCoordinatorState(ctx, {
        snapshotUpdateRecordsPerSnapshot: opts.config.snapshotUpdateRecordsPerSnapshot,
        pruneIntervalMs: opts.config.pruneIntervalMs ?? DEFAULT_PRUNE_INTERVAL_MS,
        prune: opts.writer.deleteRecordsBefore === undefined ? undefined : (partition, offset) => opts.writer.deleteRecordsBefore!(partition, offset),
      }),
    })
  }

  partitionFor(key: SharePartitionKey): number {
    return shareStatePartition(key, this.config.stateTopicPartitions)
  }

  /** True when the share-partition's coordinator partition is loaded and active here. */
  isCoordinatorFor(key: SharePartitionKey): boolean {
    return this.runtime.isActive(this.partitionFor(key))
  }

  async write(key: SharePartitionKey, params: WriteParams): Promise<PartitionAnswer> {
    try {
      return await this.runtime.write(this.partitionFor(key), 'write-share-group-state', (s) => s.write(key, params))
    } catch (err) {
      return errorAnswer(err)
    }
  }

  async initialize(key: SharePartitionKey, stateEpoch: number, startOffset: number): Promise<PartitionAnswer> {
    try {
      return await this.runtime.write(this.partitionFor(key), 'initialize-share-group-state', (s) => s.initialize(key, stateEpoch, startOffset))
    } catch (err) {
      return errorAnswer(err)
    }
  }

  async delete(key: SharePartitionKey): Promise<PartitionAnswer> {
    try {
      return await this.runtime.write(this.partitionFor(key), 'delete-share-group-state', (s) => s.delete(key))
    } catch (err) {
      return errorAnswer(err)
    }
  }

  /** Run as a write with no records: a read records the reader's leader epoch, in order with the writes. */
  async read(key: SharePartitionKey, leaderEpoch: number): Promise<ReadAnswer> {
    try {
      return await this.runtime.write(this.partitionFor(key), 'read-share-group-state', (s) => ({ records: [], result: s.read(key, leaderEpoch) }))
    } catch (err) {
      return { ...errorAnswer(err), stateEpoch: 0, startOffset: -1, stateBatches: [] }
    }
  }

  async readSummary(key: SharePartitionKey, leaderEpoch: number): Promise<{ errorCode: number; errorMessage: string | null; stateEpoch: number; startOffset: number }> {
    try {
      return await this.runtime.read(this.partitionFor(key), (s) => s.summary(key, leaderEpoch))
    } catch (err) {
      return { ...errorAnswer(err), stateEpoch: 0, startOffset: -1 }
    }
  }

  close(): void {
    this.runtime.close()
  }
}
