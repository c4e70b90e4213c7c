// Heartbeat: v0-4
//
// Behavior:
// * Keeps a member's session alive (group.min/max.session.timeout.ms bound the timeout it joined with).
//   During a rebalance the answer is REBALANCE_IN_PROGRESS so the member rejoins; a stale generation
//   gets ILLEGAL_GENERATION, an unknown member UNKNOWN_MEMBER_ID, a static instance under another
//   member id FENCED_INSTANCE_ID.
// Version notes:
// * v4: flexible. v3+: group instance id. v1+: throttle time.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as Heartbeat from '../../protocol/messages/12-heartbeat.gen.js'
import { defineHandler } from './common/handler.js'

export const heartbeatHandler = defineHandler<Heartbeat.HeartbeatRequest, Heartbeat.HeartbeatResponse>({
  api: Heartbeat.HeartbeatApi,
  minVersion: 0,
  maxVersion: 4,
  decodeRequest: Heartbeat.decodeHeartbeatRequest,
  encodeResponse: Heartbeat.encodeHeartbeatResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) {
      return Heartbeat.createHeartbeatResponse({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED })
    }
    let errorCode: number
    try {
      const coordinator = await ctx.groups.coordinator()
      errorCode = await coordinator.heartbeat({ groupId: req.groupId, generationId: req.generationId, memberId: req.memberId, groupInstanceId: ctx.apiVersion >= 3 ? req.groupInstanceId : null })
    } catch {
      errorCode = ErrorCode.COORDINATOR_NOT_AVAILABLE
    }
    return Heartbeat.createHeartbeatResponse({ errorCode })
  },
})
