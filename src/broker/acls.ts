// The broker's authorizer (authorizer.class.name): the ACLs of the cluster metadata held in memory by
// auth/acl.ts, CreateAcls / DescribeAcls / DeleteAcls with Kafka's validation, and the one question
// every handler asks: may this connection's principal do this operation on this resource. Without an
// authorizer everything is allowed and the ACL APIs answer SECURITY_DISABLED, as Kafka does.
// In a ZooKeeper cluster, a broker reloads the ACLs when another broker's change notification appears in
// /kafka-acl-changes or /kafka-acl-extended-changes (Kafka's ZkNodeChangeNotificationListener), and every few
// seconds in case a notification was missed.
import { AclAuthorizer, codeByName, filterMatches, parseSuperUsers } from '../auth/acl.js'
import type { AclResource, MetadataStore, StoredAcl } from '../cluster/metadata-store.js'
import type { BrokerConfig } from '../config/broker-config.js'
import {
  CLUSTER_NAME,
  OPERATION_NAMES,
  PatternType,
  PERMISSION_NAMES,
  RESOURCE_TYPE_NAMES,
  ResourceType,
  type AclBinding,
  type AclFilter,
} from '../domain/acl.js'
import { ErrorCode } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import type { AclCreationOutcome, AuthorizationService, ClientConnection } from '../server/handlers/common/ports.js'

export const AUTHORIZER_CLASS_NAMES = ['kafka.security.authorizer.AclAuthorizer', 'org.apache.kafka.metadata.authorizer.StandardAuthorizer', 'kafka.security.auth.SimpleAclAuthorizer']

const ZK_RELOAD_MS = 5000

function toBinding(resource: AclResource, acl: StoredAcl): AclBinding | undefined {
  const resourceType = codeByName(RESOURCE_TYPE_NAMES, resource.resourceType)
  const operation = codeByName(OPERATION_NAMES, acl.operation)
  const permission = codeByName(PERMISSION_NAMES, acl.permissionType)
  if (resourceType === undefined || operation === undefined || permission === undefined) return undefined
  return { resourceType, resourceName: resource.name, patternType: resource.patternType === 'LITERAL' ? PatternType.LITERAL : PatternType.PREFIXED, principal: acl.principal, host: acl.host, operation, permission }
}

function resourceOf(b: AclBinding): AclResource {
  return { patternType: b.patternType === PatternType.PREFIXED ? 'PREFIXED' : 'LITERAL', resourceType: RESOURCE_TYPE_NAMES[b.resourceType]!, name: b.resourceName }
}

function storedOf(b: AclBinding): StoredAcl {
  return { principal: b.principal, permissionType: PERMISSION_NAMES[b.permission]!, operation: OPERATION_NAMES[b.operation]!, host: b.host }
}

const sameBinding = (a: AclBinding, b: AclBinding): boolean =>
  a.resourceType === b.resourceType && a.resourceName === b.resourceName && a.patternType === b.patternType && a.principal === b.principal && a.host === b.host && a.operation === b.operation && a.permission === b.permission

/** Why a binding cannot be created (Kafka's AclControlManager / AclAuthorizer checks), or undefined. */
function invalidBinding(b: AclBinding): string | undefined {
  if (RESOURCE_TYPE_NAMES[b.resourceType] === undefined) return 'Invalid resource type'
  if (b.patternType !== PatternType.LITERAL && b.patternType !== PatternType.PREFIXED) return 'Invalid pattern type: only LITERAL and PREFIXED ACLs can be created'
  if (OPERATION_NAMES[b.operation] === undefined) return 'Invalid operation'
  if (PERMISSION_NAMES[b.permission] === undefined) return 'Invalid permission type'
  if (!/^[^:]+:.+$/.test(b.principal)) return `Could not parse principal from \`${b.principal}\` (no colon is present separating the principal type from the principal name)`
  if (b.resourceName === '') return 'Resource name should not be empty'
  if (b.resourceType === ResourceType.CLUSTER && b.resourceName !== CLUSTER_NAME) return `The only valid name for the CLUSTER resource is ${CLUSTER_NAME}`
  if (b.host === '') return 'Invalid host: use * for every host'
  return undefined
}

export class AclService implements AuthorizationService {
  readonly enabled: boolean
  private readonly authorizer: AclAuthorizer
  private queue: Promise<unknown> = Promise.resolve()
  private reloadTimer: NodeJS.Timeout | undefined
  private unwatchAclChanges: (() => void) | undefined
  /** Until the ACLs are loaded every check fails (closed, never open). */
  private loaded = false

  constructor(
    private readonly store: MetadataStore,
    config: BrokerConfig,
    private readonly log: Logger,
  ) {
    const className = config.getString('authorizer.class.name') ?? ''
    this.enabled = className !== ''
    this.authorizer = new AclAuthorizer({ superUsers: parseSuperUsers(config.getString('super.users') ?? ''), allowEveryoneIfNoAclFound: config.getBoolean('allow.everyone.if.no.acl.found') })
  }

  /** Loads the ACLs (the broker serves nothing before this). */
  async start(): Promise<void> {
    if (!this.enabled) return
    await this.reload()
    this.loaded = true
    if (this.store.kind === 'zookeeper') {
      const reload = (): void => {
        this.queue = this.queue.then(() => this.reload()).catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'reloading ACLs failed'))
      }
      // Another broker's change notification reloads at once; the timer is a safety net for a missed one.
      this.unwatchAclChanges = this.store.watchAclChanges(reload)
      this.reloadTimer = setInterval(reload, ZK_RELOAD_MS)
      this.reloadTimer.unref()
    }
  }

  stop(): void {
    clearInterval(this.reloadTimer)
    this.unwatchAclChanges?.()
  }

  private async reload(): Promise<void> {
    const bindings: AclBinding[] = []
    for (const { resource, acls } of await this.store.getAcls()) {
      for (const acl of acls) {
        const b = toBinding(resource, acl)
        if (b === undefined) this.log.warn({ resource: `${resource.resourceType}:${resource.name}` }, 'ignoring an ACL with an unknown operation or permission')
        else bindings.push(b)
      }
    }
    this.authorizer.setBindings(bindings)
  }

  authorize(conn: ClientConnection, operation: number, resourceType: number, name: string): boolean {
    if (!this.enabled) return true
    return this.loaded && this.authorizer.authorize(conn.principal, conn.clientHost, operation, resourceType, name)
  }

  authorizeByResourceType(conn: ClientConnection, operation: number, resourceType: number): boolean {
    if (!this.enabled) return true
    return this.loaded && this.authorizer.authorizeByResourceType(conn.principal, conn.clientHost, operation, resourceType)
  }

  describe(filter: AclFilter): AclBinding[] {
    return this.authorizer.bindings().filter((b) => filterMatches(filter, b))
  }

  create(bindings: readonly AclBinding[]): Promise<AclCreationOutcome[]> {
    return this.serially(async () => {
      const outcomes: AclCreationOutcome[] = bindings.map((b) => {
        const why = invalidBinding(b)
        return why === undefined ? { errorCode: ErrorCode.NONE, errorMessage: null } : { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: why }
      })
      const valid = bindings.filter((_, i) => outcomes[i]!.errorCode === ErrorCode.NONE)
      await this.reload()
      const current = this.authorizer.bindings()
      const added = valid.filter((b, i) => !current.some((c) => sameBinding(c, b)) && !valid.slice(0, i).some((o) => sameBinding(o, b)))
      await this.write([...current, ...added], added)
      return outcomes
    })
  }

  delete(filters: readonly AclFilter[]): Promise<AclBinding[][]> {
    return this.serially(async () => {
      await this.reload()
      const current = this.authorizer.bindings()
      const matched = filters.map((f) => current.filter((b) => filterMatches(f, b)))
      const gone = new Set(matched.flat())
      await this.write(
        current.filter((b) => !gone.has(b)),
        [...gone],
      )
      return matched
    })
  }

  /** Writes the resources whose ACLs changed, then uses the new set. */
  private async write(next: AclBinding[], changed: readonly AclBinding[]): Promise<void> {
    const resources = new Map<string, AclResource>()
    for (const b of changed) {
      const r = resourceOf(b)
      resources.set(`${r.patternType}/${r.resourceType}/${r.name}`, r)
    }
    for (const [key, r] of resources) {
      const acls = next.filter((b) => {
        const o = resourceOf(b)
        return `${o.patternType}/${o.resourceType}/${o.name}` === key
      })
      await this.store.setResourceAcls(r, acls.map(storedOf))
    }
    this.authorizer.setBindings(next)
  }

  private serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn)
    this.queue = run.catch(() => {})
    return run
  }
}
