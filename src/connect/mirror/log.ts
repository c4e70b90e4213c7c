// One logger for the MirrorMaker connectors of this process (the plugin API hands connectors none).
import { type Admin, ErrorCode, KafkaError } from '../../client/index.js'
import { createLogger, type Logger } from '../../observability/logger.js'

let logger: Logger | null = null

export function mirrorLog(): Logger {
  logger ??= createLogger().child({ component: 'mirror' })
  return logger
}

/** Runs fn every ms (unref'd), one run at a time, logging failures; returns the stopper. */
export function every(ms: number, what: string, fn: () => Promise<void>): () => void {
  if (ms <= 0) return () => {}
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    fn().catch((err) => mirrorLog().warn({ err: (err as Error).message }, `${what} failed`)).finally(() => (running = false))
  }, ms)
  timer.unref()
  return () => clearInterval(timer)
}

/** Creates a single-partition compacted topic when it is missing (Kafka's createSinglePartitionCompactedTopic). */
export async function createCompactedTopic(admin: Admin, name: string, replicationFactor: number): Promise<void> {
  const existing = await admin.describeTopics([name]).catch(() => [])
  if (existing.some((t) => t.name === name && t.partitions.length > 0)) return
  try {
    await admin.createTopics([{ name, numPartitions: 1, replicationFactor, configs: { 'cleanup.policy': 'compact' } }])
    mirrorLog().info({ topic: name }, 'created topic')
  } catch (err) {
    if (err instanceof KafkaError && err.code === ErrorCode.TOPIC_ALREADY_EXISTS) return // another worker was first
    throw err
  }
}
