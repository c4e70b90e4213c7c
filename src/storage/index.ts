// The log storage engine: segments of RecordBatch bytes, sparse mmap'd indexes, recovery, retention.
export type * from './types.js'
export { DEFAULT_LOG_CONFIG, LONG_MAX, validateTopicName, validatePartition, resolveLogConfig } from './config.js'
export { CLEAN_SHUTDOWN_MARKER, DATA_DIR_LOCK, DataDirectory } from './data-directory.js'
export { LogManager } from './log-manager.js'
export type { LogManagerOptions } from './log-manager.js'
export { PartitionLog } from './partition-log.js'
export type { RecoveryReport } from './partition-log.js'
