// The classic group coordinator over __consumer_offsets.
export { GroupCoordinator, type GroupCoordinatorOptions } from './group-coordinator.js'
export { GroupCoordinatorState } from './group-coordinator-state.js'
export { GroupMetadataManager } from './group-metadata-manager.js'
export { OffsetMetadataManager, type OffsetAndMetadata } from './offset-metadata-manager.js'
export { ClassicGroup, parseSubscriptionTopics } from './classic-group.js'
export { groupPartition, javaStringHashCode, kafkaAbs } from './partitioner.js'
export * from './records.js'
export type * from './types.js'
