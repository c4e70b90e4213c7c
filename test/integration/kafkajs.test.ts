// kafkajs 2.2.4 against a real broker: admin (create/list/describe/alter/delete), producer with every
// acks value and codec, and fetches through kafkajs's own protocol code (its Cluster/Broker objects and
// record batch decoder), since its Consumer needs consumer groups, which are not served yet.
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compressFrameSync, decompressFrameSync } from 'lz4-napi'
import { decodeBatches, hasZstdNapi, loadZstd, RawClient, recordsBuffer, startTestBroker, type TestBroker } from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const kafkajs = require('kafkajs') as any
const { Kafka, CompressionTypes, CompressionCodecs, ConfigResourceTypes, logLevel } = kafkajs
const KjsCluster = require('kafkajs/src/cluster') as any
const { createLogger, LEVELS } = require('kafkajs/src/loggers') as any
const LoggerConsole = require('kafkajs/src/loggers/console') as any
const defaultSocketFactory = require('kafkajs/src/network/socketFactory') as any

const ZSTD = hasZstdNapi()

// Codecs, registered the way kafkajs documents. snappy: kafkajs-snappy. lz4: kafkajs-lz4 when its
// native `lz4` dependency loads; the published tarball carries macOS binaries, so on Linux it does not,
// and a codec over lz4-napi (LZ4 frame format, what Kafka uses for magic v2) stands in, said loudly.
CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
let lz4Source = 'kafkajs-lz4'
try {
  const LZ4Codec = require('kafkajs-lz4')
  const codec = new (LZ4Codec.default ?? LZ4Codec)().codec
  CompressionCodecs[CompressionTypes.LZ4] = codec
} catch (err) {
  lz4Source = 'lz4-napi'
  console.warn(`[skein tests] kafkajs-lz4 does not load (${(err as Error).message.split('\n')[0]}); using an lz4-napi frame codec for kafkajs`)
  CompressionCodecs[CompressionTypes.LZ4] = () => ({
    compress: async (encoder: { buffer: Buffer }) => compressFrameSync(encoder.buffer),
    decompress: async (buffer: Buffer) => decompressFrameSync(buffer),
  })
}
if (ZSTD) {
  CompressionCodecs[CompressionTypes.ZSTD] = () => ({
    compress: async (encoder: { buffer: Buffer }) => loadZstd().compress(encoder.buffer),
    decompress: async (buffer: Buffer) => loadZstd().decompress(buffer),
  })
}

interface Sent {
  partition: number
  key: Buffer | null
  value: Buffer | null
  headers: Record<string, Buffer>
  timestamp: number
}

let tb: TestBroker
let kafka: any
let admin: any
let producer: any
let cluster: any

/** Every record of a partition from offset 0 to the high watermark, with kafkajs's Fetch v11 + decoder. */
async function kjsFetchAll(topic: string, partition: number): Promise<{ records: any[]; highWatermark: number }> {
  await cluster.addTargetTopic(topic)
  await cluster.refreshMetadata()
  const leader = cluster.findTopicPartitionMetadata(topic).find((p: any) => p.partitionId === partition).leader
  const broker = await cluster.findBroker({ nodeId: String(leader) })
  const records: any[] = []
  let offset = 0
  let highWatermark = -1
  for (let round = 0; round < 100; round++) {
    const res = await broker.fetch({
      replicaId: -1,
      isolationLevel: 0,
      maxWaitTime: 20,
      minBytes: 0,
      maxBytes: 4 * 1024 * 1024,
      topics: [{ topic, partitions: [{ partition, fetchOffset: String(offset), maxBytes: 1024 * 1024 }] }],
    })
    const p = res.responses[0].partitions[0]
    expect(p.errorCode).toBe(0)
    highWatermark = Number(p.highWatermark)
    for (const m of p.messages) {
      if (Number(m.offset) >= offset) records.push(m)
    }
    if (records.length > 0) offset = Number(records[records.length - 1].offset) + 1
    if (offset >= highWatermark) break
  }
  return { records, highWatermark }
}

function expectSame(partition: number, got: any[], sent: Sent[]): void {
  expect(got.length, `records in partition ${partition}`).toBe(sent.length)
  got.forEach((m, i) => {
    const s = sent[i]!
    expect(Number(m.offset)).toBe(i)
    expect(m.key === null ? null : Buffer.from(m.key)).toEqual(s.key)
    expect(m.value === null ? null : Buffer.from(m.value)).toEqual(s.value)
    expect(Number(m.timestamp)).toBe(s.timestamp)
    expect(Object.keys(m.headers).sort()).toEqual(Object.keys(s.headers).sort())
    for (const [k, v] of Object.entries(s.headers)) expect(Buffer.from(m.headers[k])).toEqual(v)
  })
}

beforeAll(async () => {
  tb = await startTestBroker(['num.partitions=2'])
  kafka = new Kafka({ clientId: 'skein-kafkajs', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, connectionTimeout: 3000, requestTimeout: 15000, retry: { retries: 3, initialRetryTime: 100 } })
  admin = kafka.admin()
  await admin.connect()
  producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  cluster = new KjsCluster({
    logger: createLogger({ level: LEVELS.NOTHING, logCreator: LoggerConsole }),
    socketFactory: defaultSocketFactory(),
    brokers: [tb.bootstrap],
    clientId: 'skein-kafkajs-fetch',
    connectionTimeout: 3000,
    requestTimeout: 15000,
    enforceRequestTimeout: true,
    metadataMaxAge: 300000,
    allowAutoTopicCreation: false,
    retry: { retries: 3, initialRetryTime: 100 },
  })
  await cluster.connect()
})

afterAll(async () => {
  await producer?.disconnect()
  await admin?.disconnect()
  await cluster?.disconnect()
  await tb?.stop()
})

describe('kafkajs 2.2.4', () => {
  it('creates topics with several partitions and sees them in metadata', async () => {
    const created = await admin.createTopics({ topics: [{ topic: 'kjs-data', numPartitions: 4 }, { topic: 'kjs-codecs', numPartitions: 5 }, { topic: 'kjs-doomed', numPartitions: 2 }], waitForLeaders: true })
    expect(created).toBe(true)
    // Creating an existing topic is refused with TOPIC_ALREADY_EXISTS, which kafkajs reports as false.
    expect(await admin.createTopics({ topics: [{ topic: 'kjs-data', numPartitions: 4 }] })).toBe(false)
    const topics: string[] = await admin.listTopics()
    expect(topics).toEqual(expect.arrayContaining(['kjs-data', 'kjs-codecs', 'kjs-doomed']))
    const meta = await admin.fetchTopicMetadata({ topics: ['kjs-data'] })
    const partitions = meta.topics[0].partitions.sort((a: any, b: any) => a.partitionId - b.partitionId)
    expect(partitions.map((p: any) => p.partitionId)).toEqual([0, 1, 2, 3])
    for (const p of partitions) {
      expect(p.leader).toBe(tb.broker.nodeId)
      expect(p.replicas).toEqual([tb.broker.nodeId])
      expect(p.isr).toEqual([tb.broker.nodeId])
    }
    const described = await admin.describeCluster()
    expect(described.brokers).toEqual([{ nodeId: tb.broker.nodeId, host: tb.host, port: tb.port }])
    expect(described.controller).toBe(tb.broker.nodeId)
    expect(described.clusterId).toBe(tb.broker.clusterId)
  })

  it('produces keyed and unkeyed records with headers at acks 1, -1 and 0 and fetches them back byte for byte', async () => {
    const sent = new Map<number, Sent[]>([[0, []], [1, []], [2, []], [3, []]])
    const base = Date.now() - 60_000
    let n = 0
    for (const acks of [1, -1, 0]) {
      const messages: any[] = []
      for (let i = 0; i < 12; i++) {
        const keyed = i % 3 !== 0
        const m: any = {
          key: keyed ? randomBytes(1 + (i % 7)) : null,
          value: i === 5 ? null : Buffer.concat([Buffer.from(`acks${acks}-${i}:`), randomBytes(i * 13)]),
          headers: i % 2 === 0 ? { 'h-text': Buffer.from(`h${i}`), 'h-bin': randomBytes(5) } : {},
          timestamp: String(base + n++),
        }
        // Unkeyed records name their partition; keyed ones are placed by kafkajs's partitioner, except
        // with acks=0, where no metadata comes back to tell us where they went.
        if (!keyed || acks === 0) m.partition = i % 4
        messages.push(m)
      }
      const meta = await producer.send({ topic: 'kjs-data', acks, messages })
      if (acks === 0) {
        expect(meta).toEqual([])
        for (const m of messages) sent.get(m.partition)!.push({ partition: m.partition, key: m.key, value: m.value, headers: m.headers, timestamp: Number(m.timestamp) })
        continue
      }
      expect(meta.length).toBeGreaterThan(0)
      for (const r of meta) expect(r.errorCode).toBe(0)
      // Keyed records went where kafkajs's default partitioner (murmur2 of the key) put them.
      const partitioner = kafkajs.Partitioners.DefaultPartitioner()
      const partitionMetadata = [0, 1, 2, 3].map((p) => ({ partitionId: p, leader: tb.broker.nodeId }))
      for (const m of messages) {
        const p = m.partition ?? partitioner({ topic: 'kjs-data', partitionMetadata, message: m })
        sent.get(p)!.push({ partition: p, key: m.key, value: m.value, headers: m.headers, timestamp: Number(m.timestamp) })
      }
      // The offsets the broker returned match what we expect per partition at this point.
      for (const r of meta) {
        const count = sent.get(r.partition)!.length
        const inThisSend = messages.filter((m) => (m.partition ?? partitioner({ topic: 'kjs-data', partitionMetadata, message: m })) === r.partition).length
        expect(Number(r.baseOffset)).toBe(count - inThisSend)
      }
    }
    for (const [partition, expected] of sent) {
      const { records, highWatermark } = await kjsFetchAll('kjs-data', partition)
      expect(highWatermark).toBe(expected.length)
      expectSame(partition, records, expected)
    }
  })

  const codecs: [string, number, boolean][] = [
    ['gzip', CompressionTypes.GZIP, true],
    ['snappy', CompressionTypes.Snappy, true],
    ['lz4', CompressionTypes.LZ4, true],
    ['zstd', CompressionTypes.ZSTD, ZSTD],
  ]
  for (const [name, type, available] of codecs) {
    it.skipIf(!available)(`produces ${name}-compressed batches that come back intact (lz4 codec: ${lz4Source})`, async () => {
      const partition = codecs.findIndex((c) => c[0] === name)
      const ts = Date.now() - 1000
      const messages = Array.from({ length: 40 }, (_, i) => ({
        key: Buffer.from(`${name}-key-${i}`),
        value: Buffer.from(`${name} value ${i} `.repeat(10 + i)),
        headers: { codec: Buffer.from(name) },
        timestamp: String(ts + i),
        partition,
      }))
      const meta = await producer.send({ topic: 'kjs-codecs', acks: -1, compression: type, messages })
      expect(meta).toEqual([expect.objectContaining({ partition, errorCode: 0, baseOffset: '0' })])
      const { records } = await kjsFetchAll('kjs-codecs', partition)
      expectSame(partition, records, messages.map((m) => ({ ...m, timestamp: Number(m.timestamp) })))
      // The broker stored the batch as the client compressed it (no recompression, attributes intact).
      const raw = await RawClient.connect(tb.host, tb.port)
      try {
        const fetched = await raw.fetch('kjs-codecs', partition, 0)
        const batches = decodeBatches(recordsBuffer(fetched))
        expect(batches.map((b) => b.compression)).toEqual([name])
        expect(batches[0]!.records.map((r) => r.value)).toEqual(messages.map((m) => m.value))
      } finally {
        raw.close()
      }
    })
  }

  it('lists offsets: earliest, latest and by timestamp', async () => {
    await admin.createTopics({ topics: [{ topic: 'kjs-offsets', numPartitions: 2 }] })
    const t0 = Date.now() - 100_000
    // One batch per record: the broker's timestamp lookup has batch granularity (see FINDINGS.md).
    for (let i = 0; i < 10; i++) await producer.send({ topic: 'kjs-offsets', acks: 1, messages: [{ value: `v${i}`, partition: 1, timestamp: String(t0 + i * 1000) }] })
    const offsets = (await admin.fetchTopicOffsets('kjs-offsets')).sort((a: any, b: any) => a.partition - b.partition)
    expect(offsets).toEqual([
      { partition: 0, offset: '0', high: '0', low: '0' },
      { partition: 1, offset: '10', high: '10', low: '0' },
    ])
    const byTime = async (ts: number): Promise<string> => {
      const r = await admin.fetchTopicOffsetsByTimestamp('kjs-offsets', ts)
      return r.find((p: any) => p.partition === 1).offset
    }
    expect(await byTime(t0 - 1)).toBe('0')
    expect(await byTime(t0)).toBe('0')
    expect(await byTime(t0 + 3000)).toBe('3')
    expect(await byTime(t0 + 3500)).toBe('4')
    expect(await byTime(t0 + 9000)).toBe('9')
    // Past the last timestamp Kafka answers offset -1; kafkajs then reports the high watermark.
    expect(await byTime(t0 + 1_000_000)).toBe('10')
  })

  it('describes and alters topic and broker configs', async () => {
    const describe = async (): Promise<Map<string, any>> => {
      const res = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kjs-data' }], includeSynonyms: false })
      expect(res.resources[0].errorCode).toBe(0)
      return new Map(res.resources[0].configEntries.map((e: any) => [e.configName, e]))
    }
    const before = await describe()
    expect(before.get('retention.ms')).toEqual(expect.objectContaining({ configValue: '604800000', isDefault: true, readOnly: false }))
    expect(before.get('cleanup.policy')?.configValue).toBe('delete')
    await admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kjs-data', configEntries: [{ name: 'retention.ms', value: '3600000' }, { name: 'max.message.bytes', value: '2000000' }] }] })
    const after = await describe()
    expect(after.get('retention.ms')).toEqual(expect.objectContaining({ configValue: '3600000', isDefault: false }))
    expect(after.get('max.message.bytes')?.configValue).toBe('2000000')
    // An invalid value is refused as a whole with a typed error.
    await expect(admin.alterConfigs({ resources: [{ type: ConfigResourceTypes.TOPIC, name: 'kjs-data', configEntries: [{ name: 'retention.ms', value: 'soon' }] }] })).rejects.toThrow()
    expect((await describe()).get('retention.ms')?.configValue).toBe('3600000')
    const broker = await admin.describeConfigs({ resources: [{ type: ConfigResourceTypes.BROKER, name: String(tb.broker.nodeId) }], includeSynonyms: false })
    const brokerEntries = new Map<string, any>(broker.resources[0].configEntries.map((e: any) => [e.configName, e]))
    expect(brokerEntries.get('num.partitions')?.configValue).toBe('2')
    expect(brokerEntries.get('log.dirs')?.configValue).toBe(tb.dataDir)
  })

  it('adds partitions and deletes records', async () => {
    await admin.createPartitions({ topicPartitions: [{ topic: 'kjs-offsets', count: 3 }] })
    const meta = await admin.fetchTopicMetadata({ topics: ['kjs-offsets'] })
    expect(meta.topics[0].partitions.length).toBe(3)
    // The shared producer's cached metadata still says 2 partitions (kafkajs drops records for an
    // unknown partition without an error), so a fresh producer writes to the new one.
    const fresh = kafka.producer({ allowAutoTopicCreation: false })
    await fresh.connect()
    try {
      const meta2 = await fresh.send({ topic: 'kjs-offsets', acks: 1, messages: [{ value: 'in the new partition', partition: 2 }] })
      expect(meta2).toEqual([expect.objectContaining({ partition: 2, errorCode: 0, baseOffset: '0' })])
    } finally {
      await fresh.disconnect()
    }
    await admin.deleteTopicRecords({ topic: 'kjs-offsets', partitions: [{ partition: 1, offset: '4' }] })
    const offsets = (await admin.fetchTopicOffsets('kjs-offsets')).sort((a: any, b: any) => a.partition - b.partition)
    expect(offsets[1]).toEqual({ partition: 1, offset: '10', high: '10', low: '4' })
    expect(offsets[2]).toEqual({ partition: 2, offset: '1', high: '1', low: '0' })
  })

  it('deletes topics', async () => {
    await admin.deleteTopics({ topics: ['kjs-doomed'], timeout: 10000 })
    const topics: string[] = await admin.listTopics()
    expect(topics).not.toContain('kjs-doomed')
    expect(topics).toContain('kjs-data')
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      const p = await raw.fetch('kjs-doomed', 0, 0)
      expect(p.errorCode).toBe(3) // UNKNOWN_TOPIC_OR_PARTITION
    } finally {
      raw.close()
    }
  })
})
