// Membership of a classic group: FindCoordinator, JoinGroup (with the member id handshake of KIP-394), the
// leader's assignment, SyncGroup, Heartbeat, LeaveGroup, and the group's offsets (OffsetCommit /
// OffsetFetch). A consumer joins with protocol type 'consumer': subscriptions and assignments travel as
// Kafka's ConsumerProtocol bytes (an int16 version, then the versioned struct). Other members of the
// classic protocol (Connect workers: protocol type 'connect') bring their own metadata and assignment
// bytes through joinWith() and a GroupProtocol.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as ConsumerProtocolAssignment from '../protocol/messages/consumer-protocol-assignment.gen.js'
import * as ConsumerProtocolSubscription from '../protocol/messages/consumer-protocol-subscription.gen.js'
import * as Heartbeat from '../protocol/messages/12-heartbeat.gen.js'
import * as JoinGroup from '../protocol/messages/11-join-group.gen.js'
import * as LeaveGroup from '../protocol/messages/13-leave-group.gen.js'
import * as OffsetCommit from '../protocol/messages/08-offset-commit.gen.js'
import * as OffsetFetch from '../protocol/messages/09-offset-fetch.gen.js'
import * as SyncGroup from '../protocol/messages/14-sync-group.gen.js'
import { Reader } from '../protocol/primitives/reader.js'
import { Writer } from '../protocol/primitives/writer.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { assign, type AssignorName, type MemberSubscription } from './assignors.js'
import type { Cluster } from './cluster-connections.js'
import type { BrokerConnection } from './connection.js'
import { isRetriableError } from './errors.js'

const SUBSCRIPTION_VERSION = 1
const ASSIGNMENT_VERSION = 1

export function encodeSubscription(topics: readonly string[], userData: Buffer | null = null): Buffer {
  const w = new Writer(64)
  w.writeInt16(SUBSCRIPTION_VERSION)
  ConsumerProtocolSubscription.encodeConsumerProtocolSubscription(w, ConsumerProtocolSubscription.createConsumerProtocolSubscription({ topics: [...topics], userData }), SUBSCRIPTION_VERSION)
  return w.toBuffer()
}

/** Decodes subscription bytes; newer versions only append fields, so they decode as the newest known. */
export function decodeSubscription(buf: Buffer): ConsumerProtocolSubscription.ConsumerProtocolSubscription {
  const r = new Reader(buf)
  const v = r.readInt16()
  if (v < 0) throw new KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, `subscription version ${v}`)
  return ConsumerProtocolSubscription.decodeConsumerProtocolSubscription(r, Math.min(v, ConsumerProtocolSubscription.ConsumerProtocolSubscriptionInfo.maxVersion))
}

export function encodeAssignment(assignment: ReadonlyMap<string, number[]>, userData: Buffer | null = null): Buffer {
  const w = new Writer(64)
  w.writeInt16(ASSIGNMENT_VERSION)
  const msg = ConsumerProtocolAssignment.createConsumerProtocolAssignment({
    assignedPartitions: [...assignment].map(([topic, partitions]) => ConsumerProtocolAssignment.createTopicPartition({ topic, partitions })),
    userData,
  })
  ConsumerProtocolAssignment.encodeConsumerProtocolAssignment(w, msg, ASSIGNMENT_VERSION)
  return w.toBuffer()
}

export function decodeAssignment(buf: Buffer): { topic: string; partition: number }[] {
  return decodeAssignmentWithUserData(buf).partitions
}

/** The assigned partitions and the assignor's userData (null when none or for an empty assignment). */
export function decodeAssignmentWithUserData(buf: Buffer): { partitions: { topic: string; partition: number }[]; userData: Buffer | null } {
  if (buf.length === 0) return { partitions: [], userData: null }
  const r = new Reader(buf)
  const v = r.readInt16()
  if (v < 0) throw new KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, `assignment version ${v}`)
  const a = ConsumerProtocolAssignment.decodeConsumerProtocolAssignment(r, Math.min(v, ConsumerProtocolAssignment.ConsumerProtocolAssignmentInfo.maxVersion))
  return { partitions: a.assignedPartitions.flatMap((tp) => tp.partitions.map((partition) => ({ topic: tp.topic, partition }))), userData: a.userData }
}

/** One member's subscription as the leader's custom assignor sees it. */
export interface AssignorMember {
  memberId: string
  groupInstanceId: string | null
  topics: string[]
  userData: Buffer | null
}

/** What a custom assignor gives one member: partitions by topic, and userData for it. */
export interface MemberAssignment {
  partitions: Map<string, number[]>
  userData?: Buffer | null
}

/**
 * A client-side assignor of one's own (Kafka's ConsumerPartitionAssignor), for products such as Streams
 * that carry their own data in subscriptions and assignments: its name is the protocol name offered in
 * JoinGroup, subscriptionUserData is asked before every JoinGroup, and the leader's assign sees every
 * member's userData. Offered before the built-in assignors.
 */
export interface GroupAssignor {
  name: string
  subscriptionUserData?(topics: readonly string[]): Buffer | null
  assign(members: readonly AssignorMember[], partitionCounts: ReadonlyMap<string, number>): Promise<Map<string, MemberAssignment>> | Map<string, MemberAssignment>
}

export interface GroupOptions {
  groupId: string
  /** Default 45000. */
  sessionTimeoutMs?: number
  /** Default 300000 (max.poll.interval.ms). */
  rebalanceTimeoutMs?: number
  /** Default 3000. */
  heartbeatIntervalMs?: number
  /** In order of preference. Default ['range', 'roundrobin']. */
  assignors?: AssignorName[]
  /** A custom assignor, preferred over the built-in ones (with it, assignors defaults to none). */
  assignor?: GroupAssignor
}

export interface TopicPartitionOffset {
  topic: string
  partition: number
  offset: number
  metadata?: string | null
  /** The leader epoch of the record before offset, when known (TxnOffsetCommit v2+); default -1. */
  leaderEpoch?: number
}

/**
 * A consumer's place in its group (Kafka's ConsumerGroupMetadata), for Producer.sendOffsetsToTransaction:
 * the group coordinator refuses the offsets of a member that is no longer in the generation (a zombie).
 */
export interface ConsumerGroupMetadata {
  groupId: string
  /** -1 outside a generation. */
  generationId: number
  /** '' outside a generation. */
  memberId: string
  /** group.instance.id of a static member; null for a dynamic one. */
  groupInstanceId: string | null
}

/** A member's protocols for joinWith(): its own protocol type, metadata and leader assignment. */
export interface GroupProtocol {
  /** JoinGroup's protocolType, e.g. 'connect'. Every member of a group must use the same. */
  protocolType: string
  /** The protocols this member supports, most preferred first, each with this member's metadata for it. */
  protocols(): { name: string; metadata: Buffer }[]
  /**
   * Run on the member the coordinator made leader: every member's assignment bytes (member id -> bytes),
   * for the protocol the coordinator chose.
   */
  assign(protocolName: string, leaderId: string, members: readonly { memberId: string; groupInstanceId: string | null; metadata: Buffer }[]): Promise<Map<string, Buffer>>
}

/** The classic group protocol, for one member. */
export class GroupMember {
  readonly groupId: string
  memberId = ''
  generationId = -1
  leaderId = ''
  protocolName: string | null = null
  private readonly sessionTimeoutMs: number
  private readonly rebalanceTimeoutMs: number
  private readonly heartbeatIntervalMs: number
  private readonly assignors: AssignorName[]
  private readonly customAssignor: GroupAssignor | null
  /** The userData of the last assignment this member received (custom assignors). */
  assignmentUserData: Buffer | null = null
  private heartbeatTimer: NodeJS.Timeout | null = null
  private heartbeatBusy = false
  /** Set when the coordinator asks for a rebalance or the membership was lost. */
  needsRejoin = true
  /** Set by the heartbeat when it failed with a non-retriable error. */
  heartbeatError: Error | null = null

  constructor(private readonly cluster: Cluster, opts: GroupOptions) {
    if (opts.groupId === '') throw new KafkaError(ErrorCode.INVALID_GROUP_ID, 'the group id must not be empty')
    this.groupId = opts.groupId
    this.sessionTimeoutMs = opts.sessionTimeoutMs ?? 45000
    this.rebalanceTimeoutMs = opts.rebalanceTimeoutMs ?? 300000
    this.heartbeatIntervalMs = opts.heartbeatIntervalMs ?? 3000
    this.customAssignor = opts.assignor ?? null
    this.assignors = opts.assignors ?? (this.customAssignor !== null ? [] : ['range', 'roundrobin'])
  }

  private coordinator(): Promise<BrokerConnection> {
    return this.cluster.coordinator(this.groupId, 0)
  }

  /** Coordinator errors that mean "find the coordinator again and retry". */
  private coordinatorMoved(code: number): boolean {
    if (code === ErrorCode.NOT_COORDINATOR || code === ErrorCode.COORDINATOR_NOT_AVAILABLE) {
      this.cluster.forgetCoordinator(this.groupId)
      return true
    }
    return code === ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
  }

  /**
   * Joins (or rejoins) the group subscribed to topics and returns this member's assignment. The leader
   * computes everyone's assignment with partition counts from fresh metadata.
   */
  async join(topics: readonly string[]): Promise<{ topic: string; partition: number }[]> {
    const metadata = encodeSubscription(topics)
    const custom = this.customAssignor
    const consumer: GroupProtocol = {
      protocolType: 'consumer',
      // Asked before every JoinGroup: a custom assignor's subscription userData may change between rounds.
      protocols: () => [
        ...(custom !== null ? [{ name: custom.name, metadata: encodeSubscription(topics, custom.subscriptionUserData?.(topics) ?? null) }] : []),
        ...this.assignors.map((name) => ({ name, metadata })),
      ],
      assign: async (protocolName, _leaderId, members) => this.leaderAssign(protocolName, members),
    }
    const decoded = decodeAssignmentWithUserData(await this.joinWith(consumer))
    this.assignmentUserData = decoded.userData
    return decoded.partitions
  }

  /**
   * Joins (or rejoins) the group with a protocol of the caller's own (metadata and assignment bytes are
   * the caller's) and returns this member's assignment bytes (empty when the leader gave none).
   */
  async joinWith(protocol: GroupProtocol): Promise<Buffer> {
    this.stopHeartbeat()
    const deadline = Date.now() + this.rebalanceTimeoutMs
    for (let attempt = 0; ; attempt++) {
      try {
        const assignment = await this.joinOnce(protocol)
        if (assignment !== null) {
          this.needsRejoin = false
          this.heartbeatError = null
          this.startHeartbeat()
          return assignment
        }
      } catch (err) {
        if (!isRetriableError(err) || Date.now() > deadline) throw err
        if (err instanceof KafkaError) this.coordinatorMoved(err.code)
        await new Promise((r) => setTimeout(r, Math.min(this.cluster.retryBackoffMs * 2 ** Math.min(attempt, 4), 1000)))
      }
    }
  }

  /** One JoinGroup + SyncGroup round; null when it must be repeated at once (new member id, rebalance). */
  private async joinOnce(protocol: GroupProtocol): Promise<Buffer | null> {
    const conn = await this.coordinator()
    const req = JoinGroup.createJoinGroupRequest({
      groupId: this.groupId,
      sessionTimeoutMs: this.sessionTimeoutMs,
      rebalanceTimeoutMs: this.rebalanceTimeoutMs,
      memberId: this.memberId,
      protocolType: protocol.protocolType,
      protocols: protocol.protocols().map((p) => JoinGroup.createJoinGroupRequestProtocol({ name: p.name, metadata: p.metadata })),
    })
    const res = await conn.send(ApiKey.JoinGroup, (w, v) => JoinGroup.encodeJoinGroupRequest(w, req, v), JoinGroup.decodeJoinGroupResponse, { extraTimeoutMs: this.rebalanceTimeoutMs })
    if (res.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
      this.memberId = res.memberId
      return null
    }
    if (res.errorCode === ErrorCode.UNKNOWN_MEMBER_ID || res.errorCode === ErrorCode.ILLEGAL_GENERATION) {
      this.memberId = ''
      this.generationId = -1
      return null
    }
    if (res.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) return null
    if (res.errorCode !== ErrorCode.NONE) {
      this.coordinatorMoved(res.errorCode)
      throw new KafkaError(res.errorCode as ErrorCode, `JoinGroup '${this.groupId}'`)
    }
    this.memberId = res.memberId
    this.generationId = res.generationId
    this.leaderId = res.leader
    this.protocolName = res.protocolName
    let assignments: SyncGroup.SyncGroupRequestAssignment[] = []
    if (res.leader === res.memberId && !res.skipAssignment) {
      const members = res.members.map((m) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId ?? null, metadata: Buffer.from(m.metadata) }))
      const result = await protocol.assign(res.protocolName ?? '', res.leader, members)
      assignments = [...result].map(([memberId, assignment]) => SyncGroup.createSyncGroupRequestAssignment({ memberId, assignment }))
    }
    const sync = SyncGroup.createSyncGroupRequest({
      groupId: this.groupId,
      generationId: this.generationId,
      memberId: this.memberId,
      protocolType: protocol.protocolType,
      protocolName: res.protocolName,
      assignments,
    })
    const sres = await conn.send(ApiKey.SyncGroup, (w, v) => SyncGroup.encodeSyncGroupRequest(w, sync, v), SyncGroup.decodeSyncGroupResponse, { extraTimeoutMs: this.rebalanceTimeoutMs })
    if (sres.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) return null
    if (sres.errorCode === ErrorCode.UNKNOWN_MEMBER_ID || sres.errorCode === ErrorCode.ILLEGAL_GENERATION) {
      this.memberId = ''
      this.generationId = -1
      return null
    }
    if (sres.errorCode !== ErrorCode.NONE) {
      this.coordinatorMoved(sres.errorCode)
      throw new KafkaError(sres.errorCode as ErrorCode, `SyncGroup '${this.groupId}'`)
    }
    return Buffer.from(sres.assignment)
  }

  private async leaderAssign(protocolName: string, joined: readonly { memberId: string; groupInstanceId: string | null; metadata: Buffer }[]): Promise<Map<string, Buffer>> {
    const subscriptions = joined.map((m) => ({ m, sub: decodeSubscription(m.metadata) }))
    const members: MemberSubscription[] = subscriptions.map(({ m, sub }) => ({ memberId: m.memberId, topics: sub.topics }))
    const allTopics = [...new Set(members.flatMap((m) => m.topics))]
    const meta = allTopics.length > 0 ? await this.cluster.refreshMetadata(allTopics) : this.cluster.metadata
    const counts = new Map<string, number>()
    for (const t of allTopics) {
      const info = meta.topics.get(t)
      if (info !== undefined && info.errorCode === ErrorCode.NONE) counts.set(t, info.partitions.length)
    }
    const custom = this.customAssignor
    if (custom !== null && protocolName === custom.name) {
      const out = await custom.assign(subscriptions.map(({ m, sub }) => ({ memberId: m.memberId, groupInstanceId: m.groupInstanceId, topics: sub.topics, userData: sub.userData })), counts)
      return new Map(joined.map((m) => {
        const a = out.get(m.memberId)
        return [m.memberId, encodeAssignment(a?.partitions ?? new Map(), a?.userData ?? null)]
      }))
    }
    const result = assign(protocolName || 'range', members, counts)
    return new Map([...result].map(([memberId, a]) => [memberId, encodeAssignment(a)]))
  }

  private startHeartbeat(): void {
    this.stopHeartbeat()
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), this.heartbeatIntervalMs)
    this.heartbeatTimer.unref()
  }

  stopHeartbeat(): void {
    if (this.heartbeatTimer !== null) clearInterval(this.heartbeatTimer)
    this.heartbeatTimer = null
  }

  /** One heartbeat; flags needsRejoin when the group is rebalancing or this member was dropped. */
  async heartbeat(): Promise<void> {
    if (this.heartbeatBusy || this.generationId < 0) return
    this.heartbeatBusy = true
    try {
      const conn = await this.coordinator()
      const req = Heartbeat.createHeartbeatRequest({ groupId: this.groupId, generationId: this.generationId, memberId: this.memberId })
      const res = await conn.send(ApiKey.Heartbeat, (w, v) => Heartbeat.encodeHeartbeatRequest(w, req, v), Heartbeat.decodeHeartbeatResponse)
      if (res.errorCode === ErrorCode.NONE) return
      if (res.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) this.needsRejoin = true
      else if (res.errorCode === ErrorCode.UNKNOWN_MEMBER_ID || res.errorCode === ErrorCode.ILLEGAL_GENERATION || res.errorCode === ErrorCode.FENCED_INSTANCE_ID) {
        this.memberId = res.errorCode === ErrorCode.UNKNOWN_MEMBER_ID ? '' : this.memberId
        this.generationId = -1
        this.needsRejoin = true
      } else if (this.coordinatorMoved(res.errorCode)) this.needsRejoin = true
      else this.heartbeatError = new KafkaError(res.errorCode as ErrorCode, `Heartbeat '${this.groupId}'`)
    } catch (err) {
      // A lost connection: the next heartbeat or poll finds the coordinator again.
      if (!isRetriableError(err)) this.heartbeatError = err as Error
      else this.cluster.forgetCoordinator(this.groupId)
    } finally {
      this.heartbeatBusy = false
    }
  }

  /** Commits offsets as this member (or, outside a generation, as an admin commit for an empty group). */
  async commit(offsets: readonly TopicPartitionOffset[]): Promise<void> {
    if (offsets.length === 0) return
    await commitOffsets(this.cluster, this.groupId, offsets, this.generationId, this.memberId)
  }

  async fetchCommitted(tps: readonly { topic: string; partition: number }[] | null): Promise<Map<string, number>> {
    return fetchCommittedOffsets(this.cluster, this.groupId, tps)
  }

  /** LeaveGroup, so the others rebalance at once instead of after session.timeout.ms. */
  async leave(): Promise<void> {
    this.stopHeartbeat()
    if (this.memberId === '') return
    const conn = await this.coordinator()
    const v = conn.version(ApiKey.LeaveGroup)
    const req = LeaveGroup.createLeaveGroupRequest(
      v >= 3 ? { groupId: this.groupId, members: [LeaveGroup.createMemberIdentity({ memberId: this.memberId, reason: 'the consumer is closing' })] } : { groupId: this.groupId, memberId: this.memberId },
    )
    try {
      await conn.send(ApiKey.LeaveGroup, (w, ver) => LeaveGroup.encodeLeaveGroupRequest(w, req, ver), LeaveGroup.decodeLeaveGroupResponse)
    } finally {
      this.memberId = ''
      this.generationId = -1
    }
  }
}

/**
 * OffsetCommit for a group. generationId -1 and memberId '' commit as a tool (allowed while the group
 * has no members: kafka-consumer-groups --reset-offsets does this).
 */
export async function commitOffsets(cluster: Cluster, groupId: string, offsets: readonly TopicPartitionOffset[], generationId = -1, memberId = ''): Promise<void> {
  const byTopic = new Map<string, OffsetCommit.OffsetCommitRequestPartition[]>()
  for (const o of offsets) {
    let list = byTopic.get(o.topic)
    if (list === undefined) byTopic.set(o.topic, (list = []))
    list.push(OffsetCommit.createOffsetCommitRequestPartition({ partitionIndex: o.partition, committedOffset: BigInt(o.offset), committedMetadata: o.metadata ?? '' }))
  }
  const req = OffsetCommit.createOffsetCommitRequest({
    groupId,
    generationIdOrMemberEpoch: generationId,
    memberId,
    topics: [...byTopic].map(([name, partitions]) => OffsetCommit.createOffsetCommitRequestTopic({ name, partitions })),
  })
  await cluster.withRetries(
    async () => {
      const conn = await cluster.coordinator(groupId)
      const res = await conn.send(ApiKey.OffsetCommit, (w, v) => OffsetCommit.encodeOffsetCommitRequest(w, req, v), OffsetCommit.decodeOffsetCommitResponse)
      for (const t of res.topics) {
        for (const p of t.partitions) {
          if (p.errorCode === ErrorCode.NONE) continue
          if (p.errorCode === ErrorCode.NOT_COORDINATOR || p.errorCode === ErrorCode.COORDINATOR_NOT_AVAILABLE) cluster.forgetCoordinator(groupId)
          throw new KafkaError(p.errorCode as ErrorCode, `committing ${t.name}-${p.partitionIndex} for group '${groupId}'`)
        }
      }
    },
  )
}

/** Committed offsets of a group ('topic\0partition' -> offset); tps null = every partition it has. */
export async function fetchCommittedOffsets(cluster: Cluster, groupId: string, tps: readonly { topic: string; partition: number }[] | null): Promise<Map<string, number>> {
  const details = await fetchCommittedOffsetDetails(cluster, groupId, tps)
  return new Map([...details].map(([k, d]) => [k, d.offset]))
}

/** A committed offset with what was committed along with it (Kafka's OffsetAndMetadata). */
export interface CommittedOffset {
  offset: number
  /** The leader epoch the committer saw, null when it sent none. */
  leaderEpoch: number | null
  metadata: string | null
}

/** Committed offsets of a group with their leader epochs and metadata; tps null = every partition it has. */
export async function fetchCommittedOffsetDetails(cluster: Cluster, groupId: string, tps: readonly { topic: string; partition: number }[] | null): Promise<Map<string, CommittedOffset>> {
  let topics: OffsetFetch.OffsetFetchRequestTopic[] | null = null
  if (tps !== null) {
    const byTopic = new Map<string, number[]>()
    for (const tp of tps) {
      let list = byTopic.get(tp.topic)
      if (list === undefined) byTopic.set(tp.topic, (list = []))
      list.push(tp.partition)
    }
    topics = [...byTopic].map(([name, partitionIndexes]) => OffsetFetch.createOffsetFetchRequestTopic({ name, partitionIndexes }))
  }
  return cluster.withRetries(async () => {
    const conn = await cluster.coordinator(groupId)
    const v = conn.version(ApiKey.OffsetFetch)
    if (topics === null && v < 2) throw new KafkaError(ErrorCode.UNSUPPORTED_VERSION, 'fetching all offsets of a group needs OffsetFetch v2+')
    const req = OffsetFetch.createOffsetFetchRequest({ groupId, topics, requireStable: false })
    const res = await conn.send(ApiKey.OffsetFetch, (w, ver) => OffsetFetch.encodeOffsetFetchRequest(w, req, ver), OffsetFetch.decodeOffsetFetchResponse)
    if (res.errorCode !== ErrorCode.NONE) {
      if (res.errorCode === ErrorCode.NOT_COORDINATOR || res.errorCode === ErrorCode.COORDINATOR_NOT_AVAILABLE) cluster.forgetCoordinator(groupId)
      throw new KafkaError(res.errorCode as ErrorCode, `fetching offsets of group '${groupId}'`)
    }
    const out = new Map<string, CommittedOffset>()
    for (const t of res.topics) {
      for (const p of t.partitions) {
        if (p.errorCode !== ErrorCode.NONE) throw new KafkaError(p.errorCode as ErrorCode, `offset of ${t.name}-${p.partitionIndex} for group '${groupId}'`)
        if (p.committedOffset >= 0n) {
          out.set(`${t.name}\u0000${p.partitionIndex}`, { offset: Number(p.committedOffset), leaderEpoch: p.committedLeaderEpoch >= 0 ? p.committedLeaderEpoch : null, metadata: p.metadata })
        }
      }
    }
    return out
  })
}
