// The share-group server-side assignor: Kafka's SimpleAssignor ("simple", KIP-932) as Kafka 4.x has it.
// Unlike a consumer group's, a share group's partitions may be held by several members at once (the
// records of a partition are handed out record by record through acquisition locks), so:
//
//   - every subscribed partition is assigned to at least one member;
//   - with more members than partitions, a partition is shared by up to ceil(members / partitions)
//     members (the desired sharing); each member gets ceil or floor of (sharing x partitions / members);
//   - balance comes first, then stickiness: a member keeps what it had as far as balance allows.
//
// When every member subscribes to the same topics, their partitions are balanced together (Kafka's
// homogeneous builder); otherwise each topic is balanced among the members subscribed to it and the
// results combined (the heterogeneous builder). Members are taken in member id order, so the same group
// always gets the same assignment. The work is O(members x partitions) at most, which group.share.max.size
// (at most 1000 members) keeps small.
import { EMPTY_ASSIGNMENT, type Assignment } from './consumer-group-records.js'

export const SIMPLE_ASSIGNOR = 'simple'

export interface ShareAssignorMember {
  memberId: string
  subscribedTopicIds: ReadonlySet<string>
  /** Its target assignment before this one (what stickiness keeps). */
  currentTarget: Assignment
}

export interface ShareAssignorInput {
  members: readonly ShareAssignorMember[]
  /** topic id -> number of partitions, for the subscribed topics that exist. */
  topics: ReadonlyMap<string, number>
}

/** A partition as one string key (topic id and partition), for sets and maps. */
const tp = (topicId: string, partition: number): string => `${topicId}:${partition}`

/**
 * Balances one pool of partitions among members (indices into `members`), keeping current holders where
 * balance allows. Adds what it decides to `out` (member index -> set of tp keys).
 */
function assignPool(members: readonly ShareAssignorMember[], memberIdx: readonly number[], partitions: readonly { topicId: string; partition: number }[], out: Map<number, Set<string>>): void {
  const m = memberIdx.length
  const p = partitions.length
  if (m === 0 || p === 0) return
  const sharing = Math.ceil(m / p)
  const total = sharing * p
  // Member i of the pool wants ceil(total*(i+1)/m) - ceil(total*i/m): counts differ by at most one.
  const desired = memberIdx.map((_, i) => Math.ceil((total * (i + 1)) / m) - Math.ceil((total * i) / m))
  const count = new Array<number>(m).fill(0)
  const holders = new Map<string, Set<number>>(partitions.map((x) => [tp(x.topicId, x.partition), new Set<number>()]))
  const give = (i: number, key: string): void => {
    holders.get(key)!.add(i)
    count[i]!++
    let set = out.get(memberIdx[i]!)
    if (set === undefined) out.set(memberIdx[i]!, (set = new Set()))
    set.add(key)
  }
  // 1. Stickiness: each member keeps its current partitions of this pool while neither it nor the
  //    partition is over its share.
  for (let i = 0; i < m; i++) {
    const current = members[memberIdx[i]!]!.currentTarget
    for (const x of partitions) {
      if (count[i]! >= desired[i]!) break
      const key = tp(x.topicId, x.partition)
      if (current.get(x.topicId)?.has(x.partition) === true && holders.get(key)!.size < sharing) give(i, key)
    }
  }
  // The unfilled member that needs the most and does not hold the partition yet; -1 when none.
  const neediest = (key: string): number => {
    let best = -1
    for (let i = 0; i < m; i++) {
      if (count[i]! >= desired[i]! || holders.get(key)!.has(i)) continue
      if (best === -1 || desired[i]! - count[i]! > desired[best]! - count[best]!) best = i
    }
    return best
  }
  // 2. Every partition gets one holder (there is always an unfilled member while one has none: the
  //    holders so far are fewer than the desired total).
  for (const x of partitions) {
    const key = tp(x.topicId, x.partition)
    if (holders.get(key)!.size > 0) continue
    const i = neediest(key)
    if (i >= 0) give(i, key)
  }
  // 3. Then partitions are shared up to the desired sharing, while members still want more.
  for (let round = 1; round < sharing; round++) {
    for (const x of partitions) {
      const key = tp(x.topicId, x.partition)
      if (holders.get(key)!.size > round) continue
      const i = neediest(key)
      if (i >= 0) give(i, key)
    }
  }
}

/** The target assignment of every member. */
export function simpleAssign(input: ShareAssignorInput): Map<string, Assignment> {
  const members = [...input.members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
  const chosen = new Map<number, Set<string>>()
  const partitionsOf = (topicIds: Iterable<string>): { topicId: string; partition: number }[] => {
    const out: { topicId: string; partition: number }[] = []
    for (const topicId of [...topicIds].sort()) {
      const n = input.topics.get(topicId)
      if (n === undefined) continue
      for (let partition = 0; partition < n; partition++) out.push({ topicId, partition })
    }
    return out
  }
  const first = members[0]
  const homogeneous = first !== undefined && members.every((mm) => mm.subscribedTopicIds.size === first.subscribedTopicIds.size && [...mm.subscribedTopicIds].every((t) => first.subscribedTopicIds.has(t)))
  if (homogeneous) {
    assignPool(members, members.map((_, i) => i), partitionsOf(first.subscribedTopicIds), chosen)
  } else {
    const topics = new Set<string>()
    for (const mm of members) for (const t of mm.subscribedTopicIds) topics.add(t)
    for (const topicId of [...topics].sort()) {
      const subscribed = members.map((mm, i) => (mm.subscribedTopicIds.has(topicId) ? i : -1)).filter((i) => i >= 0)
      assignPool(members, subscribed, partitionsOf([topicId]), chosen)
    }
  }
  const result = new Map<string, Assignment>()
  members.forEach((mm, i) => {
    const keys = chosen.get(i)
    if (keys === undefined) {
      result.set(mm.memberId, EMPTY_ASSIGNMENT)
      return
    }
    const a = new Map<string, Set<number>>()
    for (const key of keys) {
      const at = key.lastIndexOf(':')
      const topicId = key.slice(0, at)
      let set = a.get(topicId)
      if (set === undefined) a.set(topicId, (set = new Set()))
      set.add(Number(key.slice(at + 1)))
    }
    result.set(mm.memberId, a)
  })
  return result
}
