// Offsets of deleted topics (Kafka's GroupCoordinator.onPartitionsDeleted): every group's committed
// offsets of the deleted partitions, and those open transactions hold, get tombstones; a partition
// loaded after the broker stopped between a deletion and its tombstones removes them itself.
import { describe, expect, it } from 'vitest'
import { decodeGroupRecordKey } from '../../src/coordinator/group/offset-commit-group-metadata-records.js'
import type { TopicsView } from '../../src/coordinator/group/types.js'
import { InMemoryPartitionWriter } from '../../src/coordinator/runtime/partition-writer.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { harness } from './helpers.js'

/** Topics 't' (6 partitions) and 'u' (2) until `deleted` names them. */
function topicsWithDeletion(deleted: Set<string>): TopicsView {
  const counts = new Map([
    ['t', 6],
    ['u', 2],
  ])
  return {
    partitionCount: (topic) => (deleted.has(topic) ? undefined : counts.get(topic)),
    topicId: () => undefined,
    topicName: () => undefined,
    async offsets(partitions) {
      return partitions.map(() => ({ logEndOffset: 0, highWatermark: 0 }))
    },
  }
}

const commit = (partitions: number[], topic = 't') => ({
  generationId: -1,
  memberId: '',
  groupInstanceId: null,
  retentionTimeMs: -1,
  topics: [{ name: topic, partitions: partitions.map((p) => ({ partitionIndex: p, committedOffset: 10n + BigInt(p), committedLeaderEpoch: -1, committedMetadata: null })) }],
})

describe('offsets of deleted topics', () => {
  it('every group loses its offsets of the deleted partitions, committed and pending; other topics keep theirs', async () => {
    const deleted = new Set<string>()
    const h = await harness({}, { topics: topicsWithDeletion(deleted) })
    await h.coordinator.commitOffsets({ groupId: 'g1', ...commit([0, 1]) })
    await h.coordinator.commitOffsets({ groupId: 'g1', ...commit([0], 'u') })
    await h.coordinator.commitOffsets({ groupId: 'g2', ...commit([3]) })
    const txn = await h.coordinator.txnCommitOffsets({ transactionalId: 'tx', groupId: 'g3', producerId: 7, producerEpoch: 0, generationId: -1, memberId: '', groupInstanceId: null, topics: commit([2]).topics })
    expect(txn[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE)

    deleted.add('t')
    const removed = await h.coordinator.onPartitionsDeleted(Array.from({ length: 6 }, (_, partition) => ({ topic: 't', partition })))
    expect(removed).toBe(4)
    // Tombstones, in __consumer_offsets, for exactly those keys.
    const tombstones = h.writer
      .records(0)
      .filter((r) => r.value === null)
      .map((r) => decodeGroupRecordKey(r.key))
    expect(tombstones).toEqual(
      expect.arrayContaining([
        { type: 'offset-commit', group: 'g1', topic: 't', partition: 0 },
        { type: 'offset-commit', group: 'g1', topic: 't', partition: 1 },
        { type: 'offset-commit', group: 'g2', topic: 't', partition: 3 },
        { type: 'offset-commit', group: 'g3', topic: 't', partition: 2 },
      ]),
    )
    expect(tombstones).toHaveLength(4)
    expect((await h.coordinator.fetchOffsets('g1', null)).topics).toEqual([{ name: 'u', partitions: [expect.objectContaining({ partitionIndex: 0, committedOffset: 10n })] }])
    expect((await h.coordinator.fetchOffsets('g2', null)).topics).toEqual([])
    // The transaction's pending offset is gone too: its COMMIT marker brings nothing back.
    await h.coordinator.onTxnCompleted(0, 7, true)
    expect((await h.coordinator.fetchOffsets('g3', null)).topics).toEqual([])

    // A reload of the partition (replay of the same records) agrees.
    const again = await harness({}, { writer: h.writer, topics: topicsWithDeletion(deleted) })
    expect((await again.coordinator.fetchOffsets('g1', null)).topics.map((t) => t.name)).toEqual(['u'])
    expect(again.writer.records(0).length).toBe(h.writer.records(0).length)
  })

  it('a partition loaded after a deletion it missed removes the deleted topic offsets itself', async () => {
    const writer = new InMemoryPartitionWriter()
    const before = await harness({}, { writer, topics: topicsWithDeletion(new Set()) })
    await before.coordinator.commitOffsets({ groupId: 'g1', ...commit([0, 5]) })
    await before.coordinator.commitOffsets({ groupId: 'g1', ...commit([1], 'u') })
    before.coordinator.close()
    // The broker stopped before the tombstones were written; 't' is gone when it starts again.
    const after = await harness({}, { writer, topics: topicsWithDeletion(new Set(['t'])) })
    await after.settle()
    expect((await after.coordinator.fetchOffsets('g1', null)).topics.map((t) => t.name)).toEqual(['u'])
    expect(writer.records(0).filter((r) => r.value === null)).toHaveLength(2)
  })
})
