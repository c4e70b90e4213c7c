// The share coordinator (KIP-932): durable share-partition state in __share_group_state.
export { ShareCoordinator, shareStatePartition, type ShareCoordinatorConfig, type ShareCoordinatorOptions } from './share-coordinator.js'
export {
  ShareCoordinatorState, coordinatorKeyOf, type PartitionAnswer, type ReadAnswer, type ShareGroupOffset, type SharePartitionKey, type WriteParams,
} from './share-coordinator-state.js'
export { combineStateBatches, type StateBatch } from './state-batches.js'
