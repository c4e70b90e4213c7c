// What the active controller knows (Kafka's ControllerContext): live brokers and their epochs, topics,
// replica assignments, each partition's leader/ISR as last written to the store, the states of the
// partition and replica state machines, and the topics being deleted. Filled from the store at failover,
// kept current by the controller's own writes and the store's watches, and dropped at resignation.
import type { MainThreadSlices } from '../../domain/main-thread-slices.js'
import { partitionKey, type MetadataStore, type PartitionState, type RegisteredBroker, type ReplicaAssignment } from '../metadata-store.js'

export type PartitionStateName = 'NewPartition' | 'OnlinePartition' | 'OfflinePartition' | 'NonExistentPartition'

export type ReplicaStateName =
  | 'NewReplica'
  | 'OnlineReplica'
  | 'OfflineReplica'
  | 'ReplicaDeletionStarted'
  | 'ReplicaDeletionSuccessful'
  | 'ReplicaDeletionIneligible'
  | 'NonExistentReplica'

/** The states each state may be entered from (PartitionStateMachine.scala, ReplicaStateMachine.scala). */
export const VALID_PREVIOUS_PARTITION_STATES: Record<PartitionStateName, readonly PartitionStateName[]> = {
  NewPartition: ['NonExistentPartition'],
  OnlinePartition: ['NewPartition', 'OnlinePartition', 'OfflinePartition'],
  OfflinePartition: ['NewPartition', 'OnlinePartition', 'OfflinePartition'],
  NonExistentPartition: ['OfflinePartition'],
}

export const VALID_PREVIOUS_REPLICA_STATES: Record<ReplicaStateName, readonly ReplicaStateName[]> = {
  NewReplica: ['NonExistentReplica'],
  OnlineReplica: ['NewReplica', 'OnlineReplica', 'OfflineReplica', 'ReplicaDeletionIneligible'],
  OfflineReplica: ['NewReplica', 'OnlineReplica', 'OfflineReplica', 'ReplicaDeletionIneligible'],
  ReplicaDeletionStarted: ['OfflineReplica'],
  ReplicaDeletionSuccessful: ['ReplicaDeletionStarted'],
  ReplicaDeletionIneligible: ['OfflineReplica', 'ReplicaDeletionStarted'],
  NonExistentReplica: ['ReplicaDeletionSuccessful'],
}

export interface TopicPartition {
  topic: string
  partition: number
}

/** One replica of one partition (Kafka's PartitionAndReplica). */
export interface PartitionReplica extends TopicPartition {
  replica: number
}

// The state machines' states as small numbers, held per topic and partition index: at 100,000 partitions a
// failover used to put 100,000 partition keys and 300,000 replica keys (strings) into two Maps in one go,
// and building and hashing them, and collecting them, held the new controller's thread for seconds.
const PARTITION_STATES: readonly PartitionStateName[] = ['NewPartition', 'OnlinePartition', 'OfflinePartition', 'NonExistentPartition']
const REPLICA_STATES: readonly ReplicaStateName[] = [
  'NewReplica',
  'OnlineReplica',
  'OfflineReplica',
  'ReplicaDeletionStarted',
  'ReplicaDeletionSuccessful',
  'ReplicaDeletionIneligible',
  'NonExistentReplica',
]
const PARTITION_STATE_CODES = new Map(PARTITION_STATES.map((name, code) => [name, code]))
const REPLICA_STATE_CODES = new Map(REPLICA_STATES.map((name, code) => [name, code]))
const NO_STATE = -1

export class ControllerContext {
  epoch = 0
  epochVersion = -1
  readonly liveBrokers = new Map<number, RegisteredBroker>()
  readonly shuttingDownBrokerIds = new Set<number>()
  /** Replicas whose broker answered KAFKA_STORAGE_ERROR (a failed log dir): broker id -> partition keys. */
  readonly replicasOnOfflineDirs = new Map<number, Set<string>>()
  readonly allTopics = new Set<string>()
  readonly topicIds = new Map<string, string>()
  readonly topicNamesById = new Map<string, string>()
  /** topic -> replica assignment per partition. */
  readonly assignments = new Map<string, ReplicaAssignment[]>()
  /** topic -> per partition index, the state last written (leader, epoch, ISR, partition epoch, controller epoch). */
  readonly #leadership = new Map<string, (PartitionState | undefined)[]>()
  /** topic -> per partition index, the partition state's code (NO_STATE: none). */
  readonly #partitionStates = new Map<string, number[]>()
  /** topic -> per partition index, [replica, state code, replica, state code, ...] (RF pairs, one array). */
  readonly #replicaStates = new Map<string, (number[] | undefined)[]>()
  readonly topicsToBeDeleted = new Set<string>()
  readonly topicsWithDeletionStarted = new Set<string>()
  readonly topicsIneligibleForDeletion = new Set<string>()

  reset(): void {
    this.epoch = 0
    this.epochVersion = -1
    this.liveBrokers.clear()
    this.replicasOnOfflineDirs.clear()
    this.shuttingDownBrokerIds.clear()
    this.allTopics.clear()
    this.topicIds.clear()
    this.topicNamesById.clear()
    this.assignments.clear()
    this.#leadership.clear()
    this.#partitionStates.clear()
    this.#replicaStates.clear()
    this.topicsToBeDeleted.clear()
    this.topicsWithDeletionStarted.clear()
    this.topicsIneligibleForDeletion.clear()
  }

  // ---- brokers

  /** Registered brokers that are not shutting down. */
  liveBrokerIds(): Set<number> {
    const out = new Set<number>()
    for (const id of this.liveBrokers.keys()) if (!this.shuttingDownBrokerIds.has(id)) out.add(id)
    return out
  }

  liveOrShuttingDownBrokerIds(): number[] {
    return [...this.liveBrokers.keys()].sort((a, b) => a - b)
  }

  /**
   * Kafka's isReplicaOnline(broker, partition): the broker is live (not shutting down, unless included)
   * and the replica is not on a log dir the broker reported failed (replicasOnOfflineDirs).
   */
  isReplicaOnlineFor(brokerId: number, tp: TopicPartition, includeShuttingDown = false): boolean {
    if (this.replicasOnOfflineDirs.get(brokerId)?.has(partitionKey(tp.topic, tp.partition)) === true) return false
    return this.isReplicaOnline(brokerId, includeShuttingDown)
  }

  isReplicaOnline(brokerId: number, includeShuttingDown = false): boolean {
    if (!this.liveBrokers.has(brokerId)) return false
    return includeShuttingDown || !this.shuttingDownBrokerIds.has(brokerId)
  }

  // ---- topics and partitions

  setTopicId(topic: string, topicId: string): void {
    this.topicIds.set(topic, topicId)
    this.topicNamesById.set(topicId, topic)
  }

  removeTopic(topic: string): void {
    this.#leadership.delete(topic)
    this.#partitionStates.delete(topic)
    this.#replicaStates.delete(topic)
    this.assignments.delete(topic)
    this.allTopics.delete(topic)
    const id = this.topicIds.get(topic)
    if (id !== undefined) this.topicNamesById.delete(id)
    this.topicIds.delete(topic)
    this.topicsToBeDeleted.delete(topic)
    this.topicsWithDeletionStarted.delete(topic)
    this.topicsIneligibleForDeletion.delete(topic)
  }

  assignment(tp: TopicPartition): ReplicaAssignment | undefined {
    return this.assignments.get(tp.topic)?.[tp.partition]
  }

  replicasOf(tp: TopicPartition): number[] {
    return this.assignment(tp)?.replicas ?? []
  }

  setAssignment(tp: TopicPartition, assignment: ReplicaAssignment): void {
    let list = this.assignments.get(tp.topic)
    if (list === undefined) this.assignments.set(tp.topic, (list = []))
    list[tp.partition] = assignment
  }

  partitionsForTopic(topic: string): TopicPartition[] {
    const list = this.assignments.get(topic) ?? []
    const out: TopicPartition[] = []
    for (let p = 0; p < list.length; p++) if (list[p] !== undefined) out.push({ topic, partition: p })
    return out
  }

  allPartitions(): TopicPartition[] {
    const out: TopicPartition[] = []
    for (const topic of this.assignments.keys()) out.push(...this.partitionsForTopic(topic))
    return out
  }

  replicasForPartitions(partitions: readonly TopicPartition[]): PartitionReplica[] {
    return partitions.flatMap((tp) => this.replicasOf(tp).map((replica) => ({ ...tp, replica })))
  }

  replicasForTopic(topic: string): PartitionReplica[] {
    return this.replicasForPartitions(this.partitionsForTopic(topic))
  }

  replicasOnBrokers(brokerIds: ReadonlySet<number>): PartitionReplica[] {
    return this.allPartitions().flatMap((tp) => this.replicasOf(tp).filter((r) => brokerIds.has(r)).map((replica) => ({ ...tp, replica })))
  }

  partitionsOnBroker(brokerId: number): TopicPartition[] {
    return this.allPartitions().filter((tp) => this.replicasOf(tp).includes(brokerId))
  }

  leadershipOf(tp: TopicPartition): PartitionState | undefined {
    return this.#leadership.get(tp.topic)?.[tp.partition]
  }

  putLeadership(tp: TopicPartition, state: PartitionState): void {
    let states = this.#leadership.get(tp.topic)
    if (states === undefined) this.#leadership.set(tp.topic, (states = []))
    while (states.length < tp.partition) states.push(undefined)
    states[tp.partition] = state
  }

  removeLeadership(tp: TopicPartition): void {
    const states = this.#leadership.get(tp.topic)
    if (states !== undefined && tp.partition < states.length) states[tp.partition] = undefined
  }

  /** Partitions with a leader recorded, except topics queued for deletion. */
  partitionsWithLeaders(): TopicPartition[] {
    return this.allPartitions().filter((tp) => this.leadershipOf(tp) !== undefined && !this.topicsToBeDeleted.has(tp.topic))
  }

  /** Partitions whose leader is not online (topics being deleted left out). */
  partitionsWithOfflineLeader(): TopicPartition[] {
    return this.allPartitions().filter((tp) => {
      const l = this.leadershipOf(tp)
      return l !== undefined && !this.isReplicaOnlineFor(l.leaderAndIsr.leader, tp) && !this.topicsToBeDeleted.has(tp.topic)
    })
  }

  /** Partitions this broker leads. */
  partitionLeadersOnBroker(brokerId: number): TopicPartition[] {
    return this.allPartitions().filter((tp) => this.leadershipOf(tp)?.leaderAndIsr.leader === brokerId && !this.topicsToBeDeleted.has(tp.topic))
  }

  // ---- state machine states

  partitionState(tp: TopicPartition): PartitionStateName {
    const code = this.#partitionStates.get(tp.topic)?.[tp.partition] ?? NO_STATE
    return code === NO_STATE ? 'NonExistentPartition' : PARTITION_STATES[code]!
  }

  putPartitionState(tp: TopicPartition, state: PartitionStateName): void {
    let codes = this.#partitionStates.get(tp.topic)
    if (codes === undefined) this.#partitionStates.set(tp.topic, (codes = []))
    // Filled up to the index with NO_STATE, so the array stays one of small integers without holes.
    while (codes.length < tp.partition) codes.push(NO_STATE)
    codes[tp.partition] = PARTITION_STATE_CODES.get(state)!
  }

  replicaState(r: PartitionReplica): ReplicaStateName {
    const pairs = this.#replicaStates.get(r.topic)?.[r.partition]
    if (pairs !== undefined) for (let i = 0; i < pairs.length; i += 2) if (pairs[i] === r.replica) return REPLICA_STATES[pairs[i + 1]!]!
    return 'NonExistentReplica'
  }

  putReplicaState(r: PartitionReplica, state: ReplicaStateName): void {
    let perPartition = this.#replicaStates.get(r.topic)
    if (perPartition === undefined) this.#replicaStates.set(r.topic, (perPartition = []))
    while (perPartition.length < r.partition) perPartition.push(undefined)
    let pairs = perPartition[r.partition]
    if (pairs === undefined) perPartition[r.partition] = pairs = []
    const code = REPLICA_STATE_CODES.get(state)!
    for (let i = 0; i < pairs.length; i += 2) {
      if (pairs[i] === r.replica) {
        pairs[i + 1] = code
        return
      }
    }
    pairs.push(r.replica, code)
  }

  removeReplicaState(r: PartitionReplica): void {
    const perPartition = this.#replicaStates.get(r.topic)
    const pairs = perPartition?.[r.partition]
    if (pairs === undefined) return
    for (let i = 0; i < pairs.length; i += 2) {
      if (pairs[i] === r.replica) {
        pairs.splice(i, 2)
        break
      }
    }
    if (pairs.length === 0) perPartition![r.partition] = undefined
  }

  replicasInState(topic: string, state: ReplicaStateName): PartitionReplica[] {
    return this.replicasForTopic(topic).filter((r) => this.replicaState(r) === state)
  }

  areAllReplicasInState(topic: string, state: ReplicaStateName): boolean {
    return this.replicasForTopic(topic).every((r) => this.replicaState(r) === state)
  }

  isAnyReplicaInState(topic: string, state: ReplicaStateName): boolean {
    return this.replicasForTopic(topic).some((r) => this.replicaState(r) === state)
  }

  // ---- deletion

  isTopicQueuedUpForDeletion(topic: string): boolean {
    return this.topicsToBeDeleted.has(topic)
  }
}

/**
 * What a change of these partitions' states starts from: the states the context holds (read at failover,
 * then what this controller wrote), and those it holds none of read from the store. The controller is the
 * only writer of partition states (brokers propose ISR changes with AlterPartition) and writes them on
 * condition of the version it holds, so a state changed behind its back fails that write (bad version) and
 * the caller reads it again then. Kafka's ZooKeeper controller reads every state again before it writes,
 * since its brokers wrote ISR changes themselves: at a failover that was a second read of the whole cluster.
 */
export async function statesHeldOrRead(ctx: ControllerContext, store: MetadataStore, partitions: readonly TopicPartition[], slices: MainThreadSlices): Promise<Map<string, PartitionState>> {
  const held = new Map<string, PartitionState>()
  const missing: TopicPartition[] = []
  for (const tp of partitions) {
    const pause = slices.turn()
    if (pause !== undefined) await pause
    const state = ctx.leadershipOf(tp)
    if (state === undefined) missing.push(tp)
    else held.set(partitionKey(tp.topic, tp.partition), state)
  }
  if (missing.length > 0) for (const [key, state] of await store.getPartitionStates(missing)) held.set(key, state)
  return held
}
