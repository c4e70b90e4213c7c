// The share coordinator's state machine (KIP-932, Kafka's ShareCoordinatorShard) over an in-memory
// partition writer: writes, reads, initialize, delete, the snapshot cadence, replay of snapshots and
// updates, state-epoch and leader-epoch fencing, and the coordinator's own errors.
import { describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import { ManualClock } from '../../src/coordinator/runtime/clock.js'
import { InMemoryPartitionWriter } from '../../src/coordinator/runtime/partition-writer.js'
import { ShareCoordinator, shareStatePartition } from '../../src/coordinator/share/share-coordinator.js'
import { combineStateBatches } from '../../src/coordinator/share/state-batches.js'
import { decodeShareCoordinatorRecordKey } from '../../src/coordinator/share/generated/records.gen.js'
import { quietLog } from './helpers.js'

const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ'
const KEY = { groupId: 'g', topicId: TOPIC_ID, partition: 0 }
const A = 0
const ACKED = 2
const ARCHIVED = 4

async function coordinator(opts: { perSnapshot?: number; writer?: InMemoryPartitionWriter; partitions?: number } = {}): Promise<{ c: ShareCoordinator; writer: InMemoryPartitionWriter; p: number }> {
  const writer = opts.writer ?? new InMemoryPartitionWriter()
  const partitions = opts.partitions ?? 1
  const c = new ShareCoordinator({
    config: { stateTopicPartitions: partitions, snapshotUpdateRecordsPerSnapshot: opts.perSnapshot ?? 500 },
    writer,
    clock: new ManualClock(0),
    log: quietLog,
  })
  for (let p = 0; p < partitions; p++) await c.runtime.load(p)
  return { c, writer, p: c.partitionFor(KEY) }
}

function recordTypes(writer: InMemoryPartitionWriter, p: number): string[] {
  return writer.records(p).map((r) => `${decodeShareCoordinatorRecordKey(r.key).type}${r.value === null ? '-tombstone' : ''}`)
}

describe('share coordinator', () => {
  it('places a share-partition as Kafka does: abs(hashCode("group:topicId:partition")) % partitions', () => {
    // Java: "g:AAAAAAAAAAAAAAAAAAAAAQ:0".hashCode() computed by the same formula, checked on a known string.
    expect(shareStatePartition('hello', 50)).toBe(Math.abs(99162322) % 50)
    expect(shareStatePartition(KEY, 50)).toBe(shareStatePartition(`g:${TOPIC_ID}:0`, 50))
  })

  it('answers start offset -1 and state epoch 0 for a share-partition with no state', async () => {
    const { c } = await coordinator()
    expect(await c.read(KEY, 0)).toMatchObject({ errorCode: ErrorCode.NONE, startOffset: -1, stateEpoch: 0, stateBatches: [] })
  })

  it('initializes, writes, reads and deletes a share-partition, and a replay rebuilds it', async () => {
    const { c, writer, p } = await coordinator()
    expect(await c.initialize(KEY, 1, 10)).toMatchObject({ errorCode: ErrorCode.NONE })
    expect(await c.read(KEY, 0)).toMatchObject({ startOffset: 10, stateEpoch: 1, stateBatches: [] })
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 10, stateBatches: [
      { firstOffset: 10, lastOffset: 12, deliveryState: ACKED, deliveryCount: 1 },
      { firstOffset: 13, lastOffset: 14, deliveryState: A, deliveryCount: 2 },
    ] })).toMatchObject({ errorCode: ErrorCode.NONE })
    // An update overlays: 13 acknowledged now, the SPSO moved past 10-11.
    await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 12, stateBatches: [{ firstOffset: 13, lastOffset: 13, deliveryState: ACKED, deliveryCount: 2 }] })
    const expected = [
      { firstOffset: 12, lastOffset: 12, deliveryState: ACKED, deliveryCount: 1 },
      { firstOffset: 13, lastOffset: 13, deliveryState: ACKED, deliveryCount: 2 },
      { firstOffset: 14, lastOffset: 14, deliveryState: A, deliveryCount: 2 },
    ]
    expect(await c.read(KEY, 0)).toMatchObject({ startOffset: 12, stateEpoch: 1, stateBatches: expected })
    expect(recordTypes(writer, p)).toEqual(['ShareSnapshot', 'ShareUpdate', 'ShareUpdate'])

    // Another coordinator replays the same records into the same state.
    const again = await coordinator({ writer })
    expect(await again.c.read(KEY, 0)).toMatchObject({ startOffset: 12, stateEpoch: 1, stateBatches: expected })

    expect(await c.delete(KEY)).toMatchObject({ errorCode: ErrorCode.NONE })
    expect(await c.read(KEY, 0)).toMatchObject({ startOffset: -1, stateEpoch: 0 })
    expect(recordTypes(writer, p).slice(-2)).toEqual(['ShareSnapshot-tombstone', 'ShareUpdate-tombstone'])
    const afterDelete = await coordinator({ writer })
    expect(await afterDelete.c.read(KEY, 0)).toMatchObject({ startOffset: -1, stateEpoch: 0 })
  })

  it('writes a snapshot every snapshot.update.records.per.snapshot updates, so a replay applies at most that many', async () => {
    const { c, writer, p } = await coordinator({ perSnapshot: 3 })
    for (let i = 0; i < 10; i++) {
      await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: i, stateBatches: [{ firstOffset: i, lastOffset: i, deliveryState: A, deliveryCount: i + 1 }] })
    }
    // 1 snapshot, 3 updates, a snapshot (epoch 1), 3 updates, a snapshot (epoch 2), 1 update.
    expect(recordTypes(writer, p)).toEqual([
      'ShareSnapshot', 'ShareUpdate', 'ShareUpdate', 'ShareUpdate',
      'ShareSnapshot', 'ShareUpdate', 'ShareUpdate', 'ShareUpdate',
      'ShareSnapshot', 'ShareUpdate',
    ])
    const state = await c.runtime.read(p, (s) => s.state(KEY))
    expect(state).toMatchObject({ snapshotEpoch: 2, startOffset: 9, stateBatches: [{ firstOffset: 9, lastOffset: 9, deliveryState: A, deliveryCount: 10 }] })
    // A replay from the last snapshot on gives the same state as a replay of everything.
    const tail = new InMemoryPartitionWriter()
    tail.partitions.set(p, writer.records(p).slice(8).map((r, i) => ({ ...r, offset: i })))
    const fromSnapshot = await coordinator({ writer: tail })
    expect(await fromSnapshot.c.runtime.read(p, (s) => s.state(KEY))).toEqual(state)
    const full = await coordinator({ writer })
    expect(await full.c.runtime.read(p, (s) => s.state(KEY))).toEqual(state)
    expect(await full.c.runtime.read(p, (s) => s.updatesSinceSnapshot(KEY))).toBe(1)
  })

  it('writes every state as a snapshot when share.coordinator.snapshot.update.records.per.snapshot is 0', async () => {
    const { c, writer, p } = await coordinator({ perSnapshot: 0 })
    for (let i = 0; i < 3; i++) await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 0, stateBatches: [] })
    expect(recordTypes(writer, p)).toEqual(['ShareSnapshot', 'ShareSnapshot', 'ShareSnapshot'])
  })

  it('fences a write in an older state epoch (FENCED_STATE_EPOCH) and an initialize in an older one', async () => {
    const { c, writer, p } = await coordinator()
    await c.initialize(KEY, 3, 0)
    const before = writer.records(p).length
    expect(await c.write(KEY, { stateEpoch: 2, leaderEpoch: 0, startOffset: 0, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.FENCED_STATE_EPOCH })
    expect(await c.initialize(KEY, 2, 5)).toMatchObject({ errorCode: ErrorCode.FENCED_STATE_EPOCH })
    expect(writer.records(p).length).toBe(before)
    expect(await c.write(KEY, { stateEpoch: 3, leaderEpoch: 0, startOffset: 1, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.NONE })
    // Initializing again in a newer state epoch replaces the state (offsets altered or reset by an admin).
    await c.write(KEY, { stateEpoch: 3, leaderEpoch: 0, startOffset: 1, stateBatches: [{ firstOffset: 1, lastOffset: 4, deliveryState: ARCHIVED, deliveryCount: 5 }] })
    expect(await c.initialize(KEY, 4, 100)).toMatchObject({ errorCode: ErrorCode.NONE })
    expect(await c.read(KEY, 0)).toMatchObject({ stateEpoch: 4, startOffset: 100, stateBatches: [] })
  })

  it('fences a write and a read from an older leader (FENCED_LEADER_EPOCH), also after a replay', async () => {
    const { c, writer } = await coordinator()
    await c.write(KEY, { stateEpoch: 1, leaderEpoch: 5, startOffset: 0, stateBatches: [] })
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 4, startOffset: 3, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.FENCED_LEADER_EPOCH })
    expect(await c.read(KEY, 4)).toMatchObject({ errorCode: ErrorCode.FENCED_LEADER_EPOCH })
    expect(await c.readSummary(KEY, 4)).toMatchObject({ errorCode: ErrorCode.FENCED_LEADER_EPOCH })
    // A new leader's read takes the epoch: the old leader's next write is fenced even before the new one writes.
    expect(await c.read(KEY, 7)).toMatchObject({ errorCode: ErrorCode.NONE, startOffset: 0 })
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 5, startOffset: 3, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.FENCED_LEADER_EPOCH })
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 7, startOffset: 3, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.NONE })
    const again = await coordinator({ writer })
    expect(await again.c.write(KEY, { stateEpoch: 1, leaderEpoch: 6, startOffset: 4, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.FENCED_LEADER_EPOCH })
    expect(await again.c.readSummary(KEY, 7)).toMatchObject({ errorCode: ErrorCode.NONE, startOffset: 3, stateEpoch: 1 })
  })

  it('answers INVALID_REQUEST for malformed input and writes nothing', async () => {
    const { c, writer, p } = await coordinator()
    expect(await c.write({ ...KEY, partition: -1 }, { stateEpoch: 1, leaderEpoch: 0, startOffset: 0, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST })
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 0, stateBatches: [{ firstOffset: 5, lastOffset: 4, deliveryState: A, deliveryCount: 1 }] })).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST })
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 0, stateBatches: [{ firstOffset: 1, lastOffset: 4, deliveryState: 9, deliveryCount: 1 }] })).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST })
    expect(await c.initialize({ ...KEY, groupId: '' }, 1, 0)).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST })
    expect(writer.records(p)).toEqual([])
  })

  it('answers NOT_COORDINATOR for a partition it does not coordinate and COORDINATOR_LOAD_IN_PROGRESS while loading', async () => {
    const writer = new InMemoryPartitionWriter()
    const c = new ShareCoordinator({ config: { stateTopicPartitions: 1, snapshotUpdateRecordsPerSnapshot: 500 }, writer, clock: new ManualClock(0), log: quietLog })
    expect(await c.read(KEY, 0)).toMatchObject({ errorCode: ErrorCode.NOT_COORDINATOR })
    const loading = c.runtime.load(0)
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 0, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.COORDINATOR_LOAD_IN_PROGRESS })
    await loading
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 0, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.NONE })
    writer.failNextAppend = ErrorCode.NOT_ENOUGH_REPLICAS
    expect(await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 1, stateBatches: [] })).toMatchObject({ errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE })
    c.runtime.unload(0)
    expect(await c.readSummary(KEY, 0)).toMatchObject({ errorCode: ErrorCode.NOT_COORDINATOR })
  })

  it('skips an unreadable record on replay and loads the rest', async () => {
    const { c, writer, p } = await coordinator()
    await c.write(KEY, { stateEpoch: 1, leaderEpoch: 0, startOffset: 7, stateBatches: [] })
    writer.partitions.get(p)!.push({ offset: 1, key: writer.records(p)[0]!.key, value: Buffer.from([0, 0, 1]) })
    const again = await coordinator({ writer })
    expect(await again.c.read(KEY, 0)).toMatchObject({ startOffset: 7 })
    expect(await again.c.runtime.read(p, (s) => s.skippedRecords)).toBe(1)
  })
})

describe('share coordinator pruning (share.coordinator.state.topic.prune.interval.ms)', () => {
  const KEY2 = { ...KEY, groupId: 'g2' }

  async function pruning(writer = new InMemoryPartitionWriter()): Promise<{ c: ShareCoordinator; clock: ManualClock; writer: InMemoryPartitionWriter }> {
    const clock = new ManualClock(0)
    const c = new ShareCoordinator({ config: { stateTopicPartitions: 1, snapshotUpdateRecordsPerSnapshot: 2, pruneIntervalMs: 1000 }, writer, clock, log: quietLog })
    await c.runtime.load(0)
    return { c, clock, writer }
  }

  async function tick(c: ShareCoordinator, clock: ManualClock): Promise<void> {
    clock.advance(1000)
    await c.runtime.idle()
    // The deletion itself settles after the timer's operation.
    for (let i = 0; i < 5; i++) await Promise.resolve()
  }

  it('deletes the records before the oldest last snapshot any share-partition needs; a replay gives the same state', async () => {
    const { c, clock, writer } = await pruning()
    const write = (k: typeof KEY, i: number) => c.write(k, { stateEpoch: 1, leaderEpoch: 0, startOffset: i, stateBatches: [{ firstOffset: i, lastOffset: i + 1, deliveryState: A, deliveryCount: i }] })
    await write(KEY2, 0) // offset 0: KEY2's snapshot, never written again
    for (let i = 0; i < 7; i++) await write(KEY, i) // offsets 1-7: snapshot 1, updates 2-3, snapshot 4, updates 5-6, snapshot 7
    await tick(c, clock)
    // KEY2 still needs offset 0: nothing goes.
    expect(writer.logStart.get(0) ?? 0).toBe(0)

    await c.write(KEY2, { stateEpoch: 1, leaderEpoch: 0, startOffset: 50, stateBatches: [] }) // offset 8: an update of KEY2
    await c.write(KEY2, { stateEpoch: 1, leaderEpoch: 0, startOffset: 51, stateBatches: [] }) // 9
    await c.write(KEY2, { stateEpoch: 1, leaderEpoch: 0, startOffset: 52, stateBatches: [] }) // 10: KEY2's new snapshot
    await tick(c, clock)
    // KEY needs 7 (its last snapshot), KEY2 10: the records before 7 go.
    expect(writer.logStart.get(0)).toBe(7)
    const before = [await c.runtime.read(0, (s) => s.state(KEY)), await c.runtime.read(0, (s) => s.state(KEY2))]
    const replayed = await pruning(writer)
    expect([await replayed.c.runtime.read(0, (s) => s.state(KEY)), await replayed.c.runtime.read(0, (s) => s.state(KEY2))]).toEqual(before)
    expect(before[0]).toMatchObject({ startOffset: 6 })
    expect(before[1]).toMatchObject({ startOffset: 52 })

    // Both deleted: every record goes at the next interval, and a replay has no state.
    await c.delete(KEY)
    await c.delete(KEY2)
    await tick(c, clock)
    expect(writer.logStart.get(0)).toBe(15)
    expect(writer.records(0)).toEqual([])
    const empty = await pruning(writer)
    expect(await empty.c.read(KEY, 0)).toMatchObject({ startOffset: -1 })
    expect(await empty.c.runtime.read(0, (s) => s.size)).toBe(0)
  })
})

describe('state batch combiner', () => {
  const b = (firstOffset: number, lastOffset: number, deliveryState: number, deliveryCount: number) => ({ firstOffset, lastOffset, deliveryState, deliveryCount })

  it('lays new batches over kept ones, drops what is before the start offset, and joins equal neighbours', () => {
    expect(combineStateBatches([b(0, 9, A, 1)], [b(3, 4, ACKED, 1)], 0)).toEqual([b(0, 2, A, 1), b(3, 4, ACKED, 1), b(5, 9, A, 1)])
    expect(combineStateBatches([b(0, 9, A, 1)], [b(0, 4, A, 1)], 2)).toEqual([b(2, 9, A, 1)])
    expect(combineStateBatches([b(0, 4, A, 1), b(5, 9, ACKED, 1)], [b(3, 7, ARCHIVED, 2)], 0)).toEqual([b(0, 2, A, 1), b(3, 7, ARCHIVED, 2), b(8, 9, ACKED, 1)])
    expect(combineStateBatches([b(10, 12, A, 1)], [b(0, 20, ACKED, 1)], -1)).toEqual([b(0, 20, ACKED, 1)])
    expect(combineStateBatches([b(0, 2, A, 1), b(10, 12, A, 1)], [b(1, 11, ACKED, 1)], 0)).toEqual([b(0, 0, A, 1), b(1, 11, ACKED, 1), b(12, 12, A, 1)])
  })

  it('takes the later of two overlapping new batches', () => {
    expect(combineStateBatches([], [b(0, 9, A, 1), b(3, 4, ACKED, 1)], 0)).toEqual([b(0, 2, A, 1), b(3, 4, ACKED, 1), b(5, 9, A, 1)])
    expect(combineStateBatches([], [b(0, 9, A, 1), b(0, 4, ACKED, 1)], 0)).toEqual([b(0, 4, ACKED, 1), b(5, 9, A, 1)])
  })
})
