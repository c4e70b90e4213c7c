// The API table (dispatch table): every API the broker serves is one handler file under ./handlers, declaring its
// API key and the version range it serves next to its code. ApiVersions is derived from this table, so
// what the broker advertises is exactly what it has handlers for.
import type { AnyHandler } from './handlers/common/handler.js'
import type { ApiVersionRange } from './handlers/common/ports.js'

export class ApiTable {
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

  /** The ApiVersions table: one entry per handler, by API key, but those held back (advertised: false). */
  apiVersions(): ApiVersionRange[] {
    const out: ApiVersionRange[] = []
    for (const h of this.byKey) {
      if (h !== undefined && h.advertised !== false) out.push({ apiKey: h.api.apiKey, minVersion: h.minVersion, maxVersion: h.maxVersion })
    }
    return out
  }
}
