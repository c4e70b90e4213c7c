// AlterPartitionManager batches ISR proposals as Kafka's AlterPartitionManager does: the proposals of one
// turn go in one AlterPartition, one request is out at a time (proposals made meanwhile go in the next),
// and a failed request backs off the expansions it carried instead of retrying them on the next fetch.
import { afterEach, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { silentLogger } from '../../src/observability/logger.js'
import type { AlterPartitionRequest, AlterPartitionResponse } from '../../src/protocol/messages/56-alter-partition.gen.js'
import { AlterPartitionManager } from '../../src/replication/alter-partition-manager.js'
import type { HostedPartition } from '../../src/replication/hosted-partition.js'
import { PartitionLeaderState } from '../../src/replication/partition.js'

function led(topic: string, partition: number): HostedPartition {
  const leaderState = new PartitionLeaderState({ topic, partition, brokerId: 1, leaderEpoch: 3, partitionEpoch: 7, replicas: [1, 2], isr: [1], minInsyncReplicas: 1, logEndOffset: 10, highWatermark: 10, now: Date.now() })
  // Follower 2 has caught up: it may join the ISR.
  leaderState.followers.get(2)!.leo = 10
  return { topic, partition, topicId: 'AAAAAAAAAAAAAAAAAAAAAA', isLeader: true, leaderId: 1, leaderEpoch: 3, partitionEpoch: 7, controllerEpoch: 1, replicas: [1, 2], isr: [1], leaderRecoveryState: 0, leaderEndpoint: undefined, leaderState, hwFollowsLeo: false, followerLog: undefined }
}

const turn = (): Promise<void> => new Promise((r) => setImmediate(r))

describe('AlterPartitionManager', () => {
  let manager: AlterPartitionManager | undefined
  afterEach(() => manager?.close())

  it('sends the proposals of one turn in one request, one request at a time, and applies each answer', async () => {
    const sent: AlterPartitionRequest[] = []
    const answers: ((res: AlterPartitionResponse) => void)[] = []
    const hosted = new Map<string, HostedPartition>()
    for (const [t, p] of [['a', 0], ['a', 1], ['b', 0], ['b', 1]] as const) hosted.set(`${t}-${p}`, led(t, p))
    manager = new AlterPartitionManager(
      { hosted: (t, p) => hosted.get(`${t}-${p}`), hostedPartitions: () => hosted.values(), isrProposalChanged: () => {}, isrAnswered: () => {} },
      silentLogger(),
      { brokerId: 1, brokerEpoch: () => 42n, replicaLagTimeMaxMs: 60_000, sendAlterPartition: (req) => new Promise((resolve) => (sent.push(req), answers.push(resolve))) },
    )
    const answer = (req: AlterPartitionRequest): AlterPartitionResponse => ({
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      topics: req.topics.map((t) => ({ topicName: t.topicName, topicId: t.topicId, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE, leaderId: 1, leaderEpoch: p.leaderEpoch, isr: p.newIsr, leaderRecoveryState: 0, partitionEpoch: p.partitionEpoch + 1 })) })),
    })

    manager.maybeExpandIsr(hosted.get('a-0')!, 2)
    manager.maybeExpandIsr(hosted.get('a-1')!, 2)
    manager.maybeExpandIsr(hosted.get('b-0')!, 2)
    await turn()
    expect(sent).toHaveLength(1)
    expect(sent[0]!.brokerEpoch).toBe(42n)
    expect(sent[0]!.topics.map((t) => [t.topicName, t.partitions.map((p) => [p.partitionIndex, p.newIsr, p.partitionEpoch])])).toEqual([
      ['a', [[0, [1, 2], 7], [1, [1, 2], 7]]],
      ['b', [[0, [1, 2], 7]]],
    ])
    // While it is out, another proposal waits, and a partition with one pending proposes nothing more.
    manager.maybeExpandIsr(hosted.get('b-1')!, 2)
    manager.maybeExpandIsr(hosted.get('a-0')!, 2)
    await turn()
    expect(sent).toHaveLength(1)

    answers[0]!(answer(sent[0]!))
    await turn()
    for (const k of ['a-0', 'a-1', 'b-0']) {
      expect(hosted.get(k)!.leaderState!.isr).toEqual([1, 2])
      expect(hosted.get(k)!.partitionEpoch).toBe(8)
    }
    expect(sent).toHaveLength(2)
    expect(sent[1]!.topics.map((t) => [t.topicName, t.partitions.map((p) => p.partitionIndex)])).toEqual([['b', [1]]])
    answers[1]!(answer(sent[1]!))
    await turn()
    expect(hosted.get('b-1')!.leaderState!.isr).toEqual([1, 2])
    expect(hosted.get('b-1')!.leaderState!.pending).toBeUndefined()
  })

  it('a failed request leaves its expansions backed off, not proposed again on the next fetch', async () => {
    const sent: AlterPartitionRequest[] = []
    const p = led('a', 0)
    manager = new AlterPartitionManager(
      { hosted: () => p, hostedPartitions: () => [p], isrProposalChanged: () => {}, isrAnswered: () => {} },
      silentLogger(),
      { brokerId: 1, brokerEpoch: () => 42n, replicaLagTimeMaxMs: 60_000, sendAlterPartition: (req) => (sent.push(req), Promise.reject(new Error('cannot connect'))) },
    )
    manager.maybeExpandIsr(p, 2)
    await turn()
    await turn()
    expect(sent).toHaveLength(1)
    expect(p.leaderState!.pending).toBeUndefined()
    expect(p.leaderState!.expandRetryAt).toBeGreaterThan(Date.now())
    manager.maybeExpandIsr(p, 2)
    await turn()
    expect(sent).toHaveLength(1)
  })
})
