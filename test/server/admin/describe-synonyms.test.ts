// DescribeConfigs with includeSynonyms, in Kafka's order (ConfigHelper.configSynonyms): the topic's own
// override (DYNAMIC_TOPIC_CONFIG) first, then for every broker synonym by source: dynamic per-broker,
// dynamic cluster default, static (server.properties), DEFAULT_CONFIG; the entries before the first one
// named like the config's own broker name are left out, as Kafka leaves them out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as AlterConfigs from '../../../src/protocol/messages/33-alter-configs.gen.js'
import * as DescribeConfigs from '../../../src/protocol/messages/32-describe-configs.gen.js'
import { RawClient, startTestBroker, type TestBroker } from '../../harness/index.js'

const TOPIC = 2
const BROKER = 4
const [TOPIC_CONFIG, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT] = [1, 2, 3, 4, 5]

describe('DescribeConfigs synonyms', () => {
  let tb: TestBroker
  let raw: RawClient

  beforeAll(async () => {
    tb = await startTestBroker(['log.retention.hours=24', 'log.cleanup.policy=delete'])
    raw = await RawClient.connect(tb.host, tb.port)
    const alter = async (resourceName: string, name: string, value: string): Promise<void> => {
      const req = AlterConfigs.createAlterConfigsRequest({ resources: [AlterConfigs.createAlterConfigsResource({ resourceType: BROKER, resourceName, configs: [AlterConfigs.createAlterableConfig({ name, value })] })] })
      const res = await raw.call(33, 1, (w) => AlterConfigs.encodeAlterConfigsRequest(w, req, 1), AlterConfigs.decodeAlterConfigsResponse)
      expect(res.responses[0]!.errorCode).toBe(0)
    }
    await alter('', 'log.segment.bytes', '500000000')
    await alter('0', 'log.segment.bytes', '600000000')
    expect((await raw.createTopic('syn', 1, { 'segment.bytes': '700000000' })).errorCode).toBe(0)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  async function describeConfigs(resourceType: number, resourceName: string, keys: string[]): Promise<Map<string, DescribeConfigs.DescribeConfigsResourceResult>> {
    const req = DescribeConfigs.createDescribeConfigsRequest({ includeSynonyms: true, resources: [DescribeConfigs.createDescribeConfigsResource({ resourceType, resourceName, configurationKeys: keys })] })
    const res = await raw.call(32, 4, (w) => DescribeConfigs.encodeDescribeConfigsRequest(w, req, 4), DescribeConfigs.decodeDescribeConfigsResponse)
    expect(res.results[0]!.errorCode).toBe(0)
    return new Map(res.results[0]!.configs.map((c) => [c.name, c]))
  }
  const synonyms = (c: DescribeConfigs.DescribeConfigsResourceResult | undefined): [string, string | null, number][] => c!.synonyms.map((s) => [s.name, s.value, s.source])

  it('topic configs: override, then dynamic per-broker, dynamic default, static and default broker values', async () => {
    const c = await describeConfigs(TOPIC, 'syn', ['segment.bytes', 'cleanup.policy', 'max.message.bytes', 'retention.ms', 'segment.ms', 'flush.ms'])
    expect(c.get('segment.bytes')).toMatchObject({ value: '700000000', configSource: TOPIC_CONFIG })
    expect(synonyms(c.get('segment.bytes'))).toEqual([
      ['segment.bytes', '700000000', TOPIC_CONFIG],
      ['log.segment.bytes', '600000000', DYNAMIC_BROKER],
      ['log.segment.bytes', '500000000', DYNAMIC_DEFAULT],
      ['log.segment.bytes', '1073741824', DEFAULT],
    ])
    expect(c.get('cleanup.policy')).toMatchObject({ value: 'delete', configSource: STATIC })
    expect(synonyms(c.get('cleanup.policy'))).toEqual([['log.cleanup.policy', 'delete', STATIC], ['log.cleanup.policy', 'delete', DEFAULT]])
    expect(c.get('max.message.bytes')).toMatchObject({ value: '1048588', configSource: DEFAULT })
    expect(synonyms(c.get('max.message.bytes'))).toEqual([['message.max.bytes', '1048588', DEFAULT]])
    // Kafka drops the entries before the first one named log.retention.ms: with only log.retention.hours
    // set, the list is empty and the source DEFAULT_CONFIG, though the value comes from the hours.
    expect(c.get('retention.ms')).toMatchObject({ value: String(24 * 3600_000), configSource: DEFAULT })
    expect(synonyms(c.get('retention.ms'))).toEqual([])
    expect(synonyms(c.get('segment.ms'))).toEqual([])
    expect(synonyms(c.get('flush.ms'))).toEqual([])
  })

  it('broker configs: each layer that sets the name or one of its synonyms, default last', async () => {
    const c = await describeConfigs(BROKER, '0', ['log.segment.bytes', 'log.retention.hours', 'log.retention.ms', 'log.roll.hours', 'num.partitions'])
    expect(c.get('log.segment.bytes')).toMatchObject({ value: '600000000', configSource: DYNAMIC_BROKER })
    expect(synonyms(c.get('log.segment.bytes'))).toEqual([
      ['log.segment.bytes', '600000000', DYNAMIC_BROKER],
      ['log.segment.bytes', '500000000', DYNAMIC_DEFAULT],
      ['log.segment.bytes', '1073741824', DEFAULT],
    ])
    expect(c.get('log.retention.hours')).toMatchObject({ value: '24', configSource: STATIC })
    expect(synonyms(c.get('log.retention.hours'))).toEqual([['log.retention.hours', '24', STATIC], ['log.retention.hours', '168', DEFAULT]])
    expect(c.get('log.retention.ms')).toMatchObject({ value: null, configSource: DEFAULT })
    expect(synonyms(c.get('log.retention.ms'))).toEqual([])
    expect(synonyms(c.get('log.roll.hours'))).toEqual([['log.roll.hours', '168', DEFAULT]])
    expect(synonyms(c.get('num.partitions'))).toEqual([['num.partitions', '1', DEFAULT]])
  })

  it('the cluster default resource lists only the dynamic defaults', async () => {
    const c = await describeConfigs(BROKER, '', ['log.segment.bytes', 'num.partitions'])
    expect([...c.keys()]).toEqual(['log.segment.bytes'])
    expect(synonyms(c.get('log.segment.bytes'))).toEqual([['log.segment.bytes', '500000000', DYNAMIC_DEFAULT]])
  })
})
