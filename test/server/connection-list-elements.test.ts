// One connection pipelining heavy requests (issue 30): the list elements a request decoded are held by its
// connection until its answer is written, and no further request of that connection starts while they pass
// request.max.list.elements, even frames that arrived in the same read. A Connection on a loopback socket
// with a handler standing in for the dispatcher.
import { createServer, connect, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { silentLogger } from '../../src/observability/logger.js'
import { Connection, type FrameHandler, type Response } from '../../src/server/connection.js'

const LIMIT = 100_000

/** A frame whose body is its sequence number and the list elements its "decoding" counts. */
function frame(seq: number, elements: number): Buffer {
  const b = Buffer.alloc(12)
  b.writeInt32BE(8, 0)
  b.writeInt16BE(3, 4) // an API key other than Produce (0), whose frames take another path
  b.writeInt16BE(seq, 6)
  b.writeInt32BE(elements, 8)
  return b
}

/** An answer frame carrying the sequence number. */
function answer(seq: number): Response {
  const b = Buffer.alloc(6)
  b.writeInt32BE(2, 0)
  b.writeInt16BE(seq, 4)
  return { chunks: [b] }
}

describe('a connection holds the list elements of its requests', () => {
  let server: Server | undefined
  let client: Socket | undefined

  afterEach(() => {
    client?.destroy()
    server?.close()
  })

  /** Serves one connection with `handler`; sends `frames` in one write; resolves the answers' sequence numbers once `count` came. */
  async function run(handler: FrameHandler, frames: Buffer[], count: number): Promise<number[]> {
    server = createServer((socket) => {
      new Connection(socket, 'PLAINTEXT', { maxRequestBytes: 1024, idleTimeoutMs: 0, maxInFlightBytes: 1 << 20, maxInFlightRequests: 64 }, handler, silentLogger(), () => undefined)
    })
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r))
    const port = (server.address() as { port: number }).port
    const c = connect({ host: '127.0.0.1', port })
    client = c
    await new Promise<void>((r) => c.once('connect', () => r()))
    const seen: number[] = []
    let pending = Buffer.alloc(0)
    const done = new Promise<number[]>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${seen.length} of ${count} answers`)), 10_000)
      c.on('data', (d: Buffer) => {
        pending = Buffer.concat([pending, d])
        while (pending.length >= 6) {
          seen.push(pending.readInt16BE(4))
          pending = pending.subarray(6)
        }
        if (seen.length >= count) {
          clearTimeout(timer)
          resolve(seen)
        }
      })
    })
    // One write: the frames arrive together and are all buffered before the first is handled.
    c.write(Buffer.concat(frames))
    return done
  }

  it('starts no request while those in flight hold more than request.max.list.elements', async () => {
    let running = 0
    let mostRunning = 0
    const handler: FrameHandler = async (f, conn) => {
      const seq = f.readInt16BE(2)
      conn.holdListElements(f.readInt32BE(4), LIMIT)
      mostRunning = Math.max(mostRunning, ++running)
      await new Promise((r) => setTimeout(r, 20))
      running--
      return answer(seq)
    }
    // Six heavy requests of 60,000 elements: the second passes the limit, so two at most are in flight.
    const seen = await run(handler, Array.from({ length: 6 }, (_, i) => frame(i, 60_000)), 6)
    expect(seen).toEqual([0, 1, 2, 3, 4, 5])
    expect(mostRunning).toBe(2)
  })

  it('runs light requests side by side as before', async () => {
    let running = 0
    let mostRunning = 0
    const handler: FrameHandler = async (f, conn) => {
      const seq = f.readInt16BE(2)
      conn.holdListElements(f.readInt32BE(4), LIMIT)
      mostRunning = Math.max(mostRunning, ++running)
      await new Promise((r) => setTimeout(r, 20))
      running--
      return answer(seq)
    }
    const seen = await run(handler, Array.from({ length: 6 }, (_, i) => frame(i, 10)), 6)
    expect(seen).toEqual([0, 1, 2, 3, 4, 5])
    expect(mostRunning).toBe(6)
  })
})
