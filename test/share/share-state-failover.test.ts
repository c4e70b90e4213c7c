// Durable share-partition state (KIP-932) in a three-broker cluster over Debian's ZooKeeper: the share
// group's share coordinator (the leader of its __share_group_state partition) is another broker than the
// leader of the share-partition's data partition, so the leader saves its state over
// Initialize/Read/WriteShareGroupState. The data partition's leader is SIGKILLed; the controller elects a
// new one, which reads the share-partition's state from the share coordinator: no accepted or rejected
// record is delivered again, every other one is, with its delivery count counted on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { shareStatePartition } from '../../src/coordinator/share/share-coordinator.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import { batchOf, startCluster, type ClusterBroker, type RawClient, type TestCluster } from '../harness/index.js'
import { partitionsOf, until } from '../harness/cluster-views.js'
import { ACCEPT, REJECT, RELEASE, ShareSessionClient, acquiredOf, joinShareGroup, partitionOf } from './share-raw.js'

const TOPIC = 'failover-share'
const STATE_TOPIC = '__share_group_state'
const STATE_PARTITIONS = 3

let cluster: TestCluster

beforeAll(async () => {
  cluster = await startCluster({
    overrides: [
      'min.insync.replicas=2', 'replica.lag.time.max.ms=3000', 'replica.fetch.backoff.ms=200', 'offsets.topic.replication.factor=3', 'offsets.topic.num.partitions=3',
      `share.coordinator.state.topic.num.partitions=${STATE_PARTITIONS}`, 'share.coordinator.state.topic.replication.factor=3', 'share.coordinator.state.topic.min.isr=2',
    ],
  })
}, 120_000)

afterAll(async () => {
  await cluster?.stop()
})

/** FindCoordinator v6 with key type SHARE (which creates __share_group_state on first use). */
async function findShareCoordinator(c: RawClient, key: string): Promise<FindCoordinator.Coordinator> {
  const req = FindCoordinator.createFindCoordinatorRequest({ keyType: 2, coordinatorKeys: [key] })
  const res = await c.call(10, 6, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, req, 6), FindCoordinator.decodeFindCoordinatorResponse, 40_000)
  return res.coordinators[0]!
}

/** Joins the share group at its group coordinator (found with FindCoordinator through a live broker). */
async function join(group: string, member: string): Promise<void> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const via = cluster.brokers.find((b) => b.alive())!
    const c = await via.client()
    try {
      const req = FindCoordinator.createFindCoordinatorRequest({ keyType: 0, coordinatorKeys: [group] })
      const [found] = (await c.call(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, req, 4), FindCoordinator.decodeFindCoordinatorResponse, 40_000)).coordinators
      if (found !== undefined && found.errorCode === 0 && cluster.broker(found.nodeId).alive()) {
        const coordinator = await cluster.broker(found.nodeId).client()
        try {
          await joinShareGroup(coordinator, group, member, TOPIC, 10_000)
          return
        } catch (err) {
          if (Date.now() > deadline) throw err
        } finally {
          coordinator.close()
        }
      }
    } finally {
      c.close()
    }
    if (Date.now() > deadline) throw new Error(`${member} cannot join ${group}`)
    await new Promise((r) => setTimeout(r, 300))
  }
}

/** Fetches from `s` until it answers records (a new leader may first answer NOT_LEADER_OR_FOLLOWER). */
async function fetchUntilRecords(s: ShareSessionClient, timeoutMs = 60_000): Promise<Map<number, number>> {
  const deadline = Date.now() + timeoutMs
  let last = ''
  for (;;) {
    const res = await s.fetch({ maxWaitMs: 500 })
    const p = res.errorCode === 0 ? partitionOf(res) : undefined
    if (p !== undefined && p.errorCode === 0) {
      const got = acquiredOf(p)
      if (got.size > 0) return got
    }
    last = `top-level ${res.errorCode}, partition ${p?.errorCode}`
    if (Date.now() > deadline) throw new Error(`no records within ${timeoutMs} ms (${last})`)
    if (res.errorCode !== 0) s.epoch = 0
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** The first fetch, which makes the share-partition (retried while the new topic's partition is not served yet). */
async function initialize(s: ShareSessionClient): Promise<void> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const code = partitionOf(await s.fetch({ maxWaitMs: 0, minBytes: 0 }))?.errorCode
    if (code === 0) return
    if (Date.now() > deadline) throw new Error(`the share-partition answers error ${code}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('share-partition state when the partition leader dies (three brokers, ZooKeeper)', () => {
  it('the new leader reads the state from the share coordinator: acknowledged records never again, the others with their delivery counts', async () => {
    const admin = await cluster.brokers[0]!.client()
    let leaderClient: RawClient | undefined
    let newLeaderClient: RawClient | undefined
    try {
      const create = CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [CreateTopics.createCreatableTopic({ name: TOPIC, numPartitions: 1, replicationFactor: 3 })] })
      const created = await admin.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, create, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
      expect(created.topics[0]!.errorCode).toBe(0)
      const view = await until('a full ISR of the topic', async () => {
        const [p] = await partitionsOf(cluster.brokers[0]!, TOPIC)
        return p !== undefined && p.leader >= 0 && p.isr.length === 3 ? p : undefined
      })
      const leader = cluster.broker(view.leader)
      const topicId = (await admin.metadata([TOPIC], false, 12)).topics[0]!.topicId

      // A group whose share coordinator is not the data partition's leader: its state goes over the RPCs.
      expect((await findShareCoordinator(admin, `probe:${topicId}:0`)).errorCode).toBe(ErrorCode.NONE)
      const stateLeaders = await until('__share_group_state leaders', async () => {
        const ps = await partitionsOf(cluster.brokers[0]!, STATE_TOPIC)
        return ps.length === STATE_PARTITIONS && ps.every((p) => p.leader >= 0 && p.isr.length === 3) ? ps.map((p) => p.leader) : undefined
      })
      let group: string | undefined
      for (let i = 0; i < 100 && group === undefined; i++) {
        const g = `failover-group-${i}`
        if (stateLeaders[shareStatePartition(`${g}:${topicId}:0`, STATE_PARTITIONS)] !== leader.id) group = g
      }
      expect(group).toBeDefined()
      const coordinatorId = stateLeaders[shareStatePartition(`${group}:${topicId}:0`, STATE_PARTITIONS)]!
      expect((await findShareCoordinator(admin, `${group}:${topicId}:0`)).nodeId).toBe(coordinatorId)

      leaderClient = await leader.client()
      const a = new ShareSessionClient(leaderClient, group!, 'member-a', topicId)
      // The first fetch makes the share-partition at the log end (0); then ten records, acks=all.
      await join(group!, 'member-a')
      await initialize(a)
      for (let b = 0; b < 5; b++) {
        const res = await leaderClient.produce(TOPIC, 0, batchOf([{ value: Buffer.from(`v${2 * b}`) }, { value: Buffer.from(`v${2 * b + 1}`) }]), -1)
        expect(res.errorCode).toBe(0)
      }
      expect([...(await fetchUntilRecords(a)).entries()]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((o) => [o, 1]))
      expect(await a.acknowledge([[0, 2, ACCEPT], [3, 3, REJECT], [4, 5, RELEASE]])).toBe(ErrorCode.NONE)
      expect([...(await fetchUntilRecords(a)).entries()]).toEqual([[4, 2], [5, 2]])
      expect(await a.acknowledge([[4, 5, RELEASE]])).toBe(ErrorCode.NONE)

      // The leader dies holding 6-9 for member-a.
      leaderClient.close()
      leaderClient = undefined
      await leader.kill()
      const alive = cluster.brokers.filter((b) => b.alive())
      const moved = await until('a new leader of the partition', async () => {
        const [p] = await partitionsOf(alive[0]!, TOPIC)
        return p !== undefined && p.leader >= 0 && p.leader !== leader.id ? p : undefined
      }, 60_000)
      expect(moved.epoch).toBeGreaterThan(view.epoch)
      const newLeader: ClusterBroker = cluster.broker(moved.leader)
      newLeaderClient = await newLeader.client()
      await join(group!, 'member-b')
      const b = new ShareSessionClient(newLeaderClient, group!, 'member-b', topicId)
      // A new leader's high watermark catches up with its log once the followers fetch from it: the
      // records come in one or more answers.
      const after = new Map<number, number>()
      while (after.size < 6) {
        for (const [o, n] of await fetchUntilRecords(b)) {
          expect(after.has(o), `record ${o} delivered twice`).toBe(false)
          after.set(o, n)
        }
      }
      // No accepted (0-2) or rejected (3) record again; the released ones on their third delivery, the
      // held ones on their second.
      expect([...after.entries()].sort((x, y) => x[0] - y[0])).toEqual([[4, 3], [5, 3], [6, 2], [7, 2], [8, 2], [9, 2]])
      expect(await b.acknowledge([[4, 9, ACCEPT]])).toBe(ErrorCode.NONE)
      expect(partitionOf(await b.fetch({ maxWaitMs: 300 }))?.acquiredRecords ?? []).toEqual([])
    } finally {
      admin.close()
      leaderClient?.close()
      newLeaderClient?.close()
    }
  }, 180_000)
})
