// The control plane of a real cluster: a ZooKeeper and three Skein broker processes (test/harness/cluster.ts).
// Brokers register (epoch = czxid), one is the controller, a topic of 6 partitions with replication factor
// 3 gets Kafka's assignment and every broker answers the same leaders, replicas and ISR; the znode tree is
// Kafka's; a killed broker's partitions elect new leaders from the ISR at the next leader epoch (the others
// drop it from their ISR at the same epoch); a killed
// controller is replaced at a higher controller epoch; a controller frozen (SIGSTOP) past its session is
// replaced and, resumed, writes nothing; a topic deleted while a broker is down stays queued until the
// broker returns, then is deleted everywhere; partitions added and topic configs changed on one broker
// reach every broker; AlterPartition is answered by the controller alone, with Kafka's checks; controller
// requests with an older controller or broker epoch are refused; a SIGTERMed broker moves its leaderships
// away (controlled shutdown) before it stops. Data replication is not tested here (the replication layer).
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZooKeeperClient } from '../../src/cluster/zookeeper/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import type * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import * as LeaderAndIsr from '../../src/protocol/messages/04-leader-and-isr.gen.js'
import * as UpdateMetadata from '../../src/protocol/messages/06-update-metadata.gen.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as DeleteTopics from '../../src/protocol/messages/20-delete-topics.gen.js'
import * as DescribeConfigs from '../../src/protocol/messages/32-describe-configs.gen.js'
import * as AlterConfigs from '../../src/protocol/messages/33-alter-configs.gen.js'
import * as CreatePartitions from '../../src/protocol/messages/37-create-partitions.gen.js'
import * as AlterPartition from '../../src/protocol/messages/56-alter-partition.gen.js'
import { skein } from '../cli/helpers.js'
import { simpleBatch, startCluster, zookeeperMissing, type ClusterBroker, type RawClient, type TestCluster } from '../harness/index.js'
import { until } from '../harness/cluster-views.js'

const MISSING = zookeeperMissing()
const SESSION_TIMEOUT_MS = 4000

interface PartitionView {
  leader: number
  epoch: number
  replicas: number[]
  isr: number[]
  offline: number[]
  error: number
}

interface ClusterView {
  controllerId: number
  brokers: number[]
  partitions: PartitionView[]
}

function view(md: Metadata.MetadataResponse, topic: string): ClusterView {
  const t = md.topics.find((x) => x.name === topic)
  return {
    controllerId: md.controllerId,
    brokers: md.brokers.map((b) => b.nodeId).sort((a, b) => a - b),
    partitions: (t?.partitions ?? [])
      .slice()
      .sort((a, b) => a.partitionIndex - b.partitionIndex)
      .map((p) => ({ leader: p.leaderId, epoch: p.leaderEpoch, replicas: p.replicaNodes, isr: [...p.isrNodes].sort(), offline: p.offlineReplicas, error: p.errorCode })),
  }
}

async function metadataFrom(b: ClusterBroker, topic: string): Promise<ClusterView> {
  const c = await b.client()
  try {
    return view(await c.metadata([topic]), topic)
  } finally {
    c.close()
  }
}

/** Every running broker answers the same view, and `check` holds for it. */
function agreed(cluster: TestCluster, topic: string, check: (v: ClusterView) => boolean, what: string, timeoutMs?: number): Promise<ClusterView> {
  return until(
    what,
    async () => {
      const views = await Promise.all(cluster.brokers.filter((b) => b.alive()).map((b) => metadataFrom(b, topic)))
      const first = JSON.stringify(views[0])
      if (!views.every((v) => JSON.stringify(v) === first)) return undefined
      return check(views[0]!) ? views[0] : undefined
    },
    timeoutMs,
  )
}

async function createTopic(c: RawClient, name: string, partitions: number, replicationFactor: number): Promise<CreateTopics.CreatableTopicResult> {
  const req = CreateTopics.createCreateTopicsRequest({
    timeoutMs: 30_000,
    topics: [CreateTopics.createCreatableTopic({ name, numPartitions: partitions, replicationFactor })],
  })
  const res = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
  return res.topics[0]!
}

/** Kafka's rack-unaware assignment for sorted broker ids, a start index and an initial shift (from partition `from`). */
function kafkaAssignment(ids: number[], partitions: number, rf: number, start: number, shift: number, from = 0): number[][] {
  const n = ids.length
  const out: number[][] = []
  for (let p = from; p < from + partitions; p++) {
    if (p > 0 && p % n === 0) shift++
    const first = (p + start) % n
    const r = [ids[first]!]
    for (let j = 0; j < rf - 1; j++) r.push(ids[(first + 1 + ((shift + j) % (n - 1))) % n]!)
    out.push(r)
  }
  return out
}

describe.skipIf(MISSING !== undefined)('a three-broker cluster on ZooKeeper: the control plane', () => {
  let cluster: TestCluster
  let zk: ZooKeeperClient

  beforeAll(async () => {
    cluster = await startCluster({ sessionTimeoutMs: SESSION_TIMEOUT_MS })
    zk = await ZooKeeperClient.connect(cluster.connect)
  }, 120_000)

  afterAll(async () => {
    await zk?.close()
    await cluster?.stop()
  })

  const json = async (path: string): Promise<Record<string, unknown>> => JSON.parse((await zk.getData(path)).data.toString('utf8'))
  const controllerEpoch = async (): Promise<number> => Number((await zk.getData('/controller_epoch')).data.toString())
  const controllerId = async (): Promise<number> => {
    const stat = await zk.exists('/controller')
    return stat === null ? -1 : ((await json('/controller')).brokerid as number)
  }
  const alive = (): ClusterBroker[] => cluster.brokers.filter((b) => b.alive())

  it('registers every broker (epoch = czxid), elects one controller, and every broker agrees', async () => {
    expect((await zk.getChildren('/brokers/ids')).sort()).toEqual(['1', '2', '3'])
    for (const id of [1, 2, 3]) {
      const reg = await json(`/brokers/ids/${id}`)
      expect(reg).toMatchObject({ version: 5, host: '127.0.0.1', port: cluster.broker(id).port, endpoints: [`PLAINTEXT://127.0.0.1:${cluster.broker(id).port}`] })
    }
    const controller = await until('a controller', async () => ((await controllerId()) >= 0 ? controllerId() : undefined))
    expect([1, 2, 3]).toContain(controller)
    expect(await controllerEpoch()).toBeGreaterThanOrEqual(1)
    const v = await agreed(cluster, 'none', (x) => x.controllerId === controller && x.brokers.length === 3, 'brokers to agree on the controller')
    expect(v.brokers).toEqual([1, 2, 3])
  })

  it("gives a 6-partition RF-3 topic Kafka's assignment, and every broker answers the same leaders, replicas and ISR", async () => {
    const c = await cluster.broker(2).client()
    try {
      const res = await createTopic(c, 'orders', 6, 3)
      expect(res.errorCode).toBe(ErrorCode.NONE)
      const tooMany = await createTopic(c, 'too-many', 1, 4)
      expect(tooMany.errorCode).toBe(ErrorCode.INVALID_REPLICATION_FACTOR)
      expect(tooMany.errorMessage).toBe('Replication factor: 4 larger than available brokers: 3.')
    } finally {
      c.close()
    }
    const v = await agreed(cluster, 'orders', (x) => x.partitions.length === 6 && x.partitions.every((p) => p.leader >= 0), 'every broker to see orders with leaders')
    const assignment = v.partitions.map((p) => p.replicas)
    const matches: string[] = []
    for (let start = 0; start < 3; start++) for (let shift = 0; shift < 3; shift++) if (JSON.stringify(kafkaAssignment([1, 2, 3], 6, 3, start, shift)) === JSON.stringify(assignment)) matches.push(`${start}/${shift}`)
    expect(matches.length, `assignment ${JSON.stringify(assignment)} is Kafka's for some start and shift`).toBeGreaterThan(0)
    for (const p of v.partitions) {
      expect(p.leader).toBe(p.replicas[0])
      expect(p.epoch).toBe(0)
      expect(p.isr).toEqual([1, 2, 3])
      expect(p.offline).toEqual([])
    }
    // Each broker leads two partitions; a produce goes to the leader, a follower refuses it.
    for (const id of [1, 2, 3]) expect(v.partitions.filter((p) => p.leader === id)).toHaveLength(2)
    const p0 = v.partitions[0]!
    const leader = await cluster.broker(p0.leader).client()
    const follower = await cluster.broker(p0.replicas[1]!).client()
    try {
      expect((await leader.produce('orders', 0, simpleBatch('a', 3))).errorCode).toBe(ErrorCode.NONE)
      expect((await follower.produce('orders', 0, simpleBatch('b', 1))).errorCode).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    } finally {
      leader.close()
      follower.close()
    }
  })

  it("keeps Kafka's znode layout and JSON", async () => {
    const topic = await json('/brokers/topics/orders')
    expect(Object.keys(topic).sort()).toEqual(['adding_replicas', 'partitions', 'removing_replicas', 'topic_id', 'version'])
    expect(topic.version).toBe(3)
    expect(topic.topic_id).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(Object.keys(topic.partitions as object).sort()).toEqual(['0', '1', '2', '3', '4', '5'])
    expect((await zk.getChildren('/brokers/topics/orders/partitions')).sort()).toEqual(['0', '1', '2', '3', '4', '5'])
    const state = await json('/brokers/topics/orders/partitions/0/state')
    expect(Object.keys(state).sort()).toEqual(['controller_epoch', 'isr', 'leader', 'leader_epoch', 'version'])
    expect(state).toMatchObject({ version: 1, leader_epoch: 0, controller_epoch: await controllerEpoch() })
    expect(Object.keys(await json('/controller')).sort()).toEqual(['brokerid', 'kraftControllerEpoch', 'timestamp', 'version'])
    expect((await zk.getData('/controller_epoch')).data.toString()).toMatch(/^\d+$/)
    const reg = await json('/brokers/ids/1')
    expect(Object.keys(reg).sort()).toEqual(['endpoints', 'features', 'host', 'jmx_port', 'listener_security_protocol_map', 'port', 'timestamp', 'version'])
    expect(Object.keys(await json('/cluster/id')).sort()).toEqual(['id', 'version'])
    expect(await json('/config/topics/orders')).toEqual({ version: 1, config: {} })
    for (const p of ['/admin/delete_topics', '/config/changes', '/config/brokers', '/brokers/seqid', '/isr_change_notification', '/latest_producer_id_block', '/consumers']) {
      expect(await zk.exists(p), p).not.toBeNull()
    }
  })

  it('elects new leaders from the ISR, at the next leader epoch, for the partitions of a killed broker', async () => {
    const controller = await controllerId()
    const before = await agreed(cluster, 'orders', (x) => x.partitions.length === 6, 'orders')
    const victim = [1, 2, 3].find((id) => id !== controller)!
    const czxidBefore = (await zk.exists(`/brokers/ids/${victim}`))!.czxid
    await cluster.broker(victim).kill()
    const after = await agreed(
      cluster,
      'orders',
      (x) => !x.brokers.includes(victim) && x.partitions.every((p) => p.leader !== victim && !p.isr.includes(victim)),
      `the cluster to move off broker ${victim}`,
      SESSION_TIMEOUT_MS * 5,
    )
    after.partitions.forEach((p, i) => {
      const old = before.partitions[i]!
      // First live ISR member in assignment order; an election bumps the leader epoch once, an ISR shrink
      // under the same leader keeps it (KAFKA-15021; the partition epoch moves).
      expect(p.leader).toBe(old.replicas.find((r) => r !== victim && old.isr.includes(r)))
      expect(p.epoch).toBe(old.leader === victim ? old.epoch + 1 : old.epoch)
      expect(p.isr).toEqual(old.isr.filter((r) => r !== victim))
      expect(p.offline).toEqual([victim])
      expect(p.replicas).toEqual(old.replicas)
    })
    const led = after.partitions.findIndex((_, i) => before.partitions[i]!.leader === victim)
    const newLeader = await cluster.broker(after.partitions[led]!.leader).client()
    try {
      expect((await newLeader.produce('orders', led, simpleBatch('c', 2))).errorCode).toBe(ErrorCode.NONE)
    } finally {
      newLeader.close()
    }

    await cluster.broker(victim).start()
    expect((await zk.exists(`/brokers/ids/${victim}`))!.czxid).toBeGreaterThan(czxidBefore)
    await agreed(cluster, 'orders', (x) => x.brokers.length === 3 && x.partitions.every((p) => p.offline.length === 0), 'the restarted broker to be back')
  }, 90_000)

  it('moves the controller role to another broker, at a higher epoch, when the controller is killed', async () => {
    const oldController = await controllerId()
    const oldEpoch = await controllerEpoch()
    const statePath = (p: number): string => `/brokers/topics/orders/partitions/${p}/state`
    // A settled cluster (a broker restarted by an earlier test back in every ISR): no ISR change under way.
    await agreed(cluster, 'orders', (x) => x.partitions.length === 6 && x.partitions.every((p) => p.isr.length === 3), 'every ISR full before the kill', SESSION_TIMEOUT_MS * 5)
    const statesBefore = await Promise.all([0, 1, 2, 3, 4, 5].map(async (p) => ({ p, state: await json(statePath(p)), version: (await zk.exists(statePath(p)))!.version })))
    const ledByOld = statesBefore.filter(({ state }) => state.leader === oldController)
    expect(ledByOld.length).toBeGreaterThan(0)
    await cluster.broker(oldController).kill()
    // At once, while ZooKeeper and every broker still name the dead controller: the tools use the brokers
    // that answer (as Kafka's admin client), they do not fail with "cannot connect" until the session expires.
    const live = alive()[0]!.bootstrap
    const described = await skein(['topics', '--bootstrap-server', live, '--describe', '--topic', 'orders'])
    expect(described.code, described.stderr.toString()).toBe(0)
    expect(described.out).toContain('Topic: orders')
    const listed = await skein(['groups', '--bootstrap-server', live, '--list'])
    expect(listed.code, listed.stderr.toString()).toBe(0)
    const newController = await until('a new controller', async () => {
      const id = await controllerId()
      return id >= 0 && id !== oldController ? id : undefined
    }, SESSION_TIMEOUT_MS * 5)
    expect(await controllerEpoch()).toBeGreaterThan(oldEpoch)
    // The new controller takes the dead one out of every ISR when it takes over (as Kafka's replica state
    // machine at failover), also where it only followed: not replica.lag.time.max.ms (30 s) later by the leaders.
    await agreed(cluster, 'orders', (x) => x.controllerId === newController && !x.brokers.includes(oldController) && x.partitions.every((p) => p.leader !== oldController && !p.isr.includes(oldController)), 'brokers to follow the new controller, the dead one out of every ISR', SESSION_TIMEOUT_MS * 5)
    // The partitions the dead controller led were given their new leader, and lost it from the ISR, in one
    // write at the next leader epoch: the new controller elects before it shrinks the other ISRs, so there is
    // no leaderless state in between (leader -1 at one epoch, then the election at the next).
    for (const { p, state, version } of ledByOld) {
      const now = await json(statePath(p))
      expect(now.leader_epoch, `orders-${p}`).toBe((state.leader_epoch as number) + 1)
      expect((await zk.exists(statePath(p)))!.version, `orders-${p} written once`).toBe(version + 1)
      expect(now.isr as number[]).not.toContain(oldController)
      expect(now.controller_epoch).toBe(await controllerEpoch())
    }
    await cluster.broker(oldController).start()
    await agreed(cluster, 'orders', (x) => x.brokers.length === 3 && x.controllerId === newController, 'the old controller back as a broker')
  }, 90_000)

  it('replaces a frozen controller; resumed, it writes nothing and rejoins as a broker', async () => {
    const frozen = await controllerId()
    const frozenEpoch = await controllerEpoch()
    let successor = -1
    let successorEpoch = -1
    const snapshot = new Map<number, string>()
    cluster.broker(frozen).signal('SIGSTOP')
    try {
      successor = await until('a successor controller', async () => {
        const id = await controllerId()
        return id >= 0 && id !== frozen ? id : undefined
      }, SESSION_TIMEOUT_MS * 6)
      successorEpoch = await controllerEpoch()
      expect(successorEpoch).toBeGreaterThan(frozenEpoch)
      const live = alive().filter((b) => b.id !== frozen)
      // Partitions the frozen broker led elect from the ISR; those whose ISR was only the frozen broker have
      // no leader now (LEADER_NOT_AVAILABLE, -1) until it returns.
      await until('the successor to move leadership off the frozen broker', async () => {
        const views = await Promise.all(live.map((b) => metadataFrom(b, 'orders')))
        return views.every((v) => v.partitions.every((p) => p.leader !== frozen && (p.leader >= 0 || p.error === ErrorCode.LEADER_NOT_AVAILABLE))) ? true : undefined
      }, SESSION_TIMEOUT_MS * 5)
      for (let p = 0; p < 6; p++) snapshot.set(p, (await zk.getData(`/brokers/topics/orders/partitions/${p}/state`)).data.toString())
    } finally {
      cluster.broker(frozen).signal('SIGCONT')
    }
    await agreed(cluster, 'orders', (x) => x.brokers.length === 3 && x.controllerId === successor, 'the resumed broker to rejoin under the successor', SESSION_TIMEOUT_MS * 6)
    expect(await controllerId()).toBe(successor)
    expect(await controllerEpoch()).toBe(successorEpoch)
    for (let p = 0; p < 6; p++) {
      const state = await json(`/brokers/topics/orders/partitions/${p}/state`)
      // Unchanged since the freeze, or changed by the successor: never by the resumed controller's epoch.
      if (JSON.stringify(state) !== snapshot.get(p)) expect(state.controller_epoch).toBe(successorEpoch)
      expect(state.controller_epoch as number).toBeLessThanOrEqual(successorEpoch)
    }
    // Replaced before or after its session expired (the brokers remove a silent controller's registration,
    // docs/cluster.md "Failure detection"): either way it knows it is no longer the controller.
    expect(cluster.broker(frozen).output()).toMatch(/session expired|resigning as controller/)
  }, 120_000)

  it('queues the deletion of a topic with a replica on a dead broker, and completes it when the broker returns', async () => {
    const c = await alive()[0]!.client()
    try {
      expect((await createTopic(c, 'doomed', 3, 3)).errorCode).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    await agreed(cluster, 'doomed', (x) => x.partitions.length === 3 && x.partitions.every((p) => p.leader >= 0), 'doomed to exist everywhere')
    const controller = await controllerId()
    const down = [1, 2, 3].find((id) => id !== controller)!
    const up = [1, 2, 3].filter((id) => id !== down)
    for (const id of [1, 2, 3]) expect(existsSync(join(cluster.broker(id).dataDir, 'doomed-0')), `broker ${id} hosts doomed-0`).toBe(true)
    await cluster.broker(down).kill()
    await agreed(cluster, 'doomed', (x) => !x.brokers.includes(down), `broker ${down} to be seen dead`, SESSION_TIMEOUT_MS * 5)

    const d = await cluster.broker(up[0]!).client()
    try {
      const req = DeleteTopics.createDeleteTopicsRequest({ topicNames: ['doomed'], timeoutMs: 20_000 })
      const res = await d.call(20, 4, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, req, 4), DeleteTopics.decodeDeleteTopicsResponse, 30_000)
      expect(res.responses[0]).toMatchObject({ name: 'doomed', errorCode: ErrorCode.NONE })
    } finally {
      d.close()
    }
    // Gone from every live broker's metadata and disk; still queued in ZooKeeper for the dead one.
    await agreed(cluster, 'doomed', (x) => x.partitions.length === 0, 'doomed gone from metadata')
    const doomedDirs = (id: number): string[] => readdirSync(cluster.broker(id).dataDir).filter((f) => /^doomed-\d+$/.test(f))
    await until('the live replicas to be deleted', async () => (up.every((id) => doomedDirs(id).length === 0) ? true : undefined))
    expect(await zk.exists('/admin/delete_topics/doomed')).not.toBeNull()
    expect(await zk.exists('/brokers/topics/doomed')).not.toBeNull()
    expect(existsSync(join(cluster.broker(down).dataDir, 'doomed-0'))).toBe(true)

    await cluster.broker(down).start()
    await until('the deletion to complete', async () => ((await zk.exists('/brokers/topics/doomed')) === null && (await zk.exists('/admin/delete_topics/doomed')) === null ? true : undefined))
    expect(await zk.exists('/config/topics/doomed')).toBeNull()
    expect(doomedDirs(down)).toEqual([])
    await agreed(cluster, 'orders', (x) => x.brokers.length === 3, 'all three brokers back')
  }, 120_000)
  it('adds partitions and changes topic configs through the store; every broker sees both', async () => {
    const c = await cluster.broker(1).client()
    try {
      expect((await createTopic(c, 'grow', 2, 2)).errorCode).toBe(ErrorCode.NONE)
      const req = CreatePartitions.createCreatePartitionsRequest({ timeoutMs: 30_000, topics: [CreatePartitions.createCreatePartitionsTopic({ name: 'grow', count: 5, assignments: null })] })
      const res = await c.call(37, 1, (w) => CreatePartitions.encodeCreatePartitionsRequest(w, req, 1), CreatePartitions.decodeCreatePartitionsResponse, 40_000)
      expect(res.results[0]).toMatchObject({ name: 'grow', errorCode: ErrorCode.NONE })
      const alter = AlterConfigs.createAlterConfigsRequest({
        resources: [AlterConfigs.createAlterConfigsResource({ resourceType: 2, resourceName: 'grow', configs: [AlterConfigs.createAlterableConfig({ name: 'retention.ms', value: '123456' })] })],
      })
      const altered = await c.call(33, 1, (w) => AlterConfigs.encodeAlterConfigsRequest(w, alter, 1), AlterConfigs.decodeAlterConfigsResponse)
      expect(altered.responses[0]!.errorCode).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    const v = await agreed(cluster, 'grow', (x) => x.partitions.length === 5 && x.partitions.every((p) => p.leader >= 0 && p.replicas.length === 2), 'every broker to see 5 partitions of grow')
    // Added partitions continue Kafka's assignment: start index and shift = the index of partition 0's first replica.
    const ids = v.brokers
    const replicas = v.partitions.map((p) => p.replicas)
    const original = [0, 1, 2].some((start) => [0, 1, 2].some((shift) => JSON.stringify(kafkaAssignment(ids, 2, 2, start, shift)) === JSON.stringify(replicas.slice(0, 2))))
    expect(original).toBe(true)
    const start = ids.indexOf(replicas[0]![0]!)
    expect(replicas.slice(2)).toEqual(kafkaAssignment(ids, 3, 2, start, start, 2))
    expect(await json('/config/topics/grow')).toEqual({ version: 1, config: { 'retention.ms': '123456' } })
    for (const b of alive()) {
      const value = await until(`broker ${b.id} to see the new retention.ms`, async () => {
        const c2 = await b.client()
        try {
          const req = DescribeConfigs.createDescribeConfigsRequest({ resources: [DescribeConfigs.createDescribeConfigsResource({ resourceType: 2, resourceName: 'grow', configurationKeys: ['retention.ms'] })] })
          const res = await c2.call(32, 1, (w) => DescribeConfigs.encodeDescribeConfigsRequest(w, req, 1), DescribeConfigs.decodeDescribeConfigsResponse)
          const entry = res.results[0]!.configs.find((x) => x.name === 'retention.ms')
          return entry?.value === '123456' ? entry.value : undefined
        } finally {
          c2.close()
        }
      })
      expect(value).toBe('123456')
    }
  })

  it('answers AlterPartition on the controller only, with Kafka checks, and every broker learns the new ISR', async () => {
    const controller = await controllerId()
    const c = await cluster.broker(controller).client()
    const other = await cluster.broker([1, 2, 3].find((id) => id !== controller)!).client()
    try {
      expect((await createTopic(c, 'isr', 1, 3)).errorCode).toBe(ErrorCode.NONE)
      const v = await agreed(cluster, 'isr', (x) => x.partitions.length === 1 && x.partitions[0]!.leader >= 0, 'isr to exist')
      const p = v.partitions[0]!
      const state = (await zk.getData('/brokers/topics/isr/partitions/0/state')).stat
      const leaderEpoch = (await zk.exists(`/brokers/ids/${p.leader}`))!.czxid
      const topicId = (await json('/brokers/topics/isr')).topic_id as string
      const call = (client: RawClient, partition: Partial<AlterPartition.RequestPartitionData>, brokerEpoch = leaderEpoch, version = 2) => {
        const req = AlterPartition.createAlterPartitionRequest({
          brokerId: p.leader,
          brokerEpoch,
          topics: [AlterPartition.createRequestTopicData({ topicName: 'isr', topicId, partitions: [AlterPartition.createRequestPartitionData({ partitionIndex: 0, leaderEpoch: p.epoch, partitionEpoch: state.version, newIsr: p.isr, ...partition })] })],
        })
        return client.call(56, version, (w) => AlterPartition.encodeAlterPartitionRequest(w, req, version), AlterPartition.decodeAlterPartitionResponse)
      }
      const shrunk = p.replicas.filter((r) => r !== p.replicas[2])
      expect((await call(other, { newIsr: shrunk })).errorCode).toBe(ErrorCode.NOT_CONTROLLER)
      expect((await call(c, { newIsr: shrunk }, 12345n)).errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH)
      const ok = await call(c, { newIsr: shrunk })
      expect(ok.errorCode).toBe(ErrorCode.NONE)
      expect(ok.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, leaderId: p.leader, leaderEpoch: p.epoch, isr: shrunk, partitionEpoch: state.version + 1 })
      // The same proposal again (a retry): the current state, no write.
      expect((await call(c, { newIsr: shrunk })).topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, partitionEpoch: state.version + 1 })
      expect((await call(c, { newIsr: p.isr })).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_UPDATE_VERSION)
      expect((await call(c, { newIsr: p.isr, leaderEpoch: p.epoch - 1, partitionEpoch: state.version + 1 })).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.FENCED_LEADER_EPOCH)
      expect((await call(c, { newIsr: p.isr, leaderEpoch: p.epoch + 1, partitionEpoch: state.version + 1 })).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NOT_CONTROLLER)
      expect((await call(c, { newIsr: [...shrunk, 99], partitionEpoch: state.version + 1 })).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INELIGIBLE_REPLICA)
      // v0 names the topic; v2 an unknown topic id.
      expect((await call(c, { newIsr: shrunk, partitionEpoch: state.version + 1 }, leaderEpoch, 0)).topics[0]).toMatchObject({ topicName: 'isr', partitions: [{ errorCode: ErrorCode.NONE }] })
      const unknownId = AlterPartition.createAlterPartitionRequest({
        brokerId: p.leader,
        brokerEpoch: leaderEpoch,
        topics: [AlterPartition.createRequestTopicData({ topicId: 'AAAAAAAAAAAAAAAAAAAAQQ', partitions: [AlterPartition.createRequestPartitionData({ partitionIndex: 0, leaderEpoch: p.epoch, newIsr: shrunk })] })],
      })
      const res = await c.call(56, 2, (w) => AlterPartition.encodeAlterPartitionRequest(w, unknownId, 2), AlterPartition.decodeAlterPartitionResponse)
      expect(res.topics[0]).toMatchObject({ topicId: 'AAAAAAAAAAAAAAAAAAAAQQ', partitions: [{ errorCode: ErrorCode.UNKNOWN_TOPIC_ID }] })
      expect((await json('/brokers/topics/isr/partitions/0/state')).isr).toEqual(shrunk)
      await agreed(cluster, 'isr', (x) => JSON.stringify(x.partitions[0]!.isr) === JSON.stringify([...shrunk].sort()), 'every broker to see the shrunk ISR')
    } finally {
      c.close()
      other.close()
    }
  })

  it('refuses controller requests with an older controller epoch or broker epoch', async () => {
    const b = cluster.broker(1)
    const c = await b.client()
    try {
      const epoch = await controllerEpoch()
      const brokerEpoch = (await zk.exists('/brokers/ids/1'))!.czxid
      const lai = (controllerEpoch_: number, brokerEpoch_: bigint) =>
        LeaderAndIsr.createLeaderAndIsrRequest({
          controllerId: 99,
          controllerEpoch: controllerEpoch_,
          brokerEpoch: brokerEpoch_,
          topicStates: [LeaderAndIsr.createLeaderAndIsrTopicState({ topicName: 'orders', partitionStates: [LeaderAndIsr.createLeaderAndIsrPartitionState({ partitionIndex: 0, leader: 1, leaderEpoch: 999, isr: [1], replicas: [1, 2, 3] })] })],
        })
      const send = (req: LeaderAndIsr.LeaderAndIsrRequest) => c.call(4, 7, (w) => LeaderAndIsr.encodeLeaderAndIsrRequest(w, req, 7), LeaderAndIsr.decodeLeaderAndIsrResponse)
      const stale = await send(lai(epoch - 1, brokerEpoch))
      expect(stale.errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
      expect(stale.topics[0]!.partitionErrors[0]!.errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
      expect((await send(lai(epoch, brokerEpoch - 1n))).errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH)
      const um = UpdateMetadata.createUpdateMetadataRequest({ controllerId: 99, controllerEpoch: epoch - 1, brokerEpoch })
      const res = await c.call(6, 8, (w) => UpdateMetadata.encodeUpdateMetadataRequest(w, um, 8), UpdateMetadata.decodeUpdateMetadataResponse)
      expect(res.errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
      // Nothing changed: broker 1 still agrees with the others.
      await agreed(cluster, 'orders', (x) => x.brokers.length === 3, 'the brokers to still agree')
    } finally {
      c.close()
    }
  })

  it('moves leaderships away before a SIGTERMed broker stops (controlled shutdown)', async () => {
    const c = await cluster.broker(1).client()
    try {
      expect((await createTopic(c, 'calm', 3, 3)).errorCode).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    const before = await agreed(cluster, 'calm', (x) => x.partitions.length === 3 && x.partitions.every((p) => p.isr.length === 3), 'calm with full ISRs')
    const controller = await controllerId()
    const leaving = [1, 2, 3].find((id) => id !== controller && before.partitions.some((p) => p.leader === id))!
    const started = Date.now()
    await cluster.broker(leaving).stop()
    const stoppedIn = Date.now() - started
    // Its calm partitions moved during the controlled shutdown (earlier tests left some partitions of
    // orders with this broker as their only in-sync replica: those cannot move and stay listed).
    const out = cluster.broker(leaving).output()
    expect(out).toMatch(/"msg":"controlled shutdown (succeeded|done; the partitions still led have no other in-sync replica)"/)
    expect(out).not.toMatch(/calm-\d/)
    const after = await agreed(cluster, 'calm', (x) => !x.brokers.includes(leaving), `broker ${leaving} to be gone`, SESSION_TIMEOUT_MS * 3)
    after.partitions.forEach((p, i) => {
      const old = before.partitions[i]!
      expect(p.leader).not.toBe(leaving)
      if (old.leader === leaving) expect(p.leader).toBe(old.replicas.find((r) => r !== leaving))
      expect(p.isr).not.toContain(leaving)
    })
    // A clean stop does not wait for the session to expire.
    expect(stoppedIn).toBeLessThan(SESSION_TIMEOUT_MS * 3)
    await cluster.broker(leaving).start()
    await agreed(cluster, 'calm', (x) => x.brokers.length === 3, 'the broker back')
  }, 90_000)
})
