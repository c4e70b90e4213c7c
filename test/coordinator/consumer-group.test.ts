// KIP-848 consumer groups in the group coordinator (ConsumerGroupHeartbeat): joining, server-side
// assignment, reconciliation with revocation before assignment, leaving, session and rebalance
// timeouts, static membership, the records written (Kafka's consumer-group records) and their replay,
// the classic/consumer group id rules, and offsets validated by member epoch.
import { describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { decodeGroupRecordKey } from '../../src/coordinator/group/offset-commit-group-metadata-records.js'
import { decodeCurrentAssignment, decodeGroupEpoch, decodeMemberSubscription, decodeTargetAssignment, MemberState } from '../../src/coordinator/group/consumer-group-records.js'
import type { ConsumerGroupHeartbeatInput, ConsumerGroupHeartbeatResult, TopicPartitionsById, TopicsView } from '../../src/coordinator/group/types.js'
import { InMemoryPartitionWriter } from '../../src/coordinator/runtime/partition-writer.js'
import { harness, joinInput, topicIdOf, track, type Harness } from './helpers.js'

const G = 'cg'
const T = topicIdOf('t')

/** Topics whose partition counts a test can change. */
function mutableTopics(counts: Map<string, number>): TopicsView {
  return {
    partitionCount: (topic) => counts.get(topic),
    topicId: (topic) => (counts.has(topic) ? topicIdOf(topic) : undefined),
    topicName: (id) => [...counts.keys()].find((t) => topicIdOf(t) === id),
    async offsets(partitions) {
      return partitions.map(() => ({ logEndOffset: 0, highWatermark: 0 }))
    },
  }
}

const CONFIG = { consumerGroupSessionTimeoutMs: 45_000, consumerGroupHeartbeatIntervalMs: 5_000 }

function hbInput(over: Partial<ConsumerGroupHeartbeatInput>): ConsumerGroupHeartbeatInput {
  return {
    groupId: G,
    memberId: '',
    memberEpoch: 0,
    instanceId: null,
    rackId: null,
    rebalanceTimeoutMs: 30_000,
    subscribedTopicNames: ['t'],
    subscribedTopicRegex: null,
    serverAssignor: null,
    topicPartitions: [],
    clientId: 'client',
    clientHost: '/127.0.0.1',
    ...over,
  }
}

/** A member as a client drives it: it remembers its id, epoch and owned partitions between heartbeats. */
class Member {
  memberId = ''
  epoch = 0
  owned: TopicPartitionsById[] = []
  last!: ConsumerGroupHeartbeatResult

  constructor(
    private readonly h: Harness,
    private readonly over: Partial<ConsumerGroupHeartbeatInput> = {},
  ) {}

  /** One heartbeat; takes the answer's assignment as what it owns now (revocation done at once). */
  async beat(extra: Partial<ConsumerGroupHeartbeatInput> = {}): Promise<ConsumerGroupHeartbeatResult> {
    const res = await this.h.coordinator.consumerGroupHeartbeat(hbInput({ ...this.over, memberId: this.memberId, memberEpoch: this.epoch, topicPartitions: this.owned, ...extra }))
    this.last = res
    if (res.errorCode === ErrorCode.NONE) {
      if (res.memberId !== null) this.memberId = res.memberId
      this.epoch = res.memberEpoch
      if (res.assignment !== null) this.owned = res.assignment
    }
    return res
  }

  partitions(topicId = T): number[] {
    return [...(this.owned.find((t) => t.topicId === topicId)?.partitions ?? [])].sort((a, b) => a - b)
  }
}

async function describe1(h: Harness, groupId = G) {
  return (await h.coordinator.consumerGroupDescribe([groupId]))[0]!
}

describe('consumer group membership and assignment', () => {
  it('a first member joins: a member id, epoch 1, every partition; the records are Kafka\'s consumer-group records', async () => {
    const h = await harness(CONFIG)
    const a = new Member(h)
    const res = await a.beat()
    expect(res).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: 1, heartbeatIntervalMs: 5_000 })
    expect(res.memberId).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(a.partitions()).toEqual([0, 1, 2, 3, 4, 5])
    const keys = h.writer.records(0).map((r) => decodeGroupRecordKey(r.key))
    expect(keys.map((k) => (k.type === 'consumer-group' ? k.record : k.type))).toEqual([
      'member-metadata',
      'partition-metadata',
      'metadata',
      'target-assignment-member',
      'target-assignment-metadata',
      'current-member-assignment',
    ])
    const values = h.writer.records(0).map((r) => r.value!)
    expect(decodeMemberSubscription(values[0]!)).toMatchObject({ clientId: 'client', clientHost: '/127.0.0.1', subscribedTopicNames: ['t'], rebalanceTimeoutMs: 30_000, serverAssignor: null })
    expect(decodeGroupEpoch(values[2]!)).toBe(1)
    expect(decodeTargetAssignment(values[3]!)).toEqual(new Map([[T, new Set([0, 1, 2, 3, 4, 5])]]))
    expect(decodeCurrentAssignment(values[5]!)).toMatchObject({ memberEpoch: 1, previousMemberEpoch: 0, state: MemberState.STABLE })
    const d = await describe1(h)
    expect(d).toMatchObject({ errorCode: ErrorCode.NONE, groupState: 'Stable', groupEpoch: 1, assignmentEpoch: 1, assignorName: 'uniform' })
    expect(d.members).toEqual([
      expect.objectContaining({ memberId: a.memberId, memberEpoch: 1, clientId: 'client', subscribedTopicNames: ['t'], assignment: [{ topicId: T, topicName: 't', partitions: [0, 1, 2, 3, 4, 5] }] }),
    ])
    // A heartbeat that changes nothing writes nothing and carries no assignment.
    const count = h.writer.records(0).length
    const again = await a.beat({ rebalanceTimeoutMs: -1, subscribedTopicNames: null, topicPartitions: null })
    expect(again).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: 1, assignment: null })
    expect(h.writer.records(0).length).toBe(count)
  })

  it('a second member: the first revokes before the second is given anything; a partition never has two owners', async () => {
    const h = await harness(CONFIG)
    const a = new Member(h)
    await a.beat()
    const b = new Member(h)
    await b.beat()
    // B is at epoch 2 with nothing: its target's partitions are still A's.
    expect(b.epoch).toBe(2)
    expect(b.partitions()).toEqual([])
    expect((await describe1(h)).groupState).toBe('Reconciling')
    // A's heartbeat at epoch 1 while still owning everything: it must give up half, keeping epoch 1.
    const revoke = await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: a.memberId, memberEpoch: 1, topicPartitions: a.owned }))
    expect(revoke.memberEpoch).toBe(1)
    const kept = revoke.assignment!.find((t) => t.topicId === T)!.partitions
    expect(kept).toHaveLength(3)
    // B asks again before A acknowledged: still nothing.
    await b.beat()
    expect(b.partitions()).toEqual([])
    // A acknowledges (no longer lists the revoked ones): epoch 2, STABLE.
    a.owned = revoke.assignment!
    a.epoch = 1
    await a.beat()
    expect(a.epoch).toBe(2)
    // Now B gets the rest.
    await b.beat()
    expect(b.partitions()).toHaveLength(3)
    expect([...a.partitions(), ...b.partitions()].sort()).toEqual([0, 1, 2, 3, 4, 5])
    expect((await describe1(h)).groupState).toBe('Stable')
  })

  it('a member leaving (epoch -1) moves its partitions to the others on their next heartbeat', async () => {
    const h = await harness(CONFIG)
    const a = new Member(h)
    const b = new Member(h)
    await a.beat()
    await b.beat()
    for (let i = 0; i < 3; i++) {
      await a.beat()
      await b.beat()
    }
    expect(a.partitions().length + b.partitions().length).toBe(6)
    const left = await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: a.memberId, memberEpoch: -1, topicPartitions: null, subscribedTopicNames: null, rebalanceTimeoutMs: -1 }))
    expect(left).toMatchObject({ errorCode: ErrorCode.NONE, memberId: a.memberId, memberEpoch: -1 })
    await b.beat()
    expect(b.partitions()).toEqual([0, 1, 2, 3, 4, 5])
    const d = await describe1(h)
    expect(d.members.map((m) => m.memberId)).toEqual([b.memberId])
    expect(d.groupState).toBe('Stable')
  })

  it('a member that stops heartbeating is fenced after group.consumer.session.timeout.ms', async () => {
    const h = await harness(CONFIG)
    const a = new Member(h)
    const b = new Member(h)
    await a.beat()
    await b.beat()
    await a.beat() // revokes half
    await a.beat() // acknowledged
    await b.beat() // takes the other half
    expect((await describe1(h)).groupState).toBe('Stable')
    await h.advance(44_000)
    await b.beat()
    expect((await describe1(h)).members).toHaveLength(2)
    // A has been silent for 45 s: gone.
    await h.advance(1_000)
    expect((await describe1(h)).members.map((m) => m.memberId)).toEqual([b.memberId])
    await b.beat()
    expect(b.partitions()).toEqual([0, 1, 2, 3, 4, 5])
    // A comes back with its old epoch: the coordinator no longer knows it.
    expect((await a.beat()).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
  })

  it('a member that does not revoke within its rebalance timeout is fenced', async () => {
    const h = await harness(CONFIG)
    const a = new Member(h, { rebalanceTimeoutMs: 10_000 })
    await a.beat()
    const b = new Member(h)
    await b.beat()
    // A is told to revoke but keeps reporting everything.
    const stuck = a.owned
    await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: a.memberId, memberEpoch: 1, topicPartitions: stuck, rebalanceTimeoutMs: 10_000 }))
    await h.advance(5_000)
    await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: a.memberId, memberEpoch: 1, topicPartitions: stuck, rebalanceTimeoutMs: 10_000 }))
    await h.advance(5_000)
    expect((await describe1(h)).members.map((m) => m.memberId)).toEqual([b.memberId])
    await b.beat()
    expect(b.partitions()).toEqual([0, 1, 2, 3, 4, 5])
  })

  it('member epochs: a greater epoch is fenced, a smaller one too unless it is the previous epoch with a subset; epoch 0 rejoins', async () => {
    const h = await harness(CONFIG)
    const a = new Member(h)
    await a.beat()
    expect((await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: a.memberId, memberEpoch: 5, topicPartitions: a.owned }))).errorCode).toBe(ErrorCode.FENCED_MEMBER_EPOCH)
    const b = new Member(h)
    await b.beat()
    await a.beat() // revoke at epoch 1
    await a.beat() // acknowledged: epoch 2 (previous 1)
    expect(a.epoch).toBe(2)
    // The answer with epoch 2 was lost: epoch 1 with a subset of the assignment is accepted.
    const retry = await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: a.memberId, memberEpoch: 1, topicPartitions: a.owned }))
    expect(retry).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: 2 })
    // Epoch 1 claiming partitions it no longer has: fenced.
    expect((await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: a.memberId, memberEpoch: 1, topicPartitions: [{ topicId: T, partitions: [0, 1, 2, 3, 4, 5] }] }))).errorCode).toBe(ErrorCode.FENCED_MEMBER_EPOCH)
    // A fenced member rejoins with its id and epoch 0, and gets its assignment back.
    const rejoin = await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: a.memberId, memberEpoch: 0 }))
    expect(rejoin).toMatchObject({ errorCode: ErrorCode.NONE, memberId: a.memberId, memberEpoch: 2 })
    expect(rejoin.assignment).toEqual(a.owned)
    expect((await h.coordinator.consumerGroupHeartbeat(hbInput({ memberId: 'nobody', memberEpoch: 3 }))).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
  })

  it('static members: a temporary leave (-2) keeps the assignment; the instance rejoins under a new id with it; an active instance id is not released', async () => {
    const h = await harness(CONFIG)
    const s = new Member(h, { instanceId: 'instance-1' })
    const d = new Member(h)
    await s.beat()
    await d.beat()
    for (let i = 0; i < 2; i++) {
      await s.beat()
      await d.beat()
    }
    const mine = s.partitions()
    expect(mine).toHaveLength(3)
    // Another process with the same instance id while it is active.
    const clash = await h.coordinator.consumerGroupHeartbeat(hbInput({ instanceId: 'instance-1' }))
    expect(clash.errorCode).toBe(ErrorCode.UNRELEASED_INSTANCE_ID)
    const left = await h.coordinator.consumerGroupHeartbeat(hbInput({ instanceId: 'instance-1', memberId: s.memberId, memberEpoch: -2, topicPartitions: null, subscribedTopicNames: null, rebalanceTimeoutMs: -1 }))
    expect(left).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: -2 })
    // Its partitions stay with it: the dynamic member does not get them.
    await d.beat()
    expect(d.partitions()).toHaveLength(3)
    const described = await describe1(h)
    expect(described.members.find((m) => m.instanceId === 'instance-1')).toMatchObject({ memberEpoch: -2 })
    // The restarted instance (new member id) takes its assignment over at once, without a rebalance.
    const epochBefore = (await describe1(h)).groupEpoch
    const back = new Member(h, { instanceId: 'instance-1' })
    const res = await back.beat()
    expect(res.errorCode).toBe(ErrorCode.NONE)
    expect((await describe1(h)).groupEpoch).toBe(epochBefore)
    expect(res.memberEpoch).toBe(epochBefore)
    expect(back.memberId).not.toBe(s.memberId)
    expect(back.partitions()).toEqual(mine)
    expect((await describe1(h)).members.map((m) => m.memberId).sort()).toEqual([back.memberId, d.memberId].sort())
    // The old member id is fenced by the new one.
    expect((await h.coordinator.consumerGroupHeartbeat(hbInput({ instanceId: 'instance-1', memberId: s.memberId, memberEpoch: s.epoch, topicPartitions: s.owned }))).errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID)
  })

  it('a static member rejoining with another subscription bumps the group epoch and gets a new target', async () => {
    const counts = new Map([['t', 6], ['u', 2]])
    const h = await harness(CONFIG, { topics: mutableTopics(counts) })
    const s = new Member(h, { instanceId: 'instance-1' })
    await s.beat()
    await s.beat()
    expect(s.partitions()).toEqual([0, 1, 2, 3, 4, 5])
    await h.coordinator.consumerGroupHeartbeat(hbInput({ instanceId: 'instance-1', memberId: s.memberId, memberEpoch: -2, topicPartitions: null, subscribedTopicNames: null, rebalanceTimeoutMs: -1 }))
    const epochBefore = (await describe1(h)).groupEpoch
    const back = new Member(h, { instanceId: 'instance-1', subscribedTopicNames: ['t', 'u'] })
    const res = await back.beat()
    expect(res.errorCode).toBe(ErrorCode.NONE)
    expect((await describe1(h)).groupEpoch).toBe(epochBefore + 1)
    expect(res.memberEpoch).toBe(epochBefore + 1)
    expect(back.partitions()).toEqual([0, 1, 2, 3, 4, 5])
    expect(back.partitions(topicIdOf('u'))).toEqual([0, 1])
  })

  it('a static member that left and does not come back is fenced after the session timeout', async () => {
    const h = await harness(CONFIG)
    const s = new Member(h, { instanceId: 'i' })
    const d = new Member(h)
    await s.beat()
    await d.beat()
    await s.beat()
    await d.beat()
    await h.coordinator.consumerGroupHeartbeat(hbInput({ instanceId: 'i', memberId: s.memberId, memberEpoch: -2, topicPartitions: null, subscribedTopicNames: null, rebalanceTimeoutMs: -1 }))
    for (let t = 0; t < 50_000; t += 10_000) {
      await h.advance(10_000)
      await d.beat()
    }
    expect((await describe1(h)).members.map((m) => m.memberId)).toEqual([d.memberId])
    await d.beat()
    expect(d.partitions()).toEqual([0, 1, 2, 3, 4, 5])
  })

  it('the range assignor when members ask for it; an unknown assignor is refused', async () => {
    const h = await harness(CONFIG)
    const a = new Member(h, { serverAssignor: 'range', subscribedTopicNames: ['t', 'u'] })
    const b = new Member(h, { serverAssignor: 'range', subscribedTopicNames: ['t', 'u'] })
    await a.beat()
    await b.beat()
    for (let i = 0; i < 3; i++) {
      await a.beat()
      await b.beat()
    }
    const d = await describe1(h)
    expect(d.assignorName).toBe('range')
    // Contiguous ranges per topic, the same partition numbers of each topic to each member (co-partitioning).
    const byMember = new Map(d.members.map((m) => [m.memberId, m.targetAssignment.map((t) => [t.topicName, t.partitions])]))
    const [first, second] = [...byMember.values()].sort((x, y) => (JSON.stringify(x) < JSON.stringify(y) ? -1 : 1))
    expect(first).toEqual([
      ['t', [0, 1, 2]],
      ['u', [0]],
    ])
    expect(second).toEqual([
      ['t', [3, 4, 5]],
      ['u', [1]],
    ])
    const bad = await h.coordinator.consumerGroupHeartbeat(hbInput({ serverAssignor: 'sticky' }))
    expect(bad).toMatchObject({ errorCode: ErrorCode.UNSUPPORTED_ASSIGNOR })
    expect(bad.errorMessage).toContain('Supported assignors: uniform, range')
  })

  it('more partitions in a subscribed topic bump the group epoch and are assigned', async () => {
    const counts = new Map([['t', 2]])
    const h = await harness(CONFIG, { topics: mutableTopics(counts) })
    const a = new Member(h)
    await a.beat()
    expect(a.partitions()).toEqual([0, 1])
    counts.set('t', 4)
    await a.beat()
    expect(a.epoch).toBe(2)
    expect(a.partitions()).toEqual([0, 1, 2, 3])
    // A topic subscribed before it exists is assigned once it does.
    const b = new Member(h, { groupId: 'later', subscribedTopicNames: ['v'] })
    await b.beat()
    expect(b.owned).toEqual([])
    counts.set('v', 1)
    await b.beat()
    expect(b.owned).toEqual([{ topicId: topicIdOf('v'), partitions: [0] }])
  })

  it('refuses invalid heartbeats with INVALID_REQUEST', async () => {
    const h = await harness(CONFIG)
    const cases: Partial<ConsumerGroupHeartbeatInput>[] = [
      { groupId: '' },
      { instanceId: '' },
      { rackId: '' },
      { subscribedTopicRegex: 't.*' },
      { rebalanceTimeoutMs: -1 },
      { topicPartitions: null },
      { topicPartitions: [{ topicId: T, partitions: [0] }] },
      { subscribedTopicNames: [] },
      { memberEpoch: 3, memberId: '' },
      { memberEpoch: -2, memberId: 'm', instanceId: null },
      { memberEpoch: -3, memberId: 'm' },
    ]
    for (const c of cases) expect((await h.coordinator.consumerGroupHeartbeat(hbInput(c))).errorCode, JSON.stringify(c)).toBe(ErrorCode.INVALID_REQUEST)
  })

  it('group.consumer.max.size', async () => {
    const h = await harness({ ...CONFIG, consumerGroupMaxSize: 1 })
    await new Member(h).beat()
    expect((await new Member(h).beat()).errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED)
  })

  it('a reload rebuilds the same groups from the records, and loaded members must heartbeat again', async () => {
    const writer = new InMemoryPartitionWriter()
    const h = await harness(CONFIG, { writer })
    const a = new Member(h)
    const b = new Member(h, { instanceId: 'stat' })
    await a.beat()
    await b.beat()
    await a.beat() // A revoking: UNREVOKED_PARTITIONS is persisted too
    const before = await describe1(h)
    h.coordinator.close()
    const again = await harness(CONFIG, { writer, clock: h.clock })
    expect(await describe1(again)).toEqual(before)
    // Both members' sessions run again from the load: 45 s of silence fences them.
    await again.advance(45_000)
    expect((await describe1(again)).members).toEqual([])
    expect((await describe1(again)).groupState).toBe('Empty')
  })
})

describe('classic and consumer groups share the id space', () => {
  it('a heartbeat for a classic group with members is refused; a JoinGroup for a consumer group with members too', async () => {
    const h = await harness(CONFIG)
    const join = track(h.coordinator.joinGroup(joinInput('classic-g')))
    await h.settle()
    expect(join.value().errorCode).toBe(ErrorCode.NONE)
    const hb = await h.coordinator.consumerGroupHeartbeat(hbInput({ groupId: 'classic-g' }))
    expect(hb).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group classic-g is not a consumer group.' })
    await new Member(h).beat()
    const classicJoin = await h.coordinator.joinGroup(joinInput(G))
    expect(classicJoin.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    // ConsumerGroupDescribe names only consumer groups.
    expect(await describe1(h, 'classic-g')).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND })
    expect(await describe1(h, 'none')).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND })
    expect(await describe1(h, '')).toMatchObject({ errorCode: ErrorCode.INVALID_GROUP_ID })
    const listed = (await h.coordinator.listGroups()).groups.sort((x, y) => (x.groupId < y.groupId ? -1 : 1))
    expect(listed).toEqual([
      { groupId: G, protocolType: 'consumer', state: 'Stable', groupType: 'consumer' },
      { groupId: 'classic-g', protocolType: 'consumer', state: 'CompletingRebalance', groupType: 'classic' },
    ])
  })

  it('empty groups change sides: a simple (offsets only) group becomes a consumer group with its offsets, an empty consumer group a classic one', async () => {
    const h = await harness(CONFIG)
    const commit = (groupId: string, generationId = -1, memberId = '') =>
      h.coordinator.commitOffsets({ groupId, generationId, memberId, groupInstanceId: null, retentionTimeMs: -1, consumerProtocolCapable: true, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
    await commit('was-simple')
    const m = new Member(h, { groupId: 'was-simple' })
    expect((await m.beat()).errorCode).toBe(ErrorCode.NONE)
    expect((await h.coordinator.fetchOffsets('was-simple', null)).topics[0]!.partitions[0]!.committedOffset).toBe(42n)
    expect((await describe1(h, 'was-simple')).groupState).toBe('Stable')
    await m.beat({ memberEpoch: -1, topicPartitions: null, subscribedTopicNames: null, rebalanceTimeoutMs: -1 })
    expect((await describe1(h, 'was-simple')).groupState).toBe('Empty')
    const join = track(h.coordinator.joinGroup(joinInput('was-simple')))
    await h.settle()
    expect(join.value().errorCode).toBe(ErrorCode.NONE)
    expect(await describe1(h, 'was-simple')).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND })
    expect((await h.coordinator.fetchOffsets('was-simple', null)).topics[0]!.partitions[0]!.committedOffset).toBe(42n)
  })
})

describe('offsets of consumer group members', () => {
  const commit = (h: Harness, memberId: string, epoch: number, capable = true) =>
    h.coordinator.commitOffsets({ groupId: G, generationId: epoch, memberId, groupInstanceId: null, retentionTimeMs: -1, consumerProtocolCapable: capable, topics: [{ name: 't', partitions: [{ partitionIndex: 1, committedOffset: 7n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
  const code = (r: Awaited<ReturnType<typeof commit>>) => r[0]!.partitions[0]!.errorCode

  it('commits at the member epoch; a stale epoch, an unknown member or OffsetCommit below v9 are refused; fetches check the epoch too', async () => {
    const h = await harness(CONFIG)
    const a = new Member(h)
    await a.beat()
    expect(code(await commit(h, a.memberId, 1))).toBe(ErrorCode.NONE)
    expect(code(await commit(h, a.memberId, 0))).toBe(ErrorCode.STALE_MEMBER_EPOCH)
    expect(code(await commit(h, 'stranger', 1))).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect(code(await commit(h, a.memberId, 1, false))).toBe(ErrorCode.UNSUPPORTED_VERSION)
    // Not a member, epoch -1: refused while the group has members.
    expect(code(await commit(h, '', -1))).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect((await h.coordinator.fetchOffsets(G, null, false, { memberId: a.memberId, memberEpoch: 1 })).topics[0]!.partitions[0]!.committedOffset).toBe(7n)
    expect((await h.coordinator.fetchOffsets(G, null, false, { memberId: a.memberId, memberEpoch: 3 })).errorCode).toBe(ErrorCode.STALE_MEMBER_EPOCH)
    expect((await h.coordinator.fetchOffsets(G, null, false, { memberId: 'stranger', memberEpoch: 1 })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    // An admin (no member, epoch -1) reads them.
    expect((await h.coordinator.fetchOffsets(G, null)).errorCode).toBe(ErrorCode.NONE)
    // OffsetDelete of a subscribed topic is refused; DeleteGroups of a group with members too.
    expect((await h.coordinator.deleteOffsets(G, [{ name: 't', partitions: [1] }])).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)
    expect(await h.coordinator.deleteGroups([G])).toEqual([{ groupId: G, errorCode: ErrorCode.NON_EMPTY_GROUP }])
    // Once empty: simple commits work, and the group can be deleted with its offsets.
    await a.beat({ memberEpoch: -1, topicPartitions: null, subscribedTopicNames: null, rebalanceTimeoutMs: -1 })
    expect(code(await commit(h, '', -1))).toBe(ErrorCode.NONE)
    expect(await h.coordinator.deleteGroups([G])).toEqual([{ groupId: G, errorCode: ErrorCode.NONE }])
    expect(await describe1(h)).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND })
    expect((await h.coordinator.fetchOffsets(G, null)).topics).toEqual([])
  })

  it('offset retention: an empty consumer group loses its offsets after offsets.retention.minutes and is then deleted', async () => {
    const h = await harness({ ...CONFIG, offsetsRetentionMs: 60_000, offsetsRetentionCheckIntervalMs: 10_000 })
    const a = new Member(h)
    await a.beat()
    expect(code(await commit(h, a.memberId, 1))).toBe(ErrorCode.NONE)
    // Subscribed: kept however old.
    for (let i = 0; i < 8; i++) {
      await h.advance(10_000)
      await a.beat()
    }
    expect((await h.coordinator.fetchOffsets(G, null)).topics).toHaveLength(1)
    await a.beat({ memberEpoch: -1, topicPartitions: null, subscribedTopicNames: null, rebalanceTimeoutMs: -1 })
    await h.advance(10_000)
    expect((await h.coordinator.fetchOffsets(G, null)).topics).toEqual([])
    await h.advance(10_000)
    expect(await describe1(h)).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND })
  })
})
