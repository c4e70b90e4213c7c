// The Streams assignor (Kafka's StreamsPartitionAssignor with the HighAvailabilityTaskAssignor of
// KIP-441), run by the group leader. Members are the stream threads of all instances; an instance (a
// "client") is known by its process id. Each member's subscription userData says which tasks its
// instance has state for and how far that state is (the sum of its changelog offsets, or RUNNING for a
// task it runs now); the assignor compares those with the changelogs' end offsets to get each client's
// lag per stateful task, and then:
//   1. gives each stateful task to a client that is caught up (lag <= acceptable.recovery.lag),
//      preferring the one that ran it, within a balanced share of tasks per client (by thread count);
//      when no client is caught up, to the one with the least lag;
//   2. where balance wants a task on a client that is not caught up, leaves the task where it is and
//      puts a warm-up replica (a standby) on that client instead, at most max.warmup.replicas in all,
//      and asks for a probing rebalance after probing.rebalance.interval.ms to look again;
//   3. places num.standby.replicas standbys of each stateful task on other clients, least lag first;
//   4. spreads stateless tasks for balance, keeping each where it was when that is balanced;
//   5. within a client, spreads its tasks over its threads, keeping each on its thread when possible.
// Simplified from Kafka: lags are compared as offset sums per task (as Kafka does), rack awareness and
// the rebalance protocol's cooperative mode are left out (rebalances are eager), and subscription and
// assignment userData are JSON (so instances interoperate with each other, not with Java instances).
import type { AssignorMember, MemberAssignment } from '../../client/group.js'
import { TaskId } from '../processor/api.js'

/** Offset sum meaning "this client runs the task now" (Kafka's Task.LATEST_OFFSET). */
export const RUNNING_OFFSET_SUM = -2

export interface SubscriptionInfo {
  version: 1
  processId: string
  /** application.server of the instance ('' when not set). */
  endpoint: string
  /** Task id -> changelog offset sum of the local state, or RUNNING_OFFSET_SUM. */
  taskOffsetSums: Record<string, number>
  /** Tasks this member (thread) ran as active / standby before the rebalance. */
  prevActive: string[]
  prevStandby: string[]
}

export interface AssignmentInfo {
  version: 1
  activeTasks: string[]
  standbyTasks: string[]
  /** endpoint -> 'topic:partition' of the active tasks of each instance (interactive queries). */
  partitionsByHost: Record<string, string[]>
  standbyPartitionsByHost: Record<string, string[]>
  /** When to rebalance again to check the warm-up replicas (epoch ms), or null. */
  probingRebalanceAt: number | null
}

export function encodeInfo(info: SubscriptionInfo | AssignmentInfo): Buffer {
  return Buffer.from(JSON.stringify(info), 'utf8')
}

export function decodeSubscriptionInfo(buf: Buffer | null): SubscriptionInfo | null {
  if (buf === null || buf.length === 0) return null
  try {
    const v = JSON.parse(buf.toString('utf8')) as SubscriptionInfo
    return v.version === 1 && typeof v.processId === 'string' ? v : null
  } catch {
    return null
  }
}

export function decodeAssignmentInfo(buf: Buffer | null): AssignmentInfo | null {
  if (buf === null || buf.length === 0) return null
  try {
    const v = JSON.parse(buf.toString('utf8')) as AssignmentInfo
    return v.version === 1 && Array.isArray(v.activeTasks) ? v : null
  } catch {
    return null
  }
}

export interface TaskSpec {
  id: string
  /** Input partitions of the task (real topic names). */
  partitions: { topic: string; partition: number }[]
  stateful: boolean
  /** Sum of the end offsets of the task's changelog partitions (stateful tasks). */
  endOffsetSum: number
}

export interface AssignorSettings {
  numStandbyReplicas: number
  acceptableRecoveryLag: number
  maxWarmupReplicas: number
  probingRebalanceIntervalMs: number
  now: number
}

interface Client {
  processId: string
  endpoint: string
  members: { memberId: string; info: SubscriptionInfo }[]
  offsetSums: Map<string, number>
  active: Set<string>
  standby: Set<string>
}

function lagOf(c: Client, t: TaskSpec): number {
  const sum = c.offsetSums.get(t.id)
  if (sum === RUNNING_OFFSET_SUM) return 0
  if (sum === undefined || sum < 0) return Math.max(t.endOffsetSum, 0) + 1
  return Math.max(0, t.endOffsetSum - sum)
}

/** The assignment of every member. Members without valid userData get nothing. */
export function assignTasks(members: readonly AssignorMember[], tasks: readonly TaskSpec[], s: AssignorSettings): Map<string, MemberAssignment> {
  const clients = new Map<string, Client>()
  for (const m of members) {
    const info = decodeSubscriptionInfo(m.userData)
    if (info === null) continue
    let c = clients.get(info.processId)
    if (c === undefined) clients.set(info.processId, (c = { processId: info.processId, endpoint: info.endpoint, members: [], offsetSums: new Map(), active: new Set(), standby: new Set() }))
    c.members.push({ memberId: m.memberId, info })
    for (const [task, sum] of Object.entries(info.taskOffsetSums)) {
      const prev = c.offsetSums.get(task)
      if (prev === undefined || sum === RUNNING_OFFSET_SUM || (prev !== RUNNING_OFFSET_SUM && sum > prev)) c.offsetSums.set(task, sum)
    }
  }
  const list = [...clients.values()].sort((a, b) => (a.processId < b.processId ? -1 : 1))
  const out = new Map<string, MemberAssignment>()
  for (const m of members) out.set(m.memberId, { partitions: new Map(), userData: null })
  if (list.length === 0) return out
  const threads = list.reduce((n, c) => n + c.members.length, 0)
  const share = (c: Client, total: number): number => Math.ceil((total * c.members.length) / threads)
  const prevOwner = (t: string): Client | undefined => list.find((c) => c.members.some((m) => m.info.prevActive.includes(t)))
  const stateful = tasks.filter((t) => t.stateful)
  const stateless = tasks.filter((t) => !t.stateful)
  let warmups = 0
  let probing = false
  // 1 and 2: stateful tasks.
  for (const t of stateful) {
    const caughtUp = list.filter((c) => lagOf(c, t) <= s.acceptableRecoveryLag)
    const load = (c: Client): number => c.active.size
    const under = (c: Client): boolean => load(c) < share(c, tasks.length)
    const prev = prevOwner(t.id)
    let owner: Client | undefined
    if (prev !== undefined && caughtUp.includes(prev) && under(prev)) owner = prev
    owner ??= caughtUp.filter(under).sort((a, b) => load(a) - load(b) || lagOf(a, t) - lagOf(b, t))[0]
    // No caught-up client has room: the most caught-up one takes it (its state beats a restore).
    owner ??= (caughtUp.length > 0 ? caughtUp : list).slice().sort((a, b) => lagOf(a, t) - lagOf(b, t) || load(a) - load(b))[0]!
    owner.active.add(t.id)
  }
  // Balance: a client above its share hands stateful tasks to clients below it, if they are caught up; else
  // the receiving client gets a warm-up replica and a probing rebalance will move the task once it caught up.
  const warm = new Map<Client, Set<string>>()
  for (const from of list) {
    for (const t of stateful) {
      if (!from.active.has(t.id) || from.active.size <= share(from, tasks.length)) continue
      const to = list.filter((c) => c !== from && c.active.size < share(c, tasks.length) - 0 && c.active.size + 1 < from.active.size).sort((a, b) => a.active.size - b.active.size)[0]
      if (to === undefined) continue
      if (lagOf(to, t) <= s.acceptableRecoveryLag) {
        from.active.delete(t.id)
        to.active.add(t.id)
      } else if (warmups < s.maxWarmupReplicas) {
        let set = warm.get(to)
        if (set === undefined) warm.set(to, (set = new Set()))
        if (!set.has(t.id)) {
          set.add(t.id)
          warmups++
          probing = true
        }
      }
    }
  }
  // 3: standbys, on clients other than the active one, least lag first.
  for (const t of stateful) {
    const candidates = list.filter((c) => !c.active.has(t.id)).sort((a, b) => lagOf(a, t) - lagOf(b, t) || a.standby.size - b.standby.size)
    for (const c of candidates.slice(0, s.numStandbyReplicas)) c.standby.add(t.id)
  }
  for (const [c, set] of warm) for (const t of set) if (!c.active.has(t)) c.standby.add(t)
  // 4: stateless tasks, sticky when balanced.
  for (const t of stateless) {
    const prev = prevOwner(t.id)
    const under = (c: Client): boolean => c.active.size < share(c, tasks.length)
    const owner = prev !== undefined && under(prev) ? prev : list.slice().sort((a, b) => a.active.size / a.members.length - b.active.size / b.members.length)[0]!
    owner.active.add(t.id)
  }
  // Host info for interactive queries.
  const byId = new Map(tasks.map((t) => [t.id, t]))
  const partitionsByHost: Record<string, string[]> = {}
  const standbyPartitionsByHost: Record<string, string[]> = {}
  for (const c of list) {
    if (c.endpoint === '') continue
    partitionsByHost[c.endpoint] = [...c.active].flatMap((id) => byId.get(id)!.partitions.map((p) => `${p.topic}:${p.partition}`))
    standbyPartitionsByHost[c.endpoint] = [...c.standby].flatMap((id) => byId.get(id)!.partitions.map((p) => `${p.topic}:${p.partition}`))
  }
  const probingRebalanceAt = probing ? s.now + s.probingRebalanceIntervalMs : null
  // 5: within each client, tasks to threads, sticky.
  for (const c of list) {
    const members = c.members.slice().sort((a, b) => (a.memberId < b.memberId ? -1 : 1))
    const per = new Map(members.map((m) => [m.memberId, { active: [] as string[], standby: [] as string[] }]))
    const place = (ids: string[], kind: 'active' | 'standby'): void => {
      const cap = Math.ceil(ids.length / members.length)
      const rest: string[] = []
      for (const id of ids) {
        const prev = members.find((m) => (kind === 'active' ? m.info.prevActive : m.info.prevStandby).includes(id))
        if (prev !== undefined && per.get(prev.memberId)![kind].length < cap) per.get(prev.memberId)![kind].push(id)
        else rest.push(id)
      }
      for (const id of rest) {
        const m = members.slice().sort((a, b) => per.get(a.memberId)![kind].length - per.get(b.memberId)![kind].length)[0]!
        per.get(m.memberId)![kind].push(id)
      }
    }
    place(sortTasks([...c.active]), 'active')
    place(sortTasks([...c.standby]), 'standby')
    for (const m of members) {
      const a = per.get(m.memberId)!
      const partitions = new Map<string, number[]>()
      for (const id of a.active) {
        for (const p of byId.get(id)!.partitions) {
          let l = partitions.get(p.topic)
          if (l === undefined) partitions.set(p.topic, (l = []))
          l.push(p.partition)
        }
      }
      const info: AssignmentInfo = { version: 1, activeTasks: a.active, standbyTasks: a.standby, partitionsByHost, standbyPartitionsByHost, probingRebalanceAt }
      out.set(m.memberId, { partitions, userData: encodeInfo(info) })
    }
  }
  return out
}

function sortTasks(ids: string[]): string[] {
  return ids.sort((a, b) => {
    const x = TaskId.parse(a)
    const y = TaskId.parse(b)
    return x.subtopology - y.subtopology || x.partition - y.partition
  })
}
