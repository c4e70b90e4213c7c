// Several log.dirs per broker in a real cluster (a ZooKeeper and three Skein broker processes, two log
// dirs each, min.insync.replicas=2): one of broker 2's directories is removed under it. Its replicas there
// go offline on that broker (the probe or their I/O notices), the broker reports it through
// /log_dir_event_notification, the controller re-sends LeaderAndIsr, takes the replicas that answer
// KAFKA_STORAGE_ERROR offline and elects other leaders from the ISR; broker 2 keeps serving the replicas
// in its healthy directory, and every record acknowledged with acks=all before and after is read back
// exactly once. DescribeLogDirs on broker 2 reports the failed directory with KAFKA_STORAGE_ERROR.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import { partitionsOf, readAll, startCluster, until, zookeeperMissing, type PartitionView, type TestCluster } from '../harness/index.js'

const MISSING = zookeeperMissing()
const PARTITIONS = 6

describe.skipIf(MISSING !== undefined)('a failed log dir in a three-broker cluster', () => {
  let cluster: TestCluster
  let root: string
  const dirsOf = (id: number): [string, string] => [join(root, `b${id}-1`), join(root, `b${id}-2`)]

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'skein-jbod-cluster-'))
    cluster = await startCluster({
      sessionTimeoutMs: 6000,
      overrides: ['min.insync.replicas=2', 'default.replication.factor=3', 'replica.lag.time.max.ms=3000', 'replica.fetch.backoff.ms=200', 'log.dir.probe.interval.ms=300'],
      brokerOverrides: (id) => [`log.dirs=${dirsOf(id).join(',')}`],
    })
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
    if (root !== undefined) rmSync(root, { recursive: true, force: true })
  })

  it('moves leadership off the failed dir, keeps serving the healthy one and loses nothing acknowledged', async () => {
    const c = await cluster.brokers[0]!.client()
    try {
      const req = CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [CreateTopics.createCreatableTopic({ name: 'jbod', numPartitions: PARTITIONS, replicationFactor: 3 })] })
      const res = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
      expect(res.topics[0]!.errorCode).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    const agreed = (check: (ps: PartitionView[]) => boolean, what: string): Promise<PartitionView[]> =>
      until(what, async () => {
        const views = await Promise.all(cluster.brokers.map((b) => partitionsOf(b, 'jbod')))
        const first = JSON.stringify(views[0])
        return views.every((v) => JSON.stringify(v) === first) && check(views[0]!) ? views[0] : undefined
      })
    const before = await agreed((ps) => ps.length === PARTITIONS && ps.every((p) => p.isr.length === 3), 'every partition with a full ISR')

    const kafka = new Kafka({ clientId: 'jbod', brokers: cluster.brokers.map((b) => b.bootstrap), logLevel: logLevel.NOTHING, retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2000 } })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const acked = new Map<number, string[]>(Array.from({ length: PARTITIONS }, (_, p) => [p, []]))
    const produce = async (round: string): Promise<void> => {
      for (let i = 0; i < 10; i++) {
        for (let p = 0; p < PARTITIONS; p++) {
          const value = `${round}-${p}-${i}`
          await producer.send({ topic: 'jbod', acks: -1, messages: [{ partition: p, value }] })
          acked.get(p)!.push(value)
        }
      }
    }
    await produce('before')

    // Broker 2's directory holding a partition it leads fails.
    const [d1, d2] = dirsOf(2)
    const led = before.filter((p) => p.leader === 2).map((p) => p.partition)
    expect(led.length).toBeGreaterThan(0)
    const failed = existsSync(join(d1, `jbod-${led[0]}`)) ? d1 : d2
    const healthy = failed === d1 ? d2 : d1
    const inFailed = before.map((p) => p.partition).filter((p) => existsSync(join(failed, `jbod-${p}`)))
    const inHealthy = before.map((p) => p.partition).filter((p) => existsSync(join(healthy, `jbod-${p}`)))
    expect(inFailed.length + inHealthy.length).toBe(PARTITIONS)
    rmSync(failed, { recursive: true, force: true })

    const after = await agreed(
      (ps) => inFailed.every((p) => ps[p]!.leader >= 0 && ps[p]!.leader !== 2 && !ps[p]!.isr.includes(2)),
      'new leaders and ISRs without broker 2 for the partitions in its failed dir',
    )
    for (const p of inFailed) {
      expect(before[p]!.isr).toContain(after[p]!.leader)
      // A new leader at the next epoch where broker 2 led; where it followed, the ISR shrank at the same epoch.
      if (before[p]!.leader === 2) expect(after[p]!.epoch).toBeGreaterThan(before[p]!.epoch)
      else expect(after[p]!.epoch).toBe(before[p]!.epoch)
      expect(after[p]!.offline).toContain(2)
    }
    // Broker 2 still serves its healthy directory: it stays in those ISRs (and leads what it led there).
    expect(cluster.broker(2).alive()).toBe(true)
    for (const p of inHealthy) {
      expect(after[p]!.isr).toContain(2)
      if (before[p]!.leader === 2) expect(after[p]!.leader).toBe(2)
    }

    await produce('after')
    await producer.disconnect()
    // Replicas on broker 2's healthy dir keep up: the ISR stays full there after the second round.
    await agreed((ps) => inHealthy.every((p) => ps[p]!.isr.length === 3), 'full ISRs on the healthy dir')

    for (let p = 0; p < PARTITIONS; p++) {
      const values = (await readAll(cluster.broker(after[p]!.leader), 'jbod', p)).map((r) => r.value)
      expect(values).toEqual(acked.get(p))
    }

    const admin = new Admin({ bootstrapServers: cluster.bootstrap() })
    try {
      const dirs = await admin.describeLogDirs(null, [2])
      expect(dirs.find((d) => d.logDir === failed)!.errorCode).toBe(ErrorCode.KAFKA_STORAGE_ERROR)
      const ok = dirs.find((d) => d.logDir === healthy)!
      expect(ok.errorCode).toBe(ErrorCode.NONE)
      expect(ok.partitions.map((x) => x.partition).sort()).toEqual(inHealthy)
    } finally {
      await admin.close()
    }
  }, 120_000)
})
