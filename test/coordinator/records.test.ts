import { describe, expect, it } from 'vitest'
import {
  CoordinatorRecordError,
  decodeGroupMetadataValue,
  decodeGroupRecordKey,
  decodeOffsetCommitValue,
  encodeGroupMetadataKey,
  encodeGroupMetadataValue,
  encodeOffsetCommitKey,
  encodeOffsetCommitValue,
  type GroupMetadataValue,
} from '../../src/coordinator/group/offset-commit-group-metadata-records.js'
import { groupPartition, javaStringHashCode, kafkaAbs } from '../../src/coordinator/group/partitioner.js'
import { i16, i32, i64 } from '../harness/bytes.js'

const str = (s: string): Buffer => {
  const b = Buffer.from(s)
  const len = Buffer.alloc(2)
  len.writeInt16BE(b.length)
  return Buffer.concat([len, b])
}
const bytes = (b: Buffer): Buffer => Buffer.concat([i32(b.length), b])

describe('__consumer_offsets record keys', () => {
  it('encodes OffsetCommitKey as version 1 and reads versions 0 and 1', () => {
    const key = encodeOffsetCommitKey('group-1', 'orders', 7)
    expect(key).toEqual(Buffer.concat([i16(1), str('group-1'), str('orders'), i32(7)]))
    expect(decodeGroupRecordKey(key)).toEqual({ type: 'offset-commit', group: 'group-1', topic: 'orders', partition: 7 })
    const v0 = Buffer.concat([i16(0), str('g'), str('t'), i32(0)])
    expect(decodeGroupRecordKey(v0)).toEqual({ type: 'offset-commit', group: 'g', topic: 't', partition: 0 })
  })

  it('encodes GroupMetadataKey as version 2', () => {
    const key = encodeGroupMetadataKey('grüppe')
    expect(key).toEqual(Buffer.concat([i16(2), str('grüppe')]))
    expect(decodeGroupRecordKey(key)).toEqual({ type: 'group-metadata', group: 'grüppe' })
  })

  it('reads the consumer-group keys (3-8) and share-group keys (9-15), reports the other record types as unknown, and truncated keys as errors', () => {
    expect(decodeGroupRecordKey(Buffer.concat([i16(3), str('x')]))).toEqual({ type: 'consumer-group', record: 'metadata', group: 'x', memberId: null })
    expect(decodeGroupRecordKey(Buffer.concat([i16(8), str('x'), str('m')]))).toEqual({ type: 'consumer-group', record: 'current-member-assignment', group: 'x', memberId: 'm' })
    // Share groups (KIP-932): 9-15 as Kafka numbers them (15: the share-partitions with state).
    expect(decodeGroupRecordKey(Buffer.concat([i16(9), str('x')]))).toEqual({ type: 'share-group', record: 'partition-metadata', group: 'x', memberId: null })
    expect(decodeGroupRecordKey(Buffer.concat([i16(10), str('x'), str('m')]))).toEqual({ type: 'share-group', record: 'member-metadata', group: 'x', memberId: 'm' })
    expect(decodeGroupRecordKey(Buffer.concat([i16(11), str('x')]))).toEqual({ type: 'share-group', record: 'metadata', group: 'x', memberId: null })
    expect(decodeGroupRecordKey(Buffer.concat([i16(14), str('x'), str('m')]))).toEqual({ type: 'share-group', record: 'current-member-assignment', group: 'x', memberId: 'm' })
    expect(decodeGroupRecordKey(Buffer.concat([i16(15), str('x')]))).toEqual({ type: 'share-group', record: 'state-partition-metadata', group: 'x', memberId: null })
    expect(decodeGroupRecordKey(Buffer.concat([i16(16), str('x')]))).toEqual({ type: 'unknown', version: 16 })
    expect(() => decodeGroupRecordKey(Buffer.concat([i16(1), str('g'), i16(10)]))).toThrow(CoordinatorRecordError)
    expect(() => decodeGroupRecordKey(Buffer.from([0]))).toThrow(CoordinatorRecordError)
  })
})

describe('OffsetCommitValue', () => {
  it('round-trips version 3 byte for byte', () => {
    const v = { offset: 12345678901234n, leaderEpoch: 4, metadata: 'meta', commitTimestamp: 1_700_000_000_123, expireTimestamp: -1 }
    const buf = encodeOffsetCommitValue(v)
    expect(buf).toEqual(Buffer.concat([i16(3), i64(12345678901234), i32(4), str('meta'), i64(1_700_000_000_123)]))
    expect(decodeOffsetCommitValue(buf)).toEqual(v)
  })

  it('writes version 1 when the commit carries an expire timestamp', () => {
    const v = { offset: 5n, leaderEpoch: -1, metadata: '', commitTimestamp: 1000, expireTimestamp: 61000 }
    const buf = encodeOffsetCommitValue(v)
    expect(buf).toEqual(Buffer.concat([i16(1), i64(5), str(''), i64(1000), i64(61000)]))
    expect(decodeOffsetCommitValue(buf)).toEqual(v)
  })

  it('reads versions 0, 2 and the flexible version 4', () => {
    const v0 = Buffer.concat([i16(0), i64(9), str('m'), i64(77)])
    expect(decodeOffsetCommitValue(v0)).toEqual({ offset: 9n, leaderEpoch: -1, metadata: 'm', commitTimestamp: 77, expireTimestamp: -1 })
    const v2 = Buffer.concat([i16(2), i64(10), str('x'), i64(78)])
    expect(decodeOffsetCommitValue(v2).offset).toBe(10n)
    // v4: compact string (length + 1 as uvarint) and a tagged-field section with one unknown field.
    const v4 = Buffer.concat([i16(4), i64(11), i32(2), Buffer.from([3]), Buffer.from('ab'), i64(79), Buffer.from([1, 0, 2, 0xaa, 0xbb])])
    expect(decodeOffsetCommitValue(v4)).toEqual({ offset: 11n, leaderEpoch: 2, metadata: 'ab', commitTimestamp: 79, expireTimestamp: -1 })
  })

  it('refuses malformed values', () => {
    expect(() => decodeOffsetCommitValue(Buffer.concat([i16(9), i64(1)]))).toThrow(CoordinatorRecordError)
    expect(() => decodeOffsetCommitValue(Buffer.concat([i16(3), i64(1), i32(0)]))).toThrow(CoordinatorRecordError)
    expect(() => decodeOffsetCommitValue(Buffer.concat([i16(3), i64(1), i32(0), i16(-1), i64(1)]))).toThrow(CoordinatorRecordError)
  })
})

describe('GroupMetadataValue', () => {
  const value: GroupMetadataValue = {
    protocolType: 'consumer',
    generation: 3,
    protocol: 'range',
    leader: 'm-1',
    currentStateTimestamp: 1_700_000_000_000,
    members: [
      { memberId: 'm-1', groupInstanceId: 'i-1', clientId: 'c', clientHost: '/127.0.0.1', rebalanceTimeout: 30000, sessionTimeout: 10000, subscription: Buffer.from([1, 2]), assignment: Buffer.from([3]) },
      { memberId: 'm-2', groupInstanceId: null, clientId: 'c2', clientHost: '/10.0.0.2', rebalanceTimeout: 60000, sessionTimeout: 6000, subscription: Buffer.alloc(0), assignment: Buffer.alloc(0) },
    ],
  }

  it('round-trips version 3 in Kafka layout', () => {
    const buf = encodeGroupMetadataValue(value)
    const m1 = Buffer.concat([str('m-1'), str('i-1'), str('c'), str('/127.0.0.1'), i32(30000), i32(10000), bytes(Buffer.from([1, 2])), bytes(Buffer.from([3]))])
    const m2 = Buffer.concat([str('m-2'), i16(-1), str('c2'), str('/10.0.0.2'), i32(60000), i32(6000), bytes(Buffer.alloc(0)), bytes(Buffer.alloc(0))])
    expect(buf).toEqual(Buffer.concat([i16(3), str('consumer'), i32(3), str('range'), str('m-1'), i64(1_700_000_000_000), i32(2), m1, m2]))
    expect(decodeGroupMetadataValue(buf)).toEqual(value)
  })

  it('round-trips an empty group with null protocol and leader', () => {
    const empty: GroupMetadataValue = { protocolType: 'consumer', generation: 4, protocol: null, leader: null, currentStateTimestamp: 5, members: [] }
    expect(decodeGroupMetadataValue(encodeGroupMetadataValue(empty))).toEqual(empty)
  })

  it('reads versions 0, 1 and 2 (no instance id; v0 has no rebalance timeout)', () => {
    const member0 = Buffer.concat([str('m'), str('c'), str('h'), i32(10000), bytes(Buffer.from([9])), bytes(Buffer.from([8]))])
    const v0 = Buffer.concat([i16(0), str('consumer'), i32(1), str('range'), str('m'), i32(1), member0])
    expect(decodeGroupMetadataValue(v0).members[0]).toEqual({ memberId: 'm', groupInstanceId: null, clientId: 'c', clientHost: 'h', rebalanceTimeout: 10000, sessionTimeout: 10000, subscription: Buffer.from([9]), assignment: Buffer.from([8]) })
    expect(decodeGroupMetadataValue(v0).currentStateTimestamp).toBe(-1)
    const member1 = Buffer.concat([str('m'), str('c'), str('h'), i32(20000), i32(10000), bytes(Buffer.alloc(0)), bytes(Buffer.alloc(0))])
    const v1 = Buffer.concat([i16(1), str('consumer'), i32(2), str('range'), str('m'), i32(1), member1])
    expect(decodeGroupMetadataValue(v1).members[0]!.rebalanceTimeout).toBe(20000)
    const v2 = Buffer.concat([i16(2), str('consumer'), i32(2), i16(-1), i16(-1), i64(42), i32(0)])
    expect(decodeGroupMetadataValue(v2)).toEqual({ protocolType: 'consumer', generation: 2, protocol: null, leader: null, currentStateTimestamp: 42, members: [] })
  })

  it('reads the flexible version 4 (compact lengths, tagged fields after each struct)', () => {
    const cstr = (x: string): Buffer => Buffer.concat([Buffer.from([Buffer.byteLength(x) + 1]), Buffer.from(x)])
    const cbytes = (b: Buffer): Buffer => Buffer.concat([Buffer.from([b.length + 1]), b])
    const member = Buffer.concat([cstr('m'), Buffer.from([0]), cstr('c'), cstr('h'), i32(20000), i32(10000), cbytes(Buffer.from([9])), cbytes(Buffer.alloc(0)), Buffer.from([0])])
    const v4 = Buffer.concat([i16(4), cstr('consumer'), i32(5), cstr('range'), cstr('m'), i64(42), Buffer.from([2]), member, Buffer.from([1, 3, 1, 0xff])])
    expect(decodeGroupMetadataValue(v4)).toEqual({
      protocolType: 'consumer',
      generation: 5,
      protocol: 'range',
      leader: 'm',
      currentStateTimestamp: 42,
      members: [{ memberId: 'm', groupInstanceId: null, clientId: 'c', clientHost: 'h', rebalanceTimeout: 20000, sessionTimeout: 10000, subscription: Buffer.from([9]), assignment: Buffer.alloc(0) }],
    })
    expect(() => decodeGroupMetadataValue(Buffer.concat([i16(5), v4.subarray(2)]))).toThrow(CoordinatorRecordError)
  })

  it('rejects a member count larger than the bytes could hold, without allocating for it', () => {
    const huge = Buffer.concat([i16(3), str('consumer'), i32(1), i16(-1), i16(-1), i64(0), i32(0x7fffffff)])
    expect(() => decodeGroupMetadataValue(huge)).toThrow(CoordinatorRecordError)
    const negative = Buffer.concat([i16(3), str('consumer'), i32(1), i16(-1), i16(-1), i64(0), i32(-5)])
    expect(() => decodeGroupMetadataValue(negative)).toThrow(CoordinatorRecordError)
    const badBytes = Buffer.concat([i16(3), str('consumer'), i32(1), i16(-1), i16(-1), i64(0), i32(1), str('m'), i16(-1), str('c'), str('h'), i32(1), i32(1), i32(1000), i32(0)])
    expect(() => decodeGroupMetadataValue(badBytes)).toThrow(CoordinatorRecordError)
  })
})

describe('coordinator partition of a group', () => {
  it("matches Java's String.hashCode, including overflow and surrogate pairs", () => {
    expect(javaStringHashCode('')).toBe(0)
    expect(javaStringHashCode('a')).toBe(97)
    expect(javaStringHashCode('hello')).toBe(99162322)
    expect(javaStringHashCode('hello world')).toBe(1794106052)
    expect(javaStringHashCode('polygenelubricants')).toBe(-2147483648)
    expect(javaStringHashCode('\u{1F600}')).toBe(1772899)
    expect(javaStringHashCode('group-é-ü')).toBe(-1484028726)
  })

  it("is Kafka's Utils.abs(hashCode) % partitions", () => {
    expect(kafkaAbs(-2147483648)).toBe(0)
    expect(groupPartition('polygenelubricants', 50)).toBe(0)
    expect(groupPartition('a', 50)).toBe(47)
    expect(groupPartition('my-consumer-group', 50)).toBe(13)
    expect(groupPartition('group-é-ü', 50)).toBe(22)
    expect(groupPartition('\u{1F600}', 50)).toBe(49)
  })
})
