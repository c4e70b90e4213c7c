// DescribeShareGroupOffsets: v0 (KIP-932; Kafka 4.1 serves v0, 4.2 adds v1 with Lag)
//
// Behavior (Kafka's KafkaApis.handleDescribeShareGroupOffsetsRequest and the group coordinator's
// describeShareGroupOffsets):
// * Per group: its share-partitions' start offsets, which the group coordinator asks each share-partition's
//   share coordinator for (ReadShareGroupStateSummary, here or on another broker). The group must be a share
//   group coordinated here (common/share-group-offsets.ts: NOT_COORDINATOR, GROUP_ID_NOT_FOUND, ...),
//   answered as the group's error with no topics.
// * Topics named: every partition named is answered; a topic that does not exist or a partition beyond its
//   count is UNKNOWN_TOPIC_OR_PARTITION; a share-partition never initialized (no consumer fetched it yet)
//   has start offset -1.
// * Topics null ("all"): the share-partitions with state. The share coordinators are asked about the
//   topics the group's ShareGroupStatePartitionMetadata record names (initialized or being initialized,
//   as Kafka 4.1 answers) and those the members subscribe to or are assigned; a group without that record
//   (made before Skein kept it) with no members: every topic but the internal ones. Those with a start
//   offset are answered.
// * LeaderEpoch: the partition's current leader epoch (-1 when it has no leader), as the v0 summary
//   carries none.
// * Authorization (Kafka 4.x): Describe on the group, else GROUP_AUTHORIZATION_FAILED for it; Describe on
//   each topic named, else TOPIC_AUTHORIZATION_FAILED for its partitions; with topics null, the topics
//   the principal may not Describe are left out.
// Bounds: at most request.max.list.elements groups, topics and partitions (the decoder refuses more); a
// group's share-partitions are read concurrently, the groups one after the other.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as Describe from '../../protocol/messages/90-describe-share-group-offsets.gen.js'
import { defineHandler } from './common/handler.js'
import type { RequestContext } from './common/context.js'
import type { ShareOffsetRef } from './common/ports.js'
import { shareGroupTarget, topicSharePartitions } from './common/share-group-offsets.js'

interface Asked {
  topic: string
  topicId: string
  partition: number
  /** Set when the share-partition is answered without asking its coordinator. */
  errorCode?: number
}

function leaderEpochOf(ctx: RequestContext, topic: string, partition: number): number {
  return ctx.metadata.partition(topic, partition)?.leaderEpoch ?? -1
}

async function describeGroup(ctx: RequestContext, g: Describe.DescribeShareGroupOffsetsRequestGroup): Promise<Describe.DescribeShareGroupOffsetsResponseGroup> {
  const refused = (errorCode: number, errorMessage: string | null): Describe.DescribeShareGroupOffsetsResponseGroup =>
    Describe.createDescribeShareGroupOffsetsResponseGroup({ groupId: g.groupId, errorCode, errorMessage, topics: [] })
  if (!ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId)) return refused(ErrorCode.GROUP_AUTHORIZATION_FAILED, null)
  const target = await shareGroupTarget(ctx, g.groupId, false)
  if (!target.ok) return refused(target.errorCode, target.errorMessage)

  const asked: Asked[] = []
  const all = g.topics === null
  if (g.topics !== null) {
    for (const t of g.topics) {
      const allowed = ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topicName)
      const info = allowed ? ctx.metadata.topic(t.topicName) : undefined
      for (const partition of t.partitions) {
        if (!allowed) asked.push({ topic: t.topicName, topicId: '', partition, errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED })
        else if (info === undefined || partition < 0 || partition >= info.partitions) asked.push({ topic: t.topicName, topicId: info?.topicId ?? '', partition, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
        else asked.push({ topic: t.topicName, topicId: info.topicId, partition })
      }
    }
  } else {
    const names = new Set<string>()
    for (const m of target.group.members) {
      for (const t of m.subscribedTopicNames) names.add(t)
      for (const t of m.assignment) names.add(t.topicName)
    }
    // The topics the group has share-partition state for (its ShareGroupStatePartitionMetadata, as Kafka 4.1
    // answers from its initialized topics); a group without that record: every topic.
    const stateTopicIds = target.group.stateTopicIds
    for (const id of stateTopicIds ?? []) {
      const t = ctx.metadata.topicById(id)
      if (t !== undefined) names.add(t.name)
    }
    if (names.size === 0 && stateTopicIds == null) for (const t of ctx.metadata.topics()) if (!ctx.metadata.isInternalTopic(t.name)) names.add(t.name)
    for (const name of [...names].sort()) {
      if (!ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, name)) continue
      for (const p of topicSharePartitions(ctx, name) ?? []) asked.push(p)
    }
  }

  const toRead: ShareOffsetRef[] = asked.filter((a) => a.errorCode === undefined)
  const read = await target.offsets.startOffsets(g.groupId, toRead)
  let next = 0
  const byTopic = new Map<string, Describe.DescribeShareGroupOffsetsResponseTopic>()
  for (const a of asked) {
    let partition: Describe.DescribeShareGroupOffsetsResponsePartition
    if (a.errorCode !== undefined) {
      partition = Describe.createDescribeShareGroupOffsetsResponsePartition({ partitionIndex: a.partition, startOffset: -1n, leaderEpoch: -1, errorCode: a.errorCode })
    } else {
      const r = read[next++]!
      // "All": only the share-partitions with state.
      if (all && r.errorCode === ErrorCode.NONE && r.startOffset < 0) continue
      partition = Describe.createDescribeShareGroupOffsetsResponsePartition({
        partitionIndex: a.partition,
        startOffset: BigInt(r.startOffset),
        leaderEpoch: leaderEpochOf(ctx, a.topic, a.partition),
        errorCode: r.errorCode,
        errorMessage: r.errorMessage,
      })
    }
    let t = byTopic.get(a.topic)
    if (t === undefined) byTopic.set(a.topic, (t = Describe.createDescribeShareGroupOffsetsResponseTopic({ topicName: a.topic, topicId: a.topicId || ZERO_UUID, partitions: [] })))
    t.partitions.push(partition)
  }
  return Describe.createDescribeShareGroupOffsetsResponseGroup({ groupId: g.groupId, topics: [...byTopic.values()] })
}

const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA'

export const describeShareGroupOffsetsHandler = defineHandler<Describe.DescribeShareGroupOffsetsRequest, Describe.DescribeShareGroupOffsetsResponse>({
  api: Describe.DescribeShareGroupOffsetsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Describe.decodeDescribeShareGroupOffsetsRequest,
  encodeResponse: Describe.encodeDescribeShareGroupOffsetsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const groups: Describe.DescribeShareGroupOffsetsResponseGroup[] = []
    for (const g of req.groups) {
      if (ctx.connection.isClosed) break
      groups.push(await describeGroup(ctx, g))
    }
    return Describe.createDescribeShareGroupOffsetsResponse({ groups })
  },
})
