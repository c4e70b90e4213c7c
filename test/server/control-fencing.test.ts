// A client cannot act as the controller of a broker without ZooKeeper (issue 30): LeaderAndIsr,
// StopReplica, UpdateMetadata and ControlledShutdown are not advertised and close the connection, so
// the forged requests the hostile suite found (live brokers leaving this broker out, max-valued epochs)
// change nothing. And whatever the partition state (here set in process, as the controller does), the
// group and transaction coordinators answer within a second: before, a first group request after the
// metadata lost this broker waited 30 s for __consumer_offsets to get leaders it could never get.
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as LeaderAndIsr from '../../src/protocol/messages/04-leader-and-isr.gen.js'
import * as StopReplica from '../../src/protocol/messages/05-stop-replica.gen.js'
import * as UpdateMetadata from '../../src/protocol/messages/06-update-metadata.gen.js'
import * as ControlledShutdown from '../../src/protocol/messages/07-controlled-shutdown.gen.js'
import * as OffsetCommit from '../../src/protocol/messages/08-offset-commit.gen.js'
import * as OffsetFetch from '../../src/protocol/messages/09-offset-fetch.gen.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import * as Heartbeat from '../../src/protocol/messages/12-heartbeat.gen.js'
import * as InitProducerId from '../../src/protocol/messages/22-init-producer-id.gen.js'
import type { Writer } from '../../src/protocol/primitives/writer.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

const MAX_INT32 = 2 ** 31 - 1
const MAX_INT64 = 2n ** 63n - 1n
const COORDINATOR_TOPICS = ['__consumer_offsets', '__transaction_state']

let tb: TestBroker | undefined
afterEach(async () => {
  await tb?.stop()
  tb = undefined
})

/** The forged requests of the hostile smoke: epochs at their maximum, live brokers without this one. */
const FORGED: { name: string; apiKey: number; version: number; encode: (w: Writer) => void }[] = [
  {
    name: 'UpdateMetadata v8 without this broker',
    apiKey: 6,
    version: 8,
    encode: (w) =>
      UpdateMetadata.encodeUpdateMetadataRequest(
        w,
        UpdateMetadata.createUpdateMetadataRequest({
          controllerId: 0,
          controllerEpoch: MAX_INT32,
          brokerEpoch: MAX_INT64,
          liveBrokers: [UpdateMetadata.createUpdateMetadataBroker({ id: 5, endpoints: [UpdateMetadata.createUpdateMetadataEndpoint({ host: 'nowhere', port: 1, listener: 'PLAINTEXT' })] })],
        }),
        8,
      ),
  },
  {
    name: 'LeaderAndIsr v7 moving the coordinator partitions away',
    apiKey: 4,
    version: 7,
    encode: (w) =>
      LeaderAndIsr.encodeLeaderAndIsrRequest(
        w,
        LeaderAndIsr.createLeaderAndIsrRequest({
          controllerId: 0,
          controllerEpoch: MAX_INT32,
          brokerEpoch: MAX_INT64,
          topicStates: COORDINATOR_TOPICS.map((topicName) =>
            LeaderAndIsr.createLeaderAndIsrTopicState({ topicName, partitionStates: [0, 1].map((partitionIndex) => LeaderAndIsr.createLeaderAndIsrPartitionState({ partitionIndex, leader: 7, leaderEpoch: MAX_INT32, isr: [7], replicas: [7, 0] })) }),
          ),
        }),
        7,
      ),
  },
  {
    name: 'StopReplica v4 deleting the coordinator partitions',
    apiKey: 5,
    version: 4,
    encode: (w) =>
      StopReplica.encodeStopReplicaRequest(
        w,
        StopReplica.createStopReplicaRequest({
          controllerId: 0,
          controllerEpoch: MAX_INT32,
          brokerEpoch: MAX_INT64,
          topicStates: COORDINATOR_TOPICS.map((topicName) => StopReplica.createStopReplicaTopicState({ topicName, partitionStates: [0, 1].map((partitionIndex) => StopReplica.createStopReplicaPartitionState({ partitionIndex, leaderEpoch: MAX_INT32, deletePartition: true })) })),
        }),
        4,
      ),
  },
  {
    name: 'ControlledShutdown v3 of this broker',
    apiKey: 7,
    version: 3,
    encode: (w) => ControlledShutdown.encodeControlledShutdownRequest(w, ControlledShutdown.createControlledShutdownRequest({ brokerId: 0, brokerEpoch: MAX_INT64 }), 3),
  },
]

/** The group and transaction requests the smoke found silent, each with the error code(s) it answered. */
async function coordinatorAnswers(raw: RawClient): Promise<{ name: string; ms: number; errorCodes: number[] }[]> {
  const timed = async (name: string, call: () => Promise<number[]>) => {
    const start = performance.now()
    const errorCodes = await call()
    return { name, ms: performance.now() - start, errorCodes }
  }
  return [
    await timed('OffsetCommit', async () => {
      const req = OffsetCommit.createOffsetCommitRequest({ groupId: 'g', generationIdOrMemberEpoch: -1, topics: [OffsetCommit.createOffsetCommitRequestTopic({ name: 't', partitions: [OffsetCommit.createOffsetCommitRequestPartition({ partitionIndex: 0, committedOffset: 1n })] })] })
      const res = await raw.call(8, 8, (w) => OffsetCommit.encodeOffsetCommitRequest(w, req, 8), OffsetCommit.decodeOffsetCommitResponse, 5000)
      return res.topics.flatMap((t) => t.partitions.map((p) => p.errorCode))
    }),
    await timed('OffsetFetch', async () => {
      const req = OffsetFetch.createOffsetFetchRequest({ groupId: 'g', topics: [OffsetFetch.createOffsetFetchRequestTopic({ name: 't', partitionIndexes: [0] })] })
      const res = await raw.call(9, 7, (w) => OffsetFetch.encodeOffsetFetchRequest(w, req, 7), OffsetFetch.decodeOffsetFetchResponse, 5000)
      return [res.errorCode, ...res.topics.flatMap((t) => t.partitions.map((p) => p.errorCode))]
    }),
    await timed('Heartbeat', async () => {
      const req = Heartbeat.createHeartbeatRequest({ groupId: 'g', generationId: 1, memberId: 'nobody' })
      return [(await raw.call(12, 4, (w) => Heartbeat.encodeHeartbeatRequest(w, req, 4), Heartbeat.decodeHeartbeatResponse, 5000)).errorCode]
    }),
    await timed('InitProducerId', async () => {
      const req = InitProducerId.createInitProducerIdRequest({ transactionalId: 'tx', transactionTimeoutMs: 60_000 })
      return [(await raw.call(22, 3, (w) => InitProducerId.encodeInitProducerIdRequest(w, req, 3), InitProducerId.decodeInitProducerIdResponse, 5000)).errorCode]
    }),
    await timed('FindCoordinator', async () => {
      const req = FindCoordinator.createFindCoordinatorRequest({ key: 'g', keyType: 0 })
      return [(await raw.call(10, 3, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, req, 3), FindCoordinator.decodeFindCoordinatorResponse, 5000)).errorCode]
    }),
  ]
}

describe('a broker without ZooKeeper and the control plane', () => {
  it('does not advertise LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown and closes the connection of a client that sends one', async () => {
    tb = await startTestBroker(['offsets.topic.num.partitions=2', 'transaction.state.log.num.partitions=2'])
    const probe = await RawClient.connect(tb.host, tb.port)
    const advertised = new Set((await probe.apiVersions()).apiKeys.map((k) => k.apiKey))
    probe.close()
    for (const key of [4, 5, 6, 7]) expect(advertised.has(key)).toBe(false)
    expect(advertised.has(8)).toBe(true)

    for (const forged of FORGED) {
      const raw = await RawClient.connect(tb.host, tb.port)
      const { correlationId, bytes } = raw.frame(forged.apiKey, forged.version, forged.encode)
      await raw.write(bytes)
      await expect(raw.waitFor(correlationId, 5000), forged.name).rejects.toThrow(/closed/)
      raw.close()
    }

    // Nothing changed: this broker is still the live broker its metadata lists, and leads what it led.
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      expect((await raw.createTopic('t', 1)).errorCode).toBe(ErrorCode.NONE)
      const md = await raw.metadata(['t'])
      expect(md.brokers.map((b) => b.nodeId)).toEqual([0])
      expect(md.topics[0]!.partitions[0]!.leaderId).toBe(0)
      const answers = await coordinatorAnswers(raw)
      for (const a of answers) expect(a.ms, `${a.name} took ${a.ms.toFixed(0)} ms`).toBeLessThan(1000)
      const codes = Object.fromEntries(answers.map((a) => [a.name, a.errorCodes]))
      expect(codes).toEqual({
        OffsetCommit: [ErrorCode.NONE],
        OffsetFetch: [ErrorCode.NONE, ErrorCode.NONE],
        Heartbeat: [ErrorCode.UNKNOWN_MEMBER_ID],
        InitProducerId: [ErrorCode.NONE],
        FindCoordinator: [ErrorCode.NONE],
      })
    } finally {
      raw.close()
    }
  })

  it('answers group and transaction requests within a second after the metadata lost this broker (before: silent 20 s and more)', async () => {
    tb = await startTestBroker(['offsets.topic.num.partitions=2', 'transaction.state.log.num.partitions=2'])
    const b = tb.broker
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      expect((await raw.createTopic('t', 1)).errorCode).toBe(ErrorCode.NONE)
      // What the forged UpdateMetadata did, now only possible in process: the live brokers leave this one
      // out, so __consumer_offsets and __transaction_state, created on first use, can get no leader.
      const lost = await b.controlPlane.updateMetadata(
        UpdateMetadata.createUpdateMetadataRequest({
          controllerId: b.nodeId,
          controllerEpoch: b.ownController.epoch,
          brokerEpoch: b.controlPlane.brokerEpoch,
          liveBrokers: [UpdateMetadata.createUpdateMetadataBroker({ id: 5, endpoints: [UpdateMetadata.createUpdateMetadataEndpoint({ host: 'nowhere', port: 1, listener: 'PLAINTEXT' })] })],
        }),
      )
      expect(lost.errorCode).toBe(ErrorCode.NONE)
      const answers = await coordinatorAnswers(raw)
      for (const a of answers) expect(a.ms, `${a.name} took ${a.ms.toFixed(0)} ms`).toBeLessThan(1000)
      const codes = Object.fromEntries(answers.map((a) => [a.name, a.errorCodes]))
      expect(codes).toEqual({
        OffsetCommit: [ErrorCode.COORDINATOR_NOT_AVAILABLE],
        OffsetFetch: [ErrorCode.COORDINATOR_NOT_AVAILABLE],
        Heartbeat: [ErrorCode.COORDINATOR_NOT_AVAILABLE],
        InitProducerId: [ErrorCode.COORDINATOR_NOT_AVAILABLE],
        FindCoordinator: [ErrorCode.COORDINATOR_NOT_AVAILABLE],
      })
    } finally {
      raw.close()
    }
  })

  it('answers NOT_COORDINATOR at once for coordinator partitions the controller moved away', async () => {
    tb = await startTestBroker(['offsets.topic.num.partitions=2', 'transaction.state.log.num.partitions=2'])
    const b = tb.broker
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      expect((await raw.createTopic('t', 1)).errorCode).toBe(ErrorCode.NONE)
      expect((await coordinatorAnswers(raw)).every((a) => a.errorCodes.every((c) => c === ErrorCode.NONE || c === ErrorCode.UNKNOWN_MEMBER_ID))).toBe(true)
      const moved = await b.controlPlane.leaderAndIsr(
        LeaderAndIsr.createLeaderAndIsrRequest({
          controllerId: b.nodeId,
          controllerEpoch: b.ownController.epoch,
          brokerEpoch: b.controlPlane.brokerEpoch,
          topicStates: COORDINATOR_TOPICS.map((topicName) =>
            LeaderAndIsr.createLeaderAndIsrTopicState({ topicName, partitionStates: [0, 1].map((partitionIndex) => LeaderAndIsr.createLeaderAndIsrPartitionState({ partitionIndex, leader: 7, leaderEpoch: 100, isr: [7, 0], replicas: [7, 0] })) }),
          ),
        }),
      )
      expect(moved.partitionErrors.map((e) => e.errorCode)).toEqual([0, 0, 0, 0])
      const answers = await coordinatorAnswers(raw)
      for (const a of answers) expect(a.ms, `${a.name} took ${a.ms.toFixed(0)} ms`).toBeLessThan(1000)
      const codes = Object.fromEntries(answers.map((a) => [a.name, a.errorCodes]))
      expect(codes).toMatchObject({ OffsetCommit: [ErrorCode.NOT_COORDINATOR], Heartbeat: [ErrorCode.NOT_COORDINATOR], InitProducerId: [ErrorCode.NOT_COORDINATOR] })
    } finally {
      raw.close()
    }
  })
})
