// The partition state machine (Kafka's ZkPartitionStateMachine):
//   NonExistentPartition -> NewPartition -> OnlinePartition <-> OfflinePartition -> NonExistentPartition
// New -> Online writes the first state (leader = first live replica, ISR = the live replicas, leader epoch
// 0); Offline/Online -> Online elects a leader with a strategy (election.ts) and writes it conditionally
// on the partition epoch, re-reading the state first (a write refused for its version is retried with a
// fresh read). Every write is guarded by the controller epoch; each success queues LeaderAndIsr for the
// recipients the election names (and UpdateMetadata for every broker) in the request batch.
// A step over many partitions (a topic of 100,000) runs in slices of ~SLICE_MS of main-thread time
// (issue 30): at each pause what the batch holds is sent, so the brokers get chunk-sized requests as the
// step goes on; the store is still written once per step, since the embedded store rewrites its whole file
// per write (a write per slice made the step quadratic).
import { MainThreadSlices } from '../../domain/main-thread-slices.js'
import type { Logger } from '../../observability/logger.js'
import {
  ControllerMovedError,
  partitionKey,
  type LeaderAndIsr,
  type MetadataStore,
  type PartitionState,
} from '../metadata-store.js'
import { VALID_PREVIOUS_PARTITION_STATES, statesHeldOrRead, type ControllerContext, type PartitionStateName, type TopicPartition } from './context.js'
import { leaderForControlledShutdown, leaderForOffline, leaderForPreferredReplica, leaderForReassign, type ElectionResult, type ElectionStrategy } from './election.js'
import type { RequestBatch } from './request-batch.js'

export type ElectionOutcome = { ok: true; leaderAndIsr: LeaderAndIsr } | { ok: false; error: Error }

export interface PartitionStateMachineDeps {
  context: ControllerContext
  store: MetadataStore
  batch: RequestBatch
  /** unclean.leader.election.enable for each topic (topic config over the broker default). */
  uncleanLeaderElection(topics: readonly string[]): Promise<Map<string, boolean>>
  log: Logger
}

export class PartitionStateMachine {
  constructor(private readonly deps: PartitionStateMachineDeps) {}

  /** At failover: states from what the store holds, then elect leaders where needed. */
  async startup(): Promise<void> {
    const ctx = this.deps.context
    const slices = new MainThreadSlices()
    for (const tp of ctx.allPartitions()) {
      const pause = slices.turn()
      if (pause !== undefined) await pause
      const state = ctx.leadershipOf(tp)
      if (state === undefined) ctx.putPartitionState(tp, 'NewPartition')
      else ctx.putPartitionState(tp, ctx.isReplicaOnline(state.leaderAndIsr.leader) ? 'OnlinePartition' : 'OfflinePartition')
    }
    await this.triggerOnlinePartitionStateChange()
  }

  /** New and offline partitions (topics being deleted left out) go online if a leader can be elected. */
  async triggerOnlinePartitionStateChange(): Promise<Map<string, ElectionOutcome>> {
    const ctx = this.deps.context
    const slices = new MainThreadSlices()
    const partitions: TopicPartition[] = []
    for (const tp of ctx.allPartitions()) {
      const pause = slices.turn()
      if (pause !== undefined) await pause
      const s = ctx.partitionState(tp)
      if ((s === 'OfflinePartition' || s === 'NewPartition') && !ctx.isTopicQueuedUpForDeletion(tp.topic)) partitions.push(tp)
    }
    return this.handleStateChanges(partitions, 'OnlinePartition', { kind: 'offline', allowUnclean: false })
  }

  async handleStateChanges(partitions: readonly TopicPartition[], target: PartitionStateName, strategy?: ElectionStrategy): Promise<Map<string, ElectionOutcome>> {
    if (partitions.length === 0) return new Map()
    const { batch } = this.deps
    batch.newBatch()
    try {
      const results = await this.#doHandleStateChanges(partitions, target, strategy)
      batch.send()
      return results
    } catch (err) {
      // A deposed controller sends nothing of a step it could not finish.
      batch.clear()
      throw err
    }
  }

  /**
   * Gives others a turn every ~SLICE_MS of a long step: first sends what the batch collected so far (the
   * store holds it already), so no broker waits for the whole step to learn of the first partitions.
   */
  #turn(slices: MainThreadSlices): Promise<void> | undefined {
    const pause = slices.turn()
    if (pause !== undefined) this.deps.batch.send()
    return pause
  }

  async #doHandleStateChanges(partitions: readonly TopicPartition[], target: PartitionStateName, strategy?: ElectionStrategy): Promise<Map<string, ElectionOutcome>> {
    const ctx = this.deps.context
    const slices = new MainThreadSlices()
    const valid: TopicPartition[] = []
    const uninitialized: TopicPartition[] = []
    const toElect: TopicPartition[] = []
    for (const tp of partitions) {
      const pause = this.#turn(slices)
      if (pause !== undefined) await pause
      const current = ctx.partitionState(tp)
      if (!VALID_PREVIOUS_PARTITION_STATES[target].includes(current)) {
        this.deps.log.warn({ topic: tp.topic, partition: tp.partition, from: current, to: target }, 'invalid partition state transition')
        continue
      }
      valid.push(tp)
      ;(current === 'NewPartition' ? uninitialized : toElect).push(tp)
    }
    if (target === 'NewPartition' || target === 'OfflinePartition' || target === 'NonExistentPartition') {
      for (const tp of valid) {
        const pause = this.#turn(slices)
        if (pause !== undefined) await pause
        ctx.putPartitionState(tp, target)
      }
      return new Map()
    }
    if (uninitialized.length > 0) {
      for (const tp of await this.#initializeLeaderAndIsr(uninitialized, slices)) {
        const pause = this.#turn(slices)
        if (pause !== undefined) await pause
        ctx.putPartitionState(tp, 'OnlinePartition')
      }
    }
    if (toElect.length === 0) return new Map()
    if (strategy === undefined) throw new Error('a leader election needs a strategy')
    const results = await this.#electLeaders(toElect, strategy, slices)
    for (const [key, outcome] of results) {
      if (outcome.ok) {
        const i = key.lastIndexOf(':')
        ctx.putPartitionState({ topic: key.slice(0, i), partition: Number(key.slice(i + 1)) }, 'OnlinePartition')
      }
    }
    return results
  }

  /** First states of new partitions; those that already have one (a failover mid-way) adopt it. */
  async #initializeLeaderAndIsr(partitions: readonly TopicPartition[], slices: MainThreadSlices): Promise<TopicPartition[]> {
    const { context: ctx, store, batch, log } = this.deps
    const writes = []
    for (const tp of partitions) {
      const pause = this.#turn(slices)
      if (pause !== undefined) await pause
      const live = ctx.replicasOf(tp).filter((r) => ctx.isReplicaOnlineFor(r, tp))
      if (live.length === 0) {
        log.warn({ topic: tp.topic, partition: tp.partition, replicas: ctx.replicasOf(tp) }, 'cannot bring a new partition online: none of its replicas is alive')
        continue
      }
      const state: PartitionState = {
        leaderAndIsr: { leader: live[0]!, leaderEpoch: 0, isr: live, leaderRecoveryState: 0, partitionEpoch: 0 },
        controllerEpoch: ctx.epoch,
      }
      writes.push({ ...tp, state })
    }
    if (writes.length === 0) return []
    const token = { epoch: ctx.epoch, epochVersion: ctx.epochVersion }
    const { created, failed } = await store.createPartitionStates(token, writes)
    const done: TopicPartition[] = []
    for (const w of writes) {
      const pause = this.#turn(slices)
      if (pause !== undefined) await pause
      const key = partitionKey(w.topic, w.partition)
      const leaderAndIsr = created.get(key)
      if (leaderAndIsr !== undefined) {
        const state = { leaderAndIsr, controllerEpoch: ctx.epoch }
        ctx.putLeadership(w, state)
        batch.addLeaderAndIsr(leaderAndIsr.isr, w, state, true)
        done.push(w)
      }
    }
    const existing = [...failed.keys()]
    if (existing.length > 0) {
      const states = await store.getPartitionStates(existing.map((k) => ({ topic: k.slice(0, k.lastIndexOf(':')), partition: Number(k.slice(k.lastIndexOf(':') + 1)) })))
      for (const w of writes) {
        const key = partitionKey(w.topic, w.partition)
        if (!failed.has(key)) continue
        const state = states.get(key)
        if (state === undefined) {
          log.warn({ topic: w.topic, partition: w.partition, err: failed.get(key)!.message }, 'cannot write the first state of a partition')
          continue
        }
        ctx.putLeadership(w, state)
        batch.addLeaderAndIsr(ctx.replicasOf(w).filter((r) => ctx.isReplicaOnline(r)), w, state, true)
        done.push(w)
      }
    }
    return done
  }

  async #electLeaders(partitions: readonly TopicPartition[], strategy: ElectionStrategy, slices: MainThreadSlices): Promise<Map<string, ElectionOutcome>> {
    const finished = new Map<string, ElectionOutcome>()
    let remaining = [...partitions]
    for (let round = 0; remaining.length > 0; round++) {
      if (round > 0) this.deps.log.info({ partitions: remaining.length, strategy: strategy.kind }, 'retrying leader election')
      if (round >= 10) {
        for (const tp of remaining) finished.set(partitionKey(tp.topic, tp.partition), { ok: false, error: new Error('the partition state kept changing under the election') })
        break
      }
      const { done, retry } = await this.#doElectLeaders(remaining, strategy, round > 0, slices)
      for (const [k, v] of done) finished.set(k, v)
      remaining = retry
    }
    // One line for all of them: the last broker's controlled shutdown fails every election, 100,000 at scale.
    const failed = [...finished].filter(([, v]) => !v.ok) as [string, { ok: false; error: Error }][]
    if (failed.length === 1) this.deps.log.warn({ partition: failed[0]![0], strategy: strategy.kind, err: failed[0]![1].error.message }, 'leader election failed')
    else if (failed.length > 1) {
      this.deps.log.warn(
        { partitions: failed.length, first: failed.slice(0, 5).map(([k]) => k), strategy: strategy.kind, err: failed[0]![1].error.message },
        `leader election failed for ${failed.length} partitions`,
      )
    }
    return finished
  }

  /** One round: from the states held (reread: from the store, after a bad version) to the conditional writes. */
  async #doElectLeaders(partitions: readonly TopicPartition[], strategy: ElectionStrategy, reread: boolean, slices: MainThreadSlices): Promise<{ done: Map<string, ElectionOutcome>; retry: TopicPartition[] }> {
    const { context: ctx, store, batch } = this.deps
    const done = new Map<string, ElectionOutcome>()
    const states = reread ? await store.getPartitionStates(partitions) : await statesHeldOrRead(ctx, store, partitions, slices)
    const valid: { tp: TopicPartition; current: LeaderAndIsr }[] = []
    for (const tp of partitions) {
      const key = partitionKey(tp.topic, tp.partition)
      const state = states.get(key)
      if (state === undefined) done.set(key, { ok: false, error: new Error(`no leader and ISR for partition ${key} in state ${ctx.partitionState(tp)}`) })
      else if (state.controllerEpoch > ctx.epoch) {
        done.set(key, { ok: false, error: new ControllerMovedError(`partition ${key} was written by controller epoch ${state.controllerEpoch}, newer than ${ctx.epoch}`) })
      } else valid.push({ tp, current: state.leaderAndIsr })
    }
    if (valid.length === 0) return { done, retry: [] }

    let unclean = new Map<string, boolean>()
    if (strategy.kind === 'offline' && !strategy.allowUnclean) {
      const noLiveIsr = valid.filter(({ tp, current }) => !current.isr.some((r) => ctx.isReplicaOnlineFor(r, tp)))
      if (noLiveIsr.length > 0) unclean = await this.deps.uncleanLeaderElection([...new Set(noLiveIsr.map((v) => v.tp.topic))])
    }
    const elected: { tp: TopicPartition; result: ElectionResult }[] = []
    for (const { tp, current } of valid) {
      const pause = slices.turn()
      if (pause !== undefined) await pause
      const online = (id: number): boolean => ctx.isReplicaOnlineFor(id, tp)
      const assignment = ctx.replicasOf(tp)
      let result: ElectionResult
      switch (strategy.kind) {
        case 'offline':
          result = leaderForOffline(assignment, current, online, strategy.allowUnclean || unclean.get(tp.topic) === true)
          break
        case 'preferred':
          result = leaderForPreferredReplica(assignment, current, online)
          break
        case 'controlledShutdown':
          result = leaderForControlledShutdown(assignment, current, (id) => ctx.isReplicaOnlineFor(id, tp, true), ctx.shuttingDownBrokerIds)
          break
        case 'reassign':
          // The assignment is the reassignment's target by now (its removed replicas are on their way out).
          result = leaderForReassign(assignment, current, online)
          break
      }
      if (result.leaderAndIsr === undefined) {
        done.set(partitionKey(tp.topic, tp.partition), { ok: false, error: new Error(`no replica of ${tp.topic}-${tp.partition} can lead under the ${strategy.kind} election`) })
      } else elected.push({ tp, result })
    }
    if (elected.length === 0) return { done, retry: [] }
    const token = { epoch: ctx.epoch, epochVersion: ctx.epochVersion }
    const update = await store.updatePartitionStates(
      token,
      elected.map(({ tp, result }) => ({ ...tp, state: { leaderAndIsr: result.leaderAndIsr!, controllerEpoch: ctx.epoch } })),
    )
    const retry: TopicPartition[] = []
    const badVersion = new Set(update.badVersion)
    for (const { tp, result } of elected) {
      // A turn for others every SLICE_MS (33,000 elections at 100,000 partitions), but the batch goes out
      // whole at the end: sent at every pause, the brokers got dozens of small LeaderAndIsr and
      // UpdateMetadata requests, one in flight each, and a broker took its last new leaders seconds later
      // (100,000 partitions: all led after 13-22 s in four runs, against 8.1-9.2 s in two sent whole).
      const pause = slices.turn()
      if (pause !== undefined) await pause
      const key = partitionKey(tp.topic, tp.partition)
      const written = update.updated.get(key)
      if (written !== undefined) {
        const state = { leaderAndIsr: written, controllerEpoch: ctx.epoch }
        ctx.putLeadership(tp, state)
        batch.addLeaderAndIsr(result.recipients, tp, state, false)
        done.set(key, { ok: true, leaderAndIsr: written })
      } else if (badVersion.has(key)) retry.push(tp)
      else done.set(key, { ok: false, error: update.failed.get(key) ?? new Error('not written') })
    }
    return { done, retry }
  }
}
