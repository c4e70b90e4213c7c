// Turns one request frame into one response frame: header, version check, decode, handler, encode.
//
// Kafka's rules for requests it cannot serve:
// - ApiVersions at a version the broker does not serve is answered in the v0 format with
//   UNSUPPORTED_VERSION and the ApiVersions range it does serve (KIP-511), so the client can retry.
// - Any other unknown API key, unsupported version or undecodable body closes the connection (Kafka's
//   SocketServer does the same: the request cannot be understood, so no response can be framed).
// - So does a client request whose lists declare more than request.max.list.elements elements in all
//   (every depth counted): refused by the decoder before it builds them, so no request costs more
//   than that many elements of memory and main-thread time (docs/broker.md, "Requests are bounded").
//   The requests brokers send each other (INTER_BROKER_API_KEYS) name every partition of the cluster
//   and are exempt. The elements decoded are held by the connection until the answer is written
//   (Connection.holdListElements): one connection cannot have many heavy requests in flight at once.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../domain/acl.js'
import { ErrorCode } from '../domain/errors.js'
import { beginFrame, endFrame } from '../protocol/frame.js'
import { readRequestHeader, writeResponseHeader, peekRequestHeader } from '../protocol/header.js'
import { encodeApiVersionsResponse, createApiVersionsResponse } from '../protocol/messages/18-api-versions.gen.js'
import { Reader } from '../protocol/primitives/reader.js'
import { Writer } from '../protocol/primitives/writer.js'
import type { SaslServerAuthenticator } from '../auth/sasl/authenticator.js'
import type { Connection, FrameHandler, Response } from './connection.js'
import type { BrokerServices, RequestContext } from './handlers/common/context.js'
import { UnservableRequestError } from './handlers/common/handler.js'
import type { ApiTable } from './api-table.js'
import { clientThrottles, type RequestThrottler } from './request-quotas.js'

/** What the dispatcher reports per request (BrokerMetrics' RequestMetrics). */
export interface RequestObserver {
  requestCompleted(apiKey: number, apiName: string, apiVersion: number, totalTimeMs: number, throttleTimeMs: number): void
}

const API_VERSIONS_KEY = 18
const SASL_HANDSHAKE_KEY = 17
const SASL_AUTHENTICATE_KEY = 36
const PRODUCE_KEY = 0
const FETCH_KEY = 1
/** LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AlterPartition. */
const INTER_BROKER_API_KEYS: ReadonlySet<number> = new Set([4, 5, 6, 7, 27, 56])

/**
 * services: the broker's, built once; each request's context carries them along with its own facts.
 * throttler: client quotas (request-quotas.ts), measured per request while any quota is set.
 */
export function createDispatcher(services: BrokerServices, apiTable: ApiTable, observer?: RequestObserver, throttler?: RequestThrottler): FrameHandler {
  return async (frame: Buffer, conn: Connection): Promise<Response | null> => {
    const receivedAt = Date.now()
    const startedAt = performance.now()
    const sasl = conn.sasl
    if (sasl !== undefined && sasl.expectsRawToken) return rawSaslToken(sasl, frame, conn)
    const peek = peekRequestHeader(frame)
    if (sasl !== undefined && peek.apiKey !== SASL_HANDSHAKE_KEY && peek.apiKey !== SASL_AUTHENTICATE_KEY) {
      // Before authentication only ApiVersions and the SASL requests are served (Kafka's
      // SaslServerAuthenticator); after it, a session past connections.max.reauth.ms ends here.
      if (!sasl.authenticated && peek.apiKey !== API_VERSIONS_KEY) throw new UnservableRequestError(`API key ${peek.apiKey} before SASL authentication completed`)
      if (sasl.authenticated && sasl.expired()) throw new UnservableRequestError('SASL session expired (connections.max.reauth.ms) without re-authentication')
    }
    const handler = apiTable.get(peek.apiKey)
    if (handler === undefined) {
      throw new UnservableRequestError(`unknown API key ${peek.apiKey}`)
    }
    if (peek.apiVersion < handler.minVersion || peek.apiVersion > handler.maxVersion) {
      if (peek.apiKey === API_VERSIONS_KEY) return unsupportedApiVersions(peek.correlationId, handler.minVersion, handler.maxVersion)
      throw new UnservableRequestError(`${handler.api.name} v${peek.apiVersion} is not supported (serving v${handler.minVersion}-v${handler.maxVersion})`)
    }
    if (handler.authorizes !== true && services.acl.enabled && !services.acl.authorize(conn, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)) {
      throw new UnservableRequestError(`${handler.api.name} needs ClusterAction on the cluster (${conn.principal})`)
    }
    const loopTimeStart = performance.now()
    const r = new Reader(frame)
    const listLimit = services.configs.broker.getInt('request.max.list.elements')
    // Inter-broker requests are not refused for their size, but their elements are counted all the same.
    const budget = INTER_BROKER_API_KEYS.has(peek.apiKey) ? Number.MAX_SAFE_INTEGER : listLimit
    r.elementBudget = budget
    const header = readRequestHeader(r)
    const request = handler.decodeRequest(r, peek.apiVersion)
    // The connection holds them until the answer is written, pausing a client that pipelines heavy requests.
    conn.holdListElements(budget - r.elementBudget, listLimit)
    // Bytes after a complete body are ignored, as Kafka does.
    const done: (() => void)[] = []
    const runDone = (): void => {
      for (const fn of done.splice(0)) {
        try {
          fn()
        } catch (err) {
          services.log.error({ err: (err as Error).message }, 'response cleanup failed')
        }
      }
    }
    const ctx: RequestContext = {
      header,
      apiKey: peek.apiKey,
      apiVersion: peek.apiVersion,
      clientId: header.clientId,
      connection: conn,
      receivedAt,
      onResponseDone: (fn) => done.push(fn),
      partitions: services.partitions,
      metadata: services.metadata,
      topics: services.topics,
      configs: services.configs,
      groups: services.groups,
      groupConfigs: services.groupConfigs,
      transactions: services.transactions,
      producerIds: services.producerIds,
      fetchSessions: services.fetchSessions,
      sharePartitions: services.sharePartitions,
      shareStates: services.shareStates,
      shareGroupOffsets: services.shareGroupOffsets,
      control: services.control,
      scram: services.scram,
      quotas: services.quotas,
      acl: services.acl,
      log: services.log,
      apiVersions: services.apiVersions,
    }
    let response: unknown
    try {
      const pending = handler.handle(request, ctx)
      // Event-loop time of the request (request_percentage): decoding and the handler's synchronous part.
      const loopTimeMs = performance.now() - loopTimeStart
      response = await pending
      const quotas = throttler !== undefined && throttler.active && !throttler.exempt(peek.apiKey, isFollowerFetch(peek.apiKey, peek.apiVersion, request))
      const principal = conn.principal
      const clientId = header.clientId ?? ''
      let throttleMs = 0
      if (quotas && peek.apiKey === PRODUCE_KEY) throttleMs = throttler.produceThrottleMs(principal, clientId, frame.length, Date.now())
      if (quotas && response === null) {
        // acks=0: no response to carry the throttle time; the channel is muted all the same.
        runDone()
        observer?.requestCompleted(peek.apiKey, handler.api.name, peek.apiVersion, performance.now() - startedAt, throttleMs)
        const requestThrottle = throttler.requestThrottleMs(principal, clientId, loopTimeMs, Date.now())
        throttleMs = Math.max(throttleMs, requestThrottle)
        return throttleMs > 0 ? { chunks: [], throttleMs, throttleAfterSend: true } : null
      }
      if (quotas && response !== null) {
        // Before encoding: the request time, the produce throttle and the handler's own (controller mutations).
        throttleMs = Math.max(throttleMs, throttler.requestThrottleMs(principal, clientId, loopTimeMs, Date.now()))
        const field = response as { throttleTimeMs?: number }
        if (typeof field.throttleTimeMs === 'number') field.throttleTimeMs = throttleMs = Math.max(throttleMs, field.throttleTimeMs)
      }
      if (observer !== undefined) {
        // TotalTimeMs runs until the response is written (onDone), as in Kafka; acks=0 ends here.
        // Read when reported: the quotas may set the throttle time while encoding.
        const answered = response as { throttleTimeMs?: number } | null
        const apiName = handler.api.name
        const report = (): void => observer.requestCompleted(peek.apiKey, apiName, peek.apiVersion, performance.now() - startedAt, answered?.throttleTimeMs ?? 0)
        if (response === null) report()
        else done.push(report)
      }
      if (response === null) {
        runDone()
        return null
      }
      const w = new Writer(1024)
      const mark = beginFrame(w)
      writeResponseHeader(w, peek.apiKey, peek.apiVersion, peek.correlationId)
      const bodyAt = w.length
      handler.encodeResponse(w, response, peek.apiVersion)
      endFrame(w, mark)
      if (quotas && peek.apiKey === FETCH_KEY) {
        // Fetch is measured by the bytes it returns, known once encoded; throttle_time_ms is the first
        // field of its body (v1+), set in the encoded frame.
        const fetchThrottle = throttler.fetchThrottleMs(principal, clientId, w.length, Date.now())
        const field = response as { throttleTimeMs: number }
        if (fetchThrottle > throttleMs) {
          throttleMs = fetchThrottle
          field.throttleTimeMs = throttleMs
          if (peek.apiVersion >= 1) w.patchInt32(bodyAt, throttleMs)
        }
      }
      const throttle = throttleMs > 0 ? { throttleMs, throttleAfterSend: clientThrottles(peek.apiKey, peek.apiVersion) } : {}
      if (sasl !== undefined && (peek.apiKey === SASL_HANDSHAKE_KEY || peek.apiKey === SASL_AUTHENTICATE_KEY)) {
        // A failed exchange is answered, then the connection closes (the client reads the error first).
        if (sasl.failed) return { chunks: w.chunks(), onDone: () => { runDone(); conn.close('SASL authentication failed') } }
        if (sasl.principal !== undefined && conn.principal !== sasl.principal) conn.authenticated(sasl.principal)
      }
      return { chunks: w.chunks(), onDone: runDone, ...throttle }
    } catch (err) {
      runDone()
      throw err
    }
  }
}

/** A Fetch from a follower replica: replication is never throttled by client quotas. */
function isFollowerFetch(apiKey: number, version: number, request: unknown): boolean {
  if (apiKey !== FETCH_KEY) return false
  const req = request as { replicaId?: number; replicaState?: { replicaId: number } }
  return (version >= 15 ? (req.replicaState?.replicaId ?? -1) : (req.replicaId ?? -1)) >= 0
}

/** KIP-511: the v0 body, header v0, whatever version the client asked for. */
function unsupportedApiVersions(correlationId: number, minVersion: number, maxVersion: number): Response {
  const w = new Writer(64)
  const mark = beginFrame(w)
  writeResponseHeader(w, API_VERSIONS_KEY, 0, correlationId)
  encodeApiVersionsResponse(
    w,
    createApiVersionsResponse({
      errorCode: ErrorCode.UNSUPPORTED_VERSION,
      apiKeys: [{ apiKey: API_VERSIONS_KEY, minVersion, maxVersion }],
    }),
    0,
  )
  endFrame(w, mark)
  return { chunks: w.chunks() }
}

/** After SaslHandshake v0: the frame is a bare SASL token, answered by a bare size-prefixed token. */
async function rawSaslToken(sasl: SaslServerAuthenticator, frame: Buffer, conn: Connection): Promise<Response> {
  const challenge = await sasl.rawToken(frame)
  if (sasl.principal !== undefined && conn.principal !== sasl.principal) conn.authenticated(sasl.principal)
  const head = Buffer.allocUnsafe(4)
  head.writeInt32BE(challenge.length, 0)
  return { chunks: challenge.length === 0 ? [head] : [head, challenge] }
}
