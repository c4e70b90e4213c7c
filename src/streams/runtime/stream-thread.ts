// A stream thread (Kafka's StreamThread): one member of the application's consumer group, with its own
// consumer, producer and restore consumer, running its active tasks and standby tasks. Threads are
// logical: several run on one event loop (num.stream.threads), each an async loop of
//   poll -> restore changelogs / update standbys -> process queued records -> punctuate -> commit.
// Rebalances are eager: before rejoining, the thread commits and suspends its tasks (stores stay open);
// the new assignment resumes the tasks it keeps, closes (with a checkpoint) the ones it lost, restores
// new ones from their changelogs starting at the checkpointed offsets, and turns standbys it now runs
// into active tasks without restoring what they already hold.
//
// Commits: at_least_once sends the stores' changelog entries, waits for every produced record to be
// acknowledged, commits the input offsets, then makes the stores durable and writes .checkpoint files.
// exactly_once_v2 keeps a transaction open on the thread's transactional producer
// ('<application.id>-<process id>-<thread index>'): changelog entries, output records and the input
// offsets (sendOffsetsToTransaction with the consumer's group metadata, so a member that lost its
// generation is refused) are committed in one EndTxn every commit.interval.ms; the consumers read
// read_committed. A fenced producer or a lost generation closes the tasks without committing (their
// open transaction is aborted) and rejoins the group; a restart after a crash finds no checkpoint
// under exactly_once_v2 (it is deleted while a task runs) and rebuilds the stores from the changelogs.
import { randomUUID } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { applyConsumerProps, applyProducerProps } from '../../client/client-config.js'
import { Consumer, type ConsumerOptions, type TopicPartition } from '../../client/consumer.js'
import { ProducerStateError } from '../../client/errors.js'
import { listOffsets, EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, tpKey } from '../../client/offsets.js'
import { Producer, type BatchDeliveryCallback, type BatchDelivery, type ProducerOptions } from '../../client/producer.js'
import type { ConsumedRecord, Header } from '../../client/record-batches.js'
import { ErrorCode, KafkaError, errorName } from '../../domain/errors.js'
import { StreamsException, TaskMigratedException } from '../core/errors.js'
import type { Subtopology, Topology } from '../processor/topology.js'
import { OffsetCheckpoint } from '../state/checkpoint.js'
import { ThreadCache } from '../state/caching.js'
import type { StateStore } from '../state/stores.js'
import type { InternalStore } from '../state/typed.js'
import { RUNNING_OFFSET_SUM, decodeAssignmentInfo, encodeInfo, type AssignmentInfo, type SubscriptionInfo } from './assignor.js'
import type { StreamsConfig } from './config.js'
import { StreamTask, type RecordCollector, type SendListener, type TaskEnvironment } from './task.js'
import type { GroupAssignor } from '../../client/group.js'

export type ThreadState = 'CREATED' | 'STARTING' | 'PARTITIONS_REVOKED' | 'PARTITIONS_ASSIGNED' | 'RUNNING' | 'PENDING_SHUTDOWN' | 'DEAD'

/** What a thread needs from its KafkaStreams instance. */
export interface ThreadHost {
  config: StreamsConfig
  topology: Topology
  processId: string
  /** Source topics the group subscribes to (real names). */
  sourceTopics: string[]
  /** The Streams assignor's work, run when this thread's member leads the group. */
  assign: GroupAssignor['assign']
  resolveTopic(name: string): string
  changelogTopic(store: string): string
  globalStore(name: string): StateStore | undefined
  taskDir(taskId: string): string
  /** Offset sums of the task directories on disk that no thread of this instance owns. */
  localTaskOffsetSums(): Map<string, number>
  onThreadState(thread: StreamThread): void
  /** Assignment info of the last rebalance (for interactive queries). */
  onAssignment(info: AssignmentInfo): void
}

/** A changelog partition being restored or followed, and where it is. */
interface ChangelogState {
  task: string
  store: string
  topic: string
  partition: number
  /** Next offset to read (after what the store holds). */
  position: number
  /** Restoration is done once position reaches this (active tasks); -1 for standbys. */
  end: number
}

interface ActiveEntry {
  task: StreamTask
  restoring: boolean
}

/**
 * The records a thread has handed to its producer and not seen acknowledged, for the error reports of
 * the ones that fail (the production exception handler gets the record). A record takes a slot, whose
 * number rides with it through the producer as its ctx; slots are reused once acknowledged, so that a
 * send allocates nothing (a closure per record was a tenth of the garbage of a stateless topology).
 */
class InFlightRecords {
  private readonly keys: (Buffer | null)[] = []
  private readonly values: (Buffer | null)[] = []
  /** The partition the sender asked for, -1 for the key's. */
  private readonly partitions: number[] = []
  private readonly listeners: (SendListener | null)[] = []
  private readonly free: number[] = []

  take(key: Buffer | null, value: Buffer | null, partition: number | undefined, listener: SendListener): number {
    const slot = this.free.length > 0 ? this.free.pop()! : this.keys.length
    this.keys[slot] = key
    this.values[slot] = value
    this.partitions[slot] = partition ?? -1
    this.listeners[slot] = listener
    return slot
  }

  /** Frees the slots of delivered records; on failure tells each record's listener first. */
  settle(err: Error | null, d: BatchDelivery): void {
    for (let i = d.from; i < d.to; i++) {
      const slot = d.ctxs[i]!
      if (err !== null) {
        const p = this.partitions[slot]!
        this.listeners[slot]?.onError(err, d.topic, p < 0 ? undefined : p, this.keys[slot]!, this.values[slot]!, d.timestamps[i]!)
      }
      this.keys[slot] = null
      this.values[slot] = null
      this.listeners[slot] = null
      this.free.push(slot)
    }
  }
}

interface StandbyEntry {
  id: string
  stores: Map<string, InternalStore & StateStore>
}

export class StreamThread {
  readonly name: string
  state: ThreadState = 'CREATED'
  private readonly consumer: Consumer
  private readonly restoreConsumer: Consumer
  private producer: Producer
  private readonly active = new Map<string, ActiveEntry>()
  private readonly standby = new Map<string, StandbyEntry>()
  /** Tasks revoked by the last rebalance and not reassigned yet. */
  private readonly suspended = new Map<string, ActiveEntry>()
  private readonly suspendedStandby = new Map<string, StandbyEntry>()
  private readonly changelogs = new Map<string, ChangelogState>()
  private stopping = false
  private lastCommit = Date.now()
  private sentSinceCommit = false
  private transactionOpen = false
  private probingAt: number | null = null
  private readonly pendingSends = new Set<Promise<unknown>>()
  private readonly collector: RecordCollector
  private readonly inFlight = new InFlightRecords()
  /** The record caches' budget of this thread (Kafka splits statestore.cache.max.bytes evenly over the threads). */
  private readonly cache: ThreadCache
  /** One producer callback per listener, made on its first send (the last one used is kept at hand). */
  private readonly deliveryCallbacks = new WeakMap<SendListener, BatchDeliveryCallback>()
  private lastListener: SendListener | null = null
  private lastCallback: BatchDeliveryCallback | null = null
  private readonly log

  constructor(
    readonly index: number,
    private readonly host: ThreadHost,
  ) {
    const c = host.config
    this.name = `${c.clientId}-StreamThread-${index}`
    this.log = c.log.child({ thread: this.name })
    this.cache = new ThreadCache(Math.floor(c.cacheMaxBytes / c.numStreamThreads))
    const eos = c.exactlyOnce
    this.consumer = new Consumer(withConsumerOverrides({
      bootstrapServers: c.bootstrapServers,
      clientId: `${this.name}-consumer`,
      groupId: c.applicationId,
      assignor: { name: 'stream', subscriptionUserData: () => this.encodedSubscription(), assign: (members, counts) => host.assign(members, counts) },
      enableAutoCommit: false,
      autoOffsetReset: 'earliest',
      isolationLevel: eos ? 'read_committed' : 'read_uncommitted',
      maxPollRecords: c.maxPollRecords,
      sessionTimeoutMs: c.sessionTimeoutMs,
      heartbeatIntervalMs: c.heartbeatIntervalMs,
      rebalanceTimeoutMs: Math.max(60_000, c.sessionTimeoutMs),
      requestTimeoutMs: c.requestTimeoutMs,
      fetchMaxWaitMs: Math.max(1, Math.min(500, c.pollMs)),
    }, c.originals))
    this.restoreConsumer = new Consumer({ bootstrapServers: c.bootstrapServers, clientId: `${this.name}-restore-consumer`, autoOffsetReset: 'earliest', isolationLevel: eos ? 'read_committed' : 'read_uncommitted', maxPollRecords: 10_000, fetchMaxWaitMs: 50, requestTimeoutMs: c.requestTimeoutMs })
    this.producer = this.newProducer()
    this.collector = {
      send: (topic, key, value, headers, timestamp, partition, listener) => this.send(topic, key, value, headers, timestamp, partition, listener),
      partitionsFor: (topic) => this.producer.cluster.metadata.topics.get(topic)?.partitions.length,
    }
  }

  private newProducer(): Producer {
    const c = this.host.config
    return new Producer(withProducerOverrides({
      bootstrapServers: c.bootstrapServers,
      clientId: `${this.name}-producer`,
      lingerMs: 100,
      requestTimeoutMs: c.requestTimeoutMs,
      ...(c.exactlyOnce ? { transactionalId: `${c.applicationId}-${this.host.processId}-${this.index}`, enableIdempotence: true, transactionTimeoutMs: 10_000 } : {}),
    }, c.originals))
  }

  private send(topic: string, key: Buffer | null, value: Buffer | null, headers: readonly Header[], timestamp: number, partition: number | undefined, listener: SendListener): void {
    this.sentSinceCommit = true
    const p = this.producer
    if (p.cluster.metadata.topics.get(topic)?.partitions.length) {
      const slot = this.inFlight.take(key, value, partition, listener)
      // Acknowledgements come once per batch (appendBatched), with the records' slots as their ctx.
      p.appendBatched(topic, partition, key, value, headers.length === 0 ? undefined : (headers as Header[]), this.callbackFor(listener), slot, timestamp)
      return
    }
    // A topic without metadata yet (a TopicNameExtractor's choice): sent through the async path.
    const pending = p.send({ topic, partition, key, value, headers: [...headers], timestamp }).then(
      (m) => listener.onAck?.(m.topic, m.partition, m.offset + 1),
      (err: unknown) => listener.onError(err as Error, topic, partition, key, value, timestamp),
    )
    this.pendingSends.add(pending)
    void pending.finally(() => this.pendingSends.delete(pending))
  }

  private callbackFor(listener: SendListener): BatchDeliveryCallback {
    if (listener === this.lastListener) return this.lastCallback!
    let cb = this.deliveryCallbacks.get(listener)
    if (cb === undefined) {
      const inFlight = this.inFlight
      cb = (err, d) => {
        inFlight.settle(err, d)
        if (err === null && d.baseOffset >= 0) listener.onAck?.(d.topic, d.partition, d.baseOffset + d.to)
      }
      this.deliveryCallbacks.set(listener, cb)
    }
    this.lastListener = listener
    this.lastCallback = cb
    return cb
  }

  private setState(s: ThreadState): void {
    if (this.state === s) return
    this.state = s
    this.host.onThreadState(this)
  }

  /** Whether any active task is still restoring (the instance is REBALANCING meanwhile). */
  get restoring(): boolean {
    for (const e of this.active.values()) if (e.restoring) return true
    return false
  }

  /** Running active tasks (interactive queries). */
  runningTasks(): StreamTask[] {
    return [...this.active.values()].filter((e) => !e.restoring).map((e) => e.task)
  }

  standbyStores(): Map<string, InternalStore & StateStore>[] {
    return [...this.standby.values()].map((s) => s.stores)
  }

  /** Asks the loop to stop after its current step. */
  shutdown(): void {
    this.stopping = true
    if (this.state !== 'DEAD') this.setState('PENDING_SHUTDOWN')
  }

  /** The thread's loop; resolves at a clean stop, rejects with what killed the thread. */
  async run(): Promise<void> {
    this.setState('STARTING')
    try {
      if (this.host.config.exactlyOnce) await this.producer.initTransactions()
      this.consumer.subscribe(this.host.sourceTopics, {
        onPartitionsRevoked: () => this.onRevoked(),
        onPartitionsAssigned: () => this.onAssigned(),
      })
      while (!this.stopping) {
        try {
          await this.runOnce()
        } catch (err) {
          if (!(err instanceof TaskMigratedException) || this.stopping) throw err
          this.log.warn({ err: err.message }, 'tasks migrated (fenced or out of the group generation): closing them without commit and rejoining')
          await this.handleMigration()
        }
      }
      await this.closeClean()
      this.setState('DEAD')
    } catch (err) {
      await this.closeDirty().catch(() => {})
      this.setState('DEAD')
      throw err
    }
  }

  private async handleMigration(): Promise<void> {
    await this.closeAllDirty()
    if (this.host.config.exactlyOnce && (this.producer.transactionState === 'FATAL_ERROR' || this.producer.transactionState === null)) {
      await this.producer.close().catch(() => {})
      this.producer = this.newProducer()
      await this.producer.initTransactions()
    }
    this.consumer.enforceRebalance()
  }

  private async runOnce(): Promise<void> {
    const hasWork = this.hasQueuedRecords()
    let records: ConsumedRecord[]
    try {
      records = await this.consumer.poll(hasWork || this.restoring ? 0 : this.host.config.pollMs)
    } catch (err) {
      throw migrationOr(err)
    }
    if (records.length > 0) await this.distribute(records)
    if (this.changelogs.size > 0) await this.restoreStep(!hasWork && records.length === 0)
    if (this.state === 'PARTITIONS_ASSIGNED' && !this.restoring) this.setState('RUNNING')
    await this.processBatch()
    const now = Date.now()
    for (const e of this.active.values()) if (!e.restoring) e.task.punctuateWallClock(now)
    const commitDue = now - this.lastCommit >= this.host.config.commitIntervalMs
    let asked = false
    let pressure = false
    for (const e of this.active.values()) {
      if (e.task.commitRequested) asked = true
      if (e.task.changelogPressure) pressure = true
    }
    if (commitDue || asked) await this.commitAll()
    else if (pressure) for (const e of this.active.values()) if (!e.restoring) e.task.flushChangelogs()
    if (this.probingAt !== null && now >= this.probingAt) {
      this.probingAt = null
      this.log.info('probing rebalance: checking whether warm-up replicas have caught up')
      this.consumer.enforceRebalance()
    }
  }

  private hasQueuedRecords(): boolean {
    for (const e of this.active.values()) if (!e.restoring && e.task.queuedRecords > 0) return true
    return false
  }

  /** Hands fetched records to their tasks (after any serde preparation, e.g. a schema fetch). */
  private async distribute(records: ConsumedRecord[]): Promise<void> {
    // The consumer returns records partition by partition: each run of one partition goes at once.
    let start = 0
    while (start < records.length) {
      const first = records[start]!
      let end = start + 1
      while (end < records.length && records[end]!.partition === first.partition && records[end]!.topic === first.topic) end++
      const task = this.taskForPartition(first.topic, first.partition)
      if (task !== null) {
        const run = start === 0 && end === records.length ? records : records.slice(start, end)
        await this.prepareDeserialization(task, run)
        task.addRecords(first.topic, first.partition, run)
      }
      start = end
    }
  }

  private readonly partitionTask = new Map<string, StreamTask>()

  private taskForPartition(topic: string, partition: number): StreamTask | null {
    return this.partitionTask.get(tpKey(topic, partition)) ?? null
  }

  private async prepareDeserialization(task: StreamTask, records: ConsumedRecord[]): Promise<void> {
    const source = task.topology.subtopologies()[task.id.subtopology]!.nodes.find((n) => n.type === 'source' && n.topics.some((t) => this.host.resolveTopic(t) === records[0]!.topic))
    if (source === undefined || source.type !== 'source') return
    const kd = source.keyDeserializer ?? this.host.config.defaultKeySerde.deserializer
    const vd = source.valueDeserializer ?? this.host.config.defaultValueSerde.deserializer
    if (kd.prepare === undefined && vd.prepare === undefined) return
    const waits: Promise<void>[] = []
    for (const r of records) {
      const a = kd.prepare?.(r.topic, r.key)
      if (a !== undefined) waits.push(a)
      const b = vd.prepare?.(r.topic, r.value)
      if (b !== undefined) waits.push(b)
    }
    await Promise.all(waits)
  }

  /** Processes queued records round-robin over the running tasks, for a bounded time. */
  private async processBatch(): Promise<void> {
    const tasks = [...this.active.values()].filter((e) => !e.restoring).map((e) => e.task)
    if (tasks.length === 0) return
    const deadline = Date.now() + Math.min(200, Math.max(10, this.host.config.commitIntervalMs))
    for (;;) {
      let n = 0
      for (const t of tasks) {
        if (this.host.config.exactlyOnce) this.ensureTransaction()
        try {
          n += t.process(500)
        } catch (err) {
          throw migrationOr(err)
        }
        if (t.commitRequested) return
      }
      if (n === 0 || Date.now() >= deadline) return
      if (!this.producer.hasCapacity) await this.producer.waitForCapacity()
    }
  }

  private ensureTransaction(): void {
    if (this.transactionOpen) return
    this.producer.beginTransaction()
    this.transactionOpen = true
  }

  // ---- commits ----

  private async commitAll(): Promise<void> {
    const running = [...this.active.values()].filter((e) => !e.restoring).map((e) => e.task)
    const eos = this.host.config.exactlyOnce
    if (eos && running.length > 0) this.ensureTransaction()
    // The record caches first: what they forward and write is part of this commit.
    for (const t of running) t.flushCaches()
    for (const t of running) t.flushChangelogs()
    const offsets = running.flatMap((t) => (t.processedSinceCommit > 0 ? t.committableOffsets() : []))
    try {
      if (eos) {
        if (this.transactionOpen && (offsets.length > 0 || this.sentSinceCommit)) {
          await Promise.all([...this.pendingSends])
          if (offsets.length > 0) await this.producer.sendOffsetsToTransaction(offsets, this.consumer.groupMetadata())
          await this.producer.commitTransaction()
          this.transactionOpen = false
        }
      } else {
        await this.producer.flush()
        await Promise.all([...this.pendingSends])
        if (offsets.length > 0) await this.consumer.commit(offsets)
      }
    } catch (err) {
      throw migrationOr(err)
    }
    for (const t of running) {
      t.commitRequested = false
      t.processedSinceCommit = 0
      await t.flushStores()
      if (!eos) this.writeCheckpoint(t)
    }
    for (const s of this.standby.values()) await this.checkpointStandby(s)
    this.sentSinceCommit = false
    this.lastCommit = Date.now()
  }

  private checkpointOffsets(taskId: string, written: ReadonlyMap<string, number> | null): Map<string, number> {
    const out = new Map<string, number>()
    for (const c of this.changelogs.values()) if (c.task === taskId) out.set(tpKey(c.topic, c.partition), c.position)
    const restored = this.restoredPositions.get(taskId)
    if (restored !== undefined) for (const [k, v] of restored) if (!out.has(k)) out.set(k, v)
    if (written !== null) for (const [k, v] of written) out.set(k, Math.max(v, out.get(k) ?? 0))
    return out
  }

  /** Positions the changelogs of each active task were restored to (its checkpoint base). */
  private readonly restoredPositions = new Map<string, Map<string, number>>()

  private writeCheckpoint(t: StreamTask): void {
    if (t.changelogPartitions().length === 0) return
    new OffsetCheckpoint(this.host.taskDir(t.id.toString())).write(this.checkpointOffsets(t.id.toString(), t.changelogOffsets))
  }

  private async checkpointStandby(s: StandbyEntry): Promise<void> {
    for (const st of s.stores.values()) await st.logged.flush()
    new OffsetCheckpoint(this.host.taskDir(s.id)).write(this.checkpointOffsets(s.id, null))
  }

  // ---- rebalances ----

  /** Eager rebalance: commit, then suspend every task (stores stay open for a possible reassignment). */
  private async onRevoked(): Promise<void> {
    this.setState('PARTITIONS_REVOKED')
    try {
      await this.commitAll()
    } catch (err) {
      if (!(err instanceof TaskMigratedException)) throw err
      this.log.warn({ err: err.message }, 'commit before the rebalance failed: the tasks are closed without commit')
      await this.closeAllDirty()
      return
    }
    for (const [id, e] of this.active) {
      e.task.clearQueues()
      this.suspended.set(id, e)
    }
    this.active.clear()
    for (const [id, s] of this.standby) this.suspendedStandby.set(id, s)
    this.standby.clear()
    this.partitionTask.clear()
  }

  private async onAssigned(): Promise<void> {
    this.setState('PARTITIONS_ASSIGNED')
    const info = decodeAssignmentInfo(this.consumer.assignmentUserData())
    if (info === null) throw new StreamsException('the group leader sent an assignment this instance cannot read (is another application using the same application.id?)')
    this.host.onAssignment(info)
    this.probingAt = info.probingRebalanceAt
    const wantActive = new Set(info.activeTasks)
    const wantStandby = new Set(info.standbyTasks)
    // Tasks kept as they were.
    for (const [id, e] of this.suspended) {
      if (!wantActive.has(id)) continue
      this.suspended.delete(id)
      this.active.set(id, e)
    }
    for (const [id, s] of this.suspendedStandby) {
      if (!wantStandby.has(id)) continue
      this.suspendedStandby.delete(id)
      this.standby.set(id, s)
    }
    // Active tasks that become standbys keep their stores.
    for (const [id, e] of this.suspended) {
      if (!wantStandby.has(id)) continue
      this.suspended.delete(id)
      await e.task.flushStores()
      if (!this.host.config.exactlyOnce || !e.restoring) this.writeCheckpoint(e.task)
      const offsets = this.checkpointOffsets(id, e.task.changelogOffsets)
      const stores = e.task.closeProcessorsKeepStores()
      this.dropChangelogs(id)
      const s: StandbyEntry = { id, stores }
      this.standby.set(id, s)
      this.registerChangelogs(id, stores, offsets, -1)
    }
    // Standbys that become active hand over their stores: only the tail of the changelog is restored.
    for (const [id, s] of this.suspendedStandby) {
      if (!wantActive.has(id)) continue
      this.suspendedStandby.delete(id)
      await this.createActive(id, s)
    }
    // Whatever is left of the old tasks is closed cleanly.
    for (const [id, e] of this.suspended) await this.closeActiveClean(id, e)
    this.suspended.clear()
    for (const s of this.suspendedStandby.values()) await this.closeStandbyClean(s)
    this.suspendedStandby.clear()
    for (const id of wantActive) if (!this.active.has(id)) await this.createActive(id, null)
    for (const id of wantStandby) if (!this.standby.has(id)) await this.createStandby(id)
    this.partitionTask.clear()
    for (const e of this.active.values()) for (const tp of e.task.inputPartitions()) this.partitionTask.set(tpKey(tp.topic, tp.partition), e.task)
    await this.syncRestoreConsumer()
    this.pauseRestoring()
    if (!this.restoring) this.setState('RUNNING')
  }

  private subtopology(id: string): Subtopology {
    const sub = this.host.topology.subtopologies()[Number(id.split('_')[0])]
    if (sub === undefined) throw new StreamsException(`task ${id} names a sub-topology this topology does not have (do all instances run the same topology?)`)
    return sub
  }

  private envFor(taskId: string): TaskEnvironment {
    const c = this.host.config
    return {
      applicationId: c.applicationId,
      appConfigs: c.originals,
      resolveTopic: (n) => this.host.resolveTopic(n),
      changelogTopic: (s) => this.host.changelogTopic(s),
      collector: this.collector,
      wallClock: () => Date.now(),
      globalStore: (n) => this.host.globalStore(n),
      taskDir: this.host.taskDir(taskId),
      defaultKeySerde: c.defaultKeySerde,
      defaultValueSerde: c.defaultValueSerde,
      deserializationHandler: c.deserializationHandler,
      productionHandler: c.productionHandler,
      log: this.log,
      cache: this.cache,
    }
  }

  /** A new active task: its stores open (or taken from a standby), its changelogs registered for restoration. */
  private async createActive(id: string, fromStandby: StandbyEntry | null): Promise<void> {
    const sub = this.subtopology(id)
    const partition = Number(id.split('_')[1])
    const task = new StreamTask(this.host.topology, sub, partition, this.envFor(id))
    mkdirSync(this.host.taskDir(id), { recursive: true })
    let start: Map<string, number>
    if (fromStandby !== null) {
      start = this.checkpointOffsets(id, null)
      this.dropChangelogs(id)
      task.adoptStores(fromStandby.stores)
      task.openStores()
    } else {
      start = this.startingOffsets(id, task)
    }
    // Warm up the producer's metadata for the sink and changelog topics so that sends need no wait.
    const topics = new Set<string>([...this.host.topology.sinkTopics(sub).map((t) => this.host.resolveTopic(t)), ...task.changelogPartitions().map((c) => c.topic)])
    for (const t of topics) await this.producer.topicInfo(t)
    await this.prepareSerializers(sub, topics)
    const e: ActiveEntry = { task, restoring: true }
    this.active.set(id, e)
    this.restoredPositions.set(id, start)
    const cls = task.changelogPartitions()
    if (cls.length === 0) {
      this.startProcessing(id, e)
      return
    }
    const stores = new Map([...task.stores].filter(([n]) => cls.some((c) => c.store === n)))
    await this.registerChangelogs(id, stores, start, 0)
  }

  /** Serializers that need preparation (Schema Registry) are prepared for the task's sink topics. */
  private async prepareSerializers(sub: Subtopology, topics: Set<string>): Promise<void> {
    for (const n of sub.nodes) {
      if (n.type !== 'sink' || typeof n.topic !== 'string') continue
      const topic = this.host.resolveTopic(n.topic)
      if (!topics.has(topic)) continue
      await n.keySerializer?.prepare?.(topic)
      await n.valueSerializer?.prepare?.(topic)
    }
  }

  /**
   * Where restoration of a new task starts: its checkpoint. Without one (or under exactly_once_v2 after an
   * unclean stop, where none is left) the local state cannot be trusted: it is wiped and rebuilt from the
   * changelog's start.
   */
  private startingOffsets(id: string, task: StreamTask): Map<string, number> {
    const checkpoint = new OffsetCheckpoint(this.host.taskDir(id)).read()
    const cls = task.changelogPartitions()
    const complete = cls.every((c) => checkpoint.has(tpKey(c.topic, c.partition)))
    if (!complete && cls.some((c) => this.host.topology.stores.get(c.store)!.builder.persistent)) {
      // Stores on disk that no checkpoint vouches for: start them afresh.
      rmSync(join(this.host.taskDir(id), 'lmdb'), { recursive: true, force: true })
      checkpoint.clear()
    }
    task.openStores()
    return complete ? checkpoint : new Map()
  }

  private async createStandby(id: string): Promise<void> {
    const sub = this.subtopology(id)
    const partition = Number(id.split('_')[1])
    const task = new StreamTask(this.host.topology, sub, partition, this.envFor(id))
    mkdirSync(this.host.taskDir(id), { recursive: true })
    const start = this.startingOffsets(id, task)
    const stores = task.closeProcessorsKeepStores()
    const s: StandbyEntry = { id, stores }
    this.standby.set(id, s)
    await this.registerChangelogs(id, stores, start, -1)
  }

  /** Registers a task's changelog partitions with the restore consumer; end 0 = active (restore to the end), -1 = standby. */
  private async registerChangelogs(id: string, stores: Map<string, InternalStore & StateStore>, start: ReadonlyMap<string, number>, mode: 0 | -1): Promise<void> {
    const list: ChangelogState[] = []
    for (const [name, s] of stores) {
      const cl = s.logged.changelog
      if (cl === null) continue
      const topic = this.host.changelogTopic(name)
      list.push({ task: id, store: name, topic, partition: cl.partition, position: start.get(tpKey(topic, cl.partition)) ?? -1, end: mode })
    }
    if (list.length === 0) return
    const isolation = this.host.config.exactlyOnce ? 1 : 0
    const begins = await listOffsets(this.restoreConsumer.cluster, list.map((c) => ({ topic: c.topic, partition: c.partition, timestamp: EARLIEST_TIMESTAMP })), isolation)
    const ends = mode === 0 ? await listOffsets(this.restoreConsumer.cluster, list.map((c) => ({ topic: c.topic, partition: c.partition, timestamp: LATEST_TIMESTAMP })), isolation) : null
    for (const c of list) {
      const begin = begins.get(tpKey(c.topic, c.partition))?.offset ?? 0
      if (c.position < begin) c.position = begin
      if (ends !== null) c.end = ends.get(tpKey(c.topic, c.partition))?.offset ?? 0
      this.changelogs.set(tpKey(c.topic, c.partition), c)
    }
  }

  private dropChangelogs(taskId: string): void {
    for (const [k, c] of this.changelogs) if (c.task === taskId) this.changelogs.delete(k)
  }

  private assignedChangelogs = new Set<string>()

  /** Points the restore consumer at the registered changelog partitions, each at its position. */
  private async syncRestoreConsumer(): Promise<void> {
    const wanted = [...this.changelogs.values()]
    this.restoreConsumer.assign(wanted.map((c) => ({ topic: c.topic, partition: c.partition })))
    const now = new Set<string>()
    for (const c of wanted) {
      const k = tpKey(c.topic, c.partition)
      now.add(k)
      if (!this.assignedChangelogs.has(k) || this.restoreConsumer.position(c.topic, c.partition) !== c.position) this.restoreConsumer.seek(c.topic, c.partition, c.position)
    }
    this.assignedChangelogs = now
    // Active tasks with nothing to restore start at once.
    for (const [id, e] of this.active) if (e.restoring && this.restoreDone(id)) this.startProcessing(id, e)
  }

  private restoreDone(id: string): boolean {
    for (const c of this.changelogs.values()) if (c.task === id && c.end >= 0 && c.position < c.end) return false
    return true
  }

  /** Input partitions of restoring tasks are paused in the main consumer until their state is back. */
  private pauseRestoring(): void {
    const pause: TopicPartition[] = []
    for (const e of this.active.values()) if (e.restoring) pause.push(...e.task.inputPartitions())
    if (pause.length > 0) this.consumer.pause(pause)
  }

  private startProcessing(id: string, e: ActiveEntry): void {
    e.restoring = false
    // The task's changelogs are now written by it: the restore consumer lets them go.
    const positions = this.restoredPositions.get(id) ?? new Map<string, number>()
    for (const [k, c] of this.changelogs) {
      if (c.task !== id) continue
      positions.set(k, c.position)
      this.changelogs.delete(k)
    }
    this.restoredPositions.set(id, positions)
    e.task.initializeProcessors()
    // Under exactly_once_v2 no checkpoint may outlive a crash of a running task.
    if (this.host.config.exactlyOnce) new OffsetCheckpoint(this.host.taskDir(id)).delete()
    const inputs = e.task.inputPartitions()
    try {
      this.consumer.resume(inputs)
    } catch {
      // Not assigned any more (a rebalance in between): nothing to resume.
    }
    this.log.info({ task: id }, 'task restored: processing')
  }

  /** Reads changelog records into restoring and standby stores. */
  private async restoreStep(mayWait: boolean): Promise<void> {
    if (this.changelogs.size === 0) return
    if (this.assignedChangelogs.size !== this.changelogs.size) await this.syncRestoreConsumer()
    let records: ConsumedRecord[]
    try {
      records = await this.restoreConsumer.poll(mayWait ? 50 : 0)
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'restore consumer poll failed; retrying')
      return
    }
    const batches = new Map<ChangelogState, [Buffer, Buffer | null][]>()
    for (const r of records) {
      const c = this.changelogs.get(tpKey(r.topic, r.partition))
      if (c === undefined) continue
      let b = batches.get(c)
      if (b === undefined) batches.set(c, (b = []))
      if (r.key !== null) b.push([r.key, r.value])
    }
    for (const [c, batch] of batches) {
      const store = this.active.get(c.task)?.task.stores.get(c.store) ?? this.standby.get(c.task)?.stores.get(c.store)
      if (store !== undefined && batch.length > 0) store.logged.restore(batch)
    }
    for (const c of this.changelogs.values()) {
      const pos = this.restoreConsumer.position(c.topic, c.partition)
      if (pos !== null) c.position = pos
    }
    for (const [id, e] of this.active) if (e.restoring && this.restoreDone(id)) this.startProcessing(id, e)
    if (records.length === 0 && this.changelogs.size !== this.assignedChangelogs.size) await this.syncRestoreConsumer()
    if ([...this.changelogs.values()].every((c) => this.assignedChangelogs.has(tpKey(c.topic, c.partition))) && this.assignedChangelogs.size !== this.changelogs.size) await this.syncRestoreConsumer()
  }

  // ---- subscription info ----

  /** This member's subscription userData: its instance's state per task (KIP-441 lags). */
  subscriptionInfo(): SubscriptionInfo {
    const sums: Record<string, number> = {}
    for (const [id, sum] of this.host.localTaskOffsetSums()) sums[id] = sum
    for (const s of [...this.standby.values(), ...this.suspendedStandby.values()]) {
      let sum = 0
      for (const c of this.changelogs.values()) if (c.task === s.id) sum += Math.max(0, c.position)
      if (sum > 0) sums[s.id] = sum
    }
    for (const id of [...this.active.keys(), ...this.suspended.keys()]) sums[id] = RUNNING_OFFSET_SUM
    return {
      version: 1,
      processId: this.host.processId,
      endpoint: this.host.config.applicationServer,
      taskOffsetSums: sums,
      prevActive: [...this.active.keys(), ...this.suspended.keys()],
      prevStandby: [...this.standby.keys(), ...this.suspendedStandby.keys()],
    }
  }

  encodedSubscription(): Buffer {
    return encodeInfo(this.subscriptionInfo())
  }

  /** Task ids with state this thread holds (for the instance's lag report). */
  ownedTaskIds(): Set<string> {
    return new Set([...this.active.keys(), ...this.suspended.keys(), ...this.standby.keys(), ...this.suspendedStandby.keys()])
  }

  // ---- closing ----

  private async closeActiveClean(id: string, e: ActiveEntry): Promise<void> {
    try {
      await e.task.flushStores()
      if (!e.restoring || !this.host.config.exactlyOnce) this.writeCheckpoint(e.task)
    } finally {
      e.task.close()
      this.dropChangelogs(id)
      this.restoredPositions.delete(id)
    }
  }

  private async closeStandbyClean(s: StandbyEntry): Promise<void> {
    try {
      await this.checkpointStandby(s)
    } finally {
      for (const st of s.stores.values()) st.close()
      this.dropChangelogs(s.id)
    }
  }

  /** Closes every task without committing: under exactly_once_v2 the open transaction is aborted. */
  private async closeAllDirty(): Promise<void> {
    if (this.host.config.exactlyOnce && this.transactionOpen) {
      try {
        await this.producer.abortTransaction()
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'aborting the transaction failed')
      }
      this.transactionOpen = false
    }
    for (const m of [this.active, this.suspended]) {
      for (const [id, e] of m) {
        e.task.close()
        this.dropChangelogs(id)
        this.restoredPositions.delete(id)
      }
      m.clear()
    }
    this.partitionTask.clear()
    this.sentSinceCommit = false
  }

  private async closeClean(): Promise<void> {
    this.setState('PENDING_SHUTDOWN')
    try {
      await this.commitAll()
      for (const [id, e] of this.active) await this.closeActiveClean(id, e)
      for (const [id, e] of this.suspended) await this.closeActiveClean(id, e)
      for (const s of [...this.standby.values(), ...this.suspendedStandby.values()]) await this.closeStandbyClean(s)
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'clean close failed: closing without commit')
      await this.closeAllDirty()
    }
    this.active.clear()
    this.suspended.clear()
    this.standby.clear()
    this.suspendedStandby.clear()
    await this.consumer.close({ commit: false }).catch(() => {})
    await this.restoreConsumer.close().catch(() => {})
    await this.producer.close().catch(() => {})
  }

  private async closeDirty(): Promise<void> {
    await this.closeAllDirty()
    for (const s of [...this.standby.values(), ...this.suspendedStandby.values()]) for (const st of s.stores.values()) st.close()
    this.standby.clear()
    this.suspendedStandby.clear()
    this.consumer.group?.stopHeartbeat()
    await this.consumer.close({ commit: false }).catch(() => {})
    await this.restoreConsumer.close().catch(() => {})
    await this.producer.close().catch(() => {})
  }
}

/** Errors meaning the thread's tasks now belong to someone else: fenced, or out of the generation. */
function migrationOr(err: unknown): unknown {
  if (err instanceof TaskMigratedException) return err
  if (err instanceof ProducerStateError) {
    if (err.fatal && err.code !== ErrorCode.PRODUCER_FENCED && err.code !== ErrorCode.INVALID_PRODUCER_EPOCH) return err
    return new TaskMigratedException(`the transaction failed: ${err.message}`, { cause: err })
  }
  if (err instanceof KafkaError) {
    const c = err.code
    if (c === ErrorCode.ILLEGAL_GENERATION || c === ErrorCode.UNKNOWN_MEMBER_ID || c === ErrorCode.REBALANCE_IN_PROGRESS || c === ErrorCode.FENCED_INSTANCE_ID || c === ErrorCode.PRODUCER_FENCED || c === ErrorCode.INVALID_PRODUCER_EPOCH) {
      return new TaskMigratedException(`${err.message} (${errorName(c)})`, { cause: err })
    }
  }
  return err
}

/** The producer.* and consumer.* settings Kafka Streams passes on to its clients; others are not overridable here. */
const PRODUCER_OVERRIDES = new Set(['batch.size', 'linger.ms', 'compression.type', 'buffer.memory', 'max.request.size'])
const CONSUMER_OVERRIDES = new Set(['fetch.max.wait.ms', 'fetch.min.bytes', 'max.partition.fetch.bytes', 'fetch.max.bytes'])

/** The settings of originals under prefix whose remaining name is one of names, prefix removed. */
function prefixed(originals: Readonly<Record<string, unknown>>, prefix: string, names: ReadonlySet<string>): Map<string, string> {
  const out = new Map<string, string>()
  for (const [k, v] of Object.entries(originals)) {
    if (!k.startsWith(prefix) || v === undefined) continue
    const name = k.slice(prefix.length)
    if (names.has(name)) out.set(name, String(v))
  }
  return out
}

/** 'producer.'-prefixed settings Kafka Streams passes on (batch.size, linger.ms, compression.type, ...). */
function withProducerOverrides(opts: ProducerOptions, o: Readonly<Record<string, unknown>>): ProducerOptions {
  applyProducerProps(opts, prefixed(o, 'producer.', PRODUCER_OVERRIDES))
  return opts
}

/** 'consumer.'-prefixed settings Kafka Streams passes on (fetch.max.wait.ms, fetch.min.bytes, ...). */
function withConsumerOverrides(opts: ConsumerOptions, o: Readonly<Record<string, unknown>>): ConsumerOptions {
  applyConsumerProps(opts, prefixed(o, 'consumer.', CONSUMER_OVERRIDES))
  return opts
}

export const newProcessId = (): string => randomUUID()
