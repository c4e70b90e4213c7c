// DescribeUserScramCredentials: v0
//
// Behavior:
// * Users null or empty: every user with a SCRAM credential; otherwise the named ones, each with its
//   mechanisms and iterations (never a salt or key). A named user without credentials: RESOURCE_NOT_FOUND;
//   a user named twice: DUPLICATE_RESOURCE. Needs Describe on the cluster (CLUSTER_AUTHORIZATION_FAILED).
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as Describe from '../../protocol/messages/50-describe-user-scram-credentials.gen.js'
import { defineHandler } from './common/handler.js'

export const describeUserScramCredentialsHandler = defineHandler<Describe.DescribeUserScramCredentialsRequest, Describe.DescribeUserScramCredentialsResponse>({
  api: Describe.DescribeUserScramCredentialsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Describe.decodeDescribeUserScramCredentialsRequest,
  encodeResponse: Describe.encodeDescribeUserScramCredentialsResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)) {
      return Describe.createDescribeUserScramCredentialsResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, errorMessage: 'Cluster authorization failed.', results: [] })
    }
    const results = await ctx.scram.describe(req.users === null ? null : req.users.map((u) => u.name))
    return Describe.createDescribeUserScramCredentialsResponse({ errorMessage: null, results })
  },
})
