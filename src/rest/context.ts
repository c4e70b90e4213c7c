// What every REST route shares: the settings, the Kafka clients (one admin client and one producer for
// all requests, as kafka-rest shares them), the schema support, and the JSON reply plumbing that turns
// any failure into Confluent's error body.
import type { Admin } from '../client/admin.js'
import type { Producer } from '../client/producer.js'
import type { RestSettings } from '../config/client-rest.js'
import type { BufferedRequest, HttpServer } from '../http/index.js'
import type { Logger } from '../observability/logger.js'
import { Errors, RestError, fromError } from './errors.js'
import type { SchemaSupport } from './formats.js'

export interface RestContext {
  readonly settings: RestSettings
  readonly admin: Admin
  readonly producer: Producer
  readonly schemas: SchemaSupport
  readonly log: Logger
  /** The cluster id (asked once, then cached). */
  clusterId(): Promise<string>
  /** Base URL for links when a request has no usable Host header. */
  readonly fallbackBaseUrl: string
}

export interface Reply {
  status: number
  /** JSON body; none for 204. */
  body?: unknown
  contentType?: string
}

/** A JSON route: the handler's reply, or its failure as Confluent's error body in contentType. */
export function jsonRoute(server: HttpServer, ctx: RestContext, method: string, pattern: string, contentType: string, fn: (req: BufferedRequest) => Promise<Reply>): void {
  server.route(method, pattern, async (req, res) => {
    let reply: Reply
    try {
      reply = await fn(req)
    } catch (e) {
      const err = fromError(e)
      if (!(e instanceof RestError) && err.status >= 500) ctx.log.warn({ err: (e as Error).message, method: req.method, path: req.path }, 'REST request failed')
      reply = { status: err.status, body: err.toJSON() }
    }
    if (reply.body === undefined) res.send(reply.status, null)
    else res.send(reply.status, { 'Content-Type': reply.contentType ?? contentType }, JSON.stringify(reply.body))
  })
}

/** The adapter's own answers (404, 405, 413, 500) in Confluent's shape. */
export function restErrorBody(status: number, message: string): { headers: Record<string, string>; body: string } {
  const text = status === 413 ? Errors.tooLarge().message : status === 404 || status === 405 || status === 500 ? `HTTP ${status} ${message}` : message
  return { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ error_code: status, message: text }) }
}
