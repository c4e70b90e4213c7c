// A classic-protocol consumer group (Kafka's ClassicGroup): members, generation, selected protocol and
// leader, and the state it is in.
//
//   Empty --join--> PreparingRebalance --all joined / rebalance timeout--> CompletingRebalance
//   CompletingRebalance --leader's SyncGroup written--> Stable
//   Stable / CompletingRebalance --join with new metadata, leave, expiry--> PreparingRebalance
//   PreparingRebalance --every member gone--> Empty;   Empty --deleted / expired--> Dead
//
// Invariants: `staticMembers` maps each member's group.instance.id to its member id; a member awaiting
// join has joinWaiter set (it counts for hasAllMembersJoined), one awaiting sync has syncWaiter set;
// `supportedProtocols` counts, per protocol name, the members that support it.
import { ErrorCode } from '../../domain/errors.js'
import type { GroupMemberMetadata } from './offset-commit-group-metadata-records.js'
import type { GroupStateName, JoinGroupResult, ProtocolMetadata, SyncGroupResult } from './types.js'

export class Deferred<T> {
  readonly promise: Promise<T>
  resolve!: (v: T) => void
  settled = false
  constructor() {
    this.promise = new Promise<T>((r) => {
      this.resolve = (v: T) => {
        if (this.settled) return
        this.settled = true
        r(v)
      }
    })
  }
}

export interface ClassicMember {
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  rebalanceTimeoutMs: number
  sessionTimeoutMs: number
  protocolType: string
  protocols: ProtocolMetadata[]
  assignment: Buffer
  joinWaiter: Deferred<JoinGroupResult> | null
  syncWaiter: Deferred<SyncGroupResult> | null
  /** Joined but not yet through a completed join: expires after the new-member timeout. */
  isNew: boolean
}

const VALID_PREVIOUS: Record<GroupStateName, GroupStateName[]> = {
  Empty: ['PreparingRebalance'],
  PreparingRebalance: ['Stable', 'CompletingRebalance', 'Empty'],
  CompletingRebalance: ['PreparingRebalance'],
  Stable: ['CompletingRebalance'],
  Dead: ['Stable', 'PreparingRebalance', 'CompletingRebalance', 'Empty', 'Dead'],
}

export class ClassicGroup {
  state: GroupStateName
  generationId = 0
  protocolType: string | null = null
  protocolName: string | null = null
  leaderId: string | null = null
  /** When the group last changed state (ms); the base of offset expiry for empty groups. */
  currentStateTimestamp: number
  readonly members = new Map<string, ClassicMember>()
  readonly staticMembers = new Map<string, string>()
  /** Members given an id by MEMBER_ID_REQUIRED that have not joined with it yet (KIP-394). */
  readonly pendingMembers = new Set<string>()
  /** Members of the current generation that have not sent SyncGroup yet. */
  readonly pendingSyncMembers = new Set<string>()
  readonly supportedProtocols = new Map<string, number>()
  numAwaitingJoin = 0
  /** Set when a member joins during an initial delayed join (the delay is extended then). */
  newMemberAdded = false
  /** The first rebalance of an empty group waits group.initial.rebalance.delay.ms (and longer while members keep coming). */
  initialJoinInProgress = false

  constructor(
    readonly groupId: string,
    now: number,
    state: GroupStateName = 'Empty',
  ) {
    this.state = state
    this.currentStateTimestamp = now
  }

  is(state: GroupStateName): boolean {
    return this.state === state
  }

  transitionTo(state: GroupStateName, now: number): void {
    if (!VALID_PREVIOUS[state].includes(this.state)) throw new Error(`group ${this.groupId}: illegal transition ${this.state} -> ${state}`)
    this.state = state
    this.currentStateTimestamp = now
  }

  isLeader(memberId: string): boolean {
    return this.leaderId === memberId
  }

  has(memberId: string): boolean {
    return this.members.has(memberId)
  }

  staticMemberId(instanceId: string): string | undefined {
    return this.staticMembers.get(instanceId)
  }

  add(member: ClassicMember, joinWaiter: Deferred<JoinGroupResult> | null): void {
    if (this.members.size === 0) this.protocolType = member.protocolType
    if (this.leaderId === null) this.leaderId = member.memberId
    this.members.set(member.memberId, member)
    for (const p of member.protocols) this.supportedProtocols.set(p.name, (this.supportedProtocols.get(p.name) ?? 0) + 1)
    if (member.groupInstanceId !== null) this.staticMembers.set(member.groupInstanceId, member.memberId)
    member.joinWaiter = joinWaiter
    if (joinWaiter !== null) this.numAwaitingJoin++
  }

  remove(memberId: string): ClassicMember | undefined {
    const member = this.members.get(memberId)
    if (member === undefined) return undefined
    this.members.delete(memberId)
    for (const p of member.protocols) this.decrementProtocol(p.name)
    if (member.joinWaiter !== null) this.numAwaitingJoin--
    if (member.groupInstanceId !== null && this.staticMembers.get(member.groupInstanceId) === memberId) this.staticMembers.delete(member.groupInstanceId)
    this.pendingSyncMembers.delete(memberId)
    if (this.isLeader(memberId)) this.leaderId = this.members.keys().next().value ?? null
    return member
  }

  private decrementProtocol(name: string): void {
    const n = (this.supportedProtocols.get(name) ?? 0) - 1
    if (n <= 0) this.supportedProtocols.delete(name)
    else this.supportedProtocols.set(name, n)
  }

  /** A member's protocols change (rejoin): keep the per-protocol counts right. */
  updateProtocols(member: ClassicMember, protocols: ProtocolMetadata[]): void {
    for (const p of member.protocols) this.decrementProtocol(p.name)
    member.protocols = protocols
    for (const p of protocols) this.supportedProtocols.set(p.name, (this.supportedProtocols.get(p.name) ?? 0) + 1)
  }

  setJoinWaiter(member: ClassicMember, waiter: Deferred<JoinGroupResult> | null): void {
    if (member.joinWaiter === null && waiter !== null) this.numAwaitingJoin++
    else if (member.joinWaiter !== null && waiter === null) this.numAwaitingJoin--
    member.joinWaiter = waiter
  }

  /** Kafka: every known member has rejoined and no member id handed out is still outstanding. */
  hasAllMembersJoined(): boolean {
    return this.members.size === this.numAwaitingJoin && this.pendingMembers.size === 0
  }

  notYetRejoinedMembers(): ClassicMember[] {
    return [...this.members.values()].filter((m) => m.joinWaiter === null)
  }

  /** The longest rebalance timeout of the members: how long a rebalance waits for rejoins. */
  rebalanceTimeoutMs(): number {
    let max = 0
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs)
    return max
  }

  /**
   * Can a member with these protocols join? An empty group takes any non-empty protocol list; otherwise
   * the type must match and at least one protocol must be one every current member supports.
   */
  supportsProtocols(protocolType: string, protocols: ProtocolMetadata[]): boolean {
    if (this.members.size === 0) return protocolType !== '' && protocols.length > 0
    if (this.protocolType !== protocolType) return false
    return protocols.some((p) => this.supportedProtocols.get(p.name) === this.members.size)
  }

  /** Kafka's selection: among protocols all members support, each member votes for its most preferred one. */
  selectProtocol(): string {
    const all = [...this.members.values()]
    const candidates = [...this.supportedProtocols.entries()].filter(([, n]) => n === all.length).map(([name]) => name)
    if (candidates.length === 0) throw new Error(`group ${this.groupId}: no protocol supported by every member`)
    const votes = new Map<string, number>()
    for (const m of all) {
      const choice = m.protocols.find((p) => candidates.includes(p.name))!.name
      votes.set(choice, (votes.get(choice) ?? 0) + 1)
    }
    let best = candidates[0]!
    for (const c of candidates) if ((votes.get(c) ?? 0) > (votes.get(best) ?? 0)) best = c
    return best
  }

  /** The member's metadata for the selected protocol (empty when it has none). */
  memberMetadata(member: ClassicMember, protocol: string | null = this.protocolName): Buffer {
    if (protocol === null) return Buffer.alloc(0)
    return member.protocols.find((p) => p.name === protocol)?.metadata ?? Buffer.alloc(0)
  }

  /** Next generation: a protocol and CompletingRebalance when members remain, else Empty. */
  initNextGeneration(now: number): void {
    this.generationId++
    if (this.members.size > 0) {
      this.protocolName = this.selectProtocol()
      this.transitionTo('CompletingRebalance', now)
      this.pendingSyncMembers.clear()
      for (const id of this.members.keys()) this.pendingSyncMembers.add(id)
    } else {
      this.protocolName = null
      this.transitionTo('Empty', now)
    }
  }

  /** Replaces a static member's id (a restarted static member rejoining with a new member id). */
  replaceStaticMember(instanceId: string, oldMemberId: string, newMemberId: string): ClassicMember {
    const member = this.members.get(oldMemberId)!
    this.members.delete(oldMemberId)
    member.memberId = newMemberId
    this.members.set(newMemberId, member)
    this.staticMembers.set(instanceId, newMemberId)
    if (this.isLeader(oldMemberId)) this.leaderId = newMemberId
    if (this.pendingSyncMembers.delete(oldMemberId)) this.pendingSyncMembers.add(newMemberId)
    return member
  }

  /** The group metadata record's members (current generation's subscriptions and assignments). */
  memberRecords(): GroupMemberMetadata[] {
    return [...this.members.values()].map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      rebalanceTimeout: m.rebalanceTimeoutMs,
      sessionTimeout: m.sessionTimeoutMs,
      subscription: this.memberMetadata(m),
      assignment: m.assignment,
    }))
  }

  /** Topics the members subscribe to, when the group uses the consumer protocol (OffsetDelete, expiry). */
  subscribedTopics(): Set<string> | null {
    if (this.protocolType !== 'consumer' || this.protocolName === null) return null
    const topics = new Set<string>()
    for (const m of this.members.values()) {
      const parsed = parseSubscriptionTopics(this.memberMetadata(m))
      if (parsed === null) return null
      for (const t of parsed) topics.add(t)
    }
    return topics
  }

  /** Error code to answer a waiting JoinGroup with when it cannot complete normally. */
  static joinError(memberId: string, errorCode: ErrorCode): JoinGroupResult {
    return { errorCode, generationId: -1, protocolType: null, protocolName: null, leader: '', memberId, members: [] }
  }
}

/**
 * The topics of a ConsumerProtocolSubscription (int16 version, then an int32-counted array of int16
 * strings; later versions only append fields). Null when the bytes are not one.
 */
export function parseSubscriptionTopics(buf: Buffer): string[] | null {
  try {
    if (buf.length < 6) return null
    let pos = 2
    const n = buf.readInt32BE(pos)
    pos += 4
    if (n < 0 || n * 2 > buf.length - pos) return null
    const out: string[] = []
    for (let i = 0; i < n; i++) {
      const len = buf.readInt16BE(pos)
      pos += 2
      if (len < 0 || pos + len > buf.length) return null
      out.push(buf.toString('utf8', pos, pos + len))
      pos += len
    }
    return out
  } catch {
    return null
  }
}
