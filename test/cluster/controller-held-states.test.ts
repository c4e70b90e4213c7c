// The controller changes partition states from the states it holds (issue 32: at 100,000 partitions a
// failover read every state from ZooKeeper once to load and once more before each step's writes). A unit
// test with a recording double of the metadata store, whose conditional writes compare versions as
// ZooKeeper's setData does: the controller reads nothing it holds, and a state changed behind its back
// is read again after its write fails on the version. The cluster tests drive the same steps through
// ZooKeeper and real brokers.
import { describe, expect, it } from 'vitest'
import type { ControlRequest, ControllerChannel } from '../../src/cluster/controller/channel.js'
import { ControllerContext, type TopicPartition } from '../../src/cluster/controller/context.js'
import { PartitionStateMachine } from '../../src/cluster/controller/partition-state-machine.js'
import { ReplicaStateMachine } from '../../src/cluster/controller/replica-state-machine.js'
import { RequestBatch } from '../../src/cluster/controller/request-batch.js'
import { partitionKey, type MetadataStore, type PartitionState, type PartitionStateUpdateResult, type PartitionStateWrite } from '../../src/cluster/metadata-store.js'
import { silentLogger } from '../../src/observability/logger.js'

/** The partition states of a store, versioned like znodes; counts what is read. */
class RecordingStates {
  readonly states = new Map<string, PartitionState>()
  readonly reads: string[] = []

  asStore(): MetadataStore {
    return {
      getPartitionStates: async (partitions: readonly TopicPartition[]) => {
        const out = new Map<string, PartitionState>()
        for (const tp of partitions) {
          const key = partitionKey(tp.topic, tp.partition)
          this.reads.push(key)
          const s = this.states.get(key)
          if (s !== undefined) out.set(key, structuredClone(s))
        }
        return out
      },
      updatePartitionStates: async (_token: unknown, writes: readonly PartitionStateWrite[]) => {
        const result: PartitionStateUpdateResult = { updated: new Map(), badVersion: [], failed: new Map() }
        for (const w of writes) {
          const key = partitionKey(w.topic, w.partition)
          const now = this.states.get(key)
          if (now === undefined) result.failed.set(key, new Error('no node'))
          else if (now.leaderAndIsr.partitionEpoch !== w.state.leaderAndIsr.partitionEpoch) result.badVersion.push(key)
          else {
            const written = { ...w.state.leaderAndIsr, partitionEpoch: now.leaderAndIsr.partitionEpoch + 1 }
            this.states.set(key, { leaderAndIsr: written, controllerEpoch: w.state.controllerEpoch })
            result.updated.set(key, written)
          }
        }
        return result
      },
    } as unknown as MetadataStore
  }
}

function state(leader: number, leaderEpoch: number, partitionEpoch: number, isr: number[]): PartitionState {
  return { leaderAndIsr: { leader, leaderEpoch, isr, leaderRecoveryState: 0, partitionEpoch }, controllerEpoch: 3 }
}

const PARTITIONS = 6

/** Brokers 1-3, topic t of 6 partitions with replicas [1, 2, 3] led by 1 + p % 3; the store and the context hold the same states. */
function setup(): { ctx: ControllerContext; store: RecordingStates; batch: RequestBatch } {
  const ctx = new ControllerContext()
  ctx.epoch = 3
  for (const id of [1, 2, 3]) {
    ctx.liveBrokers.set(id, { id, epoch: BigInt(100 + id), rack: null, endpoints: [{ listenerName: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + id, securityProtocol: 'PLAINTEXT' }] })
  }
  const store = new RecordingStates()
  for (let p = 0; p < PARTITIONS; p++) {
    const tp = { topic: 't', partition: p }
    ctx.setAssignment(tp, { replicas: [1, 2, 3], addingReplicas: [], removingReplicas: [] })
    const s = state(1 + (p % 3), 4, 7, [1, 2, 3])
    ctx.putLeadership(tp, structuredClone(s))
    store.states.set(partitionKey('t', p), structuredClone(s))
  }
  const channel = { send: (_brokerId: number, _request: ControlRequest) => undefined } as unknown as ControllerChannel
  const batch = new RequestBatch(ctx, () => channel, 1, 'PLAINTEXT', () => undefined, undefined)
  return { ctx, store, batch }
}

const log = silentLogger()

function offlineReplicasOf(ctx: ControllerContext, brokerId: number): { topic: string; partition: number; replica: number }[] {
  const out = []
  for (let p = 0; p < PARTITIONS; p++) {
    const r = { topic: 't', partition: p, replica: brokerId }
    ctx.putReplicaState(r, 'OnlineReplica')
    out.push(r)
  }
  return out
}

describe('controller: partition states changed from the states it holds', () => {
  it('takes a dead broker out of every ISR without reading a state it holds', async () => {
    const { ctx, store, batch } = setup()
    ctx.liveBrokers.delete(3)
    const machine = new ReplicaStateMachine({ context: ctx, store: store.asStore(), batch, log })
    await machine.handleStateChanges(offlineReplicasOf(ctx, 3), 'OfflineReplica')
    expect(store.reads).toEqual([])
    for (let p = 0; p < PARTITIONS; p++) {
      const written = store.states.get(partitionKey('t', p))!.leaderAndIsr
      // Broker 3 led partitions 2 and 5: they are left without a leader at the next epoch.
      expect(written.isr).toEqual([1, 2])
      expect(written.leader).toBe(p % 3 === 2 ? -1 : 1 + (p % 3))
      expect(written.partitionEpoch).toBe(8)
      expect(ctx.leadershipOf({ topic: 't', partition: p })!.leaderAndIsr).toEqual(written)
    }
  })

  it('reads again only the state changed behind its back, after its write failed on the version', async () => {
    const { ctx, store, batch } = setup()
    ctx.liveBrokers.delete(3)
    // Partition 4's state moved on in the store (version 9, ISR [1, 3]) while the context holds version 7.
    store.states.set(partitionKey('t', 4), state(2, 5, 9, [2, 3]))
    const machine = new ReplicaStateMachine({ context: ctx, store: store.asStore(), batch, log })
    await machine.handleStateChanges(offlineReplicasOf(ctx, 3), 'OfflineReplica')
    expect(store.reads).toEqual([partitionKey('t', 4)])
    expect(store.states.get(partitionKey('t', 4))!.leaderAndIsr).toEqual({ leader: 2, leaderEpoch: 5, isr: [2], leaderRecoveryState: 0, partitionEpoch: 10 })
    expect(ctx.leadershipOf({ topic: 't', partition: 4 })!.leaderAndIsr.partitionEpoch).toBe(10)
  })

  it('reads from the store only the partitions whose state it does not hold', async () => {
    const { ctx, store, batch } = setup()
    ctx.liveBrokers.delete(3)
    ctx.removeLeadership({ topic: 't', partition: 2 })
    for (let p = 0; p < PARTITIONS; p++) ctx.putPartitionState({ topic: 't', partition: p }, p % 3 === 2 ? 'OfflinePartition' : 'OnlinePartition')
    const machine = new PartitionStateMachine({ context: ctx, store: store.asStore(), batch, log, uncleanLeaderElection: async () => new Map() })
    const outcomes = await machine.triggerOnlinePartitionStateChange()
    expect(store.reads).toEqual([partitionKey('t', 2)])
    expect(outcomes.get(partitionKey('t', 2))).toEqual({ ok: true, leaderAndIsr: { leader: 1, leaderEpoch: 5, isr: [1, 2], leaderRecoveryState: 0, partitionEpoch: 8 } })
    expect(ctx.leadershipOf({ topic: 't', partition: 2 })!.leaderAndIsr.partitionEpoch).toBe(8)
  })

  it('elects new leaders for a dead broker\'s partitions from the states it holds, rereading after a bad version', async () => {
    const { ctx, store, batch } = setup()
    ctx.liveBrokers.delete(3)
    // Partition 5 (led by 3) moved on in the store behind the context's back.
    store.states.set(partitionKey('t', 5), state(3, 6, 11, [3, 1]))
    for (let p = 0; p < PARTITIONS; p++) ctx.putPartitionState({ topic: 't', partition: p }, p % 3 === 2 ? 'OfflinePartition' : 'OnlinePartition')
    const machine = new PartitionStateMachine({ context: ctx, store: store.asStore(), batch, log, uncleanLeaderElection: async () => new Map() })
    const outcomes = await machine.triggerOnlinePartitionStateChange()
    expect(store.reads).toEqual([partitionKey('t', 5)])
    expect(outcomes.get(partitionKey('t', 2))).toEqual({ ok: true, leaderAndIsr: { leader: 1, leaderEpoch: 5, isr: [1, 2], leaderRecoveryState: 0, partitionEpoch: 8 } })
    expect(outcomes.get(partitionKey('t', 5))).toEqual({ ok: true, leaderAndIsr: { leader: 1, leaderEpoch: 7, isr: [1], leaderRecoveryState: 0, partitionEpoch: 12 } })
  })
})
