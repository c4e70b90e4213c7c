// Topic-level configs (Kafka's TopicConfig / LogConfig) with their broker-default synonyms, as data,
// and the functions built on the table: validate a CreateTopics/AlterConfigs config map and resolve the
// effective values with their DescribeConfigs source. log-config.ts builds the storage LogConfig from it.

import {
  closestKey, ConfigException, ConfigSource, formatValue, listOf, parseValue,
  type BrokerValueLayers, type ConfigDef, type ConfigValue, type Validator,
} from './config-def.js'
import { brokerConfigDef, CLEANUP_POLICIES } from './broker-configs.js'
import { brokerConfigSynonyms, describeSynonyms, type ConfigSynonym } from './config-synonyms.js'

export type { ConfigSynonym }

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

/** A topic config with no broker synonym: every field is stated in its row. */
const standalone = (d: TopicConfigDef): TopicConfigDef => d

/**
 * A topic config whose broker default comes from `synonyms` (highest precedence first). Its type,
 * validator and valid values are those of the first synonym's row in BROKER_CONFIGS, and its default is
 * the first synonym default that is not null (times its unit factor): the broker table is the one home
 * of these facts, so a topic value and the broker default it overrides always obey the same bounds.
 * `differs` overrides a field the topic config deliberately does not share (the row says why).
 */
function synonymOf(
  name: string, synonyms: Synonym[], doc: string,
  differs: Partial<Pick<TopicConfigDef, 'validator' | 'validValues'>> = {},
): TopicConfigDef {
  const primary = brokerConfigDef(synonyms[0]!.name)
  if (primary === undefined) throw new Error(`topic config ${name}: no broker config ${synonyms[0]!.name}`)
  let fallback: ConfigValue = null
  for (const s of synonyms) {
    const d = brokerConfigDef(s.name)
    if (d === undefined) throw new Error(`topic config ${name}: no broker config ${s.name}`)
    if (d.default !== null) {
      fallback = convert(d.default, s.factor)
      break
    }
  }
  const out: TopicConfigDef = { name, type: primary.type, default: fallback, doc, synonyms }
  const validator = 'validator' in differs ? differs.validator : primary.validator
  const validValues = 'validValues' in differs ? differs.validValues : primary.validValues
  if (validator !== undefined) out.validator = validator
  if (validValues !== undefined) out.validValues = validValues
  return out
}

export const TOPIC_CONFIGS: readonly TopicConfigDef[] = [
  synonymOf('cleanup.policy', [{ name: 'log.cleanup.policy' }],
    "'delete' discards old segments beyond the retention limits; 'compact' keeps the latest record per key; both may be combined.",
    // Kafka: a topic must name at least one policy; the broker default may be an empty list.
    { validator: listOf(CLEANUP_POLICIES, false), validValues: '[compact, delete]' }),
  synonymOf('compression.type', [{ name: 'compression.type' }], "Final compression type for the topic; 'producer' keeps the producer's codec."),
  synonymOf('compression.gzip.level', [{ name: 'compression.gzip.level' }], 'Level of gzip compression when compression.type=gzip.'),
  synonymOf('compression.lz4.level', [{ name: 'compression.lz4.level' }], 'Level of lz4 compression when compression.type=lz4.'),
  synonymOf('compression.zstd.level', [{ name: 'compression.zstd.level' }], 'Level of zstd compression when compression.type=zstd.'),
  synonymOf('delete.retention.ms', [{ name: 'log.cleaner.delete.retention.ms' }], 'How long tombstones are retained on compacted topics.'),
  synonymOf('file.delete.delay.ms', [{ name: 'log.segment.delete.delay.ms' }], 'Time to wait before deleting a file from the filesystem.'),
  synonymOf('flush.messages', [{ name: 'log.flush.interval.messages' }], 'Records appended before the partition is fsynced.'),
  synonymOf('flush.ms', [{ name: 'log.flush.interval.ms' }, { name: 'log.flush.scheduler.interval.ms' }], 'Maximum time before the partition is fsynced.'),
  standalone({ name: 'follower.replication.throttled.replicas', type: 'list', default: [], synonyms: [], validator: throttledReplicas, validValues: "[partitionId]:[brokerId],... or '*'",
    doc: 'Replicas whose fetches count against their broker\'s follower.replication.throttled.rate and, while not caught up to the leader\'s high watermark, are held to it (partition:broker of the follower, or * for all).' }),
  standalone({ name: 'leader.replication.throttled.replicas', type: 'list', default: [], synonyms: [], validator: throttledReplicas, validValues: "[partitionId]:[brokerId],... or '*'",
    doc: 'Replicas whose sending to followers counts against their broker\'s leader.replication.throttled.rate and, to followers out of the ISR, is held to it (partition:broker of the leader, or * for all).' }),
  synonymOf('index.interval.bytes', [{ name: 'log.index.interval.bytes' }], 'Bytes of log between offset index entries.'),
  synonymOf('max.compaction.lag.ms', [{ name: 'log.cleaner.max.compaction.lag.ms' }], 'Maximum time a record stays ineligible for compaction.'),
  synonymOf('max.message.bytes', [{ name: 'message.max.bytes' }], 'The largest record batch size allowed (after compression if enabled).'),
  synonymOf('message.timestamp.type', [{ name: 'log.message.timestamp.type' }], 'CreateTime keeps the producer timestamps; LogAppendTime stamps batches with the broker clock.'),
  synonymOf('message.timestamp.before.max.ms', [{ name: 'log.message.timestamp.before.max.ms' }], 'Largest allowed age of a CreateTime timestamp.'),
  synonymOf('message.timestamp.after.max.ms', [{ name: 'log.message.timestamp.after.max.ms' }], 'Largest allowed lead of a CreateTime timestamp over the broker clock.'),
  synonymOf('min.cleanable.dirty.ratio', [{ name: 'log.cleaner.min.cleanable.ratio' }], 'Minimum dirty/total ratio before the log is compacted.'),
  synonymOf('min.compaction.lag.ms', [{ name: 'log.cleaner.min.compaction.lag.ms' }], 'Minimum time a record stays uncompacted.'),
  synonymOf('min.insync.replicas', [{ name: 'min.insync.replicas' }], 'Minimum in-sync replicas for an acks=all produce to succeed.'),
  synonymOf('preallocate', [{ name: 'log.preallocate' }], 'Preallocate segment files (accepted; Skein does not preallocate).'),
  synonymOf('retention.bytes', [{ name: 'log.retention.bytes' }], 'Maximum partition size before old segments are deleted; -1 means no limit.'),
  synonymOf('retention.ms', [{ name: 'log.retention.ms' }, { name: 'log.retention.minutes', factor: MINUTE_MS }, { name: 'log.retention.hours', factor: HOUR_MS }],
    'Time a segment is kept before deletion; -1 means no time limit.'),
  synonymOf('segment.bytes', [{ name: 'log.segment.bytes' }], 'Segment file size; a new segment is rolled when the active one would exceed it.'),
  synonymOf('segment.index.bytes', [{ name: 'log.index.size.max.bytes' }], 'Maximum size of each offset and time index of a segment; the segment rolls when either is full.'),
  synonymOf('segment.jitter.ms', [{ name: 'log.roll.jitter.ms' }, { name: 'log.roll.jitter.hours', factor: HOUR_MS }], 'Maximum random jitter subtracted from segment.ms.'),
  synonymOf('segment.ms', [{ name: 'log.roll.ms' }, { name: 'log.roll.hours', factor: HOUR_MS }], 'Time after which a segment is rolled even if not full.'),
  synonymOf('unclean.leader.election.enable', [{ name: 'unclean.leader.election.enable' }], 'Allow replicas not in the ISR to become leader (may lose data).'),
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
    const own = overrides.get(d.name)
    const parsed = own !== undefined ? own : brokerDefaultFor(d, broker).parsed
    // Kafka's list: the topic's own value, then its first broker synonym's (config-synonyms.ts); the
    // source is the first entry's.
    const serverSynonym = d.synonyms[0]?.name
    const sensitive = d.sensitive === true
    const synonyms = serverSynonym === undefined ? [] : describeSynonyms(broker, serverSynonym, brokerConfigSynonyms(serverSynonym), sensitive)
    if (own !== undefined) synonyms.unshift({ name: d.name, value: formatValue(d, own), source: ConfigSource.DYNAMIC_TOPIC_CONFIG })
    const source = synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG
    return { name: d.name, value: formatValue(d, parsed), parsed, source, readOnly: false, sensitive, type: d.type, doc: d.doc, synonyms }
  })
}
