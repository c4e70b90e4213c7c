// A full disk under one broker of a real cluster (a ZooKeeper, three Skein broker processes, broker 3's
// only log dir an 8 MiB tmpfs, so root only): the first write that finds no room takes the dir offline,
// the controller moves leadership and ISR membership off broker 3, which stays up (its only dir may come
// back: log.dir.failure.retry.interval.ms). Once space is freed the dir is reopened by itself, without a
// restart: broker 3's replicas catch up and rejoin every ISR, and their logs are byte-identical to the
// leaders' up to the high watermark, every acknowledged record read back exactly once. A partition whose
// only replica is on broker 3 has no leader while the dir is full, and broker 3 leads it again after.
// (A dir failed by EIO is not retried: test/storage/disk-full.test.ts.)
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { ZooKeeperClient } from '../../src/cluster/zookeeper/index.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as AlterPartition from '../../src/protocol/messages/56-alter-partition.gen.js'
import { compareReplicaLogs } from '../faults/checker.js'
import { batchOf, fillFilesystem, freeLoopbackPort, mountTmpfs, partitionsOf, readAll, startCluster, until, zookeeperMissing, type PartitionView, type TestCluster } from '../harness/index.js'

const MISSING = zookeeperMissing()
const notRoot = process.getuid?.() !== 0
const skipWhy = notRoot ? ' (skipped: mounting a tmpfs needs root)' : MISSING !== undefined ? ` (skipped: ${MISSING})` : ''
const PARTITIONS = 3
const TOPIC = 'full'
const VICTIM = 3
/** A topic whose only replica is on the full broker. */
const SOLO = 'solo'

/** Fills dir's filesystem with a file until ENOSPC; returns its path. */
function fill(dir: string): string {
  const path = join(dir, 'filler')
  fillFilesystem(path, 64 * 1024)
  return path
}

function replicaLog(logDir: string, partition: number): Buffer {
  const dir = join(logDir, `${TOPIC}-${partition}`)
  return Buffer.concat(readdirSync(dir).filter((n) => n.endsWith('.log')).sort().map((n) => readFileSync(join(dir, n))))
}

describe.skipIf(notRoot || MISSING !== undefined)(`a full log dir in a three-broker cluster${skipWhy}`, () => {
  let cluster: TestCluster
  let mount: string
  let unmount: (() => void) | undefined
  let victimRestPort: number
  /** The full broker's kafka_log_logmanager_offlinelogdirectorycount, scraped from its GET /metrics. */
  const offlineLogDirs = async (): Promise<number> => {
    const text = await (await fetch(`http://127.0.0.1:${victimRestPort}/metrics`)).text()
    const line = text.split('\n').find((l) => l.startsWith('kafka_log_logmanager_offlinelogdirectorycount '))
    return Number(line?.split(' ')[1])
  }

  beforeAll(async () => {
    victimRestPort = await freeLoopbackPort()
    ;({ dir: mount, unmount } = mountTmpfs('skein-full-cluster-', '8m'))
    cluster = await startCluster({
      sessionTimeoutMs: 6000,
      overrides: [
        'min.insync.replicas=2', 'default.replication.factor=3', 'replica.lag.time.max.ms=3000', 'replica.fetch.backoff.ms=200',
        'log.dir.failure.retry.interval.ms=300', 'log.dir.failure.retry.min.free.bytes=2097152', 'log.segment.bytes=1048576',
      ],
      brokerOverrides: (id) => (id === VICTIM ? [`log.dirs=${mount}`, `rest.listeners=http://127.0.0.1:${victimRestPort}`] : []),
    })
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
    unmount?.()
  })

  const views = (topic = TOPIC): Promise<PartitionView[]> => partitionsOf(cluster.broker(1), topic)
  const produce = async (partition: number, values: string[], acked: Map<number, string[]>, topic = TOPIC): Promise<void> => {
    for (const value of values) {
      await until(`an acks=all write of ${value}`, async () => {
        const leader = (await views(topic))[partition]!.leader
        if (leader < 0) return undefined
        const c = await cluster.broker(leader).client()
        try {
          const r = await c.produce(topic, partition, batchOf([{ key: null, value: Buffer.from(value) }]), -1)
          return r.errorCode === ErrorCode.NONE ? true : undefined
        } finally {
          c.close()
        }
      }, 20_000, 100)
      acked.get(partition)!.push(value)
    }
  }

  it('refuses writes, moves leadership away, and takes the replicas back into every ISR once space returns, without a restart', async () => {
    const c = await cluster.broker(1).client()
    try {
      const req = CreateTopics.createCreateTopicsRequest({
        timeoutMs: 30_000,
        topics: [
          CreateTopics.createCreatableTopic({ name: TOPIC, numPartitions: PARTITIONS, replicationFactor: 3 }),
          CreateTopics.createCreatableTopic({
            name: SOLO, numPartitions: -1, replicationFactor: -1,
            assignments: [CreateTopics.createCreatableReplicaAssignment({ partitionIndex: 0, brokerIds: [VICTIM] })],
            configs: [CreateTopics.createCreatableTopicConfig({ name: 'min.insync.replicas', value: '1' })],
          }),
        ],
      })
      const res = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
      expect(res.topics.map((t) => t.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE])
    } finally {
      c.close()
    }
    const before = await until('full ISRs', async () => {
      const v = await views()
      return v.length === PARTITIONS && v.every((p) => p.isr.length === 3 && p.leader > 0) ? v : undefined
    })
    const acked = new Map<number, string[]>(Array.from({ length: PARTITIONS }, (_, p) => [p, []]))
    const big = 'x'.repeat(2000)
    for (let p = 0; p < PARTITIONS; p++) await produce(p, Array.from({ length: 20 }, (_, i) => `before-${p}-${i}-${big}`), acked)
    const soloAcked = new Map<number, string[]>([[0, []]])
    await produce(0, Array.from({ length: 5 }, (_, i) => `solo-${i}`), soloAcked, SOLO)

    const filler = fill(mount)
    const t0 = Date.now()
    // Writes go on: broker 3's next append (as leader or follower) finds no room and its dir goes offline.
    for (let p = 0; p < PARTITIONS; p++) await produce(p, Array.from({ length: 5 }, (_, i) => `full-${p}-${i}-${big}`), acked)
    const off = await until('leadership and ISRs off the full broker', async () => {
      const v = await views()
      return v.every((p) => p.leader > 0 && p.leader !== VICTIM && !p.isr.includes(VICTIM)) ? v : undefined
    }, 20_000)
    const offMs = Date.now() - t0
    expect(cluster.broker(VICTIM).alive()).toBe(true)
    expect(await offlineLogDirs()).toBe(1)
    for (const p of off) expect(p.offline).toContain(VICTIM)
    // Its only replica offline: no leader (unclean election is off, and there is no other replica anyway).
    await until('no leader for the partition whose only replica is full', async () => ((await views(SOLO))[0]!.leader === -1 ? true : undefined), 10_000)
    // Asked directly, the full broker refuses: it leads nothing now.
    const direct = await cluster.broker(VICTIM).client()
    try {
      const r = await direct.produce(TOPIC, 0, batchOf([{ key: null, value: Buffer.from('refused') }]), -1)
      expect([ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_LEADER_OR_FOLLOWER]).toContain(r.errorCode)
    } finally {
      direct.close()
    }
    // The controller refuses to put a replica on a failed dir back into an ISR (Kafka's
    // isReplicaOnline(broker, partition)): a follower fetch sent just before the dir failed could make
    // its leader propose it, and acks=all would then wait for it until replica.lag.time.max.ms.
    const zk = await ZooKeeperClient.connect(cluster.connect)
    try {
      const json = async (path: string): Promise<Record<string, unknown>> => JSON.parse((await zk.getData(path)).data.toString('utf8'))
      const p0 = off[0]!
      const controller = (await json('/controller')).brokerid as number
      const req = AlterPartition.createAlterPartitionRequest({
        brokerId: p0.leader,
        brokerEpoch: (await zk.exists(`/brokers/ids/${p0.leader}`))!.czxid,
        topics: [AlterPartition.createRequestTopicData({
          topicName: TOPIC,
          topicId: (await json(`/brokers/topics/${TOPIC}`)).topic_id as string,
          partitions: [AlterPartition.createRequestPartitionData({ partitionIndex: 0, leaderEpoch: p0.epoch, partitionEpoch: (await zk.getData(`/brokers/topics/${TOPIC}/partitions/0/state`)).stat.version, newIsr: [...p0.isr, VICTIM] })],
        })],
      })
      const cc = await cluster.broker(controller).client()
      try {
        const res = await cc.call(56, 2, (w) => AlterPartition.encodeAlterPartitionRequest(w, req, 2), AlterPartition.decodeAlterPartitionResponse)
        expect(res.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INELIGIBLE_REPLICA)
      } finally {
        cc.close()
      }
    } finally {
      await zk.close()
    }
    for (let p = 0; p < PARTITIONS; p++) await produce(p, Array.from({ length: 5 }, (_, i) => `while-full-${p}-${i}`), acked)

    rmSync(filler)
    const t1 = Date.now()
    const back = await until('broker 3 back in every ISR', async () => {
      const v = await views()
      const solo = (await views(SOLO))[0]!
      return v.every((p) => p.isr.includes(VICTIM) && p.offline.length === 0) && solo.leader === VICTIM && solo.offline.length === 0 ? v : undefined
    }, 20_000, 100).catch(async (err: Error) => {
      throw new Error(`${err.message}; views ${JSON.stringify(await views())} ${JSON.stringify(await views(SOLO))}; logs: ${cluster.brokers.map((b) => b.output().split('\n').filter((l) => /log dir|LeaderAndIsr|replicas on|"level":(40|50|60)/i.test(l)).slice(-12).map((l) => `${b.id}: ${l.slice(0, 400)}`).join('\n')).join('\n')}`)
    })
    const backMs = Date.now() - t1
    expect(cluster.broker(VICTIM).output()).toMatch(/has room again/)
    expect(await offlineLogDirs()).toBe(0)
    console.log(`disk-full recovery: leadership and ISRs off broker ${VICTIM} ${offMs} ms after the disk filled; back in every ISR ${backMs} ms after space was freed (no restart); ISRs ${back.map((p) => `${p.partition}:${p.isr.join(',')}`).join(' ')}`)

    for (let p = 0; p < PARTITIONS; p++) await produce(p, Array.from({ length: 5 }, (_, i) => `after-${p}-${i}`), acked)
    await produce(0, ['solo-after'], soloAcked, SOLO)
    expect((await readAll(cluster.broker(VICTIM), SOLO, 0)).map((r) => r.value)).toEqual(soloAcked.get(0))
    const last = await views()
    for (let p = 0; p < PARTITIONS; p++) {
      const leader = cluster.broker(last[p]!.leader)
      const records = await readAll(leader, TOPIC, p)
      expect(records.map((r) => r.value)).toEqual(acked.get(p))
      const hw = records.length === 0 ? 0 : records.at(-1)!.offset + 1
      const cmp = await until(`replicas of ${TOPIC}-${p} identical up to HW ${hw}`, async () => {
        const logs = new Map(last[p]!.replicas.map((id) => [id, replicaLog(id === VICTIM ? mount : cluster.broker(id).dataDir, p)]))
        const r = compareReplicaLogs(logs, hw)
        return r.identical ? r : undefined
      }, 10_000)
      expect(cmp.identical).toBe(true)
    }
    expect(before.length).toBe(PARTITIONS)
  }, 60_000)
})
