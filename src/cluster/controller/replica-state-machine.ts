// The replica state machine (Kafka's ZkReplicaStateMachine): one state per (partition, broker).
//   NewReplica        LeaderAndIsr(isNew) to the broker when the partition has a leader
//   OnlineReplica     LeaderAndIsr to the broker with the current state (a broker coming up learns what
//                     it hosts)
//   OfflineReplica    StopReplica(delete=false) to it; it leaves the ISR (a leader leaving leaves the
//                     partition without one, -1, at the next leader epoch; under a leader that stays the
//                     epoch stays too; the last ISR member stays in the ISR), written conditionally;
//                     LeaderAndIsr to the other replicas
//   ReplicaDeletionStarted -> StopReplica(delete=true); Successful / Ineligible from the answers;
//   NonExistentReplica: the replica leaves the assignment.
// Many replicas (a new topic of 100,000 partitions) are taken in slices of ~SLICE_MS of main-thread time:
// at each pause the batch collected so far is sent, as in the partition state machine.
import { MainThreadSlices } from '../../domain/main-thread-slices.js'
import type { Logger } from '../../observability/logger.js'
import { NO_LEADER, partitionKey, type LeaderAndIsr, type MetadataStore, type PartitionState } from '../metadata-store.js'
import { VALID_PREVIOUS_REPLICA_STATES, statesHeldOrRead, type ControllerContext, type PartitionReplica, type ReplicaStateName, type TopicPartition } from './context.js'
import { newLeaderAndIsr } from './election.js'
import type { LeaderAndIsrMemory, RequestBatch } from './request-batch.js'

export interface ReplicaStateMachineDeps {
  context: ControllerContext
  store: MetadataStore
  batch: RequestBatch
  /** What the controller's failover has told each broker so far (startup leaves those replicas out). */
  told?: LeaderAndIsrMemory
  log: Logger
}

export class ReplicaStateMachine {
  constructor(private readonly deps: ReplicaStateMachineDeps) {}

  /**
   * At failover: online replicas are told their partitions; the others go through the OfflineReplica
   * transition (as Kafka's ReplicaStateMachine.startup), which takes them out of every ISR at once. A
   * broker that died while there was no controller (the old controller itself, killed) is otherwise left
   * in the ISR of the partitions it followed, and their acks=all writes wait replica.lag.time.max.ms for
   * the leaders to shrink it. Replicas of topics being deleted are failed deletions instead. Answers how
   * long each half took (the controller logs it).
   */
  async startup(): Promise<{ offlineMs: number; onlineMs: number }> {
    const ctx = this.deps.context
    const online: PartitionReplica[] = []
    const offline: PartitionReplica[] = []
    // 300,000 replicas at 100,000 partitions: in slices, as every other whole-cluster loop of a failover.
    const slices = new MainThreadSlices()
    for (const tp of ctx.allPartitions()) {
      const pause = slices.turn()
      if (pause !== undefined) await pause
      for (const replica of ctx.replicasOf(tp)) {
        const r = { ...tp, replica }
        if (ctx.isReplicaOnlineFor(replica, tp)) {
          ctx.putReplicaState(r, 'OnlineReplica')
          online.push(r)
        } else if (ctx.isTopicQueuedUpForDeletion(tp.topic)) {
          ctx.putReplicaState(r, 'ReplicaDeletionIneligible')
        } else {
          ctx.putReplicaState(r, 'OfflineReplica')
          offline.push(r)
        }
      }
    }
    // Offline first (Kafka goes the other way round): taking a dead broker out of the ISRs is what lets
    // acks=all writes go on, and telling every live replica what it hosts is the long part at scale
    // (the replicas told by the offline step, or by the leader elections before it, are not told twice:
    // RequestBatch.rememberWhatIsTold).
    const startedAt = performance.now()
    await this.handleStateChanges(offline, 'OfflineReplica')
    const offlineAt = performance.now()
    // Their state is OnlineReplica already; what is left is telling them, where nothing has yet.
    const told = this.deps.told
    let untold = online
    if (told !== undefined) {
      untold = []
      for (const r of online) {
        const pause = slices.turn()
        if (pause !== undefined) await pause
        const state = ctx.leadershipOf(r)
        if (state === undefined || !told.wasTold(r.replica, partitionKey(r.topic, r.partition), state.leaderAndIsr.partitionEpoch)) untold.push(r)
      }
    }
    await this.handleStateChanges(untold, 'OnlineReplica')
    return { offlineMs: Math.round(offlineAt - startedAt), onlineMs: Math.round(performance.now() - offlineAt) }
  }

  async handleStateChanges(replicas: readonly PartitionReplica[], target: ReplicaStateName): Promise<void> {
    if (replicas.length === 0) return
    const { batch } = this.deps
    batch.newBatch()
    try {
      const byBroker = new Map<number, PartitionReplica[]>()
      for (const r of replicas) {
        let list = byBroker.get(r.replica)
        if (list === undefined) byBroker.set(r.replica, (list = []))
        list.push(r)
      }
      const slices = new MainThreadSlices()
      for (const [brokerId, list] of byBroker) await this.#doHandleStateChanges(brokerId, list, target, slices)
      batch.send()
    } catch (err) {
      batch.clear()
      throw err
    }
  }

  /** Every ~SLICE_MS: sends what the batch holds so far, then gives others a turn. */
  #turn(slices: MainThreadSlices): Promise<void> | undefined {
    const pause = slices.turn()
    if (pause !== undefined) this.deps.batch.send()
    return pause
  }

  async #doHandleStateChanges(brokerId: number, replicas: PartitionReplica[], target: ReplicaStateName, slices: MainThreadSlices): Promise<void> {
    const { context: ctx, batch, log } = this.deps
    const valid: PartitionReplica[] = []
    for (const r of replicas) {
      const pause = this.#turn(slices)
      if (pause !== undefined) await pause
      const current = ctx.replicaState(r)
      if (VALID_PREVIOUS_REPLICA_STATES[target].includes(current)) valid.push(r)
      else log.warn({ topic: r.topic, partition: r.partition, replica: r.replica, from: current, to: target }, 'invalid replica state transition')
    }
    switch (target) {
      case 'NewReplica':
        for (const r of valid) {
          const pause = this.#turn(slices)
          if (pause !== undefined) await pause
          const state = ctx.leadershipOf(r)
          if (state !== undefined) {
            if (state.leaderAndIsr.leader === brokerId) {
              log.warn({ topic: r.topic, partition: r.partition, replica: brokerId }, 'a replica asked to become leader cannot become NewReplica')
              continue
            }
            batch.addLeaderAndIsr([brokerId], r, state, true)
          }
          ctx.putReplicaState(r, 'NewReplica')
        }
        return
      case 'OnlineReplica':
        for (const r of valid) {
          const pause = this.#turn(slices)
          if (pause !== undefined) await pause
          if (ctx.replicaState(r) === 'NewReplica') {
            const assignment = ctx.assignment(r)
            if (assignment !== undefined && !assignment.replicas.includes(brokerId)) {
              log.error({ topic: r.topic, partition: r.partition, replica: brokerId }, 'adding a replica that is not part of the assignment')
              ctx.setAssignment(r, { ...assignment, replicas: [...assignment.replicas, brokerId] })
            }
          } else {
            const state = ctx.leadershipOf(r)
            if (state !== undefined) batch.addLeaderAndIsr([brokerId], r, state, false)
          }
          ctx.putReplicaState(r, 'OnlineReplica')
        }
        return
      case 'OfflineReplica': {
        // A dead broker gets no StopReplica (the channel would drop it): at scale that was an entry per
        // partition it hosted, built for nothing. A live one (a failed log dir) does.
        if (ctx.liveBrokers.has(brokerId)) {
          for (const r of valid) {
            const pause = this.#turn(slices)
            if (pause !== undefined) await pause
            batch.addStopReplica([brokerId], r, false)
          }
        }
        const withLeadership: PartitionReplica[] = []
        const withoutLeadership: PartitionReplica[] = []
        for (const r of valid) {
          const pause = this.#turn(slices)
          if (pause !== undefined) await pause
          ;(ctx.leadershipOf(r) !== undefined ? withLeadership : withoutLeadership).push(r)
        }
        const updated = await this.#removeReplicasFromIsr(brokerId, withLeadership, slices)
        // In slices, each sending what it added (as the partition state machine does): the brokers get
        // requests of a few thousand partitions as the step goes on, not one of every partition at its end.
        for (const [key, state] of updated) {
          const pause = this.#turn(slices)
          if (pause !== undefined) await pause
          const i = key.lastIndexOf(':')
          const tp = { topic: key.slice(0, i), partition: Number(key.slice(i + 1)) }
          if (!ctx.isTopicQueuedUpForDeletion(tp.topic)) {
            batch.addLeaderAndIsr(ctx.replicasOf(tp).filter((id) => id !== brokerId), tp, state, false)
          }
          ctx.putReplicaState({ ...tp, replica: brokerId }, 'OfflineReplica')
        }
        const everyBroker = ctx.liveOrShuttingDownBrokerIds()
        for (const r of withoutLeadership) {
          batch.addUpdateMetadata(everyBroker, [r])
          ctx.putReplicaState(r, 'OfflineReplica')
        }
        return
      }
      case 'ReplicaDeletionStarted':
        for (const r of valid) {
          ctx.putReplicaState(r, 'ReplicaDeletionStarted')
          batch.addStopReplica([brokerId], r, true)
        }
        return
      case 'ReplicaDeletionIneligible':
      case 'ReplicaDeletionSuccessful':
        for (const r of valid) ctx.putReplicaState(r, target)
        return
      case 'NonExistentReplica':
        for (const r of valid) {
          const assignment = ctx.assignment(r)
          if (assignment !== undefined) {
            ctx.setAssignment(r, {
              replicas: assignment.replicas.filter((x) => x !== brokerId),
              addingReplicas: assignment.addingReplicas.filter((x) => x !== brokerId),
              removingReplicas: assignment.removingReplicas.filter((x) => x !== brokerId),
            })
          }
          ctx.removeReplicaState(r)
        }
        return
    }
  }

  /**
   * Takes a broker out of the ISR of partitions (Kafka's removeReplicasFromIsr): the state is re-read,
   * a leader leaving gives the partition no leader (at the next leader epoch), an ISR of one keeps its last
   * member, a leader that stays keeps its epoch; retried on a version conflict. Answers the new state of each partition (also of
   * those where the broker was not in the ISR).
   */
  async #removeReplicasFromIsr(brokerId: number, partitions: readonly TopicPartition[], slices: MainThreadSlices): Promise<Map<string, PartitionState>> {
    const { context: ctx, store, log } = this.deps
    const out = new Map<string, PartitionState>()
    let remaining = [...partitions]
    for (let round = 0; remaining.length > 0 && round < 10; round++) {
      // The first round starts from the states held; a round after a bad version reads them again.
      const states = round === 0 ? await statesHeldOrRead(ctx, store, remaining, slices) : await store.getPartitionStates(remaining)
      const adjusted: { tp: TopicPartition; leaderAndIsr: LeaderAndIsr }[] = []
      for (const tp of remaining) {
        const pause = slices.turn()
        if (pause !== undefined) await pause
        const key = partitionKey(tp.topic, tp.partition)
        const state = states.get(key)
        if (state === undefined) {
          if (!ctx.isTopicQueuedUpForDeletion(tp.topic)) log.warn({ partition: key, replica: brokerId }, 'cannot take a replica out of the ISR: the partition has no state')
          continue
        }
        if (state.controllerEpoch > ctx.epoch) {
          log.warn({ partition: key, controllerEpoch: state.controllerEpoch }, 'partition state written by a newer controller; not changed')
          continue
        }
        const l = state.leaderAndIsr
        if (!l.isr.includes(brokerId)) {
          const kept = { leaderAndIsr: l, controllerEpoch: ctx.epoch }
          ctx.putLeadership(tp, kept)
          out.set(key, kept)
          continue
        }
        const leader = l.leader === brokerId ? NO_LEADER : l.leader
        const isr = l.isr.length === 1 ? l.isr : l.isr.filter((r) => r !== brokerId)
        // A shrink under the same leader keeps the leader epoch (KRaft's rule, KAFKA-15021): only the
        // partition epoch moves, so the leader and its followers update the ISR in place instead of
        // taking their roles again (a new epoch fences the followers' fetches in flight and stalls acks=all).
        adjusted.push({ tp, leaderAndIsr: leader === l.leader ? { ...l, isr } : newLeaderAndIsr(l, leader, isr) })
      }
      if (adjusted.length === 0) break
      const token = { epoch: ctx.epoch, epochVersion: ctx.epochVersion }
      const result = await store.updatePartitionStates(token, adjusted.map(({ tp, leaderAndIsr }) => ({ ...tp, state: { leaderAndIsr, controllerEpoch: ctx.epoch } })))
      remaining = []
      const badVersion = new Set(result.badVersion)
      for (const { tp } of adjusted) {
        const pause = slices.turn()
        if (pause !== undefined) await pause
        const key = partitionKey(tp.topic, tp.partition)
        const written = result.updated.get(key)
        if (written !== undefined) {
          const state = { leaderAndIsr: written, controllerEpoch: ctx.epoch }
          ctx.putLeadership(tp, state)
          out.set(key, state)
        } else if (badVersion.has(key)) remaining.push(tp)
        else log.warn({ partition: key, err: result.failed.get(key)?.message }, 'cannot take a replica out of the ISR')
      }
    }
    return out
  }
}
