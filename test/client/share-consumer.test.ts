// Skein's share consumer (KIP-932) against a real broker: joining a share group, share sessions, implicit
// and explicit acknowledgement, RELEASE and delivery counts, sharing one partition between two members,
// close releasing what a member held, acknowledgements refused after their lock expired. Each group starts
// at the log start through the group config share.auto.offset.reset=earliest (IncrementalAlterConfigs on
// the GROUP resource), as librdkafka's share tests set it.
// The wire itself (epochs, acknowledgements on the next fetch, the closing requests) is checked through a
// recording proxy; error answers a real broker gives rarely are in share-consumer-errors.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AcknowledgeType, Admin, ErrorCode, KafkaError, Producer, ShareConsumer, type AcknowledgementResult, type ShareConsumerRecord } from '../../src/client/index.js'
import { ApiKey } from '../../src/protocol/api-keys.gen.js'
import * as ShareAcknowledge from '../../src/protocol/messages/79-share-acknowledge.gen.js'
import * as ShareFetch from '../../src/protocol/messages/78-share-fetch.gen.js'
import * as ShareGroupHeartbeat from '../../src/protocol/messages/76-share-group-heartbeat.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { startProxiedBroker, startTestBroker, type ProxiedBroker, type TestBroker } from '../harness/index.js'

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Polls until `want` records came or the time is up. */
async function pollUntil(c: ShareConsumer, want: number, ms = 20_000, each?: (r: ShareConsumerRecord) => void): Promise<ShareConsumerRecord[]> {
  const got: ShareConsumerRecord[] = []
  const deadline = Date.now() + ms
  while (got.length < want && Date.now() < deadline) {
    for (const r of await c.poll(500)) {
      got.push(r)
      each?.(r)
    }
  }
  return got
}

describe('ShareConsumer', () => {
  let tb: TestBroker
  let admin: Admin
  let producer: Producer
  const consumers: ShareConsumer[] = []
  const consumer = (groupId: string, extra: Partial<ConstructorParameters<typeof ShareConsumer>[0]> = {}): ShareConsumer => {
    const c = new ShareConsumer({ bootstrapServers: tb.bootstrap, groupId, ...extra })
    consumers.push(c)
    return c
  }

  /** A topic of one partition with n records, each in a batch of its own (so that a ShareFetch of max.poll.records takes a few). */
  async function topicWith(name: string, n: number, partitions = 1): Promise<void> {
    await admin.createTopics([{ name, numPartitions: partitions, replicationFactor: 1 }])
    for (let i = 0; i < n; i++) await producer.send({ topic: name, partition: i % partitions, key: `k${i}`, value: `v${i}` })
  }

  async function earliest(group: string, more: { name: string; value: string }[] = []): Promise<void> {
    await admin.alterConfigs({ type: 'group', name: group }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }, ...more.map((m) => ({ op: 'set' as const, ...m }))])
  }

  beforeAll(async () => {
    // Lock durations down to 1 s (Kafka's minimum is 15 s) for the lock-expiry case.
    tb = await startTestBroker(['group.share.min.record.lock.duration.ms=1000'])
    admin = new Admin({ bootstrapServers: tb.bootstrap })
    producer = new Producer({ bootstrapServers: tb.bootstrap, lingerMs: 0 })
  })

  afterAll(async () => {
    for (const c of consumers) await c.close().catch(() => {})
    await producer?.close()
    await admin?.close()
    await tb?.stop()
  })

  it('one consumer gets every record once, with delivery count 1 (implicit acknowledgement)', async () => {
    await topicWith('share-one', 30)
    await earliest('g-one')
    const c = consumer('g-one', { maxPollRecords: 7 })
    c.subscribe(['share-one'])
    const got = await pollUntil(c, 30)
    expect(got.map((r) => r.offset).sort((a, b) => a - b)).toEqual([...Array(30).keys()])
    expect(got.every((r) => r.deliveryCount === 1)).toBe(true)
    expect(got.find((r) => r.offset === 3)?.value?.toString()).toBe('v3')
    // Accepted by the next polls: nothing comes back.
    const again = await pollUntil(c, 1, 2000)
    expect(again).toEqual([])
    expect(c.acquisitionLockTimeoutMs()).toBeGreaterThan(0)
    expect(c.memberEpoch).toBeGreaterThan(0)
  })

  it('two consumers of one group share one partition: every record to one of them only', async () => {
    await admin.createTopics([{ name: 'share-two', numPartitions: 1, replicationFactor: 1 }])
    await earliest('g-two')
    const a = consumer('g-two', { maxPollRecords: 5 })
    const b = consumer('g-two', { maxPollRecords: 5 })
    a.subscribe(['share-two'])
    b.subscribe(['share-two'])
    // Both members in the group (and sharing the one partition) before there is anything to take.
    while (a.memberEpoch === 0 || b.memberEpoch === 0) await Promise.all([a.poll(100), b.poll(100)])
    for (let i = 0; i < 120; i++) await producer.send({ topic: 'share-two', value: `v${i}` })
    const seenA = new Set<number>()
    const seenB = new Set<number>()
    const deadline = Date.now() + 30_000
    // Both poll at once, taking a moment over each poll's records; each record is held by one member
    // until accepted (implicitly, by its next poll), and never given to the other.
    const run = async (c: ShareConsumer, seen: Set<number>, other: Set<number>): Promise<void> => {
      while (seenA.size + seenB.size < 120 && Date.now() < deadline) {
        const records = await c.poll(300)
        for (const r of records) {
          expect(seen.has(r.offset) || other.has(r.offset), `offset ${r.offset} delivered twice`).toBe(false)
          seen.add(r.offset)
        }
        if (records.length > 0) await sleep(20)
      }
    }
    await Promise.all([run(a, seenA, seenB), run(b, seenB, seenA)])
    expect(seenA.size + seenB.size).toBe(120)
    expect(seenA.size).toBeGreaterThan(0)
    expect(seenB.size).toBeGreaterThan(0)
  })

  it('RELEASE redelivers with delivery count 2; ACCEPT is final; commitSync answers per partition', async () => {
    await topicWith('share-release', 5)
    await earliest('g-release')
    const c = consumer('g-release', { acknowledgementMode: 'explicit' })
    const results: AcknowledgementResult[] = []
    c.setAcknowledgementCommitCallback((r) => results.push(r))
    c.subscribe(['share-release'])
    const first = await pollUntil(c, 5)
    expect(first.map((r) => r.deliveryCount)).toEqual([1, 1, 1, 1, 1])
    for (const r of first) c.acknowledge(r, AcknowledgeType.RELEASE)
    const second = await pollUntil(c, 5)
    expect(second.map((r) => r.offset)).toEqual([0, 1, 2, 3, 4])
    expect(second.map((r) => r.deliveryCount)).toEqual([2, 2, 2, 2, 2])
    // The type may change until the acknowledgements are sent.
    for (const r of second) c.acknowledge(r, AcknowledgeType.REJECT)
    for (const r of second) c.acknowledge(r)
    const committed = await c.commitSync()
    expect(committed).toEqual([{ topic: 'share-release', partition: 0, topicId: expect.any(String), offsets: [0, 1, 2, 3, 4], error: null }])
    expect(await pollUntil(c, 1, 1500)).toEqual([])
    // The RELEASE rode on the ShareFetch of the second poll: the callback saw both outcomes.
    expect(results.map((r) => [r.offsets.length, r.error])).toEqual([[5, null], [5, null]])
  })

  it('explicit mode: poll refuses to go on while a record is not acknowledged; implicit mode refuses acknowledge()', async () => {
    await topicWith('share-explicit', 3)
    await earliest('g-explicit')
    const c = consumer('g-explicit', { acknowledgementMode: 'explicit' })
    c.subscribe(['share-explicit'])
    const got = await pollUntil(c, 3)
    c.acknowledge(got[0]!)
    await expect(c.poll(100)).rejects.toThrow(/must be acknowledged/)
    for (const r of got) c.acknowledge(r)
    expect(() => c.acknowledge({ topic: 'share-explicit', partition: 0, offset: 99 })).toThrow(/cannot be acknowledged/)
    await c.poll(100)
    const i = consumer('g-explicit-implicit')
    expect(() => i.acknowledge(got[0]!)).toThrow(/explicit/)
  })

  it('implicit mode accepts the records of a poll on the next poll: another member never sees them', async () => {
    await topicWith('share-implicit', 10)
    await earliest('g-implicit')
    const a = consumer('g-implicit')
    const results: AcknowledgementResult[] = []
    a.setAcknowledgementCommitCallback((r) => results.push(r))
    a.subscribe(['share-implicit'])
    const got = await pollUntil(a, 10)
    expect(got).toHaveLength(10)
    // The next poll accepts them (on its ShareFetch) and sees the outcome.
    const deadline = Date.now() + 5000
    while (results.length === 0 && Date.now() < deadline) await a.poll(200)
    expect(results.flatMap((r) => r.offsets).sort((x, y) => x - y)).toEqual([...Array(10).keys()])
    expect(results.every((r) => r.error === null)).toBe(true)
    await a.close()
    const b = consumer('g-implicit')
    b.subscribe(['share-implicit'])
    expect(await pollUntil(b, 1, 2500)).toEqual([])
  })

  it('close releases the records a member held to the other member at once (no lock expiry)', async () => {
    await topicWith('share-close', 8)
    await earliest('g-close')
    const a = consumer('g-close', { acknowledgementMode: 'explicit' })
    a.subscribe(['share-close'])
    const held = await pollUntil(a, 8)
    expect(held).toHaveLength(8)
    const b = consumer('g-close')
    b.subscribe(['share-close'])
    // b joins and finds nothing: a holds every record (Kafka's default lock is 30 s).
    expect(await pollUntil(b, 1, 1500)).toEqual([])
    const closedAt = Date.now()
    await a.close()
    const got = await pollUntil(b, 8, 10_000)
    expect(got.map((r) => r.offset).sort((x, y) => x - y)).toEqual([...Array(8).keys()])
    expect(got.every((r) => r.deliveryCount === 2)).toBe(true)
    expect(Date.now() - closedAt).toBeLessThan(10_000)
  })

  it('an acknowledgement after the lock expired fails with INVALID_RECORD_STATE; the record comes back with delivery count 2', async () => {
    await topicWith('share-lock', 2)
    await earliest('g-lock', [{ name: 'share.record.lock.duration.ms', value: '1000' }])
    const c = consumer('g-lock', { acknowledgementMode: 'explicit' })
    c.subscribe(['share-lock'])
    const got = await pollUntil(c, 2)
    expect(c.acquisitionLockTimeoutMs()).toBe(1000)
    await sleep(2000)
    for (const r of got) c.acknowledge(r)
    const [result] = await c.commitSync()
    expect(result?.offsets).toEqual([0, 1])
    expect((result?.error as KafkaError).code).toBe(ErrorCode.INVALID_RECORD_STATE)
    const again = await pollUntil(c, 2)
    expect(again.map((r) => r.deliveryCount)).toEqual([2, 2])
    for (const r of again) c.acknowledge(r)
  })

  it('a member that leaves hands its partitions over; unsubscribe leaves the group', async () => {
    await topicWith('share-leave', 4, 2)
    await earliest('g-leave')
    const a = consumer('g-leave')
    a.subscribe(['share-leave'])
    expect(await pollUntil(a, 4)).toHaveLength(4)
    await a.poll(100)
    await a.unsubscribe()
    expect(a.subscription()).toEqual([])
    await expect(a.poll(100)).rejects.toThrow(/subscription/)
    for (let i = 4; i < 8; i++) await producer.send({ topic: 'share-leave', partition: i % 2, value: `v${i}` })
    const b = consumer('g-leave')
    b.subscribe(['share-leave'])
    const got = await pollUntil(b, 4)
    expect(got.map((r) => `${r.partition}:${r.offset}`).sort()).toEqual(['0:2', '0:3', '1:2', '1:3'])
  })
})

describe('ShareConsumer on the wire (through a recording proxy)', () => {
  let pb: ProxiedBroker
  let admin: Admin
  beforeAll(async () => {
    pb = await startProxiedBroker([], [ApiKey.ShareGroupHeartbeat, ApiKey.ShareFetch, ApiKey.ShareAcknowledge])
    admin = new Admin({ bootstrapServers: pb.bootstrap })
  })
  afterAll(async () => {
    await admin?.close()
    await pb?.stop()
  })

  const bodies = <T>(apiKey: number, decode: (r: Reader, v: number) => T): T[] =>
    pb.proxy.requests.filter((r) => r.apiKey === apiKey).map((r) => decode(new Reader(r.body!), r.apiVersion))

  it('joins with epoch 0 and a member id of its own, sends sessions 0, 1, 2, ... with acknowledgements on the next fetch, commits on ShareAcknowledge, closes with -1 and leaves with -1', async () => {
    await admin.createTopics([{ name: 'share-wire', numPartitions: 1, replicationFactor: 1 }])
    await admin.alterConfigs({ type: 'group', name: 'g-wire' }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }])
    const producer = new Producer({ bootstrapServers: pb.bootstrap })
    for (let i = 0; i < 4; i++) await producer.send({ topic: 'share-wire', value: `v${i}` })
    await producer.close()
    const c = new ShareConsumer({ bootstrapServers: pb.bootstrap, groupId: 'g-wire', acknowledgementMode: 'explicit' })
    c.subscribe(['share-wire'])
    const first = await pollUntil(c, 4)
    for (const r of first) c.acknowledge(r, r.offset === 1 ? AcknowledgeType.RELEASE : AcknowledgeType.ACCEPT)
    const again = await pollUntil(c, 1)
    expect(again.map((r) => [r.offset, r.deliveryCount])).toEqual([[1, 2]])
    c.acknowledge(again[0]!, AcknowledgeType.REJECT)
    expect((await c.commitSync()).map((r) => [r.offsets, r.error])).toEqual([[[1], null]])
    const memberId = c.memberId
    await c.close()

    const beats = bodies(ApiKey.ShareGroupHeartbeat, ShareGroupHeartbeat.decodeShareGroupHeartbeatRequest)
    expect(beats.every((b) => b.memberId === memberId && b.groupId === 'g-wire')).toBe(true)
    expect(beats[0]).toMatchObject({ memberEpoch: 0, subscribedTopicNames: ['share-wire'] })
    expect(beats.slice(1, -1).every((b) => b.memberEpoch > 0 && b.subscribedTopicNames === null)).toBe(true)
    expect(beats[beats.length - 1]).toMatchObject({ memberEpoch: -1, subscribedTopicNames: null })

    const fetches = bodies(ApiKey.ShareFetch, ShareFetch.decodeShareFetchRequest)
    expect(fetches.map((f) => f.shareSessionEpoch)).toEqual(fetches.map((_, i) => i))
    expect(fetches[0]!.topics.flatMap((t) => t.partitions.map((p) => [p.partitionIndex, p.acknowledgementBatches]))).toEqual([[0, []]])
    expect(fetches.every((f) => f.memberId === memberId && f.maxRecords === 500)).toBe(true)
    // The second poll's fetch carries the first poll's acknowledgements: 0 accepted, 1 released, 2-3 accepted.
    const acked = fetches.flatMap((f) => f.topics.flatMap((t) => t.partitions.flatMap((p) => p.acknowledgementBatches)))
    expect(acked.map((b) => [Number(b.firstOffset), Number(b.lastOffset), b.acknowledgeTypes])).toEqual([[0, 3, [1, 2, 1, 1]]])
    // Later fetches name no partition again: the session has it.
    expect(fetches.slice(1).every((f) => f.topics.every((t) => t.partitions.every((p) => p.acknowledgementBatches.length > 0)))).toBe(true)

    const acks = bodies(ApiKey.ShareAcknowledge, ShareAcknowledge.decodeShareAcknowledgeRequest)
    expect(acks.map((a) => a.shareSessionEpoch)).toEqual([fetches.length, -1])
    expect(acks[0]!.topics.flatMap((t) => t.partitions.flatMap((p) => p.acknowledgementBatches.map((b) => [Number(b.firstOffset), Number(b.lastOffset), b.acknowledgeTypes])))).toEqual([[1, 1, [3]]])
    expect(acks[1]!.topics).toEqual([])
  })

  it('max.poll.interval.ms: a member that stops polling gives its records back and leaves, and its next poll joins again', async () => {
    await admin.createTopics([{ name: 'share-interval', numPartitions: 1, replicationFactor: 1 }])
    await admin.alterConfigs({ type: 'group', name: 'g-interval' }, [{ op: 'set', name: 'share.auto.offset.reset', value: 'earliest' }])
    const producer = new Producer({ bootstrapServers: pb.bootstrap })
    for (let i = 0; i < 3; i++) await producer.send({ topic: 'share-interval', value: `v${i}` })
    await producer.close()
    const slow = new ShareConsumer({ bootstrapServers: pb.bootstrap, groupId: 'g-interval', maxPollIntervalMs: 1000 })
    const other = new ShareConsumer({ bootstrapServers: pb.bootstrap, groupId: 'g-interval' })
    try {
      slow.subscribe(['share-interval'])
      expect(await pollUntil(slow, 3)).toHaveLength(3)
      other.subscribe(['share-interval'])
      // The slow member does not poll again: after a second its records (not accepted) go to the other.
      const got = await pollUntil(other, 3, 15_000)
      expect(got.map((r) => [r.offset, r.deliveryCount])).toEqual([[0, 2], [1, 2], [2, 2]])
      const leaves = bodies(ApiKey.ShareGroupHeartbeat, ShareGroupHeartbeat.decodeShareGroupHeartbeatRequest).filter((b) => b.memberId === slow.memberId && b.memberEpoch === -1)
      expect(leaves).toHaveLength(1)
      // Its next poll joins again, with the same member id and epoch 0.
      await slow.poll(1000)
      const joins = bodies(ApiKey.ShareGroupHeartbeat, ShareGroupHeartbeat.decodeShareGroupHeartbeatRequest).filter((b) => b.memberId === slow.memberId && b.memberEpoch === 0)
      expect(joins).toHaveLength(2)
      expect(slow.memberEpoch).toBeGreaterThan(0)
    } finally {
      await slow.close()
      await other.close()
    }
  })
})
