// The fetch session cache's bound and Kafka's eviction order, on a clock the test moves: a stale session
// (unused for 120 s) goes first; otherwise the least valuable evictable session (by privileged, size, id)
// goes only for a newcomer that ranks above it, and a session becomes evictable that way only once used
// after its first 120 s.
import { describe, expect, it } from 'vitest'
import { FetchSessionCache, nextEpoch, SESSION_EVICTION_MS, type FetchSession } from '../../src/server/handlers/common/fetch-sessions.js'

const T0 = 1_000_000

function open(cache: FetchSessionCache, now: number, size: number, privileged = false): FetchSession | undefined {
  return cache.create(now, privileged ? 1 : -1, false, size, (s) => {
    for (let p = 0; p < size; p++) {
      s.partitions.set(`t\u0000${p}`, { topic: 't', topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partition: p, fetchOffset: 0, maxBytes: 1, currentLeaderEpoch: -1, lastFetchedEpoch: -1, readNext: true, highWatermark: -1, logStartOffset: -1 })
    }
  })
}

describe('FetchSessionCache', () => {
  it('gives out distinct positive ids, epoch 1 first, and counts its partitions', () => {
    const cache = new FetchSessionCache(10)
    const a = open(cache, T0, 3)!
    const b = open(cache, T0, 2)!
    expect(a.id).toBeGreaterThan(0)
    expect(b.id).not.toBe(a.id)
    expect(a.epoch).toBe(1)
    expect(cache.size).toBe(2)
    expect(cache.cachedPartitions).toBe(5)
    expect(cache.get(a.id)).toBe(a)
    expect(cache.remove(a.id)).toBe(true)
    expect(cache.remove(a.id)).toBe(false)
    expect(cache.get(a.id)).toBeUndefined()
  })

  it('epochs wrap to 1, never to 0 (the full-fetch epoch)', () => {
    expect(nextEpoch(1)).toBe(2)
    expect(nextEpoch(0x7fffffff)).toBe(1)
    expect(nextEpoch(-1)).toBe(-1)
  })

  it('holds nothing with 0 slots', () => {
    const cache = new FetchSessionCache(0)
    expect(open(cache, T0, 5)).toBeUndefined()
    expect(open(cache, T0, 5, true)).toBeUndefined()
  })

  it('evicts the least recently used session once it is stale', () => {
    const cache = new FetchSessionCache(2)
    const a = open(cache, T0, 5)!
    const b = open(cache, T0 + 1000, 5)!
    cache.touch(a, T0 + 2000) // a is now the most recently used
    // b has been idle exactly 120 s (not more): nothing is stale, and no session is evictable by size.
    expect(open(cache, T0 + 1000 + SESSION_EVICTION_MS, 50)).toBeUndefined()
    // b, unused for more than 120 s, goes.
    const c = open(cache, T0 + 1001 + SESSION_EVICTION_MS, 1)!
    expect(c).toBeDefined()
    expect(cache.get(b.id)).toBeUndefined()
    expect(cache.get(a.id)).toBe(a)
    expect(cache.evictions).toBe(1)
  })

  it('evicts a smaller session for a larger newcomer only once that session was used after its first 120 s', () => {
    const cache = new FetchSessionCache(2)
    const small = open(cache, T0, 2)!
    const big = open(cache, T0, 10)!
    const later = T0 + SESSION_EVICTION_MS + 1
    // Both are young at their last use: not evictable, however large the newcomer.
    cache.touch(small, later - 2)
    cache.touch(big, later - 2)
    expect(open(cache, later, 50)).toBeUndefined()
    // Used again when older than 120 s: now evictable, smallest first, and only by a larger newcomer.
    cache.touch(small, later)
    cache.touch(big, later)
    expect(open(cache, later + 1, 2)).toBeUndefined()
    const c = open(cache, later + 1, 3)!
    expect(c).toBeDefined()
    expect(cache.get(small.id)).toBeUndefined()
    expect(cache.get(big.id)).toBe(big)
  })

  it('privileged (follower) sessions outrank consumer ones', () => {
    const cache = new FetchSessionCache(1)
    const consumer = open(cache, T0, 100)!
    // A young consumer session may be evicted by a privileged newcomer of any size...
    const follower = open(cache, T0 + 1, 1, true)!
    expect(follower).toBeDefined()
    expect(cache.get(consumer.id)).toBeUndefined()
    // ...but a young follower session by nobody, not even another follower.
    expect(open(cache, T0 + 2, 500, true)).toBeUndefined()
    expect(open(cache, T0 + 2, 500)).toBeUndefined()
  })
})
