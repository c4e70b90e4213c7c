// Creating an HTTP server. uWebSockets.js (a native module) is loaded here, on the first call, and
// never by merely importing src/http: a broker without HTTP listeners does not load it at all.
import type { HttpServer, HttpServerOptions } from './types.js'

let loading: Promise<typeof import('./uws.js')> | null = null

/** A new HTTP server over uWebSockets.js (loaded on first use). */
export async function createHttpServer(opts: HttpServerOptions = {}): Promise<HttpServer> {
  loading ??= import('./uws.js')
  const { createUwsServer } = await loading
  return createUwsServer(opts)
}
