// A KIP-848 consumer group (Kafka's ConsumerGroup): its epochs, members, target assignment and which
// member owns each partition, as the consumer-group records of __consumer_offsets rebuild it. Nothing
// here decides anything; ConsumerGroupManager computes records and the replay of those records changes
// this state (the same on a live append and on a reload).
//
//   group epoch        bumped whenever membership, a subscription or the subscribed topics change
//   assignment epoch   the group epoch the target assignment was computed for
//   member epoch       the target epoch a member has reconciled to (a member lags while it revokes
//                      partitions or waits for others to release theirs)
//
// State (Kafka's): Empty (no members), Assigning (group epoch > assignment epoch), Reconciling (some
// member not yet STABLE at the assignment epoch), Stable.
//
// Invariant: partitionEpochs maps every partition a member holds (assigned or pending revocation) to
// that member's epoch; a partition in it is not free, so no other member gets it until it is released.
import { ErrorCode } from '../../domain/errors.js'
import { EMPTY_ASSIGNMENT, MemberState, type Assignment, type MemberAssignmentState, type MemberSubscription, type SubscribedTopic } from './consumer-group-records.js'

/** Kafka's member epoch sentinels in ConsumerGroupHeartbeat. */
export const JOIN_GROUP_MEMBER_EPOCH = 0
export const LEAVE_GROUP_MEMBER_EPOCH = -1
export const LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

export type ConsumerGroupStateName = 'Empty' | 'Assigning' | 'Reconciling' | 'Stable'

export interface ConsumerGroupMember extends MemberSubscription, MemberAssignmentState {
  memberId: string
}

/** A new member as Kafka's ConsumerGroupMember.Builder makes it: epoch 0, nothing assigned. */
export function newMember(memberId: string): ConsumerGroupMember {
  return {
    memberId,
    instanceId: null,
    rackId: null,
    clientId: '',
    clientHost: '',
    subscribedTopicNames: [],
    subscribedTopicRegex: null,
    rebalanceTimeoutMs: -1,
    serverAssignor: null,
    memberEpoch: 0,
    previousMemberEpoch: 0,
    state: MemberState.STABLE,
    assignedPartitions: EMPTY_ASSIGNMENT,
    partitionsPendingRevocation: EMPTY_ASSIGNMENT,
  }
}

export function isReconciledTo(m: MemberAssignmentState, assignmentEpoch: number): boolean {
  return m.state === MemberState.STABLE && m.memberEpoch === assignmentEpoch
}

export function sameSubscription(a: MemberSubscription, b: MemberSubscription): boolean {
  return (
    a.instanceId === b.instanceId &&
    a.rackId === b.rackId &&
    a.clientId === b.clientId &&
    a.clientHost === b.clientHost &&
    a.subscribedTopicRegex === b.subscribedTopicRegex &&
    a.rebalanceTimeoutMs === b.rebalanceTimeoutMs &&
    a.serverAssignor === b.serverAssignor &&
    sameTopicNames(a.subscribedTopicNames, b.subscribedTopicNames)
  )
}

export function sameTopicNames(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i])
}

export class ConsumerGroup {
  groupEpoch = 0
  assignmentEpoch = 0
  /** The subscribed topics (by name) as last written: ids and partition counts. */
  subscriptionMetadata = new Map<string, SubscribedTopic>()
  readonly members = new Map<string, ConsumerGroupMember>()
  /** group.instance.id -> member id */
  readonly staticMembers = new Map<string, string>()
  readonly targetAssignment = new Map<string, Assignment>()
  /** topic id -> partition -> epoch of the member holding it */
  readonly #partitionEpochs = new Map<string, Map<number, number>>()

  constructor(readonly groupId: string) {}

  get state(): ConsumerGroupStateName {
    if (this.members.size === 0) return 'Empty'
    if (this.groupEpoch > this.assignmentEpoch) return 'Assigning'
    for (const m of this.members.values()) if (!isReconciledTo(m, this.assignmentEpoch)) return 'Reconciling'
    return 'Stable'
  }

  isEmpty(): boolean {
    return this.members.size === 0
  }

  staticMember(instanceId: string): ConsumerGroupMember | undefined {
    const id = this.staticMembers.get(instanceId)
    return id === undefined ? undefined : this.members.get(id)
  }

  targetOf(memberId: string): Assignment {
    return this.targetAssignment.get(memberId) ?? EMPTY_ASSIGNMENT
  }

  /** The epoch of the member holding the partition, -1 when nobody does. */
  currentPartitionEpoch(topicId: string, partition: number): number {
    return this.#partitionEpochs.get(topicId)?.get(partition) ?? -1
  }

  /** Topic name -> number of members subscribed to it. */
  subscribedTopicNames(): Map<string, number> {
    const out = new Map<string, number>()
    for (const m of this.members.values()) for (const t of m.subscribedTopicNames) out.set(t, (out.get(t) ?? 0) + 1)
    return out
  }

  isSubscribedToTopic(topic: string): boolean {
    for (const m of this.members.values()) if (m.subscribedTopicNames.includes(topic)) return true
    return false
  }

  // ---- offsets (Kafka's ConsumerGroup.validateOffsetCommit / validateOffsetFetch) ---------------

  /**
   * A commit with a negative epoch and no member is a simple commit, allowed while the group is empty;
   * otherwise the member must exist and commit at its current epoch. A member of this protocol must use
   * OffsetCommit v9+ (consumerProtocolCapable) unless the commit is transactional.
   */
  offsetCommitError(memberId: string, memberEpoch: number, transactional: boolean, consumerProtocolCapable: boolean): ErrorCode {
    if (memberEpoch < 0 && this.members.size === 0) return ErrorCode.NONE
    const member = this.members.get(memberId)
    if (member === undefined) return ErrorCode.UNKNOWN_MEMBER_ID
    if (!transactional && !consumerProtocolCapable) return ErrorCode.UNSUPPORTED_VERSION
    return memberEpoch === member.memberEpoch ? ErrorCode.NONE : ErrorCode.STALE_MEMBER_EPOCH
  }

  /** memberId null and a negative epoch: an admin or a client outside the group; accepted. */
  offsetFetchError(memberId: string | null, memberEpoch: number): ErrorCode {
    if (memberId === null && memberEpoch < 0) return ErrorCode.NONE
    const member = memberId === null ? undefined : this.members.get(memberId)
    if (member === undefined) return ErrorCode.UNKNOWN_MEMBER_ID
    return memberEpoch === member.memberEpoch ? ErrorCode.NONE : ErrorCode.STALE_MEMBER_EPOCH
  }

  // ---- replay ---------------------------------------------------------------------------------------

  /** A ConsumerGroupMemberMetadata record: the member's subscription (a new member starts at epoch 0). */
  replayMemberSubscription(memberId: string, sub: MemberSubscription): void {
    const old = this.members.get(memberId)
    const member: ConsumerGroupMember = { ...(old ?? newMember(memberId)), ...sub, memberId }
    if (old?.instanceId !== undefined && old.instanceId !== null && old.instanceId !== member.instanceId && this.staticMembers.get(old.instanceId) === memberId) {
      this.staticMembers.delete(old.instanceId)
    }
    if (member.instanceId !== null) this.staticMembers.set(member.instanceId, memberId)
    this.members.set(memberId, member)
  }

  /** A member's tombstone (its assignments are gone by then, as Kafka writes them first). */
  removeMember(memberId: string): void {
    const m = this.members.get(memberId)
    if (m === undefined) return
    this.#removePartitionEpochs(m)
    this.members.delete(memberId)
    if (m.instanceId !== null && this.staticMembers.get(m.instanceId) === memberId) this.staticMembers.delete(m.instanceId)
  }

  /** A ConsumerGroupCurrentMemberAssignment record (null: its tombstone, the member left its epoch). */
  replayCurrentAssignment(memberId: string, a: MemberAssignmentState | null): void {
    const old = this.members.get(memberId)
    if (old === undefined) {
      if (a === null) return
      // A current assignment before the subscription (not how Kafka writes them): keep it with defaults.
      this.members.set(memberId, { ...newMember(memberId), ...a })
      this.#addPartitionEpochs(this.members.get(memberId)!)
      return
    }
    this.#removePartitionEpochs(old)
    const next: ConsumerGroupMember =
      a === null
        ? { ...old, memberEpoch: LEAVE_GROUP_MEMBER_EPOCH, previousMemberEpoch: LEAVE_GROUP_MEMBER_EPOCH, state: MemberState.STABLE, assignedPartitions: EMPTY_ASSIGNMENT, partitionsPendingRevocation: EMPTY_ASSIGNMENT }
        : { ...old, ...a }
    this.members.set(memberId, next)
    this.#addPartitionEpochs(next)
  }

  #addPartitionEpochs(m: ConsumerGroupMember): void {
    for (const a of [m.assignedPartitions, m.partitionsPendingRevocation]) {
      for (const [topicId, partitions] of a) {
        let byPartition = this.#partitionEpochs.get(topicId)
        if (byPartition === undefined) this.#partitionEpochs.set(topicId, (byPartition = new Map()))
        for (const p of partitions) byPartition.set(p, m.memberEpoch)
      }
    }
  }

  #removePartitionEpochs(m: ConsumerGroupMember): void {
    for (const a of [m.assignedPartitions, m.partitionsPendingRevocation]) {
      for (const [topicId, partitions] of a) {
        const byPartition = this.#partitionEpochs.get(topicId)
        if (byPartition === undefined) continue
        for (const p of partitions) if (byPartition.get(p) === m.memberEpoch) byPartition.delete(p)
        if (byPartition.size === 0) this.#partitionEpochs.delete(topicId)
      }
    }
  }
}
