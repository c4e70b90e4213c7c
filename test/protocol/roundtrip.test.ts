// Every API, every version in the spec, request and response: a message with a non-default
// value in every present field round-trips (decode deep-equals the input, re-encode gives the
// same bytes). Runs twice per version: once with values everywhere, once with null wherever the
// version allows it. Flexible versions also carry unknown tagged fields on every struct.

import { describe, expect, it } from 'vitest'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'
import { apiCodecs, messageCodec, type MessageCodec } from './codecs.js'
import { expectRoundTrip } from './expect-round-trip.js'
import { HAVE_SPECS, model, sample, versionsOf } from './samples.js'

function roundTrip(c: MessageCodec, version: number, nulls: boolean): void {
  expectRoundTrip(c, sample(c.msg, { version, nulls, unknownTags: true }), version)
}

describe.skipIf(!HAVE_SPECS)('round trip of every API and version', () => {
  for (const api of model().apis) {
    it(`${api.apiKey} ${api.name} v${api.request.validVersions.min}-${api.request.validVersions.max}`, async () => {
      const { request, response } = await apiCodecs(api)
      for (const v of versionsOf(api.request)) {
        for (const nulls of [false, true]) {
          roundTrip(request, v, nulls)
          roundTrip(response, v, nulls)
        }
      }
    })
  }
})

describe.skipIf(!HAVE_SPECS)('round trip of data and header messages', () => {
  for (const msg of [...model().data, ...model().headers]) {
    it(`${msg.name} v${msg.validVersions.min}-${msg.validVersions.max}`, async () => {
      const c = await messageCodec(msg)
      for (const v of versionsOf(msg)) {
        roundTrip(c, v, false)
        roundTrip(c, v, true)
      }
    })
  }
})

describe.skipIf(!HAVE_SPECS)('defaults', () => {
  it('a created message round-trips in every version and decodes to itself', async () => {
    for (const api of model().apis) {
      const { request, response } = await apiCodecs(api)
      for (const c of [request, response]) {
        for (const v of versionsOf(c.msg)) {
          const m = c.create()
          const w = new Writer()
          c.encode(w, m, v)
          expect(c.decode(new Reader(w.toBuffer()), v)).toEqual(m)
        }
      }
    }
  })
})
