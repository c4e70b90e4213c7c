// Authorized-operation bit sets (Metadata, DescribeCluster, DescribeGroups, ConsumerGroupDescribe): the
// operations on a resource the connection's principal may do, asked of the authorizer one by one as
// Kafka's AuthHelper.authorizedOperations does (everything when no authorizer is configured). The sets
// are sent only when the request asks for them.
import { AclOperation } from '../../../domain/acl.js'
import type { AuthorizationService, ClientConnection } from './ports.js'

/** Kafka's value for "authorized operations not requested". */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648

function bits(operations: readonly number[]): number {
  return operations.reduce((set, op) => set | (1 << op), 0)
}

const { READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS } = AclOperation

/** The operations each resource type supports (Kafka's ResourceType#supportedOperations). */
export const TOPIC_OPERATION_LIST = [READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS]
export const CLUSTER_OPERATION_LIST = [CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, CREATE_TOKENS, DESCRIBE_TOKENS]
export const GROUP_OPERATION_LIST = [READ, DELETE, DESCRIBE]

export const TOPIC_OPERATIONS = bits(TOPIC_OPERATION_LIST)
export const CLUSTER_OPERATIONS = bits(CLUSTER_OPERATION_LIST)
export const GROUP_OPERATIONS = bits(GROUP_OPERATION_LIST)

/** The bit set of the operations in `supported` the connection may do on the resource. */
export function authorizedOperations(acl: AuthorizationService, conn: ClientConnection, resourceType: number, name: string, supported: readonly number[]): number {
  if (!acl.enabled) return bits(supported)
  return bits(supported.filter((op) => acl.authorize(conn, op, resourceType, name)))
}
