// read_committed over the wire: transactional batches produced with raw frames, COMMIT/ABORT markers
// written through ShardRouter.writeTxnMarkers (what the transaction coordinator does), then Fetch
// (v4 and v12) and ListOffsets with both isolation levels, DescribeProducers, a restart in the middle of
// a transaction, and librdkafka (kcat -X isolation.level=read_committed / read_uncommitted).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as DescribeProducers from '../../src/protocol/messages/61-describe-producers.gen.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as InitProducerId from '../../src/protocol/messages/22-init-producer-id.gen.js'
import * as ListOffsets from '../../src/protocol/messages/02-list-offsets.gen.js'
import { CONTROL_MASK, TRANSACTIONAL_MASK } from '../../src/protocol/records/index.js'
import { RawClient, batchOf, decodeBatches, hasKcat, recordsBuffer, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

const KCAT = hasKcat()
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

async function producerId(): Promise<number> {
  const req = InitProducerId.createInitProducerIdRequest({ transactionalId: null, transactionTimeoutMs: 60000 })
  const res = await raw.call(22, 2, (w) => InitProducerId.encodeInitProducerIdRequest(w, req, 2), InitProducerId.decodeInitProducerIdResponse)
  expect(res.errorCode).toBe(0)
  return Number(res.producerId)
}

function txnBatch(pid: number, seq: number, values: string[]): Buffer {
  return batchOf(values.map((v) => ({ key: Buffer.from('k'), value: Buffer.from(v) })), { producerId: pid, producerEpoch: 0, baseSequence: seq, transactional: true })
}

async function produce(topic: string, records: Buffer): Promise<number> {
  const p = await raw.produce(topic, 0, records)
  expect(p.errorCode).toBe(0)
  return Number(p.baseOffset)
}

async function writeMarker(topic: string, pid: number, commit: boolean): Promise<number> {
  const [o] = await tb.broker.router.writeTxnMarkers([{ topic, partition: 0, producerId: pid, producerEpoch: 0, coordinatorEpoch: 0, commit }])
  if (!o!.ok) throw new Error(o!.message)
  return o!.value.offset
}

async function fetch(topic: string, isolationLevel: number, version = 12, offset = 0): Promise<Fetch.PartitionData> {
  const req = raw.fetchRequest(topic, 0, offset)
  req.isolationLevel = isolationLevel
  if (version < 12) for (const t of req.topics) t.topicId = '00000000-0000-0000-0000-000000000000'
  const res = await raw.call(1, version, (w) => Fetch.encodeFetchRequest(w, req, version), Fetch.decodeFetchResponse)
  return res.responses[0]!.partitions[0]!
}

async function latest(topic: string, isolationLevel: number, version = 5): Promise<number> {
  const req = ListOffsets.createListOffsetsRequest({
    replicaId: -1,
    isolationLevel,
    topics: [ListOffsets.createListOffsetsTopic({ name: topic, partitions: [ListOffsets.createListOffsetsPartition({ partitionIndex: 0, timestamp: -1n, currentLeaderEpoch: -1 })] })],
  })
  const res = await raw.call(2, version, (w) => ListOffsets.encodeListOffsetsRequest(w, req, version), ListOffsets.decodeListOffsetsResponse)
  const p = res.topics[0]!.partitions[0]!
  expect(p.errorCode).toBe(0)
  return Number(p.offset)
}

/** Kafka's consumer rule over a read_committed response: drop aborted transactional batches and markers. */
function committedValues(p: Fetch.PartitionData): string[] {
  const aborted = [...(p.abortedTransactions ?? [])].sort((a, b) => Number(a.firstOffset - b.firstOffset))
  const buf = recordsBuffer(p)
  const abortedPids = new Set<bigint>()
  const out: string[] = []
  let pos = 0
  for (const b of decodeBatches(buf)) {
    const size = 12 + buf.readInt32BE(pos + 8)
    const attributes = buf.readInt16BE(pos + 21)
    const pid = buf.readBigInt64BE(pos + 43)
    pos += size
    while (aborted.length > 0 && Number(aborted[0]!.firstOffset) <= b.lastOffset) abortedPids.add(aborted.shift()!.producerId)
    if ((attributes & CONTROL_MASK) !== 0) {
      if (b.records[0]!.key!.readInt16BE(2) === 0) abortedPids.delete(pid)
      continue
    }
    if ((attributes & TRANSACTIONAL_MASK) !== 0 && abortedPids.has(pid)) continue
    out.push(...b.records.map((r) => r.value!.toString()))
  }
  return out
}

function allValues(p: Fetch.PartitionData): string[] {
  return decodeBatches(recordsBuffer(p)).flatMap((b) => b.records.filter((r) => r.key?.toString() === 'k' || r.key === null).map((r) => r.value!.toString()))
}

describe('read_committed over raw frames', () => {
  it('serves committed transactions, hides aborted and open ones, and moves the LSO with markers', async () => {
    expect((await raw.createTopic('rc', 1)).errorCode).toBe(0)
    const p1 = await producerId()
    const p2 = await producerId()
    await produce('rc', batchOf([{ value: Buffer.from('plain') }])) // 0
    await produce('rc', txnBatch(p1, 0, ['c1', 'c2'])) // 1-2
    await produce('rc', txnBatch(p2, 0, ['a1'])) // 3
    expect(await latest('rc', 0)).toBe(4)
    expect(await latest('rc', 1)).toBe(1)
    expect(await latest('rc', 1, 2)).toBe(1)
    let committed = await fetch('rc', 1)
    expect(Number(committed.lastStableOffset)).toBe(1)
    expect(Number(committed.highWatermark)).toBe(4)
    expect(committedValues(committed)).toEqual(['plain'])
    expect(await writeMarker('rc', p1, true)).toBe(4)
    expect(await writeMarker('rc', p2, false)).toBe(5)
    await produce('rc', txnBatch(p2, 1, ['a2'])) // 6: a new transaction of p2, open
    expect(await latest('rc', 1)).toBe(6)
    committed = await fetch('rc', 1)
    expect(Number(committed.lastStableOffset)).toBe(6)
    expect(committed.abortedTransactions!.map((a) => [Number(a.producerId), Number(a.firstOffset)])).toEqual([[p2, 3]])
    expect(committedValues(committed)).toEqual(['plain', 'c1', 'c2'])
    const v4 = await fetch('rc', 1, 4)
    expect(v4.abortedTransactions!.map((a) => Number(a.firstOffset))).toEqual([3])
    expect(committedValues(v4)).toEqual(['plain', 'c1', 'c2'])
    const uncommitted = await fetch('rc', 0)
    expect(uncommitted.abortedTransactions).toBeNull()
    expect(Number(uncommitted.lastStableOffset)).toBe(6)
    expect(allValues(uncommitted)).toEqual(['plain', 'c1', 'c2', 'a1', 'a2'])
    await writeMarker('rc', p2, false)
    committed = await fetch('rc', 1)
    expect(Number(committed.lastStableOffset)).toBe(8)
    expect(committed.abortedTransactions!.map((a) => Number(a.firstOffset))).toEqual([3, 6])
    expect(committedValues(committed)).toEqual(['plain', 'c1', 'c2'])
    // From offset 4 the first abort (3..5) still overlaps; from 6, past its marker, only the second.
    expect((await fetch('rc', 1, 12, 4)).abortedTransactions!.map((a) => Number(a.firstOffset))).toEqual([3, 6])
    const later = await fetch('rc', 1, 12, 6)
    expect(later.abortedTransactions!.map((a) => Number(a.firstOffset))).toEqual([6])
  })

  it('answers DescribeProducers with each producer\'s epoch, sequence and open transaction', async () => {
    expect((await raw.createTopic('rc-describe', 1)).errorCode).toBe(0)
    const p1 = await producerId()
    await produce('rc-describe', txnBatch(p1, 0, ['x', 'y']))
    const req = DescribeProducers.createDescribeProducersRequest({
      topics: [DescribeProducers.createTopicRequest({ name: 'rc-describe', partitionIndexes: [0, 0, 7] }), DescribeProducers.createTopicRequest({ name: 'nope', partitionIndexes: [0] })],
    })
    const call = () => raw.call(61, 0, (w) => DescribeProducers.encodeDescribeProducersRequest(w, req, 0), DescribeProducers.decodeDescribeProducersResponse)
    let res = await call()
    const [ok, repeat, missing] = res.topics[0]!.partitions
    expect(ok!.errorCode).toBe(0)
    expect(ok!.activeProducers).toEqual([
      expect.objectContaining({ producerId: BigInt(p1), producerEpoch: 0, lastSequence: 1, coordinatorEpoch: -1, currentTxnStartOffset: 0n }),
    ])
    expect(repeat!.errorCode).toBe(ErrorCode.INVALID_REQUEST)
    expect(missing!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    expect(res.topics[1]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    await writeMarker('rc-describe', p1, true)
    res = await call()
    expect(res.topics[0]!.partitions[0]!.activeProducers[0]).toMatchObject({ coordinatorEpoch: 0, currentTxnStartOffset: -1n })
    const apis = await raw.apiVersions()
    expect(apis.apiKeys.find((k) => k.apiKey === 61)).toMatchObject({ minVersion: 0, maxVersion: 0 })
  })

  it('keeps an open transaction (and the LSO) across a restart and completes it after', async () => {
    expect((await raw.createTopic('rc-restart', 1)).errorCode).toBe(0)
    const p1 = await producerId()
    const p2 = await producerId()
    await produce('rc-restart', txnBatch(p1, 0, ['gone'])) // 0
    await writeMarker('rc-restart', p1, false) // 1
    await produce('rc-restart', txnBatch(p2, 0, ['kept'])) // 2, open
    raw.close()
    tb = await tb.restart()
    raw = await RawClient.connect(tb.host, tb.port)
    expect(await latest('rc-restart', 1)).toBe(2)
    expect(committedValues(await fetch('rc-restart', 1))).toEqual([])
    await writeMarker('rc-restart', p2, true)
    const committed = await fetch('rc-restart', 1)
    expect(Number(committed.lastStableOffset)).toBe(4)
    expect(committed.abortedTransactions!.map((a) => Number(a.firstOffset))).toEqual([0])
    expect(committedValues(committed)).toEqual(['kept'])
  })
})

describe.skipIf(!KCAT)('librdkafka (kcat) isolation.level', () => {
  const consume = async (topic: string, isolation: string): Promise<string[]> => {
    const r = await runOk('kcat', [
      '-C', '-b', tb.bootstrap, '-X', 'socket.timeout.ms=10000', '-X', `isolation.level=${isolation}`, '-t', topic, '-p', '0', '-o', 'beginning', '-e', '-f', '%s\\n',
    ], { timeoutMs: 30000 })
    return r.stdout.toString().split('\n').filter((l) => l !== '')
  }

  it('read_committed sees committed transactions only, read_uncommitted sees everything', async () => {
    expect((await raw.createTopic('rc-kcat', 1)).errorCode).toBe(0)
    const p1 = await producerId()
    const p2 = await producerId()
    await produce('rc-kcat', batchOf([{ value: Buffer.from('plain-1') }]))
    await produce('rc-kcat', txnBatch(p1, 0, ['committed-1', 'committed-2']))
    await produce('rc-kcat', txnBatch(p2, 0, ['aborted-1']))
    await produce('rc-kcat', txnBatch(p1, 2, ['committed-3']))
    await writeMarker('rc-kcat', p2, false)
    await writeMarker('rc-kcat', p1, true)
    await produce('rc-kcat', txnBatch(p2, 1, ['aborted-2']))
    await writeMarker('rc-kcat', p2, false)
    await produce('rc-kcat', batchOf([{ value: Buffer.from('plain-2') }]))
    expect(await consume('rc-kcat', 'read_committed')).toEqual(['plain-1', 'committed-1', 'committed-2', 'committed-3', 'plain-2'])
    expect(await consume('rc-kcat', 'read_uncommitted')).toEqual(['plain-1', 'committed-1', 'committed-2', 'aborted-1', 'committed-3', 'aborted-2', 'plain-2'])
  })

  it('read_committed stops at the LSO while a transaction is open', async () => {
    expect((await raw.createTopic('rc-kcat-open', 1)).errorCode).toBe(0)
    const p1 = await producerId()
    await produce('rc-kcat-open', batchOf([{ value: Buffer.from('before') }]))
    await produce('rc-kcat-open', txnBatch(p1, 0, ['pending']))
    await produce('rc-kcat-open', batchOf([{ value: Buffer.from('after') }]))
    expect(await consume('rc-kcat-open', 'read_committed')).toEqual(['before'])
    await writeMarker('rc-kcat-open', p1, true)
    expect(await consume('rc-kcat-open', 'read_committed')).toEqual(['before', 'pending', 'after'])
  })
})
