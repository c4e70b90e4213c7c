// The partitions this broker holds (Kafka's ReplicaManager): the one place that talks to the shard router
// about partition data. Handlers reach it as their PartitionService, and the coordinators' partition
// writers append and read through it too: leader checks, appends as leader (stamped with the leader
// epoch, waking the fetches parked in the purgatory), consumer reads, offsets, record deletion, producer
// state, transaction markers and log dirs.
//
// The control plane drives it as its ReplicaManagerPort: LeaderAndIsr makes this broker leader or
// follower of a partition at a leader epoch (creating the partition's log the first time, with its
// topic's config), StopReplica stops serving one (deleting its log when asked). Its leadership table is
// what leaderError answers from: NOT_LEADER_OR_FOLLOWER unless this broker leads the partition,
// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH against the current epoch.
//
// Replication is not here yet: a follower only records whom it follows (no fetching), and the shards keep
// the high watermark at the log end, so acks=1 and acks=all both resolve once the local append is done.
// The replication layer replaces what is behind these methods (ISR and high watermark, a delayed-produce
// purgatory for acks=all, replica fetchers, truncation) without changing their callers.
import { statfsSync } from 'node:fs'
import { ErrorCode } from '../domain/errors.js'
import type { Outcome } from '../domain/outcome.js'
import type { Logger } from '../observability/logger.js'
import type { AppendItem, ShardReadResult, ShardRouter } from '../shard/router.js'
import type { BrokerMetrics, TopicMetrics } from './broker-metrics.js'
import type { AppendResult, LogConfig, PartitionState } from '../storage/types.js'
import { FetchPurgatory, partitionKey } from './fetch-purgatory.js'
import type {
  ConsumerRead,
  LeaderAppend,
  LeaderAppendOptions,
  LiveLeader,
  LogDirDescription,
  OffsetForTimestamp,
  OffsetLookup,
  PartitionErrorCode,
  PartitionLeaderAndIsr,
  PartitionService,
  ProducerStateView,
  RecordsDeletion,
  ReplicaManagerPort,
  StopReplicaPartition,
  TopicPartitionRef,
  TxnMarker,
} from './handlers/common/ports.js'

/** Kafka's LeaderAndIsr.EpochDuringDelete and NoEpoch in StopReplica. */
const EPOCH_DURING_DELETE = -2
const NO_EPOCH = -1

/** A partition this broker hosts, as the last LeaderAndIsr for it said. */
export interface HostedPartition {
  readonly topic: string
  readonly partition: number
  topicId: string
  isLeader: boolean
  leaderId: number
  leaderEpoch: number
  partitionEpoch: number
  controllerEpoch: number
  replicas: readonly number[]
  isr: readonly number[]
  leaderRecoveryState: number
  /** The leader's inter-broker endpoint, for a follower (where it would fetch from). */
  leaderEndpoint: LiveLeader | undefined
}

export interface ReplicaManagerDeps {
  brokerId: number
  /** The complete LogConfig of a topic's partitions (its overrides over the broker's defaults); throws when they conflict. */
  logConfigFor(topic: string): Promise<LogConfig>
  /** The broker's defaults alone (a partition must open even when its topic's config is unusable). */
  defaultLogConfig(): LogConfig
  /** Whether the metadata knows the partition (not hosted here: NOT_LEADER_OR_FOLLOWER rather than unknown). */
  knowsPartition(topic: string, partition: number): boolean
}

export class ReplicaManager implements PartitionService, ReplicaManagerPort {
  readonly #purgatory = new FetchPurgatory()
  /** topic -> hosted partitions by index: the per-request leader lookup is one map get and an index. */
  readonly #hosted = new Map<string, (HostedPartition | undefined)[]>()

  constructor(
    private readonly router: ShardRouter,
    private readonly dataDir: string,
    private readonly log: Logger,
    private readonly deps: ReplicaManagerDeps,
    private readonly metrics?: BrokerMetrics,
  ) {}

  /** Fetches parked until data arrives (the Fetch purgatory size). */
  get fetchPurgatorySize(): number {
    return this.#purgatory.size
  }

  /** The hosted partitions this broker leads, and those of them with fewer in-sync replicas than replicas. */
  leadership(): { leaders: number; underReplicated: number } {
    let leaders = 0
    let underReplicated = 0
    for (const list of this.#hosted.values()) {
      for (const p of list) {
        if (p === undefined || !p.isLeader) continue
        leaders++
        if (p.isr.length < p.replicas.length) underReplicated++
      }
    }
    return { leaders, underReplicated }
  }

  /** The hosted partition, if any. */
  hosted(topic: string, partition: number): HostedPartition | undefined {
    return this.#hosted.get(topic)?.[partition]
  }

  /** Every hosted partition of a topic (or of every topic). */
  hostedPartitions(topic?: string): HostedPartition[] {
    const lists = topic === undefined ? [...this.#hosted.values()] : [this.#hosted.get(topic) ?? []]
    return lists.flatMap((l) => l.filter((p): p is HostedPartition => p !== undefined))
  }

  leaderError(topic: string, partition: number, currentLeaderEpoch = -1): ErrorCode {
    const p = this.#hosted.get(topic)?.[partition]
    if (p === undefined) return this.deps.knowsPartition(topic, partition) ? ErrorCode.NOT_LEADER_OR_FOLLOWER : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    // -1 skips the check; a newer epoch than ours is unknown to us, an older one is fenced (KIP-320).
    if (currentLeaderEpoch >= 0) {
      if (currentLeaderEpoch > p.leaderEpoch) return ErrorCode.UNKNOWN_LEADER_EPOCH
      if (currentLeaderEpoch < p.leaderEpoch) return ErrorCode.FENCED_LEADER_EPOCH
    }
    return p.isLeader ? ErrorCode.NONE : ErrorCode.NOT_LEADER_OR_FOLLOWER
  }

  /** Every ack level resolves after the local append (no replication yet: see the file header). */
  async appendAsLeader(items: readonly LeaderAppend[], _options: LeaderAppendOptions): Promise<Outcome<AppendResult>[]> {
    // The epoch is stamped on the caller's items rather than on copies: the router copies each item into
    // its shard message anyway, and Produce's hot path allocates nothing more per partition.
    let refused = false
    for (let i = 0; i < items.length; i++) {
      const item = items[i] as AppendItem
      const p = this.#hosted.get(item.topic)?.[item.partition]
      if (p === undefined || !p.isLeader) refused = true
      else item.leaderEpoch = p.leaderEpoch
    }
    if (refused) {
      const out = await this.#appendLedOnly(items)
      if (this.metrics !== undefined) this.countAppends(this.metrics, items, out)
      return out
    }
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

  /** Appends the items this broker leads; the others answer NOT_LEADER_OR_FOLLOWER (rare: callers check first). */
  async #appendLedOnly(items: readonly LeaderAppend[]): Promise<Outcome<AppendResult>[]> {
    const out: Outcome<AppendResult>[] = new Array(items.length)
    const led: AppendItem[] = []
    const at: number[] = []
    items.forEach((item, i) => {
      const p = this.#hosted.get(item.topic)?.[item.partition]
      if (p === undefined || !p.isLeader) {
        out[i] = { ok: false, errorCode: p === undefined && !this.deps.knowsPartition(item.topic, item.partition) ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.NOT_LEADER_OR_FOLLOWER, message: `this broker does not lead ${item.topic}-${item.partition}` }
      } else {
        led.push(item as AppendItem)
        at.push(i)
      }
    })
    if (led.length > 0) {
      const results = await this.router.append(led)
      results.forEach((r, j) => {
        out[at[j]!] = r
        if (r.ok && r.value.duplicate !== true) this.#purgatory.notify(partitionKey(led[j]!.topic, led[j]!.partition))
      })
    }
    return out
  }

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
    return results.map((r, i) => {
      if (!r.ok) return r
      const epoch = this.#hosted.get(items[i]!.topic)?.[items[i]!.partition]?.leaderEpoch ?? 0
      return { ok: true, value: { offset: r.value.offset, timestamp: r.value.timestamp, leaderEpoch: r.value.offset >= 0 ? epoch : -1 } }
    })
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

  // ---------------------------------------------------------------- the control plane's port

  async becomeLeaderOrFollower(_controllerId: number, _controllerEpoch: number, partitions: readonly PartitionLeaderAndIsr[], liveLeaders: readonly LiveLeader[]): Promise<PartitionErrorCode[]> {
    const { brokerId } = this.deps
    const answers: PartitionErrorCode[] = []
    const apply: PartitionLeaderAndIsr[] = []
    for (const p of partitions) {
      const current = this.#hosted.get(p.topic)?.[p.partition]
      if (current !== undefined && p.leaderEpoch <= current.leaderEpoch) {
        // Kafka answers STALE_CONTROLLER_EPOCH for a leader epoch that is not newer (the request is old).
        answers.push({ topic: p.topic, partition: p.partition, errorCode: ErrorCode.STALE_CONTROLLER_EPOCH })
      } else if (!p.replicas.includes(brokerId)) {
        answers.push({ topic: p.topic, partition: p.partition, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
      } else {
        apply.push(p)
      }
    }
    // Logs first (created or opened, with their topic's config), then the leadership table.
    const fresh = apply.filter((p) => this.#hosted.get(p.topic)?.[p.partition] === undefined)
    const failed = new Map<string, ErrorCode>()
    if (fresh.length > 0) {
      const configs = new Map<string, LogConfig>()
      for (const topic of new Set(fresh.map((p) => p.topic))) {
        try {
          configs.set(topic, await this.deps.logConfigFor(topic))
        } catch (err) {
          this.log.error({ topic, err: (err as Error).message }, 'the topic config is unusable; its partitions open with the broker defaults')
          configs.set(topic, this.deps.defaultLogConfig())
        }
      }
      const items = fresh.map((p) => ({ topic: p.topic, partition: p.partition, overrides: configs.get(p.topic)! }))
      const created = await this.router.createPartitions(items)
      // An existing log kept the config it was opened with: give it its topic's.
      await this.router.updateConfigs(items)
      created.forEach((r, i) => {
        if (!r.ok) {
          this.log.error({ topic: fresh[i]!.topic, partition: fresh[i]!.partition, error: r.message }, 'cannot open partition')
          failed.set(partitionKey(fresh[i]!.topic, fresh[i]!.partition), r.errorCode === ErrorCode.NONE ? ErrorCode.KAFKA_STORAGE_ERROR : (r.errorCode as ErrorCode))
        }
      })
    }
    const leaders = new Map(liveLeaders.map((l) => [l.brokerId, l]))
    for (const p of apply) {
      const error = failed.get(partitionKey(p.topic, p.partition))
      if (error !== undefined) {
        answers.push({ topic: p.topic, partition: p.partition, errorCode: error })
        continue
      }
      let list = this.#hosted.get(p.topic)
      if (list === undefined) this.#hosted.set(p.topic, (list = []))
      list[p.partition] = {
        topic: p.topic,
        partition: p.partition,
        topicId: p.topicId,
        isLeader: p.leader === brokerId,
        leaderId: p.leader,
        leaderEpoch: p.leaderEpoch,
        partitionEpoch: p.partitionEpoch,
        controllerEpoch: p.controllerEpoch,
        replicas: [...p.replicas],
        isr: [...p.isr],
        leaderRecoveryState: p.leaderRecoveryState,
        leaderEndpoint: p.leader === brokerId ? undefined : leaders.get(p.leader),
      }
      answers.push({ topic: p.topic, partition: p.partition, errorCode: ErrorCode.NONE })
      // A fetch parked on a partition that changed hands answers now (with the new error).
      this.#purgatory.notify(partitionKey(p.topic, p.partition))
    }
    return answers
  }

  async stopReplicas(_controllerId: number, _controllerEpoch: number, partitions: readonly StopReplicaPartition[]): Promise<PartitionErrorCode[]> {
    const answers = new Map<string, PartitionErrorCode>()
    const toDelete: TopicPartitionRef[] = []
    for (const p of partitions) {
      const key = partitionKey(p.topic, p.partition)
      const current = this.#hosted.get(p.topic)?.[p.partition]
      if (current !== undefined && p.leaderEpoch !== EPOCH_DURING_DELETE && p.leaderEpoch !== NO_EPOCH && p.leaderEpoch < current.leaderEpoch) {
        answers.set(key, { topic: p.topic, partition: p.partition, errorCode: ErrorCode.FENCED_LEADER_EPOCH })
        continue
      }
      if (current !== undefined) {
        const list = this.#hosted.get(p.topic)!
        list[p.partition] = undefined
        if (list.every((x) => x === undefined)) this.#hosted.delete(p.topic)
        this.#purgatory.notify(key)
      }
      // A log no longer hosted is deleted too (a topic deleted while this broker was down).
      if (p.deletePartition) toDelete.push({ topic: p.topic, partition: p.partition })
      answers.set(key, { topic: p.topic, partition: p.partition, errorCode: ErrorCode.NONE })
    }
    if (toDelete.length > 0) {
      const results = await this.router.deletePartitions(toDelete)
      results.forEach((r, i) => {
        if (!r.ok && r.errorCode !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
          const p = toDelete[i]!
          this.log.error({ topic: p.topic, partition: p.partition, error: r.message }, 'cannot delete partition')
          answers.set(partitionKey(p.topic, p.partition), { topic: p.topic, partition: p.partition, errorCode: ErrorCode.KAFKA_STORAGE_ERROR })
        }
      })
    }
    return partitions.map((p) => answers.get(partitionKey(p.topic, p.partition))!)
  }

  /** Gives the hosted partitions of a topic (or of all topics) their current LogConfig (config changes). */
  async refreshLogConfigs(topic?: string): Promise<void> {
    const byTopic = new Map<string, HostedPartition[]>()
    for (const p of this.hostedPartitions(topic)) {
      let list = byTopic.get(p.topic)
      if (list === undefined) byTopic.set(p.topic, (list = []))
      list.push(p)
    }
    for (const [t, list] of byTopic) {
      let overrides: LogConfig
      try {
        overrides = await this.deps.logConfigFor(t)
      } catch (err) {
        // The topic's own overrides conflict with new defaults (min.compaction.lag.ms above the new max,
        // ...): it keeps running with its current settings.
        this.log.error({ topic: t, error: (err as Error).message }, 'topic keeps its log config: it conflicts with the new broker defaults')
        continue
      }
      await this.router.updateConfigs(list.map((p) => ({ topic: p.topic, partition: p.partition, overrides })))
    }
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
