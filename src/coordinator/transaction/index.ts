// The transaction coordinator over __transaction_state.
export { TransactionCoordinator, transactionPartition, type TransactionCoordinatorOptions } from './txn-coordinator.js'
export { TransactionShard, type TransactionMetadata } from './txn-shard.js'
export * from './records.js'
export type * from './types.js'
