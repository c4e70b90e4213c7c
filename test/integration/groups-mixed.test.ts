// Four different Kafka clients as members of ONE classic consumer group: kafkajs 2.2.4, librdkafka 1.7
// (python3-confluent-kafka), kafka-python 2.0.2 and Skein's own client (src/client). The coordinator
// picks a protocol every member offered, so they need an assignor in common: 'roundrobin' (librdkafka
// partition.assignment.strategy=roundrobin, kafka-python RoundRobinPartitionAssignor, Skein's
// assignors: ['roundrobin']). kafkajs registers its round-robin assigner as 'RoundRobinAssigner', a name
// nobody else knows; here it joins with that same assigner under the standard name 'roundrobin' (the
// ConsumerProtocol bytes are the same). Whoever the coordinator elects leader computes the assignment
// for everyone, so each client decodes the others' subscriptions and assignments.
// Checked: eight partitions split two by two with no partition read twice and all consumed; then the
// leader leaves, then another member, and each time the rest take over, again with nothing read twice.
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Consumer } from '../../src/client/index.js'
import { hasPythonModule, startTestBroker, type TestBroker } from '../harness/index.js'
import { coversOnce, spawnPythonMember, waitFor, type PythonMember, type Seen } from './python/group-member.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel, PartitionAssigners } = require('kafkajs') as any

const CONFLUENT = hasPythonModule('confluent_kafka')
const KAFKA_PYTHON = hasPythonModule('kafka')
const PARTITIONS = 8
const TOPIC = 'mixed'
const GROUP = 'g-mixed'

let tb: TestBroker
let kafka: any
let producer: any

interface Member {
  name: string
  /** Current assignment (partitions of TOPIC). */
  assignment(): number[]
  close(): Promise<void>
  errors(): string[]
  describe(): string
}

/** kafkajs's own round-robin assigner, offered under the protocol name the other clients use. */
const standardRoundRobin = (config: any): any => ({ ...PartitionAssigners.roundRobin(config), name: 'roundrobin' })

async function kafkajsMember(name: string, seen: Seen[]): Promise<Member> {
  const consumer = kafka.consumer({ groupId: GROUP, partitionAssigners: [standardRoundRobin], sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 10000, maxWaitTimeInMs: 100 })
  let assignment: number[] = []
  const errors: string[] = []
  consumer.on(consumer.events.GROUP_JOIN, (e: any) => {
    assignment = [...(e.payload.memberAssignment[TOPIC] ?? [])].sort((a: number, b: number) => a - b)
  })
  consumer.on(consumer.events.CRASH, (e: any) => errors.push(String(e.payload.error)))
  await consumer.connect()
  await consumer.subscribe({ topic: TOPIC, fromBeginning: true })
  // eachMessage with kafkajs's default autoCommit: the offset is resolved after each message and
  // committed before any rejoin (kafkajs commits on rebalance) and at disconnect.
  await consumer.run({
    autoCommitInterval: 100,
    eachMessage: async ({ partition, message }: any) => {
      seen.push({ member: name, partition, offset: Number(message.offset), value: message.value.toString() })
    },
  })
  return { name, assignment: () => assignment, close: () => consumer.disconnect(), errors: () => errors, describe: () => `${name}: [${assignment}] ${errors.join('; ')}` }
}

function skeinMember(name: string, seen: Seen[]): Member {
  const consumer = new Consumer({
    bootstrapServers: tb.bootstrap, clientId: name, groupId: GROUP, assignors: ['roundrobin'], autoOffsetReset: 'earliest', enableAutoCommit: false,
    sessionTimeoutMs: 6000, heartbeatIntervalMs: 300, rebalanceTimeoutMs: 10000, fetchMaxWaitMs: 100,
  })
  consumer.subscribe([TOPIC])
  const errors: string[] = []
  let running = true
  const loop = (async () => {
    while (running) {
      try {
        const records = await consumer.poll(100)
        for (const r of records) seen.push({ member: name, partition: r.partition, offset: r.offset, value: r.value!.toString() })
        if (records.length > 0) await consumer.commit()
      } catch (err) {
        errors.push(String(err))
        await new Promise((r) => setTimeout(r, 100))
      }
    }
  })()
  return {
    name,
    assignment: () => consumer.assignment().map((tp) => tp.partition).sort((a, b) => a - b),
    async close() {
      running = false
      await loop
      await consumer.close({ commit: true })
    },
    errors: () => errors,
    describe: () => `${name}: [${consumer.assignment().map((tp) => tp.partition)}] ${errors.join('; ')}`,
  }
}

function pythonMember(client: 'confluent' | 'kafka-python', name: string, seen: Seen[]): Member {
  const m: PythonMember = spawnPythonMember(client, { bootstrap: tb.bootstrap, group: GROUP, topic: TOPIC, strategy: 'roundrobin', name }, seen)
  return { name, assignment: () => m.assignment, close: () => m.close(), errors: () => m.errors, describe: () => `${name}: [${m.assignment}] ${m.errors.join('; ')} ${m.stderr().slice(-800)}` }
}

async function produce(from: number, count: number): Promise<void> {
  await producer.send({ topic: TOPIC, acks: -1, messages: Array.from({ length: count }, (_, i) => ({ value: `m${from + i}`, partition: (from + i) % PARTITIONS })) })
}

async function committed(): Promise<number[]> {
  const res = await tb.broker.groups.current!.fetchOffsets(GROUP, [{ name: TOPIC, partitions: Array.from({ length: PARTITIONS }, (_, p) => p) }])
  return res.topics[0]!.partitions.map((p) => Number(p.committedOffset))
}

function expectExactlyOnce(seen: readonly Seen[], total: number): void {
  const keys = seen.map((s) => `${s.partition}@${s.offset}`)
  expect(new Set(keys).size, 'a (partition, offset) was consumed twice').toBe(keys.length)
  expect(new Set(seen.map((s) => s.value))).toEqual(new Set(Array.from({ length: total }, (_, i) => `m${i}`)))
}

beforeAll(async () => {
  if (!CONFLUENT || !KAFKA_PYTHON) return
  tb = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'offsets.topic.num.partitions=5'])
  await tb.broker.topics.create({ name: TOPIC, numPartitions: PARTITIONS, replicationFactor: -1, configs: {}, validateOnly: false })
  kafka = new Kafka({ clientId: 'groups-mixed', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1000 } })
  producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
})

afterAll(async () => {
  await producer?.disconnect()
  await tb?.stop()
})

describe.skipIf(!CONFLUENT || !KAFKA_PYTHON)('one consumer group of kafkajs, librdkafka, kafka-python and Skein members (roundrobin)', () => {
  it('splits eight partitions among four different clients, consumes everything once, and survives the leader and another member leaving', async () => {
    const seen: Seen[] = []
    const members: Member[] = []
    try {
      // kafka-python joins first so that it leads the first generation and assigns for all four.
      members.push(pythonMember('kafka-python', 'kafka-python', seen))
      await waitFor('kafka-python alone in the group', () => members[0]!.assignment().length === PARTITIONS, 30_000, () => members[0]!.describe())
      members.push(pythonMember('confluent', 'librdkafka', seen))
      members.push(await kafkajsMember('kafkajs', seen))
      members.push(skeinMember('skein', seen))
      const describeAll = () => members.map((m) => m.describe()).join('\n')
      await waitFor('four members with two partitions each', () => members.every((m) => m.assignment().length === 2) && coversOnce(members.map((m) => m.assignment()), PARTITIONS), 45_000, describeAll)
      const described = (await tb.broker.groups.current!.describeGroups([GROUP]))[0]!
      expect(described).toMatchObject({ state: 'Stable', protocolType: 'consumer', protocolData: 'roundrobin' })
      expect(described.members.map((m) => m.clientId).sort()).toEqual(['groups-mixed', 'kafka-python', 'librdkafka', 'skein'])

      let total = 0
      const round = async (count: number, perPartition: number): Promise<void> => {
        const before = seen.length
        await produce(total, count)
        total += count
        await waitFor(`${total} messages`, () => seen.length >= total, 20_000, describeAll)
        expectExactlyOnce(seen, total)
        // Every member consumed exactly its own partitions.
        for (const m of members) expect([...new Set(seen.slice(before).filter((s) => s.member === m.name).map((s) => s.partition))].sort((a, b) => a - b), m.name).toEqual(m.assignment())
        await waitFor('commits at the log end', async () => (await committed()).every((o) => o === perPartition), 15_000, describeAll)
      }
      await round(80, 10)

      // The leader (kafka-python) leaves, then librdkafka: each time the others take over its partitions
      // and a remaining member, another client, computes the assignment.
      const gone: Member[] = []
      for (const [name, perPartition] of [['kafka-python', 15], ['librdkafka', 20]] as const) {
        const leaving = members.splice(members.findIndex((m) => m.name === name), 1)[0]!
        gone.push(leaving)
        await leaving.close()
        await waitFor(`${members.length} members covering all partitions`, () => coversOnce(members.map((m) => m.assignment()), PARTITIONS) && members.every((m) => m.assignment().length >= Math.floor(PARTITIONS / members.length)), 30_000, describeAll)
        expect((await tb.broker.groups.current!.describeGroups([GROUP]))[0]!.members).toHaveLength(members.length)
        const from = seen.length
        await round(40, perPartition)
        expect(seen.slice(from).every((s) => gone.every((g) => g.name !== s.member))).toBe(true)
      }
      for (const m of [...members, ...gone]) expect(m.errors(), m.name).toEqual([])
    } finally {
      for (const m of members) await m.close().catch(() => {})
    }
    expect((await tb.broker.groups.current!.describeGroups([GROUP]))[0]).toMatchObject({ state: 'Empty', members: [] })
  })
})
