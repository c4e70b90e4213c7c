// The threading layer: partitions sharded over worker threads, one owner thread per partition.

export {
  ShardRouter,
  type ShardRouterOptions, type Outcome, type ShardReadResult, type CreatePartitionItem, type UpdateConfigItem, type AppendItem,
  type ReadItem, type ListOffsetsItem, type DeleteRecordsItem, type LeaseRef,
} from './router.js'
export { shardOf, fnv1a } from './hash.js'
export { ShardExecutor, type ShardExecutorOptions } from './executor.js'
export {
  type ShardOp, type OpResult, type ShardInfo, type ShardBatch, type ShardReply, type ShardWorkerData, type PartitionRef,
} from './messages.js'
