import { describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { ManualClock } from '../../src/coordinator/runtime/clock.js'
import { InMemoryPartitionWriter } from '../../src/coordinator/runtime/partition-writer.js'
import { TransactionCoordinator, transactionPartition } from '../../src/coordinator/transaction/txn-coordinator.js'
import { CoordinatorRecordError, TxnStatus, decodeTransactionKey, decodeTransactionValue, encodeTransactionKey, encodeTransactionValue } from '../../src/coordinator/transaction/transaction-log-records.js'
import { decodeTransactionLogValueRecord, encodeTransactionLogValueRecord } from '../../src/coordinator/transaction/generated/records.gen.js'
import { createTransactionLogValue } from '../../src/coordinator/transaction/generated/transaction-log-value.gen.js'
import type { TransactionCoordinatorConfig, TxnMarkerItem, TxnMarkerWriter } from '../../src/coordinator/transaction/types.js'
import { quietLog } from './helpers.js'

const CONFIG: TransactionCoordinatorConfig = {
  transactionStatePartitions: 3,
  maxTimeoutMs: 900_000,
  transactionalIdExpirationMs: 7 * 24 * 3600_000,
  abortTimedOutTransactionsIntervalMs: 10_000,
  removeExpiredTransactionalIdsIntervalMs: 3600_000,
}

/**
 * Markers as a partition's producer state takes them (storage/producer-state.ts checkMarker): one from an
 * older coordinator epoch than the partition has seen for the producer is refused. `holdNext` parks the
 * next call only (a request in flight).
 */
class FencingMarkers implements TxnMarkerWriter {
  written: TxnMarkerItem[] = []
  refused: TxnMarkerItem[] = []
  readonly #seen = new Map<string, number>()
  holdNext: Promise<void> | null = null
  async writeMarkers(items: readonly TxnMarkerItem[]): Promise<{ errorCode: number }[]> {
    const hold = this.holdNext
    this.holdNext = null
    if (hold !== null) await hold
    return items.map((i) => {
      const k = `${i.topic}-${i.partition}-${i.producerId}`
      if (i.coordinatorEpoch < (this.#seen.get(k) ?? -1)) {
        this.refused.push(i)
        return { errorCode: ErrorCode.TRANSACTION_COORDINATOR_FENCED }
      }
      this.#seen.set(k, i.coordinatorEpoch)
      this.written.push(i)
      return { errorCode: ErrorCode.NONE }
    })
  }
}

/** Records every marker; `failures` makes the next N calls fail the given partitions. */
class FakeMarkers implements TxnMarkerWriter {
  written: TxnMarkerItem[] = []
  failTimes = 0
  hold: Promise<void> | null = null
  async writeMarkers(items: readonly TxnMarkerItem[]): Promise<{ errorCode: number }[]> {
    if (this.hold !== null) await this.hold
    if (this.failTimes > 0) {
      this.failTimes--
      return items.map(() => ({ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER }))
    }
    this.written.push(...items)
    return items.map((i) => ({ errorCode: i.topic === 'deleted' ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.NONE }))
  }
}

async function setup<M extends TxnMarkerWriter = FakeMarkers>(opts: { writer?: InMemoryPartitionWriter; clock?: ManualClock; markers?: M; nextId?: { n: number }; partitionEpoch?: (p: number) => number } = {}) {
  const clock = opts.clock ?? new ManualClock()
  const writer = opts.writer ?? new InMemoryPartitionWriter()
  const markers = (opts.markers ?? new FakeMarkers()) as M
  const ids = opts.nextId ?? { n: 1000 }
  const coordinator = new TransactionCoordinator({ config: CONFIG, partitionEpoch: opts.partitionEpoch, writer, markers, producerIds: { nextProducerId: async () => ids.n++ }, clock, log: quietLog })
  await coordinator.loadAll()
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 5; i++) {
      await coordinator.runtime.idle()
      clock.advance(0)
      await new Promise((r) => setImmediate(r))
    }
  }
  return { clock, writer, markers, coordinator, settle }
}

describe('__transaction_state records', () => {
  it('writes key v0 and value v1 (flexible, previous producer id tagged) byte for byte as Kafka 4.x lays them out; reads v0', () => {
    const key = encodeTransactionKey('tx-1')
    expect(key.toString('hex')).toBe('0000' + '0004' + Buffer.from('tx-1').toString('hex'))
    expect(decodeTransactionKey(key)).toBe('tx-1')
    const v = { producerId: 7, previousProducerId: 6, nextProducerId: -1, producerEpoch: 3, transactionTimeoutMs: 60000, status: TxnStatus.Ongoing, partitions: [{ topic: 'a', partitions: [0, 2] }], lastUpdateTimestamp: 1000, startTimestamp: 900, clientTransactionVersion: 0 }
    const buf = encodeTransactionValue(v)
    // version 1, pid, epoch, timeout, status, compact array of 1 topic ("a", [0,2], no tags), two
    // timestamps, then one tagged field (PreviousProducerId, tag 0, 8 bytes); fields at their defaults
    // (NextProducerId -1, ClientTransactionVersion 0) are left out, as Kafka's generated code does.
    expect(buf.toString('hex')).toBe(
      '0001' + '0000000000000007' + '0003' + '0000ea60' + '01' + '02' + '0261' + '03' + '00000000' + '00000002' + '00' + '00000000000003e8' + '0000000000000384' + '01' + '00' + '08' + '0000000000000006',
    )
    expect(decodeTransactionValue(buf)).toEqual(v)
    // An Empty transaction has null partitions (Kafka writes them so).
    const empty = encodeTransactionValue({ ...v, status: TxnStatus.Empty, partitions: [], startTimestamp: -1 })
    expect(decodeTransactionLogValueRecord(empty).value.transactionPartitions).toBeNull()
    // Version 0 (Kafka before transaction.version 1): no previous producer id.
    const v0 = encodeTransactionLogValueRecord(
      createTransactionLogValue({ producerId: 7n, producerEpoch: 3, transactionTimeoutMs: 60000, transactionStatus: TxnStatus.Ongoing, transactionPartitions: [{ topic: 'a', partitionIds: [0, 2] }], transactionLastUpdateTimestampMs: 1000n, transactionStartTimestampMs: 900n }),
      0,
    )
    // version, pid, epoch, timeout, status, 1 topic ("a", [0,2]), two timestamps
    expect(v0.length).toBe(2 + 8 + 2 + 4 + 1 + 4 + (2 + 1 + 4 + 8) + 16)
    expect(decodeTransactionValue(v0)).toEqual({ ...v, previousProducerId: -1 })
  })

  it('reads the flexible v1 value and rejects truncated or oversized input', () => {
    // v1: compact array (n+1), compact string, tagged fields after each struct
    const parts = [
      Buffer.from([0, 1]),
      Buffer.from('0000000000000009', 'hex'),
      Buffer.from([0, 1]),
      Buffer.from('0000ea60', 'hex'),
      Buffer.from([4]),
      Buffer.from([2, 2, 0x74, 2, 0, 0, 0, 5, 0]), // 1 topic: "t" [5], no tags
      Buffer.from('00000000000003e8', 'hex'),
      Buffer.from('ffffffffffffffff', 'hex'),
      // Two tagged fields: PreviousProducerId (tag 0, int64 8) and one this codec does not know (tag 5, 1 byte).
      Buffer.from([2, 0, 8, 0, 0, 0, 0, 0, 0, 0, 8, 5, 1, 0x42]),
    ]
    const v = decodeTransactionValue(Buffer.concat(parts))
    expect(v).toEqual({ producerId: 9, previousProducerId: 8, nextProducerId: -1, producerEpoch: 1, transactionTimeoutMs: 60000, status: TxnStatus.CompleteCommit, partitions: [{ topic: 't', partitions: [5] }], lastUpdateTimestamp: 1000, startTimestamp: -1, clientTransactionVersion: 0 })
    const good = encodeTransactionValue({ ...v, status: TxnStatus.Ongoing })
    expect(() => decodeTransactionValue(good.subarray(0, good.length - 3))).toThrow(/bytes/)
    const huge = Buffer.concat([good.subarray(0, 17), Buffer.from([0xff, 0xff, 0xff, 0xff, 0x07]), good.subarray(18)]) // partition array count ~2^31
    expect(() => decodeTransactionValue(huge)).toThrow(/bytes/)
    expect(() => decodeTransactionKey(Buffer.from([0, 1, 0, 0]))).toThrow(/version/)
    // A known tag must hold its type: PreviousProducerId (tag 0) in 1 byte is malformed.
    const badTag = Buffer.concat([...parts.slice(0, -1), Buffer.from([1, 0, 1, 0x42])])
    expect(() => decodeTransactionValue(badTag)).toThrow(CoordinatorRecordError)
  })

  it('encodes v1 with the tagged producer fields through the generated codec (for KIP-360/890 records)', () => {
    const value = createTransactionLogValue({
      producerId: 9n,
      previousProducerId: 8n,
      nextProducerId: -1n,
      producerEpoch: 0,
      transactionTimeoutMs: 60000,
      transactionStatus: TxnStatus.CompleteCommit,
      transactionPartitions: null,
      transactionLastUpdateTimestampMs: 1000n,
      transactionStartTimestampMs: -1n,
      clientTransactionVersion: 2,
    })
    const buf = encodeTransactionLogValueRecord(value, 1)
    expect(buf.toString('hex')).toBe(
      '0001' + '0000000000000009' + '0000' + '0000ea60' + '04' + '00' + '00000000000003e8' + 'ffffffffffffffff' + '02' + '0008' + '0000000000000008' + '0202' + '0002',
    )
    expect(decodeTransactionLogValueRecord(buf)).toEqual({ version: 1, value })
    // The coordinator's own view of the same bytes.
    expect(decodeTransactionValue(buf)).toMatchObject({ producerId: 9, previousProducerId: 8, nextProducerId: -1, clientTransactionVersion: 2, status: TxnStatus.CompleteCommit, partitions: [] })
    // Version 0 cannot carry them.
    expect(() => encodeTransactionLogValueRecord(value, 0)).toThrow(/not supported in version 0/)
  })
})

describe('TransactionCoordinator', () => {
  it('places a transactional id as Kafka does (abs(hashCode) % partitions)', () => {
    // "Aa" and "BB" share Java's hashCode 2112.
    expect(transactionPartition('Aa', 50)).toBe(2112 % 50)
    expect(transactionPartition('BB', 50)).toBe(2112 % 50)
  })

  it('InitProducerId: a new id at epoch 0, the same id with epoch + 1 on the next init; bad timeouts refused', async () => {
    const { coordinator } = await setup()
    expect(await coordinator.initProducerId('t1', 60000, null)).toEqual({ errorCode: ErrorCode.NONE, producerId: 1000, producerEpoch: 0 })
    expect(await coordinator.initProducerId('t1', 60000, null)).toEqual({ errorCode: ErrorCode.NONE, producerId: 1000, producerEpoch: 1 })
    expect(await coordinator.initProducerId('t2', 60000, null)).toEqual({ errorCode: ErrorCode.NONE, producerId: 1001, producerEpoch: 0 })
    expect((await coordinator.initProducerId('t1', 900_001, null)).errorCode).toBe(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    expect((await coordinator.initProducerId('t1', 0, null)).errorCode).toBe(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    expect(await coordinator.initProducerId('t1', 60000, null)).toEqual({ errorCode: ErrorCode.NONE, producerId: 1000, producerEpoch: 2 })
    // KIP-360: naming an older epoch is fenced; naming the current one bumps; retrying that bump gets the same answer.
    expect((await coordinator.initProducerId('t1', 60000, { producerId: 1000, producerEpoch: 0 })).errorCode).toBe(ErrorCode.PRODUCER_FENCED)
    expect(await coordinator.initProducerId('t1', 60000, { producerId: 1000, producerEpoch: 2 })).toEqual({ errorCode: ErrorCode.NONE, producerId: 1000, producerEpoch: 3 })
    expect(await coordinator.initProducerId('t1', 60000, { producerId: 1000, producerEpoch: 2 })).toEqual({ errorCode: ErrorCode.NONE, producerId: 1000, producerEpoch: 3 })
  })

  it('KIP-360 producer id rotation: the record carries the previous producer id, a retry naming it gets the same answer, a reload keeps it', async () => {
    // A transactional id whose epoch is exhausted (Short.MAX_VALUE - 1), as its last record says.
    const writer = new InMemoryPartitionWriter()
    const p = transactionPartition('rot', CONFIG.transactionStatePartitions)
    const exhausted = 0x7fff - 1
    await writer.append(p, [
      { key: encodeTransactionKey('rot'), value: encodeTransactionValue({ producerId: 1000, previousProducerId: 1000, nextProducerId: -1, producerEpoch: exhausted, transactionTimeoutMs: 60000, status: TxnStatus.CompleteCommit, partitions: [], lastUpdateTimestamp: 0, startTimestamp: 5, clientTransactionVersion: 0 }) },
    ])
    const { coordinator } = await setup({ writer, nextId: { n: 2000 } })
    // Naming the exhausted epoch rotates to a new id at epoch 0.
    expect(await coordinator.initProducerId('rot', 60000, { producerId: 1000, producerEpoch: exhausted })).toEqual({ errorCode: ErrorCode.NONE, producerId: 2000, producerEpoch: 0 })
    const last = writer.records(p).at(-1)!
    expect(decodeTransactionLogValueRecord(last.value!).version).toBe(1)
    expect(decodeTransactionValue(last.value!)).toMatchObject({ producerId: 2000, previousProducerId: 1000, producerEpoch: 0, status: TxnStatus.Empty })
    // The producer lost the answer and retries with its old id and epoch: the same answer, no new id.
    expect(await coordinator.initProducerId('rot', 60000, { producerId: 1000, producerEpoch: exhausted })).toEqual({ errorCode: ErrorCode.NONE, producerId: 2000, producerEpoch: 0 })
    // The previous id with an epoch that was not exhausted is a zombie (Kafka's isValidProducerId).
    expect((await coordinator.initProducerId('rot', 60000, { producerId: 1000, producerEpoch: 5 })).errorCode).toBe(ErrorCode.PRODUCER_FENCED)
    // The new producer bumps normally; the record then names the id it came from (the same one).
    expect(await coordinator.initProducerId('rot', 60000, { producerId: 2000, producerEpoch: 0 })).toEqual({ errorCode: ErrorCode.NONE, producerId: 2000, producerEpoch: 1 })
    expect(decodeTransactionValue(writer.records(p).at(-1)!.value!)).toMatchObject({ producerId: 2000, previousProducerId: 2000, producerEpoch: 1 })
    coordinator.close()
    // A reload rebuilds the previous producer id from the records (the epoch before the bump is memory
    // only, as in Kafka: no version of TransactionLogValue at this commit carries it).
    const again = await setup({ writer, nextId: { n: 3000 } })
    expect(await again.coordinator.runtime.read(p, (s) => s.txns.get('rot'))).toMatchObject({ producerId: 2000, previousProducerId: 2000, producerEpoch: 1 })
  })

  it('markers carry the coordinator epoch the __transaction_state partition is loaded in', async () => {
    const { coordinator, markers, settle } = await setup({ partitionEpoch: (p) => 7 + p })
    const p = transactionPartition('tx', CONFIG.transactionStatePartitions)
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 60000, null)
    await coordinator.addPartitions('tx', producerId, producerEpoch, [{ topic: 'a', partition: 0 }, { topic: 'b', partition: 1 }])
    await coordinator.endTxn('tx', producerId, producerEpoch, true)
    await settle()
    await coordinator.completionsIdle()
    expect(markers.written.map((m) => m.coordinatorEpoch)).toEqual([7 + p, 7 + p])
    expect(await coordinator.status('tx')).toBe(TxnStatus.CompleteCommit)
  })

  it('a coordinator loaded again in a newer epoch finishes the transaction; the late marker of the older epoch is fenced and its completion stops', async () => {
    const markers = new FencingMarkers()
    let epoch = 1
    const { coordinator, writer, settle } = await setup({ markers, partitionEpoch: () => epoch })
    const p = transactionPartition('tx', CONFIG.transactionStatePartitions)
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 60000, null)
    await coordinator.addPartitions('tx', producerId, producerEpoch, [{ topic: 'a', partition: 0 }])
    // The epoch-1 completion's marker request is in flight when the partition is elected again (epoch 2).
    let release!: () => void
    markers.holdNext = new Promise((r) => (release = r))
    await coordinator.endTxn('tx', producerId, producerEpoch, false)
    await settle()
    epoch = 2
    await coordinator.runtime.load(p, 2)
    // The reload found PrepareAbort and completes it in epoch 2.
    await settle()
    expect(await coordinator.status('tx')).toBe(TxnStatus.CompleteAbort)
    expect(markers.written.map((m) => m.coordinatorEpoch)).toEqual([2])
    // The epoch-1 marker lands late: the partition refuses it, and that completion writes nothing more.
    release()
    await settle()
    await coordinator.completionsIdle()
    await settle()
    expect(markers.refused.map((m) => m.coordinatorEpoch)).toEqual([1])
    const completes = writer.records(p).filter((r) => r.value !== null && decodeTransactionValue(r.value).status === TxnStatus.CompleteAbort)
    expect(completes).toHaveLength(1)
    // Loading in the same or an older epoch changes nothing.
    await coordinator.runtime.load(p, 1)
    expect(coordinator.runtime.activeEpoch(p)).toBe(2)
  })

  it('commit: Ongoing -> PrepareCommit -> markers on every partition -> CompleteCommit', async () => {
    const { coordinator, markers, writer, clock } = await setup()
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 60000, null)
    expect(await coordinator.addPartitions('tx', producerId, producerEpoch, [{ topic: 'a', partition: 0 }, { topic: 'a', partition: 1 }])).toBe(ErrorCode.NONE)
    expect(await coordinator.addPartitions('tx', producerId, producerEpoch, [{ topic: 'b', partition: 0 }, { topic: 'a', partition: 1 }])).toBe(ErrorCode.NONE)
    const [described] = await coordinator.describeTransactions(['tx'])
    expect(described!.state).toBe('Ongoing')
    expect(described!.topics).toEqual([{ topic: 'a', partitions: [0, 1] }, { topic: 'b', partitions: [0] }])
    markers.hold = new Promise(() => {})
    expect((await coordinator.endTxn('tx', producerId, producerEpoch, true)).errorCode).toBe(ErrorCode.NONE)
    expect(await coordinator.status('tx')).toBe(TxnStatus.PrepareCommit)
    // While markers are written the next transaction must wait.
    // (AddPartitionsToTxn first waits up to a second for the markers)
    const add = coordinator.addPartitions('tx', producerId, producerEpoch, [{ topic: 'a', partition: 0 }])
    await coordinator.runtime.idle()
    await new Promise((r) => setImmediate(r))
    clock.advance(1000)
    expect(await add).toBe(ErrorCode.CONCURRENT_TRANSACTIONS)
    expect((await coordinator.endTxn('tx', producerId, producerEpoch, true)).errorCode).toBe(ErrorCode.CONCURRENT_TRANSACTIONS)
    markers.hold = null
    coordinator.close()
    // (the held completion never finishes; a fresh coordinator over the same log finishes it: restart mid-commit)
    const again = await setup({ writer, markers })
    await again.settle()
    expect(await again.coordinator.status('tx')).toBe(TxnStatus.CompleteCommit)
    expect(markers.written.map((m) => `${m.topic}-${m.partition}:${m.commit}:${m.producerId}/${m.producerEpoch}`).sort()).toEqual([`a-0:true:${producerId}/0`, `a-1:true:${producerId}/0`, `b-0:true:${producerId}/0`])
    // A retried EndTxn(commit) is answered NONE, an abort of the committed transaction is refused.
    expect((await again.coordinator.endTxn('tx', producerId, producerEpoch, true)).errorCode).toBe(ErrorCode.NONE)
    expect((await again.coordinator.endTxn('tx', producerId, producerEpoch, false)).errorCode).toBe(ErrorCode.INVALID_TXN_STATE)
  })

  it('markers are retried until written; partitions of deleted topics are dropped', async () => {
    const { coordinator, markers, settle, clock } = await setup()
    const { producerId, producerEpoch } = await coordinator.initProducerId('tx', 60000, null)
    await coordinator.addPartitions('tx', producerId, producerEpoch, [{ topic: 'a', partition: 0 }, { topic: 'deleted', partition: 0 }])
    markers.failTimes = 2
    await coordinator.endTxn('tx', producerId, producerEpoch, false)
    await settle()
    expect(await coordinator.status('tx')).toBe(TxnStatus.PrepareAbort)
    clock.advance(50)
    await settle()
    clock.advance(100)
    await settle()
    expect(await coordinator.status('tx')).toBe(TxnStatus.CompleteAbort)
    expect(markers.written.filter((m) => m.topic === 'a').map((m) => m.commit)).toEqual([false])
  })

  it('producer checks: wrong id, old epoch (zombie), EndTxn without a transaction', async () => {
    const { coordinator, settle } = await setup()
    const first = await coordinator.initProducerId('tx', 60000, null)
    expect(await coordinator.addPartitions('nope', first.producerId, 0, [{ topic: 'a', partition: 0 }])).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    expect(await coordinator.addPartitions('tx', first.producerId + 1, 0, [{ topic: 'a', partition: 0 }])).toBe(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    expect((await coordinator.endTxn('tx', first.producerId, first.producerEpoch, true)).errorCode).toBe(ErrorCode.INVALID_TXN_STATE)
    expect(await coordinator.addPartitions('tx', first.producerId, first.producerEpoch, [{ topic: 'a', partition: 0 }])).toBe(ErrorCode.NONE)
    // A second producer with the same transactional id fences the first and aborts its transaction.
    const second = await coordinator.initProducerId('tx', 60000, null)
    await settle()
    expect(second.errorCode).toBe(ErrorCode.NONE)
    expect(second.producerEpoch).toBe(first.producerEpoch + 2)
    expect(await coordinator.addPartitions('tx', first.producerId, first.producerEpoch, [{ topic: 'a', partition: 1 }])).toBe(ErrorCode.PRODUCER_FENCED)
    expect((await coordinator.endTxn('tx', first.producerId, first.producerEpoch, true)).errorCode).toBe(ErrorCode.PRODUCER_FENCED)
    expect(await coordinator.status('tx')).toBe(TxnStatus.Empty)
  })

  it('fencing writes ABORT markers with the bumped epoch', async () => {
    const { coordinator, markers, settle } = await setup()
    const first = await coordinator.initProducerId('tx', 60000, null)
    await coordinator.addPartitions('tx', first.producerId, first.producerEpoch, [{ topic: 'a', partition: 3 }])
    const second = coordinator.initProducerId('tx', 60000, null)
    await settle()
    expect((await second).producerEpoch).toBe(2)
    expect(markers.written).toEqual([{ topic: 'a', partition: 3, producerId: first.producerId, producerEpoch: 1, coordinatorEpoch: 0, commit: false }])
  })

  it('aborts transactions older than their timeout on the cleanup timer', async () => {
    const { coordinator, markers, clock, settle } = await setup()
    const p = await coordinator.initProducerId('slow', 15_000, null)
    await coordinator.addPartitions('slow', p.producerId, p.producerEpoch, [{ topic: 'a', partition: 0 }])
    clock.advance(10_000)
    await settle()
    expect(await coordinator.status('slow')).toBe(TxnStatus.Ongoing)
    clock.advance(10_000)
    await settle()
    expect(await coordinator.status('slow')).toBe(TxnStatus.CompleteAbort)
    expect(markers.written.map((m) => [m.commit, m.producerEpoch])).toEqual([[false, 1]])
    // The timed-out producer is fenced.
    expect((await coordinator.endTxn('slow', p.producerId, p.producerEpoch, true)).errorCode).toBe(ErrorCode.PRODUCER_FENCED)
  })

  it('expires idle transactional ids after transactional.id.expiration.ms; a reload sees the same state', async () => {
    const { coordinator, clock, settle, writer } = await setup()
    await coordinator.initProducerId('idle', 60000, null)
    const busy = await coordinator.initProducerId('busy', 60000, null)
    await coordinator.addPartitions('busy', busy.producerId, busy.producerEpoch, [{ topic: 'a', partition: 0 }])
    clock.advance(CONFIG.transactionalIdExpirationMs + CONFIG.removeExpiredTransactionalIdsIntervalMs)
    await settle()
    // 'busy' had an open transaction: it timed out and was aborted (its id stays, updated just now).
    const listed = await coordinator.listTransactions({ states: [], producerIds: [], durationMs: -1 })
    expect(listed.transactions.map((t) => [t.transactionalId, t.state])).toEqual([['busy', 'CompleteAbort']])
    coordinator.close()
    const reloaded = await setup({ writer, clock })
    expect((await reloaded.coordinator.describeTransactions(['idle']))[0]!.errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
    expect(await reloaded.coordinator.status('busy')).toBe(TxnStatus.CompleteAbort)
  })

  it('ListTransactions filters by state, producer id and duration; Describe answers unknown ids', async () => {
    const { coordinator, clock } = await setup()
    const a = await coordinator.initProducerId('a', 60000, null)
    const b = await coordinator.initProducerId('b', 60000, null)
    await coordinator.addPartitions('a', a.producerId, a.producerEpoch, [{ topic: 't', partition: 0 }])
    clock.advance(5000)
    const all = await coordinator.listTransactions({ states: [], producerIds: [], durationMs: -1 })
    expect(all.transactions.sort((x, y) => x.transactionalId.localeCompare(y.transactionalId))).toEqual([
      { transactionalId: 'a', producerId: a.producerId, state: 'Ongoing' },
      { transactionalId: 'b', producerId: b.producerId, state: 'Empty' },
    ])
    expect((await coordinator.listTransactions({ states: ['Empty'], producerIds: [], durationMs: -1 })).transactions.map((t) => t.transactionalId)).toEqual(['b'])
    expect((await coordinator.listTransactions({ states: [], producerIds: [a.producerId], durationMs: -1 })).transactions.map((t) => t.transactionalId)).toEqual(['a'])
    expect((await coordinator.listTransactions({ states: [], producerIds: [], durationMs: 4000 })).transactions.map((t) => t.transactionalId)).toEqual(['a'])
    expect((await coordinator.listTransactions({ states: [], producerIds: [], durationMs: 6000 })).transactions).toEqual([])
    const [d] = await coordinator.describeTransactions(['zzz'])
    expect(d!.errorCode).toBe(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
  })
})
