// The group coordinator state machine of one __consumer_offsets partition (Kafka's
// GroupMetadataManager + OffsetMetadataManager, classic protocol only). Every method that serves a
// request returns a CoordinatorResult: the records to append and the answer. Offsets change only by
// replaying records (so live state and a reload are the same function of the log); classic group
// membership is main-thread state changed directly by the operations, made durable by GroupMetadata
// records at the points Kafka writes them (a completed SyncGroup, a group becoming Empty, a static
// member replaced) and rebuilt from the last of those records on load.
import { randomUUID } from 'node:crypto'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import type { CoordinatorRecord, StoredRecord } from '../runtime/partition-writer.js'
import type { CoordinatorResult, CoordinatorStateMachine, StateMachineContext } from '../runtime/runtime.js'
import { ClassicGroup, Deferred, type ClassicMember } from './classic-group.js'
import {
  CoordinatorRecordError,
  decodeGroupMetadataValue,
  decodeGroupRecordKey,
  decodeOffsetCommitValue,
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
} from './records.js'
import type {
  DescribedGroup,
  FetchedOffset,
  GroupCoordinatorConfig,
  HeartbeatInput,
  JoinGroupInput,
  JoinGroupResult,
  LeaveGroupResult,
  ListedGroup,
  MemberIdentity,
  OffsetCommitInput,
  OffsetDeleteResult,
  OffsetFetchResult,
  PartitionErrors,
  ProtocolMetadata,
  SyncGroupInput,
  SyncGroupResult,
  TopicsView,
  TxnOffsetCommitInput,
} from './types.js'

export interface OffsetAndMetadata {
  offset: bigint
  leaderEpoch: number
  metadata: string
  commitTimestamp: number
  /** -1 unless committed with an explicit retention (OffsetCommit v2-4). */
  expireTimestamp: number
}

const NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
const EMPTY = Buffer.alloc(0)
const EXPIRE_OFFSETS_TIMER = 'expire-offsets'

const heartbeatKey = (groupId: string, memberId: string): string => `heartbeat\u0000${groupId}\u0000${memberId}`
const joinKey = (groupId: string): string => `join\u0000${groupId}`
const syncKey = (groupId: string): string => `sync\u0000${groupId}`

function none<T>(result: T): CoordinatorResult<T> {
  return { records: [], result }
}

function sameProtocols(a: ProtocolMetadata[], b: ProtocolMetadata[]): boolean {
  return a.length === b.length && a.every((p, i) => p.name === b[i]!.name && p.metadata.equals(b[i]!.metadata))
}

export class GroupCoordinatorState implements CoordinatorStateMachine {
  readonly groups = new Map<string, ClassicGroup>()
  /** group -> topic -> partition -> committed offset */
  readonly offsets = new Map<string, Map<string, Map<number, OffsetAndMetadata>>>()
  /** TxnOffsetCommit offsets not yet committed: producer id -> group -> topic -> partition -> offset */
  readonly pendingTxnOffsets = new Map<number, Map<string, Map<string, Map<number, OffsetAndMetadata>>>>()
  /** Next sequence of each transactional producer's batches in this partition (its producer state). */
  readonly txnSequences = new Map<number, { epoch: number; next: number }>()
  #warnedUnknown = false

  constructor(
    private readonly ctx: StateMachineContext<GroupCoordinatorState>,
    private readonly config: GroupCoordinatorConfig,
    private readonly topics: TopicsView,
  ) {}

  private now(): number {
    return this.ctx.clock.now()
  }

  // ---- replay -----------------------------------------------------------------------------------

  replay(record: StoredRecord): void {
    // A transaction marker: the producer's pending offsets become committed, or are dropped.
    if (record.control !== undefined) {
      if (record.producerId !== undefined) this.applyTxnMarker(record.producerId, record.control === 'commit')
      return
    }
    try {
      const key = decodeGroupRecordKey(record.key)
      if (key.type === 'offset-commit' && record.producerId !== undefined && record.producerId >= 0 && record.value !== null) {
        // TxnOffsetCommit: pending until the producer's transaction ends.
        const v = decodeOffsetCommitValue(record.value)
        this.addPendingTxnOffset(record.producerId, key.group, key.topic, key.partition, { offset: v.offset, leaderEpoch: v.leaderEpoch, metadata: v.metadata, commitTimestamp: v.commitTimestamp, expireTimestamp: v.expireTimestamp })
        if (record.sequence !== undefined && record.producerEpoch !== undefined) this.txnSequences.set(record.producerId, { epoch: record.producerEpoch, next: record.sequence + 1 })
        return
      }
      if (key.type === 'offset-commit') {
        if (record.value === null) {
          this.removeOffset(key.group, key.topic, key.partition)
          return
        }
        const v = decodeOffsetCommitValue(record.value)
        if (!this.groups.has(key.group)) this.groups.set(key.group, new ClassicGroup(key.group, this.now()))
        let byTopic = this.offsets.get(key.group)
        if (byTopic === undefined) this.offsets.set(key.group, (byTopic = new Map()))
        let byPartition = byTopic.get(key.topic)
        if (byPartition === undefined) byTopic.set(key.topic, (byPartition = new Map()))
        byPartition.set(key.partition, { offset: v.offset, leaderEpoch: v.leaderEpoch, metadata: v.metadata, commitTimestamp: v.commitTimestamp, expireTimestamp: v.expireTimestamp })
      } else if (key.type === 'group-metadata') {
        if (record.value === null) {
          this.groups.delete(key.group)
          return
        }
        this.groups.set(key.group, this.groupFromRecord(key.group, record.value))
      } else if (!this.#warnedUnknown) {
        this.#warnedUnknown = true
        this.ctx.log.warn({ partition: this.ctx.partition, offset: record.offset, keyVersion: key.version }, 'skipping coordinator records of an unknown type')
      }
    } catch (err) {
      if (!(err instanceof CoordinatorRecordError)) throw err
      this.ctx.log.error({ partition: this.ctx.partition, offset: record.offset, err: err.message }, 'skipping a malformed coordinator record')
    }
  }

  private groupFromRecord(groupId: string, buf: Buffer): ClassicGroup {
    const v = decodeGroupMetadataValue(buf)
    const group = new ClassicGroup(groupId, v.currentStateTimestamp >= 0 ? v.currentStateTimestamp : this.now(), v.members.length > 0 ? 'Stable' : 'Empty')
    group.generationId = v.generation
    for (const m of v.members) {
      group.add(
        {
          memberId: m.memberId,
          groupInstanceId: m.groupInstanceId,
          clientId: m.clientId,
          clientHost: m.clientHost,
          rebalanceTimeoutMs: m.rebalanceTimeout,
          sessionTimeoutMs: m.sessionTimeout,
          protocolType: v.protocolType,
          protocols: [{ name: v.protocol ?? '', metadata: m.subscription }],
          assignment: m.assignment,
          joinWaiter: null,
          syncWaiter: null,
          isNew: false,
        },
        null,
      )
    }
    group.protocolType = v.protocolType === '' && v.members.length === 0 ? null : v.protocolType
    group.protocolName = v.protocol
    group.leaderId = v.leader
    return group
  }

  private removeOffset(groupId: string, topic: string, partition: number): void {
    const byTopic = this.offsets.get(groupId)
    const byPartition = byTopic?.get(topic)
    if (byTopic === undefined || byPartition === undefined) return
    byPartition.delete(partition)
    if (byPartition.size === 0) byTopic.delete(topic)
    if (byTopic.size === 0) this.offsets.delete(groupId)
  }

  onLoaded(): void {
    // Loaded members must heartbeat again within their session timeout, or they are removed.
    for (const group of this.groups.values()) {
      for (const m of group.members.values()) this.rescheduleHeartbeat(group, m)
    }
    this.scheduleOffsetExpiry()
  }

  onUnloaded(): void {
    for (const group of this.groups.values()) {
      for (const m of group.members.values()) {
        m.joinWaiter?.resolve(ClassicGroup.joinError(m.memberId, ErrorCode.NOT_COORDINATOR))
        m.syncWaiter?.resolve({ errorCode: ErrorCode.NOT_COORDINATOR, protocolType: null, protocolName: null, assignment: EMPTY })
      }
    }
  }

  // ---- timers -----------------------------------------------------------------------------------

  private rescheduleHeartbeat(group: ClassicGroup, member: ClassicMember, timeoutMs = member.sessionTimeoutMs): void {
    const groupId = group.groupId
    const memberId = member.memberId
    this.ctx.timer.schedule(heartbeatKey(groupId, memberId), timeoutMs, (state) => state.expireHeartbeat(groupId, memberId))
  }

  private cancelHeartbeat(groupId: string, memberId: string): void {
    this.ctx.timer.cancel(heartbeatKey(groupId, memberId))
  }

  private scheduleOffsetExpiry(): void {
    this.ctx.timer.schedule(EXPIRE_OFFSETS_TIMER, this.config.offsetsRetentionCheckIntervalMs, (state) => state.expireOffsets())
  }

  /** A member (or a member id handed out by MEMBER_ID_REQUIRED) missed its session timeout. */
  expireHeartbeat(groupId: string, memberId: string): CoordinatorResult<void> {
    const group = this.groups.get(groupId)
    if (group === undefined) return none(undefined)
    if (group.pendingMembers.delete(memberId)) {
      this.ctx.log.info({ groupId, memberId }, 'pending member removed after session timeout')
      return { records: group.is('PreparingRebalance') ? this.maybeCompleteJoin(group) : [], result: undefined, replay: false }
    }
    const member = group.members.get(memberId)
    if (member === undefined) return none(undefined)
    // Members waiting in a rebalance cannot heartbeat: they count as alive, unless still new.
    if (!member.isNew && (member.joinWaiter !== null || member.syncWaiter !== null)) return none(undefined)
    this.ctx.log.info({ groupId, memberId }, 'member failed its session timeout; removing it from the group')
    return { records: this.removeMemberAndUpdateGroup(group, member, `member ${memberId} expired`), result: undefined, replay: false }
  }

  // ---- rebalance machinery ----------------------------------------------------------------------

  private groupMetadataRecord(group: ClassicGroup): CoordinatorRecord {
    return {
      key: encodeGroupMetadataKey(group.groupId),
      value: encodeGroupMetadataValue({
        protocolType: group.protocolType ?? '',
        generation: group.generationId,
        protocol: group.protocolName,
        leader: group.leaderId,
        currentStateTimestamp: group.currentStateTimestamp,
        members: group.memberRecords(),
      }),
    }
  }

  private prepareRebalance(group: ClassicGroup, reason: string): CoordinatorRecord[] {
    // Members waiting for their assignment must rejoin: the assignment they wait for is obsolete.
    if (group.is('CompletingRebalance')) this.resetAndPropagateAssignmentWithError(group, ErrorCode.REBALANCE_IN_PROGRESS)
    this.ctx.timer.cancel(syncKey(group.groupId))
    group.pendingSyncMembers.clear()
    const isInitial = group.is('Empty')
    const groupId = group.groupId
    if (isInitial) {
      group.initialJoinInProgress = true
      group.newMemberAdded = false
      const rebalanceTimeout = group.rebalanceTimeoutMs()
      const delay = Math.min(this.config.initialRebalanceDelayMs, rebalanceTimeout)
      const remaining = Math.max(rebalanceTimeout - this.config.initialRebalanceDelayMs, 0)
      this.ctx.timer.schedule(joinKey(groupId), delay, (state) => state.onInitialJoinTimeout(groupId, remaining))
    } else {
      this.ctx.timer.schedule(joinKey(groupId), group.rebalanceTimeoutMs(), (state) => state.onJoinTimeout(groupId))
    }
    group.transitionTo('PreparingRebalance', this.now())
    this.ctx.log.info({ groupId, generationId: group.generationId, reason }, 'preparing to rebalance group')
    return isInitial ? [] : this.maybeCompleteJoin(group)
  }

  /** Kafka's InitialDelayedJoin: while new members keep arriving, wait another delay (up to the rebalance timeout). */
  onInitialJoinTimeout(groupId: string, remaining: number): CoordinatorResult<void> {
    const group = this.groups.get(groupId)
    if (group === undefined || !group.is('PreparingRebalance')) return none(undefined)
    if (group.newMemberAdded && remaining > 0) {
      group.newMemberAdded = false
      const delay = Math.min(this.config.initialRebalanceDelayMs, remaining)
      const next = Math.max(remaining - this.config.initialRebalanceDelayMs, 0)
      this.ctx.timer.schedule(joinKey(groupId), delay, (state) => state.onInitialJoinTimeout(groupId, next))
      return none(undefined)
    }
    group.initialJoinInProgress = false
    return { records: this.completeJoin(group), result: undefined, replay: false }
  }

  onJoinTimeout(groupId: string): CoordinatorResult<void> {
    const group = this.groups.get(groupId)
    if (group === undefined) return none(undefined)
    return { records: this.completeJoin(group), result: undefined, replay: false }
  }

  private maybeCompleteJoin(group: ClassicGroup): CoordinatorRecord[] {
    if (group.is('PreparingRebalance') && group.hasAllMembersJoined() && !group.initialJoinInProgress) {
      this.ctx.timer.cancel(joinKey(group.groupId))
      return this.completeJoin(group)
    }
    return []
  }

  private maybePrepareRebalanceOrCompleteJoin(group: ClassicGroup, reason: string): CoordinatorRecord[] {
    if (group.is('Stable') || group.is('CompletingRebalance') || group.is('Empty')) return this.prepareRebalance(group, reason)
    return this.maybeCompleteJoin(group)
  }

  /** The join phase ends: drop dynamic members that did not rejoin, start the next generation, answer the joins. */
  private completeJoin(group: ClassicGroup): CoordinatorRecord[] {
    if (!group.is('PreparingRebalance')) return []
    this.ctx.timer.cancel(joinKey(group.groupId))
    group.initialJoinInProgress = false
    for (const m of group.notYetRejoinedMembers()) {
      if (m.groupInstanceId !== null) continue
      group.remove(m.memberId)
      this.cancelHeartbeat(group.groupId, m.memberId)
      this.ctx.log.info({ groupId: group.groupId, memberId: m.memberId }, 'member did not rejoin in time; removed')
    }
    group.initNextGeneration(this.now())
    if (group.is('Empty')) {
      this.ctx.log.info({ groupId: group.groupId, generationId: group.generationId }, 'group is now empty')
      return [this.groupMetadataRecord(group)]
    }
    const members = [...group.members.values()].map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, metadata: group.memberMetadata(m) }))
    for (const m of group.members.values()) {
      if (m.joinWaiter === null) continue
      const waiter = m.joinWaiter
      group.setJoinWaiter(m, null)
      m.isNew = false
      waiter.resolve(this.joinResponse(group, m, group.isLeader(m.memberId) ? members : []))
      this.rescheduleHeartbeat(group, m)
    }
    const groupId = group.groupId
    const generationId = group.generationId
    this.ctx.timer.schedule(syncKey(groupId), group.rebalanceTimeoutMs(), (state) => state.expirePendingSync(groupId, generationId))
    this.ctx.log.info({ groupId, generationId, protocol: group.protocolName, members: group.members.size, leader: group.leaderId }, 'rebalance: join phase complete')
    return []
  }

  private joinResponse(group: ClassicGroup, member: ClassicMember, members: JoinGroupResult['members']): JoinGroupResult {
    return {
      errorCode: ErrorCode.NONE,
      generationId: group.generationId,
      protocolType: group.protocolType,
      protocolName: group.protocolName,
      leader: group.leaderId ?? '',
      memberId: member.memberId,
      members,
    }
  }

  /** Members that never sent SyncGroup within the rebalance timeout are removed, and the group rebalances. */
  expirePendingSync(groupId: string, generationId: number): CoordinatorResult<void> {
    const group = this.groups.get(groupId)
    if (group === undefined || group.generationId !== generationId) return none(undefined)
    if (!(group.is('CompletingRebalance') || group.is('Stable')) || group.pendingSyncMembers.size === 0) return none(undefined)
    const late = [...group.pendingSyncMembers]
    for (const id of late) {
      group.remove(id)
      this.cancelHeartbeat(groupId, id)
    }
    this.ctx.log.info({ groupId, generationId, members: late }, 'members did not send SyncGroup in time; removed')
    return { records: this.prepareRebalance(group, 'members missed SyncGroup'), result: undefined, replay: false }
  }

  private resetAndPropagateAssignmentWithError(group: ClassicGroup, errorCode: ErrorCode): void {
    for (const m of group.members.values()) {
      m.assignment = EMPTY
      if (m.syncWaiter !== null) {
        const w = m.syncWaiter
        m.syncWaiter = null
        w.resolve({ errorCode, protocolType: null, protocolName: null, assignment: EMPTY })
      }
    }
  }

  private removeMemberAndUpdateGroup(group: ClassicGroup, member: ClassicMember, reason: string): CoordinatorRecord[] {
    // A pending JoinGroup of the removed member gets UNKNOWN_MEMBER_ID so that a live client rejoins.
    if (member.joinWaiter !== null) {
      const w = member.joinWaiter
      group.setJoinWaiter(member, null)
      w.resolve(ClassicGroup.joinError('', ErrorCode.UNKNOWN_MEMBER_ID))
    }
    if (member.syncWaiter !== null) {
      const w = member.syncWaiter
      member.syncWaiter = null
      w.resolve({ errorCode: ErrorCode.UNKNOWN_MEMBER_ID, protocolType: null, protocolName: null, assignment: EMPTY })
    }
    group.remove(member.memberId)
    this.cancelHeartbeat(group.groupId, member.memberId)
    switch (group.state) {
      case 'Stable':
      case 'CompletingRebalance':
        return this.prepareRebalance(group, reason)
      case 'PreparingRebalance':
        return this.maybeCompleteJoin(group)
      default:
        return []
    }
  }

  // ---- JoinGroup --------------------------------------------------------------------------------

  joinGroup(req: JoinGroupInput): CoordinatorResult<JoinGroupResult> {
    const fail = (code: ErrorCode, memberId = req.memberId): CoordinatorResult<JoinGroupResult> => none(ClassicGroup.joinError(memberId, code))
    if (req.groupId === '') return fail(ErrorCode.INVALID_GROUP_ID)
    if (req.sessionTimeoutMs < this.config.minSessionTimeoutMs || req.sessionTimeoutMs > this.config.maxSessionTimeoutMs) return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
    let group = this.groups.get(req.groupId)
    let created = false
    if (group === undefined) {
      if (req.memberId !== '') return fail(ErrorCode.UNKNOWN_MEMBER_ID)
      group = new ClassicGroup(req.groupId, this.now())
      this.groups.set(req.groupId, group)
      created = true
    }
    const g = group
    const failNew = (code: ErrorCode): CoordinatorResult<JoinGroupResult> => {
      if (created) this.groups.delete(req.groupId)
      return fail(code)
    }
    if (g.is('Dead')) return failNew(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if (!g.supportsProtocols(req.protocolType, req.protocols)) return failNew(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    const knownStatic = req.groupInstanceId !== null && g.staticMemberId(req.groupInstanceId) !== undefined
    if (!g.has(req.memberId) && !knownStatic && !g.pendingMembers.has(req.memberId) && g.members.size >= this.config.maxGroupSize) {
      return failNew(ErrorCode.GROUP_MAX_SIZE_REACHED)
    }
    return req.memberId === '' ? this.joinNewMember(g, req) : this.joinExistingMember(g, req)
  }

  private joinNewMember(group: ClassicGroup, req: JoinGroupInput): CoordinatorResult<JoinGroupResult> {
    if (req.groupInstanceId !== null) {
      const newMemberId = `${req.groupInstanceId}-${randomUUID()}`
      const existing = group.staticMemberId(req.groupInstanceId)
      if (existing !== undefined) return this.updateStaticMemberAndRebalance(group, req, existing, newMemberId)
      return this.addMemberAndRebalance(group, req, newMemberId)
    }
    const newMemberId = `${req.clientId}-${randomUUID()}`
    if (req.requireKnownMemberId) {
      // KIP-394: the member must come back with this id; until then it only holds a place.
      group.pendingMembers.add(newMemberId)
      const groupId = group.groupId
      this.ctx.timer.schedule(heartbeatKey(groupId, newMemberId), req.sessionTimeoutMs, (state) => state.expireHeartbeat(groupId, newMemberId))
      return none(ClassicGroup.joinError(newMemberId, ErrorCode.MEMBER_ID_REQUIRED))
    }
    return this.addMemberAndRebalance(group, req, newMemberId)
  }

  private addMemberAndRebalance(group: ClassicGroup, req: JoinGroupInput, memberId: string): CoordinatorResult<JoinGroupResult> {
    const member: ClassicMember = {
      memberId,
      groupInstanceId: req.groupInstanceId,
      clientId: req.clientId,
      clientHost: req.clientHost,
      rebalanceTimeoutMs: req.rebalanceTimeoutMs,
      sessionTimeoutMs: req.sessionTimeoutMs,
      protocolType: req.protocolType,
      protocols: req.protocols,
      assignment: EMPTY,
      joinWaiter: null,
      syncWaiter: null,
      isNew: true,
    }
    const waiter = new Deferred<JoinGroupResult>()
    group.pendingMembers.delete(memberId)
    group.add(member, waiter)
    if (group.is('PreparingRebalance') && group.initialJoinInProgress) group.newMemberAdded = true
    this.rescheduleHeartbeat(group, member, this.config.newMemberJoinTimeoutMs ?? NEW_MEMBER_JOIN_TIMEOUT_MS)
    const records = this.maybePrepareRebalanceOrCompleteJoin(group, `adding new member ${memberId}`)
    return { records, result: waiter.promise, replay: false }
  }

  private updateMemberAndRebalance(group: ClassicGroup, member: ClassicMember, req: JoinGroupInput, reason: string): CoordinatorResult<JoinGroupResult> {
    group.updateProtocols(member, req.protocols)
    member.rebalanceTimeoutMs = req.rebalanceTimeoutMs
    member.sessionTimeoutMs = req.sessionTimeoutMs
    member.clientId = req.clientId
    member.clientHost = req.clientHost
    const waiter = new Deferred<JoinGroupResult>()
    // A duplicate JoinGroup from the same member replaces the earlier one, which is told to rejoin.
    member.joinWaiter?.resolve(ClassicGroup.joinError(member.memberId, ErrorCode.REBALANCE_IN_PROGRESS))
    group.setJoinWaiter(member, waiter)
    const records = this.maybePrepareRebalanceOrCompleteJoin(group, reason)
    return { records, result: waiter.promise, replay: false }
  }

  private joinExistingMember(group: ClassicGroup, req: JoinGroupInput): CoordinatorResult<JoinGroupResult> {
    const memberId = req.memberId
    if (group.pendingMembers.has(memberId)) return this.addMemberAndRebalance(group, req, memberId)
    if (req.groupInstanceId !== null) {
      const expected = group.staticMemberId(req.groupInstanceId)
      if (expected !== undefined && expected !== memberId) return none(ClassicGroup.joinError(memberId, ErrorCode.FENCED_INSTANCE_ID))
    }
    const member = group.members.get(memberId)
    if (member === undefined) return none(ClassicGroup.joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID))
    switch (group.state) {
      case 'PreparingRebalance':
        return this.updateMemberAndRebalance(group, member, req, `member ${memberId} rejoined`)
      case 'CompletingRebalance':
        if (sameProtocols(member.protocols, req.protocols)) {
          // The member lost its JoinGroup answer: give it again.
          this.rescheduleHeartbeat(group, member)
          const members = group.isLeader(memberId)
            ? [...group.members.values()].map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, metadata: group.memberMetadata(m) }))
            : []
          return none(this.joinResponse(group, member, members))
        }
        return this.updateMemberAndRebalance(group, member, req, `member ${memberId} changed its metadata`)
      case 'Stable':
        if (group.isLeader(memberId) || !sameProtocols(member.protocols, req.protocols)) {
          return this.updateMemberAndRebalance(group, member, req, `leader or changed member ${memberId} rejoined`)
        }
        // A follower rejoining with unchanged metadata keeps the current generation.
        this.rescheduleHeartbeat(group, member)
        return none(this.joinResponse(group, member, []))
      default:
        return none(ClassicGroup.joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID))
    }
  }

  /** A static member came back with no member id: it takes over its old entry under a new id. */
  private updateStaticMemberAndRebalance(group: ClassicGroup, req: JoinGroupInput, oldMemberId: string, newMemberId: string): CoordinatorResult<JoinGroupResult> {
    const instanceId = req.groupInstanceId!
    const previousLeader = group.leaderId
    const old = group.members.get(oldMemberId)!
    // Whoever still waits under the old id is a zombie of this instance: fence it.
    if (old.joinWaiter !== null) {
      const w = old.joinWaiter
      group.setJoinWaiter(old, null)
      w.resolve(ClassicGroup.joinError(oldMemberId, ErrorCode.FENCED_INSTANCE_ID))
    }
    if (old.syncWaiter !== null) {
      const w = old.syncWaiter
      old.syncWaiter = null
      w.resolve({ errorCode: ErrorCode.FENCED_INSTANCE_ID, protocolType: null, protocolName: null, assignment: EMPTY })
    }
    this.cancelHeartbeat(group.groupId, oldMemberId)
    const member = group.replaceStaticMember(instanceId, oldMemberId, newMemberId)
    const previous = { protocols: member.protocols, rebalanceTimeoutMs: member.rebalanceTimeoutMs, sessionTimeoutMs: member.sessionTimeoutMs }
    this.rescheduleHeartbeat(group, member, req.sessionTimeoutMs)
    if (group.is('Stable')) {
      group.updateProtocols(member, req.protocols)
      member.rebalanceTimeoutMs = req.rebalanceTimeoutMs
      member.sessionTimeoutMs = req.sessionTimeoutMs
      if (group.protocolName === group.selectProtocol()) {
        // Same protocol: no rebalance; persist the new member id and hand back the current generation.
        // The leader named is the one before the replacement, so a replaced leader does not reassign.
        const answer = new Deferred<JoinGroupResult>()
        const onAppended = (error: KafkaError | null): void => {
          if (error !== null) {
            group.updateProtocols(member, previous.protocols)
            member.rebalanceTimeoutMs = previous.rebalanceTimeoutMs
            member.sessionTimeoutMs = previous.sessionTimeoutMs
            if (group.members.get(newMemberId) === member) {
              group.replaceStaticMember(instanceId, newMemberId, oldMemberId)
              this.cancelHeartbeat(group.groupId, newMemberId)
              this.rescheduleHeartbeat(group, member)
            }
            answer.resolve(ClassicGroup.joinError('', error.code))
            return
          }
          answer.resolve({
            errorCode: ErrorCode.NONE,
            generationId: group.generationId,
            protocolType: group.protocolType,
            protocolName: group.protocolName,
            leader: previousLeader ?? '',
            memberId: newMemberId,
            members: [],
          })
        }
        return { records: [this.groupMetadataRecord(group)], result: answer.promise, replay: false, onAppended }
      }
      const waiter = new Deferred<JoinGroupResult>()
      group.setJoinWaiter(member, waiter)
      return { records: this.prepareRebalance(group, `static member ${instanceId} rejoined with other protocols`), result: waiter.promise, replay: false }
    }
    const waiter = new Deferred<JoinGroupResult>()
    group.updateProtocols(member, req.protocols)
    member.rebalanceTimeoutMs = req.rebalanceTimeoutMs
    member.sessionTimeoutMs = req.sessionTimeoutMs
    group.setJoinWaiter(member, waiter)
    // In CompletingRebalance the leader may be assigning to the old id: rebalance again.
    const records = group.is('CompletingRebalance') ? this.prepareRebalance(group, `static member ${instanceId} replaced`) : this.maybeCompleteJoin(group)
    return { records, result: waiter.promise, replay: false }
  }

  // ---- SyncGroup / Heartbeat / LeaveGroup -------------------------------------------------------

  /** Kafka's validateMember: a static instance must be the member id it is registered under. */
  private memberError(group: ClassicGroup, memberId: string, groupInstanceId: string | null): ErrorCode {
    if (groupInstanceId !== null) {
      const expected = group.staticMemberId(groupInstanceId)
      if (expected === undefined) return ErrorCode.UNKNOWN_MEMBER_ID
      if (expected !== memberId) return ErrorCode.FENCED_INSTANCE_ID
      return ErrorCode.NONE
    }
    return group.has(memberId) ? ErrorCode.NONE : ErrorCode.UNKNOWN_MEMBER_ID
  }

  syncGroup(req: SyncGroupInput): CoordinatorResult<SyncGroupResult> {
    const fail = (errorCode: ErrorCode): CoordinatorResult<SyncGroupResult> => none({ errorCode, protocolType: null, protocolName: null, assignment: EMPTY })
    if (req.groupId === '') return fail(ErrorCode.INVALID_GROUP_ID)
    const group = this.groups.get(req.groupId)
    if (group === undefined) return fail(ErrorCode.UNKNOWN_MEMBER_ID)
    if (group.is('Dead')) return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    const memberError = this.memberError(group, req.memberId, req.groupInstanceId)
    if (memberError !== ErrorCode.NONE) return fail(memberError)
    if (req.generationId !== group.generationId) return fail(ErrorCode.ILLEGAL_GENERATION)
    if ((req.protocolType !== null && req.protocolType !== group.protocolType) || (req.protocolName !== null && req.protocolName !== group.protocolName)) {
      return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    }
    const member = group.members.get(req.memberId)!
    switch (group.state) {
      case 'Empty':
        return fail(ErrorCode.UNKNOWN_MEMBER_ID)
      case 'PreparingRebalance':
        return fail(ErrorCode.REBALANCE_IN_PROGRESS)
      case 'Stable':
        group.pendingSyncMembers.delete(member.memberId)
        this.rescheduleHeartbeat(group, member)
        return none({ errorCode: ErrorCode.NONE, protocolType: group.protocolType, protocolName: group.protocolName, assignment: member.assignment })
      case 'CompletingRebalance': {
        const waiter = new Deferred<SyncGroupResult>()
        member.syncWaiter?.resolve({ errorCode: ErrorCode.REBALANCE_IN_PROGRESS, protocolType: null, protocolName: null, assignment: EMPTY })
        member.syncWaiter = waiter
        group.pendingSyncMembers.delete(member.memberId)
        this.rescheduleHeartbeat(group, member)
        if (!group.isLeader(member.memberId)) return { records: [], result: waiter.promise }
        const assignments = new Map(req.assignments.map((a) => [a.memberId, a.assignment]))
        const generationId = group.generationId
        // The record carries the new assignment; members get it only once it is written.
        const previous = new Map([...group.members.values()].map((m) => [m.memberId, m.assignment]))
        for (const m of group.members.values()) m.assignment = assignments.get(m.memberId) ?? EMPTY
        const record = this.groupMetadataRecord(group)
        for (const m of group.members.values()) m.assignment = previous.get(m.memberId) ?? EMPTY
        const onAppended = (error: KafkaError | null): void => {
          if (this.groups.get(group.groupId) !== group || !group.is('CompletingRebalance') || group.generationId !== generationId) return
          if (error !== null) {
            this.resetAndPropagateAssignmentWithError(group, error.code)
            const groupId = group.groupId
            this.ctx.timer.schedule(joinKey(groupId), 0, (state) => state.rebalanceAfterError(groupId, generationId))
            return
          }
          for (const m of group.members.values()) {
            m.assignment = assignments.get(m.memberId) ?? EMPTY
            if (m.syncWaiter !== null) {
              const w = m.syncWaiter
              m.syncWaiter = null
              w.resolve({ errorCode: ErrorCode.NONE, protocolType: group.protocolType, protocolName: group.protocolName, assignment: m.assignment })
            }
          }
          group.transitionTo('Stable', this.now())
          if (group.pendingSyncMembers.size === 0) this.ctx.timer.cancel(syncKey(group.groupId))
          this.ctx.log.info({ groupId: group.groupId, generationId }, 'group is stable')
        }
        return { records: [record], result: waiter.promise, replay: false, onAppended }
      }
      default:
        return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    }
  }

  rebalanceAfterError(groupId: string, generationId: number): CoordinatorResult<void> {
    const group = this.groups.get(groupId)
    if (group === undefined || group.generationId !== generationId) return none(undefined)
    return { records: this.maybePrepareRebalanceOrCompleteJoin(group, 'storing the group assignment failed'), result: undefined, replay: false }
  }

  heartbeat(req: HeartbeatInput): CoordinatorResult<ErrorCode> {
    if (req.groupId === '') return none(ErrorCode.INVALID_GROUP_ID)
    const group = this.groups.get(req.groupId)
    if (group === undefined || group.is('Empty')) return none(ErrorCode.UNKNOWN_MEMBER_ID)
    if (group.is('Dead')) return none(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    const memberError = this.memberError(group, req.memberId, req.groupInstanceId)
    if (memberError !== ErrorCode.NONE) return none(memberError)
    if (req.generationId !== group.generationId) return none(ErrorCode.ILLEGAL_GENERATION)
    this.rescheduleHeartbeat(group, group.members.get(req.memberId)!)
    // During a rebalance the answer tells the member to rejoin.
    return none(group.is('PreparingRebalance') ? ErrorCode.REBALANCE_IN_PROGRESS : ErrorCode.NONE)
  }

  leaveGroup(groupId: string, leaving: MemberIdentity[]): CoordinatorResult<LeaveGroupResult> {
    if (groupId === '') return none({ errorCode: ErrorCode.INVALID_GROUP_ID, members: [] })
    const group = this.groups.get(groupId)
    if (group === undefined) return none({ errorCode: ErrorCode.NONE, members: leaving.map((m) => ({ ...m, errorCode: ErrorCode.UNKNOWN_MEMBER_ID })) })
    if (group.is('Dead')) return none({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] })
    const records: CoordinatorRecord[] = []
    const members: LeaveGroupResult['members'] = []
    for (const l of leaving) {
      let errorCode: ErrorCode = ErrorCode.NONE
      if (l.groupInstanceId !== null) {
        const existing = group.staticMemberId(l.groupInstanceId)
        if (existing === undefined) errorCode = ErrorCode.UNKNOWN_MEMBER_ID
        else if (l.memberId !== '' && l.memberId !== existing) errorCode = ErrorCode.FENCED_INSTANCE_ID
        else records.push(...this.removeMemberAndUpdateGroup(group, group.members.get(existing)!, `static member ${l.groupInstanceId} left`))
      } else if (group.pendingMembers.delete(l.memberId)) {
        this.cancelHeartbeat(groupId, l.memberId)
        if (group.is('PreparingRebalance')) records.push(...this.maybeCompleteJoin(group))
      } else {
        const member = group.members.get(l.memberId)
        if (member === undefined) errorCode = ErrorCode.UNKNOWN_MEMBER_ID
        else records.push(...this.removeMemberAndUpdateGroup(group, member, `member ${l.memberId} left`))
      }
      members.push({ ...l, errorCode })
    }
    return { records, result: { errorCode: ErrorCode.NONE, members }, replay: false }
  }

  // ---- offsets ----------------------------------------------------------------------------------

  /** Kafka's ClassicGroup.validateOffsetCommit; NONE when the commit may proceed. */
  private commitError(group: ClassicGroup, req: OffsetCommitInput): ErrorCode {
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE
    // A "simple" commit: no membership, the group only stores offsets (manual assignment).
    if (req.generationId < 0 && group.is('Empty')) return ErrorCode.NONE
    if (req.generationId >= 0 || req.memberId !== '' || req.groupInstanceId !== null) {
      const memberError = this.memberError(group, req.memberId, req.groupInstanceId)
      if (memberError !== ErrorCode.NONE) return memberError
      if (req.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION
    } else if (!group.is('Empty')) {
      return ErrorCode.UNKNOWN_MEMBER_ID
    }
    if (group.is('CompletingRebalance')) return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE
  }

  commitOffsets(req: OffsetCommitInput): CoordinatorResult<PartitionErrors[]> {
    const all = (errorCode: ErrorCode): PartitionErrors[] =>
      req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) }))
    let group = this.groups.get(req.groupId)
    let created = false
    if (group === undefined) {
      if (req.generationId >= 0) return none(all(ErrorCode.ILLEGAL_GENERATION))
      // A simple group: it exists for its offsets (replaying them recreates it).
      group = new ClassicGroup(req.groupId, this.now())
      this.groups.set(req.groupId, group)
      created = true
    }
    const error = this.commitError(group, req)
    if (error !== ErrorCode.NONE) return none(all(error))
    const member = group.members.get(req.memberId)
    // A commit from a member of the group counts as a heartbeat.
    if (member !== undefined && (group.is('Stable') || group.is('PreparingRebalance'))) this.rescheduleHeartbeat(group, member)
    const now = this.now()
    const records: CoordinatorRecord[] = []
    const result: PartitionErrors[] = req.topics.map((t) => {
      const count = this.topics.partitionCount(t.name)
      return {
        name: t.name,
        partitions: t.partitions.map((p) => {
          if (count === undefined || p.partitionIndex < 0 || p.partitionIndex >= count) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }
          const metadata = p.committedMetadata ?? ''
          if (Buffer.byteLength(metadata) > this.config.offsetMetadataMaxBytes) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.OFFSET_METADATA_TOO_LARGE }
          records.push({
            key: encodeOffsetCommitKey(req.groupId, t.name, p.partitionIndex),
            value: encodeOffsetCommitValue({
              offset: p.committedOffset,
              leaderEpoch: p.committedLeaderEpoch,
              metadata,
              commitTimestamp: now,
              expireTimestamp: req.retentionTimeMs >= 0 ? now + req.retentionTimeMs : -1,
            }),
          })
          return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE }
        }),
      }
    })
    // A simple group that got no offset is not kept (it would list as an empty group until expiry).
    if (created && records.length === 0) this.groups.delete(req.groupId)
    return {
      records,
      result,
      onAppended: (error) => {
        if (error !== null && created && this.groups.get(req.groupId) === group && !this.offsets.has(req.groupId)) this.groups.delete(req.groupId)
      },
    }
  }

  // ---- transactional offsets (TxnOffsetCommit, KIP-98 / KIP-447) -----------------------------------

  private addPendingTxnOffset(producerId: number, groupId: string, topic: string, partition: number, o: OffsetAndMetadata): void {
    let byGroup = this.pendingTxnOffsets.get(producerId)
    if (byGroup === undefined) this.pendingTxnOffsets.set(producerId, (byGroup = new Map()))
    let byTopic = byGroup.get(groupId)
    if (byTopic === undefined) byGroup.set(groupId, (byTopic = new Map()))
    let byPartition = byTopic.get(topic)
    if (byPartition === undefined) byTopic.set(topic, (byPartition = new Map()))
    byPartition.set(partition, o)
  }

  /** A COMMIT marker moves the producer's pending offsets into the committed ones; ABORT drops them. */
  private applyTxnMarker(producerId: number, commit: boolean): void {
    const byGroup = this.pendingTxnOffsets.get(producerId)
    this.pendingTxnOffsets.delete(producerId)
    if (byGroup === undefined || !commit) return
    for (const [groupId, byTopic] of byGroup) {
      if (!this.groups.has(groupId)) this.groups.set(groupId, new ClassicGroup(groupId, this.now()))
      let committed = this.offsets.get(groupId)
      if (committed === undefined) this.offsets.set(groupId, (committed = new Map()))
      for (const [topic, byPartition] of byTopic) {
        let c = committed.get(topic)
        if (c === undefined) committed.set(topic, (c = new Map()))
        for (const [partition, o] of byPartition) c.set(partition, o)
      }
    }
  }

  /** True when some producer's open transaction holds an offset for this group partition. */
  hasPendingTxnOffset(groupId: string, topic: string, partition: number): boolean {
    for (const byGroup of this.pendingTxnOffsets.values()) if (byGroup.get(groupId)?.get(topic)?.has(partition) === true) return true
    return false
  }

  /** Kafka's validation of a TxnOffsetCommit against the group (KIP-447 generation/member fencing). */
  private txnCommitError(group: ClassicGroup | undefined, req: TxnOffsetCommitInput): ErrorCode {
    if (group === undefined) return req.generationId >= 0 || req.memberId !== '' ? ErrorCode.ILLEGAL_GENERATION : ErrorCode.NONE
    if (group.is('Dead')) return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if (req.memberId !== '' || req.groupInstanceId !== null) {
      const memberError = this.memberError(group, req.memberId, req.groupInstanceId)
      if (memberError !== ErrorCode.NONE) return memberError
    }
    if (req.generationId >= 0 && req.generationId !== group.generationId) return ErrorCode.ILLEGAL_GENERATION
    return ErrorCode.NONE
  }

  /**
   * TxnOffsetCommit: the offsets are written as one transactional batch of the producer (sequence
   * numbers continue the producer's last batch in this partition) and stay pending until the
   * transaction's marker lands here.
   */
  txnCommitOffsets(req: TxnOffsetCommitInput): CoordinatorResult<PartitionErrors[]> {
    const all = (errorCode: ErrorCode): PartitionErrors[] =>
      req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode })) }))
    const group = this.groups.get(req.groupId)
    const error = this.txnCommitError(group, req)
    if (error !== ErrorCode.NONE) return none(all(error))
    const now = this.now()
    const records: CoordinatorRecord[] = []
    const staged: { topic: string; partition: number; o: OffsetAndMetadata }[] = []
    const result: PartitionErrors[] = req.topics.map((t) => {
      const count = this.topics.partitionCount(t.name)
      return {
        name: t.name,
        partitions: t.partitions.map((p) => {
          if (count === undefined || p.partitionIndex < 0 || p.partitionIndex >= count) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }
          const metadata = p.committedMetadata ?? ''
          if (Buffer.byteLength(metadata) > this.config.offsetMetadataMaxBytes) return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.OFFSET_METADATA_TOO_LARGE }
          const o: OffsetAndMetadata = { offset: p.committedOffset, leaderEpoch: p.committedLeaderEpoch, metadata, commitTimestamp: now, expireTimestamp: -1 }
          records.push({ key: encodeOffsetCommitKey(req.groupId, t.name, p.partitionIndex), value: encodeOffsetCommitValue(o) })
          staged.push({ topic: t.name, partition: p.partitionIndex, o })
          return { partitionIndex: p.partitionIndex, errorCode: ErrorCode.NONE }
        }),
      }
    })
    if (records.length === 0) return none(result)
    const known = this.txnSequences.get(req.producerId)
    const baseSequence = known !== undefined && known.epoch === req.producerEpoch ? known.next : 0
    return {
      records,
      result,
      replay: false,
      transactional: { producerId: req.producerId, producerEpoch: req.producerEpoch, baseSequence },
      onAppended: (err) => {
        if (err !== null) {
          // The partition's producer state disagrees (it expired, or batches were cleaned away): the
          // next attempt starts over at 0 (a new producer state), the one after at the tracked value.
          if (baseSequence !== 0) this.txnSequences.set(req.producerId, { epoch: req.producerEpoch, next: 0 })
          else this.txnSequences.delete(req.producerId)
          return
        }
        this.txnSequences.set(req.producerId, { epoch: req.producerEpoch, next: baseSequence + records.length })
        for (const s of staged) this.addPendingTxnOffset(req.producerId, req.groupId, s.topic, s.partition, s.o)
      },
    }
  }

  /** The transaction coordinator wrote the producer's marker to this partition. */
  onTxnCompleted(producerId: number, commit: boolean): CoordinatorResult<void> {
    this.applyTxnMarker(producerId, commit)
    return none(undefined)
  }

  committed(groupId: string, topic: string, partition: number): OffsetAndMetadata | undefined {
    return this.offsets.get(groupId)?.get(topic)?.get(partition)
  }

  /** topics null = every committed offset of the group. */
  fetchOffsets(groupId: string, topics: { name: string; partitions: number[] }[] | null, requireStable = false): OffsetFetchResult {
    const byTopic = this.offsets.get(groupId)
    const fetched = (partitionIndex: number, o: OffsetAndMetadata | undefined, topic?: string): FetchedOffset =>
      requireStable && topic !== undefined && this.hasPendingTxnOffset(groupId, topic, partitionIndex)
        ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.UNSTABLE_OFFSET_COMMIT }
        : o === undefined
        ? { partitionIndex, committedOffset: -1n, committedLeaderEpoch: -1, metadata: '', errorCode: ErrorCode.NONE }
        : { partitionIndex, committedOffset: o.offset, committedLeaderEpoch: o.leaderEpoch, metadata: o.metadata, errorCode: ErrorCode.NONE }
    if (topics === null) {
      const out: OffsetFetchResult['topics'] = []
      for (const [name, byPartition] of byTopic ?? []) {
        out.push({ name, partitions: [...byPartition.entries()].sort((a, b) => a[0] - b[0]).map(([p, o]) => fetched(p, o, name)) })
      }
      return { errorCode: ErrorCode.NONE, topics: out }
    }
    return {
      errorCode: ErrorCode.NONE,
      topics: topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => fetched(p, byTopic?.get(t.name)?.get(p), t.name)) })),
    }
  }

  /** Every committed offset of a group, for lag. */
  committedOffsets(groupId: string): { topic: string; partition: number; offset: bigint }[] {
    const out: { topic: string; partition: number; offset: bigint }[] = []
    for (const [topic, byPartition] of this.offsets.get(groupId) ?? []) for (const [partition, o] of byPartition) out.push({ topic, partition, offset: o.offset })
    return out
  }

  deleteOffsets(groupId: string, topics: { name: string; partitions: number[] }[]): CoordinatorResult<OffsetDeleteResult> {
    const group = this.groups.get(groupId)
    if (group === undefined || group.is('Dead')) return none({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, topics: [] })
    const subscribed = group.is('Empty') ? new Set<string>() : group.subscribedTopics()
    if (subscribed === null) return none({ errorCode: ErrorCode.NON_EMPTY_GROUP, topics: [] })
    const records: CoordinatorRecord[] = []
    const result = topics.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((partitionIndex) => {
        if (subscribed.has(t.name)) return { partitionIndex, errorCode: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC as ErrorCode }
        if (this.committed(groupId, t.name, partitionIndex) !== undefined) records.push({ key: encodeOffsetCommitKey(groupId, t.name, partitionIndex), value: null })
        return { partitionIndex, errorCode: ErrorCode.NONE as ErrorCode }
      }),
    }))
    return { records, result: { errorCode: ErrorCode.NONE, topics: result } }
  }

  deleteGroups(groupIds: string[]): CoordinatorResult<{ groupId: string; errorCode: ErrorCode }[]> {
    const records: CoordinatorRecord[] = []
    const result = groupIds.map((groupId) => {
      const group = this.groups.get(groupId)
      if (group === undefined || group.is('Dead')) return { groupId, errorCode: ErrorCode.GROUP_ID_NOT_FOUND as ErrorCode }
      if (!group.is('Empty')) return { groupId, errorCode: ErrorCode.NON_EMPTY_GROUP as ErrorCode }
      records.push(...this.groupTombstones(group))
      return { groupId, errorCode: ErrorCode.NONE as ErrorCode }
    })
    return { records, result }
  }

  /** Tombstones for every offset of an empty group and for the group itself; the group is Dead from now. */
  private groupTombstones(group: ClassicGroup): CoordinatorRecord[] {
    const records: CoordinatorRecord[] = []
    for (const { topic, partition } of this.committedOffsets(group.groupId)) records.push({ key: encodeOffsetCommitKey(group.groupId, topic, partition), value: null })
    records.push({ key: encodeGroupMetadataKey(group.groupId), value: null })
    group.transitionTo('Dead', this.now())
    this.groups.delete(group.groupId)
    for (const id of group.pendingMembers) this.cancelHeartbeat(group.groupId, id)
    this.ctx.timer.cancel(joinKey(group.groupId))
    this.ctx.timer.cancel(syncKey(group.groupId))
    return records
  }

  /**
   * offsets.retention.minutes (KIP-211): an empty group's offsets expire that long after it became
   * empty (a group that never had members: after each commit); a consumer group with members loses
   * only offsets of topics nobody subscribes to any more. An empty group left without offsets is deleted.
   */
  expireOffsets(): CoordinatorResult<void> {
    this.scheduleOffsetExpiry()
    const now = this.now()
    const retention = this.config.offsetsRetentionMs
    const records: CoordinatorRecord[] = []
    for (const group of [...this.groups.values()]) {
      const empty = group.is('Empty')
      const subscribed = empty ? null : group.subscribedTopics()
      if (!empty && subscribed === null) continue
      let remaining = 0
      for (const [topic, byPartition] of this.offsets.get(group.groupId) ?? []) {
        for (const [partition, o] of byPartition) {
          let expired = false
          if (empty || !subscribed!.has(topic)) {
            const base = empty && group.protocolType !== null ? group.currentStateTimestamp : o.commitTimestamp
            expired = o.expireTimestamp >= 0 ? now >= o.expireTimestamp : now - base >= retention
          }
          if (expired) records.push({ key: encodeOffsetCommitKey(group.groupId, topic, partition), value: null })
          else remaining++
        }
      }
      if (empty && remaining === 0 && group.pendingMembers.size === 0) {
        this.ctx.log.info({ groupId: group.groupId }, 'deleting empty group without offsets')
        // Its offsets' tombstones are already in `records`; only the group's own is new.
        records.push(...this.groupTombstones(group).filter((r) => decodeGroupRecordKey(r.key).type === 'group-metadata'))
      }
    }
    if (records.length > 0) this.ctx.log.info({ partition: this.ctx.partition, tombstones: records.length }, 'expiring offsets')
    return { records, result: undefined }
  }

  // ---- describe / list --------------------------------------------------------------------------

  describeGroup(groupId: string): DescribedGroup {
    const group = this.groups.get(groupId)
    if (group === undefined) return { groupId, errorCode: ErrorCode.NONE, state: 'Dead', protocolType: '', protocolData: '', members: [] }
    const stable = group.is('Stable')
    return {
      groupId,
      errorCode: ErrorCode.NONE,
      state: group.state,
      protocolType: group.protocolType ?? '',
      protocolData: stable ? (group.protocolName ?? '') : '',
      members: [...group.members.values()].map((m) => ({
        memberId: m.memberId,
        groupInstanceId: m.groupInstanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        metadata: stable ? group.memberMetadata(m) : EMPTY,
        assignment: stable ? m.assignment : EMPTY,
      })),
    }
  }

  listGroups(): ListedGroup[] {
    return [...this.groups.values()].filter((g) => !g.is('Dead')).map((g) => ({ groupId: g.groupId, protocolType: g.protocolType ?? '', state: g.state }))
  }
}
