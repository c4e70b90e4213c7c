// Replica assignment as Kafka's AdminUtils computes it: known answers for fixed start indexes, the
// spread properties for random ones, rack awareness, added partitions, and the errors.
import { describe, expect, it } from 'vitest'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { assignReplicasToBrokers, rackAlternatedBrokerList, startIndexForNewPartitions } from '../../src/cluster/replica-assignment.js'

const brokers = (ids: number[], racks?: (string | null)[]) => ids.map((id, i) => ({ id, rack: racks?.[i] ?? null }))

describe('assignReplicasToBrokers', () => {
  it('matches Kafka for 5 brokers, 10 partitions, RF 3 at start index 0 (AdminUtils docs example)', () => {
    // From the AdminUtils scaladoc: broker-0..4, p0..p9, first replica (i + 0) mod 5, shift grows every 5.
    const a = assignReplicasToBrokers(brokers([0, 1, 2, 3, 4]), 10, 3, { fixedStartIndex: 0 })
    expect(a).toEqual([
      [0, 1, 2],
      [1, 2, 3],
      [2, 3, 4],
      [3, 4, 0],
      [4, 0, 1],
      [0, 2, 3],
      [1, 3, 4],
      [2, 4, 0],
      [3, 0, 1],
      [4, 1, 2],
    ])
  })

  it('sorts brokers, spreads leaders and followers evenly for any start', () => {
    for (let start = 0; start < 3; start++) {
      const a = assignReplicasToBrokers(brokers([3, 1, 2]), 6, 3, { fixedStartIndex: start })
      const leaders = a.map((r) => r[0])
      for (const id of [1, 2, 3]) expect(leaders.filter((l) => l === id)).toHaveLength(2)
      for (const r of a) expect(new Set(r).size).toBe(3)
      expect(a[0]![0]).toBe([1, 2, 3][start])
    }
  })

  it('refuses a replication factor above the broker count, and non-positive counts', () => {
    const rf = (() => {
      try {
        assignReplicasToBrokers(brokers([0, 1]), 1, 3)
      } catch (err) {
        return err as KafkaError
      }
    })()
    expect(rf).toBeInstanceOf(KafkaError)
    expect(rf!.code).toBe(ErrorCode.INVALID_REPLICATION_FACTOR)
    expect(rf!.message).toContain('Replication factor: 3 larger than available brokers: 2.')
    expect(() => assignReplicasToBrokers(brokers([0]), 0, 1)).toThrow(/larger than 0/)
    expect(() => assignReplicasToBrokers(brokers([0]), 1, 0)).toThrow(/larger than 0/)
  })

  it('is rack aware: racks alternate and each partition spans as many racks as it can', () => {
    const b = brokers([0, 1, 2, 3, 4, 5], ['a', 'a', 'b', 'b', 'c', 'c'])
    expect(rackAlternatedBrokerList(b as { id: number; rack: string }[])).toEqual([0, 2, 4, 1, 3, 5])
    const a = assignReplicasToBrokers(b, 12, 3, { fixedStartIndex: 1 })
    const rackOf = (id: number) => b.find((x) => x.id === id)!.rack
    for (const r of a) expect(new Set(r.map(rackOf)).size).toBe(3)
    expect(() => assignReplicasToBrokers(brokers([0, 1], ['a', null]), 1, 1)).toThrow(/rack information/)
  })

  it('continues from partition 0 of an existing topic when partitions are added', () => {
    const live = brokers([1, 2, 3])
    const existing = assignReplicasToBrokers(live, 3, 2, { fixedStartIndex: 1 })
    const start = startIndexForNewPartitions(live, existing[0]!)
    const all = assignReplicasToBrokers(live, 6, 2, { fixedStartIndex: start })
    const added = assignReplicasToBrokers(live, 3, 2, { fixedStartIndex: start, startPartitionId: 3 })
    expect(added).toEqual(all.slice(3))
  })
})
