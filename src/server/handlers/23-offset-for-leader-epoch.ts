// OffsetForLeaderEpoch: v0-4
//
// Behavior:
// * For each partition, the end offset of the asked leader epoch in this broker's log (Kafka's
//   LeaderEpochFileCache.endOffsetFor): the largest epoch at or below it that the log has, and the start
//   offset of the next epoch after that one, or the log end offset when it is the latest epoch. An epoch
//   newer than every epoch here (or -1) answers epoch -1, offset -1. Followers use it to find where
//   their log diverged from the leader's; clients (KIP-320) to check a position after a leader change.
// * The leader answers (currentLeaderEpoch checked as Fetch does: FENCED_LEADER_EPOCH for an older one,
//   UNKNOWN_LEADER_EPOCH for a newer one); a follower answers NOT_LEADER_OR_FOLLOWER, except to replica
//   id -2 (Kafka's debugging id); UNKNOWN_TOPIC_OR_PARTITION for a partition nobody hosts.
// * Authorization (Kafka's): a follower (replica id >= 0) needs ClusterAction, else
//   CLUSTER_AUTHORIZATION_FAILED for every partition; a consumer needs Describe on the topic, else
//   TOPIC_AUTHORIZATION_FAILED for its partitions.
// Version notes:
// * v4: flexible. v3+: replica id. v2+: current leader epoch. v1+: the epoch of the answer.
// Bounds (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes. The loops over
// its partitions run in ~10 ms slices of main-thread time (as ListOffsets'), and the epochs are looked up
// in chunks of about that much work, so other clients are served while a large one is answered.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as OffsetForLeaderEpoch from '../../protocol/messages/23-offset-for-leader-epoch.gen.js'
import { inTimedChunks } from '../../domain/main-thread-slices.js'
import { defineHandler, requestAbandoned, requestSlices } from './common/handler.js'
import type { EpochLookup } from './common/ports.js'

export const offsetForLeaderEpochHandler = defineHandler<OffsetForLeaderEpoch.OffsetForLeaderEpochRequest, OffsetForLeaderEpoch.OffsetForLeaderEpochResponse>({
  api: OffsetForLeaderEpoch.OffsetForLeaderEpochApi,
  minVersion: 0,
  maxVersion: 4,
  decodeRequest: OffsetForLeaderEpoch.decodeOffsetForLeaderEpochRequest,
  encodeResponse: OffsetForLeaderEpoch.encodeOffsetForLeaderEpochResponse,
  authorizes: true,
  async handle(req, ctx) {
    const replicaId = ctx.apiVersion >= 3 ? req.replicaId : -1
    const clusterDenied = replicaId >= 0 && !ctx.acl.authorize(ctx.connection, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    const topics: OffsetForLeaderEpoch.OffsetForLeaderTopicResult[] = []
    const items: EpochLookup[] = []
    const targets: OffsetForLeaderEpoch.EpochEndOffset[] = []
    const slices = requestSlices(ctx)
    for (const t of req.topics) {
      const answers: OffsetForLeaderEpoch.EpochEndOffset[] = []
      topics.push(OffsetForLeaderEpoch.createOffsetForLeaderTopicResult({ topic: t.topic, partitions: answers }))
      // Asked once per topic, not per partition.
      const topicDenied = !clusterDenied && replicaId < 0 && !ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic)
      for (const p of t.partitions) {
        const turn = slices.turn()
        if (turn !== undefined) await turn
        const answer = OffsetForLeaderEpoch.createEpochEndOffset({ partition: p.partition, leaderEpoch: -1, endOffset: -1n })
        answers.push(answer)
        if (clusterDenied || topicDenied) {
          answer.errorCode = clusterDenied ? ErrorCode.CLUSTER_AUTHORIZATION_FAILED : ErrorCode.TOPIC_AUTHORIZATION_FAILED
          continue
        }
        items.push({ topic: t.topic, partition: p.partition, currentLeaderEpoch: p.currentLeaderEpoch, leaderEpoch: p.leaderEpoch })
        targets.push(answer)
      }
    }
    const results = await inTimedChunks(items, (chunk) => ctx.partitions.endOffsetsForEpochs(replicaId, chunk), requestAbandoned(ctx))
    for (const [i, r] of results.entries()) {
      const turn = slices.turn()
      if (turn !== undefined) await turn
      const answer = targets[i]!
      if (!r.ok) {
        answer.errorCode = r.errorCode
        continue
      }
      answer.errorCode = ErrorCode.NONE
      answer.leaderEpoch = r.value.leaderEpoch
      answer.endOffset = BigInt(r.value.endOffset)
    }
    return OffsetForLeaderEpoch.createOffsetForLeaderEpochResponse({ topics })
  },
})
