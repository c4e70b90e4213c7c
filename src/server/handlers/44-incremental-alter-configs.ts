// IncrementalAlterConfigs: v0-1
//
// Behavior:
// * Each op changes one key of the resource's current override set; keys not named keep their values.
//   SET(0) sets a value, DELETE(1) removes the override (the value is ignored), APPEND(2) adds list
//   items that are not there yet, SUBTRACT(3) removes list items. APPEND/SUBTRACT start from the
//   override, else from the config's own default (Kafka), and are only allowed on LIST configs, else
//   INVALID_CONFIG "Can't APPEND to key x because its type is not LIST.".
// * A null value for any op but DELETE -> INVALID_REQUEST "Null value not supported for : x"; a key named
//   twice -> INVALID_REQUEST; an unknown op -> INVALID_REQUEST; a resource named twice -> INVALID_REQUEST.
// * The merged set then goes through the same path as AlterConfigs: TOPIC -> validated (INVALID_CONFIG),
//   stored and pushed to the partitions; BROKER '' / this broker's id -> dynamic layer with Kafka's rules
//   (INVALID_REQUEST "Cannot update these configs dynamically: ..."); GROUP -> Kafka's GroupConfig rules
//   (unknown name, bad value, outside the broker's group.*.min/max bounds, session <= heartbeat:
//   INVALID_CONFIG; '' -> INVALID_REQUEST), stored at /config/groups/<group> and applied on every broker
//   (config/group-configs.ts, broker/group-configs.ts). validateOnly changes nothing.
// * Other resource types -> INVALID_REQUEST.
// * Authorization (Kafka's): AlterConfigs on the topic (else TOPIC_AUTHORIZATION_FAILED) or on the
//   cluster for brokers (else CLUSTER_AUTHORIZATION_FAILED), on the group for groups (else
//   GROUP_AUTHORIZATION_FAILED), per resource.
// Version notes:
// * v1: flexible. No differences in content.
// Not implemented:
// * BROKER_LOGGER (log4j levels): Skein has one pino logger, not log4j loggers.
import { AclOperation } from '../../domain/acl.js'
import { brokerConfigDef, formatValue, groupConfigDef, topicConfigDef, type ConfigDef } from '../../config/index.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as IncrementalAlterConfigs from '../../protocol/messages/44-incremental-alter-configs.gen.js'
import { apiError, duplicatesOf, type ApiError } from './common/api-errors.js'
import { brokerScope, ConfigResourceType, configResourceDenied } from './common/config-resources.js'
import type { RequestContext } from './common/context.js'
import { defineHandler } from './common/handler.js'

/** AlterConfigOp.OpType ids. */
const OpType = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const
const OP_NAMES = ['SET', 'DELETE', 'APPEND', 'SUBTRACT']

export const incrementalAlterConfigsHandler = defineHandler<IncrementalAlterConfigs.IncrementalAlterConfigsRequest, IncrementalAlterConfigs.IncrementalAlterConfigsResponse>({
  api: IncrementalAlterConfigs.IncrementalAlterConfigsApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: IncrementalAlterConfigs.decodeIncrementalAlterConfigsRequest,
  encodeResponse: IncrementalAlterConfigs.encodeIncrementalAlterConfigsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const dupResources = duplicatesOf(req.resources.map((r) => `${r.resourceType}\u0000${r.resourceName}`))
    const responses: IncrementalAlterConfigs.AlterConfigsResourceResponse[] = []
    for (const resource of req.resources) {
      const { resourceType, resourceName } = resource
      let outcome: ApiError = { errorCode: ErrorCode.NONE, errorMessage: null }
      const denied = configResourceDenied(ctx.acl, ctx.connection, AclOperation.ALTER_CONFIGS, resourceType, resourceName)
      if (denied !== undefined) {
        responses.push(IncrementalAlterConfigs.createAlterConfigsResourceResponse({ ...denied, resourceType, resourceName }))
        continue
      }
      try {
        if (dupResources.has(`${resourceType}\u0000${resourceName}`)) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Duplicate resource.')
        checkOps(resource.configs)
        await alterResource(ctx, resource, req.validateOnly)
      } catch (err) {
        outcome = apiError(err, ctx.log, 'IncrementalAlterConfigs')
      }
      responses.push(IncrementalAlterConfigs.createAlterConfigsResourceResponse({ ...outcome, resourceType, resourceName }))
    }
    return IncrementalAlterConfigs.createIncrementalAlterConfigsResponse({ responses })
  },
})

/** The request-level checks Kafka makes before looking at the resource itself. */
function checkOps(ops: IncrementalAlterConfigs.AlterableConfig[]): void {
  if (duplicatesOf(ops.map((c) => c.name)).size > 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys')
  const unknownOps = ops.filter((c) => OP_NAMES[c.configOperation] === undefined)
  if (unknownOps.length > 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unknown alter config operation type ${unknownOps[0]!.configOperation} for key ${unknownOps[0]!.name}`)
  const nulls = ops.filter((c) => c.configOperation !== OpType.DELETE && c.value === null).map((c) => c.name)
  if (nulls.length > 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `Null value not supported for : ${nulls.join(', ')}`)
}

async function alterResource(ctx: RequestContext, resource: IncrementalAlterConfigs.AlterConfigsResource, validateOnly: boolean): Promise<void> {
  const { resourceType, resourceName } = resource
  if (resourceType === ConfigResourceType.TOPIC) {
    const topic = ctx.metadata.topic(resourceName)
    if (topic === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic ${resourceName} does not exist.`)
    const merged = applyOps(new Map(Object.entries(topic.configs)), resource.configs, topicConfigDef)
    await ctx.topics.setConfigs(resourceName, Object.fromEntries(merged), validateOnly)
  } else if (resourceType === ConfigResourceType.BROKER) {
    const scope = brokerScope(resourceName, ctx.metadata.nodeId)
    const current = ctx.configs.dynamicBrokerConfigs(scope)
    const merged = applyOps(new Map(Object.entries(current)), resource.configs, brokerConfigDef)
    await ctx.configs.replaceDynamicBrokerConfigs(scope, merged, validateOnly)
  } else if (resourceType === ConfigResourceType.GROUP) {
    const merged = applyOps(new Map(Object.entries(ctx.groupConfigs.groupConfigs(resourceName))), resource.configs, groupConfigDef)
    await ctx.groupConfigs.replaceGroupConfigs(resourceName, merged, validateOnly)
  } else {
    throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unsupported resource type: ${resourceType}`)
  }
}

/**
 * The override set after the ops. Unknown keys are kept as given so that the validation that follows
 * reports them with the resource's own error (INVALID_CONFIG for topics, INVALID_REQUEST for brokers).
 */
function applyOps(current: Map<string, string>, ops: IncrementalAlterConfigs.AlterableConfig[], defOf: (name: string) => ConfigDef | undefined): Map<string, string> {
  const next = new Map(current)
  for (const op of ops) {
    switch (op.configOperation) {
      case OpType.SET:
        next.set(op.name, op.value!)
        break
      case OpType.DELETE:
        next.delete(op.name)
        break
      case OpType.APPEND:
      case OpType.SUBTRACT: {
        const def = defOf(op.name)
        if (def === undefined || def.type !== 'list') {
          throw new KafkaError(ErrorCode.INVALID_CONFIG, `Can't ${OP_NAMES[op.configOperation]} to key ${op.name} because its type is not LIST.`)
        }
        const base = next.get(op.name) ?? formatValue(def, def.default) ?? ''
        const items = splitList(base)
        const given = splitList(op.value!)
        const result = op.configOperation === OpType.APPEND ? [...items, ...given.filter((v) => !items.includes(v))] : items.filter((v) => !given.includes(v))
        next.set(op.name, result.join(','))
        break
      }
    }
  }
  return next
}

function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}
