// The transaction coordinator over __transaction_state.
export { TransactionCoordinator, transactionPartition, type TransactionCoordinatorOptions } from './txn-coordinator.js'
export { TransactionCoordinatorState, type TransactionMetadata } from './txn-coordinator-state.js'
export * from './transaction-log-records.js'
export type * from './types.js'
