// buffer.memory and max.block.ms in the producer's send(), against a real broker process that is paused
// (SIGSTOP) so that nothing it was sent gets acknowledged: send() appends until buffer.memory bytes wait,
// then waits for room; it fails with a TimeoutError after max.block.ms when no room comes, and goes on
// when the broker answers (SIGCONT) and the acknowledged batches free their bytes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Producer, type RecordMetadata } from '../../src/client/index.js'
import { TimeoutError } from '../../src/client/errors.js'
import { startBrokerProcess, type BrokerProcess } from '../harness/index.js'

const VALUE = Buffer.alloc(1000, 0x61)

describe('producer send() and buffer.memory', () => {
  let broker: BrokerProcess
  beforeAll(async () => {
    broker = await startBrokerProcess()
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics([{ name: 'buf', numPartitions: 1, replicationFactor: 1 }])
    await admin.close()
  }, 60000)
  afterAll(async () => {
    broker.child.kill('SIGCONT')
    await broker.kill('SIGTERM')
  })

  it('waits for room at most max.block.ms, and the records sent before the wait are delivered', async () => {
    const producer = new Producer({ bootstrapServers: broker.bootstrap, acks: 1, lingerMs: 0, batchSize: 4096, bufferMemory: 8192, maxBlockMs: 400, requestTimeoutMs: 30000 })
    try {
      await producer.topicInfo('buf')
      broker.child.kill('SIGSTOP')
      type Outcome = { ok: true; meta: RecordMetadata } | { ok: false; err: unknown }
      const outcomes: Promise<Outcome>[] = []
      for (let i = 0; i < 40; i++) {
        outcomes.push(producer.send({ topic: 'buf', value: VALUE }).then((meta): Outcome => ({ ok: true, meta }), (err: unknown): Outcome => ({ ok: false, err })))
      }
      // buffer.memory holds about 8 of these records: the sends from the 16th on must fail on their own
      // within max.block.ms while the broker is still paused.
      const late = await Promise.race([Promise.all(outcomes.slice(16)), new Promise<null>((r) => setTimeout(() => r(null), 5000))])
      expect(late).not.toBeNull()
      for (const o of late!) {
        expect(o.ok).toBe(false)
        if (!o.ok) {
          expect(o.err).toBeInstanceOf(TimeoutError)
          expect((o.err as Error).message).toContain('max blocking time')
        }
      }
      broker.child.kill('SIGCONT')
      // The records appended before the room ran out are delivered, in order; every other send timed out.
      const all = await Promise.all(outcomes)
      const delivered = all.flatMap((o) => (o.ok ? [o.meta.offset] : []))
      expect(delivered.length).toBeGreaterThanOrEqual(4)
      expect(delivered.length).toBeLessThanOrEqual(12)
      expect(all.slice(0, delivered.length).every((o) => o.ok)).toBe(true)
      expect(all.slice(delivered.length).every((o) => !o.ok && o.err instanceof TimeoutError)).toBe(true)
      expect(delivered).toEqual(delivered.map((_, i) => delivered[0]! + i))
      // With room again, send() works at once.
      const after = await producer.send({ topic: 'buf', value: VALUE })
      expect(after.offset).toBe(delivered[delivered.length - 1]! + 1)
    } finally {
      broker.child.kill('SIGCONT')
      await producer.close()
    }
  }, 30000)

  it('a send waiting for room goes on when acknowledgements free it within max.block.ms', async () => {
    const producer = new Producer({ bootstrapServers: broker.bootstrap, acks: 1, lingerMs: 0, batchSize: 4096, bufferMemory: 8192, maxBlockMs: 10000, requestTimeoutMs: 30000 })
    try {
      await producer.topicInfo('buf')
      broker.child.kill('SIGSTOP')
      const sends: Promise<RecordMetadata>[] = []
      for (let i = 0; i < 20; i++) sends.push(producer.send({ topic: 'buf', value: VALUE }))
      await new Promise((r) => setTimeout(r, 300))
      expect(producer.hasCapacity).toBe(false)
      broker.child.kill('SIGCONT')
      const results = await Promise.all(sends)
      const offsets = results.map((m) => m.offset)
      expect(offsets).toEqual(offsets.map((_, i) => offsets[0]! + i))
    } finally {
      broker.child.kill('SIGCONT')
      await producer.close()
    }
  }, 30000)
})
