// A broker without ZooKeeper runs the same controller over the embedded store: it registers, wins the
// election (a new controller epoch per start), and leads every partition at the epoch stored for it. A
// data dir of Skein before clusters (cluster-metadata.json version 1) is upgraded in place and keeps its
// topics, configs and data; the control-plane requests are fenced by epoch here too.
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as LeaderAndIsr from '../../src/protocol/messages/04-leader-and-isr.gen.js'
import * as StopReplica from '../../src/protocol/messages/05-stop-replica.gen.js'
import * as AlterPartition from '../../src/protocol/messages/56-alter-partition.gen.js'
import { RawClient, simpleBatch, startTestBroker, tempDataDir, type TestBroker } from '../harness/index.js'

let tb: TestBroker | undefined
afterEach(async () => {
  await tb?.stop()
  tb = undefined
})

describe('a broker without ZooKeeper', () => {
  it('upgrades a version 1 cluster-metadata.json and keeps topics, configs and data; controller epoch grows per start', async () => {
    const dataDir = tempDataDir('embedded-upgrade')
    // A data dir as Skein wrote it before clusters: the v1 file, and a partition directory.
    const first = await startTestBroker([], { dataDir })
    const raw0 = await RawClient.connect(first.host, first.port)
    expect((await raw0.createTopic('legacy', 2, { 'retention.ms': '600000' })).errorCode).toBe(0)
    expect((await raw0.produce('legacy', 1, simpleBatch('v', 4))).errorCode).toBe(0)
    raw0.close()
    const topicId = first.broker.topics.get('legacy')!.topicId
    await first.stop({ keepData: true })
    writeFileSync(
      join(dataDir, 'cluster-metadata.json'),
      JSON.stringify({
        version: 1,
        topics: [{ name: 'legacy', topicId, partitions: 2, replicationFactor: 1, configs: { 'retention.ms': '600000' }, createdAt: 1 }],
        brokerConfigs: { perBroker: { 'log.retention.bytes': '2097152' }, clusterDefault: {} },
      }),
    )

    tb = await startTestBroker([], { dataDir })
    const b = tb.broker
    const onDisk = JSON.parse(readFileSync(join(dataDir, 'cluster-metadata.json'), 'utf8'))
    expect(onDisk.version).toBe(2)
    expect(b.topics.get('legacy')).toMatchObject({ topicId, partitions: 2, configs: { 'retention.ms': '600000' } })
    expect(b.config.getInt('log.retention.bytes')).toBe(2097152)
    expect(b.metadata.controllerId).toBe(b.nodeId)
    expect(b.ownController.isActive).toBe(true)
    const epochAfterUpgrade = b.ownController.epoch
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      const md = await raw.metadata(['legacy'])
      expect(md.controllerId).toBe(b.nodeId)
      expect(md.topics[0]!.partitions.map((p) => [p.leaderId, p.leaderEpoch, p.replicaNodes, p.isrNodes])).toEqual([
        [0, 0, [0], [0]],
        [0, 0, [0], [0]],
      ])
      const fetched = await raw.fetch('legacy', 1, 0)
      expect(fetched.errorCode).toBe(0)
      expect(fetched.highWatermark).toBe(4n)
    } finally {
      raw.close()
    }
    tb = await tb.restart()
    expect(tb.broker.ownController.epoch).toBe(epochAfterUpgrade + 1)
    expect(tb.broker.partitions.hosted('legacy', 0)).toMatchObject({ isLeader: true, leaderEpoch: 0 })
  })

  it('fences its controller\'s requests by controller epoch and broker epoch, and answers AlterPartition and ControlledShutdown as the controller', async () => {
    tb = await startTestBroker()
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      expect((await raw.createTopic('t', 1)).errorCode).toBe(0)
      const b = tb.broker
      const epoch = b.ownController.epoch
      const brokerEpoch = b.controlPlane.brokerEpoch
      const lai = (controllerEpoch: number, be: bigint, leaderEpoch: number) =>
        LeaderAndIsr.createLeaderAndIsrRequest({
          controllerId: 0,
          controllerEpoch,
          brokerEpoch: be,
          topicStates: [LeaderAndIsr.createLeaderAndIsrTopicState({ topicName: 't', partitionStates: [LeaderAndIsr.createLeaderAndIsrPartitionState({ partitionIndex: 0, leader: 7, leaderEpoch, isr: [7, 0], replicas: [7, 0] })] })],
        })
      // The control plane's requests come from the controller in this process (the network does not
      // serve them here: test/server/control-fencing.test.ts); its own fencing applies to them too.
      const send = (req: LeaderAndIsr.LeaderAndIsrRequest) => b.controlPlane.leaderAndIsr(req)
      expect((await send(lai(epoch - 1, brokerEpoch, 5))).errorCode).toBe(ErrorCode.STALE_CONTROLLER_EPOCH)
      expect((await send(lai(epoch, brokerEpoch - 1n, 5))).errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH)
      // Same leader epoch as the broker's: not applied (Kafka's answer), the broker still leads.
      const same = await send(lai(epoch, brokerEpoch, 0))
      expect(same.partitionErrors[0]).toMatchObject({ topic: 't', errorCode: ErrorCode.STALE_CONTROLLER_EPOCH })
      expect((await raw.produce('t', 0, simpleBatch('x', 1))).errorCode).toBe(ErrorCode.NONE)
      // A StopReplica with an older leader epoch is fenced; -1 (not given) applies.
      const sr = (leaderEpoch: number) =>
        StopReplica.createStopReplicaRequest({
          controllerId: 0,
          controllerEpoch: epoch,
          brokerEpoch,
          topicStates: [StopReplica.createStopReplicaTopicState({ topicName: 't', partitionStates: [StopReplica.createStopReplicaPartitionState({ partitionIndex: 0, leaderEpoch, deletePartition: false })] })],
        })
      const stop = (req: StopReplica.StopReplicaRequest) => b.controlPlane.stopReplica(req)
      expect((await stop(sr(-3))).partitionErrors[0]).toMatchObject({ topic: 't', partition: 0, errorCode: ErrorCode.FENCED_LEADER_EPOCH })
      expect(b.partitions.leaderError('t', 0)).toBe(ErrorCode.NONE)
      expect((await stop(sr(-1))).partitionErrors[0]).toMatchObject({ topic: 't', partition: 0, errorCode: ErrorCode.NONE })
      expect(b.partitions.leaderError('t', 0)).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER)

      const state = (await b.store.getPartitionStates([{ topic: 't', partition: 0 }])).get('t:0')!.leaderAndIsr
      const ap = (partitionEpoch: number, leaderEpoch: number, be = brokerEpoch) =>
        AlterPartition.createAlterPartitionRequest({
          brokerId: 0,
          brokerEpoch: be,
          topics: [AlterPartition.createRequestTopicData({ topicName: 't', partitions: [AlterPartition.createRequestPartitionData({ partitionIndex: 0, leaderEpoch, partitionEpoch, newIsr: [0] })] })],
        })
      const alter = (req: AlterPartition.AlterPartitionRequest) => raw.call(56, 1, (w) => AlterPartition.encodeAlterPartitionRequest(w, req, 1), AlterPartition.decodeAlterPartitionResponse)
      expect((await alter(ap(state.partitionEpoch, state.leaderEpoch))).topics[0]!.partitions[0]).toMatchObject({ errorCode: ErrorCode.NONE, leaderId: 0, isr: [0] })
      expect((await alter(ap(state.partitionEpoch, state.leaderEpoch, brokerEpoch + 1n))).errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH)

      // Its own controlled shutdown (a direct call): a single broker cannot move anything, the partition it
      // leads (in the controller's view) is still listed.
      const shut = await b.controlPlane.controlledShutdown(0, brokerEpoch)
      expect(shut.errorCode).toBe(ErrorCode.NONE)
      expect(shut.remaining).toContainEqual(expect.objectContaining({ topic: 't', partition: 0 }))
    } finally {
      raw.close()
    }
  })

  it('moves partition directories its metadata file does not list aside, never adopts them as topics', async () => {
    const dataDir = tempDataDir('embedded-strays')
    tb = await startTestBroker([], { dataDir })
    const raw = await RawClient.connect(tb.host, tb.port)
    expect((await raw.createTopic('kept', 1)).errorCode).toBe(0)
    expect((await raw.produce('kept', 0, simpleBatch('k', 2))).errorCode).toBe(0)
    raw.close()
    await tb.stop({ keepData: true })
    // A lost metadata file: nothing on disk is served, and nothing is dropped.
    writeFileSync(join(dataDir, 'cluster-metadata.json'), JSON.stringify({ version: 2 }))
    mkdirSync(join(dataDir, 'stray-0'), { recursive: true })
    tb = await startTestBroker([], { dataDir })
    expect(tb.broker.topics.get('kept')).toBeUndefined()
    expect(tb.broker.topics.get('stray')).toBeUndefined()
    const aside = readdirSync(dataDir).filter((n) => n.endsWith('-stray')).sort()
    expect(aside.map((n) => n.replace(/\.[0-9a-f]{32}-stray$/, ''))).toEqual(['kept-0', 'stray-0'])
    expect(readdirSync(join(dataDir, aside[0]!))).toContain('00000000000000000000.log')
  })
  it('resumes a deletion queued before a crash when its controller starts again', async () => {
    const dataDir = tempDataDir('embedded-resume-delete')
    tb = await startTestBroker([], { dataDir })
    const raw = await RawClient.connect(tb.host, tb.port)
    expect((await raw.createTopic('gone', 2)).errorCode).toBe(0)
    expect((await raw.createTopic('stays', 1)).errorCode).toBe(0)
    raw.close()
    await tb.stop({ keepData: true })
    // As if the broker died right after queuing the deletion.
    const file = join(dataDir, 'cluster-metadata.json')
    const state = JSON.parse(readFileSync(file, 'utf8'))
    state.deleteTopics = ['gone']
    writeFileSync(file, JSON.stringify(state))
    expect(existsSync(join(dataDir, 'gone-0'))).toBe(true)

    tb = await startTestBroker([], { dataDir })
    const b = tb.broker
    const deadline = Date.now() + 10_000
    while ((await b.store.getTopicNames()).includes('gone') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(await b.store.getTopicNames()).toEqual(['stays'])
    expect(await b.store.getTopicDeletions()).toEqual([])
    expect(b.topics.get('gone')).toBeUndefined()
    expect(existsSync(join(dataDir, 'gone-0'))).toBe(false)
    expect(existsSync(join(dataDir, 'gone-1'))).toBe(false)
    expect(b.topics.get('stays')?.partitions).toBe(1)
  })
})
