// Partition reassignment (KIP-455, Kafka's KafkaController.onPartitionReassignment in ZooKeeper mode).
// A partition's assignment carries the reassignment: replicas RS = target TRS ++ original ORS (distinct),
// adding AR = RS - ORS, removing RR = RS - TRS, written to the topic znode (adding_replicas /
// removing_replicas) so a new controller resumes it. The controller drives it in two phases:
//   A (not all of TRS in the ISR yet): RS/AR/RR to the store; the leader epoch bumped and LeaderAndIsr to
//     every replica of RS (the leader starts tracking the new followers); AR -> NewReplica (they create
//     their logs and fetch).
//   B (every TRS replica in the ISR, seen on an AlterPartition from the leader): AR -> OnlineReplica; the
//     assignment becomes TRS; the leader moves into TRS if it is not there (first live in-ISR TRS replica)
//     or its epoch is bumped; RR -> OfflineReplica (out of the ISR) -> ReplicaDeletionStarted (StopReplica
//     with delete: their logs go) -> NonExistentReplica; TRS to the store; UpdateMetadata to every broker.
// A new target while one is in progress starts from the original replicas again; replicas of the old
// target that the new one drops are stopped and deleted at once. Cancelling is reassigning to ORS.
import { ErrorCode } from '../../domain/errors.js'
import type { Logger } from '../../observability/logger.js'
import { partitionKey, type LeaderAndIsr, type MetadataStore, type ReplicaAssignment } from '../metadata-store.js'
import type { ControllerContext, PartitionReplica, TopicPartition } from './context.js'
import { newLeaderAndIsr } from './election.js'
import type { PartitionStateMachine } from './partition-state-machine.js'
import type { ReplicaStateMachine } from './replica-state-machine.js'
import type { RequestBatch } from './request-batch.js'

export interface ReassignmentDeps {
  context: ControllerContext
  store: MetadataStore
  partitions: PartitionStateMachine
  replicas: ReplicaStateMachine
  batch: RequestBatch
  isTopicQueuedUpForDeletion(topic: string): boolean
  sendUpdateMetadata(partitions: readonly TopicPartition[]): void
  log: Logger
}

export interface ReassignmentResult {
  errorCode: number
  errorMessage: string | null
}

/** The replicas a partition had before its reassignment (Kafka's ReplicaAssignment.originReplicas). */
export function originReplicas(a: ReplicaAssignment): number[] {
  return a.replicas.filter((r) => !a.addingReplicas.includes(r))
}

/** The replicas a partition will have when its reassignment completes. */
export function targetReplicas(a: ReplicaAssignment): number[] {
  return a.replicas.filter((r) => !a.removingReplicas.includes(r))
}

export function isBeingReassigned(a: ReplicaAssignment): boolean {
  return a.addingReplicas.length > 0 || a.removingReplicas.length > 0
}

/** Kafka's ReplicaAssignment.reassignTo: the full set, what is added and what is removed on the way to target. */
export function reassignTo(current: ReplicaAssignment, target: readonly number[]): ReplicaAssignment {
  const origin = originReplicas(current)
  const full = [...new Set([...target, ...origin])]
  return { replicas: full, addingReplicas: full.filter((r) => !origin.includes(r)), removingReplicas: full.filter((r) => !target.includes(r)) }
}

export class ReassignmentManager {
  constructor(private readonly deps: ReassignmentDeps) {}

  /** Partitions with a reassignment in progress, with their assignment. */
  ongoing(): { tp: TopicPartition; assignment: ReplicaAssignment }[] {
    const ctx = this.deps.context
    const out: { tp: TopicPartition; assignment: ReplicaAssignment }[] = []
    for (const tp of ctx.allPartitions()) {
      const a = ctx.assignment(tp)
      if (a !== undefined && isBeingReassigned(a)) out.push({ tp, assignment: a })
    }
    return out
  }

  isReassigning(tp: TopicPartition): boolean {
    const a = this.deps.context.assignment(tp)
    return a !== undefined && isBeingReassigned(a)
  }

  /** At failover: reassignments found in the store continue. */
  async resume(): Promise<void> {
    for (const { tp, assignment } of this.ongoing()) {
      try {
        await this.#onPartitionReassignment(tp, assignment)
      } catch (err) {
        if ((err as Error).name === 'ControllerMovedError') throw err
        this.deps.log.error({ topic: tp.topic, partition: tp.partition, err: (err as Error).message }, 'cannot resume a partition reassignment')
      }
    }
  }

  /**
   * AlterPartitionReassignments: per partition, a new target (replicas) or a cancellation (null). Checked as
   * Kafka does: an unknown partition -> UNKNOWN_TOPIC_OR_PARTITION, an empty or duplicated list or an
   * unknown broker -> INVALID_REPLICA_ASSIGNMENT, a cancellation without a reassignment ->
   * NO_REASSIGNMENT_IN_PROGRESS.
   */
  async submit(requests: readonly { tp: TopicPartition; replicas: number[] | null }[], knownBrokers: ReadonlySet<number>): Promise<Map<string, ReassignmentResult>> {
    const ctx = this.deps.context
    const out = new Map<string, ReassignmentResult>()
    for (const { tp, replicas } of requests) {
      const key = partitionKey(tp.topic, tp.partition)
      const current = ctx.assignment(tp)
      if (current === undefined || this.deps.isTopicQueuedUpForDeletion(tp.topic)) {
        out.set(key, { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: `The partition ${tp.topic}-${tp.partition} does not exist.` })
        continue
      }
      let target: number[]
      if (replicas === null) {
        if (!isBeingReassigned(current)) {
          out.set(key, { errorCode: ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, errorMessage: `No reassignment of ${tp.topic}-${tp.partition} is in progress.` })
          continue
        }
        target = originReplicas(current)
      } else {
        const invalid = validateTarget(replicas, knownBrokers)
        if (invalid !== undefined) {
          out.set(key, { errorCode: ErrorCode.INVALID_REPLICA_ASSIGNMENT, errorMessage: `${invalid} (partition ${tp.topic}-${tp.partition})` })
          continue
        }
        target = replicas
      }
      try {
        await this.#onPartitionReassignment(tp, reassignTo(current, target))
        out.set(key, { errorCode: ErrorCode.NONE, errorMessage: null })
      } catch (err) {
        if ((err as Error).name === 'ControllerMovedError') throw err
        this.deps.log.error({ topic: tp.topic, partition: tp.partition, err: (err as Error).message }, 'partition reassignment failed')
        out.set(key, { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: (err as Error).message })
      }
    }
    return out
  }

  /** The ISR of these partitions changed: reassignments whose target is all in sync complete. */
  async onIsrChange(partitions: readonly TopicPartition[]): Promise<void> {
    for (const tp of partitions) {
      const a = this.deps.context.assignment(tp)
      if (a === undefined || !isBeingReassigned(a)) continue
      const isr = this.deps.context.leadershipOf(tp)?.leaderAndIsr.isr ?? []
      if (targetReplicas(a).every((r) => isr.includes(r))) await this.#onPartitionReassignment(tp, a)
    }
  }

  /** A broker came back: reassignments waiting on it are tried again (its replicas fetch, then AlterPartition completes them). */
  async onBrokerStartup(brokerIds: ReadonlySet<number>): Promise<void> {
    for (const { tp, assignment } of this.ongoing()) {
      if (assignment.addingReplicas.some((r) => brokerIds.has(r))) await this.#onPartitionReassignment(tp, assignment)
    }
  }

  async #onPartitionReassignment(tp: TopicPartition, reassignment: ReplicaAssignment): Promise<void> {
    const { context: ctx, replicas: rsm, log } = this.deps
    await this.#updateCurrentReassignment(tp, reassignment)
    if (!(await this.#isReassignmentComplete(tp, reassignment))) {
      log.info({ topic: tp.topic, partition: tp.partition, replicas: reassignment.replicas, adding: reassignment.addingReplicas, removing: reassignment.removingReplicas }, 'partition reassignment: adding replicas')
      await this.#updateLeaderEpochAndSend(tp, reassignment.replicas)
      const fresh = reassignment.addingReplicas.map((replica) => ({ ...tp, replica })).filter((r) => ctx.replicaState(r) === 'NonExistentReplica')
      await rsm.handleStateChanges(fresh, 'NewReplica')
      return
    }
    const target = targetReplicas(reassignment)
    log.info({ topic: tp.topic, partition: tp.partition, replicas: target, removing: reassignment.removingReplicas }, 'partition reassignment: target in sync, completing')
    await rsm.handleStateChanges(reassignment.addingReplicas.map((replica) => ({ ...tp, replica })), 'OnlineReplica')
    const completed: ReplicaAssignment = { replicas: target, addingReplicas: [], removingReplicas: [] }
    ctx.setAssignment(tp, completed)
    await this.#moveLeaderIfRequired(tp, target)
    await this.#stopRemovedReplicas(tp, reassignment.removingReplicas)
    await this.#writeAssignment(tp, completed)
    this.deps.sendUpdateMetadata([tp])
    log.info({ topic: tp.topic, partition: tp.partition, replicas: target }, 'partition reassignment completed')
  }

  async #updateCurrentReassignment(tp: TopicPartition, reassignment: ReplicaAssignment): Promise<void> {
    const ctx = this.deps.context
    const current = ctx.assignment(tp)!
    if (sameAssignment(current, reassignment)) return
    await this.#writeAssignment(tp, reassignment)
    ctx.setAssignment(tp, reassignment)
    // Replicas an earlier target added that this one does not want go at once.
    const unneeded = current.replicas.filter((r) => !reassignment.replicas.includes(r))
    if (unneeded.length > 0) await this.#stopRemovedReplicas(tp, unneeded)
  }

  async #isReassignmentComplete(tp: TopicPartition, a: ReplicaAssignment): Promise<boolean> {
    if (!isBeingReassigned(a)) return true
    const state = (await this.deps.store.getPartitionStates([tp])).get(partitionKey(tp.topic, tp.partition))
    if (state === undefined) return false
    return targetReplicas(a).every((r) => state.leaderAndIsr.isr.includes(r))
  }

  async #moveLeaderIfRequired(tp: TopicPartition, target: readonly number[]): Promise<void> {
    const ctx = this.deps.context
    const leader = ctx.leadershipOf(tp)?.leaderAndIsr.leader ?? -1
    if (target.includes(leader) && ctx.isReplicaOnline(leader)) {
      await this.#updateLeaderEpochAndSend(tp, target)
      return
    }
    const results = await this.deps.partitions.handleStateChanges([tp], 'OnlinePartition', { kind: 'reassign' })
    const outcome = results.get(partitionKey(tp.topic, tp.partition))
    if (outcome !== undefined && !outcome.ok) this.deps.log.warn({ topic: tp.topic, partition: tp.partition, err: outcome.error.message }, 'no leader in the reassignment target yet')
  }

  async #stopRemovedReplicas(tp: TopicPartition, removed: readonly number[]): Promise<void> {
    const rsm = this.deps.replicas
    const replicas: PartitionReplica[] = removed.map((replica) => ({ ...tp, replica }))
    await rsm.handleStateChanges(replicas, 'OfflineReplica')
    await rsm.handleStateChanges(replicas, 'ReplicaDeletionStarted')
    await rsm.handleStateChanges(replicas, 'ReplicaDeletionSuccessful')
    await rsm.handleStateChanges(replicas, 'NonExistentReplica')
  }

  /** The same leader and ISR at the next leader epoch, to `recipients` (Kafka's updateLeaderEpochAndSendRequest). */
  async #updateLeaderEpochAndSend(tp: TopicPartition, recipients: readonly number[]): Promise<void> {
    const { context: ctx, store, batch, log } = this.deps
    const key = partitionKey(tp.topic, tp.partition)
    for (let round = 0; round < 10; round++) {
      const state = (await store.getPartitionStates([tp])).get(key)
      if (state === undefined) {
        log.warn({ topic: tp.topic, partition: tp.partition }, 'no partition state to bump the leader epoch of')
        return
      }
      const next: LeaderAndIsr = newLeaderAndIsr(state.leaderAndIsr, state.leaderAndIsr.leader, [...state.leaderAndIsr.isr])
      const token = { epoch: ctx.epoch, epochVersion: ctx.epochVersion }
      const result = await store.updatePartitionStates(token, [{ ...tp, state: { leaderAndIsr: next, controllerEpoch: ctx.epoch } }])
      const written = result.updated.get(key)
      if (written !== undefined) {
        const s = { leaderAndIsr: written, controllerEpoch: ctx.epoch }
        ctx.putLeadership(tp, s)
        batch.newBatch()
        batch.addLeaderAndIsr(recipients.filter((r) => ctx.isReplicaOnline(r, true)), tp, s, false)
        batch.send()
        return
      }
      if (!result.badVersion.includes(key)) {
        log.warn({ topic: tp.topic, partition: tp.partition, err: result.failed.get(key)?.message }, 'cannot bump the leader epoch')
        return
      }
    }
  }

  async #writeAssignment(tp: TopicPartition, a: ReplicaAssignment): Promise<void> {
    const ctx = this.deps.context
    const assignment = (await this.deps.store.getTopicAssignments([tp.topic])).get(tp.topic)
    if (assignment === undefined) throw new Error(`topic ${tp.topic} is gone`)
    assignment.partitions[tp.partition] = { replicas: [...a.replicas], addingReplicas: [...a.addingReplicas], removingReplicas: [...a.removingReplicas] }
    if (assignment.topicId === null) assignment.topicId = ctx.topicIds.get(tp.topic) ?? null
    await this.deps.store.setTopicAssignments({ epoch: ctx.epoch, epochVersion: ctx.epochVersion }, [assignment])
  }
}

function validateTarget(replicas: readonly number[], knownBrokers: ReadonlySet<number>): string | undefined {
  if (replicas.length === 0) return 'The replica list is empty.'
  if (new Set(replicas).size !== replicas.length) return `The replica list ${JSON.stringify(replicas)} has duplicates.`
  const unknown = replicas.filter((r) => !knownBrokers.has(r))
  if (unknown.length > 0) return `The replica list names brokers that are not registered: ${unknown.join(', ')}.`
  return undefined
}

function sameAssignment(a: ReplicaAssignment, b: ReplicaAssignment): boolean {
  const eq = (x: readonly number[], y: readonly number[]): boolean => x.length === y.length && x.every((v, i) => v === y[i])
  return eq(a.replicas, b.replicas) && eq(a.addingReplicas, b.addingReplicas) && eq(a.removingReplicas, b.removingReplicas)
}
