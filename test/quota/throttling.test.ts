// How a throttled client is treated, over raw requests to an in-process broker: KIP-219 versions get
// their response at once and the channel is muted after it, older versions get the response after the
// throttle time; acks=0 produces mute the channel without a response; controller_mutation_rate refuses
// topics with THROTTLING_QUOTA_EXCEEDED from CreateTopics v6 and throttles older versions; a
// request_percentage quota throttles a client that spends event-loop time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/admin.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import { batchOf, RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

describe('throttling', () => {
  let tb: TestBroker
  let admin: Admin

  beforeAll(async () => {
    tb = await startTestBroker(['quota.window.num=2', 'quota.window.size.seconds=1', 'controller.quota.window.num=2', 'controller.quota.window.size.seconds=1'])
    admin = new Admin({ bootstrapServers: [tb.bootstrap], clientId: 'quota-admin' })
    await admin.createTopics([{ name: 'throttled', numPartitions: 1 }])
  })
  afterAll(async () => {
    await admin?.close()
    await tb?.stop()
  })

  /** The raw client's client-id is 'skein-test'; each phase sets a more specific entity, so it gets a sensor of its own. */
  async function setQuota(entity: Record<string, string | null>, ops: Record<string, number | null>): Promise<void> {
    await admin.alterClientQuotas([{ entity, ops }])
  }
  const CLIENT = { 'client-id': 'skein-test' }
  const USER = { user: 'ANONYMOUS' }
  const USER_CLIENT = { user: 'ANONYMOUS', 'client-id': 'skein-test' }

  async function timedProduce(client: RawClient, version: number, bytes: number): Promise<{ throttleTimeMs: number; ms: number }> {
    const req = client.produceRequest('throttled', 0, batchOf([{ value: Buffer.alloc(bytes, 1) }]), 1)
    const t0 = Date.now()
    const res = await client.call(0, version, (w) => Produce.encodeProduceRequest(w, req, version), Produce.decodeProduceResponse)
    expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE)
    return { throttleTimeMs: res.throttleTimeMs, ms: Date.now() - t0 }
  }

  it('answers KIP-219 versions at once and mutes after; holds older versions for the throttle time', async () => {
    await setQuota(CLIENT, { producer_byte_rate: 50_000 })
    const client = await RawClient.connect(tb.host, tb.port)
    try {
      // v7 (KIP-219): 100 kB over the 1 s minimum window is 2x the quota: throttled about 1 s, answered at once.
      const first = await timedProduce(client, 7, 100_000)
      expect(first.throttleTimeMs).toBeGreaterThan(700)
      expect(first.ms).toBeLessThan(first.throttleTimeMs - 200)
      // The channel is muted: the next request waits out the throttle time.
      const second = await timedProduce(client, 7, 100)
      expect(second.ms).toBeGreaterThan(first.throttleTimeMs - 300)
    } finally {
      client.close()
    }
    // A user quota takes precedence over the client-id one (and measures in a sensor of its own).
    await setQuota(USER, { producer_byte_rate: 50_000 })
    const old = await RawClient.connect(tb.host, tb.port)
    try {
      // v5 (before KIP-219): the response itself comes after the throttle time.
      const held = await timedProduce(old, 5, 100_000)
      expect(held.throttleTimeMs).toBeGreaterThan(700)
      expect(held.ms).toBeGreaterThan(held.throttleTimeMs - 100)
    } finally {
      old.close()
    }
  }, 20_000)

  it('mutes an acks=0 producer over its quota', async () => {
    await setQuota(USER_CLIENT, { producer_byte_rate: 50_000 })
    const client = await RawClient.connect(tb.host, tb.port)
    try {
      await client.produceNoAck('throttled', 0, batchOf([{ value: Buffer.alloc(100_000, 1) }]))
      // Requests already read when the mute begins are still served (a connection serves its requests
      // concurrently; Kafka reads one at a time): give the append time to finish first.
      await new Promise((r) => setTimeout(r, 200))
      const t0 = Date.now()
      const req = Metadata.createMetadataRequest({ topics: null })
      await client.call(3, 9, (w) => Metadata.encodeMetadataRequest(w, req, 9), Metadata.decodeMetadataResponse)
      expect(Date.now() - t0).toBeGreaterThan(500)
    } finally {
      client.close()
      for (const e of [CLIENT, USER, USER_CLIENT]) await setQuota(e, { producer_byte_rate: null })
    }
  }, 20_000)

  it('controller_mutation_rate: THROTTLING_QUOTA_EXCEEDED from CreateTopics v6, a throttle before', async () => {
    // 1 partition/s over 2 x 1 s windows: a bucket of 2 partitions.
    await setQuota(CLIENT, { controller_mutation_rate: 1 })
    const client = await RawClient.connect(tb.host, tb.port)
    const create = async (version: number, names: string[]): Promise<CreateTopics.CreateTopicsResponse> => {
      const req = CreateTopics.createCreateTopicsRequest({
        timeoutMs: 5000,
        topics: names.map((name) => CreateTopics.createCreatableTopic({ name, numPartitions: 3, replicationFactor: 1 })),
      })
      return client.call(19, version, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, version), CreateTopics.decodeCreateTopicsResponse)
    }
    try {
      // The first topic is accepted (the bucket was not in debt) and takes it to -1; the second is refused.
      const strict = await create(7, ['m1', 'm2'])
      expect(strict.topics.map((t) => t.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.THROTTLING_QUOTA_EXCEEDED])
      expect(strict.topics[1]!.errorMessage).toBe('The throttling quota has been exceeded.')
      expect(strict.throttleTimeMs).toBeGreaterThan(0)
      await new Promise((r) => setTimeout(r, strict.throttleTimeMs + 50))
      // v5 is permissive: both created, the client throttled after.
      const permissive = await create(5, ['m3', 'm4'])
      expect(permissive.topics.map((t) => t.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE])
      expect(permissive.throttleTimeMs).toBeGreaterThan(2000)
    } finally {
      client.close()
      await setQuota(CLIENT, { controller_mutation_rate: null })
    }
  }, 30_000)

  it('request_percentage throttles a client by the event-loop time its requests take', async () => {
    await setQuota(CLIENT, { request_percentage: 0.01 })
    const client = await RawClient.connect(tb.host, tb.port)
    try {
      const req = Metadata.createMetadataRequest({ topics: null })
      let throttle = 0
      for (let i = 0; i < 200 && throttle === 0; i++) {
        throttle = (await client.call(3, 9, (w) => Metadata.encodeMetadataRequest(w, req, 9), Metadata.decodeMetadataResponse)).throttleTimeMs
      }
      expect(throttle).toBeGreaterThan(0)
    } finally {
      client.close()
      await setQuota(CLIENT, { request_percentage: null })
    }
  }, 30_000)
})
