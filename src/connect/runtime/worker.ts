// The Worker: runs the connectors and tasks its herder gives it. It builds each one's converters (the
// connector's key.converter / value.converter with their `key.converter.*` settings, else the worker's),
// transformation chain, error handler and clients (the worker's producer.* / consumer.* settings with the
// connector's producer.override.* / consumer.override.* on top), starts them, applies target states, and
// writes their states to the status store.
import { Admin, type ClientOptions, type ConsumerOptions, type ProducerOptions, Producer } from '../../client/index.js'
import { applyConsumerProps, applyProducerProps } from '../../client/client-config.js'
import type { Logger } from '../../observability/logger.js'
import { type Connector, type ConnectorContext, type Converter, type HeaderConverter, SinkConnector, SinkTask, SourceConnector, SourceTask } from '../api/plugin.js'
import { TransformationChain } from './connector-config.js'
import { ensureTopic } from './kafka-log.js'
import type { TargetState } from './config-store.js'
import { DeadLetterQueueReporter, ErrorHandler, errorHandlingConfig, type ErrorReporter } from './errors.js'
import type { OffsetBackingStore } from './offset-store.js'
import type { Plugins } from './plugins.js'
import type { State, StatusStore } from './status-store.js'
import { taskName, type TaskId, WorkerSinkTask, WorkerSourceTask } from './worker-task.js'
import { withPrefix, type WorkerConfig } from './worker-config.js'
import type { MetricsRegistry } from '../../observability/metrics.js'
import type { ConnectWorkerMetrics } from './worker-metrics.js'

export interface WorkerOptions {
  config: WorkerConfig
  workerId: string
  plugins: Plugins
  offsets: OffsetBackingStore
  status: StatusStore
  log: Logger
  /** The current rebalance generation (status records carry it). */
  generation: () => number
  /** A connector asked for its task configs to be computed again. */
  onTaskReconfiguration: (connector: string) => void
  /** Exactly-once source support enabled on this (distributed) worker: the group id prefixes transactional ids. */
  exactlyOnceGroupId: string | null
  /** The worker's metrics registry: tasks get it in their context. */
  metrics: MetricsRegistry
  /** The worker's own metrics (startups, the tasks' record counts). */
  workerMetrics: ConnectWorkerMetrics
}

interface RunningConnector {
  name: string
  connector: Connector
  props: Record<string, string>
  state: TargetState
  failed: boolean
}

export class Worker {
  private readonly connectors = new Map<string, RunningConnector>()
  private readonly tasks = new Map<string, WorkerSourceTask | WorkerSinkTask>()
  private dlqProducer: Producer | null = null

  constructor(private readonly o: WorkerOptions) {}

  get clientOptions(): ClientOptions {
    const c = this.o.config
    return { bootstrapServers: c.values['bootstrap.servers'] as string[], clientId: (c.values['client.id'] as string) || `connect-${this.o.workerId}` }
  }

  connectorNames(): string[] {
    return [...this.connectors.keys()]
  }

  taskIds(): TaskId[] {
    return [...this.tasks.values()].map((t) => t.id)
  }

  isRunning(name: string): boolean {
    return this.connectors.has(name)
  }

  hasTask(id: TaskId): boolean {
    return this.tasks.has(taskName(id))
  }

  private reportConnector(name: string, state: State, trace: string | null): void {
    void this.o.status.putConnector(name, { state, trace, workerId: this.o.workerId, generation: this.o.generation() }).catch((err) => this.o.log.warn({ connector: name, err: (err as Error).message }, 'could not write connector status'))
  }

  private reportTask(id: TaskId, state: State, trace: string | null): void {
    void this.o.status.putTask(id.connector, id.task, { state, trace, workerId: this.o.workerId, generation: this.o.generation() }).catch((err) => this.o.log.warn({ task: taskName(id), err: (err as Error).message }, 'could not write task status'))
  }

  /** Starts a connector in a target state; a failure is reported as its FAILED state, not thrown. */
  async startConnector(name: string, props: Record<string, string>, state: TargetState): Promise<boolean> {
    if (this.connectors.has(name)) await this.stopConnector(name)
    let connector: Connector
    try {
      connector = this.o.plugins.newConnector(props['connector.class'] ?? '')
    } catch (err) {
      this.o.workerMetrics.connectorStartup(false)
      this.reportConnector(name, 'FAILED', (err as Error).stack ?? String(err))
      return false
    }
    const running: RunningConnector = { name, connector, props, state, failed: false }
    const ctx: ConnectorContext = {
      requestTaskReconfiguration: () => this.o.onTaskReconfiguration(name),
      raiseError: (err: Error) => {
        running.failed = true
        this.reportConnector(name, 'FAILED', err.stack ?? String(err))
      },
    }
    connector.initialize(ctx)
    this.connectors.set(name, running)
    if (state !== 'STARTED') {
      this.reportConnector(name, state === 'PAUSED' ? 'PAUSED' : 'STOPPED', null)
      return true
    }
    return this.doStart(running)
  }

  private async doStart(r: RunningConnector): Promise<boolean> {
    try {
      await r.connector.start({ ...r.props })
      r.failed = false
      this.o.workerMetrics.connectorStartup(true)
      this.reportConnector(r.name, 'RUNNING', null)
      return true
    } catch (err) {
      r.failed = true
      this.o.workerMetrics.connectorStartup(false)
      this.o.log.error({ connector: r.name, err: (err as Error).message }, 'connector failed to start')
      this.reportConnector(r.name, 'FAILED', (err as Error).stack ?? String(err))
      return false
    }
  }

  async setConnectorTargetState(name: string, state: TargetState): Promise<void> {
    const r = this.connectors.get(name)
    if (r === undefined || r.state === state) return
    const was = r.state
    r.state = state
    if (state === 'STARTED') {
      if (was === 'STOPPED' || r.failed) await this.doStart(r)
      else this.reportConnector(name, 'RUNNING', null)
    } else {
      if (was === 'STARTED' && state === 'STOPPED') await Promise.resolve(r.connector.stop()).catch(() => {})
      this.reportConnector(name, state === 'PAUSED' ? 'PAUSED' : 'STOPPED', null)
    }
    for (const t of this.tasks.values()) if (t.id.connector === name && state !== 'STOPPED') t.setTargetState(state)
  }

  /** The connector's task configs (Kafka's Worker.connectorTaskConfigs), or null when it is not running here. */
  async connectorTaskConfigs(name: string): Promise<Record<string, string>[] | null> {
    const r = this.connectors.get(name)
    if (r === undefined || r.failed || r.state === 'STOPPED') return null
    const maxTasks = Number(r.props['tasks.max'] ?? 1)
    const configs = await r.connector.taskConfigs(maxTasks)
    if (configs.length > maxTasks && r.props['tasks.max.enforce'] !== 'false') {
      const err = new Error(`The connector ${name} has generated ${configs.length} tasks, which is greater than ${maxTasks}, the maximum number of tasks it is configured to create.`)
      r.failed = true
      this.reportConnector(name, 'FAILED', err.stack ?? err.message)
      return null
    }
    const taskClass = r.connector.taskClass().name
    return configs.map((c) => {
      const out: Record<string, string> = { ...c, 'task.class': taskClass }
      if (r.connector instanceof SinkConnector) {
        if (r.props['topics'] !== undefined) out['topics'] = r.props['topics']
        if (r.props['topics.regex'] !== undefined) out['topics.regex'] = r.props['topics.regex']
      }
      return out
    })
  }

  async stopConnector(name: string): Promise<void> {
    const r = this.connectors.get(name)
    if (r === undefined) return
    this.connectors.delete(name)
    if (r.state === 'STARTED' && !r.failed) await Promise.resolve(r.connector.stop()).catch((err) => this.o.log.warn({ connector: name, err: (err as Error).message }, 'connector stop failed'))
  }

  private converter(connectorProps: Record<string, string>, which: 'key' | 'value'): Converter {
    const key = `${which}.converter`
    const fromConnector = connectorProps[key] !== undefined && connectorProps[key] !== ''
    const className = fromConnector ? connectorProps[key]! : (this.o.config.values[key] as string)
    const settings = fromConnector ? withPrefix(connectorProps, `${key}.`) : withPrefix(this.o.config.originals, `${key}.`)
    const c = this.o.plugins.newConverter(className)
    c.configure(settings, which === 'key')
    return c
  }

  private headerConverter(connectorProps: Record<string, string>): HeaderConverter {
    const fromConnector = connectorProps['header.converter'] !== undefined && connectorProps['header.converter'] !== ''
    const className = fromConnector ? connectorProps['header.converter']! : (this.o.config.values['header.converter'] as string)
    const h = this.o.plugins.newHeaderConverter(className)
    h.configure(fromConnector ? withPrefix(connectorProps, 'header.converter.') : withPrefix(this.o.config.originals, 'header.converter.'))
    return h
  }

  private producerOptions(connectorProps: Record<string, string>, clientId: string): ProducerOptions {
    const opts: ProducerOptions = { ...this.clientOptions, clientId, acks: -1, lingerMs: 5, deliveryTimeoutMs: 2 ** 31 - 1, maxBlockMs: 2 ** 31 - 1 }
    applyProducerProps(opts, new Map(Object.entries(withPrefix(this.o.config.originals, 'producer.'))))
    applyProducerProps(opts, new Map(Object.entries(withPrefix(connectorProps, 'producer.override.'))))
    return opts
  }

  private consumerOptions(name: string, connectorProps: Record<string, string>, clientId: string): ConsumerOptions {
    const opts: ConsumerOptions = { ...this.clientOptions, clientId, groupId: `connect-${name}`, autoOffsetReset: 'earliest', enableAutoCommit: false }
    const worker = withPrefix(this.o.config.originals, 'consumer.')
    const override = withPrefix(connectorProps, 'consumer.override.')
    for (const props of [worker, override]) {
      if (props['group.id'] !== undefined) opts.groupId = props['group.id']
      const rest = new Map(Object.entries(props).filter(([k]) => k !== 'group.id' && k !== 'enable.auto.commit'))
      applyConsumerProps(opts, rest)
    }
    return opts
  }

  private async dlq(): Promise<Producer> {
    this.dlqProducer ??= new Producer({ ...this.clientOptions, clientId: `connect-${this.o.workerId}-dlq`, acks: -1, lingerMs: 0 })
    return this.dlqProducer
  }

  /** Starts a task of a connector in a target state; a failure is reported as its FAILED state. */
  async startTask(id: TaskId, connectorProps: Record<string, string>, taskProps: Record<string, string>, state: TargetState): Promise<boolean> {
    const name = taskName(id)
    if (this.tasks.has(name)) await this.stopTask(id)
    const log = this.o.log.child({ task: name })
    try {
      const className = connectorProps['connector.class'] ?? ''
      const connector = this.o.plugins.newConnector(className)
      const TaskClass = connector.taskClass()
      const task = new TaskClass()
      const chain = TransformationChain.build(connectorProps, this.o.plugins)
      const keyConverter = this.converter(connectorProps, 'key')
      const valueConverter = this.converter(connectorProps, 'value')
      const headerConverter = this.headerConverter(connectorProps)
      const errorConfig = errorHandlingConfig(connectorProps)
      const reporters: ErrorReporter[] = []
      const clientId = `connector-${connector instanceof SinkConnector ? 'consumer' : 'producer'}-${name}`
      const common = {
        id,
        taskProps,
        keyConverter,
        valueConverter,
        headerConverter,
        chain,
        log,
        report: (s: State, trace: string | null) => this.reportTask(id, s, trace),
        offsetFlushIntervalMs: this.o.config.values['offset.flush.interval.ms'] as number,
        gracefulTimeoutMs: this.o.config.values['task.shutdown.graceful.timeout.ms'] as number,
        metrics: this.o.metrics,
        counts: this.o.workerMetrics.taskStarted(id.connector, id.task, connector instanceof SinkConnector ? 'sink' : 'source'),
        onTopic: (topic: string) => void this.o.status.putTopic({ topic, connector: id.connector, task: id.task, discoverTimestamp: Date.now() }).catch(() => {}),
      }
      let worker: WorkerSourceTask | WorkerSinkTask
      if (connector instanceof SinkConnector && task instanceof SinkTask) {
        const dlqTopic = (connectorProps['errors.deadletterqueue.topic.name'] ?? '').trim()
        let dlqReporter: DeadLetterQueueReporter | null = null
        if (dlqTopic !== '') {
          await ensureTopic(this.clientOptions, dlqTopic, 1, Number(connectorProps['errors.deadletterqueue.topic.replication.factor'] ?? 3), {})
          dlqReporter = new DeadLetterQueueReporter(await this.dlq(), dlqTopic, id.connector, id.task, connectorProps['errors.deadletterqueue.context.headers.enable'] === 'true')
          reporters.push(dlqReporter)
        }
        const errors = new ErrorHandler(errorConfig, reporters, log)
        const regex = (connectorProps['topics.regex'] ?? '').trim()
        worker = new WorkerSinkTask({
          ...common,
          errors,
          task,
          consumerOptions: this.consumerOptions(id.connector, connectorProps, clientId),
          topics: (connectorProps['topics'] ?? '').split(',').map((t) => t.trim()).filter((t) => t !== ''),
          topicsRegex: regex === '' ? null : new RegExp(`^(?:${regex})$`),
          errantRecordReporter: dlqReporter === null && errorConfig.tolerance === 'none' && !errorConfig.logEnable ? null : async (record, err) => {
            await errors.report({ stage: 'TASK_PUT', executingClass: TaskClass.name, error: err, consumerRecord: record })
          },
          listTopics: async () => {
            const admin = new Admin(this.clientOptions)
            try {
              return await admin.listTopics()
            } finally {
              await admin.close()
            }
          },
        })
      } else if (connector instanceof SourceConnector && task instanceof SourceTask) {
        const errors = new ErrorHandler(errorConfig, reporters, log)
        const groupId = this.o.exactlyOnceGroupId
        worker = new WorkerSourceTask({
          ...common,
          errors,
          task,
          producerOptions: this.producerOptions(connectorProps, clientId),
          offsets: this.o.offsets,
          exactlyOnce: groupId === null ? null : {
            transactionalId: `${groupId}-${name}`,
            boundary: (connectorProps['transaction.boundary'] ?? 'poll').toLowerCase() as 'poll' | 'interval' | 'connector',
            intervalMs: Number(connectorProps['transaction.boundary.interval.ms'] ?? this.o.config.values['offset.flush.interval.ms']),
          },
        })
      } else {
        throw new Error(`the task class of ${className} does not match its connector type`)
      }
      this.tasks.set(name, worker)
      this.reportTask(id, 'UNASSIGNED', null)
      worker.start(state === 'PAUSED' ? 'PAUSED' : 'STARTED')
      this.o.workerMetrics.taskStartup(true)
      return true
    } catch (err) {
      this.o.workerMetrics.taskStartup(false)
      this.o.workerMetrics.taskStopped(id.connector, id.task)
      log.error({ err: (err as Error).message }, 'task failed to start')
      this.reportTask(id, 'FAILED', (err as Error).stack ?? String(err))
      return false
    }
  }

  async stopTask(id: TaskId): Promise<void> {
    const name = taskName(id)
    const t = this.tasks.get(name)
    if (t === undefined) return
    this.tasks.delete(name)
    this.o.workerMetrics.taskStopped(id.connector, id.task)
    await t.stop()
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.tasks.values()].map((t) => this.stopTask(t.id)))
    await Promise.all([...this.connectors.keys()].map((c) => this.stopConnector(c)))
    await this.dlqProducer?.close().catch(() => {})
    this.dlqProducer = null
  }

  /** A task's failed flag (for restart onlyFailed). */
  taskFailed(id: TaskId): boolean {
    return this.tasks.get(taskName(id))?.failed ?? false
  }

  connectorFailed(name: string): boolean {
    return this.connectors.get(name)?.failed ?? false
  }

  connectorType(props: Record<string, string>): 'source' | 'sink' | 'unknown' {
    try {
      return this.o.plugins.connectorKind(props['connector.class'] ?? '')
    } catch {
      return 'unknown'
    }
  }
}
