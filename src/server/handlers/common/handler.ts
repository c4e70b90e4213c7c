// What one handler file declares: the API it serves, the version range, the codec and the code that
// answers. The table of handlers (../index.ts) is built from these; ApiVersions is derived from it.
import type { Reader } from '../../../protocol/primitives/reader.js'
import type { Writer } from '../../../protocol/primitives/writer.js'
import { MainThreadSlices, type Abandoned } from '../../../domain/main-thread-slices.js'
import type { RequestContext } from './context.js'

export interface HandlerDefinition<Req, Res> {
  api: { apiKey: number; name: string }
  /** Lowest and highest version served; must lie inside the spec's range. */
  minVersion: number
  maxVersion: number
  /**
   * The handler asks the authorizer itself (ctx.acl) for each resource it touches. With an authorizer,
   * a handler without this flag is served only to principals allowed ClusterAction on the cluster
   * (brokers, super users): requests nobody has written a check for fail closed.
   */
  authorizes?: true
  /**
   * false: served when asked, but left out of ApiVersions, so clients do not use it yet. For an API
   * that is useless alone (ShareGroupHeartbeat before ShareFetch and ShareAcknowledge: librdkafka would
   * join a share group it cannot consume from), until its companions are served too.
   */
  advertised?: false
  decodeRequest(r: Reader, version: number): Req
  encodeResponse(w: Writer, res: Res, version: number): void
  /**
   * Answers a request. Kafka errors belong in the response's error codes; a throw means the request
   * could not be served at all, and the connection is closed (Kafka's behaviour for such requests).
   * null means no response at all (acks=0 produce).
   */
  handle(req: Req, ctx: RequestContext): Promise<Res | null> | Res | null
}

// Handlers are stored type-erased; defineHandler checks each one's types where it is written.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyHandler = HandlerDefinition<any, any>

export function defineHandler<Req, Res>(def: HandlerDefinition<Req, Res>): AnyHandler {
  return def
}

/** A request that cannot be served at all (unknown API, unsupported version): the connection is closed. */
export class UnservableRequestError extends Error {
  override readonly name = 'UnservableRequestError'
}

/** True once the request's connection has closed: nobody waits for its answer any more. */
export function requestAbandoned(ctx: RequestContext): Abandoned {
  return () => ctx.connection.isClosed
}

/**
 * Slices of ~10 ms of main-thread time for a request's loops over its list (domain/main-thread-slices.ts),
 * stopped once the request's connection has closed (the handler's throw is dropped with the connection).
 */
export function requestSlices(ctx: RequestContext): MainThreadSlices {
  return new MainThreadSlices(requestAbandoned(ctx))
}
