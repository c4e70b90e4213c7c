// A client cannot act as the controller of a broker without ZooKeeper (issue 30): LeaderAndIsr,
// StopReplica, UpdateMetadata and ControlledShutdown are not advertised and close the connection, so
// the forged requests the hostile suite found (live brokers leaving this broker out, max-valued epochs)
// change nothing. And whatever the partition state (here set in process, as the controller does), the
// group and transaction coordinators answer within a second: before, a first group request after the
// metadata lost this broker waited 30 s for __consumer_offsets to get leaders it could never get.
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as LeaderAndIsr from '../../src/protocol/messages/04-leader-and-isr.gen.js'
import * as UpdateMetadata from '../../src/protocol/messages/06-update-metadata.gen.js'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'
import { COORDINATOR_TOPICS, MAX_EPOCHS, coordinatorAnswers, forgedRequests } from './control-probes.js'

let tb: TestBroker | undefined
afterEach(async () => {
  await tb?.stop()
  tb = undefined
})

describe('a broker without ZooKeeper and the control plane', () => {
  it('does not advertise LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown and closes the connection of a client that sends one', async () => {
    tb = await startTestBroker(['offsets.topic.num.partitions=2', 'transaction.state.log.num.partitions=2'])
    const probe = await RawClient.connect(tb.host, tb.port)
    const advertised = new Set((await probe.apiVersions()).apiKeys.map((k) => k.apiKey))
    probe.close()
    for (const key of [4, 5, 6, 7]) expect(advertised.has(key)).toBe(false)
    expect(advertised.has(8)).toBe(true)

    for (const forged of forgedRequests(MAX_EPOCHS)) {
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
