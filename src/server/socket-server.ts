// The TCP edge: one node:net server per listener, each accepted socket wrapped in a Connection.
// Sockets stay on the main thread (Node 20 cannot hand sockets to worker threads); partition work is
// sent to the shard workers and comes back as offsets and file regions.
import { createServer, type Server, type Socket } from 'node:net'
import type { Listener } from '../config/listeners.js'
import type { Logger } from '../observability/logger.js'
import { Connection, type ConnectionLimits, type FrameHandler } from './connection.js'

export interface BoundListener {
  listener: Listener
  /** The port actually bound (differs from the configured one when that was 0). */
  port: number
  host: string
}

export class SocketServer {
  private readonly servers: Server[] = []
  private readonly connections = new Set<Connection>()
  private accepting = true

  constructor(
    private readonly limits: ConnectionLimits,
    private readonly handler: FrameHandler,
    private readonly log: Logger,
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

  async listen(listeners: readonly Listener[]): Promise<BoundListener[]> {
    const bound: BoundListener[] = []
    for (const listener of listeners) {
      this.listenerNames.push(listener.name)
      const server = createServer({ noDelay: true, pauseOnConnect: false }, (socket) => this.accept(socket, listener.name))
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

  private accept(socket: Socket, listenerName: string): void {
    if (!this.accepting) {
      socket.destroy()
      return
    }
    const conn = new Connection(socket, listenerName, this.limits, this.handler, this.log, (c) => this.connections.delete(c))
    this.connections.add(conn)
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
