// The share-group (KIP-932) messages kept in scripts/kafka-protocol-extra: every request and response
// round-trips at every version its spec declares (decode deep-equals the input, re-encode gives the same
// bytes), with the values a share consumer and a broker exchange: topic ids, acknowledgement batches of
// several AcknowledgeTypes, record batches as bytes. Then two requests built by hand, byte for byte, the
// way librdkafka 2.15 writes them (rd_kafka_ShareGroupHeartbeatRequest, rd_kafka_ShareFetchRequest), so
// the wire layout is checked against an encoder other than ours.

import { describe, expect, it } from 'vitest'
import { native } from '../../src/addon/index.js'
import { ErrorCode } from '../../src/domain/errors.js'
import { apiKeyOf, requestHeaderVersion, responseHeaderVersion } from '../../src/protocol/api-keys.gen.js'
import { readRequestHeader } from '../../src/protocol/header.js'
import * as ShareGroupHeartbeat from '../../src/protocol/messages/76-share-group-heartbeat.gen.js'
import * as ShareGroupDescribe from '../../src/protocol/messages/77-share-group-describe.gen.js'
import * as ShareFetch from '../../src/protocol/messages/78-share-fetch.gen.js'
import * as ShareAcknowledge from '../../src/protocol/messages/79-share-acknowledge.gen.js'
import * as DescribeShareGroupOffsets from '../../src/protocol/messages/90-describe-share-group-offsets.gen.js'
import * as DeleteShareGroupOffsets from '../../src/protocol/messages/92-delete-share-group-offsets.gen.js'
import { Reader } from '../../src/protocol/primitives/reader.js'
import { ZERO_UUID } from '../../src/protocol/primitives/types.js'
import { Writer } from '../../src/protocol/primitives/writer.js'
import { buildRecordBatch } from '../../src/protocol/records/index.js'
import { i16, i32, i64, i8 } from '../harness/bytes.js'
import { expectRoundTrip } from './expect-round-trip.js'

// Kafka's AcknowledgeType values (ShareFetchRequest.json: 0:Gap, 1:Accept, 2:Release, 3:Reject).
const GAP = 0
const ACCEPT = 1
const RELEASE = 2
const REJECT = 3
// Kafka's share-group error codes (not in src/domain/errors.ts yet).
const INVALID_RECORD_STATE = 121
const SHARE_SESSION_NOT_FOUND = 122
const INVALID_SHARE_SESSION_EPOCH = 123

// Topic ids as Kafka prints them (Uuid.toString: base64url of the 16 bytes).
const ORDERS_ID = 'vZ1YwIHuQXq9cEb1-ro0EA'
const PAYMENTS_ID = 'AQIDBAUGBwgJCgsMDQ4PEA'
// A member id the way librdkafka and the Java share consumer make one: a random Uuid, base64url.
const MEMBER_ID = 'Gk7m2T0oS7Kq9aWJr1xQdw'
const NOW = 1_730_000_000_000


function versions(api: { minVersion: number; maxVersion: number }): number[] {
  const out: number[] = []
  for (let v = api.minVersion; v <= api.maxVersion; v++) out.push(v)
  return out
}


function recordBatch(baseOffset: number, values: string[]): Buffer {
  return buildRecordBatch(
    values.map((v, i) => ({ key: Buffer.from(`key-${baseOffset + i}`), value: Buffer.from(v), timestamp: NOW + i, headers: [{ key: 'trace', value: Buffer.from('t1') }] })),
    native.crc32c,
    { baseOffset, baseTimestamp: NOW, partitionLeaderEpoch: 3 },
  )
}

const heartbeatRequest = ShareGroupHeartbeat.createShareGroupHeartbeatRequest({
  groupId: 'orders-workers',
  memberId: MEMBER_ID,
  memberEpoch: 0,
  rackId: 'rack-a',
  subscribedTopicNames: ['orders', 'payments'],
})

const heartbeatResponse = ShareGroupHeartbeat.createShareGroupHeartbeatResponse({
  throttleTimeMs: 0,
  errorCode: 0,
  errorMessage: null,
  memberId: MEMBER_ID,
  memberEpoch: 7,
  heartbeatIntervalMs: 5000,
  assignment: {
    topicPartitions: [
      { topicId: ORDERS_ID, partitions: [0, 1, 2] },
      { topicId: PAYMENTS_ID, partitions: [4] },
    ],
  },
})

const shareFetchRequest = ShareFetch.createShareFetchRequest({
  groupId: 'orders-workers',
  memberId: MEMBER_ID,
  shareSessionEpoch: 3,
  maxWaitMs: 500,
  minBytes: 1,
  maxBytes: 52_428_800,
  maxRecords: 500,
  batchSize: 500,
  topics: [
    {
      topicId: ORDERS_ID,
      partitions: [
        {
          partitionIndex: 0,
          acknowledgementBatches: [
            // Offsets 100-104 accepted, 105-106 released for redelivery, 107 rejected (poison record).
            { firstOffset: 100n, lastOffset: 104n, acknowledgeTypes: [ACCEPT] },
            { firstOffset: 105n, lastOffset: 106n, acknowledgeTypes: [RELEASE] },
            { firstOffset: 107n, lastOffset: 107n, acknowledgeTypes: [REJECT] },
            // One type per offset, with a gap where a compacted-away offset was.
            { firstOffset: 108n, lastOffset: 111n, acknowledgeTypes: [ACCEPT, GAP, ACCEPT, RELEASE] },
          ],
        },
        { partitionIndex: 1, acknowledgementBatches: [] },
      ],
    },
  ],
  forgottenTopicsData: [{ topicId: PAYMENTS_ID, partitions: [4, 5] }],
})

const shareFetchResponse = ShareFetch.createShareFetchResponse({
  throttleTimeMs: 0,
  errorCode: 0,
  errorMessage: null,
  acquisitionLockTimeoutMs: 30_000,
  responses: [
    {
      topicId: ORDERS_ID,
      partitions: [
        {
          partitionIndex: 0,
          errorCode: 0,
          errorMessage: null,
          acknowledgeErrorCode: 0,
          acknowledgeErrorMessage: null,
          currentLeader: { leaderId: 1, leaderEpoch: 3 },
          records: Buffer.concat([recordBatch(112, ['a', 'b', 'c']), recordBatch(115, ['d', 'e'])]),
          acquiredRecords: [
            { firstOffset: 112n, lastOffset: 114n, deliveryCount: 1 },
            { firstOffset: 115n, lastOffset: 116n, deliveryCount: 2 },
          ],
        },
        {
          partitionIndex: 1,
          errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, // the new leader is in NodeEndpoints
          errorMessage: 'not the leader',
          acknowledgeErrorCode: INVALID_RECORD_STATE,
          acknowledgeErrorMessage: 'records 40-41 are not acquired by this member',
          currentLeader: { leaderId: 2, leaderEpoch: 4 },
          records: Buffer.alloc(0),
          acquiredRecords: [],
        },
      ],
    },
  ],
  nodeEndpoints: [
    { nodeId: 1, host: 'broker-1.internal', port: 9092, rack: 'rack-a' },
    { nodeId: 2, host: 'broker-2.internal', port: 9092, rack: null },
  ],
})

const acknowledgeRequest = ShareAcknowledge.createShareAcknowledgeRequest({
  groupId: 'orders-workers',
  memberId: MEMBER_ID,
  shareSessionEpoch: 4,
  topics: [
    {
      topicId: ORDERS_ID,
      partitions: [
        {
          partitionIndex: 0,
          acknowledgementBatches: [
            { firstOffset: 112n, lastOffset: 114n, acknowledgeTypes: [ACCEPT] },
            { firstOffset: 115n, lastOffset: 116n, acknowledgeTypes: [REJECT, RELEASE] },
          ],
        },
      ],
    },
    { topicId: PAYMENTS_ID, partitions: [{ partitionIndex: 4, acknowledgementBatches: [{ firstOffset: 0n, lastOffset: 9n, acknowledgeTypes: [RELEASE] }] }] },
  ],
})

const acknowledgeResponse = ShareAcknowledge.createShareAcknowledgeResponse({
  throttleTimeMs: 0,
  errorCode: 0,
  errorMessage: null,
  responses: [
    {
      topicId: ORDERS_ID,
      partitions: [
        { partitionIndex: 0, errorCode: 0, errorMessage: null, currentLeader: { leaderId: 1, leaderEpoch: 3 } },
        { partitionIndex: 1, errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, errorMessage: 'leader moved', currentLeader: { leaderId: 2, leaderEpoch: 4 } },
      ],
    },
  ],
  nodeEndpoints: [{ nodeId: 2, host: 'broker-2.internal', port: 9093, rack: 'rack-b' }],
})

describe('share-group messages round-trip at every version their specs declare', () => {
  it('76 ShareGroupHeartbeat: join, steady state, leave; assignment present and absent', () => {
    expect(versions(ShareGroupHeartbeat.ShareGroupHeartbeatApi)).toEqual([1])
    const c = { encode: ShareGroupHeartbeat.encodeShareGroupHeartbeatRequest, decode: ShareGroupHeartbeat.decodeShareGroupHeartbeatRequest }
    const r = { encode: ShareGroupHeartbeat.encodeShareGroupHeartbeatResponse, decode: ShareGroupHeartbeat.decodeShareGroupHeartbeatResponse }
    for (const v of versions(ShareGroupHeartbeat.ShareGroupHeartbeatApi)) {
      expectRoundTrip(c, heartbeatRequest, v)
      expectRoundTrip(c, { ...heartbeatRequest, memberEpoch: 7, rackId: null, subscribedTopicNames: null }, v)
      expectRoundTrip(c, { ...heartbeatRequest, memberEpoch: -1, rackId: null, subscribedTopicNames: null }, v)
      expectRoundTrip(r, heartbeatResponse, v)
      expectRoundTrip(r, { ...heartbeatResponse, assignment: null }, v)
      expectRoundTrip(r, { ...heartbeatResponse, errorCode: ErrorCode.UNKNOWN_MEMBER_ID, errorMessage: 'unknown member', memberId: null, assignment: null }, v)
    }
  })

  it('77 ShareGroupDescribe', () => {
    const c = { encode: ShareGroupDescribe.encodeShareGroupDescribeRequest, decode: ShareGroupDescribe.decodeShareGroupDescribeRequest }
    const r = { encode: ShareGroupDescribe.encodeShareGroupDescribeResponse, decode: ShareGroupDescribe.decodeShareGroupDescribeResponse }
    const response = ShareGroupDescribe.createShareGroupDescribeResponse({
      throttleTimeMs: 0,
      groups: [
        {
          errorCode: 0,
          errorMessage: null,
          groupId: 'orders-workers',
          groupState: 'Stable',
          groupEpoch: 9,
          assignmentEpoch: 9,
          assignorName: 'simple',
          members: [
            {
              memberId: MEMBER_ID,
              rackId: 'rack-a',
              memberEpoch: 9,
              clientId: 'rdkafka',
              clientHost: '/10.0.0.7',
              subscribedTopicNames: ['orders', 'payments'],
              assignment: {
                topicPartitions: [
                  { topicId: ORDERS_ID, topicName: 'orders', partitions: [0, 1, 2] },
                  { topicId: PAYMENTS_ID, topicName: 'payments', partitions: [4] },
                ],
              },
            },
          ],
          authorizedOperations: 0b1_0000_1000,
        },
        ShareGroupDescribe.createDescribedGroup({ errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group missing does not exist', groupId: 'missing', groupState: 'Dead' }),
      ],
    })
    for (const v of versions(ShareGroupDescribe.ShareGroupDescribeApi)) {
      expectRoundTrip(c, { groupIds: ['orders-workers', 'missing'], includeAuthorizedOperations: true }, v)
      expectRoundTrip(r, response, v)
    }
    // Not asked for: AuthorizedOperations keeps Kafka's "not included" value, Integer.MIN_VALUE.
    expect(ShareGroupDescribe.createDescribedGroup().authorizedOperations).toBe(-2147483648)
  })

  it('78 ShareFetch: acknowledgements of every type piggybacked on a fetch, records as bytes', () => {
    expect(versions(ShareFetch.ShareFetchApi)).toEqual([1])
    const c = { encode: ShareFetch.encodeShareFetchRequest, decode: ShareFetch.decodeShareFetchRequest }
    const r = { encode: ShareFetch.encodeShareFetchResponse, decode: ShareFetch.decodeShareFetchResponse }
    for (const v of versions(ShareFetch.ShareFetchApi)) {
      expectRoundTrip(c, shareFetchRequest, v)
      // Opening a session (epoch 0) and closing it (epoch -1) with acknowledgements only.
      expectRoundTrip(c, { ...shareFetchRequest, shareSessionEpoch: 0, forgottenTopicsData: [] }, v)
      expectRoundTrip(c, { ...shareFetchRequest, shareSessionEpoch: -1, maxRecords: 0, topics: shareFetchRequest.topics.slice(0, 1), forgottenTopicsData: [] }, v)
      expectRoundTrip(r, shareFetchResponse, v)
      expectRoundTrip(r, { ...shareFetchResponse, errorCode: SHARE_SESSION_NOT_FOUND, errorMessage: 'share session not found', responses: [], nodeEndpoints: [] }, v)
    }
    // The decoded records are the bytes sent: two batches, five records.
    const w = new Writer()
    ShareFetch.encodeShareFetchResponse(w, shareFetchResponse, 1)
    const decoded = ShareFetch.decodeShareFetchResponse(new Reader(w.toBuffer()), 1)
    const records = decoded.responses[0]!.partitions[0]!.records as Buffer
    expect(records.equals(shareFetchResponse.responses[0]!.partitions[0]!.records as Buffer)).toBe(true)
    expect(records.readBigInt64BE(0)).toBe(112n)
  })

  it('78 ShareFetch: empty records are a zero-length field, null ones the compact null', () => {
    // librdkafka's ShareFetch reply parser reads Records as a compact length and rejects the null
    // length ("invalid MessageSetSize"): a broker answering it sends empty records, not null.
    const partition = ShareFetch.createPartitionData({ partitionIndex: 0, currentLeader: { leaderId: 1, leaderEpoch: 0 } })
    const bytes = (records: Buffer | null): Buffer => {
      const w = new Writer()
      ShareFetch.encodeShareFetchResponse(w, ShareFetch.createShareFetchResponse({ responses: [{ topicId: ORDERS_ID, partitions: [{ ...partition, records }] }] }), 1)
      return w.toBuffer()
    }
    const empty = bytes(Buffer.alloc(0))
    const nul = bytes(null)
    expect(empty.length).toBe(nul.length)
    const at = empty.findIndex((b, i) => b !== nul[i])
    expect([empty[at], nul[at]]).toEqual([1, 0])
    expect(ShareFetch.decodeShareFetchResponse(new Reader(nul), 1).responses[0]!.partitions[0]!.records).toBe(null)
  })

  it('79 ShareAcknowledge', () => {
    const c = { encode: ShareAcknowledge.encodeShareAcknowledgeRequest, decode: ShareAcknowledge.decodeShareAcknowledgeRequest }
    const r = { encode: ShareAcknowledge.encodeShareAcknowledgeResponse, decode: ShareAcknowledge.decodeShareAcknowledgeResponse }
    expect(versions(ShareAcknowledge.ShareAcknowledgeApi)).toEqual([1])
    for (const v of versions(ShareAcknowledge.ShareAcknowledgeApi)) {
      expectRoundTrip(c, acknowledgeRequest, v)
      expectRoundTrip(c, { ...acknowledgeRequest, shareSessionEpoch: -1, topics: [] }, v)
      expectRoundTrip(r, acknowledgeResponse, v)
      expectRoundTrip(r, { ...acknowledgeResponse, errorCode: INVALID_SHARE_SESSION_EPOCH, errorMessage: 'invalid share session epoch', responses: [], nodeEndpoints: [] }, v)
    }
  })

  it('90 DescribeShareGroupOffsets: some topics, and null for all of them', () => {
    const c = { encode: DescribeShareGroupOffsets.encodeDescribeShareGroupOffsetsRequest, decode: DescribeShareGroupOffsets.decodeDescribeShareGroupOffsetsRequest }
    const r = { encode: DescribeShareGroupOffsets.encodeDescribeShareGroupOffsetsResponse, decode: DescribeShareGroupOffsets.decodeDescribeShareGroupOffsetsResponse }
    const request = DescribeShareGroupOffsets.createDescribeShareGroupOffsetsRequest({
      groups: [
        { groupId: 'orders-workers', topics: [{ topicName: 'orders', partitions: [0, 1, 2] }] },
        { groupId: 'audit', topics: null },
      ],
    })
    const response = DescribeShareGroupOffsets.createDescribeShareGroupOffsetsResponse({
      throttleTimeMs: 0,
      groups: [
        {
          groupId: 'orders-workers',
          topics: [
            {
              topicName: 'orders',
              topicId: ORDERS_ID,
              partitions: [
                { partitionIndex: 0, startOffset: 117n, leaderEpoch: 3, errorCode: 0, errorMessage: null },
                { partitionIndex: 1, startOffset: -1n, leaderEpoch: -1, errorCode: 0, errorMessage: null },
                { partitionIndex: 2, startOffset: 0n, leaderEpoch: 0, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'unknown partition' },
              ],
            },
          ],
          errorCode: 0,
          errorMessage: null,
        },
        { groupId: 'audit', topics: [], errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: 'Group audit does not exist' },
      ],
    })
    for (const v of versions(DescribeShareGroupOffsets.DescribeShareGroupOffsetsApi)) {
      expectRoundTrip(c, request, v)
      expectRoundTrip(r, response, v)
    }
  })

  it('92 DeleteShareGroupOffsets', () => {
    const c = { encode: DeleteShareGroupOffsets.encodeDeleteShareGroupOffsetsRequest, decode: DeleteShareGroupOffsets.decodeDeleteShareGroupOffsetsRequest }
    const r = { encode: DeleteShareGroupOffsets.encodeDeleteShareGroupOffsetsResponse, decode: DeleteShareGroupOffsets.decodeDeleteShareGroupOffsetsResponse }
    const response = DeleteShareGroupOffsets.createDeleteShareGroupOffsetsResponse({
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      responses: [
        { topicName: 'orders', topicId: ORDERS_ID, errorCode: 0, errorMessage: null },
        // An unknown topic has no id: the zero Uuid.
        { topicName: 'gone', topicId: ZERO_UUID, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'unknown topic' },
      ],
    })
    for (const v of versions(DeleteShareGroupOffsets.DeleteShareGroupOffsetsApi)) {
      expectRoundTrip(c, { groupId: 'orders-workers', topics: [{ topicName: 'orders' }, { topicName: 'gone' }] }, v)
      expectRoundTrip(r, response, v)
      expectRoundTrip(r, { ...response, errorCode: ErrorCode.NON_EMPTY_GROUP, errorMessage: 'the group is not empty', responses: [] }, v)
    }
  })

  it('the API table knows the keys, and every share API is flexible: request header v2, response header v1', () => {
    for (const [name, key] of [
      ['ShareGroupHeartbeat', 76],
      ['ShareGroupDescribe', 77],
      ['ShareFetch', 78],
      ['ShareAcknowledge', 79],
      ['DescribeShareGroupOffsets', 90],
      ['DeleteShareGroupOffsets', 92],
    ] as const) {
      expect(apiKeyOf(name)).toBe(key)
      const v = key >= 90 ? 0 : 1
      expect(requestHeaderVersion(key, v)).toBe(2)
      expect(responseHeaderVersion(key, v)).toBe(1)
    }
  })
})

// ---- Bytes as librdkafka 2.15 writes them ----
// Request header v2 (rd_kafka_buf_new_flexver_request): ApiKey int16, ApiVersion int16, CorrelationId
// int32, ClientId as a classic int16-length string, then an empty tag section (one 0 byte). Body strings
// are compact (uvarint length + 1), null strings and arrays the uvarint 0, arrays compact counts, every
// struct ends with an empty tag section, and rd_kafka_buf_finalize adds the body's own empty tag section.

function uvarint(v: number): Buffer {
  const out: number[] = []
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80)
    v >>>= 7
  }
  out.push(v)
  return Buffer.from(out)
}
const compactString = (s: string | null): Buffer => (s === null ? uvarint(0) : Buffer.concat([uvarint(Buffer.byteLength(s) + 1), Buffer.from(s)]))
const compactCount = (n: number | null): Buffer => uvarint(n === null ? 0 : n + 1)
const noTags = i8(0)
const uuid = (id: string): Buffer => Buffer.from(id, 'base64url')

function librdkafkaFrame(apiKey: number, apiVersion: number, correlationId: number, clientId: string, body: Buffer): Buffer {
  const header = Buffer.concat([i16(apiKey), i16(apiVersion), i32(correlationId), i16(Buffer.byteLength(clientId)), Buffer.from(clientId), noTags])
  const payload = Buffer.concat([header, body, noTags])
  return Buffer.concat([i32(payload.length), payload])
}

/** Reads a frame as the broker will: size, header in the version the API table gives, then the body. */
function openFrame(frame: Buffer): { header: ReturnType<typeof readRequestHeader>; r: Reader; body: Buffer } {
  expect(frame.readInt32BE(0)).toBe(frame.length - 4)
  const r = new Reader(frame, 4)
  const header = readRequestHeader(r)
  const bodyStart = frame.length - r.remaining
  return { header, r, body: frame.subarray(bodyStart) }
}

describe('requests as librdkafka 2.15 sends them', () => {
  it('ShareGroupHeartbeat v1: the joining heartbeat and the leaving one', () => {
    // rd_kafka_ShareGroupHeartbeatRequest: GroupId, MemberId (its own Uuid, base64url), MemberEpoch,
    // RackId (null when client.rack is unset), SubscribedTopicNames (written from the end of its
    // subscription list, so in reverse order; null when unchanged).
    const join = librdkafkaFrame(
      76,
      1,
      11,
      'rdkafka',
      Buffer.concat([compactString('orders-workers'), compactString(MEMBER_ID), i32(0), compactString(null), compactCount(2), compactString('payments'), compactString('orders')]),
    )
    const { header, r, body } = openFrame(join)
    expect(header).toEqual({ requestApiKey: 76, requestApiVersion: 1, correlationId: 11, clientId: 'rdkafka' })
    const decoded = ShareGroupHeartbeat.decodeShareGroupHeartbeatRequest(r, 1)
    expect(r.remaining).toBe(0)
    expect(decoded).toEqual({ groupId: 'orders-workers', memberId: MEMBER_ID, memberEpoch: 0, rackId: null, subscribedTopicNames: ['payments', 'orders'] })
    const w = new Writer()
    ShareGroupHeartbeat.encodeShareGroupHeartbeatRequest(w, decoded, 1)
    expect(w.toBuffer().equals(body)).toBe(true)

    // rd_kafka_cgrp_share_consumer_leave: epoch -1, no rack, no topics.
    const leave = librdkafkaFrame(76, 1, 12, 'rdkafka', Buffer.concat([compactString('orders-workers'), compactString(MEMBER_ID), i32(-1), compactString(null), compactCount(null)]))
    const left = openFrame(leave)
    expect(ShareGroupHeartbeat.decodeShareGroupHeartbeatRequest(left.r, 1)).toEqual({ groupId: 'orders-workers', memberId: MEMBER_ID, memberEpoch: -1, rackId: null, subscribedTopicNames: null })
    expect(left.r.remaining).toBe(0)
  })

  it('ShareFetch v1: partitions added to the session, acknowledgements, forgotten partitions', () => {
    // rd_kafka_ShareFetchRequest writes GroupId, MemberId, ShareSessionEpoch, MaxWaitMs, MinBytes,
    // MaxBytes, MaxRecords, BatchSize, then the Topics array in two runs: the partitions it adds to the
    // session (no acknowledgements), then the partitions it acknowledges, one AcknowledgeType per batch.
    // A topic of both runs is written twice: the decoder must keep both entries, in order. Then
    // ForgottenTopicsData.
    const partition = (index: number, batches: Buffer[]): Buffer => Buffer.concat([i32(index), compactCount(batches.length), ...batches, noTags])
    const batch = (first: bigint, last: bigint, type: number): Buffer => Buffer.concat([i64(first), i64(last), compactCount(1), i8(type), noTags])
    const body = Buffer.concat([
      compactString('orders-workers'),
      compactString(MEMBER_ID),
      i32(5), // ShareSessionEpoch
      i32(500), // MaxWaitMs (fetch.wait.max.ms)
      i32(1), // MinBytes
      i32(52_428_800), // MaxBytes
      i32(500), // MaxRecords (max.poll.records)
      i32(500), // BatchSize
      compactCount(3),
      // toppars_to_add: orders 1 and 2 join the session
      uuid(ORDERS_ID),
      compactCount(2),
      partition(1, []),
      partition(2, []),
      noTags,
      // ack_details: orders 0 and payments 4
      uuid(ORDERS_ID),
      compactCount(1),
      partition(0, [batch(100n, 104n, ACCEPT), batch(105n, 105n, RELEASE), batch(106n, 106n, REJECT)]),
      noTags,
      uuid(PAYMENTS_ID),
      compactCount(1),
      partition(4, [batch(7n, 9n, ACCEPT)]),
      noTags,
      // toppars_to_forget
      compactCount(1),
      uuid(PAYMENTS_ID),
      compactCount(1),
      i32(5),
      noTags,
    ])
    const { header, r, body: sent } = openFrame(librdkafkaFrame(78, 1, 42, 'rdkafka', body))
    expect(header).toEqual({ requestApiKey: 78, requestApiVersion: 1, correlationId: 42, clientId: 'rdkafka' })
    const decoded = ShareFetch.decodeShareFetchRequest(r, 1)
    expect(r.remaining).toBe(0)
    expect(decoded).toEqual({
      groupId: 'orders-workers',
      memberId: MEMBER_ID,
      shareSessionEpoch: 5,
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 52_428_800,
      maxRecords: 500,
      batchSize: 500,
      topics: [
        {
          topicId: ORDERS_ID,
          partitions: [
            { partitionIndex: 1, acknowledgementBatches: [] },
            { partitionIndex: 2, acknowledgementBatches: [] },
          ],
        },
        {
          topicId: ORDERS_ID,
          partitions: [
            {
              partitionIndex: 0,
              acknowledgementBatches: [
                { firstOffset: 100n, lastOffset: 104n, acknowledgeTypes: [ACCEPT] },
                { firstOffset: 105n, lastOffset: 105n, acknowledgeTypes: [RELEASE] },
                { firstOffset: 106n, lastOffset: 106n, acknowledgeTypes: [REJECT] },
              ],
            },
          ],
        },
        { topicId: PAYMENTS_ID, partitions: [{ partitionIndex: 4, acknowledgementBatches: [{ firstOffset: 7n, lastOffset: 9n, acknowledgeTypes: [ACCEPT] }] }] },
      ],
      forgottenTopicsData: [{ topicId: PAYMENTS_ID, partitions: [5] }],
    })
    const w = new Writer()
    ShareFetch.encodeShareFetchRequest(w, decoded, 1)
    expect(w.toBuffer().equals(sent)).toBe(true)
  })

  it('responses are laid out in the order librdkafka reads them', () => {
    // rd_kafka_cgrp_handle_ShareGroupHeartbeat reads ThrottleTimeMs, ErrorCode, ErrorMessage, MemberId,
    // MemberEpoch, HeartbeatIntervalMs, then an int8 presence flag for Assignment and its topic
    // partitions (TopicId, compact int32 array, tags).
    const hb = (assignment: boolean): Buffer =>
      Buffer.concat([
        i32(0),
        i16(0),
        compactString(null),
        compactString(MEMBER_ID),
        i32(7),
        i32(5000),
        ...(assignment
          ? [i8(1), compactCount(2), uuid(ORDERS_ID), compactCount(3), i32(0), i32(1), i32(2), noTags, uuid(PAYMENTS_ID), compactCount(1), i32(4), noTags, noTags]
          : [i8(-1)]),
        noTags,
      ])
    for (const assignment of [true, false]) {
      const w = new Writer()
      ShareGroupHeartbeat.encodeShareGroupHeartbeatResponse(w, { ...heartbeatResponse, assignment: assignment ? heartbeatResponse.assignment : null }, 1)
      expect(w.toBuffer().toString('hex')).toBe(hb(assignment).toString('hex'))
    }

    // rd_kafka_share_fetch_reply_handle: ThrottleTimeMs, ErrorCode, ErrorMessage, AcquisitionLockTimeoutMs,
    // the topics (TopicId, partitions: PartitionIndex, ErrorCode, ErrorMessage, AcknowledgeErrorCode,
    // AcknowledgeErrorMessage, CurrentLeader inline with its tags, Records with a compact length,
    // AcquiredRecords of FirstOffset, LastOffset, DeliveryCount), then NodeEndpoints.
    const records = recordBatch(112, ['a', 'b', 'c'])
    const response = ShareFetch.createShareFetchResponse({
      acquisitionLockTimeoutMs: 30_000,
      responses: [
        {
          topicId: ORDERS_ID,
          partitions: [
            {
              partitionIndex: 0,
              errorCode: 0,
              errorMessage: null,
              acknowledgeErrorCode: INVALID_RECORD_STATE,
              acknowledgeErrorMessage: 'not acquired',
              currentLeader: { leaderId: 1, leaderEpoch: 3 },
              records,
              acquiredRecords: [{ firstOffset: 112n, lastOffset: 114n, deliveryCount: 1 }],
            },
          ],
        },
      ],
      nodeEndpoints: [{ nodeId: 1, host: 'broker-1', port: 9092, rack: null }],
    })
    const expected = Buffer.concat([
      i32(0),
      i16(0),
      compactString(null),
      i32(30_000),
      compactCount(1),
      uuid(ORDERS_ID),
      compactCount(1),
      i32(0),
      i16(0),
      compactString(null),
      i16(INVALID_RECORD_STATE),
      compactString('not acquired'),
      i32(1),
      i32(3),
      noTags,
      uvarint(records.length + 1),
      records,
      compactCount(1),
      i64(112n),
      i64(114n),
      i16(1),
      noTags,
      noTags,
      noTags,
      compactCount(1),
      i32(1),
      compactString('broker-1'),
      i32(9092),
      compactString(null),
      noTags,
      noTags,
    ])
    const w = new Writer()
    ShareFetch.encodeShareFetchResponse(w, response, 1)
    expect(w.toBuffer().equals(expected)).toBe(true)
  })

  it('ShareFetch v1 that only opens a session: no acknowledgements, nothing forgotten', () => {
    // A first fetch (epoch 0) with nothing to forget writes a zero-count ForgottenTopicsData.
    const body = Buffer.concat([
      compactString('g'),
      compactString(MEMBER_ID),
      i32(0),
      i32(500),
      i32(1),
      i32(0x7fffffff),
      i32(500),
      i32(500),
      compactCount(1),
      uuid(ORDERS_ID),
      compactCount(1),
      i32(0),
      compactCount(0),
      noTags,
      noTags,
      compactCount(0),
    ])
    const { r } = openFrame(librdkafkaFrame(78, 1, 1, 'rdkafka', body))
    const decoded = ShareFetch.decodeShareFetchRequest(r, 1)
    expect(r.remaining).toBe(0)
    expect(decoded.shareSessionEpoch).toBe(0)
    expect(decoded.topics).toEqual([{ topicId: ORDERS_ID, partitions: [{ partitionIndex: 0, acknowledgementBatches: [] }] }])
    expect(decoded.forgottenTopicsData).toEqual([])
  })
})
