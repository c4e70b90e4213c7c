// Topic administration on this broker, as Kafka does it in ZooKeeper mode: the broker validates the
// request and writes it to the metadata store (the topic's config and replica assignment, the deletion
// queue, partitions added to the assignment, a config plus its change notification); the controller
// acts on it (partition states, LeaderAndIsr, UpdateMetadata, StopReplica), and the broker answers once
// the change is visible in its own metadata, or with REQUEST_TIMED_OUT when the request's timeout passes
// first (the change stays in the store and completes later).
//
// Replicas are placed by Kafka's assignment (replica-assignment.ts) over the live brokers this broker's
// metadata lists; a replication factor above their number is INVALID_REPLICATION_FACTOR. A broker
// without ZooKeeper is a cluster of one: the same path runs over the embedded store, where the controller
// is in this process and answers at once (so a timeout of 0 still waits for it).
//
// Reads (get, list) answer from the metadata image.
import type { BrokerConfig } from '../config/broker-config.js'
import { ConfigException } from '../config/config-def.js'
import { validateTopicConfigs, type TopicConfigOverrides } from '../config/topic-configs.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { randomKafkaUuid } from '../domain/uuid.js'
import type { Logger } from '../observability/logger.js'
import type { ShardRouter } from '../shard/router.js'
import { validateTopicName } from '../storage/index.js'
import type { BrokerControlPlane } from './control-plane.js'
import { INTERNAL_TOPICS, type ImageTopic, type MetadataImage } from '../cluster/metadata-image.js'
import { TopicExistsError, UnknownTopicError, type MetadataStore, type ReplicaAssignment } from '../cluster/metadata-store.js'
import { assignReplicasToBrokers, startIndexForNewPartitions, type BrokerPlacement } from '../cluster/replica-assignment.js'
import type { CreateTopicRequest, TopicAdmin, TopicInfo } from './handlers/common/ports.js'

export { INTERNAL_TOPICS }

/** Default wait for an admin change to show in the metadata (Kafka clients' default request timeout). */
const DEFAULT_TIMEOUT_MS = 30_000
/** Metadata's auto-creation waits this long for the new topic's leaders. */
const AUTO_CREATE_WAIT_MS = 10_000
const MAX_PARTITIONS = 100_000

export class TopicManager implements TopicAdmin {
  constructor(
    private readonly store: MetadataStore,
    private readonly image: MetadataImage,
    private readonly control: BrokerControlPlane,
    private config: BrokerConfig,
    private readonly log: Logger,
  ) {}

  setBrokerConfig(config: BrokerConfig): void {
    this.config = config
  }

  get(name: string): ImageTopic | undefined {
    return this.image.topic(name)
  }

  getById(topicId: string): ImageTopic | undefined {
    return this.image.topicById(topicId)
  }

  list(): readonly ImageTopic[] {
    return this.image.topics()
  }

  /** Validated overrides of a topic (what its stored config strings mean). */
  overrides(topic: TopicInfo): TopicConfigOverrides {
    return validateTopicConfigs(topic.configs)
  }

  /**
   * A single broker's recovery before its controller starts: partition directories on disk that the
   * store does not list (a lost metadata file) are adopted as topics on this broker, never deleted, so no
   * data is dropped silently.
   */
  static async adoptOrphanPartitions(store: MetadataStore, router: ShardRouter, brokerId: number, log: Logger): Promise<void> {
    const known = new Set(await store.getTopicNames())
    const onDisk = new Map<string, number>()
    for (const s of await router.states()) onDisk.set(s.topic, Math.max(onDisk.get(s.topic) ?? 0, s.partition + 1))
    for (const [topic, partitions] of onDisk) {
      if (known.has(topic)) continue
      log.warn({ topic, partitions }, `adopting partition directories not listed in ${store.description}`)
      await store.createTopic(
        { name: topic, topicId: randomKafkaUuid(), partitions: Array.from({ length: partitions }, () => ({ replicas: [brokerId], addingReplicas: [], removingReplicas: [] })) },
        {},
      )
    }
  }

  /** Creates a topic, or only validates the request. Throws KafkaError with the code Kafka uses. */
  async create(req: CreateTopicRequest): Promise<TopicInfo> {
    validateTopicName(req.name)
    if (this.image.topic(req.name) !== undefined) throw new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${req.name}' already exists.`)
    this.#checkNoCollision(req.name)
    let assignment: number[][]
    if (req.assignments !== undefined && req.assignments.length > 0) {
      if (req.numPartitions !== -1 || req.replicationFactor !== -1) {
        throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.')
      }
      const sorted = [...req.assignments].sort((a, b) => a.partitionIndex - b.partitionIndex)
      for (const [i, a] of sorted.entries()) {
        if (a.partitionIndex !== i) throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'Partitions should be a consecutive 0-based integer sequence')
      }
      if (sorted.length > MAX_PARTITIONS) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Number of partitions ${sorted.length} is too large.`)
      const replicationFactor = sorted[0]!.brokerIds.length
      for (const a of sorted) this.#checkAssignment(a.brokerIds, replicationFactor)
      assignment = sorted.map((a) => [...a.brokerIds])
    } else {
      const partitions = req.numPartitions === -1 ? this.config.getInt('num.partitions') : req.numPartitions
      const replicationFactor = req.replicationFactor === -1 ? this.config.getInt('default.replication.factor') : req.replicationFactor
      if (partitions <= 0) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, 'Number of partitions must be larger than 0.')
      if (replicationFactor <= 0) throw new KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0.')
      if (partitions > MAX_PARTITIONS) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Number of partitions ${partitions} is too large.`)
      assignment = assignReplicasToBrokers(this.#placements(), partitions, replicationFactor)
    }
    const configs = this.#checkConfigs(req.configs)
    const partitions = assignment.length
    const replicationFactor = assignment[0]?.length ?? 0
    if (req.validateOnly) return { name: req.name, topicId: '', partitions, replicationFactor, configs }
    const topicId = randomKafkaUuid()
    try {
      await this.store.createTopic({ name: req.name, topicId, partitions: assignment.map(toReplicaAssignment) }, configs)
    } catch (err) {
      if (err instanceof TopicExistsError) throw new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, err.message)
      throw err
    }
    this.log.info({ topic: req.name, partitions, replicationFactor, configs }, 'created topic')
    const ready = await this.image.waitFor(() => this.#hasLeaders(req.name, partitions), this.#waitMs(req.timeoutMs))
    if (!ready && (req.timeoutMs ?? DEFAULT_TIMEOUT_MS) > 0) {
      throw new KafkaError(ErrorCode.REQUEST_TIMED_OUT, `Topic '${req.name}' was created but its partitions had no leaders within the timeout.`)
    }
    return this.image.topic(req.name) ?? { name: req.name, topicId, partitions, replicationFactor, configs }
  }

  /** Metadata's auto-creation (auto.create.topics.enable) with num.partitions and broker defaults. */
  async autoCreate(name: string): Promise<TopicInfo> {
    return this.create({ name, numPartitions: -1, replicationFactor: -1, configs: {}, validateOnly: false, timeoutMs: AUTO_CREATE_WAIT_MS })
  }

  async delete(name: string, timeoutMs?: number): Promise<void> {
    const topic = this.image.topic(name)
    if (topic === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${name}' does not exist.`)
    if (!this.config.getBoolean('delete.topic.enable')) throw new KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, 'Topic deletion is disabled.')
    // Every replica up: the controller will finish the deletion now, so wait for that too (a name
    // created again right after is then free); otherwise it completes when the brokers come back.
    const allLive = topic.partitionStates.every((p) => p === undefined || p.replicas.every((r) => this.image.isLive(r)))
    await this.store.queueTopicDeletions([name])
    const deadline = Date.now() + this.#waitMs(timeoutMs)
    const gone = await this.image.waitFor(() => this.image.topic(name) === undefined, deadline - Date.now())
    if (!gone) throw new KafkaError(ErrorCode.REQUEST_TIMED_OUT, `Topic '${name}' is queued for deletion but is not deleted yet.`)
    if (allLive) await this.#waitUntilStoreForgets(name, deadline)
    this.log.info({ topic: name }, 'deleted topic')
  }

  /** CreatePartitions: grow a topic to `count` partitions. */
  async addPartitions(name: string, count: number, assignments: number[][] | null, validateOnly: boolean, timeoutMs?: number): Promise<void> {
    const topic = this.image.topic(name)
    const current = topic === undefined ? undefined : (await this.store.getTopicAssignments([name])).get(name)
    if (topic === undefined || current === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${name}' does not exist.`)
    const existing = current.partitions.length
    if (count < existing) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Topic currently has ${existing} partitions, which is higher than the requested ${count}.`)
    if (count === existing) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Topic already has ${existing} partitions.`)
    if (count > MAX_PARTITIONS) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, `Number of partitions ${count} is too large.`)
    const replicationFactor = current.partitions[0]?.replicas.length ?? topic.replicationFactor
    let added: number[][]
    if (assignments !== null) {
      if (assignments.length !== count - existing) {
        throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, `Increasing the number of partitions by ${count - existing} but ${assignments.length} assignments provided.`)
      }
      for (const a of assignments) this.#checkAssignment(a, replicationFactor)
      added = assignments.map((a) => [...a])
    } else {
      const live = this.#placements()
      const start = startIndexForNewPartitions(live, current.partitions[0]?.replicas ?? [])
      added = assignReplicasToBrokers(live, count - existing, replicationFactor, { fixedStartIndex: start, startPartitionId: existing })
    }
    if (validateOnly) return
    try {
      await this.store.setTopicAssignment({ ...current, partitions: [...current.partitions, ...added.map(toReplicaAssignment)] })
    } catch (err) {
      if (err instanceof UnknownTopicError) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, err.message)
      throw err
    }
    this.log.info({ topic: name, from: existing, to: count }, 'added partitions')
    const ready = await this.image.waitFor(() => this.#hasLeaders(name, count), this.#waitMs(timeoutMs))
    if (!ready && (timeoutMs ?? DEFAULT_TIMEOUT_MS) > 0) throw new KafkaError(ErrorCode.REQUEST_TIMED_OUT, `The partitions added to '${name}' had no leaders within the timeout.`)
  }

  /** Replaces a topic's config overrides (AlterConfigs semantics; incremental callers merge first). */
  async setConfigs(name: string, configs: Record<string, string | null>, validateOnly: boolean): Promise<void> {
    if (this.image.topic(name) === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic ${name} does not exist.`)
    const checked = this.#checkConfigs(configs)
    if (validateOnly) return
    await this.store.setEntityConfig('topics', name, checked)
    // Visible here at once; the other brokers apply the change notification.
    await this.control.applyTopicConfigs(name, checked)
  }

  /** How long to wait for a change to show: the request's timeout; 0 waits only for an in-process controller. */
  #waitMs(timeoutMs: number | undefined): number {
    const t = timeoutMs ?? DEFAULT_TIMEOUT_MS
    if (t > 0) return t
    return this.store.kind === 'embedded' ? DEFAULT_TIMEOUT_MS : 0
  }

  #hasLeaders(name: string, partitions: number): boolean {
    const t = this.image.topic(name)
    if (t === undefined || t.partitions < partitions) return false
    for (let p = 0; p < partitions; p++) {
      const s = t.partitionStates[p]
      if (s === undefined || s.leaderId < 0) return false
    }
    return true
  }

  async #waitUntilStoreForgets(name: string, deadline: number): Promise<void> {
    const forgotten = async (): Promise<boolean> => !(await this.store.getTopicNames()).includes(name) && !(await this.store.getTopicDeletions()).includes(name)
    if (await forgotten()) return
    await new Promise<void>((resolve) => {
      let done = false
      const finish = (): void => {
        if (done) return
        done = true
        clearTimeout(timer)
        unwatchTopics()
        unwatchDeletions()
        resolve()
      }
      const check = (): void => {
        forgotten().then((yes) => yes && finish(), finish)
      }
      const timer = setTimeout(finish, Math.max(0, deadline - Date.now()))
      const unwatchTopics = this.store.watchTopics(check)
      const unwatchDeletions = this.store.watchTopicDeletions(check)
      check()
    })
  }

  /**
   * Kafka refuses a name that differs from an existing topic's only by '.' versus '_': both map to the
   * same metric names. Kafka 4's controller message (the ZooKeeper-era one said "existing topics").
   */
  #checkNoCollision(name: string): void {
    if (!hasCollisionChars(name)) return
    const unified = unifyCollisionChars(name)
    for (const t of this.image.topics()) {
      if (t.name !== name && hasCollisionChars(t.name) && unifyCollisionChars(t.name) === unified) {
        throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, `Topic '${name}' collides with existing topic: ${t.name}`)
      }
    }
  }

  #placements(): BrokerPlacement[] {
    return this.image.liveBrokers().map((b) => ({ id: b.id, rack: b.rack }))
  }

  #checkAssignment(brokerIds: number[], replicationFactor: number): void {
    if (brokerIds.length !== replicationFactor) {
      throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'All partitions should have the same number of replicas')
    }
    if (new Set(brokerIds).size !== brokerIds.length) throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'Duplicate brokers not allowed in replica assignment')
    for (const id of brokerIds) {
      if (!this.image.isLive(id)) throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, `Unknown broker id ${id} in replica assignment`)
    }
  }

  /**
   * Validates configs, alone and as the effective LogConfig over this broker's defaults (so nothing the
   * storage would refuse reaches the store), and returns them as the strings to store; a bad one throws
   * INVALID_CONFIG.
   */
  #checkConfigs(configs: Record<string, string | null>): Record<string, string> {
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

function hasCollisionChars(name: string): boolean {
  return name.includes('.') || name.includes('_')
}

function unifyCollisionChars(name: string): string {
  return name.replaceAll('.', '_')
}

function toReplicaAssignment(replicas: number[]): ReplicaAssignment {
  return { replicas, addingReplicas: [], removingReplicas: [] }
}
