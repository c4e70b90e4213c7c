// Group configs (Kafka 4.1's GroupConfig, KIP-848 / KIP-932 / KIP-1071): the per-group settings of
// DescribeConfigs / IncrementalAlterConfigs on a GROUP resource, as data, and the functions built on the
// table: validate a group's override set against the broker's bounds, and resolve the effective values
// with their DescribeConfigs source. A group config's default is its broker synonym's current value
// (group.consumer.session.timeout.ms for consumer.session.timeout.ms, ...), whose row in BROKER_CONFIGS
// gives the type; the bounds a group value must keep are broker configs too (group.<kind>.min/max.*).

import { brokerConfigDef } from './broker-configs.js'
import { describeSynonyms } from './config-synonyms.js'
import { closestKey, ConfigException, ConfigSource, formatValue, oneOf, parseValue, type BrokerValueLayers, type ConfigDef, type ConfigValue, type Validator } from './config-def.js'
import type { ResolvedConfig } from './topic-configs.js'

/** The broker configuration as group configs need it: its value layers and its effective int values. */
export interface GroupConfigBroker extends BrokerValueLayers {
  getInt(name: string): number
}

export interface GroupConfigDef extends ConfigDef {
  /** The broker config that supplies the default (none: the row's own default). */
  synonym?: string
  /** Broker configs holding the lowest / highest value allowed. */
  min?: string
  max?: string
}

/** share.auto.offset.reset: latest, earliest, or by_duration:<ISO-8601 duration, not negative> (Kafka's ShareGroupAutoOffsetResetStrategy). */
const shareAutoOffsetReset: Validator = (v) => {
  if (typeof v !== 'string') return undefined
  if (v === 'latest' || v === 'earliest') return undefined
  if (v.toLowerCase().startsWith('by_duration:')) {
    const ms = parseIsoDuration(v.slice('by_duration:'.length))
    if (ms === undefined) return `Invalid duration ${v.slice('by_duration:'.length)}; expected ISO-8601 like PT1H or P1DT2H30M`
    if (ms < 0) return 'Negative duration is not allowed'
    return undefined
  }
  return "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'"
}

const ISO_DURATION = /^([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?$/i

/** Milliseconds of an ISO-8601 duration as Java's Duration.parse reads it (days, hours, minutes, seconds); undefined when malformed. */
export function parseIsoDuration(text: string): number | undefined {
  const m = ISO_DURATION.exec(text.trim())
  if (m === null) return undefined
  const [, sign, d, h, min, s, frac] = m
  if (d === undefined && h === undefined && min === undefined && s === undefined) return undefined
  if (/T$/i.test(text.trim())) return undefined
  const n = (x: string | undefined): number => (x === undefined ? 0 : Number(x))
  const secSign = s !== undefined && s.startsWith('-') ? -1 : 1
  const fracMs = frac === undefined || frac === '' ? 0 : secSign * Number(frac.padEnd(9, '0').slice(0, 3))
  const total = n(d) * 86_400_000 + n(h) * 3_600_000 + n(min) * 60_000 + n(s) * 1000 + fracMs
  return sign === '-' ? -total : total
}

/** The default and bounds of `name` come from the broker rows group.<kind>.<setting> and its min/max. */
function bounded(name: string, kind: string, setting: string, doc: string, opts: { atLeast?: number; noMin?: boolean; max?: string } = {}): GroupConfigDef {
  const synonym = `group.${kind}.${setting}`
  const row = brokerConfigDef(synonym)
  if (row === undefined) throw new Error(`group config ${name}: no broker config ${synonym}`)
  return {
    name, type: row.type, default: row.default, doc, synonym,
    validator: row.validator, validValues: row.validValues,
    min: opts.noMin === true ? undefined : `group.${kind}.min.${setting}`,
    max: opts.max ?? `group.${kind}.max.${setting}`,
  }
}

/** Kafka 4.1's GroupConfig, in its order. */
export const GROUP_CONFIGS: readonly GroupConfigDef[] = [
  bounded('consumer.session.timeout.ms', 'consumer', 'session.timeout.ms', 'The timeout to detect client failures when using the consumer group protocol.'),
  bounded('consumer.heartbeat.interval.ms', 'consumer', 'heartbeat.interval.ms', 'The heartbeat interval given to the members of a consumer group.'),
  bounded('share.session.timeout.ms', 'share', 'session.timeout.ms', 'The timeout to detect client failures when using the share group protocol.'),
  bounded('share.heartbeat.interval.ms', 'share', 'heartbeat.interval.ms', 'The heartbeat interval given to the members of a share group.'),
  bounded('share.record.lock.duration.ms', 'share', 'record.lock.duration.ms', 'The record acquisition lock duration in milliseconds for share groups.'),
  {
    name: 'share.auto.offset.reset', type: 'string', default: 'latest', validator: shareAutoOffsetReset, validValues: 'latest, earliest, by_duration:<ISO-8601 duration>',
    doc: 'The strategy to initialize the share-partition start offset: earliest, latest, or by_duration:<duration> (ISO-8601, PnDTnHnMn.nS, not negative: the first offset at or after now minus the duration).',
  },
  {
    name: 'share.isolation.level', type: 'string', default: 'read_uncommitted', validator: oneOf('read_committed', 'read_uncommitted'), validValues: '[read_committed, read_uncommitted]',
    doc: 'How a share group reads records written transactionally: read_committed delivers only committed ones, read_uncommitted every record (non-transactional records either way).',
  },
  bounded('streams.session.timeout.ms', 'streams', 'session.timeout.ms', 'The timeout to detect client failures when using the streams group protocol.'),
  bounded('streams.heartbeat.interval.ms', 'streams', 'heartbeat.interval.ms', 'The heartbeat interval given to the members of a streams group.'),
  bounded('streams.num.standby.replicas', 'streams', 'num.standby.replicas', 'The number of standby replicas for each task of a streams group.', { noMin: true, max: 'group.streams.max.standby.replicas' }),
]

const byName = new Map(GROUP_CONFIGS.map((d) => [d.name, d]))

export function groupConfigDef(name: string): GroupConfigDef | undefined {
  return byName.get(name)
}

export function groupConfigNames(): string[] {
  return GROUP_CONFIGS.map((d) => d.name)
}

/** A group's override set as stored (name -> string). */
export type GroupConfigOverrides = ReadonlyMap<string, ConfigValue>

function brokerDefault(d: GroupConfigDef, broker: GroupConfigBroker): ConfigValue {
  return d.synonym === undefined ? d.default : broker.getInt(d.synonym)
}

/**
 * Kafka's GroupConfig.validate: names, then each value's type and validator, then the broker's bounds and
 * session > heartbeat, each over the group's values merged with the broker defaults. Throws
 * ConfigException (INVALID_CONFIG) with Kafka's message; returns the parsed overrides.
 */
export function validateGroupConfigs(configs: Iterable<readonly [string, string]>, broker: GroupConfigBroker): Map<string, ConfigValue> {
  const out = new Map<string, ConfigValue>()
  const entries = [...configs]
  for (const [key] of entries) {
    if (!byName.has(key)) {
      const hint = closestKey(key, byName.keys())
      throw new ConfigException(key, `Unknown group config name: ${key}${hint === undefined ? '' : ` (did you mean ${hint}?)`}`)
    }
  }
  for (const [key, raw] of entries) out.set(key, parseValue(byName.get(key)!, raw))
  const value = (name: string): number => {
    const own = out.get(name)
    return typeof own === 'number' ? own : (brokerDefault(byName.get(name)!, broker) as number)
  }
  for (const d of GROUP_CONFIGS) {
    if (d.min !== undefined && value(d.name) < broker.getInt(d.min)) throw new ConfigException(d.name, `${d.name} must be greater than or equal to ${d.min}`)
    if (d.max !== undefined && value(d.name) > broker.getInt(d.max)) throw new ConfigException(d.name, `${d.name} must be less than or equal to ${d.max}`)
  }
  for (const kind of ['consumer', 'share', 'streams']) {
    const [session, hb] = [`${kind}.session.timeout.ms`, `${kind}.heartbeat.interval.ms`]
    if (value(session) <= value(hb)) throw new ConfigException(session, `${session} must be greater than ${hb}`)
  }
  return out
}

/** Parses a stored override set, leaving out names this broker does not know (written by a newer one). */
export function parseGroupConfigs(stored: Readonly<Record<string, string>>): Map<string, ConfigValue> {
  const out = new Map<string, ConfigValue>()
  for (const [name, raw] of Object.entries(stored)) {
    const d = byName.get(name)
    if (d === undefined) continue
    try {
      out.set(name, parseValue(d, raw))
    } catch {
      // A value a newer broker accepted and this one does not: the default applies.
    }
  }
  return out
}

/** The effective value of one group config: the group's override, else the broker default. */
export function effectiveGroupConfig(name: string, overrides: GroupConfigOverrides, broker: GroupConfigBroker): ConfigValue {
  const d = byName.get(name)
  if (d === undefined) throw new Error(`unknown group config ${name}`)
  return overrides.has(name) ? overrides.get(name)! : brokerDefault(d, broker)
}

/**
 * DescribeConfigs of a GROUP resource (Kafka's ConfigHelper.createGroupConfigEntry): every group config
 * with its effective value; the synonyms are the group's own override (GROUP_CONFIG), then the broker
 * synonym by source (dynamic, static, DEFAULT_CONFIG); the source is the first synonym's.
 */
export function resolveGroupConfigs(broker: GroupConfigBroker, overrides: GroupConfigOverrides = new Map()): ResolvedConfig[] {
  return GROUP_CONFIGS.map((d) => {
    const own = overrides.get(d.name)
    const parsed = own !== undefined ? own : brokerDefault(d, broker)
    const synonyms = d.synonym === undefined ? [] : describeSynonyms(broker, d.synonym, [d.synonym], false)
    if (own !== undefined) synonyms.unshift({ name: d.name, value: formatValue(d, own), source: ConfigSource.GROUP_CONFIG })
    const source = synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG
    return { name: d.name, value: formatValue(d, parsed), parsed, source, readOnly: false, sensitive: false, type: d.type, doc: d.doc, synonyms }
  })
}
