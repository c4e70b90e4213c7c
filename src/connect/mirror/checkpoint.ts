// MirrorCheckpointConnector and MirrorCheckpointTask (Kafka's): for the source cluster's consumer groups
// that the group filter accepts (groups, groups.exclude; refresh.groups.interval.seconds), every
// emit.checkpoints.interval.seconds each task reads its groups' committed offsets on the source,
// translates those of replicated topics through the offset syncs (offset-syncs.ts) and writes Checkpoint
// records ({group, remote topic, partition} -> {upstream offset, downstream offset, metadata}) to
// `<source>.checkpoints.internal` on the target. A checkpoint is written only when it moves the
// downstream offset forward (or the group rewound upstream), so checkpoints stay monotonic across
// restarts: the task reads the topic's existing checkpoints first.
//
// With sync.group.offsets.enabled, every sync.group.offsets.interval.seconds the translated offsets are
// also committed to the same group on the target, for groups with no active member there (state Empty,
// or not existing), and only where they move the group's offset forward: a consumer started on the
// target then continues where the source's left off.
//
// Topic names: a topic that came from the target cluster is checkpointed under its original name
// (`B.orders` on A back to `orders` on B: failback), any other under its remote name (`A.orders`).
import { Admin, type TopicPartitionOffset } from '../../client/index.js'
import type { ConfigDef } from '../api/config-def.js'
import { Schemas } from '../api/data.js'
import { ConnectHeaders, type RecordMetadata, SourceConnector, type SourceRecord, SourceTask } from '../api/plugin.js'
import { checkpointConfigDef, MirrorConfig, type NameFilter } from './config.js'
import { createCompactedTopic, every, mirrorLog } from './log.js'
import { MirrorCheckpointMetrics } from './metrics.js'
import { OffsetSyncStore } from './offset-syncs.js'
import { originalTopic } from './policy.js'
import { type Checkpoint, decodeCheckpoint, decodeOffsetSync, encodeCheckpoint } from './sync-checkpoint-heartbeat-records.js'
import { MIRROR_VERSION } from './source.js'
import { TopicTail } from './tail.js'

/** Groups of the source that the filter accepts and that have offsets of topics the topic filter accepts. */
async function findGroups(admin: Admin, groups: NameFilter, topics: NameFilter): Promise<string[]> {
  const out: string[] = []
  for (const g of await admin.listGroups()) {
    if (!groups.accepts(g.groupId) || (g.protocolType !== 'consumer' && g.protocolType !== '')) continue
    const offsets = await admin.listConsumerGroupOffsets(g.groupId).catch(() => new Map())
    if ([...offsets.keys()].some((k: string) => topics.accepts(k.slice(0, k.indexOf('\u0000'))))) out.push(g.groupId)
  }
  return out.sort()
}

export class MirrorCheckpointConnector extends SourceConnector {
  private settings: MirrorConfig | null = null
  private source: Admin | null = null
  private groups: string[] = []
  private stoppers: (() => void)[] = []

  version(): string {
    return MIRROR_VERSION
  }

  config(): ConfigDef {
    return checkpointConfigDef()
  }

  taskClass(): new () => MirrorCheckpointTask {
    return MirrorCheckpointTask
  }

  private get active(): boolean {
    const c = this.settings
    return c !== null && c.enabled && c.bool('emit.checkpoints.enabled') && c.number('emit.checkpoints.interval.seconds') >= 0
  }

  async start(props: Record<string, string>): Promise<void> {
    const c = new MirrorConfig(checkpointConfigDef(), props)
    this.settings = c
    if (!this.active) return
    const name = props['name'] ?? 'MirrorCheckpointConnector'
    const target = new Admin(c.admin('target', `${name}-target-admin`))
    try {
      await createCompactedTopic(target, c.checkpointsTopic, c.number('checkpoints.topic.replication.factor'))
    } catch (err) {
      mirrorLog().warn({ err: (err as Error).message, topic: c.checkpointsTopic }, 'could not create the checkpoints topic')
    } finally {
      await target.close().catch(() => {})
    }
    this.source = new Admin(c.admin('source', `${name}-source-admin`))
    try {
      this.groups = await findGroups(this.source, c.groupFilter(), c.topicFilter())
    } catch (err) {
      mirrorLog().warn({ err: (err as Error).message, source: c.source }, 'could not list the source groups; trying again at the next refresh')
    }
    if (c.bool('refresh.groups.enabled')) {
      this.stoppers.push(every(c.number('refresh.groups.interval.seconds') * 1000, 'refreshing groups', async () => {
        const now = await findGroups(this.source!, c.groupFilter(), c.topicFilter())
        if (now.join('\u0000') !== this.groups.join('\u0000')) {
          mirrorLog().info({ before: this.groups.length, after: now.length }, 'source consumer groups changed')
          this.groups = now
          this.context.requestTaskReconfiguration()
        }
      }))
    }
    mirrorLog().info({ source: c.source, target: c.target, groups: this.groups.length }, 'MirrorCheckpointConnector started')
  }

  taskConfigs(maxTasks: number): Record<string, string>[] {
    if (!this.active || this.groups.length === 0) return []
    const count = Math.min(maxTasks, this.groups.length)
    // Contiguous runs of groups, as Kafka's ConnectorUtils.groupPartitions.
    const per = Math.floor(this.groups.length / count)
    const extra = this.groups.length % count
    const out: Record<string, string>[] = []
    let at = 0
    for (let i = 0; i < count; i++) {
      const n = per + (i < extra ? 1 : 0)
      out.push(this.settings!.taskProps({ 'task.assigned.groups': this.groups.slice(at, at + n).join(','), 'task.index': String(i) }))
      at += n
    }
    return out
  }

  async stop(): Promise<void> {
    for (const s of this.stoppers.splice(0)) s()
    await this.source?.close().catch(() => {})
    this.source = null
  }

  override exactlyOnceSupport(): 'SUPPORTED' {
    return 'SUPPORTED'
  }

  override alterOffsets(): boolean {
    return true
  }
}

const key = (topic: string, partition: number): string => `${topic}\u0000${partition}`

export class MirrorCheckpointTask extends SourceTask {
  private settings: MirrorConfig | null = null
  private groups: string[] = []
  private source: Admin | null = null
  private target: Admin | null = null
  private topics: NameFilter | null = null
  private readonly syncs = new OffsetSyncStore()
  /** group -> downstream tp key -> the newest checkpoint (read back from the topic, then as written). */
  private readonly checkpoints = new Map<string, Map<string, Checkpoint>>()
  private syncTail: TopicTail | null = null
  private checkpointTail: TopicTail | null = null
  private intervalMs = 60000
  private nextEmit = 0
  private stopping = false
  private wake: (() => void) | null = null
  private stoppers: (() => void)[] = []
  private metrics: MirrorCheckpointMetrics | null = null

  version(): string {
    return MIRROR_VERSION
  }

  async start(props: Record<string, string>): Promise<void> {
    const c = new MirrorConfig(checkpointConfigDef(), props)
    this.settings = c
    this.metrics = new MirrorCheckpointMetrics(this.context.metrics, c.source, c.target)
    this.groups = (props['task.assigned.groups'] ?? '').split(',').filter((g) => g !== '')
    this.topics = c.topicFilter()
    this.intervalMs = c.number('emit.checkpoints.interval.seconds') * 1000
    this.nextEmit = Date.now() + this.intervalMs
    const name = `${props['name'] ?? 'MirrorCheckpointConnector'}-${props['task.index'] ?? '0'}`
    this.source = new Admin(c.admin('source', `${name}-source-admin`))
    this.target = new Admin(c.admin('target', `${name}-target-admin`))
    const mine = new Set(this.groups)
    this.checkpointTail = new TopicTail(c.consumer('target', `${name}-checkpoints-reader`), c.checkpointsTopic, (r) => {
      if (r.key === null || r.value === null) return
      const cp = decodeCheckpoint(r.key, r.value)
      if (mine.has(cp.group)) this.remember(cp)
    })
    this.syncTail = new TopicTail(c.consumer(c.offsetSyncsOnSource ? 'source' : 'target', `${name}-offset-syncs-reader`), c.offsetSyncsTopic, (r) => this.syncs.add(decodeOffsetSync(r.key, r.value)))
    // Loading runs in the background: until both are read, poll() emits nothing.
    void this.checkpointTail.start().then(() => this.syncTail?.start()).catch((err) => mirrorLog().warn({ err: (err as Error).message }, 'could not read the MirrorMaker internal topics'))
    if (c.bool('sync.group.offsets.enabled')) this.stoppers.push(every(c.number('sync.group.offsets.interval.seconds') * 1000, 'syncing group offsets', () => this.syncGroupOffsets()))
    mirrorLog().info({ task: name, groups: this.groups.length, source: c.source, target: c.target }, 'MirrorCheckpointTask checkpointing')
  }

  private remember(cp: Checkpoint): void {
    let m = this.checkpoints.get(cp.group)
    if (m === undefined) this.checkpoints.set(cp.group, (m = new Map()))
    m.set(key(cp.topic, cp.partition), cp)
  }

  /** Waits for the next emit time (or stop), then the groups' checkpoints that moved. */
  async poll(): Promise<SourceRecord[] | null> {
    const wait = this.nextEmit - Date.now()
    if (wait > 0 && !this.stopping) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(wait, 1000))
        this.wake = () => {
          clearTimeout(t)
          resolve()
        }
      })
      this.wake = null
      if (Date.now() < this.nextEmit) return null
    }
    if (this.stopping) return null
    this.nextEmit = Date.now() + this.intervalMs
    if (!(this.checkpointTail?.ready ?? false) || !(this.syncTail?.ready ?? false)) return null
    const out: SourceRecord[] = []
    const now = Date.now()
    for (const group of this.groups) {
      try {
        for (const cp of await this.checkpointsForGroup(group)) {
          this.remember(cp)
          const { key: k, value } = encodeCheckpoint(cp)
          out.push({
            topic: this.settings!.checkpointsTopic,
            kafkaPartition: 0,
            keySchema: Schemas.BYTES,
            key: k,
            valueSchema: Schemas.BYTES,
            value,
            timestamp: now,
            headers: new ConnectHeaders(),
            sourcePartition: { group: cp.group, topic: cp.topic, partition: cp.partition },
            sourceOffset: { offset: 0 },
          })
        }
      } catch (err) {
        mirrorLog().warn({ group, err: (err as Error).message }, 'could not read the group\'s offsets on the source')
      }
    }
    return out.length === 0 ? null : out
  }

  /** The target acknowledged a checkpoint: its latency from when it was made (Kafka's checkpoint-latency-ms). */
  override commitRecord(record: SourceRecord, metadata: RecordMetadata | null): void {
    if (metadata === null || metadata.offset < 0) return
    const p = record.sourcePartition as { group?: unknown; topic?: unknown; partition?: unknown }
    if (typeof p.group === 'string' && typeof p.topic === 'string' && typeof p.partition === 'number') this.metrics?.checkpointLatency(p.group, p.topic, p.partition, record.timestamp ?? Date.now())
  }

  /** The downstream name of an upstream topic (see the file comment). */
  renameTopic(topic: string): string {
    const c = this.settings!
    return c.policy.topicSource(topic) === c.target ? originalTopic(c.policy, topic) : c.policy.formatRemoteTopic(c.source, topic)
  }

  async checkpointsForGroup(group: string): Promise<Checkpoint[]> {
    const offsets = await this.source!.listConsumerGroupOffsets(group)
    const last = this.checkpoints.get(group)
    const out: Checkpoint[] = []
    for (const [k, o] of offsets) {
      const sep = k.indexOf('\u0000')
      const topic = k.slice(0, sep)
      const partition = Number(k.slice(sep + 1))
      if (!this.topics!.accepts(topic) || o.offset < 0) continue
      const downstream = this.syncs.translateDownstream(topic, partition, o.offset)
      if (downstream === null || downstream < 0) continue
      const cp: Checkpoint = { group, topic: this.renameTopic(topic), partition, upstreamOffset: o.offset, downstreamOffset: downstream, metadata: o.metadata ?? '' }
      const prev = last?.get(key(cp.topic, cp.partition))
      // Kafka's checkpointIsMoreRecent: a rewind upstream, or a downstream offset that moved forward.
      if (prev !== undefined && !(cp.upstreamOffset < prev.upstreamOffset || cp.downstreamOffset > prev.downstreamOffset)) continue
      out.push(cp)
    }
    return out
  }

  /** Commits the checkpointed offsets to the target's groups that have no active member (see the file comment). */
  async syncGroupOffsets(): Promise<void> {
    const target = this.target
    if (target === null) return
    for (const [group, cps] of this.checkpoints) {
      if (cps.size === 0) continue
      const [d] = await target.describeGroups([group])
      const state = (d?.state ?? 'Dead').toLowerCase()
      if (state !== 'empty' && state !== 'dead' && state !== '') continue
      const current = await target.listConsumerGroupOffsets(group).catch(() => new Map())
      const offsets: TopicPartitionOffset[] = []
      for (const [k, cp] of cps) {
        const have = current.get(k) as { offset: number } | undefined
        if (have !== undefined && have.offset >= cp.downstreamOffset) continue
        offsets.push({ topic: cp.topic, partition: cp.partition, offset: cp.downstreamOffset, metadata: cp.metadata })
      }
      if (offsets.length === 0) continue
      try {
        await target.commitOffsets(group, offsets)
        mirrorLog().debug({ group, partitions: offsets.length }, 'synced group offsets to the target')
      } catch (err) {
        mirrorLog().warn({ group, err: (err as Error).message }, 'could not sync group offsets (consumers active on the target?)')
      }
    }
  }

  async stop(): Promise<void> {
    this.stopping = true
    this.metrics?.close()
    this.wake?.()
    for (const s of this.stoppers.splice(0)) s()
    await this.syncTail?.stop()
    await this.checkpointTail?.stop()
    await this.source?.close().catch(() => {})
    await this.target?.close().catch(() => {})
  }
}
