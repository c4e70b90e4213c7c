// A cluster whose only listener is SASL_SSL: a ZooKeeper and two broker processes (test/harness/cluster.ts)
// with certificates made by openssl at run time, PLAIN between brokers (the broker logs in as User:broker,
// a super user) and the ACL authorizer on. The controller's requests and the replica fetchers go over
// TLS + SASL (there is no other listener), so a topic of replication factor 2 that reaches a full ISR and
// takes acks=all writes proves inter-broker security works end to end. A SCRAM-SHA-256 client with ACLs
// produces and consumes; a PLAIN client without ACLs is refused with TOPIC_AUTHORIZATION_FAILED.
import { pbkdf2Sync, randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/admin.js'
import { BrokerConnection } from '../../src/client/connection.js'
import { Consumer } from '../../src/client/consumer.js'
import { KafkaError } from '../../src/client/errors.js'
import { Producer } from '../../src/client/producer.js'
import type { ClientSecurity, SaslCredentials } from '../../src/client/sasl.js'
import { AclOperation, AclPermission, PatternType, ResourceType } from '../../src/domain/acl.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as AlterScram from '../../src/protocol/messages/51-alter-user-scram-credentials.gen.js'
import { freeLoopbackPort, hasOpenssl, makeTestCertificates, startCluster, until, zookeeperMissing, type TestCertificates, type TestCluster } from '../harness/index.js'

const SKIP = zookeeperMissing() !== undefined || !hasOpenssl()
const TOPIC = 'secure-replicated'
const BROKER_LOGIN = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret" user_mallory="mallory-secret";'

let certs: TestCertificates
let cluster: TestCluster

const security = (sasl: SaslCredentials): ClientSecurity => ({ tls: { ca: readFileSync(certs.ca) }, sasl })
const asBroker = (): ClientSecurity => security({ mechanism: 'PLAIN', username: 'broker', password: 'broker-secret' })
const asAlice = (): ClientSecurity => security({ mechanism: 'SCRAM-SHA-256', username: 'alice', password: 'alice-secret' })
const asMallory = (): ClientSecurity => security({ mechanism: 'PLAIN', username: 'mallory', password: 'mallory-secret' })

/** SCRAM-SHA-256 credentials for a user, written with AlterUserScramCredentials over the secured listener (as kafka-configs does). */
async function upsertScram(port: number, user: string, password: string): Promise<number> {
  const conn = await BrokerConnection.connect({ host: '127.0.0.1', port, clientId: 'scram-admin', security: asBroker() })
  try {
    const salt = randomBytes(24)
    const iterations = 4096
    const req = AlterScram.createAlterUserScramCredentialsRequest({
      deletions: [],
      upsertions: [{ name: user, mechanism: 1, iterations, salt, saltedPassword: pbkdf2Sync(password, salt, iterations, 32, 'sha256') }],
    })
    const res = await conn.send(51, (w) => AlterScram.encodeAlterUserScramCredentialsRequest(w, req, 0), AlterScram.decodeAlterUserScramCredentialsResponse, { version: 0 })
    return res.results[0]?.errorCode ?? -1
  } finally {
    conn.close()
  }
}

beforeAll(async () => {
  if (SKIP) return
  certs = makeTestCertificates()
  const ports = new Map<number, number>()
  for (const id of [1, 2]) ports.set(id, await freeLoopbackPort())
  cluster = await startCluster({
    brokerIds: [1, 2],
    brokerPort: (id) => ports.get(id),
    brokerOverrides: (id) => [`listeners=SASL_SSL://127.0.0.1:${ports.get(id)}`],
    overrides: [
      'inter.broker.listener.name=SASL_SSL',
      'ssl.keystore.type=PEM',
      `ssl.keystore.location=${certs.serverKeystore}`,
      'ssl.truststore.type=PEM',
      `ssl.truststore.location=${certs.ca}`,
      'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256',
      'sasl.mechanism.inter.broker.protocol=PLAIN',
      `listener.name.sasl_ssl.plain.sasl.jaas.config=${BROKER_LOGIN}`,
      'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
      'super.users=User:broker',
      'offsets.topic.replication.factor=2',
    ],
  })
}, 60_000)

afterAll(async () => {
  await cluster?.stop()
  certs?.cleanup()
})

describe.skipIf(SKIP)('a cluster over SASL_SSL only', () => {
  it('replicates over TLS + SASL between brokers: RF 2, full ISR, acks=all; ACLs allow alice (SCRAM) and deny mallory', async () => {
    const bootstrapServers = cluster.bootstrap()
    const admin = new Admin({ bootstrapServers, clientId: 'secure-admin', security: asBroker() })
    try {
      const [created] = await admin.createTopics([{ name: TOPIC, numPartitions: 2, replicationFactor: 2, configs: { 'min.insync.replicas': '2' } }])
      expect(created?.replicationFactor).toBe(2)
      const results = await admin.createAcls([
        ...[AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE].map((operation) => ({
          resourceType: ResourceType.TOPIC, resourceName: TOPIC, patternType: PatternType.LITERAL, principal: 'User:alice', host: '*', operation, permission: AclPermission.ALLOW,
        })),
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
    expect(await upsertScram(cluster.broker(1).port, 'alice', 'alice-secret')).toBe(ErrorCode.NONE)

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
