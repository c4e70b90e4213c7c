// The HTTP server's interface, shared by every HTTP front of Skein (REST Proxy, Schema Registry, Connect,
// metrics, the console). Only types live here: the server itself is uws.ts, the one module that loads
// uWebSockets.js, and it is loaded only when a server is created (server.ts).
import type { BasicAuthenticator, HttpPrincipal } from './basic-auth.js'

/** A request as a route handler sees it. Everything is read from the socket before the handler runs. */
export interface HttpRequest {
  /** Upper case: GET, POST, ... */
  readonly method: string
  /** The path as sent, without the query string (not percent-decoded). */
  readonly path: string
  readonly query: URLSearchParams
  /** The route's `:name` parameters, percent-decoded. */
  readonly params: Readonly<Record<string, string>>
  /** A request header by lower-case name, or undefined. */
  header(name: string): string | undefined
  /** The peer's IP address as text. */
  readonly remoteAddress: string
  /**
   * The user BASIC authentication established (with their roles); null when the server has no
   * authenticator or the path is one of authentication.skip.paths.
   */
  readonly principal: HttpPrincipal | null
}

/** A request whose body was read whole (at most maxBodyBytes; an empty Buffer when there was none). */
export interface BufferedRequest extends HttpRequest {
  readonly body: Buffer
}

/**
 * A request whose body is handed over as it arrives. Reading it slower than the client sends pauses
 * the socket (uWS pause/resume): at most about bufferBytes are held. The iterator throws when the
 * client goes away mid-body.
 */
export interface StreamedRequest extends HttpRequest {
  readonly body: AsyncIterable<Buffer>
}

export type Headers = Readonly<Record<string, string>>

export interface HttpResponse {
  /** The client went away (or the server is closing): writes are dropped, onAborted callbacks ran. */
  readonly aborted: boolean
  /** Whether the response has been completed (send or end). */
  readonly finished: boolean
  /** Called once when the client goes away before the response is complete. */
  onAborted(cb: () => void): void
  /**
   * The whole response in one call. A body larger than what the socket takes at once goes out as the
   * socket drains (uWS tryEnd/onWritable): it is never copied into an unbounded queue.
   */
  send(status: number, headers: Headers | null, body?: string | Uint8Array, opts?: { closeConnection?: boolean }): void
  /** Starts a streamed (chunked) response. */
  writeHead(status: number, headers: Headers | null): void
  /**
   * Writes a chunk of a streamed response. false: the socket is backed up (the chunk is queued by uWS);
   * wait for writable() before writing more.
   */
  write(chunk: string | Uint8Array): boolean
  /** Resolves when the socket has drained what write() queued (at once when nothing is queued or aborted). */
  writable(): Promise<void>
  /** Ends a streamed response (or sends an empty one). */
  end(chunk?: string | Uint8Array, opts?: { closeConnection?: boolean }): void
  /** Closes the connection at once (no more of the response is sent). */
  close(): void
}

export type Handler<R extends HttpRequest> = (req: R, res: HttpResponse) => void | Promise<void>

export interface RouteOptions {
  /** Largest body read whole for this route (default: the server's maxBodyBytes); beyond it: 413. */
  maxBodyBytes?: number
}

export interface StreamRouteOptions {
  /** Bytes of unread body held before the socket is paused (default 1 MiB). */
  bufferBytes?: number
}

/** What a WebSocket route sees of one connection. It is valid from open to close. */
export interface WebSocketConnection<T> {
  readonly data: T
  /**
   * Sends a message: 'sent', 'buffered' (queued behind backpressure: wait for drain before sending more)
   * or 'dropped' (the queue was past maxBackpressure; nothing was sent). After close: 'dropped'.
   */
  send(message: string | Uint8Array, isBinary?: boolean): 'sent' | 'buffered' | 'dropped'
  /** Runs fn with the socket corked: the sends it makes leave in one write (many frames, one syscall). */
  cork(fn: () => void): void
  /** Bytes queued behind backpressure. */
  readonly bufferedAmount: number
  readonly closed: boolean
  /** Graceful close with a close frame. */
  end(code?: number, reason?: string): void
  /** Closes the socket at once. */
  close(): void
}

export interface WebSocketRoute<T> {
  /** Largest message accepted; a larger one closes the connection. Default 16 MiB. */
  maxPayloadLength?: number
  /** Bytes queued for a slow reader beyond which send() drops ('dropped'). Default 1 MiB. */
  maxBackpressure?: number
  /** Seconds without traffic before the connection is closed (0: never). Default 120. */
  idleTimeoutSeconds?: number
  /** Decides whether to upgrade and with which data; throw an HttpError to refuse with its status. */
  upgrade?: (req: HttpRequest) => T | Promise<T>
  open?: (ws: WebSocketConnection<T>) => void
  /** The message is valid only during the call: copy what is kept. */
  message?: (ws: WebSocketConnection<T>, message: Buffer, isBinary: boolean) => void
  /** The backpressure queue drained some: bufferedAmount tells how much is left. */
  drain?: (ws: WebSocketConnection<T>) => void
  close?: (ws: WebSocketConnection<T>, code: number, reason: string) => void
}

/** A failure with an HTTP status; thrown by handlers (and upgrade) to answer with it. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Headers | null = null,
    readonly body?: string | Uint8Array,
  ) {
    super(message)
    this.name = 'HttpError'
  }
}

/**
 * A listener that could not be opened: the system's reason (EADDRINUSE when another process holds the
 * port, as the Kafka listener reports it) and the config key that named the URL, so start-up says which
 * setting to change.
 */
export class ListenError extends Error {
  constructor(
    readonly url: string,
    /** EADDRINUSE, EADDRNOTAVAIL, EACCES…, or 'EUNKNOWN' when the system did not say. */
    readonly code: string,
    readonly configKey: string,
  ) {
    super(`${configKey}: cannot listen on ${url}: ${code}${LISTEN_REASONS[code] === undefined ? '' : ` (${LISTEN_REASONS[code]})`}`)
    this.name = 'ListenError'
  }

  /** The same failure named by another key (an embedded product's prefixed setting). */
  renamed(configKey: string): ListenError {
    return new ListenError(this.url, this.code, configKey)
  }
}

const LISTEN_REASONS: Record<string, string> = {
  EADDRINUSE: 'address already in use',
  EADDRNOTAVAIL: 'address not available on this host',
  EACCES: 'permission denied',
}

/** How the server answers what no route answered, a thrown error, and a body over the limit. */
export interface ErrorResponder {
  (status: number, message: string, req: HttpRequest | null): { headers: Headers; body: string | Uint8Array }
}

export interface HttpServerOptions {
  /** Largest request body read whole, in bytes (routes may lower or raise it). Default 1 MiB. */
  maxBodyBytes?: number
  /** Longest request target (path and query) served, in bytes; longer ones get 414. Default 8 KiB. */
  maxUriBytes?: number
  /**
   * Origins besides the listener's own whose pages may change state (POST, PUT, PATCH, DELETE) or open
   * WebSockets: Confluent's access.control.allow.origin, a list of origins (`http://host:port`) or `*`
   * for any. Default: none (same origin only). Requests without an Origin header (not from a browser)
   * are not concerned.
   */
  allowedOrigins?: readonly string[]
  /** Builds the body of error answers (404, 405, 413, 500): JSON in the products' own format. */
  errorBody?: ErrorResponder
  /**
   * authentication.method=BASIC: every request and WebSocket upgrade needs credentials this accepts
   * (401 with `WWW-Authenticate: Basic realm=...` otherwise); handlers see the user as req.principal.
   */
  authenticator?: BasicAuthenticator
  /**
   * The key and trust stores of https:// listeners, read from the service's ssl.* settings
   * (src/client/http-tls.ts). Without it an https listener is refused.
   */
  tls?: HttpTls
  /** Called with errors thrown by handlers (after the 500 is sent), for logging. */
  onHandlerError?: (err: unknown, req: HttpRequest) => void
}

/** TLS of https listeners: node:tls server options (key and certificate, ca for client certificates). */
export interface HttpTls {
  options: import('node:tls').TlsOptions
  /**
   * ssl.client.authentication: REQUIRED refuses the handshake of a client without a certificate the
   * trust store (options.ca) vouches for; REQUESTED lets a client without one in, but refuses an
   * untrusted one; NONE asks for none.
   */
  clientAuth: 'none' | 'requested' | 'required'
}

export interface BoundListener {
  /** The listener as configured, e.g. http://127.0.0.1:0 */
  configured: string
  /** With the port actually bound, e.g. http://127.0.0.1:41213 */
  url: string
  host: string
  port: number
}

export interface HttpServer {
  /** A route whose body is read whole first. Pattern: `/topics/:topic/partitions/:partition`, `/*`. */
  route(method: string, pattern: string, handler: Handler<BufferedRequest>, opts?: RouteOptions): void
  /** A route whose body is streamed to the handler (paused when the handler reads slower). */
  streamRoute(method: string, pattern: string, handler: Handler<StreamedRequest>, opts?: StreamRouteOptions): void
  /** A WebSocket route. */
  ws<T>(pattern: string, route: WebSocketRoute<T>): void
  /** Serves files under a path prefix (GET and HEAD), compressed when the client accepts gzip or br. */
  static(prefix: string, assets: import('./static.js').StaticAssets): void
  /**
   * Opens a listener: http://host:port or https://host:port (port 0: any free port), the port held exclusively (a second
   * process asking for it fails, as with the Kafka listener). Fails with a ListenError naming configKey
   * (default `listeners`, Confluent's name).
   */
  listen(url: string, configKey?: string): Promise<BoundListener>
  readonly listeners: readonly BoundListener[]
  /** Closes the listeners and every open connection. */
  close(): Promise<void>
}
