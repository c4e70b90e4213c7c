import { describe, expect, it } from 'vitest'
import { API_KEYS, apiKeyOf, apiName, isFlexibleVersion, requestHeaderVersion, responseHeaderVersion } from '../../src/protocol/api-keys.gen.js'
import { beginFrame, encodeRequestFrame, encodeResponseFrame, endFrame, frameFrom, frameLength } from '../../src/protocol/frame.js'
import { peekRequestHeader, readRequestHeader, readResponseHeader, writeResponseHeader } from '../../src/protocol/header.js'
import * as Protocol from '../../src/protocol/index.js'
import { ProtocolDecodeError } from '../../src/protocol/primitives/errors.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'

describe('header versions', () => {
  it('follow flexibleVersions, with the ApiVersions and ControlledShutdown exceptions', () => {
    expect(requestHeaderVersion(0, 8)).toBe(1)
    expect(requestHeaderVersion(0, 9)).toBe(2)
    expect(responseHeaderVersion(0, 8)).toBe(0)
    expect(responseHeaderVersion(0, 9)).toBe(1)
    expect(requestHeaderVersion(18, 3)).toBe(2)
    expect(responseHeaderVersion(18, 3)).toBe(0)
    expect(responseHeaderVersion(18, 0)).toBe(0)
    expect(requestHeaderVersion(7, 0)).toBe(0)
    expect(requestHeaderVersion(17, 1)).toBe(1)
    expect(requestHeaderVersion(9999, 0)).toBe(1)
    expect(isFlexibleVersion(1, 12)).toBe(true)
    expect(isFlexibleVersion(1, 11)).toBe(false)
  })

  it('api key table', () => {
    expect(apiName(0)).toBe('Produce')
    expect(apiName(60)).toBe('DescribeCluster')
    expect(apiName(4)).toBe('LeaderAndIsr')
    expect(apiName(9999)).toBeUndefined()
    expect(apiKeyOf('ApiVersions')).toBe(18)
    // 52 APIs from ../shared/kafka-protocol, 15 from scripts/kafka-protocol-extra (AlterReplicaLogDirs,
    // ConsumerGroupHeartbeat and ConsumerGroupDescribe, the share-group APIs 76-79, the share coordinator's
    // 83-87, and the share-group admin APIs 90-92).
    expect(API_KEYS.length).toBe(67)
    expect(Protocol.ApiKey.Fetch).toBe(1)
    expect(Protocol.apiCodec(3)?.api.name).toBe('Metadata')
    expect(Protocol.API_CODECS.length).toBe(67)
  })
})

describe('request headers', () => {
  it('peeks key, version and correlation id without decoding the rest', () => {
    const frame = encodeRequestFrame({ requestApiKey: 1, requestApiVersion: 99, correlationId: 1234, clientId: 'x' }, () => {})
    expect(frameLength(frame, 0, 1 << 20)).toBe(frame.length)
    expect(peekRequestHeader(frame, 4)).toEqual({ apiKey: 1, apiVersion: 99, correlationId: 1234 })
    expect(() => peekRequestHeader(Buffer.alloc(7))).toThrow(ProtocolDecodeError)
  })

  it('decodes the header in the version the API calls for', () => {
    const flexible = encodeRequestFrame({ requestApiKey: 3, requestApiVersion: 12, correlationId: 5, clientId: null }, (w) => w.writeInt8(42))
    const r = new Reader(flexible, 4)
    expect(readRequestHeader(r)).toEqual({ requestApiKey: 3, requestApiVersion: 12, correlationId: 5, clientId: null })
    expect(r.readInt8()).toBe(42)
    const classic = encodeRequestFrame({ requestApiKey: 3, requestApiVersion: 1, correlationId: 6, clientId: 'cid' }, () => {})
    expect(readRequestHeader(new Reader(classic, 4))).toEqual({ requestApiKey: 3, requestApiVersion: 1, correlationId: 6, clientId: 'cid' })
    expect(classic.length).toBe(4 + 8 + 2 + 3)
    expect(flexible.length).toBe(4 + 8 + 2 + 1 + 1)
  })

  it('response headers round-trip', () => {
    for (const [key, version, size] of [
      [0, 9, 5],
      [0, 8, 4],
      [18, 4, 4],
    ] as const) {
      const w = new Writer()
      writeResponseHeader(w, key, version, 77)
      expect(w.length).toBe(size)
      const r = new Reader(w.toBuffer())
      expect(readResponseHeader(r, key, version).correlationId).toBe(77)
      expect(r.remaining).toBe(0)
    }
  })
})

describe('frames', () => {
  it('builds a size-prefixed response frame that keeps file regions as chunks', () => {
    const region = { fd: 3, position: 0, length: 1000 }
    const frame = encodeResponseFrame(1, 12, 8, (w) => {
      w.writeInt32(1)
      w.writeRegion(region)
      w.writeInt8(0)
    })
    expect(frame.length).toBe(4 + 5 + 4 + 1000 + 1)
    expect(frame.chunks[1]).toBe(region)
    const first = frame.chunks[0] as Buffer
    expect(first.readInt32BE(0)).toBe(frame.length - 4)
    expect(first.readInt32BE(4)).toBe(8)
  })

  it('joins separate header and body writers', () => {
    const header = new Writer()
    writeResponseHeader(header, 0, 3, 1)
    const body = new Writer()
    body.writeInt16(5)
    const frame = frameFrom(header, body)
    expect(Buffer.concat(frame.chunks as Buffer[]).toString('hex')).toBe('00000006' + '00000001' + '0005')
    expect(frame.length).toBe(10)
  })

  it('patches the size after writing in one writer', () => {
    const w = new Writer(4)
    const mark = beginFrame(w)
    for (let i = 0; i < 100; i++) w.writeInt32(i)
    endFrame(w, mark)
    expect(w.toBuffer().readInt32BE(0)).toBe(400)
  })

  it('frameLength waits for the prefix and refuses sizes out of range', () => {
    expect(frameLength(Buffer.from([0, 0, 0]), 0, 100)).toBeUndefined()
    expect(frameLength(Buffer.from([0, 0, 0, 5]), 0, 100)).toBe(9)
    expect(() => frameLength(Buffer.from([0x7f, 0xff, 0xff, 0xff]), 0, 100)).toThrow(ProtocolDecodeError)
    expect(() => frameLength(Buffer.from([0xff, 0xff, 0xff, 0xff]), 0, 100)).toThrow(ProtocolDecodeError)
  })
})
