// DescribeUserScramCredentials: v0
//
// Behavior:
// * Users null or empty: every user with a SCRAM credential; otherwise the named ones, each with its
//   mechanisms and iterations (never a salt or key). A named user without credentials: RESOURCE_NOT_FOUND;
//   a user named twice: DUPLICATE_RESOURCE.
import * as Describe from '../../protocol/messages/50-describe-user-scram-credentials.gen.js'
import { defineHandler } from './common/handler.js'

export const describeUserScramCredentialsHandler = defineHandler<Describe.DescribeUserScramCredentialsRequest, Describe.DescribeUserScramCredentialsResponse>({
  api: Describe.DescribeUserScramCredentialsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Describe.decodeDescribeUserScramCredentialsRequest,
  encodeResponse: Describe.encodeDescribeUserScramCredentialsResponse,
  async handle(req, ctx) {
    const results = await ctx.scram.describe(req.users === null ? null : req.users.map((u) => u.name))
    return Describe.createDescribeUserScramCredentialsResponse({ errorMessage: null, results })
  },
})
