// What applications use to fail over with MirrorMaker 2 (Kafka's RemoteClusterUtils / MirrorClient):
// translateOffsets reads `<remote>.checkpoints.internal` on the cluster the application moves to and
// answers the group's offsets there, to seek to or commit; upstreamClusters and replicationHops read the
// heartbeats topics, which show the clusters that replicate into this one.
import { Admin, type ClientOptions, Consumer, LATEST_TIMESTAMP, listOffsets, tpKey } from '../../client/index.js'
import { DefaultReplicationPolicy, isHeartbeatsTopic, type ReplicationPolicy } from './policy.js'
import { decodeCheckpoint } from './sync-checkpoint-heartbeat-records.js'

export interface TranslatedOffset {
  topic: string
  partition: number
  offset: number
  metadata: string
}

/**
 * The newest checkpointed offsets of a consumer group on the cluster `client` points at, for the group's
 * offsets on `remoteClusterAlias` (the cluster MirrorMaker copied from). Keys are tpKey(topic, partition).
 */
export async function translateOffsets(client: ClientOptions, remoteClusterAlias: string, consumerGroupId: string, opts: { timeoutMs?: number; policy?: ReplicationPolicy } = {}): Promise<Map<string, TranslatedOffset>> {
  const policy = opts.policy ?? new DefaultReplicationPolicy()
  const topic = policy.checkpointsTopic(remoteClusterAlias)
  const out = new Map<string, TranslatedOffset>()
  const consumer = new Consumer({ ...client, autoOffsetReset: 'earliest' })
  try {
    const end = (await listOffsets(consumer.cluster, [{ topic, partition: 0, timestamp: LATEST_TIMESTAMP }])).get(tpKey(topic, 0))?.offset ?? 0
    if (end === 0) return out
    consumer.assign([{ topic, partition: 0 }])
    consumer.seek(topic, 0, 'earliest')
    const deadline = Date.now() + (opts.timeoutMs ?? 60000)
    while ((consumer.position(topic, 0) ?? 0) < end) {
      if (Date.now() > deadline) throw new Error(`timed out reading ${topic}`)
      for (const r of await consumer.poll(500)) {
        if (r.key === null || r.value === null) continue
        const cp = decodeCheckpoint(r.key, r.value)
        if (cp.group === consumerGroupId) out.set(tpKey(cp.topic, cp.partition), { topic: cp.topic, partition: cp.partition, offset: cp.downstreamOffset, metadata: cp.metadata })
      }
    }
    return out
  } finally {
    await consumer.close().catch(() => {})
  }
}

/** Clusters upstream of this one (every hop), read from the names of its heartbeats topics. */
export async function upstreamClusters(client: ClientOptions, policy: ReplicationPolicy = new DefaultReplicationPolicy()): Promise<Set<string>> {
  const admin = new Admin(client)
  try {
    const out = new Set<string>()
    for (const t of await admin.listTopics()) {
      if (!isHeartbeatsTopic(policy, t)) continue
      for (let cur: string | null = t; cur !== null; cur = policy.upstreamTopic(cur)) {
        const source = policy.topicSource(cur)
        if (source === null) break
        out.add(source)
      }
    }
    return out
  } finally {
    await admin.close()
  }
}

/** The fewest hops from sourceClusterAlias to this cluster (-1: it does not replicate here). */
export async function replicationHops(client: ClientOptions, sourceClusterAlias: string, policy: ReplicationPolicy = new DefaultReplicationPolicy()): Promise<number> {
  const admin = new Admin(client)
  try {
    let best = -1
    for (const t of await admin.listTopics()) {
      if (!isHeartbeatsTopic(policy, t)) continue
      let hops = 0
      for (let cur: string | null = t; cur !== null; cur = policy.upstreamTopic(cur)) {
        const source = policy.topicSource(cur)
        if (source === null) break
        hops++
        if (source === sourceClusterAlias) {
          if (best === -1 || hops < best) best = hops
          break
        }
      }
    }
    return best
  } finally {
    await admin.close()
  }
}
