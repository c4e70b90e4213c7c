import { mkdtempSync, readSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { native } from '../../src/addon/index.js'
import { buildRecordBatch } from '../../src/protocol/records/builder.js'
import { silentLogger } from '../../src/observability/logger.js'
import { ShardRouter, type ShardRouterOptions, type Outcome } from '../../src/shard/index.js'
import { DEFAULT_LOG_CONFIG } from '../../src/storage/index.js'
import type { FileRegion } from '../../src/storage/types.js'

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'skein-shard-'))
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true })
}

/** A valid uncompressed batch of `count` records whose values are `${tag}-${i}`. */
export function batch(tag: string, count: number, timestamp = Date.now()): Buffer {
  const records = Array.from({ length: count }, (_, i) => ({ key: null, value: Buffer.from(`${tag}-${i}`), timestamp: timestamp + i }))
  return buildRecordBatch(records, (d, s) => native.crc32c(d, s), { baseTimestamp: timestamp })
}

/** Reads file regions with plain fs.readSync on this thread (the fds may belong to a worker). */
export function readRegions(regions: readonly FileRegion[]): Buffer {
  const parts = regions.map((r) => {
    const b = Buffer.alloc(r.length)
    let done = 0
    while (done < r.length) {
      const n = readSync(r.fd, b, done, r.length - done, r.position + done)
      if (n === 0) throw new Error(`short read on fd ${r.fd}`)
      done += n
    }
    return b
  })
  return Buffer.concat(parts)
}

export function value<T>(o: Outcome<T> | undefined): T {
  if (o === undefined) throw new Error('missing outcome')
  if (!o.ok) throw new Error(`expected ok, got ${o.errorCode}: ${o.message}`)
  return o.value
}

export function startRouter(dataDir: string, ioThreads: number, extra: Partial<ShardRouterOptions> = {}): Promise<ShardRouter> {
  return ShardRouter.start({ dataDir, ioThreads, defaults: DEFAULT_LOG_CONFIG, logger: silentLogger(), ...extra })
}

/**
 * A router on a fresh temp dir whose high watermark moves only when told (replicated partitions); its close
 * and the dir's removal go to cleanup (which the test file runs in reverse after each test).
 */
export async function openReplicatedRouter(ioThreads: number, cleanup: (() => Promise<void> | void)[]): Promise<ShardRouter> {
  const dir = tempDir()
  const router = await startRouter(dir, ioThreads, { highWatermarkFollowsLeo: false })
  cleanup.push(() => removeDir(dir))
  cleanup.push(() => router.close().catch(() => undefined))
  return router
}

/** Partitions of `topic` such that each of `shards` shards owns at least one (for spread tests). */
export function spreadPartitions(router: ShardRouter, topic: string, count: number): number[] {
  const out: number[] = []
  for (let p = 0; out.length < count; p++) out.push(p)
  const owners = new Set(out.map((p) => router.shardOf(topic, p)))
  if (router.ioThreads > 1 && owners.size < Math.min(router.ioThreads, count)) throw new Error('partitions do not spread; pick another topic name')
  return out
}
