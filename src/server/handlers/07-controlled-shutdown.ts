// ControlledShutdown: v0-3 (broker -> controller)
//
// Behavior:
// * A broker about to stop asks the controller to move its leaderships away first: partitions it leads
//   (with other replicas) elect the first live in-ISR replica that is not shutting down, it stops its
//   replicas of those and of the partitions it follows (StopReplica without delete; it leaves their ISRs
//   and is not let back in while it shuts down), and the answer lists the partitions it still
//   leads (the broker retries controlled.shutdown.max.retries times while that list is not empty).
// * Answered by this broker only while it is the active controller, else NOT_CONTROLLER; a broker epoch
//   other than the broker's registration (or none, v0-1) -> STALE_BROKER_EPOCH (Kafka refuses only an
//   older one: here the epoch is what tells the broker from a client); a broker not registered ->
//   BROKER_NOT_AVAILABLE. Not served at all by a broker without ZooKeeper (its controller is in process).
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED (Kafka).
// Version notes:
// * v0 uses request header v0 (no client id). v1: same body. v2+: broker epoch. v3: flexible.
import { ErrorCode } from '../../domain/errors.js'
import * as ControlledShutdown from '../../protocol/messages/07-controlled-shutdown.gen.js'
import { mayActAsBroker } from './common/cluster-action.js'
import { defineHandler } from './common/handler.js'

export const controlledShutdownHandler = defineHandler<ControlledShutdown.ControlledShutdownRequest, ControlledShutdown.ControlledShutdownResponse>({
  api: ControlledShutdown.ControlledShutdownApi,
  minVersion: 0,
  maxVersion: 3,
  decodeRequest: ControlledShutdown.decodeControlledShutdownRequest,
  encodeResponse: ControlledShutdown.encodeControlledShutdownResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!mayActAsBroker(ctx)) return ControlledShutdown.createControlledShutdownResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED })
    const { errorCode, remaining } = await ctx.control.controlledShutdown(req.brokerId, ctx.apiVersion >= 2 ? req.brokerEpoch : -1n)
    return ControlledShutdown.createControlledShutdownResponse({
      errorCode,
      remainingPartitions: remaining.map((p) => ControlledShutdown.createRemainingPartition({ topicName: p.topic, partitionIndex: p.partition })),
    })
  },
})
