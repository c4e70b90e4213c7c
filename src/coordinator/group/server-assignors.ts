// The server-side assignors of KIP-848 consumer groups (group.consumer.assignors): given each member's
// subscribed topics (by id) and current target, and each topic's partition count, a new target
// assignment. Pure functions; ConsumerGroupManager turns the result into records.
//
// uniform (Kafka's default): every partition of the subscribed topics to exactly one subscribed member,
//   member counts as even as the subscriptions allow (a member can only get topics it subscribes to),
//   and sticky: a member keeps what it had unless balance needs it elsewhere. When every member
//   subscribes to the same topics (the usual case) each gets floor(P/n) or one more: members keep their
//   current partitions up to that quota (the extra slots going to those that held the most), and the
//   rest fill the members below quota; O(P log P). Otherwise greedy: keep the valid current targets,
//   hand each unassigned partition to the eligible member with the fewest, then move partitions from
//   fuller members to eligible ones with at least two fewer until none can move.
// range: per topic, contiguous partition ranges over the members subscribed to it, ordered by
//   instance id (static members) or member id; the first (partitions % members) get one more. Members
//   with the same subscriptions and topics with the same partition count get the same partition numbers
//   of every topic (co-partitioning).
import { RANGE_ASSIGNOR, UNIFORM_ASSIGNOR } from '../../domain/consumer-group-assignors.js'
import type { Assignment } from './consumer-group-records.js'

export { RANGE_ASSIGNOR, UNIFORM_ASSIGNOR, assignorName } from '../../domain/consumer-group-assignors.js'

export interface AssignorMember {
  memberId: string
  instanceId: string | null
  /** Topic ids this member subscribes to that exist. */
  subscribedTopicIds: ReadonlySet<string>
  /** The member's target before this computation. */
  currentTarget: Assignment
}

export interface AssignmentSpec {
  members: readonly AssignorMember[]
  /** topic id -> number of partitions */
  topics: ReadonlyMap<string, number>
}

export interface ServerAssignor {
  readonly name: string
  assign(spec: AssignmentSpec): Map<string, Map<string, Set<number>>>
}


const byId = (a: { memberId: string }, b: { memberId: string }): number => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0)

function emptyResult(members: readonly AssignorMember[]): Map<string, Map<string, Set<number>>> {
  return new Map(members.map((m) => [m.memberId, new Map<string, Set<number>>()]))
}

function add(target: Map<string, Set<number>>, topicId: string, partition: number): void {
  let set = target.get(topicId)
  if (set === undefined) target.set(topicId, (set = new Set()))
  set.add(partition)
}

function count(target: Map<string, Set<number>>): number {
  let n = 0
  for (const s of target.values()) n += s.size
  return n
}

/** Every partition of the topics, topic id order then partition order, as [topicId, partition]. */
function allPartitions(topicIds: Iterable<string>, topics: ReadonlyMap<string, number>): [string, number][] {
  const out: [string, number][] = []
  for (const t of [...topicIds].sort()) for (let p = 0; p < (topics.get(t) ?? 0); p++) out.push([t, p])
  return out
}

function sameTopics(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false
  for (const t of a) if (!b.has(t)) return false
  return true
}

/** Every member subscribes to the same topics: quotas of floor(P/n) or one more, sticky. */
function assignHomogeneous(members: readonly AssignorMember[], topics: ReadonlyMap<string, number>): Map<string, Map<string, Set<number>>> {
  const out = emptyResult(members)
  const subscribed = [...members[0]!.subscribedTopicIds].filter((t) => topics.has(t))
  const partitions = allPartitions(subscribed, topics)
  const minQuota = Math.floor(partitions.length / members.length)
  let extra = partitions.length % members.length
  const key = (t: string, p: number): string => `${t}\u0000${p}`
  const taken = new Set<string>()
  // Each member's valid current partitions, in partition order.
  const kept = members.map((m) => {
    const mine: [string, number][] = []
    for (const [t, p] of partitions) if (m.currentTarget.get(t)?.has(p) === true && !taken.has(key(t, p))) mine.push([t, p])
    for (const [t, p] of mine) taken.add(key(t, p))
    return { m, mine }
  })
  taken.clear()
  // The extra slots go to the members holding the most (they lose the least), then by member id.
  const quota = new Map<string, number>()
  for (const { m, mine } of [...kept].sort((a, b) => b.mine.length - a.mine.length || byId(a.m, b.m))) {
    const q = minQuota + (extra > 0 && mine.length > minQuota ? 1 : 0)
    if (q > minQuota) extra--
    quota.set(m.memberId, q)
  }
  // Members that held no more than the minimum take the extra slots left, in member id order.
  for (const { m } of kept) {
    if (extra === 0) break
    if (quota.get(m.memberId) === minQuota) {
      quota.set(m.memberId, minQuota + 1)
      extra--
    }
  }
  for (const { m, mine } of kept) {
    for (const [t, p] of mine.slice(0, quota.get(m.memberId)!)) {
      add(out.get(m.memberId)!, t, p)
      taken.add(key(t, p))
    }
  }
  let i = 0
  for (const { m } of kept) {
    const target = out.get(m.memberId)!
    while (count(target) < quota.get(m.memberId)!) {
      while (taken.has(key(partitions[i]![0], partitions[i]![1]))) i++
      const [t, p] = partitions[i++]!
      add(target, t, p)
    }
  }
  return out
}

export const uniformAssignor: ServerAssignor = {
  name: UNIFORM_ASSIGNOR,
  assign(spec) {
    const members = [...spec.members].sort(byId)
    if (members.length === 0) return new Map()
    if (members.every((m) => sameTopics(m.subscribedTopicIds, members[0]!.subscribedTopicIds))) return assignHomogeneous(members, spec.topics)
    const out = emptyResult(members)
    const owner = new Map<string, string>() // "topic\0partition" -> member id
    const key = (t: string, p: number): string => `${t}\u0000${p}`
    // 1. Keep every current target that is still valid (subscribed, existing, not taken twice).
    for (const m of members) {
      for (const [topicId, partitions] of m.currentTarget) {
        const n = spec.topics.get(topicId)
        if (n === undefined || !m.subscribedTopicIds.has(topicId)) continue
        for (const p of [...partitions].sort((a, b) => a - b)) {
          if (p >= n || owner.has(key(topicId, p))) continue
          owner.set(key(topicId, p), m.memberId)
          add(out.get(m.memberId)!, topicId, p)
        }
      }
    }
    const counts = new Map(members.map((m) => [m.memberId, count(out.get(m.memberId)!)]))
    const eligible = (topicId: string): AssignorMember[] => members.filter((m) => m.subscribedTopicIds.has(topicId))
    // 2. Every unowned partition to the eligible member with the fewest partitions.
    const topicIds = [...spec.topics.keys()].sort()
    for (const topicId of topicIds) {
      const candidates = eligible(topicId)
      if (candidates.length === 0) continue
      for (let p = 0; p < spec.topics.get(topicId)!; p++) {
        if (owner.has(key(topicId, p))) continue
        let best = candidates[0]!
        for (const c of candidates) if (counts.get(c.memberId)! < counts.get(best.memberId)!) best = c
        owner.set(key(topicId, p), best.memberId)
        add(out.get(best.memberId)!, topicId, p)
        counts.set(best.memberId, counts.get(best.memberId)! + 1)
      }
    }
    // 3. Balance: move a partition from a member to an eligible one with at least two fewer.
    const byCount = (): AssignorMember[] => [...members].sort((a, b) => counts.get(b.memberId)! - counts.get(a.memberId)! || byId(a, b))
    const total = [...counts.values()].reduce((a, b) => a + b, 0)
    for (let moves = 0; moves <= total; moves++) {
      let moved = false
      for (const from of byCount()) {
        const fromTarget = out.get(from.memberId)!
        // Its partitions, highest first, so the low partitions stay put.
        const held = [...fromTarget].flatMap(([t, ps]) => [...ps].map((p) => [t, p] as const)).sort((a, b) => (a[0] === b[0] ? b[1] - a[1] : a[0] < b[0] ? 1 : -1))
        for (const [topicId, p] of held) {
          let to: AssignorMember | undefined
          for (const c of eligible(topicId)) {
            if (counts.get(c.memberId)! + 1 < counts.get(from.memberId)! && (to === undefined || counts.get(c.memberId)! < counts.get(to.memberId)!)) to = c
          }
          if (to === undefined) continue
          fromTarget.get(topicId)!.delete(p)
          if (fromTarget.get(topicId)!.size === 0) fromTarget.delete(topicId)
          add(out.get(to.memberId)!, topicId, p)
          counts.set(from.memberId, counts.get(from.memberId)! - 1)
          counts.set(to.memberId, counts.get(to.memberId)! + 1)
          moved = true
          break
        }
        if (moved) break
      }
      if (!moved) break
    }
    return out
  },
}

export const rangeAssignor: ServerAssignor = {
  name: RANGE_ASSIGNOR,
  assign(spec) {
    const out = emptyResult(spec.members)
    const order = (m: AssignorMember): string => m.instanceId ?? `\uffff${m.memberId}`
    for (const [topicId, numPartitions] of [...spec.topics].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      const subscribers = spec.members.filter((m) => m.subscribedTopicIds.has(topicId)).sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0))
      if (subscribers.length === 0) continue
      const quota = Math.floor(numPartitions / subscribers.length)
      const extra = numPartitions % subscribers.length
      let next = 0
      subscribers.forEach((m, i) => {
        const n = quota + (i < extra ? 1 : 0)
        for (let k = 0; k < n; k++) add(out.get(m.memberId)!, topicId, next++)
      })
    }
    return out
  },
}

export const BUILT_IN_ASSIGNORS: readonly ServerAssignor[] = [uniformAssignor, rangeAssignor]
