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
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DescribeGroups from '../../protocol/messages/15-describe-groups.gen.js'
import { defineHandler } from './common/handler.js'
import { AUTHORIZED_OPERATIONS_OMITTED, authorizedOperations, GROUP_OPERATION_LIST } from './common/authorized-operations.js'

export const describeGroupsHandler = defineHandler<DescribeGroups.DescribeGroupsRequest, DescribeGroups.DescribeGroupsResponse>({
  api: DescribeGroups.DescribeGroupsApi,
  minVersion: 0,
  maxVersion: 5,
  decodeRequest: DescribeGroups.decodeDescribeGroupsRequest,
  encodeResponse: DescribeGroups.encodeDescribeGroupsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const withOperations = ctx.apiVersion >= 3 && req.includeAuthorizedOperations
    const allowed = req.groups.filter((g) => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.GROUP, g))
    const denied = req.groups.filter((g) => !allowed.includes(g)).map((groupId) => ({ groupId, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, state: '', protocolType: '', protocolData: '', members: [] }))
    let described
    try {
      const coordinator = await ctx.groups.coordinator()
      described = allowed.length === 0 ? [] : await coordinator.describeGroups(allowed)
    } catch {
      described = allowed.map((groupId) => ({ groupId, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, state: 'Dead', protocolType: '', protocolData: '', members: [] }))
    }
    const order = new Map(req.groups.map((g, i) => [g, i]))
    return DescribeGroups.createDescribeGroupsResponse({
      groups: [...described, ...denied].sort((a, b) => order.get(a.groupId)! - order.get(b.groupId)!).map((g) =>
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
