// The DSL (Kafka's StreamsBuilder, KStream, KTable, GlobalKTable, KGroupedStream, KGroupedTable, the
// windowed and cogrouped streams, BranchedKStream): each operator adds nodes and stores to the
// topology under Kafka's generated names. Operators that change keys (map, selectKey, flatMap, groupBy,
// process) mark the stream as needing a repartition; the next key-based operation (an aggregation or a
// join) first writes it to an internal '<name>-repartition' topic and reads it back, so that each key
// lands in one task. Joins record their input topics as co-partitioned. The classes live in one module
// because they return one another.
import { TopologyException } from '../core/errors.js'
import { KeyValue } from '../core/record.js'
import { Serdes, type Serde } from '../core/serdes.js'
import type { ProcessorContext, ProcessorSupplier, StreamPartitioner, TopicNameExtractor } from '../processor/api.js'
import { supplierStores } from '../processor/api.js'
import type { Topology } from '../processor/topology.js'
import { Stores, type SessionBytesStoreSupplier, type StoreBuilder, type WindowBytesStoreSupplier } from '../state/builders.js'
import type { StateStore, Windowed } from '../state/stores.js'
import { Change, InternalBuilder, changeSerde, storeGetter, type ValueGetterSupplier } from './internal.js'
import { Consumed, Grouped, Joined, Materialized, Named, Produced, Repartitioned, StreamJoined, TableJoined } from './options.js'
import * as P from './processors.js'
import { JoinWindows, SessionWindows, SlidingWindows, Suppressed, TimeWindows, WindowedSerdes } from './windows.js'

type AnySupplier = ProcessorSupplier<unknown, unknown, unknown, unknown>
/* eslint-disable @typescript-eslint/no-explicit-any -- overload implementations of join, leftJoin and toStream */

/** Where a stream's records come from, for co-partitioning (topology topic names). */
interface Lineage {
  sourceTopics: string[]
}

/** One branch of split() (Kafka's Branched): a name, and what to do with the branch's stream. */
export class Branched<K, V> {
  private constructor(
    readonly name: string | undefined,
    readonly fn: ((stream: KStream<K, V>) => KStream<K, V> | void) | undefined,
  ) {}
  static as<K, V>(name: string): Branched<K, V> {
    return new Branched<K, V>(name, undefined)
  }
  static withFunction<K, V>(fn: (stream: KStream<K, V>) => KStream<K, V> | void, name?: string): Branched<K, V> {
    return new Branched<K, V>(name, fn)
  }
  static withConsumer<K, V>(fn: (stream: KStream<K, V>) => void, name?: string): Branched<K, V> {
    return new Branched<K, V>(name, fn)
  }
}

export class StreamsBuilder {
  private readonly b = new InternalBuilder()

  /** A stream of the records of one or more topics. */
  stream<K = unknown, V = unknown>(topics: string | readonly string[], consumed: Consumed<K, V> = Consumed.with<K, V>()): KStream<K, V> {
    const list = typeof topics === 'string' ? [topics] : [...topics]
    const name = consumed.name ?? this.b.newName('KSTREAM-SOURCE-')
    this.b.topology.addSource(name, list, {
      keyDeserializer: consumed.keySerde?.deserializer as never,
      valueDeserializer: consumed.valueSerde?.deserializer as never,
      timestampExtractor: consumed.timestampExtractor,
      offsetReset: consumed.offsetReset,
    })
    return new KStream<K, V>(this.b, name, consumed.keySerde, consumed.valueSerde, false, { sourceTopics: list })
  }

  /** A table of a topic: each record is the latest value of its key (null deletes), materialized in a store. */
  table<K = unknown, V = unknown>(topic: string, consumed: Consumed<K, V> = Consumed.with<K, V>(), materialized?: Materialized<K, V>): KTable<K, V> {
    const source = consumed.name ?? this.b.newName('KSTREAM-SOURCE-')
    this.b.topology.addSource(source, [topic], {
      keyDeserializer: consumed.keySerde?.deserializer as never,
      valueDeserializer: consumed.valueSerde?.deserializer as never,
      timestampExtractor: consumed.timestampExtractor,
      offsetReset: consumed.offsetReset,
    })
    const name = this.b.newName('KTABLE-SOURCE-')
    const storeName = materialized?.storeName ?? this.b.newStoreName(`${topic}-`)
    const keySerde = materialized?.keySerde ?? consumed.keySerde
    const valueSerde = materialized?.valueSerde ?? consumed.valueSerde
    this.b.topology.addProcessor(name, P.tableSourceProcessor(storeName), source)
    this.b.topology.addStateStore(this.b.keyValueStore(storeName, materialized, keySerde, valueSerde) as never, name)
    return new KTable<K, V>(this.b, name, keySerde, valueSerde, storeName, storeGetter(storeName), { sourceTopics: [topic] })
  }

  /** A table replicated in full to every instance, read by stream-globaltable joins. */
  globalTable<K = unknown, V = unknown>(topic: string, consumed: Consumed<K, V> = Consumed.with<K, V>(), materialized?: Materialized<K, V>): GlobalKTable<K, V> {
    const source = consumed.name ?? this.b.newName('KSTREAM-SOURCE-')
    const name = this.b.newName('KTABLE-SOURCE-')
    const storeName = materialized?.storeName ?? this.b.newStoreName(`${topic}-`)
    const keySerde = materialized?.keySerde ?? consumed.keySerde
    const valueSerde = materialized?.valueSerde ?? consumed.valueSerde
    const builder = this.b.keyValueStore(storeName, materialized, keySerde, valueSerde).withLoggingDisabled()
    this.b.topology.addGlobalStore(builder as never, source, topic, { keyDeserializer: consumed.keySerde?.deserializer, valueDeserializer: consumed.valueSerde?.deserializer, timestampExtractor: consumed.timestampExtractor }, name, P.tableSourceProcessor(storeName, false) as never)
    return new GlobalKTable<K, V>(storeName, keySerde, valueSerde)
  }

  addStateStore(builder: StoreBuilder<StateStore>): this {
    this.b.topology.addStateStore(builder)
    return this
  }

  addGlobalStore<K, V>(builder: StoreBuilder<StateStore>, topic: string, consumed: Consumed<K, V>, supplier: ProcessorSupplier<K, V, never, never>): this {
    const source = consumed.name ?? this.b.newName('KSTREAM-SOURCE-')
    const name = this.b.newName('KTABLE-SOURCE-')
    this.b.topology.addGlobalStore(builder, source, topic, { keyDeserializer: consumed.keySerde?.deserializer, valueDeserializer: consumed.valueSerde?.deserializer, timestampExtractor: consumed.timestampExtractor }, name, supplier)
    return this
  }

  build(): Topology {
    return this.b.topology
  }
}

export class KStream<K, V> {
  /** @internal */
  constructor(
    readonly builder: InternalBuilder,
    readonly nodeName: string,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    readonly repartitionRequired: boolean,
    readonly lineage: Lineage,
  ) {}

  private get t(): Topology {
    return this.builder.topology
  }

  private add<K2, V2>(prefix: string, supplier: AnySupplier, named: Named | undefined, keySerde: Serde<K2> | undefined, valueSerde: Serde<V2> | undefined, repartition: boolean): KStream<K2, V2> {
    const name = named?.name ?? this.builder.newName(prefix)
    this.t.addProcessor(name, supplier, this.nodeName)
    return new KStream<K2, V2>(this.builder, name, keySerde, valueSerde, repartition, this.lineage)
  }

  filter(predicate: (key: K, value: V) => boolean, named?: Named): KStream<K, V> {
    return this.add('KSTREAM-FILTER-', P.filterProcessor(predicate, false), named, this.keySerde, this.valueSerde, this.repartitionRequired)
  }

  filterNot(predicate: (key: K, value: V) => boolean, named?: Named): KStream<K, V> {
    return this.add('KSTREAM-FILTER-', P.filterProcessor(predicate, true), named, this.keySerde, this.valueSerde, this.repartitionRequired)
  }

  map<K2, V2>(mapper: (key: K, value: V) => KeyValue<K2, V2>, named?: Named): KStream<K2, V2> {
    return this.add<K2, V2>('KSTREAM-MAP-', P.mapProcessor(mapper), named, undefined, undefined, true)
  }

  mapValues<V2>(mapper: (value: V, key: K) => V2, named?: Named): KStream<K, V2> {
    return this.add<K, V2>('KSTREAM-MAPVALUES-', P.mapValuesProcessor(mapper), named, this.keySerde, undefined, this.repartitionRequired)
  }

  flatMap<K2, V2>(mapper: (key: K, value: V) => Iterable<KeyValue<K2, V2>>, named?: Named): KStream<K2, V2> {
    return this.add<K2, V2>('KSTREAM-FLATMAP-', P.flatMapProcessor(mapper), named, undefined, undefined, true)
  }

  flatMapValues<V2>(mapper: (value: V, key: K) => Iterable<V2>, named?: Named): KStream<K, V2> {
    return this.add<K, V2>('KSTREAM-FLATMAPVALUES-', P.flatMapValuesProcessor(mapper), named, this.keySerde, undefined, this.repartitionRequired)
  }

  selectKey<K2>(mapper: (key: K, value: V) => K2, named?: Named): KStream<K2, V> {
    return this.add<K2, V>('KSTREAM-KEY-SELECT-', P.selectKeyProcessor(mapper), named, undefined, this.valueSerde, true)
  }

  peek(action: (key: K, value: V) => void, named?: Named): KStream<K, V> {
    return this.add('KSTREAM-PEEK-', P.peekProcessor(action, true), named, this.keySerde, this.valueSerde, this.repartitionRequired)
  }

  foreach(action: (key: K, value: V) => void, named?: Named): void {
    this.add('KSTREAM-FOREACH-', P.peekProcessor(action, false), named, this.keySerde, this.valueSerde, false)
  }

  /** Splits the stream by predicates (Kafka's split().branch(...)); see BranchedKStream. */
  split(named?: Named): BranchedKStream<K, V> {
    const name = this.builder.newName('KSTREAM-BRANCH-')
    return new BranchedKStream(this, name, named?.name ?? name)
  }

  merge(other: KStream<K, V>, named?: Named): KStream<K, V> {
    const name = named?.name ?? this.builder.newName('KSTREAM-MERGE-')
    this.t.addProcessor(name, P.passThroughProcessor(), this.nodeName, other.nodeName)
    const sameSerdes = this.keySerde === other.keySerde && this.valueSerde === other.valueSerde
    return new KStream(this.builder, name, sameSerdes ? this.keySerde : undefined, sameSerdes ? this.valueSerde : undefined, this.repartitionRequired || other.repartitionRequired, { sourceTopics: [...this.lineage.sourceTopics, ...other.lineage.sourceTopics] })
  }

  /** Writes the stream to a topic (or to the topic a TopicNameExtractor picks per record). */
  to(topic: string | TopicNameExtractor<K, V>, produced: Produced<K, V> = Produced.with<K, V>()): void {
    const name = produced.name ?? this.builder.newName('KSTREAM-SINK-')
    this.t.addSink(name, topic, { keySerializer: (produced.keySerde ?? this.keySerde)?.serializer, valueSerializer: (produced.valueSerde ?? this.valueSerde)?.serializer, partitioner: produced.partitioner }, this.nodeName)
  }

  /** Kafka's deprecated through(): to(topic) then a new stream of it. */
  through(topic: string, produced: Produced<K, V> = Produced.with<K, V>()): KStream<K, V> {
    this.to(topic, produced)
    const source = this.builder.newName('KSTREAM-SOURCE-')
    const ks = produced.keySerde ?? this.keySerde
    const vs = produced.valueSerde ?? this.valueSerde
    this.t.addSource(source, [topic], { keyDeserializer: ks?.deserializer as never, valueDeserializer: vs?.deserializer as never })
    return new KStream(this.builder, source, ks, vs, false, { sourceTopics: [topic] })
  }

  /** Writes through an internal '<application.id>-<name>-repartition' topic and reads it back. */
  repartition(repartitioned: Repartitioned<K, V> = Repartitioned.with<K, V>()): KStream<K, V> {
    const base = repartitioned.name ?? this.builder.newName('KSTREAM-REPARTITION-')
    return this.repartitionThrough(base, repartitioned.keySerde ?? this.keySerde, repartitioned.valueSerde ?? this.valueSerde, repartitioned.numberOfPartitions, repartitioned.partitioner)
  }

  /** @internal */
  repartitionThrough(base: string, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined, numPartitions?: number, partitioner?: StreamPartitioner<K, V>): KStream<K, V> {
    const topic = `${base}-repartition`
    if (this.t.repartitionTopics.has(topic)) throw new TopologyException(`repartition topic '${topic}' is already used: give the operation another name`)
    this.t.addRepartitionTopic(topic, numPartitions)
    const filter = this.builder.newName('KSTREAM-FILTER-')
    this.t.addProcessor(filter, P.dropNullKeys(), this.nodeName)
    const sink = this.builder.newName('KSTREAM-SINK-')
    this.t.addSink(sink, topic, { keySerializer: keySerde?.serializer, valueSerializer: valueSerde?.serializer, partitioner }, filter)
    const source = this.builder.newName('KSTREAM-SOURCE-')
    this.t.addSource(source, [topic], { keyDeserializer: keySerde?.deserializer as never, valueDeserializer: valueSerde?.deserializer as never })
    return new KStream(this.builder, source, keySerde, valueSerde, false, { sourceTopics: [topic] })
  }

  /** @internal The stream itself, or repartitioned when a key-changing operation came before. */
  repartitionIfRequired(base: string, keySerde: Serde<K> | undefined, valueSerde: Serde<V> | undefined): KStream<K, V> {
    return this.repartitionRequired ? this.repartitionThrough(base, keySerde, valueSerde) : this
  }

  /** Runs a Processor API processor on each record; its output may have new keys and values. */
  process<KOut, VOut>(supplier: ProcessorSupplier<K, V, KOut, VOut>, ...storeNames: (string | Named)[]): KStream<KOut, VOut> {
    const named = storeNames.find((s): s is Named => s instanceof Named)
    const stores = storeNames.filter((s): s is string => typeof s === 'string')
    const name = named?.name ?? this.builder.newName('KSTREAM-PROCESSOR-')
    this.t.addProcessor(name, supplier, this.nodeName)
    if (stores.length > 0) this.t.connectProcessorAndStateStores(name, ...stores)
    return new KStream<KOut, VOut>(this.builder, name, undefined, undefined, true, this.lineage)
  }

  /** As process, for processors that keep each record's key (no repartition needed afterwards). */
  processValues<VOut>(supplier: ProcessorSupplier<K, V, K, VOut>, ...storeNames: (string | Named)[]): KStream<K, VOut> {
    const named = storeNames.find((s): s is Named => s instanceof Named)
    const stores = storeNames.filter((s): s is string => typeof s === 'string')
    const name = named?.name ?? this.builder.newName('KSTREAM-PROCESSVALUES-')
    this.t.addProcessor(name, supplier, this.nodeName)
    if (stores.length > 0) this.t.connectProcessorAndStateStores(name, ...stores)
    void supplierStores
    return new KStream<K, VOut>(this.builder, name, this.keySerde, undefined, this.repartitionRequired, this.lineage)
  }

  groupByKey(grouped: Grouped<K, V> = Grouped.with<K, V>()): KGroupedStream<K, V> {
    return new KGroupedStream(this, grouped.keySerde ?? this.keySerde, grouped.valueSerde ?? this.valueSerde, grouped.name)
  }

  groupBy<K2>(selector: (key: K, value: V) => K2, grouped: Grouped<K2, V> = Grouped.with<K2, V>()): KGroupedStream<K2, V> {
    const selected = this.add<K2, V>('KSTREAM-KEY-SELECT-', P.selectKeyProcessor(selector), undefined, undefined, this.valueSerde, true)
    return new KGroupedStream(selected, grouped.keySerde, grouped.valueSerde ?? this.valueSerde, grouped.name)
  }

  toTable(named?: Named, materialized?: Materialized<K, V>): KTable<K, V> {
    const keySerde = materialized?.keySerde ?? this.keySerde
    const valueSerde = materialized?.valueSerde ?? this.valueSerde
    const storeName = materialized?.storeName ?? this.builder.newStoreName('KSTREAM-TOTABLE-')
    const input = this.repartitionIfRequired(storeName, keySerde, valueSerde)
    const name = named?.name ?? this.builder.newName('KSTREAM-TOTABLE-')
    this.t.addProcessor(name, P.streamToTableProcessor(storeName), input.nodeName)
    this.t.addStateStore(this.builder.keyValueStore(storeName, materialized, keySerde, valueSerde) as never, name)
    return new KTable(this.builder, name, keySerde, valueSerde, storeName, storeGetter(storeName), input.lineage)
  }

  /** Stream-stream join (windowed), stream-table join, or stream-globaltable join (with a key selector). */
  join<VO, VR>(other: KStream<K, VO>, joiner: (value: V, otherValue: VO) => VR, windows: JoinWindows, streamJoined?: StreamJoined<K, V, VO>): KStream<K, VR>
  join<VT, VR>(table: KTable<K, VT>, joiner: (value: V, tableValue: VT) => VR, joined?: Joined<K, V, VT>): KStream<K, VR>
  join<GK, GV, VR>(table: GlobalKTable<GK, GV>, keySelector: (key: K, value: V) => GK, joiner: (value: V, globalValue: GV) => VR): KStream<K, VR>
  join(other: unknown, a: unknown, b?: unknown, c?: unknown): KStream<K, unknown> {
    return this.anyJoin('inner', other, a, b, c)
  }

  leftJoin<VO, VR>(other: KStream<K, VO>, joiner: (value: V, otherValue: VO | null) => VR, windows: JoinWindows, streamJoined?: StreamJoined<K, V, VO>): KStream<K, VR>
  leftJoin<VT, VR>(table: KTable<K, VT>, joiner: (value: V, tableValue: VT | null) => VR, joined?: Joined<K, V, VT>): KStream<K, VR>
  leftJoin<GK, GV, VR>(table: GlobalKTable<GK, GV>, keySelector: (key: K, value: V) => GK, joiner: (value: V, globalValue: GV | null) => VR): KStream<K, VR>
  leftJoin(other: unknown, a: unknown, b?: unknown, c?: unknown): KStream<K, unknown> {
    return this.anyJoin('left', other, a, b, c)
  }

  outerJoin<VO, VR>(other: KStream<K, VO>, joiner: (value: V | null, otherValue: VO | null) => VR, windows: JoinWindows, streamJoined?: StreamJoined<K, V, VO>): KStream<K, VR> {
    return this.streamStreamJoin('outer', other, joiner as never, windows, streamJoined) as KStream<K, VR>
  }

  private anyJoin(kind: 'inner' | 'left', other: unknown, a: unknown, b: unknown, c: unknown): KStream<K, unknown> {
    if (other instanceof KStream) return this.streamStreamJoin(kind, other, a as never, b as JoinWindows, c as StreamJoined<K, V, unknown> | undefined)
    if (other instanceof KTable) return this.streamTableJoin(kind, other, a as never, b as Joined<K, V, unknown> | undefined)
    if (other instanceof GlobalKTable) return this.globalTableJoin(kind, other, a as never, b as never)
    throw new TopologyException('join() takes a KStream, a KTable or a GlobalKTable')
  }

  private streamStreamJoin<VO>(kind: 'inner' | 'left' | 'outer', other: KStream<K, VO>, joiner: (v: V | null, vo: VO | null, key: K) => unknown, windows: JoinWindows, sj: StreamJoined<K, V, VO> = StreamJoined.with<K, V, VO>()): KStream<K, unknown> {
    if (!(windows instanceof JoinWindows)) throw new TopologyException('a stream-stream join needs JoinWindows')
    const keySerde = sj.keySerde ?? this.keySerde ?? other.keySerde
    const thisSerde = sj.valueSerde ?? this.valueSerde
    const otherSerde = sj.otherValueSerde ?? other.valueSerde
    const prefix = kind === 'inner' ? 'KSTREAM-JOIN' : kind === 'left' ? 'KSTREAM-LEFTJOIN' : 'KSTREAM-OUTERJOIN'
    const left = this.repartitionIfRequired(sj.name !== undefined ? `${sj.name}-left` : this.builder.newName(`${prefix}THIS-`), keySerde, thisSerde)
    const right = other.repartitionIfRequired(sj.name !== undefined ? `${sj.name}-right` : this.builder.newName(`${prefix}OTHER-`), keySerde, otherSerde)
    this.t.copartition([...left.lineage.sourceTopics, ...right.lineage.sourceTopics])
    const thisWindowName = sj.name !== undefined ? `${sj.name}-this-windowed` : this.builder.newName('KSTREAM-WINDOWED-')
    const otherWindowName = sj.name !== undefined ? `${sj.name}-other-windowed` : this.builder.newName('KSTREAM-WINDOWED-')
    const thisStore = sj.storeName !== undefined ? `${sj.storeName}-this-join-store` : this.builder.newStoreName(`${kind === 'outer' ? 'KSTREAM-OUTERTHIS-' : 'KSTREAM-JOINTHIS-'}`)
    const otherStore = sj.storeName !== undefined ? `${sj.storeName}-other-join-store` : this.builder.newStoreName(`${kind === 'inner' ? 'KSTREAM-JOINOTHER-' : 'KSTREAM-OUTEROTHER-'}`)
    const retention = windows.size() + windows.graceMs
    const window = (name: string, serde: Serde<unknown> | undefined): StoreBuilder<StateStore> => {
      const b = Stores.windowStoreBuilder(Stores.persistentWindowStore(name, Math.max(retention, windows.size() + 1), windows.size() + 1, true), keySerde as Serde<unknown> | undefined, serde)
      return (sj.loggingEnabled ? b : b.withLoggingDisabled()) as StoreBuilder<StateStore>
    }
    this.t.addProcessor(thisWindowName, P.joinWindowProcessor(thisStore), left.nodeName)
    this.t.addProcessor(otherWindowName, P.joinWindowProcessor(otherStore), right.nodeName)
    this.t.addStateStore(window(thisStore, thisSerde as Serde<unknown> | undefined), thisWindowName)
    this.t.addStateStore(window(otherStore, otherSerde as Serde<unknown> | undefined), otherWindowName)
    let outerStore: string | null = null
    if (kind !== 'inner') {
      outerStore = sj.storeName !== undefined ? `${sj.storeName}-outer-shared-join-store` : this.builder.newStoreName('KSTREAM-OUTERSHARED-')
      const b = Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(outerStore), Serdes.Bytes(), Serdes.Bytes())
      this.t.addStateStore((sj.loggingEnabled ? b : b.withLoggingDisabled()) as StoreBuilder<StateStore>)
    }
    const thisJoin = sj.name !== undefined ? `${sj.name}-join-this` : this.builder.newName(`${prefix === 'KSTREAM-JOIN' ? 'KSTREAM-JOINTHIS-' : kind === 'left' ? 'KSTREAM-JOINTHIS-' : 'KSTREAM-OUTERTHIS-'}`)
    const otherJoin = sj.name !== undefined ? `${sj.name}-join-other` : this.builder.newName(`${kind === 'inner' ? 'KSTREAM-JOINOTHER-' : 'KSTREAM-OUTEROTHER-'}`)
    const common = { outerStore, windows, joiner: joiner as never, keySerde }
    this.t.addProcessor(thisJoin, P.streamStreamJoinProcessor({ ...common, otherStore, isThis: true, emitUnmatchedThis: kind !== 'inner', otherMayWait: kind === 'outer', thisValueSerde: thisSerde, otherValueSerde: otherSerde }), thisWindowName)
    this.t.addProcessor(otherJoin, P.streamStreamJoinProcessor({ ...common, otherStore: thisStore, isThis: false, emitUnmatchedThis: kind === 'outer', otherMayWait: kind !== 'inner', thisValueSerde: otherSerde, otherValueSerde: thisSerde }), otherWindowName)
    this.t.connectProcessorAndStateStores(thisJoin, otherStore)
    this.t.connectProcessorAndStateStores(otherJoin, thisStore)
    if (outerStore !== null) {
      this.t.connectProcessorAndStateStores(thisJoin, outerStore)
      this.t.connectProcessorAndStateStores(otherJoin, outerStore)
    }
    const merge = sj.name !== undefined ? `${sj.name}-merge` : this.builder.newName('KSTREAM-MERGE-')
    this.t.addProcessor(merge, P.passThroughProcessor(), thisJoin, otherJoin)
    return new KStream(this.builder, merge, keySerde, undefined, false, { sourceTopics: [...left.lineage.sourceTopics, ...right.lineage.sourceTopics] })
  }

  private streamTableJoin<VT>(kind: 'inner' | 'left', table: KTable<K, VT>, joiner: (v: V, vt: VT | null, key: K) => unknown, joined: Joined<K, V, VT> = Joined.with<K, V, VT>()): KStream<K, unknown> {
    const keySerde = joined.keySerde ?? this.keySerde ?? table.keySerde
    const input = this.repartitionIfRequired(joined.name ?? this.builder.newName('KSTREAM-JOIN-'), keySerde, joined.valueSerde ?? this.valueSerde)
    this.t.copartition([...input.lineage.sourceTopics, ...table.lineage.sourceTopics])
    const name = joined.name ?? this.builder.newName('KSTREAM-JOIN-')
    this.t.addProcessor(name, P.streamTableJoinProcessor(table.valueGetter, joiner, kind === 'left'), input.nodeName)
    this.t.connectProcessorAndStateStores(name, ...table.valueGetter.storeNames)
    return new KStream(this.builder, name, keySerde, undefined, false, input.lineage)
  }

  private globalTableJoin<GK, GV>(kind: 'inner' | 'left', table: GlobalKTable<GK, GV>, keySelector: (key: K, value: V) => GK, joiner: (v: V, gv: GV | null, key: K) => unknown): KStream<K, unknown> {
    const name = this.builder.newName('KSTREAM-JOIN-')
    this.t.addProcessor(name, P.streamGlobalTableJoinProcessor(table.storeName, keySelector, joiner, kind === 'left'), this.nodeName)
    return new KStream(this.builder, name, this.keySerde, undefined, this.repartitionRequired, this.lineage)
  }
}

/** split(): branches by predicate, the first match wins (Kafka's BranchedKStream). */
export class BranchedKStream<K, V> {
  private readonly branches: { predicate: (key: K, value: V) => boolean; child: string; name: string; fn?: (s: KStream<K, V>) => KStream<K, V> | void }[] = []
  private ended = false

  constructor(
    private readonly parent: KStream<K, V>,
    private readonly processorName: string,
    private readonly prefix: string,
  ) {}

  branch(predicate: (key: K, value: V) => boolean, branched?: Branched<K, V>): this {
    if (this.ended) throw new TopologyException('split() was already ended by defaultBranch() or noDefaultBranch()')
    const name = `${this.prefix}${branched?.name ?? String(this.branches.length + 1)}`
    this.branches.push({ predicate, child: name, name, fn: branched?.fn })
    return this
  }

  defaultBranch(branched?: Branched<K, V>): Map<string, KStream<K, V>> {
    return this.end({ name: `${this.prefix}${branched?.name ?? '0'}`, fn: branched?.fn })
  }

  noDefaultBranch(): Map<string, KStream<K, V>> {
    return this.end(null)
  }

  private end(def: { name: string; fn?: (s: KStream<K, V>) => KStream<K, V> | void } | null): Map<string, KStream<K, V>> {
    if (this.ended) throw new TopologyException('split() was already ended')
    this.ended = true
    const b = this.parent.builder
    const t = b.topology
    t.addProcessor(this.processorName, P.branchProcessor(this.branches.map((x) => ({ predicate: x.predicate, child: x.child })), def?.name ?? null), this.parent.nodeName)
    const out = new Map<string, KStream<K, V>>()
    const all = [...this.branches.map((x) => ({ name: x.name, fn: x.fn })), ...(def !== null ? [def] : [])]
    for (const x of all) {
      t.addProcessor(x.name, P.passThroughProcessor(), this.processorName)
      const s = new KStream<K, V>(b, x.name, this.parent.keySerde, this.parent.valueSerde, this.parent.repartitionRequired, this.parent.lineage)
      const result = x.fn !== undefined ? x.fn(s) : s
      if (result instanceof KStream) out.set(x.name, result)
    }
    return out
  }
}

export class KTable<K, V> {
  /** @internal */
  constructor(
    readonly builder: InternalBuilder,
    readonly nodeName: string,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    /** The store that holds the table, when it is materialized. */
    readonly storeName: string | null,
    readonly valueGetter: ValueGetterSupplier<K, V>,
    readonly lineage: Lineage,
    /** Windowed tables: the grace period of their windows (for suppress). */
    readonly windowGraceMs: number | null = null,
  ) {}

  private get t(): Topology {
    return this.builder.topology
  }

  /** The name of the store to query, or null when the table is not materialized. */
  queryableStoreName(): string | null {
    return this.storeName
  }

  /** A derived table, materialized when asked: its own store and getter, else computed through the parent's getter. */
  private derive<V2>(prefix: string, supplier: (storeName: string | null) => AnySupplier, getter: ValueGetterSupplier<K, V2>, materialized: Materialized<K, V2> | undefined, valueSerde: Serde<V2> | undefined, named?: Named): KTable<K, V2> {
    const name = named?.name ?? this.builder.newName(prefix)
    const storeName = materialized !== undefined ? (materialized.storeName ?? this.builder.newStoreName(prefix)) : null
    this.t.addProcessor(name, supplier(storeName), this.nodeName)
    if (storeName !== null) {
      this.t.addStateStore(this.builder.keyValueStore(storeName, materialized, this.keySerde, valueSerde) as never, name)
      return new KTable(this.builder, name, materialized!.keySerde ?? this.keySerde, materialized!.valueSerde ?? valueSerde, storeName, storeGetter(storeName), this.lineage, this.windowGraceMs)
    }
    return new KTable(this.builder, name, this.keySerde, valueSerde, null, getter, this.lineage, this.windowGraceMs)
  }

  filter(predicate: (key: K, value: V) => boolean, materialized?: Materialized<K, V>, named?: Named): KTable<K, V> {
    return this.derive('KTABLE-FILTER-', (s) => P.tableFilterProcessor(predicate, false, s), filteredGetter(this.valueGetter, predicate, false), materialized, this.valueSerde, named)
  }

  filterNot(predicate: (key: K, value: V) => boolean, materialized?: Materialized<K, V>, named?: Named): KTable<K, V> {
    return this.derive('KTABLE-FILTER-', (s) => P.tableFilterProcessor(predicate, true, s), filteredGetter(this.valueGetter, predicate, true), materialized, this.valueSerde, named)
  }

  mapValues<V2>(mapper: (value: V, key: K) => V2, materialized?: Materialized<K, V2>, named?: Named): KTable<K, V2> {
    return this.derive('KTABLE-MAPVALUES-', (s) => P.tableMapValuesProcessor(mapper, s), mappedGetter(this.valueGetter, mapper), materialized, materialized?.valueSerde, named)
  }

  /** The table's changelog stream: each update as a record (a deletion as a null value). */
  toStream(named?: Named): KStream<K, V>
  toStream<K2>(mapper: (key: K, value: V | null) => K2, named?: Named): KStream<K2, V>
  toStream(a?: Named | ((key: K, value: V | null) => unknown), b?: Named): KStream<any, V> {
    const named = a instanceof Named ? a : (b as Named | undefined)
    const name = named?.name ?? this.builder.newName('KTABLE-TOSTREAM-')
    this.t.addProcessor(name, P.tableToStreamProcessor(null), this.nodeName)
    const s = new KStream<K, V>(this.builder, name, this.keySerde, this.valueSerde, false, this.lineage)
    if (typeof a === 'function') return s.selectKey((k, v) => (a as (k: K, v: V | null) => unknown)(k, v)) as KStream<unknown, V>
    return s as KStream<unknown, V>
  }

  /** Holds back updates (final results of windows, or at most one update per key per time limit). */
  suppress(suppressed: Suppressed): KTable<K, V> {
    const name = suppressed.name ?? this.builder.newName('KTABLE-SUPPRESS-')
    const storeName = suppressed.name !== undefined ? `${suppressed.name}-store` : this.builder.newStoreName('KTABLE-SUPPRESS-')
    if (suppressed.mode === 'untilWindowCloses' && this.windowGraceMs === null) throw new TopologyException('suppress(untilWindowCloses) needs a windowed KTable (the result of a windowed aggregation)')
    const grace = this.windowGraceMs ?? 0
    const ks = this.keySerde
    const vs = this.valueSerde
    this.t.addProcessor(
      name,
      P.suppressProcessor<K, V>(storeName, suppressed, grace, (ctx) => ks ?? (ctx.keySerde() as Serde<K>), (ctx) => vs ?? (ctx.valueSerde() as Serde<V>)),
      this.nodeName,
    )
    this.t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(storeName), Serdes.Bytes(), Serdes.Bytes()) as never, name)
    return new KTable(this.builder, name, this.keySerde, this.valueSerde, null, this.valueGetter, this.lineage, this.windowGraceMs)
  }

  /** Table-table join on the key, or (with a foreign-key extractor) a foreign-key join. */
  join<VO, VR>(other: KTable<K, VO>, joiner: (value: V, otherValue: VO) => VR, materialized?: Materialized<K, VR>): KTable<K, VR>
  join<KO, VO, VR>(other: KTable<KO, VO>, foreignKeyExtractor: (value: V) => KO, joiner: (value: V, otherValue: VO) => VR, tableJoined?: TableJoined<K, KO>, materialized?: Materialized<K, VR>): KTable<K, VR>
  join(other: KTable<any, any>, a: (...args: any[]) => any, b?: any, c?: any, d?: any): KTable<K, any> {
    if (typeof b === 'function') return this.fkJoin(false, other, a as never, b as never, c as TableJoined<K, unknown> | undefined, d as Materialized<K, unknown> | undefined)
    return this.tableJoin('inner', other as KTable<K, unknown>, a as never, b as Materialized<K, unknown> | undefined)
  }

  leftJoin<VO, VR>(other: KTable<K, VO>, joiner: (value: V, otherValue: VO | null) => VR, materialized?: Materialized<K, VR>): KTable<K, VR>
  leftJoin<KO, VO, VR>(other: KTable<KO, VO>, foreignKeyExtractor: (value: V) => KO, joiner: (value: V, otherValue: VO | null) => VR, tableJoined?: TableJoined<K, KO>, materialized?: Materialized<K, VR>): KTable<K, VR>
  leftJoin(other: KTable<any, any>, a: (...args: any[]) => any, b?: any, c?: any, d?: any): KTable<K, any> {
    if (typeof b === 'function') return this.fkJoin(true, other, a as never, b as never, c as TableJoined<K, unknown> | undefined, d as Materialized<K, unknown> | undefined)
    return this.tableJoin('left', other as KTable<K, unknown>, a as never, b as Materialized<K, unknown> | undefined)
  }

  outerJoin<VO, VR>(other: KTable<K, VO>, joiner: (value: V | null, otherValue: VO | null) => VR, materialized?: Materialized<K, VR>): KTable<K, VR> {
    return this.tableJoin('outer', other, joiner as never, materialized) as KTable<K, VR>
  }

  private tableJoin<VO>(kind: 'inner' | 'left' | 'outer', other: KTable<K, VO>, joiner: (v: V | null, vo: VO | null) => unknown, materialized?: Materialized<K, unknown>): KTable<K, unknown> {
    this.t.copartition([...this.lineage.sourceTopics, ...other.lineage.sourceTopics])
    const prefix = kind === 'inner' ? 'KTABLE-JOIN' : kind === 'left' ? 'KTABLE-LEFTJOIN' : 'KTABLE-OUTERJOIN'
    const thisName = this.builder.newName(`${prefix}THIS-`)
    const otherName = this.builder.newName(`${prefix}OTHER-`)
    const merge = this.builder.newName('KTABLE-MERGE-')
    const storeName = materialized !== undefined ? (materialized.storeName ?? this.builder.newStoreName('KTABLE-JOINED-')) : null
    const flip = <A, B>(f: (a: A | null, b: B | null) => unknown) => (b: B | null, a: A | null) => f(a, b)
    const thisMode = { thisRequired: kind !== 'outer', otherRequired: kind === 'inner' }
    const otherMode = { thisRequired: kind === 'inner', otherRequired: kind !== 'outer' }
    this.t.addProcessor(thisName, P.tableTableJoinProcessor(other.valueGetter, joiner, thisMode, null), this.nodeName)
    this.t.addProcessor(otherName, P.tableTableJoinProcessor(this.valueGetter, flip(joiner), otherMode, null), other.nodeName)
    this.t.connectProcessorAndStateStores(thisName, ...other.valueGetter.storeNames)
    this.t.connectProcessorAndStateStores(otherName, ...this.valueGetter.storeNames)
    this.t.addProcessor(merge, storeName !== null ? P.tableMaterializeProcessor(storeName) : P.passThroughProcessor(), thisName, otherName)
    const getter = P.joinedGetter(this.valueGetter, other.valueGetter, joiner, { leftRequired: kind !== 'outer', rightRequired: kind === 'inner' })
    if (storeName !== null) {
      this.t.addStateStore(this.builder.keyValueStore(storeName, materialized, this.keySerde, materialized!.valueSerde) as never, merge)
      return new KTable(this.builder, merge, this.keySerde, materialized!.valueSerde, storeName, storeGetter(storeName), { sourceTopics: [...this.lineage.sourceTopics, ...other.lineage.sourceTopics] })
    }
    return new KTable(this.builder, merge, this.keySerde, undefined, null, getter, { sourceTopics: [...this.lineage.sourceTopics, ...other.lineage.sourceTopics] })
  }

  /**
   * Foreign-key join (KIP-213): each left row subscribes to the right row its foreign key names, through
   * a subscription registration topic partitioned like the right table; the right side answers through
   * a subscription response topic partitioned like the left table; the answer is joined with the left
   * row if the row has not changed meanwhile.
   */
  private fkJoin<KO, VO>(leftJoin: boolean, other: KTable<KO, VO>, fkExtractor: (value: V) => KO, joiner: (v: V, vo: VO | null) => unknown, tableJoined?: TableJoined<K, KO>, materialized?: Materialized<K, unknown>): KTable<K, unknown> {
    const b = this.builder
    const t = this.t
    const base = tableJoined?.name
    const registration = base !== undefined ? `${base}-subscription-registration` : b.newName('KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-')
    const response = base !== undefined ? `${base}-subscription-response` : b.newName('KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-')
    const registrationTopic = `${registration}-topic`
    const responseTopic = `${response}-topic`
    const subscriptionStore = base !== undefined ? `${base}-subscription-store` : b.newStoreName('KTABLE-FK-JOIN-SUBSCRIPTION-')
    // The internal topics take their partition counts from the tables they must be co-partitioned with.
    t.addRepartitionTopic(registrationTopic)
    t.addRepartitionTopic(responseTopic)
    t.copartition([registrationTopic, ...other.lineage.sourceTopics])
    t.copartition([responseTopic, ...this.lineage.sourceTopics])
    const subSerde = P.subscriptionSerde<K>(this.keySerde)
    const respSerde = P.responseSerde<VO>(other.valueSerde)
    // Left side: send subscriptions.
    const send = b.newName('KTABLE-FK-JOIN-SUBSCRIPTION-SEND-')
    const registrationSink = b.newName('KTABLE-SINK-')
    const resultNode = b.newName('KTABLE-FK-JOIN-OUTPUT-')
    t.addProcessor(send, P.fkSubscriptionSendProcessor<K, V, KO, unknown>({ fkExtractor, leftJoin, valueSerde: this.valueSerde, foreignKeySerde: other.keySerde, registrationSink, resultChild: resultNode, joiner: joiner as never }), this.nodeName)
    t.addSink(registrationSink, registrationTopic, { keySerializer: other.keySerde?.serializer, valueSerializer: subSerde.serializer as never }, send)
    // Right side: receive subscriptions, answer them and answer again on right-side changes.
    const regSource = b.newName('KSTREAM-SOURCE-')
    t.addSource(regSource, [registrationTopic], { keyDeserializer: other.keySerde?.deserializer as never, valueDeserializer: subSerde.deserializer as never })
    const receive = b.newName('KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-')
    t.addProcessor(receive, P.fkSubscriptionReceiveProcessor<KO, VO, K>({ storeName: subscriptionStore, rightGetter: other.valueGetter, primaryKeySerde: this.keySerde, foreignKeySerde: other.keySerde }), regSource)
    t.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore(subscriptionStore), Serdes.Bytes(), Serdes.Bytes()) as never, receive)
    t.connectProcessorAndStateStores(receive, ...other.valueGetter.storeNames)
    const rightChange = b.newName('KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-')
    t.addProcessor(rightChange, P.fkRightChangeProcessor<KO, VO, K>({ storeName: subscriptionStore, primaryKeySerde: this.keySerde, foreignKeySerde: other.keySerde }), other.nodeName)
    t.connectProcessorAndStateStores(rightChange, subscriptionStore)
    const responseSink = b.newName('KTABLE-SINK-')
    t.addSink(responseSink, responseTopic, { keySerializer: this.keySerde?.serializer, valueSerializer: respSerde.serializer as never }, receive, rightChange)
    // Left side again: join the responses.
    const respSource = b.newName('KSTREAM-SOURCE-')
    t.addSource(respSource, [responseTopic], { keyDeserializer: this.keySerde?.deserializer as never, valueDeserializer: respSerde.deserializer as never })
    const resolve = b.newName('KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-')
    t.addProcessor(resolve, P.fkResponseJoinProcessor<K, V, VO, unknown>({ leftGetter: this.valueGetter, valueSerde: this.valueSerde, joiner, leftJoin }), respSource)
    t.connectProcessorAndStateStores(resolve, ...this.valueGetter.storeNames)
    const storeName = materialized !== undefined ? (materialized.storeName ?? b.newStoreName('KTABLE-FK-JOIN-OUTPUT-')) : null
    t.addProcessor(resultNode, storeName !== null ? P.tableMaterializeProcessor(storeName) : P.passThroughProcessor(), send, resolve)
    if (storeName !== null) {
      t.addStateStore(b.keyValueStore(storeName, materialized, this.keySerde, materialized!.valueSerde) as never, resultNode)
      return new KTable(b, resultNode, this.keySerde, materialized!.valueSerde, storeName, storeGetter(storeName), this.lineage)
    }
    const noGetter: ValueGetterSupplier<K, unknown> = {
      storeNames: [],
      init() {
        throw new TopologyException('the result of a foreign-key join must be materialized (Materialized) to be joined or looked up')
      },
    }
    return new KTable(b, resultNode, this.keySerde, undefined, null, noGetter, this.lineage)
  }

  /** Groups by a new key: the next aggregation subtracts each row's old value from its old group and adds the new. */
  groupBy<K2, V2>(selector: (key: K, value: V) => KeyValue<K2, V2>, grouped: Grouped<K2, V2> = Grouped.with<K2, V2>()): KGroupedTable<K2, V2> {
    const name = grouped.name !== undefined ? `${grouped.name}-select` : this.builder.newName('KTABLE-SELECT-')
    this.t.addProcessor(name, P.tableRepartitionMapProcessor(selector), this.nodeName)
    return new KGroupedTable<K2, V2>(this.builder, name, grouped.keySerde, grouped.valueSerde, grouped.name)
  }
}

function filteredGetter<K, V>(parent: ValueGetterSupplier<K, V>, predicate: (key: K, value: V) => boolean, not: boolean): ValueGetterSupplier<K, V> {
  return {
    storeNames: parent.storeNames,
    init(ctx) {
      const get = parent.init(ctx)
      return (key) => {
        const v = get(key)
        return v !== null && predicate(key, v.value) !== not ? v : null
      }
    },
  }
}

function mappedGetter<K, V, V2>(parent: ValueGetterSupplier<K, V>, mapper: (value: V, key: K) => V2): ValueGetterSupplier<K, V2> {
  return {
    storeNames: parent.storeNames,
    init(ctx) {
      const get = parent.init(ctx)
      return (key) => {
        const v = get(key)
        return v === null ? null : { value: mapper(v.value, key), timestamp: v.timestamp }
      }
    },
  }
}

export class GlobalKTable<K, V> {
  /** @internal */
  constructor(
    readonly storeName: string,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
  ) {}

  queryableStoreName(): string {
    return this.storeName
  }
}

/** The aggregation result's store: the name Materialized gives, or a generated one. */
function storeNameFor(b: InternalBuilder, m: Materialized<unknown, unknown> | undefined, prefix: string): string {
  return m?.storeName ?? b.newStoreName(prefix)
}

const LONG = Serdes.Long()

export class KGroupedStream<K, V> {
  /** @internal */
  constructor(
    readonly stream: KStream<K, V>,
    readonly keySerde: Serde<K> | undefined,
    readonly valueSerde: Serde<V> | undefined,
    readonly groupName: string | undefined,
  ) {}

  /** @internal The input of the aggregation, repartitioned when needed (named after the group or the store). */
  input(storeName: string): KStream<K, V> {
    return this.stream.repartitionIfRequired(this.groupName ?? storeName, this.keySerde, this.valueSerde)
  }

  private aggregateWith<VA>(prefix: string, supplier: (storeName: string) => AnySupplier, materialized: Materialized<K, VA> | undefined, valueSerde: Serde<VA> | undefined, named?: Named): KTable<K, VA> {
    const b = this.stream.builder
    const storeName = storeNameFor(b, materialized as Materialized<unknown, unknown> | undefined, prefix)
    const input = this.input(storeName)
    const name = named?.name ?? b.newName(prefix)
    const keySerde = materialized?.keySerde ?? this.keySerde
    const vs = materialized?.valueSerde ?? valueSerde
    b.topology.addProcessor(name, supplier(storeName), input.nodeName)
    const store = b.keyValueStore(storeName, materialized, keySerde, vs)
    // The record cache (Kafka's default for the DSL's stores): on unless Materialized turns it off.
    if (materialized?.cachingEnabled !== false) store.withCachingEnabled()
    b.topology.addStateStore(store as never, name)
    return new KTable<K, VA>(b, name, keySerde, vs, storeName, storeGetter(storeName), input.lineage)
  }

  count(materialized?: Materialized<K, number>, named?: Named): KTable<K, number> {
    return this.aggregateWith<number>('KSTREAM-AGGREGATE-', (s) => P.streamAggregateProcessor<K, V, number>(s, () => 0, (_k, _v, n) => n + 1), materialized, materialized?.valueSerde ?? LONG, named)
  }

  reduce(reducer: (agg: V, value: V) => V, materialized?: Materialized<K, V>, named?: Named): KTable<K, V> {
    return this.aggregateWith<V>('KSTREAM-REDUCE-', (s) => P.streamReduceProcessor<K, V>(s, reducer), materialized, this.valueSerde, named)
  }

  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, agg: VA) => VA, materialized?: Materialized<K, VA>, named?: Named): KTable<K, VA> {
    return this.aggregateWith<VA>('KSTREAM-AGGREGATE-', (s) => P.streamAggregateProcessor(s, initializer, aggregator), materialized, undefined, named)
  }

  windowedBy(windows: TimeWindows): TimeWindowedKStream<K, V>
  windowedBy(windows: SlidingWindows): TimeWindowedKStream<K, V>
  windowedBy(windows: SessionWindows): SessionWindowedKStream<K, V>
  windowedBy(windows: TimeWindows | SlidingWindows | SessionWindows): TimeWindowedKStream<K, V> | SessionWindowedKStream<K, V> {
    if (windows instanceof SessionWindows) return new SessionWindowedKStream(this, windows)
    return new TimeWindowedKStream(this, windows)
  }

  /** Starts a cogroup: several grouped streams aggregated into one table, each with its own aggregator. */
  cogroup<VA>(aggregator: (key: K, value: V, agg: VA) => VA): CogroupedKStream<K, VA> {
    return new CogroupedKStream<K, VA>(this.stream.builder, this.keySerde).cogroup(this, aggregator)
  }
}

export class TimeWindowedKStream<K, V> {
  constructor(
    private readonly grouped: KGroupedStream<K, V>,
    private readonly windows: TimeWindows | SlidingWindows,
  ) {}

  count(materialized?: Materialized<K, number>): KTable<Windowed<K>, number> {
    return this.aggregate<number>(() => 0, (_k, _v, n) => n + 1, (materialized ?? Materialized.with<K, number>()).withValueSerde(materialized?.valueSerde ?? LONG))
  }

  reduce(reducer: (agg: V, value: V) => V, materialized?: Materialized<K, V>): KTable<Windowed<K>, V> {
    // The first value of a window is the aggregate itself; a reduce has no initializer of its own.
    const NONE = Symbol('none')
    return this.aggregate<V>(() => NONE as unknown as V, (_k, v, agg) => ((agg as unknown) === NONE ? v : reducer(agg, v)), materialized ?? Materialized.with<K, V>(undefined, this.grouped.valueSerde))
  }

  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, agg: VA) => VA, materialized?: Materialized<K, VA>): KTable<Windowed<K>, VA> {
    const b = this.grouped.stream.builder
    const w = this.windows
    const storeName = storeNameFor(b, materialized as Materialized<unknown, unknown> | undefined, 'KSTREAM-AGGREGATE-')
    const input = this.grouped.input(storeName)
    const name = b.newName('KSTREAM-AGGREGATE-')
    const keySerde = materialized?.keySerde ?? this.grouped.keySerde
    const valueSerde = materialized?.valueSerde
    const size = w instanceof TimeWindows ? w.sizeMs : w.timeDifferenceMs
    const grace = w.graceMs
    const retention = Math.max(materialized?.retentionMs ?? 0, size + grace)
    const windowStore = (n: string, serde: Serde<unknown> | undefined, dups: boolean): StoreBuilder<StateStore> => {
      const supplier: WindowBytesStoreSupplier = (materialized?.supplier as WindowBytesStoreSupplier | undefined) !== undefined && !dups ? (materialized!.supplier as WindowBytesStoreSupplier) : materialized?.storeType === 'in_memory' ? Stores.inMemoryWindowStore(n, Math.max(retention, size), size, dups) : Stores.persistentWindowStore(n, Math.max(retention, size), size, dups)
      const sb = Stores.windowStoreBuilder(supplier, keySerde as Serde<unknown> | undefined, serde)
      return (materialized !== undefined && !materialized.loggingEnabled ? sb.withLoggingDisabled() : sb.withLoggingEnabled(materialized?.logConfig ?? {})) as StoreBuilder<StateStore>
    }
    if (w instanceof TimeWindows) {
      b.topology.addProcessor(name, P.windowAggregateProcessor(storeName, w, initializer, aggregator), input.nodeName)
      b.topology.addStateStore(windowStore(storeName, valueSerde as Serde<unknown> | undefined, false), name)
    } else {
      const rawStore = `${storeName}-records`
      b.topology.addProcessor(name, P.slidingWindowAggregateProcessor(storeName, rawStore, w, initializer, aggregator), input.nodeName)
      b.topology.addStateStore(windowStore(storeName, valueSerde as Serde<unknown> | undefined, false), name)
      b.topology.addStateStore(windowStore(rawStore, this.grouped.valueSerde as Serde<unknown> | undefined, true), name)
    }
    const wks = keySerde !== undefined ? WindowedSerdes.timeWindowedSerdeFrom(keySerde, size) : undefined
    return new KTable<Windowed<K>, VA>(b, name, wks, valueSerde, storeName, { storeNames: [storeName], init: () => () => null }, input.lineage, grace)
  }
}

export class SessionWindowedKStream<K, V> {
  constructor(
    private readonly grouped: KGroupedStream<K, V>,
    private readonly windows: SessionWindows,
  ) {}

  count(materialized?: Materialized<K, number>): KTable<Windowed<K>, number> {
    return this.aggregate<number>(() => 0, (_k, _v, n) => n + 1, (_k, a, b) => a + b, (materialized ?? Materialized.with<K, number>()).withValueSerde(materialized?.valueSerde ?? LONG))
  }

  reduce(reducer: (agg: V, value: V) => V, materialized?: Materialized<K, V>): KTable<Windowed<K>, V> {
    const NONE = Symbol('none')
    const combine = (a: V, b: V): V => ((a as unknown) === NONE ? b : (b as unknown) === NONE ? a : reducer(a, b))
    return this.aggregate<V>(() => NONE as unknown as V, (_k, v, agg) => combine(agg, v), (_k, a, b) => combine(a, b), materialized ?? Materialized.with<K, V>(undefined, this.grouped.valueSerde))
  }

  aggregate<VA>(initializer: () => VA, aggregator: (key: K, value: V, agg: VA) => VA, merger: (key: K, agg1: VA, agg2: VA) => VA, materialized?: Materialized<K, VA>): KTable<Windowed<K>, VA> {
    const b = this.grouped.stream.builder
    const storeName = storeNameFor(b, materialized as Materialized<unknown, unknown> | undefined, 'KSTREAM-AGGREGATE-')
    const input = this.grouped.input(storeName)
    const name = b.newName('KSTREAM-AGGREGATE-')
    const keySerde = materialized?.keySerde ?? this.grouped.keySerde
    const retention = Math.max(materialized?.retentionMs ?? 0, this.windows.inactivityGapMs + this.windows.graceMs)
    const supplier: SessionBytesStoreSupplier = (materialized?.supplier as SessionBytesStoreSupplier | undefined) ?? (materialized?.storeType === 'in_memory' ? Stores.inMemorySessionStore(storeName, retention) : Stores.persistentSessionStore(storeName, retention))
    const sb = Stores.sessionStoreBuilder(supplier, keySerde as Serde<unknown> | undefined, materialized?.valueSerde as Serde<unknown> | undefined)
    b.topology.addProcessor(name, P.sessionWindowAggregateProcessor(storeName, this.windows, initializer, aggregator, merger), input.nodeName)
    b.topology.addStateStore((materialized !== undefined && !materialized.loggingEnabled ? sb.withLoggingDisabled() : sb) as never, name)
    const wks = keySerde !== undefined ? WindowedSerdes.sessionWindowedSerdeFrom(keySerde) : undefined
    return new KTable<Windowed<K>, VA>(b, name, wks, materialized?.valueSerde, storeName, { storeNames: [storeName], init: () => () => null }, input.lineage, this.windows.graceMs)
  }
}

export class KGroupedTable<K, V> {
  constructor(
    private readonly builder: InternalBuilder,
    private readonly nodeName: string,
    private readonly keySerde: Serde<K> | undefined,
    private readonly valueSerde: Serde<V> | undefined,
    private readonly groupName: string | undefined,
  ) {}

  private aggregateWith<VA>(prefix: string, supplier: (storeName: string) => AnySupplier, materialized: Materialized<K, VA> | undefined, valueSerde: Serde<VA> | undefined): KTable<K, VA> {
    const b = this.builder
    const t = b.topology
    const storeName = storeNameFor(b, materialized as Materialized<unknown, unknown> | undefined, prefix)
    const topic = `${this.groupName ?? storeName}-repartition`
    t.addRepartitionTopic(topic)
    const sink = b.newName('KSTREAM-SINK-')
    const cs = changeSerde<V>(this.valueSerde)
    t.addSink(sink, topic, { keySerializer: this.keySerde?.serializer, valueSerializer: cs.serializer as never }, this.nodeName)
    const source = b.newName('KSTREAM-SOURCE-')
    t.addSource(source, [topic], { keyDeserializer: this.keySerde?.deserializer as never, valueDeserializer: cs.deserializer as never })
    const name = b.newName(prefix)
    const keySerde = materialized?.keySerde ?? this.keySerde
    const vs = materialized?.valueSerde ?? valueSerde
    t.addProcessor(name, supplier(storeName), source)
    t.addStateStore(b.keyValueStore(storeName, materialized, keySerde, vs) as never, name)
    return new KTable<K, VA>(b, name, keySerde, vs, storeName, storeGetter(storeName), { sourceTopics: [topic] })
  }

  count(materialized?: Materialized<K, number>): KTable<K, number> {
    return this.aggregateWith<number>('KTABLE-AGGREGATE-', (s) => P.tableAggregateProcessor<K, V, number>(s, () => 0, (_k, _v, n) => n + 1, (_k, _v, n) => n - 1), materialized, materialized?.valueSerde ?? LONG)
  }

  reduce(adder: (agg: V, value: V) => V, subtractor: (agg: V, value: V) => V, materialized?: Materialized<K, V>): KTable<K, V> {
    return this.aggregateWith<V>('KTABLE-REDUCE-', (s) => P.tableReduceProcessor<K, V>(s, adder, subtractor), materialized, this.valueSerde)
  }

  aggregate<VA>(initializer: () => VA, adder: (key: K, value: V, agg: VA) => VA, subtractor: (key: K, value: V, agg: VA) => VA, materialized?: Materialized<K, VA>): KTable<K, VA> {
    return this.aggregateWith<VA>('KTABLE-AGGREGATE-', (s) => P.tableAggregateProcessor(s, initializer, adder, subtractor), materialized, undefined)
  }
}

/** Several grouped streams aggregated into one table (Kafka's CogroupedKStream). */
export class CogroupedKStream<K, VA> {
  private readonly parts: { grouped: KGroupedStream<K, unknown>; aggregator: (key: K, value: unknown, agg: VA) => VA }[] = []

  constructor(
    private readonly builder: InternalBuilder,
    private readonly keySerde: Serde<K> | undefined,
  ) {}

  cogroup<V>(grouped: KGroupedStream<K, V>, aggregator: (key: K, value: V, agg: VA) => VA): this {
    this.parts.push({ grouped: grouped as KGroupedStream<K, unknown>, aggregator: aggregator as (key: K, value: unknown, agg: VA) => VA })
    return this
  }

  aggregate(initializer: () => VA, materialized?: Materialized<K, VA>, named?: Named): KTable<K, VA> {
    const b = this.builder
    const t = b.topology
    const storeName = storeNameFor(b, materialized as Materialized<unknown, unknown> | undefined, 'COGROUPKSTREAM-AGGREGATE-')
    const keySerde = materialized?.keySerde ?? this.keySerde
    const inputs = this.parts.map((p, i) => ({ p, input: p.grouped.stream.repartitionIfRequired(p.grouped.groupName ?? `${storeName}-${i}`, p.grouped.keySerde, p.grouped.valueSerde) }))
    t.copartition(inputs.flatMap((x) => x.input.lineage.sourceTopics))
    const aggregators = inputs.map(({ p, input }) => {
      const name = b.newName('COGROUPKSTREAM-AGGREGATE-')
      t.addProcessor(name, P.streamAggregateProcessor(storeName, initializer, p.aggregator), input.nodeName)
      return name
    })
    t.addStateStore(b.keyValueStore(storeName, materialized, keySerde, materialized?.valueSerde) as never, ...aggregators)
    const merge = named?.name ?? b.newName('COGROUPKSTREAM-MERGE-')
    t.addProcessor(merge, P.passThroughProcessor(), ...aggregators)
    return new KTable<K, VA>(b, merge, keySerde, materialized?.valueSerde, storeName, storeGetter(storeName), { sourceTopics: inputs.flatMap((x) => x.input.lineage.sourceTopics) })
  }
}

export { Change, KeyValue }
export type { ProcessorContext }
