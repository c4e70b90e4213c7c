// Unit tests of the quota rules: Kafka's entity precedence and defaults, the sampled rate and its
// throttle time, the controller mutation token bucket.
import { describe, expect, it } from 'vitest'
import { ClientQuotaManager, QuotaTable, quotaEntityOf, quotaEntityPath, type QuotaEntity } from '../../src/quota/client-quotas.js'
import { SampledRate, TokenBucket } from '../../src/quota/sampled-stats.js'

function table(entries: [QuotaEntity, number][]): QuotaTable {
  const t = new QuotaTable()
  for (const [e, v] of entries) t.set(quotaEntityPath(e), new Map([['producer_byte_rate', v]]))
  return t
}

describe('quota entity paths', () => {
  it('uses Kafka layout, sanitized names and <default>', () => {
    expect(quotaEntityPath({ user: 'alice' })).toEqual({ entityType: 'users', entityName: 'alice' })
    expect(quotaEntityPath({ user: null, clientId: 'c/1' })).toEqual({ entityType: 'users', entityName: '<default>/clients/c%2F1' })
    expect(quotaEntityPath({ clientId: null })).toEqual({ entityType: 'clients', entityName: '<default>' })
    expect(quotaEntityPath({ user: 'CN=a b' })).toEqual({ entityType: 'users', entityName: 'CN%3Da%20b' })
    expect(quotaEntityOf('users', 'alice/clients/%3Cdefault%3E')).toEqual({ user: 'alice', clientId: '<default>' })
    expect(quotaEntityOf('users', 'alice/clients/<default>')).toEqual({ user: 'alice', clientId: null })
    expect(quotaEntityOf('users', 'a/b')).toBeUndefined()
    expect(quotaEntityOf('topics', 't')).toBeUndefined()
  })
})

describe('quota precedence (Kafka DefaultQuotaCallback order)', () => {
  const all: [QuotaEntity, number][] = [
    [{ user: 'u', clientId: 'c' }, 1],
    [{ user: 'u', clientId: null }, 2],
    [{ user: 'u' }, 3],
    [{ user: null, clientId: 'c' }, 4],
    [{ user: null, clientId: null }, 5],
    [{ user: null }, 6],
    [{ clientId: 'c' }, 7],
    [{ clientId: null }, 8],
  ]
  it('takes the most specific entity that sets the quota, down to /config/clients/<default>', () => {
    for (let i = 0; i < all.length; i++) {
      const t = table(all.slice(i))
      expect(t.resolve('producer_byte_rate', 'u', 'c')?.bound).toBe(i + 1)
    }
    expect(table([]).resolve('producer_byte_rate', 'u', 'c')).toBeUndefined()
  })
  it('names the sensor by the components of the entity that matched', () => {
    expect(table([[{ user: 'u' }, 3]]).resolve('producer_byte_rate', 'u', 'c')).toMatchObject({ user: 'u', clientId: '' })
    expect(table([[{ clientId: null }, 8]]).resolve('producer_byte_rate', 'u', 'c')).toMatchObject({ user: '', clientId: 'c' })
    expect(table([[{ user: null, clientId: null }, 5]]).resolve('producer_byte_rate', 'u', 'c')).toMatchObject({ user: 'u', clientId: 'c' })
  })
  it('does not apply another user or client-id', () => {
    const t = table([[{ user: 'v' }, 1], [{ clientId: 'd' }, 2], [{ user: 'u', clientId: 'd' }, 3]])
    expect(t.resolve('producer_byte_rate', 'u', 'c')).toBeUndefined()
    expect(t.resolve('consumer_byte_rate', 'v', 'c')).toBeUndefined()
  })
})

describe('SampledRate (Kafka Rate over quota.window.num windows)', () => {
  it('measures over at least samples-1 windows and throttles back to the bound', () => {
    const r = new SampledRate(11, 1000, 0)
    r.record(5000, 0)
    // 5000 over the 10-window minimum: 500/s.
    expect(r.measure(0)).toBeCloseTo(500)
    expect(r.throttleTimeMs(1000, 0)).toBe(0)
    r.record(15_000, 100)
    // 20000 over 10.1 s (10 windows + 100 ms): (20000/10.1 - 1000)/1000 x 10.1 s.
    expect(r.throttleTimeMs(1000, 100)).toBe(9900)
    // Windows older than 11 s no longer count.
    expect(r.measure(12_000)).toBe(0)
  })
  it('a client held to its throttle times averages its quota', () => {
    const r = new SampledRate(11, 1000, 0)
    let now = 0
    let sent = 0
    while (now < 60_000) {
      r.record(100_000, now)
      sent += 100_000
      now += Math.max(10, r.throttleTimeMs(1_000_000, now))
    }
    expect(sent / (now / 1000)).toBeGreaterThan(0.95e6)
    expect(sent / (now / 1000)).toBeLessThan(1.25e6)
  })
})

describe('ClientQuotaManager', () => {
  it('records only clients with a quota, and shares a user-level sensor between client-ids', () => {
    const t = new QuotaTable()
    t.set(quotaEntityPath({ user: 'u' }), new Map([['producer_byte_rate', 1000]]))
    const m = new ClientQuotaManager('producer_byte_rate', t, { samples: 2, windowMs: 1000 })
    expect(m.recordAndGetThrottleTimeMs('other', 'c', 1e9, 0)).toBe(0)
    expect(m.recordAndGetThrottleTimeMs('u', 'c1', 1000, 0)).toBe(0)
    expect(m.recordAndGetThrottleTimeMs('u', 'c2', 1000, 0)).toBe(1000)
    expect(m.snapshot(0)).toEqual([{ user: 'u', clientId: '', rate: 2000, throttleTimeMs: 500 }])
    // Capped at one full measurement period.
    expect(m.recordAndGetThrottleTimeMs('u', 'c2', 1e9, 0)).toBe(2000)
  })
})

describe('TokenBucket (controller mutations)', () => {
  it('starts with a burst of quota x samples x window and goes into debt', () => {
    const b = new TokenBucket(2, 1000, 0)
    expect(b.measure(5, 0)).toBe(10)
    b.record(12, 5, 0)
    expect(b.measure(5, 0)).toBe(-2)
    expect(b.throttleTimeMs(5, 0)).toBe(400)
    expect(b.throttleTimeMs(5, 400)).toBe(0)
    expect(b.measure(5, 10_000)).toBe(10)
  })
})
