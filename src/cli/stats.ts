// Latency and throughput bookkeeping for the perf tools: a sampled latency recorder (Kafka's perf test
// keeps at most ~500k samples), percentiles, and the text of a report line.

export class LatencyRecorder {
  private samples: Float64Array
  private n = 0
  private seen = 0
  count = 0
  sum = 0
  max = 0

  /** Keeps every `every`-th latency for percentiles (all of them for count and average). */
  constructor(
    expected: number,
    private readonly every = Math.max(1, Math.floor(expected / 500_000)),
  ) {
    this.samples = new Float64Array(Math.min(Math.max(16, Math.ceil(expected / this.every) + 1), 1_000_000))
  }

  record(ms: number): void {
    this.count++
    this.sum += ms
    if (ms > this.max) this.max = ms
    if (this.seen++ % this.every !== 0) return
    if (this.n === this.samples.length) {
      const bigger = new Float64Array(Math.min(this.samples.length * 2, 4_000_000))
      if (bigger.length === this.samples.length) return
      bigger.set(this.samples)
      this.samples = bigger
    }
    this.samples[this.n++] = ms
  }

  get avg(): number {
    return this.count === 0 ? 0 : this.sum / this.count
  }

  /** Percentiles (0..1) of the sampled latencies. */
  percentiles(ps: readonly number[]): number[] {
    if (this.n === 0) return ps.map(() => 0)
    const sorted = this.samples.slice(0, this.n).sort()
    return ps.map((p) => sorted[Math.min(this.n - 1, Math.max(0, Math.ceil(p * this.n) - 1))]!)
  }

  reset(): void {
    this.n = 0
    this.seen = 0
    this.count = 0
    this.sum = 0
    this.max = 0
  }
}

export const MB = 1024 * 1024
export const PERCENTILES = [0.5, 0.95, 0.99, 0.999] as const

export interface PerfSummary {
  records: number
  bytes: number
  elapsedMs: number
  recordsPerSec: number
  mbPerSec: number
  latencyMs: { avg: number; max: number; p50: number; p95: number; p99: number; p999: number }
}

export function summarize(records: number, bytes: number, elapsedMs: number, lat: LatencyRecorder): PerfSummary {
  const [p50, p95, p99, p999] = lat.percentiles(PERCENTILES)
  const secs = Math.max(elapsedMs, 1) / 1000
  return {
    records,
    bytes,
    elapsedMs: round(elapsedMs),
    recordsPerSec: round(records / secs),
    mbPerSec: round(bytes / MB / secs),
    latencyMs: { avg: round(lat.avg), max: round(lat.max), p50: round(p50!), p95: round(p95!), p99: round(p99!), p999: round(p999!) },
  }
}

export function round(n: number): number {
  return Math.round(n * 100) / 100
}

/** A progress bar line (terminal output). */
export function progressBar(done: number, total: number, tail: string, width = 30): string {
  const frac = total > 0 ? Math.min(1, done / total) : 0
  const full = Math.round(frac * width)
  return `\r[${'#'.repeat(full)}${'-'.repeat(width - full)}] ${(frac * 100).toFixed(0).padStart(3)}% ${done}/${total} ${tail}\u001b[K`
}
