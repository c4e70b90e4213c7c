// Metadata's auto-creation on a broker that has not heard of a topic the cluster already has (its
// UpdateMetadata is still on the way): the broker must not try to create it again. Asked while fewer
// brokers are alive than default.replication.factor, a new creation fails with INVALID_REPLICATION_FACTOR,
// which librdkafka takes as a permanent error for the records it holds (the fault suite's rolling
// restarts saw such failed sends); the topic exists, so the answer is LEADER_NOT_AVAILABLE, which clients
// retry, as Kafka answers a creation that finds the topic there.
// The controller is frozen (SIGSTOP) and the topic written to ZooKeeper behind it, so the other broker's
// image lacks it for as long as the test needs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZkStore } from '../../src/cluster/zk-store.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { startCluster, zookeeperMissing, type TestCluster } from '../harness/index.js'

const MISSING = zookeeperMissing()

describe.skipIf(MISSING !== undefined)(`auto-creation of a topic this broker has not heard of${MISSING === undefined ? '' : ` (skipped: ${MISSING})`}`, () => {
  let cluster: TestCluster
  let store: ZkStore | undefined
  let frozen: number | undefined

  beforeAll(async () => {
    // Two brokers and a default replication factor of 3: any new auto-created topic would fail.
    cluster = await startCluster({ brokerIds: [1, 2], overrides: ['default.replication.factor=3', 'offsets.topic.replication.factor=1'] })
  }, 120_000)

  afterAll(async () => {
    if (frozen !== undefined) cluster.broker(frozen).signal('SIGCONT')
    await store?.close()
    await cluster?.stop()
  })

  it('answers LEADER_NOT_AVAILABLE, not INVALID_REPLICATION_FACTOR, and the topic once its metadata arrives', async () => {
    store = new ZkStore({ connect: cluster.connect, sessionTimeoutMs: 6000, connectionTimeoutMs: 10_000 })
    await store.start()
    const controller = await store.getControllerId()
    const other = controller === 1 ? 2 : 1
    const c = await cluster.broker(other).client()
    try {
      // A genuinely new name fails as Kafka's does: two brokers cannot hold three replicas.
      const fresh = await c.metadata(['never-created'], true)
      expect(fresh.topics[0]!.errorCode).toBe(ErrorCode.INVALID_REPLICATION_FACTOR)

      cluster.broker(controller).signal('SIGSTOP')
      frozen = controller
      await store.createTopic({ name: 'behind-its-back', topicId: 'AAAAAAAAAAAAAAAAAAAABQ', partitions: [{ replicas: [other], addingReplicas: [], removingReplicas: [] }] }, {})
      const stale = await c.metadata(['behind-its-back'], true)
      expect(stale.topics[0]!.errorCode).toBe(ErrorCode.LEADER_NOT_AVAILABLE)

      cluster.broker(controller).signal('SIGCONT')
      frozen = undefined
      // The controller wakes, sees the new topic and tells the brokers: the same request now answers it.
      let last = -1
      for (const until = Date.now() + 20_000; Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
        const res = await c.metadata(['behind-its-back'], true)
        last = res.topics[0]!.errorCode
        if (last === ErrorCode.NONE && res.topics[0]!.partitions[0]!.leaderId === other) break
      }
      expect(last).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
  })
})
