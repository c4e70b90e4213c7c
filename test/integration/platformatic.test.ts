// @platformatic/kafka 1.x: Admin (create/list/describe/alter/delete), Producer with acks 0/1/-1 and the
// codecs it has on this Node, and Consumer.fetch() / listOffsets(), which talk to a partition leader
// directly without joining a group. Fetch goes out as v17, the highest version both sides serve, so
// topics travel by id (taken from Metadata v12).
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, compressionsAlgorithms, ConfigResourceTypes, Consumer, Producer } from '@platformatic/kafka'
import { decodeBatches, RawClient, recordsBuffer, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let admin: Admin
let producer: Producer
let consumer: Consumer

const opts = (): { clientId: string; bootstrapBrokers: string[]; retries: number; timeout: number } => ({ clientId: 'skein-platformatic', bootstrapBrokers: [tb.bootstrap], retries: 2, timeout: 15000 })

interface Got {
  offset: bigint
  key: Buffer | null
  value: Buffer | null
  timestamp: bigint
  headers: [string, string][]
  compression: number
}

/** Every record of one partition through Consumer.fetch (no group). */
async function fetchAll(topic: string, partition: number): Promise<{ records: Got[]; highWatermark: bigint }> {
  const records: Got[] = []
  let offset = 0n
  let highWatermark = -1n
  const topicId = (await admin.metadata({ topics: [topic] })).topics.get(topic)!.id
  for (let round = 0; round < 100; round++) {
    const res = await consumer.fetch({
      node: tb.broker.nodeId,
      maxWaitTime: 20,
      minBytes: 0,
      maxBytes: 4 * 1024 * 1024,
      topics: [{ topicId, partitions: [{ partition, fetchOffset: offset, partitionMaxBytes: 1024 * 1024, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }] }],
    })
    const p = res.responses[0]!.partitions[0]!
    expect(p.errorCode).toBe(0)
    highWatermark = p.highWatermark
    for (const batch of p.records ?? []) {
      for (const r of batch.records) {
        const o = batch.firstOffset + BigInt(r.offsetDelta)
        if (o < offset) continue
        records.push({
          offset: o,
          key: r.key,
          value: r.value,
          timestamp: batch.firstTimestamp + r.timestampDelta,
          headers: r.headers.map(([k, v]) => [k?.toString('base64') ?? '', v?.toString('base64') ?? '']),
          compression: batch.attributes & 7,
        })
      }
    }
    if (records.length > 0) offset = records[records.length - 1]!.offset + 1n
    if (offset >= highWatermark) break
  }
  return { records, highWatermark }
}

beforeAll(async () => {
  tb = await startTestBroker()
  admin = new Admin(opts())
  producer = new Producer({ ...opts(), autocreateTopics: false })
  consumer = new Consumer({ ...opts(), groupId: 'skein-unused-group' })
})

afterAll(async () => {
  await producer?.close()
  await consumer?.close()
  await admin?.close()
  await tb?.stop()
})

const b64 = (b: Buffer | null): string => (b === null ? '' : b.toString('base64'))

describe('@platformatic/kafka', () => {
  it('creates topics with several partitions and lists them', async () => {
    const created = await admin.createTopics({ topics: ['pk-data', 'pk-doomed'], partitions: 3, replicas: 1 })
    expect(created.map((t) => [t.name, t.partitions]).sort()).toEqual([['pk-data', 3], ['pk-doomed', 3]])
    await admin.createTopics({ topics: ['pk-codecs'], partitions: 5, replicas: 1, configs: [{ name: 'retention.ms', value: '86400000' }] })
    await expect(admin.createTopics({ topics: ['pk-data'], partitions: 3, replicas: 1 })).rejects.toThrow()
    expect(await admin.listTopics()).toEqual(expect.arrayContaining(['pk-data', 'pk-doomed', 'pk-codecs']))
    const md = await admin.metadata({ topics: ['pk-data'] })
    expect([...md.brokers.keys()]).toEqual([tb.broker.nodeId])
    expect(md.topics.get('pk-data')!.partitionsCount).toBe(3)
  })

  it('produces keyed and unkeyed records with headers at acks 1, -1 and 0 and fetches them back byte for byte', async () => {
    const sent = new Map<number, { key: Buffer | null; value: Buffer; timestamp: bigint; headers: [string, string][] }[]>([[0, []], [1, []], [2, []]])
    const ts = BigInt(Date.now() - 40_000)
    let n = 0n
    for (const acks of [1, -1, 0]) {
      const messages = Array.from({ length: 12 }, (_, i) => {
        const headers = i % 2 === 0 ? new Map<Buffer, Buffer>([[Buffer.from('h'), Buffer.from(`acks ${acks}`)], [Buffer.from('bin'), randomBytes(3)]]) : new Map<Buffer, Buffer>()
        return { topic: 'pk-data', key: i % 3 === 0 ? undefined : randomBytes(2 + i), value: randomBytes(5 + i * 19), partition: i % 3, timestamp: ts + n++, headers }
      })
      const res = await producer.send({ messages, acks })
      if (acks !== 0) {
        for (const o of res.offsets ?? []) expect(o.offset).toBe(BigInt(sent.get(o.partition)!.length))
      }
      for (const m of messages) {
        sent.get(m.partition)!.push({ key: m.key ?? null, value: m.value, timestamp: m.timestamp, headers: [...m.headers].map(([k, v]) => [b64(k), b64(v)]) })
      }
    }
    for (const [p, want] of sent) {
      const { records, highWatermark } = await fetchAll('pk-data', p)
      expect(highWatermark).toBe(BigInt(want.length))
      expect(records.map((r) => r.offset)).toEqual(want.map((_, i) => BigInt(i)))
      expect(records.map((r) => ({ key: r.key === null || r.key.length === 0 ? null : r.key, value: r.value, timestamp: r.timestamp, headers: r.headers }))).toEqual(want)
    }
  })

  const codecs = ['gzip', 'snappy', 'lz4', 'zstd'] as const
  for (const [i, codec] of codecs.entries()) {
    const available = compressionsAlgorithms[codec].available
    if (!available) console.warn(`[skein tests] @platformatic/kafka has no ${codec} on Node ${process.version} (zlib without zstd): SKIPPED`)
    it.skipIf(!available)(`produces ${codec}-compressed batches that come back intact`, async () => {
      const partition = i
      const messages = Array.from({ length: 30 }, (_, j) => ({ topic: 'pk-codecs', partition, key: Buffer.from(`${codec}-${j}`), value: Buffer.from(`${codec} value ${j} `.repeat(12)) }))
      await producer.send({ messages, acks: -1, compression: codec })
      const { records } = await fetchAll('pk-codecs', partition)
      expect(records.map((r) => [r.key, r.value])).toEqual(messages.map((m) => [m.key, m.value]))
      const raw = await RawClient.connect(tb.host, tb.port)
      try {
        const batches = decodeBatches(recordsBuffer(await raw.fetch('pk-codecs', partition, 0)))
        expect(new Set(batches.map((b) => b.compression))).toEqual(new Set([codec]))
        expect(batches.flatMap((b) => b.records).map((r) => r.value)).toEqual(messages.map((m) => m.value))
      } finally {
        raw.close()
      }
    })
  }

  it('lists offsets: earliest, latest and by timestamp', async () => {
    await admin.createTopics({ topics: ['pk-times'], partitions: 1, replicas: 1 })
    const t0 = BigInt(Date.now() - 90_000)
    for (let i = 0n; i < 5n; i++) await producer.send({ messages: [{ topic: 'pk-times', partition: 0, value: Buffer.from(`t${i}`), timestamp: t0 + i * 1000n }], acks: 1 })
    const at = async (timestamp: bigint): Promise<bigint> => (await consumer.listOffsets({ topics: ['pk-times'], timestamp })).get('pk-times')![0]!
    expect(await at(-2n)).toBe(0n)
    expect(await at(-1n)).toBe(5n)
    expect(await at(t0)).toBe(0n)
    expect(await at(t0 + 1500n)).toBe(2n)
    expect(await at(t0 + 4000n)).toBe(4n)
  })

  it('describes and alters topic configs', async () => {
    const describe = async (): Promise<Map<string, unknown>> => {
      const res = await admin.describeConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: 'pk-codecs' }] })
      return new Map(res[0]!.configs.map((c) => [c.name, c.value]))
    }
    expect((await describe()).get('retention.ms')).toBe('86400000')
    await admin.alterConfigs({ resources: [{ resourceType: ConfigResourceTypes.TOPIC, resourceName: 'pk-codecs', configs: [{ name: 'retention.ms', value: '7200000' }] }] })
    expect((await describe()).get('retention.ms')).toBe('7200000')
  })

  it('deletes topics', async () => {
    await admin.deleteTopics({ topics: ['pk-doomed'] })
    expect(await admin.listTopics()).not.toContain('pk-doomed')
  })
})
