// Connect's group protocol: the metadata and assignment bytes in Kafka's ConnectProtocol /
// IncrementalCooperativeConnectProtocol layouts, and the leader's assignors (eager round-robin; incremental
// cooperative with scheduled.rebalance.max.delay.ms for a departed worker's work, and revocation of
// excess work when a worker joins). The clock is the assignor's injected one.
import { describe, expect, test } from 'vitest'
import { ConnectAssignor, type ConnectAssignment, decodeAssignment, decodeMetadata, encodeAssignment, encodeMetadata } from '../../src/connect/index.js'

describe('protocol bytes', () => {
  test('eager metadata (protocol "default") is version 0, url, config offset; incremental adds the member\'s allocation', () => {
    const v0 = encodeMetadata({ url: 'http://w1:8083', configOffset: 7, allocation: null }, 'default')
    const expected = Buffer.concat([Buffer.from([0, 0]), Buffer.from([0, 14]), Buffer.from('http://w1:8083'), Buffer.from([0, 0, 0, 0, 0, 0, 0, 7])])
    expect(v0).toEqual(expected)
    expect(decodeMetadata(v0)).toEqual({ url: 'http://w1:8083', configOffset: 7, allocation: null })
    const allocation: ConnectAssignment = { version: 1, error: 0, leader: 'm1', leaderUrl: 'http://w1:8083', configOffset: 7, assigned: { connectors: ['c'], tasks: [{ connector: 'c', task: 0 }] }, revoked: { connectors: [], tasks: [] }, delayMs: 0 }
    const v1 = encodeMetadata({ url: 'http://w1:8083', configOffset: 7, allocation }, 'compatible')
    expect(v1.readInt16BE(0)).toBe(1)
    const v2 = encodeMetadata({ url: 'http://w1:8083', configOffset: 7, allocation }, 'sessioned')
    expect(v2.readInt16BE(0)).toBe(2)
    expect(decodeMetadata(v2)).toEqual({ url: 'http://w1:8083', configOffset: 7, allocation })
  })

  test('an assignment groups a connector (task -1) with its tasks; v1 adds revoked work and the delay', () => {
    const a: ConnectAssignment = { version: 1, error: 0, leader: 'm1', leaderUrl: 'u', configOffset: 3, assigned: { connectors: ['c'], tasks: [{ connector: 'c', task: 0 }, { connector: 'c', task: 1 }] }, revoked: { connectors: [], tasks: [{ connector: 'd', task: 2 }] }, delayMs: 4000 }
    const bytes = encodeAssignment(a)
    // version, error, leader "m1", leaderUrl "u", offset 3, [c: -1, 0, 1], [d: 2], delay
    const expected = Buffer.from([
      0, 1, 0, 0, 0, 2, 0x6d, 0x31, 0, 1, 0x75, 0, 0, 0, 0, 0, 0, 0, 3,
      0, 0, 0, 1, 0, 1, 0x63, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1,
      0, 0, 0, 1, 0, 1, 0x64, 0, 0, 0, 1, 0, 0, 0, 2,
      0, 0, 0x0f, 0xa0,
    ])
    expect(bytes).toEqual(expected)
    expect(decodeAssignment(bytes)).toEqual(a)
  })

  test('truncated or negative-version bytes are refused with an error, not a crash', () => {
    expect(() => decodeMetadata(Buffer.from([0xff, 0xff]))).toThrow()
    expect(() => decodeAssignment(Buffer.from([0, 1, 0, 0, 0, 9, 0x41]))).toThrow()
    expect(() => decodeMetadata(Buffer.from([0, 0, 0x7f, 0xff]))).toThrow()
  })
})

const work = { connectors: ['c'], tasks: [0, 1, 2, 3].map((task) => ({ connector: 'c', task })) }

function member(id: string, allocation: ConnectAssignment | null): { memberId: string; state: { url: string; configOffset: number; allocation: ConnectAssignment | null } } {
  return { memberId: id, state: { url: `http://${id}`, configOffset: 1, allocation } }
}

const count = (a: ConnectAssignment | undefined): number => (a === undefined ? 0 : a.assigned.connectors.length + a.assigned.tasks.length)

/** What a member runs after applying an assignment on top of what it ran. */
function applied(before: ConnectAssignment | null, a: ConnectAssignment): ConnectAssignment {
  const key = (t: { connector: string; task: number }): string => `${t.connector}-${t.task}`
  const revokedTasks = new Set(a.revoked.tasks.map(key))
  const connectors = [...(before?.assigned.connectors ?? []).filter((c) => !a.revoked.connectors.includes(c)), ...a.assigned.connectors]
  const tasks = [...(before?.assigned.tasks ?? []).filter((t) => !revokedTasks.has(key(t))), ...a.assigned.tasks]
  return { ...a, assigned: { connectors, tasks }, revoked: { connectors: [], tasks: [] } }
}

describe('assignors', () => {
  test('eager: everything round-robin over the members sorted by id', () => {
    const out = new ConnectAssignor(1000).assign('default', 'a', 'http://a', 1, [member('b', null), member('a', null)], work)
    expect(out.get('a')!.assigned).toEqual({ connectors: ['c'], tasks: [{ connector: 'c', task: 1 }, { connector: 'c', task: 3 }] })
    expect(out.get('b')!.assigned).toEqual({ connectors: [], tasks: [{ connector: 'c', task: 0 }, { connector: 'c', task: 2 }] })
    expect(out.get('a')!.version).toBe(0)
  })

  test('incremental: a departed worker\'s work waits scheduled.rebalance.max.delay.ms, then moves', () => {
    let now = 1_000_000
    const assignor = new ConnectAssignor(5000, () => now)
    const r1 = assignor.assign('sessioned', 'a', 'http://a', 1, [member('a', null), member('b', null)], work)
    expect(count(r1.get('a')) + count(r1.get('b'))).toBe(5)
    expect(Math.abs(r1.get('a')!.assigned.tasks.length - r1.get('b')!.assigned.tasks.length)).toBe(0)
    const aRuns = applied(null, r1.get('a')!)
    const bRuns = applied(null, r1.get('b')!)

    // b dies: a rejoins alone; b's work is withheld for the delay.
    now += 1000
    const r2 = assignor.assign('sessioned', 'a', 'http://a', 1, [member('a', aRuns)], work)
    expect(r2.get('a')!.assigned).toEqual({ connectors: [], tasks: [] })
    expect(r2.get('a')!.delayMs).toBe(5000)
    now += 2000
    const r3 = assignor.assign('sessioned', 'a', 'http://a', 1, [member('a', aRuns)], work)
    expect(r3.get('a')!.assigned).toEqual({ connectors: [], tasks: [] })
    expect(r3.get('a')!.delayMs).toBe(3000)
    // The delay is over: a takes b's work.
    now += 3000
    const r4 = assignor.assign('sessioned', 'a', 'http://a', 1, [member('a', aRuns)], work)
    expect(r4.get('a')!.assigned).toEqual(bRuns.assigned)
    expect(r4.get('a')!.delayMs).toBe(0)
  })

  test('incremental: a worker that comes back within the delay gets the lost work at once', () => {
    let now = 0
    const assignor = new ConnectAssignor(60000, () => now)
    const r1 = assignor.assign('compatible', 'a', 'http://a', 1, [member('a', null), member('b', null)], work)
    const aRuns = applied(null, r1.get('a')!)
    now += 1000
    assignor.assign('compatible', 'a', 'http://a', 1, [member('a', aRuns)], work)
    now += 1000
    const back = assignor.assign('compatible', 'a', 'http://a', 1, [member('a', aRuns), member('b2', null)], work)
    expect(count(back.get('b2'))).toBe(count(r1.get('b')))
    expect(back.get('a')!.assigned).toEqual({ connectors: [], tasks: [] })
  })

  test('incremental: a joining worker makes the busiest revoke its excess, then gets it in the next round', () => {
    const assignor = new ConnectAssignor(1000, () => 0)
    const r1 = assignor.assign('sessioned', 'a', 'http://a', 1, [member('a', null)], work)
    const aRuns = applied(null, r1.get('a')!)
    expect(count(r1.get('a'))).toBe(5)
    const r2 = assignor.assign('sessioned', 'a', 'http://a', 1, [member('a', aRuns), member('b', null)], work)
    expect(r2.get('a')!.revoked.tasks.length).toBe(2)
    expect(count(r2.get('b'))).toBe(0)
    const aAfter = applied(aRuns, r2.get('a')!)
    const r3 = assignor.assign('sessioned', 'a', 'http://a', 1, [member('a', aAfter), member('b', applied(null, r2.get('b')!))], work)
    expect(r3.get('b')!.assigned.tasks).toEqual(r2.get('a')!.revoked.tasks)
    expect(aAfter.assigned.tasks.length).toBe(2)
  })

  test('incremental: deleted work is revoked; work claimed by two members stays with one', () => {
    const assignor = new ConnectAssignor(1000, () => 0)
    const both: ConnectAssignment = { version: 2, error: 0, leader: 'a', leaderUrl: 'http://a', configOffset: 1, assigned: { connectors: ['c', 'gone'], tasks: [{ connector: 'c', task: 0 }] }, revoked: { connectors: [], tasks: [] }, delayMs: 0 }
    const out = assignor.assign('sessioned', 'a', 'http://a', 1, [member('a', both), member('b', { ...both, assigned: { connectors: [], tasks: [{ connector: 'c', task: 0 }] } })], work)
    expect(out.get('a')!.revoked.connectors).toEqual(['gone'])
    expect(out.get('b')!.revoked.tasks).toEqual([{ connector: 'c', task: 0 }])
    const assigned = [...out.values()].flatMap((a) => a.assigned.tasks.map((t) => t.task)).sort()
    expect(assigned).toEqual([1, 2, 3])
  })
})
