// Test hooks of the shards, kept out of the production operation table and the router's API. A shard
// worker serves TEST_OPERATIONS only when SKEIN_TEST_HOOKS=1 was set as it started (worker.ts loads this
// module then, and only then); the helpers here refuse without it too.

import { isMainThread } from 'node:worker_threads'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { onShard, type OperationTable } from './operations.js'
import type { Outcome, ShardRouter } from './router.js'

export function testHooksEnabled(): boolean {
  return process.env.SKEIN_TEST_HOOKS === '1'
}

export const TEST_OPERATIONS = {
  /** The worker thread exits at once, without closing anything, as a crash would. */
  crashForTest: onShard((_shard, _: null): never => {
    if (isMainThread || !testHooksEnabled()) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'crashForTest needs a worker thread and SKEIN_TEST_HOOKS=1')
    process.exit(1)
  }),
} as const satisfies OperationTable

/**
 * Makes a shard's worker thread exit (SKEIN_TEST_HOOKS=1 only). Piscina starts a replacement, which
 * reopens and recovers the shard's partitions on its next batch.
 */
export async function crashShardForTest(router: ShardRouter, shard: number): Promise<void> {
  if (!testHooksEnabled()) throw new Error('crashShardForTest needs SKEIN_TEST_HOOKS=1')
  if (!(Number.isInteger(shard) && shard >= 0 && shard < router.ioThreads)) throw new Error(`crashShardForTest needs a worker shard; shard ${shard} is not one`)
  // crashForTest is not in the production table, so the router's typed surface does not name it.
  const callShard = router.callShard as (shard: number, op: keyof typeof TEST_OPERATIONS, args: null) => Promise<Outcome<unknown>>
  const r = await callShard.call(router, shard, 'crashForTest', null)
  // A crash fails the batch as a whole (UNKNOWN_SERVER_ERROR); anything else means it did not crash.
  if (r.ok || r.errorCode !== ErrorCode.UNKNOWN_SERVER_ERROR) throw new Error(`shard ${shard} did not crash: ${r.ok ? 'ok' : r.message}`)
}
