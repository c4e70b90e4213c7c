// DescribeConfigs synonyms as Kafka lists them (ConfigHelper.configSynonyms and
// DynamicBrokerConfig.brokerConfigSynonyms): where a config's value could come from, by source first
// (dynamic per-broker, dynamic cluster default, static server.properties, DEFAULT_CONFIG) and by synonym
// within a source (ms before minutes before hours), without the entries that come before the first one
// named like the config itself. That last rule is Kafka's (meant for listener overrides): it also empties
// a topic's retention.ms list when only log.retention.hours is set, and Kafka answers that way.
import { brokerConfigDef } from './broker-configs.js'
import { ConfigSource, type BrokerValueLayers, type ConfigValue } from './config-def.js'

/** One DescribeConfigs synonym: where a value could come from. */
export interface ConfigSynonym {
  name: string
  value: string | null
  source: ConfigSource
}

/** The broker config names that set the same value as `name`, highest precedence first. */
export function brokerConfigSynonyms(name: string): string[] {
  switch (name) {
    case 'log.roll.ms':
    case 'log.roll.hours':
      return ['log.roll.ms', 'log.roll.hours']
    case 'log.roll.jitter.ms':
    case 'log.roll.jitter.hours':
      return ['log.roll.jitter.ms', 'log.roll.jitter.hours']
    case 'log.flush.interval.ms':
      // log.flush.scheduler.interval.ms is its default.
      return ['log.flush.interval.ms', 'log.flush.scheduler.interval.ms']
    case 'log.retention.ms':
    case 'log.retention.minutes':
    case 'log.retention.hours':
      return ['log.retention.ms', 'log.retention.minutes', 'log.retention.hours']
    default:
      return [name]
  }
}

/** Kafka's synonym list of the broker config `name`, looked up under `names` (see brokerConfigSynonyms). */
export function describeSynonyms(broker: BrokerValueLayers, name: string, names: readonly string[], sensitive: boolean): ConfigSynonym[] {
  const out: ConfigSynonym[] = []
  const shown = (n: string, v: ConfigValue): string | null => (sensitive ? null : broker.format(n, v))
  for (const layer of broker.layers()) {
    for (const n of names) {
      if (layer.values.has(n)) out.push({ name: n, value: shown(n, layer.values.get(n) ?? null), source: layer.source })
    }
  }
  for (const n of names) {
    const def = brokerConfigDef(n)
    if (def !== undefined && def.default !== null) out.push({ name: n, value: shown(n, def.default), source: ConfigSource.DEFAULT_CONFIG })
  }
  const first = out.findIndex((s) => s.name === name)
  return first < 0 ? [] : out.slice(first)
}
