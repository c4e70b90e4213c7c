// Transactions with kafkajs 2.2.4 (FindCoordinator v2 key type 1, InitProducerId v1, AddPartitionsToTxn
// v1, AddOffsetsToTxn v1, TxnOffsetCommit v1, EndTxn v1; consumers read_committed by default): committed
// transactions are visible to read_committed consumers and aborted ones never are (read_uncommitted
// consumers see both); sendOffsets offsets become visible only on commit; a zombie producer is fenced by
// a new one with the same transactional id; a broker stopped between PrepareCommit and the markers
// completes the commit when it starts again; and a consume-transform-produce copier SIGKILLed at random
// points and restarted copies its input exactly once.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT, startTestBroker, type TestBroker } from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

const OVERRIDES = ['transaction.state.log.num.partitions=3', 'offsets.topic.num.partitions=3', 'group.initial.rebalance.delay.ms=0', 'group.min.session.timeout.ms=1000']

let tb: TestBroker
let kafka: any
let admin: any

function newKafka(): any {
  return new Kafka({ clientId: 'skein-txn', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 100, maxRetryTime: 1000 } })
}

async function waitFor(what: string, cond: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const start = Date.now()
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** Every value of a topic as a group consumer with the given isolation sees it, once `expected` arrived and a quiet period passed. */
async function readAll(topic: string, opts: { readUncommitted: boolean; expected: number }): Promise<string[]> {
  const values: string[] = []
  const consumer = kafka.consumer({ groupId: `reader-${topic}-${opts.readUncommitted}-${Date.now()}`, readUncommitted: opts.readUncommitted, maxWaitTimeInMs: 100, sessionTimeout: 6000 })
  await consumer.connect()
  await consumer.subscribe({ topic, fromBeginning: true })
  await consumer.run({ eachMessage: async ({ message }: any) => void values.push(message.value.toString()) })
  try {
    await waitFor(`${opts.expected} records of ${topic}`, () => values.length >= opts.expected)
    await new Promise((r) => setTimeout(r, 400))
  } finally {
    await consumer.disconnect()
  }
  return values
}

beforeAll(async () => {
  tb = await startTestBroker(OVERRIDES)
  kafka = newKafka()
  admin = kafka.admin()
  await admin.connect()
})

afterAll(async () => {
  await admin?.disconnect()
  await tb?.stop()
})

describe('kafkajs transactions', () => {
  it('read_committed sees committed transactions only; read_uncommitted sees aborted ones too', async () => {
    await admin.createTopics({ topics: [{ topic: 'tx-vis', numPartitions: 2 }] })
    const producer = kafka.producer({ transactionalId: 'vis', maxInFlightRequests: 1, idempotent: true })
    await producer.connect()
    for (let i = 0; i < 4; i++) {
      const txn = await producer.transaction()
      await txn.send({ topic: 'tx-vis', messages: [0, 1, 2].map((j) => ({ key: `k${j}`, value: `${i % 2 === 0 ? 'commit' : 'abort'}-${i}-${j}` })) })
      if (i % 2 === 0) await txn.commit()
      else await txn.abort()
    }
    // A plain record after the last transaction: read_committed must get past the aborted ranges.
    const plain = kafka.producer()
    await plain.connect()
    await plain.send({ topic: 'tx-vis', messages: [{ key: 'k0', value: 'plain' }] })
    await plain.disconnect()
    await producer.disconnect()
    const committed = await readAll('tx-vis', { readUncommitted: false, expected: 7 })
    expect(committed.sort()).toEqual(['commit-0-0', 'commit-0-1', 'commit-0-2', 'commit-2-0', 'commit-2-1', 'commit-2-2', 'plain'])
    const everything = await readAll('tx-vis', { readUncommitted: true, expected: 13 })
    expect(everything.filter((v) => v.startsWith('abort-')).sort()).toEqual(['abort-1-0', 'abort-1-1', 'abort-1-2', 'abort-3-0', 'abort-3-1', 'abort-3-2'])
    expect(everything).toHaveLength(13)
    const [state] = (await describeTransactions(['vis']))
    expect(state).toMatchObject({ errorCode: 0, transactionState: 'CompleteAbort' })
  })

  it('sendOffsets: the group offset becomes visible when the transaction commits, never when it aborts', async () => {
    await admin.createTopics({ topics: [{ topic: 'tx-offs', numPartitions: 1 }] })
    const producer = kafka.producer({ transactionalId: 'offs', maxInFlightRequests: 1, idempotent: true })
    await producer.connect()
    const committedOffset = async (): Promise<string> => (await admin.fetchOffsets({ groupId: 'g-offs', topics: ['tx-offs'] }))[0].partitions[0].offset
    const t1 = await producer.transaction()
    await t1.send({ topic: 'tx-offs', messages: [{ value: 'a' }] })
    await t1.sendOffsets({ consumerGroupId: 'g-offs', topics: [{ topic: 'tx-offs', partitions: [{ partition: 0, offset: '7' }] }] })
    expect(await committedOffset()).toBe('-1') // pending: not visible yet
    await t1.commit()
    await waitFor('the committed offset', async () => (await committedOffset()) === '7', 5000)
    const t2 = await producer.transaction()
    await t2.send({ topic: 'tx-offs', messages: [{ value: 'b' }] })
    await t2.sendOffsets({ consumerGroupId: 'g-offs', topics: [{ topic: 'tx-offs', partitions: [{ partition: 0, offset: '9' }] }] })
    await t2.abort()
    await new Promise((r) => setTimeout(r, 300))
    expect(await committedOffset()).toBe('7')
    await producer.disconnect()
    // The group coordinator rebuilds the same offsets from __consumer_offsets (batches + markers) after a restart.
    await admin.disconnect()
    tb = await tb.restart()
    kafka = newKafka()
    admin = kafka.admin()
    await admin.connect()
    await waitFor('offsets after restart', async () => (await committedOffset().catch(() => 'x')) === '7', 15_000)
  })

  it('a zombie producer is fenced by a new producer with the same transactional id; its open transaction is aborted', async () => {
    await admin.createTopics({ topics: [{ topic: 'tx-zombie', numPartitions: 1 }] })
    const zombie = kafka.producer({ transactionalId: 'zombie', maxInFlightRequests: 1, idempotent: true, retry: { retries: 1, initialRetryTime: 50 } })
    await zombie.connect()
    const zt = await zombie.transaction()
    await zt.send({ topic: 'tx-zombie', messages: [{ value: 'from-zombie' }] })
    const fresh = kafka.producer({ transactionalId: 'zombie', maxInFlightRequests: 1, idempotent: true })
    await fresh.connect()
    // kafkajs sends InitProducerId at the first transaction(): this fences the zombie and aborts its transaction.
    const ft = await fresh.transaction()
    // The zombie can neither write in its old transaction nor commit it.
    await expect(zt.send({ topic: 'tx-zombie', messages: [{ value: 'late-zombie' }] })).rejects.toThrow()
    await expect(zt.commit()).rejects.toThrow(/epoch|fenced/i)
    await ft.send({ topic: 'tx-zombie', messages: [{ value: 'from-fresh' }] })
    await ft.commit()
    await zombie.disconnect().catch(() => {})
    await fresh.disconnect()
    expect(await readAll('tx-zombie', { readUncommitted: false, expected: 1 })).toEqual(['from-fresh'])
  })

  it('a broker stopped between PrepareCommit and the markers completes the commit when it starts again', async () => {
    await admin.createTopics({ topics: [{ topic: 'tx-restart', numPartitions: 2 }] })
    const producer = kafka.producer({ transactionalId: 'restart', maxInFlightRequests: 1, idempotent: true })
    await producer.connect()
    const txn = await producer.transaction()
    await txn.send({ topic: 'tx-restart', messages: [{ key: 'a', value: 'r1' }, { key: 'b', value: 'r2' }, { key: 'c', value: 'r3' }] })
    // Markers never reach the partitions of this broker instance.
    let held = 0
    tb.broker.router.writeTxnMarkers = () => {
      held++
      return new Promise(() => {})
    }
    await txn.commit() // answered once PrepareCommit is durable
    await waitFor('the marker write to start', () => held > 0, 5000)
    expect((await describeTransactions(['restart']))[0]).toMatchObject({ transactionState: 'PrepareCommit' })
    await producer.disconnect()
    await admin.disconnect()
    tb = await tb.restart()
    kafka = newKafka()
    admin = kafka.admin()
    await admin.connect()
    await waitFor('CompleteCommit after restart', async () => (await describeTransactions(['restart']))[0]?.transactionState === 'CompleteCommit', 15_000)
    expect((await readAll('tx-restart', { readUncommitted: false, expected: 3 })).sort()).toEqual(['r1', 'r2', 'r3'])
  })

  it('a consume-transform-produce copier SIGKILLed at random points and restarted copies every record exactly once', async () => {
    const N = 600
    await admin.createTopics({ topics: [{ topic: 'copy-in', numPartitions: 2 }, { topic: 'copy-out', numPartitions: 2 }] })
    const plain = kafka.producer()
    await plain.connect()
    for (let i = 0; i < N; i += 50) await plain.send({ topic: 'copy-in', messages: Array.from({ length: 50 }, (_, j) => ({ key: `k${(i + j) % 7}`, value: `v${i + j}` })) })
    await plain.disconnect()
    let copiedMax = 0
    for (let round = 0; round < 4; round++) {
      const child = spawnCopier()
      // Kill it once it has copied something, at a random moment (mid-transaction or between).
      const started = Date.now()
      // (a copier with nothing left to copy is killed a while after it is ready)
      await waitFor('copier progress', () => child.copied > 0 || child.exited || (child.ready && Date.now() - started > 8000), 30_000).catch((err: Error) => {
        child.proc.kill('SIGKILL')
        throw new Error(`${err.message} (round ${round}, ready ${child.ready}); copier stderr: ${child.stderr}`)
      })
      await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 400)))
      child.proc.kill('SIGKILL')
      await waitFor('copier exit', () => child.exited)
      copiedMax = Math.max(copiedMax, child.copied)
    }
    // A last copier runs until the output holds every input record.
    const last = spawnCopier()
    try {
      const out = await readAll('copy-out', { readUncommitted: false, expected: N }).catch((err: Error) => {
        throw new Error(`${err.message}; last copier: copied ${last.copied}, exited ${last.exited}, stderr: ${last.stderr.slice(0, 3000)}`)
      })
      const sorted = out.sort((a, b) => Number(a.slice(1)) - Number(b.slice(1)))
      expect(sorted).toEqual(Array.from({ length: N }, (_, i) => `v${i}`))
    } finally {
      last.proc.kill('SIGKILL')
      await waitFor('copier exit', () => last.exited)
    }
    expect(copiedMax).toBeGreaterThan(0)
  }, 180_000)
})

async function describeTransactions(ids: string[]): Promise<any[]> {
  const c = await tb.broker.transactions.coordinator()
  const described = await c.describeTransactions(ids)
  return described.map((d) => ({ errorCode: d.errorCode, transactionState: d.state }))
}

/**
 * The copier: a kafkajs consumer (group copier, read_committed, no auto-commit) and a transactional
 * producer; per batch one transaction with the output records and the consumer's offsets
 * (sendOffsets). The producer connects first, so that its InitProducerId fences and aborts a killed
 * predecessor's transaction before offsets are fetched.
 */
function spawnCopier(): { proc: import('node:child_process').ChildProcess; copied: number; exited: boolean; stderr: string; ready: boolean } {
  const script = `
    import { createRequire } from 'node:module'
    const require = createRequire(process.cwd() + '/package.json')
    const { Kafka, logLevel } = require('kafkajs')
    const [bootstrap] = process.argv.slice(1)
    const kafka = new Kafka({ clientId: 'copier', brokers: [bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 20, initialRetryTime: 100, maxRetryTime: 1000 } })
    const producer = kafka.producer({ transactionalId: 'copier-tx', maxInFlightRequests: 1, idempotent: true })
    await producer.connect()
    // kafkajs sends InitProducerId at the first transaction(): fence a killed predecessor (and let its
    // transaction finish) before the consumer fetches the group's offsets.
    await (await producer.transaction()).commit()
    process.stdout.write(JSON.stringify({ ready: true }) + '\\n')
    const consumer = kafka.consumer({ groupId: 'copier', sessionTimeout: 2000, heartbeatInterval: 200, rebalanceTimeout: 4000, maxWaitTimeInMs: 100, maxBytesPerPartition: 1000 })
    await consumer.connect()
    await consumer.subscribe({ topic: 'copy-in', fromBeginning: true })
    let copied = 0
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        if (batch.messages.length === 0) return
        const txn = await producer.transaction()
        try {
          await txn.send({ topic: 'copy-out', messages: batch.messages.map((m) => ({ key: m.key, value: m.value })) })
          // Slow enough that kills land inside transactions as well as between them.
          await new Promise((r) => setTimeout(r, 150))
          const next = String(Number(batch.messages[batch.messages.length - 1].offset) + 1)
          await txn.sendOffsets({ consumerGroupId: 'copier', topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }] })
          await txn.commit()
        } catch (err) {
          await txn.abort().catch(() => {})
          throw err
        }
        copied += batch.messages.length
        process.stdout.write(JSON.stringify({ copied }) + '\\n')
      },
    })
  `
  const proc = spawn(process.execPath, ['--input-type=module', '-e', script, tb.bootstrap], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  const state = { proc, copied: 0, exited: false, stderr: '', ready: false }
  let buf = ''
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString()
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const line = buf.slice(0, nl)
      if (process.env.COPIER_DEBUG) console.log("copier:", line)
      buf = buf.slice(nl + 1)
      try {
        const msg = JSON.parse(line) as { copied?: number; ready?: boolean }
        if (msg.ready === true) state.ready = true
        if (msg.copied !== undefined) state.copied = msg.copied
      } catch {
        // not a progress line
      }
    }
  })
  proc.stderr!.on('data', (d: Buffer) => {
    if (state.stderr.length < 10_000) state.stderr += d.toString()
  })
  proc.on('exit', () => {
    state.exited = true
  })
  return state
}
