// A TCP proxy in front of a broker that sabotages Produce requests on purpose, for retry and
// exactly-once tests with real sockets. It forwards frame by frame; for each Produce request a policy
// picks what happens:
//   'pass'        forwarded, its answer too;
//   'cut-request' half of it is forwarded, then both connections are cut: the broker never sees it whole;
//   'cut-answer'  forwarded whole, its answer swallowed and both connections cut: the broker wrote it but
//                 the client cannot know;
//   'corrupt'     forwarded with its last byte flipped, which lands in the records of the request's last
//                 partition: the broker refuses that batch (CORRUPT_MESSAGE, retriable) and takes the
//                 others, so that partition's next batches arrive after a gap;
//   'drop'        never forwarded and the connection kept: later requests on the connection go on and are
//                 answered (a client that checks the order of answers gives the connection up).
// Broker to advertise: the proxy's port (advertised.listeners), so that clients reconnect through it.
import { connect, createServer, type Server, type Socket } from 'node:net'

export type ProduceSabotage = 'pass' | 'cut-request' | 'cut-answer' | 'corrupt' | 'drop'

const PRODUCE = 0

export class SabotagingProxy {
  readonly sockets = new Set<Socket>()
  /** Produce requests seen, and what was done to them. */
  produceSeen = 0
  readonly done: Record<ProduceSabotage, number> = { pass: 0, 'cut-request': 0, 'cut-answer': 0, corrupt: 0, drop: 0 }
  /** Most Produce requests forwarded on one connection and not answered yet, at any moment. */
  maxProduceInFlight = 0
  /** Decides the fate of the n-th Produce request (1-based); default: pass everything. */
  policy: (n: number) => ProduceSabotage = () => 'pass'

  private constructor(
    readonly server: Server,
    readonly port: number,
  ) {}

  static async start(port: number, targetPort: () => number): Promise<SabotagingProxy> {
    const server = createServer()
    const proxy = new SabotagingProxy(server, port)
    server.on('connection', (client) => proxy.pipe(client, targetPort()))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen({ host: '127.0.0.1', port }, resolve)
    })
    return proxy
  }

  /** Sabotages counted so far (everything but 'pass'). */
  get sabotaged(): number {
    return this.done['cut-request'] + this.done['cut-answer'] + this.done.corrupt + this.done.drop
  }

  private pipe(client: Socket, targetPort: number): void {
    const upstream = connect({ host: '127.0.0.1', port: targetPort })
    this.sockets.add(client)
    this.sockets.add(upstream)
    const cut = (): void => {
      client.destroy()
      upstream.destroy()
    }
    for (const s of [client, upstream]) {
      s.on('error', cut)
      s.on('close', () => {
        this.sockets.delete(s)
        cut()
      })
    }
    const swallow = new Set<number>()
    const produces = new Set<number>()
    frames(client, (frame) => {
      if (frame.readInt16BE(4) === PRODUCE) {
        const fate = this.policy(++this.produceSeen)
        this.done[fate]++
        if (fate === 'cut-request') {
          upstream.write(frame.subarray(0, frame.length >> 1), cut)
          return
        }
        if (fate === 'drop') return
        if (fate === 'cut-answer') swallow.add(frame.readInt32BE(8))
        if (fate === 'corrupt') {
          // The last record byte of the last partition (its batch CRC fails). Produce v9+ (flexible) ends in
          // three empty tag sections after it: the partition's, the topic's and the request's.
          frame = Buffer.from(frame)
          frame[frame.length - (frame.readInt16BE(6) >= 9 ? 4 : 1)] ^= 0xff
        }
        produces.add(frame.readInt32BE(8))
        this.maxProduceInFlight = Math.max(this.maxProduceInFlight, produces.size)
      }
      upstream.write(frame)
    })
    frames(upstream, (frame) => {
      const correlationId = frame.readInt32BE(4)
      produces.delete(correlationId)
      if (swallow.has(correlationId)) cut()
      else client.write(frame)
    })
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/** Calls onFrame with each whole size-prefixed frame (prefix included) read from s. */
function frames(s: Socket, onFrame: (frame: Buffer) => void): void {
  let buf: Buffer = Buffer.alloc(0)
  s.on('data', (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d])
    while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
      const size = 4 + buf.readInt32BE(0)
      onFrame(buf.subarray(0, size))
      buf = buf.subarray(size)
    }
  })
}
