// DeleteGroups: v1-2
//
// Behavior:
// * Deletes empty groups: tombstones for every committed offset and for the group metadata are written
//   to __consumer_offsets, and the group is gone. A group with members: NON_EMPTY_GROUP; one that does
//   not exist: GROUP_ID_NOT_FOUND.
// * Authorization: Delete on each group, else GROUP_AUTHORIZATION_FAILED for that group (Kafka).
// Version notes:
// * v2: flexible.
// Not implemented:
// * v0: not advertised (no client of the four sends it).
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DeleteGroups from '../../protocol/messages/42-delete-groups.gen.js'
import { defineHandler } from './common/handler.js'

export const deleteGroupsHandler = defineHandler<DeleteGroups.DeleteGroupsRequest, DeleteGroups.DeleteGroupsResponse>({
  api: DeleteGroups.DeleteGroupsApi,
  minVersion: 1,
  maxVersion: 2,
  decodeRequest: DeleteGroups.decodeDeleteGroupsRequest,
  encodeResponse: DeleteGroups.encodeDeleteGroupsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const allowed = req.groupsNames.filter((g) => ctx.acl.authorize(ctx.connection, AclOperation.DELETE, ResourceType.GROUP, g))
    const denied = req.groupsNames.filter((g) => !allowed.includes(g)).map((groupId) => ({ groupId, errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED }))
    let results
    try {
      const coordinator = await ctx.groups.coordinator()
      results = allowed.length === 0 ? [] : await coordinator.deleteGroups(allowed)
    } catch {
      results = allowed.map((groupId) => ({ groupId, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }))
    }
    return DeleteGroups.createDeleteGroupsResponse({ results: [...results, ...denied].map((r) => DeleteGroups.createDeletableGroupResult({ groupId: r.groupId, errorCode: r.errorCode })) })
  },
})
