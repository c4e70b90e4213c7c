// The controller's request batch (Kafka's ControllerBrokerRequestBatch) with a recording channel (a unit
// test: the cluster tests drive it through real brokers): per broker one LeaderAndIsr and one
// UpdateMetadata per send, and during a failover (LeaderAndIsrMemory) a broker is not told a partition
// state twice, which at 100,000 partitions was the whole second half of a controller failover.
import { describe, expect, it } from 'vitest'
import { ApiKey } from '../../src/protocol/api-keys.gen.js'
import type * as LeaderAndIsr from '../../src/protocol/messages/04-leader-and-isr.gen.js'
import type * as UpdateMetadata from '../../src/protocol/messages/06-update-metadata.gen.js'
import type { ControlRequest, ControllerChannel } from '../../src/cluster/controller/channel.js'
import { ControllerContext } from '../../src/cluster/controller/context.js'
import { LeaderAndIsrMemory, RequestBatch } from '../../src/cluster/controller/request-batch.js'
import type { PartitionState } from '../../src/cluster/metadata-store.js'

interface Sent {
  brokerId: number
  request: ControlRequest
}

function setup(memory?: LeaderAndIsrMemory): { batch: RequestBatch; sent: Sent[]; ctx: ControllerContext } {
  const ctx = new ControllerContext()
  ctx.epoch = 3
  for (const id of [1, 2, 3]) {
    ctx.liveBrokers.set(id, { id, epoch: BigInt(100 + id), rack: null, endpoints: [{ listenerName: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + id, securityProtocol: 'PLAINTEXT' }] })
  }
  for (let p = 0; p < 4; p++) ctx.setAssignment({ topic: 't', partition: p }, { replicas: [1, 2, 3], addingReplicas: [], removingReplicas: [] })
  const sent: Sent[] = []
  const channel = { send: (brokerId: number, request: ControlRequest) => sent.push({ brokerId, request }) } as unknown as ControllerChannel
  const batch = new RequestBatch(ctx, () => channel, 1, 'PLAINTEXT', () => undefined, undefined, memory)
  return { batch, sent, ctx }
}

function state(leader: number, leaderEpoch: number, partitionEpoch: number, isr = [1, 2, 3]): PartitionState {
  return { leaderAndIsr: { leader, leaderEpoch, isr, leaderRecoveryState: 0, partitionEpoch }, controllerEpoch: 3 }
}

/** Partition indexes of the LeaderAndIsr sent to a broker (all sends), and of the UpdateMetadata. */
function told(sent: Sent[], brokerId: number): { leaderAndIsr: number[]; updateMetadata: number[] } {
  const leaderAndIsr: number[] = []
  const updateMetadata: number[] = []
  for (const s of sent.filter((x) => x.brokerId === brokerId)) {
    if (s.request.apiKey === ApiKey.LeaderAndIsr) {
      for (const t of (s.request.body as LeaderAndIsr.LeaderAndIsrRequest).topicStates) leaderAndIsr.push(...t.partitionStates.map((p) => p.partitionIndex))
    } else if (s.request.apiKey === ApiKey.UpdateMetadata) {
      for (const t of (s.request.body as UpdateMetadata.UpdateMetadataRequest).topicStates) updateMetadata.push(...t.partitionStates.map((p) => p.partitionIndex))
    }
  }
  return { leaderAndIsr: leaderAndIsr.sort(), updateMetadata: updateMetadata.sort() }
}

describe('controller request batch', () => {
  it('sends each broker one LeaderAndIsr with its partitions and every broker the UpdateMetadata of all of them', () => {
    const { batch, sent, ctx } = setup()
    const s0 = state(2, 5, 7, [2, 3])
    ctx.putLeadership({ topic: 't', partition: 0 }, s0)
    batch.newBatch()
    batch.addLeaderAndIsr([2, 3], { topic: 't', partition: 0 }, s0, false)
    batch.addLeaderAndIsr([3], { topic: 't', partition: 1 }, state(3, 1, 1), false)
    ctx.putLeadership({ topic: 't', partition: 1 }, state(3, 1, 1))
    batch.send()
    expect(told(sent, 1)).toEqual({ leaderAndIsr: [], updateMetadata: [0, 1] })
    expect(told(sent, 2)).toEqual({ leaderAndIsr: [0], updateMetadata: [0, 1] })
    expect(told(sent, 3)).toEqual({ leaderAndIsr: [0, 1], updateMetadata: [0, 1] })
    const la = sent.find((s) => s.brokerId === 2 && s.request.apiKey === ApiKey.LeaderAndIsr)!.request.body as LeaderAndIsr.LeaderAndIsrRequest
    expect(la.topicStates[0]!.partitionStates[0]).toMatchObject({ leader: 2, leaderEpoch: 5, partitionEpoch: 7, isr: [2, 3], replicas: [1, 2, 3] })
    expect(la.liveLeaders.map((l) => l.brokerId)).toEqual([2])
  })

  it('while a failover remembers, a broker is not told the same partition epoch twice, across batches; a new epoch, a new replica or a later failover is told', () => {
    const memory = new LeaderAndIsrMemory()
    const first = setup(memory)
    const second = setup(memory) // the replica state machine's batch shares the controller's memory
    const tp = (p: number): { topic: string; partition: number } => ({ topic: 't', partition: p })
    for (const { ctx } of [first, second]) for (let p = 0; p < 4; p++) ctx.putLeadership(tp(p), state(2, 1, 4))

    memory.remember()
    // The leader step elects partitions 0 and 1 (told to every live replica).
    first.batch.newBatch()
    first.batch.addLeaderAndIsr([1, 2, 3], tp(0), state(2, 1, 4), false)
    first.batch.addLeaderAndIsr([1, 2, 3], tp(1), state(2, 1, 4), false)
    first.batch.send()
    // The replica step tells every live replica everything: 0 and 1 again at the same epoch (skipped),
    // 1 at a newer epoch for broker 3 only after a shrink, 2 and 3 for the first time.
    second.batch.newBatch()
    for (let p = 0; p < 4; p++) second.batch.addLeaderAndIsr([1, 2, 3], tp(p), state(2, 1, 4), false)
    second.batch.addLeaderAndIsr([3], tp(1), state(2, 1, 5), false)
    second.batch.addLeaderAndIsr([1], tp(0), state(2, 1, 4), true) // a new replica is always told
    second.batch.send()
    memory.forget()
    expect(told(second.sent, 1)).toEqual({ leaderAndIsr: [0, 2, 3], updateMetadata: [0, 1, 2, 3] })
    expect(told(second.sent, 2)).toEqual({ leaderAndIsr: [2, 3], updateMetadata: [0, 1, 2, 3] })
    expect(told(second.sent, 3)).toEqual({ leaderAndIsr: [1, 2, 3], updateMetadata: [0, 1, 2, 3] })

    // A batch where every broker had been told already sends nothing at all for it.
    const third = setup(memory)
    third.ctx.putLeadership(tp(0), state(2, 1, 4))
    memory.remember()
    third.batch.newBatch()
    third.batch.addLeaderAndIsr([1, 2, 3], tp(0), state(2, 1, 4), false)
    third.batch.addLeaderAndIsr([1, 2, 3], tp(0), state(2, 1, 4), false)
    third.batch.send()
    third.batch.newBatch()
    third.batch.addLeaderAndIsr([1, 2, 3], tp(0), state(2, 1, 4), false)
    third.batch.send()
    expect(third.sent.filter((s) => s.request.apiKey === ApiKey.LeaderAndIsr)).toHaveLength(3)
    expect(third.sent.filter((s) => s.request.apiKey === ApiKey.UpdateMetadata)).toHaveLength(3)
    memory.forget()

    // Outside a failover nothing is remembered: the same entry goes again.
    third.batch.newBatch()
    third.batch.addLeaderAndIsr([1, 2, 3], tp(0), state(2, 1, 4), false)
    third.batch.send()
    expect(third.sent.filter((s) => s.request.apiKey === ApiKey.LeaderAndIsr)).toHaveLength(6)
  })
})
