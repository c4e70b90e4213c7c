// Client quota configs in the cluster metadata (DescribeClientQuotas, AlterClientQuotas), and the
// broker's copy of them that the quota managers measure against: read from the store at startup,
// refreshed entity by entity when a config change notification names a users/ or clients/ entity, so a
// change made through any broker applies on every broker without a restart.
//
// Layout (Kafka's, see src/quota/client-quotas.ts): /config/users/<user>, /config/clients/<client-id>,
// /config/users/<user>/clients/<client-id>, '<default>' for defaults. A user's entity also holds its
// SCRAM credentials (broker/scram-credentials.ts): an alteration rewrites only the quota keys of it.
//
// Validation follows Kafka's (ClientQuotaControlManager, ClientQuotasImage): the request-level errors of
// DescribeClientQuotas and the per-entry errors of AlterClientQuotas are INVALID_REQUEST, an unknown
// entity type or match type in a filter UNSUPPORTED_VERSION. 'ip' entities (connection_creation_rate)
// are refused: Skein does not limit the connection creation rate.
import type { ConfigChange, MetadataStore } from '../cluster/metadata-store.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import type { ClientConnection, ControllerMutationQuota } from '../server/handlers/common/ports.js'
import { quotaUser } from '../server/request-quotas.js'
import type { AlterClientQuotasRequest, ResponseEntryData } from '../protocol/messages/49-alter-client-quotas.gen.js'
import type { DescribeClientQuotasRequest, EntryData } from '../protocol/messages/48-describe-client-quotas.gen.js'
import {
  type ClientQuotas,
  isQuotaKey,
  QUOTA_CONFIGS,
  quotaEntityOf,
  quotaEntityPath,
  quotaValuesOf,
  type QuotaEntity,
  type QuotaKey,
} from '../quota/client-quotas.js'

const USER = 'user'
const CLIENT_ID = 'client-id'
const IP = 'ip'

const MATCH_EXACT = 0
const MATCH_DEFAULT = 1
const MATCH_SPECIFIED = 2

/** An entity as the protocol names it: components by type, null for the default. */
type ProtocolEntity = { entityType: string; entityName: string | null }[]

function toProtocol(e: QuotaEntity): ProtocolEntity {
  const out: ProtocolEntity = []
  if (e.user !== undefined) out.push({ entityType: USER, entityName: e.user })
  if (e.clientId !== undefined) out.push({ entityType: CLIENT_ID, entityName: e.clientId })
  return out
}

/** Java's Double.toString for the values Kafka stores ("50.0"), integers for LONG quotas. */
function formatQuota(key: QuotaKey, value: number): string {
  if (QUOTA_CONFIGS[key].type === 'long') return String(value)
  return Number.isInteger(value) ? `${value}.0` : String(value)
}

export class ClientQuotaService {
  /** Alterations are read-modify-write of an entity: one at a time. */
  private queue: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly store: MetadataStore,
    readonly quotas: ClientQuotas,
    private readonly log: Logger,
  ) {}

  /** The controller mutation quota of a request (CreateTopics, CreatePartitions, DeleteTopics); null without one. */
  controllerMutationQuota(conn: ClientConnection, clientId: string | null): ControllerMutationQuota | null {
    if (!this.quotas.active) return null
    return this.quotas.controllerMutation.quotaFor(quotaUser(conn.principal), clientId ?? '', Date.now())
  }

  /** Every quota entity in the store, with its quota values (entities without any left out). */
  private async readAll(): Promise<{ entity: QuotaEntity; values: Map<QuotaKey, number> }[]> {
    const out: { entity: QuotaEntity; values: Map<QuotaKey, number> }[] = []
    const add = async (entityType: 'users' | 'clients', entityName: string): Promise<void> => {
      const entity = quotaEntityOf(entityType, entityName)
      if (entity === undefined) return
      const values = quotaValuesOf(await this.store.getEntityConfig(entityType, entityName))
      if (values.size > 0) out.push({ entity, values })
    }
    for (const user of await this.store.getEntityNames('users')) {
      await add('users', user)
      for (const client of await this.store.getUserClientEntityNames(user)) await add('users', `${user}/clients/${client}`)
    }
    for (const client of await this.store.getEntityNames('clients')) await add('clients', client)
    return out
  }

  /** Loads every quota (broker startup). */
  async start(): Promise<void> {
    const all = await this.readAll()
    for (const { entity, values } of all) this.quotas.table.set(quotaEntityPath(entity), values)
    if (all.length > 0) this.log.info({ entities: all.length }, 'client quotas loaded')
  }

  /** Change notifications: entities of users/ or clients/ are read again. */
  async onConfigChanges(changes: readonly ConfigChange[]): Promise<void> {
    for (const c of changes) {
      if (c.entityType !== 'users' && c.entityType !== 'clients') continue
      const entity = quotaEntityOf(c.entityType, c.entityName)
      if (entity === undefined) continue
      try {
        const values = quotaValuesOf(await this.store.getEntityConfig(c.entityType, c.entityName))
        const path = quotaEntityPath(entity)
        this.quotas.table.set(path, values)
        this.log.info({ entity: `${path.entityType}/${path.entityName}`, quotas: Object.fromEntries(values) }, 'client quotas changed')
      } catch (err) {
        this.log.error({ err: (err as Error).message, entity: `${c.entityType}/${c.entityName}` }, 'cannot read a changed client quota')
      }
    }
  }

  /** DescribeClientQuotas: the matching entities, or a KafkaError for a malformed filter. */
  async describe(req: DescribeClientQuotasRequest): Promise<EntryData[]> {
    const exact = new Map<string, string | null>()
    const typed = new Set<string>()
    for (const c of req.components) {
      if (c.entityType === '') throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Invalid empty entity type.')
      if (exact.has(c.entityType) || typed.has(c.entityType)) throw new KafkaError(ErrorCode.INVALID_REQUEST, `Entity type ${c.entityType} cannot appear more than once in the filter.`)
      if (c.entityType !== USER && c.entityType !== CLIENT_ID && c.entityType !== IP) throw new KafkaError(ErrorCode.UNSUPPORTED_VERSION, `Unsupported entity type ${c.entityType}`)
      if (c.matchType === MATCH_EXACT) {
        if (c.match === null) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Request specified MATCH_TYPE_EXACT, but set match string to null.')
        exact.set(c.entityType, c.match)
      } else if (c.matchType === MATCH_DEFAULT) {
        if (c.match !== null) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Request specified MATCH_TYPE_DEFAULT, but also specified a match string.')
        exact.set(c.entityType, null)
      } else if (c.matchType === MATCH_SPECIFIED) {
        if (c.match !== null) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.')
        typed.add(c.entityType)
      } else {
        throw new KafkaError(ErrorCode.UNSUPPORTED_VERSION, `Unsupported match type ${c.matchType}`)
      }
    }
    const has = (t: string): boolean => exact.has(t) || typed.has(t)
    if (has(IP) && (has(USER) || has(CLIENT_ID))) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.')
    }
    // No ip entities are ever stored: an ip filter matches nothing.
    if (has(IP)) return []
    const out: EntryData[] = []
    for (const { entity, values } of await this.readAll()) {
      const components = new Map<string, string | null>()
      if (entity.user !== undefined) components.set(USER, entity.user)
      if (entity.clientId !== undefined) components.set(CLIENT_ID, entity.clientId)
      if (req.strict && components.size !== exact.size + typed.size) continue
      let matches = true
      for (const [t, name] of exact) if (!components.has(t) || components.get(t) !== name) matches = false
      for (const t of typed) if (!components.has(t)) matches = false
      if (!matches) continue
      out.push({ entity: toProtocol(entity), values: [...values].map(([key, value]) => ({ key, value })) })
    }
    return out
  }

  alter(req: AlterClientQuotasRequest): Promise<ResponseEntryData[]> {
    const run = this.queue.then(() => this.doAlter(req))
    this.queue = run.catch(() => {})
    return run
  }

  private async doAlter(req: AlterClientQuotasRequest): Promise<ResponseEntryData[]> {
    const results: ResponseEntryData[] = []
    for (const entry of req.entries) {
      const echo = entry.entity.map((e) => ({ entityType: e.entityType, entityName: e.entityName }))
      const fail = (errorCode: number, errorMessage: string): void => {
        results.push({ errorCode, errorMessage, entity: echo })
      }
      const entity = validateEntity(entry.entity)
      if (typeof entity === 'string') {
        fail(ErrorCode.INVALID_REQUEST, entity)
        continue
      }
      const problem = validateOps(entry.ops)
      if (problem !== undefined) {
        fail(ErrorCode.INVALID_REQUEST, problem)
        continue
      }
      if (!req.validateOnly) {
        const path = quotaEntityPath(entity)
        const config = { ...(await this.store.getEntityConfig(path.entityType, path.entityName)) }
        for (const op of entry.ops) {
          const key = op.key as QuotaKey
          if (op.remove) delete config[key]
          else config[key] = formatQuota(key, op.value)
        }
        await this.store.setEntityConfig(path.entityType, path.entityName, config)
        // Applied here at once (the notification reaches this broker too, and re-reads the same).
        this.quotas.table.set(path, quotaValuesOf(config))
      }
      results.push({ errorCode: ErrorCode.NONE, errorMessage: null, entity: echo })
    }
    return results
  }
}

/** The entity of an AlterClientQuotas entry, or why it is invalid. */
function validateEntity(components: readonly { entityType: string; entityName: string | null }[]): QuotaEntity | string {
  if (components.length === 0) return 'Invalid empty client quota entity'
  const entity: QuotaEntity = {}
  const seen = new Set<string>()
  for (const c of components) {
    if (seen.has(c.entityType)) return `Invalid client quota entity: duplicate entity type ${c.entityType}`
    seen.add(c.entityType)
    if (c.entityName === '') return `Invalid empty ${c.entityType} name`
    if (c.entityType === USER) entity.user = c.entityName
    else if (c.entityType === CLIENT_ID) entity.clientId = c.entityName
    else if (c.entityType === IP) {
      if (components.length > 1) return 'Invalid quota entity combination, IP entity should not be combined with User or ClientId'
      return 'IP quotas (connection_creation_rate) are not supported by Skein: it does not limit the connection creation rate'
    } else return `Unhandled client quota entity type: ${c.entityType}`
  }
  return entity
}

function validateOps(ops: readonly { key: string; value: number; remove: boolean }[]): string | undefined {
  const keys = new Set<string>()
  for (const op of ops) {
    if (!isQuotaKey(op.key)) return `Invalid configuration key ${op.key}`
    if (keys.has(op.key)) return `Duplicate quota configuration key ${op.key}`
    keys.add(op.key)
    if (op.remove) continue
    if (!Number.isFinite(op.value)) return `Proposed value for ${op.key} is not a number: ${op.value}`
    if (QUOTA_CONFIGS[op.key].type === 'long') {
      if (op.value > Number.MAX_SAFE_INTEGER) return `Proposed value for ${op.key} is too large for a LONG.`
      if (!Number.isInteger(op.value)) return `Proposed value for ${op.key} is not a valid LONG: ${op.value}`
    }
    if (op.value <= 0) return `Proposed value for ${op.key} must be positive: ${op.value}`
  }
  return undefined
}
