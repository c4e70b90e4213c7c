// Scale-out: two instances count a keyed stream (exactly_once_v2, one standby replica); a third joins
// while input flows. It first gets warm-up replicas (KIP-441), then a probing rebalance moves tasks to it
// once it has caught up. Throughout, the first two never stop processing for longer than a rebalance,
// and the final counts are exact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Producer } from '../../src/client/index.js'
import { Consumed, KafkaStreams, Materialized, Produced, QueryableStoreTypes, Serdes, StoreQueryParameters, StreamsBuilder, type KafkaStreamsState, type ReadOnlyKeyValueStore } from '../../src/streams/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { createTopics, readAll, stateDir, waitFor, waitForState } from './helpers.js'

let broker: TestBroker
beforeAll(async () => {
  broker = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
})
afterAll(async () => {
  await broker.stop()
})

const L = Serdes.Long()

function instance(n: number): { streams: KafkaStreams; rebalancing: number[]; since: { t: number | null } } {
  const b = new StreamsBuilder()
  b.stream('scale-in', Consumed.with(Serdes.String(), Serdes.String())).groupByKey().count(Materialized.as<string, number>('counts')).toStream().to('scale-out', Produced.with(Serdes.String(), L))
  const streams = new KafkaStreams(b.build(), {
    'application.id': 'scaler',
    'bootstrap.servers': broker.bootstrap,
    'state.dir': stateDir(`scale-${n}`),
    'processing.guarantee': 'exactly_once_v2',
    'num.standby.replicas': 1,
    'application.server': `host${n}:80${n}0`,
    'commit.interval.ms': 100,
    'session.timeout.ms': 10_000,
    'heartbeat.interval.ms': 500,
    'acceptable.recovery.lag': 50,
    'probing.rebalance.interval.ms': 1500,
  })
  const rebalancing: number[] = []
  const since = { t: null as number | null }
  streams.setStateListener((s: KafkaStreamsState) => {
    if (s === 'REBALANCING') since.t = Date.now()
    else if (since.t !== null) {
      rebalancing.push(Date.now() - since.t)
      since.t = null
    }
  })
  return { streams, rebalancing, since }
}

describe('scale-out', () => {
  it('a third instance takes tasks with their state, the others pausing no longer than a rebalance', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'scale-in', partitions: 6 },
      { name: 'scale-out', partitions: 6 },
    ])
    const a = instance(1)
    const b = instance(2)
    await a.streams.start()
    await b.streams.start()
    const all = [a, b]
    try {
      await waitForState(a.streams, 'RUNNING', 60_000)
      await waitForState(b.streams, 'RUNNING', 60_000)
      const producer = new Producer({ bootstrapServers: broker.bootstrap, lingerMs: 5 })
      const sent = new Map<string, number>()
      let i = 0
      let stop = false
      const feeding = (async () => {
        while (!stop) {
          const batch: Promise<unknown>[] = []
          for (let j = 0; j < 30; j++, i++) {
            const key = `k${i % 60}`
            sent.set(key, (sent.get(key) ?? 0) + 1)
            batch.push(producer.send({ topic: 'scale-in', key, value: String(i) }))
          }
          await Promise.all(batch)
          await new Promise((r) => setTimeout(r, 20))
        }
      })()
      await new Promise((r) => setTimeout(r, 1500))
      const c = instance(3)
      all.push(c)
      await c.streams.start()
      const hostsOf = (s: KafkaStreams): Map<string, number> => new Map(s.metadataForAllStreamsClients().map((m) => [`${m.hostInfo.host}`, m.topicPartitions.length]))
      // The newcomer ends up with tasks of its own (after warm-up and a probing rebalance).
      await waitFor(() => (hostsOf(a.streams).get('host3') ?? 0) >= 1 && c.streams.state === 'RUNNING', 'the third instance to run tasks', 60_000)
      await new Promise((r) => setTimeout(r, 1000))
      stop = true
      await feeding
      await producer.close()
      const hosts = hostsOf(a.streams)
      expect([...hosts.values()].reduce((x, y) => x + y, 0)).toBe(6)
      expect(hosts.get('host3')).toBeGreaterThanOrEqual(1)
      // The third instance's store holds the counts of its keys (state moved with the tasks).
      await waitFor(() => c.streams.state === 'RUNNING', 'the third instance running')
      const store = c.streams.store<string, number>(StoreQueryParameters.fromNameAndType('counts', QueryableStoreTypes.keyValueStore())) as ReadOnlyKeyValueStore<string, number>
      await waitFor(() => store.approximateNumEntries() > 0, 'the third instance to hold counts')
      // Final counts are exact.
      const expected = Object.fromEntries(sent)
      let last = new Map<string, number>()
      const deadline = Date.now() + 60_000
      while (Date.now() < deadline) {
        last = new Map()
        for (const r of await readAll(broker.bootstrap, 'scale-out', { readCommitted: true, quietMs: 1000 })) last.set(r.key!.toString(), L.deserializer.deserialize('', r.value)!)
        if ([...sent].every(([k, n]) => last.get(k) === n)) break
      }
      expect(Object.fromEntries(last)).toEqual(expected)
      // Read while no rebalance suspends the tasks (a store is not queryable during one, as in Kafka).
      await waitFor(() => {
        try {
          const local = [...sent].filter(([k]) => store.get(k) !== null)
          return local.length > 0 && local.every(([k, n]) => store.get(k) === n)
        } catch {
          return false
        }
      }, "the third instance's store to hold the final counts of its keys")
      // The first two instances paused only for rebalances, each short.
      for (const x of [a, b]) {
        expect(x.rebalancing.length).toBeGreaterThan(0)
        expect(Math.max(...x.rebalancing), `longest REBALANCING period of an old instance (${x.rebalancing.join(', ')} ms)`).toBeLessThan(8000)
      }
    } finally {
      for (const x of all) await x.streams.close()
    }
  }, 180_000)
})
