// AlterUserScramCredentials: v0
//
// Behavior:
// * Upsertions carry the client's salt and salted password; the broker stores the salt, stored key and
//   server key derived from them (Kafka's format), never the salted password. Deletions remove one
//   mechanism of a user. One result per user; the errors of server/scram-credentials.ts.
import * as Alter from '../../protocol/messages/51-alter-user-scram-credentials.gen.js'
import { defineHandler } from './common/handler.js'

export const alterUserScramCredentialsHandler = defineHandler<Alter.AlterUserScramCredentialsRequest, Alter.AlterUserScramCredentialsResponse>({
  api: Alter.AlterUserScramCredentialsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Alter.decodeAlterUserScramCredentialsRequest,
  encodeResponse: Alter.encodeAlterUserScramCredentialsResponse,
  async handle(req, ctx) {
    return Alter.createAlterUserScramCredentialsResponse({ results: await ctx.scram.alter(req) })
  },
})
