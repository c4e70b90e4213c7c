// The codes of Kafka's ACL model on the wire (AclOperation, ResourceType, PatternType, AclPermissionType),
// shared by the authorizer (auth/acl.ts) and the handlers that ask it.

export const ResourceType = { UNKNOWN: 0, ANY: 1, TOPIC: 2, GROUP: 3, CLUSTER: 4, TRANSACTIONAL_ID: 5, DELEGATION_TOKEN: 6, USER: 7 } as const
export const PatternType = { UNKNOWN: 0, ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 } as const
export const AclOperation = {
  UNKNOWN: 0, ANY: 1, ALL: 2, READ: 3, WRITE: 4, CREATE: 5, DELETE: 6, ALTER: 7, DESCRIBE: 8, CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10, ALTER_CONFIGS: 11, IDEMPOTENT_WRITE: 12, CREATE_TOKENS: 13, DESCRIBE_TOKENS: 14,
} as const
export const AclPermission = { UNKNOWN: 0, ANY: 1, DENY: 2, ALLOW: 3 } as const

export const RESOURCE_TYPE_NAMES: Readonly<Record<number, string>> = { 2: 'Topic', 3: 'Group', 4: 'Cluster', 5: 'TransactionalId', 6: 'DelegationToken', 7: 'User' }
export const OPERATION_NAMES: Readonly<Record<number, string>> = {
  2: 'All', 3: 'Read', 4: 'Write', 5: 'Create', 6: 'Delete', 7: 'Alter', 8: 'Describe', 9: 'ClusterAction',
  10: 'DescribeConfigs', 11: 'AlterConfigs', 12: 'IdempotentWrite', 13: 'CreateTokens', 14: 'DescribeTokens',
}
export const PERMISSION_NAMES: Readonly<Record<number, string>> = { 2: 'Deny', 3: 'Allow' }
export const PATTERN_NAMES: Readonly<Record<number, string>> = { 3: 'LITERAL', 4: 'PREFIXED' }

/** The one name of the cluster resource. */
export const CLUSTER_NAME = 'kafka-cluster'

export interface AclBinding {
  resourceType: number
  resourceName: string
  /** LITERAL or PREFIXED. */
  patternType: number
  principal: string
  host: string
  operation: number
  permission: number
}

/** A filter of DescribeAcls/DeleteAcls: null matches anything; ANY codes match any value; MATCH patterns match as the authorizer would. */
export interface AclFilter {
  resourceType: number
  resourceName: string | null
  patternType: number
  principal: string | null
  host: string | null
  operation: number
  permission: number
}

