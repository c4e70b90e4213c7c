import { describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { decodeGroupMetadataValue, decodeGroupRecordKey } from '../../src/coordinator/group/offset-commit-group-metadata-records.js'
import type { GroupCoordinator } from '../../src/coordinator/group/group-coordinator.js'
import type { OffsetCommitPartitionInput } from '../../src/coordinator/group/types.js'
import { fakeTopics, harness, joinInput, subscription, track, type Harness } from './helpers.js'

const G = 'group-a'

/** Joins `n` dynamic members (no KIP-394 round trip) and syncs them; returns member ids, leader first. */
async function stableGroup(h: Harness, n: number, groupId = G): Promise<{ members: string[]; generationId: number }> {
  const joins = Array.from({ length: n }, (_, i) => track(h.coordinator.joinGroup(joinInput(groupId, { clientId: `c${i}` }))))
  await h.settle()
  const results = joins.map((j) => {
    expect(j.done()).toBe(true)
    return j.value()
  })
  for (const r of results) expect(r.errorCode).toBe(ErrorCode.NONE)
  const leader = results.find((r) => r.memberId === r.leader)!
  const generationId = leader.generationId
  const assignments = results.map((r, i) => ({ memberId: r.memberId, assignment: Buffer.from([i]) }))
  const syncs = results.map((r) => h.coordinator.syncGroup({ groupId, generationId, memberId: r.memberId, groupInstanceId: null, protocolType: null, protocolName: null, assignments: r.memberId === leader.memberId ? assignments : [] }))
  const synced = await Promise.all(syncs)
  for (const s of synced) expect(s.errorCode).toBe(ErrorCode.NONE)
  return { members: [leader.memberId, ...results.filter((r) => r !== leader).map((r) => r.memberId)], generationId }
}

async function state(c: GroupCoordinator, groupId = G): Promise<string> {
  return (await c.describeGroups([groupId]))[0]!.state
}

describe('JoinGroup and SyncGroup', () => {
  it('KIP-394: a member without an id gets MEMBER_ID_REQUIRED and joins with the id it was given', async () => {
    const h = await harness()
    const first = await h.coordinator.joinGroup(joinInput(G, { requireKnownMemberId: true }))
    expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED)
    expect(first.memberId).toMatch(/^client-[0-9a-f-]{36}$/)
    expect(await state(h.coordinator)).toBe('Empty')
    const join = track(h.coordinator.joinGroup(joinInput(G, { memberId: first.memberId, requireKnownMemberId: true })))
    await h.settle()
    expect(join.value()).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, leader: first.memberId, memberId: first.memberId, protocolName: 'range', protocolType: 'consumer' })
    expect(join.value().members.map((m) => m.memberId)).toEqual([first.memberId])
    expect(await state(h.coordinator)).toBe('CompletingRebalance')
    const sync = await h.coordinator.syncGroup({ groupId: G, generationId: 1, memberId: first.memberId, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [{ memberId: first.memberId, assignment: Buffer.from('A') }] })
    expect(sync).toMatchObject({ errorCode: ErrorCode.NONE, assignment: Buffer.from('A') })
    const described = (await h.coordinator.describeGroups([G]))[0]!
    expect(described).toMatchObject({ state: 'Stable', protocolType: 'consumer', protocolData: 'range' })
    expect(described.members[0]).toMatchObject({ memberId: first.memberId, clientId: 'client', clientHost: '/127.0.0.1', assignment: Buffer.from('A') })
    // The assignment was made durable as a GroupMetadata record.
    const last = h.writer.records(0).at(-1)!
    expect(decodeGroupRecordKey(last.key)).toEqual({ type: 'group-metadata', group: G })
    expect(decodeGroupMetadataValue(last.value!)).toMatchObject({ generation: 1, protocol: 'range', leader: first.memberId, members: [{ memberId: first.memberId, assignment: Buffer.from('A') }] })
  })

  it('a second member triggers a rebalance: heartbeats say REBALANCE_IN_PROGRESS until everyone rejoined; followers wait for the leader', async () => {
    const h = await harness()
    const { members: [a], generationId } = await stableGroup(h, 1)
    const joinB = track(h.coordinator.joinGroup(joinInput(G, { clientId: 'b' })))
    await h.settle()
    expect(joinB.done()).toBe(false)
    expect(await state(h.coordinator)).toBe('PreparingRebalance')
    expect(await h.coordinator.heartbeat({ groupId: G, generationId, memberId: a!, groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS)
    const joinA = track(h.coordinator.joinGroup(joinInput(G, { memberId: a! })))
    await h.settle()
    expect(joinA.value()).toMatchObject({ errorCode: ErrorCode.NONE, generationId: generationId + 1, leader: a })
    expect(joinA.value().members).toHaveLength(2)
    const b = joinB.value().memberId
    expect(joinB.value()).toMatchObject({ errorCode: ErrorCode.NONE, generationId: generationId + 1, leader: a, members: [] })
    // The follower asks first and waits for the leader's assignment to be written.
    const syncB = track(h.coordinator.syncGroup({ groupId: G, generationId: generationId + 1, memberId: b, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] }))
    await h.settle()
    expect(syncB.done()).toBe(false)
    const syncA = await h.coordinator.syncGroup({ groupId: G, generationId: generationId + 1, memberId: a!, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [{ memberId: a!, assignment: Buffer.from('1') }, { memberId: b, assignment: Buffer.from('2') }] })
    await h.settle()
    expect(syncA.assignment).toEqual(Buffer.from('1'))
    expect(syncB.value()).toMatchObject({ errorCode: ErrorCode.NONE, assignment: Buffer.from('2') })
    expect(await h.coordinator.heartbeat({ groupId: G, generationId: generationId + 1, memberId: b, groupInstanceId: null })).toBe(ErrorCode.NONE)
    // An old generation is refused.
    expect(await h.coordinator.heartbeat({ groupId: G, generationId, memberId: b, groupInstanceId: null })).toBe(ErrorCode.ILLEGAL_GENERATION)
  })

  it('selects the protocol every member supports by the members\' preferences', async () => {
    const h = await harness()
    const p = (name: string) => ({ name, metadata: subscription(['t']) })
    const joins = [
      track(h.coordinator.joinGroup(joinInput(G, { protocols: [p('range'), p('roundrobin')] }))),
      track(h.coordinator.joinGroup(joinInput(G, { protocols: [p('roundrobin'), p('range'), p('sticky')] }))),
      track(h.coordinator.joinGroup(joinInput(G, { protocols: [p('sticky'), p('roundrobin'), p('range')] }))),
    ]
    await h.settle()
    // Candidates are range and roundrobin (sticky is not supported by the first member); the votes are
    // range 1, roundrobin 2.
    for (const j of joins) expect(j.value().protocolName).toBe('roundrobin')
  })

  it('refuses a different protocol type or protocols with nothing in common, bad session timeouts and empty group ids', async () => {
    const h = await harness()
    await stableGroup(h, 1)
    expect((await h.coordinator.joinGroup(joinInput(G, { protocolType: 'connect' }))).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    expect((await h.coordinator.joinGroup(joinInput(G, { protocols: [{ name: 'other', metadata: Buffer.alloc(0) }] }))).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    expect((await h.coordinator.joinGroup(joinInput('new-group', { protocols: [] }))).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    expect((await h.coordinator.describeGroups(['new-group']))[0]!.state).toBe('Dead')
    expect((await h.coordinator.joinGroup(joinInput(G, { sessionTimeoutMs: 5999 }))).errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT)
    expect((await h.coordinator.joinGroup(joinInput(G, { sessionTimeoutMs: 300_001 }))).errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT)
    expect((await h.coordinator.joinGroup(joinInput(''))).errorCode).toBe(ErrorCode.INVALID_GROUP_ID)
    expect((await h.coordinator.joinGroup(joinInput(G, { memberId: 'nobody' }))).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect((await h.coordinator.joinGroup(joinInput('unknown-group', { memberId: 'nobody' }))).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
  })

  it('group.max.size refuses new members with GROUP_MAX_SIZE_REACHED', async () => {
    const h = await harness({ maxGroupSize: 2 })
    await stableGroup(h, 2)
    expect((await h.coordinator.joinGroup(joinInput(G))).errorCode).toBe(ErrorCode.GROUP_MAX_SIZE_REACHED)
  })

  it('SyncGroup errors: unknown member, wrong generation, rebalance in progress', async () => {
    const h = await harness()
    const { members: [a], generationId } = await stableGroup(h, 1)
    const sync = (over: object) => h.coordinator.syncGroup({ groupId: G, generationId, memberId: a!, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [], ...over })
    expect((await sync({ memberId: 'x' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect((await sync({ groupId: 'nope' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect((await sync({ generationId: generationId + 5 })).errorCode).toBe(ErrorCode.ILLEGAL_GENERATION)
    expect((await sync({ protocolName: 'roundrobin' })).errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    // A stable member re-syncing gets its current assignment.
    expect((await sync({})).assignment).toEqual(Buffer.from([0]))
    track(h.coordinator.joinGroup(joinInput(G)))
    await h.settle()
    expect((await sync({})).errorCode).toBe(ErrorCode.REBALANCE_IN_PROGRESS)
  })

  it('Heartbeat errors: unknown group or member, empty group id', async () => {
    const h = await harness()
    const { generationId } = await stableGroup(h, 1)
    expect(await h.coordinator.heartbeat({ groupId: 'nope', generationId, memberId: 'x', groupInstanceId: null })).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect(await h.coordinator.heartbeat({ groupId: G, generationId, memberId: 'x', groupInstanceId: null })).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect(await h.coordinator.heartbeat({ groupId: '', generationId, memberId: 'x', groupInstanceId: null })).toBe(ErrorCode.INVALID_GROUP_ID)
  })
})

describe('timeouts', () => {
  it('a member that stops heartbeating is removed after its session timeout and the group rebalances', async () => {
    const h = await harness()
    const { members: [a, b], generationId } = await stableGroup(h, 2)
    // b keeps heartbeating, a does not.
    for (let i = 0; i < 4; i++) {
      await h.advance(3000)
      expect(await h.coordinator.heartbeat({ groupId: G, generationId, memberId: b!, groupInstanceId: null })).toBe(i < 3 ? ErrorCode.NONE : ErrorCode.REBALANCE_IN_PROGRESS)
    }
    const described = (await h.coordinator.describeGroups([G]))[0]!
    expect(described.members.map((m) => m.memberId)).toEqual([b])
    expect(described.state).toBe('PreparingRebalance')
    // b rejoins alone: the join completes at once, b leads generation + 1.
    const rejoin = await h.coordinator.joinGroup(joinInput(G, { memberId: b! }))
    expect(rejoin).toMatchObject({ errorCode: ErrorCode.NONE, generationId: generationId + 1, leader: b })
    expect(a).not.toBe(b)
  })

  it('members that do not rejoin within the rebalance timeout are dropped from the next generation', async () => {
    const h = await harness()
    const { members: [a, b], generationId } = await stableGroup(h, 2)
    const joinA = track(h.coordinator.joinGroup(joinInput(G, { memberId: a!, rebalanceTimeoutMs: 20_000, protocols: [{ name: 'range', metadata: subscription(['t', 'u']) }] })))
    await h.settle()
    expect(joinA.done()).toBe(false)
    await h.advance(5000)
    expect(await h.coordinator.heartbeat({ groupId: G, generationId, memberId: b!, groupInstanceId: null })).toBe(ErrorCode.REBALANCE_IN_PROGRESS)
    // b never rejoins; the rebalance timeout is the longest of the members' (30 s for b).
    await h.advance(25_000)
    expect(joinA.done()).toBe(true)
    expect(joinA.value()).toMatchObject({ errorCode: ErrorCode.NONE, generationId: generationId + 1, leader: a })
    expect(joinA.value().members.map((m) => m.memberId)).toEqual([a])
    expect(await h.coordinator.heartbeat({ groupId: G, generationId: generationId + 1, memberId: b!, groupInstanceId: null })).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
  })

  it('a member that never sends SyncGroup is removed after the rebalance timeout', async () => {
    const h = await harness()
    const joins = [track(h.coordinator.joinGroup(joinInput(G))), track(h.coordinator.joinGroup(joinInput(G)))]
    await h.settle()
    const [r1, r2] = joins.map((j) => j.value())
    const leader = r1!.memberId === r1!.leader ? r1! : r2!
    const follower = leader === r1 ? r2! : r1!
    await h.coordinator.syncGroup({ groupId: G, generationId: leader.generationId, memberId: leader.memberId, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] })
    expect(await state(h.coordinator)).toBe('Stable')
    for (let i = 0; i < 4; i++) {
      await h.advance(8000)
      await h.coordinator.heartbeat({ groupId: G, generationId: leader.generationId, memberId: leader.memberId, groupInstanceId: null })
    }
    const described = (await h.coordinator.describeGroups([G]))[0]!
    expect(described.members.map((m) => m.memberId)).toEqual([leader.memberId])
    expect(described.state).toBe('PreparingRebalance')
    expect(follower.memberId).not.toBe(leader.memberId)
  })

  it('group.initial.rebalance.delay.ms: the first rebalance waits, and waits again while members keep arriving', async () => {
    const h = await harness({ initialRebalanceDelayMs: 3000 })
    const first = track(h.coordinator.joinGroup(joinInput(G)))
    await h.advance(2000)
    expect(first.done()).toBe(false)
    const second = track(h.coordinator.joinGroup(joinInput(G)))
    await h.advance(1000)
    // The delay passed, but a member arrived meanwhile: one more delay.
    expect(first.done()).toBe(false)
    await h.advance(2999)
    expect(first.done()).toBe(false)
    await h.advance(1)
    expect(first.value()).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1 })
    expect(second.value()).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1 })
    expect(first.value().members.length + second.value().members.length).toBe(2)
  })

  it('a member id handed out with MEMBER_ID_REQUIRED and never used expires; the rebalance does not wait for it', async () => {
    const h = await harness()
    const { members: [a] } = await stableGroup(h, 1)
    const pending = await h.coordinator.joinGroup(joinInput(G, { requireKnownMemberId: true }))
    expect(pending.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED)
    const joinA = track(h.coordinator.joinGroup(joinInput(G, { memberId: a!, protocols: [{ name: 'range', metadata: subscription(['u']) }] })))
    await h.settle()
    // The outstanding member id holds the join phase open until it expires.
    expect(joinA.done()).toBe(false)
    await h.advance(10_000)
    expect(joinA.value()).toMatchObject({ errorCode: ErrorCode.NONE, leader: a })
  })
})

describe('LeaveGroup', () => {
  it('removes members and rebalances; v3-style batches answer per member', async () => {
    const h = await harness()
    const { members: [a, b] } = await stableGroup(h, 2)
    const left = await h.coordinator.leaveGroup(G, [{ memberId: b!, groupInstanceId: null }, { memberId: 'ghost', groupInstanceId: null }])
    expect(left.errorCode).toBe(ErrorCode.NONE)
    expect(left.members.map((m) => m.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID])
    expect(await state(h.coordinator)).toBe('PreparingRebalance')
    const last = await h.coordinator.leaveGroup(G, [{ memberId: a!, groupInstanceId: null }])
    expect(last.members[0]!.errorCode).toBe(ErrorCode.NONE)
    await h.settle()
    expect(await state(h.coordinator)).toBe('Empty')
    // Becoming empty is written, so a reload knows the group is empty.
    const rec = h.writer.records(0).at(-1)!
    expect(decodeGroupMetadataValue(rec.value!)).toMatchObject({ members: [], protocol: null })
    expect((await h.coordinator.leaveGroup('nope', [{ memberId: 'x', groupInstanceId: null }])).members[0]!.errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
  })

  it('a member leaving while another waits in JoinGroup completes the join', async () => {
    const h = await harness()
    const { members: [a, b] } = await stableGroup(h, 2)
    const joinA = track(h.coordinator.joinGroup(joinInput(G, { memberId: a!, protocols: [{ name: 'range', metadata: subscription(['u']) }] })))
    await h.settle()
    expect(joinA.done()).toBe(false)
    await h.coordinator.leaveGroup(G, [{ memberId: b!, groupInstanceId: null }])
    await h.settle()
    expect(joinA.value()).toMatchObject({ errorCode: ErrorCode.NONE, leader: a, members: [{ memberId: a }] })
  })
})

describe('static membership', () => {
  it('a static member rejoining with a new member id replaces the old one without a rebalance; the old id is fenced', async () => {
    const h = await harness()
    const joins = [track(h.coordinator.joinGroup(joinInput(G, { groupInstanceId: 'i-1', requireKnownMemberId: true }))), track(h.coordinator.joinGroup(joinInput(G, { groupInstanceId: 'i-2' })))]
    await h.settle()
    const [r1, r2] = joins.map((j) => j.value())
    expect(r1!.memberId).toMatch(/^i-1-/)
    expect(r1!.errorCode).toBe(ErrorCode.NONE)
    const leader = r1!.leader === r1!.memberId ? r1! : r2!
    await h.coordinator.syncGroup({ groupId: G, generationId: 1, memberId: leader.memberId, groupInstanceId: leader === r1 ? 'i-1' : 'i-2', protocolType: null, protocolName: null, assignments: [{ memberId: r1!.memberId, assignment: Buffer.from('x') }] })
    expect(await state(h.coordinator)).toBe('Stable')
    // i-1 restarts (it lost its member id) and joins again.
    const again = await h.coordinator.joinGroup(joinInput(G, { groupInstanceId: 'i-1', requireKnownMemberId: true }))
    expect(again.errorCode).toBe(ErrorCode.NONE)
    expect(again.generationId).toBe(1)
    expect(again.memberId).not.toBe(r1!.memberId)
    expect(again.members).toEqual([])
    expect(await state(h.coordinator)).toBe('Stable')
    // Its assignment is still there under the new id.
    const sync = await h.coordinator.syncGroup({ groupId: G, generationId: 1, memberId: again.memberId, groupInstanceId: 'i-1', protocolType: null, protocolName: null, assignments: [] })
    expect(sync.assignment).toEqual(Buffer.from('x'))
    // The old incarnation is fenced.
    expect(await h.coordinator.heartbeat({ groupId: G, generationId: 1, memberId: r1!.memberId, groupInstanceId: 'i-1' })).toBe(ErrorCode.FENCED_INSTANCE_ID)
    expect((await h.coordinator.joinGroup(joinInput(G, { memberId: r1!.memberId, groupInstanceId: 'i-1' }))).errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID)
    expect((await h.coordinator.commitOffsets({ groupId: G, generationId: 1, memberId: r1!.memberId, groupInstanceId: 'i-1', retentionTimeMs: -1, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] }] }))[0]!.partitions[0]!.errorCode).toBe(ErrorCode.FENCED_INSTANCE_ID)
    // Admin removal by instance id alone.
    const removed = await h.coordinator.leaveGroup(G, [{ memberId: '', groupInstanceId: 'i-1' }, { memberId: 'wrong', groupInstanceId: 'i-2' }, { memberId: '', groupInstanceId: 'i-9' }])
    expect(removed.members.map((m) => m.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.UNKNOWN_MEMBER_ID])
  })

  it('static members survive a rebalance timeout without rejoining (only dynamic members are dropped)', async () => {
    const h = await harness()
    const joins = [track(h.coordinator.joinGroup(joinInput(G, { groupInstanceId: 's' }))), track(h.coordinator.joinGroup(joinInput(G)))]
    await h.settle()
    const [s, d] = joins.map((j) => j.value())
    const leader = s!.leader === s!.memberId ? s! : d!
    await h.coordinator.syncGroup({ groupId: G, generationId: 1, memberId: leader.memberId, groupInstanceId: leader === s ? 's' : null, protocolType: null, protocolName: null, assignments: [] })
    const third = track(h.coordinator.joinGroup(joinInput(G)))
    // The static member keeps heartbeating (told REBALANCE_IN_PROGRESS) but never rejoins; the dynamic
    // one goes silent. The join phase ends at the rebalance timeout (30 s); the static member is still
    // in the group but must rejoin for the new generation.
    for (let i = 0; i < 4; i++) {
      await h.advance(8000)
      expect(await h.coordinator.heartbeat({ groupId: G, generationId: 1, memberId: s!.memberId, groupInstanceId: 's' })).toBe(i < 3 ? ErrorCode.REBALANCE_IN_PROGRESS : ErrorCode.ILLEGAL_GENERATION)
    }
    expect(third.done()).toBe(true)
    const members = (await h.coordinator.describeGroups([G]))[0]!.members.map((m) => m.memberId)
    expect(members).toContain(s!.memberId)
    expect(members).not.toContain(d!.memberId)
  })
})

describe('offsets', () => {
  const commit = (c: GroupCoordinator, over: object = {}, partitions: OffsetCommitPartitionInput[] = [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 3, committedMetadata: 'm' }]) =>
    c.commitOffsets({ groupId: 'simple', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 't', partitions }], ...over })

  it('simple commits (generation -1, no member) to a group without members; fetch answers -1 where nothing is committed', async () => {
    const h = await harness()
    const res = await commit(h.coordinator)
    expect(res[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE)
    const fetched = await h.coordinator.fetchOffsets('simple', [{ name: 't', partitions: [0, 1] }, { name: 'nope', partitions: [0] }])
    expect(fetched.errorCode).toBe(ErrorCode.NONE)
    expect(fetched.topics[0]!.partitions).toEqual([
      { partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 3, metadata: 'm', errorCode: ErrorCode.NONE },
      { partitionIndex: 1, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.NONE },
    ])
    expect(fetched.topics[1]!.partitions[0]!.committedOffset).toBe(-1n)
    const all = await h.coordinator.fetchOffsets('simple', null)
    expect(all.topics).toEqual([{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: 3, metadata: 'm', errorCode: ErrorCode.NONE }] }])
    const listed = await h.coordinator.listGroups()
    expect(listed.groups).toEqual([{ groupId: 'simple', protocolType: '', state: 'Empty', groupType: 'classic' }])
  })

  it('per-partition errors: unknown topic or partition, metadata too large; the rest is committed', async () => {
    const h = await harness()
    const res = await h.coordinator.commitOffsets({
      groupId: 'simple',
      generationId: -1,
      memberId: '',
      groupInstanceId: null,
      retentionTimeMs: -1,
      topics: [
        { name: 't', partitions: [{ partitionIndex: 6, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }, { partitionIndex: 1, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: 'x'.repeat(65) }, { partitionIndex: 2, committedOffset: 7n, committedLeaderEpoch: -1, committedMetadata: null }] },
        { name: 'missing', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] },
      ],
    })
    expect(res.map((t) => t.partitions.map((p) => p.errorCode))).toEqual([[ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.OFFSET_METADATA_TOO_LARGE, ErrorCode.NONE], [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]])
    const fetched = await h.coordinator.fetchOffsets('simple', [{ name: 't', partitions: [1, 2] }])
    expect(fetched.topics[0]!.partitions.map((p) => p.committedOffset)).toEqual([-1n, 7n])
  })

  it('commits are validated against the membership', async () => {
    const h = await harness()
    expect((await commit(h.coordinator, { groupId: 'no-such', generationId: 3, memberId: 'm' }))[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION)
    const { members: [a], generationId } = await stableGroup(h, 1)
    const code = async (over: object) => (await commit(h.coordinator, { groupId: G, ...over }))[0]!.partitions[0]!.errorCode
    expect(await code({ generationId: -1, memberId: '' })).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect(await code({ generationId, memberId: 'stranger' })).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect(await code({ generationId: generationId + 1, memberId: a })).toBe(ErrorCode.ILLEGAL_GENERATION)
    expect(await code({ generationId, memberId: a })).toBe(ErrorCode.NONE)
    // While the group completes a rebalance its members may not commit.
    const joinA = track(h.coordinator.joinGroup(joinInput(G, { memberId: a!, protocols: [{ name: 'range', metadata: subscription(['u']) }] })))
    await h.settle()
    expect(joinA.value().generationId).toBe(generationId + 1)
    expect(await code({ generationId: generationId + 1, memberId: a })).toBe(ErrorCode.REBALANCE_IN_PROGRESS)
  })

  it('DeleteGroups: only empty groups; tombstones for the offsets and the group', async () => {
    const h = await harness()
    await commit(h.coordinator)
    await stableGroup(h, 1)
    const res = await h.coordinator.deleteGroups(['simple', G, 'nope'])
    expect(res).toEqual([
      { groupId: 'simple', errorCode: ErrorCode.NONE },
      { groupId: G, errorCode: ErrorCode.NON_EMPTY_GROUP },
      { groupId: 'nope', errorCode: ErrorCode.GROUP_ID_NOT_FOUND },
    ])
    const tombstones = h.writer.records(0).filter((r) => r.value === null).map((r) => decodeGroupRecordKey(r.key))
    expect(tombstones).toEqual([
      { type: 'offset-commit', group: 'simple', topic: 't', partition: 0 },
      { type: 'group-metadata', group: 'simple' },
    ])
    expect((await h.coordinator.fetchOffsets('simple', null)).topics).toEqual([])
    expect((await h.coordinator.describeGroups(['simple']))[0]!.state).toBe('Dead')
  })

  it('OffsetDelete: GROUP_SUBSCRIBED_TO_TOPIC for topics the members consume, tombstones for the others', async () => {
    const h = await harness()
    const { members: [a], generationId } = await stableGroup(h, 1)
    await h.coordinator.commitOffsets({ groupId: G, generationId, memberId: a!, groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: -1, committedMetadata: null }] }, { name: 'u', partitions: [{ partitionIndex: 1, committedOffset: 6n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
    const res = await h.coordinator.deleteOffsets(G, [{ name: 't', partitions: [0] }, { name: 'u', partitions: [1] }])
    expect(res).toEqual({ errorCode: ErrorCode.NONE, topics: [{ name: 't', partitions: [{ partitionIndex: 0, errorCode: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC }] }, { name: 'u', partitions: [{ partitionIndex: 1, errorCode: ErrorCode.NONE }] }] })
    const fetched = await h.coordinator.fetchOffsets(G, null)
    expect(fetched.topics.map((t) => t.name)).toEqual(['t'])
    expect((await h.coordinator.deleteOffsets('nope', [{ name: 't', partitions: [0] }])).errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
  })

  it('offsets.retention: an empty group\'s offsets expire after the retention, then the group is deleted', async () => {
    const h = await harness({ offsetsRetentionMs: 120_000, offsetsRetentionCheckIntervalMs: 30_000 })
    await commit(h.coordinator)
    await h.advance(90_000)
    expect((await h.coordinator.fetchOffsets('simple', null)).topics).toHaveLength(1)
    await h.advance(60_000)
    expect((await h.coordinator.fetchOffsets('simple', null)).topics).toEqual([])
    expect((await h.coordinator.listGroups()).groups).toEqual([])
    const keys = h.writer.records(0).filter((r) => r.value === null).map((r) => decodeGroupRecordKey(r.key).type)
    expect(keys).toEqual(['offset-commit', 'group-metadata'])
  })

  it('OffsetCommit v2-4 retention: an explicit retention overrides offsets.retention', async () => {
    const h = await harness({ offsetsRetentionMs: 10 * 60_000, offsetsRetentionCheckIntervalMs: 10_000 })
    await commit(h.coordinator, { retentionTimeMs: 20_000 })
    await h.advance(30_000)
    expect((await h.coordinator.fetchOffsets('simple', null)).topics).toEqual([])
  })

  it('groupLag: committed offset against the high watermark', async () => {
    const ends = new Map([['t-0', 50], ['t-1', 10]])
    const h = await harness({}, { topics: fakeTopics(ends) })
    await commit(h.coordinator, {}, [
      { partitionIndex: 1, committedOffset: 10n, committedLeaderEpoch: -1, committedMetadata: null },
      { partitionIndex: 0, committedOffset: 42n, committedLeaderEpoch: -1, committedMetadata: null },
    ])
    expect(await h.coordinator.groupLag('simple')).toEqual([
      { topic: 't', partition: 0, committedOffset: 42, logEndOffset: 50, highWatermark: 50, lag: 8 },
      { topic: 't', partition: 1, committedOffset: 10, logEndOffset: 10, highWatermark: 10, lag: 0 },
    ])
  })
})

describe('durability', () => {
  it('replaying the partition gives the same state as the live coordinator', async () => {
    const h = await harness()
    const { members, generationId } = await stableGroup(h, 3)
    await h.coordinator.commitOffsets({ groupId: G, generationId, memberId: members[0]!, groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 't', partitions: [0, 1, 2].map((p) => ({ partitionIndex: p, committedOffset: BigInt(p * 10), committedLeaderEpoch: 0, committedMetadata: `m${p}` })) }] })
    await h.coordinator.commitOffsets({ groupId: 'simple', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 'u', partitions: [{ partitionIndex: 1, committedOffset: 99n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
    await h.coordinator.commitOffsets({ groupId: 'gone', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 'u', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
    await h.coordinator.deleteGroups(['gone'])
    await h.coordinator.deleteOffsets('simple', [{ name: 'u', partitions: [0] }])
    const ids = [G, 'simple', 'gone']
    const live = { described: await h.coordinator.describeGroups(ids), offsets: await Promise.all(ids.map((g) => h.coordinator.fetchOffsets(g, null))), listed: await h.coordinator.listGroups() }
    h.coordinator.close()
    const reloaded = await harness({}, { writer: h.writer, clock: h.clock })
    const replayed = { described: await reloaded.coordinator.describeGroups(ids), offsets: await Promise.all(ids.map((g) => reloaded.coordinator.fetchOffsets(g, null))), listed: await reloaded.coordinator.listGroups() }
    expect(replayed).toEqual(live)
    // The loaded members must heartbeat within their session timeout, like after a coordinator move.
    await reloaded.advance(6000)
    expect(await reloaded.coordinator.heartbeat({ groupId: G, generationId, memberId: members[1]!, groupInstanceId: null })).toBe(ErrorCode.NONE)
    await reloaded.advance(5000)
    const after = (await reloaded.coordinator.describeGroups([G]))[0]!
    expect(after.state).toBe('PreparingRebalance')
    expect(after.members.map((m) => m.memberId)).toEqual([members[1]])
    reloaded.coordinator.close()
  })

  it('a failed append of the leader\'s assignment fails the waiting SyncGroups and rebalances', async () => {
    const h = await harness()
    const joins = [track(h.coordinator.joinGroup(joinInput(G))), track(h.coordinator.joinGroup(joinInput(G)))]
    await h.settle()
    const [r1, r2] = joins.map((j) => j.value())
    const leader = r1!.leader === r1!.memberId ? r1! : r2!
    const follower = leader === r1 ? r2! : r1!
    const syncF = track(h.coordinator.syncGroup({ groupId: G, generationId: 1, memberId: follower.memberId, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] }))
    h.writer.failNextAppend = ErrorCode.NOT_ENOUGH_REPLICAS
    const syncL = await h.coordinator.syncGroup({ groupId: G, generationId: 1, memberId: leader.memberId, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] })
    await h.settle()
    expect(syncL.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    expect(syncF.value().errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    expect(await state(h.coordinator)).toBe('PreparingRebalance')
  })

  it('a failed offset append answers COORDINATOR_NOT_AVAILABLE and commits nothing', async () => {
    const h = await harness()
    h.writer.failNextAppend = ErrorCode.KAFKA_STORAGE_ERROR
    const res = await h.coordinator.commitOffsets({ groupId: 'x', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
    expect(res[0]!.partitions[0]!.errorCode).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    expect((await h.coordinator.fetchOffsets('x', null)).topics).toEqual([])
    // The simple group the commit would have created is not left behind.
    expect((await h.coordinator.listGroups()).groups).toEqual([])
    const none = await h.coordinator.commitOffsets({ groupId: 'y', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 'missing', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
    expect(none[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect((await h.coordinator.listGroups()).groups).toEqual([])
  })

  it('while a partition loads: COORDINATOR_LOAD_IN_PROGRESS; an unowned partition: NOT_COORDINATOR', async () => {
    const h = await harness()
    await h.coordinator.commitOffsets({ groupId: 'x', generationId: -1, memberId: '', groupInstanceId: null, retentionTimeMs: -1, topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] }] })
    h.coordinator.close()
    expect(await h.coordinator.heartbeat({ groupId: 'x', generationId: 0, memberId: 'm', groupInstanceId: null })).toBe(ErrorCode.NOT_COORDINATOR)
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const slowWriter = Object.assign(Object.create(Object.getPrototypeOf(h.writer)), h.writer)
    slowWriter.read = async (p: number, o: number) => {
      await gate
      return h.writer.read(p, o)
    }
    const { GroupCoordinator } = await import('../../src/coordinator/group/group-coordinator.js')
    const { quietLog } = await import('./helpers.js')
    const c = new GroupCoordinator({ config: { ...(await import('./helpers.js')).TEST_CONFIG }, writer: slowWriter, topics: fakeTopics(), clock: h.clock, log: quietLog })
    const loading = c.loadAll()
    expect((await c.fetchOffsets('x', null)).errorCode).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    expect((await c.joinGroup(joinInput('x'))).errorCode).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    expect((await c.listGroups()).errorCode).toBe(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    release()
    await loading
    expect((await c.fetchOffsets('x', null)).topics[0]!.partitions[0]!.committedOffset).toBe(1n)
    c.close()
  })
})
