// The settings of MirrorMaker 2's connectors, with Kafka's names and defaults (MirrorConnectorConfig,
// MirrorSourceConfig, MirrorCheckpointConfig, MirrorHeartbeatConfig), and what they describe: the two
// clusters' client settings, the topic, group and topic-config filters, the replication policy.
//
// Client settings of a cluster: `source.cluster.*` / `target.cluster.*` (bootstrap.servers,
// security.protocol, ...) for every client of that cluster; then per role `consumer.*`, `producer.*`,
// `admin.*` (all clusters) and `source.cluster.consumer.*` / `source.consumer.*` (one cluster), later
// ones winning, as Kafka's MirrorConnectorConfig layers them.
import type { ClientOptions, ConsumerOptions, ProducerOptions } from '../../client/index.js'
import { applyAdminProps, applyConsumerProps, applyProducerProps } from '../../client/client-config.js'
import { ConfigDef, NO_DEFAULT, Validators, type Value } from '../api/config-def.js'
import { type ReplicationPolicy, REPLICATION_POLICY_CLASSES } from './policy.js'

export const DEFAULT_TOPICS_EXCLUDE = ['.*[\\-\\.]internal', '.*\\.replica', '__.*']
export const DEFAULT_GROUPS_EXCLUDE = ['console-consumer-.*', 'connect-.*', '__.*']
export const DEFAULT_CONFIG_PROPERTIES_EXCLUDE = [
  'follower\\.replication\\.throttled\\.replicas',
  'leader\\.replication\\.throttled\\.replicas',
  'message\\.timestamp\\.difference\\.max\\.ms',
  'message\\.timestamp\\.type',
  'unclean\\.leader\\.election\\.enable',
  'min\\.insync\\.replicas',
]

const replicationFactor = (_n: string, v: Value): string | undefined => (v === 0 || (typeof v === 'number' && v < -1) ? 'Value must be -1 (the broker default) or at least 1' : undefined)

/** Keys every MirrorMaker connector takes (MirrorConnectorConfig). */
function commonDef(): ConfigDef {
  return new ConfigDef()
    .define('source.cluster.alias', 'STRING', NO_DEFAULT, 'HIGH', 'Alias of source cluster', { validator: Validators.nonEmptyString() })
    .define('target.cluster.alias', 'STRING', 'target', 'HIGH', 'Alias of target cluster. Used in metrics reporting.', { validator: Validators.nonEmptyString() })
    .define('source.cluster.bootstrap.servers', 'LIST', NO_DEFAULT, 'HIGH', 'The source cluster\'s bootstrap servers (and any other client setting under the source.cluster. prefix).')
    .define('target.cluster.bootstrap.servers', 'LIST', NO_DEFAULT, 'HIGH', 'The target cluster\'s bootstrap servers (and any other client setting under the target.cluster. prefix).')
    .define('enabled', 'BOOLEAN', true, 'LOW', 'Whether to replicate source->target.')
    .define('replication.policy.class', 'CLASS', 'org.apache.kafka.connect.mirror.DefaultReplicationPolicy', 'LOW', 'Class which defines the remote topic naming convention: DefaultReplicationPolicy or IdentityReplicationPolicy.', {
      validator: (_n, v) => (typeof v === 'string' && REPLICATION_POLICY_CLASSES[v] === undefined ? `Unknown replication policy ${v}` : undefined),
    })
    .define('replication.policy.separator', 'STRING', '.', 'LOW', 'Separator used in remote topic naming convention.', { validator: Validators.nonEmptyString() })
    .define('replication.policy.internal.topic.separator.enabled', 'BOOLEAN', true, 'LOW', 'Whether to use replication.policy.separator to control the names of topics used for checkpoints and offset syncs.')
    .define('admin.timeout.ms', 'LONG', 60000, 'LOW', 'Timeout for administrative tasks, e.g. detecting new topics.', { validator: Validators.atLeast(1) })
    .define('consumer.poll.timeout.ms', 'LONG', 1000, 'LOW', 'Timeout when polling source cluster.', { validator: Validators.atLeast(1) })
    .define('offset-syncs.topic.location', 'STRING', 'source', 'LOW', 'The location (source/target) of the offset-syncs topic.', { validator: Validators.inIgnoreCase('source', 'target') })
    .define('emit.offset-syncs.enabled', 'BOOLEAN', true, 'LOW', 'Whether to store the new offset of the replicated records in offset-syncs topic or not.')
}

export function sourceConfigDef(): ConfigDef {
  return commonDef()
    .define('topics', 'LIST', ['.*'], 'HIGH', 'Topics to replicate. Supports comma-separated topic names and regexes.')
    .define('topics.exclude', 'LIST', DEFAULT_TOPICS_EXCLUDE, 'HIGH', 'Excluded topics. Supports comma-separated topic names and regexes. Excludes take precedence over includes.')
    .define('config.properties.exclude', 'LIST', DEFAULT_CONFIG_PROPERTIES_EXCLUDE, 'HIGH', 'Topic config properties that should not be replicated. Supports comma-separated property names and regexes.')
    .define('use.defaults.from', 'STRING', 'target', 'LOW', 'Which cluster\'s defaults (source or target) to use when syncing topic configurations that have default values.', { validator: Validators.inIgnoreCase('source', 'target') })
    .define('replication.factor', 'INT', 2, 'HIGH', 'Replication factor for newly created remote topics (-1: the target\'s default).', { validator: replicationFactor })
    .define('offset-syncs.topic.replication.factor', 'SHORT', 3, 'LOW', 'Replication factor for offset-syncs topic (-1: the broker default).', { validator: replicationFactor })
    .define('refresh.topics.enabled', 'BOOLEAN', true, 'LOW', 'Whether to periodically check for new topics and partitions.')
    .define('refresh.topics.interval.seconds', 'LONG', 600, 'LOW', 'Frequency of topic refresh.', { validator: Validators.atLeast(0) })
    .define('sync.topic.configs.enabled', 'BOOLEAN', true, 'LOW', 'Whether to periodically configure remote topics to match their corresponding upstream topics.')
    .define('sync.topic.configs.interval.seconds', 'LONG', 600, 'LOW', 'Frequency of topic config sync.', { validator: Validators.atLeast(0) })
    .define('sync.topic.acls.enabled', 'BOOLEAN', true, 'LOW', 'Whether to periodically configure remote topic ACLs to match their corresponding upstream topics.')
    .define('sync.topic.acls.interval.seconds', 'LONG', 600, 'LOW', 'Frequency of topic ACL sync.', { validator: Validators.atLeast(0) })
    .define('offset.lag.max', 'LONG', 100, 'LOW', 'How out-of-sync a remote partition can be before it is resynced.', { validator: Validators.atLeast(0) })
    .define('heartbeats.replication.enabled', 'BOOLEAN', true, 'LOW', 'Whether to replicate the heartbeats topics even when the topic filter does not include them.')
}

export function checkpointConfigDef(): ConfigDef {
  return commonDef()
    .define('topics', 'LIST', ['.*'], 'HIGH', 'Topics whose consumer offsets are checkpointed (as for MirrorSourceConnector).')
    .define('topics.exclude', 'LIST', DEFAULT_TOPICS_EXCLUDE, 'HIGH', 'Excluded topics.')
    .define('groups', 'LIST', ['.*'], 'HIGH', 'Consumer groups to replicate. Supports comma-separated group IDs and regexes.')
    .define('groups.exclude', 'LIST', DEFAULT_GROUPS_EXCLUDE, 'HIGH', 'Exclude groups. Supports comma-separated group IDs and regexes. Excludes take precedence over includes.')
    .define('checkpoints.topic.replication.factor', 'SHORT', 3, 'LOW', 'Replication factor for checkpoints topic (-1: the broker default).', { validator: replicationFactor })
    .define('emit.checkpoints.enabled', 'BOOLEAN', true, 'LOW', 'Whether to replicate consumer offsets to target cluster.')
    .define('emit.checkpoints.interval.seconds', 'LONG', 60, 'LOW', 'Frequency of checkpoints.', { validator: Validators.atLeast(0) })
    .define('sync.group.offsets.enabled', 'BOOLEAN', false, 'LOW', 'Whether to periodically write the translated offsets to __consumer_offsets topic in target cluster, as long as no active consumers in that group are connected to the target cluster.')
    .define('sync.group.offsets.interval.seconds', 'LONG', 60, 'LOW', 'Frequency of consumer group offset sync.', { validator: Validators.atLeast(0) })
    .define('refresh.groups.enabled', 'BOOLEAN', true, 'LOW', 'Whether to periodically check for new consumer groups.')
    .define('refresh.groups.interval.seconds', 'LONG', 600, 'LOW', 'Frequency of group refresh.', { validator: Validators.atLeast(0) })
}

export function heartbeatConfigDef(): ConfigDef {
  return commonDef()
    .define('emit.heartbeats.enabled', 'BOOLEAN', true, 'LOW', 'Whether to emit heartbeats to target cluster.')
    .define('emit.heartbeats.interval.seconds', 'LONG', 1, 'LOW', 'Frequency of heartbeats.', { validator: Validators.atLeast(0) })
    .define('heartbeats.topic.replication.factor', 'SHORT', 3, 'LOW', 'Replication factor for heartbeats topic (-1: the broker default).', { validator: replicationFactor })
}

/** A comma list of regexes as one anchored pattern (Kafka's `String.join("|", list)` with matches()). */
export function listPattern(items: readonly string[]): RegExp | null {
  const parts = items.map((s) => s.trim()).filter((s) => s !== '')
  return parts.length === 0 ? null : new RegExp(`^(?:${parts.join('|')})$`)
}

/** Kafka's DefaultTopicFilter / DefaultGroupFilter: included and not excluded. */
export class NameFilter {
  private readonly include: RegExp | null
  private readonly exclude: RegExp | null

  constructor(include: readonly string[], exclude: readonly string[]) {
    this.include = listPattern(include)
    this.exclude = listPattern(exclude)
  }

  accepts(name: string): boolean {
    return this.include !== null && this.include.test(name) && !(this.exclude?.test(name) ?? false)
  }
}

/** The settings under a prefix, with the prefix removed. */
export function withPrefix(props: Readonly<Record<string, string>>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(props)) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = v
  return out
}

const ROLES = ['consumer.', 'producer.', 'admin.']

/** A cluster's common client settings (source.cluster.* without its per-role sub-prefixes). */
function clusterCommon(props: Readonly<Record<string, string>>, cluster: 'source' | 'target'): Map<string, string> {
  const out = new Map<string, string>()
  for (const [k, v] of Object.entries(withPrefix(props, `${cluster}.cluster.`))) {
    if (k === 'alias' || ROLES.some((r) => k.startsWith(r))) continue
    out.set(k, v)
  }
  return out
}

function roleProps(props: Readonly<Record<string, string>>, cluster: 'source' | 'target', role: 'consumer' | 'producer' | 'admin'): Map<string, string> {
  const out = clusterCommon(props, cluster)
  for (const layer of [withPrefix(props, `${role}.`), withPrefix(props, `${cluster}.${role}.`), withPrefix(props, `${cluster}.cluster.${role}.`)]) {
    for (const [k, v] of Object.entries(layer)) out.set(k, v)
  }
  return out
}

/** Client settings Skein's clients do not take and that must not reach them (they are Kafka's defaults here). */
const IGNORED = new Set(['key.deserializer', 'value.deserializer', 'key.serializer', 'value.serializer', 'security.protocol'])

function clean(m: Map<string, string>): Map<string, string> {
  for (const k of [...m.keys()]) if (IGNORED.has(k) && !(k === 'security.protocol' && m.get(k)!.toUpperCase() !== 'PLAINTEXT')) m.delete(k)
  return m
}

/** The parsed settings of one MirrorMaker connector or task. */
export class MirrorConfig {
  readonly values: Record<string, Value>
  readonly policy: ReplicationPolicy

  constructor(readonly def: ConfigDef, readonly props: Readonly<Record<string, string>>) {
    this.values = def.parse(props)
    const Policy = REPLICATION_POLICY_CLASSES[this.string('replication.policy.class')]!
    this.policy = new Policy({ separator: this.string('replication.policy.separator'), internalTopicSeparatorEnabled: this.bool('replication.policy.internal.topic.separator.enabled') })
  }

  string(k: string): string {
    return this.values[k] as string
  }

  bool(k: string): boolean {
    return this.values[k] as boolean
  }

  number(k: string): number {
    return this.values[k] as number
  }

  list(k: string): string[] {
    return (this.values[k] as string[] | null) ?? []
  }

  get source(): string {
    return this.string('source.cluster.alias')
  }

  get target(): string {
    return this.string('target.cluster.alias')
  }

  get enabled(): boolean {
    return this.bool('enabled')
  }

  /** Where the offset-syncs topic lives, and its name (mm2-offset-syncs.<target>.internal). */
  get offsetSyncsTopic(): string {
    return this.policy.offsetSyncsTopic(this.target)
  }

  get offsetSyncsOnSource(): boolean {
    return this.string('offset-syncs.topic.location').toLowerCase() === 'source'
  }

  get checkpointsTopic(): string {
    return this.policy.checkpointsTopic(this.source)
  }

  topicFilter(): NameFilter {
    return new NameFilter(this.list('topics'), this.list('topics.exclude'))
  }

  groupFilter(): NameFilter {
    return new NameFilter(this.list('groups'), this.list('groups.exclude'))
  }

  admin(cluster: 'source' | 'target', clientId: string): ClientOptions {
    const opts: ClientOptions = { bootstrapServers: '', clientId }
    applyAdminProps(opts, clean(roleProps(this.props, cluster, 'admin')))
    return opts
  }

  /**
   * A consumer of a cluster: no auto commit (offsets are Connect's), from the earliest offset, as Kafka's
   * MirrorMaker consumers. maxPollRecords is the default of max.poll.records when the settings name none.
   */
  consumer(cluster: 'source' | 'target', clientId: string, maxPollRecords?: number): ConsumerOptions {
    const opts: ConsumerOptions = { bootstrapServers: '', clientId, autoOffsetReset: 'earliest', enableAutoCommit: false, ...(maxPollRecords === undefined ? {} : { maxPollRecords }) }
    const props = clean(roleProps(this.props, cluster, 'consumer'))
    props.delete('group.id')
    props.delete('enable.auto.commit')
    applyConsumerProps(opts, props)
    return opts
  }

  producer(cluster: 'source' | 'target', clientId: string): ProducerOptions {
    const opts: ProducerOptions = { bootstrapServers: '', clientId, acks: -1, lingerMs: 0 }
    applyProducerProps(opts, clean(roleProps(this.props, cluster, 'producer')))
    return opts
  }

  /** The props every task of this connector gets, plus its own keys. */
  taskProps(extra: Record<string, string>): Record<string, string> {
    return { ...this.props, ...extra }
  }
}

/** Source partitions and offsets of MirrorSourceTask, as Kafka's MirrorUtils wraps them. */
export function wrapPartition(cluster: string, topic: string, partition: number): Record<string, unknown> {
  return { cluster, topic, partition }
}

export function unwrapOffset(offset: Record<string, unknown> | null): number | null {
  const v = offset?.['offset']
  return typeof v === 'number' && Number.isFinite(v) ? v : null
}
