// Kafka's windowed measurements for client quotas (org.apache.kafka.common.metrics.stats): a rate over
// `samples` windows of `windowMs` (quota.window.num x quota.window.size.seconds), an average over the
// same windows (the throttle-time metrics), and the token bucket of controller mutations (KIP-599).
//
// SampledRate keeps Kafka's rules, so a quota throttles exactly as much as Kafka's would:
// - a value goes into the current window; a window older than windowMs is closed and the next one
//   (the oldest) is reset and reused;
// - windows older than samples x windowMs count for nothing (they are reset when measured);
// - the rate is the sum of the windows over the time since the oldest window began, and that time is
//   never taken shorter than samples - 1 full windows (so a new client's first bytes are not a burst
//   measured over a few milliseconds).
// SimpleRate is Kafka's SimpleRate, which the replication quotas use (ReplicationQuotaManager): the
// same windows, measured over the time since the oldest began, but never less than one window.

/** A sum over sampled windows; the base of the rate and the average. */
class SampledWindows {
  protected readonly values: Float64Array
  protected readonly counts: Float64Array
  protected readonly starts: Float64Array
  protected current = 0

  constructor(
    readonly samples: number,
    readonly windowMs: number,
    now: number,
  ) {
    this.values = new Float64Array(samples)
    this.counts = new Float64Array(samples)
    this.starts = new Float64Array(samples).fill(now)
  }

  record(value: number, now: number): void {
    if (now - this.starts[this.current]! >= this.windowMs) {
      this.current = (this.current + 1) % this.samples
      this.starts[this.current] = now
      this.values[this.current] = 0
      this.counts[this.current] = 0
    }
    this.values[this.current]! += value
    this.counts[this.current]! += 1
  }

  /** Resets windows that have aged out; returns the start of the oldest remaining one. */
  protected purge(now: number): number {
    const expireAge = this.samples * this.windowMs
    let oldest = now
    for (let i = 0; i < this.samples; i++) {
      if (now - this.starts[i]! >= expireAge) {
        this.starts[i] = now
        this.values[i] = 0
        this.counts[i] = 0
      }
      if (this.starts[i]! < oldest) oldest = this.starts[i]!
    }
    return oldest
  }

  protected sum(arr: Float64Array): number {
    let total = 0
    for (let i = 0; i < this.samples; i++) total += arr[i]!
    return total
  }
}

/** Kafka's Rate: per second over the sampled windows. */
export class SampledRate extends SampledWindows {
  /** The time the rate is measured over now (ms), as Kafka's Rate.windowSize. */
  windowSize(now: number): number {
    let elapsed = now - this.purge(now)
    const fullWindows = Math.floor(elapsed / this.windowMs)
    const minFullWindows = this.samples - 1
    if (fullWindows < minFullWindows) elapsed += (minFullWindows - fullWindows) * this.windowMs
    return elapsed
  }

  /** Units per second. */
  measure(now: number): number {
    const size = this.windowSize(now)
    return size <= 0 ? 0 : this.sum(this.values) / (size / 1000)
  }

  /**
   * How long the client must stay away for the rate to come back to `bound` (Kafka's
   * ClientQuotaManager.throttleTime: (rate - bound) / bound x window size), 0 when within it.
   */
  throttleTimeMs(bound: number, now: number): number {
    const size = this.windowSize(now)
    const rate = size <= 0 ? 0 : this.sum(this.values) / (size / 1000)
    if (rate <= bound) return 0
    return Math.round(((rate - bound) / bound) * size)
  }
}

/** Kafka's SimpleRate: the windows' sum over the time since the oldest began, at least one window. */
export class SimpleRate extends SampledRate {
  override windowSize(now: number): number {
    return Math.max(now - this.purge(now), this.windowMs)
  }
}

/** Kafka's Avg over the sampled windows (NaN-free: 0 when nothing was recorded). */
export class SampledAvg extends SampledWindows {
  measure(now: number): number {
    this.purge(now)
    const count = this.sum(this.counts)
    return count === 0 ? 0 : this.sum(this.values) / count
  }
}

/**
 * Kafka's TokenBucket (KIP-599, controller mutations): `burst` = quota x samples x window seconds
 * tokens, refilled at `quota` per second; a mutation takes its count even past zero, and the quota is
 * exceeded while the bucket is below zero. Starts full.
 */
export class TokenBucket {
  private tokens: number | undefined
  private last: number

  constructor(
    readonly samples: number,
    readonly windowMs: number,
    now: number,
  ) {
    this.last = now
  }

  private refill(quota: number, now: number): number {
    const burst = quota * this.samples * (this.windowMs / 1000)
    const elapsed = Math.max(0, now - this.last) / 1000
    this.last = now
    this.tokens = Math.min(burst, (this.tokens ?? burst) + quota * elapsed)
    return this.tokens
  }

  record(value: number, quota: number, now: number): void {
    this.tokens = this.refill(quota, now) - value
  }

  /** Tokens left (negative: in debt). */
  measure(quota: number, now: number): number {
    return this.refill(quota, now)
  }

  /** The time until the bucket is back at zero (0 when not below it). */
  throttleTimeMs(quota: number, now: number): number {
    const tokens = this.refill(quota, now)
    return tokens >= 0 ? 0 : Math.round((-tokens / quota) * 1000)
  }
}
