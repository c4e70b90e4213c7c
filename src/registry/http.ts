// The Schema Registry's HTTP front: the transport-independent route table (routes.ts) mounted on Skein's
// HTTP adapter. Every method and path goes to the table, which answers 404/405 itself; this file only
// checks the request's content type (Confluent's 415 for a type it does not read), passes method, path,
// query and body text, and writes the status with `application/vnd.schemaregistry.v1+json`.
import { type BasicAuthenticator, createHttpServer, type BufferedRequest, type HttpResponse, type HttpServer, type HttpTls } from '../http/index.js'
import { ACCEPTED_CONTENT_TYPES, CONTENT_TYPE, serializeBody, type RegistryRequest, type RegistryResponse } from './routes.js'

/** What answers a request: a RegistryNode's handle, or handle(service, req) for a single instance. */
export type RegistryHandler = (req: RegistryRequest) => Promise<RegistryResponse>

export interface RegistryHttpOptions {
  /** listeners, e.g. ['http://127.0.0.1:8081']. */
  listeners: readonly string[]
  /** Largest request body (schemas are text): default 8 MiB. */
  maxBodyBytes?: number
  /** access.control.allow.origin (src/http's allowedOrigins). */
  allowedOrigins?: readonly string[]
  /** Mounts more routes on the server first (a broker's /metrics, /health, /ready); the registry takes every other path. */
  extend?: (server: HttpServer) => void
  /** authentication.method=BASIC: who may call at all (src/http answers 401/403 before the registry runs). */
  authenticator?: BasicAuthenticator | null
  /** authentication.write.roles: roles that may change the registry; ['*'] (default) any authenticated user. */
  writeRoles?: readonly string[]
  /** The key and trust stores of https listeners (client/http-tls.ts). */
  tls?: HttpTls
}

const JSON_HEADERS = { 'Content-Type': CONTENT_TYPE }

function errorBody(status: number, message: string): { headers: typeof JSON_HEADERS; body: string } {
  return { headers: JSON_HEADERS, body: JSON.stringify({ error_code: status, message: `HTTP ${status} ${message}` }) }
}

function acceptedContentType(header: string | undefined): boolean {
  if (header === undefined || header === '') return true
  const type = header.split(';')[0]!.trim().toLowerCase()
  return ACCEPTED_CONTENT_TYPES.includes(type)
}

/** Mounts the registry on a server (before its first listen): every method of every path. */
export function mountRegistry(server: HttpServer, handler: RegistryHandler, writeRoles: readonly string[] = ['*']): void {
  const anyoneWrites = writeRoles.includes('*')
  server.route('ANY', '/*', async (req: BufferedRequest, res: HttpResponse) => {
    if (req.body.length > 0 && !acceptedContentType(req.header('content-type'))) {
      res.send(415, JSON_HEADERS, JSON.stringify({ error_code: 415, message: 'HTTP 415 Unsupported Media Type' }))
      return
    }
    const principal = req.principal
    const answer = await handler({
      method: req.method,
      path: req.path,
      query: req.query,
      body: req.body.length > 0 ? req.body.toString('utf8') : undefined,
      mayWrite: principal === null || anyoneWrites || principal.roles.some((r) => writeRoles.includes(r)),
      authorization: principal === null ? undefined : req.header('authorization'),
    })
    res.send(answer.status, JSON_HEADERS, serializeBody(answer.body))
  })
}

/** A server of its own for the registry, listening on every listener. */
export async function startRegistryHttp(handler: RegistryHandler, opts: RegistryHttpOptions): Promise<HttpServer> {
  const server = await createHttpServer({ maxBodyBytes: opts.maxBodyBytes ?? 8 * 1024 * 1024, allowedOrigins: opts.allowedOrigins, errorBody, authenticator: opts.authenticator ?? undefined, tls: opts.tls })
  opts.extend?.(server)
  mountRegistry(server, handler, opts.writeRoles)
  try {
    for (const l of opts.listeners) await server.listen(l)
  } catch (err) {
    await server.close()
    throw err
  }
  return server
}
