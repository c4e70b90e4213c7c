// AlterUserScramCredentials: v0
//
// Behavior:
// * Upsertions carry the client's salt and salted password; the broker stores the salt, stored key and
//   server key derived from them (Kafka's format), never the salted password. Deletions remove one
//   mechanism of a user. One result per user; the errors of broker/scram-credentials.ts. Needs Alter on the
//   cluster (CLUSTER_AUTHORIZATION_FAILED for every user).
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as Alter from '../../protocol/messages/51-alter-user-scram-credentials.gen.js'
import { defineHandler } from './common/handler.js'

export const alterUserScramCredentialsHandler = defineHandler<Alter.AlterUserScramCredentialsRequest, Alter.AlterUserScramCredentialsResponse>({
  api: Alter.AlterUserScramCredentialsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Alter.decodeAlterUserScramCredentialsRequest,
  encodeResponse: Alter.encodeAlterUserScramCredentialsResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)) {
      const users = [...new Set([...req.deletions, ...req.upsertions].map((a) => a.name))]
      return Alter.createAlterUserScramCredentialsResponse({ results: users.map((user) => ({ user, errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, errorMessage: 'Cluster authorization failed.' })) })
    }
    return Alter.createAlterUserScramCredentialsResponse({ results: await ctx.scram.alter(req) })
  },
})
