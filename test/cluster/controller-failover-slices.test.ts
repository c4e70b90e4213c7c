// A new controller's failover at scale (issue 32): at 100,000 partitions its state machines' startups held
// the thread for up to 2.2 s in one piece (300,000 replica states put in a loop without a pause, then the
// elected and ISR-shrunk partitions recorded in loops without one), long enough for a 2 s failure detector to
// see the new controller as silent. Unit tests over the controller context with a store double: the states
// the context holds per topic and partition, and the whole-cluster loops giving the event loop turns.
import { describe, expect, it, vi } from 'vitest'
import type { ControlRequest, ControllerChannel } from '../../src/cluster/controller/channel.js'
import { ControllerContext, type PartitionReplica, type TopicPartition } from '../../src/cluster/controller/context.js'
import { PartitionStateMachine } from '../../src/cluster/controller/partition-state-machine.js'
import { ReplicaStateMachine } from '../../src/cluster/controller/replica-state-machine.js'
import { LeaderAndIsrMemory, RequestBatch } from '../../src/cluster/controller/request-batch.js'
import { partitionKey, type MetadataStore, type PartitionState, type PartitionStateUpdateResult, type PartitionStateWrite } from '../../src/cluster/metadata-store.js'
import { silentLogger } from '../../src/observability/logger.js'

describe('ControllerContext states', () => {
  it('holds partition, replica and leadership states per topic and partition, in any order', () => {
    const ctx = new ControllerContext()
    const tp = (partition: number): TopicPartition => ({ topic: 't', partition })
    const r = (partition: number, replica: number): PartitionReplica => ({ topic: 't', partition, replica })
    expect(ctx.partitionState(tp(3))).toBe('NonExistentPartition')
    expect(ctx.replicaState(r(3, 1))).toBe('NonExistentReplica')
    expect(ctx.leadershipOf(tp(3))).toBeUndefined()

    ctx.putPartitionState(tp(3), 'OnlinePartition')
    ctx.putPartitionState(tp(0), 'NewPartition')
    expect(ctx.partitionState(tp(3))).toBe('OnlinePartition')
    expect(ctx.partitionState(tp(0))).toBe('NewPartition')
    expect(ctx.partitionState(tp(1))).toBe('NonExistentPartition')
    expect(ctx.partitionState({ topic: 'other', partition: 0 })).toBe('NonExistentPartition')

    ctx.putReplicaState(r(5, 1002), 'OnlineReplica')
    ctx.putReplicaState(r(5, 7), 'OfflineReplica')
    ctx.putReplicaState(r(5, 1002), 'ReplicaDeletionStarted')
    expect(ctx.replicaState(r(5, 1002))).toBe('ReplicaDeletionStarted')
    expect(ctx.replicaState(r(5, 7))).toBe('OfflineReplica')
    expect(ctx.replicaState(r(4, 7))).toBe('NonExistentReplica')
    ctx.removeReplicaState(r(5, 1002))
    expect(ctx.replicaState(r(5, 1002))).toBe('NonExistentReplica')
    expect(ctx.replicaState(r(5, 7))).toBe('OfflineReplica')
    ctx.removeReplicaState(r(5, 7))
    ctx.removeReplicaState(r(9, 7))
    expect(ctx.replicaState(r(5, 7))).toBe('NonExistentReplica')

    const s: PartitionState = { leaderAndIsr: { leader: 1, leaderEpoch: 2, isr: [1], leaderRecoveryState: 0, partitionEpoch: 3 }, controllerEpoch: 1 }
    ctx.putLeadership(tp(2), s)
    expect(ctx.leadershipOf(tp(2))).toBe(s)
    expect(ctx.leadershipOf(tp(1))).toBeUndefined()
    ctx.removeLeadership(tp(2))
    expect(ctx.leadershipOf(tp(2))).toBeUndefined()

    // A topic's removal takes all of its states with it (a topic created again under its name starts afresh).
    ctx.setAssignment(tp(0), { replicas: [1], addingReplicas: [], removingReplicas: [] })
    ctx.putLeadership(tp(0), s)
    ctx.putReplicaState(r(0, 1), 'OnlineReplica')
    ctx.removeTopic('t')
    expect(ctx.partitionState(tp(3))).toBe('NonExistentPartition')
    expect(ctx.replicaState(r(0, 1))).toBe('NonExistentReplica')
    expect(ctx.leadershipOf(tp(0))).toBeUndefined()
  })
})

/** Partition states versioned as znodes; writes in one go, as a store that never pauses. */
function storeOf(states: Map<string, PartitionState>): MetadataStore {
  return {
    getPartitionStates: async (partitions: readonly TopicPartition[]) => {
      const out = new Map<string, PartitionState>()
      for (const tp of partitions) {
        const s = states.get(partitionKey(tp.topic, tp.partition))
        if (s !== undefined) out.set(partitionKey(tp.topic, tp.partition), structuredClone(s))
      }
      return out
    },
    updatePartitionStates: async (_token: unknown, writes: readonly PartitionStateWrite[]) => {
      const result: PartitionStateUpdateResult = { updated: new Map(), badVersion: [], failed: new Map() }
      for (const w of writes) {
        const key = partitionKey(w.topic, w.partition)
        const written = { ...w.state.leaderAndIsr, partitionEpoch: states.get(key)!.leaderAndIsr.partitionEpoch + 1 }
        states.set(key, { leaderAndIsr: written, controllerEpoch: w.state.controllerEpoch })
        result.updated.set(key, written)
      }
      return result
    },
  } as unknown as MetadataStore
}

describe('a controller failover over many partitions', () => {
  it('gives the event loop turns while its state machines start (30,000 partitions, one broker of three dead)', async () => {
    const ctx = new ControllerContext()
    ctx.epoch = 3
    // Broker 2 is dead: it led a third of the partitions and follows the rest.
    for (const id of [1, 3]) ctx.liveBrokers.set(id, { id, epoch: BigInt(id), rack: null, endpoints: [{ listenerName: 'PLAINTEXT', host: '127.0.0.1', port: 9000 + id, securityProtocol: 'PLAINTEXT' }] })
    const states = new Map<string, PartitionState>()
    const topics = 30
    const perTopic = 1000
    for (let t = 0; t < topics; t++) {
      const topic = `topic-${t}`
      ctx.allTopics.add(topic)
      for (let p = 0; p < perTopic; p++) {
        const replicas = [0, 1, 2].map((i) => 1 + ((p + i) % 3))
        ctx.setAssignment({ topic, partition: p }, { replicas, addingReplicas: [], removingReplicas: [] })
        const s: PartitionState = { leaderAndIsr: { leader: replicas[0]!, leaderEpoch: 4, isr: [...replicas], leaderRecoveryState: 0, partitionEpoch: 7 }, controllerEpoch: 2 }
        states.set(partitionKey(topic, p), s)
        ctx.putLeadership({ topic, partition: p }, structuredClone(s))
      }
    }
    const channel = { send: (_brokerId: number, _request: ControlRequest) => undefined } as unknown as ControllerChannel
    const told = new LeaderAndIsrMemory()
    const batch = new RequestBatch(ctx, () => channel, 3, 'PLAINTEXT', () => undefined, undefined, told)
    const log = silentLogger()
    const store = storeOf(states)
    const partitionStateMachine = new PartitionStateMachine({ context: ctx, store, batch, uncleanLeaderElection: async (ts) => new Map(ts.map((t) => [t, false])), log })
    const replicaStateMachine = new ReplicaStateMachine({ context: ctx, store, batch, told, log })

    // Counts the context's writes between two turns of the event loop (a setImmediate chain).
    const counts = { replicaStates: 0, leadership: 0 }
    const mostBetweenTurns = { replicaStates: 0, leadership: 0 }
    const putReplicaState = ctx.putReplicaState.bind(ctx)
    const putLeadership = ctx.putLeadership.bind(ctx)
    ctx.putReplicaState = (r, s) => {
      counts.replicaStates++
      putReplicaState(r, s)
    }
    ctx.putLeadership = (tp, s) => {
      counts.leadership++
      putLeadership(tp, s)
    }
    let running = true
    let turns = 0
    const turn = (): void => {
      turns++
      mostBetweenTurns.replicaStates = Math.max(mostBetweenTurns.replicaStates, counts.replicaStates)
      mostBetweenTurns.leadership = Math.max(mostBetweenTurns.leadership, counts.leadership)
      counts.replicaStates = counts.leadership = 0
      if (running) setImmediate(turn)
    }
    // The slices are timed by performance.now(): a clock that moves 1 ms a reading makes them a fixed
    // number of items (10 checks of 256), so what this test counts does not depend on the machine's speed.
    let fakeNow = performance.now()
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => (fakeNow += 1))
    try {
      setImmediate(turn)
      told.remember()
      await partitionStateMachine.startup()
      await replicaStateMachine.startup()
      told.forget()
      running = false
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      clock.mockRestore()
    }

    // What the failover did: broker 2's 10,000 partitions elected a new leader, its replicas are offline
    // and out of every ISR, the live ones online.
    for (let p = 0; p < perTopic; p++) {
      const tp = { topic: 'topic-7', partition: p }
      const l = ctx.leadershipOf(tp)!.leaderAndIsr
      expect(l.leader).not.toBe(2)
      expect(l.isr).not.toContain(2)
      expect(ctx.partitionState(tp)).toBe('OnlinePartition')
      expect(ctx.replicaState({ ...tp, replica: 2 })).toBe('OfflineReplica')
      expect(ctx.replicaState({ ...tp, replica: 1 })).toBe('OnlineReplica')
    }
    // And never all of one step between two turns: 90,000 replica states are put at startup, 10,000
    // elections and 20,000 ISR shrinks recorded (the old loops did each in one piece).
    expect(turns).toBeGreaterThan(10)
    expect(mostBetweenTurns.replicaStates).toBeLessThan(45_000)
    expect(mostBetweenTurns.leadership).toBeLessThan(5_000)
  })
})
