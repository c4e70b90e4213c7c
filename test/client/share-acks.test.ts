// The share consumer's parts that need no broker (src/client/share-acks.ts): acknowledgements batched into
// the wire's ranges, a ShareFetch answer's records limited to the AcquiredRecords ranges (gaps for acquired
// offsets without a record, hostile ranges ignored), and a share session's epochs.
import { describe, expect, it } from 'vitest'
import { ConnectionError } from '../../src/client/errors.js'
import {
  MAX_MIXED_BATCH,
  ShareSessionState,
  WireAckType,
  acknowledgementBatches,
  acquiredRecords,
  nextShareEpoch,
  wireAckType,
} from '../../src/client/share-acks.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { batchOf } from '../harness/raw-client.js'

const { GAP, ACCEPT, RELEASE, REJECT } = WireAckType
const one = (offset: number, type: number): { first: number; last: number; type: number } => ({ first: offset, last: offset, type })
const batch = (first: number, last: number, types: number[]): { firstOffset: bigint; lastOffset: bigint; acknowledgeTypes: number[] } => ({ firstOffset: BigInt(first), lastOffset: BigInt(last), acknowledgeTypes: types })

describe('acknowledgementBatches', () => {
  it('merges contiguous offsets of one type into one batch with one type', () => {
    expect(acknowledgementBatches([one(3, ACCEPT), one(1, ACCEPT), one(2, ACCEPT)])).toEqual([batch(1, 3, [ACCEPT])])
  })

  it('writes a type per offset for a short contiguous stretch of mixed types', () => {
    expect(acknowledgementBatches([one(0, ACCEPT), one(1, RELEASE), one(2, RELEASE), one(3, REJECT)])).toEqual([batch(0, 3, [ACCEPT, RELEASE, RELEASE, REJECT])])
  })

  it('starts a new batch where offsets are not contiguous', () => {
    expect(acknowledgementBatches([one(0, ACCEPT), one(1, ACCEPT), one(5, ACCEPT), one(7, RELEASE)])).toEqual([batch(0, 1, [ACCEPT]), batch(5, 5, [ACCEPT]), batch(7, 7, [RELEASE])])
  })

  it('keeps gap ranges whole: a long stretch goes as batches of one type each, never expanded per offset', () => {
    const out = acknowledgementBatches([one(0, ACCEPT), { first: 1, last: 1_000_000, type: GAP }, one(1_000_001, ACCEPT)])
    expect(out).toEqual([batch(0, 0, [ACCEPT]), batch(1, 1_000_000, [GAP]), batch(1_000_001, 1_000_001, [ACCEPT])])
    const mixed = acknowledgementBatches([{ first: 0, last: MAX_MIXED_BATCH - 2, type: ACCEPT }, one(MAX_MIXED_BATCH - 1, REJECT), one(MAX_MIXED_BATCH, ACCEPT)])
    expect(mixed.map((b) => [Number(b.firstOffset), Number(b.lastOffset), b.acknowledgeTypes.length])).toEqual([[0, MAX_MIXED_BATCH - 1, MAX_MIXED_BATCH], [MAX_MIXED_BATCH, MAX_MIXED_BATCH, 1]])
  })

  it('drops ranges overlapping earlier ones (the broker refuses overlapping batches whole)', () => {
    expect(acknowledgementBatches([{ first: 0, last: 4, type: GAP }, one(2, ACCEPT), one(5, ACCEPT)])).toEqual([batch(0, 5, [GAP, GAP, GAP, GAP, GAP, ACCEPT])])
  })

  it('is empty for nothing', () => {
    expect(acknowledgementBatches([])).toEqual([])
  })

  it('maps the API types to the wire', () => {
    expect([wireAckType('ACCEPT'), wireAckType('RELEASE'), wireAckType('REJECT')]).toEqual([1, 2, 3])
    expect(() => wireAckType('RENEW' as never)).toThrow(/unknown acknowledge type/)
  })
})

describe('acquiredRecords', () => {
  const values = (from: number, n: number): { value: Buffer }[] => Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`v${from + i}`) }))
  const data = Buffer.concat([batchOf(values(0, 5), { baseOffset: 0 }), batchOf(values(5, 5), { baseOffset: 5 })])
  const opts = { topic: 't', partition: 0 }
  const range = (first: number, last: number, deliveryCount = 1): { firstOffset: bigint; lastOffset: bigint; deliveryCount: number } => ({ firstOffset: BigInt(first), lastOffset: BigInt(last), deliveryCount })

  it('hands out only the acquired offsets of the batches, each with its delivery count', () => {
    const got = acquiredRecords(data, [range(2, 3, 1), range(7, 8, 3)], opts)
    expect(got.records.map((r) => [r.offset, r.deliveryCount, r.value?.toString()])).toEqual([[2, 1, 'v2'], [3, 1, 'v3'], [7, 3, 'v7'], [8, 3, 'v8']])
    expect(got.gaps).toEqual([])
    expect(got.error).toBeNull()
  })

  it('makes acquired offsets without a record gaps: a control batch, and offsets past the data', () => {
    const withControl = Buffer.concat([batchOf(values(0, 2), { baseOffset: 0 }), batchOf([{ value: Buffer.alloc(6) }], { baseOffset: 2, control: true, transactional: true, producerId: 1 })])
    const got = acquiredRecords(withControl, [range(0, 5)], opts)
    expect(got.records.map((r) => r.offset)).toEqual([0, 1])
    expect(got.gaps).toEqual([{ first: 2, last: 5, type: GAP }])
  })

  it('ignores malformed and overlapping ranges and stays bounded by what was sent', () => {
    const got = acquiredRecords(data, [range(4, 2), { firstOffset: -1n, lastOffset: 3n, deliveryCount: 1 }, { firstOffset: 0n, lastOffset: 1n << 60n, deliveryCount: 1 }, range(1, 1), range(1, 6)], opts)
    expect(got.records.map((r) => r.offset)).toEqual([1])
    expect(got.gaps).toEqual([])
    // A huge acquired range past the data is one gap range, not an offset-by-offset walk.
    const huge = acquiredRecords(data, [range(9, 4_000_000_000)], opts)
    expect(huge.records.map((r) => r.offset)).toEqual([9])
    expect(huge.gaps).toEqual([{ first: 10, last: 4_000_000_000, type: GAP }])
  })

  it('rejects the acquired offsets from a corrupt batch on, keeping the records before it', () => {
    const corrupt = Buffer.from(data)
    corrupt[corrupt.length - 1]! ^= 0xff
    const got = acquiredRecords(corrupt, [range(3, 9)], opts)
    expect(got.records.map((r) => r.offset)).toEqual([3, 4])
    expect(got.rejected).toEqual([{ first: 5, last: 9, type: REJECT }])
    expect((got.error as KafkaError).code).toBe(ErrorCode.CORRUPT_MESSAGE)
  })

  it('returns nothing for no ranges or no data', () => {
    expect(acquiredRecords(data, [], opts).records).toEqual([])
    expect(acquiredRecords(null, [range(0, 1)], opts)).toEqual({ records: [], gaps: [{ first: 0, last: 1, type: GAP }], rejected: [], error: null })
  })
})

describe('ShareSessionState', () => {
  const p = (topicId: string, partition: number) => [`${topicId}:${partition}`, { topicId, partition }] as const
  const wanted = (...ps: (readonly [string, { topicId: string; partition: number }])[]) => new Map(ps)

  it('opens with epoch 0 naming every partition, then adds and forgets incrementally, epochs 1, 2, ...', () => {
    const s = new ShareSessionState()
    expect(s.isNew).toBe(true)
    const w1 = wanted(p('a', 0), p('a', 1))
    expect(s.diff(w1)).toEqual({ added: [{ topicId: 'a', partition: 0 }, { topicId: 'a', partition: 1 }], forgotten: [] })
    s.fetched(w1)
    expect(s.epoch).toBe(1)
    expect(s.diff(w1)).toEqual({ added: [], forgotten: [] })
    s.fetched(w1)
    expect(s.epoch).toBe(2)
    const w2 = wanted(p('a', 1), p('b', 0))
    expect(s.diff(w2)).toEqual({ added: [{ topicId: 'b', partition: 0 }], forgotten: [{ topicId: 'a', partition: 0 }] })
    s.acknowledged()
    expect(s.epoch).toBe(3)
  })

  it('starts a new session after a session error or a broken connection; other errors send the same request again', () => {
    const s = new ShareSessionState()
    const w = wanted(p('a', 0))
    s.fetched(w)
    s.failed(new KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    expect(s.epoch).toBe(1)
    expect(s.partitions.size).toBe(1)
    for (const err of [new KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH), new KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND), new KafkaError(ErrorCode.SHARE_SESSION_LIMIT_REACHED), new ConnectionError('gone')]) {
      s.fetched(w)
      s.failed(err)
      expect(s.isNew).toBe(true)
      expect(s.diff(w).added).toHaveLength(1)
    }
  })

  it('wraps after the largest epoch to 1, never 0 or -1', () => {
    expect(nextShareEpoch(0x7fffffff)).toBe(1)
    expect(nextShareEpoch(0)).toBe(1)
    expect(nextShareEpoch(41)).toBe(42)
  })
})
