// Primary election among registry instances through Kafka's group protocol, as Confluent's
// KafkaGroupLeaderElector does (schema.registry.group.id, default "schema-registry"): each instance joins
// the group with protocol type "sr", protocol "v0" and its identity as metadata,
//   {"version":1,"host":"h","port":8081,"master_eligibility":true,"scheme":"http","leader":false};
// the group leader picks, among eligible members, the one with the smallest URL and sends every member
//   {"version":1,"error":0,"master":"<member id>","master_identity":{...}}
// so Skein and Confluent instances can share a group. A member that stops heartbeating (killed) is
// dropped by the coordinator after the session timeout; the others rejoin and elect again.
import type { Cluster } from '../client/cluster-connections.js'
import { isRetriableError } from '../client/errors.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as Heartbeat from '../protocol/messages/12-heartbeat.gen.js'
import * as JoinGroup from '../protocol/messages/11-join-group.gen.js'
import * as LeaveGroup from '../protocol/messages/13-leave-group.gen.js'
import * as SyncGroup from '../protocol/messages/14-sync-group.gen.js'

export const SR_PROTOCOL_TYPE = 'sr'
export const SR_PROTOCOL_V0 = 'v0'

export interface RegistryIdentity {
  host: string
  port: number
  scheme: string
  leaderEligibility: boolean
}

export function identityUrl(i: RegistryIdentity): string {
  return `${i.scheme}://${i.host}:${i.port}`
}

export function encodeIdentity(i: RegistryIdentity, isLeader = false): Buffer {
  return Buffer.from(JSON.stringify({ version: 1, host: i.host, port: i.port, master_eligibility: i.leaderEligibility, scheme: i.scheme, leader: isLeader }))
}

export function decodeIdentity(b: Uint8Array): RegistryIdentity {
  const o = JSON.parse(Buffer.from(b).toString('utf8')) as Record<string, unknown>
  return {
    host: String(o['host'] ?? ''),
    port: Number(o['port'] ?? 0),
    scheme: typeof o['scheme'] === 'string' ? o['scheme'] : 'http',
    leaderEligibility: o['master_eligibility'] !== false && o['leader_eligibility'] !== false,
  }
}

export interface Assignment {
  error: number
  leader: string | null
  leaderIdentity: RegistryIdentity | null
}

/** DUPLICATE_URLS: two members advertise the same URL, so forwarding to the primary cannot work. */
export const ASSIGNMENT_DUPLICATE_URLS = 1

/** The group leader's choice: the eligible member with the smallest URL, sent to every member. */
export function assignLeader(members: { memberId: string; identity: RegistryIdentity }[]): Assignment {
  let leader: { memberId: string; identity: RegistryIdentity } | undefined
  for (const m of members) {
    if (m.identity.leaderEligibility && (!leader || identityUrl(m.identity) < identityUrl(leader.identity))) leader = m
  }
  const urls = new Set(members.map((m) => identityUrl(m.identity)))
  return { error: urls.size !== members.length ? ASSIGNMENT_DUPLICATE_URLS : 0, leader: leader?.memberId ?? null, leaderIdentity: leader?.identity ?? null }
}

export function encodeAssignment(a: Assignment): Buffer {
  const o: Record<string, unknown> = { version: 1, error: a.error }
  if (a.leader !== null) o['master'] = a.leader
  if (a.leaderIdentity) o['master_identity'] = JSON.parse(encodeIdentity(a.leaderIdentity).toString())
  return Buffer.from(JSON.stringify(o))
}

export function decodeAssignment(b: Uint8Array): Assignment {
  const o = JSON.parse(Buffer.from(b).toString('utf8')) as Record<string, unknown>
  const identity = o['master_identity'] ?? o['leader_identity']
  return {
    error: Number(o['error'] ?? 0),
    leader: typeof o['master'] === 'string' ? o['master'] : typeof o['leader'] === 'string' ? o['leader'] : null,
    leaderIdentity: identity && typeof identity === 'object' ? decodeIdentity(Buffer.from(JSON.stringify(identity))) : null,
  }
}

export interface LeaderElectorOptions {
  groupId?: string
  identity: RegistryIdentity
  /** Default 10000 (Confluent's leader.election... session timeout). */
  sessionTimeoutMs?: number
  /** Default 300000. */
  rebalanceTimeoutMs?: number
  /** Default 3000. */
  heartbeatIntervalMs?: number
  /** Called after every election: the primary's identity (null if none is eligible) and whether it is this one. */
  onElected: (leader: RegistryIdentity | null, isSelf: boolean) => void | Promise<void>
}

/** How long stop() waits for a round the coordinator holds before abandoning it. */
const STOP_WAIT_MS = 300

export class LeaderElector {
  readonly groupId: string
  private memberId = ''
  private generationId = -1
  private running = false
  private loop?: Promise<void>
  private rejoin = true
  private wake?: () => void
  leader: RegistryIdentity | null = null
  isLeader = false
  lastError?: Error

  constructor(
    private readonly cluster: Cluster,
    private readonly opts: LeaderElectorOptions,
  ) {
    this.groupId = opts.groupId ?? 'schema-registry'
  }

  start(): void {
    this.running = true
    this.loop = this.run()
  }

  private sleep(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve()
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms)
      this.wake = () => {
        clearTimeout(t)
        resolve()
      }
    })
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        if (this.rejoin) {
          const assignment = await this.join()
          // Stopped while the join was pending: not elected, nothing to announce.
          if (!this.running) break
          if (assignment === null) continue
          this.rejoin = false
          const isSelf = assignment.leader !== null && assignment.leader === this.memberId
          this.leader = assignment.leaderIdentity
          this.isLeader = isSelf
          await this.opts.onElected(assignment.leaderIdentity, isSelf)
        }
        await this.sleep(this.opts.heartbeatIntervalMs ?? 3000)
        if (this.running) await this.heartbeat()
      } catch (e) {
        this.lastError = e as Error
        this.rejoin = true
        if (e instanceof KafkaError || isRetriableError(e)) this.cluster.forgetCoordinator(this.groupId)
        if (this.running) await this.sleep(500)
      }
    }
  }

  /** One JoinGroup + SyncGroup round; null when it has to be repeated at once. */
  private async join(): Promise<Assignment | null> {
    const conn = await this.cluster.coordinator(this.groupId, 0)
    const rebalanceTimeoutMs = this.opts.rebalanceTimeoutMs ?? 300000
    const req = JoinGroup.createJoinGroupRequest({
      groupId: this.groupId,
      sessionTimeoutMs: this.opts.sessionTimeoutMs ?? 10000,
      rebalanceTimeoutMs,
      memberId: this.memberId,
      protocolType: SR_PROTOCOL_TYPE,
      protocols: [JoinGroup.createJoinGroupRequestProtocol({ name: SR_PROTOCOL_V0, metadata: encodeIdentity(this.opts.identity, this.isLeader) })],
    })
    const res = await conn.send(ApiKey.JoinGroup, (w, v) => JoinGroup.encodeJoinGroupRequest(w, req, v), JoinGroup.decodeJoinGroupResponse, { extraTimeoutMs: rebalanceTimeoutMs })
    if (res.errorCode === ErrorCode.MEMBER_ID_REQUIRED) {
      this.memberId = res.memberId
      return null
    }
    if (res.errorCode === ErrorCode.UNKNOWN_MEMBER_ID || res.errorCode === ErrorCode.ILLEGAL_GENERATION) {
      this.memberId = ''
      return null
    }
    if (res.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) return null
    if (res.errorCode !== ErrorCode.NONE) throw new KafkaError(res.errorCode as ErrorCode, `JoinGroup '${this.groupId}'`)
    this.memberId = res.memberId
    this.generationId = res.generationId
    let assignments: SyncGroup.SyncGroupRequestAssignment[] = []
    if (res.leader === res.memberId && !res.skipAssignment) {
      const members = res.members.map((m) => ({ memberId: m.memberId, identity: decodeIdentity(m.metadata) }))
      const bytes = encodeAssignment(assignLeader(members))
      assignments = members.map((m) => SyncGroup.createSyncGroupRequestAssignment({ memberId: m.memberId, assignment: bytes }))
    }
    const sync = SyncGroup.createSyncGroupRequest({
      groupId: this.groupId,
      generationId: this.generationId,
      memberId: this.memberId,
      protocolType: SR_PROTOCOL_TYPE,
      protocolName: res.protocolName,
      assignments,
    })
    const sres = await conn.send(ApiKey.SyncGroup, (w, v) => SyncGroup.encodeSyncGroupRequest(w, sync, v), SyncGroup.decodeSyncGroupResponse, { extraTimeoutMs: rebalanceTimeoutMs })
    if (sres.errorCode === ErrorCode.REBALANCE_IN_PROGRESS) return null
    if (sres.errorCode === ErrorCode.UNKNOWN_MEMBER_ID || sres.errorCode === ErrorCode.ILLEGAL_GENERATION) {
      this.memberId = ''
      return null
    }
    if (sres.errorCode !== ErrorCode.NONE) throw new KafkaError(sres.errorCode as ErrorCode, `SyncGroup '${this.groupId}'`)
    return decodeAssignment(sres.assignment)
  }

  private async heartbeat(): Promise<void> {
    const conn = await this.cluster.coordinator(this.groupId, 0)
    const req = Heartbeat.createHeartbeatRequest({ groupId: this.groupId, generationId: this.generationId, memberId: this.memberId })
    const res = await conn.send(ApiKey.Heartbeat, (w, v) => Heartbeat.encodeHeartbeatRequest(w, req, v), Heartbeat.decodeHeartbeatResponse)
    if (res.errorCode === ErrorCode.NONE) return
    if (res.errorCode === ErrorCode.UNKNOWN_MEMBER_ID) this.memberId = ''
    this.rejoin = true
  }

  /**
   * Leaves the group so that another instance is elected at once, not after the session timeout. A
   * JoinGroup the coordinator holds (the group's initial rebalance delay, or a rebalance waiting for other
   * members) is not waited for beyond STOP_WAIT_MS: the member is abandoned then, and the coordinator drops
   * it after the session timeout (at once when it is this very broker that stops), so that stopping takes
   * under a second whenever it happens. Whoever owns the cluster connections closes them afterwards, which
   * ends the pending request.
   */
  async stop(): Promise<void> {
    this.running = false
    this.wake?.()
    const loop = this.loop?.catch(() => undefined)
    let timer: NodeJS.Timeout | undefined
    const finished = await Promise.race([loop?.then(() => true) ?? true, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), STOP_WAIT_MS)))])
    clearTimeout(timer)
    if (!finished) {
      this.memberId = ''
      this.isLeader = false
      return
    }
    if (this.memberId === '') return
    try {
      const conn = await this.cluster.coordinator(this.groupId, 0)
      const v = conn.version(ApiKey.LeaveGroup)
      const req = LeaveGroup.createLeaveGroupRequest(
        v >= 3 ? { groupId: this.groupId, members: [LeaveGroup.createMemberIdentity({ memberId: this.memberId, reason: 'the schema registry is stopping' })] } : { groupId: this.groupId, memberId: this.memberId },
      )
      await conn.send(ApiKey.LeaveGroup, (w, ver) => LeaveGroup.encodeLeaveGroupRequest(w, req, ver), LeaveGroup.decodeLeaveGroupResponse)
    } catch {
      // Leaving is a courtesy; the session timeout drops the member anyway.
    } finally {
      this.memberId = ''
      this.isLeader = false
    }
  }
}
