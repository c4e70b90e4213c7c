// DescribeClientQuotas: v0-1
//
// Behavior:
// * The filter's components (entity type user or client-id; match exact name, default, or any
//   specified) select the quota entities, strictly (exactly those types) or not; each comes with its
//   quota values. A malformed filter fails the whole request: INVALID_REQUEST (empty or repeated entity
//   type, a match string where none belongs or none where one does, ip with user or client-id) or
//   UNSUPPORTED_VERSION (unknown entity or match type), with entries null, as Kafka answers.
// * Needs DescribeConfigs on the cluster (CLUSTER_AUTHORIZATION_FAILED).
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as Describe from '../../protocol/messages/48-describe-client-quotas.gen.js'
import { stripCodeName } from './common/api-errors.js'
import { defineHandler } from './common/handler.js'

export const describeClientQuotasHandler = defineHandler<Describe.DescribeClientQuotasRequest, Describe.DescribeClientQuotasResponse>({
  api: Describe.DescribeClientQuotasApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: Describe.decodeDescribeClientQuotasRequest,
  encodeResponse: Describe.encodeDescribeClientQuotasResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)) {
      return Describe.createDescribeClientQuotasResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, errorMessage: 'Cluster authorization failed.', entries: null })
    }
    try {
      return Describe.createDescribeClientQuotasResponse({ errorMessage: null, entries: await ctx.quotas.describe(req) })
    } catch (err) {
      if (!(err instanceof KafkaError)) throw err
      return Describe.createDescribeClientQuotasResponse({ errorCode: err.code, errorMessage: stripCodeName(err.code, err.message) ?? err.message, entries: null })
    }
  },
})
