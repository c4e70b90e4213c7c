// The config resources of DescribeConfigs, AlterConfigs and IncrementalAlterConfigs.
import { ErrorCode, KafkaError } from '../../../domain/errors.js'
import type { BrokerConfigScope } from './ports.js'

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
