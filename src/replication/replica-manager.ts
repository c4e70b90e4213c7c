// The partitions this broker holds (Kafka's ReplicaManager): the one place that talks to the shard router
// about partition data. Handlers reach it as their PartitionService (server/handlers/common/ports.ts,
// which this floor does not import: partition-requests.ts declares the same shapes, and the broker's
// composition hands the manager over, where the compiler checks the fit), and the coordinators'
// partition writers append and read through it too: leader checks, appends as leader (stamped with the leader
// epoch, waking the fetches parked in the purgatory), consumer reads, offsets, record deletion, producer
// state, transaction markers and log dirs.
//
// The control plane drives it as its ReplicaManagerPort: LeaderAndIsr makes this broker leader or
// follower of a partition at a leader epoch (creating the partition's log the first time, with its
// topic's config), StopReplica stops serving one (deleting its log when asked). Its leadership table is
// what leaderError answers from: NOT_LEADER_OR_FOLLOWER unless this broker leads the partition,
// FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH against the current epoch, KAFKA_STORAGE_ERROR for a replica
// whose log could not be opened (offline, as Kafka's HostedPartition.Offline). A LeaderAndIsr or
// StopReplica whose logs fail logs one line per topic, however many partitions failed.
//
// Replication (partition.ts, delayed-produce.ts, replica-fetcher.ts hold the rules; this file applies
// them to the shards, with two helpers split off as Kafka splits them):
// - A leader keeps a PartitionLeaderState per partition: ISR, followers' LEOs, the HW. While its maximal
//   ISR is itself alone (and min ISR allows it) the shard moves the HW on every append (a single broker
//   pays nothing); otherwise the HW moves here, from followers' fetches and from append answers, and is
//   raised in the shard (with the follower's read when there is one, in the same message).
// - acks=all: NOT_ENOUGH_REPLICAS when the ISR is below min(min.insync.replicas, RF) at append; then the
//   append waits in the DelayedProducePurgatory for the HW (NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
//   shrank below min meanwhile, REQUEST_TIMED_OUT at the request's timeout). acks=1 answers after the
//   leader's append. Transaction markers are appended with acks=all (as Kafka's), bounded by
//   TXN_MARKER_APPEND_TIMEOUT_MS.
// - ISR changes go to the controller with AlterPartition, one in flight per partition
//   (alter-partition-manager.ts): a shrink every replica.lag.time.max.ms/2 for followers not caught up,
//   an expansion when a follower's fetch reaches the HW and the current epoch.
// - A follower is fetched for by num.replica.fetchers ReplicaFetchers per leader broker
//   (replica-fetcher-manager.ts; a partition goes to the one Kafka's hash picks), which append the
//   leader's batches verbatim and truncate by leader epoch. Their connections (connectLeader; the
//   broker's is broker/remote-leader-endpoint.ts) and the controller (alterPartition) are ports.
import { statfsSync } from 'node:fs'
import { resolve } from 'node:path'
import { ErrorCode, errorName } from '../domain/errors.js'
import { inTimedChunks, MainThreadSlices } from '../domain/main-thread-slices.js'
import type { Outcome } from '../domain/outcome.js'
import type { BrokerMetrics, TopicMetrics } from '../observability/broker-metrics.js'
import type { Logger } from '../observability/logger.js'
import type { AlterPartitionRequest, AlterPartitionResponse } from '../protocol/messages/56-alter-partition.gen.js'
import type { AppendItem, ShardReadResult, ShardRouter } from '../shard/router.js'
import type { AppendResult, LogConfig, PartitionState, ProducerDescription } from '../storage/types.js'
import { AlterPartitionManager, type IsrHost } from './alter-partition-manager.js'
import { DelayedFetchPurgatory, partitionKey, type PartitionWatch } from './delayed-fetch.js'
import { DelayedProducePurgatory } from './delayed-produce.js'
import type { HostedPartition } from './hosted-partition.js'
import type { FollowerLogState, LeaderEndpoint } from './leader-endpoint.js'
import type {
  ConsumerRead,
  EpochLookup,
  FollowerPartitionRead,
  FollowerRead,
  LeaderAppend,
  LeaderAppendOptions,
  LiveLeader,
  LogDirDescription,
  OffsetForTimestamp,
  OffsetLookup,
  PartitionErrorCode,
  PartitionLeaderAndIsr,
  RecordsDeletion,
  StopReplicaPartition,
  TopicPartitionRef,
  TxnMarker,
} from './partition-requests.js'
import { PartitionLeaderState } from './partition.js'
import type { FetcherPartition, FollowerThrottle, ReplicaFetcherSettings } from './replica-fetcher.js'
import { ReplicaFetcherManager } from './replica-fetcher-manager.js'
import type { LeaderThrottle } from './replication-quota.js'

export type { HostedPartition }

/** acks=all's refusal while the ISR is below min.insync.replicas (nothing is written). */
function notEnoughReplicas(topic: string, partition: number, ls: PartitionLeaderState): { ok: false; errorCode: ErrorCode; message: string } {
  return { ok: false, errorCode: ErrorCode.NOT_ENOUGH_REPLICAS, message: `the ISR of ${topic}-${partition} is [${ls.isr.join(',')}], fewer than min.insync.replicas ${ls.effectiveMinIsr}` }
}

/** How long a transaction marker waits for the in-sync replicas (Kafka: request.timeout.ms, 30 s by default). */
const TXN_MARKER_APPEND_TIMEOUT_MS = 30_000
/** Kafka's LeaderAndIsr.EpochDuringDelete and NoEpoch in StopReplica. */
const EPOCH_DURING_DELETE = -2
const NO_EPOCH = -1

export interface ReplicaManagerDeps {
  brokerId: number
  /** The complete LogConfig of a topic's partitions (its overrides over the broker's defaults); throws when they conflict. */
  logConfigFor(topic: string): Promise<LogConfig>
  /** The broker's defaults alone (a partition must open even when its topic's config is unusable). */
  defaultLogConfig(): LogConfig
  /** Whether the metadata knows the partition (not hosted here: NOT_LEADER_OR_FOLLOWER rather than unknown). */
  knowsPartition(topic: string, partition: number): boolean
  /** min.insync.replicas of a topic (its override, else the broker's). */
  minInsyncReplicas(topic: string): Promise<number>
  /** This broker's epoch (its registration), sent with AlterPartition. */
  brokerEpoch(): bigint
  /** Sends an AlterPartition (v1: topic names) to the active controller; rejects when none answers. */
  alterPartition(request: AlterPartitionRequest): Promise<AlterPartitionResponse>
  /** A connection to a leader for a fetcher (its fetcher id among num.replica.fetchers). */
  connectLeader(leader: LiveLeader, fetcherId: number): Promise<LeaderEndpoint>
  /** num.replica.fetchers now: fetchers (connections) per leader broker; default 1. */
  numReplicaFetchers?: () => number
  /** replica.lag.time.max.ms */
  replicaLagTimeMaxMs: number
  /**
   * Whether this broker may act as a leader now (its lease: broker/control/broker-lease.ts). Asked on
   * every leader check, so a process that resumes after a pause answers from the clock, not from a timer
   * that has not run yet. Default: always.
   */
  leaseHeld?: () => boolean
  /** replica.fetch.* settings of the fetchers. */
  fetcher: ReplicaFetcherSettings
  /** follower.replication.throttled.rate over follower.replication.throttled.replicas (none: unthrottled). */
  followerThrottle?: FollowerThrottle
  /** leader.replication.throttled.rate over leader.replication.throttled.replicas (none: unthrottled). */
  leaderThrottle?: LeaderThrottle
}

/** Follower partitions handed to the fetchers at a time, between which a LeaderAndIsr's work may yield. */
const FETCHER_ADD_CHUNK = 256

export class ReplicaManager {
  /**
   * Parked fetches, in two purgatories by what wakes them (Kafka's DelayedFetch checks the same on every
   * wake-up, here the wake-up itself is narrowed): a follower's fetch reads up to the log end, so every
   * append wakes it; a consumer's reads up to the high watermark, so only a HW move (or an append whose
   * HW follows the LEO) can give it anything. An append to a replicated partition then costs no consumer
   * fetch a read that finds nothing, and a HW move no follower fetch one.
   */
  readonly #consumerFetches = new DelayedFetchPurgatory()
  readonly #followerFetches = new DelayedFetchPurgatory()
  readonly #delayedProduce = new DelayedProducePurgatory()
  /** topic -> hosted partitions by index: the per-request leader lookup is one map get and an index. */
  readonly #hosted = new Map<string, (HostedPartition | undefined)[]>()
  /** Replicas assigned here whose log could not be created or opened (partitionKey -> why). */
  readonly #offline = new Map<string, string>()
  /** The fetchers of the partitions this broker follows. */
  readonly #fetcherManager: ReplicaFetcherManager
  /** ISR shrinks and expansions of the partitions this broker leads, through the controller. */
  readonly #isr: AlterPartitionManager
  #closed = false
  readonly #leadershipListeners: ((topic: string, partition: number, isLeader: boolean) => void)[] = []

  constructor(
    private readonly router: ShardRouter,
    private readonly log: Logger,
    private readonly deps: ReplicaManagerDeps,
    private readonly metrics?: BrokerMetrics,
  ) {
    this.#fetcherManager = new ReplicaFetcherManager(router, log, {
      connectLeader: (leader, fetcherId) => deps.connectLeader(leader, fetcherId),
      numReplicaFetchers: deps.numReplicaFetchers === undefined ? undefined : () => deps.numReplicaFetchers!(),
      fetcher: deps.fetcher,
      followerThrottle: deps.followerThrottle,
      replicationBytesIn: metrics?.replicationBytesIn,
      followerLogChanged: (topic, partition, state) => this.#followerLogChanged(topic, partition, state),
    })
    this.#isr = new AlterPartitionManager(this.#isrHost, log, {
      brokerId: deps.brokerId,
      brokerEpoch: () => deps.brokerEpoch(),
      sendAlterPartition: (request) => deps.alterPartition(request),
      replicaLagTimeMaxMs: deps.replicaLagTimeMaxMs,
    }, metrics)
    // The acks=all purgatory's size is read when /metrics is scraped.
    if (metrics !== undefined) metrics.registry.onScrape(() => metrics.producePurgatorySize.set(this.#delayedProduce.size))
  }

  /** The leadership table and HW rules as the ISR manager sees them. */
  readonly #isrHost: IsrHost = {
    hosted: (topic, partition) => this.hosted(topic, partition),
    hostedPartitions: () => this.hostedPartitions(),
    isrProposalChanged: (p) => void this.#applyHighWatermarkMode(p),
    isrAnswered: (p) => {
      const ls = p.leaderState!
      // Followers' sessions read the partition again (one refused, or left out, keeps trying to join).
      this.#followerFetches.mark(partitionKey(p.topic, p.partition))
      if (ls.isr.length < ls.effectiveMinIsr) this.#delayedProduce.failAll(partitionKey(p.topic, p.partition), ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
      void this.#applyHighWatermarkMode(p)
      this.#maybeAdvanceHighWatermark(p)
    },
  }

  /**
   * Called after this broker became leader of a partition (isLeader) or stopped leading it (a follower
   * now, or no longer hosting it): the coordinators follow the leadership of their partitions with it.
   */
  onLeadershipChange(listener: (topic: string, partition: number, isLeader: boolean) => void): void {
    this.#leadershipListeners.push(listener)
  }

  #leadershipChanged(topic: string, partition: number, isLeader: boolean): void {
    for (const l of this.#leadershipListeners) {
      try {
        l(topic, partition, isLeader)
      } catch (err) {
        this.log.error({ topic, partition, err: (err as Error).message }, 'a leadership listener failed')
      }
    }
  }

  /** Fetches parked until data arrives (the Fetch purgatory size). */
  get fetchPurgatorySize(): number {
    return this.#consumerFetches.size + this.#followerFetches.size
  }

  /** Wakes every fetch parked on the partition, consumer and follower (role changes, data gone, ...). */
  #wakeFetches(key: string): void {
    this.#consumerFetches.notify(key)
    this.#followerFetches.notify(key)
  }

  /** The leader's log grew: followers' fetches wake; consumers' too when the HW moved with it. */
  #appended(key: string, p: HostedPartition | undefined): void {
    this.#followerFetches.notify(key)
    if (p === undefined || p.hwFollowsLeo) this.#consumerFetches.notify(key)
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
    if (p !== undefined && p.isLeader && this.deps.leaseHeld?.() === false) return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if (p === undefined) {
      if (this.#offline.size > 0 && this.#offline.has(partitionKey(topic, partition))) return ErrorCode.KAFKA_STORAGE_ERROR
      return this.deps.knowsPartition(topic, partition) ? ErrorCode.NOT_LEADER_OR_FOLLOWER : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }
    // -1 skips the check; a newer epoch than ours is unknown to us, an older one is fenced (KIP-320).
    if (currentLeaderEpoch >= 0) {
      if (currentLeaderEpoch > p.leaderEpoch) return ErrorCode.UNKNOWN_LEADER_EPOCH
      if (currentLeaderEpoch < p.leaderEpoch) return ErrorCode.FENCED_LEADER_EPOCH
    }
    return p.isLeader ? ErrorCode.NONE : ErrorCode.NOT_LEADER_OR_FOLLOWER
  }

  /**
   * A consumer's read (KIP-392): NONE where leaderError says so, and on a follower of the partition too
   * when `fromFollower` (Fetch v11+, whose clients handle a follower's answers); the leader epoch is
   * checked against the follower's as against the leader's.
   */
  readError(topic: string, partition: number, currentLeaderEpoch: number, fromFollower: boolean): ErrorCode {
    const error = this.leaderError(topic, partition, currentLeaderEpoch)
    if (error === ErrorCode.NOT_LEADER_OR_FOLLOWER && fromFollower && this.#hosted.get(topic)?.[partition] !== undefined) return ErrorCode.NONE
    return error
  }

  /**
   * The replicas of a partition this broker leads that a consumer at fetchOffset could be sent to
   * (KIP-392, Kafka's ReplicaManager.findPreferredReadReplica): the in-sync followers whose log end is
   * known to have reached fetchOffset, most caught up first is the selector's business. Undefined when
   * this broker does not lead the partition.
   */
  readReplicaCandidates(topic: string, partition: number, fetchOffset: number): { brokerId: number; logEndOffset: number; lastCaughtUpMs: number }[] | undefined {
    const ls = this.#hosted.get(topic)?.[partition]?.leaderState
    if (ls === undefined) return undefined
    const out: { brokerId: number; logEndOffset: number; lastCaughtUpMs: number }[] = []
    for (const f of ls.followers.values()) {
      // A follower's log start is not tracked here: one that no longer holds fetchOffset answers
      // OFFSET_OUT_OF_RANGE, and the client goes back to the leader.
      if (ls.isr.includes(f.brokerId) && f.leo >= fetchOffset) out.push({ brokerId: f.brokerId, logEndOffset: f.leo, lastCaughtUpMs: f.lastCaughtUpMs })
    }
    return out
  }

  /** The log of a partition this broker follows, as its fetcher last left it; undefined when it leads it or hosts none. */
  followerLog(topic: string, partition: number): FollowerLogState | undefined {
    return this.#hosted.get(topic)?.[partition]?.followerLog
  }

  /** A fetcher appended to or truncated a followed partition: consumers reading from this follower may read on. */
  #followerLogChanged(topic: string, partition: number, state: FollowerLogState): void {
    const p = this.#hosted.get(topic)?.[partition]
    if (p === undefined || p.isLeader) return
    const before = p.followerLog
    p.followerLog = state
    if (this.#consumerFetches.size > 0 && (before === undefined || state.highWatermark !== before.highWatermark || state.logEndOffset < before.logEndOffset)) {
      this.#consumerFetches.notify(partitionKey(topic, partition))
    }
  }

  /**
   * Appends to led partitions. The common case (every partition's HW follows its LEO, the ISR is the
   * leader alone) is one router call and nothing else, as before replication.
   */
  async appendAsLeader(items: readonly LeaderAppend[], options: LeaderAppendOptions): Promise<Outcome<AppendResult>[]> {
    if (this.deps.leaseHeld?.() === false) {
      return items.map((item) => ({ ok: false, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, message: `this broker's lease lapsed: it does not act as leader of ${item.topic}-${item.partition}` }))
    }
    // The epoch is stamped on the caller's items rather than on copies: the router copies each item into
    // its shard message anyway, and Produce's hot path allocates nothing more per partition. Each item's
    // leadership is looked up once before the append: the scan stops at the first item the common case
    // does not cover, and the replicated path goes on from there with what the scan found.
    let checked = 0
    for (; checked < items.length; checked++) {
      const item = items[checked] as AppendItem
      const p = this.#hosted.get(item.topic)?.[item.partition]
      if (p === undefined || !p.isLeader || !p.hwFollowsLeo || (options.acks === -1 && p.leaderState!.underMinIsr)) break
      item.leaderEpoch = p.leaderEpoch
    }
    if (checked < items.length) {
      const out = await this.#appendReplicated(items, options, checked)
      if (this.metrics !== undefined) this.countAppends(this.metrics, items, out)
      return out
    }
    const results = await this.router.append(items as readonly AppendItem[])
    if (this.metrics !== undefined) this.countAppends(this.metrics, items, results)
    for (let i = 0; i < results.length; i++) {
      const r = results[i]!
      // A duplicate wrote nothing: no fetch has anything new to wake for.
      if (!r.ok || r.value.duplicate === true) continue
      const ls = this.#hosted.get(items[i]!.topic)?.[items[i]!.partition]?.leaderState
      if (ls !== undefined && r.value.lastOffset + 1 > ls.logEndOffset) ls.highWatermark = ls.logEndOffset = r.value.lastOffset + 1
      // The HW follows the LEO on this path: what the append wrote is readable by consumers at once.
      const key = partitionKey(items[i]!.topic, items[i]!.partition)
      if (this.#followerFetches.interested) this.#followerFetches.notify(key)
      if (this.#consumerFetches.size > 0) this.#consumerFetches.notify(key)
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

  /**
   * Appends with the replication rules: items this broker does not lead answer NOT_LEADER_OR_FOLLOWER,
   * acks=all below min ISR NOT_ENOUGH_REPLICAS (nothing written); acks=all waits for the HW. The first
   * `checked` items were found led (epoch stamped) by appendAsLeader's scan, in the same turn.
   */
  async #appendReplicated(items: readonly LeaderAppend[], options: LeaderAppendOptions, checked: number): Promise<Outcome<AppendResult>[]> {
    const out: Outcome<AppendResult>[] = new Array(items.length)
    const led: AppendItem[] = []
    const at: number[] = []
    for (let i = 0; i < checked; i++) {
      led.push(items[i] as AppendItem)
      at.push(i)
    }
    for (let i = checked; i < items.length; i++) {
      const item = items[i]!
      const p = this.#hosted.get(item.topic)?.[item.partition]
      if (p === undefined || !p.isLeader) {
        out[i] = { ok: false, errorCode: p === undefined && !this.deps.knowsPartition(item.topic, item.partition) ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.NOT_LEADER_OR_FOLLOWER, message: `this broker does not lead ${item.topic}-${item.partition}` }
      } else if (options.acks === -1 && p.leaderState!.underMinIsr) {
        out[i] = notEnoughReplicas(item.topic, item.partition, p.leaderState!)
      } else {
        ;(item as AppendItem).leaderEpoch = p.leaderEpoch
        led.push(item as AppendItem)
        at.push(i)
      }
    }
    if (led.length === 0) return out
    const results = await this.router.append(led)
    const waits: Promise<void>[] = []
    results.forEach((r, j) => {
      const item = led[j]!
      out[at[j]!] = r
      if (!r.ok) return
      const p = this.#hosted.get(item.topic)?.[item.partition]
      const ls = p?.leaderState
      if (r.value.duplicate !== true) {
        this.#appended(partitionKey(item.topic, item.partition), p)
        if (ls !== undefined) this.#leaderAppended(p!, r.value.lastOffset + 1)
      }
      if (options.acks !== -1) return
      if (p === undefined || ls === undefined || !p.isLeader) {
        out[at[j]!] = { ok: false, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, message: `${item.topic}-${item.partition} changed leader during the append` }
        return
      }
      const required = r.value.lastOffset + 1
      const replicated = this.#replicated(item.topic, item.partition, p, required, options.timeoutMs)
      if (replicated === undefined) return
      waits.push(
        replicated.then((code) => {
          if (code !== ErrorCode.NONE) out[at[j]!] = { ok: false, errorCode: code, message: `acks=all for ${item.topic}-${item.partition} at offset ${required - 1}: ${errorName(code)}` }
        }),
      )
    })
    if (waits.length > 0) await Promise.all(waits)
    return out
  }

  /**
   * acks=all once the leader's log holds `required` offsets: undefined when the HW is there already (or
   * follows the LEO, without replication), else the DelayedProducePurgatory's answer (NONE once the HW
   * passes it; NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_LEADER_OR_FOLLOWER or REQUEST_TIMED_OUT otherwise).
   * Produce with acks=all and transaction markers wait the same way.
   */
  #replicated(topic: string, partition: number, p: HostedPartition, required: number, timeoutMs: number): Promise<ErrorCode> | undefined {
    if (p.hwFollowsLeo || p.leaderState!.highWatermark >= required) return undefined
    return this.#delayedProduce.wait(partitionKey(topic, partition), required, timeoutMs)
  }

  /** The leader's log grew to leo (an append or a marker): the HW may move. */
  #leaderAppended(p: HostedPartition, leo: number): void {
    const ls = p.leaderState!
    if (leo > ls.logEndOffset) ls.logEndOffset = leo
    if (p.hwFollowsLeo) {
      if (leo > ls.highWatermark) ls.highWatermark = leo
      return
    }
    this.#maybeAdvanceHighWatermark(p)
  }

  /** Raises the HW in the shard when the rules allow a higher one. */
  #maybeAdvanceHighWatermark(p: HostedPartition): void {
    const ls = p.leaderState
    if (ls === undefined || p.hwFollowsLeo) return
    const hw = ls.computeHighWatermark(Date.now(), this.deps.replicaLagTimeMaxMs)
    if (hw <= ls.highWatermark) return
    void this.router.call('setHighWatermark', [{ topic: p.topic, partition: p.partition, highWatermark: hw }]).then(([r]) => {
      if (r!.ok) this.#highWatermarkMoved(p, r!.value)
    })
  }

  /** The shard's HW of a led partition is now hw: acks=all appends it passed answer, consumers wake. */
  #highWatermarkMoved(p: HostedPartition, hw: number): void {
    const ls = p.leaderState
    if (ls === undefined || this.hosted(p.topic, p.partition) !== p) return
    if (hw <= ls.highWatermark) return
    ls.highWatermark = hw
    const key = partitionKey(p.topic, p.partition)
    this.#delayedProduce.complete(key, hw, ls.maximalIsr().length >= ls.effectiveMinIsr)
    this.#consumerFetches.notify(key)
    // Followers' sessions answer the new HW at their next fetch (it wakes none: Kafka's follower fetches wait for bytes).
    this.#followerFetches.mark(key)
  }

  read(items: readonly ConsumerRead[]): Promise<Outcome<ShardReadResult>[]> {
    return this.router.read(items)
  }

  releaseLeases(reads: readonly ShardReadResult[]): void {
    this.router.releaseLeases(reads)
  }

  waitForAppends(partitions: readonly TopicPartitionRef[], timeoutMs: number, reader: 'consumer' | 'follower' = 'consumer'): Promise<boolean> {
    const keys = partitions.map((p) => partitionKey(p.topic, p.partition))
    return (reader === 'follower' ? this.#followerFetches : this.#consumerFetches).wait(keys, timeoutMs).promise
  }

  /** A standing watch for a follower's fetch session (PartitionService.watchForFollower). */
  watchForFollower(): PartitionWatch {
    return this.#followerFetches.watch()
  }

  /** Wakes every parked fetch (shutdown): they answer with what they have. */
  wakeAllWaiters(): void {
    this.#consumerFetches.wakeAll()
    this.#followerFetches.wakeAll()
  }

  async listOffsets(items: readonly OffsetLookup[]): Promise<Outcome<OffsetForTimestamp>[]> {
    const results = await this.router.listOffsets(items)
    return results.map((r, i) => {
      if (!r.ok) return r
      const epoch = this.#hosted.get(items[i]!.topic)?.[items[i]!.partition]?.leaderEpoch ?? 0
      return { ok: true, value: { offset: r.value.offset, timestamp: r.value.timestamp, leaderEpoch: r.value.offset >= 0 ? epoch : -1 } }
    })
  }

  async deleteRecords(items: readonly RecordsDeletion[]): Promise<Outcome<number>[]> {
    const results = await this.router.deleteRecords(items)
    // Followers' sessions answer the new log start offset at their next fetch.
    results.forEach((r, i) => {
      if (r.ok) this.#followerFetches.mark(partitionKey(items[i]!.topic, items[i]!.partition))
    })
    return results
  }

  describeProducers(items: readonly TopicPartitionRef[]): Promise<Outcome<ProducerDescription[]>[]> {
    return this.router.describeProducers(items)
  }

  async writeTxnMarkers(items: readonly TxnMarker[]): Promise<Outcome<{ offset: number }>[]> {
    // Markers carry the partition's current leader epoch (the epoch cache and followers rely on it); only
    // the leader writes them (a follower's log is its leader's bytes). They are appended as Kafka's
    // handleWriteTxnMarkersRequest does, with acks=all: refused below min.insync.replicas, answered once
    // the HW passes them. A marker answered on the leader's append alone could be lost with a leader
    // change (the new leader never had it, the old one truncates it) after the coordinator completed the
    // transaction: the transaction would stay open there, and the producer's next transaction on the
    // partition would take its records in and commit them (an aborted read) or abort committed ones.
    const out: Outcome<{ offset: number }>[] = new Array(items.length)
    const stamped: (TxnMarker & { leaderEpoch: number })[] = []
    const at: number[] = []
    items.forEach((m, i) => {
      const error = this.leaderError(m.topic, m.partition)
      if (error !== ErrorCode.NONE) {
        out[i] = { ok: false, errorCode: error, message: `this broker does not lead ${m.topic}-${m.partition}` }
        return
      }
      const p = this.#hosted.get(m.topic)![m.partition]!
      const ls = p.leaderState
      if (ls !== undefined && ls.underMinIsr) {
        out[i] = notEnoughReplicas(m.topic, m.partition, ls)
        return
      }
      stamped.push({ ...m, leaderEpoch: p.leaderEpoch })
      at.push(i)
    })
    const written = stamped.length === 0 ? [] : await this.router.writeTxnMarkers(stamped)
    const waits: Promise<void>[] = []
    written.forEach((r, j) => {
      const i = at[j]!
      out[i] = r
      if (!r.ok) return
      const { topic, partition } = items[i]!
      const p = this.#hosted.get(topic)?.[partition]
      this.#appended(partitionKey(topic, partition), p)
      const ls = p?.leaderState
      if (p === undefined || ls === undefined || !p.isLeader) {
        out[i] = { ok: false, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, message: `${topic}-${partition} changed leader during the marker's append` }
        return
      }
      const required = r.value.offset + 1
      this.#leaderAppended(p, required)
      const replicated = this.#replicated(topic, partition, p, required, TXN_MARKER_APPEND_TIMEOUT_MS)
      if (replicated === undefined) return
      waits.push(
        replicated.then((code) => {
          if (code !== ErrorCode.NONE) out[i] = { ok: false, errorCode: code, message: `transaction marker at ${topic}-${partition} offset ${required - 1}: ${errorName(code)}` }
        }),
      )
    })
    if (waits.length > 0) await Promise.all(waits)
    return out
  }

  // ---------------------------------------------------------------- the leader side of replication

  async readForFollower(replicaId: number, items: readonly FollowerRead[]): Promise<Outcome<FollowerPartitionRead>[]> {
    const out: Outcome<FollowerPartitionRead>[] = new Array(items.length)
    const reads: { topic: string; partition: number; offset: number; maxBytes: number; lastFetchedEpoch: number; highWatermark?: number }[] = []
    const at: number[] = []
    const now = Date.now()
    // The leader side of replication throttling (Kafka's ReplicaManager.shouldLeaderThrottle): while the
    // rate is over leader.replication.throttled.rate, a listed partition whose fetching replica is out of
    // the ISR is answered without records (its offsets still move the follower's state). Decided once per
    // read, and only asked once such a partition has records. The bytes of every listed partition, in sync
    // or not, count against the rate, as Kafka's do: the answer marks them `throttled` and the Fetch
    // handler records what it sends (countReplicationSent).
    const throttle = this.deps.leaderThrottle
    let overQuota: boolean | undefined
    const listed: boolean[] = []
    items.forEach((item, i) => {
      const error = this.leaderError(item.topic, item.partition, item.currentLeaderEpoch)
      const p = this.#hosted.get(item.topic)?.[item.partition]
      const ls = p?.leaderState
      if (error !== ErrorCode.NONE || ls === undefined) {
        out[i] = { ok: false, errorCode: error === ErrorCode.NONE ? ErrorCode.NOT_LEADER_OR_FOLLOWER : error, message: `${item.topic}-${item.partition}` }
        return
      }
      const f = ls.followers.get(replicaId)
      if (f === undefined) {
        out[i] = { ok: false, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, message: `broker ${replicaId} is not a replica of ${item.topic}-${item.partition}` }
        return
      }
      const read: (typeof reads)[number] = { topic: item.topic, partition: item.partition, offset: item.fetchOffset, maxBytes: item.maxBytes, lastFetchedEpoch: item.lastFetchedEpoch }
      // The fetch offset is the follower's LEO: when it is surely valid (not past the leader's), the HW
      // it allows rides on this read.
      if (!p!.hwFollowsLeo && item.fetchOffset <= ls.logEndOffset && item.fetchOffset > f.leo) {
        f.leo = item.fetchOffset
        const hw = ls.computeHighWatermark(now, this.deps.replicaLagTimeMaxMs)
        if (hw > ls.highWatermark) read.highWatermark = hw
      }
      reads.push(read)
      at.push(i)
      listed.push(throttle?.isThrottled(item.topic, item.partition) ?? false)
    })
    if (reads.length === 0) return out
    const results = await this.router.call('readForFollower', reads)
    results.forEach((r, j) => {
      const item = items[at[j]!]!
      if (!r.ok) {
        out[at[j]!] = r
        return
      }
      const v = r.value
      if (listed[j]! && v.bytes > 0 && !(this.#hosted.get(item.topic)?.[item.partition]?.leaderState?.isr.includes(replicaId) ?? false) && (overQuota ??= throttle!.isQuotaExceeded())) {
        this.router.releaseLeases([v])
        v.regions = []
        v.bytes = 0
        v.leaseId = 0
      }
      out[at[j]!] = {
        ok: true,
        value: {
          regions: v.regions,
          bytes: v.bytes,
          leaseId: v.leaseId,
          shard: v.shard,
          logStartOffset: v.logStartOffset,
          logEndOffset: v.logEndOffset,
          highWatermark: v.highWatermark,
          lastStableOffset: v.lastStableOffset,
          abortedTransactions: [],
          divergingEpoch: v.divergingEpoch,
          throttled: listed[j]!,
        } as FollowerPartitionRead,
      }
      const p = this.#hosted.get(item.topic)?.[item.partition]
      if (p?.leaderState === undefined || v.divergingEpoch !== undefined) return
      p.leaderState.updateFollower(replicaId, item.fetchOffset, v.logEndOffset, now)
      this.#highWatermarkMoved(p, v.highWatermark)
      this.#isr.maybeExpandIsr(p, replicaId)
      this.#maybeAdvanceHighWatermark(p)
      ;(out[at[j]!] as { ok: true; value: FollowerPartitionRead }).value.inSync = p.leaderState.isr.includes(replicaId)
    })
    return out
  }

  countReplicationSent(bytes: number, throttledBytes: number): void {
    if (bytes > 0) this.metrics?.replicationBytesOut.inc(bytes)
    if (throttledBytes > 0) this.deps.leaderThrottle?.record(throttledBytes)
  }

  async endOffsetsForEpochs(replicaId: number, items: readonly EpochLookup[]): Promise<Outcome<{ leaderEpoch: number; endOffset: number }>[]> {
    const out: Outcome<{ leaderEpoch: number; endOffset: number }>[] = new Array(items.length)
    const lookups: { topic: string; partition: number; leaderEpoch: number }[] = []
    const at: number[] = []
    items.forEach((item, i) => {
      let error = this.leaderError(item.topic, item.partition, item.currentLeaderEpoch)
      // Kafka's DEBUGGING replica id (-2) may read a follower's epochs.
      if (error === ErrorCode.NOT_LEADER_OR_FOLLOWER && replicaId === -2 && this.hosted(item.topic, item.partition) !== undefined) error = ErrorCode.NONE
      if (error !== ErrorCode.NONE) {
        out[i] = { ok: false, errorCode: error, message: `${item.topic}-${item.partition}` }
        return
      }
      lookups.push({ topic: item.topic, partition: item.partition, leaderEpoch: item.leaderEpoch })
      at.push(i)
    })
    const results = lookups.length === 0 ? [] : await this.router.call('endOffsetForEpoch', lookups)
    results.forEach((r, j) => {
      out[at[j]!] = r
    })
    return out
  }

  /** Tells the shard whether appends move the HW, when that changed. */
  async #applyHighWatermarkMode(p: HostedPartition): Promise<void> {
    const ls = p.leaderState
    if (ls === undefined) return
    const follows = ls.highWatermarkFollowsLeo
    if (follows === p.hwFollowsLeo) return
    p.hwFollowsLeo = follows
    const [r] = await this.router.call('setHighWatermark', [{ topic: p.topic, partition: p.partition, followsLeo: follows }])
    if (r!.ok) this.#highWatermarkMoved(p, r!.value)
  }

  /** The fetchers running, by leader broker: how many partitions each replicates (diagnostics, tests). */
  fetcherPartitions(): Map<number, number[]> {
    return this.#fetcherManager.fetcherPartitions()
  }

  /** Stops fetching these partitions (from whichever leader), once no answer for them is being applied. */
  #stopFetching(partitions: readonly TopicPartitionRef[]): Promise<void> {
    return this.#fetcherManager.removePartitions(partitions)
  }

  /**
   * The broker's lease lapsed: the appends waiting for acks answer NOT_LEADER_OR_FOLLOWER now, so their
   * producers look for the new leader instead of waiting out their timeout (what they wrote here may be
   * truncated when this broker follows again; an idempotent producer's retry is deduplicated by sequence).
   */
  leaseLapsed(): void {
    this.#delayedProduce.failEverything(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    this.#consumerFetches.wakeAll()
  }

  /** Stops the fetchers and the ISR task; appends waiting for acks answer NOT_LEADER_OR_FOLLOWER. */
  async close(): Promise<void> {
    this.#closed = true
    this.#isr.close()
    this.#delayedProduce.failEverything(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    await this.#fetcherManager.close()
  }

  // ---------------------------------------------------------------- the control plane's port

  async becomeLeaderOrFollower(_controllerId: number, _controllerEpoch: number, partitions: readonly PartitionLeaderAndIsr[], liveLeaders: readonly LiveLeader[]): Promise<PartitionErrorCode[]> {
    const { brokerId } = this.deps
    const answers: PartitionErrorCode[] = []
    const apply: PartitionLeaderAndIsr[] = []
    const isrUpdates: PartitionLeaderAndIsr[] = []
    for (const p of partitions) {
      const current = this.#hosted.get(p.topic)?.[p.partition]
      if (current !== undefined && this.#isIsrUpdate(current, p)) {
        this.#updateIsrInPlace(current, p)
        isrUpdates.push(p)
        answers.push({ topic: p.topic, partition: p.partition, errorCode: ErrorCode.NONE })
      } else if (current !== undefined && p.leaderEpoch <= current.leaderEpoch) {
        // Kafka answers STALE_CONTROLLER_EPOCH for a leader epoch that is not newer (the request is old).
        answers.push({ topic: p.topic, partition: p.partition, errorCode: ErrorCode.STALE_CONTROLLER_EPOCH })
      } else if (!p.replicas.includes(brokerId)) {
        answers.push({ topic: p.topic, partition: p.partition, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
      } else {
        apply.push(p)
      }
    }
    // One line per request: a controller failover at scale shrinks tens of thousands of ISRs at once.
    if (isrUpdates.length > 0) {
      const first = isrUpdates.slice(0, 5).map((p) => ({ topic: p.topic, partition: p.partition, isr: p.isr, partitionEpoch: p.partitionEpoch }))
      this.log.info({ partitions: isrUpdates.length, first }, 'ISR changed by the controller')
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
      const failedByTopic = new Map<string, { partitions: number[]; error: string }>()
      created.forEach((r, i) => {
        const { topic, partition } = fresh[i]!
        const key = partitionKey(topic, partition)
        if (r.ok) {
          this.#offline.delete(key)
          return
        }
        failed.set(key, r.errorCode === ErrorCode.NONE ? ErrorCode.KAFKA_STORAGE_ERROR : (r.errorCode as ErrorCode))
        this.#offline.set(key, r.message)
        let f = failedByTopic.get(topic)
        if (f === undefined) failedByTopic.set(topic, (f = { partitions: [], error: r.message }))
        f.partitions.push(partition)
      })
      // One line per topic (a topic of 100,000 partitions on a broadly broken disk is not 100,000 lines).
      for (const [topic, f] of failedByTopic) {
        this.log.error({ topic, failed: f.partitions.length, partitions: f.partitions.slice(0, 10), error: f.error }, 'cannot open partitions: offline on this broker')
      }
    }
    const leaders = new Map(liveLeaders.map((l) => [l.brokerId, l]))
    const ready = apply.filter((p) => {
      const error = failed.get(partitionKey(p.topic, p.partition))
      if (error !== undefined) answers.push({ topic: p.topic, partition: p.partition, errorCode: error })
      return error === undefined
    })
    // While the roles change, the old entries take no appends (clients retry NOT_LEADER_OR_FOLLOWER): an
    // append stamped with the old epoch must not reach the shard after the new epoch was assigned there.
    for (const p of ready) {
      const current = this.#hosted.get(p.topic)?.[p.partition]
      if (current !== undefined) current.isLeader = false
    }
    await this.#stopFetching(ready)
    const minIsr = new Map<string, number>()
    for (const topic of new Set(ready.map((p) => p.topic))) minIsr.set(topic, await this.deps.minInsyncReplicas(topic).catch(() => 1))
    const ledItems = ready.filter((p) => p.leader === brokerId)
    const followed = ready.filter((p) => p.leader !== brokerId)
    const followsLeo = (p: PartitionLeaderAndIsr): boolean => p.isr.length === 1 && p.isr[0] === brokerId && Math.min(minIsr.get(p.topic)!, p.replicas.length) <= 1
    // In chunks of ~SLICE_MS: the roles of a new topic's many partitions must not hold the shards (the main
    // thread with io.threads=0) away from other requests until all are taken.
    const [ledStates, followedStates] = await Promise.all([
      inTimedChunks(ledItems.map((p) => ({ topic: p.topic, partition: p.partition, leaderEpoch: p.leaderEpoch, highWatermarkFollowsLeo: followsLeo(p) })), (chunk) => this.router.call('becomeLeader', chunk), undefined, 'wall'),
      inTimedChunks(followed.map((p) => ({ topic: p.topic, partition: p.partition })), (chunk) => this.router.call('becomeFollower', chunk), undefined, 'wall'),
    ])
    const now = Date.now()
    const fetches = new Map<number, { leader: LiveLeader; partitions: FetcherPartition[] }>()
    const install = (p: PartitionLeaderAndIsr, state: Outcome<FollowerLogState>): void => {
      const key = partitionKey(p.topic, p.partition)
      if (!state.ok) {
        this.log.error({ topic: p.topic, partition: p.partition, error: state.message }, 'cannot take the partition\'s new role')
        answers.push({ topic: p.topic, partition: p.partition, errorCode: ErrorCode.KAFKA_STORAGE_ERROR })
        return
      }
      const isLeader = p.leader === brokerId
      let list = this.#hosted.get(p.topic)
      if (list === undefined) this.#hosted.set(p.topic, (list = []))
      const hosted: HostedPartition = {
        topic: p.topic,
        partition: p.partition,
        topicId: p.topicId,
        isLeader,
        leaderId: p.leader,
        leaderEpoch: p.leaderEpoch,
        partitionEpoch: p.partitionEpoch,
        controllerEpoch: p.controllerEpoch,
        replicas: [...p.replicas],
        isr: [...p.isr],
        leaderRecoveryState: p.leaderRecoveryState,
        leaderEndpoint: isLeader ? undefined : leaders.get(p.leader),
        leaderState: undefined,
        hwFollowsLeo: isLeader && followsLeo(p),
        followerLog: isLeader ? undefined : state.value,
      }
      if (isLeader) {
        hosted.leaderState = new PartitionLeaderState({
          topic: p.topic,
          partition: p.partition,
          brokerId,
          leaderEpoch: p.leaderEpoch,
          partitionEpoch: p.partitionEpoch,
          replicas: p.replicas,
          isr: p.isr,
          minInsyncReplicas: minIsr.get(p.topic)!,
          logEndOffset: state.value.logEndOffset,
          highWatermark: state.value.highWatermark,
          now,
        })
      } else {
        // Appends waiting for acks=all here will not be acknowledged by this broker.
        this.#delayedProduce.failAll(key, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if (hosted.leaderEndpoint !== undefined) {
          let group = fetches.get(p.leader)
          if (group === undefined) fetches.set(p.leader, (group = { leader: hosted.leaderEndpoint, partitions: [] }))
          group.partitions.push({
            topic: p.topic,
            partition: p.partition,
            leaderEpoch: p.leaderEpoch,
            fetchOffset: state.value.logEndOffset,
            lastFetchedEpoch: state.value.latestEpoch,
            highWatermark: state.value.highWatermark,
          })
        }
      }
      const wasLeader = this.#hosted.get(p.topic)?.[p.partition]?.leaderState !== undefined
      list[p.partition] = hosted
      if (isLeader || wasLeader) this.#leadershipChanged(p.topic, p.partition, isLeader)
      answers.push({ topic: p.topic, partition: p.partition, errorCode: ErrorCode.NONE })
      // A fetch parked on a partition that changed hands answers now (with the new error).
      this.#wakeFetches(key)
    }
    // A slice of main-thread time at a time: a new controller's LeaderAndIsr at 100,000 partitions gives
    // this broker 33,000 new leaderships and follower fetch states, which held the thread 0.7 s in one piece.
    // Control requests stay in order (the control plane runs one at a time); a produce or fetch for a
    // partition not yet installed meanwhile is answered as by the old entry, whose appends are stopped above.
    const slices = new MainThreadSlices()
    await slices.map(ledItems, (p, i) => install(p, ledStates[i]!))
    await slices.map(followed, (p, i) => install(p, followedStates[i]!))
    for (const { leader, partitions } of fetches.values()) {
      for (let i = 0; i < partitions.length; i += FETCHER_ADD_CHUNK) {
        if (this.#closed) return answers
        const chunk = partitions.slice(i, i + FETCHER_ADD_CHUNK)
        this.#fetcherManager.addPartitions([{ leader, partitions: chunk }])
        const turn = slices.turn(chunk.length)
        if (turn !== undefined) await turn
      }
    }
    return answers
  }

  /**
   * Whether a LeaderAndIsr only changes the ISR of a partition whose leader and epoch stay (KRaft's
   * partition-epoch change, which the controller sends when a broker leaves an ISR under the same leader):
   * the same leader, leader epoch and replicas, at a newer partition epoch.
   */
  #isIsrUpdate(current: HostedPartition, p: PartitionLeaderAndIsr): boolean {
    return (
      p.leaderEpoch === current.leaderEpoch &&
      p.leader === current.leaderId &&
      p.partitionEpoch > current.partitionEpoch &&
      p.replicas.length === current.replicas.length &&
      p.replicas.every((r, i) => r === current.replicas[i])
    )
  }

  /**
   * Applies an ISR-only change where it stands: no role change, so appends go on, followers keep their
   * fetch sessions and the leader its followers' progress (Kafka's makeLeader without a new epoch); the
   * leader's acks=all waits see the smaller ISR at once.
   */
  #updateIsrInPlace(current: HostedPartition, p: PartitionLeaderAndIsr): void {
    current.isr = [...p.isr]
    current.partitionEpoch = p.partitionEpoch
    current.controllerEpoch = p.controllerEpoch
    current.leaderRecoveryState = p.leaderRecoveryState
    const ls = current.leaderState
    if (ls === undefined) return
    ls.applyControllerIsr(p.isr, p.partitionEpoch)
    // A follower the controller took out must fetch its way back in: its session reads the partition again.
    this.#followerFetches.mark(partitionKey(p.topic, p.partition))
    if (ls.isr.length < ls.effectiveMinIsr) this.#delayedProduce.failAll(partitionKey(p.topic, p.partition), ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    void this.#applyHighWatermarkMode(current)
    this.#maybeAdvanceHighWatermark(current)
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
        this.#wakeFetches(key)
        this.#delayedProduce.failAll(key, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if (current.leaderState !== undefined) this.#leadershipChanged(p.topic, p.partition, false)
      }
      // A log no longer hosted is deleted too (a topic deleted while this broker was down).
      if (p.deletePartition) {
        toDelete.push({ topic: p.topic, partition: p.partition })
        this.#offline.delete(key)
      }
      answers.set(key, { topic: p.topic, partition: p.partition, errorCode: ErrorCode.NONE })
    }
    // No fetcher appends to a stopped replica (nor to a log about to be deleted).
    await this.#stopFetching(partitions.filter((p) => answers.get(partitionKey(p.topic, p.partition))?.errorCode === ErrorCode.NONE))
    if (toDelete.length > 0) {
      // Renamed `-delete` and the data directory fsynced before this answers: the deletion is durable.
      const results = await this.router.deletePartitions(toDelete)
      const failedByTopic = new Map<string, { partitions: number[]; error: string }>()
      results.forEach((r, i) => {
        if (!r.ok && r.errorCode !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
          const p = toDelete[i]!
          answers.set(partitionKey(p.topic, p.partition), { topic: p.topic, partition: p.partition, errorCode: ErrorCode.KAFKA_STORAGE_ERROR })
          let f = failedByTopic.get(p.topic)
          if (f === undefined) failedByTopic.set(p.topic, (f = { partitions: [], error: r.message }))
          f.partitions.push(p.partition)
        }
      })
      for (const [topic, f] of failedByTopic) {
        this.log.error({ topic, failed: f.partitions.length, partitions: f.partitions.slice(0, 10), error: f.error }, 'cannot delete partitions')
      }
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
      const minIsr = await this.deps.minInsyncReplicas(t).catch(() => undefined)
      if (minIsr === undefined) continue
      for (const p of list) {
        if (p.leaderState === undefined || p.leaderState.minInsyncReplicas === minIsr) continue
        p.leaderState.minInsyncReplicas = minIsr
        void this.#applyHighWatermarkMode(p)
        this.#maybeAdvanceHighWatermark(p)
      }
    }
  }

  /** States of the given partitions (unknown ones left out), or of every partition. */
  states(partitions?: readonly TopicPartitionRef[]): Promise<PartitionState[]> {
    return this.router.states(partitions)
  }

  /**
   * Every data directory (log.dirs): KAFKA_STORAGE_ERROR and nothing else for an offline one; the
   * partitions in each online one, and the future copies being moved into it (AlterReplicaLogDirs).
   */
  async logDirs(partitions: readonly TopicPartitionRef[] | null): Promise<LogDirDescription[]> {
    const states = partitions === null ? await this.router.states() : partitions.length === 0 ? [] : await this.router.states(partitions)
    const wanted = partitions === null ? null : new Set(partitions.map((p) => partitionKey(p.topic, p.partition)))
    const futures = (await this.router.futureStates()).filter((f) => wanted === null || wanted.has(partitionKey(f.topic, f.partition)))
    return this.router.dataDirs.map((dir): LogDirDescription => {
      if (this.router.offlineDirs.has(dir)) return { path: dir, errorCode: ErrorCode.KAFKA_STORAGE_ERROR, totalBytes: -1n, usableBytes: -1n, partitions: [], futures: [] }
      const { totalBytes, usableBytes } = volumeBytes(dir, this.log)
      return {
        path: dir,
        errorCode: ErrorCode.NONE,
        totalBytes,
        usableBytes,
        partitions: states.filter((s) => (s.logDir ?? this.router.dataDir) === dir),
        futures: futures.filter((s) => s.logDir === dir),
      }
    })
  }

  /**
   * AlterReplicaLogDirs: moves each partition into the given data directory of this broker (a copy
   * swapped in when caught up, see ShardRouter.alterLogDir). Errors: LOG_DIR_NOT_FOUND for a path not in
   * log.dirs, KAFKA_STORAGE_ERROR for an offline one, REPLICA_NOT_AVAILABLE for a partition not hosted here.
   */
  async alterReplicaLogDirs(items: readonly (TopicPartitionRef & { logDir: string })[]): Promise<ErrorCode[]> {
    return Promise.all(items.map(async (item) => {
      const dir = resolve(item.logDir)
      if (!this.router.dataDirs.includes(dir)) return ErrorCode.LOG_DIR_NOT_FOUND
      if (this.router.offlineDirs.has(dir)) return ErrorCode.KAFKA_STORAGE_ERROR
      if (this.#offline.has(partitionKey(item.topic, item.partition))) return ErrorCode.KAFKA_STORAGE_ERROR
      const r = await this.router.alterLogDir(item, dir)
      if (r.ok) return ErrorCode.NONE
      return r.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION ? ErrorCode.REPLICA_NOT_AVAILABLE : (r.errorCode as ErrorCode)
    }))
  }

  /**
   * A data directory failed (the router took it offline on every shard): its replicas go offline here
   * (Kafka's handleLogDirFailure): fetchers stop for them, their leaderships end, waiting appends and
   * fetches answer KAFKA_STORAGE_ERROR, and later requests too. Answers how many replicas went offline.
   */
  async onLogDirFailure(dir: string): Promise<number> {
    const present = new Set((await this.router.states()).map((s) => partitionKey(s.topic, s.partition)))
    const gone: HostedPartition[] = []
    for (const p of this.hostedPartitions()) if (!present.has(partitionKey(p.topic, p.partition))) gone.push(p)
    for (const p of gone) {
      const key = partitionKey(p.topic, p.partition)
      const list = this.#hosted.get(p.topic)!
      list[p.partition] = undefined
      if (list.every((x) => x === undefined)) this.#hosted.delete(p.topic)
      this.#offline.set(key, `log directory ${dir} is offline`)
      this.#delayedProduce.failAll(key, ErrorCode.KAFKA_STORAGE_ERROR)
      this.#wakeFetches(key)
      if (p.leaderState !== undefined) this.#leadershipChanged(p.topic, p.partition, false)
    }
    await this.#stopFetching(gone)
    const fields = { dir, replicas: gone.length, partitions: gone.slice(0, 10).map((p) => `${p.topic}-${p.partition}`) }
    // A full dir that comes back by itself (log.dir.failure.retry.interval.ms) is a warning; a failed one an error.
    if (this.router.offlineForSpace.has(dir)) this.log.warn(fields, `log directory ${dir} is full: ${gone.length} replicas offline on this broker until it has room again`)
    else this.log.error(fields, `log directory ${dir} failed: ${gone.length} replicas offline on this broker`)
    return gone.length
  }

  /**
   * A directory that a full disk took offline is back (its logs reopened): its partitions answer
   * NOT_LEADER_OR_FOLLOWER instead of KAFKA_STORAGE_ERROR until the controller's LeaderAndIsr makes them
   * replicas again. Answers how many partitions it concerned.
   */
  async onLogDirRecovered(dir: string): Promise<number> {
    const reopened = (await this.router.states()).filter((s) => (s.logDir ?? this.router.dataDir) === dir && this.#offline.has(partitionKey(s.topic, s.partition)))
    for (const s of reopened) this.#offline.delete(partitionKey(s.topic, s.partition))
    this.log.info({ dir, partitions: reopened.length }, `log directory ${dir} is back: ${reopened.length} replicas wait for the controller's LeaderAndIsr`)
    return reopened.length
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
