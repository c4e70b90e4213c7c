// The admin APIs driven by @platformatic/kafka's Admin client (CreateTopics v7, DeleteTopics v6,
// CreatePartitions v1, DescribeConfigs v4, AlterConfigs v2, IncrementalAlterConfigs v1, DescribeLogDirs
// v4, DeleteRecords v2) against an in-process broker.
import { Admin, ConfigResourceTypes, ConfigSources, IncrementalAlterConfigOperationTypes, ListOffsetTimestamps } from '@platformatic/kafka'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RawClient, simpleBatch, startTestBroker, type TestBroker } from '../../harness/index.js'

const { TOPIC, BROKER } = ConfigResourceTypes
const { SET, DELETE, APPEND, SUBTRACT } = IncrementalAlterConfigOperationTypes

/** The Kafka error name (apiId) inside a platformatic error, however deeply it is wrapped. */
function apiIdOf(err: unknown): string | undefined {
  const e = err as { apiId?: string; errors?: unknown[]; cause?: unknown }
  if (typeof e.apiId === 'string') return e.apiId
  for (const inner of e.errors ?? []) {
    const id = apiIdOf(inner)
    if (id !== undefined) return id
  }
  return e.cause !== undefined ? apiIdOf(e.cause) : undefined
}

async function failure(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p
  } catch (err) {
    return apiIdOf(err)
  }
  throw new Error('expected the call to fail')
}

describe('@platformatic/kafka Admin against Skein', () => {
  let tb: TestBroker
  let admin: Admin

  beforeAll(async () => {
    tb = await startTestBroker()
    admin = new Admin({ clientId: 'pl-admin-test', bootstrapBrokers: [tb.bootstrap], retries: 0 })
  })

  afterAll(async () => {
    await admin?.close()
    await tb?.stop()
  })

  async function topicConfigs(name: string, keys: string[] | null = null) {
    const [described] = await admin.describeConfigs({ resources: [{ resourceType: TOPIC, resourceName: name, configurationKeys: keys }], includeSynonyms: true, includeDocumentation: true })
    return new Map(described!.configs.map((c) => [c.name, c]))
  }

  it('creates a topic and gets back its id, partitions and resolved configs (v7)', async () => {
    const [created] = await admin.createTopics({ topics: ['pl-events'], partitions: 3, configs: [{ name: 'cleanup.policy', value: 'compact' }] })
    const record = tb.broker.topics.get('pl-events')!
    expect(created).toMatchObject({ name: 'pl-events', partitions: 3, replicas: 1 })
    expect(created!.id.replaceAll('-', '')).toBe(Buffer.from(record.topicId, 'base64url').toString('hex'))
    expect(created!.configuration['cleanup.policy']).toBe('compact')
    expect(created!.configuration['segment.bytes']).toBe('1073741824')
    expect(Object.keys(created!.configuration).length).toBeGreaterThan(20)

    expect(await failure(admin.createTopics({ topics: ['pl-events'] }))).toBe('TOPIC_ALREADY_EXISTS')
    expect(await failure(admin.createTopics({ topics: ['pl-bad'], configs: [{ name: 'cleanup.policy', value: 'shred' }] }))).toBe('INVALID_CONFIG')
    expect(await admin.listTopics()).toContain('pl-events')
    const metadata = await admin.metadata({ topics: ['pl-events'], forceUpdate: true })
    expect(metadata.topics.get('pl-events')!.partitionsCount).toBe(3)
  })

  it('adds partitions (v1) and rejects shrinking', async () => {
    await admin.createPartitions({ topics: [{ name: 'pl-events', count: 4, assignments: [{ brokerIds: [0] }] }] })
    const metadata = await admin.metadata({ topics: ['pl-events'], forceUpdate: true })
    expect(metadata.topics.get('pl-events')!.partitionsCount).toBe(4)
    expect(await failure(admin.createPartitions({ topics: [{ name: 'pl-events', count: 2, assignments: [] }] }))).toBe('INVALID_PARTITIONS')
    expect(await failure(admin.createPartitions({ topics: [{ name: 'pl-nothing', count: 2, assignments: [] }] }))).toBe('UNKNOWN_TOPIC_OR_PARTITION')
  })

  it('describes configs with synonyms, types and documentation (v4)', async () => {
    const configs = await topicConfigs('pl-events', ['cleanup.policy', 'retention.ms', 'max.message.bytes'])
    expect(configs.size).toBe(3)
    expect(configs.get('cleanup.policy')).toMatchObject({ value: 'compact', configSource: ConfigSources.TOPIC_CONFIG, configType: 7, readOnly: false, isSensitive: false })
    expect(configs.get('cleanup.policy')!.synonyms[0]).toEqual({ name: 'cleanup.policy', value: 'compact', source: ConfigSources.TOPIC_CONFIG })
    expect(configs.get('retention.ms')).toMatchObject({ value: '604800000', configSource: ConfigSources.DEFAULT_CONFIG, configType: 5 })
    expect(configs.get('max.message.bytes')!.documentation).toMatch(/record batch/)

    const [unknown] = await admin.describeConfigs({ resources: [{ resourceType: BROKER, resourceName: '0', configurationKeys: ['broker.id', 'log.dirs'] }] })
    const broker = new Map(unknown!.configs.map((c) => [c.name, c]))
    expect(broker.get('broker.id')).toMatchObject({ value: '0', readOnly: true, configSource: ConfigSources.DEFAULT_CONFIG })
    expect(broker.get('log.dirs')).toMatchObject({ value: tb.dataDir, configSource: ConfigSources.STATIC_BROKER_CONFIG })
    expect(await failure(admin.describeConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'pl-nothing' }] }))).toBe('UNKNOWN_TOPIC_OR_PARTITION')
  })

  it('alterConfigs (v2) replaces the topic overrides', async () => {
    await admin.alterConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'pl-events', configs: [{ name: 'retention.ms', value: '60000' }] }] })
    const configs = await topicConfigs('pl-events', ['cleanup.policy', 'retention.ms'])
    expect(configs.get('retention.ms')).toMatchObject({ value: '60000', configSource: ConfigSources.TOPIC_CONFIG })
    expect(configs.get('cleanup.policy')).toMatchObject({ value: 'delete', configSource: ConfigSources.DEFAULT_CONFIG })
  })

  it('incrementalAlterConfigs (v1): SET, APPEND, SUBTRACT and DELETE merge with what is there', async () => {
    await admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'pl-events', configs: [
      { name: 'segment.ms', configOperation: SET, value: '3600000' },
      { name: 'cleanup.policy', configOperation: APPEND, value: 'compact' },
    ] }] })
    let configs = await topicConfigs('pl-events', ['cleanup.policy', 'retention.ms', 'segment.ms'])
    // APPEND starts from the default list [delete]; retention.ms set earlier is kept.
    expect(configs.get('cleanup.policy')).toMatchObject({ value: 'delete,compact', configSource: ConfigSources.TOPIC_CONFIG })
    expect(configs.get('retention.ms')).toMatchObject({ value: '60000', configSource: ConfigSources.TOPIC_CONFIG })
    expect(configs.get('segment.ms')).toMatchObject({ value: '3600000', configSource: ConfigSources.TOPIC_CONFIG })

    await admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'pl-events', configs: [
      { name: 'cleanup.policy', configOperation: SUBTRACT, value: 'delete' },
      { name: 'retention.ms', configOperation: DELETE },
    ] }] })
    configs = await topicConfigs('pl-events', ['cleanup.policy', 'retention.ms'])
    expect(configs.get('cleanup.policy')).toMatchObject({ value: 'compact', configSource: ConfigSources.TOPIC_CONFIG })
    expect(configs.get('retention.ms')).toMatchObject({ value: '604800000', configSource: ConfigSources.DEFAULT_CONFIG })
    expect(tb.broker.topics.get('pl-events')!.configs).toEqual({ 'cleanup.policy': 'compact', 'segment.ms': '3600000' })

    expect(await failure(admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'pl-events', configs: [{ name: 'retention.ms', configOperation: APPEND, value: '5' }] }] }))).toBe('INVALID_CONFIG')
    expect(await failure(admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'pl-events', configs: [{ name: 'cleanup.policy', configOperation: SUBTRACT, value: 'compact' }] }] }))).toBe('INVALID_CONFIG')
    // validateOnly changes nothing.
    await admin.incrementalAlterConfigs({ validateOnly: true, resources: [{ resourceType: TOPIC, resourceName: 'pl-events', configs: [{ name: 'segment.ms', configOperation: DELETE }] }] })
    expect(tb.broker.topics.get('pl-events')!.configs).toEqual({ 'cleanup.policy': 'compact', 'segment.ms': '3600000' })
  })

  it('incrementalAlterConfigs on the broker: per-broker and cluster-default layers', async () => {
    await admin.incrementalAlterConfigs({ resources: [{ resourceType: BROKER, resourceName: '0', configs: [{ name: 'log.retention.bytes', configOperation: SET, value: '1048576' }] }] })
    await admin.incrementalAlterConfigs({ resources: [{ resourceType: BROKER, resourceName: '', configs: [{ name: 'log.segment.bytes', configOperation: SET, value: '8388608' }] }] })
    const [perBroker] = await admin.describeConfigs({ resources: [{ resourceType: BROKER, resourceName: '0', configurationKeys: ['log.retention.bytes', 'log.segment.bytes'] }] })
    const entries = new Map(perBroker!.configs.map((c) => [c.name, c]))
    expect(entries.get('log.retention.bytes')).toMatchObject({ value: '1048576', configSource: ConfigSources.DYNAMIC_BROKER_CONFIG })
    expect(entries.get('log.segment.bytes')).toMatchObject({ value: '8388608', configSource: ConfigSources.DYNAMIC_DEFAULT_BROKER_CONFIG })
    const [clusterDefault] = await admin.describeConfigs({ resources: [{ resourceType: BROKER, resourceName: '' }] })
    expect(clusterDefault!.configs.map((c) => [c.name, c.value, c.configSource])).toEqual([['log.segment.bytes', '8388608', ConfigSources.DYNAMIC_DEFAULT_BROKER_CONFIG]])
    // Topics without overrides follow the broker values.
    const configs = await topicConfigs('pl-events', ['retention.bytes', 'segment.bytes'])
    expect(configs.get('retention.bytes')).toMatchObject({ value: '1048576', configSource: ConfigSources.DYNAMIC_BROKER_CONFIG })
    expect(configs.get('segment.bytes')).toMatchObject({ value: '8388608', configSource: ConfigSources.DYNAMIC_DEFAULT_BROKER_CONFIG })
    expect({ perBroker: tb.broker.configs.dynamicBrokerConfigs('perBroker'), clusterDefault: tb.broker.configs.dynamicBrokerConfigs('clusterDefault') }).toEqual({ perBroker: { 'log.retention.bytes': '1048576' }, clusterDefault: { 'log.segment.bytes': '8388608' } })

    expect(await failure(admin.incrementalAlterConfigs({ resources: [{ resourceType: BROKER, resourceName: '0', configs: [{ name: 'log.dirs', configOperation: SET, value: '/tmp/x' }] }] }))).toBe('INVALID_REQUEST')
    expect(await failure(admin.incrementalAlterConfigs({ resources: [{ resourceType: BROKER, resourceName: '0', configs: [{ name: 'log.segment.bytes', configOperation: SET, value: 'huge' }] }] }))).toBe('INVALID_REQUEST')

    await admin.incrementalAlterConfigs({ resources: [{ resourceType: BROKER, resourceName: '0', configs: [{ name: 'log.retention.bytes', configOperation: DELETE }] }] })
    await admin.incrementalAlterConfigs({ resources: [{ resourceType: BROKER, resourceName: '', configs: [{ name: 'log.segment.bytes', configOperation: DELETE }] }] })
    expect({ perBroker: tb.broker.configs.dynamicBrokerConfigs('perBroker'), clusterDefault: tb.broker.configs.dynamicBrokerConfigs('clusterDefault') }).toEqual({ perBroker: {}, clusterDefault: {} })
    expect(tb.broker.config.getInt('log.segment.bytes')).toBe(1073741824)
  })

  it('deleteRecords (v2) moves the low watermark that ListOffsets then reports; describeLogDirs (v4) shows the sizes', async () => {
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      for (let i = 0; i < 3; i++) expect((await raw.produce('pl-events', 1, simpleBatch(`b${i}`, 4, true))).errorCode).toBe(0)
    } finally {
      raw.close()
    }
    const [deleted] = await admin.deleteRecords({ topics: [{ name: 'pl-events', partitions: [{ partition: 1, offset: 8n }] }] })
    expect(deleted!.partitions).toEqual([{ partition: 1, lowWatermark: 8n }])
    const [listed] = await admin.listOffsets({ topics: [{ name: 'pl-events', partitions: [{ partitionIndex: 1, timestamp: ListOffsetTimestamps.EARLIEST }] }] })
    expect(listed!.partitions[0]!.offset).toBe(8n)
    expect(await failure(admin.deleteRecords({ topics: [{ name: 'pl-events', partitions: [{ partition: 1, offset: 13n }] }] }))).toBe('OFFSET_OUT_OF_RANGE')

    const [dirs] = await admin.describeLogDirs({ topics: [{ name: 'pl-events', partitions: [0, 1, 2, 3] }] })
    expect(dirs!.broker).toBe(0)
    const dir = dirs!.results[0]!
    expect(dir.logDir).toBe(tb.dataDir)
    expect(dir.totalBytes > 0n && dir.usableBytes > 0n && dir.usableBytes <= dir.totalBytes).toBe(true)
    const partitions = dir.topics.find((t) => t.name === 'pl-events')!.partitions.sort((a, b) => a.partitionIndex - b.partitionIndex)
    expect(partitions.map((p) => p.partitionIndex)).toEqual([0, 1, 2, 3])
    const states = await tb.broker.router.states()
    const size = states.find((s) => s.topic === 'pl-events' && s.partition === 1)!.sizeBytes
    expect(size).toBeGreaterThan(0)
    expect(partitions[1]).toEqual({ partitionIndex: 1, partitionSize: BigInt(size), offsetLag: 0n, isFutureKey: false })
    expect(partitions[0]!.partitionSize).toBe(0n)
  })

  it('deletes topics (v6) and reports unknown ones', async () => {
    await admin.createTopics({ topics: ['pl-doomed'] })
    await admin.deleteTopics({ topics: ['pl-doomed'] })
    expect(await admin.listTopics()).not.toContain('pl-doomed')
    expect(tb.broker.topics.get('pl-doomed')).toBeUndefined()
    expect(await failure(admin.deleteTopics({ topics: ['pl-doomed'] }))).toBe('UNKNOWN_TOPIC_OR_PARTITION')
  })
})
