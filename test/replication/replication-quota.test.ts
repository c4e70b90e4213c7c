// Replication throttling's parts (src/replication/replication-quota.ts): which replicas a topic's
// *.replication.throttled.replicas lists, and the rate over a sliding window of samples (Kafka's
// SimpleRate, as its ReplicationQuotaManager measures).
import { describe, expect, it } from 'vitest'
import { ReplicationQuota } from '../../src/replication/replication-quota.js'

describe('replication quota', () => {
  it("throttles the replicas listed as partition:broker for this broker, or all with '*'", () => {
    const lists: Record<string, string> = { a: '0:1,1:2, 2:1', b: '*', c: '' }
    const quota = new ReplicationQuota({ brokerId: 1, bound: () => 1000, throttledReplicas: (t) => lists[t] ?? '', samples: 2, sampleMs: 1000 })
    expect([0, 1, 2].map((p) => quota.isThrottled('a', p))).toEqual([true, false, true])
    expect(quota.isThrottled('b', 7)).toBe(true)
    expect(quota.isThrottled('c', 0)).toBe(false)
    expect(quota.isThrottled('unknown', 0)).toBe(false)
    // A config change is seen at the next question (the parsed list follows the stored text).
    lists['a'] = '1:1'
    lists['b'] = ''
    lists['c'] = '0:1'
    expect([0, 1, 2].map((p) => quota.isThrottled('a', p))).toEqual([false, true, false])
    expect(quota.isThrottled('b', 7)).toBe(false)
    expect(quota.isThrottled('c', 0)).toBe(true)
  })

  it('measures bytes per second over the window and says when the bound is exceeded', () => {
    const measured = new ReplicationQuota({ brokerId: 1, bound: () => 1000, throttledReplicas: () => '*', samples: 2, sampleMs: 1000 })
    // The windows begin at the first record (or quota check), as Kafka's sensor does.
    const t0 = Date.now()
    measured.record(500, t0)
    // Younger than one window: SimpleRate measures over one full window (not Rate's samples - 1 more).
    expect(measured.rate(t0 + 100)).toBeCloseTo(500, -1)
    measured.record(1500, t0 + 1200)
    expect(measured.rate(t0 + 1500)).toBeCloseTo(2000 / 1.5, -1)
    // The first window aged out (samples x window): the second one's bytes over its 0.9 s, at least 1 s.
    expect(measured.rate(t0 + 2100)).toBeCloseTo(1500, -1)
    expect(measured.rate(t0 + 2700)).toBeCloseTo(1500 / 1.5, -1)
    expect(measured.rate(t0 + 5000)).toBe(0)

    let bound = 1000
    const quota = new ReplicationQuota({ brokerId: 1, bound: () => bound, throttledReplicas: () => '*', samples: 2, sampleMs: 1000 })
    const t = Date.now()
    quota.record(3000, t)
    expect(quota.hasBound()).toBe(true)
    expect(quota.isQuotaExceeded(t + 10)).toBe(true)
    bound = 2 ** 63 // Long.MAX_VALUE: unthrottled
    expect(quota.hasBound()).toBe(false)
    expect(quota.isQuotaExceeded(t + 10)).toBe(false)
  })
})
