// The lifecycle both coordinators share: their internal topic (__consumer_offsets,
// __transaction_state) is created on first use — never by a client's Metadata auto-creation, as in
// Kafka — or found at startup, and the coordinator over it is built once and is closed first when the
// broker stops. It coordinates the partitions this broker leads, as Kafka's do: each is replayed when
// this broker becomes its leader (in the background when the topic already existed; requests meanwhile
// get COORDINATOR_LOAD_IN_PROGRESS) and dropped when the leadership moves away (requests then get
// NOT_COORDINATOR, and clients ask FindCoordinator again, which names the partition's leader). On a
// single broker that is every partition. The services reach the broker through InternalTopicPorts (what
// they use of it), not the Broker, which composes them: so the broker imports them and not the reverse.
//
// A request never waits long for the coordinator to start: creating the topic waits for its partitions'
// leaders (up to 30 s when no live broker can lead them, say after the metadata lost this broker), so a
// request waits COORDINATOR_START_WAIT_MS at most and is then answered COORDINATOR_NOT_AVAILABLE, which
// clients retry (Kafka answers it at once while it creates the topic); the start goes on meanwhile.
import type { BrokerConfig } from '../../config/broker-config.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import type { Logger } from '../../observability/logger.js'
import type { CreateTopicRequest, PartitionService, TopicInfo } from '../../server/handlers/common/ports.js'
import type { ReplicaManager } from '../../replication/replica-manager.js'

/** The broker's topics as a coordinator's service needs them: found by name or id, its own created on first use. */
export interface InternalTopicLookup {
  get(name: string): TopicInfo | undefined
  getById(topicId: string): TopicInfo | undefined
  create(req: CreateTopicRequest): Promise<TopicInfo>
}

/** What the coordinators' partition writer (coordinator-partition-writer.ts) appends and reads through. */
export type CoordinatorPartitionAccess = Pick<PartitionService, 'appendAsLeader' | 'read' | 'listOffsets' | 'releaseLeases'> &
  /** For coordinators that prune their partitions (the share coordinator). */
  Partial<Pick<PartitionService, 'deleteRecords'>>

/** What an internal topic's service uses of the broker that composes it. */
export interface InternalTopicPorts {
  /** The broker config as it is now (a dynamic update replaces it). */
  config(): BrokerConfig
  readonly log: Logger
  readonly topics: InternalTopicLookup
  /** This broker's partitions: leadership changes and the partitions it leads, appends and reads for the coordinator. */
  readonly partitions: Pick<ReplicaManager, 'onLeadershipChange' | 'hostedPartitions'> & CoordinatorPartitionAccess
}

/** How long a request waits for the coordinator to start (the topic's creation) before COORDINATOR_NOT_AVAILABLE. */
export const COORDINATOR_START_WAIT_MS = 500

export interface InternalCoordinator {
  readonly runtime: { load(partition: number): Promise<void>; unload(partition: number): void }
  close(): void
}

export interface InternalTopicSpec {
  numPartitions: number
  replicationFactor: number
  configs: Record<string, string>
}

export abstract class InternalTopicService<C extends InternalCoordinator, P extends InternalTopicPorts = InternalTopicPorts> {
  #starting: Promise<C> | undefined
  #coordinator: C | undefined
  /** The coordinator once its start has finished (the first load of a new topic included). */
  #ready: C | undefined
  #closed = false

  constructor(
    protected readonly ports: P,
    readonly topicName: string,
  ) {
    ports.partitions.onLeadershipChange((topic, partition, isLeader) => {
      const c = this.#coordinator
      if (topic !== this.topicName || c === undefined || this.#closed) return
      if (isLeader) this.#load(c, [partition]).catch(() => undefined)
      else c.runtime.unload(partition)
    })
  }

  /** Replays the given partitions (failures are logged; the partition answers COORDINATOR_NOT_AVAILABLE). */
  async #load(c: C, partitions: readonly number[]): Promise<void> {
    const results = await Promise.allSettled(partitions.map((p) => c.runtime.load(p)))
    for (const r of results) {
      if (r.status === 'rejected') this.ports.log.error({ err: (r.reason as Error)?.message, topic: this.topicName }, `loading ${this.topicName} failed`)
    }
  }

  /** How the topic is created (from the broker's config at that moment). */
  protected abstract topicSpec(): InternalTopicSpec

  /** The coordinator over the topic; its partition count decides placement, whatever the config says now. */
  protected abstract build(topic: TopicInfo): C

  /** At startup: if the topic exists, start coordinating it now (replay in the background). */
  startIfPresent(): void {
    if (this.ports.topics.get(this.topicName) === undefined) return
    this.#startOnce().catch((err: unknown) => this.ports.log.error({ err: (err as Error)?.message, topic: this.topicName }, 'cannot start the coordinator'))
  }

  /**
   * The coordinator, once the topic exists (created now if needed); rejects with COORDINATOR_NOT_AVAILABLE
   * when it has not started within COORDINATOR_START_WAIT_MS (the start goes on).
   */
  coordinator(): Promise<C> {
    if (this.#closed) return Promise.reject(new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the broker is shutting down'))
    if (this.#ready !== undefined) return Promise.resolve(this.#ready)
    return withinStartWait(this.#startOnce(), this.topicName)
  }

  /** The start, begun by the first caller and shared by the others. */
  #startOnce(): Promise<C> {
    if (this.#starting === undefined) {
      this.#starting = this.#start()
      // A failed start (the topic could not be created) is retried by the next request.
      this.#starting.catch(() => {
        this.#starting = undefined
      })
    }
    return this.#starting
  }

  /** The coordinator if it is running (requests that must not create the topic, the library API, tests). */
  get current(): C | undefined {
    return this.#coordinator
  }

  topicExists(): boolean {
    return this.ports.topics.get(this.topicName) !== undefined
  }

  close(): void {
    this.#closed = true
    this.#coordinator?.close()
  }

  async #start(): Promise<C> {
    const { ports, topicName } = this
    let topic: TopicInfo | undefined = ports.topics.get(topicName)
    const created = topic === undefined
    if (topic === undefined) {
      try {
        topic = await ports.topics.create({ name: topicName, ...this.topicSpec(), validateOnly: false })
      } catch (err) {
        topic = ports.topics.get(topicName)
        if (topic === undefined) {
          ports.log.error({ err: (err as Error).message }, `cannot create ${topicName}`)
          throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `cannot create ${topicName}: ${(err as Error).message}`)
        }
      }
    }
    if (this.#closed) throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, 'the broker is shutting down')
    const coordinator = this.build(topic)
    this.#coordinator = coordinator
    // From here on the leadership listener loads what this broker comes to lead; these it leads now.
    const led = ports.partitions.hostedPartitions(topicName).filter((p) => p.isLeader).map((p) => p.partition)
    const loading = this.#load(coordinator, led)
    // A new topic is empty: wait for the (instant) load so the first request is served, not told to retry.
    if (created) await loading
    this.#ready = coordinator
    return coordinator
  }
}

/** p, or a COORDINATOR_NOT_AVAILABLE rejection when p has not settled within COORDINATOR_START_WAIT_MS. */
function withinStartWait<C>(p: Promise<C>, topicName: string): Promise<C> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `the coordinator over ${topicName} is still starting`)), COORDINATOR_START_WAIT_MS)
  })
  return Promise.race([p, late]).finally(() => clearTimeout(timer))
}
