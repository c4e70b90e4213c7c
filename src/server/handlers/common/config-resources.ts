// The config resources of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.
import { ErrorCode, KafkaError } from '../../../domain/errors.js'
import { CLUSTER_NAME, ResourceType } from '../../../domain/acl.js'
import type { ApiError } from './api-errors.js'
import type { AuthorizationService, BrokerConfigScope, ClientConnection } from './ports.js'

/** Kafka's ConfigResource.Type ids. */
export const ConfigResourceType = {
  UNKNOWN: 0,
  TOPIC: 2,
  BROKER: 4,
  BROKER_LOGGER: 8,
  CLIENT_METRICS: 16,
  GROUP: 32,
} as const

/**
 * Kafka's rule for BROKER resource names: '' is the cluster default, otherwise it must be this broker's
 * id written as an integer.
 */
export function brokerScope(resourceName: string, nodeId: number): BrokerConfigScope {
  if (resourceName === '') return 'clusterDefault'
  if (!/^[+-]?\d+$/.test(resourceName.trim())) throw new KafkaError(ErrorCode.INVALID_REQUEST, `Broker id must be an integer, but it is: ${resourceName}`)
  if (Number(resourceName) !== nodeId) {
    throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unexpected broker id, expected ${nodeId} or empty string, but received ${resourceName}`)
  }
  return 'perBroker'
}

/**
 * The error a config resource gets when the principal may not do `operation` (DescribeConfigs or
 * AlterConfigs) on it, as Kafka's configsAuthorizationApiError: topics on the topic, groups on the group,
 * brokers, broker loggers and anything else on the cluster (fail closed). Undefined when allowed.
 */
export function configResourceDenied(acl: AuthorizationService, conn: ClientConnection, operation: number, resourceType: number, resourceName: string): ApiError | undefined {
  if (!acl.enabled) return undefined
  switch (resourceType) {
    case ConfigResourceType.TOPIC:
      return acl.authorize(conn, operation, ResourceType.TOPIC, resourceName) ? undefined : { errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage: null }
    case ConfigResourceType.GROUP:
      return acl.authorize(conn, operation, ResourceType.GROUP, resourceName) ? undefined : { errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED, errorMessage: null }
    default:
      return acl.authorize(conn, operation, ResourceType.CLUSTER, CLUSTER_NAME) ? undefined : { errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, errorMessage: null }
  }
}
