// The API table: ApiVersions is derived from the handlers, and a handler marked `advertised: false` is
// served (dispatch finds it) but left out of ApiVersions, as the share-group APIs are until all of
// ShareGroupHeartbeat, ShareFetch and ShareAcknowledge are served.
import { describe, expect, it } from 'vitest'
import { ApiTable } from '../../src/server/api-table.js'
import { defineHandler, type AnyHandler } from '../../src/server/handlers/common/handler.js'
import { HANDLERS } from '../../src/server/handlers/index.js'

function fake(apiKey: number, over: Partial<AnyHandler> = {}): AnyHandler {
  return defineHandler<unknown, unknown>({
    api: { apiKey, name: `Api${apiKey}` },
    minVersion: 0,
    maxVersion: 2,
    decodeRequest: () => ({}),
    encodeResponse: () => {},
    handle: () => ({}),
    ...over,
  })
}

describe('ApiTable', () => {
  it('advertises every handler with its range', () => {
    const table = new ApiTable([fake(3), fake(1, { minVersion: 1, maxVersion: 4 })])
    expect(table.apiVersions()).toEqual([
      { apiKey: 1, minVersion: 1, maxVersion: 4 },
      { apiKey: 3, minVersion: 0, maxVersion: 2 },
    ])
  })

  it('serves a handler held back from ApiVersions, without advertising it', () => {
    const held = fake(76, { advertised: false })
    const table = new ApiTable([fake(1), held])
    expect(table.get(76)).toBe(held)
    expect(table.apiVersions().map((v) => v.apiKey)).toEqual([1])
  })

  it('refuses two handlers for one key and empty ranges', () => {
    expect(() => new ApiTable([fake(1), fake(1)])).toThrow(/two handlers/)
    expect(() => new ApiTable([fake(1, { minVersion: 3, maxVersion: 2 })])).toThrow(/empty version range/)
  })

  it("the broker's table advertises exactly the handlers not held back", () => {
    const table = new ApiTable(HANDLERS)
    const advertised = new Set(table.apiVersions().map((v) => v.apiKey))
    for (const h of HANDLERS) {
      expect(table.get(h.api.apiKey)).toBe(h)
      expect(advertised.has(h.api.apiKey)).toBe(h.advertised !== false)
    }
  })
})
