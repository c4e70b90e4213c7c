// Partition leader election algorithms (Kafka's PartitionLeaderElectionAlgorithms and Election.scala).
// Pure functions over a partition's assignment, ISR and the brokers that are up; the partition state
// machine writes what they decide. Every new leader gets the leader epoch + 1.
import { LeaderRecoveryState, type LeaderAndIsr } from '../metadata-store.js'

/** How a leader is chosen (Kafka's PartitionLeaderElectionStrategy). */
export type ElectionStrategy =
  | { kind: 'offline'; allowUnclean: boolean }
  | { kind: 'preferred' }
  | { kind: 'controlledShutdown' }
  | { kind: 'reassign' }

export interface ElectionResult {
  /** The new state, or undefined when no replica qualifies. */
  leaderAndIsr: LeaderAndIsr | undefined
  /** Who gets the LeaderAndIsr request. */
  recipients: number[]
}

/** The first replica in assignment order that is live and in the ISR; with unclean election, else the first live one. */
export function offlinePartitionLeader(assignment: readonly number[], isr: readonly number[], live: ReadonlySet<number>, uncleanAllowed: boolean): number | undefined {
  const clean = assignment.find((id) => live.has(id) && isr.includes(id))
  if (clean !== undefined) return clean
  return uncleanAllowed ? assignment.find((id) => live.has(id)) : undefined
}

/** The preferred replica (assignment head), only if it is live and in the ISR. */
export function preferredReplicaLeader(assignment: readonly number[], isr: readonly number[], live: ReadonlySet<number>): number | undefined {
  const head = assignment[0]
  return head !== undefined && live.has(head) && isr.includes(head) ? head : undefined
}

/** The first live, in-ISR replica that is not shutting down. */
export function controlledShutdownLeader(assignment: readonly number[], isr: readonly number[], live: ReadonlySet<number>, shuttingDown: ReadonlySet<number>): number | undefined {
  return assignment.find((id) => live.has(id) && isr.includes(id) && !shuttingDown.has(id))
}

/** The same ISR under a new leader, at the next leader epoch (Kafka's LeaderAndIsr.newLeaderAndIsr). */
export function newLeaderAndIsr(current: LeaderAndIsr, leader: number, isr: number[], recovery = current.leaderRecoveryState): LeaderAndIsr {
  return { leader, leaderEpoch: current.leaderEpoch + 1, isr, leaderRecoveryState: recovery, partitionEpoch: current.partitionEpoch }
}

/**
 * Election for an offline (or new-leader-needed) partition (Election.leaderForOffline). A leader from the
 * ISR keeps the live part of the ISR; an unclean leader starts a new ISR of itself and the partition is
 * RECOVERING until its ISR grows again.
 */
export function leaderForOffline(assignment: readonly number[], current: LeaderAndIsr, online: (id: number) => boolean, uncleanAllowed: boolean): ElectionResult {
  const liveReplicas = assignment.filter(online)
  const leader = offlinePartitionLeader(assignment, current.isr, new Set(liveReplicas), uncleanAllowed)
  if (leader === undefined) return { leaderAndIsr: undefined, recipients: liveReplicas }
  if (current.isr.includes(leader)) return { leaderAndIsr: newLeaderAndIsr(current, leader, current.isr.filter(online)), recipients: liveReplicas }
  return { leaderAndIsr: newLeaderAndIsr(current, leader, [leader], LeaderRecoveryState.RECOVERING), recipients: liveReplicas }
}

export function leaderForPreferredReplica(assignment: readonly number[], current: LeaderAndIsr, online: (id: number) => boolean): ElectionResult {
  const liveReplicas = assignment.filter(online)
  const leader = preferredReplicaLeader(assignment, current.isr, new Set(liveReplicas))
  return { leaderAndIsr: leader === undefined ? undefined : newLeaderAndIsr(current, leader, [...current.isr]), recipients: liveReplicas }
}

/**
 * The ISR loses the brokers shutting down. They are not among the recipients: instead of following the
 * new leader (and being added back to the ISR by it while they still fetch, until they stop), they get a
 * StopReplica from the controlled shutdown.
 */
export function leaderForControlledShutdown(assignment: readonly number[], current: LeaderAndIsr, onlineOrShuttingDown: (id: number) => boolean, shuttingDown: ReadonlySet<number>): ElectionResult {
  const liveOrShuttingDown = assignment.filter(onlineOrShuttingDown)
  const leader = controlledShutdownLeader(assignment, current.isr, new Set(liveOrShuttingDown), shuttingDown)
  const isr = current.isr.filter((r) => !shuttingDown.has(r))
  return { leaderAndIsr: leader === undefined ? undefined : newLeaderAndIsr(current, leader, isr), recipients: liveOrShuttingDown.filter((id) => !shuttingDown.has(id)) }
}

/**
 * A reassignment moving the leader into its target replicas (Election.leaderForReassign): the first target
 * replica that is live and in the ISR; the ISR is kept (the removed replicas leave it afterwards).
 */
export function leaderForReassign(targetReplicas: readonly number[], current: LeaderAndIsr, online: (id: number) => boolean): ElectionResult {
  const leader = targetReplicas.find((id) => online(id) && current.isr.includes(id))
  return { leaderAndIsr: leader === undefined ? undefined : newLeaderAndIsr(current, leader, [...current.isr]), recipients: targetReplicas.filter(online) }
}
