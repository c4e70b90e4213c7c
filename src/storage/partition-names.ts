// The topic and partition names the engine accepts, and the partition directory names built from them.
// Names become directory names, so they are checked before any path is built: nothing outside the data
// directory can be touched through a topic name. (Log settings are config's: config/log-config.ts.)

import { randomUUID } from 'node:crypto'
import { ErrorCode, KafkaError } from '../domain/errors.js'

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

/** Suffix of a partition directory being deleted (renamed first, removed afterwards). */
export const DELETE_DIR_SUFFIX = '-delete'
/** Suffix of a partition directory set aside because cluster-metadata.json does not list it. */
export const STRAY_DIR_SUFFIX = '-stray'
/** Kafka's LocalLog.DeleteDirPattern and StrayDirPattern. */
export const DELETE_DIR_PATTERN = /^(\S+)-(\S+)\.(\S+)-delete$/
export const STRAY_DIR_PATTERN = /^(\S+)-(\S+)\.(\S+)-stray$/
/** Longest file name the filesystems Skein runs on take (NAME_MAX, bytes; topic names are ASCII). */
const NAME_MAX = 255

/**
 * Kafka's LocalLog.logDeleteDirName / logStrayDirName: `<topic>-<partition>.<uuid without dashes><suffix>`,
 * the topic cut short so that the whole name fits in 255 bytes (a 249-character topic name would not
 * fit otherwise). Unique, so a new partition of the same name can be created at once.
 */
export function logDirNameWithSuffix(topic: string, partition: number, suffix: typeof DELETE_DIR_SUFFIX | typeof STRAY_DIR_SUFFIX): string {
  const uniqueId = randomUUID().replaceAll('-', '')
  const fullSuffix = `-${partition}.${uniqueId}${suffix}`
  return topic.slice(0, Math.min(topic.length, NAME_MAX - fullSuffix.length)) + fullSuffix
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
