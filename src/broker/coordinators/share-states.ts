// The broker side of the share coordinator (KIP-932): __share_group_state is created on first use as
// __consumer_offsets is (never by a client's Metadata auto-creation) with
// share.coordinator.state.topic.num.partitions, .replication.factor, .min.isr and .segment.bytes, and
// cleanup.policy=delete as Kafka creates it (KIP-932: a share-partition's ShareUpdates are laid over its
// last ShareSnapshot, so compaction, which keeps only the last record of a key, would lose updates).
// The coordinator deletes the records below the oldest snapshot still needed itself (every
// share.coordinator.state.topic.prune.interval.ms, as Kafka's), so the topic is created with
// retention.ms=-1: time-based retention would delete a quiet share-partition's live state. Each partition is replayed
// when this broker becomes its leader and dropped when the leadership moves (internal-topic-service.ts).
//
// BrokerSharePersister is the share-partition manager's persister (replication/share/share-state-persister.ts,
// Kafka's DefaultStatePersister and PersisterStateManager): it finds the share coordinator of a
// share-partition, the leader of its __share_group_state partition in this broker's metadata (what
// FindCoordinator with key type SHARE answers), and calls it: directly when that is this broker, else
// with Initialize/Read/Write/DeleteShareGroupState over one connection per coordinator broker on the
// inter-broker listener (its TLS and SASL). NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS, a coordinator with no leader and a failed connection are retried with
// backoff (100 ms doubling to 2 s, for up to PERSISTER_RETRY_MS), as Kafka's PersisterStateManager
// retries them; other errors (FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH, ...) are final.
//
// Writes of one share-partition go one after the other, and a write waiting behind another is replaced
// by a newer one (the manager writes a share-partition's whole state each time): a retried old write can
// never land after a newer one. Every caller's promise settles with the write that carried its state or
// a newer one.
import { systemClock } from '../../coordinator/runtime/clock.js'
import { ShareCoordinator } from '../../coordinator/share/share-coordinator.js'
import type { PartitionAnswer, SharePartitionKey } from '../../coordinator/share/share-coordinator-state.js'
import { BrokerConnection } from '../../client/connection.js'
import type { ClientSecurity } from '../../client/sasl.js'
import type { MetadataImage } from '../../cluster/metadata-image.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import { ApiKey } from '../../protocol/api-keys.gen.js'
import * as Initialize from '../../protocol/messages/83-initialize-share-group-state.gen.js'
import * as Read from '../../protocol/messages/84-read-share-group-state.gen.js'
import * as Write from '../../protocol/messages/85-write-share-group-state.gen.js'
import * as Delete from '../../protocol/messages/86-delete-share-group-state.gen.js'
import * as Summary from '../../protocol/messages/87-read-share-group-state-summary.gen.js'
import type { ShareGroupState, SharePersister, ShareStateKey } from '../../replication/share/share-state-persister.js'
import type { TopicInfo } from '../../server/handlers/common/ports.js'
import type { ShareStateCoordinatorService } from '../../server/handlers/common/ports.js'
import { CoordinatorPartitionWriter } from './coordinator-partition-writer.js'
import { InternalTopicService, type InternalTopicPorts, type InternalTopicSpec } from './internal-topic-service.js'

export const SHARE_GROUP_STATE_TOPIC = '__share_group_state'
/** How long the persister retries a share-partition's coordinator (moving, loading, unreachable). */
export const PERSISTER_RETRY_MS = 30_000
const RETRY_MIN_MS = 100
const RETRY_MAX_MS = 2000
const SHARE_STATE_VERSION = 0
/** The leader epoch of the admin APIs' summary reads: above every leader's (int32 max). */
const ADMIN_LEADER_EPOCH = 2147483647

/** Owns the broker's ShareCoordinator: created with __share_group_state on first use, closed on stop. */
export class ShareStateService extends InternalTopicService<ShareCoordinator> implements ShareStateCoordinatorService {
  constructor(ports: InternalTopicPorts) {
    super(ports, SHARE_GROUP_STATE_TOPIC)
  }

  protected topicSpec(): InternalTopicSpec {
    const c = this.ports.config()
    return {
      numPartitions: c.getInt('share.coordinator.state.topic.num.partitions'),
      replicationFactor: c.getInt('share.coordinator.state.topic.replication.factor'),
      configs: {
        'cleanup.policy': 'delete',
        'retention.ms': '-1',
        'segment.bytes': String(c.getInt('share.coordinator.state.topic.segment.bytes')),
        'min.insync.replicas': String(c.getInt('share.coordinator.state.topic.min.isr')),
      },
    }
  }

  protected build(topic: TopicInfo): ShareCoordinator {
    const { ports } = this
    const c = ports.config()
    const writer = new CoordinatorPartitionWriter(ports.partitions, SHARE_GROUP_STATE_TOPIC, c.getInt('share.coordinator.write.timeout.ms'))
    return new ShareCoordinator({
      config: {
        stateTopicPartitions: topic.partitions,
        snapshotUpdateRecordsPerSnapshot: c.getInt('share.coordinator.snapshot.update.records.per.snapshot'),
        pruneIntervalMs: c.getInt('share.coordinator.state.topic.prune.interval.ms'),
      },
      writer,
      clock: systemClock,
      log: ports.log,
    })
  }
}

/** What the persister uses of the broker: who leads the coordinator's partitions, and how to reach them. */
export interface SharePersisterPorts {
  readonly nodeId: number
  readonly log: InternalTopicPorts['log']
  readonly metadata: Pick<MetadataImage, 'partition' | 'liveBrokers'>
  readonly interBrokerListener: string
  /** TLS and SASL of this broker's connections to the others; undefined for PLAINTEXT. */
  readonly interBrokerSecurity: ClientSecurity | undefined
  /** How long a call retries a coordinator that moves, loads or cannot be reached (default PERSISTER_RETRY_MS). */
  readonly retryMs?: number
}

const RETRIABLE = new Set<number>([ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS])

type Call<T> = { local(c: ShareCoordinator): Promise<T>; remote(conn: BrokerConnection): Promise<T> }

interface WriteSlot {
  /** The newest state waiting for its turn, and everyone waiting for it. */
  next: { state: ShareGroupState; waiters: { resolve(): void; reject(err: unknown): void }[] } | undefined
  running: boolean
}

function toKafkaError(a: PartitionAnswer): KafkaError {
  return new KafkaError(a.errorCode as ErrorCode, a.errorMessage ?? undefined)
}

export class BrokerSharePersister implements SharePersister {
  readonly #links = new Map<number, Promise<BrokerConnection>>()
  readonly #writes = new Map<string, WriteSlot>()
  #closed = false

  constructor(
    private readonly states: ShareStateService,
    private readonly ports: SharePersisterPorts,
  ) {}

  async readState(key: ShareStateKey, leaderEpoch = -1): Promise<ShareGroupState | undefined> {
    const k = toKey(key)
    const answer = await this.#call(k, {
      local: (c) => c.read(k, leaderEpoch),
      remote: async (conn) => {
        const req = Read.createReadShareGroupStateRequest({ groupId: k.groupId, topics: [Read.createReadStateData({ topicId: k.topicId, partitions: [Read.createPartitionData({ partition: k.partition, leaderEpoch })] })] })
        const res = await conn.send(ApiKey.ReadShareGroupState, (w) => Read.encodeReadShareGroupStateRequest(w, req, SHARE_STATE_VERSION), Read.decodeReadShareGroupStateResponse, { version: SHARE_STATE_VERSION })
        const p = res.results.find((r) => r.topicId === k.topicId)?.partitions.find((x) => x.partition === k.partition)
        if (p === undefined) return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: 'no answer for the share-partition', stateEpoch: 0, startOffset: -1, stateBatches: [] }
        return {
          errorCode: p.errorCode,
          errorMessage: p.errorMessage,
          stateEpoch: p.stateEpoch,
          startOffset: Number(p.startOffset),
          stateBatches: p.stateBatches.map((b) => ({ firstOffset: Number(b.firstOffset), lastOffset: Number(b.lastOffset), deliveryState: b.deliveryState, deliveryCount: b.deliveryCount })),
        }
      },
    })
    // Never initialized (state epoch 0, start offset -1): the manager serves it not. Initialized by the
    // group coordinator with start offset -1: the manager starts it from share.auto.offset.reset.
    if (answer.startOffset < 0 && answer.stateEpoch <= 0) return undefined
    return {
      stateEpoch: answer.stateEpoch,
      leaderEpoch,
      startOffset: answer.startOffset,
      stateBatches: answer.stateBatches.map((b) => ({ firstOffset: b.firstOffset, lastOffset: b.lastOffset, deliveryState: b.deliveryState as ShareGroupState['stateBatches'][number]['deliveryState'], deliveryCount: b.deliveryCount })),
    }
  }

  async initializeState(key: ShareStateKey, stateEpoch: number, startOffset: number): Promise<void> {
    const k = toKey(key)
    await this.#call(k, {
      local: (c) => c.initialize(k, stateEpoch, startOffset),
      remote: async (conn) => {
        const req = Initialize.createInitializeShareGroupStateRequest({ groupId: k.groupId, topics: [Initialize.createInitializeStateData({ topicId: k.topicId, partitions: [Initialize.createPartitionData({ partition: k.partition, stateEpoch, startOffset: BigInt(startOffset) })] })] })
        const res = await conn.send(ApiKey.InitializeShareGroupState, (w) => Initialize.encodeInitializeShareGroupStateRequest(w, req, SHARE_STATE_VERSION), Initialize.decodeInitializeShareGroupStateResponse, { version: SHARE_STATE_VERSION })
        return res.results.find((r) => r.topicId === k.topicId)?.partitions.find((x) => x.partition === k.partition) ?? { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: 'no answer for the share-partition' }
      },
    })
  }

  writeState(key: ShareStateKey, state: ShareGroupState): Promise<void> {
    const id = `${key.group}\u0000${key.topicId}\u0000${key.partition}`
    let slot = this.#writes.get(id)
    if (slot === undefined) this.#writes.set(id, (slot = { next: undefined, running: false }))
    const s = slot
    const done = new Promise<void>((resolve, reject) => {
      if (s.next === undefined) s.next = { state, waiters: [] }
      else s.next.state = state
      s.next.waiters.push({ resolve, reject })
    })
    if (!s.running) void this.#drain(id, key, s)
    return done
  }

  async #drain(id: string, key: ShareStateKey, slot: WriteSlot): Promise<void> {
    slot.running = true
    while (slot.next !== undefined) {
      const { state, waiters } = slot.next
      slot.next = undefined
      try {
        await this.#write(key, state)
        for (const w of waiters) w.resolve()
      } catch (err) {
        for (const w of waiters) w.reject(err)
      }
    }
    slot.running = false
    if (this.#writes.get(id) === slot) this.#writes.delete(id)
  }

  async #write(key: ShareStateKey, state: ShareGroupState): Promise<void> {
    const k = toKey(key)
    const params = {
      stateEpoch: state.stateEpoch,
      leaderEpoch: state.leaderEpoch,
      startOffset: state.startOffset,
      stateBatches: state.stateBatches.map((b) => ({ firstOffset: b.firstOffset, lastOffset: b.lastOffset, deliveryState: b.deliveryState as number, deliveryCount: b.deliveryCount })),
    }
    await this.#call(k, {
      local: (c) => c.write(k, params),
      remote: async (conn) => {
        const req = Write.createWriteShareGroupStateRequest({
          groupId: k.groupId,
          topics: [Write.createWriteStateData({
            topicId: k.topicId,
            partitions: [Write.createPartitionData({
              partition: k.partition,
              stateEpoch: params.stateEpoch,
              leaderEpoch: params.leaderEpoch,
              startOffset: BigInt(params.startOffset),
              stateBatches: params.stateBatches.map((b) => Write.createStateBatch({ firstOffset: BigInt(b.firstOffset), lastOffset: BigInt(b.lastOffset), deliveryState: b.deliveryState, deliveryCount: b.deliveryCount })),
            })],
          })],
        })
        const res = await conn.send(ApiKey.WriteShareGroupState, (w) => Write.encodeWriteShareGroupStateRequest(w, req, SHARE_STATE_VERSION), Write.decodeWriteShareGroupStateResponse, { version: SHARE_STATE_VERSION })
        return res.results.find((r) => r.topicId === k.topicId)?.partitions.find((x) => x.partition === k.partition) ?? { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: 'no answer for the share-partition' }
      },
    })
  }

  async deleteState(key: ShareStateKey): Promise<void> {
    const k = toKey(key)
    await this.#call(k, {
      local: (c) => c.delete(k),
      remote: async (conn) => {
        const req = Delete.createDeleteShareGroupStateRequest({ groupId: k.groupId, topics: [Delete.createDeleteStateData({ topicId: k.topicId, partitions: [Delete.createPartitionData({ partition: k.partition })] })] })
        const res = await conn.send(ApiKey.DeleteShareGroupState, (w) => Delete.encodeDeleteShareGroupStateRequest(w, req, SHARE_STATE_VERSION), Delete.decodeDeleteShareGroupStateResponse, { version: SHARE_STATE_VERSION })
        return res.results.find((r) => r.topicId === k.topicId)?.partitions.find((x) => x.partition === k.partition) ?? { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: 'no answer for the share-partition' }
      },
    })
  }

  /**
   * A share-partition's state epoch and start offset (start offset -1: never initialized), for the admin
   * APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets): ReadShareGroupStateSummary. Admin reads are
   * no leader's, so they send the highest leader epoch, which no leader's fencing refuses and which the
   * summary does not record. Throws KafkaError on a final error.
   */
  async readSummary(key: ShareStateKey): Promise<{ stateEpoch: number; startOffset: number }> {
    const k = toKey(key)
    const leaderEpoch = ADMIN_LEADER_EPOCH
    const a = await this.#call(k, {
      local: (c) => c.readSummary(k, leaderEpoch),
      remote: async (conn) => {
        const req = Summary.createReadShareGroupStateSummaryRequest({ groupId: k.groupId, topics: [Summary.createReadStateSummaryData({ topicId: k.topicId, partitions: [Summary.createPartitionData({ partition: k.partition, leaderEpoch })] })] })
        const res = await conn.send(ApiKey.ReadShareGroupStateSummary, (w) => Summary.encodeReadShareGroupStateSummaryRequest(w, req, SHARE_STATE_VERSION), Summary.decodeReadShareGroupStateSummaryResponse, { version: SHARE_STATE_VERSION })
        const p = res.results.find((r) => r.topicId === k.topicId)?.partitions.find((x) => x.partition === k.partition)
        if (p === undefined) return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: 'no answer for the share-partition', stateEpoch: 0, startOffset: -1 }
        return { errorCode: p.errorCode, errorMessage: p.errorMessage, stateEpoch: p.stateEpoch, startOffset: Number(p.startOffset) }
      },
    })
    return { stateEpoch: a.stateEpoch, startOffset: a.startOffset }
  }

  close(): void {
    this.#closed = true
    for (const c of this.#links.values()) c.then((conn) => conn.close(), () => undefined)
    this.#links.clear()
  }

  /** Calls the share-partition's coordinator until it answers for good; throws KafkaError on a final error. */
  async #call<T extends PartitionAnswer>(k: SharePartitionKey, call: Call<T>): Promise<T> {
    const deadline = Date.now() + (this.ports.retryMs ?? PERSISTER_RETRY_MS)
    let backoff = RETRY_MIN_MS
    for (;;) {
      if (this.#closed) throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the broker is shutting down')
      let answer: T
      try {
        answer = await this.#once(k, call)
      } catch (err) {
        answer = { errorCode: err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE, errorMessage: (err as Error)?.message ?? String(err) } as T
        if (!(err instanceof KafkaError)) answer = { ...answer, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }
      }
      if (answer.errorCode === ErrorCode.NONE) return answer
      if (!RETRIABLE.has(answer.errorCode) || Date.now() + backoff > deadline) throw toKafkaError(answer)
      await new Promise((r) => setTimeout(r, backoff).unref())
      backoff = Math.min(backoff * 2, RETRY_MAX_MS)
    }
  }

  async #once<T>(k: SharePartitionKey, call: Call<T>): Promise<T> {
    const coordinator = await this.states.coordinator()
    const partition = coordinator.partitionFor(k)
    const leaderId = this.ports.metadata.partition(SHARE_GROUP_STATE_TOPIC, partition)?.leaderId ?? -1
    if (leaderId < 0) throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `${SHARE_GROUP_STATE_TOPIC}-${partition} has no leader now`)
    if (leaderId === this.ports.nodeId) return call.local(coordinator)
    const conn = await this.#link(leaderId)
    try {
      return await call.remote(conn)
    } catch (err) {
      // The connection failed (the coordinator broker stopped, say): a new one next time.
      this.#dropLink(leaderId, conn)
      throw err
    }
  }

  #link(brokerId: number): Promise<BrokerConnection> {
    const existing = this.#links.get(brokerId)
    if (existing !== undefined) {
      return existing.then((c) => {
        if (!c.closed) return c
        this.#dropLink(brokerId, c)
        return this.#link(brokerId)
      })
    }
    const { ports } = this
    const endpoint = ports.metadata.liveBrokers().find((b) => b.id === brokerId)?.endpoints.find((e) => e.listenerName === ports.interBrokerListener)
    if (endpoint === undefined) return Promise.reject(new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `broker ${brokerId} is not live`))
    const connecting = BrokerConnection.connect({
      host: endpoint.host, port: endpoint.port, clientId: `broker-${ports.nodeId}-share-persister`, connectTimeoutMs: 5000, requestTimeoutMs: 30_000, security: ports.interBrokerSecurity,
    }).then((conn) => {
      // close() ran while connecting: this connection would outlive it and keep the process alive.
      if (this.#closed) {
        conn.close()
        throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the broker is shutting down')
      }
      return conn
    })
    this.#links.set(brokerId, connecting)
    connecting.catch(() => {
      if (this.#links.get(brokerId) === connecting) this.#links.delete(brokerId)
    })
    return connecting
  }

  #dropLink(brokerId: number, conn: BrokerConnection): void {
    const current = this.#links.get(brokerId)
    if (current !== undefined) {
      void current.then((c) => {
        if (c === conn && this.#links.get(brokerId) === current) this.#links.delete(brokerId)
      }, () => undefined)
    }
    conn.close()
  }
}

function toKey(k: ShareStateKey): SharePartitionKey {
  return { groupId: k.group, topicId: k.topicId, partition: k.partition }
}
