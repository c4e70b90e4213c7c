// ConsumerGroupHeartbeat: v0-1
//
// Behavior:
// * The consumer group protocol (KIP-848): a member joins with epoch 0, heartbeats with its epoch every
//   heartbeatIntervalMs (group.consumer.heartbeat.interval.ms), leaves with -1 (-2: a static member
//   leaving for now). The coordinator keeps the subscriptions, computes the target assignment with the
//   group's server assignor (group.consumer.assignors: uniform, range) and answers each member with the
//   partitions it may use now; a partition another member must revoke first is handed out only after
//   that member's heartbeat no longer lists it (coordinator/group/consumer-group-manager.ts).
// * Errors (Kafka's): INVALID_REQUEST for a malformed heartbeat, UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH
//   (the member must rejoin with epoch 0), UNSUPPORTED_ASSIGNOR, UNRELEASED_INSTANCE_ID,
//   FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED (group.consumer.max.size), GROUP_ID_NOT_FOUND for a classic
//   group with members; COORDINATOR_LOAD_IN_PROGRESS while __consumer_offsets replays. Each with Kafka's
//   error message.
// * Authorization: Read on the group, else GROUP_AUTHORIZATION_FAILED (Kafka).
// * __consumer_offsets is created on first use, as for JoinGroup.
// Version notes:
// * v1: the member id is made by the client (KIP-1082, as Kafka 4.0 serves it): an empty one is
//   INVALID_REQUEST. v0: an empty member id on joining gets one from the coordinator.
// * v1 also carries SubscribedTopicRegex; the coordinator answers INVALID_REQUEST to a regex (Kafka's
//   answer at the spec's commit: "SubscribedTopicRegex is not supported yet.").
// * v1 is marked latestVersionUnstable in the spec copied (scripts/kafka-protocol-extra); Kafka 4.0
//   released it, and @platformatic/kafka sends it.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as ConsumerGroupHeartbeat from '../../protocol/messages/68-consumer-group-heartbeat.gen.js'
import { defineHandler } from './common/handler.js'

export const consumerGroupHeartbeatHandler = defineHandler<ConsumerGroupHeartbeat.ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeat.ConsumerGroupHeartbeatResponse>({
  api: ConsumerGroupHeartbeat.ConsumerGroupHeartbeatApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: ConsumerGroupHeartbeat.decodeConsumerGroupHeartbeatRequest,
  encodeResponse: ConsumerGroupHeartbeat.encodeConsumerGroupHeartbeatResponse,
  authorizes: true,
  async handle(req, ctx) {
    const failed = (errorCode: ErrorCode, errorMessage: string | null = null): ConsumerGroupHeartbeat.ConsumerGroupHeartbeatResponse =>
      ConsumerGroupHeartbeat.createConsumerGroupHeartbeatResponse({ errorCode, errorMessage, memberEpoch: 0 })
    if (ctx.apiVersion >= 1 && req.memberId === '') return failed(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) return failed(ErrorCode.GROUP_AUTHORIZATION_FAILED, 'Group authorization failed.')
    let coordinator
    try {
      coordinator = await ctx.groups.coordinator()
    } catch (err) {
      return failed(err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE)
    }
    const r = await coordinator.consumerGroupHeartbeat({
      groupId: req.groupId,
      memberId: req.memberId,
      memberEpoch: req.memberEpoch,
      instanceId: req.instanceId,
      rackId: req.rackId,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs,
      subscribedTopicNames: req.subscribedTopicNames,
      subscribedTopicRegex: ctx.apiVersion >= 1 ? req.subscribedTopicRegex : null,
      serverAssignor: req.serverAssignor,
      topicPartitions: req.topicPartitions === null ? null : req.topicPartitions.map((t) => ({ topicId: t.topicId, partitions: t.partitions })),
      clientId: ctx.clientId ?? '',
      clientHost: ctx.connection.clientHost,
    })
    return ConsumerGroupHeartbeat.createConsumerGroupHeartbeatResponse({
      errorCode: r.errorCode,
      errorMessage: r.errorMessage,
      memberId: r.memberId,
      memberEpoch: r.memberEpoch,
      heartbeatIntervalMs: r.heartbeatIntervalMs,
      assignment:
        r.assignment === null
          ? null
          : ConsumerGroupHeartbeat.createAssignment({ topicPartitions: r.assignment.map((t) => ConsumerGroupHeartbeat.createResponseTopicPartitions({ topicId: t.topicId, partitions: t.partitions })) }),
    })
  },
})
