// The server-side assignors of consumer groups: uniform (balanced, sticky, respecting each member's
// subscriptions) and range (contiguous, co-partitioned).
import { describe, expect, it } from 'vitest'
import type { Assignment } from '../../src/coordinator/group/consumer-group-records.js'
import { assignorName, rangeAssignor, uniformAssignor, type AssignorMember } from '../../src/coordinator/group/server-assignors.js'

function member(memberId: string, topics: string[], current: Record<string, number[]> = {}, instanceId: string | null = null): AssignorMember {
  return { memberId, instanceId, subscribedTopicIds: new Set(topics), currentTarget: new Map(Object.entries(current).map(([t, ps]) => [t, new Set(ps)])) as Assignment }
}

function flat(result: Map<string, Map<string, Set<number>>>): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  for (const [m, a] of result) out[m] = [...a].flatMap(([t, ps]) => [...ps].sort((x, y) => x - y).map((p) => `${t}-${p}`)).sort()
  return out
}

function everyPartitionOnce(result: Map<string, Map<string, Set<number>>>, topics: Record<string, number>): void {
  const seen = Object.values(flat(result)).flat().sort()
  const all = Object.entries(topics).flatMap(([t, n]) => Array.from({ length: n }, (_, p) => `${t}-${p}`)).sort()
  expect(seen).toEqual(all)
}

describe('uniform assignor', () => {
  it('spreads every partition evenly over members with the same subscriptions', () => {
    const topics = new Map([['a', 5], ['b', 3]])
    const r = uniformAssignor.assign({ members: [member('m1', ['a', 'b']), member('m2', ['a', 'b']), member('m3', ['a', 'b'])], topics })
    everyPartitionOnce(r, { a: 5, b: 3 })
    expect(Object.values(flat(r)).map((ps) => ps.length).sort()).toEqual([2, 3, 3])
  })

  it('is sticky: a member leaving moves only its partitions; a member joining takes only what balance needs', () => {
    const topics = new Map([['a', 6]])
    const first = uniformAssignor.assign({ members: [member('m1', ['a']), member('m2', ['a']), member('m3', ['a'])], topics })
    const cur = (m: string): Record<string, number[]> => Object.fromEntries([...first.get(m)!].map(([t, ps]) => [t, [...ps]]))
    const left = uniformAssignor.assign({ members: [member('m1', ['a'], cur('m1')), member('m2', ['a'], cur('m2'))], topics })
    for (const m of ['m1', 'm2']) for (const p of flat(first)[m]!) expect(flat(left)[m]).toContain(p)
    everyPartitionOnce(left, { a: 6 })
    const joined = uniformAssignor.assign({ members: [member('m1', ['a'], cur('m1')), member('m2', ['a'], cur('m2')), member('m3', ['a'], cur('m3')), member('m4', ['a'])], topics })
    everyPartitionOnce(joined, { a: 6 })
    const moved = ['m1', 'm2', 'm3'].reduce((n, m) => n + flat(first)[m]!.filter((p) => !flat(joined)[m]!.includes(p)).length, 0)
    expect(moved).toBe(1)
    expect(flat(joined)['m4']).toHaveLength(1)
  })

  it('with different subscriptions gives each member only its topics and balances what it can', () => {
    const topics = new Map([['a', 4], ['b', 2]])
    const r = uniformAssignor.assign({ members: [member('m1', ['a']), member('m2', ['a', 'b']), member('m3', ['b'])], topics })
    everyPartitionOnce(r, { a: 4, b: 2 })
    expect(flat(r)['m1']!.every((p) => p.startsWith('a-'))).toBe(true)
    expect(flat(r)['m3']!.every((p) => p.startsWith('b-'))).toBe(true)
    expect(Object.values(flat(r)).map((ps) => ps.length).sort()).toEqual([2, 2, 2])
  })

  it('drops current targets of topics a member no longer subscribes to or that no longer exist', () => {
    const r = uniformAssignor.assign({ members: [member('m1', ['a'], { a: [0, 1, 7], gone: [0] })], topics: new Map([['a', 2]]) })
    expect(flat(r)).toEqual({ m1: ['a-0', 'a-1'] })
  })
})

describe('range assignor', () => {
  it('gives contiguous ranges per topic, the first members one more, static members ordered by instance id', () => {
    const r = rangeAssignor.assign({ members: [member('z', ['a'], {}, 'i0'), member('y', ['a'], {}, 'i1'), member('x', ['a'], {}, 'i2')], topics: new Map([['a', 7]]) })
    expect(flat(r)).toEqual({ z: ['a-0', 'a-1', 'a-2'], y: ['a-3', 'a-4'], x: ['a-5', 'a-6'] })
  })
})

describe('group.consumer.assignors names', () => {
  it('accepts the short names and Kafka\'s class names', () => {
    expect(assignorName('uniform')).toBe('uniform')
    expect(assignorName('org.apache.kafka.coordinator.group.assignor.RangeAssignor')).toBe('range')
    expect(assignorName('sticky')).toBeUndefined()
  })
})
