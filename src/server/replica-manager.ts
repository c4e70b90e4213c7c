// The partitions this broker holds, as a leader serves them (Kafka's ReplicaManager): the one place that
// talks to the shard router about partition data. Handlers reach it as their PartitionService, and the
// coordinators' partition writers append and read through it too: leader checks, appends as leader
// (stamped with the leader epoch, waking the fetches parked in the purgatory), consumer reads, offsets,
// record deletion, producer state, transaction markers and log dirs.
//
// One broker leads every partition at epoch 0 and the shards keep the high watermark at the log end,
// so acks=1 and acks=all both resolve once the local append is done. Replication takes over what is
// behind these methods (partition leadership and epochs, the ISR and its high watermark, a
// delayed-produce purgatory for acks=all) without changing their callers.
import { statfsSync } from 'node:fs'
import { ErrorCode } from '../domain/errors.js'
import type { Outcome } from '../domain/outcome.js'
import type { Logger } from '../observability/logger.js'
import type { AppendItem, ShardReadResult, ShardRouter } from '../shard/router.js'
import type { BrokerMetrics, TopicMetrics } from './broker-metrics.js'
import type { AppendResult, PartitionState } from '../storage/types.js'
import { FetchPurgatory, partitionKey } from './fetch-purgatory.js'
import type {
  ConsumerRead,
  LeaderAppend,
  LeaderAppendOptions,
  LogDirDescription,
  OffsetForTimestamp,
  OffsetLookup,
  PartitionService,
  ProducerStateView,
  RecordsDeletion,
  TopicPartitionRef,
  TxnMarker,
} from './handlers/common/ports.js'

/** The leader epoch of every partition until leader elections exist. */
export const LEADER_EPOCH = 0

/** How the replica manager finds a topic's partition count. */
export interface TopicPartitionCounts {
  get(name: string): { partitions: number } | undefined
}

export class ReplicaManager implements PartitionService {
  readonly #purgatory = new FetchPurgatory()

  constructor(
    private readonly router: ShardRouter,
    private readonly topics: TopicPartitionCounts,
    private readonly dataDir: string,
    private readonly log: Logger,
    private readonly metrics?: BrokerMetrics,
  ) {}

  /** Fetches parked until data arrives (the Fetch purgatory size). */
  get fetchPurgatorySize(): number {
    return this.#purgatory.size
  }

  leaderError(topic: string, partition: number, currentLeaderEpoch = -1): ErrorCode {
    const t = this.topics.get(topic)
    if (t === undefined || partition < 0 || partition >= t.partitions) return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    // -1 skips the check; a newer epoch than ours is unknown to us, an older one is fenced (KIP-320).
    if (currentLeaderEpoch < 0) return ErrorCode.NONE
    if (currentLeaderEpoch > LEADER_EPOCH) return ErrorCode.UNKNOWN_LEADER_EPOCH
    if (currentLeaderEpoch < LEADER_EPOCH) return ErrorCode.FENCED_LEADER_EPOCH
    return ErrorCode.NONE
  }

  /** Every ack level resolves after the local append: the one broker is the whole ISR. */
  async appendAsLeader(items: readonly LeaderAppend[], _options: LeaderAppendOptions): Promise<Outcome<AppendResult>[]> {
    // The epoch is stamped on the caller's items rather than on copies: the router copies each item into
    // its shard message anyway, and Produce's hot path allocates nothing more per partition.
    for (let i = 0; i < items.length; i++) (items[i] as AppendItem).leaderEpoch = LEADER_EPOCH
    const results = await this.router.append(items as readonly AppendItem[])
    if (this.metrics !== undefined) this.countAppends(this.metrics, items, results)
    if (this.#purgatory.size > 0) {
      for (let i = 0; i < results.length; i++) {
        const r = results[i]!
        // A duplicate wrote nothing: no fetch has anything new to wake for.
        if (r.ok && r.value.duplicate !== true) this.#purgatory.notify(partitionKey(items[i]!.topic, items[i]!.partition))
      }
    }
    return results
  }

  /** BrokerTopicMetrics of appends; items come grouped by topic, so a topic's handles are resolved once per run. */
  private countAppends(m: BrokerMetrics, items: readonly LeaderAppend[], results: readonly Outcome<AppendResult>[]): void {
    const all = m.allTopics
    let name: string | null = null
    let t: TopicMetrics = all
    for (let i = 0; i < results.length; i++) {
      const item = items[i]!
      if (item.topic !== name) {
        name = item.topic
        t = m.topic(name)
      }
      t.totalProduceRequests.inc()
      all.totalProduceRequests.inc()
      const r = results[i]!
      if (!r.ok) {
        t.failedProduceRequests.inc()
        all.failedProduceRequests.inc()
      } else if (r.value.duplicate !== true) {
        t.messagesIn.inc(r.value.recordCount)
        all.messagesIn.inc(r.value.recordCount)
        t.bytesIn.inc(item.records.length)
        all.bytesIn.inc(item.records.length)
      }
    }
  }

  countFetched(topic: string, bytes: number, failed: boolean): void {
    const m = this.metrics
    if (m === undefined) return
    let t = this.#lastFetched
    if (topic !== this.#lastFetchedTopic || t === null || this.#lastFetchedGeneration !== m.generation) {
      t = this.#lastFetched = m.topic(topic)
      this.#lastFetchedTopic = topic
      this.#lastFetchedGeneration = m.generation
    }
    t.totalFetchRequests.inc()
    m.allTopics.totalFetchRequests.inc()
    if (failed) {
      t.failedFetchRequests.inc()
      m.allTopics.failedFetchRequests.inc()
    } else if (bytes > 0) {
      t.bytesOut.inc(bytes)
      m.allTopics.bytesOut.inc(bytes)
    }
  }

  #lastFetchedTopic: string | null = null
  #lastFetched: TopicMetrics | null = null
  #lastFetchedGeneration = 0

  read(items: readonly ConsumerRead[]): Promise<Outcome<ShardReadResult>[]> {
    return this.router.read(items)
  }

  releaseLeases(reads: readonly ShardReadResult[]): void {
    this.router.releaseLeases(reads)
  }

  waitForAppends(partitions: readonly TopicPartitionRef[], timeoutMs: number): Promise<boolean> {
    const keys = partitions.map((p) => partitionKey(p.topic, p.partition))
    return this.#purgatory.wait(keys, timeoutMs).promise
  }

  /** Wakes every parked fetch (shutdown): they answer with what they have. */
  wakeAllWaiters(): void {
    this.#purgatory.wakeAll()
  }

  async listOffsets(items: readonly OffsetLookup[]): Promise<Outcome<OffsetForTimestamp>[]> {
    const results = await this.router.listOffsets(items)
    return results.map((r) => (r.ok ? { ok: true, value: { offset: r.value.offset, timestamp: r.value.timestamp, leaderEpoch: r.value.offset >= 0 ? LEADER_EPOCH : -1 } } : r))
  }

  deleteRecords(items: readonly RecordsDeletion[]): Promise<Outcome<number>[]> {
    return this.router.deleteRecords(items)
  }

  describeProducers(items: readonly TopicPartitionRef[]): Promise<Outcome<ProducerStateView[]>[]> {
    return this.router.describeProducers(items)
  }

  async writeTxnMarkers(items: readonly TxnMarker[]): Promise<Outcome<{ offset: number }>[]> {
    const results = await this.router.writeTxnMarkers(items)
    for (let i = 0; i < results.length; i++) {
      if (results[i]!.ok) this.#purgatory.notify(partitionKey(items[i]!.topic, items[i]!.partition))
    }
    return results
  }

  /** States of the given partitions (unknown ones left out), or of every partition. */
  states(partitions?: readonly TopicPartitionRef[]): Promise<PartitionState[]> {
    return this.router.states(partitions)
  }

  async logDirs(partitions: readonly TopicPartitionRef[] | null): Promise<LogDirDescription[]> {
    const states = partitions === null ? await this.router.states() : partitions.length === 0 ? [] : await this.router.states(partitions)
    const { totalBytes, usableBytes } = volumeBytes(this.dataDir, this.log)
    return [{ path: this.dataDir, totalBytes, usableBytes, partitions: states }]
  }
}

function volumeBytes(dir: string, log: Logger): { totalBytes: bigint; usableBytes: bigint } {
  try {
    const s = statfsSync(dir, { bigint: true })
    return { totalBytes: s.blocks * s.bsize, usableBytes: s.bavail * s.bsize }
  } catch (err) {
    log.warn({ err: (err as Error).message, dir }, 'cannot read the log dir volume size')
    return { totalBytes: -1n, usableBytes: -1n }
  }
}
