// Skein's share consumer in a three-broker cluster (Debian's ZooKeeper; brokers from dist/): one share
// session per partition leader, and a leader SIGKILLed under it (NOT_LEADER_OR_FOLLOWER or a broken
// connection, a metadata refresh, a new session with the new leader), every record still delivered.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Producer, ShareConsumer } from '../../src/client/index.js'
import { startCluster, type TestCluster } from '../harness/index.js'
import { partitionsOf, until } from '../harness/cluster-views.js'
import { zookeeperMissing } from '../harness/zookeeper.js'

const TOPIC = 'share-cluster'
const missing = zookeeperMissing()

describe.skipIf(missing !== undefined)('ShareConsumer in a cluster', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startCluster({ overrides: ['min.insync.replicas=1', 'replica.lag.time.max.ms=3000', 'share.coordinator.state.topic.replication.factor=3', 'share.coordinator.state.topic.min.isr=1'] })
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  it('fetches from every leader in a session of its own and goes on after a leader is killed', async () => {
    const admin = new Admin({ bootstrapServers: cluster.bootstrap() })
    await admin.createTopics([{ name: TOPIC, numPartitions: 3, replicationFactor: 3 }])
    await admin.alterConfigs({ type: 'group', name: 'g-cluster' }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }])
    await admin.close()
    const views = await until('leaders on three brokers', async () => {
      const v = await partitionsOf(cluster.brokers[0]!, TOPIC)
      return v.length === 3 && v.every((p) => p.leader > 0 && p.isr.length === 3) ? v : undefined
    })
    const producer = new Producer({ bootstrapServers: cluster.bootstrap(), acks: -1 })
    const consumer = new ShareConsumer({ bootstrapServers: cluster.bootstrap(), groupId: 'g-cluster' })
    const seen = new Map<string, number>()
    const consume = async (want: (value: string) => boolean, ms: number): Promise<void> => {
      const deadline = Date.now() + ms
      while ([...seen.keys()].filter(want).length < 30 && Date.now() < deadline) {
        for (const r of await consumer.poll(500)) seen.set(r.value!.toString(), (seen.get(r.value!.toString()) ?? 0) + 1)
      }
    }
    try {
      for (let i = 0; i < 30; i++) await producer.send({ topic: TOPIC, partition: i % 3, value: `a${i}` })
      consumer.subscribe([TOPIC])
      await consume((v) => v.startsWith('a'), 40_000)
      expect([...seen.keys()].filter((v) => v.startsWith('a'))).toHaveLength(30)
      expect([...seen.values()].every((n) => n === 1)).toBe(true)
      const leaders = new Set(views.map((p) => p.leader))

      // Kill the leader of partition 0 (the group coordinator may be on it too: the consumer finds the new one).
      const victim = cluster.broker(views[0]!.leader)
      await victim.kill()
      await until('a new leader of partition 0', async () => {
        const alive = cluster.brokers.find((b) => b.alive())!
        const v = await partitionsOf(alive, TOPIC).catch(() => [])
        return v.length === 3 && v.every((p) => p.leader > 0 && p.leader !== victim.id) ? v : undefined
      })
      for (let i = 0; i < 30; i++) await producer.send({ topic: TOPIC, partition: i % 3, value: `b${i}` })
      await consume((v) => v.startsWith('b'), 60_000)
      expect([...seen.keys()].filter((v) => v.startsWith('b')).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `b${i}`).sort())
      expect(leaders.size).toBeGreaterThanOrEqual(2)
    } finally {
      await producer.close().catch(() => {})
      await consumer.close(5000).catch(() => {})
    }
  }, 180_000)
})
