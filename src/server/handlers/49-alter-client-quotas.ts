// AlterClientQuotas: v0-1
//
// Behavior:
// * Each entry names an entity (user, client-id or both; a null name is the default entity) and the
//   quota configs to set or remove (producer_byte_rate, consumer_byte_rate, request_percentage,
//   controller_mutation_rate). Each entry succeeds or fails on its own: INVALID_REQUEST for an empty,
//   repeated or unknown entity type, an ip entity, an unknown key or a value that is not a positive
//   number (a whole one for the byte rates). validateOnly checks without writing.
// * Changes are stored in the cluster metadata and apply on every broker without a restart.
// * Needs AlterConfigs on the cluster (CLUSTER_AUTHORIZATION_FAILED for every entry).
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as Alter from '../../protocol/messages/49-alter-client-quotas.gen.js'
import { defineHandler } from './common/handler.js'

export const alterClientQuotasHandler = defineHandler<Alter.AlterClientQuotasRequest, Alter.AlterClientQuotasResponse>({
  api: Alter.AlterClientQuotasApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: Alter.decodeAlterClientQuotasRequest,
  encodeResponse: Alter.encodeAlterClientQuotasResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)) {
      return Alter.createAlterClientQuotasResponse({
        entries: req.entries.map((e) => ({
          errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
          errorMessage: 'Cluster authorization failed.',
          entity: e.entity.map((c) => ({ entityType: c.entityType, entityName: c.entityName })),
        })),
      })
    }
    return Alter.createAlterClientQuotasResponse({ entries: await ctx.quotas.alter(req) })
  },
})
