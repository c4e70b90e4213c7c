// The storage LogConfig: the per-partition settings the log engine runs with, built from the topic-config
// table (topic-configs.ts) and the broker's values. This file is what storage takes from config: the
// LogConfig shape, the table's defaults and checks of a LogConfig against the table's own bounds. Storage
// keeps no defaults or bounds of its own, so the table is the one validator: a value the table accepts is
// one storage runs with, and a value it rejects is refused before any metadata or directory is written.

import { brokerConfigDef, type COMPRESSION_TYPES, type TIMESTAMP_TYPES } from './broker-configs.js'
import { ConfigException, LONG_MAX, LONG_MIN, validate, type BrokerValueLayers, type ConfigDef, type ConfigValue } from './config-def.js'
import { brokerDefaultFor, topicConfigDef, type TopicConfigOverrides } from './topic-configs.js'

export { LONG_MAX }

/** cleanup.policy as storage uses it (the config is a list: compact, delete or both). */
export type CleanupPolicy = 'delete' | 'compact' | 'compact,delete'
/** message.timestamp.type */
export type TimestampType = (typeof TIMESTAMP_TYPES)[number]
/** compression.type: the codec stored batches get; 'producer' keeps the producer's. */
export type CompressionTypeConfig = (typeof COMPRESSION_TYPES)[number]

/**
 * Per-partition log settings. Field names are Kafka's topic-level config names in camelCase
 * (segment.bytes -> segmentBytes, see LOG_CONFIG_FIELDS); defaults and bounds are the topic-config table's.
 */
export interface LogConfig {
  segmentBytes: number
  segmentMs: number
  segmentIndexBytes: number
  indexIntervalBytes: number
  /** -1 = unlimited */
  retentionMs: number
  /** negative = unlimited */
  retentionBytes: number
  maxMessageBytes: number
  /** LONG_MAX = never forced */
  flushMessages: number
  /** LONG_MAX = never forced */
  flushMs: number
  messageTimestampType: TimestampType
  messageTimestampBeforeMaxMs: number
  messageTimestampAfterMaxMs: number
  cleanupPolicy: CleanupPolicy
  fileDeleteDelayMs: number
  /** How long a cleaned tombstone stays readable. */
  deleteRetentionMs: number
  minCleanableDirtyRatio: number
  minCompactionLagMs: number
  maxCompactionLagMs: number
  compressionType: CompressionTypeConfig
}

/** Each LogConfig field and the topic config it comes from. */
export const LOG_CONFIG_FIELDS: ReadonlyArray<readonly [keyof LogConfig, string]> = [
  ['segmentBytes', 'segment.bytes'],
  ['segmentMs', 'segment.ms'],
  ['segmentIndexBytes', 'segment.index.bytes'],
  ['indexIntervalBytes', 'index.interval.bytes'],
  ['retentionMs', 'retention.ms'],
  ['retentionBytes', 'retention.bytes'],
  ['maxMessageBytes', 'max.message.bytes'],
  ['flushMessages', 'flush.messages'],
  ['flushMs', 'flush.ms'],
  ['messageTimestampType', 'message.timestamp.type'],
  ['messageTimestampBeforeMaxMs', 'message.timestamp.before.max.ms'],
  ['messageTimestampAfterMaxMs', 'message.timestamp.after.max.ms'],
  ['cleanupPolicy', 'cleanup.policy'],
  ['fileDeleteDelayMs', 'file.delete.delay.ms'],
  ['compressionType', 'compression.type'],
  ['deleteRetentionMs', 'delete.retention.ms'],
  ['minCleanableDirtyRatio', 'min.cleanable.dirty.ratio'],
  ['minCompactionLagMs', 'min.compaction.lag.ms'],
  ['maxCompactionLagMs', 'max.compaction.lag.ms'],
]

const FIELD_DEFS = new Map<keyof LogConfig, ConfigDef>(
  LOG_CONFIG_FIELDS.map(([field, name]) => {
    const d = topicConfigDef(name)
    if (d === undefined) throw new Error(`LogConfig.${field}: no topic config ${name}`)
    return [field, d]
  }),
)

function cleanupPolicy(v: ConfigValue): CleanupPolicy {
  const list = Array.isArray(v) ? v : []
  const compact = list.includes('compact')
  const del = list.includes('delete')
  if (compact && del) return 'compact,delete'
  return compact ? 'compact' : 'delete'
}

function toField(field: keyof LogConfig, v: ConfigValue): LogConfig[keyof LogConfig] {
  if (field === 'cleanupPolicy') return cleanupPolicy(v)
  if (field === 'messageTimestampType') return v as TimestampType
  if (field === 'compressionType') return v as CompressionTypeConfig
  return v as number
}

/** The config value a LogConfig field stands for (cleanupPolicy back to its list form). */
function toConfigValue(field: keyof LogConfig, v: unknown): ConfigValue {
  if (field === 'cleanupPolicy') return typeof v === 'string' ? v.split(',') : (v as ConfigValue)
  return v as ConfigValue
}

const INTEGER_RANGE: Partial<Record<ConfigDef['type'], readonly [number, number]>> = {
  short: [-32768, 32767],
  int: [-(2 ** 31), 2 ** 31 - 1],
  long: [LONG_MIN, LONG_MAX],
}

function checkType(d: ConfigDef, v: unknown): void {
  const range = INTEGER_RANGE[d.type]
  const ok =
    range !== undefined ? typeof v === 'number' && Number.isInteger(v) && v >= range[0] && v <= range[1]
    : d.type === 'double' ? typeof v === 'number' && Number.isFinite(v)
    : d.type === 'list' ? Array.isArray(v) && v.every((s) => typeof s === 'string')
    : typeof v === 'string'
  if (!ok) throw new ConfigException(d.name, `Invalid value ${String(v)} for configuration ${d.name}: Not a value of type ${d.type.toUpperCase()}`)
}

/**
 * Checks every field of a LogConfig with the topic-config table's own type and validator, and the
 * cross-field rule Kafka applies to the effective config (min.compaction.lag.ms <= max.compaction.lag.ms).
 * Throws ConfigException (INVALID_CONFIG) naming the topic config; returns the config unchanged.
 */
export function checkLogConfig(c: LogConfig): LogConfig {
  for (const [field, d] of FIELD_DEFS) {
    const v = toConfigValue(field, c[field])
    checkType(d, v)
    validate(d, v)
  }
  if (c.minCompactionLagMs > c.maxCompactionLagMs) {
    throw new ConfigException('min.compaction.lag.ms', `conflict topic config setting min.compaction.lag.ms (${c.minCompactionLagMs}) > max.compaction.lag.ms (${c.maxCompactionLagMs})`)
  }
  return c
}

/** Overlays LogConfig fields onto base and checks the result (checkLogConfig); unknown fields throw. */
export function mergeLogConfig(base: LogConfig, overrides: Partial<LogConfig> = {}): LogConfig {
  const out: Record<string, unknown> = { ...base }
  for (const [k, v] of Object.entries(overrides)) {
    if (v === undefined) continue
    if (!FIELD_DEFS.has(k as keyof LogConfig)) throw new ConfigException(k, `Unknown log config field ${k}`)
    out[k] = v
  }
  return checkLogConfig(out as unknown as LogConfig)
}

/**
 * The storage LogConfig of a topic: broker defaults (with precedence) overlaid with the topic's validated
 * overrides, checked as a whole (so a topic override that conflicts with a broker default is refused).
 */
export function buildLogConfig(broker: BrokerValueLayers, overrides: TopicConfigOverrides = new Map()): LogConfig {
  const out: Record<string, unknown> = {}
  for (const [field, name] of LOG_CONFIG_FIELDS) {
    const v = overrides.has(name) ? overrides.get(name)! : brokerDefaultFor(topicConfigDef(name)!, broker).parsed
    out[field] = toField(field, v)
  }
  return checkLogConfig(out as unknown as LogConfig)
}

/**
 * Only the LogConfig fields a topic overrides (what ShardRouter.createPartitions / updateConfigs take);
 * configs that storage does not use (compression levels, min.insync.replicas ...) are not included.
 */
export function logConfigOverrides(overrides: TopicConfigOverrides): Partial<LogConfig> {
  const out: Record<string, unknown> = {}
  for (const [field, name] of LOG_CONFIG_FIELDS) {
    if (overrides.has(name)) out[field] = toField(field, overrides.get(name)!)
  }
  return out as Partial<LogConfig>
}

const NO_BROKER_VALUES: BrokerValueLayers = { layers: () => [], format: () => null }

/** The table's defaults, as storage runs a topic with no overrides on a broker with no settings. */
export const DEFAULT_LOG_CONFIG: Readonly<LogConfig> = Object.freeze(buildLogConfig(NO_BROKER_VALUES))

function numericDefault(name: string): number {
  const v = brokerConfigDef(name)?.default
  if (typeof v !== 'number') throw new Error(`${name} has no numeric default`)
  return v
}

/**
 * Broker configs that storage takes as LogManager / LogCleaner options, with the table's defaults for
 * callers (library users, tests) that pass none.
 */
export const STORAGE_DEFAULTS = Object.freeze({
  /** log.flush.offset.checkpoint.interval.ms */
  checkpointIntervalMs: numericDefault('log.flush.offset.checkpoint.interval.ms'),
  /** producer.id.expiration.ms */
  producerIdExpirationMs: numericDefault('producer.id.expiration.ms'),
  /** log.cleaner.dedupe.buffer.size (the whole buffer; a sharded broker divides it) */
  cleanerDedupeBufferBytes: numericDefault('log.cleaner.dedupe.buffer.size'),
  /** log.cleaner.io.max.bytes.per.second */
  cleanerIoMaxBytesPerSecond: numericDefault('log.cleaner.io.max.bytes.per.second'),
  /** log.segment.open.files.max (the whole process; a sharded broker divides it) */
  segmentOpenFilesMax: numericDefault('log.segment.open.files.max'),
})
