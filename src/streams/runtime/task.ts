// A stream task: one partition of one sub-topology (Kafka's StreamTask). It owns the processor instances
// and state stores of that sub-topology for that partition, queues the fetched records of each of its
// input partitions, and processes them one at a time, always taking the queued record with the smallest
// timestamp across its partitions (Kafka's PartitionGroup), so that joins see their inputs in time order.
// Processing is synchronous, from the source node through the processors to the sinks; sinks hand bytes
// to the RecordCollector (the producer, or the test driver's capture). Stream time is the largest
// timestamp processed; punctuators run on it and on the wall clock. The stores' changelog entries are
// handed to the collector by flushChangelogs() at each commit.
import type { Logger } from '../../observability/logger.js'
import type { ConsumedRecord, Header } from '../../client/record-batches.js'
import { murmur2, toPositive } from '../../client/murmur2.js'
import { SerializationException, StreamsException, TopologyException } from '../core/errors.js'
import { Headers } from '../core/headers.js'
import { PunctuationType, TaskId, supplierGet, type Cancellable, type Processor, type ProcessorContext, type Punctuator, type TimestampExtractor } from '../processor/api.js'
import { Record, type RecordMetadata } from '../core/record.js'
import type { Deserializer, Serde, Serializer } from '../core/serdes.js'
import { CachingKeyValueStore, type CacheBinding, type CachedRecordContext, type ThreadCache } from '../state/caching.js'
import type { StateStore } from '../state/stores.js'
import type { InternalStore } from '../state/typed.js'
import type { SinkNode, SourceNode, Subtopology, Topology, TopologyNode } from '../processor/topology.js'
import type { DeserializationExceptionHandler, ProductionExceptionHandler } from './handlers.js'

/**
 * Who hears what became of sent records: one object per task and purpose (sink records, changelog
 * records), made once, so that a send allocates no callback of its own.
 */
export interface SendListener {
  /** A record could not be sent; partition is the one the sender asked for (undefined: the key's). */
  onError(err: Error, topic: string, partition: number | undefined, key: Buffer | null, value: Buffer | null, timestamp: number): void
  /** Records of topic-partition were acknowledged, the last of them at nextOffset - 1. */
  onAck?(topic: string, partition: number, nextOffset: number): void
}

/** Where sinks and changelogs write (the producer in the runtime, a capture in the test driver). */
export interface RecordCollector {
  /** partition undefined: murmur2 of the key bytes, as Kafka's default partitioner. headers may be a shared empty array: never changed. */
  send(topic: string, key: Buffer | null, value: Buffer | null, headers: readonly Header[], timestamp: number, partition: number | undefined, listener: SendListener): void
  /** The number of partitions of a topic, when known (for StreamPartitioners). */
  partitionsFor(topic: string): number | undefined
}

export interface TaskEnvironment {
  applicationId: string
  appConfigs: { readonly [key: string]: unknown }
  /** A topology topic name to the real one ('<application.id>-<name>' for internal topics). */
  resolveTopic(name: string): string
  changelogTopic(store: string): string
  collector: RecordCollector
  wallClock(): number
  globalStore(name: string): StateStore | undefined
  /** The task's directory for persistent stores (null: none). */
  taskDir: string | null
  defaultKeySerde: Serde<unknown>
  defaultValueSerde: Serde<unknown>
  deserializationHandler: DeserializationExceptionHandler
  productionHandler: ProductionExceptionHandler
  log: Logger
  /** The thread's record cache for the stores that cache (none: no store caches). */
  cache?: ThreadCache | null
}

interface NodeInstance {
  def: TopologyNode
  processor: Processor<unknown, unknown, unknown, unknown> | null
  children: NodeInstance[]
  childByName: Map<string, NodeInstance>
  /** Stores the processor may use. */
  stores: Set<string>
}

interface PunctuationSchedule {
  node: NodeInstance
  interval: number
  next: number
  punctuator: Punctuator
  cancelled: boolean
}

/** The queued records of one input partition. */
interface PartitionQueue {
  topic: string
  partition: number
  source: SourceNode
  records: ConsumedRecord[]
  head: number
  /** The largest extracted timestamp of the partition so far. */
  partitionTime: number
  /** The next offset after the last record processed (what a commit stores); -1 before the first. */
  consumed: number
  /** The source node's instance, found once instead of per record. */
  node: NodeInstance
}

/** Headers of a record that has none, as handed to the collector (never changed). */
const NO_HEADERS: readonly Header[] = Object.freeze([])

export class StreamTask {
  readonly id: TaskId
  readonly subtopology: Subtopology
  readonly stores = new Map<string, InternalStore & StateStore>()
  /** Input partitions by 'topic\0partition' (real topic names). */
  readonly queues = new Map<string, PartitionQueue>()
  /** The next offset to commit per input partition (last processed + 1). */
  streamTime = -1
  commitRequested = false
  /** Set by a store whose unsent changelog entries grew past its bound. */
  changelogPressure = false
  /** The next offset of each changelog partition after what this task wrote (from acknowledgements), 'topic\0partition'. */
  readonly changelogOffsets = new Map<string, number>()
  /** Records processed since the last commit. */
  processedSinceCommit = 0
  private readonly nodes = new Map<string, NodeInstance>()
  private readonly streamPunctuations: PunctuationSchedule[] = []
  private readonly wallPunctuations: PunctuationSchedule[] = []
  private current: NodeInstance | null = null
  /** Where the record being processed came from (Kafka's ProcessorRecordContext); topic null outside a record. */
  private contextTopic: string | null = null
  private contextPartition = -1
  private contextOffset = -1
  /** The input queues, as a list (the hot loop scans them per record). */
  private queueList: PartitionQueue[] = []
  private readonly sinkListener: SendListener
  private readonly cacheBinding: CacheBinding
  /** Counts the records and punctuations processed (the record cache's key memo is valid within one). */
  private recordSeq = 0
  private readonly changelogListener: SendListener
  private currentTimestamp = 0
  private currentHeaders: Headers = new Headers()
  private readonly context: ProcessorContext
  private initialized = false
  private closed = false
  /** A production error the handler said to fail on: thrown from the next call into the task. */
  private sendError: Error | null = null
  private queued = 0

  constructor(
    readonly topology: Topology,
    subtopology: Subtopology,
    partition: number,
    readonly env: TaskEnvironment,
  ) {
    this.id = new TaskId(subtopology.id, partition)
    this.subtopology = subtopology
    const task = this
    this.context = {
      applicationId: () => env.applicationId,
      taskId: () => task.id,
      recordMetadata: (): RecordMetadata | null => (task.contextTopic === null ? null : { topic: task.contextTopic, partition: task.contextPartition, offset: task.contextOffset }),
      appConfigs: () => env.appConfigs,
      currentSystemTimeMs: () => env.wallClock(),
      currentStreamTimeMs: () => task.streamTime,
      getStateStore: <S extends StateStore>(name: string): S => task.storeFor(name) as S,
      schedule: (intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable => task.schedule(intervalMs, type, punctuator),
      forward: (record, childName) => task.forward(record as Record<unknown, unknown>, childName),
      commit: () => {
        task.commitRequested = true
      },
      keySerde: () => env.defaultKeySerde,
      valueSerde: () => env.defaultValueSerde,
    }
    this.sinkListener = {
      onError: (err, topic, partition, key, value, timestamp) => {
        const verdict = env.productionHandler({ topic, partition, key, value, timestamp }, err, 'send')
        if (verdict === 'CONTINUE') env.log.warn({ task: task.id.toString(), topic, err: err.message }, 'a record could not be sent; continuing (production exception handler)')
        else task.sendError ??= new StreamsException(`task ${task.id} could not send a record to '${topic}': ${err.message}`, { cause: err })
      },
    }
    this.cacheBinding = {
      currentNode: () => task.current,
      recordSeq: () => task.recordSeq,
      capture: (e) => {
        e.changelogTimestamp = task.currentTimestamp
        e.headers = task.currentHeaders
        e.topic = task.contextTopic
        e.partition = task.contextPartition
        e.offset = task.contextOffset
      },
      runAs: (node, e, fn) => task.runFlushed(node as NodeInstance | null, e, fn),
    }
    this.changelogListener = {
      onError: (err, topic) => {
        task.sendError ??= new StreamsException(`task ${task.id} could not write its changelog '${topic}': ${err.message}`, { cause: err })
      },
      onAck: (topic, partition, nextOffset) => {
        const tp = `${topic}\u0000${partition}`
        if (nextOffset > (task.changelogOffsets.get(tp) ?? 0)) task.changelogOffsets.set(tp, nextOffset)
      },
    }
  }

  get isInitialized(): boolean {
    return this.initialized
  }

  /** The input partitions of this task (real topic names). */
  inputPartitions(): { topic: string; partition: number }[] {
    return this.subtopology.sourceTopics.map((t) => ({ topic: this.env.resolveTopic(t), partition: this.id.partition }))
  }

  /** The changelog partitions of this task's logged stores. */
  changelogPartitions(): { store: string; topic: string; partition: number }[] {
    const out: { store: string; topic: string; partition: number }[] = []
    for (const name of this.subtopology.stores) {
      const e = this.topology.stores.get(name)!
      if (e.builder.loggingEnabled) out.push({ store: name, topic: this.env.changelogTopic(name), partition: this.id.partition })
    }
    return out
  }

  /** Takes over already open stores (a standby becoming active keeps its state). */
  adoptStores(stores: ReadonlyMap<string, InternalStore & StateStore>): void {
    for (const [name, s] of stores) {
      if (s instanceof CachingKeyValueStore) s.bind(this.cacheBinding)
      s.logged.timestamp = () => this.currentTimestamp
      s.logged.onPressure = () => {
        this.changelogPressure = true
      }
      this.stores.set(name, s)
    }
  }

  /** Opens the stores (state to be restored by the caller before initializeProcessors). */
  openStores(): void {
    for (const name of this.subtopology.stores) {
      if (this.stores.has(name)) continue
      const e = this.topology.stores.get(name)!
      const changelog = e.builder.loggingEnabled ? { topic: this.env.changelogTopic(name), partition: this.id.partition } : null
      const dir = this.env.taskDir === null ? null : `${this.env.taskDir}/lmdb/${name}`
      const store = e.builder.build({ dir, changelog, defaultKeySerde: this.env.defaultKeySerde, defaultValueSerde: this.env.defaultValueSerde, cache: this.env.cache ?? null })
      if (store instanceof CachingKeyValueStore) store.bind(this.cacheBinding)
      store.logged.timestamp = () => this.currentTimestamp
      store.logged.onPressure = () => {
        this.changelogPressure = true
      }
      this.stores.set(name, store as InternalStore & StateStore)
    }
  }

  /** Instantiates and initializes the processors (once the stores are restored). */
  initializeProcessors(): void {
    if (this.initialized) return
    this.openStores()
    for (const def of this.subtopology.nodes) {
      const processor = def.type === 'processor' ? supplierGet(def.supplier) : null
      this.nodes.set(def.name, { def, processor, children: [], childByName: new Map(), stores: new Set(def.type === 'processor' ? def.stores : []) })
    }
    for (const n of this.nodes.values()) {
      for (const c of n.def.children) {
        const child = this.nodes.get(c)
        if (child === undefined) throw new TopologyException(`node '${c}' is not in sub-topology ${this.subtopology.id}`)
        n.children.push(child)
        n.childByName.set(c, child)
      }
    }
    for (const n of this.nodes.values()) {
      if (n.def.type !== 'source') continue
      for (const t of n.def.topics) {
        const topic = this.env.resolveTopic(t)
        this.queues.set(`${topic}\u0000${this.id.partition}`, { topic, partition: this.id.partition, source: n.def, records: [], head: 0, partitionTime: -1, consumed: -1, node: n })
        this.queueList = [...this.queues.values()]
      }
    }
    const defaults = { key: this.env.defaultKeySerde, value: this.env.defaultValueSerde }
    for (const n of this.nodes.values()) {
      const d = n.def
      if (d.type === 'source') {
        d.keyDeserializer?.configure?.(defaults)
        d.valueDeserializer?.configure?.(defaults)
      } else if (d.type === 'sink') {
        d.keySerializer?.configure?.(defaults)
        d.valueSerializer?.configure?.(defaults)
      }
    }
    for (const n of this.nodes.values()) {
      if (n.processor?.init === undefined) continue
      this.withNode(n, () => n.processor!.init!(this.context as ProcessorContext<unknown, unknown>))
    }
    this.initialized = true
  }

  private storeFor(name: string): StateStore {
    const node = this.current
    const local = this.stores.get(name)
    if (local !== undefined) {
      if (node !== null && !node.stores.has(name)) throw new StreamsException(`processor '${node.def.name}' has no access to state store '${name}': connect it to the store (stores in addProcessor / connectProcessorAndStateStores)`)
      return local
    }
    const global = this.env.globalStore(name)
    if (global !== undefined) return global
    throw new StreamsException(`processor '${node?.def.name ?? '?'}' has no access to state store '${name}': it is not in this task`)
  }

  private schedule(intervalMs: number, type: PunctuationType, punctuator: Punctuator): Cancellable {
    if (!(intervalMs >= 1)) throw new RangeError(`a punctuation interval must be at least 1 ms, not ${intervalMs}`)
    const node = this.current
    if (node === null) throw new StreamsException('schedule() can only be called from a processor (init, process or a punctuation)')
    const wall = type === PunctuationType.WALL_CLOCK_TIME
    const start = wall ? this.env.wallClock() : this.streamTime
    // Stream time: the first punctuation once stream time reaches a record; wall clock: one interval from now.
    const s: PunctuationSchedule = { node, interval: intervalMs, next: wall ? start + intervalMs : start < 0 ? -1 : start + intervalMs, punctuator, cancelled: false }
    ;(wall ? this.wallPunctuations : this.streamPunctuations).push(s)
    return {
      cancel: () => {
        s.cancelled = true
      },
    }
  }

  private withNode<T>(node: NodeInstance, fn: () => T): T {
    const prev = this.current
    this.current = node
    try {
      return fn()
    } finally {
      this.current = prev
    }
  }

  private forward(record: Record<unknown, unknown>, childName?: string): void {
    const node = this.current
    if (node === null) throw new StreamsException('forward() can only be called from a processor')
    const prevTs = this.currentTimestamp
    const prevHeaders = this.currentHeaders
    this.currentTimestamp = record.timestamp
    this.currentHeaders = record.headers
    try {
      if (childName !== undefined) {
        const child = node.childByName.get(childName)
        if (child === undefined) throw new StreamsException(`processor '${node.def.name}' has no child named '${childName}'`)
        this.deliver(child, record)
      } else {
        for (const child of node.children) this.deliver(child, record)
      }
    } finally {
      this.currentTimestamp = prevTs
      this.currentHeaders = prevHeaders
    }
  }

  private deliver(node: NodeInstance, record: Record<unknown, unknown>): void {
    const prev = this.current
    this.current = node
    try {
      const def = node.def
      if (def.type === 'sink') this.sink(def, record)
      else if (node.processor !== null) node.processor.process(record)
      else for (const c of node.children) this.deliver(c, record)
    } finally {
      this.current = prev
    }
  }

  private sink(def: SinkNode, record: Record<unknown, unknown>): void {
    const topicName = typeof def.topic === 'string' ? def.topic : def.topic(record.key, record.value, { topic: this.contextTopic, partition: this.contextPartition, offset: this.contextOffset, timestamp: record.timestamp })
    const topic = this.env.resolveTopic(topicName)
    const keySer = (def.keySerializer ?? this.env.defaultKeySerde.serializer) as Serializer<unknown>
    const valueSer = (def.valueSerializer ?? this.env.defaultValueSerde.serializer) as Serializer<unknown>
    let key: Buffer | null
    let value: Buffer | null
    try {
      key = keySer.serialize(topic, record.key, record.headers)
      value = valueSer.serialize(topic, record.value, record.headers)
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err))
      const verdict = this.env.productionHandler({ topic, partition: undefined, key: null, value: null, timestamp: record.timestamp }, e, 'serialization')
      if (verdict === 'CONTINUE') {
        this.env.log.warn({ task: this.id.toString(), topic, err: e.message }, 'skipping a record that could not be serialized (production exception handler: continue)')
        return
      }
      throw new SerializationException(`sink '${def.name}' could not serialize a record for topic '${topic}': ${e.message}`, { cause: e })
    }
    let partition: number | undefined
    if (def.partitioner !== undefined) {
      const n = this.env.collector.partitionsFor(topic)
      if (n === undefined) throw new StreamsException(`no partition count known for topic '${topic}' (needed by the partitioner of sink '${def.name}')`)
      partition = def.partitioner(topic, record.key, record.value, n)
      if (partition !== undefined && (!Number.isInteger(partition) || partition < 0 || partition >= n)) throw new StreamsException(`the partitioner of sink '${def.name}' chose partition ${partition} of '${topic}', which has ${n}`)
    }
    const headers = record.headers.size === 0 ? NO_HEADERS : record.headers.toArray()
    this.env.collector.send(topic, key, value, headers, record.timestamp, partition, this.sinkListener)
  }

  // ---- input ----

  addRecords(topic: string, partition: number, records: readonly ConsumedRecord[]): void {
    const q = this.queues.get(`${topic}\u0000${partition}`)
    if (q === undefined) throw new StreamsException(`task ${this.id} does not read ${topic}-${partition}`)
    if (q.head > 1024 && q.head * 2 > q.records.length) {
      q.records = q.records.slice(q.head)
      q.head = 0
    }
    for (const r of records) q.records.push(r)
    this.queued += records.length
  }

  /** Records queued and not processed yet. */
  get queuedRecords(): number {
    return this.queued
  }

  /** Drops the queued records (a rebalance or a transaction abort: they will be fetched again). */
  clearQueues(): void {
    for (const q of this.queues.values()) {
      q.records = []
      q.head = 0
    }
    this.queued = 0
  }

  /** The queue whose next record has the smallest timestamp; null when all are empty. */
  private nextQueue(): PartitionQueue | null {
    let best: PartitionQueue | null = null
    let bestTs = Infinity
    const list = this.queueList
    for (let i = 0; i < list.length; i++) {
      const q = list[i]!
      if (q.head >= q.records.length) continue
      const ts = q.records[q.head]!.timestamp
      if (ts < bestTs) {
        best = q
        bestTs = ts
      }
    }
    return best
  }

  /** Processes up to max queued records; returns how many were taken from the queues. */
  process(max: number): number {
    this.throwIfSendFailed()
    let n = 0
    while (n < max) {
      const q = this.nextQueue()
      if (q === null) break
      const raw = q.records[q.head]!
      q.records[q.head++] = undefined as unknown as ConsumedRecord
      this.queued--
      n++
      this.processRaw(q, raw)
      if (this.commitRequested) break
    }
    this.processedSinceCommit += n
    return n
  }

  /** Runs one fetched record through the topology. */
  private processRaw(q: PartitionQueue, raw: ConsumedRecord): void {
    const source = q.source
    q.consumed = raw.offset + 1
    const headers = new Headers(raw.headers)
    let key: unknown
    let value: unknown
    try {
      key = ((source.keyDeserializer ?? this.env.defaultKeySerde.deserializer) as Deserializer<unknown>).deserialize(q.topic, raw.key, headers)
      value = ((source.valueDeserializer ?? this.env.defaultValueSerde.deserializer) as Deserializer<unknown>).deserialize(q.topic, raw.value, headers)
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err))
      const verdict = this.env.deserializationHandler({ taskId: this.id.toString(), processorNodeId: source.name }, raw, e)
      if (verdict === 'CONTINUE') {
        this.env.log.warn({ task: this.id.toString(), topic: q.topic, partition: q.partition, offset: raw.offset, err: e.message }, 'skipping a record that could not be deserialized (deserialization exception handler: continue)')
        return
      }
      throw new SerializationException(`task ${this.id} could not deserialize the record at ${q.topic}-${q.partition} offset ${raw.offset}: ${e.message}`, { cause: e })
    }
    const extractor: TimestampExtractor | undefined = source.timestampExtractor
    const ts = extractor === undefined ? raw.timestamp : extractor({ topic: q.topic, partition: q.partition, offset: raw.offset, timestamp: raw.timestamp, key, value }, q.partitionTime)
    if (!(ts >= 0)) throw new StreamsException(`record at ${q.topic}-${q.partition} offset ${raw.offset} has an invalid timestamp ${ts} (FailOnInvalidTimestamp)`)
    if (ts > q.partitionTime) q.partitionTime = ts
    this.recordSeq++
    this.contextTopic = q.topic
    this.contextPartition = q.partition
    this.contextOffset = raw.offset
    this.currentTimestamp = ts
    this.currentHeaders = headers
    this.deliver(q.node, new Record(key, value, ts, headers))
    this.contextTopic = null
    if (ts > this.streamTime) {
      this.streamTime = ts
      this.punctuateStreamTime()
    }
  }

  /** Runs one record through the topology outside the queues (the test driver, global and direct inputs). */
  processOne(topic: string, raw: ConsumedRecord): void {
    this.throwIfSendFailed()
    const q = this.queues.get(`${topic}\u0000${raw.partition}`) ?? [...this.queues.values()].find((x) => x.topic === topic)
    if (q === undefined) throw new StreamsException(`task ${this.id} does not read topic '${topic}'`)
    this.processRaw(q, raw)
    this.throwIfSendFailed()
  }

  private punctuateStreamTime(): void {
    for (const s of this.streamPunctuations) {
      if (s.cancelled) continue
      if (s.next < 0) {
        // Scheduled before any record: the schedule starts at the first stream time.
        s.next = this.streamTime + s.interval
        continue
      }
      if (this.streamTime < s.next) continue
      this.runPunctuation(s, this.streamTime)
      // Kafka's PunctuationSchedule.next: skip intervals that stream time jumped over.
      s.next = s.next + s.interval * Math.max(1, Math.floor((this.streamTime - s.next) / s.interval) + 1)
    }
    this.dropCancelled(this.streamPunctuations)
  }

  /** Runs due wall-clock punctuations; returns how many ran. */
  punctuateWallClock(now: number): number {
    this.throwIfSendFailed()
    let n = 0
    for (const s of this.wallPunctuations) {
      if (s.cancelled || now < s.next) continue
      this.runPunctuation(s, now)
      s.next = s.next + s.interval * Math.max(1, Math.floor((now - s.next) / s.interval) + 1)
      n++
    }
    this.dropCancelled(this.wallPunctuations)
    return n
  }

  private runPunctuation(s: PunctuationSchedule, time: number): void {
    const prevTs = this.currentTimestamp
    this.currentTimestamp = time
    this.contextTopic = null
    this.recordSeq++
    try {
      this.withNode(s.node, () => s.punctuator(time))
    } finally {
      this.currentTimestamp = prevTs
    }
  }

  private dropCancelled(list: PunctuationSchedule[]): void {
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.cancelled) list.splice(i, 1)
  }

  private throwIfSendFailed(): void {
    if (this.sendError !== null) {
      const e = this.sendError
      this.sendError = null
      throw e
    }
  }

  /** A cached entry flushed: its listener's processor forwards it with the entry's record context. */
  private runFlushed(node: NodeInstance | null, e: CachedRecordContext, fn: () => void): void {
    const prev = [this.contextTopic, this.contextPartition, this.contextOffset, this.currentTimestamp, this.currentHeaders] as const
    this.recordSeq++
    this.contextTopic = e.topic
    this.contextPartition = e.partition
    this.contextOffset = e.offset
    this.currentTimestamp = e.changelogTimestamp
    if (e.headers !== undefined) this.currentHeaders = e.headers
    try {
      if (node === null) fn()
      else this.withNode(node, fn)
    } finally {
      ;[this.contextTopic, this.contextPartition, this.contextOffset, this.currentTimestamp, this.currentHeaders] = prev
    }
  }

  /**
   * Flushes the record caches of the task's stores (before a commit): their entries go to the stores and
   * changelogs, and downstream. Returns whether any store had entries (their records may feed other tasks).
   */
  flushCaches(): boolean {
    let any = false
    for (const s of this.stores.values()) {
      if (!(s instanceof CachingKeyValueStore) || s.dirtyCount === 0) continue
      any = true
      s.flushCache()
    }
    return any
  }

  /** Sends the stores' changelog entries to the collector; returns how many. */
  flushChangelogs(): number {
    let n = 0
    for (const s of this.stores.values()) {
      n += s.logged.drainChangelog((topic, partition, key, value, timestamp) => this.env.collector.send(topic, key, value, NO_HEADERS, timestamp, partition, this.changelogListener))
    }
    this.changelogPressure = false
    return n
  }

  /** Makes the persistent stores durable (before a checkpoint). */
  async flushStores(): Promise<void> {
    for (const s of this.stores.values()) await s.logged.flush()
  }

  /** Offsets to commit: the next offset of every partition with processed records. */
  committableOffsets(): { topic: string; partition: number; offset: number }[] {
    const offsets: { topic: string; partition: number; offset: number }[] = []
    for (const q of this.queues.values()) if (q.consumed >= 0) offsets.push({ topic: q.topic, partition: q.partition, offset: q.consumed })
    return offsets
  }

  /** Closes the processors only, handing the open stores to the caller (an active task becoming standby). */
  closeProcessorsKeepStores(): Map<string, InternalStore & StateStore> {
    const stores = new Map(this.stores)
    this.stores.clear()
    this.close()
    return stores
  }

  /** Closes processors and stores; the caller has committed (or is abandoning) the task's work. */
  close(): void {
    if (this.closed) return
    this.closed = true
    for (const n of this.nodes.values()) {
      if (n.processor?.close === undefined) continue
      try {
        this.withNode(n, () => n.processor!.close!())
      } catch (err) {
        this.env.log.warn({ task: this.id.toString(), processor: n.def.name, err: (err as Error).message }, 'a processor failed to close')
      }
    }
    for (const s of this.stores.values()) s.close()
  }

  get isClosed(): boolean {
    return this.closed
  }
}

/** Kafka's default partitioner for keyed records: murmur2 of the key bytes (the same as the client's). */
export function defaultPartition(key: Buffer, numPartitions: number): number {
  return toPositive(murmur2(key)) % numPartitions
}
