// Replication metrics and the replication throttle in a real cluster (a ZooKeeper and two Skein broker
// processes, each serving GET /metrics on its embedded REST listener): a partition with ~1.2 MB on broker 1
// gets a replica on broker 2 through `skein reassign-partitions --execute --throttle`, and while the new
// replica catches up under the throttle the metrics a user scrapes move:
// - broker 2's ReplicationBytesInPerSec and FollowerReplication byte-rate, broker 1's
//   ReplicationBytesOutPerSec and LeaderReplication byte-rate; the byte-rates stay near the throttle;
// - BytesInPerSec and BytesOutPerSec count clients' traffic only, as in Kafka: broker 1's BytesIn is
//   exactly what was produced, broker 2's stays 0, and neither counts the bytes replicated as BytesOut.
// Once the replica is in the ISR its log is the leader's, and `--verify` clears the throttle.
// Then the follower's fetch session (KIP-227), as the leader's FetchSessionCache metrics show it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { batchOf, freeLoopbackPort, startCluster, zookeeperMissing, prometheusSamples, type TestCluster } from '../harness/index.js'
import { skein } from '../cli/helpers.js'
import { agreed, expectIdenticalLogs, logBytes } from './ops-helpers.js'

const MISSING = zookeeperMissing()
/** The throttle, bytes/s: ~1.2 MB take about four seconds at it, a few tens of milliseconds without. */
const THROTTLE = 300_000
/** replica.fetch.max.bytes: small enough that the throttle is met fetch by fetch. */
const FETCH_MAX = 65_536

describe.skipIf(MISSING !== undefined)('replication metrics and the replication throttle in a cluster', () => {
  let cluster: TestCluster
  const restPorts = new Map<number, number>()
  const dir = mkdtempSync(join(tmpdir(), 'skein-replmetrics-'))

  const scrape = async (id: number): Promise<Map<string, number>> => {
    const res = await fetch(`http://127.0.0.1:${restPorts.get(id)}/metrics`)
    expect(res.status).toBe(200)
    return prometheusSamples(await res.text())
  }

  beforeAll(async () => {
    for (const id of [1, 2]) restPorts.set(id, await freeLoopbackPort())
    cluster = await startCluster({
      brokerIds: [1, 2],
      overrides: ['offsets.topic.replication.factor=1', `replica.fetch.max.bytes=${FETCH_MAX}`, 'replica.fetch.backoff.ms=200'],
      brokerOverrides: (id) => [`rest.listeners=http://127.0.0.1:${restPorts.get(id)}`],
    })
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('moves ReplicationBytesIn/Out and the throttle byte-rates while a throttled replica catches up, and keeps them out of BytesIn/Out', async () => {
    const kafka = new Kafka({ clientId: 'replmetrics-test', brokers: cluster.brokers.map((b) => b.bootstrap), logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    await admin.connect()
    try {
      await admin.createTopics({ topics: [{ topic: 'moved', replicaAssignment: [{ partition: 0, replicas: [1] }] }] })
      await agreed(cluster, 'moved', (ps) => ps[0]?.leader === 1, 'moved led by broker 1')
      const before1 = await scrape(1)
      let produced = 0
      const c = await cluster.broker(1).client()
      try {
        for (let b = 0; b < 24; b++) {
          const batch = batchOf(Array.from({ length: 50 }, (_, i) => ({ key: null, value: Buffer.alloc(1000, `${b}-${i}`) })))
          expect((await c.produce('moved', 0, batch, -1)).errorCode).toBe(ErrorCode.NONE)
          produced += batch.length
        }
      } finally {
        c.close()
      }
      const size = logBytes(cluster.broker(1), 'moved', 0).length
      expect(size).toBe(produced)
      const [start1, start2] = await Promise.all([scrape(1), scrape(2)])
      expect(start1.get('kafka_server_brokertopicmetrics_bytesin_total')! - before1.get('kafka_server_brokertopicmetrics_bytesin_total')!).toBe(produced)
      expect(start2.get('kafka_server_brokertopicmetrics_replicationbytesin_total')).toBe(0)

      const plan = join(dir, 'plan.json')
      writeFileSync(plan, JSON.stringify({ version: 1, partitions: [{ topic: 'moved', partition: 0, replicas: [1, 2] }] }))
      const started = Date.now()
      const execute = await skein(['reassign-partitions', '--bootstrap-server', cluster.bootstrap(), '--execute', '--reassignment-json-file', plan, '--throttle', String(THROTTLE)])
      expect(execute.code, execute.stderr.toString()).toBe(0)

      // Scrape both brokers until broker 2 is in the ISR, keeping what was seen on the way.
      const seen = { leaderRate: 0, followerRate: 0, maxRate: 0, midwayIn: 0 }
      let caughtUpAt = 0
      while (Date.now() - started < 30_000) {
        const [m1, m2] = await Promise.all([scrape(1), scrape(2)])
        const leaderRate = m1.get('kafka_server_leaderreplication_byte_rate')!
        const followerRate = m2.get('kafka_server_followerreplication_byte_rate')!
        seen.maxRate = Math.max(seen.maxRate, leaderRate, followerRate)
        const copied = logBytes(cluster.broker(2), 'moved', 0).length
        if (copied > 0 && copied < size) {
          seen.leaderRate = Math.max(seen.leaderRate, leaderRate)
          seen.followerRate = Math.max(seen.followerRate, followerRate)
          seen.midwayIn = Math.max(seen.midwayIn, m2.get('kafka_server_brokertopicmetrics_replicationbytesin_total')!)
        }
        const [p] = await agreed(cluster, 'moved', () => true, 'a view of moved', 5000)
        if (p!.isr.includes(2)) {
          caughtUpAt = Date.now()
          break
        }
        await new Promise((r) => setTimeout(r, 250))
      }
      expect(caughtUpAt, 'broker 2 joined the ISR').toBeGreaterThan(0)
      const tookMs = caughtUpAt - started
      console.log(`replication metrics: ${size} bytes caught up in ${tookMs} ms under a ${THROTTLE} B/s throttle; byte-rates seen midway: leader ${Math.round(seen.leaderRate)}, follower ${Math.round(seen.followerRate)} B/s, at most ${Math.round(seen.maxRate)} B/s`)
      // Held to the throttle: unthrottled this takes well under a second; the first second's allowance
      // (a SimpleRate measures over at least one window) and one fetch pass unheld.
      expect(tookMs).toBeGreaterThan(((size - THROTTLE - FETCH_MAX) / THROTTLE) * 1000 * 0.8)
      expect(seen.leaderRate).toBeGreaterThan(0)
      expect(seen.followerRate).toBeGreaterThan(0)
      expect(seen.midwayIn).toBeGreaterThan(0)
      expect(seen.midwayIn).toBeLessThan(size)
      expect(seen.maxRate).toBeLessThan(2 * THROTTLE + FETCH_MAX)

      await expectIdenticalLogs(cluster, 'moved', 0, [1, 2])
      const [end1, end2] = await Promise.all([scrape(1), scrape(2)])
      // Every byte of the log went from 1 to 2 (a batch cut at the end of an answer goes twice).
      const replicatedIn = end2.get('kafka_server_brokertopicmetrics_replicationbytesin_total')!
      const replicatedOut = end1.get('kafka_server_brokertopicmetrics_replicationbytesout_total')!
      expect(replicatedIn).toBeGreaterThanOrEqual(size)
      expect(replicatedIn).toBeLessThan(size + 2 * FETCH_MAX)
      expect(replicatedOut).toBeGreaterThanOrEqual(replicatedIn)
      expect(replicatedOut).toBeLessThan(size + 2 * FETCH_MAX)
      // Replication is neither BytesIn (broker 2 appended all of it, as follower) nor BytesOut.
      expect(end1.get('kafka_server_brokertopicmetrics_bytesin_total')).toBe(start1.get('kafka_server_brokertopicmetrics_bytesin_total'))
      expect(end2.get('kafka_server_brokertopicmetrics_bytesin_total')).toBe(start2.get('kafka_server_brokertopicmetrics_bytesin_total'))
      expect(end1.get('kafka_server_brokertopicmetrics_bytesout_total')).toBe(start1.get('kafka_server_brokertopicmetrics_bytesout_total'))
      expect(end2.get('kafka_server_brokertopicmetrics_bytesout_total')).toBe(start2.get('kafka_server_brokertopicmetrics_bytesout_total'))

      const verify = await skein(['reassign-partitions', '--bootstrap-server', cluster.bootstrap(), '--verify', '--reassignment-json-file', plan])
      expect(verify.code, verify.stderr.toString()).toBe(0)
      expect(verify.out).toContain('Clearing broker-level throttles on brokers 1,2')
    } finally {
      await admin.disconnect()
    }
  }, 90_000)

  it("replicates in a fetch session (KIP-227): broker 1's FetchSessionCache holds broker 2's session with every partition it follows, and records still arrive byte for byte", async () => {
    const kafka = new Kafka({ clientId: 'replmetrics-sessions', brokers: cluster.brokers.map((b) => b.bootstrap), logLevel: logLevel.NOTHING })
    const admin = kafka.admin()
    await admin.connect()
    try {
      const partitions = 20
      await admin.createTopics({ topics: [{ topic: 'sessioned', replicaAssignment: Array.from({ length: partitions }, (_, partition) => ({ partition, replicas: [1, 2] })) }] })
      await agreed(cluster, 'sessioned', (ps) => ps.length === partitions && ps.every((p) => p.leader === 1 && p.isr.length === 2), 'sessioned in sync on both brokers')
      // Broker 2 follows these 20 and `moved` (the first case's), all led by broker 1: one fetcher, one session.
      let cached = 0
      let sessions = 0
      const deadline = Date.now() + 15_000
      while (Date.now() < deadline) {
        const m = await scrape(1)
        sessions = m.get('kafka_server_fetchsessioncache_numincrementalfetchsessions')!
        cached = m.get('kafka_server_fetchsessioncache_numincrementalfetchpartitionscached')!
        if (cached >= partitions + 1) break
        await new Promise((r) => setTimeout(r, 200))
      }
      expect([sessions, cached]).toEqual([1, partitions + 1])
      // Records appended to a few partitions after the session formed reach the follower in it.
      const c = await cluster.broker(1).client()
      try {
        for (const partition of [3, 11, 19]) {
          expect((await c.produce('sessioned', partition, batchOf([{ key: null, value: Buffer.from(`after the session ${partition}`) }]), -1)).errorCode).toBe(ErrorCode.NONE)
        }
      } finally {
        c.close()
      }
      for (const partition of [3, 11, 19]) await expectIdenticalLogs(cluster, 'sessioned', partition, [1, 2])
      expect((await scrape(1)).get('kafka_server_fetchsessioncache_numincrementalfetchsessions')).toBe(1)
    } finally {
      await admin.disconnect()
    }
  }, 60_000)
})
