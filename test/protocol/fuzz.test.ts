// Bounded decoder fuzzing with a fixed seed. For each API's oldest and newest version (request
// and response): every truncation of a valid encoding, plus 200 random inputs (mutated valid
// encodings and random bytes). Decoders may succeed or throw ProtocolDecodeError, nothing else.

import { describe, expect, it } from 'vitest'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import { ProtocolDecodeError } from '../../src/protocol/primitives/errors.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'
import { apiCodecs, type MessageCodec } from './codecs.js'
import { HAVE_SPECS, model, prng, sample } from './samples.js'

function decodeOrDecodeError(c: MessageCodec, input: Buffer, version: number): boolean {
  try {
    c.decode(new Reader(input), version)
    return true
  } catch (err) {
    if (!(err instanceof ProtocolDecodeError)) throw new Error(`${c.msg.name} v${version} threw ${String(err)} on ${input.toString('hex')}`)
    expect(err.code).toBe('BRK_DECODE')
    return false
  }
}

function fuzz(c: MessageCodec, version: number, rand: () => number): void {
  const w = new Writer()
  c.encode(w, sample(c.msg, { version, nulls: false, unknownTags: true }), version)
  const valid = w.toBuffer()
  for (let n = 0; n < valid.length; n++) {
    // A strict prefix of a valid encoding can never decode: the decoder needs every byte.
    expect(decodeOrDecodeError(c, valid.subarray(0, n), version), `${c.msg.name} v${version} prefix ${n}`).toBe(false)
  }
  for (let i = 0; i < 200; i++) {
    let input: Buffer
    if (i % 4 === 0) {
      input = Buffer.alloc(Math.floor(rand() * 48))
      for (let j = 0; j < input.length; j++) input[j] = Math.floor(rand() * 256)
    } else {
      input = Buffer.from(valid)
      const edits = 1 + Math.floor(rand() * 4)
      for (let e = 0; e < edits && input.length > 0; e++) {
        const at = Math.floor(rand() * input.length)
        // Favour bytes that turn lengths into huge or negative values.
        input[at] = rand() < 0.5 ? [0x00, 0x7f, 0x80, 0xff][Math.floor(rand() * 4)]! : Math.floor(rand() * 256)
      }
    }
    decodeOrDecodeError(c, input, version)
  }
}

describe.skipIf(!HAVE_SPECS)('decoder fuzzing', () => {
  for (const api of model().apis) {
    it(`${api.apiKey} ${api.name}`, async () => {
      const rand = prng(0x5eed + api.apiKey)
      const { request, response } = await apiCodecs(api)
      for (const c of [request, response]) {
        for (const v of new Set([c.msg.validVersions.min, c.msg.validVersions.max])) fuzz(c, v, rand)
      }
    })
  }

  it('a tiny input claiming a 2^31-element array fails fast without allocating it', () => {
    const t0 = performance.now()
    const classic = Buffer.from('7fffffff' + '000174' + '000000', 'hex')
    expect(() => Metadata.decodeMetadataRequest(new Reader(classic), 0)).toThrow(/cannot fit/)
    // Compact count: uvarint 0xffffffff (count 2^32 - 2).
    const compact = Buffer.from('ffffffff0f' + '0000000000', 'hex')
    expect(() => Metadata.decodeMetadataRequest(new Reader(compact), 12)).toThrow(/cannot fit/)
    // Nested: one topic, then a partition array claiming 2^31 - 1 elements.
    const nested = Buffer.from('ffff' + 'ffff' + '00000000' + '00000001' + '000174' + '7fffffff' + '00', 'hex')
    expect(() => Produce.decodeProduceRequest(new Reader(nested), 3)).toThrow(/cannot fit/)
    // A string or records length beyond the input.
    expect(() => Produce.decodeProduceRequest(new Reader(Buffer.from('7fff00', 'hex')), 3)).toThrow(/truncated/)
    expect(performance.now() - t0).toBeLessThan(100)
  })
})
