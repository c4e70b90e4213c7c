// The admin APIs driven by kafkajs 2.2.4's admin client (CreateTopics v3, DeleteTopics v1, DeleteRecords
// v1, DescribeConfigs v2, AlterConfigs v1, CreatePartitions v1) against an in-process broker.
import { Kafka, logLevel, type Admin } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startTestBroker, type TestBroker } from '../../harness/index.js'

const TOPIC = 2
const BROKER = 4
// DescribeConfigs configSource ids.
const DYNAMIC_TOPIC_CONFIG = 1
const DYNAMIC_BROKER_CONFIG = 2
const DEFAULT_CONFIG = 5

/** The Kafka error name behind a kafkajs error (aggregate, retry wrapper or plain protocol error). */
function errorType(err: unknown): string | undefined {
  const e = err as { type?: string; errors?: unknown[]; originalError?: unknown; cause?: unknown; partitions?: { error: unknown }[] }
  if (e.type !== undefined) return e.type
  if (e.cause !== undefined) return errorType(e.cause)
  if (Array.isArray(e.partitions) && e.partitions.length > 0) return errorType(e.partitions[0]!.error)
  if (e.originalError !== undefined) return errorType(e.originalError)
  if (Array.isArray(e.errors) && e.errors.length > 0) return errorType(e.errors[0])
  return undefined
}

async function failure(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p
  } catch (err) {
    return errorType(err)
  }
  throw new Error('expected the call to fail')
}

describe('kafkajs admin against Skein', () => {
  let tb: TestBroker
  let kafka: Kafka
  let admin: Admin

  beforeAll(async () => {
    tb = await startTestBroker()
    kafka = new Kafka({ clientId: 'admin-test', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 0 } })
    admin = kafka.admin()
    await admin.connect()
  })

  afterAll(async () => {
    await admin?.disconnect()
    await tb?.stop()
  })

  async function describeTopic(name: string, configNames: string[]) {
    const res = await admin.describeConfigs({ resources: [{ type: TOPIC, name, configNames }], includeSynonyms: false })
    const entries = res.resources[0]!.configEntries
    return new Map(entries.map((e) => [e.configName, e]))
  }

  it('creates topics with partitions and configs, reports an existing one, validates only when asked', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'kj-orders', numPartitions: 3, configEntries: [{ name: 'retention.ms', value: '3600000' }] }] })).toBe(true)
    // kafkajs resolves false for TOPIC_ALREADY_EXISTS.
    expect(await admin.createTopics({ topics: [{ topic: 'kj-orders', numPartitions: 1 }] })).toBe(false)
    const meta = await admin.fetchTopicMetadata({ topics: ['kj-orders'] })
    expect(meta.topics[0]!.partitions.map((p) => p.partitionId).sort()).toEqual([0, 1, 2])

    // waitForLeaders would ask Metadata for a topic that validateOnly did not create.
    expect(await admin.createTopics({ validateOnly: true, waitForLeaders: false, topics: [{ topic: 'kj-dry-run', numPartitions: 2 }] })).toBe(true)
    expect(await admin.listTopics()).not.toContain('kj-dry-run')
    expect(tb.broker.topics.get('kj-dry-run')).toBeUndefined()

    // Defaults (-1) come from num.partitions.
    expect(await admin.createTopics({ topics: [{ topic: 'kj-defaults' }] })).toBe(true)
    expect(tb.broker.topics.get('kj-defaults')!.partitions).toBe(tb.broker.config.getInt('num.partitions'))
  })

  it('rejects bad topics with the Kafka error codes', async () => {
    expect(await failure(admin.createTopics({ topics: [{ topic: 'kj-bad-config', configEntries: [{ name: 'retention.ms', value: 'soon' }] }] }))).toBe('INVALID_CONFIG')
    expect(await failure(admin.createTopics({ topics: [{ topic: 'kj-unknown-config', configEntries: [{ name: 'retention.msec', value: '1' }] }] }))).toBe('INVALID_CONFIG')
    expect(await failure(admin.createTopics({ topics: [{ topic: 'bad name!' }] }))).toBe('INVALID_TOPIC_EXCEPTION')
    expect(await failure(admin.createTopics({ topics: [{ topic: 'kj-rf', replicationFactor: 3 }] }))).toBe('INVALID_REPLICATION_FACTOR')
    expect(await failure(admin.createTopics({ topics: [{ topic: 'kj-zero', numPartitions: 0 }] }))).toBe('INVALID_PARTITIONS')
    expect(await failure(admin.createTopics({ topics: [{ topic: 'kj-assign', replicaAssignment: [{ partition: 0, replicas: [7] }] }] }))).toBe('INVALID_REPLICA_ASSIGNMENT')
    for (const name of ['kj-bad-config', 'kj-unknown-config', 'kj-rf', 'kj-zero', 'kj-assign']) expect(tb.broker.topics.get(name)).toBeUndefined()
  })

  it('creates a topic from a manual assignment on this broker', async () => {
    expect(await admin.createTopics({ topics: [{ topic: 'kj-manual', replicaAssignment: [{ partition: 0, replicas: [0] }, { partition: 1, replicas: [0] }] }] })).toBe(true)
    const meta = await admin.fetchTopicMetadata({ topics: ['kj-manual'] })
    expect(meta.topics[0]!.partitions).toHaveLength(2)
    expect(meta.topics[0]!.partitions.every((p) => p.leader === 0 && p.replicas.join() === '0')).toBe(true)
  })

  it('describes topic configs with their sources', async () => {
    const configs = await describeTopic('kj-orders', ['retention.ms', 'segment.bytes', 'cleanup.policy'])
    expect(configs.get('retention.ms')).toMatchObject({ configValue: '3600000', configSource: DYNAMIC_TOPIC_CONFIG, readOnly: false, isDefault: false })
    expect(configs.get('segment.bytes')).toMatchObject({ configValue: '1073741824', configSource: DEFAULT_CONFIG, isDefault: true })
    expect(configs.get('cleanup.policy')).toMatchObject({ configValue: 'delete', configSource: DEFAULT_CONFIG })
    expect(configs.size).toBe(3)
  })

  it('alterConfigs replaces the whole topic override set', async () => {
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: TOPIC, name: 'kj-orders', configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] })
    const configs = await describeTopic('kj-orders', ['retention.ms', 'cleanup.policy'])
    expect(configs.get('cleanup.policy')).toMatchObject({ configValue: 'compact', configSource: DYNAMIC_TOPIC_CONFIG })
    // Not sent again, so no longer overridden (non-incremental semantics).
    expect(configs.get('retention.ms')).toMatchObject({ configValue: String(7 * 24 * 3600 * 1000), configSource: DEFAULT_CONFIG })
    expect(tb.broker.topics.get('kj-orders')!.configs).toEqual({ 'cleanup.policy': 'compact' })

    await admin.alterConfigs({ validateOnly: true, resources: [{ type: TOPIC, name: 'kj-orders', configEntries: [{ name: 'retention.ms', value: '1000' }] }] })
    expect(tb.broker.topics.get('kj-orders')!.configs).toEqual({ 'cleanup.policy': 'compact' })

    expect(await failure(admin.alterConfigs({ validateOnly: false, resources: [{ type: TOPIC, name: 'kj-orders', configEntries: [{ name: 'segment.bytes', value: '1' }] }] }))).toBe('INVALID_CONFIG')
    expect(await failure(admin.alterConfigs({ validateOnly: false, resources: [{ type: TOPIC, name: 'kj-missing', configEntries: [{ name: 'retention.ms', value: '1' }] }] }))).toBe('UNKNOWN_TOPIC_OR_PARTITION')
    expect(tb.broker.topics.get('kj-orders')!.configs).toEqual({ 'cleanup.policy': 'compact' })
  })

  it('alters dynamic broker configs and refuses read-only ones', async () => {
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: BROKER, name: '0', configEntries: [{ name: 'log.retention.ms', value: '7200000' }] }] })
    const broker = await admin.describeConfigs({ resources: [{ type: BROKER, name: '0', configNames: ['log.retention.ms', 'num.partitions'] }], includeSynonyms: false })
    const entries = new Map(broker.resources[0]!.configEntries.map((e) => [e.configName, e]))
    expect(entries.get('log.retention.ms')).toMatchObject({ configValue: '7200000', configSource: DYNAMIC_BROKER_CONFIG, readOnly: false })
    expect(entries.get('num.partitions')).toMatchObject({ readOnly: true })
    // A topic without its own retention.ms now takes the broker's dynamic value.
    const topic = await describeTopic('kj-defaults', ['retention.ms'])
    expect(topic.get('retention.ms')).toMatchObject({ configValue: '7200000', configSource: DYNAMIC_BROKER_CONFIG })

    expect(await failure(admin.alterConfigs({ validateOnly: false, resources: [{ type: BROKER, name: '0', configEntries: [{ name: 'num.partitions', value: '4' }] }] }))).toBe('INVALID_REQUEST')
    expect(tb.broker.config.getInt('num.partitions')).toBe(1)
    expect(tb.broker.config.logRetentionMs).toBe(7200000)
    // Replacing the per-broker set with nothing removes the dynamic value again.
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: BROKER, name: '0', configEntries: [] }] })
    expect(tb.broker.config.logRetentionMs).toBe(7 * 24 * 3600 * 1000)
  })

  it('adds partitions and reports bad counts', async () => {
    await admin.createPartitions({ topicPartitions: [{ topic: 'kj-orders', count: 5 }] })
    const meta = await admin.fetchTopicMetadata({ topics: ['kj-orders'] })
    expect(meta.topics[0]!.partitions).toHaveLength(5)
    expect(await failure(admin.createPartitions({ topicPartitions: [{ topic: 'kj-orders', count: 2 }] }))).toBe('INVALID_PARTITIONS')
    expect(await failure(admin.createPartitions({ topicPartitions: [{ topic: 'kj-orders', count: 7, assignments: [[0]] }] }))).toBe('INVALID_REPLICA_ASSIGNMENT')
    expect(await failure(admin.createPartitions({ topicPartitions: [{ topic: 'kj-nope', count: 2 }] }))).toBe('UNKNOWN_TOPIC_OR_PARTITION')
    expect(await failure(admin.createPartitions({ validateOnly: true, topicPartitions: [{ topic: 'kj-orders', count: 5 }] }))).toBe('INVALID_PARTITIONS')
    await admin.createPartitions({ validateOnly: true, topicPartitions: [{ topic: 'kj-orders', count: 9 }] })
    expect(tb.broker.topics.get('kj-orders')!.partitions).toBe(5)
  })

  it('deletes records up to an offset; ListOffsets earliest then answers the new low watermark', async () => {
    await admin.createTopics({ topics: [{ topic: 'kj-records', numPartitions: 2 }] })
    const producer = kafka.producer()
    await producer.connect()
    try {
      await producer.send({ topic: 'kj-records', messages: Array.from({ length: 10 }, (_, i) => ({ partition: 0, value: `v${i}` })) })
      await producer.send({ topic: 'kj-records', messages: Array.from({ length: 4 }, (_, i) => ({ partition: 1, value: `w${i}` })) })
    } finally {
      await producer.disconnect()
    }
    // kafkajs finds partition leaders in its metadata cache, which only holds topics it was asked about.
    await admin.fetchTopicMetadata({ topics: ['kj-records'] })
    await admin.deleteTopicRecords({ topic: 'kj-records', partitions: [{ partition: 0, offset: '6' }] })
    let offsets = await admin.fetchTopicOffsets('kj-records')
    expect(offsets.find((o) => o.partition === 0)).toMatchObject({ low: '6', high: '10' })
    expect(offsets.find((o) => o.partition === 1)).toMatchObject({ low: '0', high: '4' })

    // -1 = up to the high watermark.
    await admin.deleteTopicRecords({ topic: 'kj-records', partitions: [{ partition: 1, offset: '-1' }] })
    offsets = await admin.fetchTopicOffsets('kj-records')
    expect(offsets.find((o) => o.partition === 1)).toMatchObject({ low: '4', high: '4' })

    expect(await failure(admin.deleteTopicRecords({ topic: 'kj-records', partitions: [{ partition: 0, offset: '11' }] }))).toBe('OFFSET_OUT_OF_RANGE')
    offsets = await admin.fetchTopicOffsets('kj-records')
    expect(offsets.find((o) => o.partition === 0)).toMatchObject({ low: '6', high: '10' })
  })

  it('describes the cluster as this one broker', async () => {
    const cluster = await admin.describeCluster()
    expect(cluster.clusterId).toBe(tb.broker.clusterId)
    expect(cluster.controller).toBe(tb.broker.nodeId)
    expect(cluster.brokers).toEqual([{ nodeId: tb.broker.nodeId, host: tb.host, port: tb.port }])
  })

  it('deletes topics, and reports unknown ones', async () => {
    await admin.deleteTopics({ topics: ['kj-defaults', 'kj-manual'] })
    const topics = await admin.listTopics()
    expect(topics).not.toContain('kj-defaults')
    expect(topics).not.toContain('kj-manual')
    expect(topics).toContain('kj-orders')
    expect(tb.broker.topics.get('kj-defaults')).toBeUndefined()
    expect(await failure(admin.deleteTopics({ topics: ['kj-never-existed'] }))).toBe('UNKNOWN_TOPIC_OR_PARTITION')
  })
})
