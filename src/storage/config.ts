// Log settings and the names the engine accepts. Names become directory names, so they are checked
// before any path is built: nothing outside the data directory can be touched through a topic name.

import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { CompressionTypeConfig, LogConfig } from './types.js'

/** Kafka's Long.MAX_VALUE as a number (2^63): "never" for flush and timestamp bounds. */
export const LONG_MAX = 2 ** 63

/** Kafka's topic-level defaults. */
export const DEFAULT_LOG_CONFIG: LogConfig = Object.freeze({
  segmentBytes: 1024 * 1024 * 1024,
  segmentMs: 7 * 24 * 60 * 60 * 1000,
  segmentIndexBytes: 10 * 1024 * 1024,
  indexIntervalBytes: 4096,
  retentionMs: 7 * 24 * 60 * 60 * 1000,
  retentionBytes: -1,
  maxMessageBytes: 1048588,
  flushMessages: LONG_MAX,
  flushMs: LONG_MAX,
  messageTimestampType: 'CreateTime',
  messageTimestampBeforeMaxMs: LONG_MAX,
  messageTimestampAfterMaxMs: LONG_MAX,
  cleanupPolicy: 'delete',
  fileDeleteDelayMs: 60000,
  deleteRetentionMs: 86400000,
  minCleanableDirtyRatio: 0.5,
  minCompactionLagMs: 0,
  maxCompactionLagMs: LONG_MAX,
  compressionType: 'producer',
})

const INT32_MAX = 0x7fffffff
const LEGAL_TOPIC = /^[a-zA-Z0-9._-]+$/
export const MAX_TOPIC_NAME_LENGTH = 249

/** Throws KafkaError(INVALID_TOPIC_EXCEPTION) unless topic is a legal Kafka topic name. */
export function validateTopicName(topic: string): void {
  if (typeof topic !== 'string' || topic.length === 0) throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, 'topic name is empty')
  if (topic === '.' || topic === '..') throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, `topic name cannot be '${topic}'`)
  if (topic.length > MAX_TOPIC_NAME_LENGTH) {
    throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, `topic name is longer than ${MAX_TOPIC_NAME_LENGTH} characters`)
  }
  if (!LEGAL_TOPIC.test(topic)) {
    throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, `topic name '${topic}' has characters outside [a-zA-Z0-9._-]`)
  }
}

/** Throws KafkaError(INVALID_PARTITIONS) unless partition is an int32 >= 0. */
export function validatePartition(partition: number): void {
  if (!Number.isInteger(partition) || partition < 0 || partition > INT32_MAX) {
    throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `partition ${partition} is not an integer in [0, ${INT32_MAX}]`)
  }
}

/** `<topic>-<partition>`, Kafka's partition directory name. */
export function partitionDirName(topic: string, partition: number): string {
  return `${topic}-${partition}`
}

/** Parses a partition directory name, or null when the name is not one (topics may contain '-'). */
export function parsePartitionDirName(name: string): { topic: string; partition: number } | null {
  const dash = name.lastIndexOf('-')
  if (dash <= 0) return null
  const digits = name.slice(dash + 1)
  if (!/^\d{1,10}$/.test(digits)) return null
  const topic = name.slice(0, dash)
  const partition = Number(digits)
  try {
    validateTopicName(topic)
    validatePartition(partition)
  } catch {
    return null
  }
  return { topic, partition }
}

function checkRange(name: keyof LogConfig, value: unknown, min: number, max = LONG_MAX): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new KafkaError(ErrorCode.INVALID_CONFIG, `${name}=${String(value)} must be an integer in [${min}, ${max}]`)
  }
}

/** Merges overrides onto base and checks every value (KafkaError(INVALID_CONFIG) when one is out of range). */
export function resolveLogConfig(base: LogConfig, overrides: Partial<LogConfig> = {}): LogConfig {
  const c: LogConfig = { ...base }
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) continue
    if (!(k in base)) throw new KafkaError(ErrorCode.INVALID_CONFIG, `unknown log config ${k}`)
    ;(c as unknown as Record<string, unknown>)[k] = v
  }
  // Bounds are Kafka's (LogConfig.java), except segment.bytes whose floor is a single empty batch.
  checkRange('segmentBytes', c.segmentBytes, 61, INT32_MAX)
  checkRange('segmentMs', c.segmentMs, 1)
  checkRange('segmentIndexBytes', c.segmentIndexBytes, 12, INT32_MAX)
  checkRange('indexIntervalBytes', c.indexIntervalBytes, 0, INT32_MAX)
  checkRange('retentionMs', c.retentionMs, -1)
  checkRange('retentionBytes', c.retentionBytes, -1)
  checkRange('maxMessageBytes', c.maxMessageBytes, 0, INT32_MAX)
  checkRange('flushMessages', c.flushMessages, 1)
  checkRange('flushMs', c.flushMs, 0)
  checkRange('messageTimestampBeforeMaxMs', c.messageTimestampBeforeMaxMs, 0)
  checkRange('messageTimestampAfterMaxMs', c.messageTimestampAfterMaxMs, 0)
  checkRange('fileDeleteDelayMs', c.fileDeleteDelayMs, 0)
  checkRange('deleteRetentionMs', c.deleteRetentionMs, 0)
  checkRange('minCompactionLagMs', c.minCompactionLagMs, 0)
  checkRange('maxCompactionLagMs', c.maxCompactionLagMs, 1)
  if (typeof c.minCleanableDirtyRatio !== 'number' || !(c.minCleanableDirtyRatio >= 0 && c.minCleanableDirtyRatio <= 1)) {
    throw new KafkaError(ErrorCode.INVALID_CONFIG, `minCleanableDirtyRatio=${String(c.minCleanableDirtyRatio)} must be in [0, 1]`)
  }
  if (c.minCompactionLagMs > c.maxCompactionLagMs) {
    throw new KafkaError(ErrorCode.INVALID_CONFIG, `minCompactionLagMs ${c.minCompactionLagMs} > maxCompactionLagMs ${c.maxCompactionLagMs}`)
  }
  if (c.messageTimestampType !== 'CreateTime' && c.messageTimestampType !== 'LogAppendTime') {
    throw new KafkaError(ErrorCode.INVALID_CONFIG, `messageTimestampType=${String(c.messageTimestampType)}`)
  }
  if (c.cleanupPolicy !== 'delete' && c.cleanupPolicy !== 'compact' && c.cleanupPolicy !== 'compact,delete') {
    throw new KafkaError(ErrorCode.INVALID_CONFIG, `cleanupPolicy=${String(c.cleanupPolicy)}`)
  }
  if (!COMPRESSION_TYPE_CONFIGS.includes(c.compressionType)) {
    throw new KafkaError(ErrorCode.INVALID_CONFIG, `compressionType=${String(c.compressionType)}`)
  }
  return c
}

const COMPRESSION_TYPE_CONFIGS: readonly CompressionTypeConfig[] = ['producer', 'uncompressed', 'gzip', 'snappy', 'lz4', 'zstd']
