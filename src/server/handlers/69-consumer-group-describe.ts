// ConsumerGroupDescribe: v0
//
// Behavior:
// * KIP-848 consumer groups: state (Empty, Assigning, Reconciling, Stable), group and assignment epochs,
//   the assignor, and per member its subscription, current assignment and target assignment (topic ids
//   with their names). A group id that is not a consumer group (a classic group, or none) answers
//   GROUP_ID_NOT_FOUND with Kafka's message; an empty id INVALID_GROUP_ID. Describing creates nothing:
//   without __consumer_offsets every group is GROUP_ID_NOT_FOUND.
// * Authorization: Describe on each group, else GROUP_AUTHORIZATION_FAILED for it (Kafka). Authorized
//   operations: the group operations the principal may do; the bit set is sent when asked for (includeAuthorizedOperations), else Kafka's "omitted" value.
// Bounds (docs/broker.md, "Requests are bounded"): at most request.max.list.elements ids (the decoder refuses
// more); they are checked, described and answered in ~10 ms slices of main-thread time.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as ConsumerGroupDescribe from '../../protocol/messages/69-consumer-group-describe.gen.js'
import { AUTHORIZED_OPERATIONS_OMITTED, authorizedOperations, GROUP_OPERATION_LIST } from './common/authorized-operations.js'
import { inTimedChunks } from '../../domain/main-thread-slices.js'
import { defineHandler, requestAbandoned, requestSlices } from './common/handler.js'
import type { DescribedTopicPartitions, GroupCoordinatorApi } from './common/ports.js'

type DescribedConsumerGroup = Awaited<ReturnType<GroupCoordinatorApi['consumerGroupDescribe']>>[number]

function assignment(topics: readonly DescribedTopicPartitions[]): ConsumerGroupDescribe.Assignment {
  return ConsumerGroupDescribe.createAssignment({
    topicPartitions: topics.map((t) => ConsumerGroupDescribe.createTopicPartitions({ topicId: t.topicId, topicName: t.topicName, partitions: t.partitions })),
  })
}

export const consumerGroupDescribeHandler = defineHandler<ConsumerGroupDescribe.ConsumerGroupDescribeRequest, ConsumerGroupDescribe.ConsumerGroupDescribeResponse>({
  api: ConsumerGroupDescribe.ConsumerGroupDescribeApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: ConsumerGroupDescribe.decodeConsumerGroupDescribeRequest,
  encodeResponse: ConsumerGroupDescribe.encodeConsumerGroupDescribeResponse,
  authorizes: true,
  async handle(req, ctx) {
    const coordinator = ctx.groups.current
    const slices = requestSlices(ctx)
    // One pass over the ids (a list of 100,000 is checked in slices, never compared with itself).
    const isAllowed = await slices.map(req.groupIds, (g) => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.GROUP, g))
    const allowed = req.groupIds.filter((_, i) => isAllowed[i])
    const notFound = (groupId: string): DescribedConsumerGroup => ({ groupId, errorCode: groupId === '' ? ErrorCode.INVALID_GROUP_ID : ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: null, groupState: '', groupEpoch: 0, assignmentEpoch: 0, assignorName: '', members: [] })
    const described =
      coordinator === undefined
        ? allowed.map(notFound)
        : // In chunks of ~10 ms of main-thread time, each answered before the next is asked.
          await inTimedChunks(allowed, (chunk) => coordinator.consumerGroupDescribe([...chunk]), requestAbandoned(ctx))
    // In the request's order: the allowed ids' answers in turn, the others refused where they stood.
    let nextDescribed = 0
    const answers = req.groupIds.map((groupId, i): DescribedConsumerGroup =>
      isAllowed[i] ? described[nextDescribed++]! : { groupId, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, errorMessage: null, groupState: '', groupEpoch: 0, assignmentEpoch: 0, assignorName: '', members: [] },
    )
    return ConsumerGroupDescribe.createConsumerGroupDescribeResponse({
      groups: await slices.map(answers, (g) =>
        ConsumerGroupDescribe.createDescribedGroup({
          errorCode: g.errorCode,
          errorMessage: g.errorMessage,
          groupId: g.groupId,
          groupState: g.groupState,
          groupEpoch: g.groupEpoch,
          assignmentEpoch: g.assignmentEpoch,
          assignorName: g.assignorName,
          members: g.members.map((m) =>
            ConsumerGroupDescribe.createMember({
              memberId: m.memberId,
              instanceId: m.instanceId,
              rackId: m.rackId,
              memberEpoch: m.memberEpoch,
              clientId: m.clientId,
              clientHost: m.clientHost,
              subscribedTopicNames: m.subscribedTopicNames,
              subscribedTopicRegex: m.subscribedTopicRegex,
              assignment: assignment(m.assignment),
              targetAssignment: assignment(m.targetAssignment),
            }),
          ),
          authorizedOperations: g.errorCode === ErrorCode.NONE && req.includeAuthorizedOperations ? authorizedOperations(ctx.acl, ctx.connection, ResourceType.GROUP, g.groupId, GROUP_OPERATION_LIST) : AUTHORIZED_OPERATIONS_OMITTED,
        }),
      ),
    })
  },
})
