// A client cannot act as the controller of a ZooKeeper cluster's brokers (issue 30). Two brokers on
// ZooKeeper; every forged control request is sent to each broker: max-valued epochs (the hostile smoke's),
// the real controller with an epoch ahead of ZooKeeper's, another broker claiming to be the controller at
// the current epoch, versions without a broker epoch — each of them with the broker's real epoch too, as
// if an attacker knew it. Each is refused with Kafka's code (STALE_BROKER_EPOCH, STALE_CONTROLLER_EPOCH)
// and changes nothing: both brokers still list both, lead what they led, the group and transaction
// coordinators answer as before within a second, and the real controller's requests still apply (a
// topic created afterwards reaches both brokers; a broker killed and restarted gets its leaderships back
// through LeaderAndIsr at a new broker epoch).
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZooKeeperClient } from '../../src/cluster/zookeeper/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import * as ControlledShutdown from '../../src/protocol/messages/07-controlled-shutdown.gen.js'
import * as LeaderAndIsr from '../../src/protocol/messages/04-leader-and-isr.gen.js'
import * as UpdateMetadata from '../../src/protocol/messages/06-update-metadata.gen.js'
import * as CreateTopics from '../../src/protocol/messages/19-create-topics.gen.js'
import { startCluster, zookeeperMissing, type ClusterBroker, type RawClient, type TestCluster } from '../harness/index.js'
import { until } from '../harness/cluster-views.js'
import { MAX_EPOCHS, MAX_INT64, coordinatorAnswers, forgedRequests, type ForgedClaim } from '../server/control-probes.js'

const MISSING = zookeeperMissing()

async function createTopic(c: RawClient, name: string, partitions: number, replicationFactor: number): Promise<number> {
  const req = CreateTopics.createCreateTopicsRequest({ timeoutMs: 30_000, topics: [CreateTopics.createCreatableTopic({ name, numPartitions: partitions, replicationFactor })] })
  return (await c.call(19, 5, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, 5), CreateTopics.decodeCreateTopicsResponse, 40_000)).topics[0]!.errorCode
}

/** What a broker says about the cluster: brokers, controller and each partition's leader, epoch and ISR. */
async function viewFrom(b: ClusterBroker, topics: string[]): Promise<string> {
  const c = await b.client()
  try {
    const md = await c.metadata(topics)
    const partitions = md.topics
      .map((t) => `${t.name}:${t.errorCode}:${t.partitions.map((p) => `${p.partitionIndex}/${p.leaderId}/${p.leaderEpoch}/${[...p.isrNodes].sort()}`).sort().join(',')}`)
      .sort()
    return JSON.stringify({ brokers: md.brokers.map((x) => x.nodeId).sort(), controllerId: md.controllerId, partitions })
  } finally {
    c.close()
  }
}

/** Whether a broker says every partition of the topics has a leader and both brokers in its ISR. */
async function inSync(b: ClusterBroker, topics: string[]): Promise<boolean> {
  const c = await b.client()
  try {
    const md = await c.metadata(topics)
    return md.topics.length === topics.length && md.topics.every((t) => t.errorCode === ErrorCode.NONE && t.partitions.length > 0 && t.partitions.every((p) => p.leaderId > 0 && [...p.isrNodes].sort().join() === '1,2'))
  } finally {
    c.close()
  }
}

describe.skipIf(MISSING !== undefined)('a ZooKeeper cluster admits control requests only from its active controller', () => {
  let cluster: TestCluster
  let zk: ZooKeeperClient

  beforeAll(async () => {
    cluster = await startCluster({
      brokerIds: [1, 2],
      overrides: ['offsets.topic.num.partitions=2', 'offsets.topic.replication.factor=2', 'transaction.state.log.num.partitions=2', 'transaction.state.log.replication.factor=2', 'transaction.state.log.min.isr=1'],
    })
    zk = await ZooKeeperClient.connect(cluster.connect)
  }, 120_000)

  afterAll(async () => {
    await zk?.close()
    await cluster?.stop()
  })

  const controllerEpoch = async (): Promise<number> => Number((await zk.getData('/controller_epoch')).data.toString())
  const controllerId = async (): Promise<number> => (JSON.parse((await zk.getData('/controller')).data.toString('utf8')) as { brokerid: number }).brokerid
  const brokerEpoch = async (id: number): Promise<bigint> => (await zk.exists(`/brokers/ids/${id}`))!.czxid

  it('refuses every forged control request, and the brokers and their coordinators carry on as before', async () => {
    const c1 = await cluster.broker(1).client()
    try {
      expect(await createTopic(c1, 't', 2, 2)).toBe(ErrorCode.NONE)
    } finally {
      c1.close()
    }
    const topics = ['t', '__consumer_offsets', '__transaction_state']
    // Both brokers' coordinators started (the first requests create their topics), answers as they are now.
    const before = new Map<number, Record<string, number[]>>()
    for (const b of cluster.brokers) {
      const c = await b.client()
      try {
        const answers = await until(`broker ${b.id}'s coordinators to start`, async () => {
          const a = await coordinatorAnswers(c)
          return a.some((x) => x.errorCodes.includes(ErrorCode.COORDINATOR_NOT_AVAILABLE) || x.errorCodes.includes(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)) ? undefined : a
        })
        before.set(b.id, Object.fromEntries(answers.map((a) => [a.name, a.errorCodes])))
      } finally {
        c.close()
      }
    }
    const viewBefore = await until('both brokers to agree', async () => {
      const [v1, v2] = await Promise.all(cluster.brokers.map((b) => viewFrom(b, topics)))
      return v1 === v2 && v1!.includes('"brokers":[1,2]') ? v1 : undefined
    })

    const active = await controllerId()
    const epoch = await controllerEpoch()
    const other = (id: number) => (id === 1 ? 2 : 1)
    for (const b of cluster.brokers) {
      const ownEpoch = await brokerEpoch(b.id)
      const claims: { what: string; claim: ForgedClaim; expected: number }[] = [
        { what: 'max epochs', claim: { ...MAX_EPOCHS, controllerId: active, brokerId: b.id }, expected: ErrorCode.STALE_BROKER_EPOCH },
        { what: 'an unknown broker epoch', claim: { controllerId: active, controllerEpoch: epoch, brokerEpoch: ownEpoch + 1n, brokerId: b.id }, expected: ErrorCode.STALE_BROKER_EPOCH },
        { what: 'the controller one epoch ahead', claim: { controllerId: active, controllerEpoch: epoch + 1, brokerEpoch: ownEpoch, brokerId: b.id }, expected: ErrorCode.STALE_CONTROLLER_EPOCH },
        { what: 'max controller epoch', claim: { controllerId: active, controllerEpoch: MAX_EPOCHS.controllerEpoch, brokerEpoch: ownEpoch, brokerId: b.id }, expected: ErrorCode.STALE_CONTROLLER_EPOCH },
        { what: 'another broker as controller', claim: { controllerId: other(active), controllerEpoch: epoch, brokerEpoch: ownEpoch, brokerId: b.id }, expected: ErrorCode.STALE_CONTROLLER_EPOCH },
        { what: 'an older controller epoch', claim: { controllerId: active, controllerEpoch: epoch - 1, brokerEpoch: ownEpoch, brokerId: b.id }, expected: ErrorCode.STALE_CONTROLLER_EPOCH },
      ]
      const c = await b.client()
      try {
        for (const { what, claim, expected } of claims) {
          for (const forged of forgedRequests(claim)) {
            if (forged.apiKey === 7 && claim.brokerEpoch === ownEpoch) continue
            const errorCode = await c.call(forged.apiKey, forged.version, forged.encode, forged.errorCode)
            if (forged.apiKey === 7) {
              // ControlledShutdown goes to the controller (NOT_CONTROLLER elsewhere), which takes it only with
              // the exact epoch of the broker named: that epoch is what tells the broker from a client, so
              // a claim that knows it is the broker itself, and is not sent.
              expect(errorCode, `${forged.name} (${what}) to broker ${b.id}`).toBe(b.id !== active ? ErrorCode.NOT_CONTROLLER : ErrorCode.STALE_BROKER_EPOCH)
              continue
            }
            expect(errorCode, `${forged.name} (${what}) to broker ${b.id}`).toBe(expected)
          }
        }
        // Versions without a broker epoch: LeaderAndIsr v1, UpdateMetadata v4, ControlledShutdown v1 (of the other broker, to the controller).
        const lai = LeaderAndIsr.createLeaderAndIsrRequest({ controllerId: active, controllerEpoch: epoch, ungroupedPartitionStates: [LeaderAndIsr.createLeaderAndIsrPartitionState({ topicName: 't', partitionIndex: 0, leader: 7, leaderEpoch: 1000, isr: [7], replicas: [7, b.id] })] })
        expect((await c.call(4, 1, (w) => LeaderAndIsr.encodeLeaderAndIsrRequest(w, lai, 1), LeaderAndIsr.decodeLeaderAndIsrResponse)).errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH)
        const um = UpdateMetadata.createUpdateMetadataRequest({ controllerId: active, controllerEpoch: epoch })
        expect((await c.call(6, 4, (w) => UpdateMetadata.encodeUpdateMetadataRequest(w, um, 4), UpdateMetadata.decodeUpdateMetadataResponse)).errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH)
        if (b.id === active) {
          const cs = ControlledShutdown.createControlledShutdownRequest({ brokerId: other(active) })
          expect((await c.call(7, 1, (w) => ControlledShutdown.encodeControlledShutdownRequest(w, cs, 1), ControlledShutdown.decodeControlledShutdownResponse)).errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH)
          const max = ControlledShutdown.createControlledShutdownRequest({ brokerId: other(active), brokerEpoch: MAX_INT64 })
          expect((await c.call(7, 3, (w) => ControlledShutdown.encodeControlledShutdownRequest(w, max, 3), ControlledShutdown.decodeControlledShutdownResponse)).errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH)
        }
      } finally {
        c.close()
      }
    }

    // Nothing changed, and the coordinators answer as before, at once.
    for (const b of cluster.brokers) expect(JSON.parse(await viewFrom(b, topics)), `broker ${b.id}'s view`).toEqual(JSON.parse(viewBefore))
    for (const b of cluster.brokers) {
      const c = await b.client()
      try {
        const answers = await coordinatorAnswers(c)
        for (const a of answers) expect(a.ms, `${a.name} to broker ${b.id} took ${a.ms.toFixed(0)} ms`).toBeLessThan(1000)
        expect(Object.fromEntries(answers.map((a) => [a.name, a.errorCodes]))).toEqual(before.get(b.id))
      } finally {
        c.close()
      }
    }
  }, 120_000)

  it("still applies the real controller's requests: a new topic reaches both brokers, a restarted broker leads again at its new broker epoch", async () => {
    const c = await cluster.broker(1).client()
    try {
      expect(await createTopic(c, 'after', 2, 2)).toBe(ErrorCode.NONE)
    } finally {
      c.close()
    }
    await until('both brokers to see the new topic led, both replicas in sync', async () => ((await Promise.all(cluster.brokers.map((b) => inSync(b, ['after'])))).every(Boolean) ? true : undefined))
    // The broker that is not the controller dies and comes back: a new registration (broker epoch), and
    // the controller's LeaderAndIsr and UpdateMetadata at that epoch are admitted.
    const follower = cluster.broker((await controllerId()) === 1 ? 2 : 1)
    const epochBefore = await brokerEpoch(follower.id)
    await follower.kill()
    await follower.start()
    expect(await brokerEpoch(follower.id)).toBeGreaterThan(epochBefore)
    await until('the restarted broker back in every ISR, as both brokers say', async () => ((await Promise.all(cluster.brokers.map((b) => inSync(b, ['after', 't'])))).every(Boolean) ? true : undefined), 60_000)
  }, 120_000)
})
