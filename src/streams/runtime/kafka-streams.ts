// KafkaStreams: an instance of a Streams application (Kafka's KafkaStreams). start() checks the topology
// against the cluster (input topics, co-partitioning), creates the internal topics, brings the global
// stores up to date and starts num.stream.threads stream threads, each a member of the consumer group
// named application.id. Instances of one application on other machines (or processes) join the same
// group and share the tasks; the leader's assignor (assignor.ts) keeps stateful tasks where their state
// is. States, as Kafka's:
//   CREATED -> REBALANCING <-> RUNNING -> PENDING_SHUTDOWN -> NOT_RUNNING
//   any -> PENDING_ERROR -> ERROR   (a thread died and the uncaught exception handler said SHUTDOWN_CLIENT)
// Threads run on the one event loop (see docs/streams.md: measured against worker threads on this machine).
// Interactive queries: store() reads the local stores of running tasks; queryMetadataForKey() names the
// instance (application.server) that hosts a key, from the assignment's host information.
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { join } from 'node:path'
import { Admin } from '../../client/admin.js'
import type { AssignorMember, MemberAssignment } from '../../client/group.js'
import { murmur2, toPositive } from '../../client/murmur2.js'
import { LATEST_TIMESTAMP, listOffsets, tpKey } from '../../client/offsets.js'
import { InvalidStateStoreException, StreamsException, StreamsNotStartedException } from '../core/errors.js'
import { KeyValue } from '../core/record.js'
import type { Serializer } from '../core/serdes.js'
import type { Topology } from '../processor/topology.js'
import { OffsetCheckpoint } from '../state/checkpoint.js'
import type { KeyValueStore, ReadOnlyKeyValueStore, ReadOnlySessionStore, ReadOnlyWindowStore, SessionStore, StateStore, WindowStore, Windowed } from '../state/stores.js'
import type { InternalStore } from '../state/typed.js'
import { assignTasks, type AssignmentInfo } from './assignor.js'
import { StreamsConfig, type StreamsConfigInput } from './config.js'
import { GlobalStreamThread } from './global-thread.js'
import { changelogTopicName, ensureInternalTopics, planTopology, repartitionTopicName, type TopologyPlan } from './internal-topics.js'
import { StreamThread, newProcessId, type ThreadHost } from './stream-thread.js'

export type KafkaStreamsState = 'CREATED' | 'REBALANCING' | 'RUNNING' | 'PENDING_SHUTDOWN' | 'NOT_RUNNING' | 'PENDING_ERROR' | 'ERROR'

/** What the uncaught exception handler answers (Kafka's StreamThreadExceptionResponse). */
export type StreamThreadExceptionResponse = 'REPLACE_THREAD' | 'SHUTDOWN_CLIENT' | 'SHUTDOWN_APPLICATION'

export type StateListener = (newState: KafkaStreamsState, oldState: KafkaStreamsState) => void

export interface HostInfo {
  host: string
  port: number
}

/** Where a key of a store lives (Kafka's KeyQueryMetadata); activeHost null when unknown. */
export interface KeyQueryMetadata {
  activeHost: HostInfo | null
  standbyHosts: HostInfo[]
  partition: number
}

export interface StreamsMetadata {
  hostInfo: HostInfo
  stateStoreNames: string[]
  topicPartitions: { topic: string; partition: number }[]
  standbyTopicPartitions: { topic: string; partition: number }[]
}

export type QueryableStoreType = 'keyValue' | 'timestampedKeyValue' | 'window' | 'session'

/** Kafka's QueryableStoreTypes. */
export const QueryableStoreTypes = {
  keyValueStore: (): QueryableStoreType => 'keyValue',
  timestampedKeyValueStore: (): QueryableStoreType => 'timestampedKeyValue',
  windowStore: (): QueryableStoreType => 'window',
  sessionStore: (): QueryableStoreType => 'session',
} as const

/** Kafka's StoreQueryParameters. */
export class StoreQueryParameters {
  private constructor(
    readonly storeName: string,
    readonly type: QueryableStoreType,
    readonly staleStoresEnabled: boolean,
    readonly partition: number | null,
  ) {}
  static fromNameAndType(storeName: string, type: QueryableStoreType): StoreQueryParameters {
    return new StoreQueryParameters(storeName, type, false, null)
  }
  /** Also read standby copies (possibly behind). */
  enableStaleStores(): StoreQueryParameters {
    return new StoreQueryParameters(this.storeName, this.type, true, this.partition)
  }
  withPartition(partition: number): StoreQueryParameters {
    return new StoreQueryParameters(this.storeName, this.type, this.staleStoresEnabled, partition)
  }
}

const PROCESS_FILE = 'kafka-streams-process-metadata'

export class KafkaStreams {
  readonly config: StreamsConfig
  private stateValue: KafkaStreamsState = 'CREATED'
  private listener: StateListener | null = null
  private handler: ((err: Error) => StreamThreadExceptionResponse) | null = null
  private readonly threads: StreamThread[] = []
  private readonly runs = new Map<StreamThread, Promise<void>>()
  private globalThread: GlobalStreamThread | null = null
  private plan: TopologyPlan | null = null
  private readonly admin: Admin
  private readonly host: ThreadHost
  private assignment: AssignmentInfo | null = null
  private nextThreadIndex = 1
  readonly processId: string
  private closing: Promise<void> | null = null

  constructor(
    readonly topology: Topology,
    config: StreamsConfigInput | StreamsConfig,
  ) {
    this.config = config instanceof StreamsConfig ? config : new StreamsConfig(config)
    const c = this.config
    this.admin = new Admin({ bootstrapServers: c.bootstrapServers, clientId: `${c.clientId}-admin`, requestTimeoutMs: c.requestTimeoutMs })
    this.processId = this.loadProcessId()
    const appId = c.applicationId
    const self = this
    this.host = {
      config: c,
      topology,
      processId: this.processId,
      get sourceTopics() {
        return [...new Set(topology.subtopologies().flatMap((s) => s.sourceTopics.map((t) => self.resolveTopic(t))))]
      },
      assign: (members, counts) => this.assign(members, counts),
      resolveTopic: (n) => this.resolveTopic(n),
      changelogTopic: (s) => changelogTopicName(appId, s),
      globalStore: (n) => this.globalThread?.store(n),
      taskDir: (id) => join(c.stateDir, appId, id),
      localTaskOffsetSums: () => this.localTaskOffsetSums(),
      onThreadState: () => this.updateState(),
      onAssignment: (info) => {
        this.assignment = info
      },
    }
  }

  private resolveTopic(name: string): string {
    return this.topology.repartitionTopics.has(name) ? repartitionTopicName(this.config.applicationId, name) : name
  }

  /** The process id is kept in the state directory so that a restarted instance keeps its tasks. */
  private loadProcessId(): string {
    const dir = join(this.config.stateDir, this.config.applicationId)
    const file = join(dir, PROCESS_FILE)
    try {
      const v = JSON.parse(readFileSync(file, 'utf8')) as { processId?: unknown }
      if (typeof v.processId === 'string' && v.processId !== '') return v.processId
    } catch {
      // none yet
    }
    const id = newProcessId()
    mkdirSync(dir, { recursive: true })
    writeFileSync(file, JSON.stringify({ processId: id }) + '\n')
    return id
  }

  get state(): KafkaStreamsState {
    return this.stateValue
  }

  setStateListener(listener: StateListener): void {
    if (this.stateValue !== 'CREATED') throw new StreamsException('a state listener can only be set before start()')
    this.listener = listener
  }

  /** What to do when a stream thread dies of an exception; without a handler the client shuts down. */
  setUncaughtExceptionHandler(handler: (err: Error) => StreamThreadExceptionResponse): void {
    if (this.stateValue !== 'CREATED') throw new StreamsException('an uncaught exception handler can only be set before start()')
    this.handler = handler
  }

  private setState(s: KafkaStreamsState): void {
    const old = this.stateValue
    if (old === s) return
    this.stateValue = s
    try {
      this.listener?.(s, old)
    } catch (err) {
      this.config.log.warn({ err: (err as Error).message }, 'the state listener threw')
    }
  }

  private updateState(): void {
    if (this.stateValue !== 'REBALANCING' && this.stateValue !== 'RUNNING') return
    const live = this.threads.filter((t) => t.state !== 'DEAD' && t.state !== 'PENDING_SHUTDOWN')
    if (live.length === 0) return
    const running = live.every((t) => t.state === 'RUNNING' && !t.restoring)
    this.setState(running ? 'RUNNING' : 'REBALANCING')
  }

  async start(): Promise<void> {
    if (this.stateValue !== 'CREATED') throw new StreamsException(`start() can only be called once, in state CREATED (the state is ${this.stateValue})`)
    this.setState('REBALANCING')
    try {
      this.plan = await this.planAgainstCluster()
      await ensureInternalTopics(this.admin, this.plan.internalTopics, this.config.replicationFactor)
      if (this.topology.globalStores.length > 0) {
        this.globalThread = new GlobalStreamThread(this.topology, this.config, this.plan.partitions)
        await this.globalThread.bootstrap()
        this.globalThread.start((err) => this.onThreadError(null, err))
      }
    } catch (err) {
      this.setState('PENDING_ERROR')
      this.setState('ERROR')
      throw err
    }
    for (let i = 0; i < this.config.numStreamThreads; i++) this.startThread()
    this.updateState()
  }

  private async planAgainstCluster(): Promise<TopologyPlan> {
    const users = new Set<string>()
    for (const sub of this.topology.subtopologies()) for (const t of sub.sourceTopics) if (!this.topology.repartitionTopics.has(t)) users.add(t)
    for (const g of this.topology.globalStores) users.add(g.topic)
    const meta = users.size > 0 ? await this.admin.cluster.refreshMetadata([...users]) : this.admin.cluster.metadata
    return planTopology(this.topology, this.config.applicationId, (t) => {
      const info = meta.topics.get(t)
      return info !== undefined && info.errorCode === 0 ? info.partitions.length : undefined
    }, this.config.topicConfigs)
  }

  private startThread(index = this.nextThreadIndex++): StreamThread {
    const thread = new StreamThread(index, this.host)
    this.threads.push(thread)
    const run = thread.run().catch((err: unknown) => this.onThreadError(thread, err as Error))
    this.runs.set(thread, run)
    return thread
  }

  private onThreadError(thread: StreamThread | null, err: Error): void {
    this.config.log.error({ thread: thread?.name ?? 'global', err: err.message }, 'a stream thread died')
    if (this.closing !== null) return
    let response: StreamThreadExceptionResponse = 'SHUTDOWN_CLIENT'
    if (this.handler !== null) {
      try {
        response = this.handler(err)
      } catch {
        response = 'SHUTDOWN_CLIENT'
      }
    }
    if (response === 'REPLACE_THREAD' && thread !== null) {
      const i = this.threads.indexOf(thread)
      if (i >= 0) this.threads.splice(i, 1)
      this.runs.delete(thread)
      this.startThread(thread.index)
      this.updateState()
      return
    }
    // SHUTDOWN_APPLICATION would also tell the other instances; here it shuts this client down.
    this.setState('PENDING_ERROR')
    this.closing = this.shutdownAll().finally(() => this.setState('ERROR'))
  }

  private async shutdownAll(): Promise<void> {
    for (const t of this.threads) t.shutdown()
    await Promise.all([...this.runs.values()])
    await this.globalThread?.stop().catch(() => {})
    await this.admin.close().catch(() => {})
  }

  /** Stops the threads (each commits and closes its tasks cleanly) and closes the clients. */
  async close(): Promise<void> {
    if (this.closing !== null) {
      await this.closing
      return
    }
    if (this.stateValue === 'CREATED') {
      this.setState('NOT_RUNNING')
      await this.admin.close().catch(() => {})
      return
    }
    this.setState('PENDING_SHUTDOWN')
    this.closing = this.shutdownAll().finally(() => this.setState('NOT_RUNNING'))
    await this.closing
  }

  /** Deletes this application's local state directory (only while not running, as Kafka's cleanUp). */
  cleanUp(): void {
    if (this.stateValue !== 'CREATED' && this.stateValue !== 'NOT_RUNNING' && this.stateValue !== 'ERROR') throw new StreamsException('cleanUp() needs a stopped instance')
    const dir = join(this.config.stateDir, this.config.applicationId)
    for (const e of existsSync(dir) ? readdirSync(dir) : []) if (e !== PROCESS_FILE) rmSync(join(dir, e), { recursive: true, force: true })
  }

  /** Adds a stream thread (Kafka's addStreamThread); returns its name. */
  addStreamThread(): string {
    if (this.stateValue !== 'RUNNING' && this.stateValue !== 'REBALANCING') throw new StreamsNotStartedException('threads can be added to a running instance only')
    return this.startThread().name
  }

  /** Stops one stream thread (its tasks go to the others at the next rebalance); returns its name. */
  async removeStreamThread(): Promise<string | null> {
    const t = this.threads.find((x) => x.state !== 'DEAD' && x.state !== 'PENDING_SHUTDOWN')
    if (t === undefined || this.threads.filter((x) => x.state !== 'DEAD').length <= 1) return null
    t.shutdown()
    await this.runs.get(t)
    this.threads.splice(this.threads.indexOf(t), 1)
    this.runs.delete(t)
    return t.name
  }

  /** Names and states of the threads (Kafka's metadataForLocalThreads). */
  metadataForLocalThreads(): { threadName: string; threadState: string }[] {
    return this.threads.map((t) => ({ threadName: t.name, threadState: t.state }))
  }

  // ---- the assignor (leader) ----

  private async assign(members: readonly AssignorMember[], counts: ReadonlyMap<string, number>): Promise<Map<string, MemberAssignment>> {
    const plan = planTopology(this.topology, this.config.applicationId, (t) => counts.get(t) ?? this.plan?.partitions.get(t), this.config.topicConfigs)
    this.plan = plan
    const appId = this.config.applicationId
    const changelogs: { task: string; topic: string; partition: number }[] = []
    for (const t of plan.tasks) {
      if (!t.stateful) continue
      const sub = this.topology.subtopologies()[Number(t.id.split('_')[0])]!
      const partition = Number(t.id.split('_')[1])
      for (const s of sub.stores) if (this.topology.stores.get(s)!.builder.loggingEnabled) changelogs.push({ task: t.id, topic: changelogTopicName(appId, s), partition })
    }
    if (changelogs.length > 0) {
      const ends = await listOffsets(this.admin.cluster, changelogs.map((c) => ({ topic: c.topic, partition: c.partition, timestamp: LATEST_TIMESTAMP })), this.config.exactlyOnce ? 1 : 0)
      const sums = new Map<string, number>()
      for (const c of changelogs) sums.set(c.task, (sums.get(c.task) ?? 0) + (ends.get(tpKey(c.topic, c.partition))?.offset ?? 0))
      for (const t of plan.tasks) t.endOffsetSum = sums.get(t.id) ?? 0
    }
    const c = this.config
    return assignTasks(members, plan.tasks, { numStandbyReplicas: c.numStandbyReplicas, acceptableRecoveryLag: c.acceptableRecoveryLag, maxWarmupReplicas: c.maxWarmupReplicas, probingRebalanceIntervalMs: c.probingRebalanceIntervalMs, now: Date.now() })
  }

  /** Offset sums of task directories with a checkpoint that no thread of this instance holds. */
  private localTaskOffsetSums(): Map<string, number> {
    const out = new Map<string, number>()
    const dir = join(this.config.stateDir, this.config.applicationId)
    if (!existsSync(dir)) return out
    const owned = new Set(this.threads.flatMap((t) => [...t.ownedTaskIds()]))
    for (const e of readdirSync(dir)) {
      if (!/^\d+_\d+$/.test(e) || owned.has(e)) continue
      const cp = new OffsetCheckpoint(join(dir, e)).read()
      if (cp.size === 0) continue
      let sum = 0
      for (const v of cp.values()) sum += v
      out.set(e, sum)
    }
    return out
  }

  // ---- interactive queries ----

  private localStores(name: string, stale: boolean, partition: number | null): (InternalStore & StateStore)[] {
    if (this.stateValue !== 'RUNNING' && this.stateValue !== 'REBALANCING') throw new StreamsNotStartedException(`the instance is ${this.stateValue}: stores can be queried while it runs`)
    const out: (InternalStore & StateStore)[] = []
    for (const t of this.threads) {
      for (const task of t.runningTasks()) {
        const s = task.stores.get(name)
        if (s !== undefined && (partition === null || task.id.partition === partition)) out.push(s)
      }
      if (stale) for (const m of t.standbyStores()) if (m.has(name) && (partition === null || m.get(name)!.logged.changelog?.partition === partition)) out.push(m.get(name)!)
    }
    const g = this.globalThread?.store(name)
    if (g !== undefined) out.push(g as InternalStore & StateStore)
    if (out.length === 0 && !this.topology.stores.has(name)) throw new InvalidStateStoreException(`the topology has no state store named '${name}'`)
    if (out.length === 0) throw new InvalidStateStoreException(`state store '${name}' is not available on this instance now (it may be restoring, or its tasks are elsewhere)`)
    return out
  }

  /** A read-only view of a store over all local tasks that hold it (Kafka's store(StoreQueryParameters)). */
  store<K = unknown, V = unknown>(params: StoreQueryParameters): ReadOnlyKeyValueStore<K, V> | ReadOnlyWindowStore<K, V> | ReadOnlySessionStore<K, V> {
    const get = (): (InternalStore & StateStore)[] => {
      const stores = this.localStores(params.storeName, params.staleStoresEnabled, params.partition)
      const want = params.type === 'timestampedKeyValue' || params.type === 'keyValue' ? ['keyValue', 'timestampedKeyValue'] : [params.type]
      for (const s of stores) if (!want.includes(s.kind)) throw new InvalidStateStoreException(`state store '${params.storeName}' is a ${s.kind} store, not a ${params.type} store`)
      return stores
    }
    const name = params.storeName
    const common = { name, persistent: () => get()[0]!.persistent(), isOpen: () => true }
    if (params.type === 'keyValue' || params.type === 'timestampedKeyValue') {
      const kv = (): KeyValueStore<K, V>[] => get() as unknown as KeyValueStore<K, V>[]
      const merged = (f: (s: KeyValueStore<K, V>) => KeyValue<K, V>[]): KeyValue<K, V>[] => kv().flatMap(f)
      const view: ReadOnlyKeyValueStore<K, V> = {
        ...common,
        get: (key) => {
          for (const s of kv()) {
            const v = s.get(key)
            if (v !== null) return v
          }
          return null
        },
        range: (from, to) => merged((s) => s.range(from, to)),
        reverseRange: (from, to) => merged((s) => s.reverseRange(from, to)),
        all: () => merged((s) => s.all()),
        reverseAll: () => merged((s) => s.reverseAll()),
        prefixScan: (prefix, ser) => merged((s) => s.prefixScan(prefix, ser)),
        approximateNumEntries: () => kv().reduce((n, s) => n + s.approximateNumEntries(), 0),
      }
      return view
    }
    if (params.type === 'window') {
      const ws = (): WindowStore<K, V>[] => get() as unknown as WindowStore<K, V>[]
      const view: ReadOnlyWindowStore<K, V> = {
        ...common,
        fetch: (key, t) => {
          for (const s of ws()) {
            const v = s.fetch(key, t)
            if (v !== null) return v
          }
          return null
        },
        fetchRange: (key, from, to) => ws().flatMap((s) => s.fetchRange(key, from, to)),
        fetchAll: (from, to) => ws().flatMap((s) => s.fetchAll(from, to)),
        all: () => ws().flatMap((s) => s.all()),
      }
      return view
    }
    const ss = (): SessionStore<K, V>[] => get() as unknown as SessionStore<K, V>[]
    const view: ReadOnlySessionStore<K, V> = {
      ...common,
      findSessions: (key: K, e: number, l: number): KeyValue<Windowed<K>, V>[] => ss().flatMap((s) => s.findSessions(key, e, l)),
      fetchSession: (key, start, end) => {
        for (const s of ss()) {
          const v = s.fetchSession(key, start, end)
          if (v !== null) return v
        }
        return null
      },
      fetch: (key) => ss().flatMap((s) => s.fetch(key)),
    }
    return view
  }

  private hostOf(endpoint: string): HostInfo {
    const i = endpoint.lastIndexOf(':')
    return { host: endpoint.slice(0, i), port: Number(endpoint.slice(i + 1)) }
  }

  /** The instance that hosts key in storeName (by application.server), and its standbys. */
  queryMetadataForKey<K>(storeName: string, key: K, keySerializer: Serializer<K>): KeyQueryMetadata {
    const sub = this.topology.subtopologies().find((s) => s.stores.includes(storeName))
    if (sub === undefined) throw new InvalidStateStoreException(`the topology has no (non-global) state store named '${storeName}'`)
    const topic = this.resolveTopic(sub.sourceTopics[0]!)
    const n = this.plan?.partitions.get(topic)
    const info = this.assignment
    if (n === undefined || info === null) return { activeHost: null, standbyHosts: [], partition: -1 }
    const bytes = keySerializer.serialize(topic, key)
    const partition = bytes === null ? 0 : toPositive(murmur2(bytes)) % n
    const tp = `${topic}:${partition}`
    const active = Object.entries(info.partitionsByHost).find(([, tps]) => tps.includes(tp))?.[0]
    const standbys = Object.entries(info.standbyPartitionsByHost).filter(([, tps]) => tps.includes(tp)).map(([e]) => this.hostOf(e))
    return { activeHost: active === undefined ? null : this.hostOf(active), standbyHosts: standbys, partition }
  }

  /** Every instance of the application with its endpoint, stores and partitions (Kafka's metadataForAllStreamsClients). */
  metadataForAllStreamsClients(): StreamsMetadata[] {
    const info = this.assignment
    if (info === null) return []
    const endpoints = new Set([...Object.keys(info.partitionsByHost), ...Object.keys(info.standbyPartitionsByHost)])
    const parse = (list: string[]): { topic: string; partition: number }[] =>
      list.map((s) => {
        const i = s.lastIndexOf(':')
        return { topic: s.slice(0, i), partition: Number(s.slice(i + 1)) }
      })
    return [...endpoints].sort().map((e) => {
      const tps = parse(info.partitionsByHost[e] ?? [])
      const topics = new Set(tps.map((t) => t.topic))
      const stores = this.topology.subtopologies().filter((s) => s.sourceTopics.some((t) => topics.has(this.resolveTopic(t)))).flatMap((s) => s.stores)
      return { hostInfo: this.hostOf(e), stateStoreNames: stores, topicPartitions: tps, standbyTopicPartitions: parse(info.standbyPartitionsByHost[e] ?? []) }
    })
  }
}
