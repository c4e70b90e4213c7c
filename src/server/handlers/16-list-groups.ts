// ListGroups: v0-5
//
// Behavior:
// * Every group this broker coordinates (all of them: it leads every __consumer_offsets partition):
//   classic groups, including those that only hold committed offsets (state Empty, protocol type ''),
//   KIP-848 consumer groups (protocol type 'consumer', states Empty/Assigning/Reconciling/Stable) and
//   KIP-932 share groups (protocol type 'share', states Empty/Stable).
//   While a partition is still loading the groups known so far come with COORDINATOR_LOAD_IN_PROGRESS.
// * v4+: statesFilter keeps the groups in those states (case-insensitive), empty = all.
// * v5+: typesFilter keeps the groups of those types ('classic', 'consumer', 'share'; case-insensitive, as
//   Kafka's GroupType.parse), empty = all; each group says its type.
// * Authorization: Describe on the cluster lists every group; otherwise only the groups the principal
//   may Describe are listed (Kafka's ListGroups), with no error.
// Version notes:
// * v5: types filter and group type. v4: states filter and state in the answer. v3+: flexible. v1+:
//   throttle time.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as ListGroups from '../../protocol/messages/16-list-groups.gen.js'
import { defineHandler } from './common/handler.js'

export const listGroupsHandler = defineHandler<ListGroups.ListGroupsRequest, ListGroups.ListGroupsResponse>({
  api: ListGroups.ListGroupsApi,
  minVersion: 0,
  maxVersion: 5,
  decodeRequest: ListGroups.decodeListGroupsRequest,
  encodeResponse: ListGroups.encodeListGroupsResponse,
  authorizes: true,
  async handle(req, ctx) {
    // Listing must not create __consumer_offsets: without it there are no groups.
    const coordinator = ctx.groups.current
    if (coordinator === undefined) return ListGroups.createListGroupsResponse({ errorCode: ErrorCode.NONE, groups: [] })
    const listed = await coordinator.listGroups(ctx.apiVersion >= 4 ? req.statesFilter : [])
    const everyGroup = ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)
    const types = new Set((ctx.apiVersion >= 5 ? req.typesFilter : []).map((t) => t.toLowerCase()))
    return ListGroups.createListGroupsResponse({
      errorCode: listed.errorCode,
      groups: listed.groups
        .filter((g) => types.size === 0 || types.has(g.groupType))
        .filter((g) => everyGroup || ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId))
        .sort((a, b) => (a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0))
        .map((g) => ListGroups.createListedGroup({ groupId: g.groupId, protocolType: g.protocolType, groupState: ctx.apiVersion >= 4 ? g.state : '', groupType: g.groupType })),
    })
  },
})
