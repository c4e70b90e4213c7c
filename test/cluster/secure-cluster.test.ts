// A cluster whose only listener is SASL_SSL: a ZooKeeper and two broker processes (test/harness/cluster.ts)
// with certificates made by openssl at run time, PLAIN between brokers (the broker logs in as User:broker,
// a super user) and the ACL authorizer on. The controller's requests and the replica fetchers go over
// TLS + SASL (there is no other listener), so a topic of replication factor 2 that reaches a full ISR and
// takes acks=all writes proves inter-broker security works end to end. A SCRAM-SHA-256 client with ACLs
// produces and consumes; a PLAIN client without ACLs is refused with TOPIC_AUTHORIZATION_FAILED.
// The setup is test/cluster/secure-cluster-setup.ts, shared with secure-cluster-strict.test.ts (three
// brokers: elections, groups and transactions under strict ACLs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/admin.js'
import { Consumer } from '../../src/client/consumer.js'
import { KafkaError } from '../../src/client/errors.js'
import { Producer } from '../../src/client/producer.js'
import { AclOperation, ResourceType } from '../../src/domain/acl.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { hasOpenssl, until, zookeeperMissing, type TestCertificates, type TestCluster } from '../harness/index.js'
import { allow, asBroker as asBrokerWith, asMallory as asMalloryWith, asScramUser, startSecureCluster, upsertScram, type SecureCluster } from './secure-cluster-setup.js'

const SKIP = zookeeperMissing() !== undefined || !hasOpenssl()
const TOPIC = 'secure-replicated'

let secure: SecureCluster
let certs: TestCertificates
let cluster: TestCluster

const asBroker = () => asBrokerWith(certs)
const asAlice = () => asScramUser(certs, 'alice')
const asMallory = () => asMalloryWith(certs)

beforeAll(async () => {
  if (SKIP) return
  secure = await startSecureCluster([1, 2], ['offsets.topic.replication.factor=2'])
  certs = secure.certs
  cluster = secure.cluster
}, 60_000)

afterAll(async () => {
  await secure?.stop()
})

describe.skipIf(SKIP)('a cluster over SASL_SSL only', () => {
  it('replicates over TLS + SASL between brokers: RF 2, full ISR, acks=all; ACLs allow alice (SCRAM) and deny mallory', async () => {
    const bootstrapServers = cluster.bootstrap()
    const admin = new Admin({ bootstrapServers, clientId: 'secure-admin', security: asBroker() })
    try {
      const [created] = await admin.createTopics([{ name: TOPIC, numPartitions: 2, replicationFactor: 2, configs: { 'min.insync.replicas': '2' } }])
      expect(created?.replicationFactor).toBe(2)
      const results = await admin.createAcls([
        ...[AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE].map((operation) => allow('alice', ResourceType.TOPIC, TOPIC, operation)),
      ])
      expect(results.map((r) => r.errorCode)).toEqual([0, 0, 0])
      // Every partition led, both replicas in sync: the controller reached the other broker and the follower fetches.
      await until('a full ISR on both partitions', async () => {
        const [t] = await admin.describeTopics([TOPIC])
        const ok = t !== undefined && t.partitions.length === 2 && t.partitions.every((p) => p.leader >= 0 && p.isr.length === 2)
        return ok ? t : undefined
      })
    } finally {
      await admin.close()
    }
    expect(await upsertScram(certs, cluster.broker(1).port, 'alice')).toBe(ErrorCode.NONE)

    const producer = new Producer({ bootstrapServers, clientId: 'alice-producer', security: asAlice(), acks: -1, enableIdempotence: false, allowAutoTopicCreation: false, maxBlockMs: 15_000 })
    const values = Array.from({ length: 20 }, (_, i) => `secure-${i}`)
    const expected = [...values]
    try {
      // ACLs reach each broker through ZooKeeper's change notifications (eventually, as in Kafka): a probe
      // per partition is retried until its leader allows it (a refused produce writes nothing).
      for (const partition of [0, 1]) {
        await until(`alice's ACLs on the leader of partition ${partition}`, async () => (await producer.send({ topic: TOPIC, partition, value: `probe-${partition}` })) ?? undefined)
        expected.push(`probe-${partition}`)
      }
      const metas = await Promise.all(values.map((value, i) => producer.send({ topic: TOPIC, partition: i % 2, value })))
      expect(metas).toHaveLength(20)
      expect(metas.every((m) => m.offset >= 0)).toBe(true)
    } finally {
      await producer.close()
    }

    const consumer = new Consumer({ bootstrapServers, clientId: 'alice-consumer', security: asAlice(), autoOffsetReset: 'earliest' })
    try {
      consumer.assign([{ topic: TOPIC, partition: 0 }, { topic: TOPIC, partition: 1 }])
      const seen: string[] = []
      await until('alice reads every record', async () => {
        for (const r of await consumer.poll(500)) seen.push(r.value!.toString())
        return seen.length >= expected.length ? seen : undefined
      })
      expect(seen.sort()).toEqual(expected.sort())
    } finally {
      await consumer.close()
    }

    // acks=all and min.insync.replicas=2: the follower copied every record, over the secured link.
    const check = new Admin({ bootstrapServers, clientId: 'secure-check', security: asBroker() })
    try {
      const [t] = await check.describeTopics([TOPIC])
      for (const p of t!.partitions) expect(p.isr.sort()).toEqual([1, 2])
    } finally {
      await check.close()
    }

    const intruder = new Producer({ bootstrapServers, clientId: 'mallory', security: asMallory(), acks: -1, enableIdempotence: false, allowAutoTopicCreation: false, maxBlockMs: 5000 })
    try {
      const err = await intruder.send({ topic: TOPIC, partition: 0, value: 'nope' }).then(() => null, (e: unknown) => e)
      expect(err).toBeInstanceOf(KafkaError)
      expect((err as KafkaError).code).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    } finally {
      await intruder.close()
    }
  }, 40_000)
})
