// Version semantics from Kafka's message README: absent fields take their default on decode and
// are not written; a non-default value in a version without the field throws unless ignorable.

import { describe, expect, it } from 'vitest'
import { contains, isPresent } from '../../scripts/gen-protocol/model.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import * as RequestHeader from '../../src/protocol/messages/request-header.gen.js'
import { ProtocolDecodeError, ProtocolEncodeError } from '../../src/protocol/primitives/errors.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'
import { apiCodecs } from './codecs.js'
import { defaultValue, HAVE_SPECS, model, sample, versionsOf } from './samples.js'

describe('fields absent from a version', () => {
  it.skipIf(!HAVE_SPECS)('throw on a non-default value unless ignorable, for every top-level field of every API', async () => {
    let throwing = 0
    let dropped = 0
    for (const api of model().apis) {
      const { request, response } = await apiCodecs(api)
      for (const c of [request, response]) {
        for (const v of versionsOf(c.msg)) {
          for (const f of c.msg.root.fields) {
            if (isPresent(f, v)) continue
            // A value that is certainly not the default: take it from a version that has the field.
            const donorVersion = versionsOf(c.msg).find((x) => isPresent(f, x) && !contains(f.nullableVersions, x)) ?? versionsOf(c.msg).find((x) => isPresent(f, x))
            if (donorVersion === undefined) continue
            const value = sample(c.msg, { version: donorVersion, nulls: false, unknownTags: false })[f.prop]
            const msg = { ...c.create(), [f.prop]: value }
            const w = new Writer()
            if (f.ignorable) {
              c.encode(w, msg, v)
              const decoded = c.decode(new Reader(w.toBuffer()), v) as Record<string, unknown>
              expect(decoded[f.prop]).toEqual(defaultValue(f.default))
              dropped++
            } else {
              expect(() => c.encode(w, msg, v), `${c.msg.name}.${f.prop} v${v}`).toThrow(ProtocolEncodeError)
              throwing++
            }
          }
        }
      }
    }
    // Both branches are exercised by the specs.
    expect(throwing).toBeGreaterThan(50)
    expect(dropped).toBeGreaterThan(50)
  })

  it('nested struct fields follow the same rule (Fetch DivergingEpoch before v12)', () => {
    const partition = Fetch.createPartitionData({ divergingEpoch: Fetch.createEpochEndOffset({ epoch: 3, endOffset: 10n }) })
    const msg = Fetch.createFetchResponse({ responses: [Fetch.createFetchableTopicResponse({ topic: 't', partitions: [partition] })] })
    expect(() => Fetch.encodeFetchResponse(new Writer(), msg, 11)).toThrow(/divergingEpoch is not supported in version 11/)
    const w = new Writer()
    Fetch.encodeFetchResponse(w, msg, 12)
    const decoded = Fetch.decodeFetchResponse(new Reader(w.toBuffer()), 12)
    expect(decoded.responses[0]!.partitions[0]!.divergingEpoch).toEqual({ epoch: 3, endOffset: 10n })
  })

  it('a tagged field equal to its default is not written', () => {
    const a = new Writer()
    Fetch.encodeFetchResponse(a, Fetch.createFetchResponse(), 16)
    const b = new Writer()
    Fetch.encodeFetchResponse(b, Fetch.createFetchResponse({ nodeEndpoints: [Fetch.createNodeEndpoint({ nodeId: 1, host: 'h', port: 9092 })] }), 16)
    expect(b.length).toBeGreaterThan(a.length)
    // throttle 0 | error 0 | session 0 | responses [] -> 01 | tag section: none
    expect(a.toBuffer().toString('hex')).toBe('00000000' + '0000' + '00000000' + '01' + '00')
  })

  it('a field-level flexibleVersions "none" keeps the classic encoding (RequestHeader v2 ClientId)', () => {
    const w = new Writer()
    RequestHeader.encodeRequestHeader(w, { requestApiKey: 1, requestApiVersion: 12, correlationId: 2, clientId: 'ab' }, 2)
    expect(w.toBuffer().toString('hex')).toBe('0001000c00000002' + '00026162' + '00')
    const w0 = new Writer()
    // ClientId is ignorable: dropped in v0.
    RequestHeader.encodeRequestHeader(w0, { requestApiKey: 1, requestApiVersion: 0, correlationId: 2, clientId: 'ab' }, 0)
    expect(w0.toBuffer().toString('hex')).toBe('0001000000000002')
  })

  it('null where the version does not allow it throws on encode and decode', () => {
    const msg = Produce.createProduceRequest({ transactionalId: null })
    const w = new Writer()
    Produce.encodeProduceRequest(w, msg, 3)
    expect(w.toBuffer().subarray(0, 2).toString('hex')).toBe('ffff')
    // ProduceResponse v8 RecordErrors: non-nullable array.
    const res = Produce.createProduceResponse({
      responses: [Produce.createTopicProduceResponse({ name: 't', partitionResponses: [Produce.createPartitionProduceResponse({ recordErrors: null as unknown as [] })] })],
    })
    expect(() => Produce.encodeProduceResponse(new Writer(), res, 8)).toThrow(ProtocolEncodeError)
  })

  it('unknown tagged fields are refused in non-flexible versions', () => {
    const msg = Produce.createProduceRequest({ _unknownTaggedFields: [{ tag: 5, data: Buffer.from([1]) }] })
    expect(() => Produce.encodeProduceRequest(new Writer(), msg, 8)).toThrow(/tagged fields need a flexible version/)
    const w = new Writer()
    Produce.encodeProduceRequest(w, msg, 9)
    expect(Produce.decodeProduceRequest(new Reader(w.toBuffer()), 9)._unknownTaggedFields).toEqual([{ tag: 5, data: Buffer.from([1]) }])
  })

  it('unknown and known tagged fields are merged in tag order', () => {
    const msg = Fetch.createFetchResponse({
      nodeEndpoints: [Fetch.createNodeEndpoint({ nodeId: 1, host: 'h', port: 1 })],
      _unknownTaggedFields: [{ tag: 7, data: Buffer.from([9]) }],
    })
    const w = new Writer()
    Fetch.encodeFetchResponse(w, msg, 16)
    const b = w.toBuffer()
    // ... 02 (two tags) | tag 0 ... | tag 7 size 1 09
    expect(b.subarray(b.length - 3).toString('hex')).toBe('070109')
    expect(Fetch.decodeFetchResponse(new Reader(b), 16)).toEqual(msg)
  })

  it('versions outside the spec range are refused', () => {
    expect(() => Produce.encodeProduceRequest(new Writer(), Produce.createProduceRequest(), 12)).toThrow(ProtocolEncodeError)
    expect(() => Produce.decodeProduceRequest(new Reader(Buffer.alloc(20)), -1)).toThrow(ProtocolDecodeError)
    expect(Produce.ProduceApi).toMatchObject({ apiKey: 0, minVersion: 0, maxVersion: 11, flexibleMinVersion: 9, deprecatedVersions: { min: 0, max: 6 } })
  })
})
