// MirrorMaker 2's metrics (Kafka's MirrorSourceMetrics and MirrorCheckpointMetrics), in the worker's
// metrics registry (the task context's `metrics`, what Kafka's pluginMetrics() is), under the names the
// JMX exporter gives Kafka's MBeans kafka.connect.mirror:type=MirrorSourceConnector,... and
// type=MirrorCheckpointConnector,...:
//
//   kafka_connect_mirror_mirrorsourceconnector_{record_count, record_rate, record_age_ms{,_min,_max,_avg},
//     byte_count, byte_rate, replication_latency_ms{,_min,_max,_avg}}  {source, target, topic, partition}
//   kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms{,_min,_max,_avg}
//     {source, target, group, topic, partition}
//
// topic is the remote (target) topic. As in Kafka: record age is taken when a record is polled from the
// source (now - its timestamp), replication latency and the record count when the target acknowledged
// it (commitRecord), bytes are the values' sizes, checkpoint latency when a checkpoint record was
// acknowledged. The plain names (record_age_ms) are the last value; _min/_max/_avg and the rates cover
// Kafka's default sample window: two samples of 30 s (NaN when nothing was recorded in them).
import type { Emit, MetricsRegistry } from '../../observability/metrics.js'

const SAMPLE_MS = 30_000

/** Kafka's SampledStat over two 30 s samples: min, max, average and rate of what was recorded. */
export class WindowedStat {
  last = NaN
  private readonly samples = [new Sample(0), new Sample(0)]
  private current = 0

  constructor(private readonly now: () => number = Date.now) {
    const t = now()
    this.samples[0]!.start = t
    this.samples[1]!.start = t - SAMPLE_MS
  }

  /** Records a value at `now` (the caller's clock reading: one per batch on hot paths). */
  record(v: number, now = this.now()): void {
    this.last = v
    const s = this.sample(now)
    s.count++
    s.sum += v
    if (v < s.min) s.min = v
    if (v > s.max) s.max = v
  }

  private sample(t = this.now()): Sample {
    let s = this.samples[this.current]!
    if (t - s.start >= SAMPLE_MS) {
      this.current = 1 - this.current
      s = this.samples[this.current]!
      s.reset(t)
    }
    return s
  }

  /** The samples still inside the window (a sample older than two windows is stale). */
  private live(): Sample[] {
    const t = this.now()
    this.sample()
    return this.samples.filter((s) => t - s.start < 2 * SAMPLE_MS)
  }

  get min(): number {
    const m = Math.min(...this.live().map((s) => s.min))
    return Number.isFinite(m) ? m : NaN
  }

  get max(): number {
    const m = Math.max(...this.live().map((s) => s.max))
    return Number.isFinite(m) ? m : NaN
  }

  get avg(): number {
    let sum = 0
    let count = 0
    for (const s of this.live()) {
      sum += s.sum
      count += s.count
    }
    return count === 0 ? NaN : sum / count
  }

  /** Sum of the values per second over the window (Kafka's Rate: at least one full sample of elapsed time). */
  rateOfSum(): number {
    const live = this.live()
    const oldest = Math.min(...live.map((s) => s.start))
    const elapsed = Math.max(this.now() - oldest, SAMPLE_MS)
    return live.reduce((a, s) => a + s.sum, 0) / (elapsed / 1000)
  }

  /** Records per second over the window. */
  rateOfCount(): number {
    const live = this.live()
    const oldest = Math.min(...live.map((s) => s.start))
    const elapsed = Math.max(this.now() - oldest, SAMPLE_MS)
    return live.reduce((a, s) => a + s.count, 0) / (elapsed / 1000)
  }
}

class Sample {
  count = 0
  sum = 0
  min = Infinity
  max = -Infinity
  constructor(public start: number) {}
  reset(start: number): void {
    this.start = start
    this.count = 0
    this.sum = 0
    this.min = Infinity
    this.max = -Infinity
  }
}

/** One replicated partition's numbers (looked up once per partition, kept by the task). */
export class MirrorPartitionMetrics {
  recordCount = 0
  byteCount = 0
  readonly bytes = new WindowedStat()
  readonly recordAge = new WindowedStat()
  readonly replicationLatency = new WindowedStat()

  constructor(readonly labels: readonly string[]) {}

  /** A record polled from the source: its age and size. */
  polled(timestamp: number, valueBytes: number, now = Date.now()): void {
    this.recordAge.record(now - timestamp, now)
    this.byteCount += valueBytes
    this.bytes.record(valueBytes, now)
  }

  /** A record the target acknowledged. */
  replicated(timestamp: number, now = Date.now()): void {
    this.recordCount++
    // replicationLatency counts one value per record: its rate is the record rate.
    this.replicationLatency.record(now - timestamp, now)
  }
}

const SOURCE_PREFIX = 'kafka_connect_mirror_mirrorsourceconnector_'
const CHECKPOINT_PREFIX = 'kafka_connect_mirror_mirrorcheckpointconnector_'
const SOURCE_LABELS = ['source', 'target', 'topic', 'partition'] as const
const CHECKPOINT_LABELS = ['source', 'target', 'group', 'topic', 'partition'] as const

/** The partitions being measured, per registry (several tasks and flows share one registry). */
const sourcePartitions = new WeakMap<MetricsRegistry, Set<MirrorPartitionMetrics>>()
const checkpointPartitions = new WeakMap<MetricsRegistry, Set<CheckpointPartitionMetrics>>()

function each<T>(set: Set<T>, f: (m: T, emit: Emit) => void): (emit: Emit) => void {
  return (emit) => {
    for (const m of set) f(m, emit)
  }
}

/** Registers the MirrorSourceConnector families on a registry once; the set the task adds its partitions to. */
function sourceSet(registry: MetricsRegistry): Set<MirrorPartitionMetrics> {
  let set = sourcePartitions.get(registry)
  if (set !== undefined) return set
  const s = (set = new Set())
  sourcePartitions.set(registry, s)
  const gauge = (name: string, help: string, value: (m: MirrorPartitionMetrics) => number, type: 'gauge' | 'counter' = 'gauge'): void =>
    registry.collected(`${SOURCE_PREFIX}${name}`, help, type, SOURCE_LABELS, each(s, (m, emit) => emit(m.labels, value(m))))
  gauge('record_count', 'Number of source records replicated to the target cluster.', (m) => m.recordCount, 'counter')
  gauge('record_rate', 'Average number of source records replicated to the target cluster per second.', (m) => m.replicationLatency.rateOfCount())
  gauge('record_age_ms', 'The age of incoming source records when replicated to the target cluster.', (m) => m.recordAge.last)
  gauge('record_age_ms_min', 'The min age of incoming source records when replicated to the target cluster.', (m) => m.recordAge.min)
  gauge('record_age_ms_max', 'The max age of incoming source records when replicated to the target cluster.', (m) => m.recordAge.max)
  gauge('record_age_ms_avg', 'The average age of incoming source records when replicated to the target cluster.', (m) => m.recordAge.avg)
  gauge('byte_count', 'Number of bytes replicated to the target cluster.', (m) => m.byteCount, 'counter')
  gauge('byte_rate', 'Average number of bytes replicated per second.', (m) => m.bytes.rateOfSum())
  gauge('replication_latency_ms', 'Time it takes records to replicate from source to target cluster.', (m) => m.replicationLatency.last)
  gauge('replication_latency_ms_min', 'Min time it takes records to replicate from source to target cluster.', (m) => m.replicationLatency.min)
  gauge('replication_latency_ms_max', 'Max time it takes records to replicate from source to target cluster.', (m) => m.replicationLatency.max)
  gauge('replication_latency_ms_avg', 'Average time it takes records to replicate from source to target cluster.', (m) => m.replicationLatency.avg)
  return s
}

/** A MirrorSourceTask's metrics: one entry per remote topic-partition it replicates; close() removes them. */
export class MirrorSourceMetrics {
  private readonly set: Set<MirrorPartitionMetrics> | null
  private readonly mine: MirrorPartitionMetrics[] = []

  constructor(registry: MetricsRegistry | undefined, private readonly source: string, private readonly target: string) {
    this.set = registry === undefined ? null : sourceSet(registry)
  }

  /** The metrics of a remote topic-partition (kept by the caller). */
  partition(remoteTopic: string, partition: number): MirrorPartitionMetrics {
    const m = new MirrorPartitionMetrics([this.source, this.target, remoteTopic, String(partition)])
    this.mine.push(m)
    this.set?.add(m)
    return m
  }

  close(): void {
    for (const m of this.mine) this.set?.delete(m)
    this.mine.length = 0
  }
}

export class CheckpointPartitionMetrics {
  readonly latency = new WindowedStat()
  constructor(readonly labels: readonly string[]) {}
}

function checkpointSet(registry: MetricsRegistry): Set<CheckpointPartitionMetrics> {
  let set = checkpointPartitions.get(registry)
  if (set !== undefined) return set
  const s = (set = new Set())
  checkpointPartitions.set(registry, s)
  const gauge = (name: string, help: string, value: (m: CheckpointPartitionMetrics) => number): void =>
    registry.collected(`${CHECKPOINT_PREFIX}${name}`, help, 'gauge', CHECKPOINT_LABELS, each(s, (m, emit) => emit(m.labels, value(m))))
  gauge('checkpoint_latency_ms', 'Time it takes consumer group offsets to replicate from source to target cluster.', (m) => m.latency.last)
  gauge('checkpoint_latency_ms_min', 'Min time it takes consumer group offsets to replicate from source to target cluster.', (m) => m.latency.min)
  gauge('checkpoint_latency_ms_max', 'Max time it takes consumer group offsets to replicate from source to target cluster.', (m) => m.latency.max)
  gauge('checkpoint_latency_ms_avg', 'Average time it takes consumer group offsets to replicate from source to target cluster.', (m) => m.latency.avg)
  return s
}

/** A MirrorCheckpointTask's metrics, per group and checkpointed topic-partition; close() removes them. */
export class MirrorCheckpointMetrics {
  private readonly set: Set<CheckpointPartitionMetrics> | null
  private readonly byKey = new Map<string, CheckpointPartitionMetrics>()

  constructor(registry: MetricsRegistry | undefined, private readonly source: string, private readonly target: string) {
    this.set = registry === undefined ? null : checkpointSet(registry)
  }

  /** A checkpoint record the target acknowledged, created at `timestamp`. */
  checkpointLatency(group: string, topic: string, partition: number, timestamp: number, now = Date.now()): void {
    const k = `${group}\u0000${topic}\u0000${partition}`
    let m = this.byKey.get(k)
    if (m === undefined) {
      m = new CheckpointPartitionMetrics([this.source, this.target, group, topic, String(partition)])
      this.byKey.set(k, m)
      this.set?.add(m)
    }
    m.latency.record(now - timestamp)
  }

  close(): void {
    for (const m of this.byKey.values()) this.set?.delete(m)
    this.byKey.clear()
  }
}
