// LeaveGroup: v0-4
//
// Behavior:
// * Removes members and rebalances the rest (a member waiting in JoinGroup is answered
//   UNKNOWN_MEMBER_ID). v3+ names several members, each by member id and/or group instance id (an
//   admin removes static members by instance id alone); each gets its own error code.
// * An unknown group or member: UNKNOWN_MEMBER_ID; a static instance under another member id:
//   FENCED_INSTANCE_ID.
// Version notes:
// * v4: flexible. v3+: batched members, per-member errors. v0-2: one member id, its error at the top.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as LeaveGroup from '../../protocol/messages/13-leave-group.gen.js'
import { defineHandler } from './common/handler.js'

export const leaveGroupHandler = defineHandler<LeaveGroup.LeaveGroupRequest, LeaveGroup.LeaveGroupResponse>({
  api: LeaveGroup.LeaveGroupApi,
  minVersion: 0,
  maxVersion: 4,
  decodeRequest: LeaveGroup.decodeLeaveGroupRequest,
  encodeResponse: LeaveGroup.encodeLeaveGroupResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) {
      return LeaveGroup.createLeaveGroupResponse({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED })
    }
    const batched = ctx.apiVersion >= 3
    const leaving = batched ? req.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId })) : [{ memberId: req.memberId, groupInstanceId: null }]
    let result
    try {
      const coordinator = await ctx.groups.coordinator()
      result = await coordinator.leaveGroup(req.groupId, leaving)
    } catch {
      return LeaveGroup.createLeaveGroupResponse({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE })
    }
    if (!batched) {
      return LeaveGroup.createLeaveGroupResponse({ errorCode: result.errorCode !== ErrorCode.NONE ? result.errorCode : (result.members[0]?.errorCode ?? ErrorCode.NONE) })
    }
    return LeaveGroup.createLeaveGroupResponse({
      errorCode: result.errorCode,
      members: result.members.map((m) => LeaveGroup.createMemberResponse({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, errorCode: m.errorCode })),
    })
  },
})
