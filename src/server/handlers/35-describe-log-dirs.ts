// DescribeLogDirs: v1-4
//
// Behavior:
// * One log dir (log.dirs has exactly one entry), with every partition this broker holds, or only the
//   requested ones (topics null = all; requested partitions that do not exist are left out, as Kafka).
// * partitionSize is the bytes of the partition's segment files; offsetLag is max(HW - LEO, 0), which
//   is 0 on a leader; isFutureKey is false (no AlterReplicaLogDirs moves).
// * v4: totalBytes / usableBytes of the volume (statfs); -1 when it cannot be read.
// Version notes:
// * v2+: flexible. v3+: top-level errorCode. v4+: totalBytes, usableBytes.
// Not implemented:
// * v0: deprecated; no target client sends it.
import { statfsSync } from 'node:fs'
import { ErrorCode } from '../../domain/errors.js'
import * as DescribeLogDirs from '../../protocol/messages/35-describe-log-dirs.gen.js'
import type { PartitionState } from '../../storage/types.js'
import { defineHandler } from '../registry.js'

export const describeLogDirsHandler = defineHandler<DescribeLogDirs.DescribeLogDirsRequest, DescribeLogDirs.DescribeLogDirsResponse>({
  api: DescribeLogDirs.DescribeLogDirsApi,
  minVersion: 1,
  maxVersion: 4,
  decodeRequest: DescribeLogDirs.decodeDescribeLogDirsRequest,
  encodeResponse: DescribeLogDirs.encodeDescribeLogDirsResponse,
  async handle(req, ctx) {
    const { broker } = ctx
    let states: PartitionState[]
    if (req.topics === null) {
      states = await broker.router.states()
    } else {
      const items: { topic: string; partition: number }[] = []
      const seen = new Set<string>()
      for (const t of req.topics) {
        const topic = broker.topics.get(t.topic)
        if (topic === undefined) continue
        for (const partition of t.partitions) {
          const key = `${t.topic}\u0000${partition}`
          if (partition < 0 || partition >= topic.partitions || seen.has(key)) continue
          seen.add(key)
          items.push({ topic: t.topic, partition })
        }
      }
      states = items.length === 0 ? [] : await broker.router.states(items)
    }
    const byTopic = new Map<string, DescribeLogDirs.DescribeLogDirsPartition[]>()
    for (const s of states) {
      let partitions = byTopic.get(s.topic)
      if (partitions === undefined) {
        partitions = []
        byTopic.set(s.topic, partitions)
      }
      partitions.push(DescribeLogDirs.createDescribeLogDirsPartition({
        partitionIndex: s.partition,
        partitionSize: BigInt(s.sizeBytes),
        offsetLag: BigInt(Math.max(s.highWatermark - s.logEndOffset, 0)),
        isFutureKey: false,
      }))
    }
    const topics = [...byTopic].map(([name, partitions]) => DescribeLogDirs.createDescribeLogDirsTopic({ name, partitions }))
    const { totalBytes, usableBytes } = volumeBytes(broker.dataDir, broker.log)
    return DescribeLogDirs.createDescribeLogDirsResponse({
      errorCode: ErrorCode.NONE,
      results: [DescribeLogDirs.createDescribeLogDirsResult({ errorCode: ErrorCode.NONE, logDir: broker.dataDir, topics, totalBytes, usableBytes })],
    })
  },
})

function volumeBytes(dir: string, log: { warn(obj: object, msg: string): void }): { totalBytes: bigint; usableBytes: bigint } {
  try {
    const s = statfsSync(dir, { bigint: true })
    return { totalBytes: s.blocks * s.bsize, usableBytes: s.bavail * s.bsize }
  } catch (err) {
    log.warn({ err: (err as Error).message, dir }, 'cannot read the log dir volume size')
    return { totalBytes: -1n, usableBytes: -1n }
  }
}
