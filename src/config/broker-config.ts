// The broker's effective configuration: server.properties + --override items, validated against the
// BROKER_CONFIGS table, with Kafka's precedence rules (log.retention.ms over .minutes over .hours,
// log.dirs over log.dir, ...) applied in typed getters. An unknown or misspelt key stops startup.

import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { BROKER_CONFIGS, brokerConfigDef, brokerConfigNames, type BrokerConfigDef } from './broker-configs.js'
import { closestKey, ConfigException, ConfigSource, formatValue, parseValue, type BrokerValueLayers, type ConfigLayer, type ConfigValue } from './config-def.js'
import { parseListeners, parseSecurityProtocolMap, type Listener } from './listeners.js'
import { brokerConfigSynonyms, describeSynonyms } from './config-synonyms.js'
import { parseProperties, PropertiesSyntaxError } from './properties.js'
import { buildLogConfig, type LogConfig } from './log-config.js'
import { brokerDefaultFor, TOPIC_CONFIGS, type ResolvedConfig, type TopicConfigOverrides } from './topic-configs.js'

export interface DynamicBrokerConfigs {
  /** Altered for this broker (DYNAMIC_BROKER_CONFIG). */
  perBroker?: ReadonlyMap<string, ConfigValue>
  /** Altered as the cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG). */
  clusterDefault?: ReadonlyMap<string, ConfigValue>
}

/**
 * Validates raw key/value strings into canonical-name values. Aliases are folded onto their canonical
 * name; an alias and its canonical name set to different values is an error. The optional third item
 * names the input in messages ("config/server.properties", "--override").
 */
export function validateBrokerProperties(entries: Iterable<readonly [string, string, string?]>): Map<string, ConfigValue> {
  const out = new Map<string, ConfigValue>()
  const setBy = new Map<string, string>()
  for (const [key, raw, where] of entries) {
    const prefixed = listenerPrefixedDef(key)
    if (prefixed !== undefined) {
      // Kept under its full name: BrokerConfig.forListener() looks it up before the unprefixed value.
      out.set(key, parseValue(prefixed, raw))
      continue
    }
    const d = brokerConfigDef(key)
    if (d === undefined) {
      const hint = closestKey(key, brokerConfigNames())
      throw new ConfigException(key, `Unknown broker config '${key}'${where === undefined ? '' : ` in ${where}`}${hint === undefined ? '' : `; did you mean '${hint}'?`}`)
    }
    const value = parseValue(d, raw)
    const previousKey = setBy.get(d.name)
    if (previousKey !== undefined && previousKey !== key && formatValue(d, out.get(d.name) ?? null) !== formatValue(d, value)) {
      throw new ConfigException(key, `'${key}' and '${previousKey}' name the same setting but have different values`)
    }
    out.set(d.name, value)
    setBy.set(d.name, key)
  }
  return out
}

const LISTENER_PREFIX_RE = /^listener\.name\.([a-z0-9_]+)\.(.+)$/
const SASL_MECHANISM_PREFIX_RE = /^(plain|scram-sha-256|scram-sha-512|gssapi|oauthbearer)\.(sasl\..+)$/

/**
 * The definition behind a listener-prefixed key (listener.name.<listener>.<name>, or for SASL settings
 * listener.name.<listener>.<mechanism>.<name>), when the unprefixed name may be set per listener.
 */
export function listenerPrefixedDef(key: string): BrokerConfigDef | undefined {
  const m = LISTENER_PREFIX_RE.exec(key)
  if (m === null) return undefined
  const rest = m[2]!
  const base = SASL_MECHANISM_PREFIX_RE.exec(rest)?.[2] ?? rest
  const d = brokerConfigDef(base)
  if (d === undefined || d.listenerPrefixable !== true) {
    throw new ConfigException(key, `Unknown broker config '${key}': ${base} cannot be set per listener`)
  }
  return d
}

export class BrokerConfig implements BrokerValueLayers {
  /** The file the static values came from, if any. */
  readonly file: string | undefined
  /** Directory relative log dirs resolve against (the process cwd at load time). */
  readonly cwd: string
  readonly #static: ReadonlyMap<string, ConfigValue>
  readonly #dynamic: DynamicBrokerConfigs
  readonly #layers: ConfigLayer[]

  private constructor(staticValues: ReadonlyMap<string, ConfigValue>, opts: { file?: string; cwd: string; dynamic?: DynamicBrokerConfigs }) {
    this.file = opts.file
    this.cwd = opts.cwd
    this.#static = staticValues
    this.#dynamic = opts.dynamic ?? {}
    this.#layers = [
      { source: ConfigSource.DYNAMIC_BROKER_CONFIG, values: this.#dynamic.perBroker ?? new Map() },
      { source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, values: this.#dynamic.clusterDefault ?? new Map() },
      { source: ConfigSource.STATIC_BROKER_CONFIG, values: staticValues },
    ]
    this.#checkCrossFieldRules()
  }

  /**
   * Builds a config from raw key/value strings (e.g. a parsed .properties map), optionally with where
   * each came from (for messages); throws ConfigException on unknown keys or bad values.
   */
  static fromProperties(props: Iterable<readonly [string, string, string?]> | Readonly<Record<string, string>>, opts: { file?: string; cwd?: string } = {}): BrokerConfig {
    const entries = Symbol.iterator in props ? [...(props as Iterable<readonly [string, string, string?]>)] : Object.entries(props)
    return new BrokerConfig(validateBrokerProperties(entries), { file: opts.file, cwd: opts.cwd ?? process.cwd() })
  }

  /** The same static config with dynamic (AlterConfigs) layers on top. */
  withDynamic(dynamic: DynamicBrokerConfigs): BrokerConfig {
    for (const layer of [dynamic.perBroker, dynamic.clusterDefault]) {
      for (const name of layer?.keys() ?? []) {
        // Listener-prefixed names (listener.name.<l>.ssl.keystore.location) are kept under their full name.
        const d = LISTENER_PREFIX_RE.test(name) ? listenerPrefixedDef(name) : brokerConfigDef(name)
        if (d === undefined || (d.name !== name && !LISTENER_PREFIX_RE.test(name))) throw new ConfigException(name, `Unknown broker config '${name}'`)
        if (d.dynamic === 'read-only') throw new ConfigException(name, `Cannot update these configs dynamically: ${name}`)
      }
    }
    if (dynamic.clusterDefault !== undefined) {
      for (const name of dynamic.clusterDefault.keys()) {
        if ((brokerConfigDef(name) ?? listenerPrefixedDef(name))!.dynamic === 'per-broker') throw new ConfigException(name, `Cannot update these configs at default cluster level, broker id must be specified: ${name}`)
      }
    }
    return new BrokerConfig(this.#static, { file: this.file, cwd: this.cwd, dynamic })
  }

  /** Value layers, highest precedence first (the DEFAULT_CONFIG layer is each definition's default). */
  layers(): readonly ConfigLayer[] {
    return this.#layers
  }

  /** The effective value of a broker config (by canonical name or alias), its default when unset. */
  get(name: string): ConfigValue {
    const d = this.#def(name)
    for (const layer of this.#layers) {
      if (layer.values.has(d.name)) return layer.values.get(d.name) ?? null
    }
    return d.default
  }

  /**
   * A setting as one listener sees it (Kafka's ListenerName.configPrefix): listener.name.<listener>.<mechanism>.<name>
   * (with a SASL mechanism), then listener.name.<listener>.<name>, then the broker-wide value.
   */
  forListener(listenerName: string, name: string, mechanism?: string): ConfigValue {
    const prefix = `listener.name.${listenerName.toLowerCase()}.`
    const keys = mechanism === undefined ? [prefix + name] : [`${prefix}${mechanism.toLowerCase()}.${name}`, prefix + name]
    for (const key of keys) {
      for (const layer of this.#layers) {
        if (layer.values.has(key)) return layer.values.get(key) ?? null
      }
    }
    return this.get(name)
  }

  /** Whether the config was set explicitly (file, override or dynamically). */
  isSet(name: string): boolean {
    const d = this.#def(name)
    return this.#layers.some((l) => l.values.has(d.name))
  }

  /** The string form Kafka would report for a value of this config. */
  format(name: string, value: ConfigValue): string | null {
    return formatValue(this.#def(name), value)
  }

  getInt(name: string): number {
    return this.#typed(name, ['int', 'short', 'long'], 'number') as number
  }

  getDouble(name: string): number {
    return this.#typed(name, ['double'], 'number') as number
  }

  getBoolean(name: string): boolean {
    return this.#typed(name, ['boolean'], 'boolean') as boolean
  }

  getString(name: string): string | null {
    const d = this.#def(name)
    if (d.type !== 'string' && d.type !== 'password') throw new TypeError(`${name} is a ${d.type} config, not a string`)
    return this.get(name) as string | null
  }

  getList(name: string): string[] | null {
    const d = this.#def(name)
    if (d.type !== 'list') throw new TypeError(`${name} is a ${d.type} config, not a list`)
    return this.get(name) as string[] | null
  }

  get brokerId(): number {
    return this.getInt('broker.id')
  }

  get clusterId(): string | null {
    return this.getString('cluster.id')
  }

  get listeners(): Listener[] {
    return parseListeners(this.getList('listeners')!)
  }

  /** advertised.listeners, defaulting to listeners. */
  get advertisedListeners(): Listener[] {
    return parseListeners(this.getList('advertised.listeners') ?? this.getList('listeners')!)
  }

  get securityProtocolMap(): Map<string, string> {
    return parseSecurityProtocolMap(this.getList('listener.security.protocol.map')!)
  }

  /** Absolute log directories: log.dirs, else log.dir; relative paths resolve against `cwd`. */
  get logDirs(): string[] {
    const dirs = this.getList('log.dirs') ?? [this.getString('log.dir')!]
    return dirs.map((d) => resolve(this.cwd, d))
  }

  /** io.threads (default 0: partitions inline on the main thread). */
  get ioThreads(): number {
    return this.getInt('io.threads')
  }

  /** log.retention.ms > log.retention.minutes > log.retention.hours; -1 = unlimited. */
  get logRetentionMs(): number {
    return this.#topicDefault('retention.ms')
  }

  /** log.roll.ms > log.roll.hours. */
  get logRollMs(): number {
    return this.#topicDefault('segment.ms')
  }

  /** log.roll.jitter.ms > log.roll.jitter.hours. */
  get logRollJitterMs(): number {
    return this.#topicDefault('segment.jitter.ms')
  }

  /** log.flush.interval.ms, else log.flush.scheduler.interval.ms. */
  get logFlushIntervalMs(): number {
    return this.#topicDefault('flush.ms')
  }

  get logRetentionCheckIntervalMs(): number {
    return this.getInt('log.retention.check.interval.ms')
  }

  get logFlushSchedulerIntervalMs(): number {
    return this.getInt('log.flush.scheduler.interval.ms')
  }

  /** The LogConfig of a topic with no overrides (the storage's defaults for this broker). */
  logDefaults(): LogConfig {
    return buildLogConfig(this)
  }

  /** The LogConfig of a topic with these validated overrides. */
  logConfig(overrides: TopicConfigOverrides): LogConfig {
    return buildLogConfig(this, overrides)
  }

  /** Every broker config with value, source and synonyms, for DescribeConfigs on a BROKER resource. */
  describe(): ResolvedConfig[] {
    return BROKER_CONFIGS.map((d) => {
      // Kafka's list and source (config-synonyms.ts): the value may come from a synonym, e.g. log.roll.ms
      // from log.roll.hours.
      const synonyms = describeSynonyms(this, d.name, brokerConfigSynonyms(d.name), this.#sensitive(d))
      const parsed = this.get(d.name)
      return {
        name: d.name,
        value: this.#shown(d.name, parsed),
        parsed,
        source: synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG,
        readOnly: d.dynamic === 'read-only',
        sensitive: this.#sensitive(d),
        type: d.type,
        doc: d.doc,
        synonyms,
      }
    })
  }

  #shown(name: string, value: ConfigValue): string | null {
    return this.#sensitive(this.#def(name)) ? null : this.format(name, value)
  }

  #sensitive(d: BrokerConfigDef): boolean {
    return d.sensitive === true || d.type === 'password'
  }

  #topicDefault(topicConfig: string): number {
    return brokerDefaultFor(TOPIC_CONFIGS.find((t) => t.name === topicConfig)!, this).parsed as number
  }

  #def(name: string): BrokerConfigDef {
    const d = brokerConfigDef(name)
    if (d === undefined) throw new ConfigException(name, `Unknown broker config '${name}'`)
    return d
  }

  #typed(name: string, types: string[], jsType: string): unknown {
    const d = this.#def(name)
    if (!types.includes(d.type)) throw new TypeError(`${name} is a ${d.type} config`)
    const v = this.get(name)
    if (typeof v !== jsType) throw new ConfigException(name, `${name} has no value and no default`)
    return v
  }

  #checkCrossFieldRules(): void {
    // Kafka's GroupCoordinatorConfig requirements on the consumer-, share- and streams-group timeouts,
    // and ShareGroupConfig's on the record lock duration.
    const int = (n: string): number => this.getInt(n)
    const require = (ok: boolean, key: string, msg: string): void => {
      if (!ok) throw new ConfigException(key, msg)
    }
    const within = (kind: string, setting: string): void => {
      const [name, min, max] = [`group.${kind}.${setting}`, `group.${kind}.min.${setting}`, `group.${kind}.max.${setting}`]
      require(int(max) >= int(min), max, `${max} must be greater than or equal to ${min}`)
      require(int(name) >= int(min), name, `${name} must be greater than or equal to ${min}`)
      require(int(name) <= int(max), name, `${name} must be less than or equal to ${max}`)
    }
    for (const kind of ['consumer', 'share', 'streams']) {
      within(kind, 'heartbeat.interval.ms')
      within(kind, 'session.timeout.ms')
      const [hb, session] = [`group.${kind}.heartbeat.interval.ms`, `group.${kind}.session.timeout.ms`]
      require(int(hb) < int(session), hb, `${hb} must be less than ${session}`)
    }
    within('share', 'record.lock.duration.ms')
    require(int('group.streams.num.standby.replicas') <= int('group.streams.max.standby.replicas'), 'group.streams.num.standby.replicas',
      'group.streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas')
    const listeners = this.listeners
    const protocols = this.securityProtocolMap
    for (const l of listeners) {
      if (!protocols.has(l.name)) {
        throw new ConfigException('listener.security.protocol.map', `No security protocol defined for listener ${l.name} (listener.security.protocol.map)`)
      }
    }
    const names = new Set(listeners.map((l) => l.name))
    for (const a of this.advertisedListeners) {
      if (!names.has(a.name)) throw new ConfigException('advertised.listeners', `advertised.listeners listener name ${a.name} is not in listeners`)
      if (this.isSet('advertised.listeners') && (a.host === '0.0.0.0' || a.host === '::')) {
        throw new ConfigException('advertised.listeners', `advertised.listeners cannot use the nonroutable meta-address ${a.host}`)
      }
    }
  }
}

export interface LoadBrokerConfigOptions {
  /** A .properties file; when omitted only defaults and overrides apply. */
  file?: string
  /** `key=value` items from `--override` arguments, applied after the file. */
  overrides?: readonly string[]
  /** Base for a relative `file` and relative log dirs; default process.cwd(). */
  cwd?: string
}

/**
 * Reads the config file, applies overrides and validates everything. Any problem (unreadable file,
 * syntax error, unknown or misspelt key, bad value) throws an Error naming the file/key, meant to stop
 * startup with that message.
 */
export function loadBrokerConfig(opts: LoadBrokerConfigOptions = {}): BrokerConfig {
  const cwd = opts.cwd ?? process.cwd()
  const entries: [string, string, string][] = []
  let file: string | undefined
  if (opts.file !== undefined) {
    file = resolve(cwd, opts.file)
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      throw new Error(`cannot read config file ${file}: ${(err as Error).message}`)
    }
    let props: Map<string, string>
    try {
      props = parseProperties(text)
    } catch (err) {
      if (err instanceof PropertiesSyntaxError) throw new Error(`${file}: ${err.message}`)
      throw err
    }
    for (const [k, v] of props) entries.push([k, v, opts.file])
  }
  for (const item of opts.overrides ?? []) {
    const eq = item.indexOf('=')
    if (eq <= 0) throw new ConfigException(item, `--override expects key=value, got '${item}'`)
    entries.push([item.slice(0, eq).trim(), item.slice(eq + 1), '--override'])
  }
  return BrokerConfig.fromProperties(entries, { file, cwd })
}
