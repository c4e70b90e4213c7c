// The Topology: the graph of sources, processors and sinks with their state stores (Kafka's Topology and
// InternalTopologyBuilder), built through the Processor API directly or by the DSL (StreamsBuilder). It
// knows its sub-topologies (the connected parts: nodes joined by edges or by a shared store; an internal
// repartition topic separates two), the internal topics they need, the groups of topics that must be
// co-partitioned, and prints itself as Kafka's describe() does.
import { TopologyException } from '../core/errors.js'
import type { ProcessorSupplier, StreamPartitioner, TimestampExtractor, TopicNameExtractor } from './api.js'
import { supplierStores } from './api.js'
import type { Deserializer, Serializer } from '../core/serdes.js'
import type { StoreBuilder } from '../state/builders.js'
import type { StateStore } from '../state/stores.js'

export type OffsetResetPolicy = 'earliest' | 'latest'

export interface SourceNode {
  type: 'source'
  name: string
  topics: string[]
  keyDeserializer?: Deserializer<unknown>
  valueDeserializer?: Deserializer<unknown>
  timestampExtractor?: TimestampExtractor
  offsetReset?: OffsetResetPolicy
  children: string[]
}

export interface ProcessorNode {
  type: 'processor'
  name: string
  supplier: ProcessorSupplier<unknown, unknown, unknown, unknown>
  parents: string[]
  children: string[]
  stores: string[]
}

export interface SinkNode {
  type: 'sink'
  name: string
  topic: string | TopicNameExtractor<unknown, unknown>
  keySerializer?: Serializer<unknown>
  valueSerializer?: Serializer<unknown>
  partitioner?: StreamPartitioner<unknown, unknown>
  parents: string[]
  children: string[]
}

export type TopologyNode = SourceNode | ProcessorNode | SinkNode

export interface StoreEntry {
  builder: StoreBuilder<StateStore>
  /** Processors connected to it. */
  users: Set<string>
  global: boolean
}

export interface RepartitionTopic {
  /** The name without the application id (the topic is '<application.id>-<name>'). */
  name: string
  /** Fixed by Repartitioned.withNumberOfPartitions; else derived from the writing sub-topology's sources. */
  numPartitions?: number
}

export interface GlobalStoreEntry {
  storeName: string
  sourceName: string
  processorName: string
  topic: string
}

export interface Subtopology {
  id: number
  nodes: TopologyNode[]
  /** Source topics as named in the topology (internal ones without the application id). */
  sourceTopics: string[]
  stores: string[]
}

const NAME_RE = /^[a-zA-Z0-9._-]+$/

export class Topology {
  /** Nodes in the order they were added. */
  readonly nodes = new Map<string, TopologyNode>()
  readonly stores = new Map<string, StoreEntry>()
  readonly repartitionTopics = new Map<string, RepartitionTopic>()
  readonly globalStores: GlobalStoreEntry[] = []
  /** Sets of source topics that must have the same number of partitions (joins). */
  readonly copartitionGroups: Set<string>[] = []
  private subtopologiesCache: Subtopology[] | null = null

  private checkNew(name: string): void {
    if (name === '' || !NAME_RE.test(name)) throw new TopologyException(`node name '${name}' must be non-empty and use only ASCII letters, digits, '.', '_' and '-'`)
    if (this.nodes.has(name)) throw new TopologyException(`processor '${name}' is already added`)
    this.subtopologiesCache = null
  }

  private parentsOf(name: string, parents: readonly string[]): void {
    if (parents.length === 0) throw new TopologyException(`processor '${name}' must have at least one parent`)
    for (const p of parents) {
      const node = this.nodes.get(p)
      if (node === undefined) throw new TopologyException(`parent processor '${p}' of '${name}' is not added yet`)
      if (node.type === 'sink') throw new TopologyException(`sink '${p}' cannot be the parent of '${name}'`)
      if (p === name) throw new TopologyException(`processor '${name}' cannot be its own parent`)
    }
  }

  addSource(
    name: string,
    topics: readonly string[],
    opts: { keyDeserializer?: Deserializer<unknown>; valueDeserializer?: Deserializer<unknown>; timestampExtractor?: TimestampExtractor; offsetReset?: OffsetResetPolicy } = {},
  ): this {
    this.checkNew(name)
    if (topics.length === 0) throw new TopologyException(`source '${name}' must name at least one topic`)
    for (const t of topics) {
      for (const n of this.nodes.values()) if (n.type === 'source' && n.topics.includes(t)) throw new TopologyException(`topic '${t}' is already read by source '${n.name}'`)
    }
    this.nodes.set(name, { type: 'source', name, topics: [...topics], ...opts, children: [] })
    return this
  }

  addProcessor<KIn, VIn, KOut, VOut>(name: string, supplier: ProcessorSupplier<KIn, VIn, KOut, VOut>, ...parents: string[]): this {
    this.checkNew(name)
    this.parentsOf(name, parents)
    const s = supplier as ProcessorSupplier<unknown, unknown, unknown, unknown>
    this.nodes.set(name, { type: 'processor', name, supplier: s, parents: [...parents], children: [], stores: [] })
    for (const p of parents) this.nodes.get(p)!.children.push(name)
    for (const b of supplierStores(s)) {
      if (!this.stores.has(b.name)) this.addStateStore(b)
      this.connectProcessorAndStateStores(name, b.name)
    }
    return this
  }

  addSink<K, V>(
    name: string,
    topic: string | TopicNameExtractor<K, V>,
    opts: { keySerializer?: Serializer<K>; valueSerializer?: Serializer<V>; partitioner?: StreamPartitioner<K, V> },
    ...parents: string[]
  ): this {
    this.checkNew(name)
    this.parentsOf(name, parents)
    this.nodes.set(name, {
      type: 'sink',
      name,
      topic: topic as string | TopicNameExtractor<unknown, unknown>,
      keySerializer: opts.keySerializer as Serializer<unknown> | undefined,
      valueSerializer: opts.valueSerializer as Serializer<unknown> | undefined,
      partitioner: opts.partitioner as StreamPartitioner<unknown, unknown> | undefined,
      parents: [...parents],
      children: [],
    })
    for (const p of parents) this.nodes.get(p)!.children.push(name)
    return this
  }

  addStateStore(builder: StoreBuilder<StateStore>, ...processorNames: string[]): this {
    if (this.stores.has(builder.name)) throw new TopologyException(`state store '${builder.name}' is already added`)
    this.stores.set(builder.name, { builder, users: new Set(), global: false })
    this.subtopologiesCache = null
    for (const p of processorNames) this.connectProcessorAndStateStores(p, builder.name)
    return this
  }

  connectProcessorAndStateStores(processorName: string, ...storeNames: string[]): this {
    const node = this.nodes.get(processorName)
    if (node === undefined || node.type !== 'processor') throw new TopologyException(`processor '${processorName}' is not added yet`)
    for (const s of new Set(storeNames)) {
      const entry = this.stores.get(s)
      if (entry === undefined) throw new TopologyException(`state store '${s}' is not added yet`)
      if (entry.global) throw new TopologyException(`global state store '${s}' cannot be connected to a processor (it is readable from every processor)`)
      entry.users.add(processorName)
      if (!node.stores.includes(s)) node.stores.push(s)
    }
    this.subtopologiesCache = null
    return this
  }

  /**
   * A global store (Kafka's addGlobalStore): filled from every partition of topic by its own processor,
   * readable by every task. The topic is its changelog, so the builder must have logging disabled.
   */
  addGlobalStore<K, V>(
    builder: StoreBuilder<StateStore>,
    sourceName: string,
    topic: string,
    opts: { keyDeserializer?: Deserializer<K>; valueDeserializer?: Deserializer<V>; timestampExtractor?: TimestampExtractor },
    processorName: string,
    supplier: ProcessorSupplier<K, V, never, never>,
  ): this {
    if (builder.loggingEnabled) throw new TopologyException(`global store '${builder.name}' must not have a changelog (withLoggingDisabled): its topic is its changelog`)
    this.addSource(sourceName, [topic], opts as { keyDeserializer?: Deserializer<unknown>; valueDeserializer?: Deserializer<unknown> })
    this.addProcessor(processorName, supplier, sourceName)
    if (this.stores.has(builder.name)) throw new TopologyException(`state store '${builder.name}' is already added`)
    this.stores.set(builder.name, { builder, users: new Set([processorName]), global: true })
    ;(this.nodes.get(processorName) as ProcessorNode).stores.push(builder.name)
    this.globalStores.push({ storeName: builder.name, sourceName, processorName, topic })
    return this
  }

  /** DSL: declares an internal repartition topic (the name without the application id). */
  addRepartitionTopic(name: string, numPartitions?: number): void {
    this.repartitionTopics.set(name, { name, numPartitions })
  }

  /** DSL: these source topics must be co-partitioned (a join). */
  copartition(topics: readonly string[]): void {
    const set = new Set(topics)
    // Merge with groups that share a topic.
    for (let i = this.copartitionGroups.length - 1; i >= 0; i--) {
      const g = this.copartitionGroups[i]!
      if ([...g].some((t) => set.has(t))) {
        for (const t of g) set.add(t)
        this.copartitionGroups.splice(i, 1)
      }
    }
    this.copartitionGroups.push(set)
  }

  /** Nodes feeding a global store: not part of any sub-topology with tasks. */
  private globalNodeNames(): Set<string> {
    const out = new Set<string>()
    for (const g of this.globalStores) {
      out.add(g.sourceName)
      out.add(g.processorName)
    }
    return out
  }

  /** The sub-topologies, numbered in the order of their first node. */
  subtopologies(): Subtopology[] {
    if (this.subtopologiesCache !== null) return this.subtopologiesCache
    const global = this.globalNodeNames()
    const names = [...this.nodes.keys()].filter((n) => !global.has(n))
    const parent = new Map<string, string>(names.map((n) => [n, n]))
    const find = (x: string): string => {
      let r = x
      while (parent.get(r) !== r) r = parent.get(r)!
      parent.set(x, r)
      return r
    }
    const union = (a: string, b: string): void => {
      const ra = find(a)
      const rb = find(b)
      if (ra !== rb) parent.set(rb, ra)
    }
    for (const n of names) {
      const node = this.nodes.get(n)!
      if (node.type !== 'source') for (const p of node.parents) union(n, p)
    }
    for (const entry of this.stores.values()) {
      if (entry.global) continue
      const users = [...entry.users]
      for (let i = 1; i < users.length; i++) union(users[0]!, users[i]!)
    }
    const order = new Map<string, number>(names.map((n, i) => [n, i]))
    const groups = new Map<string, TopologyNode[]>()
    for (const n of names) {
      const r = find(n)
      let list = groups.get(r)
      if (list === undefined) groups.set(r, (list = []))
      list.push(this.nodes.get(n)!)
    }
    const sorted = [...groups.values()].sort((a, b) => order.get(a[0]!.name)! - order.get(b[0]!.name)!)
    this.subtopologiesCache = sorted.map((nodes, id) => ({
      id,
      nodes,
      sourceTopics: nodes.flatMap((n) => (n.type === 'source' ? n.topics : [])),
      stores: [...new Set(nodes.flatMap((n) => (n.type === 'processor' ? n.stores : [])))],
    }))
    return this.subtopologiesCache
  }

  /** The sub-topology id of each source topic. */
  subtopologyOfTopic(topic: string): number | undefined {
    return this.subtopologies().find((s) => s.sourceTopics.includes(topic))?.id
  }

  /** Stores whose changelog is written (non-global, logging enabled). */
  changelogStores(): StoreEntry[] {
    return [...this.stores.values()].filter((e) => !e.global && e.builder.loggingEnabled)
  }

  /** Sink topics written by a sub-topology (literal names only). */
  sinkTopics(sub: Subtopology): string[] {
    return sub.nodes.flatMap((n) => (n.type === 'sink' && typeof n.topic === 'string' ? [n.topic] : []))
  }

  describe(): TopologyDescription {
    return new TopologyDescription(this)
  }
}

const names = (list: readonly string[]): string => (list.length === 0 ? 'none' : list.join(', '))

function describeNode(t: Topology, n: TopologyNode): string {
  if (n.type === 'source') return `Source: ${n.name} (topics: [${n.topics.join(', ')}])\n      --> ${names(n.children)}`
  if (n.type === 'processor') return `Processor: ${n.name} (stores: [${n.stores.join(', ')}])\n      --> ${names(n.children)}\n      <-- ${names(n.parents)}`
  const topic = typeof n.topic === 'string' ? `topic: ${n.topic}` : 'extractor: a TopicNameExtractor'
  void t
  return `Sink: ${n.name} (${topic})\n      <-- ${names(n.parents)}`
}

/** Kafka's TopologyDescription: toString() prints what Kafka Streams' describe() prints. */
export class TopologyDescription {
  readonly subtopologies: { id: number; nodes: { name: string; type: string; predecessors: string[]; successors: string[]; stores?: string[]; topics?: string[]; topic?: string }[] }[]
  readonly globalStores: { id: number; source: string; processor: string; topic: string; store: string }[]
  private readonly text: string

  constructor(t: Topology) {
    const subs = t.subtopologies()
    this.subtopologies = subs.map((s) => ({
      id: s.id,
      nodes: s.nodes.map((n) => ({
        name: n.name,
        type: n.type,
        predecessors: n.type === 'source' ? [] : n.parents,
        successors: n.children,
        ...(n.type === 'processor' ? { stores: n.stores } : {}),
        ...(n.type === 'source' ? { topics: n.topics } : {}),
        ...(n.type === 'sink' && typeof n.topic === 'string' ? { topic: n.topic } : {}),
      })),
    }))
    this.globalStores = t.globalStores.map((g, i) => ({ id: subs.length + i, source: g.sourceName, processor: g.processorName, topic: g.topic, store: g.storeName }))
    const parts: string[] = []
    for (const s of subs) parts.push(`Sub-topology: ${s.id}\n${s.nodes.map((n) => `    ${describeNode(t, n)}\n`).join('')}\n`)
    for (const g of this.globalStores) {
      const src = t.nodes.get(g.source)!
      const proc = t.nodes.get(g.processor)!
      parts.push(`Sub-topology: ${g.id} for global store (will not generate tasks)\n    ${describeNode(t, src)}\n    ${describeNode(t, proc)}\n`)
    }
    this.text = `Topologies:\n   ${parts.join('  ')}`
  }

  toString(): string {
    return this.text
  }
}
