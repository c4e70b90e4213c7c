// The consumer group protocol (KIP-848) with a real client that speaks it: @platformatic/kafka 1.35 with
// groupProtocol 'consumer' (ConsumerGroupHeartbeat v1, OffsetCommit v9, OffsetFetch v9; assignments by
// topic id, which it maps with Metadata v10+). Three members share a topic's partitions, every record is
// consumed once, a member leaving moves its partitions to the others, ConsumerGroupDescribe shows the
// members and their assignments, and `skein groups --describe` shows the group.
// (librdkafka 2.0.2, installed from Debian, has no group.protocol=consumer: "No such configuration
// property"; kafkajs 2.2.4 has no ConsumerGroupHeartbeat at all.)
// The client names partitions by topic id in this protocol: it needs Metadata v10+ (topic ids) to map
// assignments to topics and Fetch v13+ (topics by id); the first assertion says so if the broker lacks them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import { ErrorCode } from '../../src/domain/errors.js'
import * as ConsumerGroupDescribe from '../../src/protocol/messages/69-consumer-group-describe.gen.js'
import { skein } from '../cli/helpers.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let admin: Admin
let producer: Producer<string, string, string, string>

const TOPIC = 'kip848'
const GROUP = 'kip848-group'
const base = () => ({ clientId: 'skein-kip848', bootstrapBrokers: [tb.bootstrap], retries: 10, retryDelay: 200, timeout: 15000 })

interface Got {
  member: number
  partition: number
  offset: bigint
  value: string
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const start = Date.now()
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function member(index: number, got: Got[]) {
  const consumer = new Consumer({ ...base(), clientId: `skein-kip848-${index}`, groupId: GROUP, groupProtocol: 'consumer', rebalanceTimeout: 60_000, deserializers: stringDeserializers, maxWaitTime: 100 })
  const stream = await consumer.consume({ topics: [TOPIC], mode: 'committed', fallbackMode: 'earliest', autocommit: 100 })
  stream.on('data', (m) => got.push({ member: index, partition: m.partition, offset: m.offset, value: m.value as string }))
  return { consumer, stream }
}

async function produce(from: number, count: number): Promise<void> {
  await producer.send({ messages: Array.from({ length: count }, (_, i) => ({ topic: TOPIC, value: `m${from + i}`, partition: (from + i) % 6 })), acks: -1 })
}

beforeAll(async () => {
  tb = await startTestBroker([
    'offsets.topic.num.partitions=4',
    'group.consumer.min.heartbeat.interval.ms=100',
    'group.consumer.heartbeat.interval.ms=250',
    'group.consumer.min.session.timeout.ms=2000',
    'group.consumer.session.timeout.ms=6000',
  ])
  admin = new Admin(base())
  producer = new Producer({ ...base(), serializers: stringSerializers })
  await admin.createTopics({ topics: [TOPIC], partitions: 6, replicas: 1 })
})

afterAll(async () => {
  await producer?.close()
  await admin?.close()
  await tb?.stop()
})

describe("@platformatic/kafka with groupProtocol 'consumer' (KIP-848)", () => {
  it('three members share the partitions, every record is consumed once, a leaving member hands its partitions over', async () => {
    const probe = await RawClient.connect(tb.host, tb.port)
    const served = new Map((await probe.apiVersions()).apiKeys.map((k) => [k.apiKey, k.maxVersion]))
    probe.close()
    expect({ metadata: served.get(3)! >= 10, fetch: served.get(1)! >= 13 }, `topic ids needed: Metadata v10+ and Fetch v13+; served up to Metadata v${served.get(3)} and Fetch v${served.get(1)}`).toEqual({ metadata: true, fetch: true })
    const got: Got[] = []
    const members = [await member(0, got), await member(1, got), await member(2, got)]
    const owned = (ms = members) => ms.map((m) => (m.consumer.assignments ?? []).filter((a) => a.topic === TOPIC).flatMap((a) => a.partitions))
    await waitFor('three members with two partitions each', () => owned().every((p) => p.length === 2) && new Set(owned().flat()).size === 6)

    // ConsumerGroupDescribe, over raw frames: three members, each with its target as its assignment.
    const raw = await RawClient.connect(tb.host, tb.port)
    const describe1 = async () =>
      (await raw.call(69, 0, (w) => ConsumerGroupDescribe.encodeConsumerGroupDescribeRequest(w, ConsumerGroupDescribe.createConsumerGroupDescribeRequest({ groupIds: [GROUP] }), 0), ConsumerGroupDescribe.decodeConsumerGroupDescribeResponse)).groups[0]!
    let d = await describe1()
    expect(d).toMatchObject({ errorCode: ErrorCode.NONE, groupState: 'Stable', assignorName: 'uniform' })
    expect(d.members).toHaveLength(3)
    const described = d.members.flatMap((m) => m.assignment.topicPartitions.flatMap((t) => t.partitions.map((p) => `${t.topicName}-${p}`))).sort()
    expect(described).toEqual(Array.from({ length: 6 }, (_, p) => `${TOPIC}-${p}`))
    expect(d.members.map((m) => m.clientId).sort()).toEqual(['skein-kip848-0', 'skein-kip848-1', 'skein-kip848-2'])

    // `skein groups --describe`: one row per partition with the member that owns it.
    const cli = await skein(['groups', '--bootstrap-server', tb.bootstrap, '--describe', '--group', GROUP])
    expect(cli.code).toBe(0)
    const rows = cli.out.trim().split('\n').filter((l) => l.startsWith(GROUP))
    expect(rows).toHaveLength(6)
    for (const r of rows) expect(r).toMatch(new RegExp(`^${GROUP}\\s+${TOPIC}\\s+\\d\\s+\\S+\\s+\\d+\\s+\\S+\\s+\\S+\\s+\\S+\\s+skein-kip848-\\d`))

    // Records produced once the group is stable: each consumed once, by the owner of its partition.
    await new Promise((r) => setTimeout(r, 500))
    await produce(0, 60)
    await waitFor('60 records', () => got.length >= 60)
    await new Promise((r) => setTimeout(r, 300))
    expect(got.map((g) => g.value).sort()).toEqual(Array.from({ length: 60 }, (_, i) => `m${i}`).sort())
    const mine = owned()
    for (const g of got) expect(mine[g.member]).toContain(g.partition)

    // Member 2 leaves (ConsumerGroupHeartbeat with epoch -1): the other two take its partitions.
    const leaving = owned()[2]!
    await members[2]!.stream.close()
    await members[2]!.consumer.close()
    const stay = members.slice(0, 2)
    await waitFor('two members with three partitions each', () => owned(stay).every((p) => p.length === 3) && new Set(owned(stay).flat()).size === 6)
    for (const p of leaving) expect(owned(stay).flat()).toContain(p)
    d = await describe1()
    expect(d.members).toHaveLength(2)
    expect(d.groupState).toBe('Stable')

    await new Promise((r) => setTimeout(r, 500))
    got.length = 0
    await produce(60, 30)
    await waitFor('30 more records', () => got.length >= 30)
    await new Promise((r) => setTimeout(r, 300))
    expect(got.map((g) => g.value).sort()).toEqual(Array.from({ length: 30 }, (_, i) => `m${60 + i}`).sort())
    for (const g of got) expect(g.member).not.toBe(2)

    for (const m of stay) {
      await m.stream.close()
      await m.consumer.close()
    }
    // Every member left: the group is empty, its offsets committed at the members' epochs remain.
    d = await describe1()
    expect(d).toMatchObject({ groupState: 'Empty', members: [] })
    const committed = await admin.listConsumerGroupOffsets({ groups: [GROUP] })
    const total = committed[0]!.topics.find((t) => t.name === TOPIC)!.partitions.reduce((n, p) => n + Number(p.committedOffset), 0)
    expect(total).toBe(90)
    raw.close()
  })
})
