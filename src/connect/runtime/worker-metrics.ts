// A Connect worker's own metrics (Kafka's ConnectMetrics groups), in the worker's metrics registry that
// GET /metrics serves, under the names the JMX exporter gives Kafka's MBeans
// kafka.connect:type=connect-worker-metrics, type=connect-worker-rebalance-metrics,
// type=source-task-metrics,connector=..,task=.. and type=sink-task-metrics,...:
//
//   kafka_connect_connect_worker_metrics_{connector_count, task_count,
//     connector_startup_{attempts,success,failure}_total, task_startup_{attempts,success,failure}_total}
//   kafka_connect_connect_worker_metrics_connector_{running,paused,failed,unassigned,restarting,total}_task_count {connector}
//   kafka_connect_connect_worker_rebalance_metrics_{completed_rebalances_total, epoch, rebalancing, time_since_last_rebalance_ms}
//   kafka_connect_source_task_metrics_source_record_{poll,write}_total {connector, task}
//   kafka_connect_sink_task_metrics_sink_record_{read,send}_total {connector, task}
//
// Counts are plain numbers the worker and its tasks bump (one addition per poll() batch or record on the
// hot path); everything else is read from the herder and the status store at scrape time. Kafka counts
// since the task last started; so does this (a restarted task starts from 0). MirrorMaker runs several
// workers on one registry: their values are added up (worker-wide) or per connector and task.
import type { Emit, MetricsRegistry } from '../../observability/metrics.js'

/** What a running task counts. */
export interface TaskCounts {
  /** Source: records poll() returned; sink: records read from Kafka. */
  polledOrRead: number
  /** Source: records handed to the producer after the transformations; sink: records given to put(). */
  writtenOrSent: number
}

/** What a worker shows at scrape time. */
export interface WorkerMetricsSource {
  connectorCount(): number
  taskCount(): number
  /** Task states per connector this worker knows configs of (the whole cluster's view, as Kafka's). */
  taskStates(): Map<string, string[]>
  generation(): number
  rebalancing(): boolean
}

class WorkerCounters {
  connectorAttempts = 0
  connectorSuccesses = 0
  connectorFailures = 0
  taskAttempts = 0
  taskSuccesses = 0
  taskFailures = 0
  completedRebalances = 0
  lastRebalanceAt = -1
  readonly tasks = new Map<string, { connector: string; task: number; kind: 'source' | 'sink'; counts: TaskCounts }>()
  source: WorkerMetricsSource | null = null
}

const P = 'kafka_connect_connect_worker_metrics_'
const R = 'kafka_connect_connect_worker_rebalance_metrics_'

/** The workers of one registry (MirrorMaker shares one between its flows), registered once per registry. */
const workersOf = new WeakMap<MetricsRegistry, Set<WorkerCounters>>()

function register(registry: MetricsRegistry, workers: Set<WorkerCounters>): void {
  const sum = (f: (w: WorkerCounters) => number) => (emit: Emit) => emit([], [...workers].reduce((n, w) => n + f(w), 0))
  const worker = (name: string, help: string, type: 'counter' | 'gauge', f: (w: WorkerCounters) => number) => registry.collected(P + name, help, type, [], sum(f))
  worker('connector_count', 'The number of connectors run in this worker.', 'gauge', (w) => w.source?.connectorCount() ?? 0)
  worker('task_count', 'The number of tasks run in this worker.', 'gauge', (w) => w.source?.taskCount() ?? 0)
  worker('connector_startup_attempts_total', 'The total number of connector startups that this worker has attempted.', 'counter', (w) => w.connectorAttempts)
  worker('connector_startup_success_total', 'The total number of connector starts that succeeded.', 'counter', (w) => w.connectorSuccesses)
  worker('connector_startup_failure_total', 'The total number of connector starts that failed.', 'counter', (w) => w.connectorFailures)
  worker('task_startup_attempts_total', 'The total number of task startups that this worker has attempted.', 'counter', (w) => w.taskAttempts)
  worker('task_startup_success_total', 'The total number of task starts that succeeded.', 'counter', (w) => w.taskSuccesses)
  worker('task_startup_failure_total', 'The total number of task starts that failed.', 'counter', (w) => w.taskFailures)
  for (const [state, label] of [['RUNNING', 'running'], ['PAUSED', 'paused'], ['FAILED', 'failed'], ['UNASSIGNED', 'unassigned'], ['RESTARTING', 'restarting'], [null, 'total']] as const) {
    registry.collected(`${P}connector_${label}_task_count`, `The number of ${label === 'total' ? '' : `${label} `}tasks of the connector on the worker.`, 'gauge', ['connector'], (emit) => {
      const byConnector = new Map<string, number>()
      for (const w of workers) {
        for (const [connector, states] of w.source?.taskStates() ?? []) {
          byConnector.set(connector, (byConnector.get(connector) ?? 0) + states.filter((s) => state === null || s === state).length)
        }
      }
      for (const [connector, n] of byConnector) emit([connector], n)
    })
  }
  registry.collected(R + 'completed_rebalances_total', 'The total number of rebalances completed by this worker.', 'counter', [], sum((w) => w.completedRebalances))
  registry.collected(R + 'epoch', 'The epoch or generation number of this worker.', 'gauge', [], (emit) => emit([], Math.max(-1, ...[...workers].map((w) => w.source?.generation() ?? -1))))
  registry.collected(R + 'rebalancing', 'Whether this worker is currently rebalancing (1) or not (0).', 'gauge', [], sum((w) => (w.source?.rebalancing() === true ? 1 : 0)))
  registry.collected(R + 'time_since_last_rebalance_ms', 'The time in milliseconds since this worker completed the most recent rebalance (-1 before the first).', 'gauge', [], (emit) => {
    const last = Math.max(-1, ...[...workers].map((w) => w.lastRebalanceAt))
    emit([], last < 0 ? -1 : Date.now() - last)
  })
  const perTask = (name: string, help: string, kind: 'source' | 'sink', f: (c: TaskCounts) => number) =>
    registry.collected(name, help, 'counter', ['connector', 'task'], (emit) => {
      const byTask = new Map<string, { labels: string[]; n: number }>()
      for (const w of workers) {
        for (const t of w.tasks.values()) {
          if (t.kind !== kind) continue
          const key = `${t.connector}\u0000${t.task}`
          const e = byTask.get(key) ?? { labels: [t.connector, String(t.task)], n: 0 }
          e.n += f(t.counts)
          byTask.set(key, e)
        }
      }
      for (const e of byTask.values()) emit(e.labels, e.n)
    })
  perTask('kafka_connect_source_task_metrics_source_record_poll_total', 'The number of records produced/polled (before transformation) by this task.', 'source', (c) => c.polledOrRead)
  perTask('kafka_connect_source_task_metrics_source_record_write_total', 'The number of records output from the transformations and written to Kafka for this task.', 'source', (c) => c.writtenOrSent)
  perTask('kafka_connect_sink_task_metrics_sink_record_read_total', 'The number of records read from Kafka by this task.', 'sink', (c) => c.polledOrRead)
  perTask('kafka_connect_sink_task_metrics_sink_record_send_total', 'The number of records output from the transformations and sent/put to this task.', 'sink', (c) => c.writtenOrSent)
}

/** One worker's metrics: the worker and its herder report to it. */
export class ConnectWorkerMetrics {
  private readonly counters = new WorkerCounters()
  private readonly workers: Set<WorkerCounters>

  constructor(registry: MetricsRegistry) {
    let workers = workersOf.get(registry)
    if (workers === undefined) {
      workers = new Set()
      workersOf.set(registry, workers)
      register(registry, workers)
    }
    this.workers = workers
    workers.add(this.counters)
  }

  /** The worker stopped: its values leave the registry's sums. */
  close(): void {
    this.workers.delete(this.counters)
  }

  /** The herder and worker, once they exist. */
  attach(source: WorkerMetricsSource): void {
    this.counters.source = source
  }

  connectorStartup(ok: boolean): void {
    this.counters.connectorAttempts++
    if (ok) this.counters.connectorSuccesses++
    else this.counters.connectorFailures++
  }

  taskStartup(ok: boolean): void {
    this.counters.taskAttempts++
    if (ok) this.counters.taskSuccesses++
    else this.counters.taskFailures++
  }

  rebalanceCompleted(): void {
    this.counters.completedRebalances++
    this.counters.lastRebalanceAt = Date.now()
  }

  /** A task's counts from its (re)start; forgotten when it stops. */
  taskStarted(connector: string, task: number, kind: 'source' | 'sink'): TaskCounts {
    const counts: TaskCounts = { polledOrRead: 0, writtenOrSent: 0 }
    this.counters.tasks.set(`${connector}\u0000${task}`, { connector, task, kind, counts })
    return counts
  }

  taskStopped(connector: string, task: number): void {
    this.counters.tasks.delete(`${connector}\u0000${task}`)
  }
}
