// StopReplica: v0-4 (controller -> broker)
//
// Behavior:
// * The controller tells this broker to stop serving partitions, deleting their logs when asked (topic
//   deletion; a partition not hosted any more is still deleted from disk). Refused as a whole with
//   STALE_CONTROLLER_EPOCH / STALE_BROKER_EPOCH like LeaderAndIsr.
// * A partition whose request leader epoch is older than this broker's is left alone:
//   FENCED_LEADER_EPOCH. -2 (the topic is being deleted) and -1 (not given) always apply.
// * A log that cannot be deleted -> KAFKA_STORAGE_ERROR for that partition.
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED (Kafka); then admitted
//   only from the active controller, like LeaderAndIsr (not served at all without ZooKeeper).
// Version notes:
// * v0: one delete flag, partitions with topic names. v1-2: grouped by topic, broker epoch (v2:
//   flexible). v3+: per-partition leader epoch and delete flag. v4: isKRaftController (ignored).
import { ErrorCode } from '../../domain/errors.js'
import * as StopReplica from '../../protocol/messages/05-stop-replica.gen.js'
import { mayActAsBroker } from './common/cluster-action.js'
import { defineHandler } from './common/handler.js'

/** What versions before 3 carry as "no epoch". */
const NO_EPOCH = -1

export const stopReplicaHandler = defineHandler<StopReplica.StopReplicaRequest, StopReplica.StopReplicaResponse>({
  api: StopReplica.StopReplicaApi,
  minVersion: 0,
  maxVersion: 4,
  decodeRequest: StopReplica.decodeStopReplicaRequest,
  encodeResponse: StopReplica.encodeStopReplicaResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!mayActAsBroker(ctx)) return StopReplica.createStopReplicaResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED })
    const answer = await ctx.control.stopReplica(ctx.apiVersion < 3 ? withTopicStates(req, ctx.apiVersion) : req)
    return StopReplica.createStopReplicaResponse({
      errorCode: answer.errorCode,
      partitionErrors: answer.partitionErrors.map((e) => StopReplica.createStopReplicaPartitionError({ topicName: e.topic, partitionIndex: e.partition, errorCode: e.errorCode })),
    })
  },
})

/** v0-2 partitions and their single delete flag in the v3+ shape. */
function withTopicStates(req: StopReplica.StopReplicaRequest, version: number): StopReplica.StopReplicaRequest {
  const byTopic = new Map<string, number[]>()
  if (version === 0) {
    for (const p of req.ungroupedPartitions) {
      let list = byTopic.get(p.topicName)
      if (list === undefined) byTopic.set(p.topicName, (list = []))
      list.push(p.partitionIndex)
    }
  } else {
    for (const t of req.topics) byTopic.set(t.name, [...(byTopic.get(t.name) ?? []), ...t.partitionIndexes])
  }
  const topicStates = [...byTopic].map(([topicName, partitions]) =>
    StopReplica.createStopReplicaTopicState({
      topicName,
      partitionStates: partitions.map((partitionIndex) => StopReplica.createStopReplicaPartitionState({ partitionIndex, leaderEpoch: NO_EPOCH, deletePartition: req.deletePartitions })),
    }),
  )
  return { ...req, topicStates }
}
