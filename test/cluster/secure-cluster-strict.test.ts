// A three-broker cluster whose every listener is SASL_SSL, with the ACL authorizer on,
// allow.everyone.if.no.acl.found=false and only User:broker (the brokers' own PLAIN login) a super user
// (test/cluster/secure-cluster-setup.ts): ZooKeeper and broker processes, certificates made by openssl at
// run time. Every inter-broker connection (replica fetchers, the controller's requests, AlterPartition,
// WriteTxnMarkers) can only go over TLS + SASL, as User:broker. Clients are SCRAM-SHA-256 users with
// the narrowest ACLs their work needs. Proven end to end:
// - Elections: SIGKILL of an RF-3 partition's leader (min.insync.replicas=2) elects a new leader and
//   acks=all writes by a user with only Write and Describe on the topic succeed; the restarted broker
//   rejoins the ISR. SIGKILL of the active controller elects another, which then leads a new topic's
//   partitions to a full ISR, and the killed one rejoins.
// - Groups: two Skein consumers with Read on the topic and on the group only share its partitions and
//   commit; librdkafka (python3-confluent-kafka) in the same group over SASL_SSL resumes from those
//   offsets and commits too. __consumer_offsets is created and written by the brokers themselves, which
//   the client's ACLs do not cover. A user without Read on the group gets GROUP_AUTHORIZATION_FAILED.
// - Transactions: a producer with Write on its transactional id and on the topic commits and aborts
//   across partitions led by three different brokers, so the coordinator's WriteTxnMarkers reach other
//   brokers (ClusterAction, allowed to User:broker; the producing user's own WriteTxnMarkers is refused
//   with CLUSTER_AUTHORIZATION_FAILED); read_committed sees only the committed records. A user without
//   Write on the transactional id gets TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
// The tests run in order on one cluster (the groups and transactions run after the brokers' restarts).
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/admin.js'
import { BrokerConnection } from '../../src/client/connection.js'
import { Consumer } from '../../src/client/consumer.js'
import { KafkaError } from '../../src/client/errors.js'
import { tpKey } from '../../src/client/offsets.js'
import { Producer } from '../../src/client/producer.js'
import { AclOperation, ResourceType } from '../../src/domain/acl.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as WriteTxnMarkers from '../../src/protocol/messages/27-write-txn-markers.gen.js'
import { hasOpenssl, hasPythonModule, runOk, SYSTEM_PYTHON, until, zookeeperMissing, type TestCertificates, type TestCluster } from '../harness/index.js'
import { allow, asBroker, asScramUser, startSecureCluster, untilAclsOnEveryBroker, upsertScram, type SecureCluster } from './secure-cluster-setup.js'

const SKIP = zookeeperMissing() !== undefined || !hasOpenssl()
const ELECT_TOPIC = 'strict-elect'
const AFTER_FAILOVER_TOPIC = 'strict-after-failover'
const GROUP_TOPIC = 'strict-group'
const GROUP = 'strict-readers'
const TXN_TOPIC = 'strict-txn'
const TXN_ID = 'strict-tx'
const GROUP_MEMBER_PY = join(dirname(fileURLToPath(import.meta.url)), 'python', 'secure_group_member.py')

let secure: SecureCluster
let certs: TestCertificates
let cluster: TestCluster

/** An Admin as the super user, bootstrapped from the brokers running now. */
async function asAdmin<T>(fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = new Admin({ bootstrapServers: cluster.bootstrap(), clientId: 'strict-admin', security: asBroker(certs) })
  try {
    return await fn(admin)
  } finally {
    await admin.close()
  }
}

/** Each partition's leader and ISR, by partition. */
async function partitions(topic: string): Promise<{ partition: number; leader: number; isr: number[] }[]> {
  return asAdmin(async (admin) => {
    const [t] = await admin.describeTopics([topic])
    return (t?.partitions ?? []).map((p) => ({ partition: p.partition, leader: p.leader, isr: [...p.isr].sort() })).sort((a, b) => a.partition - b.partition)
  })
}

/** Resolves once every partition of the topic has a leader and exactly `isr` in sync. */
async function untilIsr(what: string, topic: string, count: number, isr: number[], timeoutMs = 40_000): Promise<{ partition: number; leader: number; isr: number[] }[]> {
  return until(what, async () => {
    const ps = await partitions(topic).catch(() => [])
    return ps.length === count && ps.every((p) => p.leader >= 0 && p.isr.join() === isr.join()) ? ps : undefined
  }, timeoutMs)
}

const aliveIds = (): number[] => cluster.brokers.filter((b) => b.alive()).map((b) => b.id).sort()

/** What each broker logged before its restarts (a restart starts a new process, and a new output). */
const earlierLogs = new Map<number, string[]>()

async function restart(id: number): Promise<void> {
  const b = cluster.broker(id)
  earlierLogs.set(id, [...(earlierLogs.get(id) ?? []), b.output()])
  await b.start()
}

/** A KafkaError's code, or the error itself when it is something else (so the assertion shows it). */
const codeOf = (err: unknown): unknown => (err instanceof KafkaError ? err.code : err)

beforeAll(async () => {
  if (SKIP) return
  secure = await startSecureCluster([1, 2, 3], [
    'offsets.topic.replication.factor=3',
    'offsets.topic.num.partitions=3',
    'transaction.state.log.replication.factor=3',
    'transaction.state.log.num.partitions=3',
    'transaction.state.log.min.isr=2',
    'group.initial.rebalance.delay.ms=0',
    // A follower that died with the old controller leaves the ISR by its leader's AlterPartition once it
    // lags this long: the new controller, as Kafka's, takes the ISR as it finds it at failover (the
    // default 30 s would outlast the test).
    'replica.lag.time.max.ms=3000',
  ])
  certs = secure.certs
  cluster = secure.cluster
  for (const user of ['alice', 'carol', 'dave', 'tina', 'eve']) expect(await upsertScram(certs, cluster.broker(1).port, user)).toBe(ErrorCode.NONE)
  // Every ACL up front, and on every broker before the tests start.
  const results = await asAdmin((admin) => admin.createAcls([
    // alice produces: Write and Describe on one topic, nothing else (no IdempotentWrite on the cluster).
    allow('alice', ResourceType.TOPIC, ELECT_TOPIC, AclOperation.WRITE),
    allow('alice', ResourceType.TOPIC, ELECT_TOPIC, AclOperation.DESCRIBE),
    // carol consumes in a group: Read on the topic and on the group.
    allow('carol', ResourceType.TOPIC, GROUP_TOPIC, AclOperation.READ),
    allow('carol', ResourceType.GROUP, GROUP, AclOperation.READ),
    // dave may read the topic but not join the group.
    allow('dave', ResourceType.TOPIC, GROUP_TOPIC, AclOperation.READ),
    // tina writes transactions: Write on her transactional id and on the topic.
    allow('tina', ResourceType.TRANSACTIONAL_ID, TXN_ID, AclOperation.WRITE),
    allow('tina', ResourceType.TOPIC, TXN_TOPIC, AclOperation.WRITE),
    // eve may write the topic but not use the transactional id.
    allow('eve', ResourceType.TOPIC, TXN_TOPIC, AclOperation.WRITE),
  ]))
  expect(results.map((r) => r.errorCode)).toEqual(results.map(() => ErrorCode.NONE))
  await untilAclsOnEveryBroker(secure, results.length)
}, 60_000)

afterEach((ctx) => {
  if (ctx.task.result?.state !== 'fail' || cluster === undefined) return
  // The brokers' logs of every process each has run, kept for diagnosis (the cluster's data dirs are removed at the end).
  const dir = mkdtempSync(join(tmpdir(), 'skein-secure-cluster-logs-'))
  for (const b of cluster.brokers) writeFileSync(join(dir, `broker-${b.id}.log`), [...(earlierLogs.get(b.id) ?? []), b.output()].join('\n--- restarted ---\n'))
  console.error(`brokers' logs of the failed test: ${dir}`)
})

afterAll(async () => {
  await secure?.stop()
})

describe.skipIf(SKIP)('an all-SASL_SSL cluster with strict ACLs', () => {
  it('elects a new leader when the leader is SIGKILLed and a new controller when the controller is; the killed brokers rejoin', async () => {
    await asAdmin((admin) => admin.createTopics([{ name: ELECT_TOPIC, numPartitions: 1, replicationFactor: 3, configs: { 'min.insync.replicas': '2' } }]))
    const [before] = await untilIsr('a full ISR of the RF-3 topic', ELECT_TOPIC, 1, [1, 2, 3])
    const producer = () => new Producer({ bootstrapServers: cluster.bootstrap(), clientId: 'alice', security: asScramUser(certs, 'alice'), acks: -1, allowAutoTopicCreation: false, maxBlockMs: 20_000 })
    const written: string[] = []

    let alice = producer()
    try {
      // Idempotent by default: InitProducerId is allowed by Write on a topic (KIP-679), no IdempotentWrite needed.
      await until('alice\'s ACLs on the leader', async () => (await alice.send({ topic: ELECT_TOPIC, partition: 0, value: 'probe' }).catch(() => undefined)))
      written.push('probe')
    } finally {
      await alice.close()
    }

    const leader = cluster.broker(before!.leader)
    await leader.kill()
    const [elected] = await until('a new leader from the ISR', async () => {
      const ps = await partitions(ELECT_TOPIC).catch(() => [])
      return ps[0] !== undefined && ps[0].leader >= 0 && ps[0].leader !== leader.id ? ps : undefined
    })
    expect(elected!.isr).not.toContain(leader.id)
    alice = producer()
    try {
      const values = Array.from({ length: 10 }, (_, i) => `after-leader-kill-${i}`)
      const metas = await Promise.all(values.map((value) => alice.send({ topic: ELECT_TOPIC, partition: 0, value })))
      expect(metas.every((m) => m.offset > 0)).toBe(true)
      written.push(...values)
    } finally {
      await alice.close()
    }
    // The restarted broker truncates, fetches from the new leader over TLS + SASL and is added back to the ISR.
    await restart(leader.id)
    await untilIsr('the restarted broker back in the ISR', ELECT_TOPIC, 1, [1, 2, 3])

    const controllerId = await asAdmin(async (admin) => (await admin.describeCluster()).controllerId)
    expect([1, 2, 3]).toContain(controllerId)
    const oldController = cluster.broker(controllerId)
    await oldController.kill()
    const newController = await until('a new controller', async () => {
      const id = await asAdmin(async (admin) => (await admin.describeCluster()).controllerId).catch(() => -1)
      return id >= 0 && id !== controllerId ? id : undefined
    })
    expect(aliveIds()).toContain(newController)
    // The new controller creates a topic on the two brokers left: its LeaderAndIsr reaches the other broker
    // over SASL_SSL (it is led and fetched to a full ISR) ...
    await asAdmin((admin) => admin.createTopics([{ name: AFTER_FAILOVER_TOPIC, numPartitions: 2, replicationFactor: 2 }]))
    await untilIsr('the new topic led with a full ISR', AFTER_FAILOVER_TOPIC, 2, aliveIds())
    // ... the old topic's ISR loses the killed broker, and acks=all writes go on.
    await untilIsr('the killed controller out of the ISR', ELECT_TOPIC, 1, aliveIds())
    alice = producer()
    try {
      const values = Array.from({ length: 10 }, (_, i) => `after-controller-kill-${i}`)
      const metas = await Promise.all(values.map((value) => alice.send({ topic: ELECT_TOPIC, partition: 0, value })))
      expect(metas).toHaveLength(10)
      written.push(...values)
    } finally {
      await alice.close()
    }
    await restart(oldController.id)
    await untilIsr('the killed controller back in the ISR', ELECT_TOPIC, 1, [1, 2, 3])

    // Every acknowledged record is there once, read as the super user.
    const reader = new Consumer({ bootstrapServers: cluster.bootstrap(), clientId: 'strict-reader', security: asBroker(certs), autoOffsetReset: 'earliest' })
    try {
      reader.assign([{ topic: ELECT_TOPIC, partition: 0 }])
      const seen: string[] = []
      await until('every acknowledged record read back', async () => {
        for (const r of await reader.poll(500)) seen.push(r.value!.toString())
        return seen.length >= written.length ? seen : undefined
      })
      expect(seen).toEqual(written)
    } finally {
      await reader.close()
    }
  }, 120_000)

  it('runs a consumer group with Read on the topic and the group only; without Read on the group: GROUP_AUTHORIZATION_FAILED', async () => {
    await asAdmin((admin) => admin.createTopics([{ name: GROUP_TOPIC, numPartitions: 4, replicationFactor: 2 }]))
    await until('the group topic led', async () => {
      const ps = await partitions(GROUP_TOPIC).catch(() => [])
      return ps.length === 4 && ps.every((p) => p.leader >= 0 && p.isr.length === 2) ? ps : undefined
    })
    const feeder = new Producer({ bootstrapServers: cluster.bootstrap(), clientId: 'strict-feeder', security: asBroker(certs), acks: -1 })
    const produce = async (values: string[]): Promise<void> => {
      await Promise.all(values.map((value, i) => feeder.send({ topic: GROUP_TOPIC, partition: i % 4, value })))
    }
    try {
      const first = Array.from({ length: 40 }, (_, i) => `group-${i}`)
      await produce(first)

      const member = (n: number) => new Consumer({
        bootstrapServers: cluster.bootstrap(), clientId: `carol-${n}`, security: asScramUser(certs, 'carol'), groupId: GROUP,
        autoOffsetReset: 'earliest', enableAutoCommit: false, sessionTimeoutMs: 10_000, heartbeatIntervalMs: 500,
      })
      const members = [member(1), member(2)]
      try {
        for (const m of members) m.subscribe([GROUP_TOPIC])
        const seen = new Set<string>()
        // Each member polls in a loop of its own, as two processes would: a member's poll can wait in
        // JoinGroup until the other member rejoins, which that one does in its own poll. A member that
        // owns two partitions commits what it has read.
        let running = true
        let lastError: unknown
        const loops = members.map(async (m) => {
          while (running) {
            try {
              for (const r of await m.poll(200)) seen.add(r.value!.toString())
              if (m.assignment().length === 2) await m.commit()
            } catch (err) {
              lastError = err // a rebalance under way (the next round commits), or the failure shown below
              await new Promise((r) => setTimeout(r, 100))
            }
          }
        })
        try {
          await until('two members sharing four partitions, every offset committed', async () => {
            const owned = members.map((m) => m.assignment().map((tp) => tp.partition).sort())
            if (owned.some((ps) => ps.length !== 2)) return undefined
            const committed = await asAdmin((admin) => admin.fetchOffsets(GROUP, [0, 1, 2, 3].map((partition) => ({ topic: GROUP_TOPIC, partition }))))
            return [0, 1, 2, 3].every((p) => committed.get(tpKey(GROUP_TOPIC, p)) === 10) ? owned : undefined
          }, 60_000).catch((err: unknown) => {
            throw new Error(`${(err as Error).message}; the members' last error: ${String(lastError)}`)
          })
        } finally {
          running = false
          await Promise.race([Promise.all(loops), new Promise((r) => setTimeout(r, 10_000))])
        }
        expect(members.flatMap((m) => m.assignment().map((tp) => tp.partition)).sort()).toEqual([0, 1, 2, 3])
        expect([...seen].sort()).toEqual([...first].sort())
      } finally {
        await Promise.all(members.map((m) => m.close()))
      }

      // The brokers made and wrote __consumer_offsets themselves (carol has no ACL on it), replicated three times.
      const offsetsTopic = await asAdmin(async (admin) => (await admin.describeTopics(['__consumer_offsets'], { includeInternal: true }))[0])
      expect(offsetsTopic?.isInternal).toBe(true)
      expect(offsetsTopic?.partitions.every((p) => p.replicas.length === 3)).toBe(true)

      if (hasPythonModule('confluent_kafka')) {
        // librdkafka as carol, over SASL_SSL with SCRAM, resumes from the group's committed offsets.
        const more = [0, 1, 2, 3].map((p) => `group-more-${p}`)
        await produce(more)
        const out = await runOk(SYSTEM_PYTHON, [GROUP_MEMBER_PY], {
          input: JSON.stringify({ bootstrap: cluster.bootstrap(), ca: certs.ca, user: 'carol', password: 'carol-secret', group: GROUP, topic: GROUP_TOPIC, count: 4 }),
          timeoutMs: 60_000,
        })
        const res = JSON.parse(out.stdout.toString()) as { values: string[]; assigned: number[] }
        expect(res.assigned).toEqual([0, 1, 2, 3])
        expect(res.values.sort()).toEqual(more)
        const committed = await asAdmin((admin) => admin.fetchOffsets(GROUP, [0, 1, 2, 3].map((partition) => ({ topic: GROUP_TOPIC, partition }))))
        expect([0, 1, 2, 3].map((p) => committed.get(tpKey(GROUP_TOPIC, p)))).toEqual([11, 11, 11, 11])
      }
    } finally {
      await feeder.close()
    }

    const dave = new Consumer({ bootstrapServers: cluster.bootstrap(), clientId: 'dave', security: asScramUser(certs, 'dave'), groupId: GROUP, autoOffsetReset: 'earliest' })
    try {
      dave.subscribe([GROUP_TOPIC])
      const err = await dave.poll(5000).then(() => null, (e: unknown) => e)
      expect(codeOf(err)).toBe(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    } finally {
      await dave.close().catch(() => {})
    }
  }, 120_000)

  it('commits and aborts transactions across three leaders with Write on the transactional id; without it: TRANSACTIONAL_ID_AUTHORIZATION_FAILED', async () => {
    // One partition led by each broker (the first replica is the preferred leader).
    await asAdmin((admin) => admin.createTopics([{ name: TXN_TOPIC, replicaAssignment: [[1, 2], [2, 3], [3, 1]] }]))
    const ps = await until('the transactional topic led', async () => {
      const got = await partitions(TXN_TOPIC).catch(() => [])
      return got.length === 3 && got.every((p) => p.leader >= 0 && p.isr.length === 2) ? got : undefined
    })
    expect(new Set(ps.map((p) => p.leader)).size).toBe(3)

    const tina = new Producer({ bootstrapServers: cluster.bootstrap(), clientId: 'tina', security: asScramUser(certs, 'tina'), transactionalId: TXN_ID, acks: -1, maxBlockMs: 20_000 })
    const committed: string[] = []
    const aborted: string[] = []
    let producerId = -1
    let producerEpoch = -1
    try {
      await tina.initTransactions()
      ;({ producerId, producerEpoch } = tina.producerIdAndEpoch!)
      for (const [n, outcome] of [[1, 'commit'], [2, 'abort'], [3, 'commit']] as const) {
        tina.beginTransaction()
        const values = [0, 1, 2].flatMap((partition) => [0, 1].map((i) => ({ partition, value: `txn-${n}-${outcome}-p${partition}-${i}` })))
        await Promise.all(values.map((v) => tina.send({ topic: TXN_TOPIC, ...v })))
        if (outcome === 'commit') {
          await tina.commitTransaction()
          committed.push(...values.map((v) => v.value))
        } else {
          await tina.abortTransaction()
          aborted.push(...values.map((v) => v.value))
        }
      }
    } finally {
      await tina.close()
    }

    // Markers on every partition, whichever broker leads it: read_committed gets past the aborted
    // transaction to the last committed one, and sees only the committed records.
    const read = async (isolationLevel: 'read_committed' | 'read_uncommitted', count: number): Promise<string[]> => {
      const reader = new Consumer({ bootstrapServers: cluster.bootstrap(), clientId: `strict-${isolationLevel}`, security: asBroker(certs), autoOffsetReset: 'earliest', isolationLevel })
      try {
        reader.assign([0, 1, 2].map((partition) => ({ topic: TXN_TOPIC, partition })))
        const seen: string[] = []
        await until(`${count} records read ${isolationLevel}`, async () => {
          for (const r of await reader.poll(300)) seen.push(r.value!.toString())
          return seen.length >= count ? seen : undefined
        })
        return seen.sort()
      } finally {
        await reader.close()
      }
    }
    expect(await read('read_committed', committed.length)).toEqual([...committed].sort())
    // The aborted records were written (and are skipped by read_committed, not missing).
    expect(await read('read_uncommitted', committed.length + aborted.length)).toEqual([...committed, ...aborted].sort())

    // Markers are ClusterAction: the coordinator's WriteTxnMarkers above got through as User:broker, while
    // tina, who wrote the transactions, may not write a marker herself on the same listener.
    const forged = WriteTxnMarkers.createWriteTxnMarkersRequest({
      markers: [WriteTxnMarkers.createWritableTxnMarker({ producerId: BigInt(producerId), producerEpoch, transactionResult: true, topics: [WriteTxnMarkers.createWritableTxnMarkerTopic({ name: TXN_TOPIC, partitionIndexes: [ps[0]!.partition] })] })],
    })
    const conn = await BrokerConnection.connect({ host: '127.0.0.1', port: cluster.broker(ps[0]!.leader).port, clientId: 'tina-forger', security: asScramUser(certs, 'tina') })
    try {
      const res = await conn.send(27, (w, v) => WriteTxnMarkers.encodeWriteTxnMarkersRequest(w, forged, v), WriteTxnMarkers.decodeWriteTxnMarkersResponse, { version: 1 })
      expect(res.markers[0]?.topics[0]?.partitions[0]?.errorCode).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    } finally {
      conn.close()
    }

    const eve = new Producer({ bootstrapServers: cluster.bootstrap(), clientId: 'eve', security: asScramUser(certs, 'eve'), transactionalId: TXN_ID, acks: -1, maxBlockMs: 10_000 })
    try {
      const err = await eve.initTransactions().then(() => null, (e: unknown) => e)
      expect(codeOf(err)).toBe(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } finally {
      await eve.close().catch(() => {})
    }
  }, 90_000)
})
