// The idempotent producer (enable.idempotence). Pure: the Java client's rules for defaults and
// conflicts; stampProducerState writes a header the broker's validator accepts; the sequence bookkeeping
// (numbering at first send, 5 in flight, in-order resends, vouching, DUPLICATE_SEQUENCE_NUMBER, epoch
// bumps that renumber a partition from 0). Against a real broker:
// batches carry the producer id and contiguous sequences; through a proxy that cuts connections (requests
// cut halfway, answers lost after the broker wrote), corrupts a batch (the broker refuses it and answers
// OUT_OF_ORDER_SEQUENCE_NUMBER to the batches behind it) and drops requests (a later answer overtakes
// the lost one) with 5 batches in flight per partition, every record is in the log exactly once and in
// send order, read back by the Skein consumer; and when the
// broker loses the producer's state (the topic is recreated, UNKNOWN_PRODUCER_ID) the producer bumps its
// epoch (KIP-360) and goes on from sequence 0 without losing order.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Cluster, KafkaError, Producer, RecordBatchWriter, stampProducerState } from '../../src/client/index.js'
import { TransactionManager, type SequencedBatch, type SequencesHolder } from '../../src/client/transactions.js'
import { native } from '../../src/addon/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { validateProducerBatches } from '../../src/protocol/records/validate.js'
import { freePort, RawClient, startTestBroker, type TestBroker } from '../harness/index.js'
import { SabotagingProxy } from '../harness/proxy.js'
import { batchHeaders, consumeAll, headersOf } from './eos-helpers.js'

const POLICY = { maxMessageBytes: 16 << 20, timestampType: 'CreateTime' as const, timestampBeforeMaxMs: Number.MAX_SAFE_INTEGER, timestampAfterMaxMs: Number.MAX_SAFE_INTEGER, now: Date.now() }

describe('idempotence settings (the Java client rules)', () => {
  const base = { bootstrapServers: '127.0.0.1:1' }
  it('is on by default with acks=all and at most 5 in flight, off by default otherwise', () => {
    expect(new Producer(base).idempotent).toBe(true)
    expect(new Producer({ ...base, acks: -1, maxInFlight: 5 }).idempotent).toBe(true)
    expect(new Producer({ ...base, acks: 1 }).idempotent).toBe(false)
    expect(new Producer({ ...base, acks: 0 }).idempotent).toBe(false)
    expect(new Producer({ ...base, maxInFlight: 6 }).idempotent).toBe(false)
    expect(new Producer({ ...base, retries: 0 }).idempotent).toBe(false)
    expect(new Producer({ ...base, enableIdempotence: false }).idempotent).toBe(false)
    expect(new Producer(base).transactionState).toBe('UNINITIALIZED')
    expect(new Producer({ ...base, acks: 1 }).transactionState).toBeNull()
  })

  it('refuses an explicit enable.idempotence=true, or a transactional.id, with conflicting settings', () => {
    const configError = (f: () => unknown, text: RegExp): void => {
      let err: unknown
      try {
        f()
      } catch (e) {
        err = e
      }
      expect(err).toBeInstanceOf(KafkaError)
      expect((err as KafkaError).code).toBe(ErrorCode.INVALID_CONFIG)
      expect((err as Error).message).toMatch(text)
    }
    configError(() => new Producer({ ...base, enableIdempotence: true, acks: 1 }), /acks must be all/)
    configError(() => new Producer({ ...base, enableIdempotence: true, maxInFlight: 6 }), /at most 5/)
    configError(() => new Producer({ ...base, enableIdempotence: true, retries: 0 }), /retries must be greater than 0/)
    configError(() => new Producer({ ...base, transactionalId: 'tx', acks: 1 }), /transactional.id needs idempotence/)
    configError(() => new Producer({ ...base, transactionalId: 'tx', enableIdempotence: false }), /without also enabling idempotence/)
    configError(() => new Producer({ ...base, transactionalId: '' }), /must not be empty/)
    expect(new Producer({ ...base, transactionalId: 'tx' }).idempotent).toBe(true)
  })

  it('stampProducerState writes producer id, epoch, sequence and the transactional bit under a valid CRC', () => {
    const w = new RecordBatchWriter(4096)
    for (let i = 0; i < 3; i++) w.tryAppend(1_700_000_000_000 + i, null, Buffer.from(`v${i}`))
    const batch = w.build(0, false)
    stampProducerState(batch, 2 ** 40 + 3, 7, 2 ** 31 - 2, true)
    const [v] = validateProducerBatches(batch, POLICY, native.crc32c)
    expect(v!.recordCount).toBe(3)
    expect(batchHeaders(batch)).toEqual([{ baseOffset: 0, producerId: 2 ** 40 + 3, producerEpoch: 7, baseSequence: 2 ** 31 - 2, count: 3, transactional: true, control: false }])
    stampProducerState(batch, 5, 0, 0, false)
    expect(() => validateProducerBatches(batch, POLICY, native.crc32c)).not.toThrow()
    expect(batchHeaders(batch)[0]).toMatchObject({ producerId: 5, producerEpoch: 0, baseSequence: 0, transactional: false })
  })
})

describe('sequence bookkeeping (TransactionManager, no broker)', () => {
  const hooks = { wake: () => {}, failUnsent: () => {}, failAll: () => {}, flush: async () => {} }
  const manager = (): TransactionManager => {
    const tm = new TransactionManager(new Cluster({ bootstrapServers: '127.0.0.1:1' }), hooks, { transactionalId: null, transactionTimeoutMs: 60000, maxBlockMs: 1000, deliveryTimeoutMs: 1000 })
    tm.producerId = 42
    tm.producerEpoch = 3
    return tm
  }
  const batch = (count: number): SequencedBatch => {
    const w = new RecordBatchWriter(4096)
    for (let i = 0; i < count; i++) w.tryAppend(1_700_000_000_000, null, Buffer.from(`v${i}`))
    return { count, bytes: w.build(0, false), producerId: -1, producerEpoch: -1, baseSequence: -1, inRequest: false }
  }
  const err = (code: ErrorCode): KafkaError => new KafkaError(code)

  it('numbers batches as they are sent, at most 5 in flight, and resends only the first unacknowledged one', () => {
    const tm = manager()
    const q: SequencesHolder = { topic: 't', partition: 0, seq: null }
    const bs = [3, 2, 4, 1, 5, 2].map(batch)
    for (const b of bs.slice(0, 5)) {
      expect(tm.maySend(q, b)).toBe(true)
      tm.sending(q, b)
    }
    expect(bs.slice(0, 5).map((b) => b.baseSequence)).toEqual([0, 3, 5, 9, 10])
    expect(tm.maySend(q, bs[5]!)).toBe(false) // 5 in flight
    for (const b of bs.slice(0, 5)) expect(batchHeaders(b.bytes!)[0]).toMatchObject({ producerId: 42, producerEpoch: 3, baseSequence: b.baseSequence })
    // The answers: the first lost (connection), the others out of order behind it.
    for (const b of bs.slice(0, 5)) tm.requestDone(q, b)
    expect(tm.produceErrorVerdict(q, bs[1]!, err(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER))).toBe('retry')
    expect(q.seq!.bumpRequested).toBe(false)
    // Only the first may go again, and only once nothing of the partition is in a request.
    expect(tm.maySend(q, bs[1]!)).toBe(false)
    expect(tm.maySend(q, bs[0]!)).toBe(true)
    tm.sending(q, bs[0]!)
    expect(bs[0]!.baseSequence).toBe(0) // kept across retries
    expect(tm.completed(q, bs[0]!, null, false)).toBeNull()
    tm.requestDone(q, bs[0]!)
    expect(q.seq!.lastAckedSequence).toBe(2)
    expect(tm.maySend(q, bs[1]!)).toBe(true)
  })

  it('an acknowledged batch vouches for those before it; DUPLICATE_SEQUENCE_NUMBER is a success', () => {
    const tm = manager()
    const q: SequencesHolder = { topic: 't', partition: 0, seq: null }
    const [a, b, c] = [2, 2, 2].map(batch)
    for (const x of [a!, b!, c!]) {
      tm.maySend(q, x)
      tm.sending(q, x)
    }
    expect(tm.produceErrorVerdict(q, a!, err(ErrorCode.DUPLICATE_SEQUENCE_NUMBER))).toBe('duplicate')
    // b is acknowledged while a's answer is missing: a is in the log too.
    expect(tm.completed(q, b!, null, false)).toEqual([a])
    expect(tm.completed(q, a!, null, false)).toBeNull()
    expect(q.seq!.inFlight).toEqual([c])
  })

  it('a gap at the first unacknowledged batch bumps the epoch and renumbers the partition from 0; other partitions follow when idle', () => {
    const tm = manager()
    const p0: SequencesHolder = { topic: 't', partition: 0, seq: null }
    const p1: SequencesHolder = { topic: 't', partition: 1, seq: null }
    const [a, b] = [2, 3].map(batch)
    const other = batch(1)
    for (const [q, x] of [[p0, a], [p0, b], [p1, other]] as const) {
      tm.maySend(q, x!)
      tm.sending(q, x!)
    }
    tm.requestDone(p0, a!)
    expect(tm.produceErrorVerdict(p0, a!, err(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER))).toBe('retry')
    expect(p0.seq!.bumpRequested).toBe(true)
    tm.maybeBumpEpoch() // b is still in a request: not yet
    expect(tm.producerEpoch).toBe(3)
    expect(tm.maySend(p0, a!)).toBe(false)
    tm.requestDone(p0, b!)
    expect(tm.produceErrorVerdict(p0, b!, err(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER))).toBe('retry')
    tm.maybeBumpEpoch()
    expect(tm.producerEpoch).toBe(4)
    expect([a, b].map((x) => [x!.producerEpoch, x!.baseSequence])).toEqual([[4, 0], [4, 2]])
    expect(batchHeaders(b!.bytes!)[0]).toMatchObject({ producerEpoch: 4, baseSequence: 2 })
    expect(() => validateProducerBatches(b!.bytes!, POLICY, native.crc32c)).not.toThrow()
    expect(tm.maySend(p0, a!)).toBe(true)
    // Partition 1 keeps epoch 3 for its batch in flight; its next batch starts epoch 4 at sequence 0.
    const next = batch(1)
    expect(tm.maySend(p1, next)).toBe(false)
    tm.requestDone(p1, other)
    tm.completed(p1, other, null, false)
    expect(tm.maySend(p1, next)).toBe(true)
    tm.sending(p1, next)
    expect([next.producerEpoch, next.baseSequence]).toEqual([4, 0])
  })

  it('UNKNOWN_PRODUCER_ID bumps only for the first unacknowledged batch; a refused sent batch bumps too', () => {
    const tm = manager()
    const q: SequencesHolder = { topic: 't', partition: 0, seq: null }
    const [a, b] = [1, 1].map(batch)
    for (const x of [a!, b!]) {
      tm.maySend(q, x)
      tm.sending(q, x)
      tm.requestDone(q, x)
    }
    expect(tm.produceErrorVerdict(q, b!, err(ErrorCode.UNKNOWN_PRODUCER_ID))).toBe('retry')
    expect(q.seq!.bumpRequested).toBe(false)
    expect(tm.produceErrorVerdict(q, a!, err(ErrorCode.UNKNOWN_PRODUCER_ID))).toBe('retry')
    expect(q.seq!.bumpRequested).toBe(true)
    tm.maybeBumpEpoch()
    const c = batch(1)
    tm.maySend(q, a!)
    tm.sending(q, a!)
    tm.requestDone(q, a!)
    // The broker refuses a for good (not a retriable error): the gap it leaves calls for a new epoch.
    expect(tm.produceErrorVerdict(q, a!, err(ErrorCode.MESSAGE_TOO_LARGE))).toBe('fail')
    tm.completed(q, a!, err(ErrorCode.MESSAGE_TOO_LARGE), true)
    expect(q.seq!.bumpRequested).toBe(true)
    expect(tm.maySend(q, c)).toBe(false)
    tm.maybeBumpEpoch()
    expect(tm.producerEpoch).toBe(5)
    expect([b!.producerEpoch, b!.baseSequence]).toEqual([5, 0])
  })
})

describe('the idempotent producer against a broker', () => {
  let tb: TestBroker
  let proxy: SabotagingProxy
  let raw: RawClient
  let admin: Admin

  beforeAll(async () => {
    const proxyPort = await freePort()
    tb = await startTestBroker([`advertised.listeners=PLAINTEXT://127.0.0.1:${proxyPort}`])
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

  it('stamps every batch with its producer id and contiguous sequences per partition', async () => {
    await admin.createTopics([{ name: 'idem-plain', numPartitions: 2, replicationFactor: 1 }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0, batchSize: 200 })
    const acks: number[][] = [[], []]
    await producer.topicInfo('idem-plain')
    await new Promise<void>((resolve, reject) => {
      let left = 400
      for (let i = 0; i < 400; i++) {
        producer.append('idem-plain', i % 2, null, Buffer.from(`r${i}`), undefined, (err, meta) => {
          if (err !== null) reject(err)
          else acks[meta!.partition]!.push(meta!.offset)
          if (--left === 0) resolve()
        })
      }
    })
    const { producerId, producerEpoch } = producer.producerIdAndEpoch!
    expect(producerId).toBeGreaterThanOrEqual(0)
    expect(producerEpoch).toBe(0)
    await producer.close()
    for (const p of [0, 1]) {
      expect(acks[p]).toEqual(Array.from({ length: 200 }, (_, i) => i))
      const hs = await headersOf(raw, 'idem-plain', p)
      expect(hs.length).toBeGreaterThan(5)
      let seq = 0
      for (const h of hs) {
        expect(h).toMatchObject({ producerId, producerEpoch: 0, baseSequence: seq, transactional: false })
        seq += h.count
      }
      expect(seq).toBe(200)
    }
  })

  it('asks for its producer id when it loads a topic, before the first send (the Java client asks at start-up)', async () => {
    await admin.createTopics([{ name: 'idem-early-id', numPartitions: 1, replicationFactor: 1 }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0 })
    try {
      expect(producer.producerIdAndEpoch).toEqual({ producerId: -1, producerEpoch: -1 })
      await producer.topicInfo('idem-early-id')
      // No record is sent: the id comes from the warm-up alone (before, it was asked for by the first send).
      for (let i = 0; i < 600 && producer.producerIdAndEpoch!.producerId < 0; i++) await new Promise((r) => setTimeout(r, 50))
      expect(producer.producerIdAndEpoch!.producerId).toBeGreaterThanOrEqual(0)
      expect(producer.producerIdAndEpoch!.producerEpoch).toBe(0)
      expect(producer.transactionState).toBe('READY')
    } finally {
      await producer.close()
    }
  })

  it('writes every record exactly once, in order, through cut connections and dropped requests with 5 batches in flight', async () => {
    const topic = 'idem-sabotaged'
    await admin.createTopics([{ name: topic, numPartitions: 3, replicationFactor: 1 }])
    // Small batches and no linger: many Produce requests, up to 5 in flight, each with up to one batch per partition.
    const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0, batchSize: 300, requestTimeoutMs: 1500, retryBackoffMs: 20, deliveryTimeoutMs: 60_000 })
    await producer.topicInfo(topic)
    const fates = ['cut-request', 'cut-answer', 'corrupt', 'drop'] as const
    let k = 0
    const before = { ...proxy.done }
    proxy.policy = (n) => (n % 9 === 0 ? fates[k++ % fates.length]! : 'pass')
    const perPartition = 1500
    const errors: Error[] = []
    try {
      await new Promise<void>((resolve) => {
        let left = perPartition * 3
        for (let i = 0; i < perPartition; i++) {
          for (let p = 0; p < 3; p++) {
            producer.append(topic, p, Buffer.from(`k${p}`), Buffer.from(`p${p}-${i}`), undefined, (err) => {
              if (err !== null) errors.push(err)
              if (--left === 0) resolve()
            })
          }
        }
      })
    } finally {
      proxy.policy = () => 'pass'
      await producer.close()
    }
    expect(errors).toEqual([])
    expect(proxy.done['cut-request'] - before['cut-request']).toBeGreaterThanOrEqual(2)
    expect(proxy.done['cut-answer'] - before['cut-answer']).toBeGreaterThanOrEqual(2)
    expect(proxy.done.corrupt - before.corrupt).toBeGreaterThanOrEqual(2)
    expect(proxy.done.drop - before.drop).toBeGreaterThanOrEqual(2)
    // Requests were pipelined up to the limit: 5 Produce requests unanswered on the connection at once.
    expect(proxy.maxProduceInFlight).toBe(5)
    const records = await consumeAll(tb.bootstrap, topic, [0, 1, 2], perPartition * 3)
    for (let p = 0; p < 3; p++) {
      const values = records.filter((r) => r.partition === p).map((r) => r.value!.toString())
      expect(values).toEqual(Array.from({ length: perPartition }, (_, i) => `p${p}-${i}`))
    }
  }, 120_000)

  it('bumps its epoch and starts again at sequence 0 when the broker lost its state (UNKNOWN_PRODUCER_ID, KIP-360)', async () => {
    const topic = 'idem-recreated'
    await admin.createTopics([{ name: topic, numPartitions: 1, replicationFactor: 1 }])
    const producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0, retryBackoffMs: 20 })
    for (let i = 0; i < 3; i++) await producer.send({ topic, partition: 0, value: `before-${i}` })
    const before = producer.producerIdAndEpoch!
    expect(before.producerEpoch).toBe(0)
    // The partition, and the broker's state of this producer with it, goes; the producer's next sequence
    // (3) is then unknown to the new partition.
    await admin.deleteTopics([topic])
    await admin.createTopics([{ name: topic, numPartitions: 1, replicationFactor: 1 }])
    const metas = await Promise.all([0, 1, 2, 3].map((i) => producer.send({ topic, partition: 0, value: `after-${i}` })))
    expect(metas.map((m) => m.offset)).toEqual([0, 1, 2, 3])
    expect(producer.producerIdAndEpoch).toEqual({ producerId: before.producerId, producerEpoch: 1 })
    // Records keep going at the new epoch.
    await producer.send({ topic, partition: 0, value: 'after-4' })
    await producer.close()
    const hs = await headersOf(raw, topic, 0)
    let seq = 0
    for (const h of hs) {
      expect(h).toMatchObject({ producerId: before.producerId, producerEpoch: 1, baseSequence: seq })
      seq += h.count
    }
    expect(seq).toBe(5)
    const records = await consumeAll(tb.bootstrap, topic, [0], 5)
    expect(records.map((r) => r.value!.toString())).toEqual(['after-0', 'after-1', 'after-2', 'after-3', 'after-4'])
  })
})
