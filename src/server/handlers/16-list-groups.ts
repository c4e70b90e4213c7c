// ListGroups: v0-4
//
// Behavior:
// * Every group this broker coordinates (all of them: it leads every __consumer_offsets partition),
//   including groups that only hold committed offsets (state Empty, protocol type ''). While a
//   partition is still loading the groups known so far come with COORDINATOR_LOAD_IN_PROGRESS.
// * v4+: statesFilter keeps the groups in those states (case-insensitive), empty = all.
// Version notes:
// * v4: states filter and state in the answer. v3+: flexible. v1+: throttle time.
// Not implemented:
// * v5 (group types): not advertised; only classic groups exist.
import { ErrorCode } from '../../domain/errors.js'
import * as ListGroups from '../../protocol/messages/16-list-groups.gen.js'
import { defineHandler } from './common/handler.js'

export const listGroupsHandler = defineHandler<ListGroups.ListGroupsRequest, ListGroups.ListGroupsResponse>({
  api: ListGroups.ListGroupsApi,
  minVersion: 0,
  maxVersion: 4,
  decodeRequest: ListGroups.decodeListGroupsRequest,
  encodeResponse: ListGroups.encodeListGroupsResponse,
  async handle(req, ctx) {
    // Listing must not create __consumer_offsets: without it there are no groups.
    const coordinator = ctx.groups.current
    if (coordinator === undefined) return ListGroups.createListGroupsResponse({ errorCode: ErrorCode.NONE, groups: [] })
    const listed = await coordinator.listGroups(ctx.apiVersion >= 4 ? req.statesFilter : [])
    return ListGroups.createListGroupsResponse({
      errorCode: listed.errorCode,
      groups: listed.groups
        .sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0))
        .map((g) => ListGroups.createListedGroup({ groupId: g.groupId, protocolType: g.protocolType, groupState: ctx.apiVersion >= 4 ? g.state : '' })),
    })
  },
})
