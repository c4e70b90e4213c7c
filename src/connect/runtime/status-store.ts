// Connector and task states, and the topics each connector used: in distributed mode the status topic
// (status.storage.topic, compacted) in Kafka's KafkaStatusBackingStore formats, so any worker answers
// GET /connectors/{c}/status; in standalone mode in memory.
//
//   key status-connector-<name>             value {"state": "RUNNING", "trace": null, "worker_id": "host:port", "generation": n}
//   key status-task-<name>-<n>              value the same
//   key status-topic-<topic>:connector-<c>  value {"topic": {"name": t, "connector": c, "task": n, "discoverTimestamp": ms}}
//
// A null value deletes. A worker writes only the states of what it runs, with its generation, so a late
// write of a worker that lost the connector in a rebalance does not overwrite the new owner's (a state
// of a lower generation than the stored one from another worker is ignored, as in Kafka).
import type { ClientOptions, ConsumedRecord } from '../../client/index.js'
import { KafkaBasedLog } from './kafka-log.js'

export type State = 'UNASSIGNED' | 'RUNNING' | 'PAUSED' | 'FAILED' | 'RESTARTING' | 'STOPPED' | 'DESTROYED'

export interface Status {
  state: State
  trace: string | null
  workerId: string
  generation: number
}

export interface TopicStatus {
  topic: string
  connector: string
  task: number
  discoverTimestamp: number
}

export interface StatusStore {
  start(): Promise<void>
  stop(): Promise<void>
  readToEnd(): Promise<void>
  putConnector(name: string, s: Status): Promise<void>
  putTask(connector: string, task: number, s: Status): Promise<void>
  connector(name: string): Status | undefined
  tasks(name: string): Map<number, Status>
  deleteConnector(name: string, tasks: number): Promise<void>
  putTopic(t: TopicStatus): Promise<void>
  topics(connector: string): string[]
  deleteTopics(connector: string): Promise<void>
}

class StatusState {
  readonly connectors = new Map<string, Status>()
  readonly tasks = new Map<string, Map<number, Status>>()
  readonly topics = new Map<string, Map<string, TopicStatus>>()

  apply(key: string, value: Record<string, unknown> | null): void {
    if (key.startsWith('status-connector-')) {
      const name = key.slice('status-connector-'.length)
      const s = toStatus(value)
      if (s === null) this.connectors.delete(name)
      else if (keep(this.connectors.get(name), s)) this.connectors.set(name, s)
    } else if (key.startsWith('status-task-')) {
      const rest = key.slice('status-task-'.length)
      const dash = rest.lastIndexOf('-')
      if (dash < 0) return
      const name = rest.slice(0, dash)
      const n = Number(rest.slice(dash + 1))
      let m = this.tasks.get(name)
      if (m === undefined) this.tasks.set(name, (m = new Map()))
      const s = toStatus(value)
      if (s === null) m.delete(n)
      else if (keep(m.get(n), s)) m.set(n, s)
    } else if (key.startsWith('status-topic-')) {
      const rest = key.slice('status-topic-'.length)
      const sep = rest.lastIndexOf(':connector-')
      if (sep < 0) return
      const topic = rest.slice(0, sep)
      const connector = rest.slice(sep + ':connector-'.length)
      let m = this.topics.get(connector)
      if (m === undefined) this.topics.set(connector, (m = new Map()))
      const t = value?.['topic'] as Record<string, unknown> | undefined
      if (value === null || t === undefined) m.delete(topic)
      else m.set(topic, { topic, connector, task: Number(t['task'] ?? 0), discoverTimestamp: Number(t['discoverTimestamp'] ?? 0) })
    }
  }
}

/** A state from another worker with an older generation does not replace the stored one. */
function keep(old: Status | undefined, s: Status): boolean {
  return old === undefined || old.workerId === s.workerId || s.generation >= old.generation
}

function toStatus(v: Record<string, unknown> | null): Status | null {
  if (v === null) return null
  return { state: String(v['state']) as State, trace: typeof v['trace'] === 'string' ? v['trace'] : null, workerId: String(v['worker_id'] ?? ''), generation: Number(v['generation'] ?? 0) }
}

function statusJson(s: Status): string {
  return JSON.stringify({ state: s.state, trace: s.trace, worker_id: s.workerId, generation: s.generation })
}

abstract class BaseStatusStore implements StatusStore {
  protected readonly state = new StatusState()
  abstract start(): Promise<void>
  abstract stop(): Promise<void>
  abstract readToEnd(): Promise<void>
  protected abstract write(key: string, value: string | null): Promise<void>

  async putConnector(name: string, s: Status): Promise<void> {
    this.state.apply(`status-connector-${name}`, JSON.parse(statusJson(s)))
    await this.write(`status-connector-${name}`, statusJson(s))
  }
  async putTask(connector: string, task: number, s: Status): Promise<void> {
    this.state.apply(`status-task-${connector}-${task}`, JSON.parse(statusJson(s)))
    await this.write(`status-task-${connector}-${task}`, statusJson(s))
  }
  connector(name: string): Status | undefined {
    return this.state.connectors.get(name)
  }
  tasks(name: string): Map<number, Status> {
    return new Map(this.state.tasks.get(name) ?? [])
  }
  async deleteConnector(name: string, tasks: number): Promise<void> {
    const known = Math.max(tasks, ...[...(this.state.tasks.get(name)?.keys() ?? [])].map((n) => n + 1))
    this.state.apply(`status-connector-${name}`, null)
    await this.write(`status-connector-${name}`, null)
    for (let i = 0; i < known; i++) {
      this.state.apply(`status-task-${name}-${i}`, null)
      await this.write(`status-task-${name}-${i}`, null)
    }
  }
  async putTopic(t: TopicStatus): Promise<void> {
    if (this.state.topics.get(t.connector)?.has(t.topic)) return
    const v = JSON.stringify({ topic: { name: t.topic, connector: t.connector, task: t.task, discoverTimestamp: t.discoverTimestamp } })
    this.state.apply(`status-topic-${t.topic}:connector-${t.connector}`, JSON.parse(v))
    await this.write(`status-topic-${t.topic}:connector-${t.connector}`, v)
  }
  topics(connector: string): string[] {
    return [...(this.state.topics.get(connector)?.keys() ?? [])].sort()
  }
  async deleteTopics(connector: string): Promise<void> {
    for (const t of this.topics(connector)) {
      this.state.apply(`status-topic-${t}:connector-${connector}`, null)
      await this.write(`status-topic-${t}:connector-${connector}`, null)
    }
  }
}

export class KafkaStatusStore extends BaseStatusStore {
  private readonly log: KafkaBasedLog

  constructor(client: ClientOptions, topic: string, partitions: number, replicationFactor: number, onError?: (err: unknown) => void) {
    super()
    this.log = new KafkaBasedLog({ client, topic, partitions, replicationFactor, onRecord: (r) => this.onRecord(r), onError })
  }

  private onRecord(r: ConsumedRecord): void {
    if (r.key === null) return
    let v: Record<string, unknown> | null = null
    if (r.value !== null) {
      try {
        v = JSON.parse(r.value.toString('utf8'))
      } catch {
        return
      }
    }
    this.state.apply(r.key.toString('utf8'), v)
  }

  start(): Promise<void> {
    return this.log.start()
  }
  stop(): Promise<void> {
    return this.log.stop()
  }
  readToEnd(): Promise<void> {
    return this.log.readToEnd()
  }
  protected write(key: string, value: string | null): Promise<void> {
    return this.log.send(key, value)
  }
}

export class MemoryStatusStore extends BaseStatusStore {
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async readToEnd(): Promise<void> {}
  protected async write(): Promise<void> {}
}
