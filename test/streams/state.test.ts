// State stores and the assignor without a broker: LMDB and in-memory stores behind the logging layer
// (ranges, prefix scans, changelog entries deduplicated per commit, restore), window and session
// layouts, .checkpoint files in Kafka's format, and the KIP-441 assignor's choices.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { KeyValue, Serdes, Stores, Window, Windowed } from '../../src/streams/index.js'
import { OffsetCheckpoint } from '../../src/streams/state/checkpoint.js'
import { assignTasks, decodeAssignmentInfo, encodeInfo, RUNNING_OFFSET_SUM, type SubscriptionInfo, type TaskSpec } from '../../src/streams/runtime/assignor.js'
import type { KeyValueStore, SessionStore, WindowStore } from '../../src/streams/state/stores.js'
import type { InternalStore } from '../../src/streams/state/typed.js'

const dirs: string[] = []
const tmp = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'skein-state-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})
const S = Serdes.String()
const L = Serdes.Long()
const ctx = (dir: string | null) => ({ dir, changelog: { topic: 'app-s-changelog', partition: 3 }, defaultKeySerde: S as never, defaultValueSerde: S as never })

describe.each([true, false])('key-value store (persistent: %s)', (persistent) => {
  it('get/put/delete, ranges, prefix scans, one changelog entry per key per commit, restore', async () => {
    const supplier = persistent ? Stores.persistentKeyValueStore('s') : Stores.inMemoryKeyValueStore('s')
    const dir = tmp()
    const store = Stores.keyValueStoreBuilder(supplier, S, L).build(ctx(dir)) as KeyValueStore<string, number> & InternalStore
    store.put('b', 1)
    store.put('a', 2)
    store.put('b', 3)
    store.put('', 9)
    store.put('ab', 4)
    expect(store.get('b')).toBe(3)
    expect(store.range('a', 'ab').map((kv) => kv.key)).toEqual(['a', 'ab'])
    expect(store.all().map((kv) => kv.key)).toEqual(['', 'a', 'ab', 'b'])
    expect(store.reverseAll().map((kv) => kv.key)).toEqual(['b', 'ab', 'a', ''])
    expect(store.prefixScan('a', S.serializer).map((kv) => kv.value)).toEqual([2, 4])
    expect(store.delete('a')).toBe(2)
    const sent: [string, string, number, number | null][] = []
    store.logged.drainChangelog((topic, partition, k, v) => sent.push([topic, k.toString(), partition, v === null ? null : L.deserializer.deserialize('', v)]))
    // One entry per key, with its last value (a deletion as a tombstone).
    expect(sent).toEqual([['app-s-changelog', 'b', 3, 3], ['app-s-changelog', 'a', 3, null], ['app-s-changelog', '', 3, 9], ['app-s-changelog', 'ab', 3, 4]])
    await store.logged.flush()
    store.close()
    if (persistent) {
      const again = Stores.keyValueStoreBuilder(supplier, S, L).build(ctx(dir)) as KeyValueStore<string, number> & InternalStore
      expect(again.get('b')).toBe(3)
      again.logged.restore([[Buffer.from('z'), L.serializer.serialize('', 7)!], [Buffer.from('b'), null]])
      expect(again.get('z')).toBe(7)
      expect(again.get('b')).toBe(null)
      expect(again.logged.pendingChangelogEntries).toBe(0)
      again.close()
    }
  })
})

describe('window and session stores', () => {
  it('a window store keeps a key\'s windows in time order and drops writes past retention', () => {
    const w = Stores.windowStoreBuilder(Stores.inMemoryWindowStore('w', 100, 10, false), S, L).build(ctx(null)) as WindowStore<string, number> & InternalStore
    w.put('k', 1, 0)
    w.put('k', 2, 10)
    w.put('kk', 5, 10)
    w.put('k', 3, 200)
    w.put('k', 4, 50)
    expect(w.fetchRange('k', 0, 300).map((kv) => [kv.key, kv.value])).toEqual([[200, 3]])
    expect(w.fetch('kk', 10)).toBe(null)
    expect(w.fetchAll(0, 1000).map((kv) => `${kv.key.key}@${kv.key.window.start}`)).toEqual(['k@200'])
  })

  it('a session store finds sessions by end and start', () => {
    const s = Stores.sessionStoreBuilder(Stores.persistentSessionStore('sess', 1000), S, L).build(ctx(tmp())) as SessionStore<string, number> & InternalStore
    s.put(new Windowed('u', new Window(0, 5)), 2)
    s.put(new Windowed('u', new Window(20, 30)), 3)
    s.put(new Windowed('v', new Window(1, 2)), 1)
    expect(s.findSessions('u', 4, 25).map((kv) => kv.value)).toEqual([2, 3])
    expect(s.findSessions('u', 6, 25).map((kv) => kv.value)).toEqual([3])
    expect(s.fetchSession('u', 20, 30)).toBe(3)
    s.remove(new Windowed('u', new Window(0, 5)))
    expect(s.fetch('u').map((kv) => kv.value)).toEqual([3])
    s.close()
  })
})

describe('.checkpoint files', () => {
  it('are written in Kafka\'s OffsetCheckpoint format and a torn or foreign file reads as none', () => {
    const d = tmp()
    const cp = new OffsetCheckpoint(d)
    cp.write(new Map([['app-a-changelog\u00000', 42], ['app-b-changelog\u00000', 7]]))
    expect(readFileSync(join(d, '.checkpoint'), 'utf8')).toBe('0\n2\napp-a-changelog 0 42\napp-b-changelog 0 7\n')
    expect(cp.read().get('app-a-changelog\u00000')).toBe(42)
    writeFileSync(join(d, '.checkpoint'), '0\n3\napp-a-changelog 0 42\n')
    expect(cp.read().size).toBe(0)
    cp.delete()
    expect(cp.read().size).toBe(0)
  })
})

describe('the assignor', () => {
  const member = (id: string, processId: string, sums: Record<string, number>, prevActive: string[] = [], endpoint = ''): { memberId: string; groupInstanceId: null; topics: string[]; userData: Buffer } => {
    const info: SubscriptionInfo = { version: 1, processId, endpoint, taskOffsetSums: sums, prevActive, prevStandby: [] }
    return { memberId: id, groupInstanceId: null, topics: ['in'], userData: encodeInfo(info) }
  }
  const tasks = (n: number, stateful: boolean, end = 1000): TaskSpec[] => Array.from({ length: n }, (_, p) => ({ id: `0_${p}`, partitions: [{ topic: 'in', partition: p }], stateful, endOffsetSum: end }))
  const settings = { numStandbyReplicas: 1, acceptableRecoveryLag: 100, maxWarmupReplicas: 2, probingRebalanceIntervalMs: 5000, now: 1000 }
  const decode = (m: Map<string, { userData?: Buffer | null }>, id: string) => decodeAssignmentInfo(m.get(id)!.userData ?? null)!

  it('keeps stateful tasks on caught-up clients and sends warm-ups (plus a probing rebalance) to a new one', () => {
    const running = { '0_0': RUNNING_OFFSET_SUM, '0_1': RUNNING_OFFSET_SUM, '0_2': RUNNING_OFFSET_SUM, '0_3': RUNNING_OFFSET_SUM }
    const out = assignTasks([member('a-1', 'A', running, ['0_0', '0_1', '0_2', '0_3']), member('b-1', 'B', {})], tasks(4, true), settings)
    const a = decode(out, 'a-1')
    const b = decode(out, 'b-1')
    expect(a.activeTasks).toEqual(['0_0', '0_1', '0_2', '0_3'])
    expect(b.activeTasks).toEqual([])
    expect(b.standbyTasks.length).toBeGreaterThanOrEqual(2)
    expect(a.probingRebalanceAt).toBe(6000)
    // Once B has caught up on two tasks, they move.
    const later = assignTasks([member('a-1', 'A', running, ['0_0', '0_1', '0_2', '0_3']), member('b-1', 'B', { '0_0': 990, '0_1': 995, '0_2': 400, '0_3': 10 })], tasks(4, true), settings)
    expect(decode(later, 'b-1').activeTasks).toEqual(['0_0', '0_1'])
    expect(decode(later, 'a-1').activeTasks).toEqual(['0_2', '0_3'])
    expect(decode(later, 'a-1').standbyTasks).toEqual(['0_0', '0_1'])
  })

  it('spreads stateless tasks and each client\'s tasks over its threads, with host info', () => {
    const out = assignTasks([member('a-1', 'A', {}, [], 'ha:1'), member('a-2', 'A', {}, [], 'ha:1'), member('b-1', 'B', {}, [], 'hb:2')], tasks(6, false), { ...settings, numStandbyReplicas: 0 })
    const counts = ['a-1', 'a-2', 'b-1'].map((m) => decode(out, m).activeTasks.length)
    expect(counts).toEqual([2, 2, 2])
    expect(decode(out, 'a-1').partitionsByHost['ha:1']!.length).toBe(4)
    expect(out.get('b-1')!.partitions.get('in')!.length).toBe(2)
  })
})

void KeyValue
