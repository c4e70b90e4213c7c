// Broker and topic configuration: schema tables, .properties parsing, validation, DescribeConfigs
// resolution and the storage LogConfig.

export {
  ConfigException, ConfigSource, DescribeConfigType, LONG_MAX, LONG_MIN, formatValue, parseValue,
  type BrokerValueLayers, type ConfigDef, type ConfigLayer, type ConfigType, type ConfigValue, type DynamicMode, type Validator,
} from './config-def.js'
export { BROKER_CONFIGS, brokerConfigDef, brokerConfigNames, type BrokerConfigDef } from './broker-configs.js'
export {
  TOPIC_CONFIGS, topicConfigDef, validateTopicConfigs, resolveTopicConfigs, brokerDefaultFor, buildLogConfig, logConfigOverrides,
  type TopicConfigDef, type TopicConfigOverrides, type ResolvedConfig, type ConfigSynonym, type Synonym,
} from './topic-configs.js'
export { BrokerConfig, loadBrokerConfig, validateBrokerProperties, type DynamicBrokerConfigs, type LoadBrokerConfigOptions } from './broker-config.js'
export { parseProperties, formatProperties, PropertiesSyntaxError } from './properties.js'
export { parseListener, parseListeners, formatListener, parseSecurityProtocolMap, type Listener } from './listeners.js'
export { renderConfigReference } from './reference.js'
