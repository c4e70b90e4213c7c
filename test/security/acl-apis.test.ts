// The ACL checks of the admin, group and transactional APIs with a real client (KafkaJS over
// SASL/PLAIN): each denial comes back as Kafka's error code (GROUP_, TOPIC_, CLUSTER_,
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and the connection keeps serving; listings are filtered to
// what the principal may Describe.
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ConfigResourceTypes, Kafka, logLevel, ResourcePatternTypes, type Admin } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin as SkeinAdmin } from '../../src/client/admin.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let port = 0
const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";'

const kafka = (user: string): Kafka =>
  new Kafka({ clientId: `aclapi-${user}`, brokers: [`127.0.0.1:${port}`], sasl: { mechanism: 'plain', username: user, password: `${user}-secret` }, logLevel: logLevel.NOTHING, retry: { retries: 0 } })

async function asUser<T>(user: string, fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka(user).admin()
  await admin.connect()
  // KafkaJS's admin fills its broker pool from a topic metadata answer before finding coordinators.
  await admin.fetchTopicMetadata({ topics: ['ap-t'] })
  try {
    return await fn(admin)
  } finally {
    await admin.disconnect()
  }
}

const failure = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p
    return 'no error'
  } catch (err) {
    const e = err as { type?: string; errors?: { type?: string }[]; groups?: { error?: { type?: string } }[] }
    return e.type ?? e.errors?.[0]?.type ?? e.groups?.[0]?.error?.type ?? (err as Error).message
  }
}

const allow = (resourceType: number, resourceName: string, operation: number) => ({
  resourceType, resourceName, resourcePatternType: ResourcePatternTypes.LITERAL, principal: 'User:alice', host: '*', operation, permissionType: AclPermissionTypes.ALLOW,
})

beforeAll(async () => {
  tb = await startTestBroker([
    'listeners=SASL_PLAINTEXT://127.0.0.1:0',
    'listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT',
    'sasl.enabled.mechanisms=PLAIN',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`,
    'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
    'super.users=User:admin',
    'allow.everyone.if.no.acl.found=false',
    'group.initial.rebalance.delay.ms=0',
  ])
  port = tb.broker.endpoints[0]!.port
  const setup = kafka('admin').admin()
  await setup.connect()
  await setup.createTopics({ topics: [{ topic: 'ap-t', numPartitions: 1 }, { topic: 'ap-secret', numPartitions: 1 }] })
  for (const groupId of ['ap-other', 'ap-hidden']) await setup.setOffsets({ groupId, topic: 'ap-t', partitions: [{ partition: 0, offset: '0' }] })
  await setup.createAcls({
      acl: [
        allow(AclResourceTypes.TOPIC, 'ap-t', AclOperationTypes.WRITE),
        allow(AclResourceTypes.TOPIC, 'ap-t', AclOperationTypes.READ),
        // Metadata of ap-secret is served; writing to it is not.
        allow(AclResourceTypes.TOPIC, 'ap-secret', AclOperationTypes.DESCRIBE),
        allow(AclResourceTypes.GROUP, 'ap-other', AclOperationTypes.DESCRIBE),
        allow(AclResourceTypes.GROUP, 'ap-configs', AclOperationTypes.DESCRIBE_CONFIGS),
        allow(AclResourceTypes.TRANSACTIONAL_ID, 'ap-tx', AclOperationTypes.WRITE),
        // Describe lets the client find the coordinator; InitProducerId needs Write.
        allow(AclResourceTypes.TRANSACTIONAL_ID, 'ap-other-tx', AclOperationTypes.DESCRIBE),
      ],
    })
  await setup.disconnect()
}, 60_000)

afterAll(async () => {
  await tb?.stop()
})

describe('ACL checks of the admin, group and transactional APIs', () => {
  it('groups: DeleteGroups without Delete answers GROUP_AUTHORIZATION_FAILED, ListGroups lists only describable groups', async () => {
    await asUser('alice', async (admin) => {
      // Describe on the group lets the client find its coordinator and describe it, not delete it.
      const { groups } = await admin.describeGroups(['ap-other'])
      expect(groups.map((g) => [g.groupId, g.state])).toEqual([['ap-other', 'Empty']])
      expect(await failure(admin.deleteGroups(['ap-other']))).toBe('GROUP_AUTHORIZATION_FAILED')
      expect((await admin.listGroups()).groups.map((g) => g.groupId)).toEqual(['ap-other'])
    })
    await asUser('admin', async (admin) => {
      expect((await admin.listGroups()).groups.map((g) => g.groupId).sort()).toEqual(['ap-hidden', 'ap-other'])
      expect(await admin.deleteGroups(['ap-hidden'])).toEqual([expect.objectContaining({ groupId: 'ap-hidden', errorCode: 0 })])
    })
  })

  it('topics: DeleteTopics, CreatePartitions and DescribeConfigs of a topic answer TOPIC_AUTHORIZATION_FAILED', async () => {
    await asUser('alice', async (admin) => {
      expect(await failure(admin.deleteTopics({ topics: ['ap-t'] }))).toBe('TOPIC_AUTHORIZATION_FAILED')
      expect(await failure(admin.createPartitions({ topicPartitions: [{ topic: 'ap-t', count: 2 }] }))).toBe('TOPIC_AUTHORIZATION_FAILED')
      expect(await failure(admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.TOPIC, name: 'ap-t' }] }))).toBe('TOPIC_AUTHORIZATION_FAILED')
      // The same connection still serves what alice may do.
      expect((await admin.fetchTopicMetadata({ topics: ['ap-t'] })).topics[0]!.name).toBe('ap-t')
    })
    await asUser('admin', async (admin) => {
      expect((await admin.fetchTopicMetadata({ topics: ['ap-t'] })).topics[0]!.partitions).toHaveLength(1)
    })
  })

  it('cluster: DescribeConfigs and AlterConfigs of the broker answer CLUSTER_AUTHORIZATION_FAILED', async () => {
    await asUser('alice', async (admin) => {
      expect(await failure(admin.describeConfigs({ includeSynonyms: false, resources: [{ type: ConfigResourceTypes.BROKER, name: String(tb.broker.nodeId) }] }))).toBe('CLUSTER_AUTHORIZATION_FAILED')
      expect(await failure(admin.alterConfigs({ validateOnly: true, resources: [{ type: ConfigResourceTypes.BROKER, name: String(tb.broker.nodeId), configEntries: [{ name: 'log.cleaner.threads', value: '2' }] }] }))).toBe('CLUSTER_AUTHORIZATION_FAILED')
    })
  })

  it('group configs: DescribeConfigs and AlterConfigs of a GROUP resource need those operations on the group (GROUP_AUTHORIZATION_FAILED)', async () => {
    const admin = (user: string): SkeinAdmin =>
      new SkeinAdmin({ bootstrapServers: `127.0.0.1:${port}`, clientId: `aclapi-${user}`, security: { sasl: { mechanism: 'PLAIN', username: user, password: `${user}-secret` } }, retries: 0 })
    const alice = admin('alice')
    const root = admin('admin')
    const set = { op: 'set' as const, name: 'share.auto.offset.reset', value: 'earliest' }
    try {
      const [described] = await alice.describeConfigs([{ type: 'group', name: 'ap-configs', keys: ['share.auto.offset.reset'] }])
      expect(described!.configs.map((c) => [c.name, c.value])).toEqual([['share.auto.offset.reset', 'latest']])
      await expect(alice.describeConfigs([{ type: 'group', name: 'ap-other' }])).rejects.toThrow(/GROUP_AUTHORIZATION_FAILED|not authorized/i)
      await expect(alice.alterConfigs({ type: 'group', name: 'ap-configs' }, [set])).rejects.toThrow(/GROUP_AUTHORIZATION_FAILED|not authorized/i)
      await root.alterConfigs({ type: 'group', name: 'ap-configs' }, [set])
      const [after] = await alice.describeConfigs([{ type: 'group', name: 'ap-configs', keys: ['share.auto.offset.reset'] }])
      expect(after!.configs.map((c) => [c.name, c.value])).toEqual([['share.auto.offset.reset', 'earliest']])
    } finally {
      await alice.close()
      await root.close()
    }
  })

  it('transactions: a topic the producer may not write is TOPIC_AUTHORIZATION_FAILED, an unauthorized id TRANSACTIONAL_ID_AUTHORIZATION_FAILED, offsets for a group it may not read GROUP_AUTHORIZATION_FAILED', async () => {
    const denied = kafka('alice').producer({ transactionalId: 'ap-other-tx', maxInFlightRequests: 1, idempotent: true, retry: { retries: 1 } })
    expect(await failure(denied.connect().then(() => denied.transaction()))).toBe('TRANSACTIONAL_ID_AUTHORIZATION_FAILED')
    await denied.disconnect()

    const producer = kafka('alice').producer({ transactionalId: 'ap-tx', maxInFlightRequests: 1, idempotent: true, retry: { retries: 1 } })
    await producer.connect()
    try {
      const txn = await producer.transaction()
      expect(await failure(txn.send({ topic: 'ap-secret', messages: [{ value: 'x' }] }))).toBe('TOPIC_AUTHORIZATION_FAILED')
      await txn.abort().catch(() => {})
      const txn2 = await producer.transaction()
      await txn2.send({ topic: 'ap-t', messages: [{ value: 'ok' }] })
      expect(await failure(txn2.sendOffsets({ consumerGroupId: 'ap-other', topics: [{ topic: 'ap-t', partitions: [{ partition: 0, offset: '1' }] }] }))).toBe('GROUP_AUTHORIZATION_FAILED')
      await txn2.abort().catch(() => {})
    } finally {
      await producer.disconnect()
    }
  })
})
