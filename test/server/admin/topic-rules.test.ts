// Kafka's rules about which topics may exist and what may be done to the internal ones, over raw frames:
// names that differ only by '.' and '_' collide (their metrics names would clash), and the internal
// topics (__consumer_offsets, __transaction_state) take no deletion, produce or record deletion from
// clients.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../../src/domain/errors.js'
import * as CreateTopics from '../../../src/protocol/messages/19-create-topics.gen.js'
import * as DeleteRecords from '../../../src/protocol/messages/21-delete-records.gen.js'
import * as DeleteTopics from '../../../src/protocol/messages/20-delete-topics.gen.js'
import * as FindCoordinator from '../../../src/protocol/messages/10-find-coordinator.gen.js'
import { RawClient, simpleBatch, startTestBroker, type TestBroker } from '../../harness/index.js'

describe('topic rules', () => {
  let tb: TestBroker
  let raw: RawClient

  beforeAll(async () => {
    tb = await startTestBroker()
    raw = await RawClient.connect(tb.host, tb.port)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  const createTopics = (names: string[], validateOnly = false, v = 7) => {
    const req = CreateTopics.createCreateTopicsRequest({
      timeoutMs: 5000,
      validateOnly,
      topics: names.map((name) => CreateTopics.createCreatableTopic({ name, numPartitions: 1, replicationFactor: 1 })),
    })
    return raw.call(19, v, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, v), CreateTopics.decodeCreateTopicsResponse)
  }
  const deleteTopics = (names: string[], v = 6) => {
    const req = DeleteTopics.createDeleteTopicsRequest({
      timeoutMs: 5000,
      topicNames: v < 6 ? names : [],
      topics: v >= 6 ? names.map((name) => DeleteTopics.createDeleteTopicState({ name })) : [],
    })
    return raw.call(20, v, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, req, v), DeleteTopics.decodeDeleteTopicsResponse)
  }

  it("refuses a topic whose name differs from an existing one only by '.' and '_'", async () => {
    expect((await createTopics(['rules_a.b'])).topics[0]!.errorCode).toBe(ErrorCode.NONE)
    const res = await createTopics(['rules.a_b', 'rules_a_b', 'rules.a.b', 'rules_a.b'])
    expect(res.topics.map((t) => [t.name, t.errorCode, t.errorMessage])).toEqual([
      ['rules.a_b', ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'rules.a_b' collides with existing topic: rules_a.b"],
      ['rules_a_b', ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'rules_a_b' collides with existing topic: rules_a.b"],
      ['rules.a.b', ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'rules.a.b' collides with existing topic: rules_a.b"],
      // The same name is "already exists", not a collision.
      ['rules_a.b', ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'rules_a.b' already exists."],
    ])
    // validateOnly checks it too.
    expect((await createTopics(['rules.a.b'], true)).topics[0]!.errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION)
    expect(tb.broker.topics.get('rules.a_b')).toBeUndefined()
    expect(tb.broker.topics.get('rules.a.b')).toBeUndefined()
  })

  it('refuses the colliding name in Metadata auto-creation too', async () => {
    expect((await createTopics(['auto.created'])).topics[0]!.errorCode).toBe(ErrorCode.NONE)
    const meta = await raw.metadata(['auto_created'], true)
    expect(meta.topics.map((t) => [t.name, t.errorCode])).toEqual([['auto_created', ErrorCode.INVALID_TOPIC_EXCEPTION]])
    expect(tb.broker.topics.get('auto_created')).toBeUndefined()
    // A produce to it does not create it either.
    expect((await raw.produce('auto_created', 0, simpleBatch('x', 1))).errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  })

  it('accepts the other spelling once the first topic is deleted', async () => {
    expect((await createTopics(['gone.soon'])).topics[0]!.errorCode).toBe(ErrorCode.NONE)
    expect((await deleteTopics(['gone.soon'])).responses[0]!.errorCode).toBe(ErrorCode.NONE)
    expect((await createTopics(['gone_soon'])).topics[0]!.errorCode).toBe(ErrorCode.NONE)
  })

  it('internal topics cannot be deleted, produced to or have records deleted by clients', async () => {
    // FindCoordinator creates __consumer_offsets.
    const fc = FindCoordinator.createFindCoordinatorRequest({ keyType: 0, coordinatorKeys: ['rules-group'] })
    const found = await raw.call(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, fc, 4), FindCoordinator.decodeFindCoordinatorResponse)
    expect(found.coordinators[0]!.errorCode).toBe(ErrorCode.NONE)
    const partitions = tb.broker.topics.get('__consumer_offsets')!.partitions

    for (const v of [1, 5, 6]) {
      const res = await deleteTopics(['__consumer_offsets'], v)
      expect(res.responses[0]!.errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION)
      if (v >= 5) expect(res.responses[0]!.errorMessage).toBe('Cannot delete internal topic __consumer_offsets')
    }
    expect(tb.broker.topics.get('__consumer_offsets')?.partitions).toBe(partitions)

    const produced = await raw.produce('__consumer_offsets', 0, simpleBatch('garbage', 1), 1, 7)
    expect(produced.errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION)

    const P = DeleteRecords.createDeleteRecordsPartition
    const req = DeleteRecords.createDeleteRecordsRequest({ timeoutMs: 5000, topics: [DeleteRecords.createDeleteRecordsTopic({ name: '__consumer_offsets', partitions: [P({ partitionIndex: 0, offset: 0n })] })] })
    const deleted = await raw.call(21, 2, (w) => DeleteRecords.encodeDeleteRecordsRequest(w, req, 2), DeleteRecords.decodeDeleteRecordsResponse)
    expect(deleted.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INVALID_TOPIC_EXCEPTION)

    // The group coordinator still works.
    const again = await raw.call(10, 4, (w) => FindCoordinator.encodeFindCoordinatorRequest(w, fc, 4), FindCoordinator.decodeFindCoordinatorResponse)
    expect(again.coordinators[0]!.errorCode).toBe(ErrorCode.NONE)
  })
})
