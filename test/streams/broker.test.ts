// Skein Streams against a real Skein broker: WordCount (at_least_once and exactly_once_v2), a windowed
// aggregation with late records, a stream-table join, a foreign-key join, and interactive queries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Consumed, Grouped, KafkaStreams, KeyValue, Materialized, Produced, QueryableStoreTypes, Serdes, StoreQueryParameters, StreamsBuilder, TimeWindows, WindowedSerdes, type ReadOnlyKeyValueStore, type Windowed } from '../../src/streams/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { createTopics, produce, readAll, stateDir, waitFor, waitForState } from './helpers.js'

let broker: TestBroker
beforeAll(async () => {
  broker = await startTestBroker(['transaction.state.log.replication.factor=1', 'transaction.state.log.min.isr=1', 'group.initial.rebalance.delay.ms=0'])
})
afterAll(async () => {
  await broker.stop()
})

const S = Serdes.String()
const L = Serdes.Long()

function wordCount(input: string, output: string): StreamsBuilder {
  const b = new StreamsBuilder()
  b.stream(input, Consumed.with(S, S))
    .flatMapValues((line) => line.toLowerCase().split(/\W+/).filter((w) => w !== ''))
    .groupBy((_k, w) => w, Grouped.with(S, S))
    .count(Materialized.as<string, number>('counts-store'))
    .toStream()
    .to(output, Produced.with(S, L))
  return b
}

function lastPerKey(records: { key: Buffer | null; value: Buffer | null }[], decode: (b: Buffer) => unknown): Map<string, unknown> {
  const m = new Map<string, unknown>()
  for (const r of records) m.set(r.key!.toString(), r.value === null ? null : decode(r.value))
  return m
}

describe.each(['at_least_once', 'exactly_once_v2'] as const)('WordCount (%s)', (guarantee) => {
  it('counts words across partitions, with the store queryable', async () => {
    const tag = guarantee === 'at_least_once' ? 'alos' : 'eos'
    const input = `wc-in-${tag}`
    const output = `wc-out-${tag}`
    await createTopics(broker.bootstrap, [
      { name: input, partitions: 3 },
      { name: output, partitions: 3 },
    ])
    await produce(broker.bootstrap, input, [
      { key: null, value: 'all streams lead to kafka' },
      { key: null, value: 'hello kafka streams' },
      { key: null, value: 'join kafka summit' },
    ])
    const streams = new KafkaStreams(wordCount(input, output).build(), {
      'application.id': `wordcount-${tag}`,
      'bootstrap.servers': broker.bootstrap,
      'processing.guarantee': guarantee,
      'state.dir': stateDir(tag),
      'commit.interval.ms': 200,
      'num.stream.threads': 2,
      'application.server': 'localhost:7070',
    })
    const states: string[] = []
    streams.setStateListener((n) => states.push(n))
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      const records = await readAll(broker.bootstrap, output, { readCommitted: guarantee === 'exactly_once_v2', done: undefined, quietMs: 3000 })
      const counts = lastPerKey(records, (b) => L.deserializer.deserialize('', b))
      expect(Object.fromEntries(counts)).toEqual({ all: 1, streams: 2, lead: 1, to: 1, kafka: 3, hello: 1, join: 1, summit: 1 })
      const store = streams.store<string, number>(StoreQueryParameters.fromNameAndType('counts-store', QueryableStoreTypes.keyValueStore())) as ReadOnlyKeyValueStore<string, number>
      expect(store.get('kafka')).toBe(3)
      expect(store.all().length).toBe(8)
      const meta = streams.queryMetadataForKey('counts-store', 'kafka', S.serializer)
      expect(meta.activeHost).toEqual({ host: 'localhost', port: 7070 })
      expect(meta.partition).toBeGreaterThanOrEqual(0)
      expect(streams.metadataForAllStreamsClients()[0]!.stateStoreNames).toContain('counts-store')
    } finally {
      await streams.close()
    }
    expect(states).toContain('RUNNING')
    expect(states.at(-1)).toBe('NOT_RUNNING')
  })
})

function app(id: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { 'application.id': id, 'bootstrap.servers': broker.bootstrap, 'state.dir': stateDir(id), 'commit.interval.ms': 200, ...extra }
}

describe('against the broker', () => {
  it('windowed counts with a grace period: late records are dropped, records within grace counted', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'clicks', partitions: 2 },
      { name: 'clicks-per-minute', partitions: 2 },
    ])
    const b = new StreamsBuilder()
    b.stream('clicks', Consumed.with(S, S))
      .groupByKey()
      .windowedBy(TimeWindows.ofSizeAndGrace(60_000, 10_000))
      .count(Materialized.as<string, number>('clicks-store'))
      .toStream()
      .to('clicks-per-minute', Produced.with(WindowedSerdes.timeWindowedSerdeFrom(S, 60_000), L))
    const base = 1_700_000_000_000 - (1_700_000_000_000 % 60_000)
    // Records of one key share a partition, hence a task and its stream time: window [base, base+60s) gets
    // a and b, c (base+65s) opens the next window, d (base+50s) is out of order but within grace, e moves
    // stream time to base+75s, past the first window's end plus grace, so 'late' (base+5s) is dropped.
    // u2 comes first, before stream time moves on (it may share u1's partition).
    await produce(broker.bootstrap, 'clicks', [
      { key: 'u2', value: 'x', timestamp: base + 3000 },
      { key: 'u1', value: 'a', timestamp: base + 1000 },
      { key: 'u1', value: 'b', timestamp: base + 2000 },
      { key: 'u1', value: 'c', timestamp: base + 65_000 },
      { key: 'u1', value: 'd', timestamp: base + 50_000 },
      { key: 'u1', value: 'e', timestamp: base + 75_000 },
      { key: 'u1', value: 'late', timestamp: base + 5000 },
    ])
    const streams = new KafkaStreams(b.build(), app('windowed'))
    await streams.start()
    try {
      const records = await readAll(broker.bootstrap, 'clicks-per-minute', { quietMs: 3000 })
      const serde = WindowedSerdes.timeWindowedSerdeFrom(S, 60_000)
      const last = new Map<string, number>()
      for (const r of records) {
        const w = serde.deserializer.deserialize('', r.key) as Windowed<string>
        last.set(`${w.key}@${w.window.start - base}`, L.deserializer.deserialize('', r.value)!)
      }
      // u1's first window: a, b and d (within grace); the late record is not counted.
      expect(Object.fromEntries(last)).toEqual({ 'u1@0': 3, 'u1@60000': 2, 'u2@0': 1 })
      expect(records.length).toBe(6)
    } finally {
      await streams.close()
    }
  })

  it('stream-table join enriches each order with the customer of its key', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'customers', partitions: 2, configs: { 'cleanup.policy': 'compact' } },
      { name: 'orders', partitions: 2 },
      { name: 'orders-enriched', partitions: 2 },
    ])
    await produce(broker.bootstrap, 'customers', [
      { key: 'c1', value: 'Ada' },
      { key: 'c2', value: 'Grace' },
    ])
    const b = new StreamsBuilder()
    const customers = b.table('customers', Consumed.with(S, S), Materialized.as('customers-store'))
    b.stream('orders', Consumed.with(S, S))
      .leftJoin(customers, (order: string, name: string | null) => `${order} for ${name ?? 'unknown'}`)
      .to('orders-enriched', Produced.with(S, S))
    const streams = new KafkaStreams(b.build(), app('enrich'))
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      // The table is loaded before the orders come (they are newer in stream time).
      await waitFor(() => {
        try {
          const s = streams.store<string, string>(StoreQueryParameters.fromNameAndType('customers-store', QueryableStoreTypes.keyValueStore())) as ReadOnlyKeyValueStore<string, string>
          return s.approximateNumEntries() === 2
        } catch {
          return false
        }
      }, 'the customers table')
      await produce(broker.bootstrap, 'orders', [
        { key: 'c1', value: 'book' },
        { key: 'c2', value: 'lamp' },
        { key: 'c3', value: 'pen' },
      ])
      const out = await readAll(broker.bootstrap, 'orders-enriched', { done: (n) => n >= 3 })
      expect(out.map((r) => `${r.key}:${r.value}`).sort()).toEqual(['c1:book for Ada', 'c2:lamp for Grace', 'c3:pen for unknown'])
    } finally {
      await streams.close()
    }
  })

  it('foreign-key join: orders joined with the product their value names, updated when the product changes', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'fk-orders', partitions: 3 },
      { name: 'fk-products', partitions: 2 },
      { name: 'fk-out', partitions: 3 },
    ])
    const J = Serdes.Json<{ product: string; qty: number }>()
    const b = new StreamsBuilder()
    const orders = b.table('fk-orders', Consumed.with(S, J))
    const products = b.table('fk-products', Consumed.with(S, S))
    orders
      .join(products, (o: { product: string; qty: number }) => o.product, (o: { product: string; qty: number }, p: string) => `${o.qty} x ${p}`)
      .toStream()
      .to('fk-out', Produced.with(S, S))
    const topology = b.build()
    expect(topology.describe().toString()).toContain('KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION')
    const streams = new KafkaStreams(topology, app('fkjoin'))
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      await produce(broker.bootstrap, 'fk-products', [
        { key: 'p1', value: 'pencil' },
        { key: 'p2', value: 'eraser' },
      ])
      await produce(broker.bootstrap, 'fk-orders', [
        { key: 'o1', value: JSON.stringify({ product: 'p1', qty: 2 }) },
        { key: 'o2', value: JSON.stringify({ product: 'p2', qty: 1 }) },
        { key: 'o3', value: JSON.stringify({ product: 'p9', qty: 5 }) },
      ])
      let out = await readAll(broker.bootstrap, 'fk-out', { done: (n) => n >= 2 })
      expect(Object.fromEntries(lastPerKey(out, (x) => x.toString()))).toEqual({ o1: '2 x pencil', o2: '1 x eraser' })
      // The product changes: the order that references it is joined again.
      await produce(broker.bootstrap, 'fk-products', [{ key: 'p1', value: 'blue pencil' }])
      // An order moves to another product.
      await produce(broker.bootstrap, 'fk-orders', [{ key: 'o2', value: JSON.stringify({ product: 'p1', qty: 4 }) }])
      out = await readAll(broker.bootstrap, 'fk-out', { done: (n) => n >= 4 })
      expect(Object.fromEntries(lastPerKey(out, (x) => x.toString()))).toEqual({ o1: '2 x blue pencil', o2: '4 x blue pencil' })
    } finally {
      await streams.close()
    }
  })
})

void KeyValue
