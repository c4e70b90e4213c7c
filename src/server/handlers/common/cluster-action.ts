// The check of the inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown,
// AlterPartition, WriteTxnMarkers, follower Fetch and OffsetForLeaderEpoch): ClusterAction on the
// cluster, which brokers and super users hold. Kafka answers CLUSTER_AUTHORIZATION_FAILED in the
// response rather than closing the connection.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../../domain/acl.js'
import type { RequestContext } from './context.js'

export function mayActAsBroker(ctx: RequestContext): boolean {
  return ctx.acl.authorize(ctx.connection, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)
}
