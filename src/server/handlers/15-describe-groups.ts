// DescribeGroups: v0-5
//
// Behavior:
// * Per group: its state (Empty, PreparingRebalance, CompletingRebalance, Stable; Dead for a group that
//   does not exist, with no error, as Kafka before v6), protocol type, and members with client id and
//   host. Member metadata and assignments, and the protocol name, are filled only when Stable (Kafka).
// * Authorization: Describe on each group, else that group answers GROUP_AUTHORIZATION_FAILED (Kafka).
//   Authorized operations: the group operations the principal may do, when asked for (v3+).
// Version notes:
// * v5: flexible. v4+: group instance id. v3+: authorized operations. v1+: throttle time.
// Bounds (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes. Its groups are
// checked, described and answered in ~10 ms slices of main-thread time, others served in between.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DescribeGroups from '../../protocol/messages/15-describe-groups.gen.js'
import { AbandonedWorkError, inTimedChunks } from '../../domain/main-thread-slices.js'
import { defineHandler, requestAbandoned, requestSlices } from './common/handler.js'
import type { GroupCoordinatorApi } from './common/ports.js'
import { AUTHORIZED_OPERATIONS_OMITTED, authorizedOperations, GROUP_OPERATION_LIST } from './common/authorized-operations.js'

type DescribedGroup = Awaited<ReturnType<GroupCoordinatorApi['describeGroups']>>[number]
/** A refused group answers an empty state, which no described group has. */
type GroupAnswer = Omit<DescribedGroup, 'state'> & { state: string }

export const describeGroupsHandler = defineHandler<DescribeGroups.DescribeGroupsRequest, DescribeGroups.DescribeGroupsResponse>({
  api: DescribeGroups.DescribeGroupsApi,
  minVersion: 0,
  maxVersion: 5,
  decodeRequest: DescribeGroups.decodeDescribeGroupsRequest,
  encodeResponse: DescribeGroups.encodeDescribeGroupsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const withOperations = ctx.apiVersion >= 3 && req.includeAuthorizedOperations
    const slices = requestSlices(ctx)
    // One pass over the ids (a list of 100,000 is checked in slices, never compared with itself).
    const isAllowed = await slices.map(req.groups, (g) => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.GROUP, g))
    const allowed = req.groups.filter((_, i) => isAllowed[i])
    let described: DescribedGroup[]
    try {
      const coordinator = await ctx.groups.coordinator()
      // In chunks of ~10 ms of main-thread time, each answered before the next is asked.
      described = await inTimedChunks(allowed, (chunk) => coordinator.describeGroups([...chunk]), requestAbandoned(ctx))
    } catch (err) {
      if (err instanceof AbandonedWorkError) throw err
      described = allowed.map((groupId) => ({ groupId, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, state: 'Dead', protocolType: '', protocolData: '', members: [] }))
    }
    // In the request's order: the allowed ids' answers in turn, the others refused where they stood.
    let nextDescribed = 0
    const answers = req.groups.map((groupId, i): GroupAnswer =>
      isAllowed[i] ? described[nextDescribed++]! : { groupId, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, state: '', protocolType: '', protocolData: '', members: [] },
    )
    return DescribeGroups.createDescribeGroupsResponse({
      groups: await slices.map(answers, (g) =>
        DescribeGroups.createDescribedGroup({
          errorCode: g.errorCode,
          groupId: g.groupId,
          groupState: g.state,
          protocolType: g.protocolType,
          protocolData: g.protocolData,
          authorizedOperations: g.errorCode === ErrorCode.NONE && withOperations ? authorizedOperations(ctx.acl, ctx.connection, ResourceType.GROUP, g.groupId, GROUP_OPERATION_LIST) : AUTHORIZED_OPERATIONS_OMITTED,
          members: g.members.map((m) =>
            DescribeGroups.createDescribedGroupMember({
              memberId: m.memberId,
              groupInstanceId: ctx.apiVersion >= 4 ? m.groupInstanceId : null,
              clientId: m.clientId,
              clientHost: m.clientHost,
              memberMetadata: m.metadata,
              memberAssignment: m.assignment,
            }),
          ),
        }),
      ),
    })
  },
})
