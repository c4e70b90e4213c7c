// Which Produce version real clients send now that the broker serves 0-11, seen through a recording proxy:
// @platformatic/kafka picks v11 (flexible, KIP-951), librdkafka 2.0.2 and kafkajs stay at v7 (their
// highest). Records written at each version read back the same, and a batch refused for some of its
// records reaches the client as INVALID_RECORD.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Kafka, logLevel } from 'kafkajs'
import { Admin, Producer } from '@platformatic/kafka'
import { decodeAllRecords, hasKcat, RawClient, recordsBuffer, runOk, startProxiedBroker, type ProxiedBroker } from '../harness/index.js'

const PRODUCE = 0

let pb: ProxiedBroker
let raw: RawClient

beforeAll(async () => {
  pb = await startProxiedBroker()
  raw = await RawClient.connect('127.0.0.1', pb.brokerPort)
  expect((await raw.createTopic('pv-plain', 1)).errorCode).toBe(0)
  expect((await raw.createTopic('pv-compacted', 1, { 'cleanup.policy': 'compact' })).errorCode).toBe(0)
})

afterAll(async () => {
  raw?.close()
  await pb?.stop()
})

async function values(topic: string): Promise<string[]> {
  return decodeAllRecords(recordsBuffer(await raw.fetch(topic, 0, 0))).map((r) => r.value!.toString())
}

describe('Produce versions of real clients', () => {
  it('@platformatic/kafka sends Produce v11 and its records read back', async () => {
    const producer = new Producer({ clientId: 'pv-pk', bootstrapBrokers: [pb.bootstrap], retries: 0, timeout: 10000, autocreateTopics: false })
    try {
      await producer.send({ messages: [{ topic: 'pv-plain', partition: 0, key: Buffer.from('k'), value: Buffer.from('from platformatic') }], acks: -1 })
      expect(new Set(pb.proxy.versions(PRODUCE))).toEqual(new Set([11]))
      expect(await values('pv-plain')).toEqual(['from platformatic'])

      // A keyless record on a compacted topic: the whole batch is refused with INVALID_RECORD.
      const err = await producer
        .send({ messages: [{ topic: 'pv-compacted', partition: 0, key: Buffer.from('a'), value: Buffer.from('1') }, { topic: 'pv-compacted', partition: 0, value: Buffer.from('no key') }], acks: 1 })
        .then(() => null, (e: unknown) => e)
      // platformatic reports the partition's INVALID_RECORD and each record error (as code -1), and keeps
      // the decoded response.
      const response = (err as { errors?: { response?: { responses: { partitionResponses: { errorCode: number; recordErrors: { batchIndex: number; batchIndexErrorMessage: string }[] }[] }[] } }[] }).errors?.[0]?.response
      const partition = response?.responses[0]?.partitionResponses[0]
      expect(partition?.errorCode).toBe(87)
      expect(partition?.recordErrors).toEqual([{ batchIndex: 1, batchIndexErrorMessage: 'Compacted topic cannot accept message without key in topic partition pv-compacted-0' }])
      expect((await raw.listOffset('pv-compacted', 0, -1n)).offset).toBe(0n)
    } finally {
      await producer.close()
    }
  })

  it('kafkajs stays at Produce v7', async () => {
    const before = pb.proxy.requests.length
    const kafka = new Kafka({ clientId: 'pv-kjs', brokers: [pb.bootstrap], logLevel: logLevel.NOTHING })
    const producer = kafka.producer()
    await producer.connect()
    try {
      await producer.send({ topic: 'pv-plain', messages: [{ partition: 0, value: 'from kafkajs' }] })
    } finally {
      await producer.disconnect()
    }
    expect(new Set(pb.proxy.requests.slice(before).filter((r) => r.apiKey === PRODUCE).map((r) => r.apiVersion))).toEqual(new Set([7]))
    expect((await values('pv-plain')).at(-1)).toBe('from kafkajs')
  })

  it.skipIf(!hasKcat())('librdkafka 2.0.2 (kcat) stays at Produce v7', async () => {
    const before = pb.proxy.requests.length
    await runOk('kcat', ['-P', '-b', pb.bootstrap, '-t', 'pv-plain', '-p', '0'], { input: 'from kcat\n', timeoutMs: 30000 })
    expect(new Set(pb.proxy.requests.slice(before).filter((r) => r.apiKey === PRODUCE).map((r) => r.apiVersion))).toEqual(new Set([7]))
    expect((await values('pv-plain')).at(-1)).toBe('from kcat')
  })

  it('@platformatic/kafka Admin still works against the wider ranges', async () => {
    const admin = new Admin({ clientId: 'pv-admin', bootstrapBrokers: [pb.bootstrap], retries: 0, timeout: 10000 })
    try {
      expect(await admin.listTopics()).toEqual(expect.arrayContaining(['pv-plain', 'pv-compacted']))
    } finally {
      await admin.close()
    }
  })
})
