// The log storage engine: segments of RecordBatch bytes, sparse mmap'd indexes, recovery, retention.
export type * from './types.js'
// The table's defaults, re-exported for callers that open a LogManager directly (its home is config).
export { DEFAULT_LOG_CONFIG } from '../config/log-config.js'
export { validateTopicName, validatePartition } from './partition-names.js'
export { CLEAN_SHUTDOWN_MARKER, DATA_DIR_LOCK, DataDirectory, ensureDataDirectory, partitionsThatFit, roomForPartitions, strayDirectories } from './data-directory.js'
export { LogManager } from './log-manager.js'
export type { LogManagerOptions } from './log-manager.js'
export { PartitionLog, recoveryWorthLogging } from './partition-log.js'
export type { RecoveryReport } from './partition-log.js'
export { LogCleaner, CLEANER_OFFSET_CHECKPOINT } from './log-cleaner.js'
export type { CleanReason, CleanResult, LogCleanerOptions, LogCleanerSettings, LogToClean } from './log-cleaner.js'
export { CLEANED_SUFFIX, SWAP_SUFFIX, recoverInterruptedSwaps } from './segment-swap.js'
export type { SwapRecovery, SwapStep } from './segment-swap.js'
