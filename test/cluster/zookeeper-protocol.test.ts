// Unit tests of the ZooKeeper client's pieces that need no server: connect strings and paths, jute,
// framing, the bytes a multi puts on the wire (version 0 stays 0), and the client against a scripted
// TCP peer for what a real server will not do on demand: a reply announcing a 1.5 GiB frame, and a reply
// to the wrong request.
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { FrameReader, FrameTooLargeError } from '../../src/cluster/zookeeper/framing.js'
import { ZooKeeperClient, ZooKeeperError, ZooKeeperErrorCode, Op, parseConnectString } from '../../src/cluster/zookeeper/index.js'
import { JuteError, JuteReader, JuteWriter } from '../../src/cluster/zookeeper/jute.js'
import { Chroot, pathPrefixes, pathProblem } from '../../src/cluster/zookeeper/paths.js'
import { OpCode, writeMulti } from '../../src/cluster/zookeeper/protocol.js'

describe('connect strings and paths', () => {
  it('parses servers, default ports, IPv6 and the chroot', () => {
    expect(parseConnectString('127.0.0.1:2181,127.0.0.1:2182/skein')).toEqual({
      servers: [
        { host: '127.0.0.1', port: 2181 },
        { host: '127.0.0.1', port: 2182 },
      ],
      chroot: '/skein',
    })
    expect(parseConnectString('zk1, zk2:2888')).toEqual({
      servers: [
        { host: 'zk1', port: 2181 },
        { host: 'zk2', port: 2888 },
      ],
      chroot: '',
    })
    expect(parseConnectString('[::1]:2181/a/b')).toEqual({ servers: [{ host: '::1', port: 2181 }], chroot: '/a/b' })
    expect(parseConnectString('h:1/').chroot).toBe('')
    for (const bad of ['', '/skein', 'h:port', 'h:0', 'h:70000', 'h:1/bad/', 'h:1/a//b', '[::1:2181']) {
      expect(() => parseConnectString(bad), bad).toThrow()
    }
  })

  it('validates znode paths as ZooKeeper does', () => {
    for (const ok of ['/', '/a', '/a/b-c_d.e', '/brokers/topics/t/partitions/0/state']) expect(pathProblem(ok, false), ok).toBeUndefined()
    for (const bad of ['', 'a', '/a/', '//', '/a//b', '/a/./b', '/a/..', '/a\u0000b', '/a\u0001']) expect(pathProblem(bad, false), JSON.stringify(bad)).toBeDefined()
    expect(pathProblem('/a/', true)).toBeUndefined()
    expect(pathPrefixes('/a/b/c')).toEqual(['/a', '/a/b', '/a/b/c'])
    expect(pathPrefixes('/')).toEqual([])
  })

  it('maps paths into and out of a chroot', () => {
    const c = new Chroot('/skein')
    expect(c.toServer('/')).toBe('/skein')
    expect(c.toServer('/brokers/ids')).toBe('/skein/brokers/ids')
    expect(c.toClient('/skein')).toBe('/')
    expect(c.toClient('/skein/brokers/ids/1')).toBe('/brokers/ids/1')
    expect(c.toClient('/skeinother')).toBe('/skeinother')
    const none = new Chroot('')
    expect(none.toServer('/x')).toBe('/x')
    expect(none.toClient('/x')).toBe('/x')
  })
})

describe('jute and framing', () => {
  it('round-trips every field type and rejects truncated or lying frames', () => {
    const bytes = new JuteWriter(4).int(-5).long(-(2n ** 40n)).bool(true).buffer(Buffer.from('ab')).buffer(null).ustring('zé').stringVector(['x', 'yz']).bytes()
    const r = new JuteReader(bytes)
    expect(r.int()).toBe(-5)
    expect(r.long()).toBe(-(2n ** 40n))
    expect(r.bool()).toBe(true)
    expect(r.buffer().toString()).toBe('ab')
    expect(r.buffer().length).toBe(0)
    expect(r.ustring()).toBe('zé')
    expect(r.stringVector()).toEqual(['x', 'yz'])
    expect(r.remaining).toBe(0)
    expect(() => r.int()).toThrow(JuteError)
    // A buffer or vector claiming more than the frame holds is refused before allocating.
    expect(() => new JuteReader(new JuteWriter().int(0x7fffffff).bytes()).buffer()).toThrow(JuteError)
    expect(() => new JuteReader(new JuteWriter().int(0x10000000).bytes()).stringVector()).toThrow(JuteError)
  })

  it('splits a stream into frames whatever the chunking', () => {
    const frames = [Buffer.from('first'), Buffer.alloc(0), Buffer.alloc(3000, 1)]
    const stream = Buffer.concat(frames.map((f) => new JuteWriter().buffer(f).bytes()))
    for (const chunkSize of [1, 3, 7, 4096]) {
      const reader = new FrameReader(4096)
      const out: Buffer[] = []
      for (let i = 0; i < stream.length; i += chunkSize) out.push(...reader.push(stream.subarray(i, i + chunkSize)))
      expect(out.map((b) => b.toString('hex'))).toEqual(frames.map((b) => b.toString('hex')))
    }
  })

  it('refuses a length over the limit (or negative) as soon as the 4-byte prefix is in', () => {
    const reader = new FrameReader(1024)
    expect(reader.push(Buffer.from([0x00, 0x00]))).toEqual([])
    expect(() => reader.push(Buffer.from([0x04, 0x01]))).toThrow(FrameTooLargeError)
    expect(() => new FrameReader(1024).push(Buffer.from([0xff, 0xff, 0xff, 0xff]))).toThrow(/-1 bytes/)
    expect(new FrameReader(1024).push(Buffer.from([0, 0, 4, 0, ...Buffer.alloc(1024)]))).toHaveLength(1)
  })

  it('puts version 0 on the wire as 0 in check, setData and delete of a multi (the node-zookeeper-client bug)', () => {
    const w = new JuteWriter()
    writeMulti(w, [Op.check('/controller_epoch', 0), Op.setData('/s', 'x', 0), Op.delete('/d', 0), Op.check('/any', -1)], (p) => `/root${p}`)
    const r = new JuteReader(w.bytes())
    const header = (): [number, boolean, number] => [r.int(), r.bool(), r.int()]
    expect(header()).toEqual([OpCode.check, false, -1])
    expect([r.ustring(), r.int()]).toEqual(['/root/controller_epoch', 0])
    expect(header()).toEqual([OpCode.setData, false, -1])
    expect([r.ustring(), r.buffer().toString(), r.int()]).toEqual(['/root/s', 'x', 0])
    expect(header()).toEqual([OpCode.delete, false, -1])
    expect([r.ustring(), r.int()]).toEqual(['/root/d', 0])
    expect(header()).toEqual([OpCode.check, false, -1])
    expect([r.ustring(), r.int()]).toEqual(['/root/any', -1])
    expect(header()).toEqual([-1, true, -1])
    expect(r.remaining).toBe(0)
  })
})

interface ConnectSeen {
  lastZxid: bigint
  timeout: number
  sessionId: bigint
  password: Buffer
  readOnly: boolean
}

/**
 * A scripted ZooKeeper peer: answers each ConnectRequest with session 0x1234 (password 16 × 0xab), then
 * hands every other request (closeSession is answered) to `onRequest` with the connection's number.
 */
async function scriptedPeer(onRequest: (conn: number, socket: Socket, xid: number, type: number) => void): Promise<{ server: Server; port: number; connects: ConnectSeen[] }> {
  const connects: ConnectSeen[] = []
  const server = createServer((socket) => {
    const conn = connects.length
    const reader = new FrameReader(1 << 20)
    let handshaken = false
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => {
      for (const frame of reader.push(chunk)) {
        const r = new JuteReader(frame)
        if (!handshaken) {
          handshaken = true
          r.int()
          connects.push({ lastZxid: r.long(), timeout: r.int(), sessionId: r.long(), password: r.buffer(), readOnly: r.bool() })
          socket.write(new JuteWriter().int(0).int(3000).long(0x1234n).buffer(Buffer.alloc(16, 0xab)).bool(false).frame())
          continue
        }
        const xid = r.int()
        const type = r.int()
        if (type === OpCode.closeSession) {
          reply(socket, xid, 0n, 0)
          socket.end()
          continue
        }
        onRequest(conn, socket, xid, type)
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  return { server, port: typeof address === 'object' && address !== null ? address.port : 0, connects }
}

function reply(socket: Socket, xid: number, zxid: bigint, err: number, body?: (w: JuteWriter) => void): void {
  const w = new JuteWriter().int(xid).long(zxid).int(err)
  body?.(w)
  socket.write(w.frame())
}

const STAT = (w: JuteWriter): void => {
  w.long(1n).long(1n).long(0n).long(0n).int(0).int(0).int(0).long(0n).int(2).int(0).long(1n)
}

describe('client against a scripted peer', () => {
  const cleanups: Array<() => Promise<void> | void> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  it('refuses a reply announcing 1.5 GiB without allocating it, and resumes the session on a new connection', async () => {
    const peer = await scriptedPeer((conn, socket, xid, type) => {
      if (type === OpCode.ping) return reply(socket, -2, 0n, 0)
      if (conn === 0) {
        // A reply header whose length prefix claims 0x60000000 bytes, then a trickle of garbage.
        socket.write(Buffer.from([0x60, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5]))
        return
      }
      reply(socket, xid, 77n, 0, (w) => {
        w.buffer(Buffer.from('ok'))
        STAT(w)
      })
    })
    cleanups.push(() => void peer.server.close())
    const client = await ZooKeeperClient.connect(`127.0.0.1:${peer.port}`, { sessionTimeoutMs: 3000 })
    cleanups.push(() => client.close())
    expect(client.sessionId).toBe(0x1234n)

    const before = process.memoryUsage().arrayBuffers
    const err = await client.getData('/big').then(
      () => undefined,
      (e: unknown) => e as ZooKeeperError,
    )
    const grown = process.memoryUsage().arrayBuffers - before
    expect(err?.code).toBe(ZooKeeperErrorCode.CONNECTIONLOSS)
    expect(err?.message).toMatch(/frame of 1610612736 bytes exceeds the limit of 1049600 bytes/)
    expect(grown).toBeLessThan(16 * 1024 * 1024)

    const again = await client.getData('/small')
    expect(again.data.toString()).toBe('ok')
    expect(peer.connects).toHaveLength(2)
    expect(peer.connects[0]).toMatchObject({ sessionId: 0n, lastZxid: 0n, timeout: 3000, readOnly: false })
    expect(peer.connects[0]!.password).toEqual(Buffer.alloc(16))
    // The second connection resumes the session with the id and password the peer issued.
    expect(peer.connects[1]).toMatchObject({ sessionId: 0x1234n, timeout: 3000 })
    expect(peer.connects[1]!.password).toEqual(Buffer.alloc(16, 0xab))
  })

  it('drops a connection whose reply does not match the oldest request, failing what was in flight', async () => {
    const peer = await scriptedPeer((conn, socket, xid, type) => {
      if (type === OpCode.ping) return reply(socket, -2, 0n, 0)
      if (conn === 0) return reply(socket, xid + 100, 5n, 0, STAT)
      reply(socket, xid, 6n, 0, STAT)
    })
    cleanups.push(() => void peer.server.close())
    const client = await ZooKeeperClient.connect(`127.0.0.1:${peer.port}`, { sessionTimeoutMs: 3000 })
    cleanups.push(() => client.close())
    const reasons: string[] = []
    client.on('disconnected', (why) => reasons.push(why))
    const err = await client.exists('/x').then(
      () => undefined,
      (e: unknown) => e as ZooKeeperError,
    )
    expect(err?.code).toBe(ZooKeeperErrorCode.CONNECTIONLOSS)
    expect(reasons[0]).toMatch(/does not match the oldest request/)
    expect((await client.exists('/x'))?.dataLength).toBe(2)
    // lastZxidSeen advanced only through replies that were accepted.
    expect(peer.connects[1]!.lastZxid).toBe(0n)
  })

  it('pings at a third of the negotiated timeout while idle', async () => {
    const pings: number[] = []
    const peer = await scriptedPeer((_conn, socket, _xid, type) => {
      if (type === OpCode.ping) {
        pings.push(Date.now())
        reply(socket, -2, 0n, 0)
      }
    })
    cleanups.push(() => void peer.server.close())
    const client = await ZooKeeperClient.connect(`127.0.0.1:${peer.port}`, { sessionTimeoutMs: 3000 })
    cleanups.push(() => client.close())
    expect(client.negotiatedTimeoutMs).toBe(3000)
    const start = Date.now()
    await new Promise((r) => setTimeout(r, 3300))
    expect(pings.length).toBeGreaterThanOrEqual(2)
    expect(pings.length).toBeLessThanOrEqual(4)
    expect(pings[0]! - start).toBeGreaterThanOrEqual(800)
    expect(client.state).toBe('connected')
  })
})
