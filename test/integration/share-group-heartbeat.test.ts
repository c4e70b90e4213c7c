// KIP-932 share groups over raw frames on a real broker: ShareGroupHeartbeat v1 (join with a member id
// the client chose, assignment by topic id, two and three members on one or several partitions, leave,
// session expiry, partitions added by CreatePartitions, the errors librdkafka 2.15 acts on),
// ShareGroupDescribe v1, ListGroups v5 with the share type, DescribeGroups and DeleteGroups of a share
// group, malformed requests, a restart that replays the group from __consumer_offsets, and the
// authorization checks. Both are advertised together with ShareFetch and ShareAcknowledge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AclOperation, AclPermission, PatternType, ResourceType } from '../../src/domain/acl.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as DescribeGroups from '../../src/protocol/messages/15-describe-groups.gen.js'
import * as ListGroups from '../../src/protocol/messages/16-list-groups.gen.js'
import * as SaslHandshake from '../../src/protocol/messages/17-sasl-handshake.gen.js'
import * as CreateAcls from '../../src/protocol/messages/30-create-acls.gen.js'
import * as SaslAuthenticate from '../../src/protocol/messages/36-sasl-authenticate.gen.js'
import * as CreatePartitions from '../../src/protocol/messages/37-create-partitions.gen.js'
import * as DeleteGroups from '../../src/protocol/messages/42-delete-groups.gen.js'
import * as ShareGroupHeartbeat from '../../src/protocol/messages/76-share-group-heartbeat.gen.js'
import * as ShareGroupDescribe from '../../src/protocol/messages/77-share-group-describe.gen.js'
import type { Writer } from '../../src/protocol/primitives/writer.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

type HeartbeatRequest = ShareGroupHeartbeat.ShareGroupHeartbeatRequest
type HeartbeatResponse = ShareGroupHeartbeat.ShareGroupHeartbeatResponse

const heartbeat = (raw: RawClient, req: Partial<HeartbeatRequest>): Promise<HeartbeatResponse> => {
  const body = ShareGroupHeartbeat.createShareGroupHeartbeatRequest({ groupId: 'sg-raw', memberEpoch: 0, subscribedTopicNames: ['sg-a'], ...req })
  return raw.call(76, 1, (w) => ShareGroupHeartbeat.encodeShareGroupHeartbeatRequest(w, body, 1), ShareGroupHeartbeat.decodeShareGroupHeartbeatResponse)
}

const describeShare = (raw: RawClient, groupIds: string[], includeAuthorizedOperations = false) =>
  raw.call(77, 1, (w) => ShareGroupDescribe.encodeShareGroupDescribeRequest(w, ShareGroupDescribe.createShareGroupDescribeRequest({ groupIds, includeAuthorizedOperations }), 1), ShareGroupDescribe.decodeShareGroupDescribeResponse)

/** A share consumer as librdkafka drives it: its own member id (a UUID in base64), its epoch, its partitions. */
class Member {
  epoch = 0
  /** topic id -> partitions, from the last assignment received. */
  owned = new Map<string, number[]>()
  last!: HeartbeatResponse

  constructor(
    private readonly raw: RawClient,
    readonly memberId: string,
    private readonly topics: string[] = ['sg-a'],
    private readonly groupId = 'sg-raw',
  ) {}

  async beat(extra: Partial<HeartbeatRequest> = {}): Promise<HeartbeatResponse> {
    const res = await heartbeat(this.raw, { groupId: this.groupId, memberId: this.memberId, memberEpoch: this.epoch, subscribedTopicNames: this.epoch === 0 ? this.topics : null, ...extra })
    this.last = res
    if (res.errorCode === ErrorCode.NONE) {
      this.epoch = res.memberEpoch
      if (res.assignment !== null) this.owned = new Map(res.assignment.topicPartitions.map((t) => [t.topicId, [...t.partitions].sort((a, b) => a - b)]))
    }
    return res
  }

  partitions(topicId: string): number[] {
    return this.owned.get(topicId) ?? []
  }
}

async function settle(members: Member[]): Promise<void> {
  for (let round = 0; round < 4; round++) for (const m of members) await m.beat()
}

describe('share groups over raw frames', () => {
  let tb: TestBroker
  let raw: RawClient
  const OVERRIDES = [
    'offsets.topic.num.partitions=3',
    'group.share.min.heartbeat.interval.ms=100',
    'group.share.heartbeat.interval.ms=300',
    'group.share.min.session.timeout.ms=1000',
    'group.share.session.timeout.ms=3000',
    'group.share.max.size=4',
  ]
  const topicId = (name: string): string => tb.broker.metadata.topic(name)!.topicId

  beforeAll(async () => {
    tb = await startTestBroker(OVERRIDES)
    raw = await RawClient.connect(tb.host, tb.port)
    await raw.createTopic('sg-a', 4)
    await raw.createTopic('sg-one', 1)
    await raw.createTopic('sg-grow', 2)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  it('is advertised in ApiVersions at v1, together with ShareFetch and ShareAcknowledge', async () => {
    const advertised = new Map((await raw.apiVersions()).apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]))
    for (const key of [76, 77, 78, 79]) expect(advertised.get(key)).toEqual([1, 1])
  })

  it('a member joins with its own id and gets every partition by topic id; a second one takes half', async () => {
    const a = new Member(raw, 'aaaaaaaaaaaaaaaaaaaaaa')
    const ra = await a.beat()
    expect(ra).toMatchObject({ errorCode: ErrorCode.NONE, errorMessage: null, memberId: a.memberId, memberEpoch: 1, heartbeatIntervalMs: 300 })
    expect(ra.assignment!.topicPartitions).toEqual([{ topicId: topicId('sg-a'), partitions: [0, 1, 2, 3] }])
    // Nothing changed: no assignment in the answer.
    expect(await a.beat()).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: 1, assignment: null })

    const b = new Member(raw, 'bbbbbbbbbbbbbbbbbbbbbb')
    expect((await b.beat()).memberEpoch).toBe(2)
    await settle([a, b])
    expect(a.epoch).toBe(2)
    expect(a.partitions(topicId('sg-a'))).toHaveLength(2)
    expect(b.partitions(topicId('sg-a'))).toHaveLength(2)
    expect([...a.partitions(topicId('sg-a')), ...b.partitions(topicId('sg-a'))].sort()).toEqual([0, 1, 2, 3])

    const d = (await describeShare(raw, ['sg-raw', 'nope', ''], true)).groups
    expect(d[0]).toMatchObject({ errorCode: ErrorCode.NONE, groupId: 'sg-raw', groupState: 'Stable', groupEpoch: 2, assignmentEpoch: 2, assignorName: 'simple' })
    expect(d[0]!.authorizedOperations).not.toBe(-2147483648)
    expect(d[0]!.members.map((m) => [m.memberId, m.memberEpoch, m.clientId, m.subscribedTopicNames]).sort()).toEqual([
      [a.memberId, 2, 'skein-test', ['sg-a']],
      [b.memberId, 2, 'skein-test', ['sg-a']],
    ])
    for (const m of d[0]!.members) {
      const mine = m.memberId === a.memberId ? a : b
      expect(m.assignment.topicPartitions).toEqual([{ topicId: topicId('sg-a'), topicName: 'sg-a', partitions: mine.partitions(topicId('sg-a')) }])
    }
    expect(d[1]).toMatchObject({ groupId: 'nope', errorCode: ErrorCode.GROUP_ID_NOT_FOUND })
    expect(d[2]).toMatchObject({ groupId: '', errorCode: ErrorCode.INVALID_GROUP_ID })

    // Leaving (epoch -1): the other member gets everything on its next heartbeat.
    expect(await b.beat({ memberEpoch: -1 })).toMatchObject({ errorCode: ErrorCode.NONE, memberId: b.memberId, memberEpoch: -1 })
    await a.beat()
    expect(a.partitions(topicId('sg-a'))).toEqual([0, 1, 2, 3])
    await a.beat({ memberEpoch: -1 })
    expect((await describeShare(raw, ['sg-raw'])).groups[0]).toMatchObject({ groupState: 'Empty', members: [] })
  })

  it('two and three members on one partition all hold it; three on two topics share them evenly', async () => {
    const one = [0, 1, 2].map((i) => new Member(raw, `one-${i}-xxxxxxxxxxxxxxx`, ['sg-one'], 'sg-one-group'))
    await settle(one.slice(0, 2))
    for (const m of one.slice(0, 2)) expect(m.partitions(topicId('sg-one'))).toEqual([0])
    await settle(one)
    for (const m of one) expect(m.partitions(topicId('sg-one'))).toEqual([0])

    // sg-a (4) and sg-one (1): five partitions among three members, 2/2/1, each partition held once.
    const many = [0, 1, 2].map((i) => new Member(raw, `many-${i}-xxxxxxxxxxxxxx`, ['sg-a', 'sg-one'], 'sg-many'))
    await settle(many)
    const counts = many.map((m) => m.partitions(topicId('sg-a')).length + m.partitions(topicId('sg-one')).length).sort()
    expect(counts).toEqual([1, 2, 2])
    const held = many.flatMap((m) => [...m.partitions(topicId('sg-a')).map((p) => `a${p}`), ...m.partitions(topicId('sg-one')).map((p) => `one${p}`)]).sort()
    expect(held).toEqual(['a0', 'a1', 'a2', 'a3', 'one0'])
    for (const m of [...one, ...many]) await m.beat({ memberEpoch: -1 })
  })

  it('partitions added by CreatePartitions reach the assignment on the next heartbeat', async () => {
    const m = new Member(raw, 'grower-xxxxxxxxxxxxxxx', ['sg-grow'], 'sg-grow-group')
    await m.beat()
    expect(m.partitions(topicId('sg-grow'))).toEqual([0, 1])
    const grown = await raw.call(
      37,
      1,
      (w) => CreatePartitions.encodeCreatePartitionsRequest(w, CreatePartitions.createCreatePartitionsRequest({ topics: [{ name: 'sg-grow', count: 4, assignments: null }], timeoutMs: 10_000 }), 1),
      CreatePartitions.decodeCreatePartitionsResponse,
    )
    expect(grown.results[0]!.errorCode).toBe(ErrorCode.NONE)
    const res = await m.beat()
    expect(res.memberEpoch).toBe(2)
    expect(m.partitions(topicId('sg-grow'))).toEqual([0, 1, 2, 3])
    await m.beat({ memberEpoch: -1 })
  })

  it('errors: empty member id, no subscription, fenced epochs, unknown member, group.share.max.size, other kinds of group', async () => {
    expect(await heartbeat(raw, { memberId: '' })).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST, errorMessage: "MemberId can't be empty." })
    expect(await heartbeat(raw, { memberId: 'x-xxxxxxxxxxxxxxxxxxxx', subscribedTopicNames: null })).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'SubscribedTopicNames must be set in first request.' })
    expect(await heartbeat(raw, { groupId: 'sg-err', memberId: 'x-xxxxxxxxxxxxxxxxxxxx', memberEpoch: 4, subscribedTopicNames: null })).toMatchObject({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Share group sg-err not found.' })

    const a = new Member(raw, 'err-a-xxxxxxxxxxxxxxxx', ['sg-a'], 'sg-err')
    await a.beat()
    expect(await a.beat({ memberEpoch: 9 })).toMatchObject({ errorCode: ErrorCode.FENCED_MEMBER_EPOCH })
    expect(await heartbeat(raw, { groupId: 'sg-err', memberId: 'stranger-xxxxxxxxxxxxx', memberEpoch: 1, subscribedTopicNames: null })).toMatchObject({ errorCode: ErrorCode.UNKNOWN_MEMBER_ID })
    // group.share.max.size=4: the fifth member is refused.
    const more = [1, 2, 3, 4].map((i) => new Member(raw, `err-${i}-xxxxxxxxxxxxxxxx`, ['sg-a'], 'sg-err'))
    for (const m of more.slice(0, 3)) expect((await m.beat()).errorCode).toBe(ErrorCode.NONE)
    expect(await more[3]!.beat()).toMatchObject({ errorCode: ErrorCode.GROUP_MAX_SIZE_REACHED, errorMessage: 'The share group has reached its maximum capacity of 4 members.' })
    // Not an empty group: DeleteGroups refuses it.
    const del = (groupIds: string[]) => raw.call(42, 2, (w) => DeleteGroups.encodeDeleteGroupsRequest(w, DeleteGroups.createDeleteGroupsRequest({ groupsNames: groupIds }), 2), DeleteGroups.decodeDeleteGroupsResponse)
    expect((await del(['sg-err'])).results[0]).toMatchObject({ groupId: 'sg-err', errorCode: ErrorCode.NON_EMPTY_GROUP })
    for (const m of [a, ...more.slice(0, 3)]) await m.beat({ memberEpoch: -1 })

    // ListGroups v5: type share, protocol type share; DescribeGroups (classic API): Dead, as Kafka answers v0-5.
    const list = (typesFilter: string[]) => raw.call(16, 5, (w) => ListGroups.encodeListGroupsRequest(w, ListGroups.createListGroupsRequest({ typesFilter }), 5), ListGroups.decodeListGroupsResponse)
    expect((await list(['Share'])).groups).toContainEqual(expect.objectContaining({ groupId: 'sg-err', protocolType: 'share', groupState: 'Empty', groupType: 'share' }))
    expect((await list(['classic', 'consumer'])).groups.map((g) => g.groupId)).not.toContain('sg-err')
    const dg = await raw.call(15, 5, (w) => DescribeGroups.encodeDescribeGroupsRequest(w, DescribeGroups.createDescribeGroupsRequest({ groups: ['sg-err'] }), 5), DescribeGroups.decodeDescribeGroupsResponse)
    expect(dg.groups[0]).toMatchObject({ groupId: 'sg-err', errorCode: ErrorCode.NONE, groupState: 'Dead', members: [] })
    // Empty now: DeleteGroups deletes it, and it is gone.
    expect((await del(['sg-err'])).results[0]).toMatchObject({ groupId: 'sg-err', errorCode: ErrorCode.NONE })
    expect((await describeShare(raw, ['sg-err'])).groups[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
    expect((await list(['share'])).groups.map((g) => g.groupId)).not.toContain('sg-err')
  })

  it('a member that stops heartbeating is removed after group.share.session.timeout.ms and its partitions move', { timeout: 20_000 }, async () => {
    const a = new Member(raw, 'live-xxxxxxxxxxxxxxxxx', ['sg-a'], 'sg-expiry')
    const b = new Member(raw, 'silent-xxxxxxxxxxxxxxx', ['sg-a'], 'sg-expiry')
    await settle([a, b])
    expect(a.partitions(topicId('sg-a'))).toHaveLength(2)
    // a keeps heartbeating every 300 ms; b stays silent for more than 3 s.
    const deadline = Date.now() + 8000
    while (Date.now() < deadline && a.partitions(topicId('sg-a')).length < 4) {
      await new Promise((r) => setTimeout(r, 300))
      await a.beat()
    }
    expect(a.partitions(topicId('sg-a'))).toEqual([0, 1, 2, 3])
    expect((await describeShare(raw, ['sg-expiry'])).groups[0]!.members.map((m) => m.memberId)).toEqual([a.memberId])
    expect((await b.beat()).errorCode).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    await a.beat({ memberEpoch: -1 })
  })

  it('malformed requests close their connection only: a group id longer than the frame, a subscription list past its bytes', async () => {
    const attempts: ((w: Writer) => void)[] = [
      // GroupId: a compact string claiming 2^30 bytes.
      (w) => w.writeUvarint(2 ** 30),
      // A valid group and member id, epoch 0, null rack, then SubscribedTopicNames claiming a million entries.
      (w) => {
        w.writeCompactString('sg-hostile')
        w.writeCompactString('hostile-member-xxxxxxx')
        w.writeInt32(0)
        w.writeCompactNullableString(null)
        w.writeUvarint(1_000_001)
      },
    ]
    for (const body of attempts) {
      const c = await RawClient.connect(tb.host, tb.port)
      await expect(c.call(76, 1, body, ShareGroupHeartbeat.decodeShareGroupHeartbeatResponse)).rejects.toThrow()
      expect(await c.waitClosed(5000)).toBe(true)
    }
    // The broker serves on, and nothing of those requests was created.
    expect((await describeShare(raw, ['sg-hostile'])).groups[0]!.errorCode).toBe(ErrorCode.GROUP_ID_NOT_FOUND)
  })

  it('a restart replays the share group from __consumer_offsets', { timeout: 40_000 }, async () => {
    const a = new Member(raw, 'restart-a-xxxxxxxxxxxx', ['sg-a'], 'sg-restart')
    const b = new Member(raw, 'restart-b-xxxxxxxxxxxx', ['sg-a', 'sg-one'], 'sg-restart')
    await settle([a, b])
    const before = (await describeShare(raw, ['sg-restart'])).groups[0]!
    expect(before.members).toHaveLength(2)
    raw.close()
    tb = await tb.restart()
    raw = await RawClient.connect(tb.host, tb.port)
    let after = (await describeShare(raw, ['sg-restart'])).groups[0]!
    for (let i = 0; i < 100 && after.errorCode === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS; i++) {
      await new Promise((r) => setTimeout(r, 50))
      after = (await describeShare(raw, ['sg-restart'])).groups[0]!
    }
    expect(after).toEqual(before)
    // A member carries on at its epoch, with nothing new to learn.
    const res = await heartbeat(raw, { groupId: 'sg-restart', memberId: a.memberId, memberEpoch: a.epoch, subscribedTopicNames: null })
    expect(res).toMatchObject({ errorCode: ErrorCode.NONE, memberEpoch: a.epoch, assignment: null })
  })
})

describe('share group authorization', () => {
  let tb: TestBroker
  const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret";'

  async function login(user: string): Promise<RawClient> {
    const raw = await RawClient.connect(tb.host, tb.broker.endpoints[0]!.port)
    const hs = await raw.call(17, 1, (w) => SaslHandshake.encodeSaslHandshakeRequest(w, { mechanism: 'PLAIN' }, 1), SaslHandshake.decodeSaslHandshakeResponse)
    expect(hs.errorCode).toBe(ErrorCode.NONE)
    const auth = await raw.call(36, 1, (w) => SaslAuthenticate.encodeSaslAuthenticateRequest(w, { authBytes: Buffer.from(`\u0000${user}\u0000${user}-secret`) }, 1), SaslAuthenticate.decodeSaslAuthenticateResponse)
    expect(auth.errorCode).toBe(ErrorCode.NONE)
    return raw
  }

  beforeAll(async () => {
    tb = await startTestBroker([
      'listeners=SASL_PLAINTEXT://127.0.0.1:0',
      'listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT',
      'sasl.enabled.mechanisms=PLAIN',
      `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`,
      'authorizer.class.name=kafka.security.authorizer.AclAuthorizer',
      'super.users=User:admin',
      'allow.everyone.if.no.acl.found=false',
      'offsets.topic.num.partitions=1',
    ])
    const admin = await login('admin')
    await admin.createTopic('sg-open', 2)
    await admin.createTopic('sg-secret', 1)
    const allow = (resourceType: number, resourceName: string, operation: number) =>
      CreateAcls.createAclCreation({ resourceType, resourceName, resourcePatternType: PatternType.LITERAL, principal: 'User:alice', host: '*', operation, permissionType: AclPermission.ALLOW })
    const created = await admin.call(
      30,
      3,
      (w) =>
        CreateAcls.encodeCreateAclsRequest(
          w,
          CreateAcls.createCreateAclsRequest({
            creations: [allow(ResourceType.GROUP, 'sg-alice', AclOperation.READ), allow(ResourceType.TOPIC, 'sg-open', AclOperation.DESCRIBE), allow(ResourceType.GROUP, 'sg-mixed', AclOperation.READ)],
          }),
          3,
        ),
      CreateAcls.decodeCreateAclsResponse,
    )
    expect(created.results.map((r) => r.errorCode)).toEqual([0, 0, 0])
    // A group alice may read, whose other member (admin) subscribes to a topic alice may not describe.
    expect((await heartbeat(admin, { groupId: 'sg-mixed', memberId: 'admin-member-xxxxxxxxx', subscribedTopicNames: ['sg-secret'] })).errorCode).toBe(ErrorCode.NONE)
    admin.close()
  }, 60_000)

  afterAll(async () => {
    await tb?.stop()
  })

  it('Read on the group, Describe on every subscribed topic; ShareGroupDescribe hides groups with topics the principal may not see', async () => {
    const alice = await login('alice')
    expect(await heartbeat(alice, { groupId: 'sg-denied', memberId: 'alice-member-xxxxxxxxx', subscribedTopicNames: ['sg-open'] })).toMatchObject({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED })
    expect(await heartbeat(alice, { groupId: 'sg-alice', memberId: 'alice-member-xxxxxxxxx', subscribedTopicNames: ['sg-open', 'sg-secret'] })).toMatchObject({ errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED })
    const ok = await heartbeat(alice, { groupId: 'sg-alice', memberId: 'alice-member-xxxxxxxxx', subscribedTopicNames: ['sg-open'] })
    expect(ok.errorCode).toBe(ErrorCode.NONE)
    expect(ok.assignment!.topicPartitions).toEqual([{ topicId: tb.broker.metadata.topic('sg-open')!.topicId, partitions: [0, 1] }])
    // Describe needs Describe on the group (Read implies it), and on the group's topics.
    const d = (await describeShare(alice, ['sg-alice', 'sg-denied', 'sg-mixed'])).groups
    expect(d[0]).toMatchObject({ groupId: 'sg-alice', errorCode: ErrorCode.NONE, groupState: 'Stable' })
    expect(d[1]).toMatchObject({ groupId: 'sg-denied', errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED })
    expect(d[2]).toMatchObject({ groupId: 'sg-mixed', errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, members: [] })
    alice.close()
  })
})
