// A broker's view of the cluster (Kafka's ZkMetadataCache): live brokers with their endpoints per listener
// and racks, the controller, topics with their ids and configs, and each partition's leader, leader epoch,
// replicas, ISR and offline replicas. The controller feeds it with UpdateMetadata (the whole broker list
// each time, the partitions that changed; leader -2 removes a partition of a topic being deleted) and
// LeaderAndIsr (newer leader epochs of partitions it already knows). Topic configs come from the metadata
// store (read when a topic first appears, and again on each config change notification).
//
// It is the handlers' MetadataView (src/server/handlers/common/ports.ts, which takes BrokerNode, TopicInfo
// and PartitionLeadership from here; satisfied structurally, as cluster/ does not import the server): Metadata, DescribeCluster, FindCoordinator and the admin requests
// read it; admin requests wait on it (waitFor) until their change is visible here.
import type { BrokerConfig } from '../config/index.js'
import type * as UpdateMetadata from '../protocol/messages/06-update-metadata.gen.js'
import { ZERO_UUID } from '../protocol/primitives/types.js'
import { validateTopicName } from '../storage/index.js'
import { LEADER_DURING_DELETE, type ListenerEndpoint } from './metadata-store.js'

/** Topics Kafka treats as internal (Metadata isInternal, not auto-created by clients). */
export const INTERNAL_TOPICS = new Set(['__consumer_offsets', '__transaction_state', '__share_group_state'])

const SECURITY_PROTOCOL_NAMES = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']

/** A live broker at its endpoint for one listener (the handlers' BrokerNode). */
export interface BrokerNode {
  nodeId: number
  host: string
  port: number
  rack: string | null
}

/** A topic as the handlers see it (their TopicInfo). */
export interface TopicInfo {
  readonly name: string
  /** Kafka's topic id (base64url), '' for a topic not created yet (validateOnly). */
  readonly topicId: string
  readonly partitions: number
  readonly replicationFactor: number
  /** The topic's own config overrides, as stored. */
  readonly configs: Readonly<Record<string, string>>
}

/** Who leads a partition (the handlers' PartitionLeadership). */
export interface PartitionLeadership {
  leaderId: number
  leaderEpoch: number
  replicas: readonly number[]
  isr: readonly number[]
  offlineReplicas: readonly number[]
}

/** A LeaderAndIsr entry, as much of it as the image keeps. */
export interface LeaderAndIsrEntry {
  topic: string
  partition: number
  controllerEpoch: number
  leader: number
  leaderEpoch: number
  isr: readonly number[]
  partitionEpoch: number
  replicas: readonly number[]
}

export interface ImageBroker {
  id: number
  rack: string | null
  endpoints: ListenerEndpoint[]
}

export interface ImagePartition extends PartitionLeadership {
  /** The partition state's version (zkVersion). */
  partitionEpoch: number
  controllerEpoch: number
}

export interface ImageTopic extends TopicInfo {
  /** Index = partition; a hole is a partition this broker has not been told about. */
  readonly partitionStates: readonly (ImagePartition | undefined)[]
}

class Topic implements ImageTopic {
  partitionStates: (ImagePartition | undefined)[] = []
  constructor(
    readonly name: string,
    public topicId: string,
    public configs: Readonly<Record<string, string>>,
  ) {}

  get partitions(): number {
    return this.partitionStates.length
  }

  get replicationFactor(): number {
    for (const p of this.partitionStates) if (p !== undefined) return p.replicas.length
    return 0
  }
}

export interface LocalEndpoint {
  host: string
  port: number
}

export class MetadataImage {
  #controllerId = -1
  #brokers = new Map<number, ImageBroker>()
  readonly #topics = new Map<string, Topic>()
  readonly #byId = new Map<string, Topic>()
  #sorted: Topic[] | undefined
  readonly #listeners = new Set<() => void>()
  #updates = 0
  /** This broker's lease lapsed (broker/control/broker-lease.ts): clients are pointed at the others. */
  #selfFenced = false

  constructor(
    readonly nodeId: number,
    readonly clusterId: string,
    /** Where clients of a listener reach this broker (advertised.listeners). */
    private readonly localEndpoint: (listenerName: string) => LocalEndpoint,
    private readonly config: () => BrokerConfig,
  ) {}

  get controllerId(): number {
    return this.#controllerId
  }

  /** How many UpdateMetadata requests were applied (0 until the controller first spoke). */
  get updateCount(): number {
    return this.#updates
  }

  /**
   * While set, this broker leaves itself out of brokers(): Metadata then answers its partitions without a
   * leader (clients ask another broker) and names the other brokers only.
   */
  setSelfFenced(fenced: boolean): void {
    this.#selfFenced = fenced
  }

  get selfFenced(): boolean {
    return this.#selfFenced
  }

  brokers(listenerName: string): BrokerNode[] {
    const out: BrokerNode[] = []
    for (const b of [...this.#brokers.values()].sort((x, y) => x.id - y.id)) {
      if (this.#selfFenced && b.id === this.nodeId) continue
      const e = b.endpoints.find((x) => x.listenerName === listenerName)
      if (e !== undefined) out.push({ nodeId: b.id, host: e.host, port: e.port, rack: b.rack })
    }
    return out
  }

  localBroker(listenerName: string): BrokerNode {
    const e = this.localEndpoint(listenerName)
    return { nodeId: this.nodeId, host: e.host, port: e.port, rack: this.config().getString('broker.rack') }
  }

  /** Live brokers as the controller last listed them. */
  liveBrokers(): ImageBroker[] {
    return [...this.#brokers.values()].sort((a, b) => a.id - b.id)
  }

  isLive(brokerId: number): boolean {
    return this.#brokers.has(brokerId)
  }

  topic(name: string): ImageTopic | undefined {
    return this.#topics.get(name)
  }

  topicById(topicId: string): ImageTopic | undefined {
    return this.#byId.get(topicId)
  }

  topics(): readonly ImageTopic[] {
    this.#sorted ??= [...this.#topics.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    return this.#sorted
  }

  isInternalTopic(name: string): boolean {
    return INTERNAL_TOPICS.has(name)
  }

  validateTopicName(name: string): void {
    validateTopicName(name)
  }

  partition(topic: string, partition: number): ImagePartition | undefined {
    return this.#topics.get(topic)?.partitionStates[partition]
  }

  // ---------------------------------------------------------------- updates

  /**
   * Applies an UpdateMetadata (newest message shape). `configs` has the config of every topic the request
   * adds to the image (the caller reads them first, so a topic never shows without its config).
   */
  applyUpdateMetadata(req: UpdateMetadata.UpdateMetadataRequest, configs: ReadonlyMap<string, Record<string, string>>): void {
    this.#controllerId = req.controllerId
    const brokers = new Map<number, ImageBroker>()
    for (const b of req.liveBrokers) {
      brokers.set(b.id, {
        id: b.id,
        rack: b.rack,
        endpoints: b.endpoints.map((e) => ({ listenerName: e.listener, host: e.host, port: e.port, securityProtocol: SECURITY_PROTOCOL_NAMES[e.securityProtocol] ?? 'PLAINTEXT' })),
      })
    }
    this.#brokers = brokers
    for (const t of req.topicStates) {
      let topic = this.#topics.get(t.topicName)
      for (const p of t.partitionStates) {
        if (p.leader === LEADER_DURING_DELETE) {
          if (topic !== undefined) topic.partitionStates[p.partitionIndex] = undefined
          continue
        }
        if (topic === undefined) topic = this.#addTopic(t.topicName, t.topicId, configs.get(t.topicName) ?? {})
        else if (t.topicId !== ZERO_UUID && topic.topicId !== t.topicId) this.#setTopicId(topic, t.topicId)
        topic.partitionStates[p.partitionIndex] = {
          leaderId: p.leader,
          leaderEpoch: p.leaderEpoch,
          replicas: [...p.replicas],
          isr: [...p.isr],
          offlineReplicas: [...p.offlineReplicas],
          partitionEpoch: p.zkVersion,
          controllerEpoch: p.controllerEpoch,
        }
      }
      if (topic !== undefined) this.#trimOrRemove(topic)
    }
    this.#updates++
    this.#changed()
  }

  /**
   * A LeaderAndIsr's newer states (a newer leader epoch, or a newer partition epoch under the same one: an
   * ISR change) for partitions of topics already known (new ones wait for UpdateMetadata).
   */
  applyLeaderAndIsr(partitions: readonly LeaderAndIsrEntry[]): void {
    let changed = false
    for (const p of partitions) {
      const topic = this.#topics.get(p.topic)
      const current = topic?.partitionStates[p.partition]
      const older = current !== undefined && (current.leaderEpoch > p.leaderEpoch || (current.leaderEpoch === p.leaderEpoch && current.partitionEpoch >= p.partitionEpoch))
      if (topic === undefined || older) continue
      topic.partitionStates[p.partition] = {
        leaderId: p.leader,
        leaderEpoch: p.leaderEpoch,
        replicas: [...p.replicas],
        isr: [...p.isr],
        offlineReplicas: current?.offlineReplicas.filter((r) => p.replicas.includes(r)) ?? [],
        partitionEpoch: p.partitionEpoch,
        controllerEpoch: p.controllerEpoch,
      }
      changed = true
    }
    if (changed) this.#changed()
  }

  /** A topic's config changed (or was read for the first time). */
  setTopicConfigs(name: string, configs: Readonly<Record<string, string>>): void {
    const topic = this.#topics.get(name)
    if (topic === undefined) return
    topic.configs = { ...configs }
    this.#changed()
  }

  /** Calls fn after every change; returns a function that stops it. */
  onChange(fn: () => void): () => void {
    this.#listeners.add(fn)
    return () => this.#listeners.delete(fn)
  }

  /** Resolves true once check() holds (checked now and after each change), false after timeoutMs. */
  waitFor(check: () => boolean, timeoutMs: number): Promise<boolean> {
    if (check()) return Promise.resolve(true)
    if (timeoutMs <= 0) return Promise.resolve(false)
    return new Promise((resolve) => {
      const stop = this.onChange(() => {
        if (!check()) return
        finish(true)
      })
      const timer = setTimeout(() => finish(false), timeoutMs)
      const finish = (value: boolean): void => {
        clearTimeout(timer)
        stop()
        resolve(value)
      }
    })
  }

  #addTopic(name: string, topicId: string, configs: Record<string, string>): Topic {
    const topic = new Topic(name, topicId, { ...configs })
    this.#topics.set(name, topic)
    if (topicId !== ZERO_UUID) this.#byId.set(topicId, topic)
    this.#sorted = undefined
    return topic
  }

  #setTopicId(topic: Topic, topicId: string): void {
    if (topic.topicId !== ZERO_UUID) this.#byId.delete(topic.topicId)
    topic.topicId = topicId
    this.#byId.set(topicId, topic)
  }

  /** Drops trailing holes; a topic left without partitions is gone (deleted). */
  #trimOrRemove(topic: Topic): void {
    const states = topic.partitionStates
    while (states.length > 0 && states[states.length - 1] === undefined) states.pop()
    if (states.length > 0) return
    this.#topics.delete(topic.name)
    if (this.#byId.get(topic.topicId) === topic) this.#byId.delete(topic.topicId)
    this.#sorted = undefined
  }

  #changed(): void {
    for (const fn of [...this.#listeners]) {
      try {
        fn()
      } catch {
        // a waiter's check failing must not stop the others
      }
    }
  }
}
