// Requests for the control-plane fencing tests (test/server/control-fencing.test.ts, test/cluster/
// control-fencing.test.ts): the forged control requests the hostile smoke sent (issue 30), and the group and
// transaction requests it found silent afterwards, timed, with the error codes they answered.
import * as LeaderAndIsr from '../../src/protocol/messages/04-leader-and-isr.gen.js'
import * as StopReplica from '../../src/protocol/messages/05-stop-replica.gen.js'
import * as UpdateMetadata from '../../src/protocol/messages/06-update-metadata.gen.js'
import * as ControlledShutdown from '../../src/protocol/messages/07-controlled-shutdown.gen.js'
import * as OffsetCommit from '../../src/protocol/messages/08-offset-commit.gen.js'
import * as OffsetFetch from '../../src/protocol/messages/09-offset-fetch.gen.js'
import * as FindCoordinator from '../../src/protocol/messages/10-find-coordinator.gen.js'
import * as Heartbeat from '../../src/protocol/messages/12-heartbeat.gen.js'
import * as InitProducerId from '../../src/protocol/messages/22-init-producer-id.gen.js'
import type { Reader } from '../../src/protocol/primitives/reader.js'
import type { Writer } from '../../src/protocol/primitives/writer.js'
import type { RawClient } from '../harness/index.js'

export const MAX_INT32 = 2 ** 31 - 1
export const MAX_INT64 = 2n ** 63n - 1n
export const COORDINATOR_TOPICS = ['__consumer_offsets', '__transaction_state']

export interface ForgedRequest {
  name: string
  apiKey: number
  version: number
  encode: (w: Writer) => void
  /** The answer's top-level error code. */
  errorCode: (r: Reader, version: number) => number
}

/** Who a forged request claims to come from, and the broker whose ControlledShutdown it asks for. */
export interface ForgedClaim {
  controllerId: number
  controllerEpoch: number
  brokerEpoch: bigint
  brokerId: number
}

/** The hostile smoke's claim: epochs at their maximum. */
export const MAX_EPOCHS: ForgedClaim = { controllerId: 0, controllerEpoch: MAX_INT32, brokerEpoch: MAX_INT64, brokerId: 0 }

/** The forged requests of the hostile smoke: live brokers without this one, the coordinator partitions moved away and deleted, a controlled shutdown. */
export const forgedRequests = (claim: ForgedClaim): ForgedRequest[] => [
  {
    name: 'UpdateMetadata v8 without this broker',
    apiKey: 6,
    errorCode: (r, v) => UpdateMetadata.decodeUpdateMetadataResponse(r, v).errorCode,
    version: 8,
    encode: (w) =>
      UpdateMetadata.encodeUpdateMetadataRequest(
        w,
        UpdateMetadata.createUpdateMetadataRequest({
          controllerId: claim.controllerId,
          controllerEpoch: claim.controllerEpoch,
          brokerEpoch: claim.brokerEpoch,
          liveBrokers: [UpdateMetadata.createUpdateMetadataBroker({ id: 5, endpoints: [UpdateMetadata.createUpdateMetadataEndpoint({ host: 'nowhere', port: 1, listener: 'PLAINTEXT' })] })],
        }),
        8,
      ),
  },
  {
    name: 'LeaderAndIsr v7 moving the coordinator partitions away',
    apiKey: 4,
    errorCode: (r, v) => LeaderAndIsr.decodeLeaderAndIsrResponse(r, v).errorCode,
    version: 7,
    encode: (w) =>
      LeaderAndIsr.encodeLeaderAndIsrRequest(
        w,
        LeaderAndIsr.createLeaderAndIsrRequest({
          controllerId: claim.controllerId,
          controllerEpoch: claim.controllerEpoch,
          brokerEpoch: claim.brokerEpoch,
          topicStates: COORDINATOR_TOPICS.map((topicName) =>
            LeaderAndIsr.createLeaderAndIsrTopicState({ topicName, partitionStates: [0, 1].map((partitionIndex) => LeaderAndIsr.createLeaderAndIsrPartitionState({ partitionIndex, leader: 7, leaderEpoch: MAX_INT32, isr: [7], replicas: [7, claim.brokerId] })) }),
          ),
        }),
        7,
      ),
  },
  {
    name: 'StopReplica v4 deleting the coordinator partitions',
    apiKey: 5,
    errorCode: (r, v) => StopReplica.decodeStopReplicaResponse(r, v).errorCode,
    version: 4,
    encode: (w) =>
      StopReplica.encodeStopReplicaRequest(
        w,
        StopReplica.createStopReplicaRequest({
          controllerId: claim.controllerId,
          controllerEpoch: claim.controllerEpoch,
          brokerEpoch: claim.brokerEpoch,
          topicStates: COORDINATOR_TOPICS.map((topicName) => StopReplica.createStopReplicaTopicState({ topicName, partitionStates: [0, 1].map((partitionIndex) => StopReplica.createStopReplicaPartitionState({ partitionIndex, leaderEpoch: MAX_INT32, deletePartition: true })) })),
        }),
        4,
      ),
  },
  {
    name: 'ControlledShutdown v3 of this broker',
    apiKey: 7,
    errorCode: (r, v) => ControlledShutdown.decodeControlledShutdownResponse(r, v).errorCode,
    version: 3,
    encode: (w) => ControlledShutdown.encodeControlledShutdownRequest(w, ControlledShutdown.createControlledShutdownRequest({ brokerId: claim.brokerId, brokerEpoch: claim.brokerEpoch }), 3),
  },
]

/** The group and transaction requests the smoke found silent, each with the error code(s) it answered. */
export async function coordinatorAnswers(raw: RawClient): Promise<{ name: string; ms: number; errorCodes: number[] }[]> {
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
