// Replication throttling (Kafka's ReplicationQuotaManager, KIP-73): a byte rate for the replication traffic
// of the replicas a topic lists in leader.replication.throttled.replicas (the leader's side: what it sends
// to followers) or follower.replication.throttled.replicas (the follower's side: what it fetches). Entries
// are `partition:broker` (this broker's id marks its replicas) or `*` (every replica).
// As in Kafka, the bytes of every listed replica count, in sync or not (so that all replication of the
// listed replicas stays under the rate), but only replicas that are not in sync are held back (so an
// in-sync follower never drops out of the ISR because of a throttle): on the leader a follower outside
// the partition's ISR (ReplicaManager.shouldLeaderThrottle), on the follower a partition whose last
// fetch did not reach the leader's high watermark (RemoteLeaderEndPoint.shouldFollowerThrottle, the
// fetch state's lag). While the rate is above the bound those get no data (the leader answers them
// empty; the follower leaves them out of its fetches) until it falls back.
// The rate is measured over replication.quota.window.num samples of replication.quota.window.size.seconds
// by Kafka's SimpleRate (as ReplicationQuotaManager does: over the time since the oldest sample began,
// at least one window); it is the byte-rate of kafka.server:type=LeaderReplication|FollowerReplication.
import { SimpleRate } from '../quota/sampled-stats.js'

/**
 * The leader side (leader.replication.throttled.rate): the replica manager asks it for each follower fetch
 * and leaves out the records of listed partitions whose fetching follower is out of the ISR while the
 * rate is over the bound (Kafka's ReplicaManager.shouldLeaderThrottle); the bytes of listed partitions a
 * follower fetch's answer carries are recorded once the answer is built (Kafka's KafkaApis).
 */
export interface LeaderThrottle {
  /** This broker's replica (the leader's) is listed in the topic's leader.replication.throttled.replicas. */
  isThrottled(topic: string, partition: number): boolean
  isQuotaExceeded(): boolean
  /** Bytes sent to followers for listed partitions, in sync or not (Kafka counts both). */
  record(bytes: number): void
}

export interface ReplicationQuotaOptions {
  brokerId: number
  /** The bound now (bytes/s; Long.MAX_VALUE or more: unthrottled). */
  bound(): number
  /** The topic config listing the throttled replicas of this side, as stored ('' when unset). */
  throttledReplicas(topic: string): string
  samples: number
  sampleMs: number
}

export class ReplicationQuota {
  /**
   * Made at the first record or quota check, as Kafka's sensor and its first sample are: windows started
   * when the broker did would stretch the time a first burst is measured over, and let it pass unheld.
   */
  #rate: SimpleRate | undefined

  constructor(private readonly options: ReplicationQuotaOptions) {}

  #sensor(now: number): SimpleRate {
    return (this.#rate ??= new SimpleRate(this.options.samples, this.options.sampleMs, now))
  }

  /**
   * Each topic's list as parsed, with the stored text it came from: parsed again only when that changes
   * (a config change), not per fetch. `all`: '*'; otherwise the partitions listed for this broker.
   */
  readonly #parsed = new Map<string, { stored: string; all: boolean; partitions: ReadonlySet<number> }>()

  /** Whether the topic's list is set at all (a cheap test before isThrottled, per topic rather than per partition). */
  listsReplicas(topic: string): boolean {
    return this.options.throttledReplicas(topic).length > 0
  }

  /** Whether this broker's replica of topic-partition is listed as throttled. */
  isThrottled(topic: string, partition: number): boolean {
    const stored = this.options.throttledReplicas(topic)
    // Asked per partition of every replica fetch: an unset list costs one lookup.
    if (stored.length === 0) {
      if (this.#parsed.size > 0) this.#parsed.delete(topic)
      return false
    }
    let parsed = this.#parsed.get(topic)
    if (parsed === undefined || parsed.stored !== stored) {
      const list = stored.trim()
      const partitions = new Set<number>()
      const suffix = `:${this.options.brokerId}`
      for (const e of list.split(',')) {
        const entry = e.trim()
        if (entry.endsWith(suffix)) {
          const p = entry.slice(0, -suffix.length)
          if (/^(0|[1-9]\d*)$/.test(p)) partitions.add(Number(p))
        }
      }
      this.#parsed.set(topic, (parsed = { stored, all: list === '*', partitions }))
    }
    return parsed.all || parsed.partitions.has(partition)
  }

  /** A bound is set (unset: nobody is held back; listed bytes still count, as Kafka's sensor records them). */
  hasBound(): boolean {
    const bound = this.options.bound()
    return Number.isFinite(bound) && bound < Number.MAX_SAFE_INTEGER
  }

  /** Asked only for a listed replica that is not in sync (Kafka's shouldLeaderThrottle / shouldFollowerThrottle). */
  isQuotaExceeded(now = Date.now()): boolean {
    const rate = this.#sensor(now)
    return this.hasBound() && rate.measure(now) > this.options.bound()
  }

  record(bytes: number, now = Date.now()): void {
    if (bytes > 0) this.#sensor(now).record(bytes, now)
  }

  /** The measured rate (bytes/s); 0 before anything was recorded or checked. */
  rate(now = Date.now()): number {
    return this.#rate?.measure(now) ?? 0
  }
}
