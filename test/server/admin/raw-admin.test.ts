// The admin APIs over raw protocol frames, for what the client libraries do not expose: duplicate entries,
// topic ids, BROKER_LOGGER, endpoint types, unknown ops, disabled deletion, and exact versions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../../src/domain/errors.js'
import * as CreatePartitions from '../../../src/protocol/messages/37-create-partitions.gen.js'
import * as CreateTopics from '../../../src/protocol/messages/19-create-topics.gen.js'
import * as DeleteRecords from '../../../src/protocol/messages/21-delete-records.gen.js'
import * as DeleteTopics from '../../../src/protocol/messages/20-delete-topics.gen.js'
import * as DescribeCluster from '../../../src/protocol/messages/60-describe-cluster.gen.js'
import * as DescribeConfigs from '../../../src/protocol/messages/32-describe-configs.gen.js'
import * as DescribeLogDirs from '../../../src/protocol/messages/35-describe-log-dirs.gen.js'
import * as AlterConfigs from '../../../src/protocol/messages/33-alter-configs.gen.js'
import * as IncrementalAlterConfigs from '../../../src/protocol/messages/44-incremental-alter-configs.gen.js'
import * as ListOffsets from '../../../src/protocol/messages/02-list-offsets.gen.js'
import { ZERO_UUID } from '../../../src/protocol/primitives/types.js'
import { decodeAllRecords, RawClient, simpleBatch, startTestBroker, type TestBroker } from '../../harness/index.js'

const TOPIC = 2
const BROKER = 4
const BROKER_LOGGER = 8

function createTopicsRequest(topics: Partial<CreateTopics.CreatableTopic>[], validateOnly = false): CreateTopics.CreateTopicsRequest {
  return CreateTopics.createCreateTopicsRequest({
    timeoutMs: 5000,
    validateOnly,
    topics: topics.map((t) => CreateTopics.createCreatableTopic({ numPartitions: 1, replicationFactor: 1, ...t })),
  })
}

describe('admin APIs over raw frames', () => {
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

  const createTopics = (req: CreateTopics.CreateTopicsRequest, v: number) =>
    raw.call(19, v, (w) => CreateTopics.encodeCreateTopicsRequest(w, req, v), CreateTopics.decodeCreateTopicsResponse)
  const deleteTopics = (req: Partial<DeleteTopics.DeleteTopicsRequest>, v: number) =>
    raw.call(20, v, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, DeleteTopics.createDeleteTopicsRequest({ timeoutMs: 5000, ...req }), v), DeleteTopics.decodeDeleteTopicsResponse)
  const deleteRecords = (topics: DeleteRecords.DeleteRecordsTopic[], v: number) =>
    raw.call(21, v, (w) => DeleteRecords.encodeDeleteRecordsRequest(w, DeleteRecords.createDeleteRecordsRequest({ topics, timeoutMs: 5000 }), v), DeleteRecords.decodeDeleteRecordsResponse)
  const describeConfigs = (req: Partial<DescribeConfigs.DescribeConfigsRequest>, v: number) =>
    raw.call(32, v, (w) => DescribeConfigs.encodeDescribeConfigsRequest(w, DescribeConfigs.createDescribeConfigsRequest(req), v), DescribeConfigs.decodeDescribeConfigsResponse)
  const alterConfigs = (req: Partial<AlterConfigs.AlterConfigsRequest>, v: number) =>
    raw.call(33, v, (w) => AlterConfigs.encodeAlterConfigsRequest(w, AlterConfigs.createAlterConfigsRequest(req), v), AlterConfigs.decodeAlterConfigsResponse)
  const incrementalAlterConfigs = (req: Partial<IncrementalAlterConfigs.IncrementalAlterConfigsRequest>, v: number) =>
    raw.call(44, v, (w) => IncrementalAlterConfigs.encodeIncrementalAlterConfigsRequest(w, IncrementalAlterConfigs.createIncrementalAlterConfigsRequest(req), v), IncrementalAlterConfigs.decodeIncrementalAlterConfigsResponse)
  const createPartitions = (req: Partial<CreatePartitions.CreatePartitionsRequest>, v: number) =>
    raw.call(37, v, (w) => CreatePartitions.encodeCreatePartitionsRequest(w, CreatePartitions.createCreatePartitionsRequest({ timeoutMs: 5000, ...req }), v), CreatePartitions.decodeCreatePartitionsResponse)
  const describeCluster = (req: Partial<DescribeCluster.DescribeClusterRequest>, v: number) =>
    raw.call(60, v, (w) => DescribeCluster.encodeDescribeClusterRequest(w, DescribeCluster.createDescribeClusterRequest(req), v), DescribeCluster.decodeDescribeClusterResponse)
  const describeLogDirs = (topics: DescribeLogDirs.DescribableLogDirTopic[] | null, v: number) =>
    raw.call(35, v, (w) => DescribeLogDirs.encodeDescribeLogDirsRequest(w, DescribeLogDirs.createDescribeLogDirsRequest({ topics }), v), DescribeLogDirs.decodeDescribeLogDirsResponse)

  it('advertises the served version ranges', async () => {
    const res = await raw.apiVersions()
    const ranges = new Map(res.apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]))
    expect(ranges.get(2)).toEqual([0, 5])
    expect(ranges.get(19)).toEqual([0, 7])
    expect(ranges.get(20)).toEqual([1, 6])
    expect(ranges.get(21)).toEqual([1, 2])
    expect(ranges.get(32)).toEqual([1, 4])
    expect(ranges.get(33)).toEqual([0, 2])
    expect(ranges.get(35)).toEqual([1, 4])
    expect(ranges.get(37)).toEqual([0, 1])
    expect(ranges.get(44)).toEqual([0, 1])
    expect(ranges.get(60)).toEqual([0, 1])
  })

  it('CreateTopics v7: duplicates get one INVALID_REQUEST, others are created with id, counts and configs', async () => {
    const res = await createTopics(createTopicsRequest([
      { name: 'raw-dup' }, { name: 'raw-ok', numPartitions: 2, configs: [CreateTopics.createCreatableTopicConfig({ name: 'retention.ms', value: '5000' })] }, { name: 'raw-dup' },
    ]), 7)
    expect(res.topics.map((t) => [t.name, t.errorCode])).toEqual([['raw-dup', ErrorCode.INVALID_REQUEST], ['raw-ok', ErrorCode.NONE]])
    expect(res.topics[0]!.errorMessage).toBe('Duplicate topic name.')
    expect(tb.broker.topics.get('raw-dup')).toBeUndefined()
    const ok = res.topics[1]!
    expect(ok.topicId).toBe(tb.broker.topics.get('raw-ok')!.topicId)
    expect(ok.errorMessage).toBeNull()
    expect([ok.numPartitions, ok.replicationFactor]).toEqual([2, 1])
    const retention = ok.configs!.find((c) => c.name === 'retention.ms')!
    expect(retention).toMatchObject({ value: '5000', readOnly: false, configSource: 1, isSensitive: false })

    const again = await createTopics(createTopicsRequest([{ name: 'raw-ok' }]), 7)
    expect(again.topics[0]).toMatchObject({ errorCode: ErrorCode.TOPIC_ALREADY_EXISTS, errorMessage: "Topic 'raw-ok' already exists.", numPartitions: -1, topicId: ZERO_UUID })
  })

  it('CreateTopics v2 (the lowest Kafka 4 serves; v0-1 in legacy-formats.test.ts): created, answered with throttle time and error messages', async () => {
    const res = await createTopics(createTopicsRequest([{ name: 'raw-v2', numPartitions: 3 }, { name: 'raw-v2-bad', numPartitions: -5 }]), 2)
    expect(res.throttleTimeMs).toBe(0)
    expect(res.topics.map((t) => [t.name, t.errorCode])).toEqual([['raw-v2', ErrorCode.NONE], ['raw-v2-bad', ErrorCode.INVALID_PARTITIONS]])
    expect(res.topics[0]!.errorMessage).toBeNull()
    expect(res.topics[1]!.errorMessage).not.toBeNull()
    expect(tb.broker.topics.get('raw-v2')!.partitions).toBe(3)
    const dry = await createTopics(createTopicsRequest([{ name: 'raw-v2-dry', numPartitions: 1 }], true), 2)
    expect(dry.topics[0]!.errorCode).toBe(ErrorCode.NONE)
    expect(tb.broker.topics.get('raw-v2-dry')).toBeUndefined()
    // The connection is still served.
    expect((await raw.apiVersions()).errorCode).toBe(ErrorCode.NONE)
  })

  it('CreateTopics: validateOnly, -1 defaults, error messages (v3, v4, v5)', async () => {
    const dry = await createTopics(createTopicsRequest([{ name: 'raw-dry', numPartitions: 4 }], true), 5)
    expect(dry.topics[0]).toMatchObject({ errorCode: 0, numPartitions: 4, replicationFactor: 1 })
    expect(dry.topics[0]!.configs!.length).toBeGreaterThan(20)
    expect(tb.broker.topics.get('raw-dry')).toBeUndefined()

    const defaults = await createTopics(createTopicsRequest([{ name: 'raw-defaults', numPartitions: -1, replicationFactor: -1 }]), 4)
    expect(defaults.topics[0]!.errorCode).toBe(0)
    expect(tb.broker.topics.get('raw-defaults')!.partitions).toBe(1)

    const bad = await createTopics(createTopicsRequest([
      { name: 'raw-bad-value', configs: [CreateTopics.createCreatableTopicConfig({ name: 'segment.bytes', value: '10' })] },
      { name: 'raw-null-value', configs: [CreateTopics.createCreatableTopicConfig({ name: 'segment.bytes', value: null })] },
      { name: 'raw..', numPartitions: 1 },
      { name: 'raw-neg', numPartitions: -5 },
      { name: 'raw-rf0', replicationFactor: 0 },
    ]), 3)
    expect(bad.topics.map((t) => t.errorCode)).toEqual([
      ErrorCode.INVALID_CONFIG, ErrorCode.INVALID_CONFIG, ErrorCode.NONE, ErrorCode.INVALID_PARTITIONS, ErrorCode.INVALID_REPLICATION_FACTOR,
    ])
    expect(bad.topics[0]!.errorMessage).toMatch(/segment\.bytes.*at least 61/)
    expect(bad.topics[1]!.errorMessage).toMatch(/Null value/)
    // 'raw..' is a legal Kafka name (only '.' and '..' alone are not).
    expect(tb.broker.topics.get('raw..')).toBeDefined()
    const both = await createTopics(createTopicsRequest([{ name: 'raw-both', numPartitions: 2, assignments: [CreateTopics.createCreatableReplicaAssignment({ partitionIndex: 0, brokerIds: [0] })] }]), 7)
    expect(both.topics[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST)
    const gap = await createTopics(createTopicsRequest([{ name: 'raw-gap', numPartitions: -1, replicationFactor: -1, assignments: [CreateTopics.createCreatableReplicaAssignment({ partitionIndex: 1, brokerIds: [0] })] }]), 7)
    expect(gap.topics[0]!.errorCode).toBe(ErrorCode.INVALID_REPLICA_ASSIGNMENT)
    const manual = await createTopics(createTopicsRequest([{ name: 'raw-manual', numPartitions: -1, replicationFactor: -1, assignments: [0, 1].map((partitionIndex) => CreateTopics.createCreatableReplicaAssignment({ partitionIndex, brokerIds: [0] })) }]), 7)
    expect(manual.topics[0]).toMatchObject({ errorCode: 0, numPartitions: 2, replicationFactor: 1 })
    const invalid = await createTopics(createTopicsRequest([{ name: 'has space' }, { name: '..' }]), 3)
    expect(invalid.topics.map((t) => t.errorCode)).toEqual([ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.INVALID_TOPIC_EXCEPTION])
  })

  it('DeleteTopics v6 by id and name; unknown id; both set; duplicates; v1 by name', async () => {
    await createTopics(createTopicsRequest([{ name: 'raw-del-a' }, { name: 'raw-del-b' }, { name: 'raw-del-c' }]), 7)
    const idA = tb.broker.topics.get('raw-del-a')!.topicId
    const idC = tb.broker.topics.get('raw-del-c')!.topicId
    const unknownId = Buffer.alloc(16, 7).toString('base64url')
    const res = await deleteTopics({ topics: [
      DeleteTopics.createDeleteTopicState({ topicId: idA }),
      DeleteTopics.createDeleteTopicState({ topicId: unknownId }),
      DeleteTopics.createDeleteTopicState({ name: 'raw-del-c', topicId: idC }),
      DeleteTopics.createDeleteTopicState({ name: 'raw-del-b' }),
      DeleteTopics.createDeleteTopicState({ name: 'raw-del-b' }),
    ] }, 6)
    expect(res.responses.map((r) => [r.name, r.topicId, r.errorCode])).toEqual([
      ['raw-del-a', idA, ErrorCode.NONE],
      [null, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_ID],
      ['raw-del-c', ZERO_UUID, ErrorCode.INVALID_REQUEST],
      ['raw-del-b', ZERO_UUID, ErrorCode.INVALID_REQUEST],
    ])
    expect(tb.broker.topics.get('raw-del-a')).toBeUndefined()
    expect(tb.broker.topics.get('raw-del-b')).toBeDefined()
    expect(tb.broker.topics.get('raw-del-c')).toBeDefined()
    const v1 = await deleteTopics({ topicNames: ['raw-del-b', 'raw-del-c', 'raw-del-a'] }, 1)
    expect(v1.responses.map((r) => [r.name, r.errorCode])).toEqual([['raw-del-b', 0], ['raw-del-c', 0], ['raw-del-a', ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]])
    expect((await raw.metadata(['raw-del-b'])).topics[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  })

  it('DeleteRecords: unknown partitions, duplicates, out of range; the log then starts at the new offset', async () => {
    await createTopics(createTopicsRequest([{ name: 'raw-records', numPartitions: 2 }]), 7)
    expect((await raw.produce('raw-records', 0, simpleBatch('a', 5))).errorCode).toBe(0)
    expect((await raw.produce('raw-records', 0, simpleBatch('b', 5))).errorCode).toBe(0)
    const P = DeleteRecords.createDeleteRecordsPartition
    const res = await deleteRecords([
      DeleteRecords.createDeleteRecordsTopic({ name: 'raw-records', partitions: [P({ partitionIndex: 0, offset: 7n }), P({ partitionIndex: 2, offset: 0n }), P({ partitionIndex: 0, offset: 8n }), P({ partitionIndex: 1, offset: 1n })] }),
      DeleteRecords.createDeleteRecordsTopic({ name: 'raw-none', partitions: [P({ partitionIndex: 0, offset: 0n })] }),
    ], 1)
    expect(res.topics.map((t) => t.partitions.map((p) => [p.partitionIndex, p.errorCode, p.lowWatermark]))).toEqual([
      [[0, 0, 7n], [2, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n], [0, ErrorCode.INVALID_REQUEST, -1n], [1, ErrorCode.OFFSET_OUT_OF_RANGE, -1n]],
      [[0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1n]],
    ])
    const negative = await deleteRecords([DeleteRecords.createDeleteRecordsTopic({ name: 'raw-records', partitions: [P({ partitionIndex: 0, offset: -2n })] })], 2)
    expect(negative.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
    // A lower offset does not move the start back.
    const lower = await deleteRecords([DeleteRecords.createDeleteRecordsTopic({ name: 'raw-records', partitions: [P({ partitionIndex: 0, offset: 3n })] })], 2)
    expect(lower.topics[0]!.partitions[0]).toMatchObject({ errorCode: 0, lowWatermark: 7n })

    expect((await raw.listOffset('raw-records', 0, -2n, 5)).offset).toBe(7n)
    expect((await raw.fetch('raw-records', 0, 2)).errorCode).toBe(ErrorCode.OFFSET_OUT_OF_RANGE)
    const fetched = await raw.fetch('raw-records', 0, 7)
    expect(fetched.errorCode).toBe(0)
    expect(fetched.logStartOffset).toBe(7n)
    const values = decodeAllRecords(fetched.records as Buffer).filter((r) => r.offset >= 7n).map((r) => r.value?.toString())
    expect(values).toEqual(['b-2', 'b-3', 'b-4'])
  })

  it('ListOffsets v0 (what Burrow sends): old-style offset lists of at most MaxNumOffsets, as Kafka 3.x answers', async () => {
    // raw-records (above): log start 7, high watermark 10.
    const P = ListOffsets.createListOffsetsPartition
    const v0 = (partitions: ListOffsets.ListOffsetsPartition[], name = 'raw-records') =>
      raw.call(2, 0, (w) => ListOffsets.encodeListOffsetsRequest(w, ListOffsets.createListOffsetsRequest({ replicaId: -1, topics: [ListOffsets.createListOffsetsTopic({ name, partitions })] }), 0), ListOffsets.decodeListOffsetsResponse)
    const res = await v0([P({ partitionIndex: 0, timestamp: -1n, maxNumOffsets: 1 }), P({ partitionIndex: 1, timestamp: -2n, maxNumOffsets: 5 }), P({ partitionIndex: 3, timestamp: -1n, maxNumOffsets: 1 })])
    expect(res.topics[0]!.partitions.map((p) => [p.partitionIndex, p.errorCode, p.oldStyleOffsets])).toEqual([
      [0, 0, [10n]],
      [1, 0, [0n]],
      [3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, []],
    ])
    const earliest = await v0([P({ partitionIndex: 0, timestamp: -2n, maxNumOffsets: 1 })])
    expect(earliest.topics[0]!.partitions[0]!.oldStyleOffsets).toEqual([7n])
    // MaxNumOffsets 0 lists nothing; a timestamp after every record finds no offset.
    const none = await v0([P({ partitionIndex: 0, timestamp: -1n, maxNumOffsets: 0 }), P({ partitionIndex: 1, timestamp: BigInt(Date.now() + 3_600_000), maxNumOffsets: 1 })])
    expect(none.topics[0]!.partitions.map((p) => [p.errorCode, p.oldStyleOffsets])).toEqual([[0, []], [0, []]])
  })

  it('DescribeConfigs: resource name rules, BROKER_LOGGER, unsupported types, keys, synonyms and docs by version', async () => {
    const res = await describeConfigs({ resources: [
      DescribeConfigs.createDescribeConfigsResource({ resourceType: BROKER, resourceName: '7', configurationKeys: null }),
      DescribeConfigs.createDescribeConfigsResource({ resourceType: BROKER, resourceName: 'zero', configurationKeys: null }),
      DescribeConfigs.createDescribeConfigsResource({ resourceType: BROKER_LOGGER, resourceName: '0', configurationKeys: null }),
      DescribeConfigs.createDescribeConfigsResource({ resourceType: BROKER_LOGGER, resourceName: '', configurationKeys: null }),
      DescribeConfigs.createDescribeConfigsResource({ resourceType: 16, resourceName: 'metrics', configurationKeys: null }),
      DescribeConfigs.createDescribeConfigsResource({ resourceType: TOPIC, resourceName: 'not valid!', configurationKeys: null }),
      DescribeConfigs.createDescribeConfigsResource({ resourceType: TOPIC, resourceName: 'raw-ok', configurationKeys: ['retention.ms', 'no.such.key'] }),
    ], includeSynonyms: false }, 1)
    expect(res.results.map((r) => r.errorCode)).toEqual([
      ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, ErrorCode.NONE, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.NONE,
    ])
    expect(res.results[0]!.errorMessage).toBe('Unexpected broker id, expected 0 or empty string, but received 7')
    expect(res.results[2]!.configs).toEqual([expect.objectContaining({ name: 'root', value: tb.broker.log.level.toUpperCase(), configSource: 6 })])
    const topic = res.results[6]!
    expect(topic.configs.map((c) => [c.name, c.value, c.configSource, c.synonyms.length])).toEqual([['retention.ms', '5000', 1, 0]])

    const v3 = await describeConfigs({ resources: [DescribeConfigs.createDescribeConfigsResource({ resourceType: TOPIC, resourceName: 'raw-ok', configurationKeys: ['retention.ms'] })], includeSynonyms: true, includeDocumentation: false }, 3)
    const entry = v3.results[0]!.configs[0]!
    expect(entry).toMatchObject({ configType: 5, documentation: null })
    expect(entry.synonyms.map((s) => [s.name, s.source])).toEqual([['retention.ms', 1]])
  })

  it('AlterConfigs / IncrementalAlterConfigs: request-level errors with Kafka messages', async () => {
    const R = AlterConfigs.createAlterConfigsResource
    const C = AlterConfigs.createAlterableConfig
    const res = await alterConfigs({ resources: [
      R({ resourceType: TOPIC, resourceName: 'raw-ok', configs: [C({ name: 'retention.ms', value: '1' }), C({ name: 'retention.ms', value: '2' })] }),
      R({ resourceType: BROKER, resourceName: '0', configs: [C({ name: 'num.partitions', value: '3' }), C({ name: 'listeners', value: 'PLAINTEXT://127.0.0.1:1' })] }),
      R({ resourceType: BROKER_LOGGER, resourceName: '0', configs: [] }),
      R({ resourceType: BROKER, resourceName: '', configs: [C({ name: 'message.max.bytes', value: '-5' })] }),
    ] }, 0)
    expect(res.responses.map((r) => [r.resourceType, r.errorCode, r.errorMessage])).toEqual([
      [TOPIC, ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys'],
      [BROKER, ErrorCode.INVALID_REQUEST, 'Cannot update these configs dynamically: Set(num.partitions)'],
      [BROKER_LOGGER, ErrorCode.INVALID_REQUEST, 'Unsupported resource type: 8'],
      [BROKER, ErrorCode.INVALID_REQUEST, expect.stringMatching(/message\.max\.bytes.*at least 0/)],
    ])
    expect({ perBroker: tb.broker.configs.dynamicBrokerConfigs('perBroker'), clusterDefault: tb.broker.configs.dynamicBrokerConfigs('clusterDefault') }).toEqual({ perBroker: {}, clusterDefault: {} })
    expect(tb.broker.topics.get('raw-ok')!.configs).toEqual({ 'retention.ms': '5000' })

    const dry = await alterConfigs({ validateOnly: true, resources: [R({ resourceType: BROKER, resourceName: '0', configs: [C({ name: 'log.retention.ms', value: '1000' })] })] }, 1)
    expect(dry.responses[0]!.errorCode).toBe(0)
    expect({ perBroker: tb.broker.configs.dynamicBrokerConfigs('perBroker'), clusterDefault: tb.broker.configs.dynamicBrokerConfigs('clusterDefault') }).toEqual({ perBroker: {}, clusterDefault: {} })
    expect(tb.broker.config.logRetentionMs).toBe(7 * 24 * 3600 * 1000)

    const dupResources = await alterConfigs({ resources: [R({ resourceType: TOPIC, resourceName: 'raw-ok' }), R({ resourceType: TOPIC, resourceName: 'raw-ok' })] }, 2)
    expect(dupResources.responses.map((r) => r.errorCode)).toEqual([ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST])

    const IR = IncrementalAlterConfigs.createAlterConfigsResource
    const IC = IncrementalAlterConfigs.createAlterableConfig
    const inc = await incrementalAlterConfigs({ resources: [
      IR({ resourceType: TOPIC, resourceName: 'raw-ok', configs: [IC({ name: 'retention.ms', configOperation: 0, value: null })] }),
      IR({ resourceType: TOPIC, resourceName: 'raw-defaults', configs: [IC({ name: 'retention.ms', configOperation: 9, value: '1' })] }),
      IR({ resourceType: TOPIC, resourceName: 'raw-missing', configs: [IC({ name: 'retention.ms', configOperation: 0, value: '1' })] }),
      IR({ resourceType: TOPIC, resourceName: '..', configs: [IC({ name: 'segment.bytes', configOperation: 2, value: '1' })] }),
    ] }, 0)
    expect(inc.responses.map((r) => [r.errorCode, r.errorMessage])).toEqual([
      [ErrorCode.INVALID_REQUEST, 'Null value not supported for : retention.ms'],
      [ErrorCode.INVALID_REQUEST, 'Unknown alter config operation type 9 for key retention.ms'],
      [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'Topic raw-missing does not exist.'],
      [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'Topic .. does not exist.'],
    ])
    // DELETE needs no value, and removing what is not set is fine.
    const del = await incrementalAlterConfigs({ resources: [IR({ resourceType: TOPIC, resourceName: 'raw-ok', configs: [IC({ name: 'retention.ms', configOperation: 1, value: null }), IC({ name: 'segment.ms', configOperation: 1, value: null })] })] }, 1)
    expect(del.responses[0]!.errorCode).toBe(0)
    expect(tb.broker.topics.get('raw-ok')!.configs).toEqual({})
  })

  it('a dynamic broker change reaches existing and new partitions (message.max.bytes)', async () => {
    const big = simpleBatch('x'.repeat(400), 4)
    expect(big.length).toBeGreaterThan(1000)
    const R = AlterConfigs.createAlterConfigsResource
    const C = AlterConfigs.createAlterableConfig
    const res = await alterConfigs({ resources: [R({ resourceType: BROKER, resourceName: '', configs: [C({ name: 'message.max.bytes', value: '1000' })] })] }, 1)
    expect(res.responses[0]!.errorCode).toBe(0)
    await createTopics(createTopicsRequest([{ name: 'raw-after-change' }]), 7)
    expect((await raw.produce('raw-after-change', 0, big)).errorCode).toBe(ErrorCode.MESSAGE_TOO_LARGE)
    expect((await raw.produce('raw-records', 1, big)).errorCode).toBe(ErrorCode.MESSAGE_TOO_LARGE)
    // A topic override still wins over the broker default.
    const IR = IncrementalAlterConfigs.createAlterConfigsResource
    const IC = IncrementalAlterConfigs.createAlterableConfig
    await incrementalAlterConfigs({ resources: [IR({ resourceType: TOPIC, resourceName: 'raw-after-change', configs: [IC({ name: 'max.message.bytes', configOperation: 0, value: '100000' })] })] }, 1)
    expect((await raw.produce('raw-after-change', 0, big)).errorCode).toBe(0)
    await alterConfigs({ resources: [R({ resourceType: BROKER, resourceName: '', configs: [] })] }, 1)
    expect((await raw.produce('raw-records', 1, big)).errorCode).toBe(0)
  })

  it('CreatePartitions v0: duplicates, validateOnly, assignments', async () => {
    const T = CreatePartitions.createCreatePartitionsTopic
    const A = CreatePartitions.createCreatePartitionsAssignment
    const res = await createPartitions({ topics: [
      T({ name: 'raw-defaults', count: 3, assignments: null }), T({ name: 'raw-ok', count: 3, assignments: null }), T({ name: 'raw-defaults', count: 4, assignments: null }),
      T({ name: 'raw..', count: 3, assignments: [A({ brokerIds: [0] }), A({ brokerIds: [0, 0] })] }),
    ] }, 0)
    expect(res.results.map((r) => [r.name, r.errorCode])).toEqual([
      ['raw-defaults', ErrorCode.INVALID_REQUEST], ['raw-ok', 0], ['raw..', ErrorCode.INVALID_REPLICA_ASSIGNMENT],
    ])
    expect(res.results[0]!.errorMessage).toBe('Duplicate topic in request.')
    expect(tb.broker.topics.get('raw-ok')!.partitions).toBe(3)
    const dry = await createPartitions({ validateOnly: true, topics: [T({ name: 'raw-ok', count: 6, assignments: null })] }, 1)
    expect(dry.results[0]!.errorCode).toBe(0)
    expect(tb.broker.topics.get('raw-ok')!.partitions).toBe(3)
    const meta = await raw.metadata(['raw-ok'])
    expect(meta.topics[0]!.partitions).toHaveLength(3)
  })

  it('DescribeCluster v0/v1: this broker, authorized operations on request, endpoint types', async () => {
    const v0 = await describeCluster({ includeClusterAuthorizedOperations: false }, 0)
    expect(v0).toMatchObject({ errorCode: 0, clusterId: tb.broker.clusterId, controllerId: 0, clusterAuthorizedOperations: -2147483648 })
    expect(v0.brokers).toEqual([{ brokerId: 0, host: tb.host, port: tb.port, rack: null }])
    const withOps = await describeCluster({ includeClusterAuthorizedOperations: true, endpointType: 1 }, 1)
    expect(withOps.endpointType).toBe(1)
    // DESCRIBE (8), ALTER_CONFIGS (11) and CREATE (5) are among the allowed cluster operations.
    for (const op of [5, 8, 11]) expect(withOps.clusterAuthorizedOperations & (1 << op)).not.toBe(0)
    expect(withOps.clusterAuthorizedOperations & (1 << 3)).toBe(0)
    const controllers = await describeCluster({ endpointType: 2 }, 1)
    expect(controllers).toMatchObject({ errorCode: ErrorCode.MISMATCHED_ENDPOINT_TYPE, brokers: [] })
    const unknown = await describeCluster({ endpointType: 9 }, 1)
    expect(unknown).toMatchObject({ errorCode: ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, errorMessage: 'Unsupported endpoint type 9' })
  })

  it('DescribeLogDirs v1 (all topics) and v4 (filtered, with volume sizes)', async () => {
    const all = await describeLogDirs(null, 1)
    expect(all.results).toHaveLength(1)
    const names = all.results[0]!.topics.map((t) => t.name)
    for (const t of tb.broker.topics.list()) expect(names).toContain(t.name)
    const some = await describeLogDirs([DescribeLogDirs.createDescribableLogDirTopic({ topic: 'raw-records', partitions: [0, 9] }), DescribeLogDirs.createDescribableLogDirTopic({ topic: 'raw-none', partitions: [0] })], 4)
    expect(some.errorCode).toBe(0)
    expect(some.results[0]!.topics).toEqual([{ name: 'raw-records', partitions: [expect.objectContaining({ partitionIndex: 0, offsetLag: 0n, isFutureKey: false })] }])
    expect(some.results[0]!.topics[0]!.partitions[0]!.partitionSize).toBeGreaterThan(0n)
    expect(some.results[0]!.totalBytes).toBeGreaterThan(0n)
  })
})

describe('DeleteTopics with delete.topic.enable=false', () => {
  let tb: TestBroker
  let raw: RawClient

  beforeAll(async () => {
    tb = await startTestBroker(['delete.topic.enable=false'])
    raw = await RawClient.connect(tb.host, tb.port)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  it('answers TOPIC_DELETION_DISABLED (v3+) or INVALID_REQUEST (v1-2) and keeps the topic', async () => {
    expect((await raw.createTopic('kept', 1, {}, 5)).errorCode).toBe(0)
    for (const [v, code] of [[1, ErrorCode.INVALID_REQUEST], [2, ErrorCode.INVALID_REQUEST], [3, ErrorCode.TOPIC_DELETION_DISABLED], [5, ErrorCode.TOPIC_DELETION_DISABLED]] as const) {
      const res = await raw.call(20, v, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, DeleteTopics.createDeleteTopicsRequest({ topicNames: ['kept'], timeoutMs: 1000 }), v), DeleteTopics.decodeDeleteTopicsResponse)
      expect(res.responses[0]!.errorCode).toBe(code)
    }
    const v6 = await raw.call(20, 6, (w) => DeleteTopics.encodeDeleteTopicsRequest(w, DeleteTopics.createDeleteTopicsRequest({ topics: [DeleteTopics.createDeleteTopicState({ name: 'kept' })] }), 6), DeleteTopics.decodeDeleteTopicsResponse)
    expect(v6.responses[0]).toMatchObject({ name: 'kept', errorCode: ErrorCode.TOPIC_DELETION_DISABLED, errorMessage: 'Topic deletion is disabled.' })
    expect(tb.broker.topics.get('kept')).toBeDefined()
  })
})
