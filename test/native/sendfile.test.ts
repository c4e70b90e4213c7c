import { createHash, randomBytes } from 'node:crypto'
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { createServer, connect } from 'node:net'
import type { Server, Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { native, socketFd } from '../../src/addon/index.js'

let dir: string
const cleanups: Array<() => void> = []

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'skein-sendfile-'))
})

afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup()
  rmSync(dir, { recursive: true, force: true })
})

interface Pair {
  sender: Socket
  receiver: Socket
}

// A loopback TCP connection: `sender` is the broker side (accepted socket), `receiver` the client.
async function connectPair(): Promise<Pair> {
  const server: Server = createServer({ allowHalfOpen: true })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as { port: number }).port
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve))
  const receiver = connect({ port, host: '127.0.0.1', allowHalfOpen: true })
  await new Promise<void>((resolve) => receiver.once('connect', resolve))
  const sender = await accepted
  cleanups.push(() => {
    sender.destroy()
    receiver.destroy()
    server.close()
  })
  return { sender, receiver }
}

function writeFile(name: string, chunks: Buffer[]): { fd: number; size: number; sha256: string } {
  const path = join(dir, name)
  const fd = openSync(path, 'w+')
  const hash = createHash('sha256')
  let size = 0
  for (const chunk of chunks) {
    writeSync(fd, chunk)
    hash.update(chunk)
    size += chunk.length
  }
  cleanups.push(() => closeSync(fd))
  return { fd, size, sha256: hash.digest('hex') }
}

function sendfile(socket: Socket, fd: number, position: number, length: number): Promise<{ err: NodeJS.ErrnoException | null; sent: number }> {
  return new Promise((resolve) => {
    native.sendfile(socketFd(socket), fd, position, length, (err, sent) => resolve({ err, sent }))
  })
}

function collect(socket: Socket): { bytes: () => Buffer; total: () => number; waitFor: (n: number) => Promise<void> } {
  const chunks: Buffer[] = []
  let total = 0
  let waiter: { n: number; resolve: () => void } | undefined
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk)
    total += chunk.length
    if (waiter !== undefined && total >= waiter.n) waiter.resolve()
  })
  return {
    bytes: () => Buffer.concat(chunks),
    total: () => total,
    waitFor: (n) => (total >= n ? Promise.resolve() : new Promise((resolve) => (waiter = { n, resolve }))),
  }
}

describe('sendfile', () => {
  it('sends 64 MiB to a slow reader without blocking the JS thread', async () => {
    const mib = 1 << 20
    const file = writeFile('big.log', Array.from({ length: 64 }, () => randomBytes(mib)))
    const { sender, receiver } = await connectPair()

    // The reader lives in this same thread: if sendfile blocked the thread, nothing would drain the
    // socket and the test would hang. It also pauses every 4 MiB, so the socket fills (EAGAIN).
    const hash = createHash('sha256')
    let received = 0
    let nextPause = 4 * mib
    const done = new Promise<void>((resolve) => {
      receiver.on('data', (chunk: Buffer) => {
        hash.update(chunk)
        received += chunk.length
        if (received >= file.size) resolve()
        else if (received >= nextPause) {
          nextPause += 4 * mib
          receiver.pause()
          setTimeout(() => receiver.resume(), 15)
        }
      })
    })
    let ticks = 0
    const ticker = setInterval(() => ticks++, 5)
    const started = Date.now()
    let callbackFired = false
    const result = sendfile(sender, file.fd, 0, file.size).then((r) => {
      callbackFired = true
      return r
    })
    expect(callbackFired).toBe(false)
    const { err, sent } = await result
    const elapsed = Date.now() - started
    await done
    clearInterval(ticker)
    expect(err).toBeNull()
    expect(sent).toBe(file.size)
    expect(received).toBe(file.size)
    expect(hash.digest('hex')).toBe(file.sha256)
    // Kernel buffers hold a few MiB at most: the rest waited on the reader's pauses, on the loop.
    expect(elapsed).toBeGreaterThanOrEqual(100)
    expect(ticks).toBeGreaterThanOrEqual(5)
  })

  it('interleaves with socket.write()s in order', async () => {
    const regions = [randomBytes(200_000), randomBytes(1 << 20), randomBytes(3 << 20)]
    const file = writeFile('seq.log', regions)
    const { sender, receiver } = await connectPair()
    const sink = collect(receiver)
    const expected: Buffer[] = []
    let position = 0
    for (let i = 0; i < regions.length; i++) {
      const header = Buffer.from(`header-${i}|`)
      await new Promise<void>((resolve, reject) => sender.write(header, (err) => (err ? reject(err) : resolve())))
      const { err, sent } = await sendfile(sender, file.fd, position, regions[i]!.length)
      expect(err).toBeNull()
      expect(sent).toBe(regions[i]!.length)
      expected.push(header, regions[i]!)
      position += regions[i]!.length
    }
    const empty = await sendfile(sender, file.fd, 0, 0)
    expect(empty).toEqual({ err: null, sent: 0 })
    const trailer = Buffer.from('|end')
    sender.write(trailer)
    expected.push(trailer)
    const want = Buffer.concat(expected)
    await sink.waitFor(want.length)
    expect(sink.total()).toBe(want.length)
    expect(sink.bytes().equals(want)).toBe(true)
  })

  it('sends a range from the middle of the file', async () => {
    const data = randomBytes(100_000)
    const file = writeFile('mid.log', [data])
    const { sender, receiver } = await connectPair()
    const sink = collect(receiver)
    const { err, sent } = await sendfile(sender, file.fd, 12_345, 50_000)
    expect(err).toBeNull()
    expect(sent).toBe(50_000)
    await sink.waitFor(50_000)
    expect(sink.bytes().equals(data.subarray(12_345, 62_345))).toBe(true)
  })

  it('reports EPIPE/ECONNRESET when the peer has gone, without crashing', async () => {
    const file = writeFile('gone.log', [randomBytes(16 << 20)])
    const { sender, receiver } = await connectPair()
    sender.on('error', () => {}) // the reset also surfaces on the sender's read side
    const ended = new Promise<void>((resolve) => sender.once('end', resolve))
    receiver.destroy()
    await ended
    const { err, sent } = await sendfile(sender, file.fd, 0, file.size)
    expect(err).not.toBeNull()
    expect(['EPIPE', 'ECONNRESET']).toContain(err!.code)
    expect(err!.syscall).toBe('sendfile')
    expect(sent).toBeLessThan(file.size)
  })

  it('reports an error when position + length runs past the end of the file', async () => {
    const data = randomBytes(1000)
    const file = writeFile('short.log', [data])
    const { sender, receiver } = await connectPair()
    const sink = collect(receiver)
    const partial = await sendfile(sender, file.fd, 500, 1000)
    expect(partial.err).not.toBeNull()
    expect(partial.err!.code).toBe('ERR_SENDFILE_EOF')
    expect(partial.sent).toBe(500)
    await sink.waitFor(500)
    expect(sink.bytes().equals(data.subarray(500))).toBe(true)

    const beyond = await sendfile(sender, file.fd, 5000, 10)
    expect(beyond.err!.code).toBe('ERR_SENDFILE_EOF')
    expect(beyond.sent).toBe(0)
  })

  it('reports a bad file descriptor through the callback', async () => {
    const { sender } = await connectPair()
    const badSocket = await new Promise<{ err: NodeJS.ErrnoException | null; sent: number }>((resolve) =>
      native.sendfile(999_999, 0, 0, 10, (err, sent) => resolve({ err, sent })),
    )
    expect(badSocket.err!.code).toBe('EBADF')
    const badFile = await new Promise<{ err: NodeJS.ErrnoException | null; sent: number }>((resolve) =>
      native.sendfile(socketFd(sender), 999_999, 0, 10, (err, sent) => resolve({ err, sent })),
    )
    expect(badFile.err!.code).toBe('EBADF')
    expect(badFile.sent).toBe(0)
  })

  it('rejects bad arguments synchronously', async () => {
    const file = writeFile('args.log', [Buffer.alloc(10)])
    const cb = () => {}
    expect(() => native.sendfile(-1, file.fd, 0, 1, cb)).toThrow(RangeError)
    expect(() => native.sendfile(1.5, file.fd, 0, 1, cb)).toThrow(RangeError)
    expect(() => native.sendfile(3, file.fd, -1, 1, cb)).toThrow(RangeError)
    expect(() => native.sendfile(3, file.fd, 0, 2 ** 60, cb)).toThrow(RangeError)
    expect(() => native.sendfile(3, file.fd, 0, 1, undefined as unknown as typeof cb)).toThrow(TypeError)
    // A regular file descriptor is blocking: sendfile refuses it rather than stall the thread.
    expect(() => native.sendfile(file.fd, file.fd, 0, 1, cb)).toThrow(/blocking/)
  })
})

describe('trySendfile', () => {
  it('sends a small range at once, in order after a socket.write that reached the kernel', async () => {
    const data = randomBytes(20_000)
    const file = writeFile('try-small.log', [data])
    const { sender, receiver } = await connectPair()
    const sink = collect(receiver)
    sender.write(Buffer.from('head'))
    // The write went straight to the kernel: nothing is queued in the stream.
    expect(sender.writableLength).toBe(0)
    expect(native.trySendfile(socketFd(sender), file.fd, 1000, 5000)).toBe(5000)
    await sink.waitFor(5004)
    expect(sink.bytes().equals(Buffer.concat([Buffer.from('head'), data.subarray(1000, 6000)]))).toBe(true)
  })

  it('returns a partial count when the socket buffer fills, and sendfile finishes the rest byte-exact', async () => {
    const file = writeFile('try-big.log', [randomBytes(32 << 20)])
    const { sender, receiver } = await connectPair()
    receiver.pause()
    const first = native.trySendfile(socketFd(sender), file.fd, 0, file.size)
    expect(first).toBeGreaterThan(0)
    expect(first).toBeLessThan(file.size)
    // Full: nothing more goes out until the reader reads.
    expect(native.trySendfile(socketFd(sender), file.fd, first, file.size - first)).toBe(0)
    const hash = createHash('sha256')
    let total = 0
    const received = new Promise<void>((resolve) => {
      receiver.on('data', (chunk: Buffer) => {
        hash.update(chunk)
        total += chunk.length
        if (total === file.size) resolve()
      })
    })
    receiver.resume()
    const rest = await sendfile(sender, file.fd, first, file.size - first)
    expect(rest.err).toBeNull()
    expect(rest.sent).toBe(file.size - first)
    await received
    expect(hash.digest('hex')).toBe(file.sha256)
  })

  it('throws ERR_SENDFILE_EOF past the end of the file, errno errors, and bad arguments', async () => {
    const file = writeFile('try-short.log', [randomBytes(1000)])
    const { sender } = await connectPair()
    expect(() => native.trySendfile(socketFd(sender), file.fd, 5000, 10)).toThrow(expect.objectContaining({ code: 'ERR_SENDFILE_EOF' }))
    expect(() => native.trySendfile(socketFd(sender), 999_999, 0, 10)).toThrow(expect.objectContaining({ code: 'EBADF' }))
    expect(() => native.trySendfile(-1, file.fd, 0, 1)).toThrow(RangeError)
    expect(() => native.trySendfile(socketFd(sender), file.fd, 0, 2 ** 60)).toThrow(RangeError)
    // A regular file descriptor is blocking: refused rather than stall the thread.
    expect(() => native.trySendfile(file.fd, file.fd, 0, 1)).toThrow(/blocking/)
  })

  it('reports EPIPE/ECONNRESET when the peer has gone', async () => {
    const file = writeFile('try-gone.log', [randomBytes(4 << 20)])
    const { sender, receiver } = await connectPair()
    sender.on('error', () => {})
    const ended = new Promise<void>((resolve) => sender.once('end', resolve))
    receiver.destroy()
    await ended
    let err: NodeJS.ErrnoException | undefined
    try {
      // The first call may still land in the socket buffer; the reset shows on a later one.
      for (let i = 0; i < 10; i++) native.trySendfile(socketFd(sender), file.fd, 0, file.size)
    } catch (e) {
      err = e as NodeJS.ErrnoException
    }
    expect(['EPIPE', 'ECONNRESET']).toContain(err?.code)
  })
})

describe('socketFd', () => {
  it('returns the fd of a connected socket and throws otherwise', async () => {
    const { sender } = await connectPair()
    expect(socketFd(sender)).toBeGreaterThan(2)
    const unconnected = connect({ port: 1, host: '127.0.0.1' })
    unconnected.on('error', () => {})
    unconnected.destroy()
    expect(() => socketFd(unconnected)).toThrow(/no file descriptor/)
  })
})
