// The records of __consumer_offsets, byte for byte as Kafka writes them, so Kafka's own tools
// (kafka-console-consumer with the offsets formatter, kafka-dump-log) can read a Skein partition.
//
// Every record key starts with an int16 "version" that really names the record type; values start
// with their own int16 version. Field encodings: STRING = int16 length + UTF-8 (NULLABLE_STRING: -1 =
// null), BYTES = int32 length + bytes, arrays = int32 count. Flexible versions (values v4) use compact
// forms instead (unsigned varint length + 1, 0 = null) and end every struct with tagged fields
// (uvarint count, then tag, size, bytes; skipped on read).
//
//   key v0/v1  OffsetCommitKey     group STRING | topic STRING | partition INT32
//   key v2     GroupMetadataKey    group STRING
//   value      OffsetCommitValue   v0: offset INT64 | metadata STRING | commitTimestamp INT64
//                                  v1: v0 + expireTimestamp INT64 (after commitTimestamp)
//                                  v2: as v0
//                                  v3: offset INT64 | leaderEpoch INT32 | metadata | commitTimestamp
//                                  v4: v3, flexible
//   value      GroupMetadataValue  protocolType STRING | generation INT32 | protocol NULLABLE_STRING |
//                                  leader NULLABLE_STRING | currentStateTimestamp INT64 (v2+) |
//                                  members [memberId STRING | groupInstanceId NULLABLE_STRING (v3+) |
//                                  clientId STRING | clientHost STRING | rebalanceTimeout INT32 (v1+) |
//                                  sessionTimeout INT32 | subscription BYTES | assignment BYTES]
//                                  v4: v3, flexible
//   a null value is a tombstone: the key's offset or group is deleted (and the cleaner drops it).
//
// We write key v1 + value v3 (v1 when the commit carries an explicit expire timestamp, as Kafka) and
// group metadata v3, and read every version above. Recovery: these are ordinary records in a compacted
// partition; the coordinator rebuilds its state by replaying them in offset order, so the last record
// per key wins. Decoding checks every length against the bytes left before allocating and throws
// CoordinatorRecordError on malformed input.

export class CoordinatorRecordError extends Error {
  override readonly name = 'CoordinatorRecordError'
}

export const OFFSET_COMMIT_KEY_VERSION = 1
export const GROUP_METADATA_KEY_VERSION = 2
export const OFFSET_COMMIT_VALUE_VERSION = 3
export const OFFSET_COMMIT_VALUE_EXPIRING_VERSION = 1
export const GROUP_METADATA_VALUE_VERSION = 3

export interface OffsetCommitKey {
  type: 'offset-commit'
  group: string
  topic: string
  partition: number
}

export interface GroupMetadataKey {
  type: 'group-metadata'
  group: string
}

/** A key of a record type this coordinator does not handle (consumer/share group records of KIP-848...). */
export interface UnknownKey {
  type: 'unknown'
  version: number
}

export type GroupRecordKey = OffsetCommitKey | GroupMetadataKey | UnknownKey

export interface OffsetCommitValue {
  offset: bigint
  /** -1 when unknown (and always in versions before 3). */
  leaderEpoch: number
  metadata: string
  commitTimestamp: number
  /** Only version 1 carries it; -1 otherwise. */
  expireTimestamp: number
}

export interface GroupMemberMetadata {
  memberId: string
  groupInstanceId: string | null
  clientId: string
  clientHost: string
  rebalanceTimeout: number
  sessionTimeout: number
  /** The member's metadata for the group's selected protocol (the consumer subscription). */
  subscription: Buffer
  assignment: Buffer
}

export interface GroupMetadataValue {
  protocolType: string
  generation: number
  protocol: string | null
  leader: string | null
  currentStateTimestamp: number
  members: GroupMemberMetadata[]
}

// ---- writing -------------------------------------------------------------------------------------

class Out {
  readonly parts: Buffer[] = []
  int16(v: number): this {
    const b = Buffer.allocUnsafe(2)
    b.writeInt16BE(v)
    this.parts.push(b)
    return this
  }
  int32(v: number): this {
    const b = Buffer.allocUnsafe(4)
    b.writeInt32BE(v)
    this.parts.push(b)
    return this
  }
  int64(v: bigint | number): this {
    const b = Buffer.allocUnsafe(8)
    b.writeBigInt64BE(BigInt(v))
    this.parts.push(b)
    return this
  }
  string(s: string | null): this {
    if (s === null) return this.int16(-1)
    const b = Buffer.from(s, 'utf8')
    if (b.length > 0x7fff) throw new CoordinatorRecordError(`string of ${b.length} bytes is too long for a record field`)
    this.int16(b.length)
    this.parts.push(b)
    return this
  }
  bytes(b: Buffer): this {
    this.int32(b.length)
    this.parts.push(b)
    return this
  }
  done(): Buffer {
    return Buffer.concat(this.parts)
  }
}

export function encodeOffsetCommitKey(group: string, topic: string, partition: number): Buffer {
  return new Out().int16(OFFSET_COMMIT_KEY_VERSION).string(group).string(topic).int32(partition).done()
}

export function encodeGroupMetadataKey(group: string): Buffer {
  return new Out().int16(GROUP_METADATA_KEY_VERSION).string(group).done()
}

/** Version 3, or version 1 when the commit has an explicit expire timestamp (old OffsetCommit retention). */
export function encodeOffsetCommitValue(v: OffsetCommitValue): Buffer {
  const out = new Out()
  if (v.expireTimestamp >= 0) {
    return out.int16(OFFSET_COMMIT_VALUE_EXPIRING_VERSION).int64(v.offset).string(v.metadata).int64(v.commitTimestamp).int64(v.expireTimestamp).done()
  }
  return out.int16(OFFSET_COMMIT_VALUE_VERSION).int64(v.offset).int32(v.leaderEpoch).string(v.metadata).int64(v.commitTimestamp).done()
}

export function encodeGroupMetadataValue(v: GroupMetadataValue): Buffer {
  const out = new Out()
  out.int16(GROUP_METADATA_VALUE_VERSION).string(v.protocolType).int32(v.generation).string(v.protocol).string(v.leader).int64(v.currentStateTimestamp)
  out.int32(v.members.length)
  for (const m of v.members) {
    out.string(m.memberId).string(m.groupInstanceId).string(m.clientId).string(m.clientHost)
    out.int32(m.rebalanceTimeout).int32(m.sessionTimeout).bytes(m.subscription).bytes(m.assignment)
  }
  return out.done()
}

// ---- reading -------------------------------------------------------------------------------------

class In {
  pos = 0
  constructor(
    readonly buf: Buffer,
    readonly flexible = false,
  ) {}
  need(n: number): void {
    if (n < 0 || this.pos + n > this.buf.length) throw new CoordinatorRecordError(`record ends early: need ${n} bytes at ${this.pos} of ${this.buf.length}`)
  }
  int16(): number {
    this.need(2)
    const v = this.buf.readInt16BE(this.pos)
    this.pos += 2
    return v
  }
  int32(): number {
    this.need(4)
    const v = this.buf.readInt32BE(this.pos)
    this.pos += 4
    return v
  }
  int64(): bigint {
    this.need(8)
    const v = this.buf.readBigInt64BE(this.pos)
    this.pos += 8
    return v
  }
  uvarint(): number {
    let value = 0
    for (let shift = 0; shift < 35; shift += 7) {
      this.need(1)
      const b = this.buf[this.pos++]!
      value += (b & 0x7f) * 2 ** shift
      if ((b & 0x80) === 0) return value
    }
    throw new CoordinatorRecordError('varint too long')
  }
  /** Length of a string/bytes/array, -1 for null, in this struct's (flexible or not) encoding. */
  private length(classicWidth: 2 | 4): number {
    if (this.flexible) return this.uvarint() - 1
    return classicWidth === 2 ? this.int16() : this.int32()
  }
  nullableString(): string | null {
    const len = this.length(2)
    if (len < -1) throw new CoordinatorRecordError(`negative string length ${len}`)
    if (len === -1) return null
    this.need(len)
    const s = this.buf.toString('utf8', this.pos, this.pos + len)
    this.pos += len
    return s
  }
  string(): string {
    const s = this.nullableString()
    if (s === null) throw new CoordinatorRecordError('null in a non-nullable string field')
    return s
  }
  bytes(): Buffer {
    const len = this.length(4)
    if (len < 0) throw new CoordinatorRecordError(`bad bytes length ${len}`)
    this.need(len)
    const b = Buffer.from(this.buf.subarray(this.pos, this.pos + len))
    this.pos += len
    return b
  }
  arrayLength(elementMinBytes: number): number {
    const n = this.length(4)
    if (n < 0) throw new CoordinatorRecordError(`bad array length ${n}`)
    // Each element takes at least elementMinBytes: a huge count cannot make us loop or allocate.
    this.need(n * elementMinBytes)
    return n
  }
  taggedFields(): void {
    if (!this.flexible) return
    const count = this.uvarint()
    for (let i = 0; i < count; i++) {
      this.uvarint()
      const size = this.uvarint()
      this.need(size)
      this.pos += size
    }
  }
}

export function decodeGroupRecordKey(buf: Buffer): GroupRecordKey {
  const r = new In(buf)
  const version = r.int16()
  if (version === 0 || version === 1) {
    const group = r.string()
    const topic = r.string()
    const partition = r.int32()
    return { type: 'offset-commit', group, topic, partition }
  }
  if (version === 2) return { type: 'group-metadata', group: r.string() }
  return { type: 'unknown', version }
}

export function decodeOffsetCommitValue(buf: Buffer): OffsetCommitValue {
  const version = new In(buf).int16()
  if (version < 0 || version > 4) throw new CoordinatorRecordError(`unknown OffsetCommitValue version ${version}`)
  const r = new In(buf, version >= 4)
  r.pos = 2
  const offset = r.int64()
  const leaderEpoch = version >= 3 ? r.int32() : -1
  const metadata = r.string()
  const commitTimestamp = Number(r.int64())
  const expireTimestamp = version === 1 ? Number(r.int64()) : -1
  r.taggedFields()
  return { offset, leaderEpoch, metadata, commitTimestamp, expireTimestamp }
}

export function decodeGroupMetadataValue(buf: Buffer): GroupMetadataValue {
  const version = new In(buf).int16()
  if (version < 0 || version > 4) throw new CoordinatorRecordError(`unknown GroupMetadataValue version ${version}`)
  const r = new In(buf, version >= 4)
  r.pos = 2
  const protocolType = r.string()
  const generation = r.int32()
  const protocol = r.nullableString()
  const leader = r.nullableString()
  const currentStateTimestamp = version >= 2 ? Number(r.int64()) : -1
  // A member is at least two 1-byte compact strings (flexible) or 2-byte lengths, plus ints and bytes.
  const count = r.arrayLength(version >= 4 ? 14 : 20)
  const members: GroupMemberMetadata[] = []
  for (let i = 0; i < count; i++) {
    const memberId = r.string()
    const groupInstanceId = version >= 3 ? r.nullableString() : null
    const clientId = r.string()
    const clientHost = r.string()
    const sessionOrRebalance = r.int32()
    let rebalanceTimeout: number
    let sessionTimeout: number
    if (version >= 1) {
      rebalanceTimeout = sessionOrRebalance
      sessionTimeout = r.int32()
    } else {
      sessionTimeout = sessionOrRebalance
      rebalanceTimeout = sessionOrRebalance
    }
    const subscription = r.bytes()
    const assignment = r.bytes()
    r.taggedFields()
    members.push({ memberId, groupInstanceId, clientId, clientHost, rebalanceTimeout, sessionTimeout, subscription, assignment })
  }
  r.taggedFields()
  return { protocolType, generation, protocol, leader, currentStateTimestamp, members }
}
