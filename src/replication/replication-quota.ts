// Replication throttling (Kafka's ReplicationQuotaManager, KIP-73): a byte rate for the replication traffic
// of the replicas a topic lists in leader.replication.throttled.replicas (the leader's side: what it sends
// to followers) or follower.replication.throttled.replicas (the follower's side: what it fetches). Entries
// are `partition:broker` (this broker's id marks its replicas) or `*` (every replica). Only replicas out of
// the ISR are throttled (a reassignment's new replicas catching up), as Kafka: in-sync followers are never
// held back. The rate is measured over replication.quota.window.num samples of
// replication.quota.window.size.seconds; while it is above the bound, throttled partitions get no data
// (the leader answers them empty; the follower leaves them out of its fetches) until it falls back.

/** A rate over a sliding window of fixed samples (bytes per second). */
export class RateMeter {
  readonly #samples: { start: number; bytes: number }[] = []

  constructor(
    private readonly samples: number,
    private readonly sampleMs: number,
  ) {}

  record(bytes: number, now = Date.now()): void {
    const last = this.#samples.at(-1)
    if (last !== undefined && now - last.start < this.sampleMs) last.bytes += bytes
    else this.#samples.push({ start: now, bytes })
    this.#expire(now)
  }

  /** Bytes per second over the window (the elapsed part of it while it is younger than one window). */
  rate(now = Date.now()): number {
    this.#expire(now)
    if (this.#samples.length === 0) return 0
    const total = this.#samples.reduce((n, s) => n + s.bytes, 0)
    // Kafka's Rate: over the window's elapsed time, at least (samples - 1) whole samples.
    const elapsed = Math.max(now - this.#samples[0]!.start, (this.samples - 1) * this.sampleMs, 1)
    return (total * 1000) / elapsed
  }

  #expire(now: number): void {
    const windowMs = this.samples * this.sampleMs
    while (this.#samples.length > 0 && now - this.#samples[0]!.start >= windowMs) this.#samples.shift()
  }
}

/**
 * The leader side (leader.replication.throttled.rate): the replica manager asks it for each follower fetch
 * and leaves out the records of listed partitions whose fetching follower is out of the ISR while the
 * rate is over the bound (Kafka's ReplicaManager.shouldLeaderThrottle).
 */
export interface LeaderThrottle {
  /** A bound is set (unset: nothing is looked up or measured). */
  hasBound(): boolean
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
  readonly #meter: RateMeter

  constructor(private readonly options: ReplicationQuotaOptions) {
    this.#meter = new RateMeter(options.samples, options.sampleMs)
  }

  /** Whether this broker's replica of topic-partition is listed as throttled. */
  isThrottled(topic: string, partition: number): boolean {
    const list = this.options.throttledReplicas(topic).trim()
    if (list === '') return false
    if (list === '*') return true
    const mine = `${partition}:${this.options.brokerId}`
    return list.split(',').some((e) => e.trim() === mine)
  }

  hasBound(): boolean {
    const bound = this.options.bound()
    return Number.isFinite(bound) && bound < Number.MAX_SAFE_INTEGER
  }

  isQuotaExceeded(now = Date.now()): boolean {
    return this.hasBound() && this.#meter.rate(now) > this.options.bound()
  }

  record(bytes: number, now = Date.now()): void {
    if (bytes > 0) this.#meter.record(bytes, now)
  }

  /** The measured rate (bytes/s). */
  rate(now = Date.now()): number {
    return this.#meter.rate(now)
  }
}
