// Transactional offsets in the group coordinator (TxnOffsetCommit): pending until the transaction's
// marker reaches the group's partition, applied by a COMMIT marker and dropped by an ABORT one, both
// live (onTxnCompleted) and on replay of the partition (transactional batches + control records);
// requireStable fetches get UNSTABLE_OFFSET_COMMIT meanwhile; KIP-447 generation fencing.
import { describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import type { TxnOffsetCommitInput } from '../../src/coordinator/group/types.js'
import { InMemoryPartitionWriter } from '../../src/coordinator/runtime/partition-writer.js'
import { harness, joinInput } from './helpers.js'

const G = 'txn-group'

function txnCommit(offset: bigint, over: Partial<TxnOffsetCommitInput> = {}): TxnOffsetCommitInput {
  return {
    transactionalId: 'tx',
    groupId: G,
    producerId: 42,
    producerEpoch: 3,
    generationId: -1,
    memberId: '',
    groupInstanceId: null,
    topics: [{ name: 't', partitions: [{ partitionIndex: 0, committedOffset: offset, committedLeaderEpoch: -1, committedMetadata: 'm' }] }],
    ...over,
  }
}

async function fetched(h: Awaited<ReturnType<typeof harness>>, requireStable = false): Promise<[bigint, number]> {
  const r = await h.coordinator.fetchOffsets(G, [{ name: 't', partitions: [0] }], requireStable)
  const p = r.topics[0]!.partitions[0]!
  return [p.committedOffset, p.errorCode]
}

describe('transactional offsets', () => {
  it('stay pending until COMMIT, are dropped by ABORT; sequences continue per producer epoch', async () => {
    const h = await harness()
    expect((await h.coordinator.txnCommitOffsets(txnCommit(10n)))[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE)
    expect(await fetched(h)).toEqual([-1n, ErrorCode.NONE])
    expect(await fetched(h, true)).toEqual([-1n, ErrorCode.UNSTABLE_OFFSET_COMMIT])
    await h.coordinator.onTxnCompleted(0, 42, true)
    expect(await fetched(h, true)).toEqual([10n, ErrorCode.NONE])
    await h.coordinator.txnCommitOffsets(txnCommit(20n))
    await h.coordinator.onTxnCompleted(0, 42, false)
    expect(await fetched(h, true)).toEqual([10n, ErrorCode.NONE])
    // Written as transactional batches of producer 42 with consecutive sequences.
    const stored = h.writer.records(0).filter((r) => r.producerId === 42)
    expect(stored.map((r) => [r.producerEpoch, r.sequence])).toEqual([[3, 0], [3, 1]])
    await h.coordinator.txnCommitOffsets(txnCommit(30n, { producerEpoch: 4 }))
    expect(h.writer.records(0).filter((r) => r.producerId === 42).map((r) => [r.producerEpoch, r.sequence]).at(-1)).toEqual([4, 0])
  })

  it('a reload replays transactional batches and markers to the same offsets', async () => {
    const writer = new InMemoryPartitionWriter()
    const h = await harness({}, { writer })
    await h.coordinator.txnCommitOffsets(txnCommit(5n))
    await writer.appendMarker(0, 42, 3, true)
    await h.coordinator.txnCommitOffsets(txnCommit(8n))
    await writer.appendMarker(0, 42, 3, false)
    await h.coordinator.txnCommitOffsets(txnCommit(9n, { producerId: 77 })) // still open
    h.coordinator.close()
    const again = await harness({}, { writer })
    expect(await fetched(again)).toEqual([5n, ErrorCode.NONE])
    expect(await fetched(again, true)).toEqual([-1n, ErrorCode.UNSTABLE_OFFSET_COMMIT])
    await writer.appendMarker(0, 77, 3, true)
    await again.coordinator.onTxnCompleted(0, 77, true)
    expect(await fetched(again, true)).toEqual([9n, ErrorCode.NONE])
    // The sequence of producer 42 continues from the replayed batches.
    await again.coordinator.txnCommitOffsets(txnCommit(11n))
    expect(writer.records(0).filter((r) => r.producerId === 42 && r.control === undefined).map((r) => r.sequence)).toEqual([0, 1, 2])
  })

  it('KIP-447: a member of an old generation or an unknown member cannot commit', async () => {
    const h = await harness()
    const join = h.coordinator.joinGroup(joinInput(G))
    await h.settle()
    const j = await join
    await h.coordinator.syncGroup({ groupId: G, generationId: j.generationId, memberId: j.memberId, groupInstanceId: null, protocolType: null, protocolName: null, assignments: [] })
    const code = async (over: Partial<TxnOffsetCommitInput>) => (await h.coordinator.txnCommitOffsets(txnCommit(1n, over)))[0]!.partitions[0]!.errorCode
    expect(await code({ generationId: j.generationId - 1, memberId: j.memberId })).toBe(ErrorCode.ILLEGAL_GENERATION)
    expect(await code({ generationId: j.generationId, memberId: 'someone-else' })).toBe(ErrorCode.UNKNOWN_MEMBER_ID)
    expect(await code({ generationId: j.generationId, memberId: j.memberId })).toBe(ErrorCode.NONE)
    expect(await code({ topics: [{ name: 'nope', partitions: [{ partitionIndex: 0, committedOffset: 1n, committedLeaderEpoch: -1, committedMetadata: null }] }] })).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  })
})
