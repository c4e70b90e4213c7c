// One TCP connection to one broker: size-prefixed framing, correlation ids, pipelining (any number of
// requests in flight; Kafka answers them in order, which is checked), per-request timeouts and the
// ApiVersions handshake that fixes the version used for each API (the highest both sides support).
// With TLS (SSL, SASL_SSL) the socket is a node:tls one; with SASL (SASL_PLAINTEXT, SASL_SSL) the
// connection authenticates after ApiVersions with SaslHandshake v1 and SaslAuthenticate (sasl.ts makes
// the tokens), and authenticates again before the session lifetime the broker gave runs out (KIP-368).
// A peer whose answer to that first request is not a Kafka response (an HTTP, TLS or Redis server on the
// port) is reported as not a Kafka broker, with the first bytes it sent.
import { connect as netConnect, type Socket } from 'node:net'
import { connect as tlsConnect } from 'node:tls'
import { ApiKey, apiName } from '../protocol/api-keys.gen.js'
import { beginFrame, endFrame } from '../protocol/frame.js'
import { readResponseHeader, writeRequestHeader } from '../protocol/header.js'
import * as ApiVersions from '../protocol/messages/18-api-versions.gen.js'
import * as SaslAuthenticate from '../protocol/messages/36-sasl-authenticate.gen.js'
import * as SaslHandshake from '../protocol/messages/17-sasl-handshake.gen.js'
import { Reader } from '../protocol/primitives/reader.js'
import { Writer } from '../protocol/primitives/writer.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { drainOrClose } from '../domain/socket-drain.js'
import { ConnectionError, NotKafkaBrokerError, TimeoutError } from './errors.js'
import { ResponseFrameReceiver } from './frame-receiver.js'
import { saslClient, type ClientSecurity, type SaslCredentials } from './sasl.js'
import { pickVersion, type VersionRange } from './versions.js'

export interface ConnectionOptions {
  host: string
  port: number
  clientId?: string
  /** Default 10000. */
  connectTimeoutMs?: number
  /** request.timeout.ms: how long a request waits for its answer. Default 30000; a request's own timeout is added for long polls. */
  requestTimeoutMs?: number
  /** Largest response frame accepted; a bigger size prefix closes the connection. Default 256 MiB. */
  maxResponseBytes?: number
  /** Aborts connecting and negotiating (the client was closed): connect() rejects at once. */
  signal?: AbortSignal
  /** TLS and SASL; absent = PLAINTEXT. */
  security?: ClientSecurity
}

interface Pending {
  apiKey: number
  version: number
  decode: (r: Reader, version: number) => unknown
  resolve: (v: unknown) => void
  reject: (err: Error) => void
  timer: NodeJS.Timeout | undefined
}

export interface SendOptions {
  /** Extra time on top of request.timeout.ms (the broker may legitimately hold a long poll). */
  extraTimeoutMs?: number
  /** Overrides the negotiated version. */
  version?: number
  /**
   * Called once when the socket no longer reads the request's buffers: its write finished or failed, or
   * it was never written (the request failed first). Lets a caller reuse those buffers.
   */
  onWritten?: () => void
}

export const CLIENT_SOFTWARE_NAME = 'skein'
export const CLIENT_SOFTWARE_VERSION = '0.1.0'

/** Connections not yet closed, to name what keeps a process alive after it meant to stop. */
const openConnections = new Set<BrokerConnection>()

/** The client id and address of every connection not yet closed (a diagnostic for leaks). */
export function describeOpenConnections(): string[] {
  return [...openConnections].map((c) => `${c.clientId} -> ${c.address}`)
}

export class BrokerConnection {
  readonly host: string
  readonly port: number
  readonly clientId: string
  private readonly requestTimeoutMs: number
  private nextCorrelationId = 1
  private readonly pending = new Map<number, Pending>()
  private closedError: Error | null = null
  private brokerVersions = new Map<number, VersionRange>()
  private readonly negotiated = new Map<number, number>()
  private readonly closeListeners: ((err: Error) => void)[] = []
  /** Until ApiVersions is answered, a malformed answer means the peer is not a Kafka broker. */
  private negotiating = true
  private reauthTimer: NodeJS.Timeout | undefined

  private constructor(private readonly socket: Socket, private readonly receiver: ResponseFrameReceiver, opts: ConnectionOptions) {
    this.host = opts.host
    this.port = opts.port
    this.clientId = opts.clientId ?? 'skein'
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 30000
    openConnections.add(this)
    receiver.sink = {
      onFrame: (frame) => this.onFrame(frame),
      onBadSize: (size, start) =>
        this.fail(
          this.negotiating
            ? this.notKafka(start)
            : new ConnectionError(`response frame of ${size} bytes from ${this.address} is outside 4..${receiver.maxFrameBytes}`),
        ),
    }
    socket.on('error', (err) => this.fail(new ConnectionError(`connection to ${this.address} failed: ${describeSocketError(err)}`)))
    socket.on('close', () => this.fail(new ConnectionError(`connection to ${this.address} closed`)))
  }

  get address(): string {
    return `${this.host}:${this.port}`
  }

  get closed(): boolean {
    return this.closedError !== null
  }

  /** Requests written and not yet answered. */
  get inFlight(): number {
    return this.pending.size
  }

  /** Opens a connection and negotiates API versions. Rejects with ConnectionError when unreachable. */
  static async connect(opts: ConnectionOptions): Promise<BrokerConnection> {
    const aborted = (): ConnectionError => new ConnectionError(`connecting to ${opts.host}:${opts.port} was abandoned: the client is closed`)
    if (opts.signal?.aborted === true) throw aborted()
    const receiver = new ResponseFrameReceiver(opts.maxResponseBytes ?? 256 * 1024 * 1024)
    const tls = opts.security?.tls
    const socket = await new Promise<Socket>((resolve, reject) => {
      // Reads go into buffers the receiver picks (a large response is read straight into its own frame).
      // A TLS socket hands decrypted chunks instead, copied into the same buffers.
      const s = tls !== undefined
        ? tlsConnect({ servername: isIpAddress(opts.host) ? undefined : opts.host, ...tls, host: opts.host, port: opts.port })
        : netConnect({
            host: opts.host,
            port: opts.port,
            onread: { buffer: () => receiver.nextBuffer(), callback: (nread: number, buf: Uint8Array) => { receiver.onRead(nread, buf); return true } },
          })
      if (tls !== undefined) s.on('data', (chunk: Buffer) => copyInto(receiver, chunk))
      const onAbort = (): void => {
        clearTimeout(timer)
        s.destroy()
        reject(aborted())
      }
      const timer = setTimeout(() => {
        opts.signal?.removeEventListener('abort', onAbort)
        s.destroy()
        reject(new ConnectionError(`cannot connect to ${opts.host}:${opts.port}: timed out after ${opts.connectTimeoutMs ?? 10000} ms`))
      }, opts.connectTimeoutMs ?? 10000)
      opts.signal?.addEventListener('abort', onAbort, { once: true })
      s.once(tls !== undefined ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer)
        opts.signal?.removeEventListener('abort', onAbort)
        s.removeAllListeners('error')
        s.setNoDelay(true)
        resolve(s)
      })
      s.once('error', (err) => {
        clearTimeout(timer)
        opts.signal?.removeEventListener('abort', onAbort)
        s.destroy()
        reject(new ConnectionError(`cannot connect to ${opts.host}:${opts.port}: ${describeSocketError(err)}`))
      })
    })
    const conn = new BrokerConnection(socket, receiver, opts)
    const onAbort = (): void => conn.fail(aborted())
    opts.signal?.addEventListener('abort', onAbort, { once: true })
    try {
      await conn.negotiate()
      conn.negotiating = false
      if (opts.security?.sasl !== undefined) await conn.authenticate(opts.security.sasl)
    } catch (err) {
      conn.close()
      throw err
    } finally {
      opts.signal?.removeEventListener('abort', onAbort)
    }
    return conn
  }

  /** The broker's version range for an API (from ApiVersions), if it serves it. */
  brokerRange(apiKey: number): VersionRange | undefined {
    return this.brokerVersions.get(apiKey)
  }

  /** The version this connection uses for apiKey; throws KafkaError(UNSUPPORTED_VERSION) when none fits. */
  version(apiKey: number): number {
    let v = this.negotiated.get(apiKey)
    if (v === undefined) {
      v = pickVersion(apiKey, apiName(apiKey) ?? `API ${apiKey}`, this.brokerVersions.get(apiKey))
      this.negotiated.set(apiKey, v)
    }
    return v
  }

  supports(apiKey: number): boolean {
    try {
      this.version(apiKey)
      return true
    } catch {
      return false
    }
  }

  /** SaslHandshake v1 then SaslAuthenticate until the mechanism is done; schedules re-authentication (KIP-368). */
  private async authenticate(credentials: SaslCredentials): Promise<void> {
    const handshake = await this.send(
      ApiKey.SaslHandshake,
      (w, v) => SaslHandshake.encodeSaslHandshakeRequest(w, SaslHandshake.createSaslHandshakeRequest({ mechanism: credentials.mechanism }), v),
      SaslHandshake.decodeSaslHandshakeResponse,
      { version: 1 },
    )
    if (handshake.errorCode !== ErrorCode.NONE) {
      throw new KafkaError(handshake.errorCode as ErrorCode, `SASL mechanism ${credentials.mechanism} is not enabled on ${this.address} (enabled: ${handshake.mechanisms.join(', ') || 'none'})`)
    }
    const client = saslClient(credentials)
    let challenge: Buffer = Buffer.alloc(0)
    let lifetimeMs = 0n
    for (let token = client.step(challenge); token !== null; token = client.step(challenge)) {
      const auth = token
      const res = await this.send(
        ApiKey.SaslAuthenticate,
        (w, v) => SaslAuthenticate.encodeSaslAuthenticateRequest(w, SaslAuthenticate.createSaslAuthenticateRequest({ authBytes: auth }), v),
        SaslAuthenticate.decodeSaslAuthenticateResponse,
        { version: 1 },
      )
      if (res.errorCode !== ErrorCode.NONE) throw new KafkaError(res.errorCode as ErrorCode, res.errorMessage ?? `SASL authentication to ${this.address} failed`)
      challenge = res.authBytes
      lifetimeMs = res.sessionLifetimeMs
    }
    clearTimeout(this.reauthTimer)
    if (lifetimeMs > 0n) {
      // Re-authenticate well before the broker would close the connection (Kafka's clients pick 85-95%).
      this.reauthTimer = setTimeout(() => {
        this.authenticate(credentials).catch((err: unknown) => this.fail(new ConnectionError(`re-authentication to ${this.address} failed: ${(err as Error).message}`)))
      }, Number(lifetimeMs) * 0.85)
      this.reauthTimer.unref()
    }
  }

  private async negotiate(): Promise<void> {
    // v3 first; a broker that does not know it answers UNSUPPORTED_VERSION in a v0 body listing its range.
    const request = ApiVersions.createApiVersionsRequest({ clientSoftwareName: CLIENT_SOFTWARE_NAME, clientSoftwareVersion: CLIENT_SOFTWARE_VERSION })
    const decodeTolerant = (r: Reader, version: number): ApiVersions.ApiVersionsResponse => {
      const errorCode = r.buf.readInt16BE(r.offset)
      return ApiVersions.decodeApiVersionsResponse(r, errorCode === ErrorCode.UNSUPPORTED_VERSION ? 0 : version)
    }
    let res = await this.send(ApiKey.ApiVersions, (w, v) => ApiVersions.encodeApiVersionsRequest(w, request, v), decodeTolerant, { version: 3 })
    if (res.errorCode === ErrorCode.UNSUPPORTED_VERSION) {
      const range = res.apiKeys.find((k) => k.apiKey === ApiKey.ApiVersions)
      const v = Math.min(3, range?.maxVersion ?? 0)
      res = await this.send(ApiKey.ApiVersions, (w, ver) => ApiVersions.encodeApiVersionsRequest(w, request, ver), decodeTolerant, { version: v })
    }
    if (res.errorCode !== ErrorCode.NONE) throw new KafkaError(res.errorCode as ErrorCode, 'ApiVersions')
    this.brokerVersions = new Map(res.apiKeys.map((k) => [k.apiKey, { min: k.minVersion, max: k.maxVersion }]))
  }

  /**
   * Sends one request at the negotiated version and resolves its decoded response. Requests are written
   * at once (pipelined); responses come back in order.
   */
  send<Res>(apiKey: number, encode: (w: Writer, version: number) => void, decode: (r: Reader, version: number) => Res, opts: SendOptions = {}): Promise<Res> {
    if (this.closedError !== null) {
      opts.onWritten?.()
      return Promise.reject(this.closedError)
    }
    let version: number
    let frame: (Buffer | { fd: number })[]
    const correlationId = this.nextCorrelationId
    this.nextCorrelationId = (this.nextCorrelationId + 1) & 0x7fffffff
    try {
      version = opts.version ?? this.version(apiKey)
      frame = this.encodeFrame(apiKey, version, correlationId, encode)
    } catch (err) {
      opts.onWritten?.()
      return Promise.reject(err)
    }
    return new Promise<Res>((resolve, reject) => {
      const timeoutMs = this.requestTimeoutMs + (opts.extraTimeoutMs ?? 0)
      const timer = setTimeout(() => {
        if (!this.pending.has(correlationId)) return
        // Later answers on this connection would be out of step; close it so callers reconnect.
        const err = new TimeoutError(`${apiName(apiKey) ?? apiKey} request to ${this.address} timed out after ${timeoutMs} ms (request.timeout.ms)`)
        this.fail(err)
      }, timeoutMs)
      this.pending.set(correlationId, { apiKey, version, decode, resolve: resolve as (v: unknown) => void, reject, timer })
      this.writeChunks(frame as Buffer[], opts.onWritten)
    })
  }

  /** Writes a request that gets no response (Produce with acks=0); resolves once handed to the socket. */
  sendNoResponse(apiKey: number, encode: (w: Writer, version: number) => void, opts: SendOptions = {}): Promise<void> {
    if (this.closedError !== null) {
      opts.onWritten?.()
      return Promise.reject(this.closedError)
    }
    const correlationId = this.nextCorrelationId
    this.nextCorrelationId = (this.nextCorrelationId + 1) & 0x7fffffff
    let frame: Buffer[]
    try {
      frame = this.encodeFrame(apiKey, opts.version ?? this.version(apiKey), correlationId, encode) as Buffer[]
    } catch (err) {
      opts.onWritten?.()
      return Promise.reject(err)
    }
    const flushed = this.writeChunks(frame, opts.onWritten)
    if (flushed) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const onDrain = (): void => {
        this.socket.off('close', onClose)
        resolve()
      }
      const onClose = (): void => {
        this.socket.off('drain', onDrain)
        reject(this.closedError ?? new ConnectionError(`connection to ${this.address} closed`))
      }
      this.socket.once('drain', onDrain)
      this.socket.once('close', onClose)
    })
  }

  /** Resolves when the socket's write buffer has drained (backpressure for pipelined producers). */
  drained(): Promise<void> {
    if (!this.socket.writableNeedDrain || this.closedError !== null) return Promise.resolve()
    return drainOrClose(this.socket)
  }

  onClose(listener: (err: Error) => void): void {
    this.closeListeners.push(listener)
  }

  close(): void {
    this.fail(new ConnectionError(`connection to ${this.address} was closed by the client`))
  }

  private encodeFrame(apiKey: number, version: number, correlationId: number, encode: (w: Writer, version: number) => void): (Buffer | { fd: number })[] {
    const w = new Writer(256)
    const mark = beginFrame(w)
    writeRequestHeader(w, { requestApiKey: apiKey, requestApiVersion: version, correlationId, clientId: this.clientId })
    encode(w, version)
    endFrame(w, mark)
    return w.chunks()
  }

  /** One frame, corked into one writev; onWritten runs once the last chunk's write is done or failed. */
  private writeChunks(chunks: Buffer[], onWritten?: () => void): boolean {
    const last = chunks.length - 1
    const done = onWritten === undefined ? undefined : (): void => onWritten()
    if (last === 0) return this.socket.write(chunks[0]!, done)
    this.socket.cork()
    let ok = true
    for (let i = 0; i < last; i++) ok = this.socket.write(chunks[i]!)
    ok = this.socket.write(chunks[last]!, done)
    this.socket.uncork()
    return ok
  }

  private onFrame(frame: Buffer): void {
    const correlationId = frame.readInt32BE(0)
    const p = this.pending.get(correlationId)
    if (p === undefined) {
      this.fail(this.negotiating ? this.notKafka(frame) : new ConnectionError(`unexpected correlation id ${correlationId} from ${this.address}`))
      return
    }
    // Kafka answers a connection's requests in the order they were sent (as the Java client checks): an
    // answer that overtakes an older request means that request was lost on the way, and whether the
    // broker acted on it cannot be known. The connection is given up, so every request on it is retried
    // (an idempotent producer's resent batches are then recognised as duplicates if they were written).
    if (this.pending.keys().next().value !== correlationId) {
      this.fail(new ConnectionError(`response ${correlationId} from ${this.address} overtook an older request`))
      return
    }
    this.pending.delete(correlationId)
    if (p.timer !== undefined) clearTimeout(p.timer)
    try {
      const r = new Reader(frame)
      readResponseHeader(r, p.apiKey, p.version)
      p.resolve(p.decode(r, p.version))
    } catch (err) {
      if (this.negotiating) {
        const notKafka = this.notKafka(frame)
        p.reject(notKafka)
        this.fail(notKafka)
      } else p.reject(new KafkaError(ErrorCode.CORRUPT_MESSAGE, `cannot decode the ${apiName(p.apiKey) ?? p.apiKey} v${p.version} response from ${this.address}: ${(err as Error).message}`))
    }
  }

  private notKafka(answer: Buffer): NotKafkaBrokerError {
    return new NotKafkaBrokerError(`${this.address} is not a Kafka broker: it answered ApiVersions with ${describeBytes(answer)}`)
  }

  private fail(err: Error): void {
    if (this.closedError !== null) return
    this.closedError = err
    openConnections.delete(this)
    clearTimeout(this.reauthTimer)
    for (const p of this.pending.values()) {
      if (p.timer !== undefined) clearTimeout(p.timer)
      p.reject(err)
    }
    this.pending.clear()
    this.receiver.stop()
    this.socket.destroy()
    for (const l of this.closeListeners.splice(0)) l(err)
  }
}

/** The start of what a peer sent, as text when it is text ('HTTP/1.1 400 Bad Request'), else as hex. */
export function describeBytes(bytes: Buffer): string {
  const head = bytes.subarray(0, 64)
  const text = head.toString('latin1')
  const printable = text.replace(/[\r\n\t]/g, ' ')
  if (/^[\x20-\x7e]*$/.test(printable) && printable.trim().length >= 4) {
    const line = text.split(/\r?\n/)[0]!.trim()
    return `'${line.length > 0 ? line : printable.trim()}'`
  }
  return `bytes ${head.subarray(0, 16).toString('hex').replace(/(..)(?!$)/g, '$1 ')}${bytes.length > 16 ? ' ...' : ''}`
}

function describeSocketError(err: Error & { code?: string }): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is a broker running there?)'
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'unknown host'
    case 'ECONNRESET':
      return 'connection reset by the broker'
    case 'ETIMEDOUT':
      return 'timed out'
    default:
      return err.message
  }
}

function isIpAddress(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(':')
}

/** Copies a TLS socket's decrypted chunk into the buffers the frame receiver picks. */
function copyInto(receiver: ResponseFrameReceiver, chunk: Buffer): void {
  let offset = 0
  while (offset < chunk.length) {
    const target = receiver.nextBuffer()
    const n = chunk.copy(target, 0, offset, offset + Math.min(target.length, chunk.length - offset))
    receiver.onRead(n, target)
    offset += n
  }
}
