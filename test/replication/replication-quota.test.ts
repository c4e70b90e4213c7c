// Replication throttling's parts (src/replication/replication-quota.ts): which replicas a topic's
// *.replication.throttled.replicas lists, and the rate over a sliding window of samples.
import { describe, expect, it } from 'vitest'
import { RateMeter, ReplicationQuota } from '../../src/replication/replication-quota.js'

describe('replication quota', () => {
  it("throttles the replicas listed as partition:broker for this broker, or all with '*'", () => {
    const lists: Record<string, string> = { a: '0:1,1:2, 2:1', b: '*', c: '' }
    const quota = new ReplicationQuota({ brokerId: 1, bound: () => 1000, throttledReplicas: (t) => lists[t] ?? '', samples: 2, sampleMs: 1000 })
    expect([0, 1, 2].map((p) => quota.isThrottled('a', p))).toEqual([true, false, true])
    expect(quota.isThrottled('b', 7)).toBe(true)
    expect(quota.isThrottled('c', 0)).toBe(false)
    expect(quota.isThrottled('unknown', 0)).toBe(false)
  })

  it('measures bytes per second over the window and says when the bound is exceeded', () => {
    const meter = new RateMeter(2, 1000)
    meter.record(500, 0)
    // Younger than one window: over at least (samples - 1) samples.
    expect(meter.rate(100)).toBe(500)
    meter.record(1500, 1200)
    expect(meter.rate(1500)).toBeCloseTo((2000 * 1000) / 1500)
    // The first sample left the window.
    expect(meter.rate(2100)).toBeCloseTo(1500)
    expect(meter.rate(5000)).toBe(0)

    let bound = 1000
    const quota = new ReplicationQuota({ brokerId: 1, bound: () => bound, throttledReplicas: () => '*', samples: 2, sampleMs: 1000 })
    const t = Date.now()
    quota.record(3000, t)
    expect(quota.isQuotaExceeded(t + 10)).toBe(true)
    bound = 2 ** 63 // Long.MAX_VALUE: unthrottled
    expect(quota.isQuotaExceeded(t + 10)).toBe(false)
  })
})
