// DescribeLogDirs: v1-4
//
// Behavior:
// * Every log dir (log.dirs), with the partitions this broker holds in it, or only the requested ones
//   (topics null = all; requested partitions that do not exist are left out, as Kafka). A failed (offline)
//   dir answers KAFKA_STORAGE_ERROR and no partitions.
// * partitionSize is the bytes of the partition's segment files; offsetLag is max(HW - LEO, 0), which
//   is 0 on a leader. A copy being moved into a dir by AlterReplicaLogDirs is listed under that dir with
//   isFutureKey true and offsetLag = the current log's end minus the copy's.
// * v4: totalBytes / usableBytes of the volume (statfs); -1 when it cannot be read.
// Version notes:
// * v2+: flexible. v3+: top-level errorCode. v4+: totalBytes, usableBytes.
// * Authorization: Describe on the cluster, else no results and (v3+) CLUSTER_AUTHORIZATION_FAILED (Kafka).
// Not implemented:
// * v0: deprecated; no target client sends it.
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
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
    const currentEnd = new Map<string, number>()
    for (const dir of dirs) for (const s of dir.partitions) currentEnd.set(`${s.topic}\u0000${s.partition}`, s.logEndOffset)
    const results = dirs.map((dir) => {
      const byTopic = new Map<string, DescribeLogDirs.DescribeLogDirsPartition[]>()
      const add = (s: (typeof dir.partitions)[number], isFutureKey: boolean): void => {
        let partitions = byTopic.get(s.topic)
        if (partitions === undefined) {
          partitions = []
          byTopic.set(s.topic, partitions)
        }
        const lag = isFutureKey ? (currentEnd.get(`${s.topic}\u0000${s.partition}`) ?? s.logEndOffset) - s.logEndOffset : s.highWatermark - s.logEndOffset
        partitions.push(DescribeLogDirs.createDescribeLogDirsPartition({
          partitionIndex: s.partition,
          partitionSize: BigInt(s.sizeBytes),
          offsetLag: BigInt(Math.max(lag, 0)),
          isFutureKey,
        }))
      }
      for (const s of dir.partitions) add(s, false)
      for (const s of dir.futures) add(s, true)
      const topics = [...byTopic].map(([name, partitions]) => DescribeLogDirs.createDescribeLogDirsTopic({ name, partitions }))
      return DescribeLogDirs.createDescribeLogDirsResult({ errorCode: dir.errorCode, logDir: dir.path, topics, totalBytes: dir.totalBytes, usableBytes: dir.usableBytes })
    })
    return DescribeLogDirs.createDescribeLogDirsResponse({ errorCode: ErrorCode.NONE, results })
  },
})
