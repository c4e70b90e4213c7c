// Data replication in a real cluster: a ZooKeeper and three Skein broker processes (test/harness/cluster.ts),
// min.insync.replicas=2.
// - A 6-partition topic with replication factor 3: kafkajs (idempotent) and librdkafka (confluent-kafka-python)
//   produce with acks=all, everything reads back, every partition's ISR is its three replicas, and the
//   three replicas' segment files are byte-identical.
// - SIGKILL of a partition's leader during an idempotent acks=all produce: a new leader from the ISR, the
//   producer carries on, every acknowledged record is read back exactly once, and the restarted broker
//   rejoins the ISR with a log identical to the leader's up to the high watermark.
// - A follower stopped (SIGSTOP) past replica.lag.time.max.ms (shorter than its ZooKeeper session) leaves
//   the ISR by the leader's AlterPartition; with one in-sync replica left acks=all gets NOT_ENOUGH_REPLICAS
//   while acks=1 still works; after SIGCONT it catches up and rejoins, and acks=all works again.
// - The group coordinator follows the leadership of its __consumer_offsets partition (replication factor
//   3): FindCoordinator names the partition's leader; SIGKILL of that broker moves the group to the new
//   leader, which loaded the partition, and the group resumes from its committed offsets.
// - Transactions across the cluster: the transaction coordinator sends markers to each partition's
//   leader (WriteTxnMarkers); read_committed consumers see committed transactions only; after SIGKILL of
//   the coordinator the producer's next transaction commits through the new leader of its
//   __transaction_state partition.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { groupPartition } from '../../src/coordinator/group/partitioner.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import {
  hasPythonModule, readAll, runOk, simpleBatch, startCluster, SYSTEM_PYTHON, zookeeperMissing,
  type ClusterBroker, type RawClient, type TestCluster,
} from '../harness/index.js'
import { partitionsOf, until, type PartitionView } from '../harness/cluster-views.js'

const MISSING = zookeeperMissing()
const SESSION_TIMEOUT_MS = 8000
const LAG_MS = 2500
const OFFSETS_PARTITIONS = 3
const CONFLUENT = join(dirname(fileURLToPath(import.meta.url)), '..', 'integration', 'python', 'confluent_client.py')

async function createTopic(c: RawClient, name: string, opts: { partitions?: number; rf?: number; assignments?: number[][] }): Promise<number> {
  const topic = CreateTopics.createCreatableTopic({ name, numPartitions: opts.partitions ?? -1, replicationFactor: opts.rf ?? -1 })
  if (opts.assignments !== undefined) {
    topic.assignments = opts.assignments.map((brokerIds, partitionIndex) => CreateTopics.createCreatableReplicaAssignment({ partitionIndex, brokerIds }))
  }
  const req = CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [topic] })
  const res = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
  return res.topics[0]!.errorCode
}

/** The segment files of a replica (name -> bytes). */
/** Leader, ISR, high watermark and last stable offset of each partition (for failure messages). */
async function offsetsOf(alive: ClusterBroker[], topic: string): Promise<{ partition: number; leader: number; isr: number[]; hw?: string; lso?: string }[]> {
  const views = await partitionsOf(alive[0]!, topic)
  return Promise.all(views.map(async (v) => {
    const leader = alive.find((b) => b.id === v.leader)
    if (leader === undefined) return { partition: v.partition, leader: v.leader, isr: v.isr }
    const c = await leader.client()
    try {
      const hw = await c.listOffset(topic, v.partition, -1n, 5, 0)
      const lso = await c.listOffset(topic, v.partition, -1n, 5, 1)
      return { partition: v.partition, leader: v.leader, isr: v.isr, hw: String(hw.offset), lso: String(lso.offset) }
    } finally {
      c.close()
    }
  }))
}

function segmentFiles(b: ClusterBroker, topic: string, partition: number): Map<string, Buffer> {
  const dir = join(b.dataDir, `${topic}-${partition}`)
  const out = new Map<string, Buffer>()
  for (const name of readdirSync(dir).sort()) if (name.endsWith('.log')) out.set(name, readFileSync(join(dir, name)))
  return out
}

function concatenated(files: Map<string, Buffer>): Buffer {
  return Buffer.concat([...files.values()])
}

async function confluent(op: string, req: object, timeoutMs = 60_000): Promise<Record<string, unknown>> {
  const r = await runOk(SYSTEM_PYTHON, [CONFLUENT, op], { input: JSON.stringify(req), timeoutMs })
  return JSON.parse(r.stdout.toString()) as Record<string, unknown>
}

/** Every record of a partition, read from `b` (the leader) up to its high watermark. */
describe.skipIf(MISSING !== undefined)('replication in a three-broker cluster (min.insync.replicas=2)', () => {
  let cluster: TestCluster
  /** Brokers stopped by SIGSTOP: they answer nothing. */
  const paused = new Set<number>()
  const alive = (): ClusterBroker[] => cluster.brokers.filter((b) => b.alive() && !paused.has(b.id))
  const anyBroker = (): ClusterBroker => alive()[0]!

  /** The partitions as every live broker answers them, once all agree and `check` holds. */
  function agreed(topic: string, check: (ps: PartitionView[]) => boolean, what: string, timeoutMs?: number): Promise<PartitionView[]> {
    return until(
      what,
      async () => {
        const views = await Promise.all(alive().map((b) => partitionsOf(b, topic)))
        const first = JSON.stringify(views[0])
        if (!views.every((v) => JSON.stringify(v) === first)) return undefined
        return check(views[0]!) ? views[0] : undefined
      },
      timeoutMs,
    )
  }

  /** Waits until every replica of a partition has the leader's log, then compares their segment files. */
  async function expectIdenticalReplicas(topic: string, partition: number): Promise<void> {
    const [view] = (await agreed(topic, (ps) => ps[partition]!.isr.length === ps[partition]!.replicas.length, `full ISR of ${topic}-${partition}`)).slice(partition, partition + 1)
    const leader = cluster.broker(view!.leader)
    await until(`identical replicas of ${topic}-${partition}`, async () => {
      const reference = concatenated(segmentFiles(leader, topic, partition))
      for (const id of view!.replicas) {
        if (!concatenated(segmentFiles(cluster.broker(id), topic, partition)).equals(reference)) return undefined
      }
      return true
    })
    const names = [...segmentFiles(leader, topic, partition).keys()]
    for (const id of view!.replicas) expect([...segmentFiles(cluster.broker(id), topic, partition).keys()]).toEqual(names)
  }

  beforeAll(async () => {
    cluster = await startCluster({
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      overrides: [
        'min.insync.replicas=2', 'default.replication.factor=3', `replica.lag.time.max.ms=${LAG_MS}`, 'replica.fetch.backoff.ms=200',
        'offsets.topic.replication.factor=3', `offsets.topic.num.partitions=${OFFSETS_PARTITIONS}`, 'group.initial.rebalance.delay.ms=0',
        'transaction.state.log.replication.factor=3', 'transaction.state.log.num.partitions=3', 'transaction.state.log.min.isr=2',
      ],
    })
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  it('replicates a 6-partition RF-3 topic written by kafkajs and librdkafka with acks=all; replicas are byte-identical', async () => {
    const c = await anyBroker().client()
    try {
      expect(await createTopic(c, 'orders', { partitions: 6, rf: 3 })).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    await agreed('orders', (ps) => ps.length === 6 && ps.every((p) => p.leader >= 0 && p.isr.length === 3), 'orders with full ISRs')

    const kafka = new Kafka({ clientId: 'repl-test', brokers: cluster.bootstrap().split(','), logLevel: logLevel.NOTHING })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const sent = new Set<string>()
    for (let round = 0; round < 10; round++) {
      const messages = Array.from({ length: 30 }, (_, i) => ({ key: `k${round * 30 + i}`, value: `kafkajs-${round * 30 + i}` }))
      for (const m of messages) sent.add(m.value)
      await producer.send({ topic: 'orders', acks: -1, messages })
    }
    await producer.disconnect()

    if (hasPythonModule('confluent_kafka')) {
      const messages = Array.from({ length: 150 }, (_, i) => ({ key: Buffer.from(`r${i}`).toString('base64'), value: Buffer.from(`librdkafka-${i}`).toString('base64') }))
      const res = await confluent('produce', { bootstrap: cluster.bootstrap(), topic: 'orders', acks: -1, messages })
      const reports = res.reports as { error: string | null }[]
      expect(reports.every((r) => r.error === null)).toBe(true)
      for (let i = 0; i < 150; i++) sent.add(`librdkafka-${i}`)
    }

    // Read back from the leaders, up to their high watermarks (consumer groups are the coordinators'
    // business, not replication's): with librdkafka when it is installed, and with raw fetches.
    const views = await partitionsOf(anyBroker(), 'orders')
    const seen: string[] = []
    for (const v of views) for (const r of await readAll(cluster.broker(v.leader), 'orders', v.partition)) seen.push(r.value)
    expect(seen.length).toBe(sent.size)
    expect(new Set(seen)).toEqual(sent)
    if (hasPythonModule('confluent_kafka')) {
      const res = await confluent('consume', { bootstrap: cluster.bootstrap(), topic: 'orders', partitions: [0, 1, 2, 3, 4, 5], timeout: 40 })
      const consumed = (res.messages as { value: string }[]).map((m) => Buffer.from(m.value, 'base64').toString())
      expect(consumed.length).toBe(sent.size)
      expect(new Set(consumed)).toEqual(sent)
    }

    for (let p = 0; p < 6; p++) await expectIdenticalReplicas('orders', p)
  }, 240_000)

  it('keeps every acknowledged record, exactly once, when the leader is SIGKILLed during an idempotent acks=all produce', async () => {
    const c = await anyBroker().client()
    try {
      expect(await createTopic(c, 'chaos', { partitions: 1, rf: 3 })).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    const [before] = await agreed('chaos', (ps) => ps.length === 1 && ps[0]!.isr.length === 3, 'chaos with a full ISR')
    const victim = cluster.broker(before!.leader)

    const kafka = new Kafka({
      clientId: 'chaos-producer',
      brokers: cluster.brokers.map((b) => b.bootstrap),
      logLevel: logLevel.NOTHING,
      retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2000 },
    })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const acked: string[] = []
    let killed = false
    for (let i = 0; i < 400; i++) {
      const value = `v${i}`
      await producer.send({ topic: 'chaos', acks: -1, messages: [{ value }] })
      acked.push(value)
      if (i === 150) {
        await victim.kill()
        killed = true
      }
    }
    await producer.disconnect()
    expect(killed).toBe(true)

    const [after] = await agreed('chaos', (ps) => ps[0]!.leader >= 0 && ps[0]!.leader !== victim.id, 'a new leader for chaos-0')
    expect(before!.isr).toContain(after!.leader)
    expect(after!.epoch).toBeGreaterThan(before!.epoch)

    const records = await readAll(cluster.broker(after!.leader), 'chaos', 0)
    const values = records.map((r) => r.value)
    expect(new Set(values).size).toBe(values.length)
    expect(values).toEqual(acked)

    await victim.start()
    await agreed('chaos', (ps) => ps[0]!.isr.length === 3, 'the restarted broker back in the ISR', 60_000)
    await expectIdenticalReplicas('chaos', 0)
  }, 240_000)

  it('shrinks the ISR of a stopped follower: acks=all gets NOT_ENOUGH_REPLICAS, acks=1 works; after SIGCONT it rejoins', async () => {
    const controllerId = (await (async () => {
      const c = await anyBroker().client()
      try {
        return (await c.metadata([])).controllerId
      } finally {
        c.close()
      }
    })())
    const others = alive().map((b) => b.id).filter((id) => id !== controllerId)
    expect(others.length).toBe(2)
    const [leaderId, followerId] = others as [number, number]
    const c0 = await anyBroker().client()
    try {
      expect(await createTopic(c0, 'stall', { assignments: [[leaderId, followerId]] })).toBe(ErrorCode.NONE)
    } finally {
      c0.close()
    }
    await agreed('stall', (ps) => ps.length === 1 && ps[0]!.leader === leaderId && ps[0]!.isr.length === 2, 'stall led by its first replica with a full ISR')
    const leader = cluster.broker(leaderId)
    const follower = cluster.broker(followerId)
    const c = await leader.client()
    try {
      expect((await c.produce('stall', 0, simpleBatch('before', 5), -1)).errorCode).toBe(ErrorCode.NONE)

      follower.signal('SIGSTOP')
      paused.add(followerId)
      const stoppedAt = Date.now()
      // acks=1 needs the leader alone; the follower falls behind it (an idle follower at the leader's
      // LEO counts as caught up, as in Kafka).
      expect((await c.produce('stall', 0, simpleBatch('acks1', 4), 1)).errorCode).toBe(ErrorCode.NONE)
      await agreed('stall', (ps) => ps[0]!.isr.length === 1 && ps[0]!.isr[0] === leaderId, 'the ISR without the stopped follower', 30_000)
      // The leader's AlterPartition (replica.lag.time.max.ms) or the controller fencing the silent
      // follower (broker.session.timeout.ms) did it, before the follower's ZooKeeper session could expire.
      expect(Date.now() - stoppedAt).toBeLessThan(SESSION_TIMEOUT_MS)
      expect(cluster.brokers.some((b) => b.output().includes('shrinking the ISR') || b.output().includes(`fencing broker ${followerId}`))).toBe(true)

      expect((await c.produce('stall', 0, simpleBatch('refused', 3), -1)).errorCode).toBe(ErrorCode.NOT_ENOUGH_REPLICAS)

      follower.signal('SIGCONT')
      paused.delete(followerId)
      await agreed('stall', (ps) => ps[0]!.isr.length === 2, 'the follower back in the ISR', 60_000)
      await until('acks=all accepted again', async () => ((await c.produce('stall', 0, simpleBatch('after', 2), -1)).errorCode === ErrorCode.NONE ? true : undefined))
    } finally {
      c.close()
    }
    await expectIdenticalReplicas('stall', 0)
    const values = (await readAll(leader, 'stall', 0)).length
    expect(values).toBeGreaterThanOrEqual(5 + 4 + 2)
  }, 180_000)

  it('moves a consumer group to the new leader of its __consumer_offsets partition when the coordinator is SIGKILLed', async () => {
    const c0 = await anyBroker().client()
    try {
      expect(await createTopic(c0, 'groups-data', { partitions: 2, rf: 3 })).toBe(ErrorCode.NONE)
    } finally {
      c0.close()
    }
    await agreed('groups-data', (ps) => ps.length === 2 && ps.every((p) => p.isr.length === 3), 'groups-data with full ISRs')
    const kafka = (): Kafka => new Kafka({
      clientId: 'group-test',
      brokers: alive().map((b) => b.bootstrap),
      logLevel: logLevel.NOTHING,
      retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2000 },
    })
    const producer = kafka().producer({ idempotent: true })
    await producer.connect()
    await producer.send({ topic: 'groups-data', acks: -1, messages: Array.from({ length: 60 }, (_, i) => ({ key: `k${i}`, value: `first-${i}` })) })
    await producer.disconnect()

    /** Consumes in group g until `count` new records arrived, commits them, and leaves the group. */
    async function consume(count: number): Promise<string[]> {
      const consumer = kafka().consumer({ groupId: 'g', sessionTimeout: 10_000, heartbeatInterval: 500, maxWaitTimeInMs: 500 })
      const seen: string[] = []
      await consumer.connect()
      await consumer.subscribe({ topic: 'groups-data', fromBeginning: true })
      await consumer.run({ autoCommit: true, autoCommitThreshold: 1, eachMessage: async ({ message }) => void seen.push(message.value!.toString()) })
      await until(`${count} records consumed`, async () => (seen.length >= count ? true : undefined), 90_000)
      await new Promise((r) => setTimeout(r, 500))
      await consumer.disconnect()
      return seen
    }
    expect((await consume(60)).length).toBe(60)

    // FindCoordinator names the leader of the group's partition.
    const partition = groupPartition('g', OFFSETS_PARTITIONS)
    const [offsets] = (await agreed('__consumer_offsets', (ps) => ps.length === OFFSETS_PARTITIONS && ps[partition]!.isr.length === 3, '__consumer_offsets with full ISRs')).slice(partition, partition + 1)
    const c = await anyBroker().client()
    let coordinatorId: number
    try {
      const req = FindCoordinator.createFindCoordinatorRequest({ keyType: 0, coordinatorKeys: ['g'] })
      const res = await c.call(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, req, 4), FindCoordinator.decodeFindCoordinatorResponse)
      expect(res.coordinators[0]!.errorCode).toBe(ErrorCode.NONE)
      coordinatorId = res.coordinators[0]!.nodeId
    } finally {
      c.close()
    }
    expect(coordinatorId).toBe(offsets!.leader)

    const victim = cluster.broker(coordinatorId)
    await victim.kill()
    await agreed('__consumer_offsets', (ps) => ps[partition]!.leader >= 0 && ps[partition]!.leader !== coordinatorId, 'a new leader of the group\'s partition')

    const more = kafka().producer({ idempotent: true })
    await more.connect()
    await more.send({ topic: 'groups-data', acks: -1, messages: Array.from({ length: 20 }, (_, i) => ({ key: `m${i}`, value: `second-${i}` })) })
    await more.disconnect()
    // The committed offsets moved with the partition: only the new records are consumed.
    const second = await consume(20)
    expect(second.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `second-${i}`).sort())
    await victim.start()
    await agreed('__consumer_offsets', (ps) => ps[partition]!.isr.length === 3, 'the restarted broker back in the ISR of __consumer_offsets', 60_000)
  }, 240_000)

  it('commits transactions whose partitions other brokers lead, and after SIGKILL of the transaction coordinator', async () => {
    const c0 = await anyBroker().client()
    try {
      expect(await createTopic(c0, 'txn-data', { partitions: 3, rf: 3 })).toBe(ErrorCode.NONE)
    } finally {
      c0.close()
    }
    const data = await agreed('txn-data', (ps) => ps.length === 3 && ps.every((p) => p.isr.length === 3), 'txn-data with full ISRs')
    expect(new Set(data.map((p) => p.leader)).size).toBeGreaterThan(1)
    const kafka = (): Kafka => new Kafka({
      clientId: 'txn-test',
      brokers: alive().map((b) => b.bootstrap),
      logLevel: logLevel.NOTHING,
      retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2000 },
    })
    const producer = kafka().producer({ transactionalId: 'tx-1', idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const inTransaction = async (prefix: string, n: number, commit: boolean): Promise<void> => {
      const txn = await producer.transaction()
      await txn.send({ topic: 'txn-data', messages: Array.from({ length: n }, (_, i) => ({ key: `${prefix}${i}`, value: `${prefix}-${i}` })) })
      if (commit) await txn.commit()
      else await txn.abort()
    }
    await inTransaction('committed', 30, true)
    await inTransaction('aborted', 10, false)
    await inTransaction('late', 10, true)

    const seen: string[] = []
    const consumer = kafka().consumer({ groupId: 'txn-readers', readUncommitted: false, maxWaitTimeInMs: 500 })
    await consumer.connect()
    await consumer.subscribe({ topic: 'txn-data', fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) })
    await until('the committed transactions consumed', async () => (seen.length >= 40 ? true : undefined), 90_000)

    // The coordinator is the leader of the transactional id's __transaction_state partition.
    const c = await anyBroker().client()
    let coordinatorId: number
    try {
      const req = FindCoordinator.createFindCoordinatorRequest({ keyType: 1, coordinatorKeys: ['tx-1'] })
      const res = await c.call(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, req, 4), FindCoordinator.decodeFindCoordinatorResponse)
      expect(res.coordinators[0]!.errorCode).toBe(ErrorCode.NONE)
      coordinatorId = res.coordinators[0]!.nodeId
    } finally {
      c.close()
    }
    const victim = cluster.broker(coordinatorId)
    await victim.kill()
    await inTransaction('after', 10, true)
    await until('the transaction after the coordinator\'s loss consumed', async () => (seen.length >= 50 ? true : undefined), 90_000)
    await new Promise((r) => setTimeout(r, 1000))
    await consumer.disconnect()
    await producer.disconnect()
    expect(seen.some((v) => v.startsWith('aborted'))).toBe(false)
    const expected = ['committed', 'late', 'after'].flatMap((prefix) => Array.from({ length: prefix === 'committed' ? 30 : 10 }, (_, i) => `${prefix}-${i}`))
    // The group may have moved too (its coordinator could be the same broker): a consumer re-reads what it
    // had not committed yet, so this one sees every value, maybe twice.
    expect(new Set(seen)).toEqual(new Set(expected))
    await victim.start()
    await agreed('txn-data', (ps) => ps.every((p) => p.isr.length === 3), 'the restarted broker back in the ISR of txn-data', 60_000)
    // The logs hold every committed record exactly once: a fresh group reads them all, read_committed.
    const verify = kafka().consumer({ groupId: 'txn-verify', readUncommitted: false, maxWaitTimeInMs: 500 })
    const all: string[] = []
    await verify.connect()
    await verify.subscribe({ topic: 'txn-data', fromBeginning: true })
    await verify.run({ eachMessage: async ({ message }) => void all.push(message.value!.toString()) })
    try {
      await until('every committed record read again', async () => (all.length >= expected.length ? true : undefined), 90_000)
    } catch (err) {
      // Seen once in a full run: say what was missing and where each partition's HW and LSO stood.
      throw new Error(`${(err as Error).message}; missing ${JSON.stringify(expected.filter((v) => !all.includes(v)))}; partitions ${JSON.stringify(await offsetsOf(alive(), 'txn-data'))}`)
    }
    await new Promise((r) => setTimeout(r, 1000))
    await verify.disconnect()
    expect([...all].sort()).toEqual([...expected].sort())
  }, 300_000)
})
