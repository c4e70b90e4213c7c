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
// * Authorization: Describe on the cluster, else no results and (v3+) CLUSTER_AUTHORIZATION_FAILED (Kafka).
// Not implemented:
// * v0: deprecated; no target client sends it.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DescribeLogDirs from '../../protocol/messages/35-describe-log-dirs.gen.js'
import { defineHandler } from './common/handler.js'
import type { TopicPartitionRef } from './common/ports.js'

export const describeLogDirsHandler = defineHandler<DescribeLogDirs.DescribeLogDirsRequest, DescribeLogDirs.DescribeLogDirsResponse>({
  api: DescribeLogDirs.DescribeLogDirsApi,
  minVersion: 1,
  maxVersion: 4,
  decodeRequest: DescribeLogDirs.decodeDescribeLogDirsRequest,
  encodeResponse: DescribeLogDirs.encodeDescribeLogDirsResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)) return DescribeLogDirs.createDescribeLogDirsResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results: [] })
    let wanted: TopicPartitionRef[] | null = null
    if (req.topics !== null) {
      wanted = []
      const seen = new Set<string>()
      for (const t of req.topics) {
        const topic = ctx.metadata.topic(t.topic)
        if (topic === undefined) continue
        for (const partition of t.partitions) {
          const key = `${t.topic}\u0000${partition}`
          if (partition < 0 || partition >= topic.partitions || seen.has(key)) continue
          seen.add(key)
          wanted.push({ topic: t.topic, partition })
        }
      }
    }
    const dirs = await ctx.partitions.logDirs(wanted)
    const results = dirs.map((dir) => {
      const byTopic = new Map<string, DescribeLogDirs.DescribeLogDirsPartition[]>()
      for (const s of dir.partitions) {
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
      return DescribeLogDirs.createDescribeLogDirsResult({ errorCode: ErrorCode.NONE, logDir: dir.path, topics, totalBytes: dir.totalBytes, usableBytes: dir.usableBytes })
    })
    return DescribeLogDirs.createDescribeLogDirsResponse({ errorCode: ErrorCode.NONE, results })
  },
})
