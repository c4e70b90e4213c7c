// DescribeAcls: v0-3
//
// Behavior:
// * The ACLs matching the filter, grouped by resource pattern. Needs Describe on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED); without an authorizer, SECURITY_DISABLED. A filter with an UNKNOWN
//   code is INVALID_REQUEST.
// Version notes:
// * v0: no pattern type (LITERAL implied). v1+: pattern type filter (ANY, MATCH, LITERAL, PREFIXED). v2+: flexible.
import { AclOperation, AclPermission, CLUSTER_NAME, PatternType, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DescribeAcls from '../../protocol/messages/29-describe-acls.gen.js'
import { defineHandler } from './common/handler.js'

export const describeAclsHandler = defineHandler<DescribeAcls.DescribeAclsRequest, DescribeAcls.DescribeAclsResponse>({
  api: DescribeAcls.DescribeAclsApi,
  minVersion: 0,
  maxVersion: 3,
  decodeRequest: DescribeAcls.decodeDescribeAclsRequest,
  encodeResponse: DescribeAcls.encodeDescribeAclsResponse,
  authorizes: true,
  handle(req, ctx) {
    const fail = (errorCode: number, errorMessage: string): DescribeAcls.DescribeAclsResponse => DescribeAcls.createDescribeAclsResponse({ errorCode, errorMessage, resources: [] })
    if (!ctx.acl.enabled) return fail(ErrorCode.SECURITY_DISABLED, 'No Authorizer is configured on the broker')
    if (!ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)) return fail(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 'Cluster authorization failed.')
    const patternType = ctx.apiVersion === 0 ? PatternType.LITERAL : req.patternTypeFilter
    if (req.resourceTypeFilter === ResourceType.UNKNOWN || patternType === PatternType.UNKNOWN || req.operation === AclOperation.UNKNOWN || req.permissionType === AclPermission.UNKNOWN) {
      return fail(ErrorCode.INVALID_REQUEST, 'The filter has an UNKNOWN value')
    }
    const matched = ctx.acl.describe({ resourceType: req.resourceTypeFilter, resourceName: req.resourceNameFilter, patternType, principal: req.principalFilter, host: req.hostFilter, operation: req.operation, permission: req.permissionType })
    const resources = new Map<string, DescribeAcls.DescribeAclsResource>()
    for (const b of matched) {
      const key = `${b.resourceType}/${b.patternType}/${b.resourceName}`
      let r = resources.get(key)
      if (r === undefined) {
        r = DescribeAcls.createDescribeAclsResource({ resourceType: b.resourceType, resourceName: b.resourceName, patternType: b.patternType, acls: [] })
        resources.set(key, r)
      }
      r.acls.push(DescribeAcls.createAclDescription({ principal: b.principal, host: b.host, operation: b.operation, permissionType: b.permission }))
    }
    return DescribeAcls.createDescribeAclsResponse({ errorMessage: null, resources: [...resources.values()] })
  },
})
