// The one metrics registry of a Skein process: counters, gauges and latency summaries with percentiles,
// which every layer writes to and GET /metrics reads (prometheus.ts renders it in Prometheus' text
// format). A broker has its own registry (Broker.metrics), so that two brokers in one test process do
// not mix their numbers.
//
// Hot paths pay no lookup: a family's labelled child is resolved once (`family.labels('my-topic')`) and
// the caller keeps the handle, whose inc()/set()/record() touch a number or a typed array and allocate
// nothing. Values computed from state that lives elsewhere (log sizes, consumer lag, connection counts)
// are collected at scrape time instead of being tracked on every change.
//
// Percentiles: a summary sorts each value into one of 448 log-linear buckets (exact below 16 µs, then
// 16 buckets per power of two: at most 1/16 = 6.25% relative error), in two windows of windowMs that
// take turns; the quantiles are read over both, so they describe the last one to two windows (Kafka's
// Yammer histograms decay over about five minutes; a shorter window follows load changes sooner). The
// count and sum are kept since start, like Yammer's Count.

export type MetricType = 'counter' | 'gauge' | 'summary'

/** One sample of a scrape: the family's label values in its label order, and the value. */
export interface Sample {
  labels: readonly string[]
  value: number
}

/** A summary's sample: quantile values plus count and sum. */
export interface SummarySample {
  labels: readonly string[]
  quantiles: readonly number[]
  count: number
  sum: number
}

export interface FamilySnapshot {
  name: string
  help: string
  type: MetricType
  labelNames: readonly string[]
  /** Counters and gauges. */
  samples: Sample[]
  /** Summaries: the quantiles the values of `summaries` are for, and how they are written ("0.99"). */
  quantiles?: readonly { q: number; label: string }[]
  summaries?: SummarySample[]
}

/** A monotonically increasing count. */
export class Counter {
  value = 0
  inc(n = 1): void {
    this.value += n
  }
}

/** A value that goes up and down. */
export class Gauge {
  value = 0
  set(v: number): void {
    this.value = v
  }
  inc(n = 1): void {
    this.value += n
  }
  dec(n = 1): void {
    this.value -= n
  }
}

const SUB_BUCKET_BITS = 4
const SUB_BUCKETS = 1 << SUB_BUCKET_BITS
/** Values below 16 µs have a bucket each; above, 16 per power of two up to 2^31 µs (about 36 minutes). */
export const HISTOGRAM_BUCKETS = SUB_BUCKETS + (31 - SUB_BUCKET_BITS) * SUB_BUCKETS
const MAX_MICROS = 0x7fffffff

/** The bucket of a value in microseconds (non-negative integer). */
export function bucketOf(micros: number): number {
  if (micros < SUB_BUCKETS) return micros < 0 ? 0 : micros
  if (micros > MAX_MICROS) micros = MAX_MICROS
  const exp = 31 - Math.clz32(micros)
  return SUB_BUCKETS + (exp - SUB_BUCKET_BITS) * SUB_BUCKETS + ((micros >>> (exp - SUB_BUCKET_BITS)) & (SUB_BUCKETS - 1))
}

/** The middle of a bucket, in microseconds. */
export function bucketMidpoint(bucket: number): number {
  if (bucket < SUB_BUCKETS) return bucket
  const i = bucket - SUB_BUCKETS
  const exp = (i >>> SUB_BUCKET_BITS) + SUB_BUCKET_BITS
  const sub = i & (SUB_BUCKETS - 1)
  const width = 2 ** (exp - SUB_BUCKET_BITS)
  return 2 ** exp + sub * width + width / 2
}

/**
 * Latencies (or sizes) and their percentiles. record() takes milliseconds, as Kafka's *TimeMs metrics
 * are in milliseconds, and keeps microsecond resolution.
 */
export class Histogram {
  count = 0
  sum = 0
  private current = new Uint32Array(HISTOGRAM_BUCKETS)
  private previous = new Uint32Array(HISTOGRAM_BUCKETS)
  private windowEnds: number

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.windowEnds = now() + windowMs
  }

  record(ms: number): void {
    if (!(ms >= 0)) ms = 0
    const t = this.now()
    if (t >= this.windowEnds) this.rotate(t)
    this.current[bucketOf(Math.round(ms * 1000))]!++
    this.count++
    this.sum += ms
  }

  private rotate(t: number): void {
    // Two windows or more without a value: both are stale.
    const stale = t >= this.windowEnds + this.windowMs
    const old = this.previous
    this.previous = stale ? old.fill(0) : this.current
    this.current = stale ? this.current.fill(0) : old.fill(0)
    this.windowEnds = t + this.windowMs
  }

  /** The values at quantiles qs (ascending, 0..1), in milliseconds; 0 when the windows are empty. */
  quantiles(qs: readonly number[]): number[] {
    const t = this.now()
    if (t >= this.windowEnds) this.rotate(t)
    const a = this.current
    const b = this.previous
    let total = 0
    for (let i = 0; i < HISTOGRAM_BUCKETS; i++) total += a[i]! + b[i]!
    const out = new Array<number>(qs.length).fill(0)
    if (total === 0) return out
    let seen = 0
    let k = 0
    for (let i = 0; i < HISTOGRAM_BUCKETS && k < qs.length; i++) {
      seen += a[i]! + b[i]!
      while (k < qs.length && seen >= Math.max(1, Math.ceil(qs[k]! * total))) {
        out[k] = bucketMidpoint(i) / 1000
        k++
      }
    }
    return out
  }
}

/** Kafka's Yammer percentiles, as the JMX exporter labels them (quantile="0.$N" from NthPercentile). */
export const KAFKA_QUANTILES: readonly { q: number; label: string }[] = [
  { q: 0.5, label: '0.50' },
  { q: 0.75, label: '0.75' },
  { q: 0.95, label: '0.95' },
  { q: 0.98, label: '0.98' },
  { q: 0.99, label: '0.99' },
  { q: 0.999, label: '0.999' },
]

const KEY_SEPARATOR = '\u0000'

abstract class Family<C> {
  protected readonly children = new Map<string, { labels: readonly string[]; child: C }>()

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly string[],
  ) {}

  protected abstract create(): C

  /** The child for these label values (one per label name, in order), created on first use. Keep it. */
  labels(...values: string[]): C {
    if (values.length !== this.labelNames.length) throw new Error(`${this.name} takes ${this.labelNames.length} label values (${this.labelNames.join(', ')}), got ${values.length}`)
    const key = values.join(KEY_SEPARATOR)
    let entry = this.children.get(key)
    if (entry === undefined) {
      entry = { labels: values, child: this.create() }
      this.children.set(key, entry)
    }
    return entry.child
  }

  /** Forgets a child (a deleted topic): it is no longer scraped. A handle kept elsewhere keeps counting unseen. */
  remove(...values: string[]): void {
    this.children.delete(values.join(KEY_SEPARATOR))
  }

  /** Forgets every child whose label values match `match` (undefined matches any value). */
  removeMatching(match: readonly (string | undefined)[]): void {
    for (const [key, { labels }] of this.children) {
      if (match.every((m, i) => m === undefined || m === labels[i])) this.children.delete(key)
    }
  }
}

export class CounterFamily extends Family<Counter> {
  protected create(): Counter {
    return new Counter()
  }
  snapshot(): FamilySnapshot {
    const samples: Sample[] = []
    for (const { labels, child } of this.children.values()) samples.push({ labels, value: child.value })
    return { name: this.name, help: this.help, type: 'counter', labelNames: this.labelNames, samples }
  }
}

export class GaugeFamily extends Family<Gauge> {
  protected create(): Gauge {
    return new Gauge()
  }
  snapshot(): FamilySnapshot {
    const samples: Sample[] = []
    for (const { labels, child } of this.children.values()) samples.push({ labels, value: child.value })
    return { name: this.name, help: this.help, type: 'gauge', labelNames: this.labelNames, samples }
  }
}

export class SummaryFamily extends Family<Histogram> {
  constructor(
    name: string,
    help: string,
    labelNames: readonly string[],
    readonly quantiles: readonly { q: number; label: string }[],
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {
    super(name, help, labelNames)
  }
  protected create(): Histogram {
    return new Histogram(this.windowMs, this.now)
  }
  snapshot(): FamilySnapshot {
    const qs = this.quantiles.map((q) => q.q)
    const summaries: SummarySample[] = []
    for (const { labels, child } of this.children.values()) summaries.push({ labels, quantiles: child.quantiles(qs), count: child.count, sum: child.sum })
    return { name: this.name, help: this.help, type: 'summary', labelNames: this.labelNames, samples: [], quantiles: this.quantiles, summaries }
  }
}

/** Emits one sample of a collected family: label values in the family's label order. */
export type Emit = (labels: readonly string[], value: number) => void

/** A family computed at scrape time from state kept elsewhere. */
class CollectedFamily {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge',
    readonly labelNames: readonly string[],
    private readonly collect: (emit: Emit) => void | Promise<void>,
  ) {}

  async snapshot(): Promise<FamilySnapshot> {
    const samples: Sample[] = []
    await this.collect((labels, value) => {
      samples.push({ labels, value })
    })
    return { name: this.name, help: this.help, type: this.type, labelNames: this.labelNames, samples }
  }
}

type AnyFamily = CounterFamily | GaugeFamily | SummaryFamily | CollectedFamily

const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/
const LABEL_RE = /^[a-zA-Z_][a-zA-Z0-9_]*$/

export interface MetricsRegistryOptions {
  /** Summary window (ms); the quantiles cover the last one to two windows. Default 60 000. */
  summaryWindowMs?: number
  /** The clock of the summaries' windows (tests). */
  now?: () => number
}

export class MetricsRegistry {
  private readonly families = new Map<string, AnyFamily>()
  private readonly scrapeHooks: (() => void)[] = []
  private readonly summaryWindowMs: number
  private readonly now: () => number

  constructor(opts: MetricsRegistryOptions = {}) {
    this.summaryWindowMs = opts.summaryWindowMs ?? 60_000
    this.now = opts.now ?? Date.now
  }

  private add<F extends AnyFamily>(family: F): F {
    if (!NAME_RE.test(family.name)) throw new Error(`invalid metric name '${family.name}'`)
    for (const l of family.labelNames) if (!LABEL_RE.test(l) || l === 'quantile') throw new Error(`invalid label name '${l}' for ${family.name}`)
    const existing = this.families.get(family.name)
    if (existing !== undefined) {
      // The same definition twice (two layers asking for one family) is the same family.
      if (existing.constructor === family.constructor && existing.labelNames.join() === family.labelNames.join()) return existing as F
      throw new Error(`metric ${family.name} is already registered with another type or labels`)
    }
    this.families.set(family.name, family)
    return family
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): CounterFamily {
    return this.add(new CounterFamily(name, help, labelNames))
  }

  gauge(name: string, help: string, labelNames: readonly string[] = []): GaugeFamily {
    return this.add(new GaugeFamily(name, help, labelNames))
  }

  /** A latency summary with Kafka's percentiles (or the given ones). */
  summary(name: string, help: string, labelNames: readonly string[] = [], quantiles = KAFKA_QUANTILES): SummaryFamily {
    return this.add(new SummaryFamily(name, help, labelNames, quantiles, this.summaryWindowMs, this.now))
  }

  /** A family whose samples are computed at scrape time. A failing collect leaves the family out of that scrape. */
  collected(name: string, help: string, type: 'counter' | 'gauge', labelNames: readonly string[], collect: (emit: Emit) => void | Promise<void>): void {
    this.add(new CollectedFamily(name, help, type, labelNames, collect))
  }

  /** Whether a family of this name exists. */
  has(name: string): boolean {
    return this.families.has(name)
  }

  /** Runs before every scrape (e.g. forgetting the children of deleted topics). */
  onScrape(fn: () => void): void {
    this.scrapeHooks.push(fn)
  }

  /** Every family (or only those named), in registration order, with its values now. */
  async scrape(only?: ReadonlySet<string>): Promise<FamilySnapshot[]> {
    for (const fn of this.scrapeHooks) fn()
    const out: FamilySnapshot[] = []
    for (const f of this.families.values()) {
      if (only !== undefined && !only.has(f.name)) continue
      if (f instanceof CollectedFamily) {
        try {
          out.push(await f.snapshot())
        } catch {
          // A collector that cannot answer now (e.g. shards closing) must not fail the whole scrape.
        }
      } else out.push(f.snapshot())
    }
    return out
  }
}
