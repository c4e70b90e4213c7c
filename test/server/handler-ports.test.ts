// Handlers against fake ports: Produce, Fetch, ListOffsets and Metadata run on a RequestContext whose
// services are in-memory test doubles, with no broker, shard or socket. This is the seam the
// replication layer plugs into: what a handler needs from the broker is exactly what its ports offer.
import { describe, expect, it } from 'vitest'
import { brokerConfigDef } from '../../src/config/broker-configs.js'
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../src/domain/acl.js'
import { ErrorCode } from '../../src/domain/errors.js'
import type { FileRegion } from '../../src/domain/file-region.js'
import type { Outcome } from '../../src/domain/outcome.js'
import { createRequestHeader } from '../../src/protocol/header.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as ListOffsets from '../../src/protocol/messages/02-list-offsets.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { Writer } from '../../src/protocol/primitives/writer.js'
import { FetchSessionCache } from '../../src/server/handlers/common/fetch-sessions.js'
import { DelayedFetchPurgatory, partitionKey, type PartitionWatch } from '../../src/replication/delayed-fetch.js'
import { produceHandler } from '../../src/server/handlers/00-produce.js'
import { fetchHandler } from '../../src/server/handlers/01-fetch.js'
import { listOffsetsHandler } from '../../src/server/handlers/02-list-offsets.js'
import { metadataHandler } from '../../src/server/handlers/03-metadata.js'
import type { BrokerServices, RequestContext } from '../../src/server/handlers/common/context.js'
import type { AnyHandler } from '../../src/server/handlers/common/handler.js'
import type {
  BrokerNode,
  ConsumerRead,
  FollowerPartitionRead,
  FollowerRead,
  LeaderAppend,
  LeaderAppendOptions,
  LeaderAppendResult,
  MetadataView,
  OffsetForTimestamp,
  OffsetLookup,
  PartitionLeadership,
  PartitionRead,
  PartitionService,
  TopicInfo,
  TopicPartitionRef,
} from '../../src/server/handlers/common/ports.js'

const LEADER_EPOCH = 7
/** A made-up descriptor: the fake's regions are never sent, only carried into the response. */
const FAKE_FD = 1000

/** Partitions as arrays of appended payloads; offsets count payloads. Leads topic "t" (2 partitions) at epoch 7. */
class FakePartitions implements PartitionService {
  readonly logs = new Map<string, Buffer[]>()
  readonly appendCalls: { items: LeaderAppend[]; options: LeaderAppendOptions }[] = []
  readonly released: PartitionRead[][] = []
  #waiters: { keys: string[]; wake: (byData: boolean) => void }[] = []

  leaderError(topic: string, partition: number, currentLeaderEpoch = -1): ErrorCode {
    if (topic !== 't' || partition < 0 || partition > 1) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if (currentLeaderEpoch >= 0 && currentLeaderEpoch < LEADER_EPOCH) return ErrorCode.FENCED_LEADER_EPOCH
    if (currentLeaderEpoch > LEADER_EPOCH) return ErrorCode.UNKNOWN_LEADER_EPOCH
    return ErrorCode.NONE
  }

  // The fake leads every partition it knows, with no followers: consumers always read here.
  readError(topic: string, partition: number, currentLeaderEpoch: number): ErrorCode {
    return this.leaderError(topic, partition, currentLeaderEpoch)
  }

  readReplicaCandidates(): { brokerId: number; logEndOffset: number; lastCaughtUpMs: number }[] {
    return []
  }

  followerLog(): undefined {
    return undefined
  }

  async appendAsLeader(items: readonly LeaderAppend[], options: LeaderAppendOptions): Promise<Outcome<LeaderAppendResult>[]> {
    this.appendCalls.push({ items: [...items], options })
    return items.map((item) => {
      if (item.records.length < 4) return { ok: false, errorCode: ErrorCode.CORRUPT_MESSAGE, message: 'too short' }
      // Leadership moved between the leader check and the append (what a replicated broker can see).
      if (item.records.toString() === 'moved') return { ok: false, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, message: 'NOT_LEADER_OR_FOLLOWER: moved' }
      const log = this.log(item)
      log.push(item.records)
      this.#wake(item)
      return { ok: true, value: { baseOffset: log.length - 1, logAppendTime: -1, logStartOffset: 0 } }
    })
  }

  async read(items: readonly ConsumerRead[]): Promise<Outcome<PartitionRead>[]> {
    return items.map((item) => {
      const log = this.log(item)
      if (item.offset > log.length) return { ok: false, errorCode: ErrorCode.OFFSET_OUT_OF_RANGE, message: 'past the end' }
      const regions: FileRegion[] = []
      let bytes = 0
      for (let o = item.offset; o < log.length && bytes < item.maxBytes; o++) {
        regions.push({ fd: FAKE_FD, position: o * 100, length: log[o]!.length })
        bytes += log[o]!.length
      }
      return { ok: true, value: { regions, bytes, logStartOffset: 0, logEndOffset: log.length, highWatermark: log.length, lastStableOffset: log.length, abortedTransactions: [] } }
    })
  }

  readonly fetched: { topic: string; bytes: number; failed: boolean }[] = []
  countFetched(topic: string, bytes: number, failed: boolean): void {
    this.fetched.push({ topic, bytes, failed })
  }

  releaseLeases(reads: readonly PartitionRead[]): void {
    this.released.push([...reads])
  }

  waitForAppends(partitions: readonly TopicPartitionRef[], timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter = {
        keys: partitions.map(keyOf),
        wake: (byData: boolean) => {
          clearTimeout(timer)
          this.#waiters = this.#waiters.filter((w) => w !== waiter)
          resolve(byData)
        },
      }
      const timer = setTimeout(() => waiter.wake(false), timeoutMs)
      this.#waiters.push(waiter)
    })
  }

  async listOffsets(items: readonly OffsetLookup[]): Promise<Outcome<OffsetForTimestamp>[]> {
    return items.map((item) => {
      const end = this.log(item).length
      const offset = item.timestamp === -2 ? 0 : item.timestamp === -1 ? end : -1
      return { ok: true, value: { offset, timestamp: -1, leaderEpoch: offset >= 0 ? LEADER_EPOCH : -1 } }
    })
  }

  async deleteRecords(): Promise<Outcome<number>[]> {
    throw new Error('not used here')
  }
  async describeProducers(): Promise<never> {
    throw new Error('not used here')
  }
  async writeTxnMarkers(): Promise<never> {
    throw new Error('not used here')
  }
  async logDirs(): Promise<never> {
    throw new Error('not used here')
  }
  async alterReplicaLogDirs(): Promise<never> {
    throw new Error('not used here')
  }
  /** Partition 1 is listed in leader.replication.throttled.replicas. */
  async readForFollower(_replicaId: number, items: readonly FollowerRead[]): Promise<Outcome<FollowerPartitionRead>[]> {
    const reads = await this.read(items.map((i) => ({ topic: i.topic, partition: i.partition, offset: i.fetchOffset, maxBytes: i.maxBytes, isolationLevel: 0 }) as ConsumerRead))
    return reads.map((r, i) => (r.ok ? { ok: true, value: { ...r.value, throttled: items[i]!.partition === 1 } } : r))
  }

  readonly replicationSent: [bytes: number, throttledBytes: number][] = []
  countReplicationSent(bytes: number, throttledBytes: number): void {
    this.replicationSent.push([bytes, throttledBytes])
  }
  async endOffsetsForEpochs(): Promise<never> {
    throw new Error('not used here')
  }

  get waiting(): number {
    return this.#waiters.length
  }

  private log(tp: TopicPartitionRef): Buffer[] {
    let log = this.logs.get(keyOf(tp))
    if (log === undefined) {
      log = []
      this.logs.set(keyOf(tp), log)
    }
    return log
  }

  /** Followers' session watches: marked by appends, as the replica manager's follower purgatory does. */
  readonly followerWatches = new DelayedFetchPurgatory()
  watchForFollower(): PartitionWatch {
    return this.followerWatches.watch()
  }

  #wake(tp: TopicPartitionRef): void {
    this.followerWatches.notify(partitionKey(tp.topic, tp.partition))
    const key = keyOf(tp)
    for (const w of this.#waiters.filter((w) => w.keys.includes(key))) w.wake(true)
  }
}

function keyOf(tp: TopicPartitionRef): string {
  return `${tp.topic}/${tp.partition}`
}

/** Two brokers on two listeners, topic "t" with 2 partitions led by broker 1 at epoch 7. */
class FakeMetadata implements MetadataView {
  readonly nodeId = 1
  readonly clusterId = 'fake-cluster'
  readonly controllerId = 2
  readonly #topic: TopicInfo = { name: 't', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: 2, replicationFactor: 2, configs: {} }

  brokers(listenerName: string): BrokerNode[] {
    const port = listenerName === 'INTERNAL' ? 19092 : 9092
    return [
      { nodeId: 1, host: 'b1', port, rack: 'r1' },
      { nodeId: 2, host: 'b2', port, rack: null },
    ]
  }
  localBroker(listenerName: string): BrokerNode {
    return this.brokers(listenerName)[0]!
  }
  topic(name: string): TopicInfo | undefined {
    return name === 't' ? this.#topic : undefined
  }
  topicById(topicId: string): TopicInfo | undefined {
    return topicId === this.#topic.topicId ? this.#topic : undefined
  }
  topics(): readonly TopicInfo[] {
    return [this.#topic]
  }
  isInternalTopic(name: string): boolean {
    return name.startsWith('__')
  }
  validateTopicName(): void {}
  partition(topic: string, partition: number): PartitionLeadership | undefined {
    if (topic !== 't' || partition < 0 || partition > 1) return undefined
    return { leaderId: 1, leaderEpoch: LEADER_EPOCH, replicas: [1, 2], isr: partition === 0 ? [1, 2] : [1], offlineReplicas: [] }
  }
}

/** A service a handler under test must not touch: any use fails the test. */
function untouchable<T extends object>(name: string): T {
  return new Proxy({} as T, {
    get(_target, prop) {
      throw new Error(`the handler used ${name}.${String(prop)}`)
    },
  })
}

interface Harness {
  partitions: FakePartitions
  metadata: FakeMetadata
  services: BrokerServices
  ctx(apiKey: number, apiVersion: number, listenerName?: string): RequestContext & { done: (() => void)[] }
}

function harness(opts: { acl?: BrokerServices['acl'] } = {}): Harness {
  const partitions = new FakePartitions()
  const metadata = new FakeMetadata()
  const services: BrokerServices = {
    partitions,
    metadata,
    topics: untouchable('topics'),
    // Booleans off, numbers at the table's defaults (fetch.max.bytes).
    configs: { broker: { getBoolean: () => false, getInt: (name: string) => brokerConfigDef(name)!.default as number } } as unknown as BrokerServices['configs'],
    groups: untouchable('groups'),
    groupConfigs: untouchable('groupConfigs'),
    transactions: untouchable('transactions'),
    producerIds: untouchable('producerIds'),
    fetchSessions: new FetchSessionCache(10),
    sharePartitions: untouchable('sharePartitions'),
    control: untouchable('control'),
    scram: untouchable('scram'),
    quotas: untouchable('quotas'),
    acl: opts.acl ?? { enabled: false, authorize: () => true,
      authorizeByResourceType: () => true, describe: () => [], create: async () => [], delete: async () => [] },
    log: untouchable('log'),
    apiVersions: [],
  }
  return {
    partitions,
    metadata,
    services,
    ctx(apiKey, apiVersion, listenerName = 'PLAINTEXT') {
      const done: (() => void)[] = []
      return {
        ...services,
        header: createRequestHeader({ requestApiKey: apiKey, requestApiVersion: apiVersion, correlationId: 1, clientId: 'unit' }),
        apiKey,
        apiVersion,
        clientId: 'unit',
        connection: { isClosed: false, listenerName, clientHost: '127.0.0.1', principal: 'User:ANONYMOUS', sasl: undefined },
        receivedAt: Date.now(),
        onResponseDone: (fn) => done.push(fn),
        done,
      }
    },
  }
}

async function run<Res>(handler: AnyHandler, req: unknown, ctx: RequestContext): Promise<Res> {
  return (await handler.handle(req, ctx)) as Res
}

function produceRequest(acks: number, partitions: { index: number; records: Buffer | null }[], topic = 't'): Produce.ProduceRequest {
  return Produce.createProduceRequest({
    acks,
    timeoutMs: 1234,
    topicData: [Produce.createTopicProduceData({ name: topic, partitionData: partitions.map((p) => Produce.createPartitionProduceData(p)) })],
  })
}

function fetchRequest(
  partitions: { partition: number; fetchOffset: bigint; currentLeaderEpoch?: number }[],
  opts: { minBytes?: number; maxWaitMs?: number; maxBytes?: number; replicaId?: number; topic?: string; topicId?: string; sessionId?: number; sessionEpoch?: number; forgotten?: number[] } = {},
): Fetch.FetchRequest {
  return Fetch.createFetchRequest({
    replicaId: opts.replicaId ?? -1,
    sessionId: opts.sessionId ?? 0,
    sessionEpoch: opts.sessionEpoch ?? -1,
    forgottenTopicsData: opts.forgotten === undefined ? [] : [Fetch.createForgottenTopic({ topic: opts.topic ?? 't', partitions: opts.forgotten })],
    maxWaitMs: opts.maxWaitMs ?? 0,
    minBytes: opts.minBytes ?? 0,
    maxBytes: opts.maxBytes ?? 1 << 20,
    topics: [
      Fetch.createFetchTopic({
        topic: opts.topic ?? 't',
        ...(opts.topicId !== undefined ? { topicId: opts.topicId } : {}),
        partitions: partitions.map((p) => Fetch.createFetchPartition({ partition: p.partition, fetchOffset: p.fetchOffset, currentLeaderEpoch: p.currentLeaderEpoch ?? -1, partitionMaxBytes: 1 << 20 })),
      }),
    ],
  })
}

describe('Produce against fake ports', () => {
  it('appends as leader with the request acks and timeout, and answers the offsets', async () => {
    const h = harness()
    const res = await run<Produce.ProduceResponse>(produceHandler, produceRequest(-1, [{ index: 0, records: Buffer.from('batch-0') }, { index: 1, records: Buffer.from('batch-1') }]), h.ctx(0, 7))
    expect(h.partitions.appendCalls).toHaveLength(1)
    expect(h.partitions.appendCalls[0]!.options).toEqual({ acks: -1, timeoutMs: 1234 })
    expect(h.partitions.appendCalls[0]!.items.map((i) => [i.topic, i.partition, i.records.toString()])).toEqual([['t', 0, 'batch-0'], ['t', 1, 'batch-1']])
    const parts = res.responses[0]!.partitionResponses
    expect(parts.map((p) => [p.index, p.errorCode, p.baseOffset])).toEqual([[0, ErrorCode.NONE, 0n], [1, ErrorCode.NONE, 0n]])
  })

  it('answers leader and append errors per partition and appends only the valid ones', async () => {
    const h = harness()
    const res = await run<Produce.ProduceResponse>(
      produceHandler,
      produceRequest(1, [
        { index: 0, records: Buffer.from('ok') }, // shorter than the fake's 4 bytes: CORRUPT_MESSAGE from the port
        { index: 5, records: Buffer.from('nowhere') }, // not a partition the port leads
        { index: 1, records: null }, // no batches
      ]),
      h.ctx(0, 7),
    )
    expect(h.partitions.appendCalls[0]!.items.map((i) => i.partition)).toEqual([0])
    expect(res.responses[0]!.partitionResponses.map((p) => p.errorCode)).toEqual([ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.INVALID_RECORD])
  })

  it('v10+ (KIP-951): NOT_LEADER_OR_FOLLOWER carries the current leader and its endpoint on the listener used', async () => {
    const h = harness()
    h.metadata.partition = (topic, partition) =>
      topic === 't' && partition === 1 ? { leaderId: 2, leaderEpoch: LEADER_EPOCH + 1, replicas: [1, 2], isr: [2], offlineReplicas: [] } : undefined
    const req = produceRequest(1, [{ index: 0, records: Buffer.from('batch') }, { index: 1, records: Buffer.from('moved') }])
    const res = await run<Produce.ProduceResponse>(produceHandler, req, h.ctx(0, 10, 'INTERNAL'))
    const [p0, p1] = res.responses[0]!.partitionResponses
    expect(p0).toMatchObject({ errorCode: ErrorCode.NONE, currentLeader: { leaderId: -1, leaderEpoch: -1 } })
    expect(p1).toMatchObject({ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, errorMessage: 'moved', currentLeader: { leaderId: 2, leaderEpoch: LEADER_EPOCH + 1 } })
    expect(res.nodeEndpoints).toEqual([{ nodeId: 2, host: 'b2', port: 19092, rack: null }])
    // Below v10 neither is sent (the codec would refuse them).
    const v9 = await run<Produce.ProduceResponse>(produceHandler, req, h.ctx(0, 9))
    expect(v9.responses[0]!.partitionResponses[1]!.currentLeader).toEqual({ leaderId: -1, leaderEpoch: -1 })
    expect(v9.nodeEndpoints).toEqual([])
  })

  it('refuses acks other than 0, 1 and -1 without touching the log, and answers nothing for acks=0', async () => {
    const h = harness()
    const bad = await run<Produce.ProduceResponse>(produceHandler, produceRequest(2, [{ index: 0, records: Buffer.from('batch') }]), h.ctx(0, 7))
    expect(bad.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.INVALID_REQUIRED_ACKS)
    expect(h.partitions.appendCalls).toHaveLength(0)
    const none = await run<Produce.ProduceResponse | null>(produceHandler, produceRequest(0, [{ index: 0, records: Buffer.from('batch') }]), h.ctx(0, 7))
    expect(none).toBeNull()
    expect(h.partitions.appendCalls[0]!.options.acks).toBe(0)
    expect(h.partitions.logs.get('t/0')).toHaveLength(1)
  })
})

describe('Fetch against fake ports', () => {
  it('answers the regions the port read, up to its high watermark, and releases them once the response is done', async () => {
    const h = harness()
    await h.partitions.appendAsLeader([{ topic: 't', partition: 0, records: Buffer.from('first') }, { topic: 't', partition: 0, records: Buffer.from('second') }], { acks: 1, timeoutMs: 0 })
    const ctx = h.ctx(1, 12)
    const res = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 1n, currentLeaderEpoch: LEADER_EPOCH }, { partition: 1, fetchOffset: 0n }]), ctx)
    const [p0, p1] = res.responses[0]!.partitions
    expect(p0!.errorCode).toBe(ErrorCode.NONE)
    expect(p0!.highWatermark).toBe(2n)
    expect(p0!.records).toEqual({ chunks: [{ fd: FAKE_FD, position: 100, length: 6 }] })
    expect(p1!.errorCode).toBe(ErrorCode.NONE)
    expect(p1!.records).toEqual(Buffer.alloc(0))
    // The regions go out as regions: the encoded response is Buffers around the file region.
    const w = new Writer(256)
    fetchHandler.encodeResponse(w, res, 12)
    expect(w.chunks().filter((c) => !Buffer.isBuffer(c))).toEqual([{ fd: FAKE_FD, position: 100, length: 6 }])
    // Leases are let go only after the response is written.
    expect(h.partitions.released).toEqual([])
    for (const fn of ctx.done) fn()
    expect(h.partitions.released).toHaveLength(1)
    expect(h.partitions.released[0]!.map((r) => r.bytes)).toEqual([6])
  })

  it("passes the port's leader check through: a stale epoch is fenced, an unknown partition not read", async () => {
    const h = harness()
    // One request each: a partition named twice in one request is read once (with the last epoch).
    const stale = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n, currentLeaderEpoch: 3 }]), h.ctx(1, 12))
    const newer = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n, currentLeaderEpoch: 9 }]), h.ctx(1, 12))
    expect([stale, newer].map((res) => res.responses[0]!.partitions[0]!.errorCode)).toEqual([ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH])
    const unknown = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n }], { topic: 'nope' }), h.ctx(1, 12))
    expect(unknown.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  })

  it('v16+ (KIP-951): a fenced epoch answer carries the current leader and its endpoint; v12 does not', async () => {
    const h = harness()
    const req = fetchRequest([{ partition: 0, fetchOffset: 0n, currentLeaderEpoch: 3 }, { partition: 1, fetchOffset: 0n }], { topicId: 'AAAAAAAAAAAAAAAAAAAAAQ' })
    const v16 = await run<Fetch.FetchResponse>(fetchHandler, req, h.ctx(1, 16, 'INTERNAL'))
    const [fenced, fine] = v16.responses[0]!.partitions
    expect(fenced).toMatchObject({ errorCode: ErrorCode.FENCED_LEADER_EPOCH, currentLeader: { leaderId: 1, leaderEpoch: LEADER_EPOCH } })
    expect(fine).toMatchObject({ errorCode: ErrorCode.NONE, currentLeader: { leaderId: -1, leaderEpoch: -1 } })
    expect(v16.nodeEndpoints).toEqual([{ nodeId: 1, host: 'b1', port: 19092, rack: 'r1' }])
    const v12 = await run<Fetch.FetchResponse>(fetchHandler, req, h.ctx(1, 12))
    expect(v12.responses[0]!.partitions[0]!.currentLeader).toEqual({ leaderId: -1, leaderEpoch: -1 })
    expect(v12.nodeEndpoints).toEqual([])
  })

  it('long-polls through the port: waits for an append by Produce, then answers with it', async () => {
    const h = harness()
    const fetching = run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 1, fetchOffset: 0n }], { minBytes: 1, maxWaitMs: 5000 }), h.ctx(1, 12))
    await new Promise((r) => setTimeout(r, 20))
    expect(h.partitions.waiting).toBe(1)
    const started = Date.now()
    await run(produceHandler, produceRequest(1, [{ index: 1, records: Buffer.from('wake-up') }]), h.ctx(0, 7))
    const res = await fetching
    expect(Date.now() - started).toBeLessThan(2000)
    expect(res.responses[0]!.partitions[0]!.records).toEqual({ chunks: [{ fd: FAKE_FD, position: 0, length: 7 }] })
    // The empty first read held nothing, so nothing was released before the wait.
    expect(h.partitions.released).toEqual([[]])
  })

  it('answers after maxWaitMs with what there is when nothing arrives', async () => {
    const h = harness()
    const started = Date.now()
    const res = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n }], { minBytes: 1, maxWaitMs: 100 }), h.ctx(1, 12))
    expect(Date.now() - started).toBeGreaterThanOrEqual(90)
    expect(res.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE)
    expect(res.responses[0]!.partitions[0]!.highWatermark).toBe(0n)
  })
})

describe("a follower's Fetch against fake ports", () => {
  it('keeps a session for a follower (KIP-227): incremental fetches read what was named or changed (all of it every sweep), answer only what changed, and only that replica may continue it', async () => {
    const h = harness()
    const append = (partition: number, payload: string) => h.partitions.appendAsLeader([{ topic: 't', partition, records: Buffer.from(payload) }], { acks: 1, timeoutMs: 0 })
    const reads: [partition: number, fetchOffset: number][][] = []
    const readForFollower = h.partitions.readForFollower.bind(h.partitions)
    h.partitions.readForFollower = async (replicaId, items) => {
      reads.push(items.map((i) => [i.partition, i.fetchOffset]))
      return readForFollower(replicaId, items)
    }
    const answered = (res: Fetch.FetchResponse) => res.responses.flatMap((t) => t.partitions.map((p) => [p.partitionIndex, Number(p.highWatermark), Buffer.isBuffer(p.records) ? 0 : p.records!.chunks.length]))
    await append(0, 'aaaa')
    // A full fetch with epoch 0 opens the session and answers every partition.
    const full = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n }, { partition: 1, fetchOffset: 0n }], { replicaId: 2, sessionEpoch: 0 }), h.ctx(1, 12))
    expect(full.sessionId).toBeGreaterThan(0)
    expect(answered(full)).toEqual([[0, 1, 1], [1, 0, 0]])
    const sessionId = full.sessionId
    // The follower names partition 0 at its new position, not partition 1: only 0 is read (1 is idle), nothing changed.
    const idle = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 1n }], { replicaId: 2, sessionId, sessionEpoch: 1 }), h.ctx(1, 12))
    expect(reads.at(-1)).toEqual([[0, 1]])
    expect([idle.errorCode, idle.sessionId, answered(idle)]).toEqual([ErrorCode.NONE, sessionId, []])
    // An append to partition 1, named by no request since the full fetch, is read (the session's watch saw it) and answered.
    await append(1, 'bbbb')
    const news = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([], { replicaId: 2, sessionId, sessionEpoch: 2 }), h.ctx(1, 12))
    expect(reads.at(-1)).toEqual([[1, 0]])
    expect(answered(news)).toEqual([[1, 1, 1]])
    // A long poll of an idle session reads nothing and wakes on an append to any of its partitions.
    const polling = run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 1, fetchOffset: 1n }], { replicaId: 2, sessionId, sessionEpoch: 3, minBytes: 1, maxWaitMs: 5000 }), h.ctx(1, 12))
    await new Promise((r) => setTimeout(r, 20))
    const readsBefore = reads.length
    await append(0, 'cccc')
    const woken = await polling
    expect(answered(woken)).toEqual([[0, 2, 1]])
    expect(reads.slice(readsBefore)).toEqual([[[1, 1], [0, 1]]])
    // Every FOLLOWER_SESSION_SWEEP_MS (60 s) a fetch reads the whole session (in session order: one that got records goes last).
    h.services.fetchSessions.get(sessionId)!.lastSweepMs -= 60_000
    await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 2n }], { replicaId: 2, sessionId, sessionEpoch: 4 }), h.ctx(1, 12))
    expect(reads.at(-1)).toEqual([[1, 1], [0, 2]])
    // Neither a consumer nor another replica may continue (or close) the follower's session.
    const consumer = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([], { sessionId, sessionEpoch: 5 }), h.ctx(1, 12))
    const otherReplica = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([], { replicaId: 3, sessionId, sessionEpoch: 5 }), h.ctx(1, 12))
    await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([], { sessionId, sessionEpoch: 0 }), h.ctx(1, 12))
    expect([consumer.errorCode, otherReplica.errorCode]).toEqual([ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.FETCH_SESSION_ID_NOT_FOUND])
    // Forgotten partitions leave the session (and its watch); a repeated epoch is refused.
    const forgot = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 1, fetchOffset: 2n }], { replicaId: 2, sessionId, sessionEpoch: 5, forgotten: [0] }), h.ctx(1, 12))
    expect([forgot.errorCode, reads.at(-1)]).toEqual([ErrorCode.NONE, [[1, 2]]])
    await append(0, 'dddd')
    await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([], { replicaId: 2, sessionId, sessionEpoch: 6 }), h.ctx(1, 12))
    expect(reads.at(-1)).toEqual([[1, 2]])
    const repeated = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([], { replicaId: 2, sessionId, sessionEpoch: 6 }), h.ctx(1, 12))
    expect(repeated.errorCode).toBe(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    // A session that ends lets go of its watch.
    h.services.fetchSessions.remove(sessionId)
    expect(h.partitions.followerWatches.interested).toBe(false)
  })

  it('with an authorizer, needs ClusterAction: a client claiming a replica id gets TOPIC_AUTHORIZATION_FAILED and moves nothing', async () => {
    const asked: string[] = []
    const acl = {
      enabled: true,
      // Read on topic t is allowed, ClusterAction is not.
      authorize: (_conn: unknown, operation: number, resourceType: number, name: string) => {
        asked.push(`${operation}/${resourceType}/${name}`)
        return resourceType === ResourceType.TOPIC
      },
      authorizeByResourceType: () => true, describe: () => [], create: async () => [], delete: async () => [],
    } as unknown as BrokerServices['acl']
    const h = harness({ acl })
    await h.partitions.appendAsLeader([{ topic: 't', partition: 0, records: Buffer.from('secret') }], { acks: 1, timeoutMs: 0 })
    let followerReads = 0
    const readForFollower = h.partitions.readForFollower.bind(h.partitions)
    h.partitions.readForFollower = async (replicaId, items) => {
      followerReads++
      return readForFollower(replicaId, items)
    }
    const res = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n }, { partition: 1, fetchOffset: 0n }], { replicaId: 2 }), h.ctx(1, 12))
    expect(res.responses[0]!.partitions.map((p) => [p.errorCode, p.records])).toEqual([[ErrorCode.TOPIC_AUTHORIZATION_FAILED, Buffer.alloc(0)], [ErrorCode.TOPIC_AUTHORIZATION_FAILED, Buffer.alloc(0)]])
    expect(followerReads).toBe(0)
    expect(asked).toEqual([`${AclOperation.CLUSTER_ACTION}/${ResourceType.CLUSTER}/${CLUSTER_NAME}`])
    // The same request as a consumer (replica id -1) reads within the high watermark as Read allows.
    const consumer = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n }]), h.ctx(1, 12))
    expect(consumer.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE)
  })

  it('counts what the answer carries once as replication bytes (the throttled part apart), never as BytesOut', async () => {
    const h = harness()
    const append = (partition: number, payload: string) => h.partitions.appendAsLeader([{ topic: 't', partition, records: Buffer.from(payload) }], { acks: 1, timeoutMs: 0 })
    await append(0, 'aaaa')
    await append(0, 'bbbbbb')
    await append(1, 'cccccccc')
    // A 12-byte answer: partition 0's 10 bytes fit, partition 1's 8 (throttled) are read but not sent.
    const small = await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n }, { partition: 1, fetchOffset: 0n }], { replicaId: 2, maxBytes: 12 }), h.ctx(1, 12))
    expect(small.responses[0]!.partitions.map((p) => Buffer.isBuffer(p.records) ? 0 : p.records!.chunks.length)).toEqual([2, 0])
    expect(h.partitions.replicationSent).toEqual([[10, 0]])
    await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 0n }, { partition: 1, fetchOffset: 0n }], { replicaId: 2 }), h.ctx(1, 12))
    expect(h.partitions.replicationSent).toEqual([[10, 0], [18, 8]])
    // A long poll reads twice (nothing, then the append): one count, of the answer.
    const polling = run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 1, fetchOffset: 1n }], { replicaId: 2, minBytes: 1, maxWaitMs: 5000 }), h.ctx(1, 12))
    await new Promise((r) => setTimeout(r, 20))
    await append(1, 'dddd')
    await polling
    expect(h.partitions.replicationSent).toEqual([[10, 0], [18, 8], [4, 4]])
    // An answer without records counts nothing; consumers' BytesOut never saw any of it.
    await run<Fetch.FetchResponse>(fetchHandler, fetchRequest([{ partition: 0, fetchOffset: 2n }], { replicaId: 2 }), h.ctx(1, 12))
    expect(h.partitions.replicationSent).toHaveLength(3)
    expect(h.partitions.fetched).toEqual([])
  })
})

describe('ListOffsets against fake ports', () => {
  function request(timestamp: bigint, currentLeaderEpoch = -1): ListOffsets.ListOffsetsRequest {
    return ListOffsets.createListOffsetsRequest({
      topics: [ListOffsets.createListOffsetsTopic({ name: 't', partitions: [ListOffsets.createListOffsetsPartition({ partitionIndex: 0, timestamp, currentLeaderEpoch })] })],
    })
  }

  it("answers the port's offsets with its leader epoch (v4+), none before v4", async () => {
    const h = harness()
    await h.partitions.appendAsLeader([{ topic: 't', partition: 0, records: Buffer.from('one!') }], { acks: 1, timeoutMs: 0 })
    const v5 = await run<ListOffsets.ListOffsetsResponse>(listOffsetsHandler, request(-1n), h.ctx(2, 5))
    expect(v5.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, offset: 1n, leaderEpoch: LEADER_EPOCH })
    const v1 = await run<ListOffsets.ListOffsetsResponse>(listOffsetsHandler, request(-2n), h.ctx(2, 1))
    expect(v1.topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, offset: 0n, leaderEpoch: -1 })
    const fenced = await run<ListOffsets.ListOffsetsResponse>(listOffsetsHandler, request(-1n, 2), h.ctx(2, 5))
    expect(fenced.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.FENCED_LEADER_EPOCH)
  })
})

describe('Metadata against a fake metadata view', () => {
  it('lists the brokers of the listener the request came on, the controller, and each partition as the view has it', async () => {
    const h = harness()
    const req = Metadata.createMetadataRequest({ topics: [Metadata.createMetadataRequestTopic({ name: 't' }), Metadata.createMetadataRequestTopic({ name: 'missing' })] })
    const res = await run<Metadata.MetadataResponse>(metadataHandler, req, h.ctx(3, 9, 'INTERNAL'))
    expect(res.brokers.map((b) => [b.nodeId, b.host, b.port, b.rack])).toEqual([[1, 'b1', 19092, 'r1'], [2, 'b2', 19092, null]])
    expect(res.controllerId).toBe(2)
    expect(res.clusterId).toBe('fake-cluster')
    const [t, missing] = res.topics
    expect(t!.partitions.map((p) => [p.partitionIndex, p.leaderId, p.leaderEpoch, p.replicaNodes, p.isrNodes])).toEqual([
      [0, 1, LEADER_EPOCH, [1, 2], [1, 2]],
      [1, 1, LEADER_EPOCH, [1, 2], [1]],
    ])
    // auto.create.topics.enable is false in the fake config: no TopicAdmin call.
    expect(missing!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  })
})
