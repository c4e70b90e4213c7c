// DeleteGroups: v1-2
//
// Behavior:
// * Deletes empty groups: tombstones for every committed offset and for the group metadata are written
//   to __consumer_offsets, and the group is gone. A group with members: NON_EMPTY_GROUP; one that does
//   not exist: GROUP_ID_NOT_FOUND.
// * Authorization: Delete on each group, else GROUP_AUTHORIZATION_FAILED for that group (Kafka).
// * Answers in the request's order, one per id named; a group named twice is deleted once.
// Bounds (docs/broker.md, "Requests are bounded"): at most request.max.list.elements ids (the decoder refuses
// more); they are checked, deleted and answered in ~10 ms slices of main-thread time.
// Version notes:
// * v2: flexible.
// Not implemented:
// * v0: not advertised (no client of the four sends it).
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DeleteGroups from '../../protocol/messages/42-delete-groups.gen.js'
import { AbandonedWorkError, inTimedChunks } from '../../domain/main-thread-slices.js'
import { defineHandler, requestAbandoned, requestSlices } from './common/handler.js'

export const deleteGroupsHandler = defineHandler<DeleteGroups.DeleteGroupsRequest, DeleteGroups.DeleteGroupsResponse>({
  api: DeleteGroups.DeleteGroupsApi,
  minVersion: 1,
  maxVersion: 2,
  decodeRequest: DeleteGroups.decodeDeleteGroupsRequest,
  encodeResponse: DeleteGroups.encodeDeleteGroupsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const slices = requestSlices(ctx)
    // One pass over the ids (a list of 100,000 is checked in slices, never compared with itself).
    const isAllowed = await slices.map(req.groupsNames, (g) => ctx.acl.authorize(ctx.connection, AclOperation.DELETE, ResourceType.GROUP, g))
    // Each group deleted once however often it is named, in chunks of ~10 ms of main-thread time.
    const unique = [...new Set(req.groupsNames.filter((_, i) => isAllowed[i]))]
    const outcome = new Map<string, number>()
    try {
      const coordinator = await ctx.groups.coordinator()
      const results = await inTimedChunks(unique, (chunk) => coordinator.deleteGroups([...chunk]), requestAbandoned(ctx))
      for (const r of results) outcome.set(r.groupId, r.errorCode)
    } catch (err) {
      if (err instanceof AbandonedWorkError) throw err
      for (const groupId of unique) outcome.set(groupId, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    }
    return DeleteGroups.createDeleteGroupsResponse({
      results: await slices.map(req.groupsNames, (groupId, i) =>
        DeleteGroups.createDeletableGroupResult({ groupId, errorCode: isAllowed[i] ? outcome.get(groupId)! : ErrorCode.GROUP_AUTHORIZATION_FAILED }),
      ),
    })
  },
})
