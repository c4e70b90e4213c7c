// Broker and topic configuration: schema tables, .properties parsing, validation, DescribeConfigs
// resolution and the storage LogConfig. (Client-side code imports properties.ts / config-def.ts
// directly, never this barrel: it pulls in the broker config.)

export {
  ConfigException, ConfigSource, DescribeConfigType, LONG_MAX, LONG_MIN, formatValue, parseValue,
  type BrokerValueLayers, type ConfigDef, type ConfigLayer, type ConfigType, type ConfigValue, type DynamicMode, type Validator,
} from './config-def.js'
export { BROKER_CONFIGS, brokerConfigDef, brokerConfigNames, MIN_SEGMENT_BYTES, MIN_SEGMENT_INDEX_BYTES, type BrokerConfigDef } from './broker-configs.js'
export {
  TOPIC_CONFIGS, topicConfigDef, validateTopicConfigs, resolveTopicConfigs, brokerDefaultFor,
  type TopicConfigDef, type TopicConfigOverrides, type ResolvedConfig, type ConfigSynonym, type Synonym,
} from './topic-configs.js'
export {
  buildLogConfig, checkLogConfig, mergeLogConfig, logConfigOverrides, DEFAULT_LOG_CONFIG, LOG_CONFIG_FIELDS, STORAGE_DEFAULTS,
  type CleanupPolicy, type CompressionTypeConfig, type LogConfig, type TimestampType,
} from './log-config.js'
export { BrokerConfig, listenerPrefixedDef, loadBrokerConfig, validateBrokerProperties, type DynamicBrokerConfigs, type LoadBrokerConfigOptions } from './broker-config.js'
export { parseProperties, formatProperties, PropertiesSyntaxError } from './properties.js'
export { parseListener, parseListeners, formatListener, parseSecurityProtocolMap, type Listener } from './listeners.js'
export { renderConfigReference } from './reference.js'
export {
  GROUP_CONFIGS, groupConfigDef, groupConfigNames, validateGroupConfigs, parseGroupConfigs, effectiveGroupConfig, resolveGroupConfigs, parseIsoDuration,
  type GroupConfigBroker, type GroupConfigDef, type GroupConfigOverrides,
} from './group-configs.js'
