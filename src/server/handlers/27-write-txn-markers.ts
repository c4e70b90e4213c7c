// WriteTxnMarkers: v0-1 (transaction coordinator -> partition leader)
//
// Behavior:
// * A transaction coordinator on another broker asks this broker to write COMMIT or ABORT markers of a
//   producer's transaction to partitions this broker leads (Kafka's TransactionMarkerChannelManager
//   sends one request per leader broker). Each partition is answered on its own: NONE once written and
//   replicated (acks=all, as Kafka appends markers: the HW passed the marker); NOT_LEADER_OR_FOLLOWER
//   when this broker does not lead it, or stopped leading it before the marker was replicated (the
//   coordinator looks the leader up again and retries); NOT_ENOUGH_REPLICAS (ISR below
//   min.insync.replicas, nothing written), NOT_ENOUGH_REPLICAS_AFTER_APPEND and REQUEST_TIMED_OUT (after
//   request.timeout.ms), which the coordinator retries too; UNKNOWN_TOPIC_OR_PARTITION for a partition
//   nobody hosts; INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED from the partition's
//   producer state are answered NONE, as the marker is obsolete (a newer epoch or coordinator already
//   wrote there). A marker in a __consumer_offsets partition also completes the group's pending
//   transactional offsets.
// * Authorization: ClusterAction on the cluster (brokers only), else CLUSTER_AUTHORIZATION_FAILED for
//   every partition (Kafka).
// Version notes:
// * v1: flexible.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as WriteTxnMarkers from '../../protocol/messages/27-write-txn-markers.gen.js'
import { defineHandler } from './common/handler.js'
import type { TxnMarker } from './common/ports.js'

export const writeTxnMarkersHandler = defineHandler<WriteTxnMarkers.WriteTxnMarkersRequest, WriteTxnMarkers.WriteTxnMarkersResponse>({
  api: WriteTxnMarkers.WriteTxnMarkersApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: WriteTxnMarkers.decodeWriteTxnMarkersRequest,
  encodeResponse: WriteTxnMarkers.encodeWriteTxnMarkersResponse,
  authorizes: true,
  async handle(req, ctx) {
    const denied = !ctx.acl.authorize(ctx.connection, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
    const items: TxnMarker[] = []
    const targets: WriteTxnMarkers.WritableTxnMarkerPartitionResult[] = []
    const markers = req.markers.map((m) =>
      WriteTxnMarkers.createWritableTxnMarkerResult({
        producerId: m.producerId,
        topics: m.topics.map((t) =>
          WriteTxnMarkers.createWritableTxnMarkerTopicResult({
            name: t.name,
            partitions: t.partitionIndexes.map((partition) => {
              const answer = WriteTxnMarkers.createWritableTxnMarkerPartitionResult({ partitionIndex: partition })
              if (denied) {
                answer.errorCode = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                return answer
              }
              items.push({ topic: t.name, partition, producerId: Number(m.producerId), producerEpoch: m.producerEpoch, coordinatorEpoch: m.coordinatorEpoch, commit: m.transactionResult })
              targets.push(answer)
              return answer
            }),
          }),
        ),
      }),
    )
    const results = await ctx.transactions.writeLocalMarkers(items)
    results.forEach((r, i) => {
      targets[i]!.errorCode = r.errorCode
    })
    return WriteTxnMarkers.createWriteTxnMarkersResponse({ markers })
  },
})
