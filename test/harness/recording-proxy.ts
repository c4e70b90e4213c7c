// A TCP proxy in front of a broker that records the requests clients send (API key, version and, for the
// keys asked for, the whole frame) and can rewrite nothing: it is how tests see which versions a real
// client picks and what it puts in them (fetch session ids and epochs, topic ids). Brokers under test
// advertise the proxy (advertised.listeners), so clients reconnect through it after Metadata.
import { createServer, connect, type Server, type Socket } from 'node:net'
import { readRequestHeader } from '../../src/protocol/header.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { freePort, startTestBroker, type TestBroker } from './broker.js'

export interface RecordedRequest {
  apiKey: number
  apiVersion: number
  correlationId: number
  /** The request body after the header, for the API keys the proxy was asked to keep. */
  body?: Buffer
}

export class RecordingProxy {
  readonly requests: RecordedRequest[] = []
  readonly #sockets = new Set<Socket>()

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly keepBodies: ReadonlySet<number>,
  ) {}

  /** Listens on `port` (0: any) and forwards every connection to 127.0.0.1:target(). */
  static start(port: number, target: () => number, keepBodiesOf: number[] = []): Promise<RecordingProxy> {
    return new Promise((resolve, reject) => {
      const server = createServer()
      server.once('error', reject)
      server.listen({ host: '127.0.0.1', port }, () => {
        const addr = server.address()
        const proxy = new RecordingProxy(server, typeof addr === 'object' && addr !== null ? addr.port : port, new Set(keepBodiesOf))
        server.on('connection', (client) => proxy.#pipe(client, target()))
        resolve(proxy)
      })
    })
  }

  /** The versions sent for one API, in order. */
  versions(apiKey: number): number[] {
    return this.requests.filter((r) => r.apiKey === apiKey).map((r) => r.apiVersion)
  }

  #pipe(client: Socket, targetPort: number): void {
    const upstream = connect({ host: '127.0.0.1', port: targetPort })
    this.#sockets.add(client).add(upstream)
    let pending: Buffer = Buffer.alloc(0)
    client.on('data', (d: Buffer) => {
      pending = pending.length === 0 ? d : Buffer.concat([pending, d])
      while (pending.length >= 4) {
        const size = pending.readInt32BE(0)
        if (pending.length < 4 + size) break
        this.#record(pending.subarray(4, 4 + size))
        pending = pending.subarray(4 + size)
      }
      upstream.write(d)
    })
    upstream.on('data', (d: Buffer) => client.write(d))
    const close = (): void => {
      client.destroy()
      upstream.destroy()
      this.#sockets.delete(client)
      this.#sockets.delete(upstream)
    }
    client.on('close', close).on('error', close)
    upstream.on('close', close).on('error', close)
  }

  #record(frame: Buffer): void {
    const apiKey = frame.readInt16BE(0)
    const apiVersion = frame.readInt16BE(2)
    const correlationId = frame.readInt32BE(4)
    const entry: RecordedRequest = { apiKey, apiVersion, correlationId }
    if (this.keepBodies.has(apiKey)) {
      const r = new Reader(Buffer.from(frame))
      readRequestHeader(r)
      entry.body = Buffer.from(frame.subarray(frame.length - r.remaining))
    }
    this.requests.push(entry)
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

export interface ProxiedBroker {
  tb: TestBroker
  proxy: RecordingProxy
  /** Where the broker itself listens (raw clients that should not be recorded connect here). */
  brokerPort: number
  /** '127.0.0.1:<proxy port>' */
  bootstrap: string
  stop(): Promise<void>
}

/** A test broker that advertises a recording proxy in front of it. */
export async function startProxiedBroker(overrides: string[] = [], keepBodiesOf: number[] = []): Promise<ProxiedBroker> {
  const proxyPort = await freePort()
  const tb = await startTestBroker([`advertised.listeners=PLAINTEXT://127.0.0.1:${proxyPort}`, ...overrides])
  const brokerPort = tb.broker.bound[0]!.port
  const proxy = await RecordingProxy.start(proxyPort, () => brokerPort, keepBodiesOf)
  return {
    tb,
    proxy,
    brokerPort,
    bootstrap: `127.0.0.1:${proxy.port}`,
    async stop() {
      await proxy.close()
      await tb.stop()
    },
  }
}
