// Choosing a partition for a record, as Kafka's producer does: an explicit partition wins; a keyed record
// goes to toPositive(murmur2(key)) % partitions; keyless records stick to one partition until its batch is
// sent, then move on (KIP-480's sticky partitioner, which fills batches instead of spraying tiny ones).
// 'round-robin' spreads keyless and keyed records alike, one partition after the other.
import { partitionForKey } from './murmur2.js'

export type PartitionerName = 'default' | 'round-robin'

export class Partitioner {
  private readonly sticky = new Map<string, number>()
  private readonly counters = new Map<string, number>()
  // The sticky partition of the last topic asked about (most records go to the topic of the previous one).
  private lastTopic: string | null = null
  private lastSticky = 0

  constructor(readonly kind: PartitionerName = 'default') {}

  partition(topic: string, key: Buffer | null, numPartitions: number): number {
    if (this.kind === 'round-robin') {
      const n = this.counters.get(topic) ?? Math.floor(Math.random() * numPartitions)
      this.counters.set(topic, n + 1)
      return n % numPartitions
    }
    if (key !== null) return partitionForKey(key, numPartitions)
    let p = topic === this.lastTopic ? this.lastSticky : this.sticky.get(topic)
    if (p === undefined || p >= numPartitions) {
      p = Math.floor(Math.random() * numPartitions)
      this.sticky.set(topic, p)
    }
    this.lastTopic = topic
    this.lastSticky = p
    return p
  }

  /** A batch of topic/partition was closed: keyless records move to the next partition. */
  batchClosed(topic: string, partition: number, numPartitions: number): void {
    if (this.kind !== 'default') return
    if (this.sticky.get(topic) === partition && numPartitions > 1) {
      const next = (partition + 1) % numPartitions
      this.sticky.set(topic, next)
      if (topic === this.lastTopic) this.lastSticky = next
    }
  }
}
