// Topic ids over raw frames (KIP-516): Metadata v10-12 answers them and v12 looks topics up by id;
// Fetch v13+ names topics by id (UNKNOWN_TOPIC_ID for ids the broker does not know, e.g. a deleted
// topic's); a topic deleted and created again under the same name has a new id.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../src/domain/errors.js'
import * as DeleteTopics from '../../src/protocol/messages/20-delete-topics.gen.js'
import * as Fetch from '../../src/protocol/messages/01-fetch.gen.js'
import * as Metadata from '../../src/protocol/messages/03-metadata.gen.js'
import { ZERO_UUID } from '../../src/protocol/primitives/types.js'
import { decodeAllRecords, RawClient, recordsBuffer, simpleBatch, startTestBroker, type TestBroker } from '../harness/index.js'

describe('topic ids', () => {
  let tb: TestBroker
  let raw: RawClient

  beforeAll(async () => {
    tb = await startTestBroker()
    raw = await RawClient.connect(tb.host, tb.port)
    expect((await raw.createTopic('ids-a', 2)).errorCode).toBe(0)
    expect((await raw.createTopic('ids-b', 1)).errorCode).toBe(0)
    expect((await raw.produce('ids-a', 1, simpleBatch('a', 3))).errorCode).toBe(0)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  const idOf = (name: string): string => tb.broker.topics.get(name)!.topicId

  const metadata = (topics: Partial<Metadata.MetadataRequestTopic>[] | null, v: number, extra: Partial<Metadata.MetadataRequest> = {}) => {
    const req = Metadata.createMetadataRequest({ topics: topics === null ? null : topics.map((t) => Metadata.createMetadataRequestTopic(t)), allowAutoTopicCreation: false, ...extra })
    return raw.call(3, v, (w) => Metadata.encodeMetadataRequest(w, req, v), Metadata.decodeMetadataResponse)
  }

  const fetchById = (topicId: string, partition: number, v: number, extra: Partial<Fetch.FetchRequest> = {}) => {
    const req = Fetch.createFetchRequest({
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      topics: [Fetch.createFetchTopic({ topicId, partitions: [Fetch.createFetchPartition({ partition, fetchOffset: 0n, partitionMaxBytes: 1 << 20 })] })],
      ...extra,
    })
    return raw.call(1, v, (w) => Fetch.encodeFetchRequest(w, req, v), Fetch.decodeFetchResponse)
  }

  it('advertises Metadata 0-12 and Fetch up to 17', async () => {
    const keys = new Map((await raw.apiVersions()).apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]))
    expect(keys.get(3)).toEqual([0, 12])
    expect(keys.get(1)).toEqual([0, 17])
  })

  it('Metadata v10-12 answer each topic with its id; unknown names get the zero id', async () => {
    for (const v of [10, 11, 12]) {
      const res = await metadata([{ name: 'ids-a' }, { name: 'ids-none' }], v)
      expect(res.topics.map((t) => [t.name, t.errorCode, t.topicId])).toEqual([
        ['ids-a', ErrorCode.NONE, idOf('ids-a')],
        ['ids-none', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ZERO_UUID],
      ])
      expect(idOf('ids-a')).not.toBe(ZERO_UUID)
      const all = await metadata(null, v)
      for (const t of all.topics) expect(t.topicId).toBe(idOf(t.name!))
    }
    // v11 dropped the cluster's authorized operations: not answered even when v10 would.
    expect((await metadata([], 10, { includeClusterAuthorizedOperations: true })).clusterAuthorizedOperations).not.toBe(-2147483648)
    expect((await metadata([], 11)).clusterAuthorizedOperations).toBe(-2147483648)
  })

  it('Metadata v12 looks topics up by id; unknown ids get UNKNOWN_TOPIC_ID with a null name', async () => {
    const unknown = Buffer.alloc(16, 9).toString('base64url')
    const res = await metadata([{ name: null, topicId: idOf('ids-b') }, { name: null, topicId: unknown }], 12)
    const byId = new Map(res.topics.map((t) => [t.topicId, t]))
    expect(byId.get(idOf('ids-b'))).toMatchObject({ name: 'ids-b', errorCode: ErrorCode.NONE })
    expect(byId.get(idOf('ids-b'))!.partitions).toHaveLength(1)
    expect(byId.get(unknown)).toMatchObject({ name: null, errorCode: ErrorCode.UNKNOWN_TOPIC_ID, partitions: [] })
    expect(res.topics).toHaveLength(2)
    // As Kafka: once ids are given, entries that only name a topic are not looked up.
    const mixed = await metadata([{ name: 'ids-a' }, { name: null, topicId: idOf('ids-b') }], 12)
    expect(mixed.topics.map((t) => t.name)).toEqual(['ids-b'])
  })

  it('Metadata v10-11 refuse topic ids and null names (INVALID_REQUEST for every topic), as Kafka', async () => {
    for (const v of [10, 11]) {
      const withId = await metadata([{ name: 'ids-a', topicId: idOf('ids-a') }, { name: 'ids-b' }], v)
      expect(withId.topics.map((t) => [t.name, t.errorCode, t.topicId])).toEqual([
        ['ids-a', ErrorCode.INVALID_REQUEST, idOf('ids-a')],
        ['ids-b', ErrorCode.INVALID_REQUEST, ZERO_UUID],
      ])
      const nullName = await metadata([{ name: null }], v)
      expect(nullName.topics.map((t) => [t.name, t.errorCode])).toEqual([['', ErrorCode.INVALID_REQUEST]])
      expect(nullName.brokers).toEqual([])
    }
  })

  it('Fetch v13-17 name topics by id; an unknown id is UNKNOWN_TOPIC_ID', async () => {
    for (const v of [13, 14, 15, 16, 17]) {
      const res = await fetchById(idOf('ids-a'), 1, v)
      expect(res.errorCode).toBe(0)
      expect(res.responses.map((t) => t.topicId)).toEqual([idOf('ids-a')])
      const p = res.responses[0]!.partitions[0]!
      expect(p).toMatchObject({ partitionIndex: 1, errorCode: 0, highWatermark: 3n })
      expect(decodeAllRecords(recordsBuffer(p)).map((r) => r.value!.toString())).toEqual(['a-0', 'a-1', 'a-2'])
      const unknown = await fetchById(Buffer.alloc(16, 3).toString('base64url'), 0, v)
      expect(unknown.responses[0]!.partitions[0]!).toMatchObject({ errorCode: ErrorCode.UNKNOWN_TOPIC_ID, highWatermark: -1n })
      // A known id with a partition it does not have.
      const noPartition = await fetchById(idOf('ids-a'), 5, v)
      expect(noPartition.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    }
    // v15 carries the replica id in ReplicaState; a consumer's is -1.
    const v15 = await fetchById(idOf('ids-a'), 1, 15, { replicaState: Fetch.createReplicaState({ replicaId: -1, replicaEpoch: -1n }) })
    expect(v15.responses[0]!.partitions[0]!.errorCode).toBe(0)
  })

  it('a topic deleted and created again has a new id; the old id is UNKNOWN_TOPIC_ID to Fetch and Metadata', async () => {
    expect((await raw.createTopic('ids-again', 3)).errorCode).toBe(0)
    const oldId = idOf('ids-again')
    const del = DeleteTopics.createDeleteTopicsRequest({ timeoutMs: 5000, topics: [DeleteTopics.createDeleteTopicState({ topicId: oldId })] })
    const deleted = await raw.call(20, 6, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, del, 6), DeleteTopics.decodeDeleteTopicsResponse)
    expect(deleted.responses.map((r) => [r.name, r.topicId, r.errorCode])).toEqual([['ids-again', oldId, ErrorCode.NONE]])
    expect((await raw.createTopic('ids-again', 1)).errorCode).toBe(0)
    const newId = idOf('ids-again')
    expect(newId).not.toBe(oldId)
    expect((await metadata([{ name: 'ids-again' }], 12)).topics[0]).toMatchObject({ topicId: newId, errorCode: 0 })
    expect((await metadata([{ name: null, topicId: oldId }], 12)).topics[0]).toMatchObject({ errorCode: ErrorCode.UNKNOWN_TOPIC_ID })
    expect((await fetchById(oldId, 0, 13)).responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_ID)
    expect((await fetchById(newId, 0, 13)).responses[0]!.partitions[0]!.errorCode).toBe(0)
  })
})
