// One Schema Registry instance against a Kafka cluster: the `_schemas` store, the registry service, the
// primary election, and request handling that forwards writes from a secondary to the primary over HTTP
// (as Confluent's instances do), so that only the primary assigns ids. A newly elected primary first
// writes a NOOP and reads it back, so it has seen every record before it assigns an id. After forwarding
// a write, a secondary reads the topic to its end before answering, so the caller's next read on it sees
// the write. The HTTP server (issue 17) calls handle() with each request.
import type { ConnectionOptions } from 'node:tls'
import { fetchWithTls } from '../http/fetch.js'
import { Cluster } from '../client/cluster-connections.js'
import { Errors, RegistryError, RegistryErrorCode } from './errors.js'
import { KafkaRegistryStore, type KafkaStoreOptions } from './kafka-store.js'
import { LeaderElector, type RegistryIdentity, identityUrl } from './leader-elector.js'
import { type RegistryRequest, type RegistryResponse, handle } from './routes.js'
import { type RegistryOptions, SchemaRegistryService } from './service.js'

export interface RegistryNodeOptions extends KafkaStoreOptions, RegistryOptions {
  /** How other instances reach this one (host.name, the listener's port and scheme). */
  identity: { host: string; port: number; scheme?: string; leaderEligibility?: boolean }
  /** schema.registry.group.id */
  groupId?: string
  sessionTimeoutMs?: number
  heartbeatIntervalMs?: number
  /** How long a write waits for a primary to be elected before it fails (50004). Default 15000. */
  electionWaitMs?: number
  /**
   * TLS of writes forwarded to an https primary: the instance's own ssl.truststore.location checks the
   * primary's certificate, and its key store is the client certificate when the primary requires one.
   */
  peerTls?: ConnectionOptions
}

/** Whether fetch failed because nothing listens at the address (the request was not delivered). */
function refused(e: unknown): boolean {
  // fetch puts the system's error in cause; node:https (fetchWithTls) throws it itself.
  const cause = (e as { cause?: { code?: string } }).cause
  return cause?.code === 'ECONNREFUSED' || (e as { code?: string }).code === 'ECONNREFUSED'
}

export class RegistryNode {
  readonly store: KafkaRegistryStore
  readonly service: SchemaRegistryService
  readonly elector: LeaderElector
  private readonly cluster: Cluster
  private readonly identity: RegistryIdentity
  /** How long a write waits for a primary to be elected before it fails with 50004. */
  private readonly electionWaitMs: number
  private readonly peerTls: ConnectionOptions | undefined
  /** Resolves once this instance, as primary, has caught up with the topic. */
  private primaryReady: Promise<void> = Promise.resolve()

  constructor(opts: RegistryNodeOptions) {
    this.electionWaitMs = opts.electionWaitMs ?? 15_000
    this.peerTls = opts.peerTls
    this.store = new KafkaRegistryStore(opts)
    this.service = new SchemaRegistryService(this.store, opts)
    this.identity = { host: opts.identity.host, port: opts.identity.port, scheme: opts.identity.scheme ?? 'http', leaderEligibility: opts.identity.leaderEligibility ?? true }
    this.cluster = new Cluster({ ...opts, clientId: opts.clientId ?? 'skein-schema-registry-election' })
    this.elector = new LeaderElector(this.cluster, {
      groupId: opts.groupId,
      identity: this.identity,
      sessionTimeoutMs: opts.sessionTimeoutMs,
      heartbeatIntervalMs: opts.heartbeatIntervalMs,
      onElected: (_leader, isSelf) => {
        if (isSelf) this.primaryReady = this.store.noop()
      },
    })
  }

  get url(): string {
    return identityUrl(this.identity)
  }

  get isPrimary(): boolean {
    return this.elector.isLeader
  }

  async start(): Promise<void> {
    await this.store.start()
    this.elector.start()
  }

  /** Waits until some instance (maybe this one) has been elected primary. */
  async waitForPrimary(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!this.elector.leader) {
      if (Date.now() > deadline) throw Errors.unknownLeader()
      await new Promise((r) => setTimeout(r, 50))
    }
    if (this.isPrimary) await this.primaryReady
  }

  handle(req: RegistryRequest): Promise<RegistryResponse> {
    return handle(this.service, req, { forward: (r) => this.forward(r) })
  }

  private async afterPrimaryLost(req: RegistryRequest, lost: RegistryIdentity, until: number): Promise<RegistryResponse | undefined> {
    while (this.elector.leader !== null && identityUrl(this.elector.leader) === identityUrl(lost) && Date.now() < until) await new Promise((r) => setTimeout(r, 100))
    return this.forward(req, until)
  }

  private async forward(req: RegistryRequest, retryUntil?: number): Promise<RegistryResponse | undefined> {
    // Right after a start (or a primary's loss) the election takes a rebalance: a write waits for it
    // (bounded) rather than failing at once with 50004.
    if (!this.elector.leader) await this.waitForPrimary(this.electionWaitMs)
    if (this.elector.isLeader) {
      await this.primaryReady
      return undefined
    }
    const leader = this.elector.leader
    if (!leader) throw Errors.unknownLeader()
    const query = req.query instanceof URLSearchParams ? req.query : new URLSearchParams(Object.entries(req.query ?? {}).filter((e): e is [string, string] => e[1] !== undefined))
    const qs = query.toString()
    let res: Response
    try {
      res = await fetchWithTls(`${identityUrl(leader)}${req.path}${qs ? `?${qs}` : ''}`, {
        method: req.method,
        // The caller's credentials go along: the primary authenticates the forwarded write as the caller.
        headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json', ...(req.authorization === undefined ? {} : { Authorization: req.authorization }) },
        body: req.body,
        signal: AbortSignal.timeout(30_000),
      }, this.peerTls)
    } catch (e) {
      // A primary that refuses connections has gone (its request never arrived): once the group has
      // elected another, the write goes there (or is served here), bounded by the election wait.
      const until = retryUntil ?? Date.now() + this.electionWaitMs
      if (refused(e) && Date.now() < until) return this.afterPrimaryLost(req, leader, until)
      throw new RegistryError(500, RegistryErrorCode.REQUEST_FORWARDING_FAILED, `Error while forwarding the request to the primary: ${(e as Error).message}`)
    }
    const text = await res.text()
    let body: unknown = text
    try {
      body = JSON.parse(text)
    } catch {
      // A raw (non-JSON) body is passed on as it is.
    }
    if (res.ok) await this.store.sync().catch(() => undefined)
    return { status: res.status, body }
  }

  async stop(): Promise<void> {
    await this.elector.stop()
    await this.store.stop()
    await this.cluster.close()
  }
}
