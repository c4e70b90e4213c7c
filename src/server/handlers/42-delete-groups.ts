// DeleteGroups: v1-2
//
// Behavior:
// * Deletes empty groups: tombstones for every committed offset and for the group metadata are written
//   to __consumer_offsets, and the group is gone. A group with members: NON_EMPTY_GROUP; one that does
//   not exist: GROUP_ID_NOT_FOUND.
// Version notes:
// * v2: flexible.
// Not implemented:
// * v0: not advertised (no client of the four sends it).
import { ErrorCode } from '../../domain/errors.js'
import * as DeleteGroups from '../../protocol/messages/42-delete-groups.gen.js'
import { defineHandler } from './common/handler.js'

export const deleteGroupsHandler = defineHandler<DeleteGroups.DeleteGroupsRequest, DeleteGroups.DeleteGroupsResponse>({
  api: DeleteGroups.DeleteGroupsApi,
  minVersion: 1,
  maxVersion: 2,
  decodeRequest: DeleteGroups.decodeDeleteGroupsRequest,
  encodeResponse: DeleteGroups.encodeDeleteGroupsResponse,
  async handle(req, ctx) {
    let results
    try {
      const coordinator = await ctx.groups.coordinator()
      results = await coordinator.deleteGroups(req.groupsNames)
    } catch {
      results = req.groupsNames.map((groupId) => ({ groupId, errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE }))
    }
    return DeleteGroups.createDeleteGroupsResponse({ results: results.map((r) => DeleteGroups.createDeletableGroupResult({ groupId: r.groupId, errorCode: r.errorCode })) })
  },
})
