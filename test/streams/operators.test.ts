// Every DSL operator and the Processor API through the TopologyTestDriver (no broker): stateless
// operators, branching and merging, sinks with partitioners, repartitioning, tables and their joins
// (including foreign-key joins), global tables, aggregations, cogroups, tumbling / hopping / sliding /
// session windows with grace and late records, suppression, stream-stream joins, punctuation on stream
// and wall-clock time, stores, headers and metadata, serdes, exception handlers and describe().
import { describe, expect, it } from 'vitest'
import {
  Branched,
  BufferConfig,
  Consumed,
  Grouped,
  Headers,
  JoinWindows,
  KeyValue,
  Materialized,
  Named,
  Produced,
  PunctuationType,
  Record,
  Repartitioned,
  Serdes,
  SessionWindows,
  SlidingWindows,
  Stores,
  StreamJoined,
  StreamsBuilder,
  Suppressed,
  TimeWindows,
  Topology,
  TopologyTestDriver,
  WindowedSerdes,
  type KeyValueStore,
  type ProcessorContext,
  type Windowed,
} from '../../src/streams/index.js'

const S = Serdes.String()
const L = Serdes.Long()
const I = Serdes.Integer()
const str = Consumed.with(S, S)

function run(build: (b: StreamsBuilder) => void, config: { [key: string]: unknown } = {}): TopologyTestDriver {
  const b = new StreamsBuilder()
  build(b)
  return new TopologyTestDriver(b.build(), { 'application.id': 'ops', ...config }, 0)
}

const out = (d: TopologyTestDriver, topic = 'out') => d.createOutputTopic(topic, S.deserializer, S.deserializer)
const input = (d: TopologyTestDriver, topic = 'in') => d.createInputTopic(topic, S.serializer, S.serializer, 0)

describe('stateless KStream operators', () => {
  it('filter, filterNot, map, mapValues, selectKey, peek, foreach', () => {
    const seen: string[] = []
    const d = run((b) => {
      const s = b.stream('in', str)
      s.filter((_k, v) => v.startsWith('a')).mapValues((v) => v.toUpperCase()).to('out', Produced.with(S, S))
      s.filterNot((_k, v) => v.startsWith('a')).map((k, v) => KeyValue.pair(`${k}!`, `${v}?`)).to('out2', Produced.with(S, S))
      s.selectKey((_k, v) => v.length.toString()).peek((k, v) => seen.push(`${k}=${v}`)).foreach((k) => seen.push(`each ${k}`))
    })
    const i = input(d)
    i.pipeInput('k1', 'apple')
    i.pipeInput('k2', 'pear')
    expect(out(d).readKeyValuesToList()).toEqual([new KeyValue('k1', 'APPLE')])
    expect(out(d, 'out2').readKeyValuesToList()).toEqual([new KeyValue('k2!', 'pear?')])
    expect(seen).toEqual(['5=apple', 'each 5', '4=pear', 'each 4'])
    d.close()
  })

  it('flatMap and flatMapValues emit several records per input', () => {
    const d = run((b) => {
      const s = b.stream('in', str)
      s.flatMapValues((v) => v.split(' ')).to('out', Produced.with(S, S))
      s.flatMap((k, v) => v.split(' ').map((w, n) => KeyValue.pair(`${k}${n}`, w))).to('out2', Produced.with(S, S))
    })
    input(d).pipeInput('k', 'a b c')
    expect(out(d).readValuesToList()).toEqual(['a', 'b', 'c'])
    expect(out(d, 'out2').readKeyValuesToList()).toEqual([new KeyValue('k0', 'a'), new KeyValue('k1', 'b'), new KeyValue('k2', 'c')])
    d.close()
  })

  it('split() routes each record to the first matching branch or the default; merge() joins streams', () => {
    const d = run((b) => {
      const branches = b
        .stream('in', str)
        .split(Named.as('split-'))
        .branch((_k, v) => v.startsWith('a'), Branched.as('a'))
        .branch((_k, v) => v.startsWith('b'), Branched.withFunction((s) => s.mapValues((v) => `B:${v}`), 'b'))
        .defaultBranch(Branched.as('other'))
      expect([...branches.keys()]).toEqual(['split-a', 'split-b', 'split-other'])
      branches.get('split-a')!.to('a', Produced.with(S, S))
      branches.get('split-other')!.to('other', Produced.with(S, S))
      branches.get('split-a')!.merge(branches.get('split-b')!).to('merged', Produced.with(S, S))
    })
    const i = input(d)
    for (const v of ['apple', 'banana', 'cherry', 'avocado']) i.pipeInput('k', v)
    expect(out(d, 'a').readValuesToList()).toEqual(['apple', 'avocado'])
    expect(out(d, 'other').readValuesToList()).toEqual(['cherry'])
    expect(out(d, 'merged').readValuesToList()).toEqual(['apple', 'B:banana', 'avocado'])
    d.close()
  })

  it('to() with a StreamPartitioner and a TopicNameExtractor; through() and repartition()', () => {
    const chosen: number[] = []
    const d = run((b) => {
      const s = b.stream('in', str)
      s.to('out', Produced.with(S, S, (_t, key, _v, n) => {
        chosen.push(n)
        return key === 'x' ? 0 : undefined
      }))
      s.to((k) => `dyn-${k}`, Produced.with(S, S))
      s.through('mid', Produced.with(S, S)).mapValues((v) => `via mid ${v}`).to('out2', Produced.with(S, S))
      s.selectKey((_k, v) => v).repartition(Repartitioned.with(S, S).withName('rekeyed').withNumberOfPartitions(3)).to('out3', Produced.with(S, S))
    })
    input(d).pipeInput('x', 'v1')
    expect(out(d).readValue()).toBe('v1')
    expect(chosen).toEqual([1])
    expect(out(d, 'dyn-x').readValue()).toBe('v1')
    expect(out(d, 'out2').readValue()).toBe('via mid v1')
    expect(out(d, 'out3').readKeyValue()).toEqual(new KeyValue('v1', 'v1'))
    expect(d.producedTopicNames()).toContain('ops-rekeyed-repartition')
    d.close()
  })
})

describe('the Processor API', () => {
  it('process(): init, state store access, punctuation on stream time and wall-clock time, headers, metadata, close', () => {
    const events: string[] = []
    const b = new StreamsBuilder()
    b.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore('seen'), S, L))
    b.stream('in', str)
      .process(
        () => {
          let ctx: ProcessorContext<string, string>
          let store: KeyValueStore<string, number>
          return {
            init(c: ProcessorContext<string, string>) {
              ctx = c
              store = c.getStateStore<KeyValueStore<string, number>>('seen')
              c.schedule(10, PunctuationType.STREAM_TIME, (t) => events.push(`stream ${t}`))
              c.schedule(1000, PunctuationType.WALL_CLOCK_TIME, (t) => {
                events.push(`wall ${t}`)
                ctx.forward(new Record('tick', String(store.approximateNumEntries()), t))
              })
            },
            process(r: Record<string, string>) {
              const m = ctx.recordMetadata()!
              events.push(`${m.topic}-${m.partition}@${m.offset} task ${ctx.taskId()} h=${r.headers.lastHeader('h')?.value?.toString()}`)
              store.put(r.key, (store.get(r.key) ?? 0) + 1)
              ctx.forward(r.withValue(`${r.value}:${store.get(r.key)}`).withHeaders(new Headers().add('seen', 'yes')))
            },
            close() {
              events.push('closed')
            },
          }
        },
        'seen',
      )
      .to('out', Produced.with(S, S))
    const d = new TopologyTestDriver(b.build(), { 'application.id': 'papi' }, 0)
    const i = d.createInputTopic('in', S.serializer, S.serializer, 0)
    i.pipeInput('a', 'x', 5, new Headers().add('h', 'v'))
    i.pipeInput('a', 'y', 25)
    d.advanceWallClockTime(1000)
    const o = d.createOutputTopic('out', S.deserializer, S.deserializer)
    const recs = o.readRecordsToList()
    expect(recs.map((r) => `${r.key}=${r.value}`)).toEqual(['a=x:1', 'a=y:2', 'tick=1'])
    expect(recs[0]!.headers.map((h) => h.key)).toEqual(['seen'])
    expect(d.getKeyValueStore<string, number>('seen')!.get('a')).toBe(2)
    d.close()
    expect(events).toEqual(['in-0@0 task 0_0 h=v', 'in-0@1 task 0_0 h=undefined', 'stream 25', 'wall 1000', 'closed'])
  })

  it('a store not connected to the processor is refused; the Topology API builds the same graph', () => {
    const t = new Topology()
    t.addSource('src', ['in'], { keyDeserializer: S.deserializer, valueDeserializer: S.deserializer })
    t.addProcessor('p', () => ({
      init(c: ProcessorContext) {
        c.getStateStore('other')
      },
      process() {},
    }), 'src')
    t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore('other'), S, S))
    t.addSink('sink', 'out', { keySerializer: S.serializer, valueSerializer: S.serializer }, 'p')
    expect(() => new TopologyTestDriver(t, {}, 0)).toThrow(/has no access to state store 'other'/)
    expect(t.describe().toString()).toBe(
      'Topologies:\n   Sub-topology: 0\n    Source: src (topics: [in])\n      --> p\n    Processor: p (stores: [])\n      --> sink\n      <-- src\n    Sink: sink (topic: out)\n      <-- p\n\n',
    )
  })
})

describe('tables', () => {
  it('table(): latest value per key, filter / mapValues / toStream, tombstones', () => {
    const d = run((b) => {
      const t = b.table('in', str, Materialized.as('t-store'))
      t.filter((_k, v) => v !== 'hide').mapValues((v) => v.length).toStream().to('out', Produced.with(S, I))
    })
    const i = input(d)
    i.pipeInput('a', 'one')
    i.pipeInput('a', 'three')
    i.pipeInput('b', 'hide')
    i.pipeInput('a', null)
    const o = d.createOutputTopic('out', S.deserializer, I.deserializer)
    expect(o.readKeyValuesToList()).toEqual([new KeyValue('a', 3), new KeyValue('a', 5), new KeyValue('a', null)])
    expect(d.getKeyValueStore<string, string>('t-store')!.get('b')).toBe('hide')
    expect(d.getKeyValueStore<string, string>('t-store')!.get('a')).toBe(null)
    d.close()
  })

  it('table-table join, leftJoin and outerJoin', () => {
    const d = run((b) => {
      const l = b.table('left', str)
      const r = b.table('right', str)
      l.join(r, (a, c) => `${a}+${c}`).toStream().to('inner', Produced.with(S, S))
      l.leftJoin(r, (a, c) => `${a}+${c ?? '-'}`).toStream().to('left-out', Produced.with(S, S))
      l.outerJoin(r, (a, c) => `${a ?? '-'}+${c ?? '-'}`).toStream().to('outer', Produced.with(S, S))
    })
    const li = d.createInputTopic('left', S.serializer, S.serializer, 0)
    const ri = d.createInputTopic('right', S.serializer, S.serializer, 0)
    li.pipeInput('k', 'L1')
    ri.pipeInput('k', 'R1')
    ri.pipeInput('j', 'R2')
    li.pipeInput('k', null)
    expect(out(d, 'inner').readValuesToList()).toEqual(['L1+R1', null])
    expect(out(d, 'left-out').readValuesToList()).toEqual(['L1+-', 'L1+R1', null])
    expect(out(d, 'outer').readKeyValuesToList()).toEqual([new KeyValue('k', 'L1+-'), new KeyValue('k', 'L1+R1'), new KeyValue('j', '-+R2'), new KeyValue('k', '-+R1')])
    d.close()
  })

  it('foreign-key join and left foreign-key join follow changes of both sides', () => {
    const d = run((b) => {
      const orders = b.table('orders', str)
      const products = b.table('products', str)
      orders.join(products, (v) => v.split(':')[0]!, (o, p) => `${o}=${p}`).toStream().to('inner', Produced.with(S, S))
      orders.leftJoin(products, (v) => v.split(':')[0]!, (o, p) => `${o}=${p ?? 'none'}`).toStream().to('left-out', Produced.with(S, S))
    })
    const oi = d.createInputTopic('orders', S.serializer, S.serializer, 0)
    const pi = d.createInputTopic('products', S.serializer, S.serializer, 0)
    pi.pipeInput('p1', 'pen')
    oi.pipeInput('o1', 'p1:2')
    oi.pipeInput('o2', 'p2:1')
    pi.pipeInput('p2', 'ink')
    pi.pipeInput('p1', 'red pen')
    oi.pipeInput('o2', 'p1:3')
    oi.pipeInput('o1', null)
    expect(out(d, 'inner').readKeyValuesToList()).toEqual([
      new KeyValue('o1', 'p1:2=pen'),
      new KeyValue('o2', 'p2:1=ink'),
      new KeyValue('o1', 'p1:2=red pen'),
      new KeyValue('o2', 'p1:3=red pen'),
      new KeyValue('o1', null),
    ])
    const left = out(d, 'left-out').readKeyValuesToMap()
    expect(Object.fromEntries(left)).toEqual({ o2: 'p1:3=red pen' })
    d.close()
  })

  it('KTable.groupBy with count, reduce and aggregate subtracts the old value from the old group', () => {
    const d = run((b) => {
      const t = b.table('in', str)
      const g = t.groupBy((k, v) => KeyValue.pair(v, k), Grouped.with(S, S))
      g.count(Materialized.as('by-value')).toStream().to('count', Produced.with(S, L))
      g.reduce((a, v) => `${a},${v}`, (a, v) => a.split(',').filter((x) => x !== v).join(',')).toStream().to('reduce', Produced.with(S, S))
      g.aggregate(() => 0, (_k, v) => v.length, (_k, v, agg) => agg - v.length, Materialized.with<string, number>(S, I)).toStream().to('agg', Produced.with(S, I))
    })
    const i = input(d)
    i.pipeInput('u1', 'red')
    i.pipeInput('u2', 'red')
    i.pipeInput('u1', 'blue')
    const counts = d.createOutputTopic('count', S.deserializer, L.deserializer).readKeyValuesToMap()
    expect(Object.fromEntries(counts)).toEqual({ red: 1, blue: 1 })
    expect(Object.fromEntries(out(d, 'reduce').readKeyValuesToMap())).toEqual({ red: 'u2', blue: 'u1' })
    expect(d.getKeyValueStore<string, number>('by-value')!.get('red')).toBe(1)
    d.close()
  })

  it('toTable() and stream-table joins (inner and left)', () => {
    const d = run((b) => {
      const table = b.stream('tin', str).toTable(Named.as('to-table'), Materialized.as('tt'))
      const s = b.stream('in', str)
      s.join(table, (v, t) => `${v}|${t}`).to('inner', Produced.with(S, S))
      s.leftJoin(table, (v, t) => `${v}|${t ?? '?'}`).to('left-out', Produced.with(S, S))
    })
    d.createInputTopic('tin', S.serializer, S.serializer, 0).pipeInput('a', 'A')
    const i = input(d)
    i.pipeInput('a', 'x')
    i.pipeInput('b', 'y')
    expect(out(d, 'inner').readValuesToList()).toEqual(['x|A'])
    expect(out(d, 'left-out').readValuesToList()).toEqual(['x|A', 'y|?'])
    d.close()
  })

  it('GlobalKTable and stream-globaltable join with a key selector', () => {
    const d = run((b) => {
      const g = b.globalTable('countries', str, Materialized.as('countries-store'))
      b.stream('in', str).join(g, (_k, v) => v.split('@')[1]!, (v, c) => `${v} in ${c}`).to('out', Produced.with(S, S))
      b.stream('in2', str).leftJoin(g, (_k, v) => v, (v, c) => `${v}:${c ?? 'unknown'}`).to('out2', Produced.with(S, S))
    })
    d.createInputTopic('countries', S.serializer, S.serializer, 0).pipeInput('fr', 'France')
    input(d).pipeInput('u', 'ann@fr')
    input(d).pipeInput('u', 'bob@de')
    d.createInputTopic('in2', S.serializer, S.serializer, 0).pipeInput('u', 'de')
    expect(out(d).readValuesToList()).toEqual(['ann@fr in France'])
    expect(out(d, 'out2').readValuesToList()).toEqual(['de:unknown'])
    expect(d.getKeyValueStore<string, string>('countries-store')!.get('fr')).toBe('France')
    d.close()
  })
})

describe('aggregations', () => {
  it('groupByKey count, reduce, aggregate; groupBy repartitions', () => {
    const d = run((b) => {
      const s = b.stream('in', str)
      s.groupByKey().count(Materialized.as('c')).toStream().to('count', Produced.with(S, L))
      s.groupByKey().reduce((a, v) => a + v).toStream().to('reduce', Produced.with(S, S))
      s.groupByKey().aggregate(() => 100, (_k, v, a) => a + v.length, Materialized.with(S, I)).toStream().to('agg', Produced.with(S, I))
      s.groupBy((_k, v) => v, Grouped.with(S, S).withName('by-val')).count().toStream().to('byval', Produced.with(S, L))
    })
    const i = input(d)
    i.pipeInput('a', 'x')
    i.pipeInput('a', 'yy')
    i.pipeInput('b', 'x')
    expect(d.createOutputTopic('count', S.deserializer, L.deserializer).readKeyValuesToList()).toEqual([new KeyValue('a', 1), new KeyValue('a', 2), new KeyValue('b', 1)])
    expect(out(d, 'reduce').readValuesToList()).toEqual(['x', 'xyy', 'x'])
    expect(d.createOutputTopic('agg', S.deserializer, I.deserializer).readValuesToList()).toEqual([101, 103, 101])
    expect(Object.fromEntries(d.createOutputTopic('byval', S.deserializer, L.deserializer).readKeyValuesToMap())).toEqual({ x: 2, yy: 1 })
    expect(d.producedTopicNames()).toContain('ops-by-val-repartition')
    expect(d.producedTopicNames()).toContain('ops-c-changelog')
    d.close()
  })

  it('cogroup aggregates several grouped streams into one table', () => {
    const d = run((b) => {
      const clicks = b.stream('clicks', str).groupByKey()
      const views = b.stream('views', str).groupByKey()
      clicks
        .cogroup<string>((_k, _v, agg) => `${agg}c`)
        .cogroup(views, (_k, _v, agg) => `${agg}v`)
        .aggregate(() => '', Materialized.as<string, string>('activity').withValueSerde(S))
        .toStream()
        .to('out', Produced.with(S, S))
    })
    d.createInputTopic('clicks', S.serializer, S.serializer, 0).pipeInput('u', '1')
    d.createInputTopic('views', S.serializer, S.serializer, 0).pipeInput('u', '1')
    d.createInputTopic('clicks', S.serializer, S.serializer, 0).pipeInput('u', '1')
    expect(out(d).readValuesToList()).toEqual(['c', 'cv', 'cvc'])
    d.close()
  })
})

const W = (size: number) => WindowedSerdes.timeWindowedSerdeFrom(S, size)
function windowed(d: TopologyTestDriver, topic: string, size: number, session = false): string[] {
  const ks = session ? WindowedSerdes.sessionWindowedSerdeFrom(S) : W(size)
  return d
    .createOutputTopic(topic, ks.deserializer, L.deserializer)
    .readKeyValuesToList()
    .map((kv) => `${(kv.key as Windowed<string>).key}[${(kv.key as Windowed<string>).window.start},${(kv.key as Windowed<string>).window.end}]=${kv.value}`)
}

describe('windows', () => {
  it('tumbling windows with grace: a record after the window closed is late and dropped', () => {
    const d = run((b) => {
      b.stream('in', str).groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(10, 5)).count(Materialized.as('tw')).toStream().to('out', Produced.with(W(10), L))
    })
    const i = input(d)
    i.pipeInput('a', 'x', 1)
    i.pipeInput('a', 'x', 12)
    i.pipeInput('a', 'x', 9) // within grace: window [0,10) closes at 15
    i.pipeInput('a', 'x', 16)
    i.pipeInput('a', 'x', 3) // late
    expect(windowed(d, 'out', 10)).toEqual(['a[0,10]=1', 'a[10,20]=1', 'a[0,10]=2', 'a[10,20]=2'])
    expect(d.getWindowStore<string, number>('tw')!.fetch('a', 0)).toBe(2)
    d.close()
  })

  it('hopping windows put a record in every window that contains it', () => {
    const d = run((b) => {
      b.stream('in', str).groupByKey().windowedBy(TimeWindows.ofSizeWithNoGrace(10).advanceBy(5)).count().toStream().to('out', Produced.with(W(10), L))
    })
    input(d).pipeInput('a', 'x', 7)
    expect(windowed(d, 'out', 10)).toEqual(['a[0,10]=1', 'a[5,15]=1'])
    d.close()
  })

  it('sliding windows aggregate the records within the time difference', () => {
    const d = run((b) => {
      b.stream('in', str).groupByKey().windowedBy(SlidingWindows.ofTimeDifferenceWithNoGrace(10)).count().toStream().to('out', Produced.with(W(10), L))
    })
    const i = input(d)
    i.pipeInput('a', 'x', 10)
    i.pipeInput('a', 'x', 15)
    const got = windowed(d, 'out', 10)
    // [0,10] holds the first; [5,15] both; [11,21] (right window of the first) the second.
    expect(got).toContain('a[0,10]=1')
    expect(got).toContain('a[5,15]=2')
    expect(got).toContain('a[11,21]=1')
    d.close()
  })

  it('session windows merge records closer than the inactivity gap and retract the merged sessions', () => {
    const d = run((b) => {
      b.stream('in', str).groupByKey().windowedBy(SessionWindows.ofInactivityGapAndGrace(5, 20)).count(Materialized.as('sess')).toStream().to('out', Produced.with(WindowedSerdes.sessionWindowedSerdeFrom(S), L))
    })
    const i = input(d)
    i.pipeInput('a', 'x', 0)
    i.pipeInput('a', 'x', 20)
    i.pipeInput('a', 'x', 3)
    const o = d.createOutputTopic('out', WindowedSerdes.sessionWindowedSerdeFrom(S).deserializer, L.deserializer).readKeyValuesToList()
    expect(o.map((kv) => `${kv.key!.window.start}-${kv.key!.window.end}=${kv.value}`)).toEqual(['0-0=1', '20-20=1', '0-0=null', '0-3=2'])
    expect(d.getSessionStore<string, number>('sess')!.fetch('a').map((kv) => kv.value)).toEqual([2, 1])
    d.close()
  })

  it('suppress(untilWindowCloses) emits each window once, after its end plus grace', () => {
    const d = run((b) => {
      b.stream('in', str)
        .groupByKey()
        .windowedBy(TimeWindows.ofSizeAndGrace(10, 2))
        .count()
        .suppress(Suppressed.untilWindowCloses(BufferConfig.unbounded()))
        .toStream()
        .to('out', Produced.with(W(10), L))
    })
    const i = input(d)
    i.pipeInput('a', 'x', 1)
    i.pipeInput('a', 'x', 4)
    i.pipeInput('b', 'x', 5)
    i.pipeInput('a', 'x', 11)
    expect(windowed(d, 'out', 10)).toEqual([])
    i.pipeInput('a', 'x', 12)
    expect(windowed(d, 'out', 10)).toEqual(['a[0,10]=2', 'b[0,10]=1'])
    d.close()
  })

  it('suppress(untilTimeLimit) emits the latest value per key at most once per limit', () => {
    const d = run((b) => {
      b.stream('in', str).groupByKey().count().suppress(Suppressed.untilTimeLimit(10, BufferConfig.maxRecords(100).emitEarlyWhenFull())).toStream().to('out', Produced.with(S, L))
    })
    const i = input(d)
    i.pipeInput('a', 'x', 0)
    i.pipeInput('a', 'x', 5)
    i.pipeInput('b', 'x', 6)
    i.pipeInput('a', 'x', 10)
    const o = d.createOutputTopic('out', S.deserializer, L.deserializer)
    expect(o.readKeyValuesToList()).toEqual([new KeyValue('a', 3)])
    d.close()
  })
})

describe('stream-stream joins', () => {
  it('inner join within the window; left and outer joins emit unmatched records once the window closed', () => {
    const d = run((b) => {
      const l = b.stream('l', str)
      const r = b.stream('r', str)
      const w = JoinWindows.ofTimeDifferenceAndGrace(5, 0)
      l.join(r, (a, c) => `${a}+${c}`, w, StreamJoined.with(S, S, S)).to('inner', Produced.with(S, S))
      l.leftJoin(r, (a, c) => `${a}+${c ?? '-'}`, w, StreamJoined.with(S, S, S)).to('left-out', Produced.with(S, S))
      l.outerJoin(r, (a, c) => `${a ?? '-'}+${c ?? '-'}`, w, StreamJoined.with(S, S, S)).to('outer', Produced.with(S, S))
    })
    const li = d.createInputTopic('l', S.serializer, S.serializer, 0)
    const ri = d.createInputTopic('r', S.serializer, S.serializer, 0)
    li.pipeInput('k', 'L0', 0)
    ri.pipeInput('k', 'R3', 3)
    li.pipeInput('j', 'L10', 10)
    ri.pipeInput('z', 'R11', 11)
    ri.pipeInput('k', 'R30', 30)
    expect(out(d, 'inner').readValuesToList()).toEqual(['L0+R3'])
    expect(out(d, 'left-out').readValuesToList()).toEqual(['L0+R3', 'L10+-'])
    expect(out(d, 'outer').readValuesToList()).toEqual(['L0+R3', 'L10+-', '-+R11'])
    d.close()
  })
})

describe('serdes, handlers and description', () => {
  it('built-in serdes round-trip with Kafka encodings', () => {
    expect(Serdes.Long().serializer.serialize('t', 258)).toEqual(Buffer.from([0, 0, 0, 0, 0, 0, 1, 2]))
    expect(Serdes.Long().deserializer.deserialize('t', Buffer.from([255, 255, 255, 255, 255, 255, 255, 254]))).toBe(-2)
    expect(Serdes.Integer().serializer.serialize('t', -1)).toEqual(Buffer.from([255, 255, 255, 255]))
    expect(Serdes.Double().deserializer.deserialize('t', Serdes.Double().serializer.serialize('t', 1.5))).toBe(1.5)
    expect(Serdes.Json<{ a: number }>().deserializer.deserialize('t', Buffer.from('{"a":1}'))).toEqual({ a: 1 })
    expect(Serdes.String().serializer.serialize('t', null)).toBe(null)
    expect(() => Serdes.Integer().deserializer.deserialize('t', Buffer.from([1]))).toThrow(/not 4/)
    const ws = WindowedSerdes.timeWindowedSerdeFrom(S, 10)
    const w = ws.deserializer.deserialize('t', ws.serializer.serialize('t', { key: 'k', window: { start: 20, end: 30 } } as Windowed<string>))!
    expect([w.key, w.window.start, w.window.end]).toEqual(['k', 20, 30])
  })

  it('deserialization errors fail by default and are skipped with logAndContinue', () => {
    const build = (b: StreamsBuilder) => b.stream('in', Consumed.with(S, I)).mapValues((v) => String(v)).to('out', Produced.with(S, S))
    const failing = run(build)
    expect(() => failing.pipeRaw('in', null, Buffer.from([1]), 0)).toThrow(/could not deserialize/)
    failing.close()
    const lenient = run(build, { 'default.deserialization.exception.handler': 'logAndContinue' })
    lenient.pipeRaw('in', null, Buffer.from([1]), 0)
    lenient.pipeRaw('in', null, Buffer.from([0, 0, 0, 7]), 1)
    expect(out(lenient).readValuesToList()).toEqual(['7'])
    lenient.close()
  })

  it('serialization errors at a sink go to the production exception handler', () => {
    const build = (b: StreamsBuilder) => b.stream('in', str).mapValues((v) => Number(v)).to('out', Produced.with(S, Serdes.Long()))
    const failing = run(build)
    expect(() => input(failing).pipeInput('k', '1.5')).toThrow(/could not serialize/)
    failing.close()
    const lenient = run(build, { 'default.production.exception.handler': 'logAndContinue' })
    input(lenient).pipeInput('k', '1.5')
    input(lenient).pipeInput('k', '2')
    expect(lenient.createOutputTopic('out', S.deserializer, L.deserializer).readValuesToList()).toEqual([2])
    lenient.close()
  })

  it('describe() prints sub-topologies split at repartition topics, and global stores', () => {
    const b = new StreamsBuilder()
    b.globalTable('g', str, Materialized.as('g-store'))
    b.stream('in', str).selectKey((_k, v) => v).groupByKey(Grouped.as('grp')).count(Materialized.as('cnt')).toStream().to('out', Produced.with(S, L))
    const text = b.build().describe().toString()
    expect(text).toContain('Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000002 (topics: [in])')
    expect(text).toContain('Sink: KSTREAM-SINK-0000000005 (topic: grp-repartition)')
    expect(text).toContain('  Sub-topology: 1\n    Source: KSTREAM-SOURCE-0000000006 (topics: [grp-repartition])')
    expect(text).toContain('Processor: KSTREAM-AGGREGATE-0000000007 (stores: [cnt])')
    expect(text).toContain('Sub-topology: 2 for global store (will not generate tasks)\n    Source: KSTREAM-SOURCE-0000000000 (topics: [g])')
  })
})
