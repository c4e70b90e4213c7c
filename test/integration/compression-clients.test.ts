// Broker-side compression with real clients: kafkajs (gzip, kafkajs-snappy, kafkajs-lz4 or an lz4-napi
// frame codec, a zstd codec over zstd-napi) and librdkafka via kcat (-z gzip|snappy|lz4|zstd) produce to
// topics whose compression.type differs from their codec; the broker stores the topic's codec, and the
// clients read their records back intact. A compacted topic refuses keyless records (kafkajs sees
// INVALID_RECORD) and takes keyed ones.
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compressFrameSync, decompressFrameSync } from 'lz4-napi'
import { isXerialSnappy } from '../../src/protocol/records/compression.js'
import { RECORD_BATCH_OVERHEAD } from '../../src/protocol/records/batch.js'
import { decodeBatches, hasKcat, hasZstdNapi, loadZstd, RawClient, recordsBuffer, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const kafkajs = require('kafkajs') as any
const { Kafka, CompressionTypes, CompressionCodecs, logLevel } = kafkajs
const KjsCluster = require('kafkajs/src/cluster') as any
const { createLogger, LEVELS } = require('kafkajs/src/loggers') as any
const LoggerConsole = require('kafkajs/src/loggers/console') as any
const defaultSocketFactory = require('kafkajs/src/network/socketFactory') as any

const ZSTD = hasZstdNapi()
const KCAT = hasKcat()

CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy')
let lz4Source = 'kafkajs-lz4'
try {
  const LZ4Codec = require('kafkajs-lz4')
  CompressionCodecs[CompressionTypes.LZ4] = new (LZ4Codec.default ?? LZ4Codec)().codec
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

const TARGETS = ['uncompressed', 'gzip', 'snappy', 'lz4', 'zstd'] as const
const STORED: Record<string, string> = { uncompressed: 'none', gzip: 'gzip', snappy: 'snappy', lz4: 'lz4', zstd: 'zstd' }
const KJS_CODECS: [string, number][] = [
  ['none', CompressionTypes.None],
  ['gzip', CompressionTypes.GZIP],
  ['snappy', CompressionTypes.Snappy],
  ['lz4', CompressionTypes.LZ4],
  ...(ZSTD ? [['zstd', CompressionTypes.ZSTD] as [string, number]] : []),
]

let tb: TestBroker
let raw: RawClient
let kafka: any
let producer: any
let cluster: any

async function storedBatches(topic: string, partition = 0): Promise<ReturnType<typeof decodeBatches>> {
  return decodeBatches(recordsBuffer(await raw.fetch(topic, partition, 0, { maxBytes: 16 << 20, partitionMaxBytes: 16 << 20 })))
}

/** Every record of a partition, through kafkajs's own Fetch and record batch decoder (its codecs). */
async function kjsFetchAll(topic: string, partition = 0): Promise<any[]> {
  await cluster.addTargetTopic(topic)
  await cluster.refreshMetadata()
  const leader = cluster.findTopicPartitionMetadata(topic).find((p: any) => p.partitionId === partition).leader
  const broker = await cluster.findBroker({ nodeId: String(leader) })
  const records: any[] = []
  let offset = 0
  for (let round = 0; round < 100; round++) {
    const res = await broker.fetch({
      replicaId: -1, isolationLevel: 0, maxWaitTime: 20, minBytes: 0, maxBytes: 8 << 20,
      topics: [{ topic, partitions: [{ partition, fetchOffset: String(offset), maxBytes: 4 << 20 }] }],
    })
    const p = res.responses[0].partitions[0]
    expect(p.errorCode).toBe(0)
    for (const m of p.messages) if (Number(m.offset) >= offset) records.push(m)
    if (records.length > 0) offset = Number(records[records.length - 1].offset) + 1
    if (offset >= Number(p.highWatermark)) break
  }
  return records
}

const kcatCommon = (): string[] => ['-b', tb.bootstrap, '-X', 'socket.timeout.ms=10000', '-m', '15']

beforeAll(async () => {
  tb = await startTestBroker()
  raw = await RawClient.connect(tb.host, tb.port)
  for (const target of TARGETS) {
    expect((await raw.createTopic(`kjs-to-${target}`, 1, { 'compression.type': target })).errorCode).toBe(0)
    expect((await raw.createTopic(`kcat-to-${target}`, 1, { 'compression.type': target })).errorCode).toBe(0)
  }
  expect((await raw.createTopic('kcat-as-produced', 5)).errorCode).toBe(0)
  expect((await raw.createTopic('compacted', 1, { 'cleanup.policy': 'compact', 'compression.type': 'zstd' })).errorCode).toBe(0)
  kafka = new Kafka({ clientId: 'skein-compression', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, connectionTimeout: 3000, requestTimeout: 15000, retry: { retries: 2, initialRetryTime: 100 } })
  producer = kafka.producer({ allowAutoTopicCreation: false })
  await producer.connect()
  cluster = new KjsCluster({
    logger: createLogger({ level: LEVELS.NOTHING, logCreator: LoggerConsole }),
    socketFactory: defaultSocketFactory(),
    brokers: [tb.bootstrap],
    clientId: 'skein-compression-fetch',
    connectionTimeout: 3000,
    requestTimeout: 15000,
    enforceRequestTimeout: true,
    metadataMaxAge: 300000,
    allowAutoTopicCreation: false,
    retry: { retries: 2, initialRetryTime: 100 },
  })
  await cluster.connect()
})

afterAll(async () => {
  await producer?.disconnect()
  await cluster?.disconnect()
  raw?.close()
  await tb?.stop()
})

describe(`kafkajs (lz4 codec: ${lz4Source}${ZSTD ? '' : '; zstd SKIPPED: zstd-napi does not load'})`, () => {
  for (const target of TARGETS) {
    it(`every producer codec lands as ${target} and reads back intact`, async () => {
      const topic = `kjs-to-${target}`
      const sent: { key: Buffer; value: Buffer; headers: Record<string, Buffer>; timestamp: number }[] = []
      const ts = Date.now() - 5000
      for (const [name, type] of KJS_CODECS) {
        const messages = Array.from({ length: 30 }, (_, i) => ({
          key: Buffer.from(`${name}-k${i}`),
          value: Buffer.from(JSON.stringify({ codec: name, i, text: 'lorem ipsum '.repeat(1 + (i % 7)) })),
          headers: { codec: Buffer.from(name) },
          timestamp: String(ts + sent.length + i),
        }))
        const meta = await producer.send({ topic, acks: -1, compression: type, messages })
        expect(meta).toEqual([expect.objectContaining({ errorCode: 0, baseOffset: String(sent.length) })])
        sent.push(...messages.map((m) => ({ ...m, timestamp: Number(m.timestamp) })))
      }
      const batches = await storedBatches(topic)
      expect(batches.length).toBe(KJS_CODECS.length)
      for (const b of batches) expect(b.compression).toBe(STORED[target])
      const got = await kjsFetchAll(topic)
      expect(got.length).toBe(sent.length)
      got.forEach((m, i) => {
        expect(Number(m.offset)).toBe(i)
        expect(Buffer.from(m.key)).toEqual(sent[i]!.key)
        expect(Buffer.from(m.value)).toEqual(sent[i]!.value)
        expect(Number(m.timestamp)).toBe(sent[i]!.timestamp)
        expect(Buffer.from(m.headers.codec)).toEqual(sent[i]!.headers.codec)
      })
    })
  }

  it('a compacted topic answers INVALID_RECORD for keyless records and stores keyed ones', async () => {
    const err = await producer
      .send({ topic: 'compacted', acks: -1, compression: CompressionTypes.GZIP, messages: [{ key: 'k1', value: 'a' }, { value: 'no key' }] })
      .then(() => null, (e: any) => e)
    expect(err).not.toBeNull()
    expect(err.type ?? err.cause?.type).toBe('INVALID_RECORD')
    const meta = await producer.send({ topic: 'compacted', acks: -1, compression: CompressionTypes.GZIP, messages: [{ key: 'k1', value: 'a' }, { key: 'k2', value: 'b' }] })
    expect(meta).toEqual([expect.objectContaining({ errorCode: 0, baseOffset: '0' })])
    const got = await kjsFetchAll('compacted')
    expect(got.map((m) => [m.key.toString(), m.value.toString()])).toEqual([['k1', 'a'], ['k2', 'b']])
    expect((await storedBatches('compacted')).map((b) => b.compression)).toEqual(['zstd'])
  })
})

describe.skipIf(!KCAT)('librdkafka via kcat', () => {
  // librdkafka sends lz4 only when the broker advertises FindCoordinator v0, which Skein does (kcat.test.ts).
  const kcatCodecs = (): string[] => ['none', 'gzip', 'snappy', 'lz4', 'zstd']

  async function kcatProduce(topic: string, partition: number, lines: string[], codec: string): Promise<void> {
    await runOk('kcat', ['-P', ...kcatCommon(), '-t', topic, '-p', String(partition), '-K', ':', '-z', codec, '-X', 'acks=all', '-X', 'linger.ms=20'], { input: lines.join('\n') + '\n', timeoutMs: 30000 })
  }

  async function kcatConsume(topic: string): Promise<string[]> {
    const r = await runOk('kcat', ['-C', ...kcatCommon(), '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-f', '%k:%s\\n'], { timeoutMs: 30000 })
    return r.stdout.toString().split('\n').filter((l) => l !== '')
  }

  it("stores what librdkafka compressed as it was sent ('producer'); its snappy framing decodes", async () => {
    for (const [partition, codec] of kcatCodecs().entries()) {
      const lines = Array.from({ length: 40 }, (_, i) => `${codec}-${i}:${`${codec} event ${i} `.repeat(1 + (i % 5))}`)
      await kcatProduce('kcat-as-produced', partition, lines, codec)
      const batches = await storedBatches('kcat-as-produced', partition)
      for (const b of batches) expect(b.compression).toBe(codec)
      expect(batches.flatMap((b) => b.records).map((r) => `${r.key}:${r.value}`)).toEqual(lines)
      if (codec === 'snappy') {
        const fetched = recordsBuffer(await raw.fetch('kcat-as-produced', partition, 0))
        const framing = isXerialSnappy(fetched.subarray(RECORD_BATCH_OVERHEAD)) ? 'xerial' : 'raw'
        console.info(`[compression] librdkafka (kcat -z snappy) writes ${framing} snappy`)
      }
    }
  })

  for (const target of TARGETS) {
    it(`kcat batches of every codec are stored as ${target} and consumed intact`, async () => {
      const topic = `kcat-to-${target}`
      const all: string[] = []
      for (const codec of kcatCodecs()) {
        const lines = Array.from({ length: 25 }, (_, i) => `${codec}-${i}:${`${codec}/${target} value ${i} `.repeat(1 + (i % 6))}`)
        await kcatProduce(topic, 0, lines, codec)
        all.push(...lines)
      }
      expect(await kcatConsume(topic)).toEqual(all)
      const batches = await storedBatches(topic)
      for (const b of batches) expect(b.compression).toBe(STORED[target])
      expect(batches.flatMap((b) => b.records).map((r) => `${r.key}:${r.value}`)).toEqual(all)
    })
  }
})
