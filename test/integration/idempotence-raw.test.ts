// The idempotent producer over raw protocol frames: InitProducerId (ids unique across restarts, KIP-360
// epoch bumps), exactly-once writes when connections are cut mid-request or before the response and the
// batches are retried, the sequence/epoch errors, and producer state across a graceful restart and a
// SIGKILL of a broker process.
import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as InitProducerId from '../../src/protocol/messages/22-init-producer-id.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import {
  RawClient, batchOf, decodeAllRecords, recordsBuffer, startBrokerProcess, startTestBroker, tempDataDir, type TestBroker,
} from '../harness/index.js'

async function initProducerId(c: RawClient, version: number, partial: Partial<InitProducerId.InitProducerIdRequest> = {}): Promise<InitProducerId.InitProducerIdResponse> {
  const req = InitProducerId.createInitProducerIdRequest({ transactionalId: null, transactionTimeoutMs: 60000, ...partial })
  return c.call(22, version, (w) => InitProducerId.encodeInitProducerIdRequest(w, req, version), InitProducerId.decodeInitProducerIdResponse)
}

function idemBatch(producerId: number, epoch: number, seq: number, values: string[]): Buffer {
  return batchOf(values.map((v) => ({ value: Buffer.from(v) })), { producerId, producerEpoch: epoch, baseSequence: seq })
}

function produceFrame(c: RawClient, topic: string, records: Buffer): { correlationId: number; bytes: Buffer } {
  const req = c.produceRequest(topic, 0, records, -1)
  return c.frame(0, 7, (w) => Produce.encodeProduceRequest(w, req, 7))
}

async function values(c: RawClient, topic: string): Promise<{ offset: number; value: string }[]> {
  const p = await c.fetch(topic, 0, 0)
  expect(p.errorCode).toBe(0)
  return decodeAllRecords(recordsBuffer(p)).map((r) => ({ offset: r.offset, value: r.value!.toString() }))
}

let tb: TestBroker
let client: RawClient

beforeAll(async () => {
  tb = await startTestBroker()
  client = await RawClient.connect(tb.host, tb.port)
})

afterAll(async () => {
  client?.close()
  await tb?.stop()
})

describe('InitProducerId', () => {
  it('hands out distinct producer ids at epoch 0 in v0-3', async () => {
    const ids = new Set<bigint>()
    for (const v of [0, 1, 2, 3]) {
      const res = await initProducerId(client, v)
      expect(res).toMatchObject({ errorCode: 0, producerEpoch: 0 })
      expect(res.producerId).toBeGreaterThanOrEqual(0n)
      ids.add(res.producerId)
    }
    expect(ids.size).toBe(4)
    const apis = await client.apiVersions()
    expect(apis.apiKeys.find((k) => k.apiKey === 22)).toMatchObject({ minVersion: 0, maxVersion: 3 })
  })

  it('bumps the epoch of a producer that sends its id and epoch (v3), answers a retried bump the same, fences older epochs', async () => {
    const first = await initProducerId(client, 3)
    const bumped = await initProducerId(client, 3, { producerId: first.producerId, producerEpoch: 0 })
    expect(bumped).toMatchObject({ errorCode: 0, producerId: first.producerId, producerEpoch: 1 })
    // The response was lost and the client asks again with epoch 0: the same answer, no second bump.
    expect(await initProducerId(client, 3, { producerId: first.producerId, producerEpoch: 0 })).toMatchObject({ errorCode: 0, producerId: first.producerId, producerEpoch: 1 })
    expect(await initProducerId(client, 3, { producerId: first.producerId, producerEpoch: 1 })).toMatchObject({ errorCode: 0, producerEpoch: 2 })
    expect(await initProducerId(client, 3, { producerId: first.producerId, producerEpoch: 0 })).toMatchObject({ errorCode: ErrorCode.INVALID_PRODUCER_EPOCH, producerId: -1n })
    // An id the broker never handed out (or no longer remembers) gets a fresh id, as Kafka does.
    const fresh = await initProducerId(client, 3, { producerId: 987654321n, producerEpoch: 4 })
    expect(fresh).toMatchObject({ errorCode: 0, producerEpoch: 0 })
    expect(fresh.producerId).not.toBe(987654321n)
    expect((await initProducerId(client, 3, { producerId: 5n, producerEpoch: -1 })).errorCode).toBe(ErrorCode.INVALID_REQUEST)
    expect((await initProducerId(client, 3, { producerId: -1n, producerEpoch: 2 })).errorCode).toBe(ErrorCode.INVALID_REQUEST)
  })

  it('serves transactional ids through the transaction coordinator (same id, epoch + 1 per init)', async () => {
    const first = await initProducerId(client, 0, { transactionalId: 'tx-1' })
    expect(first).toMatchObject({ errorCode: ErrorCode.NONE, producerEpoch: 0 })
    expect(await initProducerId(client, 3, { transactionalId: 'tx-1' })).toMatchObject({ errorCode: ErrorCode.NONE, producerId: first.producerId, producerEpoch: 1 })
  })

  it('never hands out an id twice across restarts', async () => {
    const dataDir = tempDataDir('pids')
    let b = await startTestBroker([], { dataDir })
    let c = await RawClient.connect(b.host, b.port)
    const before: bigint[] = []
    for (let i = 0; i < 3; i++) before.push((await initProducerId(c, 1)).producerId)
    c.close()
    b = await b.restart()
    c = await RawClient.connect(b.host, b.port)
    const after = (await initProducerId(c, 1)).producerId
    c.close()
    await b.stop()
    expect(after).toBeGreaterThan(before.reduce((a, x) => (x > a ? x : a)))
    rmSync(dataDir, { recursive: true, force: true })
  })
})

describe('produce with retries over cut connections', () => {
  it('writes every record exactly once when requests are cut mid-frame or answered to a closed connection', async () => {
    const topic = 'idem-cut'
    expect((await client.createTopic(topic, 1)).errorCode).toBe(0)
    const { producerId: pid } = await initProducerId(client, 1)
    const producerId = Number(pid)
    const expected: string[] = []
    let seq = 0
    for (let round = 0; round < 12; round++) {
      const vals = [0, 1, 2].map((i) => `r${round}-${i}`)
      const batch = idemBatch(producerId, 0, seq, vals)
      const mode = round % 3
      if (mode > 0) {
        const c = await RawClient.connect(tb.host, tb.port)
        const { bytes } = produceFrame(c, topic, batch)
        // mode 1: the connection drops halfway through the request; mode 2: after the whole request,
        // before the response could be read.
        await c.write(mode === 1 ? bytes.subarray(0, bytes.length >> 1) : bytes)
        c.close()
      }
      // The client retries until it gets an answer (twice in mode 2, the second retry a sure duplicate).
      const first = await client.produce(topic, 0, batch, -1)
      expect(first.errorCode).toBe(0)
      if (mode === 2) {
        const again = await client.produce(topic, 0, batch, -1)
        expect(again).toMatchObject({ errorCode: 0, baseOffset: first.baseOffset })
      }
      expected.push(...vals)
      seq += 3
    }
    const got = await values(client, topic)
    expect(got.map((r) => r.value)).toEqual(expected)
    expect(got.map((r) => r.offset)).toEqual(expected.map((_, i) => i))
  })

  it('a window of 5 pipelined batches cut before their answers is retried without duplicates', async () => {
    const topic = 'idem-window'
    expect((await client.createTopic(topic, 1)).errorCode).toBe(0)
    const producerId = Number((await initProducerId(client, 1)).producerId)
    const batches = Array.from({ length: 5 }, (_, i) => idemBatch(producerId, 0, i * 2, [`w${i}-a`, `w${i}-b`]))
    const c = await RawClient.connect(tb.host, tb.port)
    await c.write(Buffer.concat(batches.map((b) => produceFrame(c, topic, b).bytes)))
    // Wait until the broker has written them all (the client never reads its answers), then cut.
    for (let i = 0; i < 100 && (await client.listOffset(topic, 0, -1n)).offset < 10n; i++) await new Promise((r) => setTimeout(r, 20))
    c.close()
    for (const [i, b] of batches.entries()) {
      expect(await client.produce(topic, 0, b, -1)).toMatchObject({ errorCode: 0, baseOffset: BigInt(i * 2) })
    }
    expect((await values(client, topic)).map((r) => r.value)).toEqual(batches.flatMap((_, i) => [`w${i}-a`, `w${i}-b`]))
  })

  it('answers sequence gaps, fenced epochs and unknown producers with Kafka error codes', async () => {
    const topic = 'idem-errors'
    expect((await client.createTopic(topic, 1)).errorCode).toBe(0)
    const producerId = Number((await initProducerId(client, 1)).producerId)
    expect((await client.produce(topic, 0, idemBatch(producerId, 0, 0, ['a']), -1)).errorCode).toBe(0)
    expect((await client.produce(topic, 0, idemBatch(producerId, 0, 5, ['gap']), -1)).errorCode).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
    expect((await client.produce(topic, 0, idemBatch(producerId, 1, 0, ['new-epoch']), 1)).errorCode).toBe(0)
    expect((await client.produce(topic, 0, idemBatch(producerId, 0, 1, ['zombie']), 1)).errorCode).toBe(ErrorCode.INVALID_PRODUCER_EPOCH)
    expect((await client.produce(topic, 0, idemBatch(producerId + 1000, 0, 7, ['stranger']), 1)).errorCode).toBe(ErrorCode.UNKNOWN_PRODUCER_ID)
    expect((await values(client, topic)).map((r) => r.value)).toEqual(['a', 'new-epoch'])
  })

  it('expires idle producer state after producer.id.expiration.ms on the shard timer', async () => {
    const b = await startTestBroker(['producer.id.expiration.ms=600', 'producer.id.expiration.check.interval.ms=100'])
    const c = await RawClient.connect(b.host, b.port)
    try {
      expect((await c.createTopic('idem-expiry', 1)).errorCode).toBe(0)
      const producerId = Number((await initProducerId(c, 1)).producerId)
      expect((await c.produce('idem-expiry', 0, idemBatch(producerId, 0, 0, ['a']), -1)).errorCode).toBe(0)
      expect((await c.produce('idem-expiry', 0, idemBatch(producerId, 0, 1, ['b']), -1)).errorCode).toBe(0)
      await new Promise((r) => setTimeout(r, 1200))
      expect((await c.produce('idem-expiry', 0, idemBatch(producerId, 0, 2, ['c']), -1)).errorCode).toBe(ErrorCode.UNKNOWN_PRODUCER_ID)
      expect((await c.produce('idem-expiry', 0, idemBatch(producerId, 0, 0, ['again']), -1))).toMatchObject({ errorCode: 0, baseOffset: 2n })
    } finally {
      c.close()
      await b.stop()
    }
  })

  it('keeps producer state across a graceful restart and a SIGKILL of the broker process', async () => {
    const topic = 'idem-restart'
    const dataDir = tempDataDir('idem-proc')
    let proc = await startBrokerProcess({ dataDir, overrides: ['log.segment.bytes=2000'] })
    try {
      let c = await RawClient.connect(proc.host, proc.port)
      expect((await c.createTopic(topic, 1)).errorCode).toBe(0)
      const producerId = Number((await initProducerId(c, 3)).producerId)
      const sent: Buffer[] = []
      for (let s = 0; s < 30; s++) {
        const b = idemBatch(producerId, 0, s, [`v${s}-${'x'.repeat(100)}`])
        sent.push(b)
        expect((await c.produce(topic, 0, b, -1)).errorCode).toBe(0)
      }
      c.close()
      expect(await proc.kill('SIGKILL')).toBe('SIGKILL')
      proc = await startBrokerProcess({ dataDir, port: proc.port, overrides: ['log.segment.bytes=2000'] })
      c = await RawClient.connect(proc.host, proc.port)
      // The last 5 batches are still recognised after the crash (snapshot at the last roll + replay).
      for (let s = 25; s < 30; s++) expect(await c.produce(topic, 0, sent[s]!, -1)).toMatchObject({ errorCode: 0, baseOffset: BigInt(s) })
      expect((await c.produce(topic, 0, idemBatch(producerId, 0, 31, ['gap']), -1)).errorCode).toBe(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
      expect((await c.produce(topic, 0, idemBatch(producerId, 0, 30, ['after-crash']), -1))).toMatchObject({ errorCode: 0, baseOffset: 30n })
      // The id block survived too: a new producer id is above the old one.
      expect(Number((await initProducerId(c, 3)).producerId)).toBeGreaterThan(producerId)
      c.close()
      expect(await proc.kill('SIGTERM')).toBe(0)
      proc = await startBrokerProcess({ dataDir, port: proc.port, overrides: ['log.segment.bytes=2000'] })
      c = await RawClient.connect(proc.host, proc.port)
      expect(await c.produce(topic, 0, idemBatch(producerId, 0, 30, ['after-crash']), -1)).toMatchObject({ errorCode: 0, baseOffset: 30n })
      expect(await c.produce(topic, 0, sent[29]!, -1)).toMatchObject({ errorCode: 0, baseOffset: 29n })
      const got = await values(c, topic)
      expect(got.length).toBe(31)
      expect(got.map((r) => r.offset)).toEqual(got.map((_, i) => i))
      c.close()
    } finally {
      if (proc.alive()) await proc.kill('SIGKILL')
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
