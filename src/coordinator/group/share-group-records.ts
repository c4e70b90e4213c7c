// The KIP-932 share-group records of __consumer_offsets (key versions 9-14), byte for byte in the layout
// of Kafka's JSON definitions (scripts/coordinator-records/group-coordinator/ShareGroup*.json, generated
// into ./generated/share-group-*.gen.ts; each value has one version, 0, flexible). A null value is a
// tombstone. They mirror the consumer-group records (consumer-group-records.ts) without what share
// groups do not have: no instance id, assignor or rebalance timeout, no partitions pending revocation
// (share-group members may share partitions, so nothing is revoked before it is given to another).
//
//   key  9 ShareGroupPartitionMetadata (group)                value: [topicId | topicName | numPartitions | racks]
//   key 10 ShareGroupMemberMetadata (group, member)           value: rackId | clientId | clientHost | subscribedTopicNames
//   key 11 ShareGroupMetadata (group)                         value: group epoch
//   key 12 ShareGroupTargetAssignmentMetadata (group)         value: assignment epoch
//   key 13 ShareGroupTargetAssignmentMember (group, member)   value: [topicId | partitions]
//   key 14 ShareGroupCurrentMemberAssignment (group, member)  value: memberEpoch | previousMemberEpoch | state |
//                                                                    assignedPartitions
//   key 15 ShareGroupStatePartitionMetadata (group)           value: initializing [topicId | topicName | partitions] |
//                                                                    initialized [same] | deleting [topicId | topicName]
//          (which share-partitions have state in the share coordinators: written before their state is
//          initialized, as initializing, and after, as initialized, so a group's state can be found and
//          deleted without asking about every partition; Skein's own definition after KIP-932's record;
//          Skein writes `deleting` empty: a deleted topic's id stays until the group goes)
//
// Assignments are written topic by topic in topic id order, partitions ascending (assignmentEntries).
// Recovery: replayed in offset order with the other records of the partition (group-coordinator-state.ts);
// the last record per key wins.
import { recordCodec } from '../runtime/record-error.js'
import type { CoordinatorRecord } from '../runtime/partition-writer.js'
import { assignmentEntries, assignmentFromEntries, memberStateFromValue, type Assignment, type MemberState, type SubscribedTopic } from './consumer-group-records.js'
import { createShareGroupCurrentMemberAssignmentValue, createTopicPartitions } from './generated/share-group-current-member-assignment-value.gen.js'
import { createShareGroupMemberMetadataValue } from './generated/share-group-member-metadata-value.gen.js'
import { createShareGroupPartitionMetadataValue, createTopicMetadata } from './generated/share-group-partition-metadata-value.gen.js'
import { createShareGroupStatePartitionMetadataValue, createTopicInfo, createTopicPartitionsInfo } from './generated/share-group-state-partition-metadata-value.gen.js'
import { createShareGroupTargetAssignmentMemberValue, createTopicPartition } from './generated/share-group-target-assignment-member-value.gen.js'
import {
  decodeShareGroupCurrentMemberAssignmentValueRecord,
  decodeShareGroupMemberMetadataValueRecord,
  decodeShareGroupMetadataValueRecord,
  decodeShareGroupPartitionMetadataValueRecord,
  decodeShareGroupStatePartitionMetadataValueRecord,
  decodeShareGroupTargetAssignmentMemberValueRecord,
  decodeShareGroupTargetAssignmentMetadataValueRecord,
  encodeShareGroupCurrentMemberAssignmentKeyRecord,
  encodeShareGroupCurrentMemberAssignmentValueRecord,
  encodeShareGroupMemberMetadataKeyRecord,
  encodeShareGroupMemberMetadataValueRecord,
  encodeShareGroupMetadataKeyRecord,
  encodeShareGroupMetadataValueRecord,
  encodeShareGroupPartitionMetadataKeyRecord,
  encodeShareGroupPartitionMetadataValueRecord,
  encodeShareGroupStatePartitionMetadataKeyRecord,
  encodeShareGroupStatePartitionMetadataValueRecord,
  encodeShareGroupTargetAssignmentMemberKeyRecord,
  encodeShareGroupTargetAssignmentMemberValueRecord,
  encodeShareGroupTargetAssignmentMetadataKeyRecord,
  encodeShareGroupTargetAssignmentMetadataValueRecord,
} from './generated/records.gen.js'

export const SHARE_GROUP_PARTITION_METADATA_KEY_VERSION = 9
export const SHARE_GROUP_MEMBER_METADATA_KEY_VERSION = 10
export const SHARE_GROUP_METADATA_KEY_VERSION = 11
export const SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION = 12
export const SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION = 13
export const SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION = 14
export const SHARE_GROUP_STATE_PARTITION_METADATA_KEY_VERSION = 15
const VALUE_VERSION = 0

export interface ShareMemberSubscription {
  rackId: string | null
  clientId: string
  clientHost: string
  subscribedTopicNames: readonly string[]
}

export interface ShareMemberAssignmentState {
  memberEpoch: number
  previousMemberEpoch: number
  state: MemberState
  assignedPartitions: Assignment
}

/** Share-partitions of one topic: its name (as last known) and partitions. */
export interface StateTopicPartitions {
  topicName: string
  partitions: Set<number>
}

/** A share group's ShareGroupStatePartitionMetadata: topic id -> share-partitions, by how far their state is. */
export interface ShareStatePartitionMetadata {
  /** InitializeShareGroupState asked for, not yet known to have succeeded. */
  initializing: Map<string, StateTopicPartitions>
  initialized: Map<string, StateTopicPartitions>
  /** Topic id -> name: their state is being deleted. */
  deleting: Map<string, string>
}

export function emptyStatePartitionMetadata(): ShareStatePartitionMetadata {
  return { initializing: new Map(), initialized: new Map(), deleting: new Map() }
}

// ---- writing -------------------------------------------------------------------------------------

function groupEpochKey(groupId: string): Buffer {
  return recordCodec('ShareGroupMetadataKey', () => encodeShareGroupMetadataKeyRecord({ groupId }, SHARE_GROUP_METADATA_KEY_VERSION))
}

export function shareGroupEpochRecord(groupId: string, epoch: number): CoordinatorRecord {
  return { key: groupEpochKey(groupId), value: recordCodec('ShareGroupMetadataValue', () => encodeShareGroupMetadataValueRecord({ epoch }, VALUE_VERSION)) }
}

export function shareGroupEpochTombstone(groupId: string): CoordinatorRecord {
  return { key: groupEpochKey(groupId), value: null }
}

function subscriptionMetadataKey(groupId: string): Buffer {
  return recordCodec('ShareGroupPartitionMetadataKey', () => encodeShareGroupPartitionMetadataKeyRecord({ groupId }, SHARE_GROUP_PARTITION_METADATA_KEY_VERSION))
}

export function shareSubscriptionMetadataRecord(groupId: string, topics: readonly SubscribedTopic[]): CoordinatorRecord {
  const value = createShareGroupPartitionMetadataValue({
    topics: [...topics]
      .sort((a, b) => (a.topicName < b.topicName ? -1 : a.topicName > b.topicName ? 1 : 0))
      .map((t) => createTopicMetadata({ topicId: t.topicId, topicName: t.topicName, numPartitions: t.numPartitions, partitionMetadata: [] })),
  })
  return { key: subscriptionMetadataKey(groupId), value: recordCodec('ShareGroupPartitionMetadataValue', () => encodeShareGroupPartitionMetadataValueRecord(value, VALUE_VERSION)) }
}

export function shareSubscriptionMetadataTombstone(groupId: string): CoordinatorRecord {
  return { key: subscriptionMetadataKey(groupId), value: null }
}

function memberMetadataKey(groupId: string, memberId: string): Buffer {
  return recordCodec('ShareGroupMemberMetadataKey', () => encodeShareGroupMemberMetadataKeyRecord({ groupId, memberId }, SHARE_GROUP_MEMBER_METADATA_KEY_VERSION))
}

export function shareMemberSubscriptionRecord(groupId: string, memberId: string, m: ShareMemberSubscription): CoordinatorRecord {
  const value = createShareGroupMemberMetadataValue({ rackId: m.rackId, clientId: m.clientId, clientHost: m.clientHost, subscribedTopicNames: [...m.subscribedTopicNames] })
  return { key: memberMetadataKey(groupId, memberId), value: recordCodec('ShareGroupMemberMetadataValue', () => encodeShareGroupMemberMetadataValueRecord(value, VALUE_VERSION)) }
}

export function shareMemberSubscriptionTombstone(groupId: string, memberId: string): CoordinatorRecord {
  return { key: memberMetadataKey(groupId, memberId), value: null }
}

function targetEpochKey(groupId: string): Buffer {
  return recordCodec('ShareGroupTargetAssignmentMetadataKey', () => encodeShareGroupTargetAssignmentMetadataKeyRecord({ groupId }, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION))
}

export function shareTargetAssignmentEpochRecord(groupId: string, assignmentEpoch: number): CoordinatorRecord {
  return { key: targetEpochKey(groupId), value: recordCodec('ShareGroupTargetAssignmentMetadataValue', () => encodeShareGroupTargetAssignmentMetadataValueRecord({ assignmentEpoch }, VALUE_VERSION)) }
}

export function shareTargetAssignmentEpochTombstone(groupId: string): CoordinatorRecord {
  return { key: targetEpochKey(groupId), value: null }
}

function targetMemberKey(groupId: string, memberId: string): Buffer {
  return recordCodec('ShareGroupTargetAssignmentMemberKey', () => encodeShareGroupTargetAssignmentMemberKeyRecord({ groupId, memberId }, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION))
}

export function shareTargetAssignmentRecord(groupId: string, memberId: string, a: Assignment): CoordinatorRecord {
  const value = createShareGroupTargetAssignmentMemberValue({ topicPartitions: assignmentEntries(a).map(([topicId, partitions]) => createTopicPartition({ topicId, partitions })) })
  return { key: targetMemberKey(groupId, memberId), value: recordCodec('ShareGroupTargetAssignmentMemberValue', () => encodeShareGroupTargetAssignmentMemberValueRecord(value, VALUE_VERSION)) }
}

export function shareTargetAssignmentTombstone(groupId: string, memberId: string): CoordinatorRecord {
  return { key: targetMemberKey(groupId, memberId), value: null }
}

function currentAssignmentKey(groupId: string, memberId: string): Buffer {
  return recordCodec('ShareGroupCurrentMemberAssignmentKey', () => encodeShareGroupCurrentMemberAssignmentKeyRecord({ groupId, memberId }, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION))
}

export function shareCurrentAssignmentRecord(groupId: string, memberId: string, m: ShareMemberAssignmentState): CoordinatorRecord {
  const value = createShareGroupCurrentMemberAssignmentValue({
    memberEpoch: m.memberEpoch,
    previousMemberEpoch: m.previousMemberEpoch,
    state: m.state,
    assignedPartitions: assignmentEntries(m.assignedPartitions).map(([topicId, partitions]) => createTopicPartitions({ topicId, partitions })),
  })
  return { key: currentAssignmentKey(groupId, memberId), value: recordCodec('ShareGroupCurrentMemberAssignmentValue', () => encodeShareGroupCurrentMemberAssignmentValueRecord(value, VALUE_VERSION)) }
}

export function shareCurrentAssignmentTombstone(groupId: string, memberId: string): CoordinatorRecord {
  return { key: currentAssignmentKey(groupId, memberId), value: null }
}

function statePartitionMetadataKey(groupId: string): Buffer {
  return recordCodec('ShareGroupStatePartitionMetadataKey', () => encodeShareGroupStatePartitionMetadataKeyRecord({ groupId }, SHARE_GROUP_STATE_PARTITION_METADATA_KEY_VERSION))
}

const byTopicId = <T>(m: ReadonlyMap<string, T>): [string, T][] => [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

export function shareStatePartitionMetadataRecord(groupId: string, m: ShareStatePartitionMetadata): CoordinatorRecord {
  const topics = (t: ReadonlyMap<string, StateTopicPartitions>) =>
    byTopicId(t).map(([topicId, v]) => createTopicPartitionsInfo({ topicId, topicName: v.topicName, partitions: [...v.partitions].sort((a, b) => a - b) }))
  const value = createShareGroupStatePartitionMetadataValue({
    initializingTopics: topics(m.initializing),
    initializedTopics: topics(m.initialized),
    deletingTopics: byTopicId(m.deleting).map(([topicId, topicName]) => createTopicInfo({ topicId, topicName })),
  })
  return { key: statePartitionMetadataKey(groupId), value: recordCodec('ShareGroupStatePartitionMetadataValue', () => encodeShareGroupStatePartitionMetadataValueRecord(value, VALUE_VERSION)) }
}

export function shareStatePartitionMetadataTombstone(groupId: string): CoordinatorRecord {
  return { key: statePartitionMetadataKey(groupId), value: null }
}

// ---- reading -------------------------------------------------------------------------------------

export function decodeShareStatePartitionMetadata(buf: Buffer): ShareStatePartitionMetadata {
  const { value: v } = recordCodec('ShareGroupStatePartitionMetadataValue', () => decodeShareGroupStatePartitionMetadataValueRecord(buf))
  const topics = (list: readonly { topicId: string; topicName: string; partitions: number[] }[]) => new Map(list.map((t) => [t.topicId, { topicName: t.topicName, partitions: new Set(t.partitions) }]))
  return { initializing: topics(v.initializingTopics), initialized: topics(v.initializedTopics), deleting: new Map(v.deletingTopics.map((t) => [t.topicId, t.topicName])) }
}

export function decodeShareGroupEpoch(buf: Buffer): number {
  return recordCodec('ShareGroupMetadataValue', () => decodeShareGroupMetadataValueRecord(buf)).value.epoch
}

export function decodeShareSubscriptionMetadata(buf: Buffer): SubscribedTopic[] {
  const { value } = recordCodec('ShareGroupPartitionMetadataValue', () => decodeShareGroupPartitionMetadataValueRecord(buf))
  return value.topics.map((t) => ({ topicId: t.topicId, topicName: t.topicName, numPartitions: t.numPartitions }))
}

export function decodeShareMemberSubscription(buf: Buffer): ShareMemberSubscription {
  const { value: v } = recordCodec('ShareGroupMemberMetadataValue', () => decodeShareGroupMemberMetadataValueRecord(buf))
  return { rackId: v.rackId, clientId: v.clientId, clientHost: v.clientHost, subscribedTopicNames: v.subscribedTopicNames }
}

export function decodeShareTargetAssignmentEpoch(buf: Buffer): number {
  return recordCodec('ShareGroupTargetAssignmentMetadataValue', () => decodeShareGroupTargetAssignmentMetadataValueRecord(buf)).value.assignmentEpoch
}

export function decodeShareTargetAssignment(buf: Buffer): Map<string, Set<number>> {
  return assignmentFromEntries(recordCodec('ShareGroupTargetAssignmentMemberValue', () => decodeShareGroupTargetAssignmentMemberValueRecord(buf)).value.topicPartitions)
}

export function decodeShareCurrentAssignment(buf: Buffer): ShareMemberAssignmentState {
  const { value: v } = recordCodec('ShareGroupCurrentMemberAssignmentValue', () => decodeShareGroupCurrentMemberAssignmentValueRecord(buf))
  return { memberEpoch: v.memberEpoch, previousMemberEpoch: v.previousMemberEpoch, state: memberStateFromValue(v.state), assignedPartitions: assignmentFromEntries(v.assignedPartitions) }
}
