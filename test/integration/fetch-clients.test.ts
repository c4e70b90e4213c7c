// What real consumers send now that Fetch v4-17 (sessions, topic ids) and Metadata v0-12 are served, seen
// through a recording proxy, and that they consume everything: kafkajs 2.2.4 and librdkafka 2.0.2 fetch
// at v11 without sessions (session id 0, epoch -1) and librdkafka asks Metadata v4, so it never sees a
// topic id; @platformatic/kafka 1.35 fetches at v17 by topic id and sends epoch 0 each time (a new
// session per fetch, never continued). A topic deleted and created again with fewer partitions: librdkafka
// 2.0.2 fails the records of the vanished partitions at once (nothing stays queued), and platformatic
// writes to the new topic.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Kafka, logLevel } from 'kafkajs'
import { Admin, Consumer, Producer } from '@platformatic/kafka'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { decodeAllRecords, hasPythonModule, RawClient, recordsBuffer, runOk, simpleBatch, startProxiedBroker, SYSTEM_PYTHON, type ProxiedBroker } from '../harness/index.js'

const FETCH = 1
const METADATA = 3

let pb: ProxiedBroker
let raw: RawClient

beforeAll(async () => {
  pb = await startProxiedBroker([], [FETCH])
  raw = await RawClient.connect('127.0.0.1', pb.brokerPort)
  expect((await raw.createTopic('fc', 2)).errorCode).toBe(0)
  for (const p of [0, 1]) expect((await raw.produce('fc', p, simpleBatch(`p${p}`, 4))).errorCode).toBe(0)
})

afterAll(async () => {
  raw?.close()
  await pb?.stop()
})

/** Session ids, epochs, versions and topic ids of the Fetch requests recorded since `from`. */
function fetchesSince(from: number): { version: number; sessionId: number; sessionEpoch: number; topicIds: string[] }[] {
  return pb.proxy.requests
    .slice(from)
    .filter((r) => r.apiKey === FETCH)
    .map((r) => {
      const req = Fetch.decodeFetchRequest(new Reader(r.body!), r.apiVersion)
      return { version: r.apiVersion, sessionId: req.sessionId, sessionEpoch: req.sessionEpoch, topicIds: req.topics.map((t) => t.topicId) }
    })
}

const waitFor = async (cond: () => boolean, ms: number): Promise<void> => {
  for (const end = Date.now() + ms; !cond() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 50))
}

describe('consumers against Fetch v4-17', () => {
  it('kafkajs: Fetch v11 without a session, every record consumed', async () => {
    const from = pb.proxy.requests.length
    const kafka = new Kafka({ clientId: 'fc-kjs', brokers: [pb.bootstrap], logLevel: logLevel.NOTHING })
    const consumer = kafka.consumer({ groupId: 'fc-kjs', maxWaitTimeInMs: 100 })
    const got: string[] = []
    await consumer.connect()
    try {
      await consumer.subscribe({ topic: 'fc', fromBeginning: true })
      await consumer.run({ eachMessage: async ({ message }) => void got.push(message.value!.toString()) })
      await waitFor(() => got.length >= 8, 15000)
    } finally {
      await consumer.disconnect()
    }
    expect(got.sort()).toEqual(['p0-0', 'p0-1', 'p0-2', 'p0-3', 'p1-0', 'p1-1', 'p1-2', 'p1-3'])
    const fetches = fetchesSince(from)
    expect(fetches.length).toBeGreaterThan(0)
    expect(new Set(fetches.map((f) => `v${f.version} ${f.sessionId}/${f.sessionEpoch}`))).toEqual(new Set(['v11 0/-1']))
  })

  it.skipIf(!hasPythonModule('confluent_kafka'))('librdkafka 2.0.2: Fetch v11 without a session, Metadata v4 (no topic ids)', async () => {
    const from = pb.proxy.requests.length
    const script = `
import confluent_kafka, sys, time
c = confluent_kafka.Consumer({'bootstrap.servers': sys.argv[1], 'group.id': 'fc-rd', 'auto.offset.reset': 'earliest', 'fetch.wait.max.ms': 100})
c.subscribe(['fc'])
got = []
end = time.time() + 20
while len(got) < 8 and time.time() < end:
    m = c.poll(0.2)
    if m is not None and not m.error(): got.append(m.value().decode())
c.close()
print(' '.join(sorted(got)))
`
    const r = await runOk(SYSTEM_PYTHON, ['-c', script, pb.bootstrap], { timeoutMs: 40000 })
    expect(r.stdout.toString().trim()).toBe('p0-0 p0-1 p0-2 p0-3 p1-0 p1-1 p1-2 p1-3')
    const fetches = fetchesSince(from)
    expect(new Set(fetches.map((f) => `v${f.version} ${f.sessionId}/${f.sessionEpoch}`))).toEqual(new Set(['v11 0/-1']))
    expect(new Set(pb.proxy.requests.slice(from).filter((q) => q.apiKey === METADATA).map((q) => q.apiVersion))).toEqual(new Set([4]))
  })

  it('@platformatic/kafka: Fetch v17 by topic id, epoch 0 on every fetch; sessions stay within the cache', async () => {
    const from = pb.proxy.requests.length
    const consumer = new Consumer({ clientId: 'fc-pk', bootstrapBrokers: [pb.bootstrap], groupId: 'fc-pk', maxWaitTime: 100 })
    const got: string[] = []
    try {
      const stream = await consumer.consume({ topics: ['fc'], mode: 'earliest' })
      stream.on('data', (m: { value: Buffer }) => void got.push(m.value.toString()))
      await waitFor(() => got.length >= 8, 15000)
      await stream.close()
    } finally {
      await consumer.close()
    }
    expect(got.sort()).toEqual(['p0-0', 'p0-1', 'p0-2', 'p0-3', 'p1-0', 'p1-1', 'p1-2', 'p1-3'])
    const fetches = fetchesSince(from)
    expect(new Set(fetches.map((f) => `v${f.version} ${f.sessionId}/${f.sessionEpoch}`))).toEqual(new Set(['v17 0/0']))
    expect(new Set(fetches.flatMap((f) => f.topicIds))).toEqual(new Set([pb.tb.broker.topics.get('fc')!.topicId]))
    expect(pb.tb.broker.fetchSessions.size).toBeGreaterThan(0)
    expect(pb.tb.broker.fetchSessions.size).toBeLessThanOrEqual(1000)
  })
})

describe('a topic deleted and created again with fewer partitions', () => {
  it.skipIf(!hasPythonModule('confluent_kafka'))('librdkafka 2.0.2 fails the records of vanished partitions at once and writes the rest to the new topic', async () => {
    expect((await raw.createTopic('fc-again', 3)).errorCode).toBe(0)
    const script = `
import confluent_kafka, sys, time, json
from confluent_kafka.admin import AdminClient, NewTopic
bs = sys.argv[1]
p = confluent_kafka.Producer({'bootstrap.servers': bs, 'message.timeout.ms': 20000, 'linger.ms': 5})
out = []
def cb(err, msg): out.append([msg.value().decode(), msg.partition(), err.name() if err else None, round(time.time() - t0, 2)])
t0 = time.time()
for i in range(3): p.produce('fc-again', value=('before-%d' % i).encode(), partition=i, on_delivery=cb)
p.flush(10)
a = AdminClient({'bootstrap.servers': bs})
for f in a.delete_topics(['fc-again']).values(): f.result()
for f in a.create_topics([NewTopic('fc-again', 1, 1)]).values(): f.result()
t0 = time.time()
for i in range(3): p.produce('fc-again', value=('after-%d' % i).encode(), partition=i, on_delivery=cb)
left = p.flush(30)
print(json.dumps({'left': left, 'out': out}))
`
    const r = await runOk(SYSTEM_PYTHON, ['-c', script, pb.bootstrap], { timeoutMs: 60000 })
    const { left, out } = JSON.parse(r.stdout.toString()) as { left: number; out: [string, number, string | null, number][] }
    expect(left).toBe(0)
    const after = out.filter(([v]) => v.startsWith('after'))
    expect(after.map(([v, p, err]) => [v, p, err]).sort()).toEqual([['after-0', 0, null], ['after-1', 1, '_UNKNOWN_PARTITION'], ['after-2', 2, '_UNKNOWN_PARTITION']])
    for (const [, , , seconds] of after) expect(seconds).toBeLessThan(10)
    const values = decodeAllRecords(recordsBuffer(await raw.fetch('fc-again', 0, 0))).map((x) => x.value!.toString())
    expect(values).toEqual(['after-0'])
  })

  it('@platformatic/kafka writes to the new topic (new id) after the old one is gone', async () => {
    const admin = new Admin({ clientId: 'fc-admin', bootstrapBrokers: [pb.bootstrap] })
    const producer = new Producer({ clientId: 'fc-pk-prod', bootstrapBrokers: [pb.bootstrap], retries: 3, retryDelay: 100, timeout: 10000, autocreateTopics: false })
    try {
      await admin.createTopics({ topics: ['fc-pk-again'], partitions: 3, replicas: 1 })
      const idOf = async (): Promise<string> => (await admin.metadata({ topics: ['fc-pk-again'], forceUpdate: true })).topics.get('fc-pk-again')!.id
      const oldId = await idOf()
      await producer.send({ messages: [{ topic: 'fc-pk-again', partition: 2, value: Buffer.from('old') }] })
      await admin.deleteTopics({ topics: ['fc-pk-again'] })
      await admin.createTopics({ topics: ['fc-pk-again'], partitions: 1, replicas: 1 })
      const newId = await idOf()
      expect(newId).not.toBe(oldId)
      // platformatic prints ids as dashed hex; the broker keeps Kafka's base64url.
      expect(newId.replaceAll('-', '')).toBe(Buffer.from(pb.tb.broker.topics.get('fc-pk-again')!.topicId, 'base64url').toString('hex'))
      const res = await producer.send({ messages: [{ topic: 'fc-pk-again', partition: 0, value: Buffer.from('new') }] })
      expect(res.offsets?.[0]).toMatchObject({ partition: 0, offset: 0n })
    } finally {
      await producer.close()
      await admin.close()
    }
  })
})
