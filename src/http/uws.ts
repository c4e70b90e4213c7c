// The HTTP server over uWebSockets.js: the only module of Skein that loads the `uwebsockets` package
// (server.ts imports this module lazily, so a process without an HTTP listener never loads it).
//
// uWS rules this file keeps so that no caller has to know them:
// - A handler that does not answer before returning must have registered onAborted, or uWS terminates
//   the process: every request gets one at once, and the response object remembers that it was aborted,
//   so later writes are dropped instead of touching a freed native object.
// - Request bodies arrive through onData as ArrayBuffers that are neutered when the callback returns:
//   chunks are copied. Bodies read whole are refused with 413 as soon as Content-Length (or, for chunked
//   bodies, the bytes so far) exceeds the limit, before more is buffered; the connection is then closed.
// - Streamed bodies are paused (res.pause) while the handler has more than bufferBytes unread.
// - Responses: a large body goes out with tryEnd and continues from onWritable at getWriteOffset, so it
//   is never copied into uWS's queue whole; streamed writes report backpressure and writable() waits for
//   onWritable. Every write after an await is corked.
// - WebSocket sends report 'buffered' (backpressure) or 'dropped' (past maxBackpressure); every send and
//   end is corked. The upgrade itself is not (uWebSockets.js#1108: a corked upgrade after an await can
//   end the new socket at once), so uWS warns on stderr that the upgrade's write was not corked.
import { STATUS_CODES } from 'node:http'
import { createServer } from 'node:net'
import uws from 'uwebsockets'
import type { BasicAuthenticator, HttpPrincipal } from './basic-auth.js'
import { formatHttpListener, isLoopbackHost, parseHttpListener } from './listener.js'
import { pickEncoding, type StaticAssets } from './static.js'
import { privateSocketPath, removeSocketDir, TlsFront } from './tls-front.js'
import {
  type BoundListener,
  type BufferedRequest,
  type ErrorResponder,
  type Handler,
  type Headers,
  HttpError,
  ListenError,
  type HttpRequest,
  type HttpResponse,
  type HttpServer,
  type HttpServerOptions,
  type RouteOptions,
  type StreamedRequest,
  type StreamRouteOptions,
  type WebSocketConnection,
  type WebSocketRoute,
} from './types.js'

type UwsResponse = uws.HttpResponse
type UwsRequest = uws.HttpRequest

const EMPTY = Buffer.alloc(0)
/** Bodies up to this size are handed to uWS in one end(); larger ones go through tryEnd/onWritable. */
const DIRECT_END_BYTES = 16 * 1024
const DEFAULT_MAX_BODY = 1024 * 1024
const DEFAULT_STREAM_BUFFER = 1024 * 1024
/** Methods that change nothing (uWS gives them in lower case): no Origin check. */
const SAFE_METHODS = new Set(['get', 'head', 'options'])

/** The host of a Host header: `name`, `name:port`, `[v6]` or `[v6]:port`. */
function hostOfHostHeader(header: string): string {
  if (header.startsWith('[')) return header.slice(1, header.indexOf(']') >>> 0)
  const colon = header.indexOf(':')
  return colon < 0 ? header : header.slice(0, colon)
}

/** Jetty's default request header size, which bounds the request line in Confluent's servers. */
const DEFAULT_MAX_URI = 8192

const statusLines = new Map<number, string>()
function statusLine(status: number): string {
  let line = statusLines.get(status)
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`
    statusLines.set(status, line)
  }
  return line
}

const defaultErrorBody: ErrorResponder = (status, message) => ({ headers: { 'Content-Type': 'text/plain; charset=utf-8' }, body: `${status} ${message}\n` })

/** A route pattern compiled for the 404/405 decision: `/a/:b/*` -> /^\/a\/[^/]+\/.*$/ */
function patternRegex(pattern: string): RegExp {
  const re = pattern
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/')
  return new RegExp(`^${re}$`)
}

function paramNames(pattern: string): string[] {
  return pattern
    .split('/')
    .filter((s) => s.startsWith(':'))
    .map((s) => s.slice(1))
}

class Request implements HttpRequest {
  body: Buffer = EMPTY
  constructor(
    readonly method: string,
    readonly path: string,
    private readonly rawQuery: string,
    readonly params: Readonly<Record<string, string>>,
    private readonly headers: Record<string, string>,
    readonly remoteAddress: string,
    readonly principal: HttpPrincipal | null,
  ) {}

  private parsedQuery: URLSearchParams | null = null
  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery))
  }

  header(name: string): string | undefined {
    return this.headers[name]
  }
}

/** Reads what a handler may need from uWS's stack-allocated request; null when a parameter is malformed. */
function captureRequest(res: UwsResponse, req: UwsRequest, names: readonly string[], principal: HttpPrincipal | null): Request | null {
  const headers: Record<string, string> = {}
  req.forEach((k, v) => {
    headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`
  })
  const params: Record<string, string> = {}
  for (let i = 0; i < names.length; i++) {
    try {
      params[names[i]!] = decodeURIComponent(req.getParameter(i))
    } catch {
      return null
    }
  }
  return new Request(req.getMethod().toUpperCase(), req.getUrl(), req.getQuery() ?? '', params, headers, Buffer.from(res.getRemoteAddressAsText()).toString(), principal)
}

/**
 * Why uWS could not listen (it only says false): the same bind tried once with Node, whose error carries
 * the system's code.
 */
function listenFailureCode(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const probe = createServer()
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'EUNKNOWN'))
    probe.listen({ host: host === '' ? undefined : host, port, exclusive: true }, () => probe.close(() => resolve('EUNKNOWN')))
  })
}

/** uWS.js's ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT (its typings declare the enum; the addon exports no value). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1

/** uWS.js's listen(host, port, options, cb): the addon takes it, its typings name only (port, options, cb). */
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: uws.us_listen_socket | false) => void) => void

class Response implements HttpResponse {
  aborted = false
  finished = false
  /** writeHead was called: the status and headers are out. */
  headSent = false
  /** A streamed write is waiting for the socket to drain. */
  private backpressured = false
  private writableWaiters: (() => void)[] = []
  private abortCallbacks: (() => void)[] | null = null
  private writableHooked = false
  /**
   * The request body is still arriving. A response sent meanwhile closes the connection: the rest of the
   * upload cannot be told from the next request, and reading it all would let a client push gigabytes
   * after its answer.
   */
  bodyPending = false

  constructor(
    private readonly res: UwsResponse,
    private readonly head: boolean,
  ) {}

  onAborted(cb: () => void): void {
    if (this.aborted) {
      cb()
      return
    }
    ;(this.abortCallbacks ??= []).push(cb)
  }

  /** uWS's onAborted: the native response is gone. */
  abort(): void {
    if (this.aborted) return
    this.aborted = true
    this.wakeWritable()
    const cbs = this.abortCallbacks
    this.abortCallbacks = null
    for (const cb of cbs ?? []) {
      try {
        cb()
      } catch {
        // An abort callback that throws must not stop the others.
      }
    }
  }

  private writeHeaders(status: number, headers: Headers | null): void {
    this.res.writeStatus(statusLine(status))
    if (headers !== null) for (const k in headers) this.res.writeHeader(k, headers[k]!)
  }

  send(status: number, headers: Headers | null, body?: string | Uint8Array, opts?: { closeConnection?: boolean }): void {
    if (this.aborted || this.finished || this.headSent) return
    this.finished = true
    const close = opts?.closeConnection === true || this.bodyPending
    this.res.cork(() => {
      this.writeHeaders(status, headers)
      if (body === undefined || this.head) {
        if (body === undefined) this.res.end(undefined, close)
        else this.res.endWithoutBody(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength, close)
        return
      }
      if (close || (typeof body === 'string' ? body.length <= DIRECT_END_BYTES / 3 : body.byteLength <= DIRECT_END_BYTES)) {
        this.res.end(body, close)
        return
      }
      const bytes = typeof body === 'string' ? Buffer.from(body) : body
      this.sendInPieces(bytes)
    })
  }

  /** tryEnd what the socket takes; the rest from onWritable, at the offset the socket reached. */
  private sendInPieces(bytes: Uint8Array): void {
    const total = bytes.byteLength
    const start = this.res.getWriteOffset()
    const [, done] = this.res.tryEnd(bytes, total)
    if (done) return
    this.res.onWritable((offset) => {
      if (this.aborted) return true
      const [ok] = this.res.tryEnd(bytes.subarray(offset - start), total)
      return ok
    })
  }

  /**
   * The status and headers are kept until the first write or end, so that they leave in one packet with
   * the first bytes of the body (a head sent alone and a small body after it meet Nagle's algorithm and
   * the client's delayed ACK: 40 ms per response).
   */
  writeHead(status: number, headers: Headers | null): void {
    if (this.aborted || this.finished || this.headSent) return
    this.headSent = true
    this.pendingHead = { status, headers }
  }

  private pendingHead: { status: number; headers: Headers | null } | null = null

  private emitHead(): void {
    const h = this.pendingHead
    if (h === null) return
    this.pendingHead = null
    this.writeHeaders(h.status, h.headers)
  }

  write(chunk: string | Uint8Array): boolean {
    if (this.aborted || this.finished) return false
    if (!this.headSent) this.writeHead(200, null)
    let ok = true
    this.res.cork(() => {
      this.emitHead()
      ok = this.res.write(chunk)
    })
    if (!ok) {
      this.backpressured = true
      if (!this.writableHooked) {
        this.writableHooked = true
        this.res.onWritable(() => {
          this.backpressured = false
          this.wakeWritable()
          return true
        })
      }
    }
    return ok
  }

  writable(): Promise<void> {
    if (this.aborted || !this.backpressured) return Promise.resolve()
    return new Promise((resolve) => this.writableWaiters.push(resolve))
  }

  private wakeWritable(): void {
    const waiters = this.writableWaiters
    this.writableWaiters = []
    for (const w of waiters) w()
  }

  end(chunk?: string | Uint8Array, opts?: { closeConnection?: boolean }): void {
    if (this.aborted || this.finished) return
    if (!this.headSent) {
      this.send(200, null, chunk ?? EMPTY, opts)
      return
    }
    this.finished = true
    this.res.cork(() => {
      this.emitHead()
      this.res.end(chunk, opts?.closeConnection === true || this.bodyPending)
    })
  }

  close(): void {
    if (this.aborted) return
    this.finished = true
    this.res.close()
  }

  /**
   * uWS pause/resume of the request body, skipped once the native response is gone or ended: uWS
   * discards an ended response, and touching it then throws from inside a uWS callback, which ends the
   * process (a client uploading on after its 400 did exactly that).
   */
  pause(): void {
    if (!this.aborted && !this.finished) this.res.pause()
  }

  resume(): void {
    if (!this.aborted && !this.finished) this.res.resume()
  }
}

/** A request body handed over chunk by chunk; the socket is paused while too much is unread. */
class BodyStream implements AsyncIterable<Buffer> {
  private readonly queue: Buffer[] = []
  private queued = 0
  private done = false
  private error: Error | null = null
  private wake: (() => void) | null = null
  private paused = false

  constructor(
    private readonly res: Response,
    private readonly bufferBytes: number,
  ) {}

  push(chunk: Buffer, last: boolean): void {
    if (last) this.res.bodyPending = false
    // Answered already: nobody will read the rest, so it is not kept (the connection closes on the answer).
    if (this.res.finished || this.res.aborted) return
    if (chunk.length > 0) {
      this.queue.push(chunk)
      this.queued += chunk.length
    }
    if (last) this.done = true
    if (!this.done && !this.paused && this.queued >= this.bufferBytes) {
      this.paused = true
      this.res.pause()
    }
    this.notify()
  }

  fail(err: Error): void {
    this.error = err
    this.notify()
  }

  private notify(): void {
    const w = this.wake
    this.wake = null
    w?.()
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    for (;;) {
      const chunk = this.queue.shift()
      if (chunk !== undefined) {
        this.queued -= chunk.length
        if (this.paused && this.queued < this.bufferBytes / 2) {
          this.paused = false
          this.res.resume()
        }
        yield chunk
        continue
      }
      if (this.error !== null) throw this.error
      if (this.done) return
      await new Promise<void>((resolve) => (this.wake = resolve))
    }
  }
}

class Connection<T> implements WebSocketConnection<T> {
  socket: uws.WebSocket<{ conn: Connection<T> }> | null = null
  closed = false

  constructor(readonly data: T) {}

  /** True inside cork(): sends need no cork of their own. */
  private corked = false

  // Every send and end is corked, as uWS asks of writes made outside its callbacks (after an await): an
  // uncorked write there can land in the loop's cork buffer of another socket and never be flushed.
  send(message: string | Uint8Array, isBinary = typeof message !== 'string'): 'sent' | 'buffered' | 'dropped' {
    const socket = this.socket
    if (socket === null) return 'dropped'
    let r = 2
    if (this.corked) r = socket.send(message, isBinary)
    else socket.cork(() => (r = socket.send(message, isBinary)))
    return r === 1 ? 'sent' : r === 0 ? 'buffered' : 'dropped'
  }

  cork(fn: () => void): void {
    const socket = this.socket
    if (socket === null || this.corked) {
      fn()
      return
    }
    this.corked = true
    try {
      socket.cork(fn)
    } finally {
      this.corked = false
    }
  }

  get bufferedAmount(): number {
    return this.socket === null ? 0 : this.socket.getBufferedAmount()
  }

  end(code = 1000, reason = ''): void {
    const socket = this.socket
    if (socket === null) return
    if (this.corked) socket.end(code, reason)
    else socket.cork(() => socket.end(code, reason))
  }

  close(): void {
    this.socket?.close()
  }
}

/** Copies a uWS chunk (neutered when its callback returns) into a Buffer of its own. */
function copyChunk(ab: ArrayBuffer): Buffer {
  const out = Buffer.allocUnsafe(ab.byteLength)
  out.set(new Uint8Array(ab))
  return out
}

class UwsServer implements HttpServer {
  private readonly app = uws.App()
  private readonly known: { method: string; pattern: string; regex: RegExp }[] = []
  private fallbackInstalled = false
  private readonly sockets: uws.us_listen_socket[] = []
  /** https listeners: their TLS side, and the private unix socket the app serves them on (tls-front.ts). */
  private front: { tls: TlsFront; dir: string; path: string } | null = null
  readonly listeners: BoundListener[] = []
  private readonly maxBodyBytes: number
  private readonly maxUriBytes: number
  private readonly allowedOrigins: ReadonlySet<string>
  /** Every listener is bound to a loopback address: Host headers must name loopback (DNS rebinding). */
  private loopbackOnly = false
  private readonly errorBody: ErrorResponder
  private closed = false
  private readonly authenticator: BasicAuthenticator | null
  /**
   * Who sent the request being dispatched: set by withRequestChecks around the route's synchronous
   * start, where captureRequest puts it on the request (uWS's request object lives only that long too).
   */
  private principal: HttpPrincipal | null = null

  constructor(private readonly opts: HttpServerOptions) {
    this.maxBodyBytes = opts.maxBodyBytes ?? DEFAULT_MAX_BODY
    this.maxUriBytes = opts.maxUriBytes ?? DEFAULT_MAX_URI
    this.allowedOrigins = new Set(opts.allowedOrigins ?? [])
    this.errorBody = opts.errorBody ?? defaultErrorBody
    this.authenticator = opts.authenticator ?? null
  }

  /**
   * What no route took: 405 when the path is known under another method, else 404. uWS picks the most
   * specific route whatever the order, so this catch-all is installed at the first listen, unless a
   * route already claimed every path for every method (ANY /*).
   */
  private installFallback(): void {
    if (this.fallbackInstalled) return
    this.fallbackInstalled = true
    if (this.known.some((k) => k.method === 'ANY' && k.pattern === '/*')) return
    this.app.any('/*', this.shielded('ANY /* (fallback)', this.withRequestChecks((res, req) => {
      const r = new Response(res, false)
      res.onAborted(() => r.abort())
      const path = req.getUrl()
      const allowed = [...new Set(this.known.filter((k) => k.regex.test(path)).map((k) => k.method))]
      if (allowed.length > 0) this.sendError(r, 405, 'Method Not Allowed', null, { Allow: allowed.join(', ') })
      else this.sendError(r, 404, 'Not Found', null)
    })))
  }

  private sendError(res: Response, status: number, message: string, req: HttpRequest | null, extra?: Headers, closeConnection = false): void {
    const { headers, body } = this.errorBody(status, message, req)
    res.send(status, extra === undefined ? headers : { ...headers, ...extra }, body, { closeConnection })
  }

  /** A handler's failure: its HttpError, or 500; a response already under way is cut off. */
  private fail(err: unknown, req: HttpRequest, res: Response): void {
    if (res.aborted) return
    if (res.headSent || res.finished) {
      if (!res.finished) res.close()
      if (!(err instanceof HttpError)) this.opts.onHandlerError?.(err, req)
      return
    }
    if (err instanceof HttpError) {
      if (err.body !== undefined) res.send(err.status, err.headers, err.body)
      else this.sendError(res, err.status, err.message, req, err.headers ?? undefined)
      return
    }
    this.sendError(res, 500, 'Internal Server Error', req)
    this.opts.onHandlerError?.(err, req)
  }

  private run<R extends HttpRequest>(handler: Handler<R>, req: R, res: Response): void {
    let result: void | Promise<void>
    try {
      result = handler(req, res)
    } catch (err) {
      this.fail(err, req, res)
      return
    }
    const check = (): void => {
      // A handler that returned without answering would leave the client waiting forever.
      if (!res.aborted && !res.finished && !res.headSent) this.fail(new Error('the handler returned without answering'), req, res)
    }
    if (result instanceof Promise) result.then(check, (err: unknown) => this.fail(err, req, res))
    else check()
  }

  /**
   * fn, but an exception it throws never leaves it: thrown inside a uWS callback it would end the
   * process (and with it Kafka, the registry and the console). It is reported, and the request's
   * connection closed when the response is still there.
   */
  private shielded<A extends unknown[]>(what: string, fn: (...args: A) => void, res?: () => Response | UwsResponse | undefined): (...args: A) => void {
    return (...args: A) => {
      try {
        fn(...args)
      } catch (err) {
        this.opts.onHandlerError?.(err, { method: 'HTTP', path: what, query: new URLSearchParams(), params: {}, header: () => undefined, remoteAddress: '', principal: null })
        const r = res?.() ?? (args[0] as UwsResponse | undefined)
        try {
          if (r instanceof Response) r.close()
          else (r as UwsResponse | undefined)?.close?.()
        } catch {
          // Already discarded by uWS: nothing left to close.
        }
      }
    }
  }

  /**
   * fn for requests that pass the checks every route shares, else the refusal:
   * - a request target (path and query) over maxUriBytes: 414 URI Too Long, connection closed, as Jetty
   *   (Confluent's server) does past its 8 KiB request header. Targets longer than uWS's own receive
   *   buffer never reach here: uWS answers those itself (505) and closes the connection;
   * - on loopback-only listeners, a Host header that names no loopback address: 403 (a page that rebinds
   *   its own DNS name to 127.0.0.1 would otherwise reach the service as its own origin);
   * - a state-changing method or a WebSocket upgrade from a browser page of another origin (its Origin
   *   header is neither the listener's own origin nor in allowedOrigins): 403. Browsers send Origin on
   *   every cross-origin POST, form posts included, and on every WebSocket handshake;
   * - with an authenticator, a request (or upgrade) without valid BASIC credentials: 401 with the
   *   realm's challenge; valid ones of a user without an allowed role: 403. The 404/405 fallback is
   *   checked too, so an unauthenticated caller cannot learn which paths exist.
   */
  private withRequestChecks<A extends unknown[]>(fn: (res: UwsResponse, req: UwsRequest, ...rest: A) => void): (res: UwsResponse, req: UwsRequest, ...rest: A) => void {
    const max = this.maxUriBytes
    return (res, ureq, ...rest) => {
      const length = ureq.getUrl().length + (ureq.getQuery()?.length ?? 0)
      let refusal: [number, string] | null = null
      if (length > max) refusal = [414, `URI Too Long: the request target has ${length} bytes, the limit is ${max}`]
      else refusal = this.browserRefusal(ureq, rest.length > 0)
      let challenge: Headers | undefined
      let principal: HttpPrincipal | null = null
      if (refusal === null && this.authenticator !== null) {
        const verdict = this.authenticator.check(ureq.getUrl(), ureq.getHeader('authorization'), { method: ureq.getMethod().toUpperCase(), path: ureq.getUrl(), header: (name) => ureq.getHeader(name) })
        if (verdict.kind === 'refused') {
          refusal = [verdict.status, verdict.message]
          challenge = verdict.headers
        } else principal = verdict.principal
      }
      if (refusal === null) {
        this.principal = principal
        try {
          fn(res, ureq, ...rest)
        } finally {
          this.principal = null
        }
        return
      }
      const r = new Response(res, false)
      res.onAborted(() => r.abort())
      this.sendError(r, refusal[0], refusal[1], null, challenge, true)
    }
  }

  /** The Host and Origin checks of withRequestChecks: the refusal, or null. */
  private browserRefusal(ureq: UwsRequest, upgrade: boolean): [number, string] | null {
    const host = ureq.getHeader('host')
    if (this.loopbackOnly && !isLoopbackHost(hostOfHostHeader(host))) {
      return [403, `Forbidden: Host '${host}' does not name this loopback listener`]
    }
    if (!upgrade && SAFE_METHODS.has(ureq.getMethod())) return null
    const origin = ureq.getHeader('origin')
    // The listener's own origin, http or https: a port speaks one of the two, so a page of either scheme
    // naming this Host was served by this server.
    if (origin === '' || this.allowedOrigins.has('*') || this.allowedOrigins.has(origin) || origin === `http://${host}` || origin === `https://${host}`) return null
    return [403, `Forbidden: origin '${origin}' may not ${upgrade ? 'open WebSockets' : 'change state'} here (access.control.allow.origin)`]
  }

  private register(method: string, pattern: string, fn: (res: UwsResponse, req: UwsRequest) => void): void {
    const m = method.toUpperCase()
    if (this.fallbackInstalled && m === 'ANY' && pattern === '/*') throw new Error('a catch-all route (ANY /*) must be added before the first listen()')
    this.known.push({ method: m, pattern, regex: patternRegex(pattern) })
    fn = this.shielded(`${m} ${pattern}`, this.withRequestChecks(fn))
    switch (m) {
      case 'GET':
        this.app.get(pattern, fn)
        break
      case 'POST':
        this.app.post(pattern, fn)
        break
      case 'PUT':
        this.app.put(pattern, fn)
        break
      case 'PATCH':
        this.app.patch(pattern, fn)
        break
      case 'DELETE':
        this.app.del(pattern, fn)
        break
      case 'HEAD':
        this.app.head(pattern, fn)
        break
      case 'OPTIONS':
        this.app.options(pattern, fn)
        break
      case 'ANY':
        this.app.any(pattern, fn)
        break
      default:
        throw new Error(`unsupported HTTP method ${method}`)
    }
  }

  route(method: string, pattern: string, handler: Handler<BufferedRequest>, opts: RouteOptions = {}): void {
    const names = paramNames(pattern)
    const limit = opts.maxBodyBytes ?? this.maxBodyBytes
    this.register(method, pattern, (res, ureq) => {
      const r = new Response(res, ureq.getMethod() === 'head')
      res.onAborted(() => r.abort())
      const req = captureRequest(res, ureq, names, this.principal)
      if (req === null) {
        this.sendError(r, 400, 'Bad Request: malformed percent-encoding in the path', null)
        return
      }
      const length = req.header('content-length')
      const chunked = req.header('transfer-encoding') !== undefined
      if (!chunked && (length === undefined || length === '0')) {
        this.run(handler, req, r)
        return
      }
      const declared = length === undefined ? -1 : Number(length)
      if (!chunked && !(declared >= 0)) {
        this.sendError(r, 400, 'Bad Request: malformed Content-Length', req, undefined, true)
        return
      }
      if (declared > limit) {
        this.sendError(r, 413, `Request body of ${declared} bytes is larger than the limit of ${limit} bytes`, req, undefined, true)
        return
      }
      // Known length: one buffer of that size. Chunked: pieces, joined at the end.
      const whole = declared >= 0 ? Buffer.allocUnsafe(declared) : null
      const pieces: Buffer[] = []
      let received = 0
      let refused = false
      r.bodyPending = true
      res.onData(this.shielded(`${pattern} (body)`, (ab: ArrayBuffer, last: boolean) => {
        if (last) r.bodyPending = false
        if (refused || r.aborted) return
        const n = ab.byteLength
        if (received + n > limit || (whole !== null && received + n > whole.length)) {
          refused = true
          this.sendError(r, 413, `Request body is larger than the limit of ${limit} bytes`, req, undefined, true)
          return
        }
        if (whole !== null) whole.set(new Uint8Array(ab), received)
        else if (n > 0) pieces.push(copyChunk(ab))
        received += n
        if (!last) return
        req.body = whole !== null ? whole.subarray(0, received) : pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces, received)
        this.run(handler, req as Request & BufferedRequest, r)
      }, () => r))
    })
  }

  streamRoute(method: string, pattern: string, handler: Handler<StreamedRequest>, opts: StreamRouteOptions = {}): void {
    const names = paramNames(pattern)
    const bufferBytes = opts.bufferBytes ?? DEFAULT_STREAM_BUFFER
    this.register(method, pattern, (res, ureq) => {
      const r = new Response(res, false)
      const req = captureRequest(res, ureq, names, this.principal)
      if (req === null) {
        res.onAborted(() => r.abort())
        this.sendError(r, 400, 'Bad Request: malformed percent-encoding in the path', null)
        return
      }
      const body = new BodyStream(r, bufferBytes)
      res.onAborted(() => {
        body.fail(new Error('the client closed the connection'))
        r.abort()
      })
      const hasBody = req.header('transfer-encoding') !== undefined || (req.header('content-length') ?? '0') !== '0'
      if (hasBody) {
        r.bodyPending = true
        res.onData(this.shielded(`${pattern} (body)`, (ab: ArrayBuffer, last: boolean) => body.push(copyChunk(ab), last), () => r))
      }
      else body.push(EMPTY, true)
      this.run(handler, Object.assign(req, { body }) as unknown as StreamedRequest, r)
    })
  }

  ws<T>(pattern: string, route: WebSocketRoute<T>): void {
    const names = paramNames(pattern)
    const guard = (what: string, fn: () => void, conn: Connection<T>): void => {
      try {
        fn()
      } catch (err) {
        this.opts.onHandlerError?.(err, { method: 'WS', path: `${pattern} (${what})`, query: new URLSearchParams(), params: {}, header: () => undefined, remoteAddress: '', principal: null })
        conn.close()
      }
    }
    const idle = route.idleTimeoutSeconds ?? 120
    this.app.ws<{ conn: Connection<T> }>(pattern, {
      maxPayloadLength: route.maxPayloadLength ?? 16 * 1024 * 1024,
      maxBackpressure: route.maxBackpressure ?? 1024 * 1024,
      // uWS accepts 0 (off) or at least 8 seconds.
      idleTimeout: idle === 0 ? 0 : Math.max(8, idle),
      upgrade: this.withRequestChecks((res: UwsResponse, ureq: UwsRequest, context: uws.us_socket_context_t) => {
        const r = new Response(res, false)
        res.onAborted(() => r.abort())
        const key = ureq.getHeader('sec-websocket-key')
        const protocol = ureq.getHeader('sec-websocket-protocol')
        const extensions = ureq.getHeader('sec-websocket-extensions')
        const req = captureRequest(res, ureq, names, this.principal)
        if (req === null) {
          this.sendError(r, 400, 'Bad Request: malformed percent-encoding in the path', null)
          return
        }
        const accept = (data: T): void => {
          if (r.aborted) return
          r.finished = true
          // Not inside res.cork: an upgrade made in a cork after an await sometimes ends the new socket at
          // once with 1006 (uNetworking/uWebSockets.js#1108, about one upgrade in twenty under load here).
          res.upgrade({ conn: new Connection(data) }, key, protocol, extensions, context)
        }
        if (route.upgrade === undefined) {
          accept(undefined as T)
          return
        }
        try {
          const d = route.upgrade(req)
          if (d instanceof Promise) d.then(accept, (err: unknown) => this.fail(err, req, r))
          else accept(d)
        } catch (err) {
          this.fail(err, req, r)
        }
      }),
      open: (socket) => {
        const conn = socket.getUserData().conn
        conn.socket = socket
        if (route.open) guard('open', () => route.open!(conn), conn)
      },
      message: (socket, message, isBinary) => {
        const conn = socket.getUserData().conn
        if (route.message) guard('message', () => route.message!(conn, Buffer.from(message), isBinary), conn)
      },
      drain: (socket) => {
        const conn = socket.getUserData().conn
        if (route.drain) guard('drain', () => route.drain!(conn), conn)
      },
      close: (socket, code, message) => {
        const conn = socket.getUserData().conn
        conn.closed = true
        conn.socket = null
        try {
          route.close?.(conn, code, Buffer.from(message).toString())
        } catch (err) {
          this.opts.onHandlerError?.(err, { method: 'WS', path: `${pattern} (close)`, query: new URLSearchParams(), params: {}, header: () => undefined, remoteAddress: '', principal: null })
        }
      },
    })
  }

  static(prefix: string, assets: StaticAssets): void {
    const base = prefix.replace(/\/+$/, '')
    const serve = (res: UwsResponse, ureq: UwsRequest): void => {
      const r = new Response(res, ureq.getMethod() === 'head')
      res.onAborted(() => r.abort())
      let rel: string
      try {
        rel = decodeURIComponent(ureq.getUrl().slice(base.length)).replace(/^\/+/, '')
      } catch {
        this.sendError(r, 400, 'Bad Request: malformed percent-encoding in the path', null)
        return
      }
      const asset = assets.get(rel === '' || rel.endsWith('/') ? `${rel}index.html` : rel)
      if (asset === undefined) {
        this.sendError(r, 404, 'Not Found', null)
        return
      }
      const cacheHeaders = { ETag: asset.etag, 'Cache-Control': 'no-cache', Vary: 'Accept-Encoding' }
      if (ureq.getHeader('if-none-match') === asset.etag) {
        r.send(304, cacheHeaders)
        return
      }
      const { encoding, body } = pickEncoding(asset, ureq.getHeader('accept-encoding') || undefined)
      const headers: Record<string, string> = { ...cacheHeaders, 'Content-Type': asset.contentType }
      if (encoding !== null) headers['Content-Encoding'] = encoding
      r.send(200, headers, body)
    }
    for (const p of base === '' ? ['/*'] : [base, `${base}/*`]) {
      this.register('GET', p, serve)
      this.register('HEAD', p, serve)
    }
  }

  listen(url: string, configKey = 'listeners'): Promise<BoundListener> {
    if (this.closed) return Promise.reject(new Error('the HTTP server is closed'))
    const l = parseHttpListener(url)
    this.installFallback()
    const bound = (port: number): BoundListener => {
      this.loopbackOnly = (this.listeners.length === 0 || this.loopbackOnly) && isLoopbackHost(l.host)
      const b: BoundListener = { configured: url, url: formatHttpListener(l, port), host: l.host === '' ? '0.0.0.0' : l.host, port }
      this.listeners.push(b)
      return b
    }
    if (l.scheme === 'https') return this.listenTls(url, l.host, l.port, configKey).then(bound)
    return new Promise((resolve, reject) => {
      const done = (socket: uws.us_listen_socket | false): void => {
        if (socket === false) {
          listenFailureCode(l.host, l.port).then((code) => reject(new ListenError(url, code, configKey)), reject)
          return
        }
        this.sockets.push(socket)
        resolve(bound(uws.us_socket_local_port(socket as unknown as uws.us_socket)))
      }
      // Exclusive: uWS's default sets SO_REUSEPORT, so a second process with the same config would
      // share the port silently and the kernel would split requests between the two.
      if (l.host === '') this.app.listen(l.port, LIBUS_LISTEN_EXCLUSIVE_PORT, done)
      else (this.app.listen.bind(this.app) as unknown as ListenWithOptions)(l.host, l.port, LIBUS_LISTEN_EXCLUSIVE_PORT, done)
    })
  }

  /** An https listener: the TLS front on host:port, the app on the private unix socket (opened once). */
  private async listenTls(url: string, host: string, port: number, configKey: string): Promise<number> {
    const tls = this.opts.tls
    if (tls === undefined) throw new Error(`${configKey}: ${url} is an https listener but no key store is set (ssl.keystore.location)`)
    if (this.front === null) {
      const { dir, path } = privateSocketPath()
      // uWS calls back before listen_unix returns: no await here, so two https listens at once share one socket.
      let socket: uws.us_listen_socket | false = false
      this.app.listen_unix((s) => {
        socket = s as uws.us_listen_socket | false
      }, path)
      if (socket === false) {
        removeSocketDir(dir)
        throw new Error(`${configKey}: cannot open the private socket behind ${url} (${path})`)
      }
      this.sockets.push(socket)
      const report = (err: Error): void => this.opts.onHandlerError?.(err, { method: 'TLS', path: url, query: new URLSearchParams(), params: {}, header: () => undefined, remoteAddress: '', principal: null })
      this.front = { tls: new TlsFront(tls, path, report), dir, path }
    }
    try {
      return await this.front.tls.listen(host, port)
    } catch (code) {
      if (typeof code === 'string') throw new ListenError(url, code, configKey)
      throw code
    }
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    if (this.front !== null) {
      this.front.tls.close()
      removeSocketDir(this.front.dir)
      this.front = null
    }
    for (const s of this.sockets.splice(0)) uws.us_listen_socket_close(s)
    // Every open connection: their onAborted and WebSocket close callbacks run now.
    this.app.close()
    this.listeners.length = 0
  }
}

export function createUwsServer(opts: HttpServerOptions): HttpServer {
  return new UwsServer(opts)
}
