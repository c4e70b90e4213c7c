// ShareGroupDescribe: v1
//
// Behavior:
// * KIP-932 share groups: state (Empty, Stable), group and assignment epochs, the assignor ('simple'),
//   and per member its rack, epoch, client, subscription and assignment (topic ids with their names). A
//   group id that is not a share group (a classic or consumer group, or none) answers GROUP_ID_NOT_FOUND
//   with Kafka's message; an empty id INVALID_GROUP_ID. Describing creates nothing: without
//   __consumer_offsets every group is GROUP_ID_NOT_FOUND.
// * Authorization (Kafka 4.x): Describe on each group, else GROUP_AUTHORIZATION_FAILED for it; a group
//   with a subscribed or assigned topic the principal may not Describe answers TOPIC_AUTHORIZATION_FAILED
//   and nothing else (KAFKA-18817). Authorized operations: the group operations the principal may do,
//   sent when asked for (includeAuthorizedOperations), else Kafka's "omitted" value.
// * Advertised together with the other share group APIs.
// Bounds (docs/broker.md, "Requests are bounded"): at most request.max.list.elements ids (the decoder refuses
// more); they are checked, described and answered in ~10 ms slices of main-thread time.
// Version notes:
// * v1 only, as ShareGroupHeartbeat (Kafka 4.1+).
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as ShareGroupDescribe from '../../protocol/messages/77-share-group-describe.gen.js'
import { AUTHORIZED_OPERATIONS_OMITTED, authorizedOperations, GROUP_OPERATION_LIST } from './common/authorized-operations.js'
import { inTimedChunks } from '../../domain/main-thread-slices.js'
import { defineHandler, requestAbandoned, requestSlices } from './common/handler.js'
import type { DescribedTopicPartitions, GroupCoordinatorApi } from './common/ports.js'

type DescribedShareGroup = Awaited<ReturnType<GroupCoordinatorApi['shareGroupDescribe']>>[number]

const refused = (groupId: string, errorCode: ErrorCode, errorMessage: string | null = null): DescribedShareGroup => ({
  groupId,
  errorCode,
  errorMessage,
  groupState: '',
  groupEpoch: 0,
  assignmentEpoch: 0,
  assignorName: '',
  members: [],
})

function assignment(topics: readonly DescribedTopicPartitions[]): ShareGroupDescribe.Assignment {
  return ShareGroupDescribe.createAssignment({
    topicPartitions: topics.map((t) => ShareGroupDescribe.createTopicPartitions({ topicId: t.topicId, topicName: t.topicName, partitions: t.partitions })),
  })
}

export const shareGroupDescribeHandler = defineHandler<ShareGroupDescribe.ShareGroupDescribeRequest, ShareGroupDescribe.ShareGroupDescribeResponse>({
  api: ShareGroupDescribe.ShareGroupDescribeApi,
  minVersion: 1,
  maxVersion: 1,
  decodeRequest: ShareGroupDescribe.decodeShareGroupDescribeRequest,
  encodeResponse: ShareGroupDescribe.encodeShareGroupDescribeResponse,
  authorizes: true,
  async handle(req, ctx) {
    const coordinator = ctx.groups.current
    const slices = requestSlices(ctx)
    const isAllowed = await slices.map(req.groupIds, (g) => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.GROUP, g))
    const allowed = req.groupIds.filter((_, i) => isAllowed[i])
    const notFound = (groupId: string): DescribedShareGroup => refused(groupId, groupId === '' ? ErrorCode.INVALID_GROUP_ID : ErrorCode.GROUP_ID_NOT_FOUND)
    const described =
      coordinator === undefined ? allowed.map(notFound) : await inTimedChunks(allowed, (chunk) => coordinator.shareGroupDescribe([...chunk]), requestAbandoned(ctx))
    // In the request's order: the allowed ids' answers in turn, the others refused where they stood.
    let nextDescribed = 0
    const answers = req.groupIds.map((groupId, i): DescribedShareGroup => (isAllowed[i] ? described[nextDescribed++]! : refused(groupId, ErrorCode.GROUP_AUTHORIZATION_FAILED)))
    return ShareGroupDescribe.createShareGroupDescribeResponse({
      groups: await slices.map(answers, (found) => {
        let g = found
        if (g.errorCode === ErrorCode.NONE && ctx.acl.enabled) {
          const topics = new Set<string>()
          for (const m of g.members) {
            for (const t of m.subscribedTopicNames) topics.add(t)
            for (const t of m.assignment) topics.add(t.topicName)
          }
          for (const t of topics) {
            if (ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, t)) continue
            g = refused(g.groupId, ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'The group has described topic(s) that the client is not authorized to describe.')
            break
          }
        }
        return ShareGroupDescribe.createDescribedGroup({
          errorCode: g.errorCode,
          errorMessage: g.errorMessage,
          groupId: g.groupId,
          groupState: g.groupState,
          groupEpoch: g.groupEpoch,
          assignmentEpoch: g.assignmentEpoch,
          assignorName: g.assignorName,
          members: g.members.map((m) =>
            ShareGroupDescribe.createMember({
              memberId: m.memberId,
              rackId: m.rackId,
              memberEpoch: m.memberEpoch,
              clientId: m.clientId,
              clientHost: m.clientHost,
              subscribedTopicNames: m.subscribedTopicNames,
              assignment: assignment(m.assignment),
            }),
          ),
          authorizedOperations: g.errorCode === ErrorCode.NONE && req.includeAuthorizedOperations ? authorizedOperations(ctx.acl, ctx.connection, ResourceType.GROUP, g.groupId, GROUP_OPERATION_LIST) : AUTHORIZED_OPERATIONS_OMITTED,
        })
      }),
    })
  },
})
