// Transactions with librdkafka 2.0.2 through python3-confluent-kafka 1.7.0 (FindCoordinator v2 key type
// 1, InitProducerId v3, AddPartitionsToTxn v0, AddOffsetsToTxn v0, TxnOffsetCommit v3 with group
// metadata (KIP-447), EndTxn v1; Fetch v11 with isolation.level): committed transactions are visible to
// read_committed consumers, aborted ones only to read_uncommitted ones; a consume-transform-produce loop
// with send_offsets_to_transaction leaves the output equal to the transformed input and the group's
// committed offsets at the input's end. The Python side is test/integration/python/confluent_txn.py.
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { hasPythonModule, INSTALL_HINT, runOk, startTestBroker, SYSTEM_PYTHON, type TestBroker } from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'python', 'confluent_txn.py')
const AVAILABLE = hasPythonModule('confluent_kafka')
const OVERRIDES = ['transaction.state.log.num.partitions=3', 'offsets.topic.num.partitions=3', 'group.initial.rebalance.delay.ms=0']
let tb: TestBroker
let admin: any

async function py(op: string, req: Record<string, unknown>, timeoutMs = 90_000): Promise<any> {
  const r = await runOk(SYSTEM_PYTHON, [SCRIPT, op], { input: JSON.stringify({ bootstrap: tb.bootstrap, ...req }), timeoutMs })
  const out = JSON.parse(r.stdout.toString())
  if (out.error !== undefined) throw new Error(`confluent_txn.py ${op}: ${out.error}`)
  return out
}

beforeAll(async () => {
  if (!AVAILABLE) return
  tb = await startTestBroker(OVERRIDES)
  admin = new Kafka({ clientId: 'txn-admin', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING }).admin()
  await admin.connect()
})

afterAll(async () => {
  await admin?.disconnect()
  await tb?.stop()
})

describe.skipIf(!AVAILABLE)(`confluent-kafka (librdkafka) transactions${AVAILABLE ? '' : ` (skipped: python3-confluent-kafka missing; ${INSTALL_HINT})`}`, () => {
  it('read_committed consumers see committed transactions only, read_uncommitted ones see aborted records too', async () => {
    await admin.createTopics({ topics: [{ topic: 'py-vis', numPartitions: 2 }] })
    await py('produce', {
      topic: 'py-vis',
      transactional_id: 'py-vis-tx',
      transactions: [
        { values: ['c1', 'c2'], commit: true },
        { values: ['a1', 'a2', 'a3'], commit: false },
        { values: ['c3'], commit: true },
      ],
    })
    const committed = await py('consume', { topic: 'py-vis', group: 'py-rc', isolation: 'read_committed', expected: 3 })
    expect(committed.values.sort()).toEqual(['c1', 'c2', 'c3'])
    const all = await py('consume', { topic: 'py-vis', group: 'py-ru', isolation: 'read_uncommitted', expected: 6 })
    expect(all.values.sort()).toEqual(['a1', 'a2', 'a3', 'c1', 'c2', 'c3'])
    const described = await (await tb.broker.transactions.coordinator()).describeTransactions(['py-vis-tx'])
    expect(described[0]).toMatchObject({ errorCode: 0, state: 'CompleteCommit' })
  })

  it('consume-transform-produce with send_offsets_to_transaction: output = transformed input, offsets at the end', async () => {
    const N = 40
    await admin.createTopics({ topics: [{ topic: 'py-in', numPartitions: 2 }, { topic: 'py-out', numPartitions: 2 }] })
    const producer = new Kafka({ clientId: 'feeder', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING }).producer()
    await producer.connect()
    await producer.send({ topic: 'py-in', messages: Array.from({ length: N }, (_, i) => ({ key: `k${i % 5}`, value: `rec-${i}` })) })
    await producer.disconnect()
    const res = await py('copy', { input: 'py-in', output: 'py-out', group: 'py-copier', transactional_id: 'py-copier-tx', expected: N, batch: 7 })
    expect(res.copied).toBe(N)
    expect(res.transactions).toBeGreaterThan(1)
    const out = await py('consume', { topic: 'py-out', group: 'py-out-reader', isolation: 'read_committed', expected: N })
    expect(out.values.sort()).toEqual(Array.from({ length: N }, (_, i) => `REC-${i}`).sort())
    // The offsets went in with the transactions and are committed now (both partitions at their end).
    const offsets = await admin.fetchOffsets({ groupId: 'py-copier', topics: ['py-in'] })
    const ends = await admin.fetchTopicOffsets('py-in')
    const committed = offsets[0].partitions.map((p: any) => [p.partition, p.offset]).sort()
    expect(committed).toEqual(ends.map((e: any) => [e.partition, e.high]).sort())
  })
})
