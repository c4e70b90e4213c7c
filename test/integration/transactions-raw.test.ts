// The transaction APIs over raw frames at their served versions: InitProducerId with a transactional id
// (timeouts, PRODUCER_FENCED vs INVALID_PRODUCER_EPOCH by version), AddPartitionsToTxn v0-3 (unknown
// partitions, fencing), AddOffsetsToTxn, EndTxn v1-3, TxnOffsetCommit v1-3 and OffsetFetch v7
// requireStable, DescribeTransactions v0 and ListTransactions v0-1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as InitProducerId from '../../src/protocol/messages/22-init-producer-id.gen.js'
import * as AddPartitionsToTxn from '../../src/protocol/messages/24-add-partitions-to-txn.gen.js'
import * as AddOffsetsToTxn from '../../src/protocol/messages/25-add-offsets-to-txn.gen.js'
import * as EndTxn from '../../src/protocol/messages/26-end-txn.gen.js'
import * as TxnOffsetCommit from '../../src/protocol/messages/28-txn-offset-commit.gen.js'
import * as OffsetFetch from '../../src/protocol/messages/09-offset-fetch.gen.js'
import * as DescribeTransactions from '../../src/protocol/messages/65-describe-transactions.gen.js'
import * as ListTransactions from '../../src/protocol/messages/66-list-transactions.gen.js'
import { transactionPartition } from '../../src/coordinator/transaction/txn-coordinator.js'
import { CONTROL_MASK } from '../../src/protocol/records/index.js'
import { decodeRecords } from '../../src/protocol/records/builder.js'
import { RawClient, batchOf, recordsBuffer, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let raw: RawClient

beforeAll(async () => {
  tb = await startTestBroker(['transaction.state.log.num.partitions=2', 'offsets.topic.num.partitions=2', 'transaction.max.timeout.ms=60000'])
  raw = await RawClient.connect(tb.host, tb.port)
  await tb.broker.topics.create({ name: 'rt', numPartitions: 2, replicationFactor: 1, configs: {}, validateOnly: false })
})

afterAll(async () => {
  raw?.close()
  await tb?.stop()
})

const init = (v: number, p: Partial<InitProducerId.InitProducerIdRequest>) =>
  raw.call(22, v, (w) => InitProducerId.encodeInitProducerIdRequest(w, InitProducerId.createInitProducerIdRequest({ transactionTimeoutMs: 30000, producerId: -1n, producerEpoch: -1, ...p }), v), InitProducerId.decodeInitProducerIdResponse)

function addPartitions(v: number, id: string, pid: bigint, epoch: number, topics: { name: string; partitions: number[] }[]) {
  const req = AddPartitionsToTxn.createAddPartitionsToTxnRequest({ v3AndBelowTransactionalId: id, v3AndBelowProducerId: pid, v3AndBelowProducerEpoch: epoch, v3AndBelowTopics: topics.map((t) => AddPartitionsToTxn.createAddPartitionsToTxnTopic(t)) })
  return raw.call(24, v, (w) => AddPartitionsToTxn.encodeAddPartitionsToTxnRequest(w, req, v), AddPartitionsToTxn.decodeAddPartitionsToTxnResponse)
}

const codes = (r: AddPartitionsToTxn.AddPartitionsToTxnResponse) => r.resultsByTopicV3AndBelow.flatMap((t) => t.resultsByPartition.map((p) => `${t.name}-${p.partitionIndex}:${p.partitionErrorCode}`))

const endTxn = (v: number, id: string, pid: bigint, epoch: number, committed: boolean) =>
  raw.call(26, v, (w) => EndTxn.encodeEndTxnRequest(w, EndTxn.createEndTxnRequest({ transactionalId: id, producerId: pid, producerEpoch: epoch, committed }), v), EndTxn.decodeEndTxnResponse)

describe('transaction APIs over raw frames', () => {
  it('InitProducerId: timeouts checked, epochs bumped, old producers fenced (INVALID_PRODUCER_EPOCH before v4)', async () => {
    expect((await init(1, { transactionalId: 'r1', transactionTimeoutMs: 60001 })).errorCode).toBe(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    expect((await init(1, { transactionalId: 'r1', transactionTimeoutMs: 0 })).errorCode).toBe(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    const a = await init(1, { transactionalId: 'r1' })
    expect(a).toMatchObject({ errorCode: 0, producerEpoch: 0 })
    const b = await init(3, { transactionalId: 'r1' })
    const c = await init(3, { transactionalId: 'r1' })
    expect([b.producerId, b.producerEpoch, c.producerEpoch]).toEqual([a.producerId, 1, 2])
    expect((await init(3, { transactionalId: 'r1', producerId: a.producerId, producerEpoch: 0 })).errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH)
  })

  it('AddPartitionsToTxn v0-3, EndTxn v1-3: unknown partitions, fencing by version, commit and retried commit', async () => {
    const { producerId, producerEpoch } = await init(3, { transactionalId: 'r2' })
    expect(codes(await addPartitions(1, 'r2', producerId, producerEpoch, [{ name: 'rt', partitions: [0, 7] }, { name: 'nope', partitions: [0] }]))).toEqual([
      `rt-0:${ErrorCode.OPERATION_NOT_ATTEMPTED}`,
      `rt-7:${ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}`,
      `nope-0:${ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}`,
    ])
    for (const v of [0, 3]) expect(codes(await addPartitions(v, 'r2', producerId, producerEpoch, [{ name: 'rt', partitions: [v === 0 ? 0 : 1] }]))).toEqual([`rt-${v === 0 ? 0 : 1}:0`])
    expect(codes(await addPartitions(1, 'r2', producerId, producerEpoch - 1, [{ name: 'rt', partitions: [0] }]))).toEqual([`rt-0:${ErrorCode.INVALID_PRODUCER_EPOCH}`])
    expect(codes(await addPartitions(2, 'r2', producerId, producerEpoch - 1, [{ name: 'rt', partitions: [0] }]))).toEqual([`rt-0:${ErrorCode.PRODUCER_FENCED}`])
    expect(codes(await addPartitions(3, 'r2', producerId + 1n, producerEpoch, [{ name: 'rt', partitions: [0] }]))).toEqual([`rt-0:${ErrorCode.INVALID_PRODUCER_ID_MAPPING}`])
    const described = await raw.call(65, 0, (w) => DescribeTransactions.encodeDescribeTransactionsRequest(w, DescribeTransactions.createDescribeTransactionsRequest({ transactionalIds: ['r2', 'unknown'] }), 0), DescribeTransactions.decodeDescribeTransactionsResponse)
    expect(described.transactionStates[0]).toMatchObject({ errorCode: 0, transactionState: 'Ongoing', producerId, producerEpoch, topics: [{ topic: 'rt', partitions: [0, 1] }] })
    expect(described.transactionStates[1]).toMatchObject({ transactionalId: 'unknown', errorCode: ErrorCode.TRANSACTIONAL_ID_NOT_FOUND })
    expect((await endTxn(1, 'r2', producerId, producerEpoch - 1, true)).errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH)
    expect((await endTxn(3, 'r2', producerId, producerEpoch - 1, true)).errorCode).toBe(ErrorCode.PRODUCER_FENCED)
    expect((await endTxn(3, 'r2', producerId, producerEpoch, true)).errorCode).toBe(0)
    const coordinator = await tb.broker.transactions.coordinator()
    await coordinator.completionsIdle()
    expect((await endTxn(1, 'r2', producerId, producerEpoch, true)).errorCode).toBe(0) // a retry
    expect((await endTxn(1, 'r2', producerId, producerEpoch, false)).errorCode).toBe(ErrorCode.INVALID_TXN_STATE)
  })

  it('AddOffsetsToTxn + TxnOffsetCommit v1-3: pending offsets answer UNSTABLE_OFFSET_COMMIT to requireStable OffsetFetch until the commit', async () => {
    const { producerId, producerEpoch } = await init(3, { transactionalId: 'r3' })
    const addOffsets = await raw.call(25, 1, (w) => AddOffsetsToTxn.encodeAddOffsetsToTxnRequest(w, AddOffsetsToTxn.createAddOffsetsToTxnRequest({ transactionalId: 'r3', producerId, producerEpoch, groupId: 'rg' }), 1), AddOffsetsToTxn.decodeAddOffsetsToTxnResponse)
    expect(addOffsets.errorCode).toBe(0)
    for (const v of [1, 2, 3]) {
      const req = TxnOffsetCommit.createTxnOffsetCommitRequest({
        transactionalId: 'r3', groupId: 'rg', producerId, producerEpoch, generationId: -1, memberId: '', groupInstanceId: null,
        topics: [TxnOffsetCommit.createTxnOffsetCommitRequestTopic({ name: 'rt', partitions: [TxnOffsetCommit.createTxnOffsetCommitRequestPartition({ partitionIndex: 0, committedOffset: BigInt(10 * v), committedLeaderEpoch: -1, committedMetadata: null })] })],
      })
      const res = await raw.call(28, v, (w) => TxnOffsetCommit.encodeTxnOffsetCommitRequest(w, req, v), TxnOffsetCommit.decodeTxnOffsetCommitResponse)
      expect(res.topics[0]!.partitions[0]!.errorCode).toBe(0)
    }
    const fetch = (requireStable: boolean) =>
      raw.call(9, 7, (w) => OffsetFetch.encodeOffsetFetchRequest(w, OffsetFetch.createOffsetFetchRequest({ groupId: 'rg', topics: [OffsetFetch.createOffsetFetchRequestTopic({ name: 'rt', partitionIndexes: [0] })], requireStable }), 7), OffsetFetch.decodeOffsetFetchResponse)
    expect((await fetch(true)).topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT })
    expect((await fetch(false)).topics[0]!.partitions[0]).toMatchObject({ errorCode: 0, committedOffset: -1n })
    expect((await endTxn(3, 'r3', producerId, producerEpoch, true)).errorCode).toBe(0)
    await (await tb.broker.transactions.coordinator()).completionsIdle()
    expect((await fetch(true)).topics[0]!.partitions[0]).toMatchObject({ errorCode: 0, committedOffset: 30n })
  })

  it('ListTransactions v0-1: state, producer id and duration filters; unknown states reported', async () => {
    const list = (v: number, p: Partial<ListTransactions.ListTransactionsRequest>) =>
      raw.call(66, v, (w) => ListTransactions.encodeListTransactionsRequest(w, ListTransactions.createListTransactionsRequest({ durationFilter: -1n, ...p }), v), ListTransactions.decodeListTransactionsResponse)
    const all = await list(0, {})
    expect(all.transactionStates.map((t) => t.transactionalId).sort()).toEqual(['r1', 'r2', 'r3'])
    const committed = await list(1, { stateFilters: ['CompleteCommit', 'Bogus'] })
    expect(committed.unknownStateFilters).toEqual(['Bogus'])
    expect(committed.transactionStates.map((t) => t.transactionalId).sort()).toEqual(['r2', 'r3'])
    const r1 = all.transactionStates.find((t) => t.transactionalId === 'r1')!
    expect((await list(1, { producerIdFilters: [r1.producerId] })).transactionStates.map((t) => t.transactionalId)).toEqual(['r1'])
    expect((await list(1, { durationFilter: 3_600_000n })).transactionStates).toEqual([])
  })
  it("markers carry the coordinator epoch (the __transaction_state partition's leader epoch); a marker from an older coordinator epoch is refused", async () => {
    const { producerId, producerEpoch } = await init(3, { transactionalId: 'r-epoch' })
    expect(codes(await addPartitions(3, 'r-epoch', producerId, producerEpoch, [{ name: 'rt', partitions: [1] }]))).toEqual(['rt-1:0'])
    const records = batchOf([{ key: Buffer.from('k'), value: Buffer.from('v') }], { producerId: Number(producerId), producerEpoch, baseSequence: 0, transactional: true })
    expect((await raw.produce('rt', 1, records)).errorCode).toBe(0)
    expect((await endTxn(3, 'r-epoch', producerId, producerEpoch, true)).errorCode).toBe(0)
    await (await tb.broker.transactions.coordinator()).completionsIdle()
    const meta = await raw.metadata(['__transaction_state'])
    const txnPartition = meta.topics[0]!.partitions.find((p) => p.partitionIndex === transactionPartition('r-epoch', 2))!
    // The marker is the last batch of rt-1: a control batch of the producer, its value the EndTxnMarker
    // (version int16 0, coordinatorEpoch int32).
    const buf = recordsBuffer(await raw.fetch('rt', 1, 0))
    let last = 0
    for (let pos = 0; pos < buf.length; pos += 12 + buf.readInt32BE(pos + 8)) last = pos
    const markerBatch = buf.subarray(last)
    expect(markerBatch.readInt16BE(21) & CONTROL_MASK).toBe(CONTROL_MASK)
    const value = decodeRecords(markerBatch)[0]!.value!
    expect(value.readInt16BE(0)).toBe(0)
    expect(value.readInt32BE(2)).toBe(txnPartition.leaderEpoch)
    // The partition fences an older coordinator epoch than the last one it saw for this producer.
    const newer = txnPartition.leaderEpoch + 5
    const [ok] = await tb.broker.partitions.writeTxnMarkers([{ topic: 'rt', partition: 1, producerId: Number(producerId), producerEpoch, coordinatorEpoch: newer, commit: false }])
    expect(ok!.ok).toBe(true)
    const [fenced] = await tb.broker.partitions.writeTxnMarkers([{ topic: 'rt', partition: 1, producerId: Number(producerId), producerEpoch, coordinatorEpoch: newer - 1, commit: false }])
    expect(fenced).toMatchObject({ ok: false, errorCode: ErrorCode.TRANSACTION_COORDINATOR_FENCED })
  })
})
