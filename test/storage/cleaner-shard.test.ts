// The cleaner on the shard worker threads: ShardRouter.compact runs a pass on the owner thread while the
// same shard keeps answering appends to another partition, and the periodic cleaner (log.cleaner.backoff.ms)
// compacts without being asked.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { silentLogger } from '../../src/observability/logger.js'
import { buildRecordBatch } from '../../src/protocol/records/index.js'
import { ShardRouter } from '../../src/shard/router.js'
import type { ShardRouterOptions } from '../../src/shard/router.js'
import type { CleanResult } from '../../src/storage/index.js'
import { DEFAULT_LOG_CONFIG } from '../../src/storage/index.js'
import { tempDir } from './helpers.js'

const root = join(import.meta.dirname, '..', '..')

beforeAll(() => {
  // npm test compiles first (tsc before vitest); run `npx tsc -p tsconfig.json` before this file alone.
  if (!existsSync(join(root, 'dist', 'src', 'shard', 'worker.js'))) throw new Error('dist/src/shard/worker.js is missing: run npx tsc -p tsconfig.json first')
})

const cleanups: Array<() => Promise<void> | void> = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

async function start(cleaner: ShardRouterOptions['cleaner']): Promise<ShardRouter> {
  const d = tempDir('skein-cleaner-shard-')
  cleanups.push(d.cleanup)
  const router = await ShardRouter.start({
    dataDir: d.path, ioThreads: 1, logger: silentLogger(), cleaner,
    defaults: { ...DEFAULT_LOG_CONFIG, cleanupPolicy: 'compact', segmentBytes: 64 * 1024, segmentIndexBytes: 64 * 1024, minCleanableDirtyRatio: 0.01 },
  })
  cleanups.push(() => router.close())
  return router
}

function updates(round: number, keys: number): Buffer {
  return buildRecordBatch(Array.from({ length: keys }, (_, k) => ({ key: Buffer.from(`k${k}`), value: Buffer.from(`v${round}-${'x'.repeat(100)}`) })), native.crc32c)
}

describe('the cleaner on a shard thread', () => {
  it('compact() runs a pass while the shard keeps serving appends to another partition', async () => {
    const router = await start({ enable: false })
    await router.createPartitions([{ topic: 'big', partition: 0 }, { topic: 'other', partition: 0 }, { topic: 'plain', partition: 0, overrides: { cleanupPolicy: 'delete' } }])
    for (let round = 0; round < 1000; round += 10) {
      const items = Array.from({ length: 10 }, (_, i) => ({ topic: 'big', partition: 0, records: updates(round + i, 50), leaderEpoch: 0 }))
      for (const r of await router.append(items)) expect(r.ok).toBe(true)
    }
    const [before] = await router.states([{ topic: 'big', partition: 0 }])
    let finished = false
    const pass = router.compact([{ topic: 'big', partition: 0 }]).then((r) => {
      finished = true
      return r
    })
    // Calls of one turn go to the shard as one batch, run in order: let the compact leave alone first.
    await sleep(0)
    let appendsDuring = 0
    while (!finished) {
      const [r] = await router.append([{ topic: 'other', partition: 0, records: updates(0, 1), leaderEpoch: 0 }])
      expect(r!.ok).toBe(true)
      if (!finished) appendsDuring++
    }
    const [outcome] = await pass
    expect(outcome!.ok).toBe(true)
    const result = (outcome as { ok: true; value: CleanResult }).value
    expect(result.cleaned).toBe(true)
    expect(result.bytesRead).toBeGreaterThan(1024 * 1024)
    expect(appendsDuring).toBeGreaterThan(0)
    const [after] = await router.states([{ topic: 'big', partition: 0 }])
    expect(after!.sizeBytes).toBeLessThan(before!.sizeBytes / 10)
    expect(after!.logEndOffset).toBe(before!.logEndOffset)

    // Not compacted, unknown: typed answers.
    const [plain, unknown] = await router.compact([{ topic: 'plain', partition: 0 }, { topic: 'nope', partition: 0 }])
    expect(plain).toMatchObject({ ok: true, value: { cleaned: false, reason: 'not-compacted' } })
    expect(unknown).toMatchObject({ ok: false, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
  })

  it('the periodic cleaner compacts by itself every log.cleaner.backoff.ms', async () => {
    const router = await start({ backoffMs: 50 })
    await router.createPartitions([{ topic: 'auto', partition: 0 }])
    let written = 0
    for (let round = 0; round < 100; round++) {
      const records = updates(round, 20)
      written += records.length
      await router.append([{ topic: 'auto', partition: 0, records, leaderEpoch: 0 }])
    }
    const deadline = Date.now() + 20_000
    let size = Infinity
    while (Date.now() < deadline) {
      size = (await router.states([{ topic: 'auto', partition: 0 }]))[0]!.sizeBytes
      if (size < written / 3) break
      await sleep(50)
    }
    // What stays: one record per key plus the active segment (64 KiB at most).
    expect(size).toBeLessThan(written / 3)
  })
})
