// The admin client: topics (create, delete, list, describe, add partitions), configs (describe,
// incremental alter), consumer groups (list, describe, committed offsets, offset reset, delete) and
// partition offsets. Controller requests go to the controller from metadata, group requests to the
// group's coordinator, ListOffsets to partition leaders.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as CreateAcls from '../protocol/messages/30-create-acls.gen.js'
import * as CreatePartitions from '../protocol/messages/37-create-partitions.gen.js'
import * as DeleteAcls from '../protocol/messages/31-delete-acls.gen.js'
import * as DescribeAcls from '../protocol/messages/29-describe-acls.gen.js'
import type { AclBinding, AclFilter } from '../domain/acl.js'
import * as CreateTopics from '../protocol/messages/19-create-topics.gen.js'
import * as DeleteGroups from '../protocol/messages/42-delete-groups.gen.js'
import * as DeleteTopics from '../protocol/messages/20-delete-topics.gen.js'
import * as DescribeCluster from '../protocol/messages/60-describe-cluster.gen.js'
import * as DescribeConfigs from '../protocol/messages/32-describe-configs.gen.js'
import * as DescribeGroups from '../protocol/messages/15-describe-groups.gen.js'
import * as ConsumerGroupDescribe from '../protocol/messages/69-consumer-group-describe.gen.js'
import * as AlterReplicaLogDirs from '../protocol/messages/34-alter-replica-log-dirs.gen.js'
import * as DescribeLogDirs from '../protocol/messages/35-describe-log-dirs.gen.js'
import * as ElectLeaders from '../protocol/messages/43-elect-leaders.gen.js'
import * as AlterPartitionReassignments from '../protocol/messages/45-alter-partition-reassignments.gen.js'
import * as ListPartitionReassignments from '../protocol/messages/46-list-partition-reassignments.gen.js'
import * as IncrementalAlterConfigs from '../protocol/messages/44-incremental-alter-configs.gen.js'
import * as ListGroups from '../protocol/messages/16-list-groups.gen.js'
import * as DescribeClientQuotas from '../protocol/messages/48-describe-client-quotas.gen.js'
import * as AlterClientQuotas from '../protocol/messages/49-alter-client-quotas.gen.js'
import * as DescribeUserScramCredentials from '../protocol/messages/50-describe-user-scram-credentials.gen.js'
import * as AlterUserScramCredentials from '../protocol/messages/51-alter-user-scram-credentials.gen.js'
import { pbkdf2Sync, randomBytes } from 'node:crypto'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { ConnectionError } from './errors.js'
import { Cluster, type BrokerNode, type ClientOptions, type PartitionInfo } from './cluster-connections.js'
import type { BrokerConnection } from './connection.js'
import { commitOffsets, decodeAssignment, fetchCommittedOffsetDetails, fetchCommittedOffsets, type CommittedOffset, type TopicPartitionOffset } from './group.js'
import { listOffsets, type OffsetAnswer, type OffsetQuery } from './offsets.js'
import * as shareGroups from './share-group-admin.js'
import type { ShareGroupDescription, ShareGroupListing, SharePartitionOffsetInfo } from './share-group-admin.js'

export const ResourceType = { TOPIC: 2, BROKER: 4, BROKER_LOGGER: 8, GROUP: 32 } as const

/** Kafka's ConfigSource names, by id. */
export const CONFIG_SOURCE_NAMES = ['UNKNOWN', 'DYNAMIC_TOPIC_CONFIG', 'DYNAMIC_BROKER_CONFIG', 'DYNAMIC_DEFAULT_BROKER_CONFIG', 'STATIC_BROKER_CONFIG', 'DEFAULT_CONFIG', 'DYNAMIC_BROKER_LOGGER_CONFIG', 'CLIENT_METRICS_CONFIG', 'GROUP_CONFIG'] as const

export function configSourceName(id: number): string {
  return CONFIG_SOURCE_NAMES[id] ?? 'UNKNOWN'
}

export interface NewTopic {
  name: string
  /** -1 = the broker's num.partitions. */
  numPartitions?: number
  /** -1 = the broker's default.replication.factor. */
  replicationFactor?: number
  /** Kafka's replicasAssignments: the broker ids of each partition's replicas, partition 0 first (the first is the preferred leader); numPartitions and replicationFactor are then left to it. */
  replicaAssignment?: readonly (readonly number[])[]
  configs?: Record<string, string>
}

export interface CreatedTopic {
  name: string
  topicId: string
  numPartitions: number
  replicationFactor: number
}

export interface TopicDescription {
  name: string
  topicId: string
  isInternal: boolean
  partitions: PartitionInfo[]
}

export interface ConfigResource {
  type: 'topic' | 'broker' | 'broker-logger' | 'group'
  name: string
}

export interface ConfigEntry {
  name: string
  value: string | null
  readOnly: boolean
  isDefault: boolean
  source: string
  sensitive: boolean
  synonyms: { name: string; value: string | null; source: string }[]
}

export type AlterOp = { op: 'set'; name: string; value: string } | { op: 'delete'; name: string } | { op: 'append' | 'subtract'; name: string; value: string }

export interface GroupListing {
  groupId: string
  protocolType: string
  state: string
}

export interface GroupMemberDescription {
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  assignment: { topic: string; partition: number }[]
}

export interface GroupDescription {
  groupId: string
  state: string
  protocolType: string
  /** The assignor the group uses: a classic group's selected protocol ('range', 'roundrobin', ...; '' while it has no members), or a consumer group's (KIP-848) server assignor. */
  protocol: string
  /** 'consumer' for a KIP-848 consumer group (described by ConsumerGroupDescribe), else 'classic'. */
  groupType: 'classic' | 'consumer'
  /** A consumer group's group epoch and target assignment epoch; undefined for classic groups. */
  groupEpoch?: number
  assignmentEpoch?: number
  members: GroupMemberDescription[]
  /** The broker that coordinates the group. */
  coordinator: BrokerNode | null
}

/** One broker's log dir and the partitions in it (DescribeLogDirs). */
export interface LogDirDescription {
  broker: number
  logDir: string
  errorCode: number
  /** -1 when the broker does not say (DescribeLogDirs before v4). */
  totalBytes: number
  usableBytes: number
  partitions: { topic: string; partition: number; sizeBytes: number; offsetLag: number; isFuture: boolean }[]
}

/** One partition's answer to ElectLeaders or AlterPartitionReassignments. */
export interface PartitionOutcome {
  topic: string
  partition: number
  errorCode: number
  errorMessage: string | null
}

/** A partition reassignment in progress (ListPartitionReassignments). */
export interface PartitionReassignment {
  topic: string
  partition: number
  replicas: number[]
  addingReplicas: number[]
  removingReplicas: number[]
}

const RESOURCE_TYPES: Record<ConfigResource['type'], number> = { topic: ResourceType.TOPIC, broker: ResourceType.BROKER, 'broker-logger': ResourceType.BROKER_LOGGER, group: ResourceType.GROUP }
const ALTER_OPS = { set: 0, delete: 1, append: 2, subtract: 3 } as const

function check(code: number, message: string | null | undefined, what: string): void {
  if (code !== ErrorCode.NONE) throw new KafkaError(code as ErrorCode, message != null && message !== '' ? message : what)
}

/** One component of a DescribeClientQuotas filter: match a name, the default (null) or any (undefined). */
export interface ClientQuotaFilterComponent {
  entityType: 'user' | 'client-id' | 'ip'
  match?: string | null
}

/** A quota entity (entity type -> name, null for the default) and its quota values. */
export interface ClientQuotaEntry {
  entity: Record<string, string | null>
  values: Record<string, number>
}

/** SCRAM mechanisms by their AlterUserScramCredentials / DescribeUserScramCredentials id (Kafka's ScramMechanism). */
export const SCRAM_MECHANISMS = { 'SCRAM-SHA-256': 1, 'SCRAM-SHA-512': 2 } as const
export type ScramMechanismName = keyof typeof SCRAM_MECHANISMS

export interface ScramCredentialUpsert {
  user: string
  mechanism: ScramMechanismName
  password: string
  /** Kafka's default 4096 (the broker refuses fewer, and more than 16384). */
  iterations?: number
}

export interface UserScramCredentials {
  user: string
  credentials: { mechanism: ScramMechanismName; iterations: number }[]
}

const scramMechanismName = (id: number): ScramMechanismName | undefined => (id === 1 ? 'SCRAM-SHA-256' : id === 2 ? 'SCRAM-SHA-512' : undefined)

export class Admin {
  readonly cluster: Cluster

  constructor(opts: ClientOptions) {
    this.cluster = new Cluster(opts)
  }

  /** The controller (or any broker when the cluster reports none), for topic and config changes. */
  /**
   * The active controller, from fresh metadata. When it cannot be reached (it has just died and the
   * metadata, from a broker that has not heard yet, still names it), any broker that answers: every broker
   * serves topic creation, deletion and partition changes itself, and the controller-only APIs answer
   * NOT_CONTROLLER there, which the caller may retry.
   */
  private async controller(): Promise<BrokerConnection> {
    const meta = await this.cluster.refreshMetadata([])
    if (meta.controllerId >= 0 && meta.brokers.has(meta.controllerId)) {
      try {
        return await this.cluster.nodeConnection(meta.controllerId)
      } catch (err) {
        if (!(err instanceof ConnectionError)) throw err
      }
    }
    return this.cluster.anyConnection()
  }

  describeCluster(): Promise<{ clusterId: string | null; controllerId: number; brokers: BrokerNode[] }> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.cluster.anyConnection()
      if (conn.supports(ApiKey.DescribeCluster)) {
        const req = DescribeCluster.createDescribeClusterRequest({ endpointType: 1 })
        const res = await conn.send(ApiKey.DescribeCluster, (w, v) => DescribeCluster.encodeDescribeClusterRequest(w, req, v), DescribeCluster.decodeDescribeClusterResponse)
        check(res.errorCode, res.errorMessage, 'DescribeCluster')
        return { clusterId: res.clusterId, controllerId: res.controllerId, brokers: res.brokers.map((b) => ({ nodeId: b.brokerId, host: b.host, port: b.port, rack: b.rack })) }
      }
      const meta = await this.cluster.refreshMetadata([])
      return { clusterId: meta.clusterId, controllerId: meta.controllerId, brokers: [...meta.brokers.values()] }
    })
  }

  createTopics(topics: readonly NewTopic[], opts: { validateOnly?: boolean; timeoutMs?: number } = {}): Promise<CreatedTopic[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.controller()
      const req = CreateTopics.createCreateTopicsRequest({
        timeoutMs: opts.timeoutMs ?? 30000,
        validateOnly: opts.validateOnly ?? false,
        topics: topics.map((t) =>
          CreateTopics.createCreatableTopic({
            name: t.name,
            numPartitions: t.replicaAssignment === undefined ? (t.numPartitions ?? -1) : -1,
            replicationFactor: t.replicaAssignment === undefined ? (t.replicationFactor ?? -1) : -1,
            assignments: (t.replicaAssignment ?? []).map((brokerIds, partitionIndex) => CreateTopics.createCreatableReplicaAssignment({ partitionIndex, brokerIds: [...brokerIds] })),
            configs: Object.entries(t.configs ?? {}).map(([name, value]) => CreateTopics.createCreatableTopicConfig({ name, value })),
          }),
        ),
      })
      const res = await conn.send(ApiKey.CreateTopics, (w, v) => CreateTopics.encodeCreateTopicsRequest(w, req, v), CreateTopics.decodeCreateTopicsResponse)
      return res.topics.map((t) => {
        check(t.errorCode, t.errorMessage, `creating topic '${t.name}'`)
        return { name: t.name, topicId: t.topicId, numPartitions: t.numPartitions, replicationFactor: t.replicationFactor }
      })
    })
  }

  deleteTopics(names: readonly string[], opts: { timeoutMs?: number } = {}): Promise<void> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.controller()
      const v = conn.version(ApiKey.DeleteTopics)
      const req = DeleteTopics.createDeleteTopicsRequest(
        v >= 6
          ? { timeoutMs: opts.timeoutMs ?? 30000, topics: names.map((name) => DeleteTopics.createDeleteTopicState({ name })) }
          : { timeoutMs: opts.timeoutMs ?? 30000, topicNames: [...names] },
      )
      const res = await conn.send(ApiKey.DeleteTopics, (w, ver) => DeleteTopics.encodeDeleteTopicsRequest(w, req, ver), DeleteTopics.decodeDeleteTopicsResponse)
      for (const r of res.responses) check(r.errorCode, r.errorMessage, `deleting topic '${r.name}'`)
    })
  }

  /** Topic names, sorted; internal topics (__consumer_offsets, ...) only when asked. */
  listTopics(opts: { includeInternal?: boolean } = {}): Promise<string[]> {
    return this.cluster.withDeadline(async () => {
      const meta = await this.cluster.refreshMetadata(null)
      return [...meta.topics.values()].filter((t) => t.errorCode === ErrorCode.NONE && (opts.includeInternal === true || !t.isInternal)).map((t) => t.name).sort()
    })
  }

  /** Descriptions of the named topics (null = all); an unknown name throws UNKNOWN_TOPIC_OR_PARTITION. */
  describeTopics(names: readonly string[] | null, opts: { includeInternal?: boolean } = {}): Promise<TopicDescription[]> {
    return this.cluster.withDeadline(async () => {
      const meta = await this.cluster.refreshMetadata(names)
      const out: TopicDescription[] = []
      const list = names ?? [...meta.topics.keys()].sort()
      for (const name of list) {
        const t = meta.topics.get(name)
        if (t === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic '${name}' does not exist`)
        if (t.errorCode !== ErrorCode.NONE) throw new KafkaError(t.errorCode as ErrorCode, t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION ? `topic '${name}' does not exist` : `topic '${name}'`)
        if (names === null && t.isInternal && opts.includeInternal !== true) continue
        out.push({ name: t.name, topicId: t.topicId, isInternal: t.isInternal, partitions: t.partitions.filter((p) => p !== undefined) })
      }
      return out
    })
  }

  /** Grows a topic to `count` partitions. */
  createPartitions(topic: string, count: number, opts: { validateOnly?: boolean; timeoutMs?: number } = {}): Promise<void> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.controller()
      const req = CreatePartitions.createCreatePartitionsRequest({
        timeoutMs: opts.timeoutMs ?? 30000,
        validateOnly: opts.validateOnly ?? false,
        topics: [CreatePartitions.createCreatePartitionsTopic({ name: topic, count, assignments: null })],
      })
      const res = await conn.send(ApiKey.CreatePartitions, (w, v) => CreatePartitions.encodeCreatePartitionsRequest(w, req, v), CreatePartitions.decodeCreatePartitionsResponse)
      for (const r of res.results) check(r.errorCode, r.errorMessage, `adding partitions to '${r.name}'`)
    })
  }

  /**
   * ElectLeaders: 'preferred' or 'unclean' leader elections for the partitions (null = all), answered per
   * partition (ELECTION_NOT_NEEDED, PREFERRED_LEADER_NOT_AVAILABLE, ...); a top-level error throws.
   */
  electLeaders(electionType: 'preferred' | 'unclean', partitions: readonly { topic: string; partition: number }[] | null, opts: { timeoutMs?: number } = {}): Promise<PartitionOutcome[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.controller()
      const byTopic = new Map<string, number[]>()
      for (const p of partitions ?? []) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition])
      const req = ElectLeaders.createElectLeadersRequest({
        electionType: electionType === 'preferred' ? 0 : 1,
        timeoutMs: opts.timeoutMs ?? 30000,
        topicPartitions: partitions === null ? null : [...byTopic].map(([topic, ps]) => ElectLeaders.createTopicPartitions({ topic, partitions: ps })),
      })
      const res = await conn.send(ApiKey.ElectLeaders, (w, v) => ElectLeaders.encodeElectLeadersRequest(w, req, v), ElectLeaders.decodeElectLeadersResponse)
      check(res.errorCode, null, 'ElectLeaders')
      return res.replicaElectionResults.flatMap((t) => t.partitionResult.map((p) => ({ topic: t.topic, partition: p.partitionId, errorCode: p.errorCode, errorMessage: p.errorMessage })))
    })
  }

  /** AlterPartitionReassignments: a target replica list per partition (null = cancel), answered per partition. */
  alterPartitionReassignments(reassignments: readonly { topic: string; partition: number; replicas: number[] | null }[], opts: { timeoutMs?: number } = {}): Promise<PartitionOutcome[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.controller()
      const byTopic = new Map<string, AlterPartitionReassignments.ReassignablePartition[]>()
      for (const r of reassignments) {
        byTopic.set(r.topic, [...(byTopic.get(r.topic) ?? []), AlterPartitionReassignments.createReassignablePartition({ partitionIndex: r.partition, replicas: r.replicas === null ? null : [...r.replicas] })])
      }
      const req = AlterPartitionReassignments.createAlterPartitionReassignmentsRequest({
        timeoutMs: opts.timeoutMs ?? 30000,
        topics: [...byTopic].map(([name, partitions]) => AlterPartitionReassignments.createReassignableTopic({ name, partitions })),
      })
      const res = await conn.send(ApiKey.AlterPartitionReassignments, (w, v) => AlterPartitionReassignments.encodeAlterPartitionReassignmentsRequest(w, req, v), AlterPartitionReassignments.decodeAlterPartitionReassignmentsResponse)
      check(res.errorCode, res.errorMessage, 'AlterPartitionReassignments')
      return res.responses.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex, errorCode: p.errorCode, errorMessage: p.errorMessage })))
    })
  }

  /** ListPartitionReassignments: the reassignments in progress (of these partitions, or all). */
  listPartitionReassignments(partitions: readonly { topic: string; partition: number }[] | null = null, opts: { timeoutMs?: number } = {}): Promise<PartitionReassignment[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.controller()
      const byTopic = new Map<string, number[]>()
      for (const p of partitions ?? []) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition])
      const req = ListPartitionReassignments.createListPartitionReassignmentsRequest({
        timeoutMs: opts.timeoutMs ?? 30000,
        topics: partitions === null ? null : [...byTopic].map(([name, partitionIndexes]) => ListPartitionReassignments.createListPartitionReassignmentsTopics({ name, partitionIndexes })),
      })
      const res = await conn.send(ApiKey.ListPartitionReassignments, (w, v) => ListPartitionReassignments.encodeListPartitionReassignmentsRequest(w, req, v), ListPartitionReassignments.decodeListPartitionReassignmentsResponse)
      check(res.errorCode, res.errorMessage, 'ListPartitionReassignments')
      return res.topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex, replicas: p.replicas, addingReplicas: p.addingReplicas, removingReplicas: p.removingReplicas })))
    })
  }

  /** Configs of resources (keys null = all), with synonyms (where each value comes from). */
  describeConfigs(resources: readonly (ConfigResource & { keys?: string[] | null })[]): Promise<{ resource: ConfigResource; configs: ConfigEntry[] }[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.controllerFor(resources)
      const req = DescribeConfigs.createDescribeConfigsRequest({
        includeSynonyms: true,
        resources: resources.map((r) => DescribeConfigs.createDescribeConfigsResource({ resourceType: RESOURCE_TYPES[r.type], resourceName: r.name, configurationKeys: r.keys ?? null })),
      })
      const res = await conn.send(ApiKey.DescribeConfigs, (w, v) => DescribeConfigs.encodeDescribeConfigsRequest(w, req, v), DescribeConfigs.decodeDescribeConfigsResponse)
      return res.results.map((r, i) => {
        check(r.errorCode, r.errorMessage, `describing configs of ${resources[i]?.type ?? 'resource'} '${r.resourceName}'`)
        return {
          resource: { type: resources.find((x) => x.name === r.resourceName && RESOURCE_TYPES[x.type] === r.resourceType)?.type ?? 'topic', name: r.resourceName },
          configs: r.configs.map((c) => ({
            name: c.name,
            value: c.value,
            readOnly: c.readOnly,
            isDefault: c.configSource === 5 || (c.configSource === -1 && c.isDefault),
            source: configSourceName(c.configSource),
            sensitive: c.isSensitive,
            synonyms: c.synonyms.map((s) => ({ name: s.name, value: s.value, source: configSourceName(s.source) })),
          })),
        }
      })
    })
  }

  /** IncrementalAlterConfigs: set, delete (revert to default), append to or subtract from lists. */
  alterConfigs(resource: ConfigResource, ops: readonly AlterOp[], opts: { validateOnly?: boolean } = {}): Promise<void> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.controllerFor([resource])
      const req = IncrementalAlterConfigs.createIncrementalAlterConfigsRequest({
        validateOnly: opts.validateOnly ?? false,
        resources: [
          IncrementalAlterConfigs.createAlterConfigsResource({
            resourceType: RESOURCE_TYPES[resource.type],
            resourceName: resource.name,
            configs: ops.map((o) => IncrementalAlterConfigs.createAlterableConfig({ name: o.name, configOperation: ALTER_OPS[o.op], value: 'value' in o ? o.value : null })),
          }),
        ],
      })
      const res = await conn.send(ApiKey.IncrementalAlterConfigs, (w, v) => IncrementalAlterConfigs.encodeIncrementalAlterConfigsRequest(w, req, v), IncrementalAlterConfigs.decodeIncrementalAlterConfigsResponse)
      for (const r of res.responses) check(r.errorCode, r.errorMessage, `altering configs of ${resource.type} '${resource.name}'`)
    })
  }

  /** Broker resources must go to that broker; topic resources and cluster defaults to any broker that answers (as Kafka's admin: the least loaded node). */
  private async controllerFor(resources: readonly ConfigResource[]): Promise<BrokerConnection> {
    const broker = resources.find((r) => (r.type === 'broker' || r.type === 'broker-logger') && r.name !== '')
    if (broker !== undefined) {
      const id = Number(broker.name)
      if (!Number.isInteger(id)) throw new KafkaError(ErrorCode.INVALID_REQUEST, `broker '${broker.name}' is not a broker id`)
      return this.cluster.nodeConnection(id)
    }
    return this.cluster.anyConnection()
  }

  /**
   * Groups of every broker (each broker lists the groups it coordinates). A broker the metadata names but
   * that cannot be reached (it has just died; the others have not noticed yet) is skipped and reported to
   * onUnreachable: the groups of the brokers that answer are listed, not none.
   */
  listGroups(opts: { onUnreachable?: (broker: BrokerNode, err: Error) => void } = {}): Promise<GroupListing[]> {
    return this.cluster.withDeadline(async () => {
      const meta = await this.cluster.refreshMetadata([])
      const out: GroupListing[] = []
      for (const [nodeId, node] of meta.brokers) {
        let conn: BrokerConnection
        try {
          conn = await this.cluster.nodeConnection(nodeId)
        } catch (err) {
          if (!(err instanceof ConnectionError)) throw err
          opts.onUnreachable?.(node, err)
          continue
        }
        const req = ListGroups.createListGroupsRequest()
        const res = await conn.send(ApiKey.ListGroups, (w, v) => ListGroups.encodeListGroupsRequest(w, req, v), ListGroups.decodeListGroupsResponse)
        check(res.errorCode, null, 'ListGroups')
        for (const g of res.groups) out.push({ groupId: g.groupId, protocolType: g.protocolType, state: g.groupState })
      }
      return out.sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0))
    })
  }

  /**
   * Describes groups as Kafka's admin does: ConsumerGroupDescribe first (KIP-848 consumer groups), and
   * DescribeGroups for the ids it does not know as consumer groups (classic groups) or when the broker
   * does not serve it.
   */
  describeGroups(groupIds: readonly string[]): Promise<GroupDescription[]> {
    return this.cluster.withDeadline(async () => {
      const out: GroupDescription[] = []
      for (const groupId of groupIds) out.push((await this.describeConsumerGroup(groupId)) ?? (await this.describeClassicGroup(groupId)))
      return out
    })
  }

  /** A KIP-848 consumer group, or null when the id is not one (or the broker lacks ConsumerGroupDescribe). */
  private async describeConsumerGroup(groupId: string): Promise<GroupDescription | null> {
    let coordinator = null as BrokerNode | null
    const g = await this.cluster.withRetries(async () => {
      const conn = await this.cluster.coordinator(groupId)
      coordinator = this.cluster.coordinatorNode(groupId) ?? null
      if (!conn.supports(ApiKey.ConsumerGroupDescribe)) return null
      const req = ConsumerGroupDescribe.createConsumerGroupDescribeRequest({ groupIds: [groupId] })
      const r = await conn.send(ApiKey.ConsumerGroupDescribe, (w, v) => ConsumerGroupDescribe.encodeConsumerGroupDescribeRequest(w, req, v), ConsumerGroupDescribe.decodeConsumerGroupDescribeResponse)
      const described = r.groups[0]
      if (described === undefined || described.errorCode === ErrorCode.GROUP_ID_NOT_FOUND) return null
      if (described.errorCode === ErrorCode.NOT_COORDINATOR || described.errorCode === ErrorCode.COORDINATOR_NOT_AVAILABLE) this.cluster.forgetCoordinator(groupId)
      check(described.errorCode, described.errorMessage, `describing group '${groupId}'`)
      return described
    })
    if (g === null) return null
    return {
      groupId: g.groupId,
      state: g.groupState,
      protocolType: 'consumer',
      protocol: g.assignorName,
      groupType: 'consumer',
      groupEpoch: g.groupEpoch,
      assignmentEpoch: g.assignmentEpoch,
      members: g.members.map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.instanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        assignment: m.assignment.topicPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topicName, partition }))),
      })),
      coordinator,
    }
  }

  private async describeClassicGroup(groupId: string): Promise<GroupDescription> {
    let coordinator = null as BrokerNode | null
    const res = await this.cluster.withRetries(async () => {
      const conn = await this.cluster.coordinator(groupId)
      coordinator = this.cluster.coordinatorNode(groupId) ?? null
      const req = DescribeGroups.createDescribeGroupsRequest({ groups: [groupId] })
      const r = await conn.send(ApiKey.DescribeGroups, (w, v) => DescribeGroups.encodeDescribeGroupsRequest(w, req, v), DescribeGroups.decodeDescribeGroupsResponse)
      const g = r.groups[0]
      if (g === undefined) throw new KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, `group '${groupId}'`)
      if (g.errorCode === ErrorCode.NOT_COORDINATOR || g.errorCode === ErrorCode.COORDINATOR_NOT_AVAILABLE) this.cluster.forgetCoordinator(groupId)
      check(g.errorCode, null, `describing group '${groupId}'`)
      return g
    })
    return {
      groupId: res.groupId,
      state: res.groupState,
      protocolType: res.protocolType,
      protocol: res.protocolData,
      groupType: 'classic',
      members: res.members.map((m) => {
        let assignment: { topic: string; partition: number }[] = []
        if (res.protocolType === 'consumer') {
          try {
            assignment = decodeAssignment(m.memberAssignment)
          } catch {
            assignment = []
          }
        }
        return { memberId: m.memberId, groupInstanceId: m.groupInstanceId, clientId: m.clientId, clientHost: m.clientHost, assignment }
      }),
      coordinator,
    }
  }

  /** Committed offsets of a group ('topic\0partition' -> offset). */
  fetchOffsets(groupId: string, tps: readonly { topic: string; partition: number }[] | null = null): Promise<Map<string, number>> {
    return this.cluster.withDeadline(() => fetchCommittedOffsets(this.cluster, groupId, tps))
  }

  /** Committed offsets of a group with their leader epochs and metadata ('topic\0partition' -> details). */
  listConsumerGroupOffsets(groupId: string, tps: readonly { topic: string; partition: number }[] | null = null): Promise<Map<string, CommittedOffset>> {
    return this.cluster.withDeadline(() => fetchCommittedOffsetDetails(this.cluster, groupId, tps))
  }

  /** Commits offsets for a group with no active members (the coordinator refuses otherwise). */
  commitOffsets(groupId: string, offsets: readonly TopicPartitionOffset[]): Promise<void> {
    return this.cluster.withDeadline(() => commitOffsets(this.cluster, groupId, offsets))
  }

  deleteGroups(groupIds: readonly string[]): Promise<void> {
    return this.cluster.withDeadline(async () => {
      for (const groupId of groupIds) {
        await this.cluster.withRetries(async () => {
          const conn = await this.cluster.coordinator(groupId)
          const req = DeleteGroups.createDeleteGroupsRequest({ groupsNames: [groupId] })
          const res = await conn.send(ApiKey.DeleteGroups, (w, v) => DeleteGroups.encodeDeleteGroupsRequest(w, req, v), DeleteGroups.decodeDeleteGroupsResponse)
          for (const r of res.results) {
            if (r.errorCode === ErrorCode.NOT_COORDINATOR || r.errorCode === ErrorCode.COORDINATOR_NOT_AVAILABLE) this.cluster.forgetCoordinator(groupId)
            check(r.errorCode, null, `deleting group '${r.groupId}'`)
          }
        })
      }
    })
  }

  // ---- share groups (KIP-932): share-group-admin.ts ----------------------------------------------

  /** Share groups of every broker (Kafka's listGroups(ListGroupsOptions.forShareGroups())), optionally in these states. */
  listShareGroups(opts: { states?: readonly string[]; onUnreachable?: (broker: BrokerNode, err: Error) => void } = {}): Promise<ShareGroupListing[]> {
    return this.cluster.withDeadline(() => shareGroups.listShareGroups(this.cluster, opts))
  }

  /** ShareGroupDescribe; a KafkaError (GROUP_ID_NOT_FOUND, ...) for the first group that cannot be described. */
  describeShareGroups(groupIds: readonly string[]): Promise<ShareGroupDescription[]> {
    return this.cluster.withDeadline(async () => {
      const out: ShareGroupDescription[] = []
      for (const groupId of groupIds) out.push(await shareGroups.describeShareGroup(this.cluster, groupId))
      return out
    })
  }

  /** Kafka's listShareGroupOffsets: start offsets and lag ('topic\0partition' -> info); tps null: every share-partition with state. */
  describeShareGroupOffsets(groupId: string, tps: readonly { topic: string; partition: number }[] | null = null): Promise<Map<string, SharePartitionOffsetInfo>> {
    return this.cluster.withDeadline(() => shareGroups.listShareGroupOffsets(this.cluster, groupId, tps))
  }

  /** Sets share-partitions' start offsets of an empty share group (NON_EMPTY_GROUP otherwise). */
  alterShareGroupOffsets(groupId: string, offsets: readonly { topic: string; partition: number; offset: number }[]): Promise<void> {
    return this.cluster.withDeadline(() => shareGroups.alterShareGroupOffsets(this.cluster, groupId, offsets))
  }

  /** Deletes whole topics' share-partition state of an empty share group: each topic's outcome (null: deleted). */
  deleteShareGroupOffsets(groupId: string, topics: readonly string[]): Promise<Map<string, KafkaError | null>> {
    return this.cluster.withDeadline(() => shareGroups.deleteShareGroupOffsets(this.cluster, groupId, topics))
  }

  /** Deletes empty share groups: each group's outcome (null: deleted). */
  deleteShareGroups(groupIds: readonly string[]): Promise<Map<string, KafkaError | null>> {
    return this.cluster.withDeadline(() => shareGroups.deleteShareGroups(this.cluster, groupIds))
  }

  /**
   * The log dirs of every broker (or of the given ones) with their partitions' sizes; topics null: every
   * partition. Brokers that cannot be reached are left out.
   */
  async describeLogDirs(topics: readonly { topic: string; partitions: number[] }[] | null = null, brokers?: readonly number[]): Promise<LogDirDescription[]> {
    const meta = await this.cluster.refreshMetadata([])
    const ids = brokers ?? [...meta.brokers.keys()]
    const req = DescribeLogDirs.createDescribeLogDirsRequest({ topics: topics === null ? null : topics.map((t) => DescribeLogDirs.createDescribableLogDirTopic({ topic: t.topic, partitions: [...t.partitions] })) })
    const answers = await Promise.all(
      ids.map(async (broker) => {
        try {
          const conn = await this.cluster.nodeConnection(broker)
          const res = await conn.send(ApiKey.DescribeLogDirs, (w, v) => DescribeLogDirs.encodeDescribeLogDirsRequest(w, req, v), DescribeLogDirs.decodeDescribeLogDirsResponse)
          check(res.errorCode, null, 'DescribeLogDirs')
          return res.results.map((d) => ({
            broker,
            logDir: d.logDir,
            errorCode: d.errorCode,
            totalBytes: Number(d.totalBytes),
            usableBytes: Number(d.usableBytes),
            partitions: d.topics.flatMap((t) => t.partitions.map((p) => ({ topic: t.name, partition: p.partitionIndex, sizeBytes: Number(p.partitionSize), offsetLag: Number(p.offsetLag), isFuture: p.isFutureKey }))),
          }))
        } catch {
          return []
        }
      }),
    )
    return answers.flat()
  }

  /** CreateAcls: one outcome per binding, in order (errors are not thrown, so each can be reported). */
  createAcls(bindings: readonly AclBinding[]): Promise<{ errorCode: number; errorMessage: string | null }[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.cluster.anyConnection()
      const req = CreateAcls.createCreateAclsRequest({
        creations: bindings.map((b) => CreateAcls.createAclCreation({ resourceType: b.resourceType, resourceName: b.resourceName, resourcePatternType: b.patternType, principal: b.principal, host: b.host, operation: b.operation, permissionType: b.permission })),
      })
      const res = await conn.send(ApiKey.CreateAcls, (w, v) => CreateAcls.encodeCreateAclsRequest(w, req, v), CreateAcls.decodeCreateAclsResponse)
      return res.results.map((r) => ({ errorCode: r.errorCode, errorMessage: r.errorMessage }))
    })
  }

  /** DescribeAcls: the bindings the filter matches. */
  describeAcls(filter: AclFilter): Promise<AclBinding[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.cluster.anyConnection()
      const req = DescribeAcls.createDescribeAclsRequest({ resourceTypeFilter: filter.resourceType, resourceNameFilter: filter.resourceName, patternTypeFilter: filter.patternType, principalFilter: filter.principal, hostFilter: filter.host, operation: filter.operation, permissionType: filter.permission })
      const res = await conn.send(ApiKey.DescribeAcls, (w, v) => DescribeAcls.encodeDescribeAclsRequest(w, req, v), DescribeAcls.decodeDescribeAclsResponse)
      check(res.errorCode, res.errorMessage, 'DescribeAcls')
      return res.resources.flatMap((r) => r.acls.map((a) => ({ resourceType: r.resourceType, resourceName: r.resourceName, patternType: r.patternType, principal: a.principal, host: a.host, operation: a.operation, permission: a.permissionType })))
    })
  }

  /** DeleteAcls: per filter, the bindings it removed; a filter's error is thrown. */
  deleteAcls(filters: readonly AclFilter[]): Promise<AclBinding[][]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.cluster.anyConnection()
      const req = DeleteAcls.createDeleteAclsRequest({
        filters: filters.map((f) => DeleteAcls.createDeleteAclsFilter({ resourceTypeFilter: f.resourceType, resourceNameFilter: f.resourceName, patternTypeFilter: f.patternType, principalFilter: f.principal, hostFilter: f.host, operation: f.operation, permissionType: f.permission })),
      })
      const res = await conn.send(ApiKey.DeleteAcls, (w, v) => DeleteAcls.encodeDeleteAclsRequest(w, req, v), DeleteAcls.decodeDeleteAclsResponse)
      return res.filterResults.map((r) => {
        check(r.errorCode, r.errorMessage, 'DeleteAcls')
        return r.matchingAcls.map((a) => ({ resourceType: a.resourceType, resourceName: a.resourceName, patternType: a.patternType, principal: a.principal, host: a.host, operation: a.operation, permission: a.permissionType }))
      })
    })
  }

  /**
   * Moves replicas between the log dirs of one broker (AlterReplicaLogDirs): each item names a partition
   * and the directory (one of the broker's log.dirs) it should live in. Answers one error code per item
   * (0: the move is under way or not needed; DescribeLogDirs shows the copy, isFuture, until it is done).
   */
  async alterReplicaLogDirs(broker: number, items: readonly { topic: string; partition: number; logDir: string }[]): Promise<{ topic: string; partition: number; errorCode: number }[]> {
    const dirs = new Map<string, Map<string, number[]>>()
    for (const i of items) {
      let topics = dirs.get(i.logDir)
      if (topics === undefined) dirs.set(i.logDir, (topics = new Map()))
      let parts = topics.get(i.topic)
      if (parts === undefined) topics.set(i.topic, (parts = []))
      parts.push(i.partition)
    }
    const req = AlterReplicaLogDirs.createAlterReplicaLogDirsRequest({
      dirs: [...dirs].map(([path, topics]) =>
        AlterReplicaLogDirs.createAlterReplicaLogDir({ path, topics: [...topics].map(([name, partitions]) => AlterReplicaLogDirs.createAlterReplicaLogDirTopic({ name, partitions })) })),
    })
    return this.cluster.withDeadline(async () => {
      await this.cluster.refreshMetadata([])
      const conn = await this.cluster.nodeConnection(broker)
      const res = await conn.send(ApiKey.AlterReplicaLogDirs, (w, v) => AlterReplicaLogDirs.encodeAlterReplicaLogDirsRequest(w, req, v), AlterReplicaLogDirs.decodeAlterReplicaLogDirsResponse)
      return res.results.flatMap((t) => t.partitions.map((p) => ({ topic: t.topicName, partition: p.partitionIndex, errorCode: p.errorCode })))
    })
  }

  /** Offsets for timestamps (-2 earliest, -1 latest), keyed 'topic\0partition'. */
  listOffsets(queries: readonly OffsetQuery[], isolationLevel = 0): Promise<Map<string, OffsetAnswer>> {
    return this.cluster.withDeadline(() => listOffsets(this.cluster, queries, isolationLevel))
  }

  /**
   * DescribeClientQuotas: entities matching the filter (per entity type: a name, null for the default,
   * undefined for any), strictly (only entities of exactly these types) or not.
   */
  describeClientQuotas(filter: readonly ClientQuotaFilterComponent[], strict: boolean): Promise<ClientQuotaEntry[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.cluster.anyConnection()
      const req = DescribeClientQuotas.createDescribeClientQuotasRequest({
        strict,
        components: filter.map((c) => ({ entityType: c.entityType, matchType: c.match === undefined ? 2 : c.match === null ? 1 : 0, match: c.match ?? null })),
      })
      const res = await conn.send(ApiKey.DescribeClientQuotas, (w, v) => DescribeClientQuotas.encodeDescribeClientQuotasRequest(w, req, v), DescribeClientQuotas.decodeDescribeClientQuotasResponse)
      check(res.errorCode, res.errorMessage, 'describing client quotas')
      return (res.entries ?? []).map((e) => ({
        entity: Object.fromEntries(e.entity.map((c) => [c.entityType, c.entityName])),
        values: Object.fromEntries(e.values.map((v) => [v.key, v.value])),
      }))
    })
  }

  /** AlterClientQuotas: per entity, quotas to set (a number) or remove (null). Throws the first entry's error. */
  alterClientQuotas(entries: readonly { entity: Record<string, string | null>; ops: Record<string, number | null> }[], opts: { validateOnly?: boolean } = {}): Promise<void> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.cluster.anyConnection()
      const req = AlterClientQuotas.createAlterClientQuotasRequest({
        validateOnly: opts.validateOnly ?? false,
        entries: entries.map((e) => ({
          entity: Object.entries(e.entity).map(([entityType, entityName]) => ({ entityType, entityName })),
          ops: Object.entries(e.ops).map(([key, value]) => ({ key, value: value ?? 0, remove: value === null })),
        })),
      })
      const res = await conn.send(ApiKey.AlterClientQuotas, (w, v) => AlterClientQuotas.encodeAlterClientQuotasRequest(w, req, v), AlterClientQuotas.decodeAlterClientQuotasResponse)
      for (const r of res.entries) check(r.errorCode, r.errorMessage, 'altering client quotas')
    })
  }

  /**
   * AlterUserScramCredentials, as Kafka's admin client: the password never leaves this process; a random
   * salt and the salted password (PBKDF2 with the mechanism's HMAC, RFC 5802's Hi) are sent. Throws the
   * first user's error.
   */
  alterUserScramCredentials(upserts: readonly ScramCredentialUpsert[], deletions: readonly { user: string; mechanism: ScramMechanismName }[] = []): Promise<void> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.cluster.anyConnection()
      const req = AlterUserScramCredentials.createAlterUserScramCredentialsRequest({
        deletions: deletions.map((d) => ({ name: d.user, mechanism: SCRAM_MECHANISMS[d.mechanism] })),
        upsertions: upserts.map((u) => {
          const iterations = u.iterations ?? 4096
          const hash = u.mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512'
          const salt = randomBytes(32)
          const saltedPassword = pbkdf2Sync(Buffer.from(u.password, 'utf8'), salt, iterations, hash === 'sha256' ? 32 : 64, hash)
          return { name: u.user, mechanism: SCRAM_MECHANISMS[u.mechanism], iterations, salt, saltedPassword }
        }),
      })
      const res = await conn.send(ApiKey.AlterUserScramCredentials, (w, v) => AlterUserScramCredentials.encodeAlterUserScramCredentialsRequest(w, req, v), AlterUserScramCredentials.decodeAlterUserScramCredentialsResponse)
      for (const r of res.results) check(r.errorCode, r.errorMessage, `altering the SCRAM credentials of user ${r.user}`)
    })
  }

  /** DescribeUserScramCredentials: the mechanisms and iterations of each user's credentials (all users without a list; a listed user without any: RESOURCE_NOT_FOUND is thrown). */
  describeUserScramCredentials(users?: readonly string[]): Promise<UserScramCredentials[]> {
    return this.cluster.withDeadline(async () => {
      const conn = await this.cluster.anyConnection()
      const req = DescribeUserScramCredentials.createDescribeUserScramCredentialsRequest({ users: users === undefined ? null : users.map((name) => ({ name })) })
      const res = await conn.send(ApiKey.DescribeUserScramCredentials, (w, v) => DescribeUserScramCredentials.encodeDescribeUserScramCredentialsRequest(w, req, v), DescribeUserScramCredentials.decodeDescribeUserScramCredentialsResponse)
      check(res.errorCode, res.errorMessage, 'describing SCRAM credentials')
      return res.results.map((r) => {
        check(r.errorCode, r.errorMessage, `describing the SCRAM credentials of user ${r.user}`)
        const credentials = r.credentialInfos.flatMap((c) => {
          const mechanism = scramMechanismName(c.mechanism)
          return mechanism === undefined ? [] : [{ mechanism, iterations: c.iterations }]
        })
        return { user: r.user, credentials }
      })
    })
  }

  async close(): Promise<void> {
    await this.cluster.close()
  }
}
