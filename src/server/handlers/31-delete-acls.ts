// DeleteAcls: v0-3
//
// Behavior:
// * Each filter removes the ACLs it matches (ANY codes and null names match anything; MATCH patterns
//   match what applies to the named resource) and lists them. Needs Alter on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED per filter); without an authorizer, SECURITY_DISABLED.
// Version notes:
// * v0: no pattern type (LITERAL). v1+: patternTypeFilter. v2+: flexible.
import { AclOperation, CLUSTER_NAME, PatternType, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DeleteAcls from '../../protocol/messages/31-delete-acls.gen.js'
import { defineHandler } from './common/handler.js'

export const deleteAclsHandler = defineHandler<DeleteAcls.DeleteAclsRequest, DeleteAcls.DeleteAclsResponse>({
  api: DeleteAcls.DeleteAclsApi,
  minVersion: 0,
  maxVersion: 3,
  decodeRequest: DeleteAcls.decodeDeleteAclsRequest,
  encodeResponse: DeleteAcls.encodeDeleteAclsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const all = (errorCode: number, errorMessage: string): DeleteAcls.DeleteAclsResponse =>
      DeleteAcls.createDeleteAclsResponse({ filterResults: req.filters.map(() => DeleteAcls.createDeleteAclsFilterResult({ errorCode, errorMessage, matchingAcls: [] })) })
    if (!ctx.acl.enabled) return all(ErrorCode.SECURITY_DISABLED, 'No Authorizer is configured on the broker')
    if (!ctx.acl.authorize(ctx.connection, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)) return all(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 'Cluster authorization failed.')
    const matched = await ctx.acl.delete(
      req.filters.map((f) => ({
        resourceType: f.resourceTypeFilter,
        resourceName: f.resourceNameFilter,
        patternType: ctx.apiVersion === 0 ? PatternType.LITERAL : f.patternTypeFilter,
        principal: f.principalFilter,
        host: f.hostFilter,
        operation: f.operation,
        permission: f.permissionType,
      })),
    )
    return DeleteAcls.createDeleteAclsResponse({
      filterResults: matched.map((bindings) =>
        DeleteAcls.createDeleteAclsFilterResult({
          errorMessage: null,
          matchingAcls: bindings.map((b) =>
            DeleteAcls.createDeleteAclsMatchingAcl({ errorMessage: null, resourceType: b.resourceType, resourceName: b.resourceName, patternType: b.patternType, principal: b.principal, host: b.host, operation: b.operation, permissionType: b.permission }),
          ),
        }),
      ),
    })
  },
})
