// The herder: decides what this worker runs and answers the REST API (Kafka's DistributedHerder and
// StandaloneHerder).
//
// Distributed: workers with the same group.id join one group with protocol type "connect". The leader
// reads the config topic to its end and assigns connectors and tasks (assignor.ts); every worker applies
// its assignment: stops what was revoked (rejoining at once when something was, as KIP-415 asks), starts
// what it gained, and rejoins after the delay the leader announced for work of departed members.
// Config changes arrive through the config topic: a new or deleted connector or new task configs make
// every worker rejoin; a changed connector config restarts the connector where it runs; target states
// and restart requests are applied where the work runs. Writes go through the leader: a follower
// answers a write with NotLeaderError and the REST layer forwards the request to the leader's URL.
// A running connector's task configs are computed where it runs and written by the leader.
//
// Standalone: the same, with one worker that assigns everything to itself after every change.
import type { ConnectionOptions } from 'node:tls'
import { fetchWithTls } from '../../http/fetch.js'
import type { InternalRequestSigner } from './rest-auth.js'
import { Admin, Cluster, GroupMember, type GroupProtocol, Producer } from '../../client/index.js'
import type { Logger } from '../../observability/logger.js'
import { SourceConnector } from '../api/plugin.js'
import { ConnectAssignor } from './assignor.js'
import type { ClusterConfigState, ConfigStore, RestartRequest, TargetState } from './config-store.js'
import { type ConfigInfos, validateConnectorConfig } from './connector-config.js'
import type { OffsetBackingStore } from './offset-store.js'
import type { Plugins } from './plugins.js'
import { ASSIGNMENT_CONFIG_MISMATCH, CONNECT_PROTOCOL_TYPE, type ConnectAssignment, type ConnectorsAndTasks, decodeAssignment, decodeMetadata, encodeAssignment, encodeMetadata, offeredProtocols, type ProtocolMode, protocolVersion, taskIdString } from './protocol.js'
import type { State, Status, StatusStore } from './status-store.js'
import type { Worker } from './worker.js'
import type { WorkerConfig } from './worker-config.js'

/** An answer the REST layer turns into an HTTP status with Kafka's error body. */
export class HerderError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
    this.name = 'HerderError'
  }
}

/** A write reached a follower: the REST layer forwards it to leaderUrl. */
export class NotLeaderError extends Error {
  constructor(readonly leaderUrl: string | null) {
    super(leaderUrl === null ? 'Cannot complete request because of a conflicting operation (e.g. worker rebalance)' : `This worker is not the leader; the leader is ${leaderUrl}`)
    this.name = 'NotLeaderError'
  }
}

export interface ConnectorInfo {
  name: string
  config: Record<string, string>
  tasks: { connector: string; task: number }[]
  type: 'source' | 'sink' | 'unknown'
}

export interface StateInfo {
  state: State
  worker_id: string
  trace?: string
}

export interface ConnectorStateInfo {
  name: string
  connector: StateInfo
  tasks: (StateInfo & { id: number })[]
  type: 'source' | 'sink' | 'unknown'
}

export interface HerderOptions {
  config: WorkerConfig
  worker: Worker
  configStore: ConfigStore
  statusStore: StatusStore
  offsetStore: OffsetBackingStore
  plugins: Plugins
  log: Logger
  /** This worker's id (host:port of its REST URL) and REST URL. */
  workerId: string
  url: string
  /** TLS of calls to other workers' https URLs (task configs sent to the leader). */
  peerTls?: ConnectionOptions
  /** With REST authentication on: signs this worker's own requests to the leader (rest-auth.ts). */
  signer?: InternalRequestSigner
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

function sameConfigs(a: Record<string, string>[] | undefined, b: Record<string, string>[]): boolean {
  if (a === undefined || a.length !== b.length) return false
  return a.every((x, i) => JSON.stringify(Object.entries(x).sort()) === JSON.stringify(Object.entries(b[i]!).sort()))
}

export abstract class Herder {
  protected readonly worker: Worker
  protected readonly configStore: ConfigStore
  readonly status: StatusStore
  protected readonly offsets: OffsetBackingStore
  readonly plugins: Plugins
  protected readonly log: Logger
  readonly workerId: string
  readonly url: string
  protected readonly peerTls: ConnectionOptions | undefined
  readonly config: WorkerConfig
  protected running = false
  /** What this worker runs. */
  protected assignment: ConnectorsAndTasks = { connectors: [], tasks: [] }
  private readonly events: (() => Promise<void>)[] = []
  private wake: (() => void) | null = null
  protected loop: Promise<void> | null = null
  /** Connectors whose task configs must be computed again here. */
  protected readonly reconfigure = new Set<string>()
  ready = false
  protected readonly signer: InternalRequestSigner | null

  constructor(o: HerderOptions) {
    this.worker = o.worker
    this.configStore = o.configStore
    this.status = o.statusStore
    this.offsets = o.offsetStore
    this.plugins = o.plugins
    this.log = o.log
    this.signer = o.signer ?? null
    this.workerId = o.workerId
    this.url = o.url
    this.peerTls = o.peerTls
    this.config = o.config
    this.configStore.setListener({
      onConnectorConfigUpdate: (name) => this.enqueue(() => this.onConnectorConfig(name)),
      onConnectorConfigRemove: (name) => this.enqueue(() => this.onConnectorRemoved(name)),
      onTaskConfigUpdate: (names) => this.enqueue(() => this.onTaskConfigs(names)),
      onConnectorTargetStateChange: (name) => this.enqueue(() => this.onTargetState(name)),
      onRestartRequest: (req) => this.enqueue(() => this.onRestart(req)),
      onLoggerLevel: (ns, level) => this.onLoggerLevel?.(ns, level),
    })
  }

  onLoggerLevel?: (namespace: string, level: string) => void
  /** Called when this worker has joined its group (connect-worker-rebalance-metrics). */
  onRebalanceCompleted?: () => void
  /** Whether a rebalance is in progress here (always false for a standalone worker). */
  rebalancing = false

  abstract get isLeader(): boolean
  abstract get leaderUrl(): string | null
  abstract get generation(): number
  protected abstract tick(): Promise<void>
  protected abstract requestRebalance(): void

  /** Runs fn in the herder's loop (state changes happen one at a time). */
  protected enqueue(fn: () => Promise<void>): void {
    this.events.push(fn)
    this.wake?.()
  }

  /** Runs fn in the herder's loop and returns its result. */
  protected inLoop<T>(fn: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => this.enqueue(() => fn().then(resolve, reject)))
  }

  protected async runLoop(): Promise<void> {
    while (this.running) {
      try {
        while (this.events.length > 0 && this.running) await this.events.shift()!()
        await this.tick()
        for (const name of [...this.reconfigure]) {
          this.reconfigure.delete(name)
          await this.reconfigureConnectorTasks(name)
        }
      } catch (err) {
        this.log.error({ err: (err as Error).message, stack: (err as Error).stack }, 'herder loop error')
        await sleep(500)
      }
      if (this.events.length === 0 && this.running) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 250)
          this.wake = () => {
            clearTimeout(t)
            resolve()
          }
        })
        this.wake = null
      }
    }
  }

  snapshot(): ClusterConfigState {
    return this.configStore.snapshot()
  }

  /** A connector asked (ConnectorContext.requestTaskReconfiguration) for its task configs to be computed again. */
  requestTaskReconfiguration(name: string): void {
    this.enqueue(async () => void this.reconfigure.add(name))
  }

  // ---- applying config changes to what runs here ----

  private async onConnectorConfig(name: string): Promise<void> {
    if (!this.assignment.connectors.includes(name)) {
      // A new connector: the leader assigns it.
      this.requestRebalance()
      return
    }
    const snap = this.snapshot()
    const props = snap.connectorConfigs.get(name)
    if (props === undefined) return
    await this.worker.startConnector(name, props, snap.targetStates.get(name) ?? 'STARTED')
    this.reconfigure.add(name)
  }

  private async onConnectorRemoved(name: string): Promise<void> {
    for (const t of this.assignment.tasks.filter((x) => x.connector === name)) await this.worker.stopTask(t)
    if (this.assignment.connectors.includes(name)) await this.worker.stopConnector(name)
    this.assignment = { connectors: this.assignment.connectors.filter((c) => c !== name), tasks: this.assignment.tasks.filter((t) => t.connector !== name) }
    this.requestRebalance()
  }

  private async onTaskConfigs(names: string[]): Promise<void> {
    // Tasks with old configs stop; the leader hands out the new set in the rebalance.
    for (const name of names) {
      for (const t of this.assignment.tasks.filter((x) => x.connector === name)) await this.worker.stopTask(t)
      this.assignment = { connectors: this.assignment.connectors, tasks: this.assignment.tasks.filter((t) => t.connector !== name) }
    }
    this.requestRebalance()
  }

  private async onTargetState(name: string): Promise<void> {
    const state = this.snapshot().targetStates.get(name) ?? 'STARTED'
    await this.worker.setConnectorTargetState(name, state)
    if (state === 'STARTED' && this.assignment.connectors.includes(name)) this.reconfigure.add(name)
  }

  private async onRestart(req: RestartRequest): Promise<void> {
    const snap = this.snapshot()
    const props = snap.connectorConfigs.get(req.connector)
    if (props === undefined) return
    const state = snap.targetStates.get(req.connector) ?? 'STARTED'
    if (this.assignment.connectors.includes(req.connector) && (!req.onlyFailed || this.connectorFailedState(req.connector))) {
      await this.worker.stopConnector(req.connector)
      await this.status.putConnector(req.connector, { state: 'RESTARTING', trace: null, workerId: this.workerId, generation: this.generation })
      await this.worker.startConnector(req.connector, props, state)
      this.reconfigure.add(req.connector)
    }
    if (!req.includeTasks) return
    const taskConfigs = snap.taskConfigs.get(req.connector) ?? []
    for (const t of this.assignment.tasks.filter((x) => x.connector === req.connector)) {
      if (req.onlyFailed && this.status.tasks(req.connector).get(t.task)?.state !== 'FAILED') continue
      const tc = taskConfigs[t.task]
      if (tc === undefined) continue
      await this.worker.stopTask(t)
      await this.status.putTask(t.connector, t.task, { state: 'RESTARTING', trace: null, workerId: this.workerId, generation: this.generation })
      await this.worker.startTask(t, props, tc, state)
    }
  }

  private connectorFailedState(name: string): boolean {
    return this.status.connector(name)?.state === 'FAILED' || this.worker.connectorFailed(name)
  }

  /** Computes a running connector's task configs here and has the leader write them when they changed. */
  protected async reconfigureConnectorTasks(name: string): Promise<void> {
    const snap = this.snapshot()
    if (!this.assignment.connectors.includes(name) || snap.targetStates.get(name) === 'STOPPED') return
    let configs: Record<string, string>[] | null
    try {
      configs = await this.worker.connectorTaskConfigs(name)
    } catch (err) {
      this.log.error({ connector: name, err: (err as Error).message }, 'taskConfigs failed')
      await this.status.putConnector(name, { state: 'FAILED', trace: (err as Error).stack ?? String(err), workerId: this.workerId, generation: this.generation })
      return
    }
    if (configs === null) return
    if (sameConfigs(snap.taskConfigs.get(name), configs) && !snap.inconsistent.has(name)) return
    try {
      await this.writeTaskConfigs(name, configs)
    } catch (err) {
      this.log.warn({ connector: name, err: (err as Error).message }, 'could not write task configs; retrying')
      setTimeout(() => this.enqueue(async () => void this.reconfigure.add(name)), 1000).unref()
    }
  }

  /** Writes task configs (on the leader; a follower sends them to the leader). */
  protected abstract writeTaskConfigs(name: string, configs: Record<string, string>[]): Promise<void>

  /** The leader's write of task configs; for exactly-once sources the previous generation is fenced first. */
  async putTaskConfigsAsLeader(name: string, configs: Record<string, string>[]): Promise<void> {
    if (!this.isLeader) throw new NotLeaderError(this.leaderUrl)
    const snap = this.snapshot()
    if (!snap.connectorConfigs.has(name)) throw new HerderError(404, `Connector ${name} not found`)
    const groupId = this.exactlyOnceGroupId()
    const props = snap.connectorConfigs.get(name)!
    if (groupId !== null && this.worker.connectorType(props) === 'source') {
      const previous = snap.taskCountRecords.get(name) ?? snap.taskConfigs.get(name)?.length ?? 0
      await this.fenceProducers(groupId, name, previous)
      await this.configStore.putTaskConfigs(name, configs)
      await this.configStore.putTaskCountRecord(name, configs.length)
      return
    }
    await this.configStore.putTaskConfigs(name, configs)
  }

  protected exactlyOnceGroupId(): string | null {
    return null
  }

  /** Fences the transactional producers of a connector's previous tasks (KIP-618's zombie fencing). */
  private async fenceProducers(groupId: string, connector: string, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const p = new Producer({ ...this.worker.clientOptions, clientId: `connect-fence-${connector}-${i}`, transactionalId: `${groupId}-${connector}-${i}`, enableIdempotence: true, acks: -1 })
      try {
        await p.initTransactions()
      } catch (err) {
        this.log.warn({ connector, task: i, err: (err as Error).message }, 'fencing a previous task failed')
      } finally {
        await p.close().catch(() => {})
      }
    }
  }

  /** Makes this worker run exactly `target` (stopping the rest first). */
  protected async applyAssignment(added: ConnectorsAndTasks, revoked: ConnectorsAndTasks): Promise<void> {
    for (const t of revoked.tasks) await this.worker.stopTask(t)
    for (const c of revoked.connectors) await this.worker.stopConnector(c)
    const revokedTasks = new Set(revoked.tasks.map(taskIdString))
    const current: ConnectorsAndTasks = {
      connectors: this.assignment.connectors.filter((c) => !revoked.connectors.includes(c)),
      tasks: this.assignment.tasks.filter((t) => !revokedTasks.has(taskIdString(t))),
    }
    const snap = this.snapshot()
    for (const c of added.connectors) {
      if (current.connectors.includes(c)) continue
      const props = snap.connectorConfigs.get(c)
      if (props === undefined) continue
      current.connectors.push(c)
      await this.worker.startConnector(c, props, snap.targetStates.get(c) ?? 'STARTED')
      this.reconfigure.add(c)
    }
    for (const t of added.tasks) {
      if (current.tasks.some((x) => x.connector === t.connector && x.task === t.task)) continue
      const props = snap.connectorConfigs.get(t.connector)
      const tc = snap.taskConfigs.get(t.connector)?.[t.task]
      if (props === undefined || tc === undefined) continue
      current.tasks.push(t)
      const state = snap.targetStates.get(t.connector) ?? 'STARTED'
      await this.worker.startTask(t, props, tc, state === 'STOPPED' ? 'PAUSED' : state)
    }
    this.assignment = current
  }

  /** What the configs say should run (connectors, and tasks of connectors with consistent task configs). */
  protected configuredWork(snap: ClusterConfigState): ConnectorsAndTasks {
    const connectors = [...snap.connectorConfigs.keys()].sort()
    const tasks: { connector: string; task: number }[] = []
    for (const c of connectors) {
      if (snap.inconsistent.has(c) || snap.targetStates.get(c) === 'STOPPED') continue
      const n = snap.taskConfigs.get(c)?.length ?? 0
      for (let i = 0; i < n; i++) tasks.push({ connector: c, task: i })
    }
    return { connectors, tasks }
  }

  // ---- the REST API's operations ----

  private requireConnector(name: string): { snap: ClusterConfigState; props: Record<string, string> } {
    const snap = this.snapshot()
    const props = snap.connectorConfigs.get(name)
    if (props === undefined) throw new HerderError(404, `Connector ${name} not found`)
    return { snap, props }
  }

  connectorNames(): string[] {
    return [...this.snapshot().connectorConfigs.keys()].sort()
  }

  connectorInfo(name: string): ConnectorInfo {
    const { snap, props } = this.requireConnector(name)
    const n = snap.taskConfigs.get(name)?.length ?? 0
    return { name, config: props, tasks: Array.from({ length: n }, (_v, task) => ({ connector: name, task })), type: this.worker.connectorType(props) }
  }

  connectorConfig(name: string): Record<string, string> {
    return this.requireConnector(name).props
  }

  taskConfigs(name: string): { id: { connector: string; task: number }; config: Record<string, string> }[] {
    const { snap } = this.requireConnector(name)
    return (snap.taskConfigs.get(name) ?? []).map((config, task) => ({ id: { connector: name, task }, config }))
  }

  private stateInfo(s: Status | undefined): StateInfo {
    if (s === undefined) return { state: 'UNASSIGNED', worker_id: '' }
    const out: StateInfo = { state: s.state, worker_id: s.workerId }
    if (s.trace !== null) out.trace = s.trace
    return out
  }

  connectorStatus(name: string): ConnectorStateInfo {
    const { snap, props } = this.requireConnector(name)
    const n = snap.taskConfigs.get(name)?.length ?? 0
    const tasks = this.status.tasks(name)
    return {
      name,
      connector: this.stateInfo(this.status.connector(name)),
      tasks: Array.from({ length: n }, (_v, id) => ({ id, ...this.stateInfo(tasks.get(id)) })),
      type: this.worker.connectorType(props),
    }
  }

  taskStatus(name: string, task: number): StateInfo & { id: number } {
    const { snap } = this.requireConnector(name)
    if (task < 0 || task >= (snap.taskConfigs.get(name)?.length ?? 0)) throw new HerderError(404, `Unknown task ${name}-${task}`)
    return { id: task, ...this.stateInfo(this.status.tasks(name).get(task)) }
  }

  async validate(props: Record<string, string>): Promise<ConfigInfos> {
    if (props['connector.class'] === undefined || props['connector.class'] === '') throw new HerderError(400, 'Connector config {' + Object.entries(props).map(([k, v]) => `${k}=${v}`).join(', ') + '} contains no connector type')
    try {
      return await validateConnectorConfig(props, this.plugins)
    } catch (err) {
      if ((err as Error).name === 'PluginNotFoundError') throw new HerderError(400, (err as Error).message)
      throw err
    }
  }

  /** Creates or replaces a connector (after validation). */
  async putConnectorConfig(name: string, props: Record<string, string>, allowReplace: boolean, initialState: TargetState | null = null): Promise<{ created: boolean; info: ConnectorInfo }> {
    if (!this.isLeader) throw new NotLeaderError(this.leaderUrl)
    const config = { ...props, name }
    const infos = await this.validate(config)
    if (infos.error_count > 0) {
      const messages = infos.configs.filter((c) => (c.value['errors'] as string[]).length > 0).map((c) => `Invalid value for ${c.value['name'] as string}: ${(c.value['errors'] as string[]).join(', ')}`)
      throw new HerderError(400, `Connector configuration is invalid and contains the following ${infos.error_count} error(s):\n${messages.join('\n')}\nYou can also find the above list of errors at the endpoint \`/connector-plugins/{connectorType}/config/validate\``)
    }
    return this.inLoop(async () => {
      const exists = this.snapshot().connectorConfigs.has(name)
      if (exists && !allowReplace) throw new HerderError(409, `Connector ${name} already exists`)
      await this.configStore.putConnectorConfig(name, config, exists ? null : initialState)
      return { created: !exists, info: this.connectorInfo(name) }
    })
  }

  async deleteConnector(name: string): Promise<void> {
    if (!this.isLeader) throw new NotLeaderError(this.leaderUrl)
    const { snap } = this.requireConnector(name)
    await this.inLoop(async () => {
      await this.configStore.removeConnectorConfig(name)
      await this.status.deleteConnector(name, snap.taskConfigs.get(name)?.length ?? 0)
    })
  }

  async pauseConnector(name: string): Promise<void> {
    this.requireConnector(name)
    await this.configStore.putTargetState(name, 'PAUSED')
  }

  async resumeConnector(name: string): Promise<void> {
    this.requireConnector(name)
    await this.configStore.putTargetState(name, 'STARTED')
  }

  /** KIP-875: stopped, with no tasks (their configs are emptied), so its offsets may be changed. */
  async stopConnector(name: string): Promise<void> {
    if (!this.isLeader) throw new NotLeaderError(this.leaderUrl)
    this.requireConnector(name)
    await this.inLoop(async () => {
      await this.configStore.putTargetState(name, 'STOPPED')
      await this.configStore.putTaskConfigs(name, [])
    })
  }

  /** Restarts through a restart request record; returns the status to answer 202 with (or null: 204). */
  async restartConnector(name: string, includeTasks: boolean, onlyFailed: boolean): Promise<ConnectorStateInfo | null> {
    if (!this.isLeader) throw new NotLeaderError(this.leaderUrl)
    const before = this.connectorStatus(name)
    await this.configStore.putRestartRequest({ connector: name, includeTasks, onlyFailed })
    if (!includeTasks && !onlyFailed) return null
    const restarting = (s: StateInfo): boolean => !onlyFailed || s.state === 'FAILED'
    return {
      ...before,
      connector: restarting(before.connector) ? { ...before.connector, state: 'RESTARTING' } : before.connector,
      tasks: before.tasks.map((t) => (includeTasks && restarting(t) ? { ...t, state: 'RESTARTING' as State } : t)),
    }
  }

  /** Restarts one task where it runs; returns the URL to forward to when it runs elsewhere. */
  async restartTask(name: string, task: number): Promise<string | null> {
    const { snap, props } = this.requireConnector(name)
    const tc = snap.taskConfigs.get(name)?.[task]
    if (tc === undefined) throw new HerderError(404, `Unknown task ${name}-${task}`)
    if (this.assignment.tasks.some((t) => t.connector === name && t.task === task)) {
      await this.inLoop(async () => {
        const id = { connector: name, task }
        await this.worker.stopTask(id)
        await this.worker.startTask(id, props, tc, snap.targetStates.get(name) === 'PAUSED' ? 'PAUSED' : 'STARTED')
      })
      return null
    }
    const owner = this.status.tasks(name).get(task)?.workerId
    if (owner === undefined || owner === '' || owner === this.workerId) throw new HerderError(409, `Cannot complete request because of a conflicting operation (e.g. worker rebalance): task ${name}-${task} is not assigned`)
    return `http://${owner}`
  }

  /** PUT /admin/loggers/{l}?scope=cluster: every worker applies it (through the config topic). */
  async setClusterLoggerLevel(namespace: string, level: string): Promise<void> {
    await this.configStore.putLoggerLevel(namespace, level)
  }

  activeTopics(name: string): string[] {
    this.requireConnector(name)
    return this.status.topics(name)
  }

  async resetActiveTopics(name: string): Promise<void> {
    this.requireConnector(name)
    await this.status.deleteTopics(name)
  }

  private sinkGroup(name: string, props: Record<string, string>): string {
    return props['consumer.override.group.id'] ?? this.config.originals['consumer.group.id'] ?? `connect-${name}`
  }

  /** KIP-875: GET /connectors/{c}/offsets. */
  async connectorOffsets(name: string): Promise<{ offsets: { partition: Record<string, unknown>; offset: Record<string, unknown> }[] }> {
    const { props } = this.requireConnector(name)
    if (this.worker.connectorType(props) === 'sink') {
      const admin = new Admin(this.worker.clientOptions)
      try {
        const offsets = await admin.fetchOffsets(this.sinkGroup(name, props))
        return {
          offsets: [...offsets].map(([k, o]) => {
            const [topic, p] = k.split('\u0000')
            return { partition: { kafka_topic: topic, kafka_partition: Number(p) }, offset: { kafka_offset: o } }
          }).sort((a, b) => String(a.partition.kafka_topic).localeCompare(String(b.partition.kafka_topic)) || a.partition.kafka_partition - b.partition.kafka_partition),
        }
      } finally {
        await admin.close()
      }
    }
    await this.offsets.readToEnd()
    return { offsets: this.offsets.partitionsOf(name).map(({ partition, offset }) => ({ partition, offset })) }
  }

  /** KIP-875: PATCH (alter) or DELETE (reset) of a stopped connector's offsets. */
  async modifyOffsets(name: string, offsets: { partition: Record<string, unknown>; offset: Record<string, unknown> | null }[] | null): Promise<string> {
    if (!this.isLeader) throw new NotLeaderError(this.leaderUrl)
    const { snap, props } = this.requireConnector(name)
    if (snap.targetStates.get(name) !== 'STOPPED') {
      throw new HerderError(400, `Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/${name}/stop' endpoint`)
    }
    await this.awaitTasksStopped(name)
    const connector = this.plugins.newConnector(props['connector.class'] ?? '')
    const reset = offsets === null
    if (this.worker.connectorType(props) === 'sink') {
      const group = this.sinkGroup(name, props)
      const admin = new Admin(this.worker.clientOptions)
      try {
        if (reset) {
          await admin.deleteGroups([group]).catch((err) => {
            if (!/GROUP_ID_NOT_FOUND|does not exist/i.test((err as Error).message)) throw err
          })
        } else {
          const list = offsets.map((o) => {
            const topic = o.partition['kafka_topic']
            const partition = o.partition['kafka_partition']
            if (typeof topic !== 'string' || typeof partition !== 'number') throw new HerderError(400, 'Sink connector offsets need partitions of the form {"kafka_topic": string, "kafka_partition": int}')
            const off = o.offset?.['kafka_offset']
            if (o.offset === null) throw new HerderError(400, 'Resetting a single partition of a sink connector is not supported: reset all its offsets with DELETE')
            if (typeof off !== 'number' || off < 0) throw new HerderError(400, 'Sink connector offsets need {"kafka_offset": a non-negative integer}')
            return { topic, partition, offset: off }
          })
          const sink = connector as { alterOffsets?: (p: Record<string, string>, o: Map<{ topic: string; partition: number }, number | null>) => unknown }
          if (sink.alterOffsets !== undefined) await sink.alterOffsets(props, new Map(list.map((l) => [{ topic: l.topic, partition: l.partition }, l.offset])))
          await admin.commitOffsets(group, list)
        }
      } finally {
        await admin.close()
      }
    } else {
      const entries = reset ? this.offsets.partitionsOf(name).map((p) => ({ partition: p.partition, offset: null })) : offsets
      const source = connector as SourceConnector
      if (source.alterOffsets !== undefined) {
        try {
          await source.alterOffsets(props, new Map(entries.map((e) => [e.partition, e.offset])))
        } catch (err) {
          throw new HerderError(400, `Failed to alter offsets: ${(err as Error).message}`)
        }
      }
      await this.offsets.set(entries.map((e) => ({ connector: name, partition: e.partition, offset: e.offset })))
    }
    return reset ? 'The offsets for this connector have been reset successfully' : 'The offsets for this connector have been altered successfully'
  }

  /**
   * A stopped connector's tasks may still be finishing (their last offset commit follows the emptied task
   * configs through the config topic): offsets are changed only once every task of a live worker has
   * reported that it stopped, so a late commit cannot overwrite the change. 409 if they take longer than
   * task.shutdown.graceful.timeout.ms and some more.
   */
  private async awaitTasksStopped(name: string): Promise<void> {
    const deadline = Date.now() + (this.config.values['task.shutdown.graceful.timeout.ms'] as number) + 5000
    for (;;) {
      await this.status.readToEnd()
      const running = [...this.status.tasks(name)].filter(([, s]) => (s.state === 'RUNNING' || s.state === 'PAUSED' || s.state === 'RESTARTING') && this.isLiveWorker(s.workerId))
      if (running.length === 0) return
      if (Date.now() > deadline) throw new HerderError(409, `Cannot complete request because of a conflicting operation (e.g. worker rebalance): tasks ${running.map(([t]) => `${name}-${t}`).join(', ')} have not stopped yet`)
      await sleep(100)
    }
  }

  /** Whether a worker id belongs to a current member (a dead worker's statuses stay as it left them). */
  protected isLiveWorker(workerId: string): boolean {
    return workerId === this.workerId
  }

  abstract start(): Promise<void>
  abstract stop(): Promise<void>
}

// ---- distributed ----

export class DistributedHerder extends Herder {
  private member: GroupMember | null = null
  private cluster: Cluster | null = null
  private readonly assignor: ConnectAssignor
  private readonly mode: ProtocolMode
  private leaderId = ''
  /** The members' REST URLs at the last assignment this worker made as leader. */
  private memberUrls = new Set<string>()
  private leaderRestUrl: string | null = null
  private rejoinRequested = true
  private rejoinAt = 0
  private generationId = -1
  private readonly groupId: string
  private readonly eos: boolean

  constructor(o: HerderOptions) {
    super(o)
    this.mode = String(o.config.values['connect.protocol']).toLowerCase() as ProtocolMode
    this.assignor = new ConnectAssignor(o.config.values['scheduled.rebalance.max.delay.ms'] as number)
    this.groupId = o.config.values['group.id'] as string
    this.eos = String(o.config.values['exactly.once.source.support']).toLowerCase() === 'enabled'
  }

  get isLeader(): boolean {
    return this.member !== null && this.leaderId !== '' && this.leaderId === this.member.memberId && this.member.generationId >= 0
  }

  get leaderUrl(): string | null {
    return this.leaderRestUrl
  }

  get generation(): number {
    return this.generationId
  }

  protected override exactlyOnceGroupId(): string | null {
    return this.eos ? this.groupId : null
  }

  protected requestRebalance(): void {
    this.rejoinRequested = true
    this.wakeLoop()
  }

  private wakeLoop(): void {
    this.enqueue(async () => {})
  }

  async start(): Promise<void> {
    await this.configStore.start()
    await this.status.start()
    await this.offsets.start()
    const c = this.config.values
    this.cluster = new Cluster(this.worker.clientOptions)
    this.member = new GroupMember(this.cluster, {
      groupId: this.groupId,
      sessionTimeoutMs: c['session.timeout.ms'] as number,
      rebalanceTimeoutMs: c['rebalance.timeout.ms'] as number,
      heartbeatIntervalMs: c['heartbeat.interval.ms'] as number,
    })
    this.running = true
    this.loop = this.runLoop()
  }

  private protocol(): GroupProtocol {
    const cooperative = this.mode !== 'eager'
    return {
      protocolType: CONNECT_PROTOCOL_TYPE,
      protocols: () => {
        const configOffset = this.snapshot().offset
        return offeredProtocols(this.mode).map((name) => ({
          name,
          metadata: encodeMetadata({
            url: this.url,
            configOffset,
            allocation: cooperative && protocolVersion(name) >= 1 ? { version: protocolVersion(name), error: 0, leader: this.leaderId, leaderUrl: this.leaderRestUrl ?? '', configOffset, assigned: this.assignment, revoked: { connectors: [], tasks: [] }, delayMs: 0 } : null,
          }, name),
        }))
      },
      assign: async (protocolName, leaderId, members) => this.leaderAssign(protocolName, leaderId, members),
    }
  }

  protected override isLiveWorker(workerId: string): boolean {
    if (workerId === this.workerId) return true
    for (const u of this.memberUrls) {
      try {
        if (new URL(u).host === workerId) return true
      } catch {
        // not a URL: not this worker
      }
    }
    return false
  }

  private async leaderAssign(protocolName: string, leaderId: string, members: readonly { memberId: string; metadata: Buffer }[]): Promise<Map<string, Buffer>> {
    await this.configStore.readToEnd()
    const snap = this.snapshot()
    const states = members.map((m) => ({ memberId: m.memberId, state: decodeMetadata(m.metadata) }))
    this.memberUrls = new Set(states.map((s) => s.state.url))
    const leaderUrl = states.find((s) => s.memberId === leaderId)?.state.url ?? this.url
    const maxOffset = Math.max(...states.map((s) => s.state.configOffset))
    const version = protocolVersion(protocolName)
    if (maxOffset > snap.offset) {
      // A member read further than the leader could: everyone reads to the end and rejoins.
      const mismatch: ConnectAssignment = { version, error: ASSIGNMENT_CONFIG_MISMATCH, leader: leaderId, leaderUrl, configOffset: snap.offset, assigned: { connectors: [], tasks: [] }, revoked: { connectors: [], tasks: [] }, delayMs: 0 }
      return new Map(states.map((s) => [s.memberId, encodeAssignment(mismatch)]))
    }
    const result = this.assignor.assign(protocolName, leaderId, leaderUrl, snap.offset, states, this.configuredWork(snap))
    return new Map([...result].map(([id, a]) => [id, encodeAssignment(a)]))
  }

  protected async tick(): Promise<void> {
    const m = this.member!
    if (m.heartbeatError !== null) {
      this.log.warn({ err: m.heartbeatError.message }, 'group heartbeat failed; rejoining')
      m.heartbeatError = null
      m.needsRejoin = true
    }
    const due = this.rejoinAt > 0 && Date.now() >= this.rejoinAt
    if (!m.needsRejoin && !this.rejoinRequested && !due) return
    if (due) this.rejoinAt = 0
    this.rejoinRequested = false
    await this.rebalance()
  }

  private async rebalance(): Promise<void> {
    this.rebalancing = true
    try {
      await this.rebalanceRound()
    } finally {
      this.rebalancing = false
    }
  }

  private async rebalanceRound(): Promise<void> {
    const m = this.member!
    const cooperative = this.mode !== 'eager'
    let bytes: Buffer
    try {
      if (!cooperative) {
        // Eager: everything is released before joining.
        await this.applyAssignment({ connectors: [], tasks: [] }, this.assignment)
      }
      bytes = await m.joinWith(this.protocol())
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'joining the Connect group failed; retrying')
      this.rejoinRequested = true
      await sleep(1000)
      return
    }
    const a = bytes.length > 0 ? decodeAssignment(bytes) : null
    this.generationId = m.generationId
    if (a === null) {
      this.rejoinRequested = true
      return
    }
    const wasLeader = this.leaderId === m.memberId
    this.leaderId = a.leader
    this.leaderRestUrl = a.leaderUrl
    if (!this.isLeader && wasLeader) this.assignor.reset()
    if (a.error === ASSIGNMENT_CONFIG_MISMATCH) {
      await this.configStore.readToEnd()
      this.rejoinRequested = true
      return
    }
    if (this.snapshot().offset < a.configOffset) await this.configStore.readToEnd()
    if (a.version === 0) {
      // Eager: the assignment is everything this worker runs.
      await this.applyAssignment(a.assigned, { connectors: [], tasks: [] })
    } else {
      await this.applyAssignment(a.assigned, a.revoked)
      if (a.revoked.connectors.length > 0 || a.revoked.tasks.length > 0) this.rejoinRequested = true
    }
    if (a.delayMs > 0) this.rejoinAt = Date.now() + a.delayMs
    this.ready = true
    this.onRebalanceCompleted?.()
    this.log.info({ generation: this.generationId, leader: this.isLeader, connectors: this.assignment.connectors, tasks: this.assignment.tasks.map(taskIdString), delayMs: a.delayMs }, 'joined the Connect group')
  }

  protected async writeTaskConfigs(name: string, configs: Record<string, string>[]): Promise<void> {
    if (this.isLeader) {
      await this.putTaskConfigsAsLeader(name, configs)
      return
    }
    const leader = this.leaderRestUrl
    if (leader === null) throw new Error('no leader known')
    const path = `/connectors/${encodeURIComponent(name)}/tasks`
    const body = JSON.stringify(configs)
    // No caller stands behind this request: with REST authentication on it is signed instead (rest-auth.ts).
    const headers = { 'Content-Type': 'application/json', ...this.signer?.sign('POST', path, body) }
    const res = await fetchWithTls(`${leader}${path}?forward=true`, { method: 'POST', headers, body, signal: AbortSignal.timeout(30000) }, this.peerTls)
    if (!res.ok) throw new Error(`the leader refused the task configs: HTTP ${res.status} ${await res.text()}`)
  }

  async stop(): Promise<void> {
    if (!this.running) return
    this.running = false
    this.enqueue(async () => {})
    await this.loop?.catch(() => {})
    await this.worker.stopAll()
    await this.member?.leave().catch(() => {})
    await this.cluster?.close().catch(() => {})
    await this.offsets.stop().catch(() => {})
    await this.status.stop().catch(() => {})
    await this.configStore.stop().catch(() => {})
  }
}

// ---- standalone ----

export class StandaloneHerder extends Herder {
  private dirty = true

  get isLeader(): boolean {
    return true
  }

  get leaderUrl(): string | null {
    return this.url
  }

  get generation(): number {
    return 0
  }

  protected requestRebalance(): void {
    this.dirty = true
    this.enqueue(async () => {})
  }

  async start(): Promise<void> {
    await this.configStore.start()
    await this.status.start()
    await this.offsets.start()
    this.running = true
    this.ready = true
    this.loop = this.runLoop()
  }

  /** Runs everything configured here (what a one-member group's leader would assign). */
  protected async tick(): Promise<void> {
    if (!this.dirty) return
    this.dirty = false
    const target = this.configuredWork(this.snapshot())
    const tk = new Set(target.tasks.map(taskIdString))
    const revoked: ConnectorsAndTasks = {
      connectors: this.assignment.connectors.filter((c) => !target.connectors.includes(c)),
      tasks: this.assignment.tasks.filter((t) => !tk.has(taskIdString(t))),
    }
    await this.applyAssignment(target, revoked)
  }

  protected async writeTaskConfigs(name: string, configs: Record<string, string>[]): Promise<void> {
    await this.putTaskConfigsAsLeader(name, configs)
  }

  async stop(): Promise<void> {
    if (!this.running) return
    this.running = false
    this.enqueue(async () => {})
    await this.loop?.catch(() => {})
    await this.worker.stopAll()
    await this.offsets.stop().catch(() => {})
    await this.status.stop().catch(() => {})
    await this.configStore.stop().catch(() => {})
  }
}
