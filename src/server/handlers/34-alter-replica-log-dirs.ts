// AlterReplicaLogDirs: v1-2
//
// Behavior:
// * Moves replicas this broker holds into another of its log dirs (log.dirs), as Kafka: the copy is
//   written into `<dir>/<topic>-<partition>.<id>-future` and swapped in once it caught up (see
//   storage/log-manager.ts); the answer comes when the move is under way, not when it is done.
//   DescribeLogDirs shows the copy (isFutureKey) meanwhile. A replica already in the dir answers NONE.
// * Errors per partition: LOG_DIR_NOT_FOUND for a path that is not one of log.dirs (compared after
//   resolving it), KAFKA_STORAGE_ERROR for an offline dir or replica, REPLICA_NOT_AVAILABLE for a
//   partition this broker holds no replica of, CLUSTER_AUTHORIZATION_FAILED without Alter on the cluster.
// * A partition named twice (under two dirs) takes the last one, as Kafka's map does.
// Version notes:
// * v2+: flexible. v1 is v0 with throttling after the answer.
// Not implemented:
// * v0: removed in Kafka 4.0; the spec (scripts/kafka-protocol-extra/) starts at v1.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as AlterReplicaLogDirs from '../../protocol/messages/34-alter-replica-log-dirs.gen.js'
import { defineHandler } from './common/handler.js'

export const alterReplicaLogDirsHandler = defineHandler<AlterReplicaLogDirs.AlterReplicaLogDirsRequest, AlterReplicaLogDirs.AlterReplicaLogDirsResponse>({
  api: AlterReplicaLogDirs.AlterReplicaLogDirsApi,
  minVersion: 1,
  maxVersion: 2,
  decodeRequest: AlterReplicaLogDirs.decodeAlterReplicaLogDirsRequest,
  encodeResponse: AlterReplicaLogDirs.encodeAlterReplicaLogDirsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const allowed = !ctx.acl.enabled || ctx.acl.authorize(ctx.connection, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
    // topic -> partition -> dir (the last one named wins), in the order first named.
    const wanted = new Map<string, Map<number, string>>()
    for (const dir of req.dirs) {
      for (const t of dir.topics) {
        let parts = wanted.get(t.name)
        if (parts === undefined) wanted.set(t.name, (parts = new Map()))
        for (const p of t.partitions) parts.set(p, dir.path)
      }
    }
    const items: { topic: string; partition: number; logDir: string }[] = []
    for (const [topic, parts] of wanted) for (const [partition, logDir] of parts) items.push({ topic, partition, logDir })
    const codes = allowed ? await ctx.partitions.alterReplicaLogDirs(items) : items.map(() => ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    const byTopic = new Map<string, AlterReplicaLogDirs.AlterReplicaLogDirPartitionResult[]>()
    items.forEach((item, i) => {
      let list = byTopic.get(item.topic)
      if (list === undefined) byTopic.set(item.topic, (list = []))
      list.push(AlterReplicaLogDirs.createAlterReplicaLogDirPartitionResult({ partitionIndex: item.partition, errorCode: codes[i]! }))
    })
    return AlterReplicaLogDirs.createAlterReplicaLogDirsResponse({
      throttleTimeMs: 0,
      results: [...byTopic].map(([topicName, partitions]) => AlterReplicaLogDirs.createAlterReplicaLogDirTopicResult({ topicName, partitions })),
    })
  },
})
