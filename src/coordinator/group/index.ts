// The classic group coordinator over __consumer_offsets.
export { GroupCoordinator, type GroupCoordinatorOptions } from './group-coordinator.js'
export { GroupShard, type OffsetAndMetadata } from './group-shard.js'
export { ClassicGroup, parseSubscriptionTopics } from './classic-group.js'
export { groupPartition, javaStringHashCode, kafkaAbs } from './partitioner.js'
export * from './records.js'
export type * from './types.js'
