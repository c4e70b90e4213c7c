// DeleteShareGroupState: v0 (KIP-932; -> the share coordinator, when a share group's state is deleted)
//
// Behavior (Kafka's KafkaApis.handleDeleteShareGroupStateRequest and ShareCoordinatorShard):
// * Forgets each share-partition's state: tombstones for its ShareSnapshot and ShareUpdate keys (nothing
//   written when it has none). Errors as every share-state API (common/share-state-requests.ts).
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every share-partition.
import * as Delete from '../../protocol/messages/86-delete-share-group-state.gen.js'
import { defineHandler } from './common/handler.js'
import { perSharePartition, shareStateTarget } from './common/share-state-requests.js'

export const deleteShareGroupStateHandler = defineHandler<Delete.DeleteShareGroupStateRequest, Delete.DeleteShareGroupStateResponse>({
  api: Delete.DeleteShareGroupStateApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Delete.decodeDeleteShareGroupStateRequest,
  encodeResponse: Delete.encodeDeleteShareGroupStateResponse,
  authorizes: true,
  async handle(req, ctx) {
    const target = await shareStateTarget(ctx, req.groupId)
    const results = await perSharePartition(req.topics, async (topicId, p) => {
      if (!target.ok) return Delete.createPartitionResult({ partition: p.partition, errorCode: target.errorCode, errorMessage: target.errorMessage })
      const a = await target.coordinator.delete({ groupId: req.groupId, topicId, partition: p.partition })
      return Delete.createPartitionResult({ partition: p.partition, errorCode: a.errorCode, errorMessage: a.errorMessage })
    })
    return Delete.createDeleteShareGroupStateResponse({ results: results.map((r) => Delete.createDeleteStateResult(r)) })
  },
})
