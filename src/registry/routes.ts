// Confluent Schema Registry's REST API as a route table over SchemaRegistryService, independent of any
// HTTP server: handle({method, path, query, body}) gives {status, body}. The HTTP layer only has to pass
// the request's method, decoded path, query parameters and body text, and write back the status, the
// JSON body and `Content-Type: application/vnd.schemaregistry.v1+json` (see CONTENT_TYPE).
// Errors come back as Confluent's {"error_code": n, "message": "..."}; an unknown path is HTTP 404 with
// error_code 404, a known path with another method 405.
import { jsonNestedDeeperThan, tooDeepMessage } from '../http/index.js'
import { Errors, RegistryError } from './errors.js'
import type { SchemaRegistryService } from './service.js'

export const CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json'
/** Request content types Confluent accepts. */
export const ACCEPTED_CONTENT_TYPES = ['application/vnd.schemaregistry.v1+json', 'application/vnd.schemaregistry+json', 'application/json', 'application/octet-stream']

export interface RegistryRequest {
  method: string
  /** The path without the query string, e.g. "/subjects/my-topic-value/versions". */
  path: string
  query?: Record<string, string | undefined> | URLSearchParams
  /** The body text, if any. */
  body?: string
  /**
   * false: the caller may only read (an authenticated user without a role of authentication.write.roles):
   * a route that changes the registry answers 403 with error_code 40301. Undefined: anyone may write.
   */
  mayWrite?: boolean
  /** The caller's Authorization header, passed on when a secondary forwards the write to the primary. */
  authorization?: string
}

/** Confluent's error_code for an authenticated caller denied an operation (its security plugin's 40301). */
export const OPERATION_DENIED = 40301

export interface RegistryResponse {
  status: number
  body: unknown
}

type Query = { get(name: string): string | undefined; bool(name: string): boolean; int(name: string): number | undefined }
type Handler = (svc: SchemaRegistryService, params: string[], q: Query, body: () => unknown) => unknown

interface Route {
  method: string
  pattern: RegExp
  handler: Handler
  /** Changes the registry: on a secondary it is forwarded to the primary. */
  write: boolean
}

const SEG = '([^/]+)'
const routes: Route[] = []
function route(method: string, path: string, handler: Handler): void {
  // Reads are GETs and the two POSTs that only look (lookup, compatibility test).
  const write = method !== 'GET' && !(method === 'POST' && (path === '/subjects/{subject}' || path.startsWith('/compatibility/')))
  routes.push({ method, pattern: new RegExp('^' + path.replace(/\{[a-z]+\}/gi, SEG) + '/?$'), handler, write })
}

const id = (s: string): number => {
  const n = Number(s)
  if (!/^-?[0-9]+$/.test(s) || !Number.isSafeInteger(n)) throw Errors.schemaNotFound()
  return n
}

route('GET', '/', () => ({}))
route('GET', '/schemas/types', (svc) => svc.schemaTypes())
route('GET', '/schemas', (svc, _p, q) => page(svc.schemas({ subjectPrefix: q.get('subjectPrefix'), deleted: q.bool('deleted'), latestOnly: q.bool('latestOnly') }), q))
route('GET', '/schemas/ids/{id}', (svc, [i], q) => {
  const s = svc.schemaById(id(i!), q.get('subject'))
  return s
})
route('GET', '/schemas/ids/{id}/schema', (svc, [i], q) => rawSchema(svc.schemaById(id(i!), q.get('subject')).schema))
route('GET', '/schemas/ids/{id}/subjects', (svc, [i], q) => svc.subjectsById(id(i!), { subject: q.get('subject'), deleted: q.bool('deleted') }))
route('GET', '/schemas/ids/{id}/versions', (svc, [i], q) => svc.versionsById(id(i!), { subject: q.get('subject'), deleted: q.bool('deleted') }))

route('GET', '/subjects', (svc, _p, q) => page(svc.subjects({ deleted: q.bool('deleted'), deletedOnly: q.bool('deletedOnly'), subjectPrefix: q.get('subjectPrefix') }), q))
route('POST', '/subjects/{subject}', (svc, [s], q, body) => svc.lookup(s!, body() as object, { normalize: q.bool('normalize'), deleted: q.bool('deleted') }))
route('DELETE', '/subjects/{subject}', (svc, [s], q) => svc.deleteSubject(s!, { permanent: q.bool('permanent') }))
route('GET', '/subjects/{subject}/versions', (svc, [s], q) => page(svc.versions(s!, { deleted: q.bool('deleted'), deletedOnly: q.bool('deletedOnly') }), q))
route('POST', '/subjects/{subject}/versions', async (svc, [s], q, body) => ({ id: (await svc.register(s!, body() as object, { normalize: q.bool('normalize') })).id }))
route('GET', '/subjects/{subject}/versions/{version}', (svc, [s, v], q) => svc.version(s!, v!, { deleted: q.bool('deleted') }))
route('GET', '/subjects/{subject}/versions/{version}/schema', (svc, [s, v], q) => rawSchema(svc.version(s!, v!, { deleted: q.bool('deleted') }).schema))
route('GET', '/subjects/{subject}/versions/{version}/referencedby', (svc, [s, v], q) => page(svc.referencedBy(s!, v!), q))
route('DELETE', '/subjects/{subject}/versions/{version}', (svc, [s, v], q) => svc.deleteVersion(s!, v!, { permanent: q.bool('permanent') }))

route('GET', '/config', (svc) => svc.config())
route('PUT', '/config', (svc, _p, _q, body) => svc.setConfig(undefined, body()))
route('DELETE', '/config', (svc) => svc.deleteConfig())
route('GET', '/config/{subject}', (svc, [s], q) => svc.config(s!, { defaultToGlobal: q.bool('defaultToGlobal') }))
route('PUT', '/config/{subject}', (svc, [s], _q, body) => svc.setConfig(s!, body()))
route('DELETE', '/config/{subject}', (svc, [s]) => svc.deleteConfig(s!))

route('GET', '/mode', (svc) => svc.mode())
route('PUT', '/mode', (svc, _p, q, body) => svc.setMode(undefined, body(), { force: q.bool('force') }))
route('GET', '/mode/{subject}', (svc, [s], q) => svc.mode(s!, { defaultToGlobal: q.bool('defaultToGlobal') }))
route('PUT', '/mode/{subject}', (svc, [s], q, body) => svc.setMode(s!, body(), { force: q.bool('force') }))
route('DELETE', '/mode/{subject}', (svc, [s]) => svc.deleteMode(s!))

route('POST', '/compatibility/subjects/{subject}/versions', (svc, [s], q, body) => svc.testCompatibility(s!, undefined, body() as object, { verbose: q.bool('verbose') }))
route('POST', '/compatibility/subjects/{subject}/versions/{version}', (svc, [s, v], q, body) => svc.testCompatibility(s!, v!, body() as object, { verbose: q.bool('verbose') }))

route('GET', '/contexts', (svc) => svc.contexts())
route('DELETE', '/contexts/{context}', async (svc, [c]) => {
  await svc.deleteContext(c!)
  return null
})

/** Confluent's `offset` and `limit` query parameters on lists (limit -1 or absent: everything). */
function page<T>(list: T[], q: Query): T[] {
  const offset = Math.max(0, q.int('offset') ?? 0)
  const limit = q.int('limit') ?? -1
  return list.slice(offset, limit >= 0 ? offset + limit : undefined)
}

/** Marks a body that is a raw schema string (the /schema endpoints), which is sent as-is, not quoted. */
export class RawSchema {
  constructor(readonly text: string) {}
}
function rawSchema(text: string): RawSchema {
  return new RawSchema(text)
}

function queryOf(q: RegistryRequest['query']): Query {
  const get = (name: string): string | undefined => (q instanceof URLSearchParams ? (q.get(name) ?? undefined) : q?.[name])
  return {
    get,
    bool: (name) => get(name)?.toLowerCase() === 'true',
    int: (name) => {
      const v = get(name)
      return v !== undefined && /^-?[0-9]+$/.test(v) ? Number(v) : undefined
    },
  }
}

export interface HandleOptions {
  /**
   * Where writes go when this instance is not the primary: returns the primary's answer, or undefined
   * to handle the write here (this instance is the primary).
   */
  forward?: (req: RegistryRequest) => Promise<RegistryResponse | undefined>
}

/** Handles one request; never throws (an unexpected failure is a 500 with error_code 50001). */
export async function handle(svc: SchemaRegistryService, req: RegistryRequest, opts: HandleOptions = {}): Promise<RegistryResponse> {
  const path = req.path.length > 1 && req.path.endsWith('/') ? req.path.slice(0, -1) : req.path
  let matchedPath = false
  for (const r of routes) {
    const m = r.pattern.exec(path)
    if (!m) continue
    matchedPath = true
    if (r.method !== req.method.toUpperCase()) continue
    if (r.write && req.mayWrite === false) {
      return { status: 403, body: new RegistryError(403, OPERATION_DENIED, 'User is denied operation Write on the Schema Registry: none of its roles is in authentication.write.roles').toBody() }
    }
    try {
      if (r.write && opts.forward) {
        const forwarded = await opts.forward(req)
        if (forwarded) return forwarded
      }
      const params = m.slice(1).map((p) => decodeURIComponent(p))
      const body = () => {
        if (req.body === undefined || req.body.trim() === '') throw Errors.unprocessable('Request body is empty')
        if (jsonNestedDeeperThan(req.body)) throw new RegistryError(400, 400, tooDeepMessage())
        try {
          return JSON.parse(req.body)
        } catch (e) {
          throw new RegistryError(400, 400, `Unrecognized JSON in request body: ${(e as Error).message}`)
        }
      }
      const result = await r.handler(svc, params, queryOf(req.query), body)
      return { status: 200, body: result }
    } catch (e) {
      if (e instanceof RegistryError) return { status: e.status, body: e.toBody() }
      if (e instanceof URIError) return { status: 404, body: Errors.notFound().toBody() }
      return { status: 500, body: Errors.store(`Internal error: ${(e as Error).message}`).toBody() }
    }
  }
  const e = matchedPath ? Errors.methodNotAllowed() : Errors.notFound()
  return { status: e.status, body: e.toBody() }
}

/** The response body as the bytes to send: JSON, or the raw schema text for the /schema endpoints. */
export function serializeBody(body: unknown): string {
  return body instanceof RawSchema ? body.text : JSON.stringify(body)
}
