// The admin client's share-group operations (KIP-932), as Kafka's Admin has them: listGroups of the
// share type (ListGroups v5 with TypesFilter ["share"]), describeShareGroups (ShareGroupDescribe),
// listShareGroupOffsets (DescribeShareGroupOffsets, with the lag computed here), alterShareGroupOffsets,
// deleteShareGroupOffsets and deleteShareGroups (DeleteGroups). Group requests go to the group's
// coordinator, retried on NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as AlterShareGroupOffsets from '../protocol/messages/91-alter-share-group-offsets.gen.js'
import * as DeleteGroups from '../protocol/messages/42-delete-groups.gen.js'
import * as DeleteShareGroupOffsets from '../protocol/messages/92-delete-share-group-offsets.gen.js'
import * as DescribeShareGroupOffsets from '../protocol/messages/90-describe-share-group-offsets.gen.js'
import * as ListGroups from '../protocol/messages/16-list-groups.gen.js'
import * as ShareGroupDescribe from '../protocol/messages/77-share-group-describe.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { ConnectionError } from './errors.js'
import type { BrokerNode, Cluster } from './cluster-connections.js'
import type { BrokerConnection } from './connection.js'
import { listOffsets, tpKey } from './offsets.js'

export interface ShareGroupListing {
  groupId: string
  /** Empty, Stable, Dead (Kafka's share group states). */
  state: string
}

export interface ShareMemberDescription {
  memberId: string
  rackId: string | null
  clientId: string
  clientHost: string
  memberEpoch: number
  subscribedTopics: string[]
  assignment: { topic: string; partition: number }[]
}

export interface ShareGroupDescription {
  groupId: string
  state: string
  groupEpoch: number
  assignmentEpoch: number
  /** The server assignor ('simple'). */
  assignor: string
  members: ShareMemberDescription[]
  /** The broker that coordinates the group. */
  coordinator: BrokerNode | null
}

/** A share-partition's offset (Kafka's SharePartitionOffsetInfo); null fields: not known (no state yet). */
export interface SharePartitionOffsetInfo {
  topic: string
  partition: number
  /** The share-partition start offset: the records below it are done with. */
  startOffset: number | null
  leaderEpoch: number | null
  /** The partition's high watermark minus the start offset: records not yet done with, in flight included. */
  lag: number | null
}

const COORDINATOR_ERRORS: ReadonlySet<number> = new Set([ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE])

function check(code: number, message: string | null | undefined, what: string): void {
  if (code !== ErrorCode.NONE) throw new KafkaError(code as ErrorCode, message != null && message !== '' ? message : what)
}

/** Sends a request to the group's coordinator, retrying while the coordinator moves or loads. */
async function toCoordinator<T>(cluster: Cluster, groupId: string, send: (conn: BrokerConnection) => Promise<T>, errorOf: (res: T) => { code: number; message: string | null }): Promise<T> {
  return cluster.withRetries(async () => {
    const conn = await cluster.coordinator(groupId)
    const res = await send(conn)
    const { code, message } = errorOf(res)
    if (COORDINATOR_ERRORS.has(code)) cluster.forgetCoordinator(groupId)
    if (COORDINATOR_ERRORS.has(code) || code === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS) throw new KafkaError(code as ErrorCode, message ?? undefined)
    return res
  })
}

/** The share groups of every broker (ListGroups v5, TypesFilter ["share"]), by id; unreachable brokers reported, not fatal. */
export async function listShareGroups(cluster: Cluster, opts: { states?: readonly string[]; onUnreachable?: (broker: BrokerNode, err: Error) => void } = {}): Promise<ShareGroupListing[]> {
  const meta = await cluster.refreshMetadata([])
  const out: ShareGroupListing[] = []
  for (const [nodeId, node] of meta.brokers) {
    let conn: BrokerConnection
    try {
      conn = await cluster.nodeConnection(nodeId)
    } catch (err) {
      if (!(err instanceof ConnectionError)) throw err
      opts.onUnreachable?.(node, err)
      continue
    }
    if (conn.version(ApiKey.ListGroups) < 5) throw new KafkaError(ErrorCode.UNSUPPORTED_VERSION, `broker ${nodeId} cannot list groups by type (ListGroups v5)`)
    const req = ListGroups.createListGroupsRequest({ typesFilter: ['share'], statesFilter: [...(opts.states ?? [])] })
    const res = await conn.send(ApiKey.ListGroups, (w, v) => ListGroups.encodeListGroupsRequest(w, req, v), ListGroups.decodeListGroupsResponse)
    check(res.errorCode, null, 'ListGroups')
    for (const g of res.groups) out.push({ groupId: g.groupId, state: g.groupState })
  }
  return out.sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0))
}

/** ShareGroupDescribe of one group; GROUP_ID_NOT_FOUND (a KafkaError) when it is not a share group. */
export async function describeShareGroup(cluster: Cluster, groupId: string): Promise<ShareGroupDescription> {
  let coordinator: BrokerNode | null = null
  const res = await toCoordinator(
    cluster,
    groupId,
    (conn) => {
      coordinator = cluster.coordinatorNode(groupId) ?? null
      const req = ShareGroupDescribe.createShareGroupDescribeRequest({ groupIds: [groupId] })
      return conn.send(ApiKey.ShareGroupDescribe, (w, v) => ShareGroupDescribe.encodeShareGroupDescribeRequest(w, req, v), ShareGroupDescribe.decodeShareGroupDescribeResponse)
    },
    (r) => ({ code: r.groups[0]?.errorCode ?? ErrorCode.NONE, message: r.groups[0]?.errorMessage ?? null }),
  )
  const g = res.groups[0]
  if (g === undefined) throw new KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} not found.`)
  check(g.errorCode, g.errorMessage, `describing share group '${groupId}'`)
  return {
    groupId: g.groupId,
    state: g.groupState,
    groupEpoch: g.groupEpoch,
    assignmentEpoch: g.assignmentEpoch,
    assignor: g.assignorName,
    members: g.members.map((m) => ({
      memberId: m.memberId,
      rackId: m.rackId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      memberEpoch: m.memberEpoch,
      subscribedTopics: [...m.subscribedTopicNames],
      assignment: m.assignment.topicPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topicName, partition }))),
    })),
    coordinator,
  }
}

/**
 * The start offsets of a share group's share-partitions (tps null: every one with state), with each one's
 * lag: the partition's high watermark minus the start offset (Kafka 4.2 computes a finer lag on the
 * broker; 4.1 has none). Keyed 'topic\0partition'.
 */
export async function listShareGroupOffsets(cluster: Cluster, groupId: string, tps: readonly { topic: string; partition: number }[] | null = null): Promise<Map<string, SharePartitionOffsetInfo>> {
  let topics: DescribeShareGroupOffsets.DescribeShareGroupOffsetsRequestTopic[] | null = null
  if (tps !== null) {
    const byTopic = new Map<string, number[]>()
    for (const tp of tps) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition])
    topics = [...byTopic].map(([topicName, partitions]) => DescribeShareGroupOffsets.createDescribeShareGroupOffsetsRequestTopic({ topicName, partitions }))
  }
  const res = await toCoordinator(
    cluster,
    groupId,
    (conn) => {
      const req = DescribeShareGroupOffsets.createDescribeShareGroupOffsetsRequest({ groups: [DescribeShareGroupOffsets.createDescribeShareGroupOffsetsRequestGroup({ groupId, topics })] })
      return conn.send(ApiKey.DescribeShareGroupOffsets, (w, v) => DescribeShareGroupOffsets.encodeDescribeShareGroupOffsetsRequest(w, req, v), DescribeShareGroupOffsets.decodeDescribeShareGroupOffsetsResponse)
    },
    (r) => ({ code: r.groups[0]?.errorCode ?? ErrorCode.NONE, message: r.groups[0]?.errorMessage ?? null }),
  )
  const g = res.groups[0]
  if (g === undefined) throw new KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, `no answer for share group '${groupId}'`)
  check(g.errorCode, g.errorMessage, `describing the offsets of share group '${groupId}'`)
  const out = new Map<string, SharePartitionOffsetInfo>()
  for (const t of g.topics) {
    for (const p of t.partitions) {
      check(p.errorCode, p.errorMessage, `share-partition ${t.topicName}-${p.partitionIndex}`)
      const known = p.startOffset >= 0n
      out.set(tpKey(t.topicName, p.partitionIndex), { topic: t.topicName, partition: p.partitionIndex, startOffset: known ? Number(p.startOffset) : null, leaderEpoch: known && p.leaderEpoch >= 0 ? p.leaderEpoch : null, lag: null })
    }
  }
  const known = [...out.values()].filter((i) => i.startOffset !== null)
  if (known.length > 0) {
    const ends = await listOffsets(cluster, known.map((i) => ({ topic: i.topic, partition: i.partition, timestamp: -1 })))
    for (const i of known) {
      const end = ends.get(tpKey(i.topic, i.partition))
      if (end !== undefined) i.lag = Math.max(0, end.offset - i.startOffset!)
    }
  }
  return out
}

/** Sets share-partitions' start offsets of an empty share group; a KafkaError for the first one refused. */
export async function alterShareGroupOffsets(cluster: Cluster, groupId: string, offsets: readonly { topic: string; partition: number; offset: number }[]): Promise<void> {
  const byTopic = new Map<string, AlterShareGroupOffsets.AlterShareGroupOffsetsRequestPartition[]>()
  for (const o of offsets) byTopic.set(o.topic, [...(byTopic.get(o.topic) ?? []), AlterShareGroupOffsets.createAlterShareGroupOffsetsRequestPartition({ partitionIndex: o.partition, startOffset: BigInt(o.offset) })])
  const req = AlterShareGroupOffsets.createAlterShareGroupOffsetsRequest({
    groupId,
    topics: [...byTopic].map(([topicName, partitions]) => AlterShareGroupOffsets.createAlterShareGroupOffsetsRequestTopic({ topicName, partitions })),
  })
  const res = await toCoordinator(
    cluster,
    groupId,
    (conn) => conn.send(ApiKey.AlterShareGroupOffsets, (w, v) => AlterShareGroupOffsets.encodeAlterShareGroupOffsetsRequest(w, req, v), AlterShareGroupOffsets.decodeAlterShareGroupOffsetsResponse),
    (r) => ({ code: r.errorCode, message: r.errorMessage }),
  )
  check(res.errorCode, res.errorMessage, `altering the offsets of share group '${groupId}'`)
  for (const t of res.responses) for (const p of t.partitions) check(p.errorCode, p.errorMessage, `share-partition ${t.topicName}-${p.partitionIndex}`)
}

/**
 * Deletes the share-partition state of whole topics for an empty share group. Throws a KafkaError for a
 * group-level error; else each topic's outcome (null: deleted).
 */
export async function deleteShareGroupOffsets(cluster: Cluster, groupId: string, topics: readonly string[]): Promise<Map<string, KafkaError | null>> {
  const req = DeleteShareGroupOffsets.createDeleteShareGroupOffsetsRequest({ groupId, topics: [...new Set(topics)].map((topicName) => DeleteShareGroupOffsets.createDeleteShareGroupOffsetsRequestTopic({ topicName })) })
  const res = await toCoordinator(
    cluster,
    groupId,
    (conn) => conn.send(ApiKey.DeleteShareGroupOffsets, (w, v) => DeleteShareGroupOffsets.encodeDeleteShareGroupOffsetsRequest(w, req, v), DeleteShareGroupOffsets.decodeDeleteShareGroupOffsetsResponse),
    (r) => ({ code: r.errorCode, message: r.errorMessage }),
  )
  check(res.errorCode, res.errorMessage, `deleting the offsets of share group '${groupId}'`)
  const out = new Map<string, KafkaError | null>()
  for (const t of res.responses) out.set(t.topicName, t.errorCode === ErrorCode.NONE ? null : new KafkaError(t.errorCode as ErrorCode, t.errorMessage ?? `topic '${t.topicName}'`))
  return out
}

/** Deletes empty share groups (DeleteGroups); each group's outcome (null: deleted). */
export async function deleteShareGroups(cluster: Cluster, groupIds: readonly string[]): Promise<Map<string, KafkaError | null>> {
  const out = new Map<string, KafkaError | null>()
  for (const groupId of groupIds) {
    try {
      const res = await toCoordinator(
        cluster,
        groupId,
        (conn) => {
          const req = DeleteGroups.createDeleteGroupsRequest({ groupsNames: [groupId] })
          return conn.send(ApiKey.DeleteGroups, (w, v) => DeleteGroups.encodeDeleteGroupsRequest(w, req, v), DeleteGroups.decodeDeleteGroupsResponse)
        },
        (r) => ({ code: r.results[0]?.errorCode ?? ErrorCode.NONE, message: null }),
      )
      const code = res.results[0]?.errorCode ?? ErrorCode.NONE
      out.set(groupId, code === ErrorCode.NONE ? null : new KafkaError(code as ErrorCode, `Group '${groupId}'`))
    } catch (err) {
      if (!(err instanceof KafkaError)) throw err
      out.set(groupId, err)
    }
  }
  return out
}
