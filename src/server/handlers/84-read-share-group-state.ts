// ReadShareGroupState: v0 (KIP-932; a share-partition leader -> the share coordinator)
//
// Behavior (Kafka's KafkaApis.handleReadShareGroupStateRequest and ShareCoordinatorShard):
// * Answers each share-partition's state epoch, start offset and state batches (start offset -1 and state
//   epoch 0 when none was ever written). The request's leader epoch becomes the share-partition's: a read
//   with an older leader epoch than one seen is FENCED_LEADER_EPOCH, and so are later writes from that
//   older leader. Errors as every share-state API (common/share-state-requests.ts).
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every share-partition.
import * as Read from '../../protocol/messages/84-read-share-group-state.gen.js'
import { defineHandler } from './common/handler.js'
import { perSharePartition, shareStateTarget } from './common/share-state-requests.js'

export const readShareGroupStateHandler = defineHandler<Read.ReadShareGroupStateRequest, Read.ReadShareGroupStateResponse>({
  api: Read.ReadShareGroupStateApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Read.decodeReadShareGroupStateRequest,
  encodeResponse: Read.encodeReadShareGroupStateResponse,
  authorizes: true,
  async handle(req, ctx) {
    const target = await shareStateTarget(ctx, req.groupId)
    const results = await perSharePartition(req.topics, async (topicId, p) => {
      if (!target.ok) return Read.createPartitionResult({ partition: p.partition, errorCode: target.errorCode, errorMessage: target.errorMessage, startOffset: -1n })
      const a = await target.coordinator.read({ groupId: req.groupId, topicId, partition: p.partition }, p.leaderEpoch)
      return Read.createPartitionResult({
        partition: p.partition,
        errorCode: a.errorCode,
        errorMessage: a.errorMessage,
        stateEpoch: a.stateEpoch,
        startOffset: BigInt(a.startOffset),
        stateBatches: a.stateBatches.map((b) => Read.createStateBatch({ firstOffset: BigInt(b.firstOffset), lastOffset: BigInt(b.lastOffset), deliveryState: b.deliveryState, deliveryCount: b.deliveryCount })),
      })
    })
    return Read.createReadShareGroupStateResponse({ results: results.map((r) => Read.createReadStateResult(r)) })
  },
})
