// The longer cluster-operations tests (`npm run test:cluster-ops`, not in npm test): a ZooKeeper and three
// Skein brokers without the auto rebalance (elections happen when asked), min.insync.replicas=2.
// - A throttled reassignment (`skein reassign-partitions --throttle`) of a partition holding ~3 MB moves at
//   roughly the rate (the time and the rate are printed), and --verify removes the throttles.
// - The leader side alone (leader.replication.throttled.rate on the leader, no follower rate): the new
//   replica's catch-up takes at least bytes / rate (less the first window's allowance), while the in-sync
//   follower is not held back (an acks=all write during the catch-up is answered at once).
// - A reassignment waiting on a broker that is down is listed (ListPartitionReassignments) and cancelled
//   (`--cancel`): the partition is back on its replicas and the added one is gone from the znode.
// - PREFERRED: after a broker returns, `skein leader-election --all-topic-partitions` gives it its
//   preferred leaderships back. UNCLEAN: a partition whose only in-sync replica is dead elects the live
//   out-of-sync one when asked (and not before: unclean.leader.election.enable is false).
// - A rolling restart (SIGTERM, start, full ISRs, next) under a librdkafka acks=all load loses nothing; the
//   longest gap per broker is printed and under 1 s.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZooKeeperClient } from '../../src/cluster/zookeeper/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import { batchOf, hasPythonModule, startCluster, zookeeperMissing, type RawClient, type TestCluster } from '../harness/index.js'
import { skein } from '../cli/helpers.js'
import { agreed, expectIdenticalLogs, LibrdkafkaLoad, readAll, until } from './ops-helpers.js'

const MISSING = zookeeperMissing() ?? (hasPythonModule('confluent_kafka') ? undefined : 'python3-confluent-kafka is not installed')
const SESSION_TIMEOUT_MS = 4000
const MAX_GAP_MS = Number(process.env.SKEIN_OPS_MAX_GAP_MS ?? 1000)

async function createTopic(c: RawClient, name: string, opts: { partitions?: number; rf?: number; assignments?: number[][]; configs?: Record<string, string> }): Promise<number> {
  const topic = CreateTopics.createCreatableTopic({ name, numPartitions: opts.partitions ?? -1, replicationFactor: opts.rf ?? -1 })
  if (opts.assignments !== undefined) topic.assignments = opts.assignments.map((brokerIds, partitionIndex) => CreateTopics.createCreatableReplicaAssignment({ partitionIndex, brokerIds }))
  topic.configs = Object.entries(opts.configs ?? {}).map(([name, value]) => CreateTopics.createCreatableTopicConfig({ name, value }))
  const req = CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [topic] })
  const res = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
  return res.topics[0]!.errorCode
}

describe.skipIf(MISSING !== undefined)('cluster operations, the long variants', () => {
  let cluster: TestCluster
  let zk: ZooKeeperClient
  const dir = mkdtempSync(join(tmpdir(), 'skein-ops-long-'))
  const withClient = async <T>(id: number, fn: (c: RawClient) => Promise<T>): Promise<T> => {
    const c = await cluster.broker(id).client()
    try {
      return await fn(c)
    } finally {
      c.close()
    }
  }
  const tool = (args: string[], bootstrap = cluster.bootstrap()) => skein([args[0]!, '--bootstrap-server', bootstrap, ...args.slice(1)], { timeoutMs: 60_000 })

  beforeAll(async () => {
    cluster = await startCluster({
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      overrides: [
        'min.insync.replicas=2', 'default.replication.factor=3', 'replica.fetch.backoff.ms=200', 'auto.leader.rebalance.enable=false',
        'offsets.topic.replication.factor=3', 'offsets.topic.num.partitions=3',
        // A short throttle window, so that a few MB show the rate (Kafka's 11 x 1 s lets 10 s of it through at once).
        'replication.quota.window.num=2', 'replication.quota.window.size.seconds=1', 'replica.fetch.max.bytes=65536',
      ],
    })
    zk = await ZooKeeperClient.connect(cluster.connect)
  }, 120_000)

  afterAll(async () => {
    await zk?.close()
    await cluster?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('holds a throttled reassignment to roughly its rate, and --verify removes the throttles', async () => {
    expect(await withClient(1, (c) => createTopic(c, 'heavy', { assignments: [[1, 2]] }))).toBe(ErrorCode.NONE)
    await agreed(cluster, 'heavy', (ps) => ps[0]?.isr.length === 2, 'heavy with a full ISR')
    const value = Buffer.alloc(1000)
    let bytes = 0
    await withClient(1, async (c) => {
      for (let b = 0; b < 30; b++) {
        const batch = batchOf(Array.from({ length: 100 }, (_, i) => ({ key: null, value: Buffer.concat([Buffer.from(`${b}-${i}-`), value]) })))
        expect((await c.produce('heavy', 0, batch, -1)).errorCode).toBe(ErrorCode.NONE)
        bytes += batch.length
      }
    })
    const rate = 500_000
    const plan = join(dir, 'heavy.json')
    writeFileSync(plan, JSON.stringify({ version: 1, partitions: [{ topic: 'heavy', partition: 0, replicas: [2, 3] }] }))
    const started = Date.now()
    const exec = await tool(['reassign-partitions', '--execute', '--reassignment-json-file', plan, '--throttle', String(rate)])
    expect(exec.code, exec.stderr.toString()).toBe(0)
    expect(exec.out).toContain(`The inter-broker throttle limit was set to ${rate} B/s`)
    const topicConfig = JSON.parse((await zk.getData('/config/topics/heavy')).data.toString()).config
    expect(topicConfig).toEqual({ 'leader.replication.throttled.replicas': '0:1,0:2', 'follower.replication.throttled.replicas': '0:3' })
    const verified = await until('the throttled reassignment to complete', async () => {
      const v = await tool(['reassign-partitions', '--verify', '--reassignment-json-file', plan])
      return v.out.includes('Reassignment of partition heavy-0 is completed.') ? v.out : undefined
    }, 120_000)
    const tookMs = Date.now() - started
    const measured = (bytes * 1000) / tookMs
    console.log(`[ops] throttled reassignment of ${bytes} bytes at ${rate} B/s: ${tookMs} ms, ${Math.round(measured)} B/s (${((measured / rate) * 100).toFixed(0)}% of the throttle)`)
    // Roughly the rate: not much faster (the first window's worth passes at once), and not stuck.
    expect(measured).toBeLessThan(rate * 1.6)
    expect(verified).toContain('Clearing broker-level throttles on brokers 1,2,3')
    expect(verified).toContain('Clearing topic-level throttles on topic heavy')
    expect(JSON.parse((await zk.getData('/config/topics/heavy')).data.toString()).config).toEqual({})
    await expectIdenticalLogs(cluster, 'heavy', 0, [2, 3])
  }, 180_000)

  it('holds a reassignment to the leader\'s throttle alone, without holding back the in-sync follower', async () => {
    expect(await withClient(1, (c) => createTopic(c, 'leader-held', { assignments: [[1, 2]] }))).toBe(ErrorCode.NONE)
    await agreed(cluster, 'leader-held', (ps) => ps[0]?.isr.length === 2 && ps[0]!.leader === 1, 'leader-held led by 1 with a full ISR')
    const value = Buffer.alloc(1000)
    let bytes = 0
    await withClient(1, async (c) => {
      for (let b = 0; b < 30; b++) {
        const batch = batchOf(Array.from({ length: 100 }, (_, i) => ({ key: null, value: Buffer.concat([Buffer.from(`${b}-${i}-`), value]) })))
        expect((await c.produce('leader-held', 0, batch, -1)).errorCode).toBe(ErrorCode.NONE)
        bytes += batch.length
      }
    })
    const rate = 500_000
    // As Kafka's tool would set the leader's half: the rate on the leader, its replicas listed on the topic.
    const setRate = await tool(['configs', '--broker', '1', '--alter', '--add-config', `leader.replication.throttled.rate=${rate}`])
    expect(setRate.code, setRate.stderr.toString()).toBe(0)
    const setList = await tool(['configs', '--topic', 'leader-held', '--alter', '--add-config', 'leader.replication.throttled.replicas=[0:1,0:2]'])
    expect(setList.code, setList.stderr.toString()).toBe(0)
    const plan = join(dir, 'leader-held.json')
    writeFileSync(plan, JSON.stringify({ version: 1, partitions: [{ topic: 'leader-held', partition: 0, replicas: [2, 3] }] }))
    const started = Date.now()
    const exec = await tool(['reassign-partitions', '--execute', '--reassignment-json-file', plan])
    expect(exec.code, exec.stderr.toString()).toBe(0)
    // Over the rate by now (the first window's allowance went at once): broker 2, in the ISR, still
    // copies a new acks=all write (min.insync.replicas=2) without waiting for the throttle.
    await new Promise((r) => setTimeout(r, 1500))
    const midway = await tool(['reassign-partitions', '--verify', '--reassignment-json-file', plan])
    expect(midway.out).toContain('Reassignment of partition leader-held-0 is still in progress.')
    const ackedInMs = await withClient(1, async (c) => {
      const t0 = Date.now()
      expect((await c.produce('leader-held', 0, batchOf([{ value: Buffer.from('in-sync is not throttled') }]), -1)).errorCode).toBe(ErrorCode.NONE)
      return Date.now() - t0
    })
    await until('the leader-throttled reassignment to complete', async () => {
      const v = await tool(['reassign-partitions', '--verify', '--reassignment-json-file', plan])
      return v.out.includes('Reassignment of partition leader-held-0 is completed.') ? true : undefined
    }, 120_000)
    const tookMs = Date.now() - started
    const measured = (bytes * 1000) / tookMs
    // replication.quota.window.num=2 x 1 s: the first second's worth passes before the rate is exceeded.
    const floorMs = ((bytes - rate) / rate) * 1000
    console.log(`[ops] leader-throttled reassignment of ${bytes} bytes at ${rate} B/s: ${tookMs} ms (floor ${Math.round(floorMs)} ms), ${Math.round(measured)} B/s (${((measured / rate) * 100).toFixed(0)}% of the throttle); an acks=all write meanwhile: ${ackedInMs} ms`)
    expect(tookMs).toBeGreaterThanOrEqual(floorMs * 0.8)
    expect(ackedInMs).toBeLessThan(3000)
    const [after] = await agreed(cluster, 'leader-held', (ps) => ps[0]!.isr.length === 2 && JSON.stringify(ps[0]!.replicas) === '[2,3]', 'leader-held on [2,3] with a full ISR')
    expect([...after!.isr].sort()).toEqual([2, 3])
    await expectIdenticalLogs(cluster, 'leader-held', 0, [2, 3])
    // --verify cleared the throttles it knows of: the broker rates and the topic's lists.
    expect(JSON.parse((await zk.getData('/config/topics/leader-held')).data.toString()).config).toEqual({})
    expect(JSON.parse((await zk.getData('/config/brokers/1')).data.toString()).config).toEqual({})
  }, 180_000)

  it('lists a reassignment waiting on a broker that is down, and cancels it', async () => {
    // The target adds a broker that is registered (a valid target) but frozen, so it cannot catch up; not
    // the controller, which the tool must reach.
    const controller = JSON.parse((await zk.getData('/controller')).data.toString()).brokerid as number
    const frozen = [3, 2, 1].find((id) => id !== controller)!
    const [a, b] = [1, 2, 3].filter((id) => id !== frozen) as [number, number]
    expect(await withClient(a, (c) => createTopic(c, 'stuck', { assignments: [[a, b]] }))).toBe(ErrorCode.NONE)
    await agreed(cluster, 'stuck', (ps) => ps[0]?.isr.length === 2, 'stuck with a full ISR')
    cluster.broker(frozen).signal('SIGSTOP')
    const running = `${cluster.broker(a).bootstrap},${cluster.broker(b).bootstrap}`
    try {
      const plan = join(dir, 'stuck.json')
      writeFileSync(plan, JSON.stringify({ version: 1, partitions: [{ topic: 'stuck', partition: 0, replicas: [a, frozen] }] }))
      const exec = await tool(['reassign-partitions', '--execute', '--reassignment-json-file', plan], running)
      expect(exec.code, exec.stderr.toString()).toBe(0)
      const verify = await tool(['reassign-partitions', '--verify', '--reassignment-json-file', plan], running)
      expect(verify.out).toContain('Reassignment of partition stuck-0 is still in progress.')
      expect(JSON.parse((await zk.getData('/brokers/topics/stuck')).data.toString())).toMatchObject({ partitions: { '0': [a, frozen, b] }, adding_replicas: { '0': [frozen] }, removing_replicas: { '0': [b] } })
      const cancel = await tool(['reassign-partitions', '--cancel', '--reassignment-json-file', plan], running)
      expect(cancel.code, cancel.stderr.toString()).toBe(0)
      expect(cancel.out).toContain('Successfully cancelled partition reassignment for: stuck-0')
      expect(JSON.parse((await zk.getData('/brokers/topics/stuck')).data.toString())).toMatchObject({ partitions: { '0': [a, b] }, adding_replicas: {}, removing_replicas: {} })
    } finally {
      cluster.broker(frozen).signal('SIGCONT')
    }
    await until(`broker ${frozen} registered again`, async () => ((await zk.getChildren('/brokers/ids')).length === 3 ? true : undefined), SESSION_TIMEOUT_MS * 5)
    await agreed(cluster, 'stuck', (ps) => JSON.stringify(ps[0]!.replicas) === JSON.stringify([a, b]) && ps[0]!.isr.length === 2, `stuck back on [${a},${b}]`)
  }, 120_000)

  it('elects preferred leaders back when asked, and an unclean leader only when asked', async () => {
    expect(await withClient(1, (c) => createTopic(c, 'pref', { partitions: 3, rf: 3 }))).toBe(ErrorCode.NONE)
    const before = await agreed(cluster, 'pref', (ps) => ps.length === 3 && ps.every((p) => p.isr.length === 3 && p.leader === p.replicas[0]), 'pref balanced')
    const victim = before[0]!.leader
    await cluster.broker(victim).stop()
    await cluster.broker(victim).start()
    await agreed(cluster, 'pref', (ps) => ps.every((p) => p.isr.length === 3) && ps.some((p) => p.leader !== p.replicas[0]), `pref with full ISRs, broker ${victim} not leading`)
    const res = await tool(['leader-election', '--election-type', 'PREFERRED', '--all-topic-partitions'])
    expect(res.code, res.stderr.toString()).toBe(0)
    expect(res.out).toMatch(/^Successfully completed leader election \(PREFERRED\) for partitions .*pref-/m)
    await agreed(cluster, 'pref', (ps) => ps.every((p) => p.leader === p.replicas[0]), 'preferred leaders back')

    // Unclean: lossy-0 on [a, b] with min.insync.replicas=1; b stops (out of the ISR), then a dies.
    expect(await withClient(1, (c) => createTopic(c, 'lossy', { assignments: [[1, 2]], configs: { 'min.insync.replicas': '1' } }))).toBe(ErrorCode.NONE)
    await agreed(cluster, 'lossy', (ps) => ps[0]?.isr.length === 2, 'lossy with a full ISR')
    await cluster.broker(2).stop()
    await agreed(cluster, 'lossy', (ps) => JSON.stringify(ps[0]!.isr) === '[1]', 'lossy with ISR [1]')
    await withClient(1, async (c) => expect((await c.produce('lossy', 0, batchOf([{ value: Buffer.from('only-on-1') }]), -1)).errorCode).toBe(ErrorCode.NONE))
    await cluster.broker(1).kill()
    // The controller must know broker 1 is gone (its registration expired), not only the metadata.
    await until('broker 1 to be unregistered', async () => ((await zk.exists('/brokers/ids/1')) === null ? true : undefined), SESSION_TIMEOUT_MS * 5)
    await cluster.broker(2).start()
    await agreed(cluster, 'lossy', (ps) => ps[0]!.leader === -1, 'lossy without a leader', SESSION_TIMEOUT_MS * 5)
    const preferred = await tool(['leader-election', '--election-type', 'PREFERRED', '--topic', 'lossy', '--partition', '0'])
    expect(preferred.code).toBe(1)
    expect(preferred.stderr.toString()).toContain('PREFERRED_LEADER_NOT_AVAILABLE')
    const unclean = await tool(['leader-election', '--election-type', 'UNCLEAN', '--topic', 'lossy', '--partition', '0'])
    expect(unclean.code, unclean.stderr.toString()).toBe(0)
    expect(unclean.out).toContain('Successfully completed leader election (UNCLEAN) for partitions lossy-0')
    const [after] = await agreed(cluster, 'lossy', (ps) => ps[0]!.leader === 2, 'lossy led by broker 2')
    expect(after!.isr).toEqual([2])
    await cluster.broker(1).start()
  }, 180_000)

  it('restarts every broker in turn under acks=all load, losing nothing', async () => {
    expect(await withClient(1, (c) => createTopic(c, 'rolling', { partitions: 3, rf: 3 }))).toBe(ErrorCode.NONE)
    await agreed(cluster, 'rolling', (ps) => ps.length === 3 && ps.every((p) => p.isr.length === 3), 'rolling with full ISRs')
    const load = new LibrdkafkaLoad(cluster.brokers.map((b) => b.bootstrap).join(','), 'rolling', [0, 1, 2], 10)
    await load.start()
    const gaps: string[] = []
    try {
      await load.progress(300)
      for (const b of cluster.brokers) {
        const t0 = Date.now()
        await b.stop()
        await b.start()
        await agreed(cluster, 'rolling', (ps) => ps.every((p) => p.isr.length === 3), `full ISRs after restarting broker ${b.id}`, 60_000)
        await load.progress(100)
        const gap = load.longestGap(t0, Date.now())
        gaps.push(`broker ${b.id}: ${gap.gapMs} ms`)
        expect(gap.gapMs, `gap while restarting broker ${b.id}`).toBeLessThan(MAX_GAP_MS)
      }
    } finally {
      console.log(`[ops] rolling restart under load, longest gap between acknowledged writes per broker: ${gaps.join(', ')}`)
      await load.stop()
    }
    expect(load.errors).toEqual([])
    const views = await agreed(cluster, 'rolling', (ps) => ps.every((p) => p.isr.length === 3), 'rolling settled')
    for (const v of views) {
      const values = (await readAll(cluster.broker(v.leader), 'rolling', v.partition)).map((r) => r.value)
      expect(values).toEqual(load.acked.get(v.partition)!.map((a) => a.value))
      await expectIdenticalLogs(cluster, 'rolling', v.partition, v.replicas)
    }
  }, 300_000)
})
