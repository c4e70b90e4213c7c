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
