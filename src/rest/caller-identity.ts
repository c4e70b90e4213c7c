// The caller is the principal (issue 31): with authentication.method=BASIC and
// authentication.kafka.sasl.mechanism set, each authenticated user's requests go through an admin client
// and a producer that log in to Kafka as that user (SASL, with the password the user sent), so the
// broker's ACLs judge the HTTP caller exactly as a Kafka client. The clients are pooled per user: at most
// authentication.kafka.max.users are held, and those unused for authentication.kafka.idle.ms are closed.
//
// The routes keep reading ctx.admin and ctx.producer: the request's clients ride in an AsyncLocalStorage
// set around each handler (wrapServer), which follows the handler across its awaits, so no route has to
// pass the caller along by hand.
import { createHash, timingSafeEqual } from 'node:crypto'
import { AsyncLocalStorage } from 'node:async_hooks'
import { Admin } from '../client/admin.js'
import { Producer, type ProducerOptions } from '../client/producer.js'
import type { ClientSecurity } from '../client/sasl.js'
import type { RestCallerSettings } from '../config/client-http-auth.js'
import { type Handler, HttpError, type HttpPrincipal, type HttpRequest, type HttpServer, type WebSocketConnection, type WebSocketRoute } from '../http/index.js'
import type { Logger } from '../observability/logger.js'
import { RestError } from './errors.js'

/** One user's Kafka clients. */
export interface CallerClients {
  readonly user: string
  readonly admin: Admin
  readonly producer: Producer
  /** What a consumer created for this user connects with (v2 consumer instances). */
  readonly bootstrapServers: readonly string[]
  readonly security: ClientSecurity
}

/** A WebSocket's data as the server holds it: the route's own, and the caller whose clients it uses. */
interface Carried<T> {
  inner: T
  caller: Entry | undefined
}

/** A RestError from clientsFor as the HTTP adapter answers it (Confluent's JSON shape). */
function asHttpError(e: unknown): unknown {
  return e instanceof RestError ? new HttpError(e.status, e.message, { 'Content-Type': 'application/json' }, JSON.stringify(e.toJSON())) : e
}

interface Entry extends CallerClients {
  passwordDigest: Buffer
  lastUsed: number
  /** Requests running with these clients now: never closed under them. */
  inUse: number
}

const current = new AsyncLocalStorage<CallerClients>()

/** The clients of the request being handled, or undefined when it runs with the proxy's own identity. */
export function currentCaller(): CallerClients | undefined {
  return current.getStore()
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest()

export class CallerClientPool {
  private readonly entries = new Map<string, Entry>()
  private readonly timer: NodeJS.Timeout
  private closed = false

  constructor(
    private readonly settings: RestCallerSettings & { mechanism: NonNullable<RestCallerSettings['mechanism']> },
    private readonly bootstrapServers: readonly string[],
    /** The proxy's producer options (acks, linger, ...) without its identity. */
    private readonly producerOptions: Omit<ProducerOptions, 'bootstrapServers' | 'clientId' | 'security'>,
    private readonly log: Logger,
    /** TLS toward the broker (authentication.kafka.security.protocol=SASL_SSL), from the proxy's client.ssl.*; undefined: SASL_PLAINTEXT. */
    private readonly tls?: ClientSecurity['tls'],
  ) {
    this.timer = setInterval(() => this.closeIdle(Date.now()), Math.max(250, Math.min(10_000, Math.floor(settings.idleMs / 4))))
    this.timer.unref()
  }

  /** Users whose clients are held now. */
  get size(): number {
    return this.entries.size
  }

  /** The user's clients, made on first use; a new password (the user's changed) replaces them. */
  clientsFor(p: HttpPrincipal): Entry {
    if (this.closed) throw new RestError(503, 50301, 'The REST Proxy is shutting down')
    const sent = digest(p.password)
    const held = this.entries.get(p.user)
    if (held !== undefined) {
      if (timingSafeEqual(held.passwordDigest, sent)) {
        // Most recently used last: the Map's order is the eviction order.
        this.entries.delete(p.user)
        this.entries.set(p.user, held)
        return held
      }
      this.drop(held)
    }
    if (this.entries.size >= this.settings.maxUsers && !this.evictOne()) {
      throw new RestError(429, 42901, `Too many users at once: all ${this.settings.maxUsers} held users' Kafka clients are busy (authentication.kafka.max.users)`)
    }
    const bootstrapServers = this.settings.bootstrapServers ?? this.bootstrapServers
    const security: ClientSecurity = { sasl: { mechanism: this.settings.mechanism, username: p.user, password: p.password }, ...(this.tls === undefined ? {} : { tls: this.tls }) }
    const clientId = `skein-rest-user-${p.user}`.slice(0, 200)
    const entry: Entry = {
      user: p.user,
      admin: new Admin({ bootstrapServers, clientId, security }),
      producer: new Producer({ ...this.producerOptions, bootstrapServers, clientId, security }),
      bootstrapServers,
      security,
      passwordDigest: sent,
      lastUsed: Date.now(),
      inUse: 0,
    }
    this.entries.set(p.user, entry)
    return entry
  }

  /** Closes the least recently used user's clients that no request is using; false when all are busy. */
  private evictOne(): boolean {
    for (const e of this.entries.values()) {
      if (e.inUse === 0) {
        this.drop(e)
        return true
      }
    }
    return false
  }

  private drop(e: Entry): void {
    if (this.entries.get(e.user) === e) this.entries.delete(e.user)
    void this.closeClients(e)
  }

  private async closeClients(e: Entry): Promise<void> {
    await e.producer.close().catch((err: unknown) => this.log.debug({ user: e.user, err: (err as Error).message }, 'closing a user producer failed'))
    await e.admin.close().catch(() => {})
  }

  private closeIdle(now: number): void {
    for (const e of [...this.entries.values()]) {
      if (e.inUse === 0 && now - e.lastUsed >= this.settings.idleMs) this.drop(e)
    }
  }

  /** Runs fn with the caller's clients as ctx.admin/ctx.producer (a request without principal: as it is). */
  run<T>(principal: HttpPrincipal | null, fn: () => T | Promise<T>): T | Promise<T> {
    if (principal === null) return fn()
    const e = this.clientsFor(principal)
    e.inUse++
    const done = (): void => {
      e.inUse--
      e.lastUsed = Date.now()
    }
    let result: T | Promise<T>
    try {
      result = current.run(e, fn)
    } catch (err) {
      done()
      throw err
    }
    if (result instanceof Promise) return result.finally(done)
    done()
    return result
  }

  /**
   * The server as the routes see it: each handler runs as its caller. A failure to get the caller's
   * clients (too many users) is answered as the route's error.
   */
  wrapServer(server: HttpServer): HttpServer {
    const asCaller = <R extends HttpRequest>(handler: Handler<R>): Handler<R> => (req, res) => {
      try {
        return this.run(req.principal, () => handler(req, res))
      } catch (e) {
        // Only clientsFor throws before the handler runs: its RestError in Confluent's JSON shape.
        throw asHttpError(e)
      }
    }
    return new Proxy(server, {
      get: (target, prop, receiver) => {
        if (prop === 'route') return ((method, pattern, handler, opts) => target.route(method, pattern, asCaller(handler), opts)) satisfies HttpServer['route']
        if (prop === 'streamRoute') return ((method, pattern, handler, opts) => target.streamRoute(method, pattern, asCaller(handler), opts)) satisfies HttpServer['streamRoute']
        if (prop === 'ws') return (<T>(pattern: string, route: WebSocketRoute<T>) => target.ws(pattern, this.wsAsCaller(route))) satisfies HttpServer['ws']
        const v: unknown = Reflect.get(target, prop, receiver)
        return typeof v === 'function' ? v.bind(target) : v
      },
    })
  }

  /**
   * A WebSocket route whose upgrade and callbacks run as the caller who opened it (their clients, from
   * the upgrade's credentials); the caller's clients are held in use from open to close, so the idle
   * sweep and the cap never close them under an open socket. The route sees its own data, as written.
   */
  private wsAsCaller<T>(route: WebSocketRoute<T>): WebSocketRoute<Carried<T>> {
    const views = new WeakMap<WebSocketConnection<Carried<T>>, WebSocketConnection<T>>()
    // The connection as the route sees it: the same object for the socket's life, data unwrapped.
    const view = (ws: WebSocketConnection<Carried<T>>): WebSocketConnection<T> => {
      let v = views.get(ws)
      if (v === undefined) {
        v = new Proxy(ws, {
          get: (target, prop) => {
            if (prop === 'data') return target.data.inner
            const value: unknown = Reflect.get(target, prop, target)
            return typeof value === 'function' ? value.bind(target) : value
          },
        }) as unknown as WebSocketConnection<T>
        views.set(ws, v)
      }
      return v
    }
    const within = <R>(ws: WebSocketConnection<Carried<T>>, fn: () => R): R => (ws.data.caller === undefined ? fn() : current.run(ws.data.caller, fn))
    return {
      maxPayloadLength: route.maxPayloadLength,
      maxBackpressure: route.maxBackpressure,
      idleTimeoutSeconds: route.idleTimeoutSeconds,
      upgrade: async (req) => {
        let caller: Entry | undefined
        try {
          caller = req.principal === null ? undefined : this.clientsFor(req.principal)
        } catch (e) {
          throw asHttpError(e)
        }
        const upgrade = route.upgrade
        const inner = upgrade === undefined ? (undefined as T) : await (caller === undefined ? upgrade(req) : current.run(caller, () => upgrade(req)))
        return { inner, caller }
      },
      open: (ws) => {
        if (ws.data.caller !== undefined) ws.data.caller.inUse++
        if (route.open !== undefined) within(ws, () => route.open!(view(ws)))
      },
      message: route.message === undefined ? undefined : (ws, message, isBinary) => within(ws, () => route.message!(view(ws), message, isBinary)),
      drain: route.drain === undefined ? undefined : (ws) => within(ws, () => route.drain!(view(ws))),
      close: (ws, code, reason) => {
        const caller = ws.data.caller
        try {
          if (route.close !== undefined) within(ws, () => route.close!(view(ws), code, reason))
        } finally {
          if (caller !== undefined) {
            caller.inUse--
            caller.lastUsed = Date.now()
          }
        }
      },
    }
  }

  async close(): Promise<void> {
    this.closed = true
    clearInterval(this.timer)
    const all = [...this.entries.values()]
    this.entries.clear()
    await Promise.all(all.map((e) => this.closeClients(e)))
  }
}
