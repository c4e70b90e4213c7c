// The share consumer's error handling against a scripted broker (one node: coordinator and leader), for
// answers a real broker gives only in rare moments: no share APIs in ApiVersions (UNSUPPORTED_VERSION, as
// Kafka's client: no guessed version), a share session the broker lost
// (INVALID_SHARE_SESSION_EPOCH: a new session, the acknowledgements it carried reported failed), a member
// the coordinator forgot (UNKNOWN_MEMBER_ID: rejoin with epoch 0 and the same member id),
// NOT_LEADER_OR_FOLLOWER (a metadata refresh), INVALID_RECORD_STATE per partition (to the callback), and
// hostile answers (a huge acquired range over garbage bytes, a heartbeat interval of 0), which must neither
// crash the client nor make it loop or grow.
import { createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCode, KafkaError, ShareConsumer, type AcknowledgementResult } from '../../src/client/index.js'
import { ApiKey } from '../../src/protocol/api-keys.gen.js'
import { encodeResponseFrame } from '../../src/protocol/frame.js'
import { readRequestHeader } from '../../src/protocol/header.js'
import * as ApiVersions from '../../src/protocol/messages/18-api-versions.gen.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import * as ShareAcknowledge from '../../src/protocol/messages/79-share-acknowledge.gen.js'
import * as ShareFetch from '../../src/protocol/messages/78-share-fetch.gen.js'
import * as ShareGroupHeartbeat from '../../src/protocol/messages/76-share-group-heartbeat.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { batchOf } from '../harness/raw-client.js'

const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ'
const TOPIC = 'jobs'

interface Script {
  /** Leave the share APIs out of ApiVersions (a broker without share groups). */
  noShareApis?: boolean
  heartbeat?: (req: ShareGroupHeartbeat.ShareGroupHeartbeatRequest, n: number) => Partial<ShareGroupHeartbeat.ShareGroupHeartbeatResponse> | undefined
  fetch?: (req: ShareFetch.ShareFetchRequest, n: number) => Partial<ShareFetch.ShareFetchResponse> | undefined
}

interface Fake {
  server: Server
  port: number
  heartbeats: ShareGroupHeartbeat.ShareGroupHeartbeatRequest[]
  fetches: ShareFetch.ShareFetchRequest[]
  acks: ShareAcknowledge.ShareAcknowledgeRequest[]
  metadatas: number
}

/** What a partition answers by default: the records 0..n-1 of one batch, all acquired with delivery count 1. */
function records(first: number, n: number, deliveryCount = 1): Partial<ShareFetch.PartitionData> {
  return {
    records: batchOf(Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`v${first + i}`) })), { baseOffset: first }),
    acquiredRecords: [ShareFetch.createAcquiredRecords({ firstOffset: BigInt(first), lastOffset: BigInt(first + n - 1), deliveryCount })],
  }
}

const answer = (parts: Partial<ShareFetch.PartitionData>): Partial<ShareFetch.ShareFetchResponse> => ({
  responses: [ShareFetch.createShareFetchableTopicResponse({ topicId: TOPIC_ID, partitions: [ShareFetch.createPartitionData({ partitionIndex: 0, records: Buffer.alloc(0), currentLeader: ShareFetch.createLeaderIdAndEpoch({ leaderId: -1, leaderEpoch: -1 }), ...parts })] })],
})

async function fakeBroker(script: Script): Promise<Fake> {
  const state: Fake = { server: null as unknown as Server, port: 0, heartbeats: [], fetches: [], acks: [], metadatas: 0 }
  const server = createServer((sock: Socket) => {
    let buf = Buffer.alloc(0)
    sock.on('error', () => {})
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
        const frame = buf.subarray(4, 4 + buf.readInt32BE(0))
        buf = buf.subarray(4 + frame.length)
        const r = new Reader(frame)
        const h = readRequestHeader(r)
        const v = h.requestApiVersion
        const k = h.requestApiKey
        let out
        if (k === ApiKey.ApiVersions) {
          const ranges: [number, number, number][] = [[ApiKey.ApiVersions, 0, 3], [ApiKey.Metadata, 0, 12], [ApiKey.FindCoordinator, 0, 3], [ApiKey.ShareGroupHeartbeat, 1, 1], [ApiKey.ShareFetch, 1, 1], [ApiKey.ShareAcknowledge, 1, 1]]
          const served = script.noShareApis === true ? ranges.slice(0, 3) : ranges
          const res = ApiVersions.createApiVersionsResponse({ apiKeys: served.map(([apiKey, minVersion, maxVersion]) => ApiVersions.createApiVersion({ apiKey, minVersion, maxVersion })) })
          out = encodeResponseFrame(k, v, h.correlationId, (w) => ApiVersions.encodeApiVersionsResponse(w, res, v))
        } else if (k === ApiKey.Metadata) {
          state.metadatas++
          const res = Metadata.createMetadataResponse({
            brokers: [Metadata.createMetadataResponseBroker({ nodeId: 0, host: '127.0.0.1', port: state.port })],
            controllerId: 0,
            topics: [Metadata.createMetadataResponseTopic({ name: TOPIC, topicId: TOPIC_ID, partitions: [Metadata.createMetadataResponsePartition({ partitionIndex: 0, leaderId: 0, replicaNodes: [0], isrNodes: [0] })] })],
          })
          out = encodeResponseFrame(k, v, h.correlationId, (w) => Metadata.encodeMetadataResponse(w, res, v))
        } else if (k === ApiKey.FindCoordinator) {
          const res = FindCoordinator.createFindCoordinatorResponse({ nodeId: 0, host: '127.0.0.1', port: state.port, errorMessage: null })
          out = encodeResponseFrame(k, v, h.correlationId, (w) => FindCoordinator.encodeFindCoordinatorResponse(w, res, v))
        } else if (k === ApiKey.ShareGroupHeartbeat) {
          const req = ShareGroupHeartbeat.decodeShareGroupHeartbeatRequest(r, v)
          state.heartbeats.push(req)
          const joined = req.memberEpoch === 0
          const res = ShareGroupHeartbeat.createShareGroupHeartbeatResponse({
            memberId: req.memberId,
            memberEpoch: req.memberEpoch < 0 ? -1 : req.memberEpoch + 1,
            heartbeatIntervalMs: 5000,
            assignment: joined ? ShareGroupHeartbeat.createAssignment({ topicPartitions: [ShareGroupHeartbeat.createTopicPartitions({ topicId: TOPIC_ID, partitions: [0] })] }) : null,
            ...script.heartbeat?.(req, state.heartbeats.length - 1),
          })
          out = encodeResponseFrame(k, v, h.correlationId, (w) => ShareGroupHeartbeat.encodeShareGroupHeartbeatResponse(w, res, v))
        } else if (k === ApiKey.ShareFetch) {
          const req = ShareFetch.decodeShareFetchRequest(r, v)
          state.fetches.push(req)
          const res = ShareFetch.createShareFetchResponse({ acquisitionLockTimeoutMs: 30000, ...answer({}), ...script.fetch?.(req, state.fetches.length - 1) })
          out = encodeResponseFrame(k, v, h.correlationId, (w) => ShareFetch.encodeShareFetchResponse(w, res, v))
        } else if (k === ApiKey.ShareAcknowledge) {
          const req = ShareAcknowledge.decodeShareAcknowledgeRequest(r, v)
          state.acks.push(req)
          const res = ShareAcknowledge.createShareAcknowledgeResponse({
            responses: req.topics.map((t) => ShareAcknowledge.createShareAcknowledgeTopicResponse({ topicId: t.topicId, partitions: t.partitions.map((p) => ShareAcknowledge.createPartitionData({ partitionIndex: p.partitionIndex, currentLeader: ShareAcknowledge.createLeaderIdAndEpoch({ leaderId: -1, leaderEpoch: -1 }) })) })),
          })
          out = encodeResponseFrame(k, v, h.correlationId, (w) => ShareAcknowledge.encodeShareAcknowledgeResponse(w, res, v))
        } else {
          sock.destroy()
          return
        }
        for (const c of out.chunks) sock.write(c as Buffer)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.server = server
  state.port = (server.address() as { port: number }).port
  return state
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

describe('ShareConsumer error handling (scripted broker)', () => {
  const cleanup: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const f of cleanup.splice(0)) await f()
  })
  async function setup(script: Script, opts: Partial<ConstructorParameters<typeof ShareConsumer>[0]> = {}): Promise<{ fake: Fake; c: ShareConsumer; results: AcknowledgementResult[] }> {
    const fake = await fakeBroker(script)
    const c = new ShareConsumer({ bootstrapServers: `127.0.0.1:${fake.port}`, groupId: 'g', retryBackoffMs: 20, ...opts })
    const results: AcknowledgementResult[] = []
    c.setAcknowledgementCommitCallback((r) => results.push(r))
    cleanup.push(async () => {
      await c.close(2000).catch(() => {})
      await new Promise<void>((resolve) => fake.server.close(() => resolve()))
    })
    return { fake, c, results }
  }

  it('fails with UNSUPPORTED_VERSION when the broker does not advertise the share APIs, as Kafka does', async () => {
    const { fake, c } = await setup({ noShareApis: true })
    c.subscribe([TOPIC])
    const err = await (async () => {
      for (let i = 0; i < 20; i++) await c.poll(100)
    })().then(() => null, (e: unknown) => e)
    expect(err).toBeInstanceOf(KafkaError)
    expect((err as KafkaError).code).toBe(ErrorCode.UNSUPPORTED_VERSION)
    expect(fake.heartbeats).toEqual([])
  })

  it('INVALID_SHARE_SESSION_EPOCH: a new session at epoch 0 naming the partition again; the acknowledgements it carried fail', async () => {
    const { fake, c, results } = await setup({
      fetch: (_req, n) => (n === 0 ? answer(records(0, 2)) : n === 1 ? { errorCode: ErrorCode.INVALID_SHARE_SESSION_EPOCH, responses: [] } : undefined),
    })
    c.subscribe([TOPIC])
    let got: unknown[] = []
    while (got.length === 0) got = await c.poll(500)
    expect(got).toHaveLength(2)
    await c.poll(300) // accepts 0-1 on fetch #1, which the broker refuses
    await c.poll(300)
    expect(fake.fetches.slice(0, 3).map((f) => f.shareSessionEpoch)).toEqual([0, 1, 0])
    expect(fake.fetches[2]!.topics.flatMap((t) => t.partitions.map((p) => [p.partitionIndex, p.acknowledgementBatches.length]))).toEqual([[0, 0]])
    expect(results).toHaveLength(1)
    expect(results[0]!.offsets).toEqual([0, 1])
    expect((results[0]!.error as KafkaError).code).toBe(ErrorCode.INVALID_SHARE_SESSION_EPOCH)
    expect(fake.fetches[3]?.shareSessionEpoch ?? 1).toBe(1)
  })

  it('UNKNOWN_MEMBER_ID: rejoins at once with epoch 0, the same member id and the subscription', async () => {
    const { fake, c } = await setup({ heartbeat: (_req, n) => (n === 0 ? { heartbeatIntervalMs: 100 } : n === 1 ? { errorCode: ErrorCode.UNKNOWN_MEMBER_ID, memberEpoch: 0 } : undefined) })
    c.subscribe([TOPIC])
    await c.poll(200)
    const deadline = Date.now() + 3000
    while (fake.heartbeats.length < 3 && Date.now() < deadline) await sleep(20)
    const [join, beat, rejoin] = fake.heartbeats
    expect([join!.memberEpoch, beat!.memberEpoch, rejoin!.memberEpoch]).toEqual([0, 1, 0])
    expect(new Set(fake.heartbeats.map((h) => h.memberId)).size).toBe(1)
    expect(beat!.subscribedTopicNames).toBeNull()
    expect(rejoin!.subscribedTopicNames).toEqual([TOPIC])
  })

  it('NOT_LEADER_OR_FOLLOWER refreshes metadata; INVALID_RECORD_STATE reaches the callback per partition', async () => {
    const { fake, c, results } = await setup({
      fetch: (_req, n) => (n === 0 ? answer(records(0, 1)) : n === 1 ? answer({ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, acknowledgeErrorCode: ErrorCode.INVALID_RECORD_STATE }) : undefined),
    })
    c.subscribe([TOPIC])
    let got: unknown[] = []
    while (got.length === 0) got = await c.poll(500)
    const before = fake.metadatas
    await c.poll(300)
    await c.poll(300)
    expect(fake.metadatas).toBeGreaterThan(before)
    expect(results.map((r) => [r.offsets, (r.error as KafkaError | null)?.code])).toEqual([[[0], ErrorCode.INVALID_RECORD_STATE]])
  })

  it('a hostile answer (a huge acquired range over garbage, a heartbeat interval of 0) neither crashes, loops nor grows', async () => {
    const garbage = Buffer.alloc(200, 0x41)
    const { fake, c } = await setup({
      heartbeat: () => ({ heartbeatIntervalMs: 0 }),
      fetch: (_req, n) => (n === 0 ? answer({ records: garbage, acquiredRecords: [ShareFetch.createAcquiredRecords({ firstOffset: 0n, lastOffset: 1n << 50n, deliveryCount: -5 }), ShareFetch.createAcquiredRecords({ firstOffset: (1n << 50n) + 1n, lastOffset: 1n << 62n, deliveryCount: 1 }), ShareFetch.createAcquiredRecords({ firstOffset: 5n, lastOffset: 2n, deliveryCount: 1 })] }) : undefined),
    })
    c.subscribe([TOPIC])
    const outcomes: string[] = []
    const until = Date.now() + 1500
    while (Date.now() < until) {
      try {
        outcomes.push(`records:${(await c.poll(200)).length}`)
      } catch (err) {
        outcomes.push(`error:${(err as Error).name}`)
      }
    }
    expect(outcomes.every((o) => o === 'records:0' || o.startsWith('error:KafkaError'))).toBe(true)
    // A 0 ms interval is taken as 100 ms at least: no heartbeat storm.
    expect(fake.heartbeats.length).toBeLessThan(25)
    // The bogus range was acknowledged as one gap range on a later fetch, not walked offset by offset.
    const gapBatches = fake.fetches.flatMap((f) => f.topics.flatMap((t) => t.partitions.flatMap((p) => p.acknowledgementBatches)))
    expect(gapBatches.map((b) => [b.firstOffset, b.lastOffset, b.acknowledgeTypes])).toEqual([[0n, 1n << 50n, [0]]])
  })
})
