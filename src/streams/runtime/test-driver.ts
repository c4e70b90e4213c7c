// TopologyTestDriver (Kafka's, from kafka-streams-test-utils): runs a topology without a broker. Every
// sub-topology gets one task on partition 0; a record piped into a topic goes through its task at once,
// with the real processors and stores (persistent ones in a temporary state directory). What sinks
// write is captured per topic and read back with TestOutputTopic; records written to the topology's
// internal repartition topics are fed back into the tasks that read them, and each piped record ends
// with a commit (the stores' changelog records are captured too, under their changelog topics). Records
// written to a user topic that the topology also reads (through()) are both captured and fed back.
// Wall-clock time is the driver's own: advanceWallClockTime moves it and fires wall-clock punctuations.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { ConsumedRecord, Header } from '../../client/record-batches.js'
import { StreamsException } from '../core/errors.js'
import { Headers } from '../core/headers.js'
import { KeyValue } from '../core/record.js'
import type { Deserializer, Serializer } from '../core/serdes.js'
import type { Subtopology, Topology } from '../processor/topology.js'
import type { KeyValueStore, SessionStore, StateStore, TimestampedKeyValueStore, WindowStore } from '../state/stores.js'
import { ThreadCache } from '../state/caching.js'
import { StreamsConfig, type StreamsConfigInput } from './config.js'
import { StreamTask, defaultPartition, type RecordCollector, type TaskEnvironment } from './task.js'

/** A record as the driver captured it (Kafka's TestRecord). */
export interface TestRecord<K, V> {
  key: K | null
  value: V | null
  timestamp: number
  headers: Header[]
}

interface Captured {
  key: Buffer | null
  value: Buffer | null
  timestamp: number
  headers: Header[]
  partition: number
}

export class TopologyTestDriver {
  private readonly config: StreamsConfig
  private readonly tasks: StreamTask[] = []
  private readonly globalTask: StreamTask | null = null
  private readonly stateDir: string
  private readonly outputs = new Map<string, Captured[]>()
  private readonly produced = new Set<string>()
  private readonly internalQueue: { topic: string; record: Captured }[] = []
  private readonly offsets = new Map<string, number>()
  private wallClock: number
  private closed = false

  constructor(
    readonly topology: Topology,
    config: StreamsConfigInput = {},
    initialWallClockTimeMs = Date.now(),
  ) {
    const input: Record<string, unknown> = config instanceof Map ? Object.fromEntries(config) : { ...config }
    input['application.id'] ??= 'topology-test-driver'
    this.config = new StreamsConfig(input, { requireBootstrap: false })
    this.wallClock = initialWallClockTimeMs
    this.stateDir = mkdtempSync(join(tmpdir(), 'skein-ttd-'))
    const appId = this.config.applicationId
    const collector: RecordCollector = {
      send: (topic, key, value, headers, timestamp, partition) => {
        const record: Captured = { key, value, headers: [...headers], timestamp, partition: partition ?? (key === null ? 0 : defaultPartition(key, 1)) }
        this.produced.add(topic)
        const internal = this.internalTopicName(topic)
        if (internal !== null) {
          this.internalQueue.push({ topic, record })
          return
        }
        let list = this.outputs.get(topic)
        if (list === undefined) this.outputs.set(topic, (list = []))
        list.push(record)
        // A user topic the topology also reads (through()): it is fed back, as Kafka's driver does.
        if (this.taskFor(topic) !== null) this.internalQueue.push({ topic, record })
      },
      partitionsFor: () => 1,
    }
    const cache = new ThreadCache(this.config.cacheMaxBytes)
    const envFor = (taskDir: string): TaskEnvironment => ({
      applicationId: appId,
      appConfigs: this.config.originals,
      resolveTopic: (name) => (topology.repartitionTopics.has(name) ? `${appId}-${name}` : name),
      changelogTopic: (store) => `${appId}-${store}-changelog`,
      collector,
      wallClock: () => this.wallClock,
      globalStore: (name) => (this.globalTask?.stores.get(name) as StateStore | undefined) ?? undefined,
      taskDir,
      defaultKeySerde: this.config.defaultKeySerde,
      defaultValueSerde: this.config.defaultValueSerde,
      deserializationHandler: this.config.deserializationHandler,
      productionHandler: this.config.productionHandler,
      log: this.config.log,
      cache,
    })
    if (topology.globalStores.length > 0) {
      const nodes = topology.globalStores.flatMap((g) => [topology.nodes.get(g.sourceName)!, topology.nodes.get(g.processorName)!])
      const sub: Subtopology = { id: -1, nodes, sourceTopics: topology.globalStores.map((g) => g.topic), stores: topology.globalStores.map((g) => g.storeName) }
      this.globalTask = new StreamTask(topology, sub, 0, envFor(join(this.stateDir, appId, 'global')))
      this.globalTask.initializeProcessors()
    }
    for (const sub of topology.subtopologies()) {
      const task = new StreamTask(topology, sub, 0, envFor(join(this.stateDir, appId, `${sub.id}_0`)))
      task.initializeProcessors()
      this.tasks.push(task)
    }
  }

  private internalTopicName(topic: string): string | null {
    const prefix = `${this.config.applicationId}-`
    if (!topic.startsWith(prefix)) return null
    const name = topic.slice(prefix.length)
    return this.topology.repartitionTopics.has(name) ? name : null
  }

  private taskFor(topic: string): StreamTask | null {
    for (const t of this.tasks) if (t.inputPartitions().some((p) => p.topic === topic)) return t
    if (this.globalTask !== null && this.globalTask.inputPartitions().some((p) => p.topic === topic)) return this.globalTask
    return null
  }

  /** Pipes one record (bytes) into a topic and runs everything it causes. */
  pipeRaw(topic: string, key: Buffer | null, value: Buffer | null, timestamp: number, headers: Header[] = []): void {
    if (this.closed) throw new StreamsException('the driver is closed')
    const task = this.taskFor(topic)
    if (task === null) throw new StreamsException(`unknown topic '${topic}': no source of the topology reads it`)
    this.deliver(task, topic, { key, value, timestamp, headers, partition: 0 })
    this.completeWork()
  }

  /**
   * Runs what the last input caused, then commits as Kafka's driver does after each input: the record
   * caches flush (their records may feed repartition topics: processed too) and the changelogs are sent.
   */
  private completeWork(): void {
    do {
      while (this.internalQueue.length > 0) {
        const { topic: t, record } = this.internalQueue.shift()!
        const next = this.taskFor(t)
        if (next === null) continue
        this.deliver(next, t, record)
      }
      for (const t of this.tasks) t.flushCaches()
    } while (this.internalQueue.length > 0)
    for (const t of this.tasks) t.flushChangelogs()
  }

  private deliver(task: StreamTask, topic: string, r: Captured): void {
    const offset = this.offsets.get(topic) ?? 0
    this.offsets.set(topic, offset + 1)
    const raw: ConsumedRecord = { topic, partition: 0, offset, timestamp: r.timestamp, timestampType: 'CreateTime', key: r.key, value: r.value, headers: r.headers, leaderEpoch: 0 }
    task.processOne(topic, raw)
  }

  /** Moves the driver's wall clock and runs the wall-clock punctuations that are due. */
  advanceWallClockTime(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('time can only move forward')
    this.wallClock += ms
    for (const t of this.tasks) t.punctuateWallClock(this.wallClock)
    this.completeWork()
  }

  createInputTopic<K, V>(topic: string, keySerializer: Serializer<K>, valueSerializer: Serializer<V>, startTimestampMs = this.wallClock, autoAdvanceMs = 0): TestInputTopic<K, V> {
    return new TestInputTopic(this, topic, keySerializer, valueSerializer, startTimestampMs, autoAdvanceMs)
  }

  createOutputTopic<K, V>(topic: string, keyDeserializer: Deserializer<K>, valueDeserializer: Deserializer<V>): TestOutputTopic<K, V> {
    return new TestOutputTopic(this, topic, keyDeserializer, valueDeserializer)
  }

  /** @internal The captured records of a topic, taken from the front. */
  take(topic: string, max: number): Captured[] {
    const list = this.outputs.get(topic)
    if (list === undefined) return []
    return list.splice(0, max)
  }

  /** @internal */
  queued(topic: string): number {
    return this.outputs.get(topic)?.length ?? 0
  }

  /** Topics written so far (sinks, repartition and changelog topics). */
  producedTopicNames(): Set<string> {
    return new Set(this.produced)
  }

  getStateStore<S extends StateStore = StateStore>(name: string): S | null {
    for (const t of [...this.tasks, ...(this.globalTask !== null ? [this.globalTask] : [])]) {
      const s = t.stores.get(name)
      if (s !== undefined) return s as unknown as S
    }
    return null
  }

  getKeyValueStore<K, V>(name: string): KeyValueStore<K, V> | null {
    return this.getStateStore<KeyValueStore<K, V>>(name)
  }

  getTimestampedKeyValueStore<K, V>(name: string): TimestampedKeyValueStore<K, V> | null {
    return this.getStateStore<TimestampedKeyValueStore<K, V>>(name)
  }

  getWindowStore<K, V>(name: string): WindowStore<K, V> | null {
    return this.getStateStore<WindowStore<K, V>>(name)
  }

  getSessionStore<K, V>(name: string): SessionStore<K, V> | null {
    return this.getStateStore<SessionStore<K, V>>(name)
  }

  /** Closes processors and stores and removes the temporary state directory. */
  close(): void {
    if (this.closed) return
    this.closed = true
    for (const t of this.tasks) t.close()
    this.globalTask?.close()
    rmSync(this.stateDir, { recursive: true, force: true })
  }
}

export class TestInputTopic<K, V> {
  private nextTimestamp: number

  constructor(
    private readonly driver: TopologyTestDriver,
    readonly topic: string,
    private readonly keySerializer: Serializer<K>,
    private readonly valueSerializer: Serializer<V>,
    startTimestampMs: number,
    private readonly autoAdvanceMs: number,
  ) {
    this.nextTimestamp = startTimestampMs
  }

  /** Pipes one record; without a timestamp it gets the topic's current time, then time auto-advances. */
  pipeInput(key: K | null, value: V | null, timestamp?: number, headers?: Headers | Header[]): void {
    const ts = timestamp ?? this.nextTimestamp
    if (timestamp === undefined) this.nextTimestamp += this.autoAdvanceMs
    const h = headers instanceof Headers ? headers : new Headers(headers ?? [])
    this.driver.pipeRaw(this.topic, this.keySerializer.serialize(this.topic, key, h), this.valueSerializer.serialize(this.topic, value, h), ts, h.toArray())
  }

  /** A value without key. */
  pipeValue(value: V | null, timestamp?: number): void {
    this.pipeInput(null, value, timestamp)
  }

  pipeKeyValueList(list: readonly KeyValue<K, V>[]): void {
    for (const kv of list) this.pipeInput(kv.key, kv.value)
  }

  pipeValueList(list: readonly V[]): void {
    for (const v of list) this.pipeInput(null, v)
  }

  advanceTime(ms: number): void {
    this.nextTimestamp += ms
  }
}

export class TestOutputTopic<K, V> {
  constructor(
    private readonly driver: TopologyTestDriver,
    readonly topic: string,
    private readonly keyDeserializer: Deserializer<K>,
    private readonly valueDeserializer: Deserializer<V>,
  ) {}

  readRecord(): TestRecord<K, V> {
    const r = this.driver.take(this.topic, 1)[0]
    if (r === undefined) throw new StreamsException(`no more records in topic '${this.topic}'`)
    const h = new Headers(r.headers)
    return { key: this.keyDeserializer.deserialize(this.topic, r.key, h), value: this.valueDeserializer.deserialize(this.topic, r.value, h), timestamp: r.timestamp, headers: r.headers }
  }

  readKeyValue(): KeyValue<K | null, V | null> {
    const r = this.readRecord()
    return new KeyValue(r.key, r.value)
  }

  readValue(): V | null {
    return this.readRecord().value
  }

  readRecordsToList(): TestRecord<K, V>[] {
    const out: TestRecord<K, V>[] = []
    while (!this.isEmpty()) out.push(this.readRecord())
    return out
  }

  readKeyValuesToList(): KeyValue<K | null, V | null>[] {
    return this.readRecordsToList().map((r) => new KeyValue(r.key, r.value))
  }

  readValuesToList(): (V | null)[] {
    return this.readRecordsToList().map((r) => r.value)
  }

  /** The last value per key (a table's final state); a null value removes the key. */
  readKeyValuesToMap(): Map<K, V> {
    const out = new Map<K, V>()
    for (const r of this.readRecordsToList()) {
      if (r.key === null) throw new StreamsException('readKeyValuesToMap: a record has a null key')
      if (r.value === null) out.delete(r.key)
      else out.set(r.key, r.value)
    }
    return out
  }

  getQueueSize(): number {
    return this.driver.queued(this.topic)
  }

  isEmpty(): boolean {
    return this.getQueueSize() === 0
  }
}
