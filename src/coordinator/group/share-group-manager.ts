// KIP-932 share groups of one __consumer_offsets partition (Kafka's GroupMetadataManager, share
// protocol): ShareGroupHeartbeat (join, heartbeat, leave), the server-side target assignment (Kafka's
// SimpleAssignor, share-assignor.ts), session timeouts, ShareGroupDescribe, and the group side of
// ListGroups/DeleteGroups.
//
// Records first, as for consumer groups (consumer-group-manager.ts): an operation computes share-group
// records (share-group-records.ts) from the current state and answers; the runtime appends them and the
// replay of those records is what changes the groups (ShareGroup), live and on load alike.
//
// A heartbeat (Kafka's shareGroupHeartbeat):
//   1. the member is created or updated (MemberMetadata record); a changed subscription, or changed
//      subscribed topics (a topic created, deleted or grown: read again on every heartbeat), bumps the
//      group epoch (PartitionMetadata, GroupMetadata records);
//   2. a group epoch above the assignment epoch makes a new target assignment (TargetAssignmentMember
//      records for the members whose target changed, TargetAssignmentMetadata);
//   3. the member moves to its target at once (CurrentMemberAssignment): a share group revokes nothing
//      first, since several members may hold one partition.
// A member that misses its session timeout (share.session.timeout.ms, else group.share.session.timeout.ms),
// or leaves (epoch -1), is fenced: its records get tombstones and the group epoch is bumped, so the
// others get its partitions on their next heartbeats. The member id is the client's (ShareGroupHeartbeat
// v1): a member that left may come back under the same id with epoch 0.
//
// Share-partition state (Kafka's ShareGroupStatePartitionMetadata record, key 15): before the group
// coordinator asks the share coordinators to initialize the state of partitions it assigned, it records
// them as initializing, and after, as initialized (stateInitializing / stateInitialized); DeleteShareGroupOffsets
// takes topics out (stateTopicsDeleted). So the group's state is known without asking about every
// partition: its deletion, and the offsets of an empty group, ask only about these.
//
// A group id is a classic, consumer or share group, never two: a share heartbeat for another kind of
// group gets GROUP_ID_NOT_FOUND ("Group X is not a share group."), as in Kafka, which converts nothing
// to or from share groups.
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import type { CoordinatorRecord } from '../runtime/partition-writer.js'
import { noRecords, type CoordinatorResult, type StateMachineContext } from '../runtime/runtime.js'
import { EMPTY_ASSIGNMENT, MemberState, assignmentEntries, assignmentsEqual, sameSubscribedTopics, subscribedTopics, type Assignment, type SubscribedTopic } from './consumer-group-records.js'
import type { ConsumerGroupKey, ShareGroupKey } from './offset-commit-group-metadata-records.js'
import { SIMPLE_ASSIGNOR, simpleAssign } from './share-assignor.js'
import { SHARE_PROTOCOL_TYPE, ShareGroup, newShareMember, sameShareSubscription, type ShareGroupMember } from './share-group.js'
import {
  decodeShareCurrentAssignment,
  decodeShareGroupEpoch,
  decodeShareMemberSubscription,
  decodeShareStatePartitionMetadata,
  decodeShareSubscriptionMetadata,
  decodeShareTargetAssignment,
  decodeShareTargetAssignmentEpoch,
  shareCurrentAssignmentRecord,
  shareCurrentAssignmentTombstone,
  shareGroupEpochRecord,
  shareGroupEpochTombstone,
  shareMemberSubscriptionRecord,
  shareMemberSubscriptionTombstone,
  shareStatePartitionMetadataRecord,
  shareStatePartitionMetadataTombstone,
  shareSubscriptionMetadataRecord,
  shareSubscriptionMetadataTombstone,
  shareTargetAssignmentEpochRecord,
  shareTargetAssignmentEpochTombstone,
  shareTargetAssignmentRecord,
  shareTargetAssignmentTombstone,
  emptyStatePartitionMetadata,
  type ShareStatePartitionMetadata,
} from './share-group-records.js'
import type { DescribedShareGroup, DescribedTopicPartitions, GroupCoordinatorConfig, ListedGroup, ShareGroupHeartbeatInput, ShareGroupHeartbeatResult, TopicsView } from './types.js'

/** Kafka's member epoch sentinels in ShareGroupHeartbeat. */
export const SHARE_JOIN_GROUP_MEMBER_EPOCH = 0
export const SHARE_LEAVE_GROUP_MEMBER_EPOCH = -1

/** Kafka's defaults of group.share.session.timeout.ms, group.share.heartbeat.interval.ms and group.share.max.size. */
const DEFAULT_SESSION_TIMEOUT_MS = 45_000
const DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000
const DEFAULT_MAX_SIZE = 200

const sessionKey = (groupId: string, memberId: string): string => `share-session\u0000${groupId}\u0000${memberId}`

/** An error a heartbeat answers with (Kafka's ApiException): the code and the message clients log. */
class ShareGroupRequestError extends KafkaError {
  constructor(
    code: ErrorCode,
    readonly detail: string,
  ) {
    super(code, detail)
  }
}

export class ShareGroupManager {
  readonly #groups = new Map<string, ShareGroup>()

  constructor(
    private readonly ctx: StateMachineContext<unknown>,
    private readonly config: GroupCoordinatorConfig,
    private readonly topics: TopicsView,
    /** Whether a classic or consumer group holds this id (a group id is one kind of group). */
    private readonly otherGroupExists: (groupId: string) => boolean,
  ) {}

  /** The group's session timeout: its group config share.session.timeout.ms, else the broker's. */
  private sessionTimeoutMs(groupId: string): number {
    return this.config.shareGroupConfig?.(groupId).sessionTimeoutMs ?? this.config.shareGroupSessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS
  }

  /** The group's heartbeat interval: its group config share.heartbeat.interval.ms, else the broker's. */
  private heartbeatIntervalMs(groupId: string): number {
    return this.config.shareGroupConfig?.(groupId).heartbeatIntervalMs ?? this.config.shareGroupHeartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS
  }

  // ---- groups -----------------------------------------------------------------------------------

  group(groupId: string): ShareGroup | undefined {
    return this.#groups.get(groupId)
  }

  allGroups(): ShareGroup[] {
    return [...this.#groups.values()]
  }

  // ---- replay -----------------------------------------------------------------------------------

  replay(key: ShareGroupKey | ConsumerGroupKey, value: Buffer | null): void {
    let group = this.#groups.get(key.group)
    if (group === undefined) {
      if (value === null) return
      this.#groups.set(key.group, (group = new ShareGroup(key.group)))
    }
    const memberId = key.memberId ?? ''
    switch (key.record) {
      case 'metadata':
        if (value === null) this.#groups.delete(key.group)
        else group.groupEpoch = decodeShareGroupEpoch(value)
        break
      case 'partition-metadata':
        group.subscriptionMetadata = new Map((value === null ? [] : decodeShareSubscriptionMetadata(value)).map((t) => [t.topicName, t]))
        break
      case 'member-metadata':
        if (value === null) group.removeMember(memberId)
        else group.replayMemberSubscription(memberId, decodeShareMemberSubscription(value))
        break
      case 'target-assignment-metadata':
        group.assignmentEpoch = value === null ? 0 : decodeShareTargetAssignmentEpoch(value)
        break
      case 'target-assignment-member':
        if (value === null) group.targetAssignment.delete(memberId)
        else group.targetAssignment.set(memberId, decodeShareTargetAssignment(value))
        break
      case 'current-member-assignment':
        group.replayCurrentAssignment(memberId, value === null ? null : decodeShareCurrentAssignment(value))
        break
      case 'state-partition-metadata':
        group.stateMetadata = value === null ? undefined : decodeShareStatePartitionMetadata(value)
        break
    }
  }

  // ---- share-partition state (ShareGroupStatePartitionMetadata) ----------------------------------

  /**
   * Of the partitions assigned (topic id -> partitions), those whose state is not recorded as initialized:
   * they are to be initialized, and are recorded as initializing first (a record only when that adds any).
   */
  stateInitializing(groupId: string, assigned: readonly [topicId: string, partitions: readonly number[]][]): CoordinatorResult<[string, number[]][]> {
    const group = this.#groups.get(groupId)
    if (group === undefined) return noRecords([])
    const meta = group.stateMetadata
    const todo: [string, number[]][] = []
    let grows = false
    for (const [topicId, partitions] of assigned) {
      const done = meta?.initialized.get(topicId)?.partitions
      const pending = meta?.initializing.get(topicId)?.partitions
      const missing = partitions.filter((p) => done?.has(p) !== true)
      if (missing.length === 0) continue
      todo.push([topicId, missing])
      if (missing.some((p) => pending?.has(p) !== true)) grows = true
    }
    if (!grows) return noRecords(todo)
    const next = copyStateMetadata(meta)
    for (const [topicId, partitions] of todo) {
      const t = next.initializing.get(topicId) ?? { topicName: this.topics.topicName(topicId) ?? '', partitions: new Set<number>() }
      for (const p of partitions) t.partitions.add(p)
      next.initializing.set(topicId, t)
    }
    return { records: [shareStatePartitionMetadataRecord(groupId, next)], result: todo }
  }

  /** The share-partitions' state is initialized (InitializeShareGroupState succeeded, or AlterShareGroupOffsets set it). */
  stateInitialized(groupId: string, done: readonly [topicId: string, partitions: readonly number[]][]): CoordinatorResult<void> {
    const group = this.#groups.get(groupId)
    if (group === undefined || done.length === 0) return noRecords(undefined)
    const next = copyStateMetadata(group.stateMetadata)
    let changed = false
    for (const [topicId, partitions] of done) {
      const pending = next.initializing.get(topicId)
      const t = next.initialized.get(topicId) ?? { topicName: pending?.topicName || (this.topics.topicName(topicId) ?? ''), partitions: new Set<number>() }
      for (const p of partitions) {
        if (!t.partitions.has(p)) changed = true
        t.partitions.add(p)
        if (pending?.partitions.delete(p) === true) changed = true
      }
      next.initialized.set(topicId, t)
      if (pending !== undefined && pending.partitions.size === 0) next.initializing.delete(topicId)
    }
    return changed ? { records: [shareStatePartitionMetadataRecord(groupId, next)], result: undefined } : noRecords(undefined)
  }

  /** The state of these topics was deleted (DeleteShareGroupOffsets): they are initialized again when next assigned. */
  stateTopicsDeleted(groupId: string, topicIds: readonly string[]): CoordinatorResult<void> {
    const group = this.#groups.get(groupId)
    const meta = group?.stateMetadata
    if (meta === undefined || !topicIds.some((id) => meta.initialized.has(id) || meta.initializing.has(id) || meta.deleting.has(id))) return noRecords(undefined)
    const next = copyStateMetadata(meta)
    for (const id of topicIds) {
      next.initialized.delete(id)
      next.initializing.delete(id)
      next.deleting.delete(id)
    }
    return { records: [shareStatePartitionMetadataRecord(groupId, next)], result: undefined }
  }

  /**
   * Every share-partition the group may have state for (initializing or initialized; a deleting topic's
   * partitions are unknown, so none), or undefined when the group has no ShareGroupStatePartitionMetadata.
   */
  statePartitions(groupId: string): [string, number[]][] | undefined {
    const meta = this.#groups.get(groupId)?.stateMetadata
    if (meta === undefined) return undefined
    const all = new Map<string, Set<number>>()
    for (const m of [meta.initialized, meta.initializing]) {
      for (const [topicId, t] of m) {
        const set = all.get(topicId) ?? new Set<number>()
        for (const p of t.partitions) set.add(p)
        all.set(topicId, set)
      }
    }
    return [...all].map(([topicId, set]) => [topicId, [...set].sort((a, b) => a - b)])
  }

  /** Loaded members must heartbeat within their session timeout, counted from the load. */
  onLoaded(): void {
    for (const group of this.#groups.values()) for (const m of group.members.values()) this.scheduleSessionTimeout(group.groupId, m.memberId)
  }

  // ---- timers -----------------------------------------------------------------------------------

  private scheduleSessionTimeout(groupId: string, memberId: string): void {
    this.ctx.timer.schedule(sessionKey(groupId, memberId), this.sessionTimeoutMs(groupId), () => this.fenceMemberOperation(groupId, memberId, 'the member session expired'))
  }

  /** A timer's fencing: nothing when the group or the member is gone already. */
  fenceMemberOperation(groupId: string, memberId: string, reason: string): CoordinatorResult<void> {
    const group = this.#groups.get(groupId)
    const member = group?.members.get(memberId)
    if (group === undefined || member === undefined) return noRecords(undefined)
    this.ctx.log.info({ groupId, memberId, reason }, 'share group member fenced')
    return { records: this.fenceMember(group, member), result: undefined }
  }

  // ---- ShareGroupHeartbeat ----------------------------------------------------------------------

  heartbeat(req: ShareGroupHeartbeatInput): CoordinatorResult<ShareGroupHeartbeatResult> {
    try {
      this.validate(req)
      if (req.memberEpoch === SHARE_LEAVE_GROUP_MEMBER_EPOCH) return this.leave(req)
      return this.memberHeartbeat(req)
    } catch (err) {
      if (!(err instanceof KafkaError)) throw err
      const errorMessage = err instanceof ShareGroupRequestError ? err.detail : null
      return noRecords({ errorCode: err.code, errorMessage, memberId: null, memberEpoch: 0, heartbeatIntervalMs: 0, assignment: null })
    }
  }

  /** Kafka's throwIfShareGroupHeartbeatRequestIsInvalid (v1: the member id is always the client's). */
  private validate(req: ShareGroupHeartbeatInput): void {
    const invalid = (detail: string): ShareGroupRequestError => new ShareGroupRequestError(ErrorCode.INVALID_REQUEST, detail)
    if (req.groupId === '') throw invalid("GroupId can't be empty.")
    if (req.memberId === '') throw invalid("MemberId can't be empty.")
    if (req.rackId === '') throw invalid("RackId can't be empty.")
    if (req.memberEpoch === SHARE_JOIN_GROUP_MEMBER_EPOCH) {
      if (req.subscribedTopicNames === null || req.subscribedTopicNames.length === 0) throw invalid('SubscribedTopicNames must be set in first request.')
    } else if (req.memberEpoch < 0 && req.memberEpoch !== SHARE_LEAVE_GROUP_MEMBER_EPOCH) {
      throw invalid('MemberEpoch is invalid.')
    }
  }

  private notFound(groupId: string): ShareGroupRequestError {
    return new ShareGroupRequestError(ErrorCode.GROUP_ID_NOT_FOUND, this.otherGroupExists(groupId) ? `Group ${groupId} is not a share group.` : `Share group ${groupId} not found.`)
  }

  /** The share group a heartbeat addresses, made (not yet stored: replay does it) when joining. */
  private groupForHeartbeat(groupId: string, create: boolean): ShareGroup {
    const existing = this.#groups.get(groupId)
    if (existing !== undefined) return existing
    if (!create || this.otherGroupExists(groupId)) throw this.notFound(groupId)
    return new ShareGroup(groupId)
  }

  private memberHeartbeat(req: ShareGroupHeartbeatInput): CoordinatorResult<ShareGroupHeartbeatResult> {
    const records: CoordinatorRecord[] = []
    const create = req.memberEpoch === SHARE_JOIN_GROUP_MEMBER_EPOCH
    const group = this.groupForHeartbeat(req.groupId, create)
    const groupId = group.groupId
    const maxSize = this.config.shareGroupMaxSize ?? DEFAULT_MAX_SIZE
    if (group.members.size >= maxSize && !group.members.has(req.memberId)) {
      throw new ShareGroupRequestError(ErrorCode.GROUP_MAX_SIZE_REACHED, `The share group has reached its maximum capacity of ${maxSize} members.`)
    }
    const existing = group.members.get(req.memberId)
    if (existing === undefined && !create) throw new ShareGroupRequestError(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not a member of group ${groupId}.`)
    const member = existing ?? newShareMember(req.memberId)
    // Epoch 0 with a known id: the member rejoins (it lost its epoch); it gets its assignment again in full.
    if (!create) {
      if (req.memberEpoch > member.memberEpoch) {
        throw new ShareGroupRequestError(ErrorCode.FENCED_MEMBER_EPOCH, `The share group member has a greater member epoch (${req.memberEpoch}) than the one known by the group coordinator (${member.memberEpoch}). The member must abandon all its partitions and rejoin.`)
      }
      // The previous epoch is accepted: the answer with the bumped epoch may have been lost.
      if (req.memberEpoch < member.memberEpoch && req.memberEpoch !== member.previousMemberEpoch) {
        throw new ShareGroupRequestError(ErrorCode.FENCED_MEMBER_EPOCH, `The share group member has a smaller member epoch (${req.memberEpoch}) than the one known by the group coordinator (${member.memberEpoch}). The member must abandon all its partitions and rejoin.`)
      }
    }
    const isNew = existing === undefined
    if (isNew) this.ctx.log.info({ groupId, memberId: member.memberId }, 'member joins the share group')

    // 1. The member's subscription; the group epoch moves when subscriptions or subscribed topics change.
    const updated: ShareGroupMember = {
      ...member,
      rackId: req.rackId ?? member.rackId,
      subscribedTopicNames: req.subscribedTopicNames ?? member.subscribedTopicNames,
      clientId: req.clientId,
      clientHost: req.clientHost,
    }
    let bump = false
    if (isNew || !sameShareSubscription(member, updated)) {
      records.push(shareMemberSubscriptionRecord(groupId, updated.memberId, updated))
      bump = isNew || updated.subscribedTopicNames.length !== member.subscribedTopicNames.length || updated.subscribedTopicNames.some((t, i) => t !== member.subscribedTopicNames[i])
    }
    const nextMembers = new Map(group.members)
    nextMembers.set(updated.memberId, updated)
    const subscription = subscribedTopics(nextMembers.values(), this.topics)
    if (!sameSubscribedTopics(subscription, group.subscriptionMetadata)) {
      records.push(shareSubscriptionMetadataRecord(groupId, [...subscription.values()]))
      bump = true
    }
    let groupEpoch = group.groupEpoch
    if (bump) {
      groupEpoch++
      records.push(shareGroupEpochRecord(groupId, groupEpoch))
      this.ctx.log.info({ groupId, groupEpoch }, 'bumped share group epoch')
    }

    // 2. A new target assignment when the group epoch moved past it.
    let assignmentEpoch = group.assignmentEpoch
    let target: Assignment
    if (groupEpoch > group.assignmentEpoch) {
      target = this.updateTargetAssignment(group, groupEpoch, nextMembers, updated.memberId, subscription, records)
      assignmentEpoch = groupEpoch
    } else {
      target = group.targetOf(updated.memberId)
    }

    // 3. The member takes its target at once (Kafka's ShareGroupAssignmentBuilder).
    let reconciled = updated
    if (updated.memberEpoch !== assignmentEpoch || isNew) {
      reconciled = { ...updated, memberEpoch: assignmentEpoch, previousMemberEpoch: updated.memberEpoch, state: MemberState.STABLE, assignedPartitions: target }
      records.push(shareCurrentAssignmentRecord(groupId, reconciled.memberId, reconciled))
    }
    this.scheduleSessionTimeout(groupId, reconciled.memberId)

    const full = create || !assignmentsEqual(member.assignedPartitions, reconciled.assignedPartitions)
    return {
      records,
      result: {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        memberId: reconciled.memberId,
        memberEpoch: reconciled.memberEpoch,
        heartbeatIntervalMs: this.heartbeatIntervalMs(groupId),
        assignment: full ? assignmentEntries(reconciled.assignedPartitions).map(([topicId, partitions]) => ({ topicId, partitions })) : null,
      },
    }
  }

  /** The subscribed topics that exist, by name, for these members. */
  /** Kafka's updateTargetAssignment with the simple assignor; records for the targets that changed. */
  private updateTargetAssignment(
    group: ShareGroup,
    groupEpoch: number,
    members: ReadonlyMap<string, ShareGroupMember>,
    memberId: string,
    subscription: ReadonlyMap<string, SubscribedTopic>,
    records: CoordinatorRecord[],
  ): Assignment {
    const started = this.ctx.clock.now()
    const result = simpleAssign({
      members: [...members.values()].map((m) => ({
        memberId: m.memberId,
        subscribedTopicIds: new Set(m.subscribedTopicNames.map((n) => subscription.get(n)?.topicId).filter((id): id is string => id !== undefined)),
        currentTarget: group.targetOf(m.memberId),
      })),
      topics: new Map([...subscription.values()].map((t) => [t.topicId, t.numPartitions])),
    })
    for (const m of members.values()) {
      const next = result.get(m.memberId) ?? EMPTY_ASSIGNMENT
      if (!assignmentsEqual(next, group.targetOf(m.memberId)) || !group.targetAssignment.has(m.memberId)) records.push(shareTargetAssignmentRecord(group.groupId, m.memberId, next))
    }
    records.push(shareTargetAssignmentEpochRecord(group.groupId, groupEpoch))
    this.ctx.log.info({ groupId: group.groupId, groupEpoch, members: members.size, ms: this.ctx.clock.now() - started }, 'computed a new share group target assignment')
    return result.get(memberId) ?? EMPTY_ASSIGNMENT
  }

  // ---- leaving and fencing ----------------------------------------------------------------------

  private leave(req: ShareGroupHeartbeatInput): CoordinatorResult<ShareGroupHeartbeatResult> {
    const group = this.#groups.get(req.groupId)
    if (group === undefined) throw this.notFound(req.groupId)
    const member = group.members.get(req.memberId)
    if (member === undefined) throw new ShareGroupRequestError(ErrorCode.UNKNOWN_MEMBER_ID, `Member ${req.memberId} is not a member of group ${req.groupId}.`)
    this.ctx.log.info({ groupId: req.groupId, memberId: member.memberId }, 'member left the share group')
    return {
      records: this.fenceMember(group, member),
      result: { errorCode: ErrorCode.NONE, errorMessage: null, memberId: req.memberId, memberEpoch: SHARE_LEAVE_GROUP_MEMBER_EPOCH, heartbeatIntervalMs: 0, assignment: null },
    }
  }

  /** Kafka's shareGroupFenceMember: the member's tombstones, the subscriptions without it, a new group epoch. */
  private fenceMember(group: ShareGroup, member: ShareGroupMember): CoordinatorRecord[] {
    const records: CoordinatorRecord[] = [
      shareCurrentAssignmentTombstone(group.groupId, member.memberId),
      shareTargetAssignmentTombstone(group.groupId, member.memberId),
      shareMemberSubscriptionTombstone(group.groupId, member.memberId),
    ]
    const rest = new Map(group.members)
    rest.delete(member.memberId)
    const subscription = subscribedTopics(rest.values(), this.topics)
    if (!sameSubscribedTopics(subscription, group.subscriptionMetadata)) records.push(shareSubscriptionMetadataRecord(group.groupId, [...subscription.values()]))
    records.push(shareGroupEpochRecord(group.groupId, group.groupEpoch + 1))
    this.ctx.timer.cancel(sessionKey(group.groupId, member.memberId))
    return records
  }

  // ---- deletion, describe, list -----------------------------------------------------------------

  /** Why DeleteGroups may not delete this share group now; NONE when it may. */
  deleteGroupError(group: ShareGroup): ErrorCode {
    return group.isEmpty() ? ErrorCode.NONE : ErrorCode.NON_EMPTY_GROUP
  }

  /** Kafka's createGroupTombstoneRecords for a share group, in its order. */
  groupTombstones(group: ShareGroup): CoordinatorRecord[] {
    const records: CoordinatorRecord[] = []
    const members = [...group.members.keys()]
    for (const id of members) records.push(shareCurrentAssignmentTombstone(group.groupId, id))
    for (const id of members) records.push(shareTargetAssignmentTombstone(group.groupId, id))
    records.push(shareTargetAssignmentEpochTombstone(group.groupId))
    for (const id of members) records.push(shareMemberSubscriptionTombstone(group.groupId, id))
    if (group.stateMetadata !== undefined) records.push(shareStatePartitionMetadataTombstone(group.groupId))
    records.push(shareSubscriptionMetadataTombstone(group.groupId), shareGroupEpochTombstone(group.groupId))
    for (const id of members) this.ctx.timer.cancel(sessionKey(group.groupId, id))
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

  describe(groupId: string): DescribedShareGroup {
    const group = this.#groups.get(groupId)
    const base = { groupId, errorMessage: null, groupState: '', groupEpoch: 0, assignmentEpoch: 0, assignorName: '', members: [] }
    if (groupId === '') return { ...base, errorCode: ErrorCode.INVALID_GROUP_ID }
    if (group === undefined) return { ...base, errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: this.otherGroupExists(groupId) ? `Group ${groupId} is not a share group.` : `Group ${groupId} not found.` }
    return {
      groupId,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      groupState: group.state,
      groupEpoch: group.groupEpoch,
      assignmentEpoch: group.assignmentEpoch,
      assignorName: SIMPLE_ASSIGNOR,
      stateTopicIds: group.stateMetadata === undefined ? null : [...new Set([...group.stateMetadata.initialized.keys(), ...group.stateMetadata.initializing.keys()])],
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        rackId: m.rackId,
        memberEpoch: m.memberEpoch,
        clientId: m.clientId,
        clientHost: m.clientHost,
        subscribedTopicNames: [...m.subscribedTopicNames],
        assignment: this.describeAssignment(m.assignedPartitions),
      })),
    }
  }

  listGroups(): ListedGroup[] {
    return [...this.#groups.values()].map((g) => ({ groupId: g.groupId, protocolType: SHARE_PROTOCOL_TYPE, state: g.state, groupType: 'share' as const }))
  }
}

function copyStateMetadata(m: ShareStatePartitionMetadata | undefined): ShareStatePartitionMetadata {
  const out = emptyStatePartitionMetadata()
  if (m === undefined) return out
  for (const [id, t] of m.initializing) out.initializing.set(id, { topicName: t.topicName, partitions: new Set(t.partitions) })
  for (const [id, t] of m.initialized) out.initialized.set(id, { topicName: t.topicName, partitions: new Set(t.partitions) })
  for (const [id, name] of m.deleting) out.deleting.set(id, name)
  return out
}
