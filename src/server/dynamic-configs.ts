// The broker configuration as handlers see it (their ConfigService): the current configuration, and
// the dynamic broker configs of AlterConfigs / IncrementalAlterConfigs on the BROKER resource, checked
// with Kafka's rules for dynamic updates, persisted in cluster-metadata.json, then applied (new broker
// defaults reach every partition at once). A crash between persisting and applying leaves the persisted
// state, which the next start applies.
import { brokerConfigDef, formatValue, parseValue, type BrokerConfig, type ConfigValue } from '../config/index.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import type { TopicStore } from '../cluster/topic-store.js'
import { stripCodeName } from './handlers/common/api-errors.js'
import type { BrokerConfigScope, ConfigService } from './handlers/common/ports.js'

/** Broker configs Kafka can change at runtime but Skein cannot (the sockets are bound once). */
const STARTUP_ONLY = new Set(['listeners', 'advertised.listeners', 'listener.security.protocol.map'])

export class DynamicConfigService implements ConfigService {
  constructor(
    private readonly store: TopicStore,
    private readonly current: () => BrokerConfig,
    private readonly apply: (config: BrokerConfig) => Promise<void>,
    private readonly log: Logger,
  ) {}

  get broker(): BrokerConfig {
    return this.current()
  }

  dynamicBrokerConfigs(scope: BrokerConfigScope): Readonly<Record<string, string>> {
    return this.store.dynamicBrokerConfigs()[scope]
  }

  /**
   * Checks every key against Kafka's dynamic update rules and every value against its type (any
   * failure: INVALID_REQUEST, as Kafka turns broker ConfigExceptions into InvalidRequestException).
   */
  async replaceDynamicBrokerConfigs(scope: BrokerConfigScope, values: ReadonlyMap<string, string>, validateOnly: boolean): Promise<void> {
    const notDynamic: string[] = []
    const perBrokerOnly: string[] = []
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
      stored[def.name] = formatValue(def, value) ?? ''
    }
    if (notDynamic.length > 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `Cannot update these configs dynamically: ${notDynamic.join(', ')}`)
    if (perBrokerOnly.length > 0) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, `Cannot update these configs at default cluster level, broker id must be specified: ${perBrokerOnly.join(', ')}`)
    }
    const next = { ...this.store.dynamicBrokerConfigs(), [scope]: stored }
    let config
    try {
      config = this.current().withDynamic({ perBroker: parseLayer(next.perBroker), clusterDefault: parseLayer(next.clusterDefault) })
    } catch (err) {
      // Cross-field rules of the whole configuration (e.g. listeners against the protocol map).
      if (err instanceof KafkaError) throw new KafkaError(ErrorCode.INVALID_REQUEST, stripCodeName(err.code, err.message) ?? 'Invalid broker configuration')
      throw err
    }
    if (validateOnly) return
    this.store.setDynamicBrokerConfigs(next)
    await this.apply(config)
    this.log.info({ scope, configs: stored }, 'dynamic broker configs changed')
  }
}

/** A stored layer (canonical name -> string) parsed back into typed values. */
function parseLayer(layer: Readonly<Record<string, string>>): Map<string, ConfigValue> {
  const out = new Map<string, ConfigValue>()
  for (const [name, raw] of Object.entries(layer)) {
    const def = brokerConfigDef(name)
    if (def !== undefined) out.set(def.name, parseValue(def, raw))
  }
  return out
}
