// The coordinators' services (src/broker/coordinators/) over fake ports, with no Broker: what they take
// from the broker is exactly what their ports offer. __consumer_offsets is created on first use with the
// config as it is at that moment, an existing topic is used as it is, and a closed service refuses.
import { describe, expect, it } from 'vitest'
import { GroupService, type GroupServicePorts } from '../../src/broker/coordinators/groups.js'
import { loadBrokerConfig, type BrokerConfig } from '../../src/config/broker-config.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { createLogger } from '../../src/observability/logger.js'
import type { CreateTopicRequest, TopicInfo } from '../../src/server/handlers/common/ports.js'

function fakePorts(existing?: TopicInfo): { ports: GroupServicePorts; created: CreateTopicRequest[]; setConfig(c: BrokerConfig): void } {
  const created: CreateTopicRequest[] = []
  let topic = existing
  let config = loadBrokerConfig({ overrides: ['offsets.topic.num.partitions=3', 'offsets.topic.replication.factor=1'] })
  const ports: GroupServicePorts = {
    config: () => config,
    log: createLogger({ level: 'silent' }),
    topics: {
      get: (name) => (name === topic?.name ? topic : undefined),
      getById: (id) => (id === topic?.topicId ? topic : undefined),
      async create(req) {
        created.push(req)
        topic = { name: req.name, topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions: req.numPartitions, replicationFactor: req.replicationFactor, configs: {} }
        return topic
      },
    },
    partitions: {
      onLeadershipChange: () => undefined,
      // This broker leads none of the partitions: nothing is replayed.
      hostedPartitions: () => [],
      states: async () => [],
      appendAsLeader: async () => [],
      read: async () => [],
      listOffsets: async () => [],
      releaseLeases: () => undefined,
    },
  }
  return { ports, created, setConfig: (c) => (config = c) }
}

describe('GroupService over its ports', () => {
  it('creates __consumer_offsets on first use, with the offsets.topic settings of the config at that moment', async () => {
    const { ports, created, setConfig } = fakePorts()
    const groups = new GroupService(ports)
    expect(groups.topicExists()).toBe(false)
    setConfig(loadBrokerConfig({ overrides: ['offsets.topic.num.partitions=5', 'offsets.topic.replication.factor=1'] }))
    const coordinator = await groups.coordinator()
    expect(created).toHaveLength(1)
    expect(created[0]).toMatchObject({ name: '__consumer_offsets', numPartitions: 5, replicationFactor: 1, validateOnly: false })
    expect(created[0]!.configs['cleanup.policy']).toBe('compact')
    expect(groups.topicExists()).toBe(true)
    expect(groups.current).toBe(coordinator)
    expect(await groups.coordinator()).toBe(coordinator)
    groups.close()
  })

  it('uses an existing topic as it is, and refuses once closed', async () => {
    const { ports, created } = fakePorts({ name: '__consumer_offsets', topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions: 7, replicationFactor: 1, configs: {} })
    const groups = new GroupService(ports)
    await groups.coordinator()
    expect(created).toHaveLength(0)
    groups.close()
    const refused = await groups.coordinator().then(() => undefined, (err: unknown) => err)
    expect(refused).toBeInstanceOf(KafkaError)
    expect((refused as KafkaError).code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE)
  })
})
