// Client-side partition assignment for the classic consumer group protocol: the group leader runs the
// assignor chosen by the coordinator over every member's subscription. 'range' and 'roundrobin' follow
// Kafka's RangeAssignor and RoundRobinAssignor (members sorted by member id).

export interface MemberSubscription {
  memberId: string
  topics: string[]
}

/** memberId -> topic -> partitions */
export type GroupAssignment = Map<string, Map<string, number[]>>

export type AssignorName = 'range' | 'roundrobin'

export const ASSIGNOR_NAMES: readonly AssignorName[] = ['range', 'roundrobin']

function emptyAssignment(members: readonly MemberSubscription[]): GroupAssignment {
  return new Map(members.map((m) => [m.memberId, new Map<string, number[]>()]))
}

function add(a: GroupAssignment, memberId: string, topic: string, partition: number): void {
  const m = a.get(memberId)!
  let list = m.get(topic)
  if (list === undefined) m.set(topic, (list = []))
  list.push(partition)
}

/**
 * RangeAssignor: per topic, the subscribed members in order each get a contiguous range; the first
 * (partitions % members) members get one extra partition.
 */
export function rangeAssign(members: readonly MemberSubscription[], partitionCounts: ReadonlyMap<string, number>): GroupAssignment {
  const out = emptyAssignment(members)
  const topics = [...new Set(members.flatMap((m) => m.topics))].sort()
  for (const topic of topics) {
    const n = partitionCounts.get(topic) ?? 0
    const consumers = members.filter((m) => m.topics.includes(topic)).map((m) => m.memberId).sort()
    if (consumers.length === 0 || n === 0) continue
    const per = Math.floor(n / consumers.length)
    const extra = n % consumers.length
    consumers.forEach((memberId, i) => {
      const start = per * i + Math.min(i, extra)
      const length = per + (i < extra ? 1 : 0)
      for (let p = start; p < start + length; p++) add(out, memberId, topic, p)
    })
  }
  return out
}

/**
 * RoundRobinAssignor: all partitions of all subscribed topics, sorted by topic then partition, dealt
 * one by one to the members in order, skipping members not subscribed to the partition's topic.
 */
export function roundRobinAssign(members: readonly MemberSubscription[], partitionCounts: ReadonlyMap<string, number>): GroupAssignment {
  const out = emptyAssignment(members)
  const sorted = [...members].sort((a, b) => (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0))
  const topics = [...new Set(members.flatMap((m) => m.topics))].sort()
  let next = 0
  for (const topic of topics) {
    const n = partitionCounts.get(topic) ?? 0
    for (let p = 0; p < n; p++) {
      for (let tries = 0; tries < sorted.length; tries++) {
        const m = sorted[next % sorted.length]!
        next++
        if (m.topics.includes(topic)) {
          add(out, m.memberId, topic, p)
          break
        }
      }
    }
  }
  return out
}

export function assign(name: string, members: readonly MemberSubscription[], partitionCounts: ReadonlyMap<string, number>): GroupAssignment {
  if (name === 'range') return rangeAssign(members, partitionCounts)
  if (name === 'roundrobin') return roundRobinAssign(members, partitionCounts)
  throw new Error(`unknown partition assignor '${name}'`)
}
