// Collects the requests one controller step produces (Kafka's ControllerBrokerRequestBatch) and sends
// them when the step is done: per broker one LeaderAndIsr, then one UpdateMetadata, then one
// StopReplica. Every LeaderAndIsr entry also puts the partition in the UpdateMetadata for every live
// broker, so all brokers learn about a leader change in the same round.
import { ApiKey } from '../../protocol/api-keys.gen.js'
import * as LeaderAndIsr from '../../protocol/messages/04-leader-and-isr.gen.js'
import * as StopReplica from '../../protocol/messages/05-stop-replica.gen.js'
import * as UpdateMetadata from '../../protocol/messages/06-update-metadata.gen.js'
import { ZERO_UUID } from '../../protocol/primitives/types.js'
import { LEADER_DURING_DELETE, SECURITY_PROTOCOL_IDS, partitionKey, type PartitionState } from '../metadata-store.js'
import type { ControlResponse, ControllerChannel } from './channel.js'
import type { ControllerContext, TopicPartition } from './context.js'

/** Kafka's LeaderAndIsr.EpochDuringDelete: the StopReplica leader epoch of a topic being deleted. */
export const EPOCH_DURING_DELETE = -2
/** Kafka's LeaderAndIsr.NoEpoch. */
export const NO_EPOCH = -1

interface PendingStopReplica {
  leaderEpoch: number
  deletePartition: boolean
}

/**
 * While remembering (a controller failover), a LeaderAndIsr entry a broker was already given (same
 * partition epoch, not new) is not queued again, nor its UpdateMetadata. A new controller tells the
 * replicas of every partition it elects or takes a dead broker out of, then every live replica what it
 * hosts, and at 100,000 partitions the second telling repeated the first to every broker.
 */
export class LeaderAndIsrMemory {
  /** Per broker: partition key -> the partition epoch it was told. */
  #told: Map<number, Map<string, number>> | undefined

  remember(): void {
    this.#told = new Map()
  }

  forget(): void {
    this.#told = undefined
  }

  /** True when remembering and the broker was told this partition at this partition epoch. */
  wasTold(brokerId: number, key: string, partitionEpoch: number): boolean {
    return this.#told?.get(brokerId)?.get(key) === partitionEpoch
  }

  /** False when remembering and the broker was told this partition at this partition epoch already (and it is not new). */
  firstTelling(brokerId: number, key: string, partitionEpoch: number, isNew: boolean): boolean {
    const told = this.#told
    if (told === undefined) return true
    let forBroker = told.get(brokerId)
    if (forBroker === undefined) told.set(brokerId, (forBroker = new Map()))
    if (!isNew && forBroker.get(key) === partitionEpoch) return false
    forBroker.set(key, partitionEpoch)
    return true
  }
}

/** An empty replica list shared by the entries that have none (never changed: frozen). */
const NO_REPLICAS: number[] = Object.freeze([]) as unknown as number[]

export class RequestBatch {
  readonly #leaderAndIsr = new Map<number, Map<string, LeaderAndIsr.LeaderAndIsrPartitionState>>()
  readonly #stopReplica = new Map<number, Map<string, PendingStopReplica>>()
  readonly #updateMetadataBrokers = new Set<number>()
  readonly #updateMetadataPartitions = new Map<string, TopicPartition>()

  constructor(
    private readonly context: ControllerContext,
    private readonly channel: () => ControllerChannel,
    private readonly controllerId: number,
    private readonly interBrokerListener: string,
    private readonly onStopReplicaResponse: (brokerId: number, deleting: Set<string>, response: ControlResponse) => void,
    /** Hears LeaderAndIsr answers (partitions on a failed log dir answer KAFKA_STORAGE_ERROR). */
    private readonly onLeaderAndIsrResponse?: (brokerId: number, response: ControlResponse) => void,
    /** Shared by the controller's batches: what a failover has told each broker already. */
    private readonly told?: LeaderAndIsrMemory,
  ) {}

  newBatch(): void {
    if (this.#leaderAndIsr.size > 0 || this.#stopReplica.size > 0 || this.#updateMetadataBrokers.size > 0) {
      throw new Error('controller request batch not empty at the start of a new batch')
    }
  }

  clear(): void {
    this.#leaderAndIsr.clear()
    this.#stopReplica.clear()
    this.#updateMetadataBrokers.clear()
    this.#updateMetadataPartitions.clear()
  }

  addLeaderAndIsr(brokerIds: readonly number[], tp: TopicPartition, state: PartitionState, isNew: boolean): void {
    const key = partitionKey(tp.topic, tp.partition)
    const assignment = this.context.assignment(tp)
    const told = this.told
    let queued = 0
    let skipped = 0
    for (const brokerId of brokerIds) {
      if (brokerId < 0) continue
      if (told !== undefined && !told.firstTelling(brokerId, key, state.leaderAndIsr.partitionEpoch, isNew)) {
        skipped++
        continue
      }
      queued++
      let forBroker = this.#leaderAndIsr.get(brokerId)
      if (forBroker === undefined) this.#leaderAndIsr.set(brokerId, (forBroker = new Map()))
      const alreadyNew = forBroker.get(key)?.isNew ?? false
      const l = state.leaderAndIsr
      // The state's and the assignment's arrays as they are, not copies: the controller replaces them on
      // every change and never changes one in place, and an entry lives only until its request is encoded.
      // (At 100,000 partitions a failover queued 300,000 entries; four copies and four defaults each were
      // most of what its young generation had to collect.)
      const entry: LeaderAndIsr.LeaderAndIsrPartitionState = {
        topicName: tp.topic,
        partitionIndex: tp.partition,
        controllerEpoch: state.controllerEpoch,
        leader: l.leader,
        leaderEpoch: l.leaderEpoch,
        isr: l.isr,
        partitionEpoch: l.partitionEpoch,
        replicas: assignment?.replicas ?? NO_REPLICAS,
        addingReplicas: assignment?.addingReplicas ?? NO_REPLICAS,
        removingReplicas: assignment?.removingReplicas ?? NO_REPLICAS,
        isNew: isNew || alreadyNew,
        leaderRecoveryState: l.leaderRecoveryState,
      }
      forBroker.set(key, entry)
    }
    // Every broker already had this state from this failover, UpdateMetadata included.
    if (queued === 0 && skipped > 0) return
    this.addUpdateMetadata(this.context.liveOrShuttingDownBrokerIds(), [tp])
  }

  addStopReplica(brokerIds: readonly number[], tp: TopicPartition, deletePartition: boolean): void {
    const key = partitionKey(tp.topic, tp.partition)
    // A topic being deleted gets the sentinel epoch, which overrides any existing epoch on the broker.
    const leaderEpoch = this.context.isTopicQueuedUpForDeletion(tp.topic) ? EPOCH_DURING_DELETE : (this.context.leadershipOf(tp)?.leaderAndIsr.leaderEpoch ?? NO_EPOCH)
    for (const brokerId of brokerIds) {
      if (brokerId < 0) continue
      let forBroker = this.#stopReplica.get(brokerId)
      if (forBroker === undefined) this.#stopReplica.set(brokerId, (forBroker = new Map()))
      forBroker.set(key, { leaderEpoch, deletePartition: (forBroker.get(key)?.deletePartition ?? false) || deletePartition })
    }
  }

  /** UpdateMetadata to these brokers; partitions (may be none: just the broker list) go to every broker in the batch. */
  addUpdateMetadata(brokerIds: readonly number[], partitions: readonly TopicPartition[]): void {
    for (const id of brokerIds) if (id >= 0) this.#updateMetadataBrokers.add(id)
    for (const tp of partitions) this.#updateMetadataPartitions.set(partitionKey(tp.topic, tp.partition), tp)
  }

  /** Sends everything collected and empties the batch. */
  send(): void {
    const ctx = this.context
    const channel = this.channel()
    const live = new Set(ctx.liveOrShuttingDownBrokerIds())
    for (const [brokerId, partitions] of this.#leaderAndIsr) {
      if (!live.has(brokerId)) continue
      const byTopic = new Map<string, LeaderAndIsr.LeaderAndIsrPartitionState[]>()
      const leaderIds = new Set<number>()
      for (const p of partitions.values()) {
        let list = byTopic.get(p.topicName)
        if (list === undefined) byTopic.set(p.topicName, (list = []))
        list.push(p)
        leaderIds.add(p.leader)
      }
      const liveLeaders: LeaderAndIsr.LeaderAndIsrLiveLeader[] = []
      for (const id of [...leaderIds].sort((a, b) => a - b)) {
        const b = ctx.liveBrokers.get(id)
        const e = b?.endpoints.find((x) => x.listenerName === this.interBrokerListener)
        if (b !== undefined && e !== undefined) liveLeaders.push(LeaderAndIsr.createLeaderAndIsrLiveLeader({ brokerId: id, hostName: e.host, port: e.port }))
      }
      const body = LeaderAndIsr.createLeaderAndIsrRequest({
        controllerId: this.controllerId,
        controllerEpoch: ctx.epoch,
        brokerEpoch: ctx.liveBrokers.get(brokerId)!.epoch,
        type: 0,
        topicStates: [...byTopic].map(([topicName, partitionStates]) =>
          LeaderAndIsr.createLeaderAndIsrTopicState({ topicName, topicId: ctx.topicIds.get(topicName) ?? ZERO_UUID, partitionStates }),
        ),
        liveLeaders,
      })
      const onResponse = this.onLeaderAndIsrResponse
      channel.send(brokerId, { apiKey: ApiKey.LeaderAndIsr, body }, onResponse === undefined ? undefined : (response) => onResponse(brokerId, response))
    }
    this.#leaderAndIsr.clear()

    if (this.#updateMetadataBrokers.size > 0) {
      const partitionStates = this.#updateMetadataPartitionStates()
      const liveBrokers = ctx.liveOrShuttingDownBrokerIds().map((id) => {
        const b = ctx.liveBrokers.get(id)!
        return UpdateMetadata.createUpdateMetadataBroker({
          id,
          endpoints: b.endpoints.map((e) =>
            UpdateMetadata.createUpdateMetadataEndpoint({ host: e.host, port: e.port, listener: e.listenerName, securityProtocol: SECURITY_PROTOCOL_IDS[e.securityProtocol] ?? 0 }),
          ),
          rack: b.rack,
        })
      })
      for (const brokerId of this.#updateMetadataBrokers) {
        if (!live.has(brokerId)) continue
        const body = UpdateMetadata.createUpdateMetadataRequest({
          controllerId: this.controllerId,
          controllerEpoch: ctx.epoch,
          brokerEpoch: ctx.liveBrokers.get(brokerId)!.epoch,
          topicStates: partitionStates,
          liveBrokers,
        })
        channel.send(brokerId, { apiKey: ApiKey.UpdateMetadata, body })
      }
    }
    this.#updateMetadataBrokers.clear()
    this.#updateMetadataPartitions.clear()

    for (const [brokerId, partitions] of this.#stopReplica) {
      if (!live.has(brokerId)) continue
      const byTopic = new Map<string, StopReplica.StopReplicaPartitionState[]>()
      const deleting = new Set<string>()
      for (const [key, p] of partitions) {
        const i = key.lastIndexOf(':')
        const topic = key.slice(0, i)
        let list = byTopic.get(topic)
        if (list === undefined) byTopic.set(topic, (list = []))
        list.push(StopReplica.createStopReplicaPartitionState({ partitionIndex: Number(key.slice(i + 1)), leaderEpoch: p.leaderEpoch, deletePartition: p.deletePartition }))
        if (p.deletePartition) deleting.add(key)
      }
      const body = StopReplica.createStopReplicaRequest({
        controllerId: this.controllerId,
        controllerEpoch: ctx.epoch,
        brokerEpoch: ctx.liveBrokers.get(brokerId)!.epoch,
        topicStates: [...byTopic].map(([topicName, partitionStates]) => StopReplica.createStopReplicaTopicState({ topicName, partitionStates })),
      })
      channel.send(brokerId, { apiKey: ApiKey.StopReplica, body }, deleting.size === 0 ? undefined : (response) => this.onStopReplicaResponse(brokerId, deleting, response))
    }
    this.#stopReplica.clear()
  }

  #updateMetadataPartitionStates(): UpdateMetadata.UpdateMetadataTopicState[] {
    const ctx = this.context
    const byTopic = new Map<string, UpdateMetadata.UpdateMetadataPartitionState[]>()
    for (const tp of this.#updateMetadataPartitions.values()) {
      const state = ctx.leadershipOf(tp)
      if (state === undefined) continue
      const replicas = ctx.replicasOf(tp)
      const beingDeleted = ctx.topicsToBeDeleted.has(tp.topic)
      const l = state.leaderAndIsr
      let list = byTopic.get(tp.topic)
      if (list === undefined) byTopic.set(tp.topic, (list = []))
      // Shared arrays, as in addLeaderAndIsr; a list of offline replicas only where there are some.
      let offline: number[] | undefined
      for (const r of replicas) if (!ctx.isReplicaOnlineFor(r, tp)) (offline ??= []).push(r)
      const entry: UpdateMetadata.UpdateMetadataPartitionState = {
        topicName: tp.topic,
        partitionIndex: tp.partition,
        controllerEpoch: state.controllerEpoch,
        leader: beingDeleted ? LEADER_DURING_DELETE : l.leader,
        leaderEpoch: l.leaderEpoch,
        isr: l.isr,
        zkVersion: l.partitionEpoch,
        replicas,
        offlineReplicas: offline ?? NO_REPLICAS,
      }
      list.push(entry)
    }
    return [...byTopic].map(([topicName, partitionStates]) =>
      UpdateMetadata.createUpdateMetadataTopicState({ topicName, topicId: ctx.topicIds.get(topicName) ?? ZERO_UUID, partitionStates }),
    )
  }
}
