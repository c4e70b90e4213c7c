// The topics a topology needs besides its inputs, named as Kafka Streams names them:
//   '<application.id>-<name>-repartition'    repartition topics (cleanup.policy=delete, retention.ms=-1)
//   '<application.id>-<store>-changelog'     changelogs (cleanup.policy=compact; windowed: compact,delete)
// and the tasks the topology has. Partition counts: a repartition topic takes a fixed count when
// Repartitioned gave one, the count of the user topics it must be co-partitioned with, or else the
// largest input partition count of the sub-topology that writes it; a changelog has one partition per
// task of its sub-topology; a sub-topology has as many tasks as its largest input topic has partitions.
// Co-partitioned user topics with different partition counts are refused (TopologyException).
import { Admin } from '../../client/admin.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import { TopologyException } from '../core/errors.js'
import type { Subtopology, Topology } from '../processor/topology.js'
import type { TaskSpec } from './assignor.js'

export interface InternalTopic {
  name: string
  numPartitions: number
  configs: Record<string, string>
}

export interface TopologyPlan {
  internalTopics: InternalTopic[]
  /** Real topic name -> partitions, for every topic the topology reads. */
  partitions: Map<string, number>
  tasks: TaskSpec[]
}

export function repartitionTopicName(appId: string, name: string): string {
  return `${appId}-${name}`
}

export function changelogTopicName(appId: string, store: string): string {
  return `${appId}-${store}-changelog`
}

/** Resolves partition counts; userPartitions gives the count of a user topic (undefined: not known). */
export function planTopology(topology: Topology, appId: string, userPartitions: (topic: string) => number | undefined, topicConfigs: Record<string, string> = {}): TopologyPlan {
  const subs = topology.subtopologies()
  const counts = new Map<string, number>()
  const isInternal = (t: string): boolean => topology.repartitionTopics.has(t)
  for (const sub of subs) {
    for (const t of sub.sourceTopics) {
      if (isInternal(t)) continue
      const n = userPartitions(t)
      if (n === undefined) throw new TopologyException(`source topic '${t}' does not exist (create it before starting the application)`)
      counts.set(t, n)
    }
  }
  for (const g of topology.globalStores) {
    const n = userPartitions(g.topic)
    if (n === undefined) throw new TopologyException(`global table topic '${g.topic}' does not exist`)
    counts.set(g.topic, n)
  }
  for (const r of topology.repartitionTopics.values()) if (r.numPartitions !== undefined) counts.set(r.name, r.numPartitions)
  // Co-partition groups with user topics fix their repartition topics' counts.
  const groupCount = (g: Set<string>): number | undefined => {
    const user = [...g].filter((t) => !isInternal(t) && counts.has(t))
    const ns = new Set(user.map((t) => counts.get(t)!))
    if (ns.size > 1) throw new TopologyException(`topics [${user.join(', ')}] must be co-partitioned (joined) but have ${user.map((t) => counts.get(t)).join(', ')} partitions`)
    return ns.size === 1 ? [...ns][0] : undefined
  }
  const writerOf = (topic: string): Subtopology | undefined => subs.find((s) => s.nodes.some((n) => n.type === 'sink' && n.topic === topic))
  for (let round = 0; round < subs.length + topology.repartitionTopics.size + 2; round++) {
    let changed = false
    for (const g of topology.copartitionGroups) {
      const n = groupCount(g) ?? Math.max(0, ...[...g].filter((t) => counts.has(t)).map((t) => counts.get(t)!))
      if (n <= 0) continue
      for (const t of g) {
        if (isInternal(t) && topology.repartitionTopics.get(t)!.numPartitions === undefined && counts.get(t) !== n) {
          counts.set(t, n)
          changed = true
        }
      }
    }
    for (const r of topology.repartitionTopics.values()) {
      if (counts.has(r.name)) continue
      const w = writerOf(r.name)
      if (w === undefined) continue
      const inputs = w.sourceTopics.map((t) => counts.get(t))
      if (inputs.some((n) => n === undefined)) continue
      counts.set(r.name, Math.max(...(inputs as number[])))
      changed = true
    }
    if (!changed) break
  }
  for (const g of topology.copartitionGroups) {
    const ns = new Set([...g].map((t) => counts.get(t)))
    if (ns.size > 1) throw new TopologyException(`topics [${[...g].join(', ')}] must be co-partitioned but have different partition counts (${[...g].map((t) => `${t}: ${counts.get(t)}`).join(', ')})`)
  }
  const internalTopics: InternalTopic[] = []
  const partitions = new Map<string, number>()
  for (const r of topology.repartitionTopics.values()) {
    const n = counts.get(r.name)
    if (n === undefined) throw new TopologyException(`cannot tell how many partitions repartition topic '${r.name}' needs`)
    const name = repartitionTopicName(appId, r.name)
    internalTopics.push({ name, numPartitions: n, configs: { 'cleanup.policy': 'delete', 'retention.ms': '-1', 'segment.bytes': '52428800', 'message.timestamp.type': 'CreateTime', ...topicConfigs } })
  }
  const real = (t: string): string => (isInternal(t) ? repartitionTopicName(appId, t) : t)
  for (const [t, n] of counts) partitions.set(real(t), n)
  const tasks: TaskSpec[] = []
  for (const sub of subs) {
    const numTasks = Math.max(0, ...sub.sourceTopics.map((t) => counts.get(t) ?? 0))
    const logged = sub.stores.filter((s) => topology.stores.get(s)!.builder.loggingEnabled)
    for (const store of logged) {
      const b = topology.stores.get(store)!.builder
      internalTopics.push({ name: changelogTopicName(appId, store), numPartitions: numTasks, configs: { ...b.changelogConfig(), 'message.timestamp.type': 'CreateTime', ...topicConfigs } })
    }
    for (let p = 0; p < numTasks; p++) {
      tasks.push({
        id: `${sub.id}_${p}`,
        partitions: sub.sourceTopics.filter((t) => p < (counts.get(t) ?? 0)).map((t) => ({ topic: real(t), partition: p })),
        stateful: sub.stores.length > 0,
        endOffsetSum: 0,
      })
    }
  }
  return { internalTopics, partitions, tasks }
}

/** Creates the internal topics that are missing; an existing one with another partition count is an error. */
export async function ensureInternalTopics(admin: Admin, topics: readonly InternalTopic[], replicationFactor: number): Promise<void> {
  if (topics.length === 0) return
  const existing = new Map<string, number>()
  const meta = await admin.cluster.refreshMetadata(topics.map((t) => t.name))
  for (const t of topics) {
    const info = meta.topics.get(t.name)
    if (info !== undefined && info.errorCode === ErrorCode.NONE) existing.set(t.name, info.partitions.length)
  }
  for (const t of topics) {
    const n = existing.get(t.name)
    if (n !== undefined && n !== t.numPartitions) throw new TopologyException(`internal topic '${t.name}' exists with ${n} partitions, but ${t.numPartitions} are needed (reset the application to recreate it)`)
  }
  const missing = topics.filter((t) => !existing.has(t.name))
  if (missing.length === 0) return
  try {
    await admin.createTopics(missing.map((t) => ({ name: t.name, numPartitions: t.numPartitions, replicationFactor, configs: t.configs })))
  } catch (err) {
    // Another instance created them at the same time.
    if (!(err instanceof KafkaError && err.code === ErrorCode.TOPIC_ALREADY_EXISTS)) throw err
  }
  // Wait for the new topics' leaders to be known.
  for (let i = 0; i < 50; i++) {
    const m = await admin.cluster.refreshMetadata(missing.map((t) => t.name))
    if (missing.every((t) => (m.topics.get(t.name)?.partitions.filter((p) => p !== undefined && p.leader >= 0).length ?? 0) === t.numPartitions)) return
    await new Promise((r) => setTimeout(r, 100))
  }
}
