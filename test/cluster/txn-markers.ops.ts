// A transaction marker and a leader change (`npm run test:cluster-ops`, not in npm test): three brokers,
// the transaction coordinator on one, a partition led by another with the third as its only follower.
// A transaction's record reaches both replicas; the follower is then SIGSTOPped (still in the ISR:
// replica.lag.time.max.ms is long) and the transaction is aborted. The leader must not take its ABORT
// marker as written before the follower has it (acks=all, as Kafka appends markers): it is SIGKILLed and
// the follower, resumed, leads. Had the coordinator completed the abort on the leader's append alone, the
// new leader would hold the transaction open without a marker, and the producer's next transaction on
// the partition would take the aborted record in and commit it: a read_committed consumer (kafkajs)
// would read it. The coordinator must instead write the marker again to the new leader.
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import { startCluster, zookeeperMissing, type TestCluster } from '../harness/index.js'
import { agreed, until } from './ops-helpers.js'

const MISSING = zookeeperMissing()
const TOPIC = 'txn-markers'
const TXN_ID = 'markers-tx'

describe.skipIf(MISSING !== undefined)('a transaction marker across a leader change', () => {
  let cluster: TestCluster
  let paused: number | undefined

  beforeAll(async () => {
    cluster = await startCluster({
      sessionTimeoutMs: 5000,
      overrides: [
        'replica.lag.time.max.ms=60000',
        'auto.leader.rebalance.enable=false',
        'transaction.state.log.num.partitions=1',
        'transaction.state.log.replication.factor=1',
        'transaction.state.log.min.isr=1',
        'offsets.topic.replication.factor=1',
        'group.initial.rebalance.delay.ms=0',
      ],
    })
  }, 120_000)

  afterAll(async () => {
    if (paused !== undefined) cluster?.broker(paused).signal('SIGCONT')
    await cluster?.stop()
  })

  it("keeps an aborted transaction aborted when its partition's leader is lost before the follower had the marker", async () => {
    const kafka = (): Kafka => new Kafka({
      clientId: 'txn-markers',
      brokers: cluster.brokers.filter((b) => b.alive() && b.id !== paused).map((b) => b.bootstrap),
      logLevel: logLevel.NOTHING,
      requestTimeout: 10_000,
      retry: { retries: 30, initialRetryTime: 200, maxRetryTime: 2000 },
    })
    const producer = kafka().producer({ transactionalId: TXN_ID, idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    // The coordinator's broker; the partition goes to the two others, led by the first.
    const c = await cluster.brokers[0]!.client()
    let coordinatorId: number
    try {
      const req = FindCoordinator.createFindCoordinatorRequest({ keyType: 1, coordinatorKeys: [TXN_ID] })
      const res = await c.call(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, req, 4), FindCoordinator.decodeFindCoordinatorResponse)
      expect(res.coordinators[0]!.errorCode).toBe(ErrorCode.NONE)
      coordinatorId = res.coordinators[0]!.nodeId
      const [leaderId, followerId] = cluster.brokers.map((b) => b.id).filter((id) => id !== coordinatorId) as [number, number]
      const topic = CreateTopics.createCreatableTopic({
        name: TOPIC,
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [CreateTopics.createCreatableReplicaAssignment({ partitionIndex: 0, brokerIds: [leaderId, followerId] })],
        configs: [CreateTopics.createCreatableTopicConfig({ name: 'min.insync.replicas', value: '1' })],
      })
      const created = await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [topic] }), 5), CreateTopics.decodeCreateTopicsResponse, 40_000)
      expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE)
      await agreed(cluster, TOPIC, (ps) => ps[0]?.leader === leaderId && ps[0].isr.length === 2, `${TOPIC} led by broker ${leaderId} with its follower in sync`)

      const send = async (value: string, commit: boolean, beforeEnd?: () => Promise<void>): Promise<void> => {
        const txn = await producer.transaction()
        await txn.send({ topic: TOPIC, acks: -1, messages: [{ partition: 0, value }] })
        await beforeEnd?.()
        if (commit) await txn.commit()
        else await txn.abort()
      }
      await send('committed-1', true)
      const follower = cluster.broker(followerId)
      await send('aborted-2', false, async () => {
        // The follower has the record (acks=all); it stops once its parked fetch was answered
        // (replica.fetch.wait.max.ms, 500), so the marker reaches nobody but the leader.
        follower.signal('SIGSTOP')
        paused = followerId
        await new Promise((r) => setTimeout(r, 800))
      })
      await new Promise((r) => setTimeout(r, 1000))
      await cluster.broker(leaderId).kill()
      follower.signal('SIGCONT')
      paused = undefined
      await until(`broker ${followerId} leading ${TOPIC}`, async () => {
        const md = await cluster.broker(coordinatorId).client().then(async (cl) => {
          try {
            return await cl.metadata([TOPIC])
          } finally {
            cl.close()
          }
        })
        return md.topics[0]?.partitions[0]?.leaderId === followerId ? true : undefined
      }, 60_000)
      await send('committed-3', true)
    } finally {
      c.close()
    }
    await producer.disconnect()

    const seen: string[] = []
    const consumer = kafka().consumer({ groupId: 'txn-markers-reader', readUncommitted: false })
    await consumer.connect()
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true })
    await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value!.toString()) })
    await until('the last committed transaction consumed', async () => (seen.includes('committed-3') ? true : undefined), 60_000)
    await consumer.disconnect()
    expect(seen).toEqual(['committed-1', 'committed-3'])
  }, 240_000)
})
