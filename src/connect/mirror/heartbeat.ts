// MirrorHeartbeatConnector and MirrorHeartbeatTask (Kafka's): one task writes a Heartbeat record
// ({source alias, target alias} -> {timestamp}) to the target's `heartbeats` topic every
// emit.heartbeats.interval.seconds. MirrorSourceConnector replicates heartbeats topics onward
// (`A.heartbeats`, `B.A.heartbeats`), so a cluster's heartbeats topics show which clusters reach it and
// through which hops (RemoteClusterUtils.upstreamClusters / replicationHops, client.ts).
import { Admin } from '../../client/index.js'
import type { ConfigDef } from '../api/config-def.js'
import { Schemas } from '../api/data.js'
import { ConnectHeaders, SourceConnector, type SourceRecord, SourceTask } from '../api/plugin.js'
import { heartbeatConfigDef, MirrorConfig } from './config.js'
import { createCompactedTopic, mirrorLog } from './log.js'
import { encodeHeartbeat } from './sync-checkpoint-heartbeat-records.js'
import { MIRROR_VERSION } from './source.js'

export class MirrorHeartbeatConnector extends SourceConnector {
  private settings: MirrorConfig | null = null

  version(): string {
    return MIRROR_VERSION
  }

  config(): ConfigDef {
    return heartbeatConfigDef()
  }

  taskClass(): new () => MirrorHeartbeatTask {
    return MirrorHeartbeatTask
  }

  private get active(): boolean {
    const c = this.settings
    return c !== null && c.bool('emit.heartbeats.enabled') && c.number('emit.heartbeats.interval.seconds') >= 0
  }

  async start(props: Record<string, string>): Promise<void> {
    this.settings = new MirrorConfig(heartbeatConfigDef(), props)
    if (!this.active) return
    const c = this.settings
    const admin = new Admin(c.admin('target', `${props['name'] ?? 'MirrorHeartbeatConnector'}-target-admin`))
    try {
      await createCompactedTopic(admin, c.policy.heartbeatsTopic(), c.number('heartbeats.topic.replication.factor'))
    } catch (err) {
      mirrorLog().warn({ err: (err as Error).message }, 'could not create the heartbeats topic')
    } finally {
      await admin.close().catch(() => {})
    }
  }

  taskConfigs(maxTasks: number): Record<string, string>[] {
    // One task whatever tasks.max says (Kafka's: heartbeats need no parallelism).
    if (!this.active || maxTasks < 1) return []
    return [this.settings!.taskProps({ 'task.index': '0' })]
  }

  stop(): void {}

  override exactlyOnceSupport(): 'SUPPORTED' {
    return 'SUPPORTED'
  }

  override alterOffsets(): boolean {
    return true
  }
}

export class MirrorHeartbeatTask extends SourceTask {
  private settings: MirrorConfig | null = null
  private intervalMs = 1000
  private next = 0
  private stopping = false
  private wake: (() => void) | null = null

  version(): string {
    return MIRROR_VERSION
  }

  start(props: Record<string, string>): void {
    this.settings = new MirrorConfig(heartbeatConfigDef(), props)
    this.intervalMs = this.settings.number('emit.heartbeats.interval.seconds') * 1000
    this.next = Date.now()
  }

  async poll(): Promise<SourceRecord[] | null> {
    const wait = this.next - Date.now()
    if (wait > 0 && !this.stopping) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, wait)
        this.wake = () => {
          clearTimeout(t)
          resolve()
        }
      })
      this.wake = null
    }
    if (this.stopping) return null
    const c = this.settings!
    const now = Date.now()
    this.next = now + Math.max(this.intervalMs, 1)
    const { key, value } = encodeHeartbeat({ sourceClusterAlias: c.source, targetClusterAlias: c.target, timestamp: now })
    return [{
      topic: c.policy.heartbeatsTopic(),
      kafkaPartition: 0,
      keySchema: Schemas.BYTES,
      key,
      valueSchema: Schemas.BYTES,
      value,
      timestamp: now,
      headers: new ConnectHeaders(),
      sourcePartition: { sourceClusterAlias: c.source, targetClusterAlias: c.target },
      sourceOffset: { offset: 0 },
    }]
  }

  stop(): void {
    this.stopping = true
    this.wake?.()
  }
}
