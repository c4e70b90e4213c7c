// Skein as a library. The same engine the broker runs, usable inside another service:
// - openLog(): the partition shards (worker threads, one owner per partition) over a data directory;
// - startBroker(): a whole Kafka-protocol broker;
// - record batch helpers to build and decode Kafka RecordBatch v2 bytes;
// - Skein's Kafka client (Producer, Consumer, ShareConsumer, Admin), the one the `skein` tools use, for any Kafka broker.
// See docs/library.md ("Library API") for runnable examples.
import { native } from './addon/index.js'
import { loadBrokerConfig } from './config/broker-config.js'
import type { Logger } from './observability/logger.js'
import { buildRecordBatch, type BuildBatchOptions, type RecordInput } from './protocol/records/builder.js'
import { Broker } from './broker/broker.js'
import { ShardRouter, type ShardRouterOptions } from './shard/router.js'
import { DEFAULT_LOG_CONFIG, type LogConfig } from './config/log-config.js'

export { native, socketFd } from './addon/index.js'
export { tuneMallocForBroker, tuneMallocForClient } from './addon/malloc-tuning.js'
export type { NativeBinding, NativeIndexFile } from './addon/types.js'
export { BrokerConfig, loadBrokerConfig, renderConfigReference } from './config/index.js'
export { ErrorCode, KafkaError, errorName, isRetriable } from './domain/errors.js'
export { AcknowledgeType, Admin, Consumer, Producer, ShareConsumer, ConnectionError, NotKafkaBrokerError, TimeoutError } from './client/index.js'
export type {
  ClientOptions,
  CommittedOffset,
  CompressionName,
  ConsumedRecord,
  ConsumerOptions,
  GroupDescription,
  Header,
  IsolationLevel,
  NewTopic,
  OffsetReset,
  ProducerOptions,
  ProducerRecord,
  RecordMetadata,
  AcknowledgementCommitCallback,
  AcknowledgementResult,
  ShareAcknowledgementMode,
  ShareConsumerOptions,
  ShareConsumerRecord,
  TopicDescription,
  TopicPartition,
} from './client/index.js'
export { createLogger, silentLogger, type Logger } from './observability/logger.js'
export { decodeRecords, iterateBatches, type DecodedRecord, type RecordInput, type BuildBatchOptions } from './protocol/records/index.js'
export { Broker, type BrokerEndpoint, type StartBrokerOptions } from './broker/broker.js'
export { ShardRouter, type Outcome, type ShardRouterOptions, type ShardReadResult } from './shard/index.js'
export { DEFAULT_LOG_CONFIG, LogManager, PartitionLog, validateTopicName } from './storage/index.js'
export { readRegions } from './storage/regions.js'
export type * from './storage/types.js'

export interface OpenLogOptions {
  /** Data directory (created if missing); partitions live in <dataDir>/<topic>-<partition>. */
  dataDir: string
  /** Partition worker threads; 0 runs everything on the calling thread. Default 1. */
  ioThreads?: number
  /** Log settings for partitions created without overrides (Kafka topic-config semantics). */
  defaults?: Partial<LogConfig>
  logger?: Logger
}

/**
 * Opens (and recovers) a log directory behind the partition shards. Every method takes a batch of
 * partition operations and answers each with an Outcome, never a rejected promise for one bad item.
 * Call close() to flush, checkpoint and write the clean-shutdown marker.
 */
export function openLog(opts: OpenLogOptions): Promise<ShardRouter> {
  const routerOpts: ShardRouterOptions = {
    dataDir: opts.dataDir,
    ioThreads: opts.ioThreads ?? 1,
    defaults: { ...DEFAULT_LOG_CONFIG, ...opts.defaults },
  }
  if (opts.logger !== undefined) routerOpts.logger = opts.logger
  return ShardRouter.start(routerOpts)
}

/** Builds one uncompressed RecordBatch v2 (valid CRC32C) from records. */
export function createRecordBatch(records: readonly RecordInput[], opts: BuildBatchOptions = {}): Buffer {
  return buildRecordBatch(records, (data, seed) => native.crc32c(data, seed), opts)
}


export interface StartBrokerInProcessOptions {
  /** A .properties file with Kafka's broker config names. */
  configFile?: string
  /** `key=value` items applied on top (like --override). */
  overrides?: readonly string[]
  logger?: Logger
}

/** Starts a broker in this process; stop it with broker.stop(). */
export function startBroker(opts: StartBrokerInProcessOptions = {}): Promise<Broker> {
  const config = loadBrokerConfig({ file: opts.configFile, overrides: opts.overrides })
  return Broker.start(config, opts.logger === undefined ? {} : { logger: opts.logger })
}
