// Skein Streams against a real Skein broker: what happens when a stream thread dies (the uncaught
// exception handler replacing the thread, or the client shutting down into ERROR, as the state listener
// sees it), and a GlobalKTable kept up to date by the global thread while the application runs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Consumed, KafkaStreams, Materialized, Produced, Serdes, StreamsBuilder, type KafkaStreamsState } from '../../src/streams/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { createTopics, produce, readAll, stateDir, waitFor, waitForState } from './helpers.js'

let broker: TestBroker
beforeAll(async () => {
  broker = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
})
afterAll(async () => {
  await broker.stop()
})

const S = Serdes.String()

describe('a stream thread that dies', () => {
  it('is replaced when the uncaught exception handler answers REPLACE_THREAD, and its records are processed', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'replace-in', partitions: 2 },
      { name: 'replace-out', partitions: 2 },
    ])
    await produce(broker.bootstrap, 'replace-in', ['a', 'b', 'poison', 'c', 'd'].map((v) => ({ key: v, value: v })))
    let thrown = 0
    const b = new StreamsBuilder()
    b.stream('replace-in', Consumed.with(S, S))
      .mapValues((v) => {
        // Fails once: the replacement thread reprocesses the uncommitted records and gets through.
        if (v === 'poison' && thrown++ === 0) throw new Error('poison record')
        return v.toUpperCase()
      })
      .to('replace-out', Produced.with(S, S))
    const streams = new KafkaStreams(b.build(), { 'application.id': 'replace-app', 'bootstrap.servers': broker.bootstrap, 'state.dir': stateDir('replace'), 'commit.interval.ms': 200 })
    const errors: string[] = []
    streams.setUncaughtExceptionHandler((err) => {
      errors.push(err.message)
      return 'REPLACE_THREAD'
    })
    await streams.start()
    try {
      const out = await readAll(broker.bootstrap, 'replace-out', { done: (n) => n >= 5, timeoutMs: 45_000 })
      // at_least_once: records before the failure may come twice, none is missing.
      expect(new Set(out.map((r) => r.value!.toString()))).toEqual(new Set(['A', 'B', 'POISON', 'C', 'D']))
      expect(errors).toHaveLength(1)
      expect(errors[0]).toContain('poison record')
      await waitForState(streams, 'RUNNING')
    } finally {
      await streams.close()
    }
    expect(streams.state).toBe('NOT_RUNNING')
  })

  it('shuts the client down into ERROR by default, through PENDING_ERROR', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'fail-in', partitions: 1 },
      { name: 'fail-out', partitions: 1 },
    ])
    const b = new StreamsBuilder()
    b.stream('fail-in', Consumed.with(S, S))
      .mapValues((v) => {
        if (v === 'poison') throw new Error('poison record')
        return v
      })
      .to('fail-out', Produced.with(S, S))
    const streams = new KafkaStreams(b.build(), { 'application.id': 'fail-app', 'bootstrap.servers': broker.bootstrap, 'state.dir': stateDir('fail'), 'commit.interval.ms': 200 })
    const transitions: [KafkaStreamsState, KafkaStreamsState][] = []
    streams.setStateListener((next, old) => transitions.push([old, next]))
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      await produce(broker.bootstrap, 'fail-in', [
        { key: 'k', value: 'fine', partition: 0 },
        { key: 'k', value: 'poison', partition: 0 },
      ])
      await waitForState(streams, 'ERROR')
      expect(transitions[0]).toEqual(['CREATED', 'REBALANCING'])
      expect(transitions).toContainEqual(['REBALANCING', 'RUNNING'])
      expect(transitions.slice(-2)).toEqual([
        ['RUNNING', 'PENDING_ERROR'],
        ['PENDING_ERROR', 'ERROR'],
      ])
      expect((await readAll(broker.bootstrap, 'fail-out', { quietMs: 500 })).map((r) => r.value!.toString())).toEqual(['fine'])
    } finally {
      await streams.close()
    }
    expect(streams.state).toBe('ERROR')
  })
})

describe('a GlobalKTable', () => {
  it('is bootstrapped before processing starts and follows its topic while the application runs', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'countries', partitions: 3 },
      { name: 'visits', partitions: 2 },
      { name: 'visits-named', partitions: 2 },
    ])
    await produce(broker.bootstrap, 'countries', [
      { key: 'fr', value: 'France' },
      { key: 'de', value: 'Germany' },
    ])
    const b = new StreamsBuilder()
    const countries = b.globalTable('countries', Consumed.with(S, S), Materialized.as<string, string>('countries-store'))
    b.stream('visits', Consumed.with(S, S))
      .leftJoin(countries, (_user, country) => country, (country, name) => `${country}:${name ?? 'unknown'}`)
      .to('visits-named', Produced.with(S, S))
    const streams = new KafkaStreams(b.build(), { 'application.id': 'global-app', 'bootstrap.servers': broker.bootstrap, 'state.dir': stateDir('global'), 'commit.interval.ms': 200 })
    // The visits are there before the application starts: France is known to the first of them only if
    // the global store was loaded before any task processed a record.
    await produce(broker.bootstrap, 'visits', [
      { key: 'ann', value: 'fr', partition: 0 },
      { key: 'bob', value: 'it', partition: 1 },
    ])
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      const first = await readAll(broker.bootstrap, 'visits-named', { done: (n) => n >= 2 })
      expect(first.map((r) => r.value!.toString()).sort()).toEqual(['fr:France', 'it:unknown'])
      // An update of the global topic reaches every instance's copy: the next visit from Italy is named.
      await produce(broker.bootstrap, 'countries', [{ key: 'it', value: 'Italy' }])
      await waitFor(async () => {
        await produce(broker.bootstrap, 'visits', [{ key: 'cy', value: 'it', partition: 0 }])
        const all = await readAll(broker.bootstrap, 'visits-named', { quietMs: 300 })
        return all.some((r) => r.value!.toString() === 'it:Italy')
      }, 'the global table to learn Italy', 20_000)
    } finally {
      await streams.close()
    }
  })
})
