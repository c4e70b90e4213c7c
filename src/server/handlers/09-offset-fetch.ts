// OffsetFetch: v1-9
//
// Behavior:
// * The committed offset, leader epoch and metadata per partition; -1 (and metadata '') where nothing
//   is committed. A null topic list (v2+) returns every offset the group has committed.
// * Coordinator errors (COORDINATOR_LOAD_IN_PROGRESS, NOT_COORDINATOR...) go in the top-level error
//   (v2+; per group in v8) and, for v1 which has none, in every partition.
// * v9: a consumer-group (KIP-848) member names itself (memberId, memberEpoch); the coordinator checks
//   them against the group (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH at the group level). Without them (an
//   admin, memberEpoch -1) the offsets are answered.
// Version notes:
// * v9: member id and epoch (KIP-848). v8: several groups per request. v7+: requireStable: a partition whose offset an open transaction
//   holds (TxnOffsetCommit, not yet committed or aborted) answers UNSTABLE_OFFSET_COMMIT (retriable).
//   v6+: flexible. v5+: leader epoch. v3+: throttle time. v2+: top-level error, null = all topics.
// Not implemented:
// * v0 (ZooKeeper offsets): not advertised.
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as OffsetFetch from '../../protocol/messages/09-offset-fetch.gen.js'
import type { RequestContext } from './common/context.js'
import { defineHandler } from './common/handler.js'
import type { OffsetFetchResult } from './common/ports.js'

async function fetchGroup(
  ctx: RequestContext,
  groupId: string,
  topics: { name: string; partitionIndexes: number[] }[] | null,
  requireStable: boolean,
  member: { memberId: string | null; memberEpoch: number } = { memberId: null, memberEpoch: -1 },
): Promise<OffsetFetchResult> {
  if (!ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.GROUP, groupId)) return { errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, topics: [] }
  const wanted = topics === null ? null : topics.map((t) => ({ name: t.name, partitions: t.partitionIndexes }))
  try {
    const coordinator = await ctx.groups.coordinator()
    return await coordinator.fetchOffsets(groupId, wanted, requireStable, member)
  } catch (err) {
    return { errorCode: err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE, topics: [] }
  }
}

export const offsetFetchHandler = defineHandler<OffsetFetch.OffsetFetchRequest, OffsetFetch.OffsetFetchResponse>({
  api: OffsetFetch.OffsetFetchApi,
  minVersion: 1,
  maxVersion: 9,
  decodeRequest: OffsetFetch.decodeOffsetFetchRequest,
  encodeResponse: OffsetFetch.encodeOffsetFetchResponse,
  authorizes: true,
  async handle(req, ctx) {
    const v = ctx.apiVersion
    if (v >= 8) {
      const groups = await Promise.all(
        req.groups.map(async (g) => {
          const r = await fetchGroup(ctx, g.groupId, g.topics, req.requireStable, v >= 9 ? { memberId: g.memberId, memberEpoch: g.memberEpoch } : undefined)
          return OffsetFetch.createOffsetFetchResponseGroup({
            groupId: g.groupId,
            errorCode: r.errorCode,
            topics: r.topics.map((t) =>
              OffsetFetch.createOffsetFetchResponseTopics({
                name: t.name,
                partitions: t.partitions.map((p) =>
                  OffsetFetch.createOffsetFetchResponsePartitions({
                    partitionIndex: p.partitionIndex,
                    committedOffset: p.committedOffset,
                    committedLeaderEpoch: p.committedLeaderEpoch,
                    metadata: p.metadata,
                    errorCode: p.errorCode,
                  }),
                ),
              }),
            ),
          })
        }),
      )
      return OffsetFetch.createOffsetFetchResponse({ groups })
    }
    // v1 has no "all topics" (null) form and no top-level error code.
    const r = await fetchGroup(ctx, req.groupId, req.topics, v >= 7 && req.requireStable)
    let topics = r.topics
    if (r.errorCode !== ErrorCode.NONE && v < 2) {
      topics = (req.topics ?? []).map((t) => ({
        name: t.name,
        partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: r.errorCode })),
      }))
    }
    return OffsetFetch.createOffsetFetchResponse({
      errorCode: v >= 2 ? r.errorCode : ErrorCode.NONE,
      topics: topics.map((t) =>
        OffsetFetch.createOffsetFetchResponseTopic({
          name: t.name,
          partitions: t.partitions.map((p) =>
            OffsetFetch.createOffsetFetchResponsePartition({
              partitionIndex: p.partitionIndex,
              committedOffset: p.committedOffset,
              committedLeaderEpoch: v >= 5 ? p.committedLeaderEpoch : -1,
              metadata: p.metadata,
              errorCode: p.errorCode,
            }),
          ),
        }),
      ),
    })
  },
})
