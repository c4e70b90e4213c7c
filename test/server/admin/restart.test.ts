// What the admin APIs change survives a broker stop/start: topic configs, dynamic broker configs,
// added partitions, deleted topics and deleted records.
import { Admin, ConfigResourceTypes, ConfigSources, IncrementalAlterConfigOperationTypes, ListOffsetTimestamps } from '@platformatic/kafka'
import { afterAll, describe, expect, it } from 'vitest'
import { RawClient, simpleBatch, startTestBroker, type TestBroker } from '../../harness/index.js'

const { TOPIC, BROKER } = ConfigResourceTypes
const { SET } = IncrementalAlterConfigOperationTypes

describe('admin changes across a restart', () => {
  let tb: TestBroker | undefined

  afterAll(async () => {
    await tb?.stop()
  })

  async function withAdmin<T>(fn: (admin: Admin) => Promise<T>): Promise<T> {
    const admin = new Admin({ clientId: 'restart-test', bootstrapBrokers: [tb!.bootstrap], retries: 0 })
    try {
      return await fn(admin)
    } finally {
      await admin.close()
    }
  }

  async function describe_(admin: Admin, resourceType: number, resourceName: string, keys: string[]) {
    const [res] = await admin.describeConfigs({ resources: [{ resourceType: resourceType as 2, resourceName, configurationKeys: keys }] })
    return new Map(res!.configs.map((c) => [c.name, [c.value, c.configSource]]))
  }

  it('keeps topic configs, broker configs, partitions, deletions and log start offsets', async () => {
    tb = await startTestBroker()
    const topicId = await withAdmin(async (admin) => {
      const [created] = await admin.createTopics({ topics: ['keep'], partitions: 1, configs: [{ name: 'retention.ms', value: '120000' }] })
      await admin.createTopics({ topics: ['gone'] })
      await admin.incrementalAlterConfigs({ resources: [{ resourceType: TOPIC, resourceName: 'keep', configs: [{ name: 'cleanup.policy', configOperation: SET, value: 'compact,delete' }] }] })
      await admin.incrementalAlterConfigs({ resources: [
        { resourceType: BROKER, resourceName: '0', configs: [{ name: 'log.retention.bytes', configOperation: SET, value: '2097152' }] },
      ] })
      await admin.alterConfigs({ resources: [{ resourceType: BROKER, resourceName: '', configs: [{ name: 'log.roll.ms', value: '3600000' }] }] })
      // platformatic sends assignments as given; Kafka wants one per added partition when the list is not null.
      await admin.createPartitions({ topics: [{ name: 'keep', count: 3, assignments: [{ brokerIds: [0] }, { brokerIds: [0] }] }] })
      await admin.deleteTopics({ topics: ['gone'] })
      return created!.id
    })
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      expect((await raw.produce('keep', 2, simpleBatch('r', 6, true))).errorCode).toBe(0)
    } finally {
      raw.close()
    }
    await withAdmin((admin) => admin.deleteRecords({ topics: [{ name: 'keep', partitions: [{ partition: 2, offset: 4n }] }] }))

    tb = await tb.restart()
    expect(Buffer.from(tb.broker.topics.get('keep')!.topicId, 'base64url').toString('hex')).toBe(topicId.replaceAll('-', ''))
    expect(tb.broker.config.getInt('log.retention.bytes')).toBe(2097152)
    expect(tb.broker.config.logRollMs).toBe(3600000)
    await withAdmin(async (admin) => {
      const topic = await describe_(admin, TOPIC, 'keep', ['retention.ms', 'cleanup.policy', 'retention.bytes', 'segment.ms'])
      expect(topic.get('retention.ms')).toEqual(['120000', ConfigSources.TOPIC_CONFIG])
      expect(topic.get('cleanup.policy')).toEqual(['compact,delete', ConfigSources.TOPIC_CONFIG])
      expect(topic.get('retention.bytes')).toEqual(['2097152', ConfigSources.DYNAMIC_BROKER_CONFIG])
      expect(topic.get('segment.ms')).toEqual(['3600000', ConfigSources.DYNAMIC_DEFAULT_BROKER_CONFIG])
      const broker = await describe_(admin, BROKER, '0', ['log.retention.bytes', 'log.roll.ms'])
      expect(broker.get('log.retention.bytes')).toEqual(['2097152', ConfigSources.DYNAMIC_BROKER_CONFIG])
      expect(broker.get('log.roll.ms')).toEqual(['3600000', ConfigSources.DYNAMIC_DEFAULT_BROKER_CONFIG])

      const topics = await admin.listTopics()
      expect(topics).toContain('keep')
      expect(topics).not.toContain('gone')
      const metadata = await admin.metadata({ topics: ['keep'], forceUpdate: true })
      expect(metadata.topics.get('keep')!.partitionsCount).toBe(3)

      const offsetAt = async (timestamp: bigint) => {
        const [listed] = await admin.listOffsets({ topics: [{ name: 'keep', partitions: [{ partitionIndex: 2, timestamp }] }] })
        return listed!.partitions[0]!.offset
      }
      expect(await offsetAt(ListOffsetTimestamps.EARLIEST)).toBe(4n)
      expect(await offsetAt(ListOffsetTimestamps.LATEST)).toBe(6n)
    })
  })
})
