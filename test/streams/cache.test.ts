// The record cache of key-value stores (src/streams/state/caching.ts), on a real in-memory store with its
// changelog layer: writes of a key between flushes reach the store, the changelog and the flush listener
// once, with the value flushed before as the old value; the least recently written entries are flushed
// when the thread's budget is exceeded; range reads write the cache through without forwarding; a close
// drops what was not flushed. The DSL side (count with and without the cache) runs in the test driver.
import { describe, expect, it } from 'vitest'
import { Materialized, Serdes, Stores, StreamsBuilder, TopologyTestDriver } from '../../src/streams/index.js'
import { CachingKeyValueStore, ThreadCache } from '../../src/streams/state/caching.js'

function cachedStore(cache: ThreadCache): CachingKeyValueStore<string, number> {
  const b = Stores.timestampedKeyValueStoreBuilder(Stores.inMemoryKeyValueStore('counts'), Serdes.String(), Serdes.Long()).withCachingEnabled()
  const s = b.build({ dir: null, changelog: { topic: 'app-counts-changelog', partition: 0 }, defaultKeySerde: Serdes.String() as never, defaultValueSerde: Serdes.String() as never, cache })
  expect(s).toBeInstanceOf(CachingKeyValueStore)
  return s as unknown as CachingKeyValueStore<string, number>
}

function changelogOf(s: CachingKeyValueStore<string, number>): [string, number | null][] {
  const out: [string, number | null][] = []
  s.logged.drainChangelog((_t, _p, k, v) => out.push([k.toString(), v === null ? null : Serdes.Long().deserializer.deserialize('', v.subarray(8))]))
  return out
}

describe('record cache', () => {
  it('forwards, stores and logs one update per key per flush, with the previously flushed value as the old one', () => {
    const s = cachedStore(new ThreadCache(10 * 1024 * 1024))
    const forwarded: [string, number | null, number | null][] = []
    s.setFlushListener((k, n, o) => forwarded.push([k, n, o]))
    for (let i = 1; i <= 3; i++) s.putWithTimestamp('a', i, i)
    s.putWithTimestamp('b', 1, 5)
    expect(s.get('a')).toBe(3)
    expect(s.getWithTimestamp('b')).toEqual({ value: 1, timestamp: 5 })
    expect(forwarded).toEqual([])
    expect(s.logged.pendingChangelogEntries).toBe(0)
    s.flushCache()
    expect(forwarded).toEqual([
      ['a', 3, null],
      ['b', 1, null],
    ])
    expect(changelogOf(s)).toEqual([
      ['a', 3],
      ['b', 1],
    ])
    s.putWithTimestamp('a', 4, 6)
    s.delete('b')
    s.flushCache()
    expect(forwarded.slice(2)).toEqual([
      ['a', 4, 3],
      ['b', null, 1],
    ])
    expect(changelogOf(s)).toEqual([
      ['a', 4],
      ['b', null],
    ])
    expect(s.get('b')).toBeNull()
  })

  it('flushes the least recently written entries once the thread budget is exceeded', () => {
    // Each entry is counted as key + value bytes + 100: about 109 bytes here, so 300 bytes hold two.
    const cache = new ThreadCache(300)
    const s = cachedStore(cache)
    const forwarded: string[] = []
    s.setFlushListener((k, n) => forwarded.push(`${k}=${n}`))
    s.put('a', 1)
    s.put('b', 1)
    s.put('a', 2) // a is now the most recently written
    expect(forwarded).toEqual([])
    s.put('c', 1)
    expect(forwarded).toEqual(['b=1'])
    expect(cache.bytes).toBeLessThanOrEqual(300)
    s.flushCache()
    expect(forwarded).toEqual(['b=1', 'a=2', 'c=1'])
    expect(cache.bytes).toBe(0)
  })

  it('range reads see the cached values and the entries still go downstream at the flush; close drops what is unflushed', () => {
    const cache = new ThreadCache(1 << 20)
    const s = cachedStore(cache)
    const forwarded: string[] = []
    s.setFlushListener((k, n) => forwarded.push(`${k}=${n}`))
    s.put('x', 7)
    s.put('y', 8)
    expect(s.all().map((kv) => [kv.key, kv.value])).toEqual([
      ['x', 7],
      ['y', 8],
    ])
    expect(forwarded).toEqual([])
    s.flushCache()
    expect(forwarded).toEqual(['x=7', 'y=8'])
    s.put('z', 1)
    expect(cache.bytes).toBeGreaterThan(0)
    s.close()
    expect(cache.bytes).toBe(0)
    expect(forwarded).toEqual(['x=7', 'y=8'])
  })

  it('statestore.cache.max.bytes=0 and withCachingDisabled leave the store uncached', () => {
    const b = Stores.timestampedKeyValueStoreBuilder(Stores.inMemoryKeyValueStore('s'), Serdes.String(), Serdes.Long()).withCachingEnabled()
    const ctx = { dir: null, changelog: null, defaultKeySerde: Serdes.String() as never, defaultValueSerde: Serdes.String() as never }
    expect(b.build({ ...ctx, cache: new ThreadCache(0) })).not.toBeInstanceOf(CachingKeyValueStore)
    expect(b.withCachingDisabled().build({ ...ctx, cache: new ThreadCache(1000) })).not.toBeInstanceOf(CachingKeyValueStore)
  })

  it('a count in the test driver forwards every update (the driver commits after each input), cached or not', () => {
    for (const m of [Materialized.as<string, number>('c'), Materialized.as<string, number>('c').withCachingDisabled()]) {
      const b = new StreamsBuilder()
      b.stream<string, string>('in').groupByKey().count(m).toStream().to('out')
      const d = new TopologyTestDriver(b.build(), { 'default.key.serde': 'String', 'default.value.serde': 'String' })
      try {
        const input = d.createInputTopic('in', Serdes.String().serializer, Serdes.String().serializer)
        for (const k of ['a', 'a', 'b', 'a']) input.pipeInput(k, 'v')
        const out = d.createOutputTopic('out', Serdes.String().deserializer, Serdes.Long().deserializer)
        expect(out.readKeyValuesToList().map((kv) => `${kv.key}=${kv.value}`)).toEqual(['a=1', 'a=2', 'b=1', 'a=3'])
      } finally {
        d.close()
      }
    }
  })
})
