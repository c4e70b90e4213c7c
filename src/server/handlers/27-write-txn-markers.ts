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
// Bounds: the partitions are answered, and their markers written, in ~10 ms slices of main-thread time.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as WriteTxnMarkers from '../../protocol/messages/27-write-txn-markers.gen.js'
import { inTimedChunks } from '../../domain/main-thread-slices.js'
import { defineHandler, requestAbandoned, requestSlices } from './common/handler.js'
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
    const slices = requestSlices(ctx)
    const markers: WriteTxnMarkers.WritableTxnMarkerResult[] = []
    for (const m of req.markers) {
      const topics: WriteTxnMarkers.WritableTxnMarkerTopicResult[] = []
      markers.push(WriteTxnMarkers.createWritableTxnMarkerResult({ producerId: m.producerId, topics }))
      for (const t of m.topics) {
        const partitions: WriteTxnMarkers.WritableTxnMarkerPartitionResult[] = []
        topics.push(WriteTxnMarkers.createWritableTxnMarkerTopicResult({ name: t.name, partitions }))
        for (const partition of t.partitionIndexes) {
          const turn = slices.turn()
          if (turn !== undefined) await turn
          const answer = WriteTxnMarkers.createWritableTxnMarkerPartitionResult({ partitionIndex: partition })
          partitions.push(answer)
          if (denied) {
            answer.errorCode = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            continue
          }
          items.push({ topic: t.name, partition, producerId: Number(m.producerId), producerEpoch: m.producerEpoch, coordinatorEpoch: m.coordinatorEpoch, commit: m.transactionResult })
          targets.push(answer)
        }
      }
    }
    // In chunks of ~10 ms of main-thread time (an inter-broker request is not held to request.max.list.elements).
    const results = await inTimedChunks(items, (chunk) => ctx.transactions.writeLocalMarkers(chunk), requestAbandoned(ctx))
    for (const [i, r] of results.entries()) {
      const turn = slices.turn()
      if (turn !== undefined) await turn
      targets[i]!.errorCode = r.errorCode
    }
    return WriteTxnMarkers.createWriteTxnMarkersResponse({ markers })
  },
})
