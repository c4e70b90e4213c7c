// Hand-built bytes, written out field by field from the specs, compared with the codecs.

import { describe, expect, it } from 'vitest'
import * as ApiVersions from '../../src/protocol/messages/18-api-versions.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import * as Heartbeat from '../../src/protocol/messages/12-heartbeat.gen.js'
import * as Produce from '../../src/protocol/messages/00-produce.gen.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as ConsumerProtocolSubscription from '../../src/protocol/messages/consumer-protocol-subscription.gen.js'
import { encodeRequestFrame, encodeResponseFrame } from '../../src/protocol/frame.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { Writer } from '../../src/protocol/primitives/writer.js'

const hex = (s: string): Buffer => Buffer.from(s.replace(/[\s|]+/g, ''), 'hex')
const enc = (f: (w: Writer) => void): string => {
  const w = new Writer()
  f(w)
  return w.toBuffer().toString('hex')
}

describe('golden encodings', () => {
  it('ApiVersions v0 request frame: header v1 and an empty body', () => {
    const frame = encodeRequestFrame({ requestApiKey: 18, requestApiVersion: 0, correlationId: 1, clientId: 'c' }, (w) =>
      ApiVersions.encodeApiVersionsRequest(w, ApiVersions.createApiVersionsRequest(), 0),
    )
    // size 11 | apiKey 18 | version 0 | correlation 1 | clientId "c"
    expect(frame.toString('hex')).toBe('0000000b' + '0012' + '0000' + '00000001' + '000163')
  })

  it('ApiVersions v3 request: compact strings and a tagged section in the body, header v2', () => {
    const frame = encodeRequestFrame({ requestApiKey: 18, requestApiVersion: 3, correlationId: 7, clientId: 'cl' }, (w) =>
      ApiVersions.encodeApiVersionsRequest(w, { clientSoftwareName: 'js', clientSoftwareVersion: '1' }, 3),
    )
    // header: 0012 0003 00000007, classic clientId 0002 636c, tags 00; body: 03 6a73, 02 31, tags 00
    expect(frame.toString('hex')).toBe('00000013' + '0012000300000007' + '0002636c' + '00' + '036a73' + '0231' + '00')
  })

  it('ApiVersions v0 response', () => {
    const msg = ApiVersions.createApiVersionsResponse({
      errorCode: 0,
      apiKeys: [ApiVersions.createApiVersion({ apiKey: 0, minVersion: 0, maxVersion: 11 }), ApiVersions.createApiVersion({ apiKey: 18, minVersion: 0, maxVersion: 4 })],
    })
    const expected = '0000' + '00000002' + '0000' + '0000' + '000b' + '0012' + '0000' + '0004'
    expect(enc((w) => ApiVersions.encodeApiVersionsResponse(w, msg, 0))).toBe(expected)
    expect(ApiVersions.decodeApiVersionsResponse(new Reader(hex(expected)), 0)).toEqual(msg)
  })

  it('ApiVersions v3 response: compact array, tagged FinalizedFeaturesEpoch, and always header v0', () => {
    const msg = ApiVersions.createApiVersionsResponse({
      apiKeys: [ApiVersions.createApiVersion({ apiKey: 18, minVersion: 0, maxVersion: 4 })],
      throttleTimeMs: 0,
      finalizedFeaturesEpoch: 5n,
    })
    // error 0000 | array count+1 = 02 | 0012 0000 0004 00 | throttle 00000000 | 1 tag: tag 01 size 08 int64 5
    const body = '0000' + '02' + '0012' + '0000' + '0004' + '00' + '00000000' + '01' + '01' + '08' + '0000000000000005'
    expect(enc((w) => ApiVersions.encodeApiVersionsResponse(w, msg, 3))).toBe(body)
    expect(ApiVersions.decodeApiVersionsResponse(new Reader(hex(body)), 3)).toEqual(msg)
    const frame = encodeResponseFrame(18, 3, 9, (w) => ApiVersions.encodeApiVersionsResponse(w, msg, 3))
    const bytes = Buffer.concat(frame.chunks as Buffer[])
    // size | correlation id 9, no tagged section (header v0)
    expect(bytes.toString('hex')).toBe((4 + body.length / 2).toString(16).padStart(8, '0') + '00000009' + body)
  })

  it('Metadata v0 request', () => {
    const msg = Metadata.createMetadataRequest({ topics: [Metadata.createMetadataRequestTopic({ name: 't' })] })
    expect(enc((w) => Metadata.encodeMetadataRequest(w, msg, 0))).toBe('00000001' + '000174')
    expect(Metadata.decodeMetadataRequest(new Reader(hex('00000001000174')), 0)).toEqual(msg)
  })

  it('Metadata v1 request with null topics (all topics), and v0 refuses null', () => {
    const msg = Metadata.createMetadataRequest({ topics: null })
    expect(enc((w) => Metadata.encodeMetadataRequest(w, msg, 1))).toBe('ffffffff')
    expect(() => enc((w) => Metadata.encodeMetadataRequest(w, msg, 0))).toThrow(/cannot be null/)
    expect(() => Metadata.decodeMetadataRequest(new Reader(hex('ffffffff')), 0)).toThrow(/null/)
  })

  it('Heartbeat v4 request (flexible)', () => {
    const msg = Heartbeat.createHeartbeatRequest({ groupId: 'g', generationId: 5, memberId: 'm', groupInstanceId: null })
    // compact "g" | int32 5 | compact "m" | compact null | no tags
    const expected = '0267' + '00000005' + '026d' + '00' + '00'
    expect(enc((w) => Heartbeat.encodeHeartbeatRequest(w, msg, 4))).toBe(expected)
    expect(Heartbeat.decodeHeartbeatRequest(new Reader(hex(expected)), 4)).toEqual(msg)
  })

  it('Produce v3 request with a records blob, and v9 with compact records', () => {
    const records = Buffer.from('0102030405', 'hex')
    const msg = Produce.createProduceRequest({
      transactionalId: null,
      acks: -1,
      timeoutMs: 1000,
      topicData: [Produce.createTopicProduceData({ name: 'ab', partitionData: [Produce.createPartitionProduceData({ index: 2, records })] })],
    })
    const v3 = 'ffff' + 'ffff' + '000003e8' + '00000001' + '00026162' + '00000001' + '00000002' + '00000005' + '0102030405'
    expect(enc((w) => Produce.encodeProduceRequest(w, msg, 3))).toBe(v3)
    const v9 = '00' + 'ffff' + '000003e8' + '02' + '03616' + '2' + '02' + '00000002' + '06' + '0102030405' + '00' + '00' + '00'
    expect(enc((w) => Produce.encodeProduceRequest(w, msg, 9))).toBe(v9)
    const decoded = Produce.decodeProduceRequest(new Reader(hex(v9)), 9)
    expect(decoded).toEqual(msg)
  })

  it('decoded records are a zero-copy view of the input', () => {
    const input = hex('ffff' + 'ffff' + '000003e8' + '00000001' + '00026162' + '00000001' + '00000002' + '00000003' + 'aabbcc')
    const decoded = Produce.decodeProduceRequest(new Reader(input), 3)
    const records = decoded.topicData[0]!.partitionData[0]!.records as Buffer
    expect(records.buffer).toBe(input.buffer)
    expect(records.byteOffset).toBe(input.byteOffset + input.length - 3)
  })

  it('Fetch v12 response: records from file regions are chunks, the length prefix is their sum', () => {
    const region = { fd: 10, position: 4096, length: 300 }
    const head = Buffer.alloc(61, 1)
    const msg = Fetch.createFetchResponse({
      responses: [
        Fetch.createFetchableTopicResponse({
          topic: 't',
          partitions: [Fetch.createPartitionData({ partitionIndex: 0, highWatermark: 10n, records: { chunks: [head, region] } })],
        }),
      ],
    })
    const w = new Writer()
    Fetch.encodeFetchResponse(w, msg, 12)
    const chunks = w.chunks()
    expect(chunks).toContain(region)
    const before = chunks[0] as Buffer
    // compact records length = 361 + 1 = 362 -> uvarint ea 02, then the 61 in-memory bytes
    expect(before.subarray(before.length - 2 - 61, before.length - 61).toString('hex')).toBe('ea02')
    expect(w.length).toBe(before.length + 300 + (chunks.slice(2) as Buffer[]).reduce((n, c) => n + c.length, 0))
  })

  it('ConsumerProtocolSubscription v1 (the JoinGroup metadata payload)', () => {
    const msg = ConsumerProtocolSubscription.createConsumerProtocolSubscription({
      topics: ['a'],
      userData: null,
      ownedPartitions: [ConsumerProtocolSubscription.createTopicPartition({ topic: 'a', partitions: [0, 1] })],
    })
    const expected = '00000001' + '000161' + 'ffffffff' + '00000001' + '000161' + '00000002' + '00000000' + '00000001'
    expect(enc((w) => ConsumerProtocolSubscription.encodeConsumerProtocolSubscription(w, msg, 1))).toBe(expected)
    expect(ConsumerProtocolSubscription.decodeConsumerProtocolSubscription(new Reader(hex(expected)), 1)).toEqual(msg)
  })
})
