// AlterConfigs: v0-2
//
// Behavior:
// * Non-incremental (Kafka semantics): the configs sent for a resource REPLACE its whole override set;
//   keys left out return to their defaults, null values mean "not set".
// * TOPIC: validated like CreateTopics configs (unknown key or bad value -> INVALID_CONFIG with the
//   reason); unknown topic -> UNKNOWN_TOPIC_OR_PARTITION. Written to the metadata store (with a change
//   notification that every broker applies) and pushed to this broker's partitions of the topic.
// * BROKER: resource name '' alters the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG), this broker's
//   id alters this broker (DYNAMIC_BROKER_CONFIG); another id or a non-number -> INVALID_REQUEST.
//   Read-only configs, unknown keys, per-broker configs at the cluster level and bad values ->
//   INVALID_REQUEST (Kafka turns broker ConfigExceptions into InvalidRequestException), message
//   "Cannot update these configs dynamically: ...". Written to the metadata store, then applied: new
//   broker defaults reach every partition at once (other brokers apply a cluster-default change from its
//   notification).
// * validateOnly checks everything and changes nothing.
// * A resource named twice in one request -> INVALID_REQUEST for it; a key named twice in one resource
//   -> INVALID_REQUEST ("Error due to duplicate config keys").
// * GROUP: the configs sent replace the group's whole set, with IncrementalAlterConfigs' checks (Kafka's
//   GroupConfig: INVALID_CONFIG; '' -> INVALID_REQUEST).
// * Other resource types (BROKER_LOGGER, CLIENT_METRICS, ...) -> INVALID_REQUEST.
// * Authorization (Kafka's): AlterConfigs on the topic (else TOPIC_AUTHORIZATION_FAILED) or on the
//   cluster for brokers (else CLUSTER_AUTHORIZATION_FAILED), on the group for groups (else
//   GROUP_AUTHORIZATION_FAILED), per resource.
// Version notes:
// * v2: flexible. No differences in content between versions.
// Not implemented:
// * listeners, advertised.listeners, listener.security.protocol.map are dynamic in Kafka, but Skein binds
//   its sockets only at startup, so changing them is refused (INVALID_REQUEST) rather than pretended.
import { AclOperation } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as AlterConfigs from '../../protocol/messages/33-alter-configs.gen.js'
import { apiError, duplicatesOf, type ApiError } from './common/api-errors.js'
import { brokerScope, ConfigResourceType, configResourceDenied } from './common/config-resources.js'
import { defineHandler } from './common/handler.js'

export const alterConfigsHandler = defineHandler<AlterConfigs.AlterConfigsRequest, AlterConfigs.AlterConfigsResponse>({
  api: AlterConfigs.AlterConfigsApi,
  minVersion: 0,
  maxVersion: 2,
  decodeRequest: AlterConfigs.decodeAlterConfigsRequest,
  encodeResponse: AlterConfigs.encodeAlterConfigsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const dupResources = duplicatesOf(req.resources.map((r) => `${r.resourceType}\u0000${r.resourceName}`))
    const responses: AlterConfigs.AlterConfigsResourceResponse[] = []
    for (const resource of req.resources) {
      const { resourceType, resourceName } = resource
      let outcome: ApiError = { errorCode: ErrorCode.NONE, errorMessage: null }
      const denied = configResourceDenied(ctx.acl, ctx.connection, AclOperation.ALTER_CONFIGS, resourceType, resourceName)
      if (denied !== undefined) {
        responses.push(AlterConfigs.createAlterConfigsResourceResponse({ ...denied, resourceType, resourceName }))
        continue
      }
      try {
        if (dupResources.has(`${resourceType}\u0000${resourceName}`)) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Duplicate resource.')
        if (duplicatesOf(resource.configs.map((c) => c.name)).size > 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys')
        // Null values are "not set" in a replacing update (Kafka drops them).
        const values = new Map<string, string>()
        for (const c of resource.configs) if (c.value !== null) values.set(c.name, c.value)
        if (resourceType === ConfigResourceType.TOPIC) {
          await ctx.topics.setConfigs(resourceName, Object.fromEntries(values), req.validateOnly)
        } else if (resourceType === ConfigResourceType.BROKER) {
          await ctx.configs.replaceDynamicBrokerConfigs(brokerScope(resourceName, ctx.metadata.nodeId), values, req.validateOnly)
        } else if (resourceType === ConfigResourceType.GROUP) {
          await ctx.groupConfigs.replaceGroupConfigs(resourceName, values, req.validateOnly)
        } else {
          throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unsupported resource type: ${resourceType}`)
        }
      } catch (err) {
        outcome = apiError(err, ctx.log, 'AlterConfigs')
      }
      responses.push(AlterConfigs.createAlterConfigsResourceResponse({ ...outcome, resourceType, resourceName }))
    }
    return AlterConfigs.createAlterConfigsResponse({ responses })
  },
})
