// DescribeConfigs: v1-4
//
// Behavior:
// * TOPIC (2): every topic config with its effective value and source: the topic's own override
//   (DYNAMIC_TOPIC_CONFIG), else the source of its first synonym (see below), else DEFAULT_CONFIG. Invalid name -> INVALID_TOPIC_EXCEPTION; unknown
//   topic -> UNKNOWN_TOPIC_OR_PARTITION.
// * BROKER (4): this broker's id -> every broker config (value, source, read-only unless the config is
//   dynamic); '' -> only the configs set as dynamic cluster defaults (Kafka's answer for the default
//   resource); another id or a non-number -> INVALID_REQUEST.
// * BROKER_LOGGER (8): this broker's id -> one "root" logger with the level of Skein's pino logger
//   (source DYNAMIC_BROKER_LOGGER_CONFIG); '' or another id -> INVALID_REQUEST (Kafka).
// * GROUP (32): every group config (Kafka 4.1's GroupConfig, config/group-configs.ts) with its effective
//   value: the group's own setting (GROUP_CONFIG, 8), else its broker synonym's source (group.consumer.*,
//   group.share.*, group.streams.*: dynamic, static or DEFAULT_CONFIG); configs without a broker synonym
//   (share.auto.offset.reset, share.isolation.level) DEFAULT_CONFIG. Any group id, existing or not (Kafka);
//   '' -> INVALID_REQUEST "Group name must not be empty".
// * Any other resource type -> INVALID_REQUEST "Unsupported resource type".
// * configurationKeys null lists everything; otherwise only the named keys (unknown names are left out,
//   as Kafka does). Sensitive values (passwords) are null.
// * includeSynonyms: the synonyms in Kafka's order (config/config-synonyms.ts): a topic's own override,
//   then each broker synonym by source (dynamic per-broker, dynamic cluster default, static,
//   DEFAULT_CONFIG), from the first entry named like the config; configSource is the first entry's.
// * Authorization (Kafka's): DescribeConfigs on the topic (else TOPIC_AUTHORIZATION_FAILED) or on the
//   cluster for brokers and broker loggers (else CLUSTER_AUTHORIZATION_FAILED), on the group for groups
//   (else GROUP_AUTHORIZATION_FAILED), per resource.
// Version notes:
// * v1+: configSource and synonyms. v3+: configType and documentation (only when includeDocumentation).
//   v4: flexible.
// Not implemented:
// * v0 (isDefault instead of configSource): deprecated and removed by Kafka 4; no target client sends it.
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
import { AclOperation } from '../../domain/acl.js'
import { ConfigSource, DescribeConfigType, resolveTopicConfigs, validateTopicConfigs, type ResolvedConfig } from '../../config/index.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as DescribeConfigs from '../../protocol/messages/32-describe-configs.gen.js'
import { apiError } from './common/api-errors.js'
import { brokerScope, ConfigResourceType, configResourceDenied } from './common/config-resources.js'
import type { RequestContext } from './common/context.js'
import { defineHandler } from './common/handler.js'

interface DescribeOptions {
  includeSynonyms: boolean
  includeDocumentation: boolean
}

export const describeConfigsHandler = defineHandler<DescribeConfigs.DescribeConfigsRequest, DescribeConfigs.DescribeConfigsResponse>({
  api: DescribeConfigs.DescribeConfigsApi,
  minVersion: 1,
  maxVersion: 4,
  decodeRequest: DescribeConfigs.decodeDescribeConfigsRequest,
  encodeResponse: DescribeConfigs.encodeDescribeConfigsResponse,
  authorizes: true,
  handle(req, ctx) {
    const opts: DescribeOptions = {
      includeSynonyms: req.includeSynonyms,
      includeDocumentation: ctx.apiVersion >= 3 && req.includeDocumentation,
    }
    const results = req.resources.map((resource) => {
      const { resourceType, resourceName } = resource
      const denied = configResourceDenied(ctx.acl, ctx.connection, AclOperation.DESCRIBE_CONFIGS, resourceType, resourceName)
      if (denied !== undefined) return DescribeConfigs.createDescribeConfigsResult({ ...denied, resourceType, resourceName, configs: [] })
      try {
        const resolved = describeResource(ctx, resourceType, resourceName)
        const wanted = resource.configurationKeys === null ? null : new Set(resource.configurationKeys)
        const configs = resolved.filter((c) => wanted === null || wanted.has(c.name)).map((c) => toEntry(c, opts))
        return DescribeConfigs.createDescribeConfigsResult({ errorCode: ErrorCode.NONE, errorMessage: null, resourceType, resourceName, configs })
      } catch (err) {
        const { errorCode, errorMessage } = apiError(err, ctx.log, 'DescribeConfigs')
        return DescribeConfigs.createDescribeConfigsResult({ errorCode, errorMessage, resourceType, resourceName, configs: [] })
      }
    })
    return DescribeConfigs.createDescribeConfigsResponse({ results })
  },
})

function describeResource(ctx: RequestContext, resourceType: number, resourceName: string): ResolvedConfig[] {
  const config = ctx.configs.broker
  switch (resourceType) {
    case ConfigResourceType.TOPIC: {
      ctx.metadata.validateTopicName(resourceName)
      const topic = ctx.metadata.topic(resourceName)
      if (topic === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic ${resourceName} does not exist.`)
      return resolveTopicConfigs(config, validateTopicConfigs(topic.configs))
    }
    case ConfigResourceType.BROKER: {
      const all = config.describe()
      if (brokerScope(resourceName, ctx.metadata.nodeId) === 'perBroker') return all
      // The default resource shows what was set as the cluster default, with that layer's value.
      const layer = config.layers().find((l) => l.source === ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
      const out: ResolvedConfig[] = []
      for (const c of all) {
        if (layer === undefined || !layer.values.has(c.name)) continue
        const parsed = layer.values.get(c.name) ?? null
        const value = c.sensitive ? null : config.format(c.name, parsed)
        out.push({ ...c, parsed, value, source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, synonyms: [{ name: c.name, value, source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG }] })
      }
      return out
    }
    case ConfigResourceType.BROKER_LOGGER: {
      if (resourceName === '') throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Broker id must not be empty')
      brokerScope(resourceName, ctx.metadata.nodeId)
      const level = ctx.log.level.toUpperCase()
      return [{
        name: 'root', value: level, parsed: level, source: ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG, readOnly: false, sensitive: false, type: 'string',
        doc: "Level of Skein's logger (pino); set at startup with SKEIN_LOG_LEVEL.", synonyms: [],
      }]
    }
    case ConfigResourceType.GROUP:
      return ctx.groupConfigs.describe(resourceName)
    default:
      throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unsupported resource type: ${resourceType}`)
  }
}

function toEntry(c: ResolvedConfig, opts: DescribeOptions): DescribeConfigs.DescribeConfigsResourceResult {
  return DescribeConfigs.createDescribeConfigsResourceResult({
    name: c.name,
    value: c.sensitive ? null : c.value,
    readOnly: c.readOnly,
    configSource: c.source,
    isSensitive: c.sensitive,
    synonyms: opts.includeSynonyms ? c.synonyms.map((s) => DescribeConfigs.createDescribeConfigsSynonym({ name: s.name, value: c.sensitive ? null : s.value, source: s.source })) : [],
    configType: DescribeConfigType[c.type],
    documentation: opts.includeDocumentation ? c.doc : null,
  })
}
