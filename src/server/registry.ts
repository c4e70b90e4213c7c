// The dispatch table: every API the broker serves is one handler file under ./handlers, declaring its
// API key and the version range it serves next to its code. ApiVersions is derived from this table, so
// what the broker advertises is exactly what it has handlers for.
import type { Reader } from '../protocol/primitives/reader.js'
import type { Writer } from '../protocol/primitives/writer.js'
import type { RequestContext } from './context.js'

export interface HandlerDefinition<Req, Res> {
  api: { apiKey: number; name: string }
  /** Lowest and highest version served; must lie inside the spec's range. */
  minVersion: number
  maxVersion: number
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

export class HandlerRegistry {
  private readonly byKey: (AnyHandler | undefined)[] = []

  constructor(handlers: readonly AnyHandler[]) {
    for (const h of handlers) {
      if (this.byKey[h.api.apiKey] !== undefined) throw new Error(`two handlers for API key ${h.api.apiKey}`)
      if (h.minVersion > h.maxVersion) throw new Error(`${h.api.name}: empty version range`)
      this.byKey[h.api.apiKey] = h
    }
  }

  get(apiKey: number): AnyHandler | undefined {
    return apiKey >= 0 ? this.byKey[apiKey] : undefined
  }

  /** The ApiVersions table: one entry per handler, by API key. */
  apiVersions(): { apiKey: number; minVersion: number; maxVersion: number }[] {
    const out: { apiKey: number; minVersion: number; maxVersion: number }[] = []
    for (const h of this.byKey) {
      if (h !== undefined) out.push({ apiKey: h.api.apiKey, minVersion: h.minVersion, maxVersion: h.maxVersion })
    }
    return out
  }
}
