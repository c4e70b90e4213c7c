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
// CreateTopics and CreatePartitions are all-or-nothing on this broker: before anything is written to the
// store, the logs of the new partitions this broker holds a replica of are created, all of them or none
// (those a failed request created are deleted again, one error answers the request, one line is logged),
// and a request for more partitions than its filesystem holds is refused whole. A failed store write
// deletes them again. A crash between the two leaves directories the store does not list: they are moved
// aside at the next start, never served (moveAsideStrays). The logs of replicas on other brokers are
// created by their LeaderAndIsr; a broker that cannot open one answers KAFKA_STORAGE_ERROR for it.
//
// Reads (get, list) answer from the metadata image.
import type { BrokerConfig } from '../config/broker-config.js'
import { ConfigException } from '../config/config-def.js'
import { validateTopicConfigs, type TopicConfigOverrides } from '../config/topic-configs.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { randomKafkaUuid } from '../domain/uuid.js'
import type { Logger } from '../observability/logger.js'
import type { ShardRouter } from '../shard/router.js'
import { strayDirectories, validateTopicName } from '../storage/index.js'
import type { BrokerControlPlane } from './control/control-plane.js'
import { INTERNAL_TOPICS, type ImageTopic, type MetadataImage } from '../cluster/metadata-image.js'
import { TopicExistsError, UnknownTopicError, type MetadataStore, type ReplicaAssignment } from '../cluster/metadata-store.js'
import { assignReplicasToBrokers, startIndexForNewPartitions, type BrokerPlacement } from '../cluster/replica-assignment.js'
import type { CreateTopicRequest, TopicAdmin, TopicInfo } from '../server/handlers/common/ports.js'

export { INTERNAL_TOPICS }

/** Default wait for an admin change to show in the metadata (Kafka clients' default request timeout). */
const DEFAULT_TIMEOUT_MS = 30_000
/** Metadata's auto-creation waits this long for the new topic's leaders. */
const AUTO_CREATE_WAIT_MS = 10_000
const MAX_PARTITIONS = 100_000

/** This broker's own partitions, where the logs of its replicas are created before the store is written. */
export interface LocalLogs {
  brokerId: number
  router: ShardRouter
}

export class TopicManager implements TopicAdmin {
  constructor(
    private readonly store: MetadataStore,
    private readonly image: MetadataImage,
    private readonly control: BrokerControlPlane,
    private config: BrokerConfig,
    private readonly log: Logger,
    private readonly local: LocalLogs,
  ) {}

  /**
   * Creations under way on this broker, by name: a second request for the same name (or one colliding
   * by '.' and '_') is refused, or for auto-creation waits for the first, so two requests never share
   * the logs one of them may have to delete again.
   */
  readonly #creating = new Map<string, Promise<TopicInfo>>()

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
   * Recovery before the controller starts: partition directories the store does not list (a creation cut
   * short before the store was written, a lost or older cluster-metadata.json, a data directory moved from
   * another broker) are never served as topics, so nothing deleted comes back: they are moved aside, renamed `<topic>-<partition>.<uuid>-stray` and kept on disk (as Kafka
   * does with stray logs), with one warning line. A partition index past the topic's count is a stray too.
   */
  static async moveAsideStrays(store: MetadataStore, router: ShardRouter, log: Logger): Promise<void> {
    const names = await store.getTopicNames()
    const counts = new Map<string, number>()
    for (const [name, a] of await store.getTopicAssignments(names)) counts.set(name, a.partitions.length)
    const strays = (await router.states())
      .filter((s) => s.partition >= (counts.get(s.topic) ?? 0))
      .map((s) => ({ topic: s.topic, partition: s.partition }))
    let moved = 0
    if (strays.length > 0) {
      const results = await router.moveAside(strays)
      const done = strays.filter((_, i) => results[i]!.ok)
      moved = done.length
      if (moved > 0) {
        log.warn(
          { partitions: moved, topics: [...new Set(done.map((s) => s.topic))].slice(0, 10), dataDir: router.dataDir },
          `partition directories not listed in ${store.description} were moved aside as <topic>-<partition>.<id>-stray: kept on disk, not served`,
        )
      }
      const failed = results.find((r) => !r.ok)
      if (failed !== undefined && !failed.ok) {
        log.error({ partitions: strays.length - moved, error: failed.message }, `cannot move partition directories not listed in ${store.description} aside`)
      }
    }
    // Set aside within their own data directories (log.dirs).
    const earlier = router.dataDirs.reduce((n, d) => n + strayDirectories(d).length, 0) - moved
    if (earlier > 0) {
      log.warn({ directories: earlier, dataDirs: router.dataDirs }, 'stray partition directories (<topic>-<partition>.<id>-stray) of earlier starts are kept: remove them when no longer needed')
    }
  }

  /** Creates a topic, or only validates the request. Throws KafkaError with the code Kafka uses. */
  async create(req: CreateTopicRequest): Promise<TopicInfo> {
    validateTopicName(req.name)
    if (this.image.topic(req.name) !== undefined || this.#creating.has(req.name)) throw new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${req.name}' already exists.`)
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
    const local = this.#localPartitions(assignment, 0)
    this.#checkRoom(local.length)
    if (req.validateOnly) return { name: req.name, topicId: '', partitions, replicationFactor, configs }
    // Registered before the first await: nothing else can start creating this name meanwhile.
    const creation = this.#createChecked(req.name, assignment, local, configs, req.timeoutMs)
    this.#creating.set(req.name, creation)
    try {
      return await creation
    } finally {
      this.#creating.delete(req.name)
    }
  }

  /** A checked creation: this broker's logs first (all or none), then the store, then the wait for leaders. */
  async #createChecked(name: string, assignment: number[][], local: number[], configs: Record<string, string>, timeoutMs: number | undefined): Promise<TopicInfo> {
    const partitions = assignment.length
    const replicationFactor = assignment[0]?.length ?? 0
    const topicId = randomKafkaUuid()
    await this.#createLocalLogs(name, local, configs, partitions, (error) => this.log.error({ topic: name, partitions, error }, 'cannot create topic: nothing was kept'))
    try {
      await this.store.createTopic({ name, topicId, partitions: assignment.map(toReplicaAssignment) }, configs)
    } catch (err) {
      if (err instanceof TopicExistsError) {
        // Another broker created the name first: its replicas here are its logs now; only the others go.
        const theirs = (await this.store.getTopicAssignments([name])).get(name)
        const ours = new Set(theirs === undefined ? [] : this.#localPartitions(theirs.partitions.map((r) => r.replicas), 0))
        await this.#deleteLocalLogs(name, local.filter((p) => !ours.has(p)))
        throw new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, err.message)
      }
      await this.#deleteLocalLogs(name, local)
      throw err
    }
    this.log.info({ topic: name, partitions, replicationFactor, configs }, 'created topic')
    const ready = await this.image.waitFor(() => this.#hasLeaders(name, partitions), this.#waitMs(timeoutMs))
    if (!ready && (timeoutMs ?? DEFAULT_TIMEOUT_MS) > 0) {
      throw new KafkaError(ErrorCode.REQUEST_TIMED_OUT, `Topic '${name}' was created but its partitions had no leaders within the timeout.`)
    }
    return this.image.topic(name) ?? { name, topicId, partitions, replicationFactor, configs }
  }

  /** Metadata's auto-creation (auto.create.topics.enable) with num.partitions and broker defaults. */
  async autoCreate(name: string): Promise<TopicInfo> {
    // Producers asking for the same new topic at once share one creation.
    const inFlight = this.#creating.get(name)
    if (inFlight !== undefined) return inFlight
    // A topic this broker has not heard of yet may exist in the cluster (an UpdateMetadata still on its
    // way, say after a restart): asked first, the store answers that it exists (Metadata then says
    // LEADER_NOT_AVAILABLE, which clients retry) instead of the assignment failing for want of live
    // brokers (INVALID_REPLICATION_FACTOR, which librdkafka takes as permanent for the records it holds).
    if (this.store.kind === 'zookeeper' && this.image.topic(name) === undefined && (await this.store.getTopicAssignments([name])).has(name)) {
      throw new KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, `Topic '${name}' already exists.`)
    }
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
    const local = this.#localPartitions(added, existing)
    this.#checkRoom(local.length)
    if (validateOnly) return
    await this.#createLocalLogs(name, local, await this.control.topicConfigs(name), count - existing, (error) =>
      this.log.error({ topic: name, from: existing, to: count, error }, 'cannot add partitions: nothing was kept'),
    )
    try {
      await this.store.setTopicAssignment({ ...current, partitions: [...current.partitions, ...added.map(toReplicaAssignment)] })
    } catch (err) {
      await this.#deleteLocalLogs(name, local)
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

  /** The partitions (numbered from `first`) of an assignment that have a replica on this broker. */
  #localPartitions(assignment: readonly number[][], first: number): number[] {
    const out: number[] = []
    assignment.forEach((replicas, i) => {
      if (replicas.includes(this.local.brokerId)) out.push(first + i)
    })
    return out
  }

  /**
   * Creates the logs of `partitions` of a topic on this broker, all or none: when one fails, those this
   * call created are deleted again, `logFailure` is called once, and one KafkaError says how many failed
   * (of `requested`) and why the first did.
   */
  async #createLocalLogs(topic: string, partitions: readonly number[], configs: Record<string, string>, requested: number, logFailure: (error: string) => void): Promise<void> {
    if (partitions.length === 0) return
    // The complete LogConfig: the shards' defaults are the broker config of startup, and dynamic broker
    // changes since then must reach new partitions too.
    let overrides
    try {
      overrides = this.config.logConfig(validateTopicConfigs(configs))
    } catch {
      // A stored config that conflicts with new broker defaults: the topic's partitions run with the
      // defaults, as its existing ones do (ReplicaManager).
      overrides = this.config.logDefaults()
    }
    const items = partitions.map((partition) => ({ topic, partition, overrides }))
    const results = await this.local.router.createPartitions(items)
    const failedAt = results.findIndex((r) => !r.ok)
    if (failedAt < 0) return
    const first = results[failedAt]!
    const failures = results.filter((r) => !r.ok).length
    await this.#deleteLocalLogs(topic, partitions.filter((_, i) => results[i]!.ok))
    const code = first.ok || first.errorCode === ErrorCode.NONE ? ErrorCode.KAFKA_STORAGE_ERROR : (first.errorCode as ErrorCode)
    const why = first.ok ? '' : first.message.replace(/^[A-Z_]+: /, '')
    logFailure(why)
    throw new KafkaError(code, `${failures} of ${requested} partitions of topic '${topic}' could not be created, none was kept (partition ${partitions[failedAt]}: ${why})`)
  }

  /** Deletes logs created for a request that failed (renamed `-delete` and fsynced, then removed). */
  async #deleteLocalLogs(topic: string, partitions: readonly number[]): Promise<void> {
    if (partitions.length === 0) return
    const results = await this.local.router.deletePartitions(partitions.map((partition) => ({ topic, partition })))
    const stuck = results.filter((r) => !r.ok)
    if (stuck.length > 0) {
      const first = stuck[0]!
      this.log.error({ topic, partitions: stuck.length, error: first.ok ? '' : first.message }, 'cannot delete partitions of a failed creation again')
    }
  }

  /** Refuses a request for more new partitions on this broker than its data directory's filesystem holds. */
  #checkRoom(newPartitions: number): void {
    if (newPartitions === 0) return
    const room = this.local.router.roomForPartitions()
    if (newPartitions > room) {
      throw new KafkaError(
        ErrorCode.INVALID_PARTITIONS,
        `${newPartitions} new partitions do not fit in ${this.local.router.dataDir}: its filesystem has room for ${room} more (free inodes and blocks).`,
      )
    }
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
    for (const other of [...this.image.topics().map((t) => t.name), ...this.#creating.keys()]) {
      if (other !== name && hasCollisionChars(other) && unifyCollisionChars(other) === unified) {
        throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, `Topic '${name}' collides with existing topic: ${other}`)
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
