// CreateAcls: v0-3
//
// Behavior:
// * One result per creation; an invalid binding (UNKNOWN/ANY codes, a principal without "Type:", a
//   cluster resource not named kafka-cluster) gets INVALID_REQUEST, the others are stored in the cluster
//   metadata (an ACL that exists already is kept once). Needs Alter on the cluster
//   (CLUSTER_AUTHORIZATION_FAILED for every creation); without an authorizer, SECURITY_DISABLED.
// Version notes:
// * v0: no pattern type (LITERAL). v1+: resourcePatternType. v2+: flexible.
import { AclOperation, CLUSTER_NAME, PatternType, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as CreateAcls from '../../protocol/messages/30-create-acls.gen.js'
import { defineHandler } from './common/handler.js'

export const createAclsHandler = defineHandler<CreateAcls.CreateAclsRequest, CreateAcls.CreateAclsResponse>({
  api: CreateAcls.CreateAclsApi,
  minVersion: 0,
  maxVersion: 3,
  decodeRequest: CreateAcls.decodeCreateAclsRequest,
  encodeResponse: CreateAcls.encodeCreateAclsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const all = (errorCode: number, errorMessage: string): CreateAcls.CreateAclsResponse =>
      CreateAcls.createCreateAclsResponse({ results: req.creations.map(() => CreateAcls.createAclCreationResult({ errorCode, errorMessage })) })
    if (!ctx.acl.enabled) return all(ErrorCode.SECURITY_DISABLED, 'No Authorizer is configured on the broker')
    if (!ctx.acl.authorize(ctx.connection, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)) return all(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 'Cluster authorization failed.')
    const outcomes = await ctx.acl.create(
      req.creations.map((c) => ({
        resourceType: c.resourceType,
        resourceName: c.resourceName,
        patternType: ctx.apiVersion === 0 ? PatternType.LITERAL : c.resourcePatternType,
        principal: c.principal,
        host: c.host,
        operation: c.operation,
        permission: c.permissionType,
      })),
    )
    return CreateAcls.createCreateAclsResponse({ results: outcomes.map((o) => CreateAcls.createAclCreationResult(o)) })
  },
})
