// The client against real brokers: version negotiation, producer batching/partitioning/acks/codecs,
// retries across a broker restart, metadata refresh after NOT_LEADER_OR_FOLLOWER (a scripted fake broker
// sends the producer to the real one), consumer groups splitting and rebalancing partitions, admin calls.
// Pure parts (assignors, batch encoding and decoding, read_committed filtering) are tested directly.
import { createServer, type Server, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  Admin,
  BrokerConnection,
  Consumer,
  ErrorCode,
  KafkaError,
  Producer,
  RecordBatchWriter,
  decodeAssignment,
  decodeFetchedRecords,
  decodeSubscription,
  encodeAssignment,
  encodeSubscription,
  partitionForKey,
  pickVersion,
  rangeAssign,
  roundRobinAssign,
  tpKey,
} from '../../src/client/index.js'
import { ApiKey } from '../../src/protocol/api-keys.gen.js'
import { encodeResponseFrame } from '../../src/protocol/frame.js'
import { readRequestHeader } from '../../src/protocol/header.js'
import * as ApiVersions from '../../src/protocol/messages/18-api-versions.gen.js'
import * as ConsumerProtocolSubscription from '../../src/protocol/messages/consumer-protocol-subscription.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'
import { CompressionType } from '../../src/protocol/records/batch.js'
import { batchOf, decodeBatches, RawClient, startTestBroker, type TestBroker } from '../harness/index.js'
import { FetchedRecordsCursor, type ConsumedRecord } from '../../src/client/record-batches.js'

describe('pure parts', () => {
  it('picks the highest version both sides support', () => {
    expect(pickVersion(ApiKey.Fetch, 'Fetch', { min: 4, max: 17 })).toBe(12)
    expect(pickVersion(ApiKey.Fetch, 'Fetch', { min: 4, max: 11 })).toBe(11)
    expect(() => pickVersion(ApiKey.Fetch, 'Fetch', { min: 13, max: 17 })).toThrow(/do not overlap/)
    expect(() => pickVersion(ApiKey.Fetch, 'Fetch', undefined)).toThrow(/does not support Fetch/)
  })

  it('range and roundrobin assignors split partitions as Kafka does', () => {
    const members = [{ memberId: 'b', topics: ['t', 'u'] }, { memberId: 'a', topics: ['t', 'u'] }, { memberId: 'c', topics: ['t'] }]
    const counts = new Map([['t', 7], ['u', 2]])
    const range = rangeAssign(members, counts)
    expect(range.get('a')!.get('t')).toEqual([0, 1, 2])
    expect(range.get('b')!.get('t')).toEqual([3, 4])
    expect(range.get('c')!.get('t')).toEqual([5, 6])
    expect(range.get('a')!.get('u')).toEqual([0])
    expect(range.get('b')!.get('u')).toEqual([1])
    expect(range.get('c')!.get('u')).toBeUndefined()
    const rr = roundRobinAssign(members, counts)
    expect(rr.get('a')!.get('t')).toEqual([0, 3, 6])
    expect(rr.get('b')!.get('t')).toEqual([1, 4])
    expect(rr.get('c')!.get('t')).toEqual([2, 5])
    // u: the dealer continues after a (which took t-6): b, then c is skipped (not subscribed), then a.
    expect(rr.get('b')!.get('u')).toEqual([0])
    expect(rr.get('a')!.get('u')).toEqual([1])
  })

  it('subscription and assignment bytes carry the int16 version and decode newer versions', () => {
    expect(decodeSubscription(encodeSubscription(['x', 'y'])).topics).toEqual(['x', 'y'])
    const w = new Writer(64)
    w.writeInt16(3)
    ConsumerProtocolSubscription.encodeConsumerProtocolSubscription(w, ConsumerProtocolSubscription.createConsumerProtocolSubscription({ topics: ['z'], generationId: 4, rackId: 'r1' }), 3)
    const v3 = decodeSubscription(w.toBuffer())
    expect(v3.topics).toEqual(['z'])
    expect(v3.rackId).toBe('r1')
    expect(encodeSubscription(['x']).readInt16BE(0)).toBe(1)
    const a = encodeAssignment(new Map([['t', [0, 2]], ['u', [1]]]))
    expect(decodeAssignment(a)).toEqual([{ topic: 't', partition: 0 }, { topic: 't', partition: 2 }, { topic: 'u', partition: 1 }])
    expect(decodeAssignment(Buffer.alloc(0))).toEqual([])
  })

  it('RecordBatchWriter output decodes back, compressed or not; it refuses records past its capacity', () => {
    for (const codec of [CompressionType.NONE, CompressionType.GZIP, CompressionType.LZ4, CompressionType.SNAPPY]) {
      const w = new RecordBatchWriter(1024)
      expect(w.tryAppend(1000, Buffer.from('k'), Buffer.from('v1'), [{ key: 'h', value: Buffer.from('hv') }])).toBe(true)
      expect(w.tryAppend(1005, null, null)).toBe(true)
      expect(w.tryAppend(1010, null, Buffer.alloc(2000))).toBe(false)
      const batch = w.build(codec)
      batch.writeInt32BE(0, 0)
      batch.writeInt32BE(40, 4)
      const [decoded] = decodeBatches(batch)
      expect(decoded!.records.map((r) => [r.offset, r.timestamp, r.key?.toString() ?? null, r.value?.toString() ?? null])).toEqual([
        [40, 1000, 'k', 'v1'],
        [41, 1005, null, null],
      ])
      expect(decoded!.records[0]!.headers).toEqual([{ key: 'h', value: Buffer.from('hv') }])
      const mine = decodeFetchedRecords(batch, { topic: 't', partition: 0, fetchOffset: 41 })
      expect(mine.records.map((r) => r.offset)).toEqual([41])
      expect(mine.nextOffset).toBe(42)
    }
    // A first record larger than the capacity still makes a batch of its own.
    const big = new RecordBatchWriter(100)
    expect(big.tryAppend(1, null, Buffer.alloc(500))).toBe(true)
    expect(decodeBatches(big.build())[0]!.records[0]!.value!.length).toBe(500)
  })

  it('skips control batches, drops aborted transactions for read_committed, ignores a cut last batch, rejects bad CRCs', () => {
    const txA = batchOf([{ value: Buffer.from('aborted') }], { baseOffset: 0, producerId: 7, producerEpoch: 0, transactional: true })
    const marker = batchOf([{ key: Buffer.from([0, 0, 0, 0]), value: Buffer.from([0, 0, 0, 0, 0, 0]) }], { baseOffset: 1, producerId: 7, producerEpoch: 0, transactional: true, control: true })
    const plain = batchOf([{ value: Buffer.from('plain') }], { baseOffset: 2 })
    const cut = batchOf([{ value: Buffer.from('cut') }], { baseOffset: 3 }).subarray(0, 70)
    const data = Buffer.concat([txA, marker, plain, cut])
    const all = decodeFetchedRecords(data, { topic: 't', partition: 0, fetchOffset: 0 })
    expect(all.records.map((r) => r.value!.toString())).toEqual(['aborted', 'plain'])
    expect(all.nextOffset).toBe(3)
    const committed = decodeFetchedRecords(data, { topic: 't', partition: 0, fetchOffset: 0, readCommitted: true, abortedTransactions: [{ producerId: 7n, firstOffset: 0n }] })
    expect(committed.records.map((r) => r.value!.toString())).toEqual(['plain'])
    expect(committed.nextOffset).toBe(3)
    const bad = Buffer.from(plain)
    bad[bad.length - 1] ^= 0xff
    expect(() => decodeFetchedRecords(bad, { topic: 't', partition: 0, fetchOffset: 0 })).toThrow(KafkaError)
    try {
      decodeFetchedRecords(bad, { topic: 't', partition: 0, fetchOffset: 0 })
    } catch (err) {
      expect((err as KafkaError).code).toBe(ErrorCode.CORRUPT_MESSAGE)
    }
  })

  it('hands out the records before a batch with a bad CRC, then fails on that batch and stays before it', () => {
    const first = batchOf([{ value: Buffer.from('a') }, { value: Buffer.from('b') }], { baseOffset: 0 })
    const bad = Buffer.from(batchOf([{ value: Buffer.from('c') }], { baseOffset: 2 }))
    // A wrong CRC field (byte 17) over intact records: only the check can tell.
    bad.writeUInt32BE((bad.readUInt32BE(17) ^ 1) >>> 0, 17)
    const after = batchOf([{ value: Buffer.from('d') }], { baseOffset: 3 })
    const cursor = new FetchedRecordsCursor(Buffer.concat([first, bad, after]), { topic: 't', partition: 0, fetchOffset: 0 })
    const out: ConsumedRecord[] = []
    // take() appends the good batch's records, then throws on reaching the bad one (the consumer's poll
    // returns what was appended and keeps its position before the bad batch).
    let code: number | undefined
    try {
      cursor.take(out, 10)
    } catch (err) {
      code = (err as KafkaError).code
    }
    expect(code).toBe(ErrorCode.CORRUPT_MESSAGE)
    expect(out.map((r) => r.value!.toString())).toEqual(['a', 'b'])
    // check.crcs=false (Kafka's consumer config) hands the same data out unchecked.
    const unchecked = new FetchedRecordsCursor(Buffer.concat([first, bad, after]), { topic: 't', partition: 0, fetchOffset: 0, checkCrcs: false })
    const all: ConsumedRecord[] = []
    unchecked.take(all, 10)
    expect(all.map((r) => r.offset)).toEqual([0, 1, 2, 3])
    expect(out).toHaveLength(2)
    expect(cursor.nextOffset).toBe(2)
  })
})

describe('against a broker', () => {
  let tb: TestBroker
  beforeAll(async () => {
    tb = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
  })
  afterAll(async () => {
    await tb?.stop()
  })

  it('negotiates each API to the highest common version', async () => {
    const conn = await BrokerConnection.connect({ host: tb.host, port: tb.port })
    expect(conn.brokerRange(ApiKey.Fetch)).toEqual({ min: 0, max: 17 })
    expect(conn.version(ApiKey.Fetch)).toBe(12)
    expect(conn.version(ApiKey.Produce)).toBe(9)
    expect(conn.version(ApiKey.Metadata)).toBe(12)
    conn.close()
    await expect(BrokerConnection.connect({ host: '127.0.0.1', port: 1 })).rejects.toThrow(/connection refused/)
  })

  it('batches keyless records stickily, keyed records by murmur2, explicit partitions as given', async () => {
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    await admin.createTopics([{ name: 'batched', numPartitions: 4, replicationFactor: 1 }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 50, batchSize: 1 << 20, acks: 1 })
    const metas = await producer.sendBatch(Array.from({ length: 500 }, (_, i) => ({ topic: 'batched', value: `v${i}` })))
    // Sticky: every keyless record of one linger window goes to one partition, in one batch.
    expect(new Set(metas.map((m) => m.partition)).size).toBe(1)
    expect(metas.map((m) => m.offset)).toEqual(Array.from({ length: 500 }, (_, i) => i))
    const keyed = await producer.sendBatch(['a', 'b', 'c', 'd', 'e'].map((k) => ({ topic: 'batched', key: k, value: k })))
    for (const m of keyed) expect(m.partition).toBe(partitionForKey(Buffer.from(['a', 'b', 'c', 'd', 'e'][keyed.indexOf(m)]!), 4))
    const explicit = await producer.send({ topic: 'batched', partition: 3, value: 'x', headers: { h: 'v' } })
    expect(explicit.partition).toBe(3)
    await expect(producer.send({ topic: 'batched', partition: 9, value: 'x' })).rejects.toThrow(/partition 9 of topic 'batched' does not exist/)
    await producer.close()

    const raw = await RawClient.connect(tb.host, tb.port)
    const p = metas[0]!.partition
    const data = await raw.fetch('batched', p, 0)
    raw.socket.destroy()
    const batches = decodeBatches(data.records as Buffer)
    expect(batches[0]!.records.length).toBe(500)
    await admin.close()
  })

  it('acks=0 and every codec arrive intact, read back by the consumer', async () => {
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    await admin.createTopics([{ name: 'codecs', numPartitions: 1, replicationFactor: 1 }])
    await admin.close()
    for (const compression of ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const) {
      const producer = new Producer({ bootstrapServers: tb.bootstrap, compression, acks: compression === 'none' ? 0 : -1 })
      const m = await producer.sendBatch(Array.from({ length: 50 }, (_, i) => ({ topic: 'codecs', key: `k${i}`, value: `${compression}-${i}`.repeat(20) })))
      expect(m[0]!.offset).toBe(compression === 'none' ? -1 : m[0]!.offset)
      await producer.close()
    }
    const consumer = new Consumer({ bootstrapServers: tb.bootstrap, autoOffsetReset: 'earliest' })
    consumer.assign([{ topic: 'codecs', partition: 0 }])
    const got: string[] = []
    while (got.length < 250) for (const r of await consumer.poll(500)) got.push(r.value!.toString())
    await consumer.close()
    expect(got).toEqual(['none', 'gzip', 'snappy', 'lz4', 'zstd'].flatMap((c) => Array.from({ length: 50 }, (_, i) => `${c}-${i}`.repeat(20))))
  })

  it('max.poll.records splits a fetch over polls; seeks and commits see exactly the records handed out, not the buffered or pipelined ones', async () => {
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    await admin.createTopics([{ name: 'buffered', numPartitions: 2, replicationFactor: 1 }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 20, batchSize: 16384, acks: 1 })
    for (const partition of [0, 1]) await producer.sendBatch(Array.from({ length: 1500 }, (_, i) => ({ topic: 'buffered', partition, key: `k${i}`, value: `p${partition}-${i}`, headers: { n: String(i) } })))
    await producer.close()
    const consumer = new Consumer({ bootstrapServers: tb.bootstrap, groupId: 'buffered-g', enableAutoCommit: false, autoOffsetReset: 'earliest', maxPollRecords: 170 })
    consumer.assign([{ topic: 'buffered', partition: 0 }, { topic: 'buffered', partition: 1 }])
    const got = new Map<number, string[]>([[0, []], [1, []]])
    let polls = 0
    // Read a little more than a third, then move partition 0 back and commit: a commit covers what was
    // handed out, whatever the consumer has buffered or has a fetch in flight for.
    while (got.get(0)!.length + got.get(1)!.length < 1000) {
      const batch = await consumer.poll(500)
      polls++
      expect(batch.length).toBeLessThanOrEqual(170)
      for (const r of batch) {
        got.get(r.partition)!.push(r.value!.toString())
        expect(r.key!.toString()).toBe(`k${r.offset}`)
        expect(r.headers).toEqual([{ key: 'n', value: Buffer.from(String(r.offset)) }])
        expect(consumer.position('buffered', r.partition)).toBeGreaterThan(r.offset)
      }
    }
    expect(polls).toBeGreaterThanOrEqual(6)
    for (const [p, values] of got) expect(values).toEqual(Array.from({ length: values.length }, (_, i) => `p${p}-${i}`))
    const handedOut1 = got.get(1)!.length
    expect(consumer.position('buffered', 1)).toBe(handedOut1)
    await consumer.commit()
    const committed = await admin.fetchOffsets('buffered-g')
    expect(committed.get(tpKey('buffered', 1))).toBe(handedOut1)
    expect(committed.get(tpKey('buffered', 0))).toBe(got.get(0)!.length)
    consumer.seek('buffered', 0, 7)
    got.set(0, [])
    while (got.get(0)!.length < 1500 - 7 || got.get(1)!.length < 1500) {
      for (const r of await consumer.poll(500)) got.get(r.partition)!.push(r.value!.toString())
    }
    expect(got.get(0)).toEqual(Array.from({ length: 1493 }, (_, i) => `p0-${i + 7}`))
    expect(got.get(1)).toEqual(Array.from({ length: 1500 }, (_, i) => `p1-${i}`))
    expect(await consumer.poll(50)).toEqual([])
    await consumer.close()
    await admin.close()
  })

  it('retries through a broker restart', async () => {
    const producer = new Producer({ bootstrapServers: tb.bootstrap, retries: 50, retryBackoffMs: 50 })
    await producer.send({ topic: 'restarted', value: 'before' })
    tb = await tb.restart()
    const after = await producer.send({ topic: 'restarted', value: 'after' })
    expect(after.offset).toBe(1)
    await producer.close()
  })

  it('two group members split the partitions, and one takes all when the other leaves', async () => {
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    await admin.createTopics([{ name: 'shared', numPartitions: 4, replicationFactor: 1 }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap })
    await producer.sendBatch([0, 1, 2, 3].map((partition) => ({ topic: 'shared', partition, value: `p${partition}` })))
    await producer.close()
    const mk = (): Consumer => new Consumer({ bootstrapServers: tb.bootstrap, groupId: 'pair', autoOffsetReset: 'earliest', heartbeatIntervalMs: 200, sessionTimeoutMs: 6000, rebalanceTimeoutMs: 10000 })
    const c1 = mk()
    const c2 = mk()
    c1.subscribe(['shared'])
    c2.subscribe(['shared'])
    const seen = new Map<string, string>()
    const deadline = Date.now() + 30000
    // Poll both until the group is stable with two members and every record was read once.
    while (Date.now() < deadline && (seen.size < 4 || c1.assignment().length + c2.assignment().length !== 4 || c1.assignment().length === 0 || c2.assignment().length === 0)) {
      const [r1, r2] = await Promise.all([c1.poll(200), c2.poll(200)])
      for (const r of r1) seen.set(r.value!.toString(), 'c1')
      for (const r of r2) seen.set(r.value!.toString(), 'c2')
    }
    expect(c1.assignment().length).toBe(2)
    expect(c2.assignment().length).toBe(2)
    expect([...seen.keys()].sort()).toEqual(['p0', 'p1', 'p2', 'p3'])
    await c1.commit()
    await c2.commit()
    const [desc] = await admin.describeGroups(['pair'])
    expect(desc!.state).toBe('Stable')
    expect(desc!.members.length).toBe(2)
    expect(desc!.members.flatMap((m) => m.assignment).length).toBe(4)
    await c2.close()
    while (Date.now() < deadline && c1.assignment().length !== 4) await c1.poll(200)
    expect(c1.assignment().length).toBe(4)
    const offsets = await admin.fetchOffsets('pair')
    for (const p of [0, 1, 2, 3]) expect(offsets.get(tpKey('shared', p))).toBe(1)
    await c1.close()
    await admin.close()
  })

  it('admin: cluster, offsets for times, configs, and typed errors', async () => {
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    const cluster = await admin.describeCluster()
    expect(cluster.brokers.map((b) => b.port)).toEqual([tb.port])
    await admin.createTopics([{ name: 'timed', numPartitions: 1, configs: { 'retention.ms': '600000' } }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap })
    const base = Date.now() - 100000
    // One batch each: the broker's time index is per batch.
    for (const t of [1000, 2000, 3000]) await producer.send({ topic: 'timed', value: String(t), timestamp: base + t })
    await producer.close()
    const o = await admin.listOffsets([{ topic: 'timed', partition: 0, timestamp: -2 }])
    expect(o.get(tpKey('timed', 0))!.offset).toBe(0)
    const end = await admin.listOffsets([{ topic: 'timed', partition: 0, timestamp: -1 }])
    expect(end.get(tpKey('timed', 0))!.offset).toBe(3)
    const mid = await admin.listOffsets([{ topic: 'timed', partition: 0, timestamp: base + 1500 }])
    expect(mid.get(tpKey('timed', 0))!.offset).toBe(1)
    const [cfg] = await admin.describeConfigs([{ type: 'topic', name: 'timed', keys: ['retention.ms'] }])
    expect(cfg!.configs).toEqual([expect.objectContaining({ name: 'retention.ms', value: '600000', source: 'DYNAMIC_TOPIC_CONFIG' })])
    await admin.alterConfigs({ type: 'topic', name: 'timed' }, [{ op: 'delete', name: 'retention.ms' }])
    const [after] = await admin.describeConfigs([{ type: 'topic', name: 'timed', keys: ['retention.ms'] }])
    expect(after!.configs[0]!.source).not.toBe('DYNAMIC_TOPIC_CONFIG')
    const err = await admin.createTopics([{ name: 'timed', numPartitions: 1 }]).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(KafkaError)
    expect((err as KafkaError).code).toBe(ErrorCode.TOPIC_ALREADY_EXISTS)
    await expect(admin.describeTopics(['missing'])).rejects.toThrow(/topic 'missing' does not exist/)
    // Kafka's replicasAssignments: the partitions and their replicas as given.
    const id = cluster.brokers[0]!.nodeId
    await admin.createTopics([{ name: 'assigned', replicaAssignment: [[id], [id], [id]] }])
    const [assigned] = await admin.describeTopics(['assigned'])
    expect(assigned!.partitions.map((p) => p.replicas)).toEqual([[id], [id], [id]])
    const unknown = await admin.createTopics([{ name: 'unassignable', replicaAssignment: [[id + 100]] }]).catch((e: unknown) => e)
    expect(unknown).toBeInstanceOf(KafkaError)
    await admin.close()
  })
})

/**
 * A scripted broker: answers ApiVersions and Metadata, and NOT_LEADER_OR_FOLLOWER to every Produce. Its
 * first Metadata answer names itself leader; later ones name `next` (the real broker) as node 7.
 */
async function fakeBroker(next: { host: string; port: number }): Promise<{ server: Server; port: number; produces: number; metadatas: number }> {
  const state = { server: null as unknown as Server, port: 0, produces: 0, metadatas: 0 }
  const server = createServer((sock: Socket) => {
    let buf = Buffer.alloc(0)
    sock.on('error', () => {})
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const frame = buf.subarray(4, 4 + buf.readInt32BE(0))
        buf = buf.subarray(4 + frame.length)
        const r = new Reader(frame)
        const h = readRequestHeader(r)
        const v = h.requestApiVersion
        let out
        if (h.requestApiKey === ApiKey.ApiVersions) {
          const res = ApiVersions.createApiVersionsResponse({ apiKeys: [ApiKey.ApiVersions, ApiKey.Metadata, ApiKey.Produce].map((apiKey) => ApiVersions.createApiVersion({ apiKey, minVersion: 0, maxVersion: apiKey === ApiKey.Produce ? 7 : apiKey === ApiKey.Metadata ? 9 : 3 })) })
          out = encodeResponseFrame(18, v, h.correlationId, (w) => ApiVersions.encodeApiVersionsResponse(w, res, v))
        } else if (h.requestApiKey === ApiKey.Metadata) {
          const req = Metadata.decodeMetadataRequest(r, v)
          const self = state.metadatas++ === 0
          const node = self ? { nodeId: 0, host: '127.0.0.1', port: state.port } : { nodeId: 7, host: next.host, port: next.port }
          const res = Metadata.createMetadataResponse({
            brokers: [Metadata.createMetadataResponseBroker(node)],
            controllerId: node.nodeId,
            topics: (req.topics ?? []).map((t) => Metadata.createMetadataResponseTopic({ name: t.name, partitions: [Metadata.createMetadataResponsePartition({ partitionIndex: 0, leaderId: node.nodeId, replicaNodes: [node.nodeId], isrNodes: [node.nodeId] })] })),
          })
          out = encodeResponseFrame(3, v, h.correlationId, (w) => Metadata.encodeMetadataResponse(w, res, v))
        } else {
          const req = Produce.decodeProduceRequest(r, v)
          state.produces++
          const res = Produce.createProduceResponse({ responses: req.topicData.map((t) => Produce.createTopicProduceResponse({ name: t.name, partitionResponses: t.partitionData.map((p) => Produce.createPartitionProduceResponse({ index: p.index, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER })) })) })
          out = encodeResponseFrame(0, v, h.correlationId, (w) => Produce.encodeProduceResponse(w, res, v))
        }
        for (const c of out.chunks) sock.write(c as Buffer)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.server = server
  state.port = (server.address() as { port: number }).port
  return state
}

describe('leadership changes', () => {
  let tb: TestBroker
  beforeAll(async () => {
    tb = await startTestBroker()
  })
  afterAll(async () => {
    await tb?.stop()
  })

  it('NOT_LEADER_OR_FOLLOWER refreshes the metadata and the batch goes to the new leader', async () => {
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    await admin.createTopics([{ name: 'moved', numPartitions: 1, replicationFactor: 1 }])
    await admin.close()
    const fake = await fakeBroker({ host: tb.host, port: tb.port })
    // The scripted broker does not serve InitProducerId: this producer is not idempotent.
    const producer = new Producer({ bootstrapServers: `127.0.0.1:${fake.port}`, retryBackoffMs: 20, enableIdempotence: false })
    const meta = await producer.send({ topic: 'moved', value: 'rerouted' })
    expect(meta).toEqual(expect.objectContaining({ topic: 'moved', partition: 0, offset: 0 }))
    expect(fake.produces).toBe(1)
    expect(fake.metadatas).toBeGreaterThanOrEqual(2)
    await producer.close()
    await new Promise((resolve) => fake.server.close(resolve))
    const raw = await RawClient.connect(tb.host, tb.port)
    const data = await raw.fetch('moved', 0, 0)
    raw.socket.destroy()
    expect(decodeBatches(data.records as Buffer)[0]!.records[0]!.value!.toString()).toBe('rerouted')
  })
})
