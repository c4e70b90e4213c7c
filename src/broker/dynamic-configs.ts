// The broker configuration as handlers see it (their ConfigService): the current configuration, and
// the dynamic broker configs of AlterConfigs / IncrementalAlterConfigs on the BROKER resource, checked
// with Kafka's rules for dynamic updates, written to the metadata store (Kafka's /config/brokers/<id> and
// /config/brokers/<default>, with a change notification), then applied here (new broker defaults reach
// every partition at once). Other brokers apply a cluster-default change when its notification reaches
// them. A crash between writing and applying leaves the stored state, which the next start applies.
//
// Which configs are dynamic follows Kafka (DynamicBrokerConfig.AllDynamicConfigs, the `dynamic` column of
// config/broker-configs.ts). What a change does in Skein:
// * applied at once: the topic defaults the partitions use (log.segment.bytes, log.roll.*, log.retention.*,
//   log.cleanup.policy, log.cleaner.*.retention/lag/ratio, log.flush.*, log.message.timestamp.*,
//   log.index.*, log.segment.delete.delay.ms, message.max.bytes, compression.type): every partition gets
//   its new LogConfig;
// * stored, applied at the next start: log.cleaner.backoff.ms, log.cleaner.io.max.bytes.per.second,
//   log.cleaner.dedupe.buffer.size and producer.id.expiration.ms (the shard threads read them when they
//   start);
// * stored, no effect in Skein: compression.*.level (stored batches keep the producer's level unless
//   recompressed), log.preallocate,
//   and the rows marked `ignored` (thread counts, connection limits, metric reporters, ...);
// * refused: listeners, advertised.listeners and listener.security.protocol.map, which Kafka can change but
//   Skein binds once at startup.
import { brokerConfigDef, formatValue, listenerPrefixedDef, parseValue, type BrokerConfig, type ConfigValue } from '../config/index.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import { DEFAULT_ENTITY_NAME, type ConfigChange, type MetadataStore } from '../cluster/metadata-store.js'
import { stripCodeName } from '../server/handlers/common/api-errors.js'
import type { BrokerConfigScope, ConfigService } from '../server/handlers/common/ports.js'

/** Broker configs Kafka can change at runtime but Skein cannot (the sockets are bound once). */
const STARTUP_ONLY = new Set(['listeners', 'advertised.listeners', 'listener.security.protocol.map'])

/** Names as Kafka prints its Scala sets in these messages: "Set(a, b)". */
function scalaSet(names: readonly string[]): string {
  return `Set(${names.join(', ')})`
}

export interface DynamicBrokerConfigLayers {
  perBroker: Record<string, string>
  clusterDefault: Record<string, string>
}

/** The dynamic broker configs of a broker as stored (its own entity and the cluster default). */
export async function readDynamicBrokerConfigs(store: MetadataStore, brokerId: number): Promise<DynamicBrokerConfigLayers> {
  return { perBroker: await store.getEntityConfig('brokers', String(brokerId)), clusterDefault: await store.getEntityConfig('brokers', DEFAULT_ENTITY_NAME) }
}

/** Stored string layers parsed into a BrokerConfig's dynamic layers (unknown names, from a newer broker, skipped). */
export function parseDynamicLayers(layers: DynamicBrokerConfigLayers): { perBroker: Map<string, ConfigValue>; clusterDefault: Map<string, ConfigValue> } {
  return { perBroker: parseLayer(layers.perBroker), clusterDefault: parseLayer(layers.clusterDefault) }
}

export class DynamicConfigService implements ConfigService {
  #layers: DynamicBrokerConfigLayers

  constructor(
    private readonly store: MetadataStore,
    private readonly brokerId: number,
    initial: DynamicBrokerConfigLayers,
    private readonly current: () => BrokerConfig,
    private readonly apply: (config: BrokerConfig) => Promise<void>,
    private readonly log: Logger,
    /** Refuses a configuration the broker could not apply (e.g. a key store that cannot be read), before it is stored. */
    private readonly validate: (config: BrokerConfig) => void = () => {},
  ) {
    this.#layers = { perBroker: { ...initial.perBroker }, clusterDefault: { ...initial.clusterDefault } }
  }

  get broker(): BrokerConfig {
    return this.current()
  }

  dynamicBrokerConfigs(scope: BrokerConfigScope): Readonly<Record<string, string>> {
    return this.#layers[scope]
  }

  /** Change notifications: this broker's entity or the cluster default changed (another broker altered it). */
  async onConfigChanges(changes: readonly ConfigChange[]): Promise<void> {
    const relevant = changes.some((c) => c.entityType === 'brokers' && (c.entityName === DEFAULT_ENTITY_NAME || c.entityName === String(this.brokerId)))
    if (!relevant) return
    try {
      const layers = await readDynamicBrokerConfigs(this.store, this.brokerId)
      if (sameLayer(layers.perBroker, this.#layers.perBroker) && sameLayer(layers.clusterDefault, this.#layers.clusterDefault)) return
      const config = this.current().withDynamic(parseDynamicLayers(layers))
      this.#layers = layers
      await this.apply(config)
      this.log.info({ configs: layers }, 'dynamic broker configs changed by another broker')
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'cannot apply a dynamic broker config change')
    }
  }

  /**
   * Checks every key against Kafka's dynamic update rules and every value against its type (any
   * failure: INVALID_REQUEST, as Kafka 4's brokers turn these ConfigExceptions into
   * InvalidRequestException, KAFKA-13609), in Kafka's order: names that cannot be updated dynamically,
   * values, per-broker names at the cluster level; then what Skein cannot change while running.
   */
  async replaceDynamicBrokerConfigs(scope: BrokerConfigScope, values: ReadonlyMap<string, string>, validateOnly: boolean): Promise<void> {
    const notDynamic: string[] = []
    const perBrokerOnly: string[] = []
    const startupOnly: string[] = []
    const stored: Record<string, string> = {}
    for (const name of values.keys()) {
      const def = dynamicDef(name)
      if (def === undefined || def.dynamic === 'read-only') notDynamic.push(name)
    }
    if (notDynamic.length > 0) throw new KafkaError(ErrorCode.INVALID_REQUEST, `Cannot update these configs dynamically: ${scalaSet(notDynamic)}`)
    for (const [name, raw] of values) {
      const def = dynamicDef(name)!
      if (scope === 'clusterDefault' && def.dynamic === 'per-broker') perBrokerOnly.push(name)
      if (STARTUP_ONLY.has(def.name)) startupOnly.push(name)
      let value: ConfigValue
      try {
        value = parseValue(def, raw)
      } catch (err) {
        throw new KafkaError(ErrorCode.INVALID_REQUEST, stripCodeName(ErrorCode.INVALID_CONFIG, (err as Error).message) ?? `Invalid value for ${name}`)
      }
      // A listener-prefixed setting (listener.name.<l>.ssl.keystore.location) is kept under its full name.
      stored[name === def.name || brokerConfigDef(name) !== undefined ? def.name : name] = formatValue(def, value) ?? ''
    }
    if (perBrokerOnly.length > 0) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, `Cannot update these configs at default cluster level, broker id must be specified: ${scalaSet(perBrokerOnly)}`)
    }
    if (startupOnly.length > 0) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, `Skein cannot change ${startupOnly.join(', ')} while running (its listeners are bound at startup); set them in server.properties and restart`)
    }
    const next = { ...this.#layers, [scope]: stored }
    let config
    try {
      config = this.current().withDynamic({ perBroker: parseLayer(next.perBroker), clusterDefault: parseLayer(next.clusterDefault) })
    } catch (err) {
      // Cross-field rules of the whole configuration (e.g. listeners against the protocol map).
      if (err instanceof KafkaError) throw new KafkaError(ErrorCode.INVALID_REQUEST, stripCodeName(err.code, err.message) ?? 'Invalid broker configuration')
      throw err
    }
    try {
      this.validate(config)
    } catch (err) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, (err as Error).message)
    }
    if (validateOnly) return
    await this.store.setEntityConfig('brokers', scope === 'perBroker' ? String(this.brokerId) : DEFAULT_ENTITY_NAME, stored)
    this.#layers = next
    await this.apply(config)
    this.log.info({ scope, configs: stored }, 'dynamic broker configs changed')
  }
}

function sameLayer(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a)
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k])
}

/** A stored layer (canonical name -> string) parsed back into typed values. */
function parseLayer(layer: Readonly<Record<string, string>>): Map<string, ConfigValue> {
  const out = new Map<string, ConfigValue>()
  for (const [name, raw] of Object.entries(layer)) {
    const def = brokerConfigDef(name)
    if (def !== undefined) out.set(def.name, parseValue(def, raw))
    else {
      const prefixed = dynamicDef(name)
      if (prefixed !== undefined) out.set(name, parseValue(prefixed, raw))
    }
  }
  return out
}

/** The definition of a dynamically settable name: a broker config, or a listener-prefixed one. */
function dynamicDef(name: string): ReturnType<typeof brokerConfigDef> {
  const def = brokerConfigDef(name)
  if (def !== undefined) return def
  try {
    return listenerPrefixedDef(name)
  } catch {
    return undefined
  }
}
