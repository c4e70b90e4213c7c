// DescribeCluster: v0-1
//
// Behavior:
// * Brokers and controller from the metadata image the controller feeds: every live broker at its
//   endpoint for the listener the request came on, with its rack; clusterId from the cluster (ZooKeeper's
//   /cluster/id, or meta.properties on a single broker).
// * No ACL is needed to describe the cluster (as Kafka). clusterAuthorizedOperations: the CLUSTER
//   operations the authorizer allows the principal (all without one); the bit set is filled only when includeClusterAuthorizedOperations, else Kafka's "omitted" value.
// * endpointType (v1): 1 (brokers) is served; 2 (controllers) -> MISMATCHED_ENDPOINT_TYPE, since this
//   is a broker endpoint; any other value -> UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST for both in v0,
//   which has no such codes), as Kafka's broker answers.
// Version notes:
// * Always flexible. v1: endpointType in request and response.
import { CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DescribeCluster from '../../protocol/messages/60-describe-cluster.gen.js'
import { defineHandler } from './common/handler.js'
import { AUTHORIZED_OPERATIONS_OMITTED, authorizedOperations, CLUSTER_OPERATION_LIST } from './common/authorized-operations.js'

const EndpointType = { BROKER: 1, CONTROLLER: 2 } as const

export const describeClusterHandler = defineHandler<DescribeCluster.DescribeClusterRequest, DescribeCluster.DescribeClusterResponse>({
  api: DescribeCluster.DescribeClusterApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: DescribeCluster.decodeDescribeClusterRequest,
  encodeResponse: DescribeCluster.encodeDescribeClusterResponse,
  authorizes: true,
  handle(req, ctx) {
    const { metadata } = ctx
    const v0 = ctx.apiVersion === 0
    if (req.endpointType !== EndpointType.BROKER && req.endpointType !== EndpointType.CONTROLLER) {
      return DescribeCluster.createDescribeClusterResponse({
        errorCode: v0 ? ErrorCode.INVALID_REQUEST : ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
        errorMessage: `Unsupported endpoint type ${req.endpointType}`,
      })
    }
    if (req.endpointType === EndpointType.CONTROLLER) {
      return DescribeCluster.createDescribeClusterResponse({
        errorCode: v0 ? ErrorCode.INVALID_REQUEST : ErrorCode.MISMATCHED_ENDPOINT_TYPE,
        errorMessage: 'The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER',
        endpointType: EndpointType.CONTROLLER,
      })
    }
    return DescribeCluster.createDescribeClusterResponse({
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      endpointType: EndpointType.BROKER,
      clusterId: metadata.clusterId,
      controllerId: metadata.controllerId,
      brokers: metadata.brokers(ctx.connection.listenerName).map((b) => DescribeCluster.createDescribeClusterBroker({ brokerId: b.nodeId, host: b.host, port: b.port, rack: b.rack })),
      clusterAuthorizedOperations: req.includeClusterAuthorizedOperations ? authorizedOperations(ctx.acl, ctx.connection, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATION_LIST) : AUTHORIZED_OPERATIONS_OMITTED,
    })
  },
})
