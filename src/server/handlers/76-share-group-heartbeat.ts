// ShareGroupHeartbeat: v1
//
// Behavior:
// * The share group protocol (KIP-932): a member joins with epoch 0 and a member id it chose, heartbeats
//   with its epoch every heartbeatIntervalMs (share.heartbeat.interval.ms, else
//   group.share.heartbeat.interval.ms), leaves with -1. The coordinator keeps the subscriptions (topic
//   names) and computes the target assignment with Kafka's simple assignor: every subscribed partition is
//   assigned, and with more members than partitions several members share one. The answer carries the
//   member's partitions by topic id when they changed, and always on joining
//   (coordinator/group/share-group-manager.ts). Topics created, deleted or grown reach the assignment on
//   the next heartbeat. A member that misses share.session.timeout.ms (group.share.session.timeout.ms) is
//   removed and its partitions go to the others.
// * Errors (Kafka's, with its messages): INVALID_REQUEST for a malformed heartbeat (an empty member id,
//   no subscription on joining, a bad epoch), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (the member must
//   rejoin with epoch 0), GROUP_MAX_SIZE_REACHED (group.share.max.size), GROUP_ID_NOT_FOUND for a group id
//   held by a classic or consumer group; COORDINATOR_LOAD_IN_PROGRESS while __consumer_offsets replays.
// * Authorization (Kafka 4.x): Read on the group, else GROUP_AUTHORIZATION_FAILED; Describe on every
//   subscribed topic named in the request, else TOPIC_AUTHORIZATION_FAILED (KAFKA-18817).
// * __consumer_offsets is created on first use, as for JoinGroup.
// * Advertised together with ShareFetch and ShareAcknowledge: a librdkafka share consumer that could join
//   but not fetch would wait silently.
// Version notes:
// * v1 only (Kafka 4.1+: member ids chosen by the client, KIP-1082; what librdkafka 2.15 sends). v0 was
//   Kafka 4.0's early-access version, which Kafka no longer serves.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as ShareGroupHeartbeat from '../../protocol/messages/76-share-group-heartbeat.gen.js'
import { defineHandler } from './common/handler.js'

export const shareGroupHeartbeatHandler = defineHandler<ShareGroupHeartbeat.ShareGroupHeartbeatRequest, ShareGroupHeartbeat.ShareGroupHeartbeatResponse>({
  api: ShareGroupHeartbeat.ShareGroupHeartbeatApi,
  minVersion: 1,
  maxVersion: 1,
  decodeRequest: ShareGroupHeartbeat.decodeShareGroupHeartbeatRequest,
  encodeResponse: ShareGroupHeartbeat.encodeShareGroupHeartbeatResponse,
  authorizes: true,
  async handle(req, ctx) {
    const failed = (errorCode: ErrorCode, errorMessage: string | null = null): ShareGroupHeartbeat.ShareGroupHeartbeatResponse =>
      ShareGroupHeartbeat.createShareGroupHeartbeatResponse({ errorCode, errorMessage, memberEpoch: 0 })
    if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) return failed(ErrorCode.GROUP_AUTHORIZATION_FAILED, 'Group authorization failed.')
    // Clients may not learn of topics they cannot Describe: a subscription naming one is refused whole.
    if (req.subscribedTopicNames !== null && req.subscribedTopicNames.some((t) => !ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, t))) {
      return failed(ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'Topic authorization failed.')
    }
    let coordinator
    try {
      coordinator = await ctx.groups.coordinator()
    } catch (err) {
      return failed(err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE)
    }
    const r = await coordinator.shareGroupHeartbeat({
      groupId: req.groupId,
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      rackId: req.rackId,
      subscribedTopicNames: req.subscribedTopicNames,
      clientId: ctx.clientId ?? '',
      clientHost: ctx.connection.clientHost,
    })
    return ShareGroupHeartbeat.createShareGroupHeartbeatResponse({
      errorCode: r.errorCode,
      errorMessage: r.errorMessage,
      memberId: r.memberId,
      memberEpoch: r.memberEpoch,
      heartbeatIntervalMs: r.heartbeatIntervalMs,
      assignment:
        r.assignment === null
          ? null
          : ShareGroupHeartbeat.createAssignment({ topicPartitions: r.assignment.map((t) => ShareGroupHeartbeat.createTopicPartitions({ topicId: t.topicId, partitions: t.partitions })) }),
    })
  },
})
