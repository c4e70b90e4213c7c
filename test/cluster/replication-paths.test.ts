// Replication paths of a three-broker cluster (a ZooKeeper and three Skein broker processes,
// num.replica.fetchers=2, broker 1 on inter.broker.protocol.version=2.6):
// - kafka-python (Debian's python3-kafka) produces with acks=all and reads everything back from a
//   6-partition topic with replication factor 3; each follower runs two fetchers per leader, and the two
//   partitions it follows from one leader go to different ones (Kafka's hash).
// - acks=all whose follower stops fetching after the append (SIGSTOP before the produce: the leader's
//   answer to its parked fetch is never read): REQUEST_TIMED_OUT with a request timeout shorter than
//   replica.lag.time.max.ms, NOT_ENOUGH_REPLICAS_AFTER_APPEND with a longer one (the ISR shrank below
//   min.insync.replicas meanwhile), then NOT_ENOUGH_REPLICAS at append; after SIGCONT it rejoins.
//   A transaction marker (WriteTxnMarkers) is appended with acks=all too: not answered before the
//   follower has it (a marker only the leader had would be lost with a leader change after the
//   coordinator completed the transaction).
// - A leader that appended records nobody copied (its follower stopped), killed, replaced by that
//   follower, which takes other records at the next epoch: restarted, the ex-leader truncates its divergent
//   tail and ends byte-identical to the new leader, through OffsetForLeaderEpoch (broker 1, IBP 2.6:
//   Fetch v11) and through Fetch's diverging epoch (broker 3, Fetch v12).
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import * as WriteTxnMarkers from '../../src/protocol/messages/27-write-txn-markers.gen.js'
import {
  hasPythonModule, partitionsOf, readAll, runOk, simpleBatch, startCluster, SYSTEM_PYTHON, until, zookeeperMissing,
  type ClusterBroker, type PartitionView, type RawClient, type TestCluster,
} from '../harness/index.js'

const MISSING = zookeeperMissing()
const SESSION_TIMEOUT_MS = 5000
const LAG_MS = 1500
const KAFKA_PYTHON = join(dirname(fileURLToPath(import.meta.url)), '..', 'integration', 'python', 'kafka_python_client.py')

async function createTopic(c: RawClient, name: string, opts: { partitions?: number; rf?: number; assignments?: number[][]; configs?: Record<string, string> }): Promise<number> {
  const topic = CreateTopics.createCreatableTopic({
    name, numPartitions: opts.assignments === undefined ? (opts.partitions ?? 1) : -1, replicationFactor: opts.assignments === undefined ? (opts.rf ?? 3) : -1,
    configs: Object.entries(opts.configs ?? {}).map(([n, value]) => CreateTopics.createCreatableTopicConfig({ name: n, value })),
  })
  if (opts.assignments !== undefined) topic.assignments = opts.assignments.map((brokerIds, partitionIndex) => CreateTopics.createCreatableReplicaAssignment({ partitionIndex, brokerIds }))
  const req = CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [topic] })
  const res = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
  return res.topics[0]!.errorCode
}

/** acks=all produce with its own request timeout; the answer's error code. */
async function produceAll(c: RawClient, topic: string, records: Buffer, timeoutMs: number): Promise<number> {
  const req = Produce.createProduceRequest({
    acks: -1,
    timeoutMs,
    topicData: [Produce.createTopicProduceData({ name: topic, partitionData: [Produce.createPartitionProduceData({ index: 0, records })] })],
  })
  const res = await c.call(0, 7, (w) => Produce.encodeProduceRequest(w, req, 7), Produce.decodeProduceResponse, timeoutMs + 10_000)
  return res.responses[0]!.partitionResponses[0]!.errorCode
}

/** One ABORT marker of a producer for partition 0 of topic, as a transaction coordinator sends it; the answer's error code. */
async function writeAbortMarker(c: RawClient, topic: string, producerId: number): Promise<number> {
  const req = WriteTxnMarkers.createWriteTxnMarkersRequest({
    markers: [WriteTxnMarkers.createWritableTxnMarker({ producerId: BigInt(producerId), producerEpoch: 0, transactionResult: false, coordinatorEpoch: 0, topics: [WriteTxnMarkers.createWritableTxnMarkerTopic({ name: topic, partitionIndexes: [0] })] })],
  })
  const res = await c.call(27, 1, (w) => WriteTxnMarkers.encodeWriteTxnMarkersRequest(w, req, 1), WriteTxnMarkers.decodeWriteTxnMarkersResponse, 45_000)
  return res.markers[0]!.topics[0]!.partitions[0]!.errorCode
}

function segmentBytes(b: ClusterBroker, topic: string, partition: number): Buffer {
  const dir = join(b.dataDir, `${topic}-${partition}`)
  return Buffer.concat(readdirSync(dir).filter((n) => n.endsWith('.log')).sort().map((n) => readFileSync(join(dir, n))))
}

describe.skipIf(MISSING !== undefined)('replication paths in a three-broker cluster', () => {
  let cluster: TestCluster
  const paused = new Set<number>()
  const alive = (): ClusterBroker[] => cluster.brokers.filter((b) => b.alive() && !paused.has(b.id))

  function agreed(topic: string, check: (ps: PartitionView[]) => boolean, what: string, timeoutMs?: number): Promise<PartitionView[]> {
    return until(what, async () => {
      const views = await Promise.all(alive().map((b) => partitionsOf(b, topic)))
      const first = JSON.stringify(views[0])
      return views.every((v) => JSON.stringify(v) === first) && check(views[0]!) ? views[0] : undefined
    }, timeoutMs)
  }

  async function controllerId(): Promise<number> {
    const c = await alive()[0]!.client()
    try {
      return (await c.metadata([])).controllerId
    } finally {
      c.close()
    }
  }

  beforeAll(async () => {
    cluster = await startCluster({
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      overrides: ['default.replication.factor=3', `replica.lag.time.max.ms=${LAG_MS}`, 'replica.fetch.backoff.ms=200', 'num.replica.fetchers=2'],
      brokerOverrides: (id) => (id === 1 ? ['inter.broker.protocol.version=2.6'] : []),
    })
  }, 120_000)

  afterAll(async () => {
    for (const id of paused) cluster?.broker(id).signal('SIGCONT')
    await cluster?.stop()
  })

  it.skipIf(!hasPythonModule('kafka'))('kafka-python produces with acks=all and reads back a 6-partition RF-3 topic; two fetchers per leader', async () => {
    const c = await alive()[0]!.client()
    try {
      expect(await createTopic(c, 'kpy', { partitions: 6, rf: 3, configs: { 'min.insync.replicas': '2' } })).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    await agreed('kpy', (ps) => ps.length === 6 && ps.every((p) => p.isr.length === 3), 'kpy with full ISRs')
    const messages = Array.from({ length: 60 }, (_, i) => ({ value: Buffer.from(`kpy-${i}`).toString('base64'), partition: i % 6 }))
    const produced = JSON.parse((await runOk(SYSTEM_PYTHON, [KAFKA_PYTHON, 'produce'], { input: JSON.stringify({ bootstrap: cluster.bootstrap(), topic: 'kpy', acks: 'all', messages }), timeoutMs: 60_000 })).stdout.toString()) as { reports: { partition: number; offset: number }[] }
    expect(produced.reports.length).toBe(60)
    const consumed = JSON.parse((await runOk(SYSTEM_PYTHON, [KAFKA_PYTHON, 'consume'], { input: JSON.stringify({ bootstrap: cluster.bootstrap(), topic: 'kpy', partitions: [0, 1, 2, 3, 4, 5] }), timeoutMs: 60_000 })).stdout.toString()) as { messages: { value: string }[] }
    const records = consumed.messages
    expect(records.map((r) => Buffer.from(r.value, 'base64').toString()).sort()).toEqual(messages.map((m) => Buffer.from(m.value, 'base64').toString()).sort())
    // Each follower follows two partitions of each leader (p and p+3): on fetchers 0 and 1.
    for (const b of cluster.brokers) {
      for (const leader of cluster.brokers.filter((x) => x.id !== b.id)) {
        expect(b.output()).toContain(`ReplicaFetcherThread-0-${leader.id}`)
        expect(b.output()).toContain(`ReplicaFetcherThread-1-${leader.id}`)
      }
    }
  }, 120_000)

  it('answers acks=all REQUEST_TIMED_OUT, then NOT_ENOUGH_REPLICAS_AFTER_APPEND, when the follower stops fetching after the append', async () => {
    const ctl = await controllerId()
    const [leaderId, followerId] = cluster.brokers.map((b) => b.id).filter((id) => id !== ctl) as [number, number]
    const c0 = await alive()[0]!.client()
    try {
      expect(await createTopic(c0, 'acks', { assignments: [[leaderId, followerId]], configs: { 'min.insync.replicas': '2' } })).toBe(ErrorCode.NONE)
    } finally {
      c0.close()
    }
    await agreed('acks', (ps) => ps[0]?.leader === leaderId && ps[0].isr.length === 2, 'acks led by its first replica with a full ISR')
    const follower = cluster.broker(followerId)
    const c = await cluster.broker(leaderId).client()
    try {
      expect(await produceAll(c, 'acks', simpleBatch('ok', 3), 10_000)).toBe(ErrorCode.NONE)
      follower.signal('SIGSTOP')
      paused.add(followerId)
      // Appended with the ISR full; the follower never fetches it; the request times out first.
      expect(await produceAll(c, 'acks', simpleBatch('timeout', 2), 400)).toBe(ErrorCode.REQUEST_TIMED_OUT)
      // Appended with the ISR still full; it shrinks below min.insync.replicas before the HW moves. The
      // marker too: the coordinator must retry it, not take the leader's copy alone as written.
      const marker = writeAbortMarker(c, 'acks', 4242)
      expect(await produceAll(c, 'acks', simpleBatch('shrunk', 2), 15_000)).toBe(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
      expect(await marker).toBe(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
      expect(await produceAll(c, 'acks', simpleBatch('refused', 2), 5_000)).toBe(ErrorCode.NOT_ENOUGH_REPLICAS)
      expect(await writeAbortMarker(c, 'acks', 4242)).toBe(ErrorCode.NOT_ENOUGH_REPLICAS)
    } finally {
      follower.signal('SIGCONT')
      paused.delete(followerId)
      c.close()
    }
    await agreed('acks', (ps) => ps[0]!.isr.length === 2, 'the follower back in the ISR')
    const c2 = await cluster.broker(leaderId).client()
    try {
      expect(await produceAll(c2, 'acks', simpleBatch('again', 1), 10_000)).toBe(ErrorCode.NONE)
      expect(await writeAbortMarker(c2, 'acks', 4242)).toBe(ErrorCode.NONE)
    } finally {
      c2.close()
    }
  }, 60_000)

  for (const [victimId, how] of [[1, 'OffsetForLeaderEpoch (IBP 2.6, Fetch v11)'], [3, 'the diverging epoch of Fetch v12']] as const) {
    it(`truncates a killed ex-leader's divergent tail through ${how} when it returns`, async () => {
      const otherId = victimId === 1 ? 2 : 1
      const topic = `div${victimId}`
      const c0 = await alive()[0]!.client()
      try {
        expect(await createTopic(c0, topic, { assignments: [[victimId, otherId]], configs: { 'min.insync.replicas': '1' } })).toBe(ErrorCode.NONE)
      } finally {
        c0.close()
      }
      const [before] = await agreed(topic, (ps) => ps[0]?.leader === victimId && ps[0].isr.length === 2, `${topic} led by ${victimId} with a full ISR`)
      const victim = cluster.broker(victimId)
      const other = cluster.broker(otherId)
      const c = await victim.client()
      try {
        expect(await produceAll(c, topic, simpleBatch('shared', 5), 10_000)).toBe(ErrorCode.NONE)
        // The follower stops once its parked fetch was answered (replica.fetch.wait.max.ms, 500): it has
        // nothing in flight, so what the leader appends now reaches nobody.
        other.signal('SIGSTOP')
        paused.add(otherId)
        await new Promise((r) => setTimeout(r, 700))
        expect((await c.produce(topic, 0, simpleBatch('divergent', 4), 1)).errorCode).toBe(ErrorCode.NONE)
      } finally {
        c.close()
      }
      await victim.kill()
      other.signal('SIGCONT')
      paused.delete(otherId)
      const [after] = await agreed(topic, (ps) => ps[0]!.leader === otherId, `${otherId} leading ${topic}`, 30_000)
      expect(after!.epoch).toBeGreaterThan(before!.epoch)
      const c2 = await other.client()
      try {
        expect((await c2.produce(topic, 0, simpleBatch('new', 6), 1)).errorCode).toBe(ErrorCode.NONE)
      } finally {
        c2.close()
      }
      await victim.start()
      await agreed(topic, (ps) => ps[0]!.isr.length === 2, `${victimId} back in the ISR of ${topic}`, 30_000)
      await until(`identical replicas of ${topic}`, async () => (segmentBytes(victim, topic, 0).equals(segmentBytes(other, topic, 0)) ? true : undefined))
      const values = (await readAll(other, topic, 0)).map((r) => r.value)
      expect(values).toEqual([...Array.from({ length: 5 }, (_, i) => `shared-${i}`), ...Array.from({ length: 6 }, (_, i) => `new-${i}`)])
      // The path taken, as the ex-leader logged it (the other one never runs on that broker).
      const out = victim.output()
      const viaEpochRequest = "truncating to the leader's epoch end offset (OffsetForLeaderEpoch)"
      const viaFetch = "truncating the log where it diverged from the leader's"
      expect(out).toContain(victimId === 1 ? viaEpochRequest : viaFetch)
      expect(out).not.toContain(victimId === 1 ? viaFetch : viaEpochRequest)
    }, 90_000)
  }
})
