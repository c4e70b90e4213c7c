// The threading layer: partitions sharded over worker threads, one owner thread per partition. What a
// shard can be asked is the operation table (operations.ts); test-only operations are in test-hooks.ts,
// which is deliberately not exported here.

export {
  ShardRouter,
  type ShardRouterOptions, type Outcome, type LeaseRef,
} from './router.js'
export {
  SHARD_OPERATIONS,
  type ShardOp, type OpName, type OpArgs, type OpValue, type PartitionOpName, type ShardOpName, type ShardContext, type OperationTable,
  type ShardReadResult, type CreatePartitionItem, type UpdateConfigItem, type AppendItem, type ReadItem, type TxnMarkerItem, type ListOffsetsItem,
  type DeleteRecordsItem, type CompactItem, type FollowerReadItem, type ShardFollowerReadResult, type FollowerAppendItem, type TruncateItem,
  type BecomeLeaderItem, type HighWatermarkItem, type EndOffsetForEpochItem,
} from './operations.js'
export { shardOf, fnv1a } from './hash.js'
export { ShardExecutor, type ShardExecutorOptions } from './executor.js'
export {
  type OpResult, type ShardInfo, type ShardBatch, type ShardReply, type ShardWorkerData, type PartitionRef,
} from './messages.js'
