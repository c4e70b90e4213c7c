// Kafka's ACL model and authorizer (AclAuthorizer / StandardAuthorizer semantics): bindings of
// (resource type, name, pattern LITERAL|PREFIXED, principal, host, operation, Allow|Deny). An operation
// on a resource is allowed when the principal is a super user, or when no ACL matches the resource at
// all and allow.everyone.if.no.acl.found is set, or when an Allow ACL matches and no Deny ACL does (deny
// wins). LITERAL "*" matches every name; principal "User:*" and host "*" match everyone. Read, Write,
// Delete and Alter imply Describe; AlterConfigs implies DescribeConfigs; All implies every operation.
// The codes are the wire protocol's (AclOperation, ResourceType, PatternType, AclPermissionType); the
// names are those of Kafka's stored JSON and of kafka-acls.

import { AclOperation, AclPermission, PatternType, ResourceType, type AclBinding, type AclFilter } from '../domain/acl.js'

export { AclOperation, AclPermission, PatternType, ResourceType, type AclBinding, type AclFilter }

export { CLUSTER_NAME } from '../domain/acl.js'
export const WILDCARD = '*'

export function codeByName(names: Readonly<Record<number, string>>, name: string): number | undefined {
  const lower = name.toLowerCase().replace(/[_-]/g, '')
  for (const [code, n] of Object.entries(names)) if (n.toLowerCase() === lower) return Number(code)
  return undefined
}

const IMPLIED_BY: Readonly<Record<number, readonly number[]>> = {
  [AclOperation.DESCRIBE]: [AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE, AclOperation.ALTER],
  [AclOperation.DESCRIBE_CONFIGS]: [AclOperation.ALTER_CONFIGS],
}

function resourceMatches(b: AclBinding, resourceType: number, name: string): boolean {
  if (b.resourceType !== resourceType) return false
  if (b.patternType === PatternType.LITERAL) return b.resourceName === name || b.resourceName === WILDCARD
  return b.patternType === PatternType.PREFIXED && name.startsWith(b.resourceName)
}

/** Whether a binding matches a filter (DescribeAcls, DeleteAcls). */
export function filterMatches(f: AclFilter, b: AclBinding): boolean {
  if (f.resourceType !== ResourceType.ANY && f.resourceType !== b.resourceType) return false
  if (f.patternType === PatternType.MATCH) {
    // MATCH: the bindings that would apply to the named resource.
    if (f.resourceName !== null && !resourceMatches(b, b.resourceType, f.resourceName)) return false
  } else {
    if (f.patternType !== PatternType.ANY && f.patternType !== b.patternType) return false
    if (f.resourceName !== null && f.resourceName !== b.resourceName) return false
  }
  if (f.principal !== null && f.principal !== b.principal) return false
  if (f.host !== null && f.host !== b.host) return false
  if (f.operation !== AclOperation.ANY && f.operation !== b.operation) return false
  if (f.permission !== AclPermission.ANY && f.permission !== b.permission) return false
  return true
}

export interface AuthorizerSettings {
  superUsers: readonly string[]
  allowEveryoneIfNoAclFound: boolean
}

/** Decisions remembered at most; past it the cache starts over (a bound, not an LRU: misses are cheap enough). */
const DECISION_CACHE_LIMIT = 100_000

/**
 * The ACLs in force and the decision on one (principal, host, operation, resource). Decisions are
 * cached per (principal, host, operation, resource) and the cache is dropped whenever the bindings
 * change, so the produce path pays one map lookup instead of a scan of every ACL of the resource type.
 */
export class AclAuthorizer {
  private byType = new Map<number, AclBinding[]>()
  private readonly superUsers: ReadonlySet<string>
  private decisions = new Map<string, boolean>()

  constructor(private readonly settings: AuthorizerSettings) {
    this.superUsers = new Set(settings.superUsers)
  }

  /** Replaces every binding (after a load or a change). */
  setBindings(bindings: readonly AclBinding[]): void {
    const byType = new Map<number, AclBinding[]>()
    for (const b of bindings) {
      const list = byType.get(b.resourceType) ?? []
      list.push(b)
      byType.set(b.resourceType, list)
    }
    this.byType = byType
    this.decisions = new Map()
  }

  bindings(): AclBinding[] {
    return [...this.byType.values()].flat()
  }

  authorize(principal: string, host: string, operation: number, resourceType: number, name: string): boolean {
    if (this.superUsers.has(principal)) return true
    // Lengths make the key unambiguous whatever characters the names hold.
    const key = `${operation}/${resourceType}/${principal.length}/${principal}${host.length}/${host}${name}`
    const cached = this.decisions.get(key)
    if (cached !== undefined) return cached
    const decision = this.decide(principal, host, operation, resourceType, name)
    if (this.decisions.size >= DECISION_CACHE_LIMIT) this.decisions = new Map()
    this.decisions.set(key, decision)
    return decision
  }

  /**
   * Whether the principal may do the operation on at least one resource of the type (Kafka's
   * Authorizer#authorizeByResourceType, KIP-679: an idempotent producer needs Write on some topic): an
   * Allow for it, literal or prefixed, that no Deny covers (a literal Deny of the same name or of "*",
   * or a Deny prefix of it).
   */
  authorizeByResourceType(principal: string, host: string, operation: number, resourceType: number): boolean {
    if (this.superUsers.has(principal)) return true
    const candidates = this.byType.get(resourceType) ?? []
    if (candidates.length === 0) return this.settings.allowEveryoneIfNoAclFound
    const allowLiterals: string[] = []
    const allowPrefixes: string[] = []
    const denyLiterals = new Set<string>()
    const denyPrefixes: string[] = []
    for (const b of candidates) {
      if (b.principal !== principal && b.principal !== 'User:*') continue
      if (b.host !== host && b.host !== WILDCARD) continue
      if (b.operation !== operation && b.operation !== AclOperation.ALL) continue
      const literal = b.patternType === PatternType.LITERAL
      if (b.permission === AclPermission.DENY) {
        if (literal && b.resourceName === WILDCARD) return false
        if (literal) denyLiterals.add(b.resourceName)
        else denyPrefixes.push(b.resourceName)
      } else if (literal) {
        if (b.resourceName === WILDCARD) return true
        allowLiterals.push(b.resourceName)
      } else {
        allowPrefixes.push(b.resourceName)
      }
    }
    const deniedByPrefix = (name: string): boolean => denyPrefixes.some((p) => name.startsWith(p))
    return allowLiterals.some((n) => !denyLiterals.has(n) && !deniedByPrefix(n)) || allowPrefixes.some((p) => !deniedByPrefix(p))
  }

  private decide(principal: string, host: string, operation: number, resourceType: number, name: string): boolean {
    const candidates = this.byType.get(resourceType)
    let matchedAny = false
    let allowed = false
    if (candidates !== undefined) {
      for (const b of candidates) {
        if (!resourceMatches(b, resourceType, name)) continue
        matchedAny = true
        if (b.principal !== principal && b.principal !== 'User:*') continue
        if (b.host !== host && b.host !== WILDCARD) continue
        if (b.permission === AclPermission.DENY) {
          // Deny on the operation itself or on All wins over any Allow.
          if (b.operation === operation || b.operation === AclOperation.ALL) return false
          continue
        }
        if (b.operation === operation || b.operation === AclOperation.ALL || (IMPLIED_BY[operation]?.includes(b.operation) ?? false)) allowed = true
      }
    }
    if (!matchedAny) return this.settings.allowEveryoneIfNoAclFound
    return allowed
  }
}

/** super.users: principals separated by semicolons. */
export function parseSuperUsers(text: string): string[] {
  return text
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}
