// Classic group membership of one __consumer_offsets partition (Kafka's GroupMetadataManager, classic
// protocol only): groups and their members, JoinGroup / SyncGroup / Heartbeat / LeaveGroup, rebalances
// and the session, join and sync timers. Membership is main-thread state changed directly by the
// operations, made durable by GroupMetadata records at the points Kafka writes them (a completed
// SyncGroup, a group becoming Empty, a static member replaced) and rebuilt from the last of those
// records on load. Committed offsets are the OffsetMetadataManager's; GroupCoordinatorState composes
// the two and routes replayed records to them.
import { randomUUID } from 'node:crypto'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import type { CoordinatorRecord } from '../runtime/partition-writer.js'
import { noRecords, type CoordinatorResult, type StateMachineContext } from '../runtime/runtime.js'
import { ClassicGroup, Deferred, type ClassicMember } from './classic-group.js'
import { decodeGroupMetadataValue, encodeGroupMetadataKey, encodeGroupMetadataValue } from './offset-commit-group-metadata-records.js'
import type {
  DescribedGroup,
  GroupCoordinatorConfig,
  HeartbeatInput,
  JoinGroupInput,
  JoinGroupResult,
  LeaveGroupResult,
  ListedGroup,
  MemberIdentity,
  ProtocolMetadata,
  SyncGroupInput,
  SyncGroupResult,
} from './types.js'

const NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
const EMPTY = Buffer.alloc(0)

const heartbeatKey = (groupId: string, memberId: string): string => `heartbeat\u0000${groupId}\u0000${memberId}`
const joinKey = (groupId: string): string => `join\u0000${groupId}`
const syncKey = (groupId: string): string => `sync\u0000${groupId}`

function sameProtocols(a: ProtocolMetadata[], b: ProtocolMetadata[]): boolean {
  return a.length === b.length && a.every((p, i) => p.name === b[i]!.name && p.metadata.equals(b[i]!.metadata))
}

export class GroupMetadataManager {
  readonly #groups = new Map<string, ClassicGroup>()

  constructor(
    private readonly ctx: StateMachineContext<unknown>,
    private readonly config: GroupCoordinatorConfig,
  ) {}

  private now(): number {
    return this.ctx.clock.now()
  }

  // ---- groups -----------------------------------------------------------------------------------

  group(groupId: string): ClassicGroup | undefined {
    return this.#groups.get(groupId)
  }

  /** Every group, as a snapshot (callers may delete while iterating). */
  allGroups(): ClassicGroup[] {
    return [...this.#groups.values()]
  }

  /**
   * A group that exists only for its offsets (a "simple" group: manual assignment, no members), made
   * when an offset is committed or replayed for a group id the partition does not know yet.
   */
  getOrCreateSimpleGroup(groupId: string): ClassicGroup {
    let group = this.#groups.get(groupId)
    if (group === undefined) this.#groups.set(groupId, (group = new ClassicGroup(groupId, this.now())))
    return group
  }

  /** Forgets a group from memory without writing anything (a simple group whose commit failed). */
  removeGroup(groupId: string): void {
    this.#groups.delete(groupId)
  }

  // ---- replay -----------------------------------------------------------------------------------

  /** A GroupMetadata record: the group as last written, or gone (tombstone). */
  replay(groupId: string, value: Buffer | null): void {
    if (value === null) this.#groups.delete(groupId)
    else this.#groups.set(groupId, this.groupFromRecord(groupId, value))
  }

  /** Loaded members must heartbeat again within their session timeout, or they are removed. */
  onLoaded(): void {
    for (const group of this.#groups.values()) {
      for (const m of group.members.values()) this.rescheduleHeartbeat(group, m)
    }
  }

  /** The partition moved away: whoever waits for a join or sync answer gets NOT_COORDINATOR. */
  onUnloaded(): void {
    for (const group of this.#groups.values()) {
      for (const m of group.members.values()) {
        m.joinWaiter?.resolve(ClassicGroup.joinError(m.memberId, ErrorCode.NOT_COORDINATOR))
        m.syncWaiter?.resolve({ errorCode: ErrorCode.NOT_COORDINATOR, protocolType: null, protocolName: null, assignment: EMPTY })
      }
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

  // ---- timers -----------------------------------------------------------------------------------

  rescheduleHeartbeat(group: ClassicGroup, member: ClassicMember, timeoutMs = member.sessionTimeoutMs): void {
    const groupId = group.groupId
    const memberId = member.memberId
    this.ctx.timer.schedule(heartbeatKey(groupId, memberId), timeoutMs, () => this.expireHeartbeat(groupId, memberId))
  }

  private cancelHeartbeat(groupId: string, memberId: string): void {
    this.ctx.timer.cancel(heartbeatKey(groupId, memberId))
  }

  /** A member (or a member id handed out by MEMBER_ID_REQUIRED) missed its session timeout. */
  expireHeartbeat(groupId: string, memberId: string): CoordinatorResult<void> {
    const group = this.#groups.get(groupId)
    if (group === undefined) return noRecords(undefined)
    if (group.pendingMembers.delete(memberId)) {
      this.ctx.log.info({ groupId, memberId }, 'pending member removed after session timeout')
      return { records: group.is('PreparingRebalance') ? this.maybeCompleteJoin(group) : [], result: undefined, replay: false }
    }
    const member = group.members.get(memberId)
    if (member === undefined) return noRecords(undefined)
    // Members waiting in a rebalance cannot heartbeat: they count as alive, unless still new.
    if (!member.isNew && (member.joinWaiter !== null || member.syncWaiter !== null)) return noRecords(undefined)
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
      this.ctx.timer.schedule(joinKey(groupId), delay, () => this.onInitialJoinTimeout(groupId, remaining))
    } else {
      this.ctx.timer.schedule(joinKey(groupId), group.rebalanceTimeoutMs(), () => this.onJoinTimeout(groupId))
    }
    group.transitionTo('PreparingRebalance', this.now())
    this.ctx.log.info({ groupId, generationId: group.generationId, reason }, 'preparing to rebalance group')
    return isInitial ? [] : this.maybeCompleteJoin(group)
  }

  /** Kafka's InitialDelayedJoin: while new members keep arriving, wait another delay (up to the rebalance timeout). */
  onInitialJoinTimeout(groupId: string, remaining: number): CoordinatorResult<void> {
    const group = this.#groups.get(groupId)
    if (group === undefined || !group.is('PreparingRebalance')) return noRecords(undefined)
    if (group.newMemberAdded && remaining > 0) {
      group.newMemberAdded = false
      const delay = Math.min(this.config.initialRebalanceDelayMs, remaining)
      const next = Math.max(remaining - this.config.initialRebalanceDelayMs, 0)
      this.ctx.timer.schedule(joinKey(groupId), delay, () => this.onInitialJoinTimeout(groupId, next))
      return noRecords(undefined)
    }
    group.initialJoinInProgress = false
    return { records: this.completeJoin(group), result: undefined, replay: false }
  }

  onJoinTimeout(groupId: string): CoordinatorResult<void> {
    const group = this.#groups.get(groupId)
    if (group === undefined) return noRecords(undefined)
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
    this.ctx.timer.schedule(syncKey(groupId), group.rebalanceTimeoutMs(), () => this.expirePendingSync(groupId, generationId))
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
    const group = this.#groups.get(groupId)
    if (group === undefined || group.generationId !== generationId) return noRecords(undefined)
    if (!(group.is('CompletingRebalance') || group.is('Stable')) || group.pendingSyncMembers.size === 0) return noRecords(undefined)
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
    const fail = (code: ErrorCode, memberId = req.memberId): CoordinatorResult<JoinGroupResult> => noRecords(ClassicGroup.joinError(memberId, code))
    if (req.groupId === '') return fail(ErrorCode.INVALID_GROUP_ID)
    if (req.sessionTimeoutMs < this.config.minSessionTimeoutMs || req.sessionTimeoutMs > this.config.maxSessionTimeoutMs) return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
    let group = this.#groups.get(req.groupId)
    let created = false
    if (group === undefined) {
      if (req.memberId !== '') return fail(ErrorCode.UNKNOWN_MEMBER_ID)
      group = new ClassicGroup(req.groupId, this.now())
      this.#groups.set(req.groupId, group)
      created = true
    }
    const g = group
    const failNew = (code: ErrorCode): CoordinatorResult<JoinGroupResult> => {
      if (created) this.#groups.delete(req.groupId)
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
      this.ctx.timer.schedule(heartbeatKey(groupId, newMemberId), req.sessionTimeoutMs, () => this.expireHeartbeat(groupId, newMemberId))
      return noRecords(ClassicGroup.joinError(newMemberId, ErrorCode.MEMBER_ID_REQUIRED))
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
      if (expected !== undefined && expected !== memberId) return noRecords(ClassicGroup.joinError(memberId, ErrorCode.FENCED_INSTANCE_ID))
    }
    const member = group.members.get(memberId)
    if (member === undefined) return noRecords(ClassicGroup.joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID))
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
          return noRecords(this.joinResponse(group, member, members))
        }
        return this.updateMemberAndRebalance(group, member, req, `member ${memberId} changed its metadata`)
      case 'Stable':
        if (group.isLeader(memberId) || !sameProtocols(member.protocols, req.protocols)) {
          return this.updateMemberAndRebalance(group, member, req, `leader or changed member ${memberId} rejoined`)
        }
        // A follower rejoining with unchanged metadata keeps the current generation.
        this.rescheduleHeartbeat(group, member)
        return noRecords(this.joinResponse(group, member, []))
      default:
        return noRecords(ClassicGroup.joinError(memberId, ErrorCode.UNKNOWN_MEMBER_ID))
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
  validateMember(group: ClassicGroup, memberId: string, groupInstanceId: string | null): ErrorCode {
    if (groupInstanceId !== null) {
      const expected = group.staticMemberId(groupInstanceId)
      if (expected === undefined) return ErrorCode.UNKNOWN_MEMBER_ID
      if (expected !== memberId) return ErrorCode.FENCED_INSTANCE_ID
      return ErrorCode.NONE
    }
    return group.has(memberId) ? ErrorCode.NONE : ErrorCode.UNKNOWN_MEMBER_ID
  }

  syncGroup(req: SyncGroupInput): CoordinatorResult<SyncGroupResult> {
    const fail = (errorCode: ErrorCode): CoordinatorResult<SyncGroupResult> => noRecords({ errorCode, protocolType: null, protocolName: null, assignment: EMPTY })
    if (req.groupId === '') return fail(ErrorCode.INVALID_GROUP_ID)
    const group = this.#groups.get(req.groupId)
    if (group === undefined) return fail(ErrorCode.UNKNOWN_MEMBER_ID)
    if (group.is('Dead')) return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    const memberError = this.validateMember(group, req.memberId, req.groupInstanceId)
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
        return noRecords({ errorCode: ErrorCode.NONE, protocolType: group.protocolType, protocolName: group.protocolName, assignment: member.assignment })
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
          if (this.#groups.get(group.groupId) !== group || !group.is('CompletingRebalance') || group.generationId !== generationId) return
          if (error !== null) {
            this.resetAndPropagateAssignmentWithError(group, error.code)
            const groupId = group.groupId
            this.ctx.timer.schedule(joinKey(groupId), 0, () => this.rebalanceAfterError(groupId, generationId))
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
    const group = this.#groups.get(groupId)
    if (group === undefined || group.generationId !== generationId) return noRecords(undefined)
    return { records: this.maybePrepareRebalanceOrCompleteJoin(group, 'storing the group assignment failed'), result: undefined, replay: false }
  }

  heartbeat(req: HeartbeatInput): CoordinatorResult<ErrorCode> {
    if (req.groupId === '') return noRecords(ErrorCode.INVALID_GROUP_ID)
    const group = this.#groups.get(req.groupId)
    if (group === undefined || group.is('Empty')) return noRecords(ErrorCode.UNKNOWN_MEMBER_ID)
    if (group.is('Dead')) return noRecords(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    const memberError = this.validateMember(group, req.memberId, req.groupInstanceId)
    if (memberError !== ErrorCode.NONE) return noRecords(memberError)
    if (req.generationId !== group.generationId) return noRecords(ErrorCode.ILLEGAL_GENERATION)
    this.rescheduleHeartbeat(group, group.members.get(req.memberId)!)
    // During a rebalance the answer tells the member to rejoin.
    return noRecords(group.is('PreparingRebalance') ? ErrorCode.REBALANCE_IN_PROGRESS : ErrorCode.NONE)
  }

  leaveGroup(groupId: string, leaving: MemberIdentity[]): CoordinatorResult<LeaveGroupResult> {
    if (groupId === '') return noRecords({ errorCode: ErrorCode.INVALID_GROUP_ID, members: [] })
    const group = this.#groups.get(groupId)
    if (group === undefined) return noRecords({ errorCode: ErrorCode.NONE, members: leaving.map((m) => ({ ...m, errorCode: ErrorCode.UNKNOWN_MEMBER_ID })) })
    if (group.is('Dead')) return noRecords({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, members: [] })
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

  // ---- deletion -------------------------------------------------------------------------------

  /** Why DeleteGroups may not delete this group now; NONE when it may. */
  deleteGroupError(groupId: string): ErrorCode {
    const group = this.#groups.get(groupId)
    if (group === undefined || group.is('Dead')) return ErrorCode.GROUP_ID_NOT_FOUND
    if (!group.is('Empty')) return ErrorCode.NON_EMPTY_GROUP
    return ErrorCode.NONE
  }

  /**
   * The tombstone of a group's metadata (its offsets' tombstones are the OffsetMetadataManager's). The
   * group is Dead and forgotten from now on, its pending-member and rebalance timers cancelled.
   */
  deleteGroup(group: ClassicGroup): CoordinatorRecord {
    group.transitionTo('Dead', this.now())
    this.#groups.delete(group.groupId)
    for (const id of group.pendingMembers) this.cancelHeartbeat(group.groupId, id)
    this.ctx.timer.cancel(joinKey(group.groupId))
    this.ctx.timer.cancel(syncKey(group.groupId))
    return { key: encodeGroupMetadataKey(group.groupId), value: null }
  }

  // ---- describe / list --------------------------------------------------------------------------

  describeGroup(groupId: string): DescribedGroup {
    const group = this.#groups.get(groupId)
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
    return [...this.#groups.values()].filter((g) => !g.is('Dead')).map((g) => ({ groupId: g.groupId, protocolType: g.protocolType ?? '', state: g.state, groupType: 'classic' as const }))
  }
}
