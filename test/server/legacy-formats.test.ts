// The versions Kafka 3.x served with format conversion and Kafka 4 removed (KIP-896), served again for old
// clients (Debian's kafka-go 0.2.1): CreateTopics v0-1, Produce v0-2 (legacy message sets up-converted
// to one batch v2) and Fetch v0-3 (batches v2 down-converted to magic 0 for v0-1, magic 1 for v2-3),
// over raw frames against a broker: records, offsets, timestamps, LogAppendTime topics, compressed
// sets, byte limits, and that a v4+ consumer reads what v0-2 wrote.
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { buildLegacyMessageSet, decodeLegacyMessageSet, encodeLegacyMessages } from '../../src/protocol/records/legacy-message-set.js'
import { batchOf, decodeAllRecords, decodeBatches, RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

describe('CreateTopics v0-1, Produce v0-2 and Fetch v0-3 (legacy formats)', () => {
  let tb: TestBroker
  let raw: RawClient

  beforeAll(async () => {
    tb = await startTestBroker()
    raw = await RawClient.connect(tb.host, tb.port)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  const createTopics = (topics: Partial<CreateTopics.CreatableTopic>[], v: number, validateOnly = false) =>
    raw.call(19, v, (w) => CreateTopics.encodeCreateTopicsRequest(w, CreateTopics.createCreateTopicsRequest({
      topics: topics.map((t) => CreateTopics.createCreatableTopic({ numPartitions: 1, replicationFactor: 1, ...t })), timeoutMs: 10_000, validateOnly,
    }), v), CreateTopics.decodeCreateTopicsResponse)

  const produceV = (topic: string, records: Buffer, v: number, acks = 1) =>
    raw.call(0, v, (w) => Produce.encodeProduceRequest(w, raw.produceRequest(topic, 0, records, acks), v), Produce.decodeProduceResponse)

  async function fetchV(topic: string, offset: number, v: number, opts: { maxBytes?: number; partitionMaxBytes?: number } = {}): Promise<Fetch.PartitionData> {
    const req = raw.fetchRequest(topic, 0, offset, { maxWaitMs: 0, ...opts })
    const res = await raw.call(1, v, (w) => Fetch.encodeFetchRequest(w, req, v), Fetch.decodeFetchResponse)
    return res.responses[0]!.partitions[0]!
  }

  it('advertises CreateTopics 0-7, Produce 0-11, Fetch 0-17', async () => {
    const ranges = new Map((await raw.apiVersions()).apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]))
    expect(ranges.get(0)).toEqual([0, 11])
    expect(ranges.get(1)).toEqual([0, 17])
    expect(ranges.get(19)).toEqual([0, 7])
  })

  it('CreateTopics v0 creates (the code alone in the answer); v1 validates only and carries messages', async () => {
    const v0 = await createTopics([{ name: 'legacy-v0', numPartitions: 2 }, { name: 'legacy-v0-bad', numPartitions: -5 }], 0)
    expect(v0.topics.map((t) => [t.name, t.errorCode])).toEqual([['legacy-v0', ErrorCode.NONE], ['legacy-v0-bad', ErrorCode.INVALID_PARTITIONS]])
    expect(tb.broker.topics.get('legacy-v0')!.partitions).toBe(2)
    const again = await createTopics([{ name: 'legacy-v0' }], 0)
    expect(again.topics[0]!.errorCode).toBe(ErrorCode.TOPIC_ALREADY_EXISTS)
    const dry = await createTopics([{ name: 'legacy-v1-dry' }], 1, true)
    expect(dry.topics[0]).toMatchObject({ errorCode: ErrorCode.NONE, errorMessage: null })
    expect(tb.broker.topics.get('legacy-v1-dry')).toBeUndefined()
    const bad = await createTopics([{ name: 'legacy-v1-bad', replicationFactor: 3 }], 1)
    expect(bad.topics[0]!.errorCode).toBe(ErrorCode.INVALID_REPLICATION_FACTOR)
    expect(bad.topics[0]!.errorMessage).not.toBeNull()
    expect((await createTopics([{ name: 'legacy-v1' }], 1)).topics[0]!.errorCode).toBe(ErrorCode.NONE)
  })

  it('Produce v0-2 appends up-converted records; Fetch v0-3 answers magic 0 / magic 1 with offsets and timestamps', async () => {
    expect((await raw.createTopic('legacy', 1)).errorCode).toBe(0)
    const now = Date.now()
    const mk = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ key: Buffer.from(`k${from + i}`), value: Buffer.from(`v${from + i}`), timestamp: now + from + i }))
    const v0 = await produceV('legacy', buildLegacyMessageSet(mk(0, 3), 0), 0)
    expect(v0.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 0n })
    const v1 = await produceV('legacy', buildLegacyMessageSet(mk(3, 2), 1, 1), 1)
    expect(v1.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 3n })
    const v2 = await produceV('legacy', buildLegacyMessageSet(mk(5, 4), 1, 2), 2)
    expect(v2.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 5n, logAppendTimeMs: -1n })
    const v2lz4 = await produceV('legacy', buildLegacyMessageSet(mk(9, 2), 1, 3), 2)
    expect(v2lz4.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 9n })

    // A v12 consumer reads batches v2: magic 0 records have no timestamp (-1), magic 1 records keep theirs.
    const modern = await raw.fetch('legacy', 0, 0)
    const batches = decodeBatches(modern.records as Buffer)
    // One batch per request, compressed sets recompressed with their own codec.
    expect(batches.map((b) => [b.baseOffset, b.records.length, b.compression])).toEqual([[0, 3, 'none'], [3, 2, 'gzip'], [5, 4, 'snappy'], [9, 2, 'lz4']])
    const all = decodeAllRecords(modern.records as Buffer)
    expect(all.map((r) => [r.offset, r.timestamp, r.key!.toString()])).toEqual([
      ...mk(0, 3).map((r, i) => [i, -1, r.key.toString()]),
      ...mk(3, 8).map((r, i) => [3 + i, r.timestamp, r.key.toString()]),
    ])

    for (const v of [0, 1, 2, 3]) {
      const p = await fetchV('legacy', 0, v)
      expect(p.errorCode).toBe(0)
      expect(p.highWatermark).toBe(11n)
      const messages = decodeLegacyMessageSet(p.records as Buffer)
      const magic = v < 2 ? 0 : 1
      expect(messages.map((m) => [m.offset, m.magic, m.timestamp, m.key!.toString(), m.value!.toString()])).toEqual(
        mk(0, 11).map((r, i) => [i, magic, magic === 0 || i < 3 ? -1 : r.timestamp, r.key.toString(), r.value.toString()]),
      )
    }
    // From inside a batch: the records before the fetch offset are not sent.
    const mid = decodeLegacyMessageSet((await fetchV('legacy', 6, 2)).records as Buffer)
    expect(mid.map((m) => m.offset)).toEqual([6, 7, 8, 9, 10])
    // Past the end: nothing; out of range: the code.
    expect((await fetchV('legacy', 11, 2)).records).toEqual(Buffer.alloc(0))
    expect((await fetchV('legacy', 12, 0)).errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
  })

  it('Fetch v0-3 byte limits: a message boundary within partitionMaxBytes, the first message whole', async () => {
    expect((await raw.createTopic('legacy-limits', 1)).errorCode).toBe(0)
    const value = Buffer.alloc(500, 7)
    expect((await raw.produce('legacy-limits', 0, batchOf(Array.from({ length: 10 }, () => ({ value }))))).errorCode).toBe(0)
    const one = 12 + 22 + 500
    const cut = decodeLegacyMessageSet((await fetchV('legacy-limits', 0, 2, { partitionMaxBytes: 3 * one + 100 })).records as Buffer)
    expect(cut.map((m) => m.offset)).toEqual([0, 1, 2])
    const first = decodeLegacyMessageSet((await fetchV('legacy-limits', 0, 0, { partitionMaxBytes: 10 })).records as Buffer)
    expect(first.map((m) => m.offset)).toEqual([0])
    // v3's maxBytes bounds the whole answer.
    const v3 = decodeLegacyMessageSet((await fetchV('legacy-limits', 4, 3, { maxBytes: 2 * one, partitionMaxBytes: 1 << 20 })).records as Buffer)
    expect(v3.map((m) => m.offset)).toEqual([4, 5])
  })

  it('LogAppendTime topics: v2 answers the append time; magic 0 and magic 1 records are stamped with it', async () => {
    expect((await raw.createTopic('legacy-lat', 1, { 'message.timestamp.type': 'LogAppendTime' })).errorCode).toBe(0)
    const before = Date.now()
    const res = await produceV('legacy-lat', buildLegacyMessageSet([{ value: Buffer.from('a') }, { value: Buffer.from('b') }], 0), 2)
    const p = res.responses[0]!.partitionResponses[0]!
    expect(p.errorCode).toBe(0)
    expect(Number(p.logAppendTimeMs)).toBeGreaterThanOrEqual(before)
    const m1 = decodeLegacyMessageSet((await fetchV('legacy-lat', 0, 2)).records as Buffer)
    expect(m1.map((m) => [m.attributes, m.timestamp])).toEqual([[8, Number(p.logAppendTimeMs)], [8, Number(p.logAppendTimeMs)]])
    const m0 = decodeLegacyMessageSet((await fetchV('legacy-lat', 0, 1)).records as Buffer)
    expect(m0.map((m) => [m.magic, m.attributes, m.timestamp])).toEqual([[0, 0, -1], [0, 0, -1]])
    // A producer may not set the LogAppendTime bit itself.
    const own = encodeLegacyMessages([{ offset: 0, magic: 1, attributes: 8, timestamp: before, key: null, value: Buffer.from('x') }])
    expect((await produceV('legacy-lat', own, 2)).responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.INVALID_TIMESTAMP)
  })

  it('v0-2 sets go through the append path rules: compacted topics need keys, max.message.bytes', async () => {
    expect((await raw.createTopic('legacy-compact', 1, { 'cleanup.policy': 'compact', 'max.message.bytes': '2000' })).errorCode).toBe(0)
    const keyless = await produceV('legacy-compact', buildLegacyMessageSet([{ key: Buffer.from('k'), value: Buffer.from('a') }, { value: Buffer.from('b') }], 1), 2)
    expect(keyless.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.INVALID_RECORD)
    const big = await produceV('legacy-compact', buildLegacyMessageSet([{ key: Buffer.from('k'), value: Buffer.alloc(3000) }], 1), 2)
    expect(big.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.MESSAGE_TOO_LARGE)
    expect((await raw.listOffset('legacy-compact', 0, -1n)).offset).toBe(0n)
    // A v2 batch in a v0-2 request is refused, not written.
    const v2batch = await produceV('legacy-compact', batchOf([{ key: Buffer.from('k'), value: Buffer.from('x') }]), 2)
    expect(v2batch.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.INVALID_RECORD)
    // And a v3+ request with a legacy set still is, as before.
    expect((await raw.produce('legacy-compact', 0, buildLegacyMessageSet([{ key: Buffer.from('k'), value: Buffer.from('x') }], 1), 1, 3)).errorCode).toBe(ErrorCode.INVALID_RECORD)
    const ok = await produceV('legacy-compact', buildLegacyMessageSet([{ key: Buffer.from('k'), value: Buffer.from('a') }], 0, 1), 0)
    expect(ok.responses[0]!.partitionResponses[0]).toMatchObject({ errorCode: 0, baseOffset: 0n })
  })

  it('Fetch v0-3 at a transaction marker at the log end waits MaxWaitMs as an empty read does', async () => {
    const kafka = new Kafka({ clientId: 'legacy-txn', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING })
    const producer = kafka.producer({ transactionalId: 'legacy-txn', idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    try {
      const txn = await producer.transaction()
      await txn.send({ topic: 'legacy-txn', messages: [{ value: 'in a transaction' }] })
      await txn.commit()
    } finally {
      await producer.disconnect()
    }
    // Offset 0: the record; offset 1: the commit marker, the last thing in the log.
    const read = await fetchV('legacy-txn', 0, 2)
    expect(decodeLegacyMessageSet(read.records as Buffer).map((m) => [m.offset, m.value?.toString()])).toEqual([[0, 'in a transaction']])
    const req = raw.fetchRequest('legacy-txn', 0, 1, { maxWaitMs: 600, minBytes: 1 })
    const started = Date.now()
    const res = await raw.call(1, 2, (w) => Fetch.encodeFetchRequest(w, req, 2), Fetch.decodeFetchResponse)
    const p = res.responses[0]!.partitions[0]!
    expect(p.errorCode).toBe(ErrorCode.NONE)
    expect((p.records as Buffer | null)?.length ?? 0).toBe(0)
    // Before, the marker's bytes satisfied MinBytes and an empty set came back at once, to be asked again.
    expect(Date.now() - started).toBeGreaterThanOrEqual(500)
  })

  it('Produce v0 acks=0 writes without an answer', async () => {
    expect((await raw.createTopic('legacy-noack', 1)).errorCode).toBe(0)
    await raw.produceNoAck('legacy-noack', 0, buildLegacyMessageSet([{ value: Buffer.from('q') }], 0), 0)
    for (let i = 0; i < 50 && (await raw.listOffset('legacy-noack', 0, -1n)).offset === 0n; i++) await new Promise((r) => setTimeout(r, 20))
    expect((await raw.listOffset('legacy-noack', 0, -1n)).offset).toBe(1n)
  })
})
