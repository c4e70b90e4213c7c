// What ShareFetch (78) and ShareAcknowledge (79) check alike before the share-partitions see a request:
// the group and member ids, Read on the group, and for each named partition its topic id, Read on the
// topic and this broker's leadership (Kafka's KafkaApis.handleShareFetchRequest / handleShareAcknowledgeRequest).
import { AclOperation, ResourceType } from '../../../domain/acl.js'
import { ErrorCode } from '../../../domain/errors.js'
import type { RequestContext } from './context.js'
import type { ShareAcknowledgementBatch, SharePartitionRef } from './ports.js'

/** The request-level error of a share request's group and member ids and group authorization, or NONE. */
export function shareRequestError(ctx: RequestContext, groupId: string | null, memberId: string | null): number {
  if (groupId === null || groupId === '') return ErrorCode.INVALID_GROUP_ID
  if (memberId === null || memberId === '') return ErrorCode.INVALID_REQUEST
  if (ctx.acl.enabled && !ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, groupId)) return ErrorCode.GROUP_AUTHORIZATION_FAILED
  return ErrorCode.NONE
}

/** A named partition: its reference when served here, else the error its answer carries. */
export type ResolvedSharePartition = { ref: SharePartitionRef; errorCode: 0 } | { ref?: undefined; errorCode: number }

/**
 * Resolves (topic id, partition) as ShareFetch and ShareAcknowledge do: UNKNOWN_TOPIC_ID for an id this
 * broker does not know, TOPIC_AUTHORIZATION_FAILED without Read on the topic, then the partition
 * service's leader check (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER). Read is asked once per topic.
 */
export function sharePartitionResolver(ctx: RequestContext): (topicId: string, partition: number) => ResolvedSharePartition {
  const denied = new Map<string, boolean>()
  return (topicId, partition) => {
    const topic = ctx.metadata.topicById(topicId)?.name
    if (topic === undefined) return { errorCode: ErrorCode.UNKNOWN_TOPIC_ID }
    if (ctx.acl.enabled) {
      let d = denied.get(topic)
      if (d === undefined) denied.set(topic, (d = !ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.TOPIC, topic)))
      if (d) return { errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED }
    }
    const leader = ctx.partitions.leaderError(topic, partition)
    if (leader !== ErrorCode.NONE) return { errorCode: leader }
    return { ref: { topic, topicId, partition }, errorCode: 0 }
  }
}

/** The wire's acknowledgement batches (int64 offsets) as the share-partition takes them. */
export function ackBatches(batches: readonly { firstOffset: bigint; lastOffset: bigint; acknowledgeTypes: number[] }[]): ShareAcknowledgementBatch[] {
  // Offsets past 2^53 cannot be in any log: they become -1, which the share-partition refuses (INVALID_REQUEST).
  const toNumber = (v: bigint): number => (v >= 0n && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : -1)
  return batches.map((b) => ({ firstOffset: toNumber(b.firstOffset), lastOffset: toNumber(b.lastOffset), acknowledgeTypes: b.acknowledgeTypes }))
}

/** The current leader of partitions answered NOT_LEADER_OR_FOLLOWER, and the endpoints of those leaders (KIP-951). */
export function currentLeaders(ctx: RequestContext): {
  leaderOf(topicId: string, partition: number): { leaderId: number; leaderEpoch: number }
  endpoints(): { nodeId: number; host: string; port: number; rack: string | null }[]
} {
  const leaders = new Set<number>()
  return {
    leaderOf(topicId, partition) {
      const topic = ctx.metadata.topicById(topicId)?.name
      const p = topic === undefined ? undefined : ctx.metadata.partition(topic, partition)
      if (p === undefined || p.leaderId < 0) return { leaderId: -1, leaderEpoch: -1 }
      leaders.add(p.leaderId)
      return { leaderId: p.leaderId, leaderEpoch: p.leaderEpoch }
    },
    endpoints() {
      if (leaders.size === 0) return []
      return ctx.metadata.brokers(ctx.connection.listenerName).filter((b) => leaders.has(b.nodeId)).map((b) => ({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack }))
    },
  }
}
