// The transactional producer (transactional.id) against a real broker: a committed transaction is visible
// to read_committed readers (Skein's consumer and kafkajs as an independent one) and an aborted one is
// not; sendOffsetsToTransaction commits a consumer group's offsets with the records, or not at all
// (consume-transform-produce with Skein's consumer in a group); a second producer with the same
// transactional.id fences the first (fatal PRODUCER_FENCED, its open transaction aborted); a batch the
// broker refuses makes the transaction abortable, and the abort bumps the epoch (KIP-360) so the next
// transaction commits; calls out of order are refused; through a proxy that cuts connections the
// committed records are there exactly once.
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer, IllegalStateError, Producer, ProducerStateError, TransactionAbortedError, type ConsumedRecord } from '../../src/client/index.js'
import { fetchCommittedOffsets } from '../../src/client/group.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { freePort, RawClient, startTestBroker, type TestBroker } from '../harness/index.js'
import { SabotagingProxy } from '../harness/proxy.js'
import { consumeAll, headersOf } from './eos-helpers.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

const OVERRIDES = ['transaction.state.log.num.partitions=3', 'offsets.topic.num.partitions=3', 'group.initial.rebalance.delay.ms=0', 'group.min.session.timeout.ms=1000']

let tb: TestBroker
let proxy: SabotagingProxy
let raw: RawClient
let admin: Admin

beforeAll(async () => {
  const proxyPort = await freePort()
  tb = await startTestBroker([...OVERRIDES, `advertised.listeners=PLAINTEXT://127.0.0.1:${proxyPort}`])
  const brokerPort = tb.broker.bound[0]!.port
  proxy = await SabotagingProxy.start(proxyPort, () => brokerPort)
  raw = await RawClient.connect(tb.host, brokerPort)
  // tb.bootstrap names the advertised port: the proxy.
  admin = new Admin({ bootstrapServers: tb.bootstrap })
})

afterAll(async () => {
  await admin?.close()
  raw?.close()
  await proxy?.close()
  await tb?.stop()
})

function producer(transactionalId: string, extra: Partial<ConstructorParameters<typeof Producer>[0]> = {}): Producer {
  return new Producer({ bootstrapServers: tb.bootstrap, transactionalId, lingerMs: 2, retryBackoffMs: 20, ...extra })
}

/** What kafkajs, an independent client, reads from the start of a topic as a read_committed (or not) group member. */
async function kafkajsValues(topic: string, expected: number, readUncommitted = false): Promise<string[]> {
  const kafka = new Kafka({ clientId: 'skein-txn-check', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING })
  const consumer = kafka.consumer({ groupId: `check-${topic}-${readUncommitted}-${Date.now()}`, readUncommitted, maxWaitTimeInMs: 100, sessionTimeout: 6000 })
  const values: string[] = []
  await consumer.connect()
  try {
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }: any) => void values.push(message.value.toString()) })
    const deadline = Date.now() + 20_000
    while (values.length < expected && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    await new Promise((r) => setTimeout(r, 300))
  } finally {
    await consumer.disconnect()
  }
  return values
}

const valuesOf = (records: readonly ConsumedRecord[]): string[] => records.map((r) => r.value!.toString())

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p
  } catch (err) {
    return err as Error
  }
  throw new Error('expected a rejection')
}

describe('transactional producer', () => {
  it('commits are visible to read_committed readers (Skein and kafkajs), aborts are not', async () => {
    const topic = 'txn-visibility'
    await admin.createTopics([{ name: topic, numPartitions: 2, replicationFactor: 1 }])
    const p = producer('visibility')
    await p.initTransactions()
    expect(p.transactionState).toBe('READY')
    const aborted: Error[] = []
    for (let t = 0; t < 4; t++) {
      p.beginTransaction()
      const sends = [0, 1, 2].map((i) => p.send({ topic, partition: i % 2, key: `k${i}`, value: `${t % 2 === 0 ? 'commit' : 'abort'}-${t}-${i}` }))
      if (t % 2 === 0) {
        await p.commitTransaction()
        await Promise.all(sends)
      } else {
        // Acknowledged first, so that the records are in the log and the abort marker must hide them.
        await Promise.all(sends)
        await p.abortTransaction()
      }
      expect(p.transactionState).toBe('READY')
    }
    // An abort before the records went out fails them instead.
    p.beginTransaction()
    const unsent = rejection(p.send({ topic, partition: 0, value: 'never' }))
    await p.abortTransaction()
    aborted.push(await unsent)
    expect(aborted[0]).toBeInstanceOf(TransactionAbortedError)
    await p.close()

    const committed = ['commit-0-0', 'commit-0-1', 'commit-0-2', 'commit-2-0', 'commit-2-1', 'commit-2-2']
    const skein = await consumeAll(tb.bootstrap, topic, [0, 1], 6, 'read_committed')
    expect(valuesOf(skein).sort()).toEqual(committed)
    expect((await kafkajsValues(topic, 6)).sort()).toEqual(committed)
    // read_uncommitted sees the aborted records as well (they are in the log).
    const everything = await consumeAll(tb.bootstrap, topic, [0, 1], 12, 'read_uncommitted')
    expect(valuesOf(everything).sort()).toEqual([...committed, 'abort-1-0', 'abort-1-1', 'abort-1-2', 'abort-3-0', 'abort-3-1', 'abort-3-2'].sort())
    // The batches are transactional, and each transaction ends with a control batch (its marker); the
    // last abort has one too if the partition had joined that transaction before the abort. (The readers
    // above saw the last commit, so its marker is there.)
    const hs = await headersOf(raw, topic, 0)
    expect(hs.filter((h) => !h.control).every((h) => h.transactional)).toBe(true)
    expect(hs.filter((h) => h.control).length).toBeGreaterThanOrEqual(4)
    expect(hs.filter((h) => h.control).length).toBeLessThanOrEqual(5)
  })

  it('close() aborts a transaction still open, as the Java client does', async () => {
    const topic = 'txn-close'
    await admin.createTopics([{ name: topic, numPartitions: 1, replicationFactor: 1 }])
    const p = producer('closer')
    await p.initTransactions()
    p.beginTransaction()
    await p.send({ topic, partition: 0, value: 'left-open' })
    await p.close()
    expect(p.transactionState).toBe('READY')
    // The coordinator writes the abort marker once EndTxn is answered.
    let hs = await headersOf(raw, topic, 0)
    for (const until = Date.now() + 5000; hs.length < 2 && Date.now() < until; hs = await headersOf(raw, topic, 0)) await new Promise((r) => setTimeout(r, 20))
    expect(hs.map((h) => h.control)).toEqual([false, true])
    expect(valuesOf(await consumeAll(tb.bootstrap, topic, [0], 1, 'read_uncommitted'))).toEqual(['left-open'])
    expect(await consumeAll(tb.bootstrap, topic, [0], 0, 'read_committed')).toEqual([])
  })

  it('sendOffsetsToTransaction commits the group offsets with the output, or neither (consume-transform-produce)', async () => {
    await admin.createTopics([
      { name: 'txn-in', numPartitions: 1, replicationFactor: 1 },
      { name: 'txn-out', numPartitions: 1, replicationFactor: 1 },
    ])
    const input = new Producer({ bootstrapServers: tb.bootstrap })
    await Promise.all(Array.from({ length: 10 }, (_, i) => input.send({ topic: 'txn-in', partition: 0, value: `in-${i}` })))
    await input.close()

    const consumer = new Consumer({ bootstrapServers: tb.bootstrap, groupId: 'copier', enableAutoCommit: false, autoOffsetReset: 'earliest', isolationLevel: 'read_committed', fetchMaxWaitMs: 100, sessionTimeoutMs: 6000 })
    consumer.subscribe(['txn-in'])
    const p = producer('copier')
    await p.initTransactions()
    const committedOffset = async (): Promise<number | undefined> => (await fetchCommittedOffsets(consumer.cluster, 'copier', [{ topic: 'txn-in', partition: 0 }])).get('txn-in\u00000')

    // Copy the first 4 records and commit; then copy the rest and abort.
    const take = async (n: number): Promise<ConsumedRecord[]> => {
      const out: ConsumedRecord[] = []
      const deadline = Date.now() + 20_000
      while (out.length < n && Date.now() < deadline) out.push(...(await consumer.poll(200)))
      return out
    }
    const copy = async (records: ConsumedRecord[], commit: boolean): Promise<void> => {
      p.beginTransaction()
      for (const r of records) p.append('txn-out', 0, null, Buffer.from(`copy-of-${r.value!.toString()}`), undefined)
      const next = records[records.length - 1]!.offset + 1
      const group = consumer.groupMetadata()
      expect(group.generationId).toBeGreaterThan(0)
      expect(group.memberId).not.toBe('')
      const before = await committedOffset()
      await p.sendOffsetsToTransaction([{ topic: 'txn-in', partition: 0, offset: next }], group)
      // Pending until the transaction ends: not visible as the group's offset yet.
      expect(await committedOffset()).toBe(before)
      if (commit) await p.commitTransaction()
      else await p.abortTransaction()
    }
    await p.topicInfo('txn-out')
    const first = await take(10)
    expect(first.length).toBe(10)
    expect(await committedOffset()).toBeUndefined()
    await copy(first.slice(0, 4), true)
    // The coordinator applies the offsets when the commit marker reaches __consumer_offsets, just after EndTxn.
    const visibleBy = Date.now() + 5000
    while ((await committedOffset()) !== 4 && Date.now() < visibleBy) await new Promise((r) => setTimeout(r, 20))
    expect(await committedOffset()).toBe(4)
    await copy(first.slice(4), false)
    // The abort left the group's offset where the last commit put it.
    await new Promise((r) => setTimeout(r, 200))
    expect(await committedOffset()).toBe(4)
    await p.close()
    await consumer.close({ commit: false })

    const out = await consumeAll(tb.bootstrap, 'txn-out', [0], 4, 'read_committed')
    expect(valuesOf(out)).toEqual(['copy-of-in-0', 'copy-of-in-1', 'copy-of-in-2', 'copy-of-in-3'])
    expect((await kafkajsValues('txn-out', 4)).sort()).toEqual(['copy-of-in-0', 'copy-of-in-1', 'copy-of-in-2', 'copy-of-in-3'])
    // A new member of the group starts where the committed transaction left it.
    const next = new Consumer({ bootstrapServers: tb.bootstrap, groupId: 'copier', enableAutoCommit: false, isolationLevel: 'read_committed', fetchMaxWaitMs: 100, sessionTimeoutMs: 6000 })
    next.subscribe(['txn-in'])
    const rest: ConsumedRecord[] = []
    const deadline = Date.now() + 20_000
    while (rest.length < 6 && Date.now() < deadline) rest.push(...(await next.poll(200)))
    await next.close({ commit: false })
    expect(valuesOf(rest)).toEqual(['in-4', 'in-5', 'in-6', 'in-7', 'in-8', 'in-9'])
  })

  it('a second producer with the same transactional.id fences the first: fatal PRODUCER_FENCED, its transaction aborted', async () => {
    const topic = 'txn-zombie'
    await admin.createTopics([{ name: topic, numPartitions: 2, replicationFactor: 1 }])
    const zombie = producer('zombie')
    await zombie.initTransactions()
    const zombieEpoch = zombie.producerIdAndEpoch!.producerEpoch
    zombie.beginTransaction()
    await zombie.send({ topic, partition: 0, value: 'from-the-zombie' })

    const successor = producer('zombie')
    await successor.initTransactions()
    expect(successor.producerIdAndEpoch!.producerId).toBe(zombie.producerIdAndEpoch!.producerId)
    expect(successor.producerIdAndEpoch!.producerEpoch).toBeGreaterThan(zombieEpoch)

    // The zombie learns on its next transactional request (here adding partition 1, then the commit).
    const late = zombie.send({ topic, partition: 1, value: 'too-late' })
    const err = await rejection(zombie.commitTransaction())
    expect(err).toBeInstanceOf(ProducerStateError)
    expect((err as ProducerStateError).code).toBe(ErrorCode.PRODUCER_FENCED)
    expect((err as ProducerStateError).fatal).toBe(true)
    expect(zombie.transactionState).toBe('FATAL_ERROR')
    expect(await rejection(late)).toBeInstanceOf(Error)
    // Everything after is refused with the same fatal error; only close() remains.
    const after = await rejection(zombie.send({ topic, partition: 0, value: 'after' }))
    expect((after as ProducerStateError).fatal).toBe(true)
    expect(() => zombie.beginTransaction()).toThrow(ProducerStateError)
    await expect(zombie.abortTransaction()).rejects.toMatchObject({ code: ErrorCode.PRODUCER_FENCED })
    await zombie.close()

    successor.beginTransaction()
    await successor.send({ topic, partition: 0, value: 'from-the-successor' })
    await successor.commitTransaction()
    await successor.close()
    expect(valuesOf(await consumeAll(tb.bootstrap, topic, [0, 1], 1, 'read_committed'))).toEqual(['from-the-successor'])
  })

  it('a zombie whose records are refused (INVALID_PRODUCER_EPOCH) gets an abortable error, then a fatal one on abort', async () => {
    const topic = 'txn-zombie-produce'
    await admin.createTopics([{ name: topic, numPartitions: 1, replicationFactor: 1 }])
    const zombie = producer('zombie-produce')
    await zombie.initTransactions()
    zombie.beginTransaction()
    await zombie.send({ topic, partition: 0, value: 'first' })
    const successor = producer('zombie-produce')
    await successor.initTransactions()
    // The partition is already in the zombie's transaction: the batch goes straight to the partition,
    // whose producer state the successor's fencing moved to a newer epoch.
    const refused = await rejection(zombie.send({ topic, partition: 0, value: 'second' }))
    expect(refused).toMatchObject({ code: ErrorCode.INVALID_PRODUCER_EPOCH })
    expect(zombie.transactionState).toBe('ABORTABLE_ERROR')
    const commit = await rejection(zombie.commitTransaction())
    expect(commit).toMatchObject({ code: ErrorCode.INVALID_PRODUCER_EPOCH, fatal: false })
    const abort = await rejection(zombie.abortTransaction())
    expect(abort).toMatchObject({ code: ErrorCode.PRODUCER_FENCED, fatal: true })
    await zombie.close()
    await successor.close()
  })

  it('a refused batch makes the transaction abortable; the abort bumps the epoch and the next transaction commits', async () => {
    const topic = 'txn-abortable'
    await admin.createTopics([{ name: topic, numPartitions: 1, replicationFactor: 1, configs: { 'max.message.bytes': '2000' } }])
    const p = producer('abortable', { lingerMs: 0 })
    await p.initTransactions()
    const { producerId, producerEpoch } = p.producerIdAndEpoch!
    p.beginTransaction()
    await p.send({ topic, partition: 0, value: 'small' })
    const big = await rejection(p.send({ topic, partition: 0, value: 'x'.repeat(5000) }))
    expect(big).toMatchObject({ code: ErrorCode.MESSAGE_TOO_LARGE })
    expect(p.transactionState).toBe('ABORTABLE_ERROR')
    // New records are refused at once, and commit says why.
    const refused = await rejection(p.send({ topic, partition: 0, value: 'refused' }))
    expect(refused).toMatchObject({ fatal: false })
    await expect(p.commitTransaction()).rejects.toMatchObject({ code: ErrorCode.MESSAGE_TOO_LARGE, fatal: false })
    await p.abortTransaction()
    expect(p.transactionState).toBe('READY')
    expect(p.producerIdAndEpoch).toEqual({ producerId, producerEpoch: producerEpoch + 1 })
    p.beginTransaction()
    await p.send({ topic, partition: 0, value: 'after-the-bump' })
    await p.commitTransaction()
    await p.close()
    expect(valuesOf(await consumeAll(tb.bootstrap, topic, [0], 1, 'read_committed'))).toEqual(['after-the-bump'])
    const batches = (await headersOf(raw, topic, 0)).filter((h) => !h.control)
    expect(batches.map((h) => [h.producerEpoch, h.baseSequence])).toEqual([
      [producerEpoch, 0],
      [producerEpoch + 1, 0],
    ])
  })

  it('refuses calls out of order', async () => {
    const p = producer('out-of-order')
    const noInit = await rejection(p.send({ topic: 'txn-visibility', partition: 0, value: 'x' }))
    expect(noInit).toBeInstanceOf(IllegalStateError)
    expect(() => p.beginTransaction()).toThrow(/before initTransactions/)
    await p.initTransactions()
    await expect(p.initTransactions()).rejects.toThrow(IllegalStateError)
    await expect(p.commitTransaction()).rejects.toThrow(/outside a transaction/)
    await expect(p.sendOffsetsToTransaction([], 'g')).rejects.toThrow(/outside a transaction/)
    expect((await rejection(p.send({ topic: 'txn-visibility', partition: 0, value: 'x' }))).message).toMatch(/beginTransaction/)
    p.beginTransaction()
    expect(() => p.beginTransaction()).toThrow(/not finished/)
    // A transaction with nothing in it commits without a word to the coordinator.
    await p.commitTransaction()
    await p.close()
    const plain = new Producer({ bootstrapServers: tb.bootstrap })
    await expect(plain.initTransactions()).rejects.toThrow(/transactional.id/)
    expect(() => plain.beginTransaction()).toThrow(IllegalStateError)
    await plain.close()
  })

  it('commits exactly once through cut connections', async () => {
    const topic = 'txn-sabotaged'
    await admin.createTopics([{ name: topic, numPartitions: 2, replicationFactor: 1 }])
    const p = producer('sabotaged', { lingerMs: 0, batchSize: 200, requestTimeoutMs: 1500 })
    await p.initTransactions()
    await p.topicInfo(topic)
    const fates = ['cut-request', 'cut-answer', 'corrupt'] as const
    let k = 0
    proxy.policy = (n) => (n % 7 === 0 ? fates[k++ % fates.length]! : 'pass')
    const want: string[] = []
    try {
      for (let t = 0; t < 6; t++) {
        p.beginTransaction()
        for (let i = 0; i < 200; i++) {
          const value = `t${t}-${i}`
          p.append(topic, i % 2, null, Buffer.from(value), undefined)
          want.push(value)
        }
        await p.commitTransaction()
      }
    } finally {
      proxy.policy = () => 'pass'
      await p.close()
    }
    expect(proxy.sabotaged).toBeGreaterThanOrEqual(3)
    const got = await consumeAll(tb.bootstrap, topic, [0, 1], want.length, 'read_committed')
    for (const partition of [0, 1]) {
      expect(valuesOf(got.filter((r) => r.partition === partition))).toEqual(want.filter((_, i) => i % 2 === partition))
    }
  }, 120_000)
})
