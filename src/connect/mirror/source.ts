// MirrorSourceConnector and MirrorSourceTask (Kafka's): replicate the topics of a source cluster that the
// topic filter accepts into remote topics on the target (`<source>.<topic>` by the replication policy),
// each record with its key, value, headers, timestamp and partition, in order per partition.
//
// The connector lists the source's topics (refresh.topics.interval.seconds), leaving out internal topics
// and cycles (a topic whose name says it came from the target cluster, at any hop: this is what stops
// A->B->A loops) and taking heartbeats topics even when the filter does not; creates missing remote
// topics with the source's partition count and configs (replication.factor), adds partitions when the
// source grew, syncs topic configs (sync.topic.configs.interval.seconds; properties config.properties.exclude
// leaves out are not synced, default values are deleted on the target) and spreads the topic-partitions
// round robin over tasks.max tasks (task.topic.partitions). With sync.topic.acls.enabled (at start, then
// every sync.topic.acls.interval.seconds) it copies the source's LITERAL topic ACLs of replicated topics
// to their remote topics with Kafka's rules: ALLOW WRITE is not copied (only MirrorMaker writes remote
// topics), ALLOW ALL becomes ALLOW READ, other entries (DENY included) are copied as they are; ACLs are
// added, never removed. A source without an authorizer (SECURITY_DISABLED) is noted once and skipped.
//
// A task reads its partitions with a consumer of the source cluster, from the offsets Connect stored for
// them ({cluster, topic, partition} -> {offset}), else from the earliest. Once the target acknowledged a
// record (commitRecord), the upstream/downstream offset pair may become an offset sync in
// mm2-offset-syncs.<target>.internal (offset-syncs.topic.location, source by default; offset-syncs.ts).
import { Admin, Consumer, type ConsumedRecord, ErrorCode, KafkaError, Producer } from '../../client/index.js'
import { type AclBinding, AclOperation, AclPermission, PatternType, ResourceType } from '../../domain/acl.js'
import { type ConfigDef } from '../api/config-def.js'
import { Schemas } from '../api/data.js'
import { ConnectHeaders, type RecordMetadata, SourceConnector, type SourceRecord, SourceTask } from '../api/plugin.js'
import { listPattern, MirrorConfig, type NameFilter, sourceConfigDef, unwrapOffset, wrapPartition } from './config.js'
import { createCompactedTopic, every, mirrorLog } from './log.js'
import { OffsetSyncPartitionState } from './offset-syncs.js'
import { isHeartbeatsTopic, isInternalTopic, type ReplicationPolicy } from './policy.js'
import { encodeOffsetSync } from './sync-checkpoint-heartbeat-records.js'
import { MirrorSourceMetrics, type MirrorPartitionMetrics } from './metrics.js'

export const MIRROR_VERSION = '3.9.0-skein'

export interface TopicPartitionRef {
  topic: string
  partition: number
}

/** Kafka's TopicPartition.toString: `topic-partition`. */
export function encodeTopicPartition(tp: TopicPartitionRef): string {
  return `${tp.topic}-${tp.partition}`
}

export function decodeTopicPartition(s: string): TopicPartitionRef {
  const i = s.lastIndexOf('-')
  const partition = Number(s.slice(i + 1))
  if (i <= 0 || !Number.isInteger(partition) || partition < 0) throw new Error(`not a topic-partition: ${s}`)
  return { topic: s.slice(0, i), partition }
}

/** Whether a topic on the source is (at any hop) a copy of a topic of `target`. */
export function isCycle(policy: ReplicationPolicy, target: string, topic: string): boolean {
  for (let t: string | null = topic, hops = 0; t !== null && hops < 1000; hops++) {
    const source = policy.topicSource(t)
    if (source === null) return false
    if (source === target) return true
    const up = policy.upstreamTopic(t)
    if (up === null || up === t) return false
    t = up
  }
  return false
}

/** Kafka's shouldReplicateAcl: ALLOW WRITE stays on the source (only MirrorMaker writes a remote topic). */
export function shouldReplicateAcl(b: AclBinding): boolean {
  return !(b.permission === AclPermission.ALLOW && b.operation === AclOperation.WRITE)
}

/** Kafka's targetAclBinding: the same entry on the remote topic (LITERAL), ALLOW ALL downgraded to ALLOW READ. */
export function targetAclBinding(b: AclBinding, remoteTopic: string): AclBinding {
  const operation = b.permission === AclPermission.ALLOW && b.operation === AclOperation.ALL ? AclOperation.READ : b.operation
  return { resourceType: ResourceType.TOPIC, resourceName: remoteTopic, patternType: PatternType.LITERAL, principal: b.principal, host: b.host, operation, permission: b.permission }
}

export class MirrorSourceConnector extends SourceConnector {
  private settings: MirrorConfig | null = null
  private source: Admin | null = null
  private target: Admin | null = null
  private filter: NameFilter | null = null
  private configExclude: RegExp | null = null
  /** Source topic -> partition count. */
  private known = new Map<string, number>()
  private stoppers: (() => void)[] = []
  private noAclAuthorizer = false

  version(): string {
    return MIRROR_VERSION
  }

  config(): ConfigDef {
    return sourceConfigDef()
  }

  taskClass(): new () => MirrorSourceTask {
    return MirrorSourceTask
  }

  shouldReplicateTopic(topic: string): boolean {
    const c = this.settings!
    return (this.filter!.accepts(topic) || (c.bool('heartbeats.replication.enabled') && isHeartbeatsTopic(c.policy, topic))) && !isInternalTopic(c.policy, topic) && !isCycle(c.policy, c.target, topic)
  }

  async start(props: Record<string, string>): Promise<void> {
    const c = new MirrorConfig(sourceConfigDef(), props)
    this.settings = c
    if (!c.enabled) return
    this.filter = c.topicFilter()
    this.configExclude = listPattern(c.list('config.properties.exclude'))
    this.source = new Admin(c.admin('source', `${props['name'] ?? 'MirrorSourceConnector'}-source-admin`))
    this.target = new Admin(c.admin('target', `${props['name'] ?? 'MirrorSourceConnector'}-target-admin`))
    if (c.bool('emit.offset-syncs.enabled')) {
      const admin = c.offsetSyncsOnSource ? this.source : this.target
      await createCompactedTopic(admin, c.offsetSyncsTopic, c.number('offset-syncs.topic.replication.factor')).catch((err) => mirrorLog().warn({ err: (err as Error).message, topic: c.offsetSyncsTopic }, 'could not create the offset-syncs topic'))
    }
    try {
      this.known = await this.findSourceTopics()
      await this.createTopicPartitions()
    } catch (err) {
      mirrorLog().warn({ err: (err as Error).message, source: c.source }, 'could not list the source topics; trying again at the next refresh')
    }
    if (c.bool('sync.topic.acls.enabled')) {
      // Kafka's scheduleRepeating: once now, then every interval.
      await this.syncTopicAcls().catch((err) => mirrorLog().warn({ err: (err as Error).message }, 'syncing topic ACLs failed'))
      this.stoppers.push(every(c.number('sync.topic.acls.interval.seconds') * 1000, 'syncing topic ACLs', () => this.syncTopicAcls()))
    }
    if (c.bool('sync.topic.configs.enabled')) this.stoppers.push(every(c.number('sync.topic.configs.interval.seconds') * 1000, 'syncing topic configs', () => this.syncTopicConfigs()))
    if (c.bool('refresh.topics.enabled')) this.stoppers.push(every(c.number('refresh.topics.interval.seconds') * 1000, 'refreshing topics', () => this.refreshTopics()))
    mirrorLog().info({ source: c.source, target: c.target, topics: this.known.size }, 'MirrorSourceConnector started')
  }

  private async findSourceTopics(): Promise<Map<string, number>> {
    const names = (await this.source!.listTopics()).filter((t) => this.shouldReplicateTopic(t))
    const out = new Map<string, number>()
    if (names.length === 0) return out
    for (const d of await this.source!.describeTopics(names)) if (d.partitions.length > 0) out.set(d.name, d.partitions.length)
    return new Map([...out].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  }

  private async refreshTopics(): Promise<void> {
    const now = await this.findSourceTopics()
    const changed = now.size !== this.known.size || [...now].some(([t, n]) => this.known.get(t) !== n)
    const missing = await this.createTopicPartitions(now)
    if (changed || missing) {
      mirrorLog().info({ before: this.known.size, after: now.size }, 'source topic-partitions changed')
      this.known = now
      this.context.requestTaskReconfiguration()
    }
  }

  /** Creates missing remote topics and partitions; true when something was missing. */
  private async createTopicPartitions(source = this.known): Promise<boolean> {
    const c = this.settings!
    const remote = new Map([...source.keys()].map((t) => [t, c.policy.formatRemoteTopic(c.source, t)]))
    const targetNames = new Set(await this.target!.listTopics())
    const existing = [...remote.values()].filter((r) => targetNames.has(r))
    const counts = new Map<string, number>()
    if (existing.length > 0) for (const d of await this.target!.describeTopics(existing)) counts.set(d.name, d.partitions.length)
    let missing = false
    const fresh = [...source.keys()].filter((t) => !targetNames.has(remote.get(t)!))
    if (fresh.length > 0) {
      missing = true
      const configs = await this.describeTopicConfigs(fresh)
      for (const t of fresh) {
        const name = remote.get(t)!
        const cfg: Record<string, string> = {}
        for (const e of configs.get(t) ?? []) if (!e.isDefault && e.value !== null) cfg[e.name] = e.value
        try {
          await this.target!.createTopics([{ name, numPartitions: source.get(t)!, replicationFactor: c.number('replication.factor'), configs: cfg }])
          mirrorLog().info({ topic: name, partitions: source.get(t) }, 'created remote topic')
        } catch (err) {
          mirrorLog().warn({ topic: name, err: (err as Error).message }, 'could not create remote topic')
        }
      }
    }
    for (const [t, n] of source) {
      const name = remote.get(t)!
      const have = counts.get(name)
      if (have !== undefined && n > have) {
        missing = true
        try {
          await this.target!.createPartitions(name, n)
          mirrorLog().info({ topic: name, partitions: n }, 'increased remote topic partitions')
        } catch (err) {
          mirrorLog().warn({ topic: name, err: (err as Error).message }, 'could not add partitions')
        }
      }
    }
    return missing
  }

  /** Source topic -> the config entries to mirror (not read-only, not sensitive, not static broker settings, not excluded). */
  private async describeTopicConfigs(topics: string[]): Promise<Map<string, { name: string; value: string | null; isDefault: boolean }[]>> {
    const out = new Map<string, { name: string; value: string | null; isDefault: boolean }[]>()
    if (topics.length === 0) return out
    for (const { resource, configs } of await this.source!.describeConfigs(topics.map((name) => ({ type: 'topic' as const, name })))) {
      out.set(resource.name, configs.filter((e) => !e.readOnly && !e.sensitive && e.source !== 'STATIC_BROKER_CONFIG' && !(this.configExclude?.test(e.name) ?? false)).map((e) => ({ name: e.name, value: e.value, isDefault: e.isDefault || e.source === 'DEFAULT_CONFIG' })))
    }
    return out
  }

  /** Remote topics get the source's non-default configs; settings at their default on the source are reset on the target. */
  async syncTopicConfigs(): Promise<void> {
    const c = this.settings!
    const targetNames = new Set(await this.target!.listTopics())
    const replicated = [...this.known.keys()].filter((t) => targetNames.has(c.policy.formatRemoteTopic(c.source, t)))
    const useSourceDefaults = c.string('use.defaults.from').toLowerCase() === 'source'
    for (const [topic, entries] of await this.describeTopicConfigs(replicated)) {
      const ops = entries.map((e) => (e.isDefault && !useSourceDefaults ? { op: 'delete' as const, name: e.name } : { op: 'set' as const, name: e.name, value: e.value ?? '' }))
      if (ops.length === 0) continue
      await this.target!.alterConfigs({ type: 'topic', name: c.policy.formatRemoteTopic(c.source, topic) }, ops).catch((err) => mirrorLog().warn({ topic, err: (err as Error).message }, 'could not sync topic configs'))
    }
  }

  /** Copies the source's topic ACLs of replicated topics to their remote topics (see the file comment). */
  async syncTopicAcls(): Promise<void> {
    const c = this.settings!
    let bindings: AclBinding[]
    try {
      bindings = await this.source!.describeAcls({ resourceType: ResourceType.TOPIC, resourceName: null, patternType: PatternType.ANY, principal: null, host: null, operation: AclOperation.ANY, permission: AclPermission.ANY })
    } catch (err) {
      if (err instanceof KafkaError && err.code === ErrorCode.SECURITY_DISABLED) {
        if (!this.noAclAuthorizer) mirrorLog().info({ source: c.source }, 'No ACL authorizer is configured on the source Kafka cluster, so no topic ACL syncing will take place. Consider disabling topic ACL syncing by setting sync.topic.acls.enabled to \'false\'.')
        this.noAclAuthorizer = true
        return
      }
      throw err
    }
    const remote = bindings
      .filter((b) => b.resourceType === ResourceType.TOPIC && b.patternType === PatternType.LITERAL && shouldReplicateAcl(b) && this.shouldReplicateTopic(b.resourceName))
      .map((b) => targetAclBinding(b, c.policy.formatRemoteTopic(c.source, b.resourceName)))
    if (remote.length === 0) return
    const results = await this.target!.createAcls(remote)
    results.forEach((r, i) => {
      if (r.errorCode !== ErrorCode.NONE) mirrorLog().warn({ topic: remote[i]!.resourceName, error: r.errorCode, message: r.errorMessage }, 'could not sync an ACL of a topic')
    })
  }

  taskConfigs(maxTasks: number): Record<string, string>[] {
    const c = this.settings
    if (c === null || !c.enabled) return []
    const tps: TopicPartitionRef[] = []
    for (const [topic, n] of this.known) for (let p = 0; p < n; p++) tps.push({ topic, partition: p })
    if (tps.length === 0) return []
    const count = Math.min(maxTasks, tps.length)
    const byTask: TopicPartitionRef[][] = Array.from({ length: count }, () => [])
    tps.forEach((tp, i) => byTask[i % count]!.push(tp))
    return byTask.map((list, i) => c.taskProps({ 'task.topic.partitions': list.map(encodeTopicPartition).join(','), 'task.index': String(i) }))
  }

  async stop(): Promise<void> {
    for (const s of this.stoppers.splice(0)) s()
    await this.source?.close().catch(() => {})
    await this.target?.close().catch(() => {})
    this.source = null
    this.target = null
  }

  override exactlyOnceSupport(props: Record<string, string>): 'SUPPORTED' | 'UNSUPPORTED' {
    const level = props['source.consumer.isolation.level'] ?? props['source.cluster.consumer.isolation.level'] ?? props['consumer.isolation.level']
    return level === 'read_committed' ? 'SUPPORTED' : 'UNSUPPORTED'
  }

  override alterOffsets(_props: Record<string, string>, offsets: Map<Record<string, unknown>, Record<string, unknown> | null>): boolean {
    for (const [partition, offset] of offsets) {
      if (offset === null) continue
      if (typeof partition['cluster'] !== 'string' || typeof partition['topic'] !== 'string' || !Number.isInteger(partition['partition'])) throw new Error(`a MirrorSourceConnector source partition is {cluster, topic, partition}, not ${JSON.stringify(partition)}`)
      if (!Number.isInteger(offset['offset'])) throw new Error(`a MirrorSourceConnector offset is {offset: <integer>}, not ${JSON.stringify(offset)}`)
    }
    return true
  }
}

/** max.poll.records of the replication consumer unless its settings give one (see start()). */
export const REPLICATION_MAX_POLL_RECORDS = 20000

/** Kafka's max outstanding offset syncs per task: more wait as pending (the newest per partition kept). */
const MAX_OUTSTANDING_OFFSET_SYNCS = 10

interface PartitionInfo {
  topic: string
  partition: number
  remoteTopic: string
  sourcePartition: Record<string, unknown>
  state: OffsetSyncPartitionState
  metrics: MirrorPartitionMetrics
}

export class MirrorSourceTask extends SourceTask {
  private consumer: Consumer | null = null
  private syncProducer: Producer | null = null
  private syncsTopic = ''
  private pollTimeoutMs = 1000
  private stopping = false
  private polling: Promise<unknown> | null = null
  /** Per source topic-partition (by `topic\0partition` and by its sourcePartition object). */
  private readonly partitions = new Map<string, PartitionInfo>()
  private readonly bySourcePartition = new Map<object, PartitionInfo>()
  private readonly pending = new Map<PartitionInfo, { upstream: number; downstream: number }>()
  private readonly delayed = new Map<PartitionInfo, { upstream: number; downstream: number }>()
  private outstanding = 0
  private metrics: MirrorSourceMetrics | null = null

  version(): string {
    return MIRROR_VERSION
  }

  async start(props: Record<string, string>): Promise<void> {
    const c = new MirrorConfig(sourceConfigDef(), props)
    this.pollTimeoutMs = c.number('consumer.poll.timeout.ms')
    const metrics = (this.metrics = new MirrorSourceMetrics(this.context.metrics, c.source, c.target))
    const tps = (props['task.topic.partitions'] ?? '').split(',').filter((s) => s !== '').map(decodeTopicPartition)
    const name = `${props['name'] ?? 'MirrorSourceConnector'}-${props['task.index'] ?? '0'}`
    const maxLag = c.number('offset.lag.max')
    for (const tp of tps) {
      const remoteTopic = c.policy.formatRemoteTopic(c.source, tp.topic)
      const info: PartitionInfo = { ...tp, remoteTopic, sourcePartition: wrapPartition(c.source, tp.topic, tp.partition), state: new OffsetSyncPartitionState(maxLag), metrics: metrics.partition(remoteTopic, tp.partition) }
      this.partitions.set(`${tp.topic}\u0000${tp.partition}`, info)
      this.bySourcePartition.set(info.sourcePartition, info)
    }
    if (c.bool('emit.offset-syncs.enabled')) {
      this.syncsTopic = c.offsetSyncsTopic
      this.syncProducer = new Producer(c.producer(c.offsetSyncsOnSource ? 'source' : 'target', `${name}-offset-syncs`))
    }
    // max.poll.records defaults to REPLICATION_MAX_POLL_RECORDS here (Kafka's 500 is the default elsewhere):
    // each poll() goes once around the runtime's loop, whose fixed cost at 500 records held the copy rate
    // to a third of the broker's produce rate in bench:connect; larger polls keep batches whole.
    const consumer = new Consumer(c.consumer('source', `${name}-replication-consumer`, REPLICATION_MAX_POLL_RECORDS))
    consumer.assign(tps)
    const stored = await this.context.offsetStorageReader.offsets([...this.partitions.values()].map((p) => p.sourcePartition))
    for (const [partition, offset] of stored) {
      const next = unwrapOffset(offset)
      const info = this.bySourcePartition.get(partition)
      // Kafka seeks past the last replicated offset; without one the consumer starts at auto.offset.reset.
      if (info !== undefined && next !== null && next >= 0) consumer.seek(info.topic, info.partition, next + 1)
    }
    this.consumer = consumer
    mirrorLog().info({ task: name, partitions: tps.length, source: c.source, target: c.target }, 'MirrorSourceTask replicating')
  }

  async poll(): Promise<SourceRecord[] | null> {
    const consumer = this.consumer
    if (consumer === null || this.stopping) return null
    const p = consumer.poll(this.pollTimeoutMs)
    this.polling = p
    let records: ConsumedRecord[]
    try {
      records = await p
    } finally {
      this.polling = null
    }
    if (records.length === 0) return null
    const out: SourceRecord[] = new Array(records.length)
    const now = Date.now()
    let last: PartitionInfo | undefined
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!
      // Records come partition by partition: the last lookup usually answers.
      if (last === undefined || last.partition !== r.partition || last.topic !== r.topic) last = this.partitions.get(`${r.topic}\u0000${r.partition}`)!
      const headers = new ConnectHeaders()
      for (const h of r.headers) headers.add(h.key, h.value, Schemas.OPTIONAL_BYTES)
      last.metrics.polled(r.timestamp, r.value === null ? 0 : r.value.length, now)
      out[i] = {
        topic: last.remoteTopic,
        kafkaPartition: r.partition,
        keySchema: Schemas.OPTIONAL_BYTES,
        key: r.key,
        valueSchema: Schemas.OPTIONAL_BYTES,
        value: r.value,
        timestamp: r.timestamp,
        headers,
        sourcePartition: last.sourcePartition,
        sourceOffset: { offset: r.offset },
      }
    }
    return out
  }

  override commitRecord(record: SourceRecord, metadata: RecordMetadata | null): void {
    if (this.stopping || metadata === null || metadata.offset < 0) return
    const info = this.bySourcePartition.get(record.sourcePartition as object)
    if (info === undefined) return
    info.metrics.replicated(record.timestamp ?? Date.now())
    if (this.syncProducer === null) return
    const upstream = (record.sourceOffset as { offset: number }).offset
    const pair = { upstream, downstream: metadata.offset }
    if (info.state.update(upstream, metadata.offset)) {
      this.delayed.delete(info)
      this.pending.set(info, pair)
      info.state.reset()
      this.firePendingOffsetSyncs()
    } else {
      this.delayed.set(info, pair)
    }
  }

  /** After Connect committed offsets: the newest pair of each partition goes out too. */
  override commit(): void {
    for (const [info, pair] of this.delayed) this.pending.set(info, pair)
    this.delayed.clear()
    this.firePendingOffsetSyncs()
  }

  private firePendingOffsetSyncs(): void {
    const producer = this.syncProducer
    if (producer === null) return
    for (const [info, pair] of this.pending) {
      if (this.outstanding >= MAX_OUTSTANDING_OFFSET_SYNCS) return
      this.pending.delete(info)
      this.outstanding++
      const { key, value } = encodeOffsetSync({ topic: info.topic, partition: info.partition, upstreamOffset: pair.upstream, downstreamOffset: pair.downstream })
      producer.send({ topic: this.syncsTopic, partition: 0, key, value }).then(
        () => {
          this.outstanding--
          if (this.pending.size > 0) this.firePendingOffsetSyncs()
        },
        (err: Error) => {
          this.outstanding--
          if (!this.stopping) mirrorLog().warn({ err: err.message, topic: this.syncsTopic }, 'could not send an offset sync')
        },
      )
    }
  }

  async stop(): Promise<void> {
    this.stopping = true
    this.metrics?.close()
    await this.polling?.catch(() => {})
    const c = this.consumer
    this.consumer = null
    await c?.close().catch(() => {})
    const p = this.syncProducer
    this.syncProducer = null
    await p?.flush().catch(() => {})
    await p?.close().catch(() => {})
  }
}
