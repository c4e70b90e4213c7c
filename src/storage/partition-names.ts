// The topic and partition names the engine accepts, and the partition directory names built from them.
// Names become directory names, so they are checked before any path is built: nothing outside the data
// directory can be touched through a topic name. (Log settings are config's: config/log-config.ts.)

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
