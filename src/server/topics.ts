// Topic lifecycle on this broker: create (with configs and validate-only), delete, add partitions,
// change configs, auto-create. The TopicStore is written first and the partitions second, so a crash in
// between leaves a topic whose missing partitions are created again at the next start (recover()).
// CreateTopics and CreatePartitions are all-or-nothing: when a partition cannot be created, the ones
// created by the request are deleted again and the store entry (or partition count) is put back, so a
// failure leaves nothing behind, and is logged once.
import type { BrokerConfig } from '../config/broker-config.js'
import { ConfigException } from '../config/config-def.js'
import { logConfigOverrides } from '../config/log-config.js'
import { validateTopicConfigs, type TopicConfigOverrides } from '../config/topic-configs.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import type { ShardRouter } from '../shard/router.js'
import { strayDirectories, validateTopicName } from '../storage/index.js'
import type { TopicRecord, TopicStore } from '../cluster/topic-store.js'
import type { CreateTopicRequest, TopicAdmin } from './handlers/common/ports.js'

/** Topics Kafka treats as internal (Metadata isInternal, not auto-created by clients). */
export const INTERNAL_TOPICS = new Set(['__consumer_offsets', '__transaction_state'])

export class TopicManager implements TopicAdmin {
  constructor(
    private readonly store: TopicStore,
    private readonly router: ShardRouter,
    private config: BrokerConfig,
    private readonly brokerId: number,
    private readonly log: Logger,
  ) {}

  setBrokerConfig(config: BrokerConfig): void {
    this.config = config
  }

  get(name: string): TopicRecord | undefined {
    return this.store.get(name)
  }

  getById(topicId: string): TopicRecord | undefined {
    return this.store.getById(topicId)
  }

  list(): TopicRecord[] {
    return this.store.list()
  }

  /** Validated overrides of a topic (what its stored config strings mean). */
  overrides(topic: TopicRecord): TopicConfigOverrides {
    return validateTopicConfigs(topic.configs)
  }

  /**
   * Makes the shards match the store after a restart: partitions the store lists but the disk lacks are
   * created; partition directories the store does not list (a deleted topic whose rename a crash cut
   * short, a lost or older cluster-metadata.json) are never served: they are moved aside, renamed
   * `<topic>-<partition>.<uuid>-stray` and kept on disk (Kafka's stray logs), with one warning, so no
   * data is dropped and nothing deleted comes back; every partition gets its topic's config overrides.
   */
  async recover(): Promise<void> {
    const onDisk = await this.router.states()
    const strays = onDisk
      .filter((s) => {
        const t = this.store.get(s.topic)
        return t === undefined || s.partition >= t.partitions
      })
      .map((s) => ({ topic: s.topic, partition: s.partition }))
    let moved = 0
    if (strays.length > 0) {
      const results = await this.router.moveAside(strays)
      const done = strays.filter((_, i) => results[i]!.ok)
      moved = done.length
      if (moved > 0) {
        this.log.warn(
          { partitions: moved, topics: [...new Set(done.map((s) => s.topic))].slice(0, 10), dataDir: this.router.dataDir },
          'partition directories not listed in cluster-metadata.json were moved aside as <topic>-<partition>.<id>-stray: kept on disk, not served',
        )
      }
      const failed = results.find((r) => !r.ok)
      if (failed !== undefined && !failed.ok) {
        this.log.error({ partitions: strays.length - moved, error: failed.message }, 'cannot move partition directories not listed in cluster-metadata.json aside')
      }
    }
    const earlier = strayDirectories(this.router.dataDir).length - moved
    if (earlier > 0) {
      this.log.warn({ directories: earlier, dataDir: this.router.dataDir }, 'stray partition directories (<topic>-<partition>.<id>-stray) of earlier starts are kept: remove them when no longer needed')
    }
    for (const topic of this.store.list()) {
      const overrides = logConfigOverrides(this.overrides(topic))
      const items = Array.from({ length: topic.partitions }, (_, partition) => ({ topic: topic.name, partition, overrides }))
      const results = await this.router.createPartitions(items)
      // The broker starts with the rest: one line per topic says which partitions stay offline.
      const failed = results.flatMap((r, partition) => (r.ok ? [] : [{ partition, error: r.message }]))
      if (failed.length > 0) {
        this.log.error(
          { topic: topic.name, failed: failed.length, partitions: failed.slice(0, 10).map((f) => f.partition), error: failed[0]!.error },
          'cannot open partitions listed in cluster-metadata.json',
        )
      }
    }
  }

  /** Creates a topic, or only validates the request. Throws KafkaError with the code Kafka uses. */
  async create(req: CreateTopicRequest): Promise<TopicRecord> {
    validateTopicName(req.name)
    if (this.store.get(req.name) !== undefined) throw new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${req.name}' already exists.`)
    let partitions: number
    let replicationFactor: number
    if (req.assignments !== undefined && req.assignments.length > 0) {
      if (req.numPartitions !== -1 || req.replicationFactor !== -1) {
        throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.')
      }
      partitions = req.assignments.length
      const sorted = [...req.assignments].sort((a, b) => a.partitionIndex - b.partitionIndex)
      for (const [i, a] of sorted.entries()) {
        if (a.partitionIndex !== i) throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'Partitions should be a consecutive 0-based integer sequence')
      }
      replicationFactor = sorted[0]!.brokerIds.length
      for (const a of sorted) this.checkAssignment(a.brokerIds, replicationFactor)
    } else {
      partitions = req.numPartitions === -1 ? this.config.getInt('num.partitions') : req.numPartitions
      replicationFactor = req.replicationFactor === -1 ? this.config.getInt('default.replication.factor') : req.replicationFactor
      if (partitions <= 0) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, 'Number of partitions must be larger than 0.')
      if (replicationFactor <= 0) throw new KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0.')
      if (replicationFactor > 1) {
        throw new KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, `Replication factor: ${replicationFactor} larger than available brokers: 1.`)
      }
    }
    if (partitions > 100_000) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Number of partitions ${partitions} is too large.`)
    const configs = this.checkConfigs(req.configs)
    this.checkRoom(partitions)
    if (req.validateOnly) {
      return { name: req.name, topicId: '', partitions, replicationFactor, configs, createdAt: Date.now() }
    }
    const record = this.store.create({ name: req.name, partitions, replicationFactor, configs })
    try {
      await this.openPartitions(record, 0, partitions)
    } catch (err) {
      this.store.delete(req.name)
      this.log.error({ topic: req.name, partitions, error: (err as Error).message }, 'cannot create topic: nothing was kept')
      throw err
    }
    this.log.info({ topic: req.name, partitions, replicationFactor, configs }, 'created topic')
    return record
  }

  /** Metadata's auto-creation (auto.create.topics.enable) with num.partitions and broker defaults. */
  async autoCreate(name: string): Promise<TopicRecord> {
    return this.create({ name, numPartitions: -1, replicationFactor: -1, configs: {}, validateOnly: false })
  }

  async delete(name: string): Promise<void> {
    const topic = this.store.get(name)
    if (topic === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`)
    if (!this.config.getBoolean('delete.topic.enable')) throw new KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, 'Topic deletion is disabled.')
    this.store.delete(name)
    const items = Array.from({ length: topic.partitions }, (_, partition) => ({ topic: name, partition }))
    const results = await this.router.deletePartitions(items)
    const failed = results.flatMap((r, partition) => (r.ok || r.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION ? [] : [{ partition, error: r.message }]))
    if (failed.length > 0) {
      this.log.error({ topic: name, failed: failed.length, partitions: failed.slice(0, 10).map((f) => f.partition), error: failed[0]!.error }, 'cannot delete partitions')
    }
    this.log.info({ topic: name }, 'deleted topic')
  }

  /** CreatePartitions: grow a topic to `count` partitions. */
  async addPartitions(name: string, count: number, assignments: number[][] | null, validateOnly: boolean): Promise<void> {
    const topic = this.store.get(name)
    if (topic === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${name}' does not exist.`)
    if (count < topic.partitions) {
      throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Topic currently has ${topic.partitions} partitions, which is higher than the requested ${count}.`)
    }
    if (count === topic.partitions) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Topic already has ${topic.partitions} partitions.`)
    if (count > 100_000) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Number of partitions ${count} is too large.`)
    if (assignments !== null) {
      if (assignments.length !== count - topic.partitions) {
        throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, `Increasing the number of partitions by ${count - topic.partitions} but ${assignments.length} assignments provided.`)
      }
      for (const a of assignments) this.checkAssignment(a, topic.replicationFactor)
    }
    this.checkRoom(count - topic.partitions)
    if (validateOnly) return
    const before = topic.partitions
    this.store.setPartitions(name, count)
    try {
      await this.openPartitions(topic, before, count)
    } catch (err) {
      this.store.setPartitions(name, before)
      this.log.error({ topic: name, from: before, to: count, error: (err as Error).message }, 'cannot add partitions: nothing was kept')
      throw err
    }
    this.log.info({ topic: name, from: before, to: count }, 'added partitions')
  }

  /** Replaces a topic's config overrides (AlterConfigs semantics; incremental callers merge first). */
  async setConfigs(name: string, configs: Record<string, string | null>, validateOnly: boolean): Promise<void> {
    const topic = this.store.get(name)
    if (topic === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic ${name} does not exist.`)
    const checked = this.checkConfigs(configs)
    if (validateOnly) return
    this.store.setConfigs(name, checked)
    // Fields no longer overridden fall back to the broker default, so send the complete LogConfig.
    const full = this.config.logConfig(validateTopicConfigs(checked))
    const items = Array.from({ length: topic.partitions }, (_, partition) => ({ topic: name, partition, overrides: full }))
    await this.router.updateConfigs(items)
  }

  /** Pushes new broker-level defaults to every partition (dynamic broker config change). */
  async refreshAllLogConfigs(): Promise<void> {
    for (const topic of this.store.list()) {
      let full
      try {
        full = this.config.logConfig(this.overrides(topic))
      } catch (err) {
        // The topic's own overrides conflict with the new defaults (min.compaction.lag.ms above the new
        // max, ...): it keeps running with its current settings, as storage kept them before.
        this.log.error({ topic: topic.name, error: (err as Error).message }, 'topic keeps its log config: it conflicts with the new broker defaults')
        continue
      }
      const items = Array.from({ length: topic.partitions }, (_, partition) => ({ topic: topic.name, partition, overrides: full }))
      await this.router.updateConfigs(items)
    }
  }

  /**
   * Creates partitions [from, to) of topic, all or none: when one fails, those this call created are
   * deleted again and one KafkaError says how many failed and why the first did.
   */
  private async openPartitions(topic: TopicRecord, from: number, to: number): Promise<void> {
    // The complete LogConfig: the shards' defaults are the broker config of startup, and dynamic broker
    // changes since then must reach new partitions too.
    const overrides = this.config.logConfig(this.overrides(topic))
    const items = []
    for (let p = from; p < to; p++) items.push({ topic: topic.name, partition: p, overrides })
    const results = await this.router.createPartitions(items)
    const failedAt = results.findIndex((r) => !r.ok)
    if (failedAt < 0) return
    const first = results[failedAt]!
    const failures = results.filter((r) => !r.ok).length
    const created = items.filter((_, i) => results[i]!.ok)
    const undone = await this.router.deletePartitions(created)
    const stuck = undone.filter((r) => !r.ok).length
    if (stuck > 0) this.log.error({ topic: topic.name, partitions: stuck }, 'cannot delete partitions of a failed creation again')
    const code = first.ok ? ErrorCode.UNKNOWN_SERVER_ERROR : (first.errorCode as ErrorCode)
    const why = first.ok ? '' : first.message.replace(/^[A-Z_]+: /, '')
    throw new KafkaError(code, `${failures} of ${to - from} partitions of topic '${topic.name}' could not be created, none was kept (partition ${from + failedAt}: ${why})`)
  }

  /** Refuses a request for more new partitions than the data directory's filesystem holds. */
  private checkRoom(newPartitions: number): void {
    const room = this.router.roomForPartitions()
    if (newPartitions > room) {
      throw new KafkaError(
        ErrorCode.INVALID_PARTITIONS,
        `${newPartitions} new partitions do not fit in ${this.router.dataDir}: its filesystem has room for ${room} more (free inodes and blocks).`,
      )
    }
  }

  private checkAssignment(brokerIds: number[], replicationFactor: number): void {
    if (brokerIds.length !== replicationFactor) {
      throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'All partitions should have the same number of replicas')
    }
    if (new Set(brokerIds).size !== brokerIds.length) throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'Duplicate brokers not allowed in replica assignment')
    for (const id of brokerIds) {
      if (id !== this.brokerId) throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, `Unknown broker id ${id} in replica assignment`)
    }
  }

  /**
   * Validates configs, alone and as the effective LogConfig over this broker's defaults (so nothing the
   * storage would refuse reaches the store), and returns them as the strings to store; a bad one throws
   * INVALID_CONFIG.
   */
  private checkConfigs(configs: Record<string, string | null>): Record<string, string> {
    try {
      this.config.logConfig(validateTopicConfigs(configs))
    } catch (err) {
      if (err instanceof ConfigException) throw err
      throw new KafkaError(ErrorCode.INVALID_CONFIG, (err as Error).message)
    }
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(configs)) if (v !== null) out[k] = v
    return out
  }
}
