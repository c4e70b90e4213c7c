// A KIP-932 share group (Kafka's ShareGroup): its epochs, members and target assignment, as the
// share-group records of __consumer_offsets rebuild it. Nothing here decides anything: ShareGroupManager
// computes records, and the replay of those records changes this state (the same on a live append and
// on a reload).
//
//   group epoch        bumped whenever membership, a subscription or the subscribed topics change
//   assignment epoch   the group epoch the target assignment was computed for
//   member epoch       the assignment epoch the member was last given (a share-group member moves to
//                      its target at once: nothing is revoked first, since members may share partitions)
//
// States (Kafka's ShareGroupState): Empty (no members) and Stable; Dead is a deleted group.
import { EMPTY_ASSIGNMENT, MemberState, type Assignment, type SubscribedTopic } from './consumer-group-records.js'
import type { ShareMemberAssignmentState, ShareMemberSubscription, ShareStatePartitionMetadata } from './share-group-records.js'

export type ShareGroupStateName = 'Empty' | 'Stable'

/** Kafka's share-group protocol type (ListGroups) and group type. */
export const SHARE_PROTOCOL_TYPE = 'share'

export interface ShareGroupMember extends ShareMemberSubscription, ShareMemberAssignmentState {
  memberId: string
}

/** A new member as Kafka's ShareGroupMember.Builder makes it: epoch 0, nothing assigned. */
export function newShareMember(memberId: string): ShareGroupMember {
  return { memberId, rackId: null, clientId: '', clientHost: '', subscribedTopicNames: [], memberEpoch: 0, previousMemberEpoch: 0, state: MemberState.STABLE, assignedPartitions: EMPTY_ASSIGNMENT }
}

export function sameShareSubscription(a: ShareMemberSubscription, b: ShareMemberSubscription): boolean {
  return (
    a.rackId === b.rackId &&
    a.clientId === b.clientId &&
    a.clientHost === b.clientHost &&
    a.subscribedTopicNames.length === b.subscribedTopicNames.length &&
    a.subscribedTopicNames.every((t, i) => t === b.subscribedTopicNames[i])
  )
}

export class ShareGroup {
  groupEpoch = 0
  assignmentEpoch = 0
  /** The subscribed topics (by name) as last written: ids and partition counts. */
  subscriptionMetadata = new Map<string, SubscribedTopic>()
  readonly members = new Map<string, ShareGroupMember>()
  readonly targetAssignment = new Map<string, Assignment>()
  /** Which share-partitions have state (ShareGroupStatePartitionMetadata); undefined before its first record. */
  stateMetadata: ShareStatePartitionMetadata | undefined

  constructor(readonly groupId: string) {}

  get state(): ShareGroupStateName {
    return this.members.size === 0 ? 'Empty' : 'Stable'
  }

  isEmpty(): boolean {
    return this.members.size === 0
  }

  targetOf(memberId: string): Assignment {
    return this.targetAssignment.get(memberId) ?? EMPTY_ASSIGNMENT
  }

  /** Topic name -> number of members subscribed to it. */
  subscribedTopicNames(): Map<string, number> {
    const out = new Map<string, number>()
    for (const m of this.members.values()) for (const t of m.subscribedTopicNames) out.set(t, (out.get(t) ?? 0) + 1)
    return out
  }

  // ---- replay ---------------------------------------------------------------------------------------

  /** A ShareGroupMemberMetadata record: the member's subscription (a new member starts at epoch 0). */
  replayMemberSubscription(memberId: string, sub: ShareMemberSubscription): void {
    this.members.set(memberId, { ...(this.members.get(memberId) ?? newShareMember(memberId)), ...sub, memberId })
  }

  /** A member's tombstone. */
  removeMember(memberId: string): void {
    this.members.delete(memberId)
  }

  /** A ShareGroupCurrentMemberAssignment record (null: its tombstone; the member left its epoch). */
  replayCurrentAssignment(memberId: string, a: ShareMemberAssignmentState | null): void {
    const old = this.members.get(memberId)
    if (old === undefined) {
      // A current assignment before the subscription (not how it is written): keep it with defaults.
      if (a !== null) this.members.set(memberId, { ...newShareMember(memberId), ...a })
      return
    }
    this.members.set(memberId, a === null ? { ...old, memberEpoch: -1, previousMemberEpoch: -1, state: MemberState.STABLE, assignedPartitions: EMPTY_ASSIGNMENT } : { ...old, ...a })
  }
}
