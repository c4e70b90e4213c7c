// Topic-level configs (Kafka's TopicConfig / LogConfig) with their broker-default synonyms, as data,
// and the functions built on the table: validate a CreateTopics/AlterConfigs config map, resolve the
// effective values with their DescribeConfigs source, and build the storage LogConfig.

import type { CleanupPolicy, CompressionTypeConfig, LogConfig, TimestampType } from '../storage/types.js'
import {
  atLeast, between, closestKey, ConfigException, ConfigSource, formatValue, LONG_MAX, oneOf, listOf, parseValue,
  type BrokerValueLayers, type ConfigDef, type ConfigValue, type Validator,
} from './config-def.js'
import { CLEANUP_POLICIES, COMPRESSION_TYPES, TIMESTAMP_TYPES } from './broker-configs.js'

/** A broker config that supplies a topic config's default; `factor` converts its unit to the topic's. */
export interface Synonym {
  name: string
  factor?: number
}

export interface TopicConfigDef extends ConfigDef {
  /** Broker configs that supply the default, highest precedence first (Kafka's TopicConfigSynonyms). */
  synonyms: Synonym[]
}

const HOUR_MS = 3_600_000
const MINUTE_MS = 60_000

/** `*` or a list of partition:brokerId pairs (replication throttling). */
const throttledReplicas: Validator = (v) => {
  if (!Array.isArray(v)) return undefined
  if (v.length === 1 && v[0] === '*') return undefined
  const bad = v.find((s) => !/^\d+:\d+$/.test(s))
  return bad === undefined ? undefined : `Invalid entry ${bad}; must be '*' or a list of partitionId:brokerId`
}

const def = (d: TopicConfigDef): TopicConfigDef => d

export const TOPIC_CONFIGS: readonly TopicConfigDef[] = [
  def({ name: 'cleanup.policy', type: 'list', default: ['delete'], synonyms: [{ name: 'log.cleanup.policy' }], validator: listOf(CLEANUP_POLICIES, false), validValues: '[compact, delete]',
    doc: "'delete' discards old segments beyond the retention limits; 'compact' keeps the latest record per key; both may be combined." }),
  def({ name: 'compression.type', type: 'string', default: 'producer', synonyms: [{ name: 'compression.type' }], validator: oneOf(...COMPRESSION_TYPES), validValues: `[${COMPRESSION_TYPES.join(', ')}]`,
    doc: "Final compression type for the topic; 'producer' keeps the producer's codec." }),
  def({ name: 'compression.gzip.level', type: 'int', default: -1, synonyms: [{ name: 'compression.gzip.level' }], validator: between(-1, 9), validValues: '[1,...,9] or -1',
    doc: 'Level of gzip compression when compression.type=gzip.' }),
  def({ name: 'compression.lz4.level', type: 'int', default: 9, synonyms: [{ name: 'compression.lz4.level' }], validator: between(1, 17), validValues: '[1,...,17]',
    doc: 'Level of lz4 compression when compression.type=lz4.' }),
  def({ name: 'compression.zstd.level', type: 'int', default: 3, synonyms: [{ name: 'compression.zstd.level' }], validator: between(-131072, 22), validValues: '[-131072,...,22]',
    doc: 'Level of zstd compression when compression.type=zstd.' }),
  def({ name: 'delete.retention.ms', type: 'long', default: 86400000, synonyms: [{ name: 'log.cleaner.delete.retention.ms' }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'How long tombstones are retained on compacted topics.' }),
  def({ name: 'file.delete.delay.ms', type: 'long', default: 60000, synonyms: [{ name: 'log.segment.delete.delay.ms' }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'Time to wait before deleting a file from the filesystem.' }),
  def({ name: 'flush.messages', type: 'long', default: LONG_MAX, synonyms: [{ name: 'log.flush.interval.messages' }], validator: atLeast(1), validValues: '[1,...]',
    doc: 'Records appended before the partition is fsynced.' }),
  def({ name: 'flush.ms', type: 'long', default: LONG_MAX, synonyms: [{ name: 'log.flush.interval.ms' }, { name: 'log.flush.scheduler.interval.ms' }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'Maximum time before the partition is fsynced.' }),
  def({ name: 'follower.replication.throttled.replicas', type: 'list', default: [], synonyms: [], validator: throttledReplicas, validValues: "[partitionId]:[brokerId],... or '*'",
    doc: 'Replicas whose follower fetches are throttled.' }),
  def({ name: 'leader.replication.throttled.replicas', type: 'list', default: [], synonyms: [], validator: throttledReplicas, validValues: "[partitionId]:[brokerId],... or '*'",
    doc: 'Replicas whose leader side of replication is throttled.' }),
  def({ name: 'index.interval.bytes', type: 'int', default: 4096, synonyms: [{ name: 'log.index.interval.bytes' }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'Bytes of log between offset index entries.' }),
  def({ name: 'max.compaction.lag.ms', type: 'long', default: LONG_MAX, synonyms: [{ name: 'log.cleaner.max.compaction.lag.ms' }], validator: atLeast(1), validValues: '[1,...]',
    doc: 'Maximum time a record stays ineligible for compaction.' }),
  def({ name: 'max.message.bytes', type: 'int', default: 1048588, synonyms: [{ name: 'message.max.bytes' }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'The largest record batch size allowed (after compression if enabled).' }),
  def({ name: 'message.timestamp.type', type: 'string', default: 'CreateTime', synonyms: [{ name: 'log.message.timestamp.type' }], validator: oneOf(...TIMESTAMP_TYPES), validValues: '[CreateTime, LogAppendTime]',
    doc: 'CreateTime keeps the producer timestamps; LogAppendTime stamps batches with the broker clock.' }),
  def({ name: 'message.timestamp.before.max.ms', type: 'long', default: LONG_MAX, synonyms: [{ name: 'log.message.timestamp.before.max.ms' }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'Largest allowed age of a CreateTime timestamp.' }),
  def({ name: 'message.timestamp.after.max.ms', type: 'long', default: HOUR_MS, synonyms: [{ name: 'log.message.timestamp.after.max.ms' }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'Largest allowed lead of a CreateTime timestamp over the broker clock.' }),
  def({ name: 'min.cleanable.dirty.ratio', type: 'double', default: 0.5, synonyms: [{ name: 'log.cleaner.min.cleanable.ratio' }], validator: between(0, 1), validValues: '[0,...,1]',
    doc: 'Minimum dirty/total ratio before the log is compacted.' }),
  def({ name: 'min.compaction.lag.ms', type: 'long', default: 0, synonyms: [{ name: 'log.cleaner.min.compaction.lag.ms' }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'Minimum time a record stays uncompacted.' }),
  def({ name: 'min.insync.replicas', type: 'int', default: 1, synonyms: [{ name: 'min.insync.replicas' }], validator: atLeast(1), validValues: '[1,...]',
    doc: 'Minimum in-sync replicas for an acks=all produce to succeed.' }),
  def({ name: 'preallocate', type: 'boolean', default: false, synonyms: [{ name: 'log.preallocate' }],
    doc: 'Preallocate segment files (accepted; Skein does not preallocate).' }),
  def({ name: 'retention.bytes', type: 'long', default: -1, synonyms: [{ name: 'log.retention.bytes' }],
    doc: 'Maximum partition size before old segments are deleted; -1 means no limit.' }),
  def({ name: 'retention.ms', type: 'long', default: 7 * 24 * HOUR_MS, validator: atLeast(-1), validValues: '[-1,...]',
    synonyms: [{ name: 'log.retention.ms' }, { name: 'log.retention.minutes', factor: MINUTE_MS }, { name: 'log.retention.hours', factor: HOUR_MS }],
    doc: 'Time a segment is kept before deletion; -1 means no time limit.' }),
  def({ name: 'segment.bytes', type: 'int', default: 1073741824, synonyms: [{ name: 'log.segment.bytes' }], validator: atLeast(14), validValues: '[14,...]',
    doc: 'Segment file size; a new segment is rolled when the active one would exceed it.' }),
  def({ name: 'segment.index.bytes', type: 'int', default: 10485760, synonyms: [{ name: 'log.index.size.max.bytes' }], validator: atLeast(4), validValues: '[4,...]',
    doc: 'Maximum size of each offset and time index of a segment; the segment rolls when either is full.' }),
  def({ name: 'segment.jitter.ms', type: 'long', default: 0, synonyms: [{ name: 'log.roll.jitter.ms' }, { name: 'log.roll.jitter.hours', factor: HOUR_MS }], validator: atLeast(0), validValues: '[0,...]',
    doc: 'Maximum random jitter subtracted from segment.ms.' }),
  def({ name: 'segment.ms', type: 'long', default: 7 * 24 * HOUR_MS, synonyms: [{ name: 'log.roll.ms' }, { name: 'log.roll.hours', factor: HOUR_MS }], validator: atLeast(1), validValues: '[1,...]',
    doc: 'Time after which a segment is rolled even if not full.' }),
  def({ name: 'unclean.leader.election.enable', type: 'boolean', default: false, synonyms: [{ name: 'unclean.leader.election.enable' }],
    doc: 'Allow replicas not in the ISR to become leader (may lose data).' }),
]

const byName = new Map(TOPIC_CONFIGS.map((d) => [d.name, d]))

export function topicConfigDef(name: string): TopicConfigDef | undefined {
  return byName.get(name)
}

/** Validated topic overrides: Kafka name -> parsed value. */
export type TopicConfigOverrides = ReadonlyMap<string, ConfigValue>

/**
 * Validates a topic config map as sent in CreateTopics / IncrementalAlterConfigs. Unknown keys, null
 * values and bad values throw ConfigException (INVALID_CONFIG) naming the key.
 */
export function validateTopicConfigs(configs: Iterable<readonly [string, string | null]> | Readonly<Record<string, string | null>>): Map<string, ConfigValue> {
  const entries = Symbol.iterator in configs ? [...(configs as Iterable<readonly [string, string | null]>)] : Object.entries(configs)
  const out = new Map<string, ConfigValue>()
  for (const [key, raw] of entries) {
    const d = byName.get(key)
    if (d === undefined) {
      const hint = closestKey(key, byName.keys())
      throw new ConfigException(key, `Unknown topic config name: ${key}${hint === undefined ? '' : ` (did you mean ${hint}?)`}`)
    }
    if (raw === null) throw new ConfigException(key, `Null value not supported for topic config ${key}`)
    out.set(key, parseValue(d, raw))
  }
  const minLag = out.get('min.compaction.lag.ms')
  const maxLag = out.get('max.compaction.lag.ms')
  if (typeof minLag === 'number' && typeof maxLag === 'number' && minLag > maxLag) {
    throw new ConfigException('min.compaction.lag.ms', `conflict topic config setting min.compaction.lag.ms (${minLag}) > max.compaction.lag.ms (${maxLag})`)
  }
  return out
}

/** One DescribeConfigs synonym: where a value could come from, in precedence order. */
export interface ConfigSynonym {
  name: string
  value: string | null
  source: ConfigSource
}

/** One DescribeConfigs entry. */
export interface ResolvedConfig {
  name: string
  value: string | null
  /** The typed value (what buildLogConfig uses). */
  parsed: ConfigValue
  source: ConfigSource
  readOnly: boolean
  sensitive: boolean
  type: ConfigDef['type']
  doc: string
  synonyms: ConfigSynonym[]
}

/**
 * The broker-side default of a topic config, following Kafka's precedence: by source first (dynamic
 * per-broker, dynamic cluster default, static), then by synonym order (ms over minutes over hours).
 */
export function brokerDefaultFor(def: TopicConfigDef, broker: BrokerValueLayers): { parsed: ConfigValue; source: ConfigSource; synonyms: ConfigSynonym[] } {
  const synonyms: ConfigSynonym[] = []
  for (const layer of broker.layers()) {
    for (const s of def.synonyms) {
      if (!layer.values.has(s.name)) continue
      const v = layer.values.get(s.name) ?? null
      if (v === null) continue
      synonyms.push({ name: s.name, value: broker.format(s.name, v), source: layer.source })
    }
  }
  const first = synonyms[0]
  if (first === undefined) return { parsed: def.default, source: ConfigSource.DEFAULT_CONFIG, synonyms }
  const syn = def.synonyms.find((s) => s.name === first.name)!
  const raw = broker.layers().find((l) => l.source === first.source)!.values.get(first.name)!
  return { parsed: convert(raw, syn.factor), source: first.source, synonyms }
}

function convert(value: ConfigValue, factor: number | undefined): ConfigValue {
  if (factor === undefined || typeof value !== 'number') return value
  // Kafka: a negative retention in any unit means "unlimited" (-1), not -N hours.
  return value < 0 ? -1 : value * factor
}

/**
 * Effective topic configs with their sources, for DescribeConfigs. `overrides` are the topic's own
 * (DYNAMIC_TOPIC_CONFIG) values. Topic configs are never read-only and none is sensitive.
 */
export function resolveTopicConfigs(broker: BrokerValueLayers, overrides: TopicConfigOverrides = new Map()): ResolvedConfig[] {
  return TOPIC_CONFIGS.map((d) => {
    const fromBroker = brokerDefaultFor(d, broker)
    const own = overrides.get(d.name)
    const synonyms = [...fromBroker.synonyms]
    let parsed = fromBroker.parsed
    let source = fromBroker.source
    if (own !== undefined) {
      parsed = own
      source = ConfigSource.DYNAMIC_TOPIC_CONFIG
      synonyms.unshift({ name: d.name, value: formatValue(d, own), source })
    }
    return { name: d.name, value: formatValue(d, parsed), parsed, source, readOnly: false, sensitive: d.sensitive === true, type: d.type, doc: d.doc, synonyms }
  })
}

function cleanupPolicy(v: ConfigValue): CleanupPolicy {
  const list = Array.isArray(v) ? v : []
  const compact = list.includes('compact')
  const del = list.includes('delete')
  if (compact && del) return 'compact,delete'
  return compact ? 'compact' : 'delete'
}

/** Maps LogConfig fields to the topic configs they come from. */
const LOG_CONFIG_FIELDS: ReadonlyArray<[keyof LogConfig, string]> = [
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

function logConfigValue(field: keyof LogConfig, v: ConfigValue): LogConfig[keyof LogConfig] {
  if (field === 'cleanupPolicy') return cleanupPolicy(v)
  if (field === 'messageTimestampType') return v as TimestampType
  if (field === 'compressionType') return v as CompressionTypeConfig
  return v as number
}

/** The storage LogConfig of a topic: broker defaults (with precedence) overlaid with topic overrides. */
export function buildLogConfig(broker: BrokerValueLayers, overrides: TopicConfigOverrides = new Map()): LogConfig {
  const out: Record<string, unknown> = {}
  for (const [field, name] of LOG_CONFIG_FIELDS) {
    const d = byName.get(name)!
    const v = overrides.has(name) ? overrides.get(name)! : brokerDefaultFor(d, broker).parsed
    out[field] = logConfigValue(field, v)
  }
  return out as unknown as LogConfig
}

/**
 * Only the LogConfig fields a topic overrides (what ShardRouter.createPartitions / updateConfigs take);
 * configs that storage does not use (compression levels, min.insync.replicas ...) are not included.
 */
export function logConfigOverrides(overrides: TopicConfigOverrides): Partial<LogConfig> {
  const out: Record<string, unknown> = {}
  for (const [field, name] of LOG_CONFIG_FIELDS) {
    if (overrides.has(name)) out[field] = logConfigValue(field, overrides.get(name)!)
  }
  return out as Partial<LogConfig>
}
