// SyncGroup: v0-4
//
// Behavior:
// * After a completed join, every member asks for its assignment. The leader's request carries them
//   all: they are written to __consumer_offsets (GroupMetadata record) and, once written, every waiting
//   member gets its own and the group is Stable. A follower asking before the leader waits for that.
// * During a new rebalance: REBALANCE_IN_PROGRESS; stale generation: ILLEGAL_GENERATION; unknown
//   member: UNKNOWN_MEMBER_ID; static instance under another id: FENCED_INSTANCE_ID.
// Version notes:
// * v4: flexible. v3+: group instance id. v1+: throttle time.
// Not implemented:
// * v5+ (protocol type and name checks): not advertised.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as SyncGroup from '../../protocol/messages/14-sync-group.gen.js'
import { defineHandler } from './common/handler.js'

export const syncGroupHandler = defineHandler<SyncGroup.SyncGroupRequest, SyncGroup.SyncGroupResponse>({
  api: SyncGroup.SyncGroupApi,
  minVersion: 0,
  maxVersion: 4,
  decodeRequest: SyncGroup.decodeSyncGroupRequest,
  encodeResponse: SyncGroup.encodeSyncGroupResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) {
      return SyncGroup.createSyncGroupResponse({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, assignment: Buffer.alloc(0) })
    }
    let result
    try {
      const coordinator = await ctx.groups.coordinator()
      result = await coordinator.syncGroup({
        groupId: req.groupId,
        generationId: req.generationId,
        memberId: req.memberId,
        groupInstanceId: ctx.apiVersion >= 3 ? req.groupInstanceId : null,
        protocolType: null,
        protocolName: null,
        assignments: req.assignments.map((a) => ({ memberId: a.memberId, assignment: a.assignment })),
      })
    } catch {
      return SyncGroup.createSyncGroupResponse({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, assignment: Buffer.alloc(0) })
    }
    return SyncGroup.createSyncGroupResponse({ errorCode: result.errorCode, assignment: result.assignment })
  },
})
