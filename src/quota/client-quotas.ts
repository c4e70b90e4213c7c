// Client quotas as Kafka defines them (KIP-13, KIP-55, KIP-124, KIP-599): the quota configs, the quota
// entities they are set on and their precedence, and one quota manager per quota type that measures
// each client over Kafka's sample windows and says how long to throttle it.
//
// Entities and where they are stored (Kafka's ZooKeeper layout; names sanitized, '<default>' is the
// default entity):
//   user + client-id   /config/users/<user>/clients/<client-id>
//   user               /config/users/<user>
//   client-id          /config/clients/<client-id>
// A request is measured against the first entity of this list that sets the quota (Kafka's
// DefaultQuotaCallback order):
//   1 /config/users/<user>/clients/<client-id>     5 /config/users/<default>/clients/<default>
//   2 /config/users/<user>/clients/<default>       6 /config/users/<default>
//   3 /config/users/<user>                         7 /config/clients/<client-id>
//   4 /config/users/<default>/clients/<client-id>  8 /config/clients/<default>
// Clients measured against the same entity share one measurement ("sensor"): all clients of a user with a
// user quota share it; a default entity is applied to each user / client-id on its own (the sensor takes
// the actual user and client-id for the components the entity has).
import { desanitizeEntityName, sanitizeEntityName } from '../auth/sanitize.js'
import { SampledAvg, SampledRate, TokenBucket } from './sampled-stats.js'

export const DEFAULT_ENTITY = '<default>'

/** The quota configs of user and client-id entities, with Kafka's types. */
export const QUOTA_CONFIGS = {
  producer_byte_rate: { type: 'long', doc: 'A rate representing the upper bound (bytes/sec) for producer traffic.' },
  consumer_byte_rate: { type: 'long', doc: 'A rate representing the upper bound (bytes/sec) for consumer traffic.' },
  request_percentage: { type: 'double', doc: 'A percentage representing the upper bound of time spent for processing requests.' },
  controller_mutation_rate: { type: 'double', doc: 'The rate at which mutations are accepted for the create topics request, the create partitions request and the delete topics request.' },
} as const

export type QuotaKey = keyof typeof QUOTA_CONFIGS
export const QUOTA_KEYS = Object.keys(QUOTA_CONFIGS) as QuotaKey[]

export function isQuotaKey(key: string): key is QuotaKey {
  return Object.hasOwn(QUOTA_CONFIGS, key)
}

/** A quota entity: a component is absent (undefined), the default (null) or a name. */
export interface QuotaEntity {
  user?: string | null
  clientId?: string | null
}

/** Where an entity's config lives: /config/<entityType>/<entityName>. */
export interface QuotaEntityPath {
  entityType: 'users' | 'clients'
  entityName: string
}

const part = (name: string | null): string => (name === null ? DEFAULT_ENTITY : sanitizeEntityName(name))
const unpart = (stored: string): string | null => (stored === DEFAULT_ENTITY ? null : desanitizeEntityName(stored))

export function quotaEntityPath(e: QuotaEntity): QuotaEntityPath {
  if (e.user !== undefined) {
    const clients = e.clientId === undefined ? '' : `/clients/${part(e.clientId)}`
    return { entityType: 'users', entityName: part(e.user) + clients }
  }
  if (e.clientId === undefined) throw new Error('a quota entity has a user, a client-id or both')
  return { entityType: 'clients', entityName: part(e.clientId) }
}

/** The entity a stored path names (undefined: not a quota entity path). */
export function quotaEntityOf(entityType: string, entityName: string): QuotaEntity | undefined {
  try {
    if (entityType === 'clients') return entityName.includes('/') ? undefined : { clientId: unpart(entityName) }
    if (entityType !== 'users') return undefined
    const parts = entityName.split('/')
    if (parts.length === 1) return { user: unpart(parts[0]!) }
    if (parts.length === 3 && parts[1] === 'clients') return { user: unpart(parts[0]!), clientId: unpart(parts[2]!) }
  } catch {
    // A malformed %-escape: not an entity Skein or Kafka wrote.
  }
  return undefined
}

const pathKey = (p: QuotaEntityPath): string => `${p.entityType}/${p.entityName}`

/** Only the quota keys of a stored entity config, as numbers (SCRAM credentials and unknown keys skipped). */
export function quotaValuesOf(config: Readonly<Record<string, string>>): Map<QuotaKey, number> {
  const out = new Map<QuotaKey, number>()
  for (const [k, v] of Object.entries(config)) {
    if (!isQuotaKey(k)) continue
    const n = Number(v)
    if (Number.isFinite(n)) out.set(k, n)
  }
  return out
}

/** The result of resolving a client's quota: the bound and the sensor it is measured in. */
export interface ResolvedQuota {
  bound: number
  /** The entity that set it. */
  entity: QuotaEntityPath
  /** Sensor tags as Kafka's metrics give them: the sanitized user / client-id, '' for a component the entity lacks. */
  user: string
  clientId: string
}

/** The quota configs of every entity, as the broker holds them (replaced entity by entity on change notifications). */
export class QuotaTable {
  readonly #entities = new Map<string, Map<QuotaKey, number>>()

  set(path: QuotaEntityPath, values: ReadonlyMap<QuotaKey, number>): void {
    if (values.size === 0) this.#entities.delete(pathKey(path))
    else this.#entities.set(pathKey(path), new Map(values))
  }

  get(path: QuotaEntityPath): ReadonlyMap<QuotaKey, number> | undefined {
    return this.#entities.get(pathKey(path))
  }

  get size(): number {
    return this.#entities.size
  }

  /** Kafka's precedence (above); undefined when no entity sets this quota for the client. */
  resolve(key: QuotaKey, user: string, clientId: string): ResolvedQuota | undefined {
    if (this.#entities.size === 0) return undefined
    const u = sanitizeEntityName(user)
    const c = sanitizeEntityName(clientId)
    const D = DEFAULT_ENTITY
    const order: [QuotaEntityPath, boolean, boolean][] = [
      [{ entityType: 'users', entityName: `${u}/clients/${c}` }, true, true],
      [{ entityType: 'users', entityName: `${u}/clients/${D}` }, true, true],
      [{ entityType: 'users', entityName: u }, true, false],
      [{ entityType: 'users', entityName: `${D}/clients/${c}` }, true, true],
      [{ entityType: 'users', entityName: `${D}/clients/${D}` }, true, true],
      [{ entityType: 'users', entityName: D }, true, false],
      [{ entityType: 'clients', entityName: c }, false, true],
      [{ entityType: 'clients', entityName: D }, false, true],
    ]
    for (const [path, hasUser, hasClient] of order) {
      const bound = this.#entities.get(pathKey(path))?.get(key)
      if (bound !== undefined) return { bound, entity: path, user: hasUser ? u : '', clientId: hasClient ? clientId : '' }
    }
    return undefined
  }
}

export interface QuotaWindow {
  /** quota.window.num */
  samples: number
  /** quota.window.size.seconds, in ms */
  windowMs: number
}

interface Sensor {
  user: string
  clientId: string
  bound: number
  lastUsed: number
}

/** Kafka expires a client's quota sensors after an hour without requests. */
const INACTIVE_SENSOR_EXPIRATION_MS = 60 * 60 * 1000

/** One measured sensor of a quota manager, for the metrics. */
export interface SensorSnapshot {
  user: string
  clientId: string
  /** The measured rate (bytes/s, request-time percentage, mutations/s). */
  rate: number
  /** Average throttle time of its requests over the windows (ms). */
  throttleTimeMs: number
}

abstract class QuotaManagerBase<S extends Sensor> {
  protected readonly sensors = new Map<string, S>()
  #lastSweep = 0

  constructor(
    readonly key: QuotaKey,
    protected readonly table: QuotaTable,
    protected window: QuotaWindow,
  ) {}

  /** True when some entity sets this quota (otherwise nothing needs measuring). */
  protected sensorFor(user: string, clientId: string, now: number): S | undefined {
    const q = this.table.resolve(this.key, user, clientId)
    if (q === undefined) return undefined
    const id = `${q.user}\u0000${q.clientId}`
    let s = this.sensors.get(id)
    if (s === undefined) {
      s = this.newSensor(q, now)
      this.sensors.set(id, s)
    }
    s.bound = q.bound
    s.lastUsed = now
    if (now - this.#lastSweep > 60_000) this.sweep(now)
    return s
  }

  private sweep(now: number): void {
    this.#lastSweep = now
    for (const [id, s] of this.sensors) if (now - s.lastUsed > INACTIVE_SENSOR_EXPIRATION_MS) this.sensors.delete(id)
  }

  protected abstract newSensor(q: ResolvedQuota, now: number): S
  abstract snapshot(now: number): SensorSnapshot[]
}

interface RateSensor extends Sensor {
  rate: SampledRate
  throttle: SampledAvg
}

/**
 * Produce, fetch and request quotas (Kafka's ClientQuotaManager and RequestQuotaManager): the value is
 * recorded, then the rate over the windows is compared with the bound; the throttle time is what brings
 * it back to the bound, at most one full measurement period (samples x window).
 */
export class ClientQuotaManager extends QuotaManagerBase<RateSensor> {
  /** Records `value` for the client and answers its throttle time (0 when within its quota or without one). */
  recordAndGetThrottleTimeMs(user: string, clientId: string, value: number, now: number): number {
    const s = this.sensorFor(user, clientId, now)
    if (s === undefined) return 0
    s.rate.record(value, now)
    const throttle = Math.min(s.rate.throttleTimeMs(s.bound, now), this.window.samples * this.window.windowMs)
    s.throttle.record(throttle, now)
    return throttle
  }

  protected newSensor(q: ResolvedQuota, now: number): RateSensor {
    const { samples, windowMs } = this.window
    return { user: q.user, clientId: q.clientId, bound: q.bound, lastUsed: now, rate: new SampledRate(samples, windowMs, now), throttle: new SampledAvg(samples, windowMs, now) }
  }

  snapshot(now: number): SensorSnapshot[] {
    return [...this.sensors.values()].map((s) => ({ user: s.user, clientId: s.clientId, rate: s.rate.measure(now), throttleTimeMs: s.throttle.measure(now) }))
  }
}

interface BucketSensor extends Sensor {
  bucket: TokenBucket
  rate: SampledRate
  throttle: SampledAvg
}

/**
 * controller_mutation_rate (Kafka's ControllerMutationQuotaManager, KIP-599): partitions created or
 * deleted per second, over a token bucket. Strict (new request versions): a topic is refused with
 * THROTTLING_QUOTA_EXCEEDED while the bucket is in debt, and one that is accepted takes its partitions
 * even past zero. Permissive (old versions): everything is accepted and the client throttled after.
 */
export class ControllerMutationQuotaManager extends QuotaManagerBase<BucketSensor> {
  /** A client's quota for one request; `null` when it has none. */
  quotaFor(user: string, clientId: string, now: number): ControllerMutationQuota | null {
    const s = this.sensorFor(user, clientId, now)
    if (s === undefined) return null
    return {
      isExceeded: () => s.bucket.measure(s.bound, Date.now()) < 0,
      record: (partitions: number) => {
        const t = Date.now()
        s.bucket.record(partitions, s.bound, t)
        s.rate.record(partitions, t)
      },
      throttleTimeMs: () => {
        const throttle = s.bucket.throttleTimeMs(s.bound, Date.now())
        s.throttle.record(throttle, Date.now())
        return throttle
      },
    }
  }

  protected newSensor(q: ResolvedQuota, now: number): BucketSensor {
    const { samples, windowMs } = this.window
    return {
      user: q.user,
      clientId: q.clientId,
      bound: q.bound,
      lastUsed: now,
      bucket: new TokenBucket(samples, windowMs, now),
      rate: new SampledRate(samples, windowMs, now),
      throttle: new SampledAvg(samples, windowMs, now),
    }
  }

  snapshot(now: number): SensorSnapshot[] {
    return [...this.sensors.values()].map((s) => ({ user: s.user, clientId: s.clientId, rate: s.rate.measure(now), throttleTimeMs: s.throttle.measure(now) }))
  }
}

/** One request's view of its controller mutation quota. */
export interface ControllerMutationQuota {
  isExceeded(): boolean
  record(partitions: number): void
  /** The throttle time the response carries (0 when the bucket is not in debt). */
  throttleTimeMs(): number
}

/** The four quota managers of a broker over one table. */
export class ClientQuotas {
  readonly table = new QuotaTable()
  readonly produce: ClientQuotaManager
  readonly fetch: ClientQuotaManager
  readonly request: ClientQuotaManager
  readonly controllerMutation: ControllerMutationQuotaManager

  constructor(window: QuotaWindow, controllerWindow: QuotaWindow) {
    this.produce = new ClientQuotaManager('producer_byte_rate', this.table, window)
    this.fetch = new ClientQuotaManager('consumer_byte_rate', this.table, window)
    this.request = new ClientQuotaManager('request_percentage', this.table, window)
    this.controllerMutation = new ControllerMutationQuotaManager('controller_mutation_rate', this.table, controllerWindow)
  }

  /** False while no entity has a quota: the request path then skips every lookup. */
  get active(): boolean {
    return this.table.size > 0
  }
}
