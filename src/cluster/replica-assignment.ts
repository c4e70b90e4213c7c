// Where a new topic's (or new partitions') replicas go: Kafka's AdminUtils.assignReplicasToBrokers.
//
// Without racks: brokers sorted by id; partition i's first replica is broker (i + startIndex) mod n; the
// other replicas follow it at a shift that grows by one every n partitions, so that a broker's followers
// spread over the others:
//   replica j+1 of partition i = broker (first + 1 + (shift + j) mod (n - 1)) mod n
// With racks (every broker has one): the same walk over a broker list that alternates racks (rack
// a's first broker, rack b's first, ..., rack a's second, ...), skipping a broker while a rack without a
// replica or a broker without one remains, so replicas spread over racks first.
// startIndex and the initial shift are random for a new topic (so that small topics do not all start on
// the lowest broker); partitions added later continue from the broker of partition 0's first replica.
import { ErrorCode, KafkaError } from '../domain/errors.js'

export interface BrokerPlacement {
  id: number
  rack: string | null
}

export interface AssignmentOptions {
  /** Fixes the start index and the initial shift (Kafka's fixedStartIndex); random when undefined. */
  fixedStartIndex?: number
  /** The first partition id to assign (adding partitions to a topic); default 0. */
  startPartitionId?: number
  random?: () => number
}

/** Replica lists for `partitions` partitions, index = partition id - startPartitionId. Throws KafkaError as Kafka does. */
export function assignReplicasToBrokers(brokers: readonly BrokerPlacement[], partitions: number, replicationFactor: number, options: AssignmentOptions = {}): number[][] {
  if (partitions <= 0) throw new KafkaError(ErrorCode.INVALID_PARTITIONS, 'Number of partitions must be larger than 0.')
  if (replicationFactor <= 0) throw new KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, 'Replication factor must be larger than 0.')
  if (replicationFactor > brokers.length) {
    throw new KafkaError(ErrorCode.INVALID_REPLICATION_FACTOR, `Replication factor: ${replicationFactor} larger than available brokers: ${brokers.length}.`)
  }
  const sorted = [...brokers].sort((a, b) => a.id - b.id)
  if (sorted.every((b) => b.rack === null)) return rackUnaware(sorted.map((b) => b.id), partitions, replicationFactor, options)
  if (sorted.some((b) => b.rack === null)) {
    throw new KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, 'Not all brokers have rack information for replica rack aware assignment.')
  }
  return rackAware(sorted as { id: number; rack: string }[], partitions, replicationFactor, options)
}

function pick(n: number, options: AssignmentOptions): number {
  if (options.fixedStartIndex !== undefined && options.fixedStartIndex >= 0) return options.fixedStartIndex
  return Math.floor((options.random ?? Math.random)() * n)
}

/** Kafka's replicaIndex: the broker index of a follower, `shift` apart from the first replica. */
function replicaIndex(firstReplicaIndex: number, secondReplicaShift: number, index: number, brokerCount: number): number {
  const shift = 1 + ((secondReplicaShift + index) % (brokerCount - 1))
  return (firstReplicaIndex + shift) % brokerCount
}

function rackUnaware(brokerIds: number[], partitions: number, replicationFactor: number, options: AssignmentOptions): number[][] {
  const n = brokerIds.length
  const startIndex = pick(n, options)
  let nextReplicaShift = pick(n, options)
  let partitionId = Math.max(0, options.startPartitionId ?? 0)
  const out: number[][] = []
  for (let i = 0; i < partitions; i++, partitionId++) {
    if (partitionId > 0 && partitionId % n === 0) nextReplicaShift++
    const first = (partitionId + startIndex) % n
    const replicas = [brokerIds[first]!]
    for (let j = 0; j < replicationFactor - 1; j++) replicas.push(brokerIds[replicaIndex(first, nextReplicaShift, j, n)]!)
    out.push(replicas)
  }
  return out
}

/** Brokers ordered by alternating racks (racks sorted, brokers of a rack sorted by id). */
export function rackAlternatedBrokerList(brokers: readonly { id: number; rack: string }[]): number[] {
  const byRack = new Map<string, number[]>()
  for (const b of [...brokers].sort((x, y) => x.id - y.id)) {
    let list = byRack.get(b.rack)
    if (list === undefined) byRack.set(b.rack, (list = []))
    list.push(b.id)
  }
  const racks = [...byRack.keys()].sort()
  const cursors = new Map(racks.map((r) => [r, 0]))
  const out: number[] = []
  for (let r = 0; out.length < brokers.length; r = (r + 1) % racks.length) {
    const rack = racks[r]!
    const list = byRack.get(rack)!
    const at = cursors.get(rack)!
    if (at < list.length) {
      out.push(list[at]!)
      cursors.set(rack, at + 1)
    }
  }
  return out
}

function rackAware(brokers: { id: number; rack: string }[], partitions: number, replicationFactor: number, options: AssignmentOptions): number[][] {
  const rackOf = new Map(brokers.map((b) => [b.id, b.rack]))
  const rackCount = new Set(rackOf.values()).size
  const arranged = rackAlternatedBrokerList(brokers)
  const n = arranged.length
  const startIndex = pick(n, options)
  let nextReplicaShift = pick(n, options)
  let partitionId = Math.max(0, options.startPartitionId ?? 0)
  const out: number[][] = []
  for (let i = 0; i < partitions; i++, partitionId++) {
    if (partitionId > 0 && partitionId % n === 0) nextReplicaShift++
    const first = (partitionId + startIndex) % n
    const leader = arranged[first]!
    const replicas = [leader]
    const racksWithReplicas = new Set([rackOf.get(leader)!])
    const brokersWithReplicas = new Set([leader])
    let k = 0
    for (let j = 0; j < replicationFactor - 1; j++) {
      for (;;) {
        const broker = arranged[replicaIndex(first, nextReplicaShift * rackCount, k, n)]!
        const rack = rackOf.get(broker)!
        k++
        // Skip a broker whose rack has a replica while some rack has none, or that has a replica while
        // some broker has none.
        if ((!racksWithReplicas.has(rack) || racksWithReplicas.size === rackCount) && (!brokersWithReplicas.has(broker) || brokersWithReplicas.size === n)) {
          replicas.push(broker)
          racksWithReplicas.add(rack)
          brokersWithReplicas.add(broker)
          break
        }
      }
    }
    out.push(replicas)
  }
  return out
}

/** Where partitions added to a topic continue: the index (in sorted live brokers) of partition 0's first replica. */
export function startIndexForNewPartitions(brokers: readonly BrokerPlacement[], partition0Replicas: readonly number[]): number {
  const sorted = [...brokers].sort((a, b) => a.id - b.id)
  const head = partition0Replicas[0] ?? 0
  return Math.max(0, sorted.findIndex((b) => b.id >= head))
}
