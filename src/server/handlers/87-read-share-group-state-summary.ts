// ReadShareGroupStateSummary: v0 (KIP-932; -> the share coordinator, for a share group's offsets)
//
// Behavior (Kafka's KafkaApis.handleReadShareGroupStateSummaryRequest and ShareCoordinatorShard):
// * Answers each share-partition's state epoch and start offset (-1 and 0 when it has no state), with the
//   read's leader-epoch fencing (FENCED_LEADER_EPOCH) but without taking the request's leader epoch.
//   Errors as every share-state API (common/share-state-requests.ts).
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED for every share-partition.
import * as Summary from '../../protocol/messages/87-read-share-group-state-summary.gen.js'
import { defineHandler } from './common/handler.js'
import { perSharePartition, shareStateTarget } from './common/share-state-requests.js'

export const readShareGroupStateSummaryHandler = defineHandler<Summary.ReadShareGroupStateSummaryRequest, Summary.ReadShareGroupStateSummaryResponse>({
  api: Summary.ReadShareGroupStateSummaryApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Summary.decodeReadShareGroupStateSummaryRequest,
  encodeResponse: Summary.encodeReadShareGroupStateSummaryResponse,
  authorizes: true,
  async handle(req, ctx) {
    const target = await shareStateTarget(ctx, req.groupId)
    const results = await perSharePartition(req.topics, async (topicId, p) => {
      if (!target.ok) return Summary.createPartitionResult({ partition: p.partition, errorCode: target.errorCode, errorMessage: target.errorMessage, startOffset: -1n })
      const a = await target.coordinator.readSummary({ groupId: req.groupId, topicId, partition: p.partition }, p.leaderEpoch)
      return Summary.createPartitionResult({ partition: p.partition, errorCode: a.errorCode, errorMessage: a.errorMessage, stateEpoch: a.stateEpoch, startOffset: BigInt(a.startOffset) })
    })
    return Summary.createReadShareGroupStateSummaryResponse({ results: results.map((r) => Summary.createReadStateSummaryResult(r)) })
  },
})
