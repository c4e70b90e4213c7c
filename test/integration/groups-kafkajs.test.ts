// Consumer groups with kafkajs 2.2.4 (JoinGroup v5, SyncGroup v3, Heartbeat v3, OffsetCommit v5,
// OffsetFetch v4, LeaveGroup v3): three members share a six-partition topic, a member leaves, a member
// dies without leaving (a child process SIGKILLed: only its session timeout tells the broker), a member
// joins mid-stream, and committed offsets survive a broker restart.
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT, startTestBroker, type TestBroker } from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

const OVERRIDES = ['group.initial.rebalance.delay.ms=0', 'offsets.topic.num.partitions=10']
const CONSUMER_OPTS = { sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 8000, maxWaitTimeInMs: 100 }

let tb: TestBroker
let kafka: any
let admin: any
let producer: any

interface Seen {
  member: number
  partition: number
  offset: number
  value: string
}

interface Member {
  consumer: any
  assignment: number[]
  generation: number
}

function newKafka(): any {
  return new Kafka({ clientId: 'skein-groups', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1000 } })
}

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const start = Date.now()
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

async function startMember(index: number, groupId: string, topic: string, seen: Seen[]): Promise<Member> {
  const consumer = kafka.consumer({ groupId, ...CONSUMER_OPTS })
  const member: Member = { consumer, assignment: [], generation: -1 }
  consumer.on(consumer.events.GROUP_JOIN, (e: any) => {
    member.assignment = [...(e.payload.memberAssignment[topic] ?? [])].sort((a: number, b: number) => a - b)
    member.generation = e.payload.generationId ?? member.generation
  })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({
    eachMessage: async ({ partition, message }: any) => {
      seen.push({ member: index, partition, offset: Number(message.offset), value: message.value.toString() })
    },
  })
  return member
}

async function produce(topic: string, from: number, count: number, partitions = 6): Promise<void> {
  await producer.send({ topic, acks: -1, messages: Array.from({ length: count }, (_, i) => ({ value: `m${from + i}`, partition: (from + i) % partitions })) })
}

/** Every (partition, offset) consumed exactly once, and all `total` values seen. */
function expectExactlyOnce(seen: Seen[], total: number): void {
  const keys = seen.map((s) => `${s.partition}@${s.offset}`)
  expect(new Set(keys).size).toBe(keys.length)
  expect(new Set(seen.map((s) => s.value))).toEqual(new Set(Array.from({ length: total }, (_, i) => `m${i}`)))
}

function coversAllOnce(members: Member[], partitions = 6): boolean {
  const all = members.flatMap((m) => m.assignment)
  return all.length === partitions && new Set(all).size === partitions
}

beforeAll(async () => {
  tb = await startTestBroker(OVERRIDES)
  kafka = newKafka()
  admin = kafka.admin()
  await admin.connect()
  producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
})

afterAll(async () => {
  await producer?.disconnect()
  await admin?.disconnect()
  await tb?.stop()
})

describe('kafkajs consumer groups', () => {
  it('three members share six partitions, each consumed by exactly one of them; one leaves and the others take over', async () => {
    const topic = 'grp-share'
    await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] })
    const seen: Seen[] = []
    const members = [await startMember(0, 'g-share', topic, seen), await startMember(1, 'g-share', topic, seen), await startMember(2, 'g-share', topic, seen)]
    await waitFor('three members with two partitions each', () => members.every((m) => m.assignment.length === 2) && coversAllOnce(members))
    // Produced once the group settled (and fetches of the previous generation are over), so each
    // partition has one reader throughout.
    await new Promise((r) => setTimeout(r, 500))
    await produce(topic, 0, 60)
    await waitFor('60 messages', () => seen.length >= 60)
    expectExactlyOnce(seen, 60)
    // Within one generation every partition was read by a single member.
    for (let p = 0; p < 6; p++) expect(new Set(seen.filter((s) => s.partition === p).map((s) => s.member)).size).toBe(1)
    const described = (await admin.describeGroups(['g-share'])).groups[0]
    expect(described).toMatchObject({ groupId: 'g-share', state: 'Stable', protocolType: 'consumer' })
    expect(described.members).toHaveLength(3)

    // Member 2 leaves (LeaveGroup): the two others rebalance over all six partitions.
    await members[2]!.consumer.disconnect()
    await waitFor('two members covering all partitions', () => coversAllOnce(members.slice(0, 2)) && members.slice(0, 2).every((m) => m.assignment.length === 3))
    await produce(topic, 60, 30)
    await waitFor('90 messages', () => seen.length >= 90)
    expectExactlyOnce(seen, 90)
    expect(seen.slice(60).every((s) => s.member !== 2)).toBe(true)
    expect((await admin.describeGroups(['g-share'])).groups[0].members).toHaveLength(2)
    for (const m of members.slice(0, 2)) await m.consumer.disconnect()
    expect((await admin.describeGroups(['g-share'])).groups[0].state).toBe('Empty')
    // Everything consumed was committed.
    const offsets = await admin.fetchOffsets({ groupId: 'g-share', topics: [topic] })
    expect(offsets[0].partitions.map((p: any) => Number(p.offset)).sort()).toEqual([15, 15, 15, 15, 15, 15])
  })

  it('a member killed without LeaveGroup is removed at its session timeout and the others take over', async () => {
    const topic = 'grp-kill'
    await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] })
    const seen: Seen[] = []
    const members = [await startMember(0, 'g-kill', topic, seen), await startMember(1, 'g-kill', topic, seen)]
    await waitFor('two members', () => coversAllOnce(members))
    const child = spawnDoomedMember(topic, 'g-kill')
    try {
      await waitFor('the child member to get partitions', () => child.assigned.length > 0 && members.every((m) => m.assignment.length === 2) && coversAllOnce([...members, { assignment: child.assigned } as Member]))
      expect((await admin.describeGroups(['g-kill'])).groups[0].members).toHaveLength(3)
      const killedAt = Date.now()
      child.proc.kill('SIGKILL')
      await waitFor('the survivors to cover every partition', () => coversAllOnce(members) && members.every((m) => m.assignment.length === 3), 30_000)
      // Only the session timeout (6 s) could have told the broker.
      expect(Date.now() - killedAt).toBeGreaterThanOrEqual(5000)
      expect((await admin.describeGroups(['g-kill'])).groups[0].members).toHaveLength(2)
      await produce(topic, 0, 36)
      await waitFor('36 messages', () => seen.length >= 36)
      expectExactlyOnce(seen, 36)
    } finally {
      child.proc.kill('SIGKILL')
      for (const m of members) await m.consumer.disconnect()
    }
  })

  it('a member joining mid-stream gets a share and nothing is consumed twice', async () => {
    const topic = 'grp-join'
    await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] })
    const seen: Seen[] = []
    const members = [await startMember(0, 'g-join', topic, seen)]
    await waitFor('one member with everything', () => coversAllOnce(members))
    let sent = 0
    let producing = true
    const stream = (async () => {
      while (producing) {
        await produce(topic, sent, 6)
        sent += 6
        await new Promise((r) => setTimeout(r, 20))
      }
    })()
    await waitFor('some consumption', () => seen.length >= 30)
    members.push(await startMember(1, 'g-join', topic, seen))
    await waitFor('two members sharing', () => members.every((m) => m.assignment.length === 3) && coversAllOnce(members))
    await waitFor('the new member consuming', () => seen.some((s) => s.member === 1))
    producing = false
    await stream
    await waitFor(`all ${sent} messages`, () => seen.length >= sent)
    // Offsets are committed before partitions move, so no (partition, offset) was delivered twice.
    expectExactlyOnce(seen, sent)
    for (const m of members) await m.consumer.disconnect()
  })

  it('committed offsets survive a broker restart and consumption resumes exactly there', async () => {
    const topic = 'grp-restart'
    await admin.createTopics({ topics: [{ topic, numPartitions: 6 }] })
    await produce(topic, 0, 30)
    const seen: Seen[] = []
    const first = await startMember(0, 'g-restart', topic, seen)
    await waitFor('30 messages', () => seen.length >= 30)
    await first.consumer.disconnect()
    const committed = await admin.fetchOffsets({ groupId: 'g-restart', topics: [topic] })
    expect(committed[0].partitions.map((p: any) => Number(p.offset))).toEqual([5, 5, 5, 5, 5, 5])

    await producer.disconnect()
    await admin.disconnect()
    tb = await tb.restart()
    kafka = newKafka()
    admin = kafka.admin()
    await admin.connect()
    producer = kafka.producer({ allowAutoTopicCreation: false })
    await producer.connect()

    const after = await admin.fetchOffsets({ groupId: 'g-restart', topics: [topic] })
    expect(after[0].partitions.map((p: any) => Number(p.offset))).toEqual([5, 5, 5, 5, 5, 5])
    await produce(topic, 30, 12)
    const resumed: Seen[] = []
    const second = await startMember(1, 'g-restart', topic, resumed)
    await waitFor('12 new messages', () => resumed.length >= 12)
    await new Promise((r) => setTimeout(r, 300))
    // Exactly the messages after the committed offsets: none of the first 30 again.
    expect(resumed.map((s) => s.value).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `m${30 + i}`).sort())
    expect(resumed.every((s) => s.offset >= 5)).toBe(true)
    await second.consumer.disconnect()
    const lag = await tb.broker.groups.current!.groupLag('g-restart')
    expect(lag.map((l) => [l.partition, l.committedOffset, l.highWatermark, l.lag])).toEqual([0, 1, 2, 3, 4, 5].map((p) => [p, 7, 7, 0]))
  })
})

/** A kafkajs consumer in a child process, so it can die without a LeaveGroup (SIGKILL). */
function spawnDoomedMember(topic: string, groupId: string): { proc: ChildProcess; assigned: number[] } {
  const script = `
    import { Kafka, logLevel } from 'kafkajs'
    const [bootstrap, topic, groupId] = process.argv.slice(1)
    const kafka = new Kafka({ clientId: 'doomed', brokers: [bootstrap], logLevel: logLevel.NOTHING })
    const c = kafka.consumer({ groupId, sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 8000, maxWaitTimeInMs: 100 })
    c.on(c.events.GROUP_JOIN, (e) => console.log(JSON.stringify({ assigned: e.payload.memberAssignment[topic] ?? [] })))
    await c.connect()
    await c.subscribe({ topic, fromBeginning: true })
    await c.run({ eachMessage: async () => {} })
  `
  const proc = spawn(process.execPath, ['--input-type=module', '-e', script, tb.bootstrap, topic, groupId], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  const state = { proc, assigned: [] as number[] }
  let buf = ''
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString()
    let nl: number
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 1)
      try {
        state.assigned = JSON.parse(line).assigned
      } catch {
        // not one of our lines
      }
    }
  })
  return state
}
