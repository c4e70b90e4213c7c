// OffsetCommit: v2-9
//
// Behavior:
// * Writes one OffsetCommit record per partition to the group's __consumer_offsets partition and
//   answers once written. Members of classic groups commit with their generation and member id
//   (validated: ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS while
//   assignments are pending); members of KIP-848 consumer groups with their member epoch in the same
//   field (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH; below v9 they get UNSUPPORTED_VERSION, as in Kafka).
//   Generation -1 with no member id is a "simple" commit, allowed while the group has no members (manual
//   assignment, as kafka-python and kcat do); it creates the group if needed.
// * Unknown topics or partitions: UNKNOWN_TOPIC_OR_PARTITION; metadata longer than
//   offset.metadata.max.bytes: OFFSET_METADATA_TOO_LARGE (per partition, the others are committed).
// * A commit from a member counts as a heartbeat.
// Version notes:
// * v9: the same request, usable by consumer-group members (KIP-848). v8: flexible. v7+: group instance id. v6+: leader epoch. v5+: no retention time. v2-4: retention
//   time (-1 = offsets.retention.minutes) kept as the record's expire timestamp.
// Not implemented:
// * v0-1 (ZooKeeper-era offsets): not advertised.
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import * as OffsetCommit from '../../protocol/messages/08-offset-commit.gen.js'
import { ErrorCode } from '../../domain/errors.js'
import { defineHandler } from './common/handler.js'

export const offsetCommitHandler = defineHandler<OffsetCommit.OffsetCommitRequest, OffsetCommit.OffsetCommitResponse>({
  api: OffsetCommit.OffsetCommitApi,
  minVersion: 2,
  maxVersion: 9,
  decodeRequest: OffsetCommit.decodeOffsetCommitRequest,
  encodeResponse: OffsetCommit.encodeOffsetCommitResponse,
  authorizes: true,
  async handle(req, ctx) {
    const topics = req.topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({
        partitionIndex: p.partitionIndex,
        committedOffset: p.committedOffset,
        committedLeaderEpoch: ctx.apiVersion >= 6 ? p.committedLeaderEpoch : -1,
        committedMetadata: p.committedMetadata,
      })),
    }))
    let result
    const groupDenied = !ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)
    const deniedTopics = groupDenied ? [] : topics.filter((t) => !ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.TOPIC, t.name))
    const allowedTopics = deniedTopics.length === 0 ? topics : topics.filter((t) => !deniedTopics.includes(t))
    const refused = (list: typeof topics, errorCode: number): { name: string; partitions: { partitionIndex: number; errorCode: number }[] }[] =>
      list.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) }))
    if (groupDenied) {
      result = refused(topics, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    } else try {
      const coordinator = await ctx.groups.coordinator()
      result = await coordinator.commitOffsets({
        groupId: req.groupId,
        generationId: req.generationIdOrMemberEpoch,
        memberId: req.memberId,
        groupInstanceId: ctx.apiVersion >= 7 ? req.groupInstanceId : null,
        retentionTimeMs: ctx.apiVersion <= 4 ? Number(req.retentionTimeMs) : -1,
        consumerProtocolCapable: ctx.apiVersion >= 9,
        topics: allowedTopics,
      })
      result = [...result, ...refused(deniedTopics, ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    } catch {
      result = topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE })) }))
    }
    return OffsetCommit.createOffsetCommitResponse({
      topics: result.map((t) =>
        OffsetCommit.createOffsetCommitResponseTopic({
          name: t.name,
          partitions: t.partitions.map((p) => OffsetCommit.createOffsetCommitResponsePartition({ partitionIndex: p.partitionIndex, errorCode: p.errorCode })),
        }),
      ),
    })
  },
})
