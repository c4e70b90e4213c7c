// Connector configurations, task configurations and target states: in distributed mode the config topic
// (config.storage.topic, one partition, compacted) in Kafka's KafkaConfigBackingStore record formats, so
// that Kafka's tools and workers read the same topic; in standalone mode the same state in memory.
//
//   key connector-<name>         value {"properties": {...}}            (null: the connector was deleted)
//   key task-<name>-<n>          value {"properties": {...}}
//   key commit-<name>            value {"tasks": <count>}               the task configs written before it apply
//   key target-state-<name>      value {"state": "STARTED"|"PAUSED", "state.v2": "STARTED"|"PAUSED"|"STOPPED"}
//   key restart-connector-<name> value {"include-tasks": bool, "only-failed": bool}
//   key tasks-fencing-<name>     value {"task-count": n}                (exactly-once: tasks of the previous generation fenced)
//   key logger-cluster-<ns>      value {"level": "DEBUG"}
//
// Values are JSON as Kafka's JsonConverter writes them with schemas.enable=false. Task configs written
// without their commit record (a worker died between the two) are ignored until a commit comes, and
// a commit naming more tasks than were written marks the connector inconsistent until its next commit,
// as in Kafka.
import type { ConsumedRecord, ClientOptions } from '../../client/index.js'
import { KafkaBasedLog } from './kafka-log.js'

export type TargetState = 'STARTED' | 'PAUSED' | 'STOPPED'

export interface RestartRequest {
  connector: string
  includeTasks: boolean
  onlyFailed: boolean
}

export interface ConfigListener {
  onConnectorConfigUpdate(name: string): void
  onConnectorConfigRemove(name: string): void
  onTaskConfigUpdate(connectors: string[]): void
  onConnectorTargetStateChange(name: string): void
  onRestartRequest(req: RestartRequest): void
  onLoggerLevel?(namespace: string, level: string): void
}

/** A consistent view of the configs (Kafka's ClusterConfigState). */
export interface ClusterConfigState {
  /** Offset of the next config record (the one after the last read); -1 before any. */
  offset: number
  connectorConfigs: Map<string, Record<string, string>>
  targetStates: Map<string, TargetState>
  /** Committed task configs: connector -> configs by task number. */
  taskConfigs: Map<string, Record<string, string>[]>
  inconsistent: Set<string>
  taskCountRecords: Map<string, number>
  /** Increments with every task commit of a connector (task config generation). */
  taskGenerations: Map<string, number>
}

export interface ConfigStore {
  start(): Promise<void>
  stop(): Promise<void>
  readToEnd(): Promise<void>
  snapshot(): ClusterConfigState
  setListener(l: ConfigListener): void
  putConnectorConfig(name: string, props: Record<string, string>, targetState: TargetState | null): Promise<void>
  removeConnectorConfig(name: string): Promise<void>
  putTaskConfigs(name: string, configs: Record<string, string>[]): Promise<void>
  putTargetState(name: string, state: TargetState): Promise<void>
  putRestartRequest(req: RestartRequest): Promise<void>
  putTaskCountRecord(name: string, count: number): Promise<void>
  putLoggerLevel(namespace: string, level: string): Promise<void>
}

/** The state machine both stores share: applies records in order and tells the listener. */
class ConfigState {
  offset = -1
  readonly connectorConfigs = new Map<string, Record<string, string>>()
  readonly targetStates = new Map<string, TargetState>()
  readonly taskConfigs = new Map<string, Record<string, string>[]>()
  readonly deferred = new Map<string, Map<number, Record<string, string>>>()
  readonly inconsistent = new Set<string>()
  readonly taskCountRecords = new Map<string, number>()
  readonly taskGenerations = new Map<string, number>()
  listener: ConfigListener | null = null

  snapshot(): ClusterConfigState {
    return {
      offset: this.offset,
      connectorConfigs: new Map([...this.connectorConfigs].map(([k, v]) => [k, { ...v }])),
      targetStates: new Map(this.targetStates),
      taskConfigs: new Map([...this.taskConfigs].map(([k, v]) => [k, v.map((c) => ({ ...c }))])),
      inconsistent: new Set(this.inconsistent),
      taskCountRecords: new Map(this.taskCountRecords),
      taskGenerations: new Map(this.taskGenerations),
    }
  }

  apply(key: string, value: Record<string, unknown> | null, offset: number): void {
    this.offset = offset + 1
    const l = this.listener
    if (key.startsWith('connector-')) {
      const name = key.slice('connector-'.length)
      if (value === null) {
        const existed = this.connectorConfigs.delete(name)
        this.targetStates.delete(name)
        this.taskConfigs.delete(name)
        this.deferred.delete(name)
        this.inconsistent.delete(name)
        if (existed) l?.onConnectorConfigRemove(name)
        return
      }
      const props = value['properties']
      if (typeof props !== 'object' || props === null) return
      this.connectorConfigs.set(name, stringMap(props as Record<string, unknown>))
      if (!this.targetStates.has(name)) this.targetStates.set(name, 'STARTED')
      l?.onConnectorConfigUpdate(name)
    } else if (key.startsWith('task-')) {
      const rest = key.slice('task-'.length)
      const dash = rest.lastIndexOf('-')
      if (dash < 0 || value === null) return
      const name = rest.slice(0, dash)
      const n = Number(rest.slice(dash + 1))
      const props = value['properties']
      if (!Number.isInteger(n) || typeof props !== 'object' || props === null) return
      let d = this.deferred.get(name)
      if (d === undefined) this.deferred.set(name, (d = new Map()))
      d.set(n, stringMap(props as Record<string, unknown>))
    } else if (key.startsWith('commit-')) {
      const name = key.slice('commit-'.length)
      if (value === null) return
      const count = Number(value['tasks'])
      const d = this.deferred.get(name) ?? new Map<number, Record<string, string>>()
      const configs: Record<string, string>[] = []
      let complete = true
      for (let i = 0; i < count; i++) {
        const c = d.get(i)
        if (c === undefined) complete = false
        else configs.push(c)
      }
      this.deferred.delete(name)
      if (!complete) {
        this.inconsistent.add(name)
        return
      }
      this.inconsistent.delete(name)
      this.taskConfigs.set(name, configs)
      this.taskGenerations.set(name, (this.taskGenerations.get(name) ?? 0) + 1)
      l?.onTaskConfigUpdate([name])
    } else if (key.startsWith('target-state-')) {
      const name = key.slice('target-state-'.length)
      if (value === null) {
        this.targetStates.delete(name)
        return
      }
      const s = String(value['state.v2'] ?? value['state'])
      if (s !== 'STARTED' && s !== 'PAUSED' && s !== 'STOPPED') return
      this.targetStates.set(name, s)
      l?.onConnectorTargetStateChange(name)
    } else if (key.startsWith('restart-connector-')) {
      if (value === null) return
      l?.onRestartRequest({ connector: key.slice('restart-connector-'.length), includeTasks: value['include-tasks'] === true, onlyFailed: value['only-failed'] === true })
    } else if (key.startsWith('tasks-fencing-')) {
      const name = key.slice('tasks-fencing-'.length)
      if (value === null) this.taskCountRecords.delete(name)
      else this.taskCountRecords.set(name, Number(value['task-count']))
    } else if (key.startsWith('logger-cluster-')) {
      if (value !== null && typeof value['level'] === 'string') l?.onLoggerLevel?.(key.slice('logger-cluster-'.length), value['level'])
    }
  }
}

function stringMap(o: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(o)) if (v !== null && v !== undefined) out[k] = String(v)
  return out
}

/** The records a change is written as (the same for both stores). */
function records(kind: 'connector' | 'remove' | 'tasks' | 'target' | 'restart' | 'fencing' | 'logger', name: string, arg?: unknown): [string, Record<string, unknown> | null][] {
  switch (kind) {
    case 'connector': {
      const { props, targetState } = arg as { props: Record<string, string>; targetState: TargetState | null }
      const out: [string, Record<string, unknown> | null][] = []
      if (targetState !== null) out.push(...records('target', name, targetState))
      out.push([`connector-${name}`, { properties: props }])
      return out
    }
    case 'remove':
      return [[`connector-${name}`, null], [`target-state-${name}`, null]]
    case 'tasks': {
      const configs = arg as Record<string, string>[]
      return [...configs.map((c, i): [string, Record<string, unknown>] => [`task-${name}-${i}`, { properties: c }]), [`commit-${name}`, { tasks: configs.length }]]
    }
    case 'target': {
      const s = arg as TargetState
      // Older readers know only STARTED and PAUSED: a stopped connector reads as paused there (Kafka's TARGET_STATE_V1).
      return [[`target-state-${name}`, { state: s === 'STOPPED' ? 'PAUSED' : s, 'state.v2': s }]]
    }
    case 'restart': {
      const r = arg as RestartRequest
      return [[`restart-connector-${name}`, { 'include-tasks': r.includeTasks, 'only-failed': r.onlyFailed }]]
    }
    case 'fencing':
      return [[`tasks-fencing-${name}`, { 'task-count': arg as number }]]
    case 'logger':
      return [[`logger-cluster-${name}`, { level: arg as string }]]
  }
}

/**
 * The ConfigStore's writes as Connect's config records (records(), above); where they go — the config
 * topic, or memory in standalone mode — is the subclass's write.
 */
abstract class RecordConfigStore {
  protected abstract write(list: [string, Record<string, unknown> | null][]): Promise<void>

  putConnectorConfig(name: string, props: Record<string, string>, targetState: TargetState | null): Promise<void> {
    return this.write(records('connector', name, { props, targetState }))
  }
  removeConnectorConfig(name: string): Promise<void> {
    return this.write(records('remove', name))
  }
  putTaskConfigs(name: string, configs: Record<string, string>[]): Promise<void> {
    return this.write(records('tasks', name, configs))
  }
  putTargetState(name: string, state: TargetState): Promise<void> {
    return this.write(records('target', name, state))
  }
  putRestartRequest(req: RestartRequest): Promise<void> {
    return this.write(records('restart', req.connector, req))
  }
  putTaskCountRecord(name: string, count: number): Promise<void> {
    return this.write(records('fencing', name, count))
  }
  putLoggerLevel(namespace: string, level: string): Promise<void> {
    return this.write(records('logger', namespace, level))
  }
}

export class KafkaConfigStore extends RecordConfigStore implements ConfigStore {
  private readonly state = new ConfigState()
  private readonly log: KafkaBasedLog

  constructor(client: ClientOptions, topic: string, replicationFactor: number, onError?: (err: unknown) => void) {
    super()
    this.log = new KafkaBasedLog({
      client,
      topic,
      partitions: 1,
      replicationFactor,
      onRecord: (r) => this.onRecord(r),
      onError,
    })
  }

  private onRecord(r: ConsumedRecord): void {
    if (r.key === null) return
    let value: Record<string, unknown> | null = null
    if (r.value !== null) {
      try {
        const v = JSON.parse(r.value.toString('utf8'))
        value = typeof v === 'object' && v !== null ? v : null
      } catch {
        // A record another writer got wrong: skipped, as Kafka logs and skips it.
        this.state.offset = r.offset + 1
        return
      }
    }
    this.state.apply(r.key.toString('utf8'), value, r.offset)
  }

  setListener(l: ConfigListener): void {
    this.state.listener = l
  }

  async start(): Promise<void> {
    await this.log.start()
    if (this.log.partitionCount > 1) throw new Error(`Topic '${this.log.topic}' supplied via the 'config.storage.topic' property is required to have a single partition in order to guarantee consistency of connector configurations, but found ${this.log.partitionCount} partitions.`)
  }

  stop(): Promise<void> {
    return this.log.stop()
  }

  readToEnd(): Promise<void> {
    return this.log.readToEnd()
  }

  snapshot(): ClusterConfigState {
    return this.state.snapshot()
  }

  protected async write(list: [string, Record<string, unknown> | null][]): Promise<void> {
    for (const [k, v] of list) await this.log.send(k, v === null ? null : JSON.stringify(v), 0)
    await this.log.readToEnd()
  }

}

/** Standalone mode: the same state in memory (connector configs come from the command line and REST). */
export class MemoryConfigStore extends RecordConfigStore implements ConfigStore {
  private readonly state = new ConfigState()
  private next = 0

  setListener(l: ConfigListener): void {
    this.state.listener = l
  }
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async readToEnd(): Promise<void> {}
  snapshot(): ClusterConfigState {
    return this.state.snapshot()
  }

  protected async write(list: [string, Record<string, unknown> | null][]): Promise<void> {
    for (const [k, v] of list) this.state.apply(k, v === null ? null : JSON.parse(JSON.stringify(v)), this.next++)
  }

}
