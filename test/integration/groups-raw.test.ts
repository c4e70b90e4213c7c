// Every served version of the group APIs, through raw frames encoded by the generated codecs: a whole
// group lifecycle per JoinGroup version (join, sync, heartbeat, commit, fetch, describe, list, leave,
// delete), so each version's request decodes and each answer encodes (fields that a version cannot
// carry stay at their defaults), plus the error answers clients switch on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as OffsetCommit from '../../src/protocol/messages/08-offset-commit.gen.js'
import * as OffsetFetch from '../../src/protocol/messages/09-offset-fetch.gen.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import * as JoinGroup from '../../src/protocol/messages/11-join-group.gen.js'
import * as Heartbeat from '../../src/protocol/messages/12-heartbeat.gen.js'
import * as LeaveGroup from '../../src/protocol/messages/13-leave-group.gen.js'
import * as SyncGroup from '../../src/protocol/messages/14-sync-group.gen.js'
import * as DescribeGroups from '../../src/protocol/messages/15-describe-groups.gen.js'
import * as ListGroups from '../../src/protocol/messages/16-list-groups.gen.js'
import * as DeleteGroups from '../../src/protocol/messages/42-delete-groups.gen.js'
import * as OffsetDelete from '../../src/protocol/messages/47-offset-delete.gen.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let raw: RawClient

const findCoordinator = (v: number, req: Partial<FindCoordinator.FindCoordinatorRequest>) =>
  raw.call(10, v, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, FindCoordinator.createFindCoordinatorRequest(req), v), FindCoordinator.decodeFindCoordinatorResponse)
const join = (v: number, req: Partial<JoinGroup.JoinGroupRequest>) =>
  raw.call(11, v, (w) => JoinGroup.encodeJoinGroupRequest(w, JoinGroup.createJoinGroupRequest({ sessionTimeoutMs: 10000, rebalanceTimeoutMs: v >= 1 ? 10000 : -1, protocolType: 'consumer', protocols: [{ name: 'range', metadata: Buffer.from([0, 0, 0, 0, 0, 0]) }], ...req }), v), JoinGroup.decodeJoinGroupResponse)
const sync = (v: number, req: Partial<SyncGroup.SyncGroupRequest>) =>
  raw.call(14, v, (w) => SyncGroup.encodeSyncGroupRequest(w, SyncGroup.createSyncGroupRequest(req), v), SyncGroup.decodeSyncGroupResponse)
const heartbeat = (v: number, req: Partial<Heartbeat.HeartbeatRequest>) =>
  raw.call(12, v, (w) => Heartbeat.encodeHeartbeatRequest(w, Heartbeat.createHeartbeatRequest(req), v), Heartbeat.decodeHeartbeatResponse)
const leave = (v: number, req: Partial<LeaveGroup.LeaveGroupRequest>) =>
  raw.call(13, v, (w) => LeaveGroup.encodeLeaveGroupRequest(w, LeaveGroup.createLeaveGroupRequest(req), v), LeaveGroup.decodeLeaveGroupResponse)
const commit = (v: number, req: Partial<OffsetCommit.OffsetCommitRequest>) =>
  raw.call(8, v, (w) => OffsetCommit.encodeOffsetCommitRequest(w, OffsetCommit.createOffsetCommitRequest(req), v), OffsetCommit.decodeOffsetCommitResponse)
const fetchOffsets = (v: number, req: Partial<OffsetFetch.OffsetFetchRequest>) =>
  raw.call(9, v, (w) => OffsetFetch.encodeOffsetFetchRequest(w, OffsetFetch.createOffsetFetchRequest(req), v), OffsetFetch.decodeOffsetFetchResponse)
const describeGroups = (v: number, groups: string[]) =>
  raw.call(15, v, (w) => DescribeGroups.encodeDescribeGroupsRequest(w, DescribeGroups.createDescribeGroupsRequest({ groups, includeAuthorizedOperations: v >= 3 }), v), DescribeGroups.decodeDescribeGroupsResponse)
const listGroups = (v: number, statesFilter: string[] = []) =>
  raw.call(16, v, (w) => ListGroups.encodeListGroupsRequest(w, ListGroups.createListGroupsRequest({ statesFilter }), v), ListGroups.decodeListGroupsResponse)
const deleteGroups = (v: number, groupsNames: string[]) =>
  raw.call(42, v, (w) => DeleteGroups.encodeDeleteGroupsRequest(w, DeleteGroups.createDeleteGroupsRequest({ groupsNames }), v), DeleteGroups.decodeDeleteGroupsResponse)

beforeAll(async () => {
  tb = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'offsets.topic.num.partitions=3'])
  raw = await RawClient.connect(tb.host, tb.port)
  await raw.createTopic('raw-t', 2)
})

afterAll(async () => {
  raw?.close()
  await tb?.stop()
})

describe('group APIs over raw frames, every served version', () => {
  it('FindCoordinator v0-4: this broker for groups and transactions (v4: one answer per key)', async () => {
    for (let v = 0; v <= 3; v++) {
      const res = await findCoordinator(v, { key: `g${v}`, keyType: 0 })
      expect(res).toMatchObject({ errorCode: ErrorCode.NONE, nodeId: tb.broker.nodeId, host: tb.host, port: tb.port })
    }
    for (let v = 1; v <= 3; v++) expect(await findCoordinator(v, { key: 'txn', keyType: 1 })).toMatchObject({ errorCode: ErrorCode.NONE, nodeId: tb.broker.nodeId, port: tb.port })
    expect((await findCoordinator(2, { key: 'x', keyType: 7 })).errorCode).toBe(ErrorCode.INVALID_REQUEST)
    const v4 = await findCoordinator(4, { keyType: 0, coordinatorKeys: ['a', 'b'] })
    expect(v4.coordinators.map((c) => [c.key, c.errorCode, c.nodeId, c.port])).toEqual([['a', 0, tb.broker.nodeId, tb.port], ['b', 0, tb.broker.nodeId, tb.port]])
    expect((await findCoordinator(4, { keyType: 1, coordinatorKeys: ['t'] })).coordinators[0]).toMatchObject({ key: 't', errorCode: ErrorCode.NONE, port: tb.port })
    // The internal topic now exists, compacted, and Metadata marks it internal.
    const md = await raw.metadata(['__consumer_offsets'])
    expect(md.topics[0]).toMatchObject({ errorCode: 0, isInternal: true })
    expect(md.topics[0]!.partitions).toHaveLength(3)
    expect(tb.broker.topics.get('__consumer_offsets')!.configs['cleanup.policy']).toBe('compact')
  })

  for (let v = 0; v <= 6; v++) {
    it(`a group lifecycle with JoinGroup v${v}`, async () => {
      const groupId = `raw-g${v}`
      const sv = Math.min(v, 4)
      let memberId = ''
      if (v >= 4) {
        const first = await join(v, { groupId })
        expect(first.errorCode).toBe(ErrorCode.MEMBER_ID_REQUIRED)
        memberId = first.memberId
      }
      const joined = await join(v, { groupId, memberId, groupInstanceId: null })
      expect(joined).toMatchObject({ errorCode: ErrorCode.NONE, generationId: 1, protocolName: 'range' })
      memberId = joined.memberId
      expect(joined.leader).toBe(memberId)
      expect(joined.members.map((m) => m.memberId)).toEqual([memberId])
      const synced = await sync(sv, { groupId, generationId: 1, memberId, assignments: [{ memberId, assignment: Buffer.from('assigned') }] })
      expect(synced).toMatchObject({ errorCode: ErrorCode.NONE, assignment: Buffer.from('assigned') })
      expect((await heartbeat(sv, { groupId, generationId: 1, memberId })).errorCode).toBe(ErrorCode.NONE)
      expect((await heartbeat(sv, { groupId, generationId: 2, memberId })).errorCode).toBe(ErrorCode.ILLEGAL_GENERATION)

      const cv = Math.min(v + 2, 8)
      const committed = await commit(cv, {
        groupId,
        generationIdOrMemberEpoch: 1,
        memberId,
        topics: [{ name: 'raw-t', partitions: [{ partitionIndex: 0, committedOffset: 5n, committedLeaderEpoch: cv >= 6 ? 0 : -1, commitTimestamp: -1n, committedMetadata: 'hi' }, { partitionIndex: 9, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }],
      })
      expect(committed.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])

      const fv = Math.min(v + 1, 8)
      if (fv < 8) {
        const fetched = await fetchOffsets(fv, { groupId, topics: [{ name: 'raw-t', partitionIndexes: [0, 1] }] })
        expect(fetched.topics[0]!.partitions.map((p) => [Number(p.committedOffset), p.metadata, p.errorCode])).toEqual([[5, 'hi', 0], [-1, '', 0]])
        if (fv >= 5) expect(fetched.topics[0]!.partitions[0]!.committedLeaderEpoch).toBe(cv >= 6 ? 0 : -1)
      } else {
        const fetched = await fetchOffsets(8, { groups: [{ groupId, memberId: null, memberEpoch: -1, topics: null }, { groupId: 'nobody', memberId: null, memberEpoch: -1, topics: [{ name: 'raw-t', partitionIndexes: [1] }] }] })
        expect(fetched.groups.map((g) => [g.groupId, g.errorCode, g.topics.map((t) => [t.name, t.partitions.map((p) => Number(p.committedOffset))])])).toEqual([
          [groupId, 0, [['raw-t', [5]]]],
          ['nobody', 0, [['raw-t', [-1]]]],
        ])
      }

      const dv = Math.min(v, 5)
      const described = (await describeGroups(dv, [groupId])).groups[0]!
      expect(described).toMatchObject({ errorCode: 0, groupId, groupState: 'Stable', protocolType: 'consumer', protocolData: 'range' })
      expect(described.members[0]).toMatchObject({ memberId, clientHost: '/127.0.0.1', memberAssignment: Buffer.from('assigned') })
      if (dv >= 3) expect(described.authorizedOperations).toBe((1 << 3) | (1 << 6) | (1 << 8))

      const lv = Math.min(v, 4)
      const listed = (await listGroups(lv)).groups.find((g) => g.groupId === groupId)
      expect(listed).toMatchObject({ protocolType: 'consumer', groupState: lv >= 4 ? 'Stable' : '' })

      expect((await deleteGroups(v >= 2 ? 2 : 1, [groupId])).results[0]!.errorCode).toBe(ErrorCode.NON_EMPTY_GROUP)
      if (sv >= 3) {
        const left = await leave(sv, { groupId, members: [{ memberId, groupInstanceId: null, reason: null }, { memberId: 'ghost', groupInstanceId: null, reason: null }] })
        expect(left.errorCode).toBe(ErrorCode.NONE)
        expect(left.members.map((m) => m.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID])
      } else {
        expect((await leave(sv, { groupId, memberId: 'ghost' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
        expect((await leave(sv, { groupId, memberId })).errorCode).toBe(ErrorCode.NONE)
      }
      expect((await describeGroups(dv, [groupId])).groups[0]).toMatchObject({ groupState: 'Empty', members: [] })
      expect((await deleteGroups(v >= 2 ? 2 : 1, [groupId, groupId + '-none'])).results.map((r) => r.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.GROUP_ID_NOT_FOUND])
      expect((await describeGroups(dv, [groupId])).groups[0]!.groupState).toBe('Dead')
    })
  }

  it('ListGroups v4 filters by state; OffsetDelete v0 answers per partition', async () => {
    await commit(2, { groupId: 'raw-simple', generationIdOrMemberEpoch: -1, memberId: '', retentionTimeMs: -1n, topics: [{ name: 'raw-t', partitions: [{ partitionIndex: 1, committedOffset: 3n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }] })
    expect((await listGroups(4, ['empty'])).groups.map((g) => g.groupId)).toContain('raw-simple')
    expect((await listGroups(4, ['Stable'])).groups.map((g) => g.groupId)).not.toContain('raw-simple')
    const res = await raw.call(47, 0, (w) => OffsetDelete.encodeOffsetDeleteRequest(w, OffsetDelete.createOffsetDeleteRequest({ groupId: 'raw-simple', topics: [{ name: 'raw-t', partitions: [{ partitionIndex: 1 }] }] }), 0), OffsetDelete.decodeOffsetDeleteResponse)
    expect(res).toMatchObject({ errorCode: 0, topics: [{ name: 'raw-t', partitions: [{ partitionIndex: 1, errorCode: 0 }] }] })
    const fetched = await fetchOffsets(3, { groupId: 'raw-simple', topics: null })
    expect(fetched.topics).toEqual([])
  })

  it('bad requests get their error codes, not a closed connection', async () => {
    expect((await join(5, { groupId: '' })).errorCode).toBe(ErrorCode.INVALID_GROUP_ID)
    expect((await join(5, { groupId: 'raw-bad', sessionTimeoutMs: 1000 })).errorCode).toBe(ErrorCode.INVALID_SESSION_TIMEOUT)
    expect((await join(5, { groupId: 'raw-bad', memberId: 'nobody' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect((await sync(3, { groupId: 'raw-bad', generationId: 1, memberId: 'nobody' })).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    const tooBig = await commit(8, { groupId: 'raw-bad', generationIdOrMemberEpoch: -1, memberId: '', topics: [{ name: 'raw-t', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: 'x'.repeat(5000) }] }] })
    expect(tooBig.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.OFFSET_METADATA_TOO_LARGE)
    expect((await commit(8, { groupId: 'raw-unknown', generationIdOrMemberEpoch: 4, memberId: 'm', topics: [{ name: 'raw-t', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, commitTimestamp: -1n, committedMetadata: null }] }] })).topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.ILLEGAL_GENERATION)
    expect(raw.closed).toBe(false)
  })
})
