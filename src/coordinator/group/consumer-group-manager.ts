// KIP-848 consumer groups of one __consumer_offsets partition (Kafka's GroupMetadataManager, consumer
// protocol): ConsumerGroupHeartbeat (join, heartbeat, leave, static membership), the server-side
// target assignment (group.consumer.assignors), each member's reconciliation towards it, session and
// rebalance timeouts, ConsumerGroupDescribe, and the group side of ListGroups/DeleteGroups/offsets.
//
// Records first, as in Kafka: an operation computes the consumer-group records (consumer-group-records.ts)
// from the current state and answers; the runtime appends them and the replay of those records is
// what changes the groups (ConsumerGroup), live and on load alike.
//
// A heartbeat (Kafka's consumerGroupHeartbeat):
//   1. the member is created or updated (MemberMetadata record); a changed subscription, or changed
//      subscribed topics (a topic created, deleted or grown), bumps the group epoch (PartitionMetadata,
//      GroupMetadata records);
//   2. a group epoch above the assignment epoch makes a new target assignment with the group's assignor
//      (TargetAssignmentMember records for the members whose target changed, TargetAssignmentMetadata);
//   3. the member is reconciled towards its target (CurrentMemberAssignment): partitions it must give up
//      are first revoked (it keeps its epoch, UNREVOKED_PARTITIONS, until a heartbeat no longer lists
//      them, or rebalanceTimeoutMs passes and it is fenced); partitions another member still holds are
//      not handed out (UNRELEASED_PARTITIONS) until that member has released them; then the member moves
//      to the assignment epoch. So a partition never has two owners.
// A member that misses group.consumer.session.timeout.ms, or leaves (epoch -1), is fenced: its records
// get tombstones and the group epoch is bumped, so the others get its partitions on their next
// heartbeats. A static member (instance id) leaving with epoch -2 keeps its assignment for the session
// timeout; rejoining with the same instance id takes it over under a new member id.
//
// A group id is a classic group or a consumer group, not both: a heartbeat for a non-empty classic group
// gets GROUP_ID_NOT_FOUND; an empty classic group (offsets only) becomes a consumer group (Kafka's
// conversion of empty groups; non-empty ones are not migrated, as with group.consumer.migration.policy
// disabled). A classic JoinGroup on a non-empty consumer group gets INCONSISTENT_GROUP_PROTOCOL
// (group-coordinator-state.ts).
import { randomBytes } from 'node:crypto'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import type { CoordinatorRecord } from '../runtime/partition-writer.js'
import { noRecords, type CoordinatorResult, type StateMachineContext } from '../runtime/runtime.js'
import type { ClassicGroup } from './classic-group.js'
import {
  ConsumerGroup,
  JOIN_GROUP_MEMBER_EPOCH,
  LEAVE_GROUP_MEMBER_EPOCH,
  LEAVE_GROUP_STATIC_MEMBER_EPOCH,
  isReconciledTo,
  newMember,
  sameSubscription,
  sameTopicNames,
  type ConsumerGroupMember,
} from './consumer-group.js'
import {
  EMPTY_ASSIGNMENT,
  MemberState,
  assignmentEntries,
  assignmentsEqual,
  currentAssignmentRecord,
  currentAssignmentTombstone,
  decodeCurrentAssignment,
  decodeGroupEpoch,
  decodeMemberSubscription,
  decodeSubscriptionMetadata,
  decodeTargetAssignment,
  decodeTargetAssignmentEpoch,
  groupEpochRecord,
  groupEpochTombstone,
  memberSubscriptionRecord,
  memberSubscriptionTombstone,
  subscriptionMetadataRecord,
  subscriptionMetadataTombstone,
  targetAssignmentEpochRecord,
  targetAssignmentEpochTombstone,
  targetAssignmentRecord,
  targetAssignmentTombstone,
  type Assignment,
  type MemberAssignmentState,
  type SubscribedTopic,
  sameSubscribedTopics,
  subscribedTopics,
} from './consumer-group-records.js'
import type { ConsumerGroupKey } from './offset-commit-group-metadata-records.js'
import { BUILT_IN_ASSIGNORS, UNIFORM_ASSIGNOR, RANGE_ASSIGNOR, type ServerAssignor } from './server-assignors.js'
import type {
  ConsumerGroupHeartbeatInput,
  ConsumerGroupHeartbeatResult,
  DescribedConsumerGroup,
  DescribedTopicPartitions,
  GroupCoordinatorConfig,
  ListedGroup,
  TopicPartitionsById,
  TopicsView,
} from './types.js'

const DEFAULT_SESSION_TIMEOUT_MS = 45_000
const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000

const sessionKey = (groupId: string, memberId: string): string => `consumer-session\u0000${groupId}\u0000${memberId}`
const rebalanceKey = (groupId: string, memberId: string): string => `consumer-rebalance\u0000${groupId}\u0000${memberId}`

/** Kafka's Uuid.randomUuid().toString(): 16 random bytes, base64url without padding. */
function randomMemberId(): string {
  return randomBytes(16).toString('base64url')
}

/** An error a heartbeat answers with (Kafka's ApiException): the code and the message clients log. */
class GroupRequestError extends KafkaError {
  constructor(
    code: ErrorCode,
    readonly detail: string,
  ) {
    super(code, detail)
  }
}

/** What the consumer groups need of the classic ones (a group id is one or the other). */
export interface ClassicGroupsView {
  group(groupId: string): ClassicGroup | undefined
  /** The tombstone of an empty classic group, which is forgotten from now on. */
  deleteGroup(group: ClassicGroup): CoordinatorRecord
}

function isSubset(owned: readonly TopicPartitionsById[] | null, target: Assignment): boolean {
  if (owned === null) return false
  for (const t of owned) {
    const ps = target.get(t.topicId)
    if (t.partitions.length > 0 && ps === undefined) return false
    for (const p of t.partitions) if (!ps!.has(p)) return false
  }
  return true
}

/** Whether the member still reports owning any of these partitions (unknown, null: assume it does). */
function ownsAny(owned: readonly TopicPartitionsById[] | null, partitions: Assignment): boolean {
  if (owned === null) return true
  for (const t of owned) {
    const ps = partitions.get(t.topicId)
    if (ps === undefined) continue
    for (const p of t.partitions) if (ps.has(p)) return true
  }
  return false
}

export class ConsumerGroupManager {
  readonly #groups = new Map<string, ConsumerGroup>()
  readonly #assignors: ReadonlyMap<string, ServerAssignor>
  readonly #defaultAssignor: ServerAssignor

  constructor(
    private readonly ctx: StateMachineContext<unknown>,
    private readonly config: GroupCoordinatorConfig,
    private readonly topics: TopicsView,
    private readonly classic: ClassicGroupsView,
  ) {
    const names = config.consumerGroupAssignors ?? [UNIFORM_ASSIGNOR, RANGE_ASSIGNOR]
    const byName = new Map(BUILT_IN_ASSIGNORS.map((a) => [a.name, a]))
    this.#assignors = new Map(names.map((n) => [n, byName.get(n)!]).filter(([, a]) => a !== undefined) as [string, ServerAssignor][])
    this.#defaultAssignor = this.#assignors.values().next().value ?? byName.get(UNIFORM_ASSIGNOR)!
  }

  /** The group's session timeout: its group config consumer.session.timeout.ms, else the broker's. */
  private sessionTimeoutMs(groupId: string): number {
    return this.config.consumerGroupConfig?.(groupId).sessionTimeoutMs ?? this.config.consumerGroupSessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS
  }

  /** The group's heartbeat interval: its group config consumer.heartbeat.interval.ms, else the broker's. */
  private heartbeatIntervalMs(groupId: string): number {
    return this.config.consumerGroupConfig?.(groupId).heartbeatIntervalMs ?? this.config.consumerGroupHeartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS
  }

  // ---- groups -----------------------------------------------------------------------------------

  group(groupId: string): ConsumerGroup | undefined {
    return this.#groups.get(groupId)
  }

  allGroups(): ConsumerGroup[] {
    return [...this.#groups.values()]
  }

  // ---- replay -----------------------------------------------------------------------------------

  replay(key: ConsumerGroupKey, value: Buffer | null): void {
    let group = this.#groups.get(key.group)
    if (group === undefined) {
      if (value === null) return
      this.#groups.set(key.group, (group = new ConsumerGroup(key.group)))
    }
    const memberId = key.memberId ?? ''
    switch (key.record) {
      case 'metadata':
        if (value === null) this.#groups.delete(key.group)
        else group.groupEpoch = decodeGroupEpoch(value)
        break
      case 'partition-metadata':
        group.subscriptionMetadata = new Map((value === null ? [] : decodeSubscriptionMetadata(value)).map((t) => [t.topicName, t]))
        break
      case 'member-metadata':
        if (value === null) group.removeMember(memberId)
        else group.replayMemberSubscription(memberId, decodeMemberSubscription(value))
        break
      case 'target-assignment-metadata':
        group.assignmentEpoch = value === null ? 0 : decodeTargetAssignmentEpoch(value)
        break
      case 'target-assignment-member':
        if (value === null) group.targetAssignment.delete(memberId)
        else group.targetAssignment.set(memberId, decodeTargetAssignment(value))
        break
      case 'current-member-assignment':
        group.replayCurrentAssignment(memberId, value === null ? null : decodeCurrentAssignment(value))
        break
    }
  }

  /** Loaded members must heartbeat within the session timeout; those revoking, within their rebalance timeout. */
  onLoaded(): void {
    for (const group of this.#groups.values()) {
      for (const m of group.members.values()) {
        this.scheduleSessionTimeout(group.groupId, m.memberId)
        if (m.state === MemberState.UNREVOKED_PARTITIONS) this.scheduleRebalanceTimeout(group.groupId, m.memberId, m.memberEpoch, m.rebalanceTimeoutMs)
      }
    }
  }

  // ---- timers -----------------------------------------------------------------------------------

  private scheduleSessionTimeout(groupId: string, memberId: string): void {
    this.ctx.timer.schedule(sessionKey(groupId, memberId), this.sessionTimeoutMs(groupId), () => this.fenceMemberOperation(groupId, memberId, 'the member session expired'))
  }

  private scheduleRebalanceTimeout(groupId: string, memberId: string, memberEpoch: number, timeoutMs: number): void {
    this.ctx.timer.schedule(rebalanceKey(groupId, memberId), Math.max(0, timeoutMs), () => {
      const member = this.#groups.get(groupId)?.members.get(memberId)
      if (member === undefined || member.memberEpoch !== memberEpoch) return noRecords(undefined)
      return this.fenceMemberOperation(groupId, memberId, `it did not revoke its partitions of epoch ${memberEpoch} within ${timeoutMs} ms`)
    })
  }

  private cancelTimers(groupId: string, memberId: string): void {
    this.ctx.timer.cancel(sessionKey(groupId, memberId))
    this.ctx.timer.cancel(rebalanceKey(groupId, memberId))
  }

  /** A timer's fencing: nothing when the group or the member is gone already. */
  fenceMemberOperation(groupId: string, memberId: string, reason: string): CoordinatorResult<void> {
    const group = this.#groups.get(groupId)
    const member = group?.members.get(memberId)
    if (group === undefined || member === undefined) return noRecords(undefined)
    this.ctx.log.info({ groupId, memberId, reason }, 'consumer group member fenced')
    return { records: this.fenceMember(group, member), result: undefined }
  }

  // ---- ConsumerGroupHeartbeat -------------------------------------------------------------------

  heartbeat(req: ConsumerGroupHeartbeatInput): CoordinatorResult<ConsumerGroupHeartbeatResult> {
    try {
      this.validate(req)
      if (req.memberEpoch === LEAVE_GROUP_MEMBER_EPOCH || req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) return this.leave(req)
      return this.memberHeartbeat(req)
    } catch (err) {
      if (!(err instanceof KafkaError)) throw err
      const errorMessage = err instanceof GroupRequestError ? err.detail : null
      return noRecords({ errorCode: err.code, errorMessage, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null })
    }
  }

  /** Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid. */
  private validate(req: ConsumerGroupHeartbeatInput): void {
    const invalid = (detail: string): GroupRequestError => new GroupRequestError(ErrorCode.INVALID_REQUEST, detail)
    if (req.groupId === '') throw invalid("GroupId can't be empty.")
    if (req.instanceId === '') throw invalid("InstanceId can't be empty.")
    if (req.rackId === '') throw invalid("RackId can't be empty.")
    if (req.subscribedTopicRegex !== null) throw invalid('SubscribedTopicRegex is not supported yet.')
    if (req.memberEpoch > 0 || req.memberEpoch === LEAVE_GROUP_MEMBER_EPOCH) {
      if (req.memberId === '') throw invalid("MemberId can't be empty.")
    } else if (req.memberEpoch === JOIN_GROUP_MEMBER_EPOCH) {
      if (req.rebalanceTimeoutMs === -1) throw invalid('RebalanceTimeoutMs must be provided in first request.')
      if (req.topicPartitions === null || req.topicPartitions.length > 0) throw invalid('TopicPartitions must be empty when (re-)joining.')
      if (req.subscribedTopicNames === null || req.subscribedTopicNames.length === 0) throw invalid('SubscribedTopicNames must be set in first request.')
    } else if (req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
      if (req.memberId === '') throw invalid("MemberId can't be empty.")
      if (req.instanceId === null) throw invalid("InstanceId can't be null.")
    } else {
      throw invalid('MemberEpoch is invalid.')
    }
    if (req.serverAssignor !== null && !this.#assignors.has(req.serverAssignor)) {
      throw new GroupRequestError(ErrorCode.UNSUPPORTED_ASSIGNOR, `ServerAssignor ${req.serverAssignor} is not supported. Supported assignors: ${[...this.#assignors.keys()].join(', ')}.`)
    }
  }

  /** The consumer group a heartbeat addresses, made (not yet stored: replay does it) when joining. */
  private groupForHeartbeat(groupId: string, create: boolean, records: CoordinatorRecord[]): ConsumerGroup {
    const existing = this.#groups.get(groupId)
    if (existing !== undefined) return existing
    const classic = this.classic.group(groupId)
    if (classic !== undefined && !classic.is('Dead')) {
      if (!create || !classic.is('Empty')) throw new GroupRequestError(ErrorCode.GROUP_ID_NOT_FOUND, `Group ${groupId} is not a consumer group.`)
      // An empty classic group (offsets only, or members all gone) gives way, as Kafka converts empty groups.
      records.push(this.classic.deleteGroup(classic))
      this.ctx.log.info({ groupId }, 'empty classic group becomes a consumer group')
    } else if (!create) {
      throw new GroupRequestError(ErrorCode.GROUP_ID_NOT_FOUND, `Consumer group ${groupId} not found.`)
    }
    return new ConsumerGroup(groupId)
  }

  private checkMemberEpoch(member: ConsumerGroupMember, received: number, owned: readonly TopicPartitionsById[] | null): void {
    // Epoch 0 is a member rejoining after it was fenced, with the id it had (KIP-848; Kafka since
    // KAFKA-19233): it is reconciled from its current state, and a full answer gives it its partitions.
    if (received === JOIN_GROUP_MEMBER_EPOCH) return
    if (received > member.memberEpoch) {
      throw new GroupRequestError(ErrorCode.FENCED_MEMBER_EPOCH, `The consumer group member has a greater member epoch (${received}) than the one known by the group coordinator (${member.memberEpoch}). The member must abandon all its partitions and rejoin.`)
    }
    // The previous epoch with a subset of the current assignment: the answer with the bump was lost.
    if (received < member.memberEpoch && (received !== member.previousMemberEpoch || !isSubset(owned, member.assignedPartitions))) {
      throw new GroupRequestError(ErrorCode.FENCED_MEMBER_EPOCH, `The consumer group member has a smaller member epoch (${received}) than the one known by the group coordinator (${member.memberEpoch}). The member must abandon all its partitions and rejoin.`)
    }
  }

  private memberHeartbeat(req: ConsumerGroupHeartbeatInput): CoordinatorResult<ConsumerGroupHeartbeatResult> {
    const records: CoordinatorRecord[] = []
    const create = req.memberEpoch === JOIN_GROUP_MEMBER_EPOCH
    const group = this.groupForHeartbeat(req.groupId, create, records)
    const groupId = group.groupId
    const maxSize = this.config.consumerGroupMaxSize ?? Number.MAX_SAFE_INTEGER
    if (group.members.size >= maxSize && (req.memberId === '' || !group.members.has(req.memberId))) {
      throw new GroupRequestError(ErrorCode.GROUP_MAX_SIZE_REACHED, `The consumer group has reached its maximum capacity of ${maxSize} members.`)
    }
    const memberId = req.memberId === '' ? randomMemberId() : req.memberId

    // The member: existing, new, or a static member taking over its instance's previous member.
    let member: ConsumerGroupMember
    let replaced: ConsumerGroupMember | undefined
    if (req.instanceId === null) {
      const existing = group.members.get(memberId)
      if (existing === undefined && !create) throw new GroupRequestError(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${memberId} is not a member of group ${groupId}.`)
      member = existing ?? newMember(memberId)
      this.checkMemberEpoch(member, req.memberEpoch, req.topicPartitions)
    } else {
      const existingStatic = group.staticMember(req.instanceId)
      if (create) {
        if (existingStatic === undefined) member = group.members.get(memberId) ?? newMember(memberId)
        else {
          // Kafka: the instance id is taken until its member leaves with epoch -2 (or is fenced).
          if (existingStatic.memberEpoch !== LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
            throw new GroupRequestError(ErrorCode.UNRELEASED_INSTANCE_ID, `Static member ${memberId} with instance id ${req.instanceId} cannot join the group because the instance id is owned by ${existingStatic.memberId} member.`)
          }
          // The instance comes back under a new member id: it takes over the old member's assignment.
          replaced = existingStatic
          member = { ...existingStatic, memberId, memberEpoch: 0, previousMemberEpoch: 0 }
          this.removeMemberRecords(records, groupId, existingStatic.memberId)
          records.push(memberSubscriptionRecord(groupId, memberId, member), targetAssignmentRecord(groupId, memberId, group.targetOf(existingStatic.memberId)), currentAssignmentRecord(groupId, memberId, member))
          this.cancelTimers(groupId, existingStatic.memberId)
          this.ctx.log.info({ groupId, instanceId: req.instanceId, memberId, previous: existingStatic.memberId }, 'static member rejoined; it replaces its previous member')
        }
      } else {
        if (existingStatic === undefined) throw new GroupRequestError(ErrorCode.UNKNOWN_MEMBER_ID, `Instance id ${req.instanceId} is unknown.`)
        if (existingStatic.memberId !== memberId) throw new GroupRequestError(ErrorCode.FENCED_INSTANCE_ID, `Static member ${memberId} with instance id ${req.instanceId} was fenced by member ${existingStatic.memberId}.`)
        member = existingStatic
        this.checkMemberEpoch(member, req.memberEpoch, req.topicPartitions)
      }
    }
    if (create && !group.members.has(member.memberId) && replaced === undefined) this.ctx.log.info({ groupId, memberId }, 'member joins the consumer group')

    // 1. The member's subscription; the group epoch moves when subscriptions or subscribed topics change.
    const updated: ConsumerGroupMember = {
      ...member,
      instanceId: req.instanceId ?? member.instanceId,
      rackId: req.rackId ?? member.rackId,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs !== -1 ? req.rebalanceTimeoutMs : member.rebalanceTimeoutMs,
      serverAssignor: req.serverAssignor ?? member.serverAssignor,
      subscribedTopicNames: req.subscribedTopicNames ?? member.subscribedTopicNames,
      subscribedTopicRegex: req.subscribedTopicRegex ?? member.subscribedTopicRegex,
      clientId: req.clientId,
      clientHost: req.clientHost,
    }
    // A static member taking over its instance is not new: no rebalance unless its subscription changed.
    const isNew = !group.members.has(updated.memberId) && replaced === undefined
    let bump = false
    if (!sameSubscription(member, updated) || isNew) {
      records.push(memberSubscriptionRecord(groupId, updated.memberId, updated))
      bump = isNew || !sameTopicNames(member.subscribedTopicNames, updated.subscribedTopicNames) || member.subscribedTopicRegex !== updated.subscribedTopicRegex
    }
    const nextMembers = new Map(group.members)
    if (replaced !== undefined) nextMembers.delete(replaced.memberId)
    nextMembers.set(updated.memberId, updated)
    // The subscribed topics are read again on every heartbeat: a topic created, deleted or given more
    // partitions changes the assignment (Kafka refreshes them on a deadline and on metadata changes).
    const subscription = subscribedTopics(nextMembers.values(), this.topics)
    if (!sameSubscribedTopics(subscription, group.subscriptionMetadata)) {
      records.push(subscriptionMetadataRecord(groupId, [...subscription.values()]))
      bump = true
    }
    let groupEpoch = group.groupEpoch
    if (bump) {
      groupEpoch++
      records.push(groupEpochRecord(groupId, groupEpoch))
      this.ctx.log.info({ groupId, groupEpoch }, 'bumped consumer group epoch')
    }

    // 2. A new target assignment when the group epoch moved past it.
    let assignmentEpoch = group.assignmentEpoch
    let target: Assignment
    if (groupEpoch > group.assignmentEpoch) {
      target = this.updateTargetAssignment(group, groupEpoch, nextMembers, replaced, updated, subscription, records)
      assignmentEpoch = groupEpoch
    } else {
      target = group.targetOf(replaced !== undefined ? replaced.memberId : updated.memberId)
    }

    // 3. Reconciliation towards the target.
    const reconciled = this.reconcile(group, updated, assignmentEpoch, target, req.topicPartitions, records)
    this.scheduleSessionTimeout(groupId, reconciled.memberId)

    const full = req.memberEpoch === JOIN_GROUP_MEMBER_EPOCH || (req.rebalanceTimeoutMs !== -1 && req.subscribedTopicNames !== null && req.topicPartitions !== null)
    const assignmentChanged = !assignmentsEqual(member.assignedPartitions, reconciled.assignedPartitions)
    return {
      records,
      result: {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        memberId: reconciled.memberId,
        memberEpoch: reconciled.memberEpoch,
        heartbeatIntervalMs: this.heartbeatIntervalMs(groupId),
        assignment: full || assignmentChanged ? assignmentEntries(reconciled.assignedPartitions).map(([topicId, partitions]) => ({ topicId, partitions })) : null,
      },
    }
  }

  /** The subscribed topics that exist, by name, for these members. */
  /** Kafka's updateTargetAssignment: the assignor over every member; records for the targets that changed. */
  private updateTargetAssignment(
    group: ConsumerGroup,
    groupEpoch: number,
    members: ReadonlyMap<string, ConsumerGroupMember>,
    replaced: ConsumerGroupMember | undefined,
    updated: ConsumerGroupMember,
    subscription: ReadonlyMap<string, SubscribedTopic>,
    records: CoordinatorRecord[],
  ): Assignment {
    const assignor = this.preferredAssignor(members)
    const currentTarget = (memberId: string): Assignment => (replaced !== undefined && memberId === updated.memberId ? group.targetOf(replaced.memberId) : group.targetOf(memberId))
    const topics = new Map([...subscription.values()].map((t) => [t.topicId, t.numPartitions]))
    const started = this.ctx.clock.now()
    const result = assignor.assign({
      members: [...members.values()].map((m) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
        subscribedTopicIds: new Set(m.subscribedTopicNames.map((n) => subscription.get(n)?.topicId).filter((id): id is string => id !== undefined)),
        currentTarget: currentTarget(m.memberId),
      })),
      topics,
    })
    for (const m of members.values()) {
      const next = result.get(m.memberId) ?? EMPTY_ASSIGNMENT
      if (!assignmentsEqual(next, currentTarget(m.memberId))) records.push(targetAssignmentRecord(group.groupId, m.memberId, next))
    }
    records.push(targetAssignmentEpochRecord(group.groupId, groupEpoch))
    this.ctx.log.info({ groupId: group.groupId, groupEpoch, assignor: assignor.name, members: members.size, ms: this.ctx.clock.now() - started }, 'computed a new target assignment')
    return result.get(updated.memberId) ?? EMPTY_ASSIGNMENT
  }

  /** The assignor most members ask for, else the first of group.consumer.assignors. */
  private preferredAssignor(members: ReadonlyMap<string, ConsumerGroupMember>): ServerAssignor {
    const counts = new Map<string, number>()
    for (const m of members.values()) if (m.serverAssignor !== null) counts.set(m.serverAssignor, (counts.get(m.serverAssignor) ?? 0) + 1)
    let best: string | undefined
    for (const [name, n] of [...counts].sort((a, b) => (a[0] < b[0] ? -1 : 1))) if (best === undefined || n > counts.get(best)!) best = name
    return (best !== undefined ? this.#assignors.get(best) : undefined) ?? this.#defaultAssignor
  }

  /** Kafka's maybeReconcile with its CurrentAssignmentBuilder: the member's next assignment state. */
  private reconcile(
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    assignmentEpoch: number,
    target: Assignment,
    owned: readonly TopicPartitionsById[] | null,
    records: CoordinatorRecord[],
  ): ConsumerGroupMember {
    if (isReconciledTo(member, assignmentEpoch)) {
      if (!group.members.has(member.memberId)) records.push(currentAssignmentRecord(group.groupId, member.memberId, member))
      return member
    }
    let next: MemberAssignmentState
    switch (member.state) {
      case MemberState.STABLE:
        next = member.memberEpoch !== assignmentEpoch ? this.nextAssignment(group, member, member.memberEpoch, member.assignedPartitions, assignmentEpoch, target, owned) : member
        break
      case MemberState.UNREVOKED_PARTITIONS:
        // Until the member no longer lists the partitions to revoke, nothing moves.
        next = ownsAny(owned, member.partitionsPendingRevocation) ? member : this.nextAssignment(group, member, member.memberEpoch + 1, member.assignedPartitions, assignmentEpoch, target, owned)
        break
      case MemberState.UNRELEASED_PARTITIONS:
        next = this.nextAssignment(group, member, member.memberEpoch, member.assignedPartitions, assignmentEpoch, target, owned)
        break
      default:
        // A state this coordinator does not know: the member starts over without partitions.
        if (owned === null || owned.length > 0) throw new GroupRequestError(ErrorCode.FENCED_MEMBER_EPOCH, 'The consumer group member is in a unknown state. The member must abandon all its partitions and rejoin.')
        next = this.nextAssignment(group, member, assignmentEpoch, member.assignedPartitions, assignmentEpoch, target, owned)
    }
    const updated: ConsumerGroupMember = { ...member, ...next }
    const changed =
      updated.memberEpoch !== member.memberEpoch ||
      updated.previousMemberEpoch !== member.previousMemberEpoch ||
      updated.state !== member.state ||
      !assignmentsEqual(updated.assignedPartitions, member.assignedPartitions) ||
      !assignmentsEqual(updated.partitionsPendingRevocation, member.partitionsPendingRevocation)
    if (changed || !group.members.has(member.memberId)) {
      records.push(currentAssignmentRecord(group.groupId, updated.memberId, updated))
      if (updated.state === MemberState.UNREVOKED_PARTITIONS) this.scheduleRebalanceTimeout(group.groupId, updated.memberId, updated.memberEpoch, updated.rebalanceTimeoutMs)
      else this.ctx.timer.cancel(rebalanceKey(group.groupId, updated.memberId))
    }
    return updated
  }

  /** Kafka's computeNextAssignment: keep what stays, revoke what goes, take what is free. */
  private nextAssignment(
    group: ConsumerGroup,
    member: ConsumerGroupMember,
    memberEpoch: number,
    assigned: Assignment,
    assignmentEpoch: number,
    target: Assignment,
    owned: readonly TopicPartitionsById[] | null,
  ): MemberAssignmentState {
    const kept = new Map<string, Set<number>>()
    const revoke = new Map<string, Set<number>>()
    const take = new Map<string, Set<number>>()
    let unreleased = false
    for (const topicId of new Set([...target.keys(), ...assigned.keys()])) {
      const want = target.get(topicId) ?? new Set<number>()
      const have = assigned.get(topicId) ?? new Set<number>()
      for (const p of have) {
        if (want.has(p)) (kept.get(topicId) ?? kept.set(topicId, new Set()).get(topicId)!).add(p)
        else (revoke.get(topicId) ?? revoke.set(topicId, new Set()).get(topicId)!).add(p)
      }
      for (const p of want) {
        if (have.has(p)) continue
        // Another member (or this one, while revoking) still holds it: wait until it is released.
        if (group.currentPartitionEpoch(topicId, p) !== -1) unreleased = true
        else (take.get(topicId) ?? take.set(topicId, new Set()).get(topicId)!).add(p)
      }
    }
    const bumped = (epoch: number): { memberEpoch: number; previousMemberEpoch: number } => ({ memberEpoch: epoch, previousMemberEpoch: member.memberEpoch })
    if (revoke.size > 0 && ownsAny(owned, revoke)) {
      return { ...bumped(memberEpoch), state: MemberState.UNREVOKED_PARTITIONS, assignedPartitions: kept, partitionsPendingRevocation: revoke }
    }
    for (const [topicId, ps] of take) {
      let set = kept.get(topicId)
      if (set === undefined) kept.set(topicId, (set = new Set()))
      for (const p of ps) set.add(p)
    }
    return { ...bumped(assignmentEpoch), state: unreleased ? MemberState.UNRELEASED_PARTITIONS : MemberState.STABLE, assignedPartitions: kept, partitionsPendingRevocation: EMPTY_ASSIGNMENT }
  }

  // ---- leaving and fencing ----------------------------------------------------------------------

  private leave(req: ConsumerGroupHeartbeatInput): CoordinatorResult<ConsumerGroupHeartbeatResult> {
    const group = this.#groups.get(req.groupId)
    if (group === undefined) {
      throw new GroupRequestError(ErrorCode.GROUP_ID_NOT_FOUND, this.classic.group(req.groupId) !== undefined ? `Group ${req.groupId} is not a consumer group.` : `Consumer group ${req.groupId} not found.`)
    }
    const answer = (memberEpoch: number): ConsumerGroupHeartbeatResult => ({ errorCode: ErrorCode.NONE, errorMessage: null, memberId: req.memberId, memberEpoch, heartbeatIntervalMs: 0, assignment: null })
    let member: ConsumerGroupMember | undefined
    if (req.instanceId === null) {
      member = group.members.get(req.memberId)
      if (member === undefined) throw new GroupRequestError(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not a member of group ${req.groupId}.`)
    } else {
      member = group.staticMember(req.instanceId)
      if (member === undefined) throw new GroupRequestError(ErrorCode.UNKNOWN_MEMBER_ID, `Instance id ${req.instanceId} is unknown.`)
      if (member.memberId !== req.memberId) throw new GroupRequestError(ErrorCode.FENCED_INSTANCE_ID, `Static member ${req.memberId} with instance id ${req.instanceId} was fenced by member ${member.memberId}.`)
      if (req.memberEpoch === LEAVE_GROUP_STATIC_MEMBER_EPOCH) {
        // It will be back: it keeps its assignment (and its partitions stay held) for the session timeout.
        this.ctx.log.info({ groupId: req.groupId, memberId: member.memberId, instanceId: req.instanceId }, 'static member temporarily left the consumer group')
        const leaving = { ...member, memberEpoch: LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitionsPendingRevocation: EMPTY_ASSIGNMENT }
        return { records: [currentAssignmentRecord(req.groupId, member.memberId, leaving)], result: answer(LEAVE_GROUP_STATIC_MEMBER_EPOCH) }
      }
    }
    this.ctx.log.info({ groupId: req.groupId, memberId: member.memberId }, 'member left the consumer group')
    return { records: this.fenceMember(group, member), result: answer(LEAVE_GROUP_MEMBER_EPOCH) }
  }

  private removeMemberRecords(records: CoordinatorRecord[], groupId: string, memberId: string): void {
    records.push(currentAssignmentTombstone(groupId, memberId), targetAssignmentTombstone(groupId, memberId), memberSubscriptionTombstone(groupId, memberId))
  }

  /** Kafka's consumerGroupFenceMember: the member's tombstones, the subscriptions without it, a new group epoch. */
  private fenceMember(group: ConsumerGroup, member: ConsumerGroupMember): CoordinatorRecord[] {
    const records: CoordinatorRecord[] = []
    this.removeMemberRecords(records, group.groupId, member.memberId)
    const rest = new Map(group.members)
    rest.delete(member.memberId)
    const subscription = subscribedTopics(rest.values(), this.topics)
    if (!sameSubscribedTopics(subscription, group.subscriptionMetadata)) records.push(subscriptionMetadataRecord(group.groupId, [...subscription.values()]))
    records.push(groupEpochRecord(group.groupId, group.groupEpoch + 1))
    this.cancelTimers(group.groupId, member.memberId)
    return records
  }

  // ---- deletion, describe, list -----------------------------------------------------------------

  /** Why DeleteGroups may not delete this consumer group now; NONE when it may. */
  deleteGroupError(group: ConsumerGroup): ErrorCode {
    return group.isEmpty() ? ErrorCode.NONE : ErrorCode.NON_EMPTY_GROUP
  }

  /** Kafka's createGroupTombstoneRecords, in its order. */
  groupTombstones(group: ConsumerGroup): CoordinatorRecord[] {
    const records: CoordinatorRecord[] = []
    const members = [...group.members.keys()]
    for (const id of members) records.push(currentAssignmentTombstone(group.groupId, id))
    for (const id of members) records.push(targetAssignmentTombstone(group.groupId, id))
    records.push(targetAssignmentEpochTombstone(group.groupId))
    for (const id of members) records.push(memberSubscriptionTombstone(group.groupId, id))
    records.push(subscriptionMetadataTombstone(group.groupId), groupEpochTombstone(group.groupId))
    for (const id of members) this.cancelTimers(group.groupId, id)
    return records
  }

  private describeAssignment(a: Assignment): DescribedTopicPartitions[] {
    const out: DescribedTopicPartitions[] = []
    for (const [topicId, partitions] of assignmentEntries(a)) {
      const topicName = this.topics.topicName(topicId)
      if (topicName !== undefined) out.push({ topicId, topicName, partitions })
    }
    return out
  }

  describe(groupId: string): DescribedConsumerGroup {
    const group = this.#groups.get(groupId)
    const base = { groupId, errorMessage: null, groupState: '', groupEpoch: 0, assignmentEpoch: 0, assignorName: '', members: [] }
    if (groupId === '') return { ...base, errorCode: ErrorCode.INVALID_GROUP_ID }
    if (group === undefined) {
      const detail = this.classic.group(groupId) !== undefined ? `Group ${groupId} is not a consumer group.` : `Group ${groupId} not found.`
      return { ...base, errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: detail }
    }
    return {
      groupId,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      groupState: group.state,
      groupEpoch: group.groupEpoch,
      assignmentEpoch: group.assignmentEpoch,
      assignorName: this.preferredAssignor(group.members).name,
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
        rackId: m.rackId,
        memberEpoch: m.memberEpoch,
        clientId: m.clientId,
        clientHost: m.clientHost,
        subscribedTopicNames: [...m.subscribedTopicNames],
        subscribedTopicRegex: m.subscribedTopicRegex,
        assignment: this.describeAssignment(m.assignedPartitions),
        targetAssignment: this.describeAssignment(group.targetOf(m.memberId)),
      })),
    }
  }

  listGroups(): ListedGroup[] {
    return [...this.#groups.values()].map((g) => ({ groupId: g.groupId, protocolType: 'consumer', state: g.state, groupType: 'consumer' }))
  }
}
