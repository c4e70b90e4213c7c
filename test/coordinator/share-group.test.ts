// KIP-932 share groups in the group coordinator (ShareGroupHeartbeat): joining with a client-chosen
// member id, the simple assignor (every partition assigned, shared when members outnumber partitions,
// balanced and sticky), leaving, session timeouts (with group configs), topics that grow, the records
// written (Kafka's share-group records) and their replay, ShareGroupDescribe, ListGroups/DeleteGroups,
// and the rule that a group id is one kind of group only.
import { describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { decodeGroupRecordKey } from '../../src/coordinator/group/offset-commit-group-metadata-records.js'
import { simpleAssign } from '../../src/coordinator/group/share-assignor.js'
import { decodeShareCurrentAssignment, decodeShareGroupEpoch, decodeShareMemberSubscription, decodeShareStatePartitionMetadata } from '../../src/coordinator/group/share-group-records.js'
import type { ShareGroupStatePort } from '../../src/coordinator/group/group-coordinator.js'
import type { Assignment } from '../../src/coordinator/group/consumer-group-records.js'
import type { ShareGroupHeartbeatInput, ShareGroupHeartbeatResult, TopicPartitionsById, TopicsView } from '../../src/coordinator/group/types.js'
import { InMemoryPartitionWriter } from '../../src/coordinator/runtime/partition-writer.js'
import { harness, joinInput, topicIdOf, track, type Harness } from './helpers.js'

const G = 'sg'
const T = topicIdOf('t') // 6 partitions
const U = topicIdOf('u') // 2 partitions

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

let nextId = 0

/** A share consumer as librdkafka drives one: its own member id, its epoch, the last assignment. */
class Member {
  readonly memberId: string
  epoch = 0
  owned: TopicPartitionsById[] = []
  last!: ShareGroupHeartbeatResult

  constructor(
    private readonly h: Harness,
    private readonly topics: string[] = ['t'],
    private readonly groupId = G,
  ) {
    this.memberId = `member-${String(nextId++).padStart(4, '0')}`
  }

  async beat(extra: Partial<ShareGroupHeartbeatInput> = {}): Promise<ShareGroupHeartbeatResult> {
    const res = await this.h.coordinator.shareGroupHeartbeat({
      groupId: this.groupId,
      memberId: this.memberId,
      memberEpoch: this.epoch,
      rackId: null,
      subscribedTopicNames: this.epoch === 0 ? this.topics : null,
      clientId: 'client',
      clientHost: '/127.0.0.1',
      ...extra,
    })
    this.last = res
    if (res.errorCode === ErrorCode.NONE) {
      this.epoch = res.memberEpoch
      if (res.assignment !== null) this.owned = res.assignment
    }
    return res
  }

  async leave(): Promise<ShareGroupHeartbeatResult> {
    return this.beat({ memberEpoch: -1 })
  }

  partitions(topicId = T): number[] {
    return [...(this.owned.find((t) => t.topicId === topicId)?.partitions ?? [])].sort((a, b) => a - b)
  }
}

async function describe1(h: Harness, groupId = G) {
  return (await h.coordinator.shareGroupDescribe([groupId]))[0]!
}

/** Every member beats until nobody's assignment changes (what their heartbeat loops do over time). */
async function settleMembers(members: Member[]): Promise<void> {
  for (let round = 0; round < 5; round++) for (const m of members) await m.beat()
}

describe('share group membership', () => {
  it('a member joins with its own id and epoch 0 and gets every partition of its topics by topic id', async () => {
    const h = await harness()
    const a = new Member(h, ['t', 'u'])
    const res = await a.beat()
    expect(res).toMatchObject({ errorCode: ErrorCode.NONE, errorMessage: null, memberId: a.memberId, memberEpoch: 1, heartbeatIntervalMs: 5000 })
    expect(res.assignment).toEqual(
      [
        { topicId: T, partitions: [0, 1, 2, 3, 4, 5] },
        { topicId: U, partitions: [0, 1] },
      ].sort((x, y) => (x.topicId < y.topicId ? -1 : 1)),
    )
    // A heartbeat with nothing new: same epoch, no assignment (the member has it).
    expect(await a.beat()).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: 1, assignment: null })
    const d = await describe1(h)
    expect(d).toMatchObject({ errorCode: ErrorCode.NONE, groupState: 'Stable', groupEpoch: 1, assignmentEpoch: 1, assignorName: 'simple' })
    expect(d.members).toEqual([
      {
        memberId: a.memberId,
        rackId: null,
        memberEpoch: 1,
        clientId: 'client',
        clientHost: '/127.0.0.1',
        subscribedTopicNames: ['t', 'u'],
        assignment: expect.arrayContaining([
          { topicId: T, topicName: 't', partitions: [0, 1, 2, 3, 4, 5] },
          { topicId: U, topicName: 'u', partitions: [0, 1] },
        ]),
      },
    ])
  })

  it('two members split six partitions three and three, and the first gives up what the second takes', async () => {
    const h = await harness()
    const a = new Member(h)
    const b = new Member(h)
    await a.beat()
    expect(a.partitions()).toEqual([0, 1, 2, 3, 4, 5])
    const rb = await b.beat()
    expect(rb.memberEpoch).toBe(2)
    await settleMembers([a, b])
    expect(a.epoch).toBe(2)
    expect(a.partitions().length).toBe(3)
    expect(b.partitions().length).toBe(3)
    expect([...a.partitions(), ...b.partitions()].sort()).toEqual([0, 1, 2, 3, 4, 5])
  })

  it('more members than partitions: every member gets a partition, each partition is shared', async () => {
    const h = await harness()
    // Three members on topic u (2 partitions): sharing ceil(3/2) = 2, four assignments: 2, 1, 1.
    const ms = [new Member(h, ['u']), new Member(h, ['u']), new Member(h, ['u'])]
    await settleMembers(ms)
    const counts = ms.map((m) => m.partitions(U).length).sort()
    expect(counts).toEqual([1, 1, 2])
    const holders = [0, 1].map((p) => ms.filter((m) => m.partitions(U).includes(p)).length)
    expect(holders).toEqual([2, 2])
  })

  it('three members on one partition all hold it', async () => {
    const counts = new Map([['one', 1]])
    const h = await harness({}, { topics: mutableTopics(counts) })
    const ms = [new Member(h, ['one']), new Member(h, ['one']), new Member(h, ['one'])]
    await settleMembers(ms)
    for (const m of ms) expect(m.partitions(topicIdOf('one'))).toEqual([0])
  })

  it('a member that leaves (epoch -1) gives its partitions to the others; it may come back under its id', async () => {
    const h = await harness()
    const a = new Member(h)
    const b = new Member(h)
    await settleMembers([a, b])
    expect(await b.leave()).toMatchObject({ errorCode: ErrorCode.NONE, memberId: b.memberId, memberEpoch: -1 })
    await a.beat()
    expect(a.partitions()).toEqual([0, 1, 2, 3, 4, 5])
    expect((await describe1(h)).members.map((m) => m.memberId)).toEqual([a.memberId])
    // Leaving twice: it is no longer a member.
    expect((await b.leave()).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    // Back with epoch 0 and the same id (librdkafka after max.poll.interval.ms).
    b.epoch = 0
    expect((await b.beat()).errorCode).toBe(ErrorCode.NONE)
    await settleMembers([a, b])
    expect(a.partitions().length + b.partitions().length).toBe(6)
  })

  it('a member silent for the session timeout is removed and its partitions move', async () => {
    const h = await harness({ shareGroupSessionTimeoutMs: 45_000 })
    const a = new Member(h)
    const b = new Member(h)
    await settleMembers([a, b])
    await h.advance(30_000)
    await a.beat()
    await h.advance(20_000) // b silent for 50 s, a for 20 s
    const d = await describe1(h)
    expect(d.members.map((m) => m.memberId)).toEqual([a.memberId])
    await a.beat()
    expect(a.partitions()).toEqual([0, 1, 2, 3, 4, 5])
    expect((await b.beat()).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    await h.advance(45_000)
    expect((await describe1(h)).groupState).toBe('Empty')
  })

  it("a group's share.session.timeout.ms and share.heartbeat.interval.ms override the broker's", async () => {
    const h = await harness({ shareGroupSessionTimeoutMs: 45_000, shareGroupHeartbeatIntervalMs: 5000, shareGroupConfig: (g) => (g === 'quick' ? { sessionTimeoutMs: 2000, heartbeatIntervalMs: 700 } : { sessionTimeoutMs: 45_000, heartbeatIntervalMs: 5000 }) })
    const q = new Member(h, ['t'], 'quick')
    expect((await q.beat()).heartbeatIntervalMs).toBe(700)
    expect((await new Member(h).beat()).heartbeatIntervalMs).toBe(5000)
    await h.advance(2500)
    expect((await describe1(h, 'quick')).groupState).toBe('Empty')
    expect((await describe1(h)).groupState).toBe('Stable')
  })

  it('follows topics created, grown and deleted on the next heartbeat', async () => {
    const counts = new Map<string, number>()
    const h = await harness({}, { topics: mutableTopics(counts) })
    const a = new Member(h, ['late'])
    expect((await a.beat()).assignment).toEqual([]) // subscribed before the topic exists
    counts.set('late', 2)
    await a.beat()
    expect(a.partitions(topicIdOf('late'))).toEqual([0, 1])
    counts.set('late', 5) // CreatePartitions
    await a.beat()
    expect(a.partitions(topicIdOf('late'))).toEqual([0, 1, 2, 3, 4])
    counts.delete('late')
    expect((await a.beat()).assignment).toEqual([])
  })
})

describe('share group heartbeat errors', () => {
  it('refuses malformed heartbeats with INVALID_REQUEST and Kafka messages', async () => {
    const h = await harness()
    const base: ShareGroupHeartbeatInput = { groupId: G, memberId: 'm', memberEpoch: 0, rackId: null, subscribedTopicNames: ['t'], clientId: 'c', clientHost: 'h' }
    const cases: [Partial<ShareGroupHeartbeatInput>, string][] = [
      [{ memberId: '' }, "MemberId can't be empty."],
      [{ groupId: '' }, "GroupId can't be empty."],
      [{ rackId: '' }, "RackId can't be empty."],
      [{ subscribedTopicNames: null }, 'SubscribedTopicNames must be set in first request.'],
      [{ subscribedTopicNames: [] }, 'SubscribedTopicNames must be set in first request.'],
      [{ memberEpoch: -2 }, 'MemberEpoch is invalid.'],
    ]
    for (const [over, message] of cases) expect(await h.coordinator.shareGroupHeartbeat({ ...base, ...over })).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST, errorMessage: message })
    // Nothing was created by them.
    expect((await describe1(h)).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
  })

  it('fences epochs ahead of the coordinator, and behind it unless the previous one', async () => {
    const h = await harness()
    const a = new Member(h)
    await a.beat()
    expect(await a.beat({ memberEpoch: 5 })).toMatchObject({ errorCode: ErrorCode.FENCED_MEMBER_EPOCH })
    const b = new Member(h)
    await b.beat() // group epoch 2; a still at 1
    await a.beat() // a moves to 2, previous 1
    expect(a.epoch).toBe(2)
    expect((await a.beat({ memberEpoch: 1 })).errorCode).toBe(ErrorCode.NONE) // the lost answer case
    const c = new Member(h)
    await c.beat()
    await a.beat() // a at 3, previous 2
    expect((await a.beat({ memberEpoch: 1 })).errorCode).toBe(ErrorCode.FENCED_MEMBER_EPOCH)
  })

  it('unknown members, unknown groups, and group.share.max.size', async () => {
    const h = await harness({ shareGroupMaxSize: 2 })
    expect(await h.coordinator.shareGroupHeartbeat({ groupId: 'nope', memberId: 'x', memberEpoch: 3, rackId: null, subscribedTopicNames: null, clientId: '', clientHost: '' })).toMatchObject({
      errorCode: ErrorCode.GROUP_ID_NOT_FOUND,
      errorMessage: 'Share group nope not found.',
    })
    const a = new Member(h)
    await a.beat()
    expect(await h.coordinator.shareGroupHeartbeat({ groupId: G, memberId: 'stranger', memberEpoch: 1, rackId: null, subscribedTopicNames: null, clientId: '', clientHost: '' })).toMatchObject({
      errorCode: ErrorCode.UNKNOWN_MEMBER_ID,
    })
    await new Member(h).beat()
    expect(await new Member(h).beat()).toMatchObject({ errorCode: ErrorCode.GROUP_MAX_SIZE_REACHED, errorMessage: 'The share group has reached its maximum capacity of 2 members.' })
    // A member already in keeps heartbeating.
    expect((await a.beat()).errorCode).toBe(ErrorCode.NONE)
  })
})

describe('share groups and the other kinds of group', () => {
  it('a group id is a classic, consumer or share group, never two', async () => {
    const h = await harness()
    const join = track(h.coordinator.joinGroup(joinInput('classic-g')))
    await h.settle()
    expect(join.value().errorCode).toBe(ErrorCode.NONE)
    expect(await new Member(h, ['t'], 'classic-g').beat()).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group classic-g is not a share group.' })

    await new Member(h).beat()
    const classicJoin = track(h.coordinator.joinGroup(joinInput(G)))
    await h.settle()
    expect(classicJoin.value().errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    const cg = await h.coordinator.consumerGroupHeartbeat({
      groupId: G, memberId: 'c1', memberEpoch: 0, instanceId: null, rackId: null, rebalanceTimeoutMs: 30_000, subscribedTopicNames: ['t'], subscribedTopicRegex: null, serverAssignor: null, topicPartitions: [], clientId: '', clientHost: '',
    })
    expect(cg).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: `Group ${G} is not a consumer group.` })
    const commit = await h.coordinator.commitOffsets({ groupId: G, generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
    expect(commit[0]!.partitions[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
    expect((await h.coordinator.fetchOffsets(G, null)).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
    // ConsumerGroupDescribe and ShareGroupDescribe each know only their own kind.
    expect((await h.coordinator.consumerGroupDescribe([G]))[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
    expect(await describe1(h, 'classic-g')).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group classic-g is not a share group.' })
    expect((await describe1(h, '')).errorCode).toBe(ErrorCode.INVALID_GROUP_ID)
  })

  it('ListGroups lists share groups as type share; DeleteGroups deletes an empty one only', async () => {
    const h = await harness()
    const a = new Member(h)
    await a.beat()
    const listed = await h.coordinator.listGroups()
    expect(listed.groups).toContainEqual({ groupId: G, protocolType: 'share', state: 'Stable', groupType: 'share' })
    expect((await h.coordinator.listGroups(['empty'])).groups.find((g) => g.groupId === G)).toBeUndefined()
    expect(await h.coordinator.deleteGroups([G])).toEqual([{ groupId: G, errorCode: ErrorCode.NON_EMPTY_GROUP }])
    await a.leave()
    expect((await h.coordinator.listGroups(['Empty'])).groups).toContainEqual({ groupId: G, protocolType: 'share', state: 'Empty', groupType: 'share' })
    expect(await h.coordinator.deleteGroups([G])).toEqual([{ groupId: G, errorCode: ErrorCode.NONE }])
    expect((await describe1(h)).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
    expect((await h.coordinator.listGroups()).groups.find((g) => g.groupId === G)).toBeUndefined()
    // The id is free again, for any kind of group.
    const join = track(h.coordinator.joinGroup(joinInput(G)))
    await h.settle()
    expect(join.value().errorCode).toBe(ErrorCode.NONE)
  })
})

describe('share group records', () => {
  it("writes Kafka's share-group records (key versions 9-14)", async () => {
    const h = await harness()
    const a = new Member(h)
    await a.beat()
    const keys = h.writer.records(0).map((r) => decodeGroupRecordKey(r.key))
    expect(keys.map((k) => (k.type === 'share-group' ? k.record : k.type))).toEqual([
      'member-metadata',
      'partition-metadata',
      'metadata',
      'target-assignment-member',
      'target-assignment-metadata',
      'current-member-assignment',
    ])
    const byRecord = new Map(h.writer.records(0).map((r) => [(decodeGroupRecordKey(r.key) as { record: string }).record, r]))
    expect(h.writer.records(0)[0]!.key.readInt16BE(0)).toBe(10)
    expect(decodeShareMemberSubscription(byRecord.get('member-metadata')!.value!)).toEqual({ rackId: null, clientId: 'client', clientHost: '/127.0.0.1', subscribedTopicNames: ['t'] })
    expect(decodeShareGroupEpoch(byRecord.get('metadata')!.value!)).toBe(1)
    const current = decodeShareCurrentAssignment(byRecord.get('current-member-assignment')!.value!)
    expect(current.memberEpoch).toBe(1)
    expect([...current.assignedPartitions.get(T)!].sort()).toEqual([0, 1, 2, 3, 4, 5])
    // Leaving writes the member's tombstones and a new group epoch.
    const before = h.writer.records(0).length
    await a.leave()
    const tail = h.writer.records(0).slice(before)
    expect(tail.filter((r) => r.value === null).length).toBe(3)
  })

  it('a reload rebuilds the same share groups, and loaded members must heartbeat again', async () => {
    const writer = new InMemoryPartitionWriter()
    const h = await harness({}, { writer })
    const a = new Member(h)
    const b = new Member(h, ['t', 'u'])
    await settleMembers([a, b])
    const before = await describe1(h)
    h.coordinator.close()
    const again = await harness({}, { writer, clock: h.clock })
    expect(await describe1(again)).toEqual(before)
    // The members carry on where they were, at the same epochs.
    const ra = await again.coordinator.shareGroupHeartbeat({ groupId: G, memberId: a.memberId, memberEpoch: a.epoch, rackId: null, subscribedTopicNames: null, clientId: 'client', clientHost: '/127.0.0.1' })
    expect(ra).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: a.epoch, assignment: null })
    await again.advance(45_000)
    expect((await describe1(again)).groupState).toBe('Empty')
  })
})

/** The share coordinators as the group coordinator sees them (a recording double: which states it initializes and deletes). */
class RecordingStates implements ShareGroupStatePort {
  readonly initialized: string[] = []
  readonly deleted: { groupId: string; statePartitions: readonly [string, readonly number[]][] | undefined }[] = []
  failNext = false
  async initialize(groupId: string, assigned: readonly [string, readonly number[]][]): Promise<void> {
    if (this.failNext) {
      this.failNext = false
      throw new Error('share coordinator not available')
    }
    for (const [topicId, partitions] of assigned) for (const p of partitions) this.initialized.push(`${groupId}/${topicId === T ? 't' : 'u'}-${p}`)
  }
  async deleteGroup(groupId: string, statePartitions: readonly [string, readonly number[]][] | undefined): Promise<void> {
    this.deleted.push({ groupId, statePartitions })
  }
}

describe('share-partition state of a group (ShareGroupStatePartitionMetadata, key 15)', () => {
  it('records the partitions it initializes, initializes each once, and deletes exactly those with the group', async () => {
    const writer = new InMemoryPartitionWriter()
    const states = new RecordingStates()
    const h = await harness({}, { writer, shareStates: states })
    const a = new Member(h, ['t'])
    await a.beat()
    expect(states.initialized.sort()).toEqual(['sg/t-0', 'sg/t-1', 'sg/t-2', 'sg/t-3', 'sg/t-4', 'sg/t-5'])
    // Recorded as initializing before the share coordinators were asked, then as initialized.
    const stateRecords = writer.records(0).filter((r) => (decodeGroupRecordKey(r.key) as { record?: string }).record === 'state-partition-metadata')
    expect(stateRecords.map((r) => r.key.readInt16BE(0))).toEqual([15, 15])
    const [initializing, initialized] = stateRecords.map((r) => decodeShareStatePartitionMetadata(r.value!))
    expect([...initializing!.initializing.get(T)!.partitions].sort()).toEqual([0, 1, 2, 3, 4, 5])
    expect(initializing!.initialized.size).toBe(0)
    expect(initialized!.initializing.size).toBe(0)
    expect(initialized!.initialized.get(T)).toEqual({ topicName: 't', partitions: new Set([0, 1, 2, 3, 4, 5]) })
    // Later heartbeats initialize nothing again and write no state record.
    const count = writer.records(0).length
    await a.beat()
    await a.beat()
    expect(states.initialized).toHaveLength(6)
    expect(writer.records(0).length).toBe(count)
    expect((await describe1(h)).stateTopicIds).toEqual([T])
    // A second member on u: only u's partitions are initialized.
    const b = new Member(h, ['u'])
    await b.beat()
    expect(states.initialized.filter((k) => k.startsWith('sg/u'))).toEqual(['sg/u-0', 'sg/u-1'])
    // The group, empty, is deleted: the share coordinators delete the recorded partitions, not every partition.
    await a.leave()
    await b.leave()
    expect(await h.coordinator.deleteGroups([G])).toEqual([{ groupId: G, errorCode: ErrorCode.NONE }])
    expect(states.deleted).toEqual([{ groupId: G, statePartitions: [[T, [0, 1, 2, 3, 4, 5]], [U, [0, 1]]].sort(([x], [y]) => (String(x) < String(y) ? -1 : 1)) }])
    const tail = writer.records(0).slice(-8).map((r) => decodeGroupRecordKey(r.key) as { record?: string })
    expect(tail.some((k) => k.record === 'state-partition-metadata')).toBe(true)
  })

  it('a failed initialization leaves the partitions initializing: deleted with the group, and tried again on the next heartbeat', async () => {
    const states = new RecordingStates()
    const h = await harness({}, { shareStates: states })
    const a = new Member(h, ['u'])
    states.failNext = true
    await a.beat()
    expect(states.initialized).toEqual([])
    expect((await describe1(h)).stateTopicIds).toEqual([U])
    await a.beat()
    expect(states.initialized.sort()).toEqual(['sg/u-0', 'sg/u-1'])
    await a.leave()
    await h.coordinator.deleteGroups([G])
    expect(states.deleted[0]!.statePartitions).toEqual([[U, [0, 1]]])
  })

  it('a reload rebuilds the record; AlterShareGroupOffsets adds to it and DeleteShareGroupOffsets takes a topic out', async () => {
    const writer = new InMemoryPartitionWriter()
    const states = new RecordingStates()
    const h = await harness({}, { writer, shareStates: states })
    const a = new Member(h, ['u'])
    await a.beat()
    await a.leave()
    await h.coordinator.shareGroupStateChanged(G, { initialized: [[T, [2]]] })
    h.coordinator.close()
    const again = await harness({}, { writer, clock: h.clock, shareStates: states })
    expect((await describe1(again)).stateTopicIds?.sort()).toEqual([T, U].sort())
    await again.coordinator.shareGroupStateChanged(G, { deletedTopicIds: [U] })
    expect((await describe1(again)).stateTopicIds).toEqual([T])
    await again.coordinator.deleteGroups([G])
    expect(states.deleted[0]!.statePartitions).toEqual([[T, [2]]])
  })

  it('a group without the record (made before it was kept) is deleted by asking about every partition', async () => {
    const states = new RecordingStates()
    const h = await harness()
    const a = new Member(h)
    await a.beat()
    await a.leave()
    h.coordinator.close()
    const again = await harness({}, { writer: h.writer, clock: h.clock, shareStates: states })
    expect((await describe1(again)).stateTopicIds).toBeNull()
    await again.coordinator.deleteGroups([G])
    expect(states.deleted).toEqual([{ groupId: G, statePartitions: undefined }])
  })
})

describe('the simple assignor', () => {
  const member = (memberId: string, topics: string[], current: Assignment = new Map()) => ({ memberId, subscribedTopicIds: new Set(topics), currentTarget: current })
  const count = (a: Assignment | undefined): number => [...(a ?? new Map()).values()].reduce((n, ps) => n + ps.size, 0)

  it('balances partitions within one of each other and assigns every partition', () => {
    const topics = new Map([['A', 7], ['B', 3]])
    const out = simpleAssign({ members: ['m1', 'm2', 'm3'].map((id) => member(id, ['A', 'B'])), topics })
    const sizes = [...out.values()].map(count).sort()
    expect(sizes).toEqual([3, 3, 4])
    const seen = new Set<string>()
    for (const a of out.values()) for (const [t, ps] of a) for (const p of ps) seen.add(`${t}-${p}`)
    expect(seen.size).toBe(10)
  })

  it('is sticky: a member that joins takes partitions only from those over their share', () => {
    const topics = new Map([['A', 6]])
    const first = simpleAssign({ members: [member('m1', ['A']), member('m2', ['A'])], topics })
    const second = simpleAssign({ members: [member('m1', ['A'], first.get('m1')), member('m2', ['A'], first.get('m2')), member('m3', ['A'])], topics })
    for (const id of ['m1', 'm2']) {
      const kept = [...second.get(id)!.get('A')!].filter((p) => first.get(id)!.get('A')!.has(p))
      expect(kept.length).toBe(2)
    }
    expect(count(second.get('m3'))).toBe(2)
  })

  it('balances each topic among its own subscribers when subscriptions differ', () => {
    const topics = new Map([['A', 4], ['B', 2]])
    const out = simpleAssign({ members: [member('m1', ['A']), member('m2', ['A', 'B']), member('m3', ['B'])], topics })
    expect(count(out.get('m1'))).toBe(2)
    expect(out.get('m2')!.get('A')!.size).toBe(2)
    expect(out.get('m2')!.get('B')!.size).toBe(1)
    expect(out.get('m3')!.get('B')!.size).toBe(1)
    expect(out.get('m3')!.has('A')).toBe(false)
  })

  it('no topics, or topics that do not exist, give empty assignments', () => {
    const out = simpleAssign({ members: [member('m1', ['gone'])], topics: new Map() })
    expect(count(out.get('m1'))).toBe(0)
  })
})
