// Exactly-once under faults: two instances of a counting application (separate processes,
// exactly_once_v2) share a keyed input stream; while the input flows one instance after the other is
// killed with SIGKILL and restarted. At the end each key's output counts, read read_committed, rise
// strictly and end at exactly n for the n input records of the key (nothing counted twice, nothing
// missing; the record cache forwards a key's latest count once per commit, so counts in between may not
// appear, but none may appear twice or go back), and a fresh instance that rebuilds the state from the
// changelogs alone finds the same counts in its store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Producer } from '../../src/client/index.js'
import { KafkaStreams, Consumed, Materialized, Produced, QueryableStoreTypes, Serdes, StoreQueryParameters, StreamsBuilder, type ReadOnlyKeyValueStore } from '../../src/streams/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { startCountApp, type AppProcess } from './app-process.js'
import { createTopics, readAll, stateDir, waitForState } from './helpers.js'

let broker: TestBroker
beforeAll(async () => {
  broker = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
})
afterAll(async () => {
  await broker.stop()
})

const KEYS = 24
const L = Serdes.Long()

describe('exactly_once_v2 under SIGKILL', () => {
  it('two instances, one killed repeatedly while input flows: every key counted exactly once per record', async () => {
    const appId = 'eos-counter'
    await createTopics(broker.bootstrap, [
      { name: 'eos-in', partitions: 4 },
      { name: 'eos-out', partitions: 4 },
    ])
    const dirs = [stateDir('eos-a'), stateDir('eos-b')]
    const args = (i: number): string[] => [broker.bootstrap, appId, 'eos-in', 'eos-out', dirs[i]!, 'exactly_once_v2', '1']
    const apps: AppProcess[] = [startCountApp(args(0)), startCountApp(args(1))]
    try {
      await Promise.all(apps.map((a) => a.waitForState('RUNNING')))
      const producer = new Producer({ bootstrapServers: broker.bootstrap, lingerMs: 5 })
      const sent = new Map<string, number>()
      let i = 0
      const total = 12_000
      const feeding = (async () => {
        while (i < total) {
          const batch: Promise<unknown>[] = []
          for (let j = 0; j < 40 && i < total; j++, i++) {
            const key = `k${i % KEYS}`
            sent.set(key, (sent.get(key) ?? 0) + 1)
            batch.push(producer.send({ topic: 'eos-in', key, value: String(i) }))
          }
          await Promise.all(batch)
          await new Promise((r) => setTimeout(r, 25))
        }
      })()
      // Kill one instance, then the other, while the input flows; each comes back on its own state dir.
      let killsWhileFeeding = 0
      for (let k = 0; k < 4; k++) {
        await new Promise((r) => setTimeout(r, 1200))
        if (i < total) killsWhileFeeding++
        const victim = k % 2
        await apps[victim]!.kill('SIGKILL')
        await new Promise((r) => setTimeout(r, 300))
        apps[victim] = startCountApp(args(victim))
      }
      await feeding
      await producer.close()
      expect(killsWhileFeeding, 'instances killed while input was flowing').toBeGreaterThanOrEqual(3)
      await Promise.all(apps.map((a) => a.waitForState('RUNNING', 60_000)))
      // Read the output until every key's count reached its input count.
      const expected = Object.fromEntries(sent)
      const done = (records: { key: Buffer | null; value: Buffer | null }[]): boolean => {
        const last = new Map<string, number>()
        for (const r of records) last.set(r.key!.toString(), L.deserializer.deserialize('', r.value)!)
        return [...sent].every(([k, n]) => last.get(k) === n)
      }
      let records: { key: Buffer | null; value: Buffer | null }[] = []
      const deadline = Date.now() + 90_000
      while (Date.now() < deadline) {
        records = await readAll(broker.bootstrap, 'eos-out', { readCommitted: true, quietMs: 1000 })
        if (done(records)) break
      }
      const seq = new Map<string, number[]>()
      for (const r of records) {
        const k = r.key!.toString()
        let l = seq.get(k)
        if (l === undefined) seq.set(k, (l = []))
        l.push(L.deserializer.deserialize('', r.value)!)
      }
      for (const [k, n] of sent) {
        const counts = seq.get(k) ?? []
        expect(counts.at(-1), `last count of ${k}`).toBe(n)
        expect(counts.every((c, i) => c >= 1 && (i === 0 || c > counts[i - 1]!)), `counts of ${k} rise strictly: ${counts.join(',')}`).toBe(true)
      }
      expect(Object.fromEntries([...seq].map(([k, l]) => [k, l.at(-1)]))).toEqual(expected)
      // Stop both cleanly, then rebuild the state from the changelogs alone in a fresh instance.
      await Promise.all(apps.map((a) => a.kill('SIGTERM')))
      const b = new StreamsBuilder()
      b.stream('eos-in', Consumed.with(Serdes.String(), Serdes.String())).groupByKey().count(Materialized.as<string, number>('counts')).toStream().to('eos-out', Produced.with(Serdes.String(), L))
      const fresh = new KafkaStreams(b.build(), { 'application.id': appId, 'bootstrap.servers': broker.bootstrap, 'state.dir': stateDir('eos-fresh'), 'processing.guarantee': 'exactly_once_v2' })
      await fresh.start()
      try {
        await waitForState(fresh, 'RUNNING', 60_000)
        const store = fresh.store<string, number>(StoreQueryParameters.fromNameAndType('counts', QueryableStoreTypes.keyValueStore())) as ReadOnlyKeyValueStore<string, number>
        expect(Object.fromEntries(store.all().map((kv) => [kv.key, kv.value]))).toEqual(expected)
      } finally {
        await fresh.close()
      }
    } finally {
      for (const a of apps) await a.kill('SIGKILL')
    }
  }, 240_000)
})
