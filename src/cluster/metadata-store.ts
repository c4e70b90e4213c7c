// The MetadataStore port: what the controller and the brokers need from the store that holds a cluster's
// metadata, in Kafka's ZooKeeper-mode terms. Two adapters implement it: zk-store.ts (ZooKeeper, Kafka's
// znode layout and JSON, so Kafka's tooling and zkCli.sh read the same tree) and embedded-store.ts (one
// broker, a JSON file in its log dir, nothing else to run). The controller and brokers run the same code
// over either.
//
// Rules every adapter keeps (Kafka's):
// - Broker epoch: a broker's registration gets a number that grows with every registration in the
//   cluster (ZooKeeper: the czxid of /brokers/ids/<id>). A new session means a new registration, a new
//   epoch; controllers and brokers fence requests carrying an older one.
// - Controller election: campaign() makes this broker controller and bumps the controller epoch in one
//   atomic step, or fails with ControllerMovedError. The epoch's version (the zkVersion of
//   /controller_epoch) is the fencing token: every controller write goes with a check of it, so a deposed
//   controller's write fails as a whole (ControllerMovedError) and changes nothing.
// - Partition state (leader, leader epoch, ISR) is written only by the controller, conditional on its
//   version (the partition epoch).
// - Watches are edge triggers: the callback says "something under this changed, read again". They survive
//   a lost session (the adapter re-arms them on the next one and calls each once, since changes may have
//   been missed meanwhile).
// - Brokers (admin requests) write topic assignments, the deletion queue and entity configs; the
//   controller reacts to the first two through its watches, every broker to config change notifications.

/** Kafka's LeaderAndIsr.NoLeader: a partition without a leader. */
export const NO_LEADER = -1
/** Kafka's LeaderAndIsr.LeaderDuringDelete: the leader UpdateMetadata announces for a topic being deleted. */
export const LEADER_DURING_DELETE = -2
/** Kafka's LeaderRecoveryState: RECOVERED (0), or RECOVERING (1) after an unclean election until the ISR grows. */
export const LeaderRecoveryState = { RECOVERED: 0, RECOVERING: 1 } as const

/** Security protocol ids as UpdateMetadata carries them (Kafka's SecurityProtocol.id). */
export const SECURITY_PROTOCOL_IDS: Readonly<Record<string, number>> = { PLAINTEXT: 0, SSL: 1, SASL_PLAINTEXT: 2, SASL_SSL: 3 }

export interface ListenerEndpoint {
  listenerName: string
  host: string
  port: number
  /** PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. */
  securityProtocol: string
}

export interface BrokerRegistration {
  id: number
  /** Advertised endpoints, one per listener. */
  endpoints: ListenerEndpoint[]
  rack: string | null
}

export interface RegisteredBroker extends BrokerRegistration {
  /** The broker epoch (czxid of the registration). */
  epoch: bigint
}

export interface ReplicaAssignment {
  /** Replica broker ids; the first is the preferred leader. */
  replicas: number[]
  /** Replicas being added / removed by a reassignment (empty otherwise). */
  addingReplicas: number[]
  removingReplicas: number[]
}

export interface TopicAssignment {
  name: string
  /** Kafka's topic id (base64url of 16 bytes); null in a znode written without one (the controller then assigns one). */
  topicId: string | null
  /** Index = partition number. */
  partitions: ReplicaAssignment[]
}

export interface LeaderAndIsr {
  leader: number
  leaderEpoch: number
  isr: number[]
  leaderRecoveryState: number
  /** The version of the partition state (zkVersion): conditional writes compare it. */
  partitionEpoch: number
}

/** Kafka's LeaderIsrAndControllerEpoch: a partition's state and the controller epoch that wrote it. */
export interface PartitionState {
  leaderAndIsr: LeaderAndIsr
  controllerEpoch: number
}

/** The controller's fencing token: its epoch and the store version that epoch was written at. */
export interface ControllerEpoch {
  epoch: number
  epochVersion: number
}

export interface TopicPartitionId {
  topic: string
  partition: number
}

/** Entity types of dynamic configs (/config/<type>/<name>). */
export type ConfigEntityType = 'topics' | 'brokers' | 'clients' | 'users' | 'ips' | 'groups'
/** 'groups': the group configs of KIP-848 / KIP-932 (/config/groups/<sanitized group id>). */
export const CONFIG_ENTITY_TYPES: readonly ConfigEntityType[] = ['topics', 'clients', 'users', 'brokers', 'ips', 'groups']
/** Kafka's sanitized name of the default entity (the cluster-wide default of brokers, users, clients). */
export const DEFAULT_ENTITY_NAME = '<default>'

/** A resource pattern as Kafka stores ACLs: resourceType and operation as named in Kafka's JSON ('Topic', 'Read'). */
export interface AclResource {
  patternType: 'LITERAL' | 'PREFIXED'
  resourceType: string
  name: string
}

/** One ACL of a resource, in Kafka's stored JSON form. */
export interface StoredAcl {
  principal: string
  permissionType: string
  operation: string
  host: string
}

export interface StoredResourceAcls {
  resource: AclResource
  acls: StoredAcl[]
}

export interface ConfigChange {
  entityType: ConfigEntityType
  entityName: string
}

export interface ProducerIdBlock {
  firstProducerId: number
  /** Inclusive. */
  lastProducerId: number
}

/** Stops a watch; the callback is not called again. */
export type Unwatch = () => void

export interface PartitionStateWrite extends TopicPartitionId {
  /** The new state; its partitionEpoch is the version expected now (ignored for creation). */
  state: PartitionState
}

export interface PartitionStateUpdateResult {
  /** Written: the state with its new partition epoch. */
  updated: Map<string, LeaderAndIsr>
  /** The partition epoch did not match: someone else changed it; re-read and decide again. */
  badVersion: string[]
  /** Anything else (e.g. the znode vanished with its topic). */
  failed: Map<string, Error>
}

/** Session events of stores that have sessions (ZooKeeper): a lost session drops registrations. */
export type StoreSessionEvent = 'expired' | 'reestablished'

export interface MetadataStore {
  /** 'zookeeper' or 'embedded'. */
  readonly kind: 'zookeeper' | 'embedded'
  /** Where it is, for logs ('127.0.0.1:2181/skein', '<dir>/cluster-metadata.json'). */
  readonly description: string

  /** Connects (ZooKeeper: the chroot and Kafka's persistent paths are created if missing). */
  start(): Promise<void>
  /** Ends the session: this broker's registration and, if it was controller, /controller go at once. */
  close(): Promise<void>
  /** Session expiry and the new session after it ('expired' first; 'reestablished' once a new session is up). */
  onSession(listener: (event: StoreSessionEvent) => void): void

  /** The cluster id, created from `proposed` when the store has none. */
  getOrCreateClusterId(proposed: string): Promise<string>

  // -- brokers

  /**
   * Registers this broker (ephemeral: it ends with the session) and resolves its broker epoch. A
   * registration of the same id left by an earlier session is waited out (up to waitMs), since it vanishes
   * when that session expires.
   */
  registerBroker(registration: BrokerRegistration, waitMs: number): Promise<bigint>
  getBroker(id: number): Promise<RegisteredBroker | undefined>
  /** Every registered (live) broker with its epoch, by id. */
  getLiveBrokers(): Promise<RegisteredBroker[]>
  watchBrokers(onChange: () => void): Unwatch

  // -- controller

  /** The controller's broker id, or -1 when there is none. */
  getControllerId(): Promise<number>
  /** Fires when the controller registration appears, changes or goes. */
  watchController(onChange: () => void): Unwatch
  /** The current controller epoch and its version, or undefined before the first election. */
  getControllerEpoch(): Promise<ControllerEpoch | undefined>
  /**
   * Becomes controller: registers brokerId as controller and bumps the epoch in one atomic write.
   * Throws ControllerMovedError when another broker is controller or won meanwhile.
   */
  campaign(brokerId: number): Promise<ControllerEpoch>
  /** Gives up the controller role (deletes the registration if the epoch is still ours). */
  resign(token: ControllerEpoch): Promise<void>
  /**
   * A broker found controller `controllerId` dead (its port refuses connections, or it has not answered
   * for broker.session.timeout.ms): deletes its registration, so that the brokers elect another before its
   * session expires. Only while that controller's epoch is still current (a newer election is left alone);
   * resolves whether it was deleted. The deposed controller, if it lives, is fenced by the epoch.
   */
  removeDeadController(controllerId: number): Promise<boolean>
  /** Milliseconds since the store last answered this broker (its session's pings included); 0 in process. */
  msSinceContact(): number

  // -- topics

  getTopicNames(): Promise<string[]>
  watchTopics(onChange: () => void): Unwatch
  /** Assignments of the named topics that exist (others are left out). */
  getTopicAssignments(names: readonly string[]): Promise<Map<string, TopicAssignment>>
  /** Fires when a topic's assignment changes (partitions added) or the topic goes. */
  watchTopicAssignment(name: string, onChange: () => void): Unwatch
  /**
   * Admin: writes the topic's config, then its assignment (Kafka's order: a controller that sees the
   * topic can read its config). Throws TopicExistsError when it exists (or is still being deleted).
   */
  createTopic(assignment: TopicAssignment, configs: Readonly<Record<string, string>>): Promise<void>
  /** Admin: replaces a topic's assignment (partitions added). Throws UnknownTopicError when it is gone. */
  setTopicAssignment(assignment: TopicAssignment): Promise<void>
  /** Controller: writes assignments with topic ids filled in (topics created without one). */
  setTopicIds(token: ControllerEpoch, assignments: readonly TopicAssignment[]): Promise<void>
  /**
   * Controller: replaces topics' assignments (a partition reassignment's replicas, adding and removing
   * replicas, KIP-455), guarded by its epoch.
   */
  setTopicAssignments(token: ControllerEpoch, assignments: readonly TopicAssignment[]): Promise<void>

  // -- partition states (controller writes, guarded by its epoch)

  /** States of the given partitions that have one, keyed by partitionKey. */
  getPartitionStates(partitions: readonly TopicPartitionId[]): Promise<Map<string, PartitionState>>
  /** Creates first states (partition epoch 0); resolves the keys that already had one (not overwritten). */
  createPartitionStates(token: ControllerEpoch, writes: readonly PartitionStateWrite[]): Promise<{ created: Map<string, LeaderAndIsr>; failed: Map<string, Error> }>
  /** Conditional updates: each state's partitionEpoch is the version it must still have. */
  updatePartitionStates(token: ControllerEpoch, writes: readonly PartitionStateWrite[]): Promise<PartitionStateUpdateResult>

  // -- topic deletion

  /** Admin: queues topics for deletion; resolves the names already queued (not an error, Kafka swallows it). */
  queueTopicDeletions(names: readonly string[]): Promise<string[]>
  getTopicDeletions(): Promise<string[]>
  watchTopicDeletions(onChange: () => void): Unwatch
  /** Controller: removes queue entries (done, or the topic does not exist). */
  removeTopicDeletions(token: ControllerEpoch, names: readonly string[]): Promise<void>
  /** Controller: removes a deleted topic's assignment, partition states and config. */
  deleteTopic(token: ControllerEpoch, name: string): Promise<void>

  // -- log dir failures (Kafka's /log_dir_event_notification)

  /** Broker: one of its log dirs failed; the controller then learns which replicas went offline. */
  notifyLogDirFailure(brokerId: number): Promise<void>
  /** Controller: the notifications queued, by name, with the broker each names (malformed ones: -1). */
  getLogDirEvents(): Promise<{ name: string; brokerId: number }[]>
  watchLogDirEvents(onChange: () => void): Unwatch
  /** Controller: removes handled notifications. */
  removeLogDirEvents(token: ControllerEpoch, names: readonly string[]): Promise<void>

  // -- dynamic configs

  /** An entity's config (empty when it has none). */
  getEntityConfig(entityType: ConfigEntityType, entityName: string): Promise<Record<string, string>>
  /** Names that have a config of this type (top-level entities: not /config/users/<user>/clients/...). */
  getEntityNames(entityType: ConfigEntityType): Promise<string[]>
  /**
   * Client-ids with a config under one user (Kafka's /config/users/<user>/clients/<client-id>, the
   * user+client-id quota entities; they are read and written as entity 'users', name
   * '<user>/clients/<client-id>', and their change notifications name that path).
   */
  getUserClientEntityNames(user: string): Promise<string[]>
  /** Replaces an entity's config (empty: removed) and publishes a change notification. */
  setEntityConfig(entityType: ConfigEntityType, entityName: string, config: Readonly<Record<string, string>>): Promise<void>
  /**
   * Calls onChanges with each batch of change notifications published after this call, in order (and
   * those it finds when a lost session comes back: their entities may have changed meanwhile).
   */
  /** Fires when ACL change notifications appear (/kafka-acl-changes, /kafka-acl-extended-changes): another broker changed ACLs. */
  watchAclChanges(onChange: () => void): Unwatch
  watchConfigChanges(onChanges: (changes: ConfigChange[]) => void): Unwatch

  // -- ACLs (Kafka's ZooKeeper layout: /kafka-acl/<ResourceType>/<name> for LITERAL patterns,
  //    /kafka-acl-extended/prefixed/<ResourceType>/<name> for PREFIXED, each {"version":1,"acls":[...]})

  /** Every resource that has ACLs, with them. */
  getAcls(): Promise<StoredResourceAcls[]>
  /** Replaces one resource's ACLs (empty: the resource's node is removed) and publishes a change notification. */
  setResourceAcls(resource: AclResource, acls: readonly StoredAcl[]): Promise<void>

  // -- producer ids

  /** The next block of producer ids, unique across the cluster (Kafka's /latest_producer_id_block). */
  allocateProducerIdBlock(brokerId: number, blockSize: number): Promise<ProducerIdBlock>
}

/** The key of a partition in the maps this port answers: `${topic}:${partition}` (':' is not legal in topic names). */
export function partitionKey(topic: string, partition: number): string {
  return `${topic}:${partition}`
}

export function parsePartitionKey(key: string): TopicPartitionId {
  const i = key.lastIndexOf(':')
  return { topic: key.slice(0, i), partition: Number(key.slice(i + 1)) }
}

/** A write by a controller whose epoch is no longer current (Kafka's ControllerMovedException). */
export class ControllerMovedError extends Error {
  override readonly name = 'ControllerMovedError'
}

/** CreateTopics of a topic that exists, or is still being deleted. */
export class TopicExistsError extends Error {
  override readonly name = 'TopicExistsError'
}

export class UnknownTopicError extends Error {
  override readonly name = 'UnknownTopicError'
}

/** A registration of this broker id by another live session (another broker with the same broker.id). */
export class BrokerIdInUseError extends Error {
  override readonly name = 'BrokerIdInUseError'
}
