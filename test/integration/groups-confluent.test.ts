// Consumer groups with librdkafka 1.7 through python3-confluent-kafka (each member a long-lived child
// process, test/integration/python/group_member.py, range assignor, synchronous commits): three members
// share a six-partition topic with no partition read twice, a member leaves (LeaveGroup) and the others
// take over its partitions, a member SIGKILLed (no LeaveGroup) is dropped at its session timeout, and
// committed offsets survive a broker restart so a new member resumes there.
import { createRequire } from 'node:module'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { hasPythonModule, startTestBroker, type TestBroker } from '../harness/index.js'
import { coversOnce, spawnPythonMember, waitFor, type PythonMember, type Seen } from './python/group-member.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

const AVAILABLE = hasPythonModule('confluent_kafka')
const OVERRIDES = ['group.initial.rebalance.delay.ms=0', 'offsets.topic.num.partitions=5']
const PARTITIONS = 6

let tb: TestBroker
let producer: any
const live: PythonMember[] = []

async function connectProducer(): Promise<void> {
  const kafka = new Kafka({ clientId: 'groups-confluent', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING })
  producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
}

async function produce(topic: string, from: number, count: number): Promise<void> {
  await producer.send({ topic, acks: -1, messages: Array.from({ length: count }, (_, i) => ({ value: `m${from + i}`, partition: (from + i) % PARTITIONS })) })
}

function member(group: string, topic: string, name: string, seen: Seen[]): PythonMember {
  const m = spawnPythonMember('confluent', { bootstrap: tb.bootstrap, group, topic, strategy: 'range', name }, seen)
  live.push(m)
  return m
}

/** The broker's committed offsets of a group, partition -> next offset. */
async function committed(group: string): Promise<Map<number, number>> {
  // After a restart __consumer_offsets replays in the background: like a client, retry while the
  // coordinator answers COORDINATOR_LOAD_IN_PROGRESS (14), within a bound.
  let res = await tb.broker.groups.current!.fetchOffsets(group, null)
  for (let i = 0; i < 100 && res.errorCode === 14; i++) {
    await new Promise((r) => setTimeout(r, 50))
    res = await tb.broker.groups.current!.fetchOffsets(group, null)
  }
  expect(res.errorCode).toBe(0)
  return new Map(res.topics.flatMap((t) => t.partitions.map((p) => [p.partitionIndex, Number(p.committedOffset)] as [number, number])))
}

function expectExactlyOnce(seen: readonly Seen[], from: number, to: number): void {
  const keys = seen.map((s) => `${s.partition}@${s.offset}`)
  expect(new Set(keys).size, 'a (partition, offset) was consumed twice').toBe(keys.length)
  expect(new Set(seen.map((s) => s.value))).toEqual(new Set(Array.from({ length: to - from }, (_, i) => `m${from + i}`)))
}

const state = (ms: readonly PythonMember[]) => () => ms.map((m) => `${m.name}: assignment [${m.assignment}] errors ${JSON.stringify(m.errors)} stderr ${m.stderr().slice(-800)}`).join('\n')

beforeAll(async () => {
  if (!AVAILABLE) return
  tb = await startTestBroker(OVERRIDES)
  await connectProducer()
})

afterEach(async () => {
  for (const m of live.splice(0)) m.kill()
})

afterAll(async () => {
  await producer?.disconnect()
  await tb?.stop()
})

describe.skipIf(!AVAILABLE)('librdkafka (python3-confluent-kafka) consumer groups', () => {
  it('three members share six partitions with none consumed twice; one leaves and the two others take over', async () => {
    const topic = 'ckg-share'
    await tb.broker.topics.create({ name: topic, numPartitions: PARTITIONS, replicationFactor: -1, configs: {}, validateOnly: false })
    const seen: Seen[] = []
    const members = [0, 1, 2].map((i) => member('ckg-share', topic, `rdk-${i}`, seen))
    await waitFor('three members with two partitions each', () => members.every((m) => m.assignment.length === 2) && coversOnce(members.map((m) => m.assignment), PARTITIONS), 40_000, state(members))
    const described = (await tb.broker.groups.current!.describeGroups(['ckg-share']))[0]!
    expect(described).toMatchObject({ state: 'Stable', protocolType: 'consumer', protocolData: 'range' })
    expect(described.members.map((m) => m.clientId).sort()).toEqual(['rdk-0', 'rdk-1', 'rdk-2'])

    await produce(topic, 0, 60)
    await waitFor('60 messages', () => seen.length >= 60, 20_000, state(members))
    expectExactlyOnce(seen, 0, 60)
    // Each partition was read by the one member it is assigned to.
    for (const m of members) expect([...new Set(seen.filter((s) => s.member === m.name).map((s) => s.partition))].sort()).toEqual(m.assignment)
    await waitFor('commits at the log end', async () => [...(await committed('ckg-share')).values()].join() === '10,10,10,10,10,10')

    // rdk-2 closes (commit, LeaveGroup): the coordinator rebalances at once, no session timeout.
    const leftAt = Date.now()
    await members[2]!.close()
    const rest = members.slice(0, 2)
    await waitFor('two members with three partitions each', () => rest.every((m) => m.assignment.length === 3) && coversOnce(rest.map((m) => m.assignment), PARTITIONS), 20_000, state(rest))
    expect(Date.now() - leftAt).toBeLessThan(6000)
    expect((await tb.broker.groups.current!.describeGroups(['ckg-share']))[0]!.members).toHaveLength(2)
    await produce(topic, 60, 30)
    await waitFor('90 messages', () => seen.length >= 90, 20_000, state(rest))
    expectExactlyOnce(seen, 0, 90)
    expect(seen.slice(60).every((s) => s.member !== 'rdk-2')).toBe(true)
    await waitFor('commits at the log end', async () => [...(await committed('ckg-share')).values()].join() === '15,15,15,15,15,15')
    for (const m of rest) await m.close()
    expect((await tb.broker.groups.current!.describeGroups(['ckg-share']))[0]).toMatchObject({ state: 'Empty', members: [] })
    for (const m of members) expect(m.errors).toEqual([])
  })

  it('a member killed without LeaveGroup is dropped at its session timeout and the survivor takes its partitions', async () => {
    const topic = 'ckg-kill'
    await tb.broker.topics.create({ name: topic, numPartitions: PARTITIONS, replicationFactor: -1, configs: {}, validateOnly: false })
    const seen: Seen[] = []
    const [survivor, doomed] = [member('ckg-kill', topic, 'rdk-survivor', seen), member('ckg-kill', topic, 'rdk-doomed', seen)]
    await waitFor('two members with three partitions each', () => survivor!.assignment.length === 3 && doomed!.assignment.length === 3 && coversOnce([survivor!.assignment, doomed!.assignment], PARTITIONS), 40_000, state([survivor!, doomed!]))
    const killedAt = Date.now()
    doomed!.kill()
    await waitFor('the survivor to hold all six', () => survivor!.assignment.length === PARTITIONS, 30_000, state([survivor!]))
    // Only the session timeout (6 s) could have told the coordinator.
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(5000)
    expect((await tb.broker.groups.current!.describeGroups(['ckg-kill']))[0]!.members.map((m) => m.clientId)).toEqual(['rdk-survivor'])
    await produce(topic, 0, 24)
    await waitFor('24 messages', () => seen.length >= 24, 20_000, state([survivor!]))
    expectExactlyOnce(seen, 0, 24)
    expect(seen.every((s) => s.member === 'rdk-survivor')).toBe(true)
    await survivor!.close()
    expect(survivor!.errors).toEqual([])
  })

  it('committed offsets survive a broker restart and a new member resumes exactly there', async () => {
    const topic = 'ckg-restart'
    await tb.broker.topics.create({ name: topic, numPartitions: PARTITIONS, replicationFactor: -1, configs: {}, validateOnly: false })
    await produce(topic, 0, 30)
    const seen: Seen[] = []
    const first = member('ckg-restart', topic, 'rdk-first', seen)
    await waitFor('30 messages', () => seen.length >= 30, 30_000, state([first]))
    await waitFor('its commits', () => [...first.committed.values()].reduce((a, b) => a + b, 0) === 30, 10_000, state([first]))
    await first.close()
    expectExactlyOnce(seen, 0, 30)
    expect([...(await committed('ckg-restart')).entries()].sort((a, b) => a[0] - b[0])).toEqual([0, 1, 2, 3, 4, 5].map((p) => [p, 5]))

    await producer.disconnect()
    tb = await tb.restart()
    await connectProducer()
    expect([...(await committed('ckg-restart')).entries()].sort((a, b) => a[0] - b[0])).toEqual([0, 1, 2, 3, 4, 5].map((p) => [p, 5]))

    await produce(topic, 30, 12)
    const resumed: Seen[] = []
    const second = member('ckg-restart', topic, 'rdk-second', resumed)
    await waitFor('12 new messages', () => resumed.length >= 12, 30_000, state([second]))
    await new Promise((r) => setTimeout(r, 300))
    // Only what came after the commits: none of the first 30 again.
    expectExactlyOnce(resumed, 30, 42)
    expect(resumed.every((s) => s.offset >= 5)).toBe(true)
    await waitFor('commits at the log end', async () => [...(await committed('ckg-restart')).values()].join() === '7,7,7,7,7,7')
    await second.close()
    expect(first.errors).toEqual([])
    expect(second.errors).toEqual([])
  })
})
