// WriteShareGroupState: v0 (KIP-932; a share-partition leader -> the share coordinator)
//
// Behavior (Kafka's KafkaApis.handleWriteShareGroupStateRequest and ShareCoordinatorShard):
// * Writes each share-partition's state: its start offset (-1: unchanged) and the state batches laid over
//   the ones kept, as a ShareUpdate, or a ShareSnapshot every
//   share.coordinator.snapshot.update.records.per.snapshot writes. FENCED_LEADER_EPOCH for a write from
//   an older leader than one seen, FENCED_STATE_EPOCH for an older state epoch, INVALID_REQUEST for
//   malformed batches (offsets out of order or negative, an unknown delivery state). Errors as every
//   share-state API (common/share-state-requests.ts).
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every share-partition.
import * as Write from '../../protocol/messages/85-write-share-group-state.gen.js'
import { defineHandler } from './common/handler.js'
import { perSharePartition, shareStateTarget } from './common/share-state-requests.js'

export const writeShareGroupStateHandler = defineHandler<Write.WriteShareGroupStateRequest, Write.WriteShareGroupStateResponse>({
  api: Write.WriteShareGroupStateApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Write.decodeWriteShareGroupStateRequest,
  encodeResponse: Write.encodeWriteShareGroupStateResponse,
  authorizes: true,
  async handle(req, ctx) {
    const target = await shareStateTarget(ctx, req.groupId)
    const results = await perSharePartition(req.topics, async (topicId, p) => {
      if (!target.ok) return Write.createPartitionResult({ partition: p.partition, errorCode: target.errorCode, errorMessage: target.errorMessage })
      const a = await target.coordinator.write({ groupId: req.groupId, topicId, partition: p.partition }, {
        stateEpoch: p.stateEpoch,
        leaderEpoch: p.leaderEpoch,
        startOffset: Number(p.startOffset),
        stateBatches: p.stateBatches.map((b) => ({ firstOffset: Number(b.firstOffset), lastOffset: Number(b.lastOffset), deliveryState: b.deliveryState, deliveryCount: b.deliveryCount })),
      })
      return Write.createPartitionResult({ partition: p.partition, errorCode: a.errorCode, errorMessage: a.errorMessage })
    })
    return Write.createWriteShareGroupStateResponse({ results: results.map((r) => Write.createWriteStateResult(r)) })
  },
})
