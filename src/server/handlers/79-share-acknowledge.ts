// ShareAcknowledge: v1 (KIP-932; what librdkafka 2.15 sends for commit_sync / commit_async and at close)
//
// Behavior (Kafka's KafkaApis.handleShareAcknowledgeRequest):
// * Request-level errors, answered with no partition: INVALID_GROUP_ID (empty group id), INVALID_REQUEST
//   (empty member id), GROUP_AUTHORIZATION_FAILED (no Read on the group), INVALID_SHARE_SESSION_EPOCH for
//   epoch 0 (only ShareFetch opens a session) or another epoch than the session's, SHARE_SESSION_NOT_FOUND.
//   A request in the session's epoch moves the epoch on, as a ShareFetch does.
// * Each partition: UNKNOWN_TOPIC_ID, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_OR_PARTITION,
//   NOT_LEADER_OR_FOLLOWER (with CurrentLeader and NodeEndpoints) as ShareFetch; else its acknowledgements
//   applied all or nothing: INVALID_REQUEST for malformed batches or offsets past what was acquired,
//   INVALID_RECORD_STATE for records the member does not hold (its lock expired, say).
// * Epoch -1 applies the final acknowledgements, then closes the session and releases what the member
//   still holds.
import { ErrorCode } from '../../domain/errors.js'
import * as ShareAcknowledge from '../../protocol/messages/79-share-acknowledge.gen.js'
import { defineHandler } from './common/handler.js'
import type { ShareAcknowledgeItem } from './common/ports.js'
import { ackBatches, currentLeaders, sharePartitionResolver, shareRequestError } from './common/share-requests.js'

export const shareAcknowledgeHandler = defineHandler<ShareAcknowledge.ShareAcknowledgeRequest, ShareAcknowledge.ShareAcknowledgeResponse>({
  api: ShareAcknowledge.ShareAcknowledgeApi,
  minVersion: 1,
  maxVersion: 1,
  decodeRequest: ShareAcknowledge.decodeShareAcknowledgeRequest,
  encodeResponse: ShareAcknowledge.encodeShareAcknowledgeResponse,
  authorizes: true,
  async handle(req, ctx) {
    const shares = ctx.sharePartitions
    const requestError = shareRequestError(ctx, req.groupId, req.memberId)
    if (requestError !== ErrorCode.NONE) return ShareAcknowledge.createShareAcknowledgeResponse({ errorCode: requestError })
    const group = req.groupId!
    const memberId = req.memberId!
    const step = shares.beginRequest(group, memberId, req.shareSessionEpoch, ctx.connection, false)
    if (step.session === undefined) return ShareAcknowledge.createShareAcknowledgeResponse({ errorCode: step.errorCode })

    const resolve = sharePartitionResolver(ctx)
    const answers = new Map<string, { topicId: string; data: ShareAcknowledge.PartitionData }>()
    const items = new Map<string, ShareAcknowledgeItem>()
    for (const t of req.topics) {
      for (const p of t.partitions) {
        const key = `${t.topicId}:${p.partitionIndex}`
        let answer = answers.get(key)
        if (answer === undefined) {
          const resolved = resolve(t.topicId, p.partitionIndex)
          answer = { topicId: t.topicId, data: ShareAcknowledge.createPartitionData({ partitionIndex: p.partitionIndex, errorCode: resolved.errorCode, currentLeader: ShareAcknowledge.createLeaderIdAndEpoch({ leaderId: -1, leaderEpoch: -1 }) }) }
          answers.set(key, answer)
          if (resolved.ref !== undefined) items.set(key, { ...resolved.ref, batches: [] })
        }
        const item = items.get(key)
        if (item !== undefined) (item.batches as ReturnType<typeof ackBatches>).push(...ackBatches(p.acknowledgementBatches))
      }
    }
    if (items.size > 0) {
      const keys = [...items.keys()]
      const results = await shares.acknowledge(group, memberId, [...items.values()])
      keys.forEach((key, i) => {
        const data = answers.get(key)!.data
        data.errorCode = results[i]!.errorCode
        data.errorMessage = results[i]!.message
      })
    }
    if (step.final) shares.closeSession(step.session)

    const leaders = currentLeaders(ctx)
    const byTopic = new Map<string, ShareAcknowledge.ShareAcknowledgeTopicResponse>()
    for (const { topicId, data } of answers.values()) {
      if (data.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER) data.currentLeader = ShareAcknowledge.createLeaderIdAndEpoch(leaders.leaderOf(topicId, data.partitionIndex))
      let t = byTopic.get(topicId)
      if (t === undefined) byTopic.set(topicId, (t = ShareAcknowledge.createShareAcknowledgeTopicResponse({ topicId })))
      t.partitions.push(data)
    }
    return ShareAcknowledge.createShareAcknowledgeResponse({
      responses: [...byTopic.values()],
      nodeEndpoints: leaders.endpoints().map((e) => ShareAcknowledge.createNodeEndpoint(e)),
    })
  },
})
