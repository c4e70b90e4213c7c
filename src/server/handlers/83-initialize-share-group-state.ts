// InitializeShareGroupState: v0 (KIP-932; a share-partition leader -> the share coordinator)
//
// Behavior (Kafka's KafkaApis.handleInitializeShareGroupStateRequest and ShareCoordinatorShard):
// * Initializes (or replaces) each share-partition's state: its start offset and state epoch, no
//   in-flight record; written as a ShareSnapshot to __share_group_state. FENCED_STATE_EPOCH when the
//   state already has a newer state epoch. Errors as every share-state API (common/share-state-requests.ts).
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every share-partition.
import * as Initialize from '../../protocol/messages/83-initialize-share-group-state.gen.js'
import { defineHandler } from './common/handler.js'
import { perSharePartition, shareStateTarget } from './common/share-state-requests.js'

export const initializeShareGroupStateHandler = defineHandler<Initialize.InitializeShareGroupStateRequest, Initialize.InitializeShareGroupStateResponse>({
  api: Initialize.InitializeShareGroupStateApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Initialize.decodeInitializeShareGroupStateRequest,
  encodeResponse: Initialize.encodeInitializeShareGroupStateResponse,
  authorizes: true,
  async handle(req, ctx) {
    const target = await shareStateTarget(ctx, req.groupId)
    const results = await perSharePartition(req.topics, async (topicId, p) => {
      if (!target.ok) return Initialize.createPartitionResult({ partition: p.partition, errorCode: target.errorCode, errorMessage: target.errorMessage })
      const a = await target.coordinator.initialize({ groupId: req.groupId, topicId, partition: p.partition }, p.stateEpoch, Number(p.startOffset))
      return Initialize.createPartitionResult({ partition: p.partition, errorCode: a.errorCode, errorMessage: a.errorMessage })
    })
    return Initialize.createInitializeShareGroupStateResponse({ results: results.map((r) => Initialize.createInitializeStateResult(r)) })
  },
})
