// Global stores (Kafka's GlobalStreamThread and GlobalStateManager): every instance reads every partition
// of each global table's topic into its own copy of the store. start() first brings the stores up to the
// topics' end (bootstrapping: stream threads start only after it), then a loop follows the topics. The
// topic is the store's changelog: offsets are checkpointed in <state.dir>/<application.id>/global/
// .checkpoint after each flush, so a restart reads only what came after.
import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { Consumer } from '../../client/consumer.js'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, listOffsets, tpKey } from '../../client/offsets.js'
import type { Subtopology, Topology } from '../processor/topology.js'
import { OffsetCheckpoint } from '../state/checkpoint.js'
import type { StateStore } from '../state/stores.js'
import type { StreamsConfig } from './config.js'
import { StreamTask, type TaskEnvironment } from './task.js'

export class GlobalStreamThread {
  private readonly task: StreamTask
  private readonly consumer: Consumer
  private readonly dir: string
  private stopping = false
  private loop: Promise<void> | null = null
  private lastFlush = Date.now()

  constructor(
    private readonly topology: Topology,
    private readonly config: StreamsConfig,
    private readonly partitions: ReadonlyMap<string, number>,
  ) {
    this.dir = join(config.stateDir, config.applicationId, 'global')
    const nodes = topology.globalStores.flatMap((g) => [topology.nodes.get(g.sourceName)!, topology.nodes.get(g.processorName)!])
    const sub: Subtopology = { id: -1, nodes, sourceTopics: topology.globalStores.map((g) => g.topic), stores: topology.globalStores.map((g) => g.storeName) }
    const env: TaskEnvironment = {
      applicationId: config.applicationId,
      appConfigs: config.originals,
      resolveTopic: (n) => n,
      changelogTopic: (s) => s,
      collector: {
        send: () => {
          throw new Error('a global store processor cannot forward records')
        },
        partitionsFor: () => undefined,
      },
      wallClock: () => Date.now(),
      globalStore: () => undefined,
      taskDir: this.dir,
      defaultKeySerde: config.defaultKeySerde,
      defaultValueSerde: config.defaultValueSerde,
      deserializationHandler: config.deserializationHandler,
      productionHandler: config.productionHandler,
      log: config.log,
    }
    this.task = new StreamTask(topology, sub, 0, env)
    this.consumer = new Consumer({ bootstrapServers: config.bootstrapServers, clientId: `${config.clientId}-GlobalStreamThread`, autoOffsetReset: 'earliest', isolationLevel: config.exactlyOnce ? 'read_committed' : 'read_uncommitted', maxPollRecords: 10_000, fetchMaxWaitMs: Math.max(1, Math.min(500, config.pollMs)) })
  }

  store(name: string): StateStore | undefined {
    return this.task.stores.get(name)
  }

  private tps(): { topic: string; partition: number }[] {
    return this.topology.globalStores.flatMap((g) => Array.from({ length: this.partitions.get(g.topic) ?? 0 }, (_, partition) => ({ topic: g.topic, partition })))
  }

  /** Opens the stores and reads the global topics up to their current end. */
  async bootstrap(): Promise<void> {
    mkdirSync(this.dir, { recursive: true })
    const tps = this.tps()
    const checkpoint = new OffsetCheckpoint(this.dir).read()
    const complete = tps.every((tp) => checkpoint.has(tpKey(tp.topic, tp.partition)))
    if (!complete) rmSync(join(this.dir, 'lmdb'), { recursive: true, force: true })
    this.task.initializeProcessors()
    this.consumer.assign(tps)
    const isolation = this.config.exactlyOnce ? 1 : 0
    const begins = await listOffsets(this.consumer.cluster, tps.map((tp) => ({ ...tp, timestamp: EARLIEST_TIMESTAMP })), isolation)
    for (const tp of tps) {
      const at = complete ? checkpoint.get(tpKey(tp.topic, tp.partition))! : 0
      this.consumer.seek(tp.topic, tp.partition, Math.max(at, begins.get(tpKey(tp.topic, tp.partition))?.offset ?? 0))
    }
    const ends = await listOffsets(this.consumer.cluster, tps.map((tp) => ({ ...tp, timestamp: LATEST_TIMESTAMP })), isolation)
    const behind = (): boolean => tps.some((tp) => (this.consumer.position(tp.topic, tp.partition) ?? 0) < (ends.get(tpKey(tp.topic, tp.partition))?.offset ?? 0))
    while (behind()) await this.pollOnce(100)
    await this.flush()
  }

  private async pollOnce(timeoutMs: number): Promise<void> {
    const records = await this.consumer.poll(timeoutMs)
    for (const r of records) this.task.processOne(r.topic, r)
  }

  private async flush(): Promise<void> {
    await this.task.flushStores()
    const offsets = new Map<string, number>()
    for (const tp of this.tps()) {
      const p = this.consumer.position(tp.topic, tp.partition)
      if (p !== null) offsets.set(tpKey(tp.topic, tp.partition), p)
    }
    new OffsetCheckpoint(this.dir).write(offsets)
    this.lastFlush = Date.now()
  }

  /** Follows the global topics until stop(); onError gets a failure that ends the loop. */
  start(onError: (err: Error) => void): void {
    this.loop = (async () => {
      try {
        while (!this.stopping) {
          await this.pollOnce(this.config.pollMs)
          if (Date.now() - this.lastFlush >= this.config.commitIntervalMs) await this.flush()
        }
      } catch (err) {
        if (!this.stopping) onError(err as Error)
      }
    })()
  }

  async stop(): Promise<void> {
    this.stopping = true
    await this.loop
    try {
      await this.flush()
    } finally {
      this.task.close()
      await this.consumer.close().catch(() => {})
    }
  }
}
