// One client connection: Kafka framing in, ordered responses out.
//
// Framing: every request is `int32 size | size bytes`. The size is checked before anything is
// allocated (negative, zero or larger than socket.request.max.bytes closes the connection, as Kafka's
// NetworkReceive does), and a partial frame holds at most four times the bytes that actually arrived,
// so a slow or stalled sender cannot pin a large buffer. connections.max.idle.ms closes idle sockets.
// A large frame (other than Produce, below) is copied into its own buffer as its bytes arrive, once a
// quarter of it (and at least ASSEMBLE_FROM_BYTES) is there, rather than all at once when complete:
// copying (and faulting in) a 48 MB frame in one go held the event loop for ~0.3 s, other connections
// waiting; piece by piece it costs a little per read.
//
// Ordering: requests on one connection are processed concurrently, but each takes a sequence number
// and responses are written strictly in that order. A request that gets no response (acks=0
// produce) still takes its slot, so later responses do not overtake or wait for it.
//
// Backpressure: reading pauses while the bytes of requests being processed pass a bound, while the
// number of requests not yet answered (processing, or done and waiting to be written) passes a bound,
// and while the socket's own write buffer is full; it resumes as they drain. Frames that arrived in one
// read do not slip past the request bounds: they wait in the buffer until requests drain. Counting answered but
// unwritten responses matters: a client that never reads would otherwise pile up responses (and the
// segment leases of fetches, whose sendfile stalls without filling the socket's write buffer).
//
// Heavy requests: a request's list elements (what the dispatcher's decoder counted, up to
// request.max.list.elements each) are held by the connection from its decoding until its answer is
// written, and reading pauses while they pass one request's worth: one client pipelining 100,000-element
// requests has at most two of them decoded, answered or waiting to be written at a time (Kafka serves one
// request per connection at a time), so its memory and main-thread share stay bounded like anyone's.
//
// Produce frames: a Produce request (API key 0, the frame's first int16) is copied once, when
// complete, into shared memory from the frame pool (src/shard/frame-pool.ts): its record batches then
// reach the shard threads without another copy, and the pool's pages are reused rather than faulted in
// per request. The connection holds one pin on that memory until the request is finished; the router
// holds its own for each append until the shard has answered. Other requests keep plain Buffers.
//
// Zero copy: a response is a list of chunks, Buffers and file regions. Buffers go through
// socket.write; a file region is sent with the addon's sendfile once every earlier write has reached
// the kernel (the socket's queue is empty), so bytes leave in order and record data never enters the
// JS heap. The region is first tried synchronously (trySendfile); only what the socket buffer cannot
// take at once waits for writability, so a small fetch answer costs no loop turn per partition.
// Over TLS the bytes must pass through OpenSSL, so a region is read into a buffer and written like the
// others (Kafka has the same trade-off); PLAINTEXT connections never take that path.
//
// Quotas: a throttled response mutes the channel (Kafka's KafkaChannel mute for throttling): reading
// stops and frames already buffered wait until the throttle time has passed.
//
// Security: the connection carries its principal (ANONYMOUS, a client certificate's mapped subject, or
// the SASL user) and, on a SASL listener, its SASL exchange; until that completes, frames are capped by
// sasl.server.max.receive.size instead of socket.request.max.bytes (CVE-2022-34917).
import { read as fsRead } from 'node:fs'
import type { Socket } from 'node:net'
import { ANONYMOUS } from '../auth/principal.js'
import type { SaslServerAuthenticator } from '../auth/sasl/authenticator.js'
import { native, socketFd } from '../addon/index.js'
import type { FileRegion } from '../domain/file-region.js'
import { drainOrClose } from '../domain/socket-drain.js'
import { framePool, unpinFrame } from '../shard/frame-pool.js'
import type { Logger } from '../observability/logger.js'

export type ResponseChunk = Buffer | FileRegion

export interface Response {
  /** The whole frame, size prefix included. */
  chunks: ResponseChunk[]
  /** Called once after the response was written, or when the connection closed before that. */
  onDone?: () => void
  /** Client quotas: the channel is muted (nothing more is read or processed) this long. */
  throttleMs?: number
  /**
   * true: the client throttles itself (KIP-219), the response goes at once and the mute starts after it
   * is written; false: the response is held for the throttle time, muted from now.
   */
  throttleAfterSend?: boolean
}

/** What the server does with a frame: a response, or null when the request gets none (acks=0). */
export type FrameHandler = (frame: Buffer, conn: Connection) => Promise<Response | null>

export interface ConnectionLimits {
  /** socket.request.max.bytes */
  maxRequestBytes: number
  /** connections.max.idle.ms */
  idleTimeoutMs: number
  /** Reading pauses while this many request bytes are being processed. */
  maxInFlightBytes: number
  /** Reading pauses while this many requests are not yet answered (being processed or unwritten). */
  maxInFlightRequests: number
}

interface Slot {
  done: boolean
  response: Response | null
  /** List elements the request's decoding counted (holdListElements), released once its answer is written. */
  elements: number
}

let nextConnectionId = 1

const PRODUCE_API_KEY = 0
/** The smallest partial frame that starts being copied into a frame buffer as it arrives. */
const ASSEMBLE_FROM_BYTES = 1024 * 1024

export class Connection {
  readonly id = nextConnectionId++
  /** host:port of the client, for logs. */
  readonly remoteAddress: string
  /** The client's host alone (JoinGroup and DescribeGroups show it). */
  readonly clientHost: string
  private readonly chunks: Buffer[] = []
  private buffered = 0
  private expected = -1
  /** The frame being copied in as it arrives (a large non-Produce one), and how much of it has. */
  private assembly: Buffer | undefined
  private assembled = 0
  private readonly slots: Slot[] = []
  private inFlightBytes = 0
  /** List elements of requests decoded and not yet answered on the wire, and the bound they may not pass. */
  private inFlightElements = 0
  private maxInFlightElements = Infinity
  /** The slot of the request whose handler is running synchronously (decoding happens there). */
  private dispatching: Slot | undefined
  private writing = false
  private closed = false
  private pausedForBackpressure = false
  /** Muted by a quota throttle until the timer ends it. */
  private throttleTimer: NodeJS.Timeout | undefined
  private throttledUntil = 0
  private fd = -1
  /** The largest frame accepted now: socket.request.max.bytes, or sasl.server.max.receive.size before SASL completes. */
  maxFrameBytes: number
  /** "User:<name>": ANONYMOUS until a client certificate or SASL says otherwise. */
  principal = ANONYMOUS
  /** The SASL exchange of a SASL_PLAINTEXT or SASL_SSL connection. */
  sasl: SaslServerAuthenticator | undefined
  /** TLS: file regions are read and written as buffers (no sendfile through OpenSSL). */
  tls = false

  constructor(
    readonly socket: Socket,
    /** The listener the connection was accepted on. */
    readonly listenerName: string,
    private readonly limits: ConnectionLimits,
    private readonly handler: FrameHandler,
    private readonly log: Logger,
    private readonly onClose: (conn: Connection) => void,
  ) {
    this.remoteAddress = `${socket.remoteAddress}:${socket.remotePort}`
    this.clientHost = socket.remoteAddress ?? ''
    this.maxFrameBytes = limits.maxRequestBytes
    socket.setNoDelay(true)
    if (limits.idleTimeoutMs > 0) {
      socket.setTimeout(limits.idleTimeoutMs, () => {
        this.log.info({ conn: this.id, remote: this.remoteAddress }, 'closing idle connection')
        socket.destroy()
      })
    }
    socket.on('data', (data: Buffer) => this.onData(data))
    socket.on('error', (err) => {
      this.log.debug({ conn: this.id, err: err.message }, 'socket error')
    })
    socket.on('close', () => this.handleClose())
  }

  get isClosed(): boolean {
    return this.closed
  }

  /** SASL completed: frames may now be as large as socket.request.max.bytes. */
  authenticated(principal: string): void {
    this.principal = principal
    this.maxFrameBytes = this.limits.maxRequestBytes
  }

  /**
   * The request being dispatched decoded `count` list elements: the connection holds them until its answer
   * is written, and pauses reading while it holds more than `limit` (request.max.list.elements).
   */
  holdListElements(count: number, limit: number): void {
    const slot = this.dispatching
    if (slot === undefined || count <= 0) return
    slot.elements += count
    this.inFlightElements += count
    this.maxInFlightElements = limit
    this.updateBackpressure()
  }

  private releaseElements(slot: Slot): void {
    this.inFlightElements -= slot.elements
    slot.elements = 0
  }

  /** Closes the connection at once (protocol violation or shutdown). */
  close(reason?: string): void {
    if (reason !== undefined) this.log.info({ conn: this.id, remote: this.remoteAddress, reason }, 'closing connection')
    this.socket.destroy()
  }

  /** True once every accepted request has been answered (graceful shutdown waits for it). */
  get idle(): boolean {
    return this.slots.length === 0 && !this.writing
  }

  private onData(data: Buffer): void {
    if (this.closed) return
    if (this.assembly !== undefined && this.assembled < this.assembly.length) {
      const take = Math.min(data.length, this.assembly.length - this.assembled)
      data.copy(this.assembly, this.assembled, 0, take)
      this.assembled += take
      if (take === data.length) {
        this.processFrames()
        return
      }
      // The next frame's first bytes.
      data = data.subarray(take)
    }
    this.chunks.push(data)
    this.buffered += data.length
    this.processFrames()
  }

  /** Client quotas: stops reading and processing for ms (an existing longer mute stands). */
  throttle(ms: number): void {
    if (this.closed || ms <= 0) return
    const until = Date.now() + ms
    if (until <= this.throttledUntil) return
    this.throttledUntil = until
    clearTimeout(this.throttleTimer)
    this.throttleTimer = setTimeout(() => {
      this.throttleTimer = undefined
      this.updateBackpressure()
      this.processFrames()
    }, ms)
    this.updateBackpressure()
  }

  /** Too much of this connection in flight to start another request, even one already buffered. */
  private get holdingTooMuch(): boolean {
    return this.slots.length >= this.limits.maxInFlightRequests || this.inFlightElements > this.maxInFlightElements
  }

  private processFrames(): void {
    // Pausing the socket stops new reads; frames that arrived together wait here until requests drain.
    while (!this.closed && this.throttleTimer === undefined && !this.holdingTooMuch) {
      if (this.assembly !== undefined) {
        if (this.assembled < this.assembly.length) return
        const frame = this.assembly
        this.assembly = undefined
        this.assembled = 0
        this.expected = -1
        this.dispatch(frame, false)
        continue
      }
      if (this.expected < 0) {
        if (this.buffered < 4) return
        const size = this.peekInt32()
        if (size <= 0 || size > this.maxFrameBytes) {
          const limit = this.maxFrameBytes === this.limits.maxRequestBytes ? 'socket.request.max.bytes' : 'sasl.server.max.receive.size'
          this.close(`invalid request size ${size} (${limit}=${this.maxFrameBytes})`)
          return
        }
        this.consume(4)
        this.expected = size
      }
      if (this.buffered < this.expected) {
        if (this.buffered >= ASSEMBLE_FROM_BYTES && this.buffered * 4 >= this.expected && this.peekInt16() !== PRODUCE_API_KEY) this.startAssembly()
        return
      }
      const size = this.expected
      this.expected = -1
      if (size >= 2 && this.peekInt16() === PRODUCE_API_KEY) this.dispatch(this.consumeInto(framePool.acquire(size)), true)
      else this.dispatch(this.consume(size), false)
    }
  }

  /** Moves what has arrived of the expected frame into its own buffer, which takes the rest as it comes. */
  private startAssembly(): void {
    const frame = Buffer.allocUnsafe(this.expected)
    let filled = 0
    for (const chunk of this.chunks) {
      chunk.copy(frame, filled)
      filled += chunk.length
    }
    this.chunks.length = 0
    this.buffered = 0
    this.assembly = frame
    this.assembled = filled
  }

  private peekInt32(): number {
    const first = this.chunks[0]!
    if (first.length >= 4) return first.readInt32BE(0)
    const head = Buffer.concat(this.chunks, Math.min(this.buffered, 4))
    return head.readInt32BE(0)
  }

  private peekInt16(): number {
    const first = this.chunks[0]!
    if (first.length >= 2) return first.readInt16BE(0)
    return Buffer.concat(this.chunks, 2).readInt16BE(0)
  }

  /** Moves the next out.length buffered bytes into out (the whole frame has arrived). */
  private consumeInto(out: Buffer): Buffer {
    const n = out.length
    // Into shared memory, Buffer#copy (TypedArray#set) copies byte by byte when source and target are
    // not equally aligned, which they mostly are not; Buffer#fill with a Buffer of exactly the span's
    // length is one memcpy.
    const shared = out.buffer instanceof SharedArrayBuffer
    let filled = 0
    while (filled < n) {
      const chunk = this.chunks[0]!
      const take = Math.min(chunk.length, n - filled)
      if (shared) out.fill(take === chunk.length ? chunk : chunk.subarray(0, take), filled, filled + take)
      else chunk.copy(out, filled, 0, take)
      filled += take
      if (take === chunk.length) this.chunks.shift()
      else this.chunks[0] = chunk.subarray(take)
    }
    this.buffered -= n
    return out
  }

  /** Takes n bytes off the front of the buffered chunks; a frame inside one chunk is not copied. */
  private consume(n: number): Buffer {
    const first = this.chunks[0]!
    if (first.length >= n) {
      const out = first.subarray(0, n)
      if (first.length === n) this.chunks.shift()
      else this.chunks[0] = first.subarray(n)
      this.buffered -= n
      return out
    }
    // A frame assembled from several reads gets a buffer of its own.
    return this.consumeInto(Buffer.allocUnsafe(n))
  }

  /** pooled: the frame is frame-pool memory whose pin this request holds until it is finished. */
  private dispatch(frame: Buffer, pooled: boolean): void {
    const slot: Slot = { done: false, response: null, elements: 0 }
    this.slots.push(slot)
    const size = frame.length
    this.inFlightBytes += size
    this.updateBackpressure()
    const settle = (response: Response | null): void => {
      const throttleMs = response?.throttleMs ?? 0
      if (throttleMs <= 0 || response?.throttleAfterSend === true || this.closed) {
        finish(response)
        return
      }
      // An older client: muted now, answered when the throttle time has passed.
      this.throttle(throttleMs)
      setTimeout(() => finish(response), throttleMs)
    }
    const finish = (response: Response | null): void => {
      // The handler has settled: it no longer reads the frame, and every append it made has been
      // answered (the router's own pins cover an append still running on a shard).
      if (pooled) unpinFrame(frame)
      this.inFlightBytes -= size
      slot.done = true
      slot.response = response
      if (this.closed) {
        this.releaseElements(slot)
        response?.onDone?.()
        return
      }
      this.updateBackpressure()
      void this.flush()
    }
    // The dispatcher decodes in the handler's synchronous part: what it holds belongs to this slot.
    this.dispatching = slot
    let handled: Promise<Response | null>
    try {
      handled = this.handler(frame, this)
    } finally {
      this.dispatching = undefined
    }
    handled.then(settle, (err: unknown) => {
      if (this.closed) {
        // The client hung up first; a large request stops at its next slice (AbandonedWorkError).
        this.log.info({ conn: this.id, remote: this.remoteAddress, err: (err as Error)?.message }, 'request dropped: its connection closed before the answer')
        finish(null)
        return
      }
      // Handlers turn Kafka errors into responses; anything reaching here means the request could
      // not be understood at all, and Kafka closes the connection in that case.
      this.log.warn({ conn: this.id, remote: this.remoteAddress, err: (err as Error)?.message }, 'closing connection after a request failed')
      finish(null)
      this.socket.destroy()
    })
  }

  private updateBackpressure(): void {
    const over =
      this.throttleTimer !== undefined ||
      this.inFlightBytes > this.limits.maxInFlightBytes ||
      this.slots.length >= this.limits.maxInFlightRequests ||
      this.inFlightElements > this.maxInFlightElements ||
      this.socket.writableNeedDrain
    if (over && !this.pausedForBackpressure) {
      this.pausedForBackpressure = true
      this.socket.pause()
    } else if (!over && this.pausedForBackpressure) {
      this.pausedForBackpressure = false
      this.socket.resume()
      // Frames already buffered are not read again: start them once the current call stack is done.
      if (this.buffered > 0 || this.assembly !== undefined) queueMicrotask(() => this.processFrames())
    }
  }

  private async flush(): Promise<void> {
    if (this.writing) return
    this.writing = true
    try {
      while (!this.closed && this.slots.length > 0 && this.slots[0]!.done) {
        const slot = this.slots.shift()!
        const response = slot.response
        if (response === null) {
          this.releaseElements(slot)
          this.updateBackpressure()
          continue
        }
        this.updateBackpressure()
        try {
          await this.writeResponse(response)
        } finally {
          this.releaseElements(slot)
          response.onDone?.()
        }
        this.updateBackpressure()
        if (response.throttleAfterSend === true && response.throttleMs !== undefined) this.throttle(response.throttleMs)
        if (this.socket.writableNeedDrain) {
          this.updateBackpressure()
          await drainOrClose(this.socket)
          this.updateBackpressure()
        }
      }
    } catch (err) {
      this.log.debug({ conn: this.id, err: (err as Error).message }, 'write failed')
      this.socket.destroy()
    } finally {
      this.writing = false
    }
  }

  private async writeResponse(response: Response): Promise<void> {
    let pending: Buffer[] = []
    let lastWrite: Promise<void> | null = null
    const writeBuffers = (): void => {
      if (pending.length === 0) return
      const data = pending.length === 1 ? pending[0]! : Buffer.concat(pending)
      pending = []
      lastWrite = new Promise<void>((resolve, reject) => {
        this.socket.write(data, (err) => (err ? reject(err) : resolve()))
      })
      // A failed write also destroys the socket; the rejection is observed by whoever awaits it.
      lastWrite.catch(() => {})
    }
    for (const chunk of response.chunks) {
      if (Buffer.isBuffer(chunk)) {
        pending.push(chunk)
        continue
      }
      if (chunk.length === 0) continue
      if (this.tls) {
        // The socket's queue keeps the order; nothing needs to wait for the kernel.
        pending.push(await readRegion(chunk))
        continue
      }
      writeBuffers()
      // A write the kernel took at once is already off the socket's queue (writableLength 0, its
      // callback only deferred to the next tick): sendfile can follow without waiting for that callback.
      if (lastWrite !== null && this.socket.writableLength > 0) await lastWrite
      lastWrite = null
      await this.waitForWritableEmpty()
      const rest = this.trySendRegion(chunk)
      if (rest !== null) await rest
    }
    writeBuffers()
  }

  /** sendfile needs the socket's own queue empty, or its bytes would overtake queued ones. */
  private async waitForWritableEmpty(): Promise<void> {
    while (!this.closed && this.socket.writableLength > 0) await drainOrClose(this.socket)
    // destroyed too: a write that failed synchronously destroys the socket (closing its fd, whose
    // number may be reused at once) before 'close' is emitted.
    if (this.closed || this.socket.destroyed) throw new Error('connection closed')
  }

  /**
   * Sends a file region: first synchronously, as much as the socket takes now (a small region leaves in
   * one sendfile(2), no callback, no loop turn), then, if the socket buffer filled up, the rest with
   * the addon's asynchronous sendfile. Returns null when everything went out at once.
   */
  private trySendRegion(region: FileRegion): Promise<void> | null {
    if (this.fd < 0) this.fd = socketFd(this.socket)
    const sent = native.trySendfile(this.fd, region.fd, region.position, region.length)
    if (sent === region.length) return null
    return this.sendRegion({ fd: region.fd, position: region.position + sent, length: region.length - sent })
  }

  private sendRegion(region: FileRegion): Promise<void> {
    if (this.fd < 0) this.fd = socketFd(this.socket)
    return new Promise<void>((resolve, reject) => {
      native.sendfile(this.fd, region.fd, region.position, region.length, (err, sent) => {
        if (err) reject(err)
        else if (sent !== region.length) reject(new Error(`sendfile sent ${sent} of ${region.length} bytes`))
        else resolve()
      })
    })
  }

  private handleClose(): void {
    if (this.closed) return
    this.closed = true
    clearTimeout(this.throttleTimer)
    for (const slot of this.slots) {
      if (slot.done) slot.response?.onDone?.()
    }
    this.inFlightElements = 0
    // Slots still being processed release their responses in finish() (closed is set).
    this.slots.length = 0
    this.chunks.length = 0
    this.buffered = 0
    this.onClose(this)
  }
}

/** A file region's bytes in a buffer of their own (TLS connections). */
function readRegion(region: FileRegion): Promise<Buffer> {
  const out = Buffer.allocUnsafe(region.length)
  return new Promise<Buffer>((resolve, reject) => {
    const readAt = (filled: number): void => {
      fsRead(region.fd, out, filled, region.length - filled, region.position + filled, (err, n) => {
        if (err) reject(err)
        else if (n === 0) reject(new Error(`file region ended after ${filled} of ${region.length} bytes`))
        else if (filled + n === region.length) resolve(out)
        else readAt(filled + n)
      })
    }
    readAt(0)
  })
}
