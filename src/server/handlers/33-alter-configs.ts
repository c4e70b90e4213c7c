// AlterConfigs: v0-2
//
// Behavior:
// * Non-incremental (Kafka semantics): the configs sent for a resource REPLACE its whole override set;
//   keys left out return to their defaults, null values mean "not set".
// * TOPIC: validated like CreateTopics configs (unknown key or bad value -> INVALID_CONFIG with the
//   reason); unknown topic -> UNKNOWN_TOPIC_OR_PARTITION. Stored in the topic store and pushed to every
//   partition of the topic.
// * BROKER: resource name '' alters the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG), this broker's
//   id alters this broker (DYNAMIC_BROKER_CONFIG); another id or a non-number -> INVALID_REQUEST.
//   Read-only configs, unknown keys, per-broker configs at the cluster level and bad values ->
//   INVALID_REQUEST (Kafka turns broker ConfigExceptions into InvalidRequestException), message
//   "Cannot update these configs dynamically: ...". Persisted in cluster-metadata.json, then applied:
//   new broker defaults reach every partition at once.
// * validateOnly checks everything and changes nothing.
// * A resource named twice in one request -> INVALID_REQUEST for it; a key named twice in one resource
//   -> INVALID_REQUEST ("Error due to duplicate config keys").
// * Other resource types (BROKER_LOGGER, GROUP, CLIENT_METRICS, ...) -> INVALID_REQUEST.
// Version notes:
// * v2: flexible. No differences in content between versions.
// Not implemented:
// * listeners, advertised.listeners, listener.security.protocol.map are dynamic in Kafka, but Skein binds
//   its sockets only at startup, so changing them is refused (INVALID_REQUEST) rather than pretended.
//
// This file also holds what AlterConfigs and IncrementalAlterConfigs (and DescribeConfigs) share: the
// resource types, the broker-resource name rule, the dynamic broker config change and error mapping.
import { brokerConfigDef, formatValue, parseValue, type ConfigValue } from '../../config/index.js'
import { ErrorCode, errorName, KafkaError } from '../../domain/errors.js'
import type { Logger } from '../../observability/logger.js'
import * as AlterConfigs from '../../protocol/messages/33-alter-configs.gen.js'
import type { Broker } from '../broker.js'
import { defineHandler } from '../registry.js'

/** Kafka's ConfigResource.Type ids. */
export const ConfigResourceType = {
  UNKNOWN: 0,
  TOPIC: 2,
  BROKER: 4,
  BROKER_LOGGER: 8,
  CLIENT_METRICS: 16,
  GROUP: 32,
} as const

/** Which dynamic broker layer a BROKER resource name addresses. */
export type BrokerScope = 'perBroker' | 'clusterDefault'

/** Broker configs Kafka can change at runtime but Skein cannot (the sockets are bound once). */
const STARTUP_ONLY = new Set(['listeners', 'advertised.listeners', 'listener.security.protocol.map'])

/** The error code and message of a failure, as a response carries them. */
export interface ApiError {
  errorCode: ErrorCode
  errorMessage: string | null
}

/**
 * KafkaError -> its code and message (without the code-name prefix KafkaError adds). Anything else is
 * a bug: logged, and answered UNKNOWN_SERVER_ERROR without a message, as Kafka does, so that internals
 * do not leak to clients.
 */
export function apiError(err: unknown, log: Logger, what: string): ApiError {
  if (err instanceof KafkaError) return { errorCode: err.code, errorMessage: stripCodeName(err.code, err.message) }
  log.error({ err }, `${what} failed`)
  return { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: null }
}

/** A shard outcome's message without the code-name prefix; null when only the name is left. */
export function stripCodeName(code: number, message: string): string | null {
  const name = errorName(code)
  if (message === name) return null
  return message.startsWith(`${name}: `) ? message.slice(name.length + 2) : message
}

/**
 * Kafka's rule for BROKER resource names: '' is the cluster default, otherwise it must be this broker's
 * id written as an integer.
 */
export function brokerScope(resourceName: string, nodeId: number): BrokerScope {
  if (resourceName === '') return 'clusterDefault'
  if (!/^[+-]?\d+$/.test(resourceName.trim())) throw new KafkaError(ErrorCode.INVALID_REQUEST, `Broker id must be an integer, but it is: ${resourceName}`)
  if (Number(resourceName) !== nodeId) {
    throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unexpected broker id, expected ${nodeId} or empty string, but received ${resourceName}`)
  }
  return 'perBroker'
}

/** Names that occur more than once. */
export function duplicatesOf(names: Iterable<string>): Set<string> {
  const seen = new Set<string>()
  const dups = new Set<string>()
  for (const n of names) {
    if (seen.has(n)) dups.add(n)
    seen.add(n)
  }
  return dups
}

/**
 * Replaces one dynamic broker layer (per-broker or cluster default) with `values` (config name -> string
 * value), checking every key against Kafka's dynamic update rules and every value against its type.
 * Unless validateOnly, the result is persisted first and then applied, so a crash in between leaves the
 * persisted state, which the next start applies.
 */
export async function replaceBrokerLayer(broker: Broker, scope: BrokerScope, values: ReadonlyMap<string, string>, validateOnly: boolean): Promise<void> {
  const notDynamic: string[] = []
  const perBrokerOnly: string[] = []
  const parsed = new Map<string, ConfigValue>()
  const stored: Record<string, string> = {}
  for (const [name, raw] of values) {
    const def = brokerConfigDef(name)
    if (def === undefined || def.dynamic === 'read-only' || STARTUP_ONLY.has(def.name)) {
      notDynamic.push(name)
      continue
    }
    if (scope === 'clusterDefault' && def.dynamic === 'per-broker') {
      perBrokerOnly.push(name)
      continue
    }
    let value: ConfigValue
    try {
      value = parseValue(def, raw)
    } catch (err) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, stripCodeName(ErrorCode.INVALID_CONFIG, (err as Error).message) ?? `Invalid value for ${name}`)
    }
    parsed.set(def.name, value)
    stored[def.name] = formatValue(def, value) ?? ''
  }
  if (notDynamic.length > 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `Cannot update these configs dynamically: ${notDynamic.join(', ')}`)
  if (perBrokerOnly.length > 0) {
    throw new KafkaError(ErrorCode.INVALID_REQUEST, `Cannot update these configs at default cluster level, broker id must be specified: ${perBrokerOnly.join(', ')}`)
  }
  const current = broker.store.dynamicBrokerConfigs()
  const next = { ...current, [scope]: stored }
  let config
  try {
    config = broker.config.withDynamic({ perBroker: parseLayer(next.perBroker), clusterDefault: parseLayer(next.clusterDefault) })
  } catch (err) {
    // Cross-field rules of the whole configuration (e.g. listeners against the protocol map).
    if (err instanceof KafkaError) throw new KafkaError(ErrorCode.INVALID_REQUEST, stripCodeName(err.code, err.message) ?? 'Invalid broker configuration')
    throw err
  }
  if (validateOnly) return
  broker.store.setDynamicBrokerConfigs(next)
  await broker.applyBrokerConfig(config)
  broker.log.info({ scope, configs: stored }, 'dynamic broker configs changed')
}

/** A stored layer (canonical name -> string) parsed back into typed values. */
export function parseLayer(layer: Readonly<Record<string, string>>): Map<string, ConfigValue> {
  const out = new Map<string, ConfigValue>()
  for (const [name, raw] of Object.entries(layer)) {
    const def = brokerConfigDef(name)
    if (def !== undefined) out.set(def.name, parseValue(def, raw))
  }
  return out
}

export const alterConfigsHandler = defineHandler<AlterConfigs.AlterConfigsRequest, AlterConfigs.AlterConfigsResponse>({
  api: AlterConfigs.AlterConfigsApi,
  minVersion: 0,
  maxVersion: 2,
  decodeRequest: AlterConfigs.decodeAlterConfigsRequest,
  encodeResponse: AlterConfigs.encodeAlterConfigsResponse,
  async handle(req, ctx) {
    const { broker } = ctx
    const dupResources = duplicatesOf(req.resources.map((r) => `${r.resourceType}\u0000${r.resourceName}`))
    const responses: AlterConfigs.AlterConfigsResourceResponse[] = []
    for (const resource of req.resources) {
      const { resourceType, resourceName } = resource
      let outcome: ApiError = { errorCode: ErrorCode.NONE, errorMessage: null }
      try {
        if (dupResources.has(`${resourceType}\u0000${resourceName}`)) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Duplicate resource.')
        if (duplicatesOf(resource.configs.map((c) => c.name)).size > 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys')
        // Null values are "not set" in a replacing update (Kafka drops them).
        const values = new Map<string, string>()
        for (const c of resource.configs) if (c.value !== null) values.set(c.name, c.value)
        if (resourceType === ConfigResourceType.TOPIC) {
          await broker.topics.setConfigs(resourceName, Object.fromEntries(values), req.validateOnly)
        } else if (resourceType === ConfigResourceType.BROKER) {
          await replaceBrokerLayer(broker, brokerScope(resourceName, broker.nodeId), values, req.validateOnly)
        } else {
          throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unsupported resource type: ${resourceType}`)
        }
      } catch (err) {
        outcome = apiError(err, broker.log, 'AlterConfigs')
      }
      responses.push(AlterConfigs.createAlterConfigsResourceResponse({ ...outcome, resourceType, resourceName }))
    }
    return AlterConfigs.createAlterConfigsResponse({ responses })
  },
})
