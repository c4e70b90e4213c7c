// A broker's side of the control plane: what LeaderAndIsr, UpdateMetadata and StopReplica from the
// controller do here, and who answers AlterPartition and ControlledShutdown (this broker's controller,
// when it is the active one). The handlers of those APIs decode and call this; the controller on this
// broker calls it directly (no socket), so both paths run the same code.
//
// Fencing (Kafka's ReplicaManager and KafkaApis):
// - A request whose controller epoch is older than the newest one seen is refused as a whole:
//   STALE_CONTROLLER_EPOCH. A newer one becomes the newest seen.
// - A request carrying a broker epoch older than this broker's registration (sent to an earlier life of
//   this broker) is refused: STALE_BROKER_EPOCH; -1 (not given) passes here (the network facet refuses it).
// Requests are applied one at a time in arrival order, whichever controller or path they come from.
// Those from the network (the handlers get the `network` facet) must first pass ControlAdmission
// (network-control.ts): from the active controller, to this registration of this broker.
//
// Topic configs: read from the store when a topic first appears here (LeaderAndIsr may come before
// UpdateMetadata) and cached; config change notifications re-read them and the hosted partitions get
// the new LogConfig.
import type { LocalControlTarget } from '../../cluster/controller/channel.js'
import type { Controller } from '../../cluster/controller/controller.js'
import type { MetadataImage } from '../../cluster/metadata-image.js'
import { LEADER_DURING_DELETE, type ConfigChange, type MetadataStore } from '../../cluster/metadata-store.js'
import { ErrorCode } from '../../domain/errors.js'
import type { Logger } from '../../observability/logger.js'
import type * as LeaderAndIsr from '../../protocol/messages/04-leader-and-isr.gen.js'
import type * as StopReplica from '../../protocol/messages/05-stop-replica.gen.js'
import type * as UpdateMetadata from '../../protocol/messages/06-update-metadata.gen.js'
import * as AlterPartition from '../../protocol/messages/56-alter-partition.gen.js'
import { ControlAdmission } from './network-control.js'
import type { ControlAnswer, ControlPlaneService, OngoingReassignmentView, PartitionLeaderAndIsr, ReplicaManagerPort, TopicPartitionRef } from '../../server/handlers/common/ports.js'

export interface BrokerControlPlaneOptions {
  brokerId: number
  image: MetadataImage
  replicas: ReplicaManagerPort
  store: MetadataStore
  log: Logger
  /** A topic's config changed: the hosted partitions get their new LogConfig. */
  onTopicConfigChanged(topic: string): Promise<void>
  /**
   * UpdateMetadata removes these partitions (their topic is being deleted): the group coordinator drops
   * every group's offsets of them (Kafka's onPartitionsDeleted), before the image forgets them.
   */
  onPartitionsDeleted(partitions: readonly TopicPartitionRef[]): Promise<void>
  /** A request of the active controller was admitted (the broker's lease counts it as word from the cluster). */
  onControllerRequest?: () => void
}

/** A request from the network, admitted (or not) in its turn: its ControlAdmission ticket. */
interface FromNetwork {
  admission: ControlAdmission
  ticket: number
}

export class BrokerControlPlane implements ControlPlaneService, LocalControlTarget {
  /** This broker's epoch (its current registration); -1 before it registers. */
  brokerEpoch = -1n
  #controllerEpoch = -1
  #controller: Controller | undefined
  #serial: Promise<unknown> = Promise.resolve()
  readonly #topicConfigs = new Map<string, Record<string, string>>()
  /** What the handlers get: the same requests, admitted only from the active controller (network-control.ts). */
  readonly network: ControlPlaneService

  constructor(private readonly options: BrokerControlPlaneOptions) {
    const admission = new ControlAdmission({ brokerId: options.brokerId, store: options.store, ownBrokerEpoch: () => this.brokerEpoch, log: options.log })
    this.network = {
      leaderAndIsr: (req) => this.leaderAndIsr(req, { admission, ticket: admission.arrive() }),
      updateMetadata: (req) => this.updateMetadata(req, { admission, ticket: admission.arrive() }),
      stopReplica: (req) => this.stopReplica(req, { admission, ticket: admission.arrive() }),
      alterPartition: (req, version) => this.alterPartition(req, version),
      controlledShutdown: (brokerId, brokerEpoch) => this.#controlledShutdownFromNetwork(brokerId, brokerEpoch),
      electLeaders: (electionType, partitions) => this.electLeaders(electionType, partitions),
      alterPartitionReassignments: (requests) => this.alterPartitionReassignments(requests),
      listPartitionReassignments: (partitions) => this.listPartitionReassignments(partitions),
    }
  }

  /** The newest controller epoch this broker has accepted requests from. */
  get controllerEpoch(): number {
    return this.#controllerEpoch
  }

  /** This broker's controller (answers AlterPartition and ControlledShutdown while active). */
  setController(controller: Controller): void {
    this.#controller = controller
  }

  // ---------------------------------------------------------------- topic configs

  /** A topic's config overrides (read from the store the first time). */
  async topicConfigs(topic: string): Promise<Record<string, string>> {
    const cached = this.#topicConfigs.get(topic)
    if (cached !== undefined) return cached
    const read = await this.options.store.getEntityConfig('topics', topic)
    if (!this.#topicConfigs.has(topic)) this.#topicConfigs.set(topic, read)
    return this.#topicConfigs.get(topic)!
  }

  /** This broker changed a topic's config itself: visible here at once (other brokers follow the notification). */
  async applyTopicConfigs(topic: string, configs: Record<string, string>): Promise<void> {
    this.#topicConfigs.set(topic, { ...configs })
    this.options.image.setTopicConfigs(topic, configs)
    await this.options.onTopicConfigChanged(topic)
  }

  /** Config change notifications: topic entries are read again; other entity types are the caller's. */
  async onConfigChanges(changes: readonly ConfigChange[]): Promise<void> {
    for (const topic of new Set(changes.filter((c) => c.entityType === 'topics').map((c) => c.entityName))) {
      try {
        const configs = await this.options.store.getEntityConfig('topics', topic)
        this.#topicConfigs.set(topic, configs)
        this.options.image.setTopicConfigs(topic, configs)
        await this.options.onTopicConfigChanged(topic)
      } catch (err) {
        this.options.log.error({ topic, err: (err as Error).message }, 'cannot apply a topic config change')
      }
    }
  }

  // ---------------------------------------------------------------- controller -> broker

  leaderAndIsr(req: LeaderAndIsr.LeaderAndIsrRequest, from?: FromNetwork): Promise<ControlAnswer> {
    return this.#inOrder(async () => {
      const all = req.topicStates.flatMap((t) => t.partitionStates.map((p) => ({ topic: t.topicName, partition: p.partitionIndex })))
      const fenced = await this.#fence(req.controllerId, req.controllerEpoch, req.brokerEpoch, from)
      if (fenced !== ErrorCode.NONE) return refuse(fenced, all)
      const partitions: PartitionLeaderAndIsr[] = req.topicStates.flatMap((t) =>
        t.partitionStates.map((p) => ({
          topic: t.topicName,
          topicId: t.topicId,
          partition: p.partitionIndex,
          controllerEpoch: p.controllerEpoch,
          leader: p.leader,
          leaderEpoch: p.leaderEpoch,
          isr: p.isr,
          partitionEpoch: p.partitionEpoch,
          replicas: p.replicas,
          addingReplicas: p.addingReplicas,
          removingReplicas: p.removingReplicas,
          isNew: p.isNew,
          leaderRecoveryState: p.leaderRecoveryState,
        })),
      )
      const liveLeaders = req.liveLeaders.map((l) => ({ brokerId: l.brokerId, host: l.hostName, port: l.port }))
      const errors = await this.options.replicas.becomeLeaderOrFollower(req.controllerId, req.controllerEpoch, partitions, liveLeaders)
      const applied = new Set(errors.filter((e) => e.errorCode === ErrorCode.NONE).map((e) => `${e.topic}:${e.partition}`))
      this.options.image.applyLeaderAndIsr(partitions.filter((p) => applied.has(`${p.topic}:${p.partition}`)))
      this.options.onControllerRequest?.()
      return { errorCode: ErrorCode.NONE, partitionErrors: errors.map((e) => ({ topic: e.topic, partition: e.partition, errorCode: e.errorCode })) }
    })
  }

  updateMetadata(req: UpdateMetadata.UpdateMetadataRequest, from?: FromNetwork): Promise<ControlAnswer> {
    return this.#inOrder(async () => {
      const fenced = await this.#fence(req.controllerId, req.controllerEpoch, req.brokerEpoch, from)
      if (fenced !== ErrorCode.NONE) return { errorCode: fenced, partitionErrors: [] }
      const { image } = this.options
      const configs = new Map<string, Record<string, string>>()
      for (const t of req.topicStates) {
        if (image.topic(t.topicName) === undefined && t.partitionStates.some((p) => p.leader >= -1)) configs.set(t.topicName, await this.topicConfigs(t.topicName))
      }
      // As Kafka's handleUpdateMetadataRequest: partitions leaving the metadata take their committed
      // offsets with them. Done first, so that whoever waits for the topic to leave the image (DeleteTopics)
      // answers after this broker's groups lost them; a failure is logged and does not hold the metadata.
      const deleted = req.topicStates.flatMap((t) =>
        t.partitionStates.filter((p) => p.leader === LEADER_DURING_DELETE && image.partition(t.topicName, p.partitionIndex) !== undefined).map((p) => ({ topic: t.topicName, partition: p.partitionIndex })),
      )
      if (deleted.length > 0) {
        await this.options.onPartitionsDeleted(deleted).catch((err: unknown) => {
          this.options.log.error({ err: (err as Error)?.message, topics: [...new Set(deleted.map((p) => p.topic))] }, 'cannot remove the offsets of deleted partitions')
        })
      }
      image.applyUpdateMetadata(req, configs)
      // Configs of topics that left the image are read again if they come back.
      for (const t of req.topicStates) if (image.topic(t.topicName) === undefined) this.#topicConfigs.delete(t.topicName)
      this.options.onControllerRequest?.()
      return { errorCode: ErrorCode.NONE, partitionErrors: [] }
    })
  }

  stopReplica(req: StopReplica.StopReplicaRequest, from?: FromNetwork): Promise<ControlAnswer> {
    return this.#inOrder(async () => {
      const all = req.topicStates.flatMap((t) => t.partitionStates.map((p) => ({ topic: t.topicName, partition: p.partitionIndex })))
      const fenced = await this.#fence(req.controllerId, req.controllerEpoch, req.brokerEpoch, from)
      if (fenced !== ErrorCode.NONE) return refuse(fenced, all)
      const partitions = req.topicStates.flatMap((t) =>
        t.partitionStates.map((p) => ({ topic: t.topicName, partition: p.partitionIndex, leaderEpoch: p.leaderEpoch, deletePartition: p.deletePartition })),
      )
      const errors = await this.options.replicas.stopReplicas(req.controllerId, req.controllerEpoch, partitions)
      return { errorCode: ErrorCode.NONE, partitionErrors: errors.map((e) => ({ topic: e.topic, partition: e.partition, errorCode: e.errorCode })) }
    })
  }

  // ---------------------------------------------------------------- broker -> controller

  async alterPartition(req: AlterPartition.AlterPartitionRequest, version: number): Promise<AlterPartition.AlterPartitionResponse> {
    const c = this.#controller
    if (c === undefined || !c.isActive) return AlterPartition.createAlterPartitionResponse({ errorCode: ErrorCode.NOT_CONTROLLER })
    return c.alterPartition(req, version)
  }

  async controlledShutdown(brokerId: number, brokerEpoch: bigint): Promise<{ errorCode: number; remaining: TopicPartitionRef[] }> {
    const c = this.#controller
    if (c === undefined || !c.isActive) return { errorCode: ErrorCode.NOT_CONTROLLER, remaining: [] }
    return c.controlledShutdown(brokerId, brokerEpoch)
  }

  /**
   * ControlledShutdown from the network: only a broker's current registration may ask, its epoch exactly
   * the one the controller knows (Kafka refuses only an older one and lets -1 through; the epoch is the
   * asking broker's secret, so a client cannot shut a broker's leaderships down). Without ZooKeeper no
   * other broker exists to ask.
   */
  async #controlledShutdownFromNetwork(brokerId: number, brokerEpoch: bigint): Promise<{ errorCode: number; remaining: TopicPartitionRef[] }> {
    if (this.options.store.kind === 'embedded') return { errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, remaining: [] }
    const c = this.#controller
    if (c === undefined || !c.isActive) return { errorCode: ErrorCode.NOT_CONTROLLER, remaining: [] }
    const registered = c.context.liveBrokers.get(brokerId)
    if (registered !== undefined && registered.epoch !== brokerEpoch) return { errorCode: ErrorCode.STALE_BROKER_EPOCH, remaining: [] }
    return c.controlledShutdown(brokerId, brokerEpoch)
  }

  electLeaders(electionType: number, partitions: readonly TopicPartitionRef[] | null): Promise<Map<string, { errorCode: number; errorMessage: string | null }> | undefined> {
    const c = this.#controller
    if (c === undefined || !c.isActive) return Promise.resolve(undefined)
    return c.electLeaders(electionType, partitions)
  }

  alterPartitionReassignments(requests: readonly { tp: TopicPartitionRef; replicas: number[] | null }[]): Promise<Map<string, { errorCode: number; errorMessage: string | null }> | undefined> {
    const c = this.#controller
    if (c === undefined || !c.isActive) return Promise.resolve(undefined)
    return c.alterPartitionReassignments(requests)
  }

  listPartitionReassignments(partitions: readonly TopicPartitionRef[] | null): Promise<OngoingReassignmentView[] | undefined> {
    const c = this.#controller
    if (c === undefined || !c.isActive) return Promise.resolve(undefined)
    return c.listPartitionReassignments(partitions)
  }

  // ---------------------------------------------------------------- internals

  /** Admission first for a request from the network; then, from any path, the epochs Kafka fences by. */
  async #fence(controllerId: number, controllerEpoch: number, brokerEpoch: bigint, from: FromNetwork | undefined): Promise<ErrorCode> {
    if (from !== undefined) {
      const admitted = await from.admission.admit(from.ticket, controllerId, controllerEpoch, brokerEpoch)
      if (admitted !== ErrorCode.NONE) return admitted
    }
    if (brokerEpoch !== -1n && brokerEpoch < this.brokerEpoch) return ErrorCode.STALE_BROKER_EPOCH
    if (controllerEpoch < this.#controllerEpoch) return ErrorCode.STALE_CONTROLLER_EPOCH
    this.#controllerEpoch = controllerEpoch
    return ErrorCode.NONE
  }

  #inOrder<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#serial.then(fn, fn)
    this.#serial = run.catch((err: unknown) => this.options.log.error({ err }, 'control request failed'))
    return run
  }
}

function refuse(errorCode: ErrorCode, partitions: readonly TopicPartitionRef[]): ControlAnswer {
  return { errorCode, partitionErrors: partitions.map((p) => ({ topic: p.topic, partition: p.partition, errorCode })) }
}
