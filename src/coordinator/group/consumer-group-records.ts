// The KIP-848 consumer-group records of __consumer_offsets (key versions 3-8), byte for byte as Kafka
// writes them, mapped to the coordinator's types. The formats are Kafka's JSON definitions
// (scripts/coordinator-records/group-coordinator/ConsumerGroup*.json), generated into
// ./generated/*.gen.ts; each value has one version (0, flexible). A null value is a tombstone.
//
//   key 3 ConsumerGroupMetadata (group)                       value: group epoch
//   key 4 ConsumerGroupPartitionMetadata (group)              value: [topicId | topicName | numPartitions | racks]
//   key 5 ConsumerGroupMemberMetadata (group, member)         value: instanceId | rackId | clientId | clientHost |
//                                                                    subscribedTopicNames | subscribedTopicRegex |
//                                                                    rebalanceTimeoutMs | serverAssignor
//   key 6 ConsumerGroupTargetAssignmentMetadata (group)       value: assignment epoch
//   key 7 ConsumerGroupTargetAssignmentMember (group, member) value: [topicId | partitions]
//   key 8 ConsumerGroupCurrentMemberAssignment (group, member) value: memberEpoch | previousMemberEpoch | state |
//                                                                    assignedPartitions | partitionsPendingRevocation
//
// Assignments are written topic by topic in topic id order, partitions ascending, so the same state
// always makes the same bytes. Recovery: replayed in offset order with the other records of the
// partition (group-coordinator-state.ts); the last record per key wins.
import { recordCodec } from '../runtime/record-error.js'
import { createConsumerGroupCurrentMemberAssignmentValue, createTopicPartitions } from './generated/consumer-group-current-member-assignment-value.gen.js'
import { createConsumerGroupMemberMetadataValue } from './generated/consumer-group-member-metadata-value.gen.js'
import { createConsumerGroupPartitionMetadataValue, createTopicMetadata } from './generated/consumer-group-partition-metadata-value.gen.js'
import { createConsumerGroupTargetAssignmentMemberValue, createTopicPartition } from './generated/consumer-group-target-assignment-member-value.gen.js'
import {
  decodeConsumerGroupCurrentMemberAssignmentValueRecord,
  decodeConsumerGroupMemberMetadataValueRecord,
  decodeConsumerGroupMetadataValueRecord,
  decodeConsumerGroupPartitionMetadataValueRecord,
  decodeConsumerGroupTargetAssignmentMemberValueRecord,
  decodeConsumerGroupTargetAssignmentMetadataValueRecord,
  encodeConsumerGroupCurrentMemberAssignmentKeyRecord,
  encodeConsumerGroupCurrentMemberAssignmentValueRecord,
  encodeConsumerGroupMemberMetadataKeyRecord,
  encodeConsumerGroupMemberMetadataValueRecord,
  encodeConsumerGroupMetadataKeyRecord,
  encodeConsumerGroupMetadataValueRecord,
  encodeConsumerGroupPartitionMetadataKeyRecord,
  encodeConsumerGroupPartitionMetadataValueRecord,
  encodeConsumerGroupTargetAssignmentMemberKeyRecord,
  encodeConsumerGroupTargetAssignmentMemberValueRecord,
  encodeConsumerGroupTargetAssignmentMetadataKeyRecord,
  encodeConsumerGroupTargetAssignmentMetadataValueRecord,
} from './generated/records.gen.js'
import type { CoordinatorRecord } from '../runtime/partition-writer.js'
import type { TopicsView } from './types.js'

export const CONSUMER_GROUP_METADATA_KEY_VERSION = 3
export const CONSUMER_GROUP_PARTITION_METADATA_KEY_VERSION = 4
export const CONSUMER_GROUP_MEMBER_METADATA_KEY_VERSION = 5
export const CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION = 6
export const CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION = 7
export const CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION = 8
const VALUE_VERSION = 0

/** Partitions by topic id (Kafka's Map<Uuid, Set<Integer>>). */
export type Assignment = ReadonlyMap<string, ReadonlySet<number>>

export const EMPTY_ASSIGNMENT: Assignment = new Map()

/** Kafka's MemberState: where a member is in its reconciliation towards the target assignment. */
export const MemberState = {
  STABLE: 0,
  UNREVOKED_PARTITIONS: 1,
  UNRELEASED_PARTITIONS: 2,
  UNKNOWN: 127,
} as const
export type MemberState = (typeof MemberState)[keyof typeof MemberState]

export function memberStateFromValue(v: number): MemberState {
  return v === 0 || v === 1 || v === 2 ? v : MemberState.UNKNOWN
}

/** A subscribed topic as the group saw it when its assignment was computed. */
export interface SubscribedTopic {
  topicId: string
  topicName: string
  numPartitions: number
}

/** The topics the members subscribe to that exist now, with their ids and partition counts (consumer and share groups). */
export function subscribedTopics(members: Iterable<{ subscribedTopicNames: readonly string[] }>, topics: Pick<TopicsView, 'topicId' | 'partitionCount'>): Map<string, SubscribedTopic> {
  const out = new Map<string, SubscribedTopic>()
  for (const m of members) {
    for (const name of m.subscribedTopicNames) {
      if (out.has(name)) continue
      const topicId = topics.topicId(name)
      const numPartitions = topics.partitionCount(name)
      if (topicId !== undefined && numPartitions !== undefined) out.set(name, { topicId, topicName: name, numPartitions })
    }
  }
  return out
}

/** Whether two views of the subscribed topics agree (same topics, ids and partition counts): no new assignment needed. */
export function sameSubscribedTopics(a: ReadonlyMap<string, SubscribedTopic>, b: ReadonlyMap<string, SubscribedTopic>): boolean {
  if (a.size !== b.size) return false
  for (const [name, t] of a) {
    const o = b.get(name)
    if (o === undefined || o.topicId !== t.topicId || o.numPartitions !== t.numPartitions) return false
  }
  return true
}

export interface MemberSubscription {
  instanceId: string | null
  rackId: string | null
  clientId: string
  clientHost: string
  subscribedTopicNames: readonly string[]
  subscribedTopicRegex: string | null
  rebalanceTimeoutMs: number
  serverAssignor: string | null
}

export interface MemberAssignmentState {
  memberEpoch: number
  previousMemberEpoch: number
  state: MemberState
  assignedPartitions: Assignment
  partitionsPendingRevocation: Assignment
}

export type ConsumerGroupRecordType = 'metadata' | 'partition-metadata' | 'member-metadata' | 'target-assignment-metadata' | 'target-assignment-member' | 'current-member-assignment'

// ---- assignments -----------------------------------------------------------------------------------

/** [topicId, sorted partitions] in topic id order. */
export function assignmentEntries(a: Assignment): [string, number[]][] {
  return [...a]
    .filter(([, ps]) => ps.size > 0)
    .sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0))
    .map(([t, ps]) => [t, [...ps].sort((x, y) => x - y)])
}

export function assignmentFromEntries(entries: readonly { topicId: string; partitions: readonly number[] }[]): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>()
  for (const e of entries) {
    if (e.partitions.length === 0) continue
    let set = out.get(e.topicId)
    if (set === undefined) out.set(e.topicId, (set = new Set()))
    for (const p of e.partitions) set.add(p)
  }
  return out
}

export function assignmentsEqual(a: Assignment, b: Assignment): boolean {
  const x = assignmentEntries(a)
  const y = assignmentEntries(b)
  return x.length === y.length && x.every(([t, ps], i) => y[i]![0] === t && ps.length === y[i]![1].length && ps.every((p, j) => y[i]![1][j] === p))
}

// ---- writing -------------------------------------------------------------------------------------

export function groupEpochRecord(groupId: string, epoch: number): CoordinatorRecord {
  return {
    key: recordCodec('ConsumerGroupMetadataKey', () => encodeConsumerGroupMetadataKeyRecord({ groupId }, CONSUMER_GROUP_METADATA_KEY_VERSION)),
    value: recordCodec('ConsumerGroupMetadataValue', () => encodeConsumerGroupMetadataValueRecord({ epoch }, VALUE_VERSION)),
  }
}

export function groupEpochTombstone(groupId: string): CoordinatorRecord {
  return { key: recordCodec('ConsumerGroupMetadataKey', () => encodeConsumerGroupMetadataKeyRecord({ groupId }, CONSUMER_GROUP_METADATA_KEY_VERSION)), value: null }
}

export function subscriptionMetadataRecord(groupId: string, topics: readonly SubscribedTopic[]): CoordinatorRecord {
  const value = createConsumerGroupPartitionMetadataValue({
    topics: [...topics]
      .sort((a, b) => (a.topicName < b.topicName ? -1 : a.topicName > b.topicName ? 1 : 0))
      .map((t) => createTopicMetadata({ topicId: t.topicId, topicName: t.topicName, numPartitions: t.numPartitions, partitionMetadata: [] })),
  })
  return {
    key: recordCodec('ConsumerGroupPartitionMetadataKey', () => encodeConsumerGroupPartitionMetadataKeyRecord({ groupId }, CONSUMER_GROUP_PARTITION_METADATA_KEY_VERSION)),
    value: recordCodec('ConsumerGroupPartitionMetadataValue', () => encodeConsumerGroupPartitionMetadataValueRecord(value, VALUE_VERSION)),
  }
}

export function subscriptionMetadataTombstone(groupId: string): CoordinatorRecord {
  return { key: recordCodec('ConsumerGroupPartitionMetadataKey', () => encodeConsumerGroupPartitionMetadataKeyRecord({ groupId }, CONSUMER_GROUP_PARTITION_METADATA_KEY_VERSION)), value: null }
}

function memberMetadataKey(groupId: string, memberId: string): Buffer {
  return recordCodec('ConsumerGroupMemberMetadataKey', () => encodeConsumerGroupMemberMetadataKeyRecord({ groupId, memberId }, CONSUMER_GROUP_MEMBER_METADATA_KEY_VERSION))
}

export function memberSubscriptionRecord(groupId: string, memberId: string, m: MemberSubscription): CoordinatorRecord {
  const value = createConsumerGroupMemberMetadataValue({
    instanceId: m.instanceId,
    rackId: m.rackId,
    clientId: m.clientId,
    clientHost: m.clientHost,
    subscribedTopicNames: [...m.subscribedTopicNames],
    subscribedTopicRegex: m.subscribedTopicRegex,
    rebalanceTimeoutMs: m.rebalanceTimeoutMs,
    serverAssignor: m.serverAssignor,
    classicMemberMetadata: null,
  })
  return { key: memberMetadataKey(groupId, memberId), value: recordCodec('ConsumerGroupMemberMetadataValue', () => encodeConsumerGroupMemberMetadataValueRecord(value, VALUE_VERSION)) }
}

export function memberSubscriptionTombstone(groupId: string, memberId: string): CoordinatorRecord {
  return { key: memberMetadataKey(groupId, memberId), value: null }
}

function targetEpochKey(groupId: string): Buffer {
  return recordCodec('ConsumerGroupTargetAssignmentMetadataKey', () => encodeConsumerGroupTargetAssignmentMetadataKeyRecord({ groupId }, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY_VERSION))
}

export function targetAssignmentEpochRecord(groupId: string, assignmentEpoch: number): CoordinatorRecord {
  return { key: targetEpochKey(groupId), value: recordCodec('ConsumerGroupTargetAssignmentMetadataValue', () => encodeConsumerGroupTargetAssignmentMetadataValueRecord({ assignmentEpoch }, VALUE_VERSION)) }
}

export function targetAssignmentEpochTombstone(groupId: string): CoordinatorRecord {
  return { key: targetEpochKey(groupId), value: null }
}

function targetMemberKey(groupId: string, memberId: string): Buffer {
  return recordCodec('ConsumerGroupTargetAssignmentMemberKey', () => encodeConsumerGroupTargetAssignmentMemberKeyRecord({ groupId, memberId }, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY_VERSION))
}

export function targetAssignmentRecord(groupId: string, memberId: string, a: Assignment): CoordinatorRecord {
  const value = createConsumerGroupTargetAssignmentMemberValue({ topicPartitions: assignmentEntries(a).map(([topicId, partitions]) => createTopicPartition({ topicId, partitions })) })
  return { key: targetMemberKey(groupId, memberId), value: recordCodec('ConsumerGroupTargetAssignmentMemberValue', () => encodeConsumerGroupTargetAssignmentMemberValueRecord(value, VALUE_VERSION)) }
}

export function targetAssignmentTombstone(groupId: string, memberId: string): CoordinatorRecord {
  return { key: targetMemberKey(groupId, memberId), value: null }
}

function currentAssignmentKey(groupId: string, memberId: string): Buffer {
  return recordCodec('ConsumerGroupCurrentMemberAssignmentKey', () => encodeConsumerGroupCurrentMemberAssignmentKeyRecord({ groupId, memberId }, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY_VERSION))
}

export function currentAssignmentRecord(groupId: string, memberId: string, m: MemberAssignmentState): CoordinatorRecord {
  const value = createConsumerGroupCurrentMemberAssignmentValue({
    memberEpoch: m.memberEpoch,
    previousMemberEpoch: m.previousMemberEpoch,
    state: m.state,
    assignedPartitions: assignmentEntries(m.assignedPartitions).map(([topicId, partitions]) => createTopicPartitions({ topicId, partitions })),
    partitionsPendingRevocation: assignmentEntries(m.partitionsPendingRevocation).map(([topicId, partitions]) => createTopicPartitions({ topicId, partitions })),
  })
  return { key: currentAssignmentKey(groupId, memberId), value: recordCodec('ConsumerGroupCurrentMemberAssignmentValue', () => encodeConsumerGroupCurrentMemberAssignmentValueRecord(value, VALUE_VERSION)) }
}

export function currentAssignmentTombstone(groupId: string, memberId: string): CoordinatorRecord {
  return { key: currentAssignmentKey(groupId, memberId), value: null }
}

// ---- reading -------------------------------------------------------------------------------------

export function decodeGroupEpoch(buf: Buffer): number {
  return recordCodec('ConsumerGroupMetadataValue', () => decodeConsumerGroupMetadataValueRecord(buf)).value.epoch
}

export function decodeSubscriptionMetadata(buf: Buffer): SubscribedTopic[] {
  const { value } = recordCodec('ConsumerGroupPartitionMetadataValue', () => decodeConsumerGroupPartitionMetadataValueRecord(buf))
  return value.topics.map((t) => ({ topicId: t.topicId, topicName: t.topicName, numPartitions: t.numPartitions }))
}

export function decodeMemberSubscription(buf: Buffer): MemberSubscription {
  const { value: v } = recordCodec('ConsumerGroupMemberMetadataValue', () => decodeConsumerGroupMemberMetadataValueRecord(buf))
  return {
    instanceId: v.instanceId,
    rackId: v.rackId,
    clientId: v.clientId,
    clientHost: v.clientHost,
    subscribedTopicNames: v.subscribedTopicNames,
    subscribedTopicRegex: v.subscribedTopicRegex,
    rebalanceTimeoutMs: v.rebalanceTimeoutMs,
    serverAssignor: v.serverAssignor,
  }
}

export function decodeTargetAssignmentEpoch(buf: Buffer): number {
  return recordCodec('ConsumerGroupTargetAssignmentMetadataValue', () => decodeConsumerGroupTargetAssignmentMetadataValueRecord(buf)).value.assignmentEpoch
}

export function decodeTargetAssignment(buf: Buffer): Map<string, Set<number>> {
  return assignmentFromEntries(recordCodec('ConsumerGroupTargetAssignmentMemberValue', () => decodeConsumerGroupTargetAssignmentMemberValueRecord(buf)).value.topicPartitions)
}

export function decodeCurrentAssignment(buf: Buffer): MemberAssignmentState {
  const { value: v } = recordCodec('ConsumerGroupCurrentMemberAssignmentValue', () => decodeConsumerGroupCurrentMemberAssignmentValueRecord(buf))
  return {
    memberEpoch: v.memberEpoch,
    previousMemberEpoch: v.previousMemberEpoch,
    state: memberStateFromValue(v.state),
    assignedPartitions: assignmentFromEntries(v.assignedPartitions),
    partitionsPendingRevocation: assignmentFromEntries(v.partitionsPendingRevocation),
  }
}
