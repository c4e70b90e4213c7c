// Transactions on a compacted topic, through the broker's own cleaner timer: once a transaction's
// records are gone (superseded or aborted), the next pass stamps its COMMIT/ABORT marker with a delete
// horizon and one after the horizon removes it (Kafka's delete.retention.ms rule); a marker whose
// records are still there stays; a
// read_committed consumer (kafkajs) still sees exactly the committed latest values, never the aborted one.
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeBatches, RawClient, recordsBuffer, startTestBroker, type TestBroker } from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

const TOPIC = 'txn-compacted'
let tb: TestBroker
let kafka: any
let raw: RawClient

beforeAll(async () => {
  tb = await startTestBroker(['log.cleaner.backoff.ms=100', 'transaction.state.log.num.partitions=1', 'offsets.topic.num.partitions=1'])
  kafka = new Kafka({ clientId: 'skein-txn-compaction', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1000 } })
  raw = await RawClient.connect(tb.host, tb.port)
})

afterAll(async () => {
  raw?.close()
  await tb?.stop()
})

/** Every batch of the partition from offset 0, through Fetch (read_uncommitted: markers included). */
async function batches(): Promise<{ baseOffset: number; control: boolean; keys: string[] }[]> {
  const out: { baseOffset: number; control: boolean; keys: string[] }[] = []
  let offset = 0
  for (let round = 0; round < 100; round++) {
    const p = await raw.fetch(TOPIC, 0, offset, { maxWaitMs: 0, partitionMaxBytes: 1 << 20 })
    const got = decodeBatches(recordsBuffer(p))
    if (got.length === 0) break
    for (const b of got) {
      // A control batch's one record has a binary key (version, type); data records here have text keys.
      const control = b.records.length === 1 && b.records[0]!.key !== null && b.records[0]!.key.length === 4 && b.records[0]!.key.readInt16BE(0) === 0 && b.records[0]!.key.readInt16BE(2) <= 1
      out.push({ baseOffset: b.baseOffset, control, keys: control ? [] : b.records.map((r) => r.key!.toString()) })
      offset = b.lastOffset + 1
    }
    if (BigInt(offset) >= p.highWatermark) break
  }
  return out
}

describe('transaction markers on a compacted topic', () => {
  it('markers of transactions without records left are removed after delete.retention.ms; read_committed consumers see the same values', async () => {
    const admin = kafka.admin()
    await admin.connect()
    await admin.createTopics({
      topics: [{ topic: TOPIC, numPartitions: 1, configEntries: [
        { name: 'cleanup.policy', value: 'compact' },
        { name: 'segment.bytes', value: '1024' },
        { name: 'min.cleanable.dirty.ratio', value: '0.01' },
        { name: 'delete.retention.ms', value: '500' },
      ] }],
    })
    await admin.disconnect()

    const producer = kafka.producer({ transactionalId: 'txn-compaction', maxInFlightRequests: 1, idempotent: true })
    await producer.connect()
    const inTxn = async (messages: { key: string; value: string }[], commit: boolean): Promise<void> => {
      const txn = await producer.transaction()
      await txn.send({ topic: TOPIC, messages })
      await (commit ? txn.commit() : txn.abort())
    }
    await inTxn([{ key: 'a', value: 'a1' }], true)
    await inTxn([{ key: 'b', value: 'b-aborted' }], false)
    await inTxn([{ key: 'a', value: 'a2' }], true)
    await inTxn([{ key: 'c', value: 'c1' }], true)
    // Plain records: they supersede a1 and a2, and roll the transactions out of the active segment.
    const plain = kafka.producer()
    await plain.connect()
    await plain.send({ topic: TOPIC, messages: [{ key: 'a', value: 'a-plain' }] })
    for (let i = 0; i < 12; i++) await plain.send({ topic: TOPIC, messages: [{ key: `filler-${i % 3}`, value: 'x'.repeat(200) }] })
    await plain.disconnect()
    await producer.disconnect()

    const before = await batches()
    expect(before.filter((b) => b.control)).toHaveLength(4)
    const markers = before.filter((b) => b.control).map((b) => b.baseOffset)
    // The cleaner timer, pass 1: a1, a2 and the aborted b go; their markers were walked with them and stay
    // (not asserted: the fillers sent after a pass may already bring the next ones).
    const deadline = Date.now() + 60_000
    const waitFor = async (what: string, cond: (log: Awaited<ReturnType<typeof batches>>) => boolean) => {
      for (;;) {
        const log = await batches()
        if (cond(log)) return log
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(log)}`)
        await sleep(200)
      }
    }
    await waitFor('the first cleaning', (log) => log.flatMap((b) => b.keys).filter((k) => k === 'a' || k === 'b').length === 1)
    // As in Kafka, a marker is stamped by a later pass, which more writes bring (the dirty ratio); one
    // after its horizon (delete.retention.ms) drops it, the cleaner taking the log up for that by itself.
    // c1's commit stays: its record is still there (and it is the producer's last batch).
    const more = kafka.producer()
    await more.connect()
    for (let i = 0; i < 8; i++) await more.send({ topic: TOPIC, messages: [{ key: `filler-${i % 3}`, value: 'y'.repeat(200) }] })
    await more.disconnect()
    const after = await waitFor('the markers to go', (log) => log.filter((b) => b.control).length === 1)
    expect(after.filter((b) => b.control).map((b) => b.baseOffset)).toEqual([markers[3]])
    expect(after.flatMap((b) => b.keys)).not.toContain('b')

    const values = new Map<string, string>()
    const consumer = kafka.consumer({ groupId: 'txn-compaction-reader', readUncommitted: false, maxWaitTimeInMs: 100 })
    await consumer.connect()
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true })
    let seen = 0
    await consumer.run({ eachMessage: async ({ message }: any) => {
      seen++
      values.set(message.key.toString(), message.value.toString())
    } })
    const total = after.reduce((n, b) => n + b.keys.length, 0)
    while (seen < total && Date.now() < deadline + 30_000) await sleep(50)
    await consumer.disconnect()
    expect(values.get('a')).toBe('a-plain')
    expect(values.get('c')).toBe('c1')
    expect(values.has('b')).toBe(false)
  }, 120_000)
})
