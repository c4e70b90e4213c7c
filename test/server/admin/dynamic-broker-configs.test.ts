// Which broker configs AlterConfigs / IncrementalAlterConfigs may change at runtime: Kafka's list
// (DynamicBrokerConfig.AllDynamicConfigs: the log.* defaults, the log cleaner's settings, thread counts,
// connection limits, producer id expiration, ...), refused for the others with Kafka's message and code
// (INVALID_REQUEST, as Kafka 4's brokers answer: KAFKA-13609 kept it).
import { DEFAULT_ENTITY_NAME } from '../../../src/cluster/metadata-store.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ErrorCode } from '../../../src/domain/errors.js'
import * as AlterConfigs from '../../../src/protocol/messages/33-alter-configs.gen.js'
import * as DescribeConfigs from '../../../src/protocol/messages/32-describe-configs.gen.js'
import * as IncrementalAlterConfigs from '../../../src/protocol/messages/44-incremental-alter-configs.gen.js'
import { RawClient, startTestBroker, type TestBroker } from '../../harness/index.js'

const BROKER = 4

describe('dynamic broker configs', () => {
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

  const alter = async (resourceName: string, configs: Record<string, string>, validateOnly = false): Promise<[number, string | null]> => {
    const req = AlterConfigs.createAlterConfigsRequest({
      validateOnly,
      resources: [AlterConfigs.createAlterConfigsResource({ resourceType: BROKER, resourceName, configs: Object.entries(configs).map(([name, value]) => AlterConfigs.createAlterableConfig({ name, value })) })],
    })
    const res = await raw.call(33, 1, (w) => AlterConfigs.encodeAlterConfigsRequest(w, req, 1), AlterConfigs.decodeAlterConfigsResponse)
    return [res.responses[0]!.errorCode, res.responses[0]!.errorMessage]
  }
  const incremental = async (resourceName: string, configs: Record<string, string>): Promise<[number, string | null]> => {
    const req = IncrementalAlterConfigs.createIncrementalAlterConfigsRequest({
      resources: [
        IncrementalAlterConfigs.createAlterConfigsResource({
          resourceType: BROKER,
          resourceName,
          configs: Object.entries(configs).map(([name, value]) => IncrementalAlterConfigs.createAlterableConfig({ name, configOperation: 0, value })),
        }),
      ],
    })
    const res = await raw.call(44, 1, (w) => IncrementalAlterConfigs.encodeIncrementalAlterConfigsRequest(w, req, 1), IncrementalAlterConfigs.decodeIncrementalAlterConfigsResponse)
    return [res.responses[0]!.errorCode, res.responses[0]!.errorMessage]
  }
  const describeBroker = async (keys: string[]): Promise<Map<string, DescribeConfigs.DescribeConfigsResourceResult>> => {
    const req = DescribeConfigs.createDescribeConfigsRequest({ resources: [DescribeConfigs.createDescribeConfigsResource({ resourceType: BROKER, resourceName: '0', configurationKeys: keys })] })
    const res = await raw.call(32, 4, (w) => DescribeConfigs.encodeDescribeConfigsRequest(w, req, 4), DescribeConfigs.decodeDescribeConfigsResponse)
    return new Map(res.results[0]!.configs.map((c) => [c.name, c]))
  }

  it("accepts Kafka's dynamic broker configs that were refused as read-only", async () => {
    const kafkaDynamic = {
      'log.cleaner.backoff.ms': '5000',
      'log.cleaner.io.max.bytes.per.second': '1048576.0',
      'log.cleaner.dedupe.buffer.size': '33554432',
      'log.cleaner.threads': '2',
      'log.cleaner.io.buffer.size': '1048576',
      'log.cleaner.io.buffer.load.factor': '0.8',
      'producer.id.expiration.ms': '3600000',
      'num.replica.fetchers': '2',
      'max.connections': '5000',
      'max.connections.per.ip': '500',
      'max.connection.creation.rate': '100',
      'transaction.partition.verification.enable': 'false',
    }
    expect(await alter('', kafkaDynamic)).toEqual([ErrorCode.NONE, null])
    expect(await tb.broker.store.getEntityConfig('brokers', DEFAULT_ENTITY_NAME)).toMatchObject(kafkaDynamic)
    const described = await describeBroker(Object.keys(kafkaDynamic))
    for (const [name, value] of Object.entries(kafkaDynamic)) {
      expect(described.get(name)).toMatchObject({ value, readOnly: false, configSource: 3 }) // DYNAMIC_DEFAULT_BROKER_CONFIG
    }
    // Per broker too, through IncrementalAlterConfigs.
    expect(await incremental('0', { 'log.cleaner.backoff.ms': '7000', 'max.connections.per.ip.overrides': '127.0.0.1:100' })).toEqual([ErrorCode.NONE, null])
    expect((await describeBroker(['log.cleaner.backoff.ms'])).get('log.cleaner.backoff.ms')).toMatchObject({ value: '7000', configSource: 2 }) // DYNAMIC_BROKER_CONFIG
  })

  it("refuses read-only configs with Kafka's message, naming them as Kafka's Set does", async () => {
    expect(await alter('0', { 'num.partitions': '3', 'log.retention.ms': '1000', 'log.dirs': '/tmp/x' })).toEqual([
      ErrorCode.INVALID_REQUEST,
      'Cannot update these configs dynamically: Set(num.partitions, log.dirs)',
    ])
    // transactional.id.expiration.ms is read-only in Kafka.
    expect((await incremental('', { 'transactional.id.expiration.ms': '1000' }))[1]).toBe('Cannot update these configs dynamically: Set(transactional.id.expiration.ms)')
    expect(await alter('', { 'log.retention.hours': '1' })).toEqual([ErrorCode.INVALID_REQUEST, 'Cannot update these configs dynamically: Set(log.retention.hours)'])
    expect(tb.broker.config.logRetentionMs).toBe(7 * 24 * 3600 * 1000)
    const described = await describeBroker(['num.partitions', 'log.retention.hours', 'transactional.id.expiration.ms'])
    for (const c of described.values()) expect(c.readOnly).toBe(true)
  })

  it('per-broker configs are refused at the cluster level, and listeners cannot change while Skein runs', async () => {
    expect(await alter('', { listeners: 'PLAINTEXT://127.0.0.1:1' })).toEqual([
      ErrorCode.INVALID_REQUEST,
      'Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)',
    ])
    const [code, message] = await alter('0', { listeners: 'PLAINTEXT://127.0.0.1:1' })
    expect(code).toBe(ErrorCode.INVALID_REQUEST)
    expect(message).toMatch(/^Skein cannot change listeners while running/)
    expect(await tb.broker.store.getEntityConfig('brokers', '0')).not.toHaveProperty('listeners')
  })

  it('a log default changed dynamically reaches the partitions at once (log.retention.ms)', async () => {
    expect((await raw.createTopic('dyn-retention', 1)).errorCode).toBe(0)
    expect(await alter('', { 'log.retention.ms': '60000' })).toEqual([ErrorCode.NONE, null])
    expect(tb.broker.config.logRetentionMs).toBe(60000)
    const described = await describeBroker(['log.retention.ms'])
    expect(described.get('log.retention.ms')).toMatchObject({ value: '60000', configSource: 3, readOnly: false })
  })
})
