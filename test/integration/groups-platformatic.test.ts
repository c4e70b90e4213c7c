// Consumer groups with @platformatic/kafka 1.35 (FindCoordinator v4 batched keys, JoinGroup v6,
// SyncGroup/Heartbeat/LeaveGroup v4, OffsetCommit v8, OffsetFetch v8, all flexible): two members share
// a topic, commit, and a new consumer resumes from the committed offsets after a broker restart. Its
// Admin covers ListGroups v4, DescribeGroups v5, OffsetFetch v8, simple OffsetCommit v8, OffsetDelete v0
// and DeleteGroups v2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer, Producer, stringDeserializers, stringSerializers } from '@platformatic/kafka'
import { startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let admin: Admin
let producer: Producer<string, string, string, string>

const base = () => ({ clientId: 'skein-plt-groups', bootstrapBrokers: [tb.bootstrap], retries: 5, retryDelay: 200, timeout: 15000 })

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

async function produce(topic: string, from: number, count: number): Promise<void> {
  await producer.send({ messages: Array.from({ length: count }, (_, i) => ({ topic, value: `m${from + i}`, partition: (from + i) % 4 })), acks: -1 })
}

async function member(index: number, groupId: string, topic: string, got: Got[]) {
  const consumer = new Consumer({ ...base(), groupId, deserializers: stringDeserializers, sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 8000, maxWaitTime: 100 })
  const stream = await consumer.consume({ topics: [topic], mode: 'committed', fallbackMode: 'earliest', autocommit: true })
  stream.on('data', (m) => got.push({ member: index, partition: m.partition, offset: m.offset, value: m.value as string }))
  return { consumer, stream }
}

beforeAll(async () => {
  tb = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'offsets.topic.num.partitions=8'])
  admin = new Admin(base())
  producer = new Producer({ ...base(), serializers: stringSerializers })
})

afterAll(async () => {
  await producer?.close()
  await admin?.close()
  await tb?.stop()
})

describe('@platformatic/kafka consumer groups', () => {
  it('two members share a topic, commit, and a new member resumes from the commits after a restart', async () => {
    const topic = 'plt-grp'
    await admin.createTopics({ topics: [topic], partitions: 4, replicas: 1 })
    const got: Got[] = []
    const a = await member(0, 'plt-g', topic, got)
    const b = await member(1, 'plt-g', topic, got)
    const owned = () => [a, b].map((m) => (m.consumer.assignments ?? []).flatMap((x) => x.partitions))
    await waitFor('both members with two partitions', () => owned().every((p) => p.length === 2) && new Set(owned().flat()).size === 4)
    // Produced once the group settled, and once fetches a member started for its previous assignment are
    // over (fetching is not fenced by generation, in Kafka either), so each partition has one reader.
    await new Promise((r) => setTimeout(r, 500))
    await produce(topic, 0, 40)
    await waitFor('40 messages', () => got.length >= 40)
    await produce(topic, 40, 8)
    await waitFor('48 messages', () => got.length >= 48)
    const keys = got.map((g) => `${g.partition}@${g.offset}`)
    expect(new Set(keys).size).toBe(keys.length)
    expect(new Set(got.map((g) => g.value)).size).toBe(48)
    // Each partition was read by its owner only.
    const [pa, pb] = owned()
    for (const g of got) expect((g.member === 0 ? pa : pb)!).toContain(g.partition)

    const groups = await admin.listGroups({ states: ['STABLE'] })
    expect(groups.get('plt-g')).toMatchObject({ id: 'plt-g', state: 'STABLE', protocolType: 'consumer' })
    const described = (await admin.describeGroups({ groups: ['plt-g'] })).get('plt-g')!
    expect(described).toMatchObject({ id: 'plt-g', state: 'STABLE', protocolType: 'consumer' })
    expect(described.members.size).toBe(2)

    await a.stream.close()
    await b.stream.close()
    await a.consumer.close()
    await b.consumer.close()
    const committed = await admin.listConsumerGroupOffsets({ groups: ['plt-g'] })
    const offsets = committed[0]!.topics.find((t) => t.name === topic)!.partitions.map((p) => [p.partitionIndex, p.committedOffset])
    expect(offsets.sort((x, y) => Number(x[0]) - Number(y[0]))).toEqual([[0, 12n], [1, 12n], [2, 12n], [3, 12n]])

    await producer.close()
    await admin.close()
    tb = await tb.restart()
    admin = new Admin(base())
    producer = new Producer({ ...base(), serializers: stringSerializers })
    await produce(topic, 48, 8)
    const resumed: Got[] = []
    const c = await member(2, 'plt-g', topic, resumed)
    await waitFor('8 new messages', () => resumed.length >= 8)
    await new Promise((r) => setTimeout(r, 300))
    expect(resumed.map((g) => g.value).sort()).toEqual(Array.from({ length: 8 }, (_, i) => `m${48 + i}`).sort())
    expect(resumed.every((g) => g.offset >= 12n)).toBe(true)
    await c.stream.close()
    await c.consumer.close()
  })

  it('admin: OffsetDelete and DeleteGroups on an empty group', async () => {
    const topic = 'plt-grp-admin'
    await admin.createTopics({ topics: [topic], partitions: 2, replicas: 1 })
    // A simple commit (generation -1, no member id) creates the group, as kafka-consumer-groups --reset-offsets does.
    await admin.alterConsumerGroupOffsets({ groupId: 'plt-admin', topics: [{ name: topic, partitionOffsets: [{ partition: 0, offset: 3n }, { partition: 1, offset: 4n }] }] })
    expect((await admin.describeGroups({ groups: ['plt-admin'] })).get('plt-admin')).toMatchObject({ state: 'EMPTY', protocolType: '' })
    await admin.deleteConsumerGroupOffsets({ groupId: 'plt-admin', topics: [{ name: topic, partitionIndexes: [0] }] })
    const left = await admin.listConsumerGroupOffsets({ groups: ['plt-admin'] })
    expect(left[0]!.topics.flatMap((t) => t.partitions.map((p) => [p.partitionIndex, p.committedOffset]))).toEqual([[1, 4n]])
    await admin.deleteGroups({ groups: ['plt-admin'] })
    expect((await admin.listGroups()).has('plt-admin')).toBe(false)
    await expect(admin.deleteGroups({ groups: ['plt-admin'] })).rejects.toThrow()
  })
})
