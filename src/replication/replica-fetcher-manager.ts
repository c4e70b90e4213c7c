// The follower side of the replica manager (Kafka's ReplicaFetcherManager): num.replica.fetchers
// ReplicaFetchers per leader broker this broker follows partitions of, a partition going to the one
// Kafka's hash picks (fetcherIdFor). The fetchers write the follower's log through the shards (appends
// at the leader's offsets, truncation by leader epoch); their connections to the leaders come from the
// broker's composition (connectLeader), so this file opens no socket.
import { errorName } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import type { Counter } from '../observability/metrics.js'
import type { ShardRouter } from '../shard/router.js'
import type { FollowerLog, FollowerLogState, LeaderEndpoint } from './leader-endpoint.js'
import type { LiveLeader, TopicPartitionRef } from './partition-requests.js'
import { fetcherIdFor, fetchKey, ReplicaFetcher, type FetcherPartition, type FollowerThrottle, type ReplicaFetcherSettings } from './replica-fetcher.js'

export interface ReplicaFetcherManagerDeps {
  /** A connection to a leader for a fetcher (its fetcher id among num.replica.fetchers). */
  connectLeader(leader: LiveLeader, fetcherId: number): Promise<LeaderEndpoint>
  /** num.replica.fetchers now: fetchers (connections) per leader broker; default 1. */
  numReplicaFetchers?: () => number
  /** replica.fetch.* settings of the fetchers. */
  fetcher: ReplicaFetcherSettings
  /** follower.replication.throttled.rate over follower.replication.throttled.replicas (none: unthrottled). */
  followerThrottle?: FollowerThrottle
  /** ReplicationBytesInPerSec, when the broker keeps metrics. */
  replicationBytesIn?: Counter
  /** A followed partition's log moved (an append or a truncation): its new start, end and high watermark. */
  followerLogChanged?: (topic: string, partition: number, state: FollowerLogState) => void
}

export class ReplicaFetcherManager {
  /** By `leader:fetcherId`. */
  readonly #fetchers = new Map<string, ReplicaFetcher>()
  #closed = false

  constructor(
    private readonly router: ShardRouter,
    private readonly log: Logger,
    private readonly deps: ReplicaFetcherManagerDeps,
  ) {}

  /** The follower's log, as the fetchers write it (shard operations). */
  readonly #followerLog: FollowerLog = {
    append: async (topic, partition, records, highWatermark, logStartOffset) => {
      const [r] = await this.router.call('appendAsFollower', [{ topic, partition, records, highWatermark, logStartOffset }])
      if (!r!.ok) throw new Error(`${errorName(r!.errorCode)}: ${r!.message}`)
      this.deps.followerLogChanged?.(topic, partition, r!.value)
      return r!.value
    },
    truncate: async (topic, partition, offset) => this.#replicaOp('truncate', { topic, partition, offset }),
    truncateFullyAndStartAt: async (topic, partition, offset) => this.#replicaOp('truncateFullyAndStartAt', { topic, partition, offset }),
    endOffsetForEpoch: async (topic, partition, epoch) => {
      const [r] = await this.router.call('endOffsetForEpoch', [{ topic, partition, leaderEpoch: epoch }])
      if (!r!.ok) throw new Error(`${errorName(r!.errorCode)}: ${r!.message}`)
      return r!.value
    },
  }

  async #replicaOp(op: 'truncate' | 'truncateFullyAndStartAt', item: { topic: string; partition: number; offset: number }): Promise<FollowerLogState> {
    const [r] = await this.router.call(op, [item])
    if (!r!.ok) throw new Error(`${errorName(r!.errorCode)}: ${r!.message}`)
    this.deps.followerLogChanged?.(item.topic, item.partition, r!.value)
    return r!.value
  }

  /**
   * Starts fetching partitions from their leaders (Kafka's addFetcherForPartitions), each leader's spread
   * over its fetchers by hash. Nothing starts once closed.
   */
  addPartitions(byLeader: Iterable<{ leader: LiveLeader; partitions: FetcherPartition[] }>): void {
    if (this.#closed) return
    const n = this.deps.numReplicaFetchers?.() ?? 1
    for (const { leader, partitions: ps } of byLeader) {
      const byFetcher = new Map<number, FetcherPartition[]>()
      for (const p of ps) {
        const id = fetcherIdFor(p.topic, p.partition, n)
        let list = byFetcher.get(id)
        if (list === undefined) byFetcher.set(id, (list = []))
        list.push(p)
      }
      for (const [id, list] of byFetcher) this.#fetcherFor(leader, id).add(list)
    }
  }

  #fetcherFor(leader: LiveLeader, fetcherId: number): ReplicaFetcher {
    const key = `${leader.brokerId}:${fetcherId}`
    let f = this.#fetchers.get(key)
    if (f === undefined) {
      f = new ReplicaFetcher(leader.brokerId, () => this.deps.connectLeader(leader, fetcherId), this.#followerLog, this.deps.fetcher, this.log, this.deps.followerThrottle, this.deps.replicationBytesIn)
      this.#fetchers.set(key, f)
      this.log.info({ leader: leader.brokerId, fetcherId }, `started ReplicaFetcherThread-${fetcherId}-${leader.brokerId}`)
    }
    return f
  }

  /** The fetchers running, by leader broker: how many partitions each replicates (diagnostics, tests). */
  fetcherPartitions(): Map<number, number[]> {
    const out = new Map<number, number[]>()
    for (const f of this.#fetchers.values()) {
      let list = out.get(f.sourceBrokerId)
      if (list === undefined) out.set(f.sourceBrokerId, (list = []))
      list.push(f.partitionCount)
    }
    return out
  }

  /** Stops fetching these partitions (from whichever leader), once no answer for them is being applied. */
  async removePartitions(partitions: readonly TopicPartitionRef[]): Promise<void> {
    if (partitions.length === 0 || this.#fetchers.size === 0) return
    const keys = partitions.map((p) => fetchKey(p.topic, p.partition))
    await Promise.all([...this.#fetchers.values()].map((f) => f.remove(keys)))
  }

  /** Stops every fetcher; none starts after this. */
  async close(): Promise<void> {
    this.#closed = true
    await Promise.all([...this.#fetchers.values()].map((f) => f.stop()))
    this.#fetchers.clear()
  }
}
