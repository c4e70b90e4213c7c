// Authorized-operation bit sets (Metadata, DescribeCluster, DescribeGroups). No authorizer is
// configured, so every operation on a resource is allowed; the sets are sent only when asked for.

/** Kafka's value for "authorized operations not requested". */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648

function bits(operations: readonly number[]): number {
  return operations.reduce((set, op) => set | (1 << op), 0)
}

// AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
// DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12, CREATE_TOKENS 13, DESCRIBE_TOKENS 14.
export const TOPIC_OPERATIONS = bits([3, 4, 5, 6, 7, 8, 10, 11])
export const CLUSTER_OPERATIONS = bits([5, 7, 8, 9, 10, 11, 12, 13, 14])
export const GROUP_OPERATIONS = bits([3, 6, 8])
