// DescribeGroups: v0-5
//
// Behavior:
// * Per group: its state (Empty, PreparingRebalance, CompletingRebalance, Stable; Dead for a group that
//   does not exist, with no error, as Kafka before v6), protocol type, and members with client id and
//   host. Member metadata and assignments, and the protocol name, are filled only when Stable (Kafka).
// * Authorized operations: no authorizer, so all group operations when asked for (v3+).
// Version notes:
// * v5: flexible. v4+: group instance id. v3+: authorized operations. v1+: throttle time.
import { ErrorCode } from '../../domain/errors.js'
import * as DescribeGroups from '../../protocol/messages/15-describe-groups.gen.js'
import { defineHandler } from './common/handler.js'
import { AUTHORIZED_OPERATIONS_OMITTED, GROUP_OPERATIONS } from './common/authorized-operations.js'

export const describeGroupsHandler = defineHandler<DescribeGroups.DescribeGroupsRequest, DescribeGroups.DescribeGroupsResponse>({
  api: DescribeGroups.DescribeGroupsApi,
  minVersion: 0,
  maxVersion: 5,
  decodeRequest: DescribeGroups.decodeDescribeGroupsRequest,
  encodeResponse: DescribeGroups.encodeDescribeGroupsResponse,
  async handle(req, ctx) {
    const operations = ctx.apiVersion >= 3 && req.includeAuthorizedOperations ? GROUP_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED
    let described
    try {
      const coordinator = await ctx.groups.coordinator()
      described = await coordinator.describeGroups(req.groups)
    } catch {
      described = req.groups.map((groupId) => ({ groupId, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, state: 'Dead', protocolType: '', protocolData: '', members: [] }))
    }
    return DescribeGroups.createDescribeGroupsResponse({
      groups: described.map((g) =>
        DescribeGroups.createDescribedGroup({
          errorCode: g.errorCode,
          groupId: g.groupId,
          groupState: g.state,
          protocolType: g.protocolType,
          protocolData: g.protocolData,
          authorizedOperations: g.errorCode === ErrorCode.NONE ? operations : AUTHORIZED_OPERATIONS_OMITTED,
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
