// A small WebSocket client over a TCP socket (RFC 6455: handshake, masked client frames, unfragmented
// server frames), for tests on Node 20, which has no WebSocket global. It can stop reading (pause) so
// that tests can build up server-side backpressure.
import { createHash, randomBytes } from 'node:crypto'
import { connect, type Socket } from 'node:net'
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls'

export interface WsMessage {
  data: Buffer
  binary: boolean
}

export class TestWebSocket {
  readonly messages: WsMessage[] = []
  closeCode: number | null = null
  private buffer: Buffer = Buffer.alloc(0)
  private waiters: (() => void)[] = []
  private ended = false

  private constructor(readonly socket: Socket) {
    socket.on('data', (d: Buffer) => this.onData(d))
    socket.on('close', () => {
      this.ended = true
      this.wake()
    })
    socket.on('error', () => {})
  }

  /** Connects and upgrades (over TLS, wss, when tls is given); rejects with the HTTP status line when the server refuses. */
  static open(port: number, path: string, headers: Record<string, string> = {}, tls?: ConnectionOptions): Promise<TestWebSocket> {
    return new Promise((resolve, reject) => {
      const socket = tls === undefined ? connect(port, '127.0.0.1') : tlsConnect({ ...tls, port, host: '127.0.0.1' })
      const key = randomBytes(16).toString('base64')
      let head = Buffer.alloc(0)
      socket.once('error', reject)
      socket.on(tls === undefined ? 'connect' : 'secureConnect', () => {
        const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
        socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`)
      })
      const onHead = (d: Buffer): void => {
        head = Buffer.concat([head, d])
        const end = head.indexOf('\r\n\r\n')
        if (end < 0) return
        socket.off('data', onHead)
        const text = head.subarray(0, end).toString()
        const status = text.split('\r\n')[0]!
        if (!status.includes(' 101 ')) {
          socket.destroy()
          reject(new Error(status + '\n' + head.subarray(end + 4).toString()))
          return
        }
        const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64')
        if (!text.toLowerCase().includes(`sec-websocket-accept: ${accept.toLowerCase()}`)) {
          socket.destroy()
          reject(new Error('bad Sec-WebSocket-Accept'))
          return
        }
        const ws = new TestWebSocket(socket)
        const rest = head.subarray(end + 4)
        if (rest.length > 0) ws.onData(rest)
        resolve(ws)
      }
      socket.on('data', onHead)
    })
  }

  private onData(d: Buffer): void {
    this.buffer = this.buffer.length === 0 ? d : Buffer.concat([this.buffer, d])
    for (;;) {
      const b = this.buffer
      if (b.length < 2) return
      const opcode = b[0]! & 0x0f
      let len = b[1]! & 0x7f
      let at = 2
      if (len === 126) {
        if (b.length < 4) return
        len = b.readUInt16BE(2)
        at = 4
      } else if (len === 127) {
        if (b.length < 10) return
        len = Number(b.readBigUInt64BE(2))
        at = 10
      }
      if (b.length < at + len) return
      const payload = b.subarray(at, at + len)
      this.buffer = b.subarray(at + len)
      if (opcode === 8) {
        this.closeCode = payload.length >= 2 ? payload.readUInt16BE(0) : 1005
        this.socket.end()
      } else if (opcode === 1 || opcode === 2) {
        this.messages.push({ data: Buffer.from(payload), binary: opcode === 2 })
      }
      this.wake()
    }
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w()
  }

  send(data: string | Buffer, binary = typeof data !== 'string'): void {
    const payload = typeof data === 'string' ? Buffer.from(data) : data
    const mask = randomBytes(4)
    const len = payload.length
    const header = len < 126 ? Buffer.from([binary ? 0x82 : 0x81, 0x80 | len]) : len < 65536 ? Buffer.alloc(4) : Buffer.alloc(10)
    if (len >= 126 && len < 65536) {
      header[0] = binary ? 0x82 : 0x81
      header[1] = 0x80 | 126
      header.writeUInt16BE(len, 2)
    } else if (len >= 65536) {
      header[0] = binary ? 0x82 : 0x81
      header[1] = 0x80 | 127
      header.writeBigUInt64BE(BigInt(len), 2)
    }
    const masked = Buffer.allocUnsafe(len)
    for (let i = 0; i < len; i++) masked[i] = payload[i]! ^ mask[i & 3]!
    this.socket.write(Buffer.concat([header, mask, masked]))
  }

  /** Waits until at least n messages arrived (or the connection ended). */
  async waitFor(n: number, timeoutMs = 5000): Promise<WsMessage[]> {
    const deadline = Date.now() + timeoutMs
    while (this.messages.length < n && !this.ended) {
      if (Date.now() > deadline) throw new Error(`timed out with ${this.messages.length} of ${n} messages`)
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 50)
        this.waiters.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
    return this.messages
  }

  async waitClosed(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error('timed out waiting for the close')
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  pause(): void {
    this.socket.pause()
  }

  resume(): void {
    this.socket.resume()
  }

  close(): void {
    this.socket.destroy()
  }
}
