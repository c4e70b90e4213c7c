// The main <-> shard protocol. The router sends ONE ShardBatch per shard per event-loop turn; the shard
// answers with one result per operation, in order. Operations of a batch run in order, so an append and
// a read of the same partition sent in the same turn see each other. The operations themselves, their
// arguments and answers, are defined in operations.ts. Everything here is structured-clone safe; record
// buffers travel as Uint8Array (transferred when the router may do so).

import type { RecordError } from '../domain/errors.js'
import type { LogConfig } from '../storage/types.js'

export interface PartitionRef {
  topic: string
  partition: number
}

export type OpResult =
  | { ok: true; value: unknown }
  | { ok: false; errorCode: number; message: string; unexpected?: boolean; recordErrors?: RecordError[] }

/**
 * The operations of one turn for one shard: ops[i] names an operation and args[i] holds its arguments
 * (together one ShardOp of operations.ts). Two parallel arrays rather than one object per operation: a
 * message then costs the arguments themselves and nothing per operation on top (this carries every
 * append and read).
 */
export interface ShardBatch {
  ops: string[]
  args: unknown[]
}

export interface ShardReply {
  results: OpResult[]
}

/** What a shard reports about itself. */
export interface ShardInfo {
  shard: number
  /** Whether the current thread opened its partitions trusting a clean shutdown (no recovery). */
  openedClean: boolean
  /** Threads started for this shard so far (more than 1 after a worker crash). */
  threadStarts: number
  partitions: number
  /** What opening the shard's partitions took: partitions with something recovered, bytes cut off, time. */
  load: ShardLoad
}

export interface ShardLoad {
  partitions: number
  /** Partitions whose recovery found anything to re-validate or repair (each logged on its own line). */
  recovered: number
  bytesTruncated: number
  segmentsDropped: number
  ms: number
}

/** What a shard worker receives as workerData. */
export interface ShardWorkerData {
  dataDir: string
  /** Every data directory (log.dirs), dataDir first. */
  dataDirs: string[]
  defaults: LogConfig
  shardIndex: number
  shardCount: number
  /** Whether every data dir had a clean-shutdown marker when the router started. */
  cleanShutdown: boolean
  /**
   * Int32Array over a SharedArrayBuffer: [0] counts worker starts for this shard. Only the first start
   * may trust `cleanShutdown`; a replacement worker (after a crash) must recover.
   */
  starts: Int32Array
  retentionCheckIntervalMs: number
  flushSchedulerIntervalMs: number
  highWatermarkFollowsLeo: boolean
  diskFullFailsLogDir: boolean
  checkpointIntervalMs: number
  highWatermarkCheckpointIntervalMs: number
  cleaner: ShardCleanerConfig
  producerExpiration: ShardProducerExpiration
  /** This shard's share of log.segment.open.files.max (storage/open-files.ts). */
  maxOpenFiles: number
  /** The router's log level: the worker's own logger (recovered partitions, background errors) uses it. */
  logLevel: string
}

/** Expiration of idempotent producer state (Kafka's producer.id.expiration.* broker configs). */
export interface ShardProducerExpiration {
  /** producer.id.expiration.ms: state of a producer idle this long is dropped. */
  expirationMs: number
  /** producer.id.expiration.check.interval.ms: how often each shard looks. */
  checkIntervalMs: number
}

export const DEFAULT_PRODUCER_EXPIRATION: ShardProducerExpiration = Object.freeze({ expirationMs: 86_400_000, checkIntervalMs: 600_000 })

/** The log cleaner of each shard (Kafka's log.cleaner.* broker configs). */
export interface ShardCleanerConfig {
  /** log.cleaner.enable: run the periodic cleaner (on-demand compact works either way). */
  enable: boolean
  /** log.cleaner.backoff.ms: how often a shard looks for logs to clean. */
  backoffMs: number
  /** log.cleaner.io.max.bytes.per.second, per shard. */
  ioMaxBytesPerSecond: number
  /** This shard's share of log.cleaner.dedupe.buffer.size. */
  dedupeBufferBytes: number
}

/** Kafka's defaults; dedupeBufferBytes is the whole buffer, which the router divides among shards. */
export const DEFAULT_CLEANER_CONFIG: ShardCleanerConfig = Object.freeze({
  enable: true,
  backoffMs: 15_000,
  ioMaxBytesPerSecond: Number.MAX_VALUE,
  dedupeBufferBytes: 128 * 1024 * 1024,
})
