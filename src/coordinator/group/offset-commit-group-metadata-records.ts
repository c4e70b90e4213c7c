// The records of __consumer_offsets, byte for byte as Kafka writes them, so Kafka's own tools
// (kafka-console-consumer with the offsets formatter, kafka-dump-log) can read a Skein partition.
//
// The formats are Kafka's JSON definitions (scripts/coordinator-records/group-coordinator/), turned
// into ./generated/*.gen.ts by `npm run gen:protocol`. This file only picks the versions to write
// (Kafka's) and maps the generated structs to the coordinator's types (numbers for timestamps).
//
// Framing (Kafka's): a key is an int16 version and then the key struct; the version also names the
// record type: 0 and 1 OffsetCommitKey (group, topic, partition), 2 GroupMetadataKey (group), 3-8 the
// KIP-848 consumer-group records (consumer-group-records.ts), 9-14 the KIP-932 share-group records
// (share-group-records.ts); 15 (ShareGroupStatePartitionMetadata) and up are not read (`unknown`). A
// value is an int16 version and then the value struct in that version; a null value is a tombstone:
// the key's offset or group is deleted (and the cleaner drops it).
//
//   OffsetCommitValue   v0: offset | metadata | commitTimestamp; v1: + expireTimestamp; v2: as v0;
//                       v3: offset | leaderEpoch | metadata | commitTimestamp; v4: v3, flexible
//   GroupMetadataValue  protocolType | generation | protocol | leader | currentStateTimestamp (v2+) |
//                       members [memberId | groupInstanceId (v3+) | clientId | clientHost |
//                       rebalanceTimeout (v1+) | sessionTimeout | subscription | assignment]; v4 flexible
//
// We write key v1 + value v3 (v1 when the commit carries an explicit expire timestamp, as Kafka) and
// group metadata v3, and read every version above. Recovery: these are ordinary records in a compacted
// partition; the coordinator rebuilds its state by replaying them in offset order, so the last record
// per key wins. The generated decoders check every length against the bytes left before allocating;
// malformed input throws CoordinatorRecordError.
import { CoordinatorRecordError, recordCodec } from '../runtime/record-error.js'
import type { ConsumerGroupRecordType } from './consumer-group-records.js'
import { createGroupMetadataValue, createMemberMetadata } from './generated/group-metadata-value.gen.js'
import { createOffsetCommitValue } from './generated/offset-commit-value.gen.js'
import {
  decodeGroupCoordinatorRecordKey,
  decodeGroupMetadataValueRecord,
  decodeOffsetCommitValueRecord,
  encodeGroupMetadataKeyRecord,
  encodeGroupMetadataValueRecord,
  encodeOffsetCommitKeyRecord,
  encodeOffsetCommitValueRecord,
} from './generated/records.gen.js'

export { CoordinatorRecordError }

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

/** A key of a KIP-848 consumer-group record (consumer-group-records.ts); memberId for the per-member ones. */
export interface ConsumerGroupKey {
  type: 'consumer-group'
  record: ConsumerGroupRecordType
  group: string
  memberId: string | null
}

/** A key of a KIP-932 share-group record (share-group-records.ts): the same six kinds as a consumer group's. */
export interface ShareGroupKey {
  type: 'share-group'
  record: ConsumerGroupRecordType | 'state-partition-metadata'
  group: string
  memberId: string | null
}

/** A key of a record type this coordinator does not handle (share-group state partition metadata, streams groups...). */
export interface UnknownKey {
  type: 'unknown'
  version: number
}

export type GroupRecordKey = OffsetCommitKey | GroupMetadataKey | ConsumerGroupKey | ShareGroupKey | UnknownKey

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
  /** -1 in versions before 2. */
  currentStateTimestamp: number
  members: GroupMemberMetadata[]
}

// ---- writing -------------------------------------------------------------------------------------

export function encodeOffsetCommitKey(group: string, topic: string, partition: number): Buffer {
  return recordCodec('OffsetCommitKey', () => encodeOffsetCommitKeyRecord({ group, topic, partition }, OFFSET_COMMIT_KEY_VERSION))
}

export function encodeGroupMetadataKey(group: string): Buffer {
  return recordCodec('GroupMetadataKey', () => encodeGroupMetadataKeyRecord({ group }, GROUP_METADATA_KEY_VERSION))
}

/** Version 3, or version 1 when the commit has an explicit expire timestamp (old OffsetCommit retention). */
export function encodeOffsetCommitValue(v: OffsetCommitValue): Buffer {
  const version = v.expireTimestamp >= 0 ? OFFSET_COMMIT_VALUE_EXPIRING_VERSION : OFFSET_COMMIT_VALUE_VERSION
  const value = createOffsetCommitValue({
    offset: v.offset,
    leaderEpoch: v.leaderEpoch,
    metadata: v.metadata,
    commitTimestamp: BigInt(v.commitTimestamp),
    expireTimestamp: BigInt(v.expireTimestamp),
  })
  return recordCodec('OffsetCommitValue', () => encodeOffsetCommitValueRecord(value, version))
}

export function encodeGroupMetadataValue(v: GroupMetadataValue): Buffer {
  const value = createGroupMetadataValue({
    protocolType: v.protocolType,
    generation: v.generation,
    protocol: v.protocol,
    leader: v.leader,
    currentStateTimestamp: BigInt(v.currentStateTimestamp),
    members: v.members.map((m) => createMemberMetadata({ ...m })),
  })
  return recordCodec('GroupMetadataValue', () => encodeGroupMetadataValueRecord(value, GROUP_METADATA_VALUE_VERSION))
}

// ---- reading -------------------------------------------------------------------------------------

export function decodeGroupRecordKey(buf: Buffer): GroupRecordKey {
  const key = recordCodec('__consumer_offsets key', () => decodeGroupCoordinatorRecordKey(buf))
  switch (key.type) {
    case 'OffsetCommit':
      return { type: 'offset-commit', group: key.key.group, topic: key.key.topic, partition: key.key.partition }
    case 'GroupMetadata':
      return { type: 'group-metadata', group: key.key.group }
    case 'ConsumerGroupMetadata':
      return { type: 'consumer-group', record: 'metadata', group: key.key.groupId, memberId: null }
    case 'ConsumerGroupPartitionMetadata':
      return { type: 'consumer-group', record: 'partition-metadata', group: key.key.groupId, memberId: null }
    case 'ConsumerGroupMemberMetadata':
      return { type: 'consumer-group', record: 'member-metadata', group: key.key.groupId, memberId: key.key.memberId }
    case 'ConsumerGroupTargetAssignmentMetadata':
      return { type: 'consumer-group', record: 'target-assignment-metadata', group: key.key.groupId, memberId: null }
    case 'ConsumerGroupTargetAssignmentMember':
      return { type: 'consumer-group', record: 'target-assignment-member', group: key.key.groupId, memberId: key.key.memberId }
    case 'ConsumerGroupCurrentMemberAssignment':
      return { type: 'consumer-group', record: 'current-member-assignment', group: key.key.groupId, memberId: key.key.memberId }
    case 'ShareGroupMetadata':
      return { type: 'share-group', record: 'metadata', group: key.key.groupId, memberId: null }
    case 'ShareGroupPartitionMetadata':
      return { type: 'share-group', record: 'partition-metadata', group: key.key.groupId, memberId: null }
    case 'ShareGroupMemberMetadata':
      return { type: 'share-group', record: 'member-metadata', group: key.key.groupId, memberId: key.key.memberId }
    case 'ShareGroupTargetAssignmentMetadata':
      return { type: 'share-group', record: 'target-assignment-metadata', group: key.key.groupId, memberId: null }
    case 'ShareGroupTargetAssignmentMember':
      return { type: 'share-group', record: 'target-assignment-member', group: key.key.groupId, memberId: key.key.memberId }
    case 'ShareGroupCurrentMemberAssignment':
      return { type: 'share-group', record: 'current-member-assignment', group: key.key.groupId, memberId: key.key.memberId }
    case 'ShareGroupStatePartitionMetadata':
      return { type: 'share-group', record: 'state-partition-metadata', group: key.key.groupId, memberId: null }
    case 'unknown':
      return { type: 'unknown', version: key.version }
  }
}

export function decodeOffsetCommitValue(buf: Buffer): OffsetCommitValue {
  const { value: v } = recordCodec('OffsetCommitValue', () => decodeOffsetCommitValueRecord(buf))
  return { offset: v.offset, leaderEpoch: v.leaderEpoch, metadata: v.metadata, commitTimestamp: Number(v.commitTimestamp), expireTimestamp: Number(v.expireTimestamp) }
}

export function decodeGroupMetadataValue(buf: Buffer): GroupMetadataValue {
  const { value: v } = recordCodec('GroupMetadataValue', () => decodeGroupMetadataValueRecord(buf))
  return {
    protocolType: v.protocolType,
    generation: v.generation,
    protocol: v.protocol,
    leader: v.leader,
    currentStateTimestamp: Number(v.currentStateTimestamp),
    members: v.members.map((m) => ({
      memberId: m.memberId,
      groupInstanceId: m.groupInstanceId,
      clientId: m.clientId,
      clientHost: m.clientHost,
      // Absent before v1 (-1): the session timeout stood for both, as in Kafka's loader.
      rebalanceTimeout: m.rebalanceTimeout === -1 ? m.sessionTimeout : m.rebalanceTimeout,
      sessionTimeout: m.sessionTimeout,
      subscription: m.subscription,
      assignment: m.assignment,
    })),
  }
}
