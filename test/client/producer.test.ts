// The producer's output and acknowledgements. Pure: RecordBatchWriter's bytes equal those of the
// protocol's reference builder and pass the broker's produce validator, for the encodings the fast paths
// special-case (one-byte varints, long fields, headers, large and negative timestamp deltas); the varint
// size functions agree with what the writers emit; the buffer pool hands back what it was given.
// Against a real broker: records written through reused (pooled) batch buffers come back byte-identical
// through kafkajs's consumer; every record is acknowledged exactly once, in order, with its offset;
// a batch the broker rejects fails every one of its records; keyed records land where murmur2 says.
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, BatchBufferPool, Producer, RecordBatchWriter, partitionForKey, type BatchDelivery, type Header } from '../../src/client/index.js'
import { native } from '../../src/addon/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { buildRecordBatch } from '../../src/protocol/records/builder.js'
import { validateProducerBatches } from '../../src/protocol/records/validate.js'
import { sizeOfVarint, sizeOfVarlong, writeVarint, writeVarlong } from '../../src/protocol/records/varint.js'
import { decodeBatches, startTestBroker, type TestBroker } from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

interface Rec {
  key: Buffer | null
  value: Buffer | null
  headers: Header[]
  timestamp: number
}

/** Deterministic bytes (a small LCG), so a failure names a reproducible record. */
function bytes(seed: number, n: number): Buffer {
  const b = Buffer.allocUnsafe(n)
  let x = seed * 2654435761
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) | 0
    b[i] = x >>> 24
  }
  return b
}

const POLICY = { maxMessageBytes: 16 << 20, timestampType: 'CreateTime' as const, timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER, now: Date.now() }

describe('encoding', () => {
  it('sizeOfVarint and sizeOfVarlong give the length the writers emit', () => {
    const buf = Buffer.alloc(16)
    const ints = [0, 1, -1, 63, -64, 64, -65, 8191, -8192, 8192, 1 << 20, -(1 << 20), 2 ** 27, 2 ** 30 - 1, -(2 ** 30), 2 ** 31 - 1, -(2 ** 31)]
    for (const v of ints) expect(sizeOfVarint(v), `varint ${v}`).toBe(writeVarint(buf, 0, v))
    const longs = [...ints, 2 ** 30, -(2 ** 30) - 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 40, -(2 ** 40), Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]
    for (const v of longs) expect(sizeOfVarlong(v), `varlong ${v}`).toBe(writeVarlong(buf, 0, v))
  })

  it('RecordBatchWriter bytes equal the reference builder and pass the broker validator', () => {
    const t0 = 1_700_000_000_000
    const records: Rec[] = [
      { key: null, value: null, headers: [], timestamp: t0 },
      { key: Buffer.alloc(0), value: Buffer.alloc(0), headers: [], timestamp: t0 + 63 },
      { key: bytes(1, 63), value: bytes(2, 64), headers: [], timestamp: t0 + 64 },
      { key: bytes(3, 200), value: bytes(4, 9000), headers: [{ key: 'h', value: null }, { key: 'clé-✓', value: bytes(5, 70) }], timestamp: t0 - 5 },
      { key: null, value: bytes(6, 100), headers: [{ key: '', value: Buffer.alloc(0) }], timestamp: t0 + 2 ** 31 },
      { key: bytes(7, 1), value: bytes(8, 100), headers: [], timestamp: t0 - 2 ** 33 },
    ]
    // Past 64 records the offset delta needs two varint bytes.
    for (let i = 0; i < 150; i++) records.push({ key: i % 3 === 0 ? null : bytes(100 + i, i % 70), value: bytes(1000 + i, 100), headers: [], timestamp: t0 + i })
    const w = new RecordBatchWriter(1 << 20)
    for (const r of records) expect(w.tryAppend(r.timestamp, r.key, r.value, r.headers)).toBe(true)
    const mine = w.build()
    const reference = buildRecordBatch(records.map((r) => ({ key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp })), native.crc32c)
    expect(mine.equals(reference)).toBe(true)
    const [v] = validateProducerBatches(mine, POLICY, native.crc32c)
    expect(v!.recordCount).toBe(records.length)
    expect(v!.maxTimestamp).toBe(t0 + 2 ** 31)
    const [decoded] = decodeBatches(mine)
    expect(decoded!.records.map((r) => [r.timestamp, r.key, r.value, r.headers])).toEqual(records.map((r) => [r.timestamp, r.key, r.value, r.headers]))
  })

  it('RecordBatchWriter.recordSize and fieldsSize match the encoded record', () => {
    for (const [key, value, headers] of [
      [null, null, []],
      [bytes(1, 10), bytes(2, 100), []],
      [bytes(3, 300), bytes(4, 20000), [{ key: 'x', value: bytes(5, 3) }]],
    ] as [Buffer | null, Buffer | null, Header[]][]) {
      const w = new RecordBatchWriter(1 << 16)
      w.tryAppend(5, key, value, headers)
      expect(RecordBatchWriter.recordSize(key, value, headers)).toBe(w.sizeInBytes - 61)
    }
  })

  it('the buffer pool reuses only buffers of its size, within its byte bound', () => {
    const pool = new BatchBufferPool(1024, 2048)
    const a = pool.take(1024)
    const b = pool.take(1024)
    const c = pool.take(1024)
    const odd = pool.take(500)
    pool.give(a)
    pool.give(b)
    pool.give(c) // over the 2048-byte bound: dropped
    pool.give(odd) // not the pool's size: dropped
    expect(pool.freeCount).toBe(2)
    const again = [pool.take(1024), pool.take(1024)]
    expect(again.includes(a) && again.includes(b)).toBe(true)
    expect(pool.freeCount).toBe(0)
    // A writer hands its buffer back on release, or at once when compression copied the records out.
    const w = new RecordBatchWriter(1024, pool)
    w.tryAppend(1, null, bytes(9, 50))
    w.build()
    w.release()
    expect(pool.freeCount).toBe(1)
    const z = new RecordBatchWriter(1024, pool)
    z.tryAppend(1, null, bytes(9, 50))
    expect(pool.freeCount).toBe(0)
    const gz = z.build(1)
    expect(pool.freeCount).toBe(1)
    expect(decodeBatches(gz)[0]!.records[0]!.value).toEqual(bytes(9, 50))
  })
})

describe('against a broker', () => {
  let tb: TestBroker
  let admin: Admin
  beforeAll(async () => {
    tb = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'auto.create.topics.enable=false'])
    admin = new Admin({ bootstrapServers: tb.bootstrap })
  })
  afterAll(async () => {
    await admin?.close()
    await tb?.stop()
  })

  it('records sent through reused batch buffers come back byte-identical through kafkajs, acked once each, in order', async () => {
    const topic = 'pooled'
    const partitions = 3
    await admin.createTopics([{ name: topic, numPartitions: partitions, replicationFactor: 1 }])
    // Small batches and buffer.memory: the 4000 records go through ~400 batches on ~20 pooled buffers.
    const producer = new Producer({ bootstrapServers: tb.bootstrap, acks: 1, batchSize: 2048, lingerMs: 1, bufferMemory: 16 * 2048 })
    await producer.topicInfo(topic)
    const pool = (producer as any).bufferPool as BatchBufferPool
    const taken = { fresh: 0, total: 0 }
    const take = pool.take.bind(pool)
    pool.take = (n: number) => {
      taken.total++
      if (pool.freeCount === 0) taken.fresh++
      return take(n)
    }
    const n = 4000
    const sent: Rec[] = []
    const acks = new Int32Array(n) // times each record was acknowledged
    const offsetOf = new Float64Array(n).fill(-1)
    const partitionOf = new Int32Array(n).fill(-1)
    const order: number[][] = Array.from({ length: partitions }, () => [])
    const errors: Error[] = []
    const onBatch = (err: Error | null, d: BatchDelivery): void => {
      if (err !== null) errors.push(err)
      for (let k = d.from; k < d.to; k++) {
        const i = d.ctxs[k]!
        acks[i]!++
        offsetOf[i] = d.baseOffset + k
        partitionOf[i] = d.partition
        order[d.partition]!.push(i)
        expect(d.timestamps[k]).toBe(sent[i]!.timestamp)
      }
    }
    const onRecord = (err: Error | null, meta: { partition: number; offset: number; timestamp: number } | null, i: number): void => {
      if (err !== null) errors.push(err)
      acks[i]!++
      offsetOf[i] = meta!.offset
      partitionOf[i] = meta!.partition
      order[meta!.partition]!.push(i)
      expect(meta!.timestamp).toBe(sent[i]!.timestamp)
    }
    const t0 = Date.now()
    for (let i = 0; i < n; i++) {
      const keyed = i % 4 === 0
      const r: Rec = {
        key: keyed ? Buffer.from(`key-${i % 37}`) : i % 4 === 1 ? null : bytes(i, i % 90),
        value: i % 97 === 0 ? null : bytes(n + i, 50 + (i % 200)),
        headers: i % 5 === 0 ? [{ key: `h${i}`, value: bytes(2 * n + i, i % 20) }, { key: 'empty', value: Buffer.alloc(0) }] : [],
        timestamp: t0 + (i % 300),
      }
      sent.push(r)
      // Unkeyed records with a key buffer go to an explicit partition; keyed ones through murmur2.
      const partition = keyed || r.key === null ? undefined : i % partitions
      // Both acknowledgement styles in the same batches.
      if (i % 3 === 0) producer.append(topic, partition, r.key, r.value, r.headers, onRecord, i, r.timestamp)
      else producer.appendBatched(topic, partition, r.key, r.value, r.headers, onBatch, i, r.timestamp)
      if (!producer.hasCapacity) await producer.waitForCapacity()
    }
    await producer.flush()
    await producer.close()
    expect(errors).toEqual([])
    expect(Array.from(acks).every((a) => a === 1)).toBe(true)
    expect(taken.total).toBeGreaterThan(300)
    expect(taken.fresh).toBeLessThan(taken.total / 4)
    for (let i = 0; i < n; i += 4) expect(partitionOf[i]).toBe(partitionForKey(sent[i]!.key!, partitions))
    // Acknowledged in append order per partition, with consecutive offsets from 0.
    for (const list of order) {
      expect(list).toEqual([...list].sort((a, b) => a - b))
      expect(list.map((i) => offsetOf[i])).toEqual(list.map((_, k) => k))
    }

    const kafka = new Kafka({ clientId: 'skein-producer-test', brokers: [tb.bootstrap], logLevel: logLevel.NOTHING })
    const consumer = kafka.consumer({ groupId: 'producer-test', sessionTimeout: 6000, heartbeatInterval: 300, rebalanceTimeout: 8000, maxWaitTimeInMs: 100 })
    const got = new Map<string, any>()
    try {
      await consumer.connect()
      await consumer.subscribe({ topic, fromBeginning: true })
      await consumer.run({
        eachMessage: async ({ partition, message }: any) => {
          got.set(`${partition}@${message.offset}`, message)
        },
      })
      const deadline = Date.now() + 30000
      while (got.size < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    } finally {
      await consumer.disconnect()
    }
    expect(got.size).toBe(n)
    for (let i = 0; i < n; i++) {
      const m = got.get(`${partitionOf[i]}@${offsetOf[i]}`)
      const s = sent[i]!
      expect(m, `record ${i}`).toBeDefined()
      expect(m.key, `key of ${i}`).toEqual(s.key)
      expect(m.value, `value of ${i}`).toEqual(s.value)
      expect(Number(m.timestamp)).toBe(s.timestamp)
      expect(Object.keys(m.headers).sort()).toEqual(s.headers.map((h) => h.key).sort())
      for (const h of s.headers) expect(m.headers[h.key], `header ${h.key} of ${i}`).toEqual(h.value)
    }
  })

  it('a batch the broker rejects fails every one of its records, once, for both callback styles', async () => {
    const topic = 'small-messages'
    await admin.createTopics([{ name: topic, numPartitions: 1, replicationFactor: 1, configs: { 'max.message.bytes': '2000' } }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap, acks: -1, batchSize: 1 << 16, lingerMs: 20 })
    await producer.topicInfo(topic)
    const failed = new Map<number, number>()
    const codes = new Set<number>()
    let okCount = 0
    const note = (err: Error | null, i: number): void => {
      if (err === null) {
        okCount++
        return
      }
      codes.add((err as KafkaError).code)
      failed.set(i, (failed.get(i) ?? 0) + 1)
    }
    // 60 records of ~100 bytes: one ~6 KB batch, over the topic's 2000-byte max.message.bytes.
    for (let i = 0; i < 60; i++) {
      if (i % 2 === 0) producer.append(topic, 0, null, bytes(i, 100), undefined, (err, _m, ctx) => note(err, ctx), i)
      else producer.appendBatched(topic, 0, null, bytes(i, 100), undefined, (err, d) => {
        for (let k = d.from; k < d.to; k++) note(err, d.ctxs[k]!)
      }, i)
    }
    await producer.flush()
    expect(okCount).toBe(0)
    expect(failed.size).toBe(60)
    expect([...failed.values()].every((c) => c === 1)).toBe(true)
    expect([...codes]).toEqual([ErrorCode.MESSAGE_TOO_LARGE])
    // The producer goes on: a record that fits is delivered.
    const meta = await producer.send({ topic, partition: 0, value: 'fits' })
    expect(meta.offset).toBe(0)
    await producer.close()
  })

  it('a throwing callback does not stop the deliveries after it', async () => {
    await admin.createTopics([{ name: 'throwing', numPartitions: 1, replicationFactor: 1 }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap, acks: 1, lingerMs: 5 })
    await producer.topicInfo('throwing')
    const thrown: unknown[] = []
    const onUncaught = (e: unknown): void => {
      thrown.push(e)
    }
    // vitest reports uncaught exceptions: take this test's own ones first.
    const listeners = process.listeners('uncaughtException')
    process.removeAllListeners('uncaughtException')
    process.on('uncaughtException', onUncaught)
    const seen: number[] = []
    try {
      for (let i = 0; i < 10; i++) {
        producer.append('throwing', 0, null, Buffer.from(`v${i}`), undefined, (err, meta, ctx) => {
          expect(err).toBeNull()
          seen.push(meta!.offset)
          if (ctx === 3) throw new Error('callback failure')
        }, i)
      }
      await producer.flush()
      await new Promise((r) => setTimeout(r, 20))
    } finally {
      process.off('uncaughtException', onUncaught)
      for (const l of listeners) process.on('uncaughtException', l)
    }
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    expect(thrown.map((e) => (e as Error).message)).toEqual(['callback failure'])
    await producer.close()
  })
})
