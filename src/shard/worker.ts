// Entry module of a shard worker thread (run by Piscina, one thread per shard, compiled to
// dist/src/shard/worker.js). Importing it opens and recovers the partitions this shard owns; each task
// is one ShardBatch. A replacement worker (after a crash) always recovers: see ShardWorkerData.starts.
// With SKEIN_TEST_HOOKS=1 the worker also serves the test-only operations of test-hooks.ts.

import { workerData } from 'node:worker_threads'
import { createLogger, type Logger } from '../observability/logger.js'
import { ShardExecutor } from './executor.js'
import type { ShardBatch, ShardReply, ShardWorkerData } from './messages.js'
import { SHARD_OPERATIONS, type OperationTable } from './operations.js'

const data = workerData as ShardWorkerData
// Atomics.add returns the previous count: 0 only for the first worker this shard ever started.
const firstStart = Atomics.add(data.starts, 0, 1) === 0

let logger: Logger | undefined
function log(): Logger {
  logger ??= createLogger({ level: data.logLevel }).child({ shard: data.shardIndex })
  return logger
}

// Loaded only when asked for, so that a production worker never holds the test operations.
const operations: OperationTable = process.env.SKEIN_TEST_HOOKS === '1'
  ? { ...SHARD_OPERATIONS, ...(await import('./test-hooks.js')).TEST_OPERATIONS }
  : SHARD_OPERATIONS

const executor = ShardExecutor.open({
  dataDir: data.dataDir,
  dataDirs: data.dataDirs,
  defaults: data.defaults,
  shardIndex: data.shardIndex,
  shardCount: data.shardCount,
  cleanShutdown: data.cleanShutdown && firstStart,
  retentionCheckIntervalMs: data.retentionCheckIntervalMs,
  flushSchedulerIntervalMs: data.flushSchedulerIntervalMs,
  highWatermarkFollowsLeo: data.highWatermarkFollowsLeo,
  diskFullFailsLogDir: data.diskFullFailsLogDir,
  checkpointIntervalMs: data.checkpointIntervalMs,
  highWatermarkCheckpointIntervalMs: data.highWatermarkCheckpointIntervalMs,
  cleaner: data.cleaner,
  producerExpiration: data.producerExpiration,
  maxOpenFiles: data.maxOpenFiles,
  logger: log(),
  onBackgroundError: (err, task) => log().error({ err, task }, 'shard background task failed'),
  threadStarts: () => Atomics.load(data.starts, 0),
  operations,
})

export default async function runShardBatch(batch: ShardBatch): Promise<ShardReply> {
  return { results: await executor.execute(batch.ops, batch.args) }
}
