// Failure detection faster than a ZooKeeper session (docs/cluster.md, "Failure detection"), against a real
// ZooKeeper and three broker processes whose sessions last 10 s (the harness ZooKeeper's longest): each
// failover below must be over while the failed broker's registration is still in ZooKeeper, which shows
// that the controller's pings and the brokers' watch on the controller did it, not a session expiry.
// - A frozen (SIGSTOP) leader is fenced: its partitions are led by others; a produce queued to it is
//   answered NOT_LEADER_OR_FOLLOWER when it resumes (its lease lapsed), and it is taken back with the same
//   registration once it answers again.
// - A killed controller (SIGKILL) is replaced, and the partitions it led are led by others.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZooKeeperClient } from '../../src/cluster/zookeeper/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import { simpleBatch, startCluster, zookeeperMissing, type ClusterBroker, type TestCluster } from '../harness/index.js'
import { until } from '../harness/cluster-views.js'

const MISSING = zookeeperMissing()
const SESSION_TIMEOUT_MS = 10_000
const TOPIC = 'detect'

interface View {
  controllerId: number
  brokers: number[]
  partitions: { leader: number; isr: number[] }[]
}

async function viewFrom(b: ClusterBroker): Promise<View> {
  const c = await b.client()
  try {
    const md = await c.metadata([TOPIC])
    const t = md.topics.find((x) => x.name === TOPIC)
    return {
      controllerId: md.controllerId,
      brokers: md.brokers.map((x) => x.nodeId).sort((a, z) => a - z),
      partitions: [...(t?.partitions ?? [])].sort((a, z) => a.partitionIndex - z.partitionIndex).map((p) => ({ leader: p.leaderId, isr: [...p.isrNodes].sort() })),
    }
  } finally {
    c.close()
  }
}

/** The brokers asked agree, and `ok` holds for what they say. */
function agreed(asked: ClusterBroker[], ok: (v: View) => boolean, what: string): Promise<View> {
  return until(
    what,
    async () => {
      const views = await Promise.all(asked.map(viewFrom))
      const first = JSON.stringify(views[0])
      return views.every((v) => JSON.stringify(v) === first) && ok(views[0]!) ? views[0] : undefined
    },
    SESSION_TIMEOUT_MS * 6,
  )
}

describe.skipIf(MISSING !== undefined)('failure detection before the ZooKeeper session expires', () => {
  let cluster: TestCluster
  let zk: ZooKeeperClient

  beforeAll(async () => {
    cluster = await startCluster({ sessionTimeoutMs: SESSION_TIMEOUT_MS, overrides: ['offsets.topic.replication.factor=3'] })
    zk = await ZooKeeperClient.connect(cluster.connect)
    const c = await cluster.brokers[0]!.client()
    try {
      const req = CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [CreateTopics.createCreatableTopic({ name: TOPIC, numPartitions: 6, replicationFactor: 3 })] })
      const res = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
      expect(res.topics[0]!.errorCode).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    await agreed(cluster.brokers, (v) => v.partitions.length === 6 && v.partitions.every((p) => p.leader >= 0 && p.isr.length === 3), 'the topic, fully replicated')
  }, 120_000)

  afterAll(async () => {
    await zk?.close()
    await cluster?.stop()
  })

  const controllerId = async (): Promise<number> => JSON.parse((await zk.getData('/controller')).data.toString('utf8')).brokerid as number
  const registration = async (id: number): Promise<bigint | undefined> => (await zk.exists(`/brokers/ids/${id}`))?.czxid

  it('fences a frozen leader while its session lives, turns its queued write away when it resumes, and takes it back', async () => {
    const controller = await controllerId()
    const before = await viewFrom(cluster.broker(controller))
    const victim = before.partitions.map((p) => p.leader).find((l) => l !== controller)!
    const led = before.partitions.flatMap((p, i) => (p.leader === victim ? [i] : []))
    const others = cluster.brokers.filter((b) => b.id !== victim)
    const epoch = await registration(victim)
    const zombie = await cluster.broker(victim).client()
    cluster.broker(victim).signal('SIGSTOP')
    let queued: Promise<number> | undefined
    try {
      // Leaders move first, then the victim leaves every ISR (Kafka's order: elections, then OfflineReplica),
      // so the brokers are asked until both are seen, not both expected of the first view with new leaders.
      const fenced = (v: View): boolean => !v.brokers.includes(victim) && led.every((i) => v.partitions[i]!.leader >= 0 && v.partitions[i]!.leader !== victim) && v.partitions.every((p) => !p.isr.includes(victim))
      await agreed(others, fenced, `broker ${victim} fenced and out of every ISR`)
      // Its registration is still there: the controller acted on silence, not on the session.
      expect(await registration(victim)).toBe(epoch)
      queued = zombie.produce(TOPIC, led[0]!, simpleBatch('zombie', 1), -1).then((r) => r.errorCode)
      await new Promise((r) => setTimeout(r, 200))
    } finally {
      cluster.broker(victim).signal('SIGCONT')
    }
    try {
      expect(await queued).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    } finally {
      zombie.close()
    }
    // Back without registering again (same broker epoch), in every ISR again.
    await agreed(cluster.brokers, (v) => v.brokers.length === 3 && v.partitions.every((p) => p.isr.length === 3), `broker ${victim} taken back`)
    expect(await registration(victim)).toBe(epoch)
  }, 120_000)

  it('replaces a killed controller and re-elects the partitions it led while its session lives', async () => {
    const controller = await controllerId()
    const others = cluster.brokers.filter((b) => b.id !== controller)
    const epoch = await registration(controller)
    await cluster.broker(controller).kill()
    const after = await agreed(
      others,
      (v) => v.controllerId >= 0 && v.controllerId !== controller && !v.brokers.includes(controller) && v.partitions.every((p) => p.leader >= 0 && p.leader !== controller),
      'a new controller, and leaders other than the killed one',
    )
    expect(await registration(controller)).toBe(epoch)
    expect(await controllerId()).toBe(after.controllerId)
    const p = after.partitions.findIndex((x) => x.leader >= 0)
    const leader = await cluster.broker(after.partitions[p]!.leader).client()
    try {
      expect((await leader.produce(TOPIC, p, simpleBatch('after', 1), -1)).errorCode).toBe(ErrorCode.NONE)
    } finally {
      leader.close()
    }
  }, 120_000)
})
