// The TCP edge: one node:net server per listener, each accepted socket wrapped in a Connection.
// Sockets stay on the main thread (Node 20 cannot hand sockets to worker threads); partition work is
// sent to the shard workers and comes back as offsets and file regions.
import { createServer, type Server, type Socket } from 'node:net'
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket, type TlsOptions } from 'node:tls'
import { SaslServerAuthenticator } from '../auth/sasl/authenticator.js'
import type { Listener } from '../config/listeners.js'
import type { Logger } from '../observability/logger.js'
import { Connection, type ConnectionLimits, type FrameHandler } from './connection.js'
import type { ListenerSecurity } from './listener-security.js'

export interface BoundListener {
  listener: Listener
  /** The port actually bound (differs from the configured one when that was 0). */
  port: number
  host: string
}

/** max.connections, max.connections.per.ip and its overrides, max.connection.creation.rate, read at each accept (they are dynamic). */
export interface ConnectionQuotas {
  maxConnections: number
  maxConnectionsPerIp: number
  perIpOverrides: ReadonlyMap<string, number>
  /** New connections per second over all listeners but the inter-broker one (KIP-612). */
  maxConnectionCreationRate: number
  /** The inter-broker listener: never refused by max.connections (KIP-402), only by the per-address limit. */
  interBrokerListener: string
}

export class SocketServer {
  private readonly servers: Server[] = []
  private readonly connections = new Set<Connection>()
  private readonly perIp = new Map<string, number>()
  private counted = 0
  /** A token bucket for max.connection.creation.rate: up to one second's worth of connections at once. */
  private creationTokens = Number.POSITIVE_INFINITY
  private creationRefilledAt = 0
  private accepting = true

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly handler: FrameHandler,
    private readonly log: Logger,
    /** Per listener name; a listener without an entry is PLAINTEXT. */
    private readonly security: ReadonlyMap<string, ListenerSecurity> = new Map(),
    private readonly quotas?: () => ConnectionQuotas,
  ) {}

  get connectionCount(): number {
    return this.connections.size
  }

  /** Open connections per listener name, every listener listed (the connection-count metric). */
  connectionsByListener(): Map<string, number> {
    const out = new Map<string, number>()
    for (const name of this.listenerNames) out.set(name, 0)
    for (const c of this.connections) out.set(c.listenerName, (out.get(c.listenerName) ?? 0) + 1)
    return out
  }

  private readonly listenerNames: string[] = []
  private readonly tlsServers = new Map<string, TlsServer>()

  async listen(listeners: readonly Listener[]): Promise<BoundListener[]> {
    const bound: BoundListener[] = []
    for (const listener of listeners) {
      this.listenerNames.push(listener.name)
      const security = this.security.get(listener.name)
      let server: Server
      if (security?.tls !== undefined) {
        // 'secureConnection': the handshake is done (and the client certificate verified when required).
        const tlsServer = createTlsServer({ ...security.tls.options, noDelay: true }, (socket) => this.accept(socket, listener.name, security))
        this.tlsServers.set(listener.name, tlsServer)
        server = tlsServer
        server.on('tlsClientError', (err) => this.log.debug({ err: err.message, listener: listener.name }, 'TLS handshake failed'))
      } else {
        server = createServer({ noDelay: true, pauseOnConnect: false }, (socket) => this.accept(socket, listener.name, security))
      }
      const host = listener.host === '' ? '0.0.0.0' : listener.host
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject)
        server.listen({ host, port: listener.port, backlog: 1024 }, () => {
          server.off('error', reject)
          resolve()
        })
      })
      server.on('error', (err) => this.log.error({ err: err.message, listener: listener.name }, 'listener error'))
      this.servers.push(server)
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : listener.port
      bound.push({ listener, port, host })
    }
    return bound
  }

  private accept(socket: Socket, listenerName: string, security: ListenerSecurity | undefined): void {
    if (!this.accepting) {
      socket.destroy()
      return
    }
    const release = this.admit(socket, listenerName)
    if (release === null) return
    const conn = new Connection(socket, listenerName, this.limits, this.handler, this.log, (c) => {
      this.connections.delete(c)
      release()
    })
    if (security !== undefined) {
      if (security.tls !== undefined) {
        conn.tls = true
        conn.principal = security.principalOf(socket as TLSSocket)
      }
      if (security.sasl !== undefined) {
        conn.sasl = new SaslServerAuthenticator(security.sasl)
        conn.maxFrameBytes = Math.min(security.saslMaxReceiveBytes, this.limits.maxRequestBytes)
      }
    }
    this.connections.add(conn)
  }

  /**
   * Counts a new connection against max.connections and max.connections.per.ip; over either, the socket is
   * closed at once and null returned. Otherwise returns what gives the slot back when the connection ends.
   */
  private admit(socket: Socket, listenerName: string): (() => void) | null {
    const q = this.quotas?.()
    if (q === undefined) return () => {}
    const ip = socket.remoteAddress ?? ''
    const fromIp = this.perIp.get(ip) ?? 0
    const ipLimit = q.perIpOverrides.get(ip) ?? q.maxConnectionsPerIp
    // KIP-402: the inter-broker listener is counted but never refused by the broker-wide limit.
    const overTotal = this.counted >= q.maxConnections && listenerName !== q.interBrokerListener
    if (!overTotal && fromIp < ipLimit && listenerName !== q.interBrokerListener && !this.takeCreationToken(q.maxConnectionCreationRate)) {
      this.log.debug({ remote: ip, listener: listenerName }, 'refusing a connection: max.connection.creation.rate reached')
      socket.destroy()
      return null
    }
    if (overTotal || fromIp >= ipLimit) {
      this.log.debug({ remote: ip, listener: listenerName, fromIp, total: this.counted }, overTotal ? 'refusing a connection: max.connections reached' : 'refusing a connection: max.connections.per.ip reached')
      socket.destroy()
      return null
    }
    this.counted++
    this.perIp.set(ip, fromIp + 1)
    return () => {
      this.counted--
      const left = (this.perIp.get(ip) ?? 1) - 1
      if (left <= 0) this.perIp.delete(ip)
      else this.perIp.set(ip, left)
    }
  }

  /** One connection's worth of max.connection.creation.rate, or false when the rate is used up. */
  private takeCreationToken(rate: number): boolean {
    if (rate >= 2147483647) return true
    const now = performance.now()
    this.creationTokens = Math.min(rate, this.creationTokens + ((now - this.creationRefilledAt) / 1000) * rate)
    this.creationRefilledAt = now
    if (this.creationTokens < 1) return false
    this.creationTokens -= 1
    return true
  }

  /** New key and trust material for a TLS listener's new connections (dynamic SSL reconfiguration); open ones keep theirs. */
  setSecureContext(listenerName: string, options: TlsOptions): void {
    this.tlsServers.get(listenerName)?.setSecureContext(options)
  }

  /** Stops accepting, waits (bounded) for in-flight requests to be answered, then closes everything. */
  async shutdown(graceMs: number): Promise<void> {
    this.accepting = false
    // server.close() only calls back once every connection has ended, so close them before awaiting it.
    const closed = Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
    const deadline = Date.now() + graceMs
    while (Date.now() < deadline && [...this.connections].some((c) => !c.idle)) {
      await new Promise((r) => setTimeout(r, 10))
    }
    for (const conn of this.connections) conn.close()
    this.connections.clear()
    await closed
  }
}
