// AlterPartition: v0-3 (partition leader -> controller, KIP-497)
//
// Behavior:
// * A leader proposes a new ISR (and leader recovery state) for partitions it leads, at its leader epoch
//   and the partition epoch it knows; only the controller writes partition state. Answered by this broker
//   only while it is the active controller, else NOT_CONTROLLER; a broker epoch other than the
//   registration's -> STALE_BROKER_EPOCH.
// * Per partition, as Kafka's ZooKeeper-mode controller: unknown partition -> UNKNOWN_TOPIC_OR_PARTITION
//   (unknown topic id, v2+ -> UNKNOWN_TOPIC_ID); leader or partition epoch newer than the controller's ->
//   NOT_CONTROLLER; older leader epoch -> FENCED_LEADER_EPOCH; already the proposed state -> NONE with it
//   (a retry); older partition epoch -> INVALID_UPDATE_VERSION; RECOVERING with more than one ISR
//   member, or back from RECOVERED to RECOVERING -> INVALID_REQUEST; an ISR member that is not a live
//   broker, or one in a controlled shutdown other than the leader itself (or, v3, not at the broker
//   epoch given) -> INELIGIBLE_REPLICA; else written conditionally
//   (a lost race -> INVALID_UPDATE_VERSION) and answered with the new state and partition epoch; every
//   broker then gets UpdateMetadata.
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED (Kafka).
// Version notes:
// * v0-1 name topics, v2+ use topic ids. v1+: leader recovery state. v3: ISR members with broker epochs.
import { ErrorCode } from '../../domain/errors.js'
import * as AlterPartition from '../../protocol/messages/56-alter-partition.gen.js'
import { mayActAsBroker } from './common/cluster-action.js'
import { defineHandler } from './common/handler.js'

export const alterPartitionHandler = defineHandler<AlterPartition.AlterPartitionRequest, AlterPartition.AlterPartitionResponse>({
  api: AlterPartition.AlterPartitionApi,
  minVersion: 0,
  maxVersion: 3,
  decodeRequest: AlterPartition.decodeAlterPartitionRequest,
  encodeResponse: AlterPartition.encodeAlterPartitionResponse,
  authorizes: true,
  handle(req, ctx) {
    if (!mayActAsBroker(ctx)) return AlterPartition.createAlterPartitionResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED })
    return ctx.control.alterPartition(req, ctx.apiVersion)
  },
})
