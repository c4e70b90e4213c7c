// JoinGroup: v0-6
//
// Behavior:
// * The classic rebalance protocol (src/coordinator/group): the answer waits until the group's join
//   phase completes (every known member rejoined, or the rebalance timeout passed; an empty group
//   first waits group.initial.rebalance.delay.ms), then carries the generation, the selected protocol,
//   the leader, and for the leader every member's metadata.
// * v4+ members without an id get MEMBER_ID_REQUIRED with a new id to join with (KIP-394); static
//   members (group.instance.id, v5+) skip that step and replace their previous member id.
// * Session timeouts outside group.min/max.session.timeout.ms: INVALID_SESSION_TIMEOUT; an empty group
//   id: INVALID_GROUP_ID; no protocol in common with the group: INCONSISTENT_GROUP_PROTOCOL.
// Version notes:
// * v6: flexible. v5: group instance id. v4: member id required. v1+: rebalance timeout (v0 uses the
//   session timeout).
// Not implemented:
// * v7+ (protocol type in the answer, reason, skip assignment): not advertised.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as JoinGroup from '../../protocol/messages/11-join-group.gen.js'
import { defineHandler } from './common/handler.js'

export const joinGroupHandler = defineHandler<JoinGroup.JoinGroupRequest, JoinGroup.JoinGroupResponse>({
  api: JoinGroup.JoinGroupApi,
  minVersion: 0,
  maxVersion: 6,
  decodeRequest: JoinGroup.decodeJoinGroupRequest,
  encodeResponse: JoinGroup.encodeJoinGroupResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) {
      return JoinGroup.createJoinGroupResponse({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, generationId: -1, protocolName: '', leader: '', memberId: req.memberId })
    }
    let result
    try {
      const coordinator = await ctx.groups.coordinator()
      result = await coordinator.joinGroup({
        groupId: req.groupId,
        memberId: req.memberId,
        groupInstanceId: ctx.apiVersion >= 5 ? req.groupInstanceId : null,
        protocolType: req.protocolType,
        protocols: req.protocols.map((p) => ({ name: p.name, metadata: p.metadata })),
        sessionTimeoutMs: req.sessionTimeoutMs,
        rebalanceTimeoutMs: ctx.apiVersion >= 1 ? req.rebalanceTimeoutMs : req.sessionTimeoutMs,
        clientId: ctx.clientId ?? '',
        clientHost: `/${ctx.connection.clientHost}`,
        requireKnownMemberId: ctx.apiVersion >= 4,
      })
    } catch {
      return JoinGroup.createJoinGroupResponse({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, generationId: -1, protocolName: '', leader: '', memberId: req.memberId })
    }
    return JoinGroup.createJoinGroupResponse({
      errorCode: result.errorCode,
      generationId: result.generationId,
      // Non-nullable before v7.
      protocolName: result.protocolName ?? '',
      leader: result.leader,
      memberId: result.memberId,
      members: result.members.map((m) =>
        JoinGroup.createJoinGroupResponseMember({ memberId: m.memberId, groupInstanceId: ctx.apiVersion >= 5 ? m.groupInstanceId : null, metadata: m.metadata }),
      ),
    })
  },
})
