// MirrorMaker 2 between two single Skein brokers (real processes, each with its own data directory on a
// free port), run as `skein mirror-maker` in dedicated mode with A<->B both enabled: topics mirrored with
// their partition counts and configs (and later changes of both), records identical per partition (key,
// value, headers, timestamp, order), a consumer group's committed offsets checkpointed and synced to
// the target so that a consumer moving there continues without missing records and re-reads at most
// offset.lag.max + 1 of them, heartbeats with Kafka's format, and no loop (nothing mirrored back).
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, onTestFailed, test } from 'vitest'
import { Admin, Consumer, type ConsumedRecord, Producer, tpKey } from '../../src/client/index.js'
import { decodeCheckpoint, decodeHeartbeat, translateOffsets } from '../../src/connect/mirror/index.js'
import { REPO_ROOT, startBrokerProcess, type BrokerProcess } from '../harness/broker.js'
import { SKEIN_JS, waitFor } from './helpers.js'

const LAG_MAX = 10
/** What the mirror-maker process printed (its log at info), for failure messages. */
let mirrorMakerOutput = ''

async function readTopic(bootstrap: string, topic: string, partition: number, count: number, from = 0): Promise<ConsumedRecord[]> {
  const c = new Consumer({ bootstrapServers: bootstrap, autoOffsetReset: 'earliest' })
  c.assign([{ topic, partition }])
  c.seek(topic, partition, from)
  const out: ConsumedRecord[] = []
  const deadline = Date.now() + 20000
  try {
    while (out.length < count && Date.now() < deadline) out.push(...(await c.poll(300)))
  } finally {
    await c.close()
  }
  if (out.length < count) throw new Error(`read ${out.length} of ${count} records of ${topic}-${partition} from ${bootstrap} in 20 s; mirror-maker's last output:\n${mirrorMakerOutput.slice(-3000)}`)
  return out
}

const view = (r: ConsumedRecord): unknown => ({ key: r.key?.toString(), value: r.value?.toString(), timestamp: r.timestamp, headers: r.headers.map((h) => [h.key, h.value?.toString() ?? null]) })

describe('MirrorMaker 2 between two brokers (skein mirror-maker, A<->B)', () => {
  let a: BrokerProcess
  let b: BrokerProcess
  let mm: ChildProcess
  let mmOut = ''
  let adminA: Admin
  let adminB: Admin
  const sent = new Map<number, { key: string; value: string; headers: Record<string, string>; timestamp: number }[]>()

  beforeAll(async () => {
    ;[a, b] = await Promise.all([startBrokerProcess({ overrides: ['auto.create.topics.enable=false'] }), startBrokerProcess({ overrides: ['auto.create.topics.enable=false'] })])
    adminA = new Admin({ bootstrapServers: a.bootstrap })
    adminB = new Admin({ bootstrapServers: b.bootstrap })
    await adminA.createTopics([{ name: 'orders', numPartitions: 3, replicationFactor: 1, configs: { 'retention.ms': '86400000', 'max.message.bytes': '200000' } }])
    await adminB.createTopics([{ name: 'payments', numPartitions: 1, replicationFactor: 1 }])
    const pa = new Producer({ bootstrapServers: a.bootstrap, lingerMs: 2 })
    const base = Date.now() - 60000
    for (let p = 0; p < 3; p++) {
      const list = []
      for (let i = 0; i < 100; i++) list.push({ key: `k${p}-${i}`, value: `order ${p}/${i}`, headers: { trace: `t${i}`, part: String(p) }, timestamp: base + i })
      sent.set(p, list)
      await pa.sendBatch(list.map((r) => ({ topic: 'orders', partition: p, ...r })))
    }
    await pa.close()
    const pb = new Producer({ bootstrapServers: b.bootstrap })
    await pb.sendBatch(Array.from({ length: 20 }, (_v, i) => ({ topic: 'payments', partition: 0, key: `p${i}`, value: `payment ${i}` })))
    await pb.close()
    // The group's position on A: partway through each partition (no member active: an admin commit).
    await adminA.commitOffsets('billing', [{ topic: 'orders', partition: 0, offset: 37 }, { topic: 'orders', partition: 1, offset: 64 }, { topic: 'orders', partition: 2, offset: 100 }])

    const dir = mkdtempSync(join(tmpdir(), 'skein-mm2-'))
    const file = join(dir, 'mm2.properties')
    writeFileSync(file, [
      'clusters = A, B',
      `A.bootstrap.servers = ${a.bootstrap}`,
      `B.bootstrap.servers = ${b.bootstrap}`,
      'A->B.enabled = true',
      'B->A.enabled = true',
      'groups = billing',
      'replication.factor = 1',
      'checkpoints.topic.replication.factor = 1',
      'heartbeats.topic.replication.factor = 1',
      'offset-syncs.topic.replication.factor = 1',
      'config.storage.replication.factor = 1',
      'offset.storage.replication.factor = 1',
      'status.storage.replication.factor = 1',
      'offset.storage.partitions = 2',
      'status.storage.partitions = 1',
      'offset.flush.interval.ms = 500',
      `offset.lag.max = ${LAG_MAX}`,
      'emit.checkpoints.interval.seconds = 1',
      'sync.group.offsets.enabled = true',
      'sync.group.offsets.interval.seconds = 1',
      'refresh.topics.interval.seconds = 1',
      'refresh.groups.interval.seconds = 1',
      'sync.topic.configs.interval.seconds = 1',
      'tasks.max = 2',
      '',
    ].join('\n'))
    mm = spawn(process.execPath, [SKEIN_JS, 'mirror-maker', file], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKEIN_LOG_LEVEL: 'info' } })
    mm.stdout!.on('data', (d: Buffer) => (mirrorMakerOutput = mmOut += d.toString()))
    mm.stderr!.on('data', (d: Buffer) => (mirrorMakerOutput = mmOut += d.toString()))
    await waitFor('mirror-maker started', async () => /MirrorMaker started: A->B, B->A/.test(mmOut) || (mm.exitCode !== null ? Promise.reject(new Error(mmOut)) : false), 30000)
  }, 60000)

  // A failure shows what MirrorMaker said (its log at info, kept in memory) and how far each read got.
  const showLogOnFailure = (): void => onTestFailed(() => console.error(`mirror-maker's last output:\n${mmOut.slice(-20000)}`))

  afterAll(async () => {
    if (mm !== undefined && mm.exitCode === null) {
      const exited = new Promise((r) => mm.once('exit', r))
      mm.kill('SIGTERM')
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10000))])
      if (mm.exitCode === null) mm.kill('SIGKILL')
    }
    await adminA?.close()
    await adminB?.close()
    await Promise.all([a?.kill('SIGTERM'), b?.kill('SIGTERM')])
  })

  test('remote topics get the partition count and configs; records are identical per partition', async () => {
    showLogOnFailure()
    const d = await waitFor('A.orders on B', async () => (await adminB.describeTopics(['A.orders']).catch(() => []))[0], 20000)
    expect(d.partitions.length).toBe(3)
    const [cfg] = await adminB.describeConfigs([{ type: 'topic', name: 'A.orders' }])
    const get = (n: string): string | null | undefined => cfg!.configs.find((e) => e.name === n)?.value
    expect(get('retention.ms')).toBe('86400000')
    expect(get('max.message.bytes')).toBe('200000')
    for (let p = 0; p < 3; p++) {
      const got = await readTopic(b.bootstrap, 'A.orders', p, 100)
      expect(got.map((r) => r.offset)).toEqual(Array.from({ length: 100 }, (_v, i) => i))
      expect(got.map(view)).toEqual(sent.get(p)!.map((r) => ({ key: r.key, value: r.value, timestamp: r.timestamp, headers: Object.entries(r.headers) })))
    }
    const back = await readTopic(a.bootstrap, 'B.payments', 0, 20)
    expect(back.map((r) => r.value?.toString())).toEqual(Array.from({ length: 20 }, (_v, i) => `payment ${i}`))
  }, 120000) // longer than its waits together, so that a slow one says which it was

  test('partition count and config changes on the source reach the remote topic', async () => {
    showLogOnFailure()
    await adminA.createPartitions('orders', 4)
    await adminA.alterConfigs({ type: 'topic', name: 'orders' }, [{ op: 'set', name: 'retention.ms', value: '7200000' }])
    await waitFor('A.orders with 4 partitions', async () => (await adminB.describeTopics(['A.orders']))[0]!.partitions.length === 4, 15000)
    await waitFor('retention.ms synced', async () => (await adminB.describeConfigs([{ type: 'topic', name: 'A.orders' }]))[0]!.configs.find((e) => e.name === 'retention.ms')?.value === '7200000', 15000)
    const pa = new Producer({ bootstrapServers: a.bootstrap })
    await pa.send({ topic: 'orders', partition: 3, key: 'new', value: 'in the new partition' })
    await pa.close()
    const got = await readTopic(b.bootstrap, 'A.orders', 3, 1)
    expect(got.map((r) => r.value?.toString())).toEqual(['in the new partition'])
  }, 40000)

  test('checkpoints translate the group\'s offsets; a consumer moved to B misses no record and re-reads about offset.lag.max at the end, less than its lag behind it', async () => {
    showLogOnFailure()
    const committed = new Map([[0, 37], [1, 64], [2, 100]])
    const translated = await waitFor('checkpoints for billing', async () => {
      const t = await translateOffsets({ bootstrapServers: b.bootstrap }, 'A', 'billing', { timeoutMs: 10000 })
      return t.size === 3 ? t : null
    }, 20000)
    for (const [p, upstream] of committed) {
      const down = translated.get(tpKey('A.orders', p))!.offset
      // Offsets match on both sides here, so "no record missed" is down <= upstream. Each partition holds
      // 100 records: a group at the end re-reads at most about offset.lag.max, one further behind less
      // than its lag (the offset-sync store keeps syncs ever sparser with age, as Kafka 3.5+).
      expect(down).toBeLessThanOrEqual(upstream)
      expect(upstream - down).toBeLessThanOrEqual(Math.max(LAG_MAX + 1, 100 - upstream))
    }
    // The raw checkpoint records have Kafka's format.
    const raw = await readTopic(b.bootstrap, 'A.checkpoints.internal', 0, 3)
    const cp = decodeCheckpoint(raw[0]!.key, raw[0]!.value)
    expect(cp.group).toBe('billing')
    expect(cp.topic).toBe('A.orders')
    // sync.group.offsets.enabled: the same offsets are the group's on B, where it has no member.
    const onB = await waitFor('billing offsets synced to B', async () => {
      const o = await adminB.fetchOffsets('billing')
      return o.size >= 3 ? o : null
    }, 20000)
    const consumer = new Consumer({ bootstrapServers: b.bootstrap, groupId: 'billing', autoOffsetReset: 'earliest' })
    consumer.subscribe(['A.orders'])
    const firsts = new Map<number, ConsumedRecord>()
    const deadline = Date.now() + 15000
    try {
      while (firsts.size < 2 && Date.now() < deadline) for (const r of await consumer.poll(300)) if (!firsts.has(r.partition)) firsts.set(r.partition, r)
    } finally {
      await consumer.close({ commit: false })
    }
    for (const p of [0, 1]) {
      const first = firsts.get(p)!
      expect(first.offset).toBe(onB.get(tpKey('A.orders', p)))
      expect(first.offset).toBeLessThanOrEqual(committed.get(p)!)
      expect(first.value?.toString()).toBe(`order ${p}/${first.offset}`)
    }
  }, 50000)

  test('heartbeats in Kafka\'s format; A<->B does not loop', async () => {
    showLogOnFailure()
    const hb = await readTopic(b.bootstrap, 'heartbeats', 0, 1)
    const h = decodeHeartbeat(hb[0]!.key, hb[0]!.value)
    expect([h.sourceClusterAlias, h.targetClusterAlias]).toEqual(['A', 'B'])
    // B->A's heartbeats (in A's heartbeats topic) come to B as A.heartbeats: the round trip works.
    await waitFor('A.heartbeats on B', async () => (await adminB.listTopics()).includes('A.heartbeats'), 15000)
    await new Promise((r) => setTimeout(r, 2500))
    const topicsA = await adminA.listTopics()
    const topicsB = await adminB.listTopics()
    expect(topicsA).toContain('B.payments')
    expect(topicsA.filter((t) => t.startsWith('B.A.') || t.startsWith('A.'))).toEqual([])
    expect(topicsB.filter((t) => t.startsWith('A.B.') || t.startsWith('B.'))).toEqual([])
  }, 30000)
})
