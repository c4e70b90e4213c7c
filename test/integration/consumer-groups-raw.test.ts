// KIP-848 consumer groups over raw frames: ConsumerGroupHeartbeat v0 (member id from the coordinator) and
// v1 (member id from the client), ConsumerGroupDescribe v0, OffsetCommit v9 / OffsetFetch v9 at the
// member epoch, ListGroups v5 with group types, and the classic/consumer group id rules, on a broker
// with a short heartbeat interval; then a restart replays the group from __consumer_offsets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as OffsetCommit from '../../src/protocol/messages/08-offset-commit.gen.js'
import * as OffsetFetch from '../../src/protocol/messages/09-offset-fetch.gen.js'
import * as JoinGroup from '../../src/protocol/messages/11-join-group.gen.js'
import * as ListGroups from '../../src/protocol/messages/16-list-groups.gen.js'
import * as ConsumerGroupHeartbeat from '../../src/protocol/messages/68-consumer-group-heartbeat.gen.js'
import * as ConsumerGroupDescribe from '../../src/protocol/messages/69-consumer-group-describe.gen.js'
import { skein } from '../cli/helpers.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let raw: RawClient
const OVERRIDES = [
  'offsets.topic.num.partitions=3',
  'group.initial.rebalance.delay.ms=0',
  'group.consumer.min.heartbeat.interval.ms=100',
  'group.consumer.heartbeat.interval.ms=200',
  'group.consumer.min.session.timeout.ms=1000',
  // Long enough for the skein subprocesses the first test runs while its members stay silent.
  'group.consumer.session.timeout.ms=10000',
]

beforeAll(async () => {
  tb = await startTestBroker(OVERRIDES)
  raw = await RawClient.connect(tb.host, tb.port)
  await raw.createTopic('cg-raw', 4)
})

afterAll(async () => {
  raw?.close()
  await tb?.stop()
})

type Owned = ConsumerGroupHeartbeat.RequestTopicPartitions[] | null

function heartbeat(v: number, req: Partial<ConsumerGroupHeartbeat.ConsumerGroupHeartbeatRequest>) {
  const body = ConsumerGroupHeartbeat.createConsumerGroupHeartbeatRequest({ groupId: 'raw-cg', rebalanceTimeoutMs: 10_000, subscribedTopicNames: ['cg-raw'], topicPartitions: [], ...req })
  return raw.call(68, v, (w) => ConsumerGroupHeartbeat.encodeConsumerGroupHeartbeatRequest(w, body, v), ConsumerGroupHeartbeat.decodeConsumerGroupHeartbeatResponse)
}

const describeGroups = (groupIds: string[], includeAuthorizedOperations = false) =>
  raw.call(69, 0, (w) => ConsumerGroupDescribe.encodeConsumerGroupDescribeRequest(w, ConsumerGroupDescribe.createConsumerGroupDescribeRequest({ groupIds, includeAuthorizedOperations }), 0), ConsumerGroupDescribe.decodeConsumerGroupDescribeResponse)

const owned = (res: ConsumerGroupHeartbeat.ConsumerGroupHeartbeatResponse): Owned =>
  res.assignment === null ? null : res.assignment.topicPartitions.map((t) => ConsumerGroupHeartbeat.createRequestTopicPartitions({ topicId: t.topicId, partitions: t.partitions }))

describe('consumer groups over raw frames', () => {
  it('two members share the topic through heartbeats; describe shows members, epochs and assignments', async () => {
    const topicId = tb.broker.metadata.topic('cg-raw')!.topicId
    // v0: the coordinator makes the member id.
    const a0 = await heartbeat(0, { memberId: '', memberEpoch: 0 })
    expect(a0).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: 1, heartbeatIntervalMs: 200 })
    expect(a0.memberId).toMatch(/^[A-Za-z0-9_-]{22}$/)
    expect(a0.assignment!.topicPartitions).toEqual([expect.objectContaining({ topicId, partitions: [0, 1, 2, 3] })])
    // v1: the client makes it (KIP-1082); an empty one is refused.
    expect((await heartbeat(1, { memberId: '', memberEpoch: 0 })).errorCode).toBe(ErrorCode.INVALID_REQUEST)
    const b0 = await heartbeat(1, { memberId: 'member-b-chosen-by-client', memberEpoch: 0 })
    expect(b0).toMatchObject({ errorCode: ErrorCode.NONE, memberId: 'member-b-chosen-by-client', memberEpoch: 2 })
    expect(b0.assignment!.topicPartitions).toEqual([])
    // A must first revoke two partitions.
    const a1 = await heartbeat(0, { memberId: a0.memberId!, memberEpoch: 1, topicPartitions: owned(a0) })
    expect(a1.memberEpoch).toBe(1)
    expect(a1.assignment!.topicPartitions[0]!.partitions).toHaveLength(2)
    const a2 = await heartbeat(0, { memberId: a0.memberId!, memberEpoch: 1, topicPartitions: owned(a1) })
    expect(a2.memberEpoch).toBe(2)
    const b1 = await heartbeat(1, { memberId: 'member-b-chosen-by-client', memberEpoch: 2, topicPartitions: [] })
    expect(b1.assignment!.topicPartitions[0]!.partitions).toHaveLength(2)
    const all = [...a1.assignment!.topicPartitions[0]!.partitions, ...b1.assignment!.topicPartitions[0]!.partitions].sort()
    expect(all).toEqual([0, 1, 2, 3])

    const d = (await describeGroups(['raw-cg', 'nope', ''], true)).groups
    expect(d[0]).toMatchObject({ errorCode: 0, groupId: 'raw-cg', groupState: 'Stable', groupEpoch: 2, assignmentEpoch: 2, assignorName: 'uniform' })
    expect(d[0]!.authorizedOperations).not.toBe(-2147483648)
    expect(d[0]!.members.map((m) => [m.memberId, m.memberEpoch, m.clientId, m.subscribedTopicNames]).sort()).toEqual(
      [
        [a0.memberId, 2, 'skein-test', ['cg-raw']],
        ['member-b-chosen-by-client', 2, 'skein-test', ['cg-raw']],
      ].sort(),
    )
    for (const m of d[0]!.members) {
      expect(m.assignment.topicPartitions[0]).toMatchObject({ topicId, topicName: 'cg-raw' })
      expect(m.assignment.topicPartitions[0]!.partitions).toEqual(m.targetAssignment.topicPartitions[0]!.partitions)
    }
    expect(d[1]).toMatchObject({ groupId: 'nope', errorCode: ErrorCode.GROUP_ID_NOT_FOUND })
    expect(d[2]).toMatchObject({ groupId: '', errorCode: ErrorCode.INVALID_GROUP_ID })

    // `skein groups --describe` (ConsumerGroupDescribe, as Kafka's admin): a row per partition with its owner.
    const cli = await skein(['groups', '--bootstrap-server', tb.bootstrap, '--describe', '--group', 'raw-cg'])
    expect(cli.code).toBe(0)
    const rows = cli.out.trim().split('\n').filter((l) => l.startsWith('raw-cg'))
    expect(rows.map((r) => r.split(/\s+/).slice(0, 3).join(' ')).sort()).toEqual(['raw-cg cg-raw 0', 'raw-cg cg-raw 1', 'raw-cg cg-raw 2', 'raw-cg cg-raw 3'])
    const owners = new Set(rows.map((r) => r.split(/\s+/)[6]))
    expect(owners).toEqual(new Set([a0.memberId, 'member-b-chosen-by-client']))
    expect((await skein(['groups', '--bootstrap-server', tb.bootstrap, '--list'])).out.split('\n')).toContain('raw-cg')
    expect((await skein(['groups', '--bootstrap-server', tb.bootstrap, '--list', '--state', 'stable'])).out).toMatch(/raw-cg\s+Stable/)
    const state = await skein(['groups', '--bootstrap-server', tb.bootstrap, '--describe', '--group', 'raw-cg', '--state', '--verbose'])
    // GROUP, COORDINATOR (ID), ASSIGNMENT-STRATEGY, STATE, GROUP-EPOCH, TARGET-ASSIGNMENT-EPOCH, #MEMBERS
    expect(state.out).toMatch(/raw-cg\s+\S+\s+\(\d+\)\s+uniform\s+Stable\s+2\s+2\s+2/)

    // OffsetCommit v9 at the member epoch; a stale one is refused.
    const commit = (memberId: string, epoch: number, v = 9) =>
      raw.call(
        8,
        v,
        (w) =>
          OffsetCommit.encodeOffsetCommitRequest(
            w,
            OffsetCommit.createOffsetCommitRequest({
              groupId: 'raw-cg',
              generationIdOrMemberEpoch: epoch,
              memberId,
              topics: [{ name: 'cg-raw', partitions: [OffsetCommit.createOffsetCommitRequestPartition({ partitionIndex: 0, committedOffset: 3n, committedMetadata: null })] }],
            }),
            v,
          ),
        OffsetCommit.decodeOffsetCommitResponse,
      )
    const codeOf = (r: OffsetCommit.OffsetCommitResponse) => r.topics[0]!.partitions[0]!.errorCode
    expect(codeOf(await commit(a0.memberId!, 2))).toBe(ErrorCode.NONE)
    expect(codeOf(await commit(a0.memberId!, 1))).toBe(ErrorCode.STALE_MEMBER_EPOCH)
    expect(codeOf(await commit(a0.memberId!, 2, 8))).toBe(ErrorCode.UNSUPPORTED_VERSION)
    const fetch = (memberId: string | null, memberEpoch: number) =>
      raw.call(9, 9, (w) => OffsetFetch.encodeOffsetFetchRequest(w, OffsetFetch.createOffsetFetchRequest({ groups: [{ groupId: 'raw-cg', memberId, memberEpoch, topics: null }] }), 9), OffsetFetch.decodeOffsetFetchResponse)
    expect((await fetch(a0.memberId!, 2)).groups[0]!.topics[0]!.partitions[0]!.committedOffset).toBe(3n)
    expect((await fetch(a0.memberId!, 7)).groups[0]!.errorCode).toBe(ErrorCode.STALE_MEMBER_EPOCH)
    expect((await fetch(null, -1)).groups[0]!.errorCode).toBe(ErrorCode.NONE)

    // ListGroups v5: the group's type and state; the types filter.
    const list = (typesFilter: string[]) => raw.call(16, 5, (w) => ListGroups.encodeListGroupsRequest(w, ListGroups.createListGroupsRequest({ typesFilter }), 5), ListGroups.decodeListGroupsResponse)
    expect((await list(['Consumer'])).groups).toEqual([expect.objectContaining({ groupId: 'raw-cg', protocolType: 'consumer', groupState: 'Stable', groupType: 'consumer' })])
    expect((await list(['classic'])).groups.map((g) => g.groupId)).not.toContain('raw-cg')

    // A classic JoinGroup for this group id: INCONSISTENT_GROUP_PROTOCOL.
    const join = await raw.call(
      11,
      5,
      (w) => JoinGroup.encodeJoinGroupRequest(w, JoinGroup.createJoinGroupRequest({ groupId: 'raw-cg', sessionTimeoutMs: 10000, rebalanceTimeoutMs: 10000, memberId: '', protocolType: 'consumer', protocols: [{ name: 'range', metadata: Buffer.from([0, 0, 0, 0, 0, 0]) }] }), 5),
      JoinGroup.decodeJoinGroupResponse,
    )
    expect(join.errorCode).toBe(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
  })

  it('a restart replays the group from __consumer_offsets; members that do not come back are fenced after the session timeout', { timeout: 40_000 }, async () => {
    const before = (await describeGroups(['raw-cg'])).groups[0]!
    raw.close()
    tb = await tb.restart()
    raw = await RawClient.connect(tb.host, tb.port)
    let after = (await describeGroups(['raw-cg'])).groups[0]!
    for (let i = 0; i < 100 && after.errorCode === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS; i++) {
      await new Promise((r) => setTimeout(r, 50))
      after = (await describeGroups(['raw-cg'])).groups[0]!
    }
    expect(after).toEqual(before)
    // Nobody heartbeats: after group.consumer.session.timeout.ms (10 s) both are gone.
    const deadline = Date.now() + 25_000
    while (after.members.length > 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200))
      after = (await describeGroups(['raw-cg'])).groups[0]!
    }
    expect(after).toMatchObject({ groupState: 'Empty', members: [] })
  })
})
