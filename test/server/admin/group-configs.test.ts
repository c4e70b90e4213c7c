// Group configs (ConfigResource type GROUP = 32, Kafka 4.1's GroupConfig) on a real broker: set with
// IncrementalAlterConfigs and AlterConfigs, described with their sources (GROUP_CONFIG for a group's own,
// the broker synonym's source otherwise), deleted, refused with INVALID_CONFIG for unknown names, bad values
// and values outside the broker's group.*.min/max bounds, INVALID_REQUEST for an empty group name; stored
// at /config/groups/<group> in Kafka's JSON, kept across a restart; consumer.heartbeat.interval.ms reaches
// ConsumerGroupHeartbeat; `skein configs --entity-type groups`. And, when ZooKeeper is installed, a change
// made through one broker of a cluster is seen by the other.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ZooKeeperClient } from '../../../src/cluster/zookeeper/index.js'
import { parseIsoDuration, validateGroupConfigs, loadBrokerConfig } from '../../../src/config/index.js'
import { ErrorCode } from '../../../src/domain/errors.js'
import * as AlterConfigs from '../../../src/protocol/messages/33-alter-configs.gen.js'
import * as ConsumerGroupHeartbeat from '../../../src/protocol/messages/68-consumer-group-heartbeat.gen.js'
import * as DescribeConfigs from '../../../src/protocol/messages/32-describe-configs.gen.js'
import * as IncrementalAlterConfigs from '../../../src/protocol/messages/44-incremental-alter-configs.gen.js'
import { RawClient, startCluster, startTestBroker, zookeeperMissing, type TestBroker, type TestCluster } from '../../harness/index.js'
import { skein } from '../../cli/helpers.js'

const GROUP = 32
const SET = 0
const DELETE = 1
const Source = { STATIC_BROKER_CONFIG: 4, DEFAULT_CONFIG: 5, GROUP_CONFIG: 8 }

type Op = [name: string, op: number, value: string | null]

async function incremental(raw: RawClient, resourceName: string, ops: Op[], validateOnly = false): Promise<[number, string | null]> {
  const req = IncrementalAlterConfigs.createIncrementalAlterConfigsRequest({
    validateOnly,
    resources: [IncrementalAlterConfigs.createAlterConfigsResource({
      resourceType: GROUP, resourceName,
      configs: ops.map(([name, configOperation, value]) => IncrementalAlterConfigs.createAlterableConfig({ name, configOperation, value })),
    })],
  })
  const res = await raw.call(44, 1, (w) => IncrementalAlterConfigs.encodeIncrementalAlterConfigsRequest(w, req, 1), IncrementalAlterConfigs.decodeIncrementalAlterConfigsResponse)
  return [res.responses[0]!.errorCode, res.responses[0]!.errorMessage]
}

async function describeGroup(raw: RawClient, resourceName: string, opts: { keys?: string[] | null; synonyms?: boolean; docs?: boolean } = {}): Promise<DescribeConfigs.DescribeConfigsResult> {
  const req = DescribeConfigs.createDescribeConfigsRequest({
    resources: [DescribeConfigs.createDescribeConfigsResource({ resourceType: GROUP, resourceName, configurationKeys: opts.keys ?? null })],
    includeSynonyms: opts.synonyms ?? false,
    includeDocumentation: opts.docs ?? false,
  })
  const res = await raw.call(32, 4, (w) => DescribeConfigs.encodeDescribeConfigsRequest(w, req, 4), DescribeConfigs.decodeDescribeConfigsResponse)
  return res.results[0]!
}

const byName = (r: DescribeConfigs.DescribeConfigsResult): Map<string, DescribeConfigs.DescribeConfigsResourceResult> => new Map(r.configs.map((c) => [c.name, c]))

describe('group config validation (config/group-configs.ts)', () => {
  const broker = loadBrokerConfig({ overrides: ['group.share.min.record.lock.duration.ms=1000'] })
  const check = (configs: Record<string, string>): void => void validateGroupConfigs(Object.entries(configs), broker)

  it('parses ISO-8601 durations as Java does, refusing malformed ones', () => {
    expect(parseIsoDuration('PT1H')).toBe(3_600_000)
    expect(parseIsoDuration('P1DT2H30M')).toBe(95_400_000)
    expect(parseIsoDuration('PT1.5S')).toBe(1500)
    expect(parseIsoDuration('-PT1S')).toBe(-1000)
    for (const bad of ['P', 'PT', '1H', 'PT1X', 'P1Y']) expect(parseIsoDuration(bad)).toBeUndefined()
  })

  it("applies Kafka's rules: names, types, bounds, session above heartbeat", () => {
    check({ 'share.record.lock.duration.ms': '3000', 'share.auto.offset.reset': 'by_duration:PT10M', 'share.isolation.level': 'read_committed' })
    expect(() => check({ 'share.auto.offset.reset': 'by_duration:-PT1S' })).toThrow(/Negative duration is not allowed/)
    expect(() => check({ 'share.auto.offset.reset': 'newest' })).toThrow(/must be either 'earliest', 'latest'/)
    expect(() => check({ 'share.isolation.level': 'serializable' })).toThrow(/String must be one of: read_committed, read_uncommitted/)
    expect(() => check({ 'share.record.lock.duration.ms': '999' })).toThrow(/Value must be at least 1000/)
    expect(() => check({ 'share.record.lock.duration.ms': '70000' })).toThrow('share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms')
    expect(() => check({ 'consumer.session.timeout.ms': '1000' })).toThrow('consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms')
    expect(() => check({ 'streams.num.standby.replicas': '3' })).toThrow('streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas')
    expect(() => check({ 'consumer.heartbeat.interval.ms': 'x' })).toThrow(/Not a number of type INT/)
    expect(() => check({ 'share.auto.ofset.reset': 'earliest' })).toThrow(/Unknown group config name: share.auto.ofset.reset \(did you mean share.auto.offset.reset\?\)/)
    const tight = loadBrokerConfig({ overrides: ['group.consumer.max.heartbeat.interval.ms=50000', 'group.consumer.min.session.timeout.ms=10000'] })
    expect(() => validateGroupConfigs([['consumer.heartbeat.interval.ms', '45000']], tight)).toThrow('consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms')
  })

  it('the broker refuses group.share.* defaults outside their own bounds', () => {
    expect(() => loadBrokerConfig({ overrides: ['group.share.record.lock.duration.ms=5000'] })).toThrow('group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms')
    expect(() => loadBrokerConfig({ overrides: ['group.share.heartbeat.interval.ms=45000'] })).toThrow(/group.share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms/)
  })
})

describe('group configs on a broker', () => {
  let tb: TestBroker
  let raw: RawClient
  const OVERRIDES = [
    'group.share.min.record.lock.duration.ms=1000',
    'group.consumer.min.heartbeat.interval.ms=100',
    'group.consumer.heartbeat.interval.ms=200',
    'offsets.topic.num.partitions=1',
    'group.initial.rebalance.delay.ms=0',
  ]

  beforeAll(async () => {
    tb = await startTestBroker(OVERRIDES)
    raw = await RawClient.connect(tb.host, tb.port)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  it('describes every group config of any group with its default and source', async () => {
    const r = await describeGroup(raw, 'fresh-group', { synonyms: true, docs: true })
    expect(r.errorCode).toBe(ErrorCode.NONE)
    const c = byName(r)
    expect([...c.keys()]).toEqual([
      'consumer.session.timeout.ms', 'consumer.heartbeat.interval.ms', 'share.session.timeout.ms', 'share.heartbeat.interval.ms',
      'share.record.lock.duration.ms', 'share.auto.offset.reset', 'share.isolation.level',
      'streams.session.timeout.ms', 'streams.heartbeat.interval.ms', 'streams.num.standby.replicas',
    ])
    // group.consumer.heartbeat.interval.ms is set in server.properties: its source shows through.
    expect(c.get('consumer.heartbeat.interval.ms')).toMatchObject({ value: '200', readOnly: false, configSource: Source.STATIC_BROKER_CONFIG, configType: 3 })
    expect(c.get('consumer.heartbeat.interval.ms')!.synonyms).toEqual([
      expect.objectContaining({ name: 'group.consumer.heartbeat.interval.ms', value: '200', source: Source.STATIC_BROKER_CONFIG }),
      expect.objectContaining({ name: 'group.consumer.heartbeat.interval.ms', value: '5000', source: Source.DEFAULT_CONFIG }),
    ])
    expect(c.get('share.record.lock.duration.ms')).toMatchObject({ value: '30000', configSource: Source.DEFAULT_CONFIG })
    expect(c.get('share.auto.offset.reset')).toMatchObject({ value: 'latest', configSource: Source.DEFAULT_CONFIG, synonyms: [] })
    expect(c.get('share.isolation.level')!.documentation).toMatch(/read_committed/)
    // configurationKeys, and no synonyms or documentation unless asked.
    const some = await describeGroup(raw, 'fresh-group', { keys: ['share.isolation.level', 'no.such.config'] })
    expect(some.configs.map((x) => [x.name, x.value, x.synonyms.length, x.documentation])).toEqual([['share.isolation.level', 'read_uncommitted', 0, null]])
  })

  it('sets, describes (GROUP_CONFIG), stores in Kafka\'s layout and deletes', async () => {
    expect(await incremental(raw, 'g1', [['share.auto.offset.reset', SET, 'earliest'], ['share.record.lock.duration.ms', SET, '3000'], ['consumer.session.timeout.ms', SET, '50000']])).toEqual([ErrorCode.NONE, null])
    expect(await tb.broker.store.getEntityConfig('groups', 'g1')).toEqual({ 'share.auto.offset.reset': 'earliest', 'share.record.lock.duration.ms': '3000', 'consumer.session.timeout.ms': '50000' })
    let c = byName(await describeGroup(raw, 'g1', { synonyms: true }))
    expect(c.get('share.auto.offset.reset')).toMatchObject({ value: 'earliest', configSource: Source.GROUP_CONFIG })
    expect(c.get('share.record.lock.duration.ms')!.synonyms.map((s) => [s.name, s.value, s.source])).toEqual([
      ['share.record.lock.duration.ms', '3000', Source.GROUP_CONFIG],
      ['group.share.record.lock.duration.ms', '30000', Source.DEFAULT_CONFIG],
    ])
    expect(tb.broker.groupConfigs.effective('g1', 'share.record.lock.duration.ms')).toBe(3000)
    expect(tb.broker.groupConfigs.effective('other', 'share.record.lock.duration.ms')).toBe(30000)
    // Another group is untouched.
    expect(byName(await describeGroup(raw, 'g2')).get('share.auto.offset.reset')).toMatchObject({ value: 'latest', configSource: Source.DEFAULT_CONFIG })
    // Incremental: one key deleted, the others kept; validateOnly changes nothing.
    expect(await incremental(raw, 'g1', [['share.auto.offset.reset', DELETE, null]])).toEqual([ErrorCode.NONE, null])
    expect(await incremental(raw, 'g1', [['share.isolation.level', SET, 'read_committed']], true)).toEqual([ErrorCode.NONE, null])
    c = byName(await describeGroup(raw, 'g1'))
    expect(c.get('share.auto.offset.reset')).toMatchObject({ value: 'latest', configSource: Source.DEFAULT_CONFIG })
    expect(c.get('share.isolation.level')).toMatchObject({ value: 'read_uncommitted', configSource: Source.DEFAULT_CONFIG })
    expect(c.get('share.record.lock.duration.ms')).toMatchObject({ value: '3000', configSource: Source.GROUP_CONFIG })
    // Group names are sanitized into node names and read back as given.
    expect(await incremental(raw, 'odd/group *', [['share.isolation.level', SET, 'read_committed']])).toEqual([ErrorCode.NONE, null])
    expect(await tb.broker.store.getEntityConfig('groups', 'odd%2Fgroup%20%2A')).toEqual({ 'share.isolation.level': 'read_committed' })
    expect(byName(await describeGroup(raw, 'odd/group *')).get('share.isolation.level')).toMatchObject({ value: 'read_committed', configSource: Source.GROUP_CONFIG })
  })

  it('refuses unknown names, bad values and an empty group name', async () => {
    expect(await incremental(raw, 'g3', [['share.auto.offset.rest', SET, 'earliest']])).toEqual([ErrorCode.INVALID_CONFIG, expect.stringContaining('Unknown group config name: share.auto.offset.rest')])
    expect(await incremental(raw, 'g3', [['share.isolation.level', SET, 'dirty']])).toEqual([ErrorCode.INVALID_CONFIG, expect.stringContaining('String must be one of: read_committed, read_uncommitted')])
    expect(await incremental(raw, 'g3', [['share.record.lock.duration.ms', SET, '61000']])).toEqual([ErrorCode.INVALID_CONFIG, 'share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms'])
    expect(await incremental(raw, 'g3', [['consumer.heartbeat.interval.ms', SET, '50']])).toEqual([ErrorCode.INVALID_CONFIG, 'consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms'])
    expect(await incremental(raw, 'g3', [['share.auto.offset.reset', SET, 'by_duration:PT']])).toEqual([ErrorCode.INVALID_CONFIG, expect.stringContaining('Invalid duration')])
    expect(await incremental(raw, 'g3', [['share.isolation.level', 2, 'read_committed']])).toEqual([ErrorCode.INVALID_CONFIG, "Can't APPEND to key share.isolation.level because its type is not LIST."])
    expect(await tb.broker.store.getEntityConfig('groups', 'g3')).toEqual({})
    expect(await incremental(raw, '', [['share.isolation.level', SET, 'read_committed']])).toEqual([ErrorCode.INVALID_REQUEST, 'Group name must not be empty'])
    expect(await describeGroup(raw, '')).toMatchObject({ errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Group name must not be empty', configs: [] })
  })

  it('AlterConfigs (the legacy API) replaces a group\'s whole set', async () => {
    const req = AlterConfigs.createAlterConfigsRequest({
      resources: [AlterConfigs.createAlterConfigsResource({ resourceType: GROUP, resourceName: 'g4', configs: [AlterConfigs.createAlterableConfig({ name: 'share.isolation.level', value: 'read_committed' })] })],
    })
    const alter = async (): Promise<number> => (await raw.call(33, 1, (w) => AlterConfigs.encodeAlterConfigsRequest(w, req, 1), AlterConfigs.decodeAlterConfigsResponse)).responses[0]!.errorCode
    expect(await incremental(raw, 'g4', [['share.auto.offset.reset', SET, 'earliest']])).toEqual([ErrorCode.NONE, null])
    expect(await alter()).toBe(ErrorCode.NONE)
    expect(await tb.broker.store.getEntityConfig('groups', 'g4')).toEqual({ 'share.isolation.level': 'read_committed' })
  })

  it('consumer.heartbeat.interval.ms of a group reaches its members (ConsumerGroupHeartbeat)', async () => {
    await raw.createTopic('gc-topic', 1)
    expect(await incremental(raw, 'cg-with-config', [['consumer.heartbeat.interval.ms', SET, '300']])).toEqual([ErrorCode.NONE, null])
    const heartbeat = (groupId: string): Promise<ConsumerGroupHeartbeat.ConsumerGroupHeartbeatResponse> => {
      const body = ConsumerGroupHeartbeat.createConsumerGroupHeartbeatRequest({ groupId, memberId: '', memberEpoch: 0, rebalanceTimeoutMs: 10_000, subscribedTopicNames: ['gc-topic'], topicPartitions: [] })
      return raw.call(68, 0, (w) => ConsumerGroupHeartbeat.encodeConsumerGroupHeartbeatRequest(w, body, 0), ConsumerGroupHeartbeat.decodeConsumerGroupHeartbeatResponse)
    }
    const until = async (groupId: string): Promise<ConsumerGroupHeartbeat.ConsumerGroupHeartbeatResponse> => {
      for (let i = 0; i < 100; i++) {
        const r = await heartbeat(groupId)
        if (r.errorCode !== ErrorCode.COORDINATOR_LOAD_IN_PROGRESS && r.errorCode !== ErrorCode.COORDINATOR_NOT_AVAILABLE) return r
        await new Promise((res) => setTimeout(res, 100))
      }
      throw new Error('no coordinator')
    }
    expect(await until('cg-with-config')).toMatchObject({ errorCode: ErrorCode.NONE, heartbeatIntervalMs: 300 })
    expect(await until('cg-without-config')).toMatchObject({ errorCode: ErrorCode.NONE, heartbeatIntervalMs: 200 })
  })

  it('skein configs --entity-type groups: alter, describe, delete', async () => {
    const base = ['configs', '--bootstrap-server', `${tb.host}:${tb.port}`, '--entity-type', 'groups', '--entity-name', 'cli-group']
    const set = await skein([...base, '--alter', '--add-config', 'share.auto.offset.reset=earliest,share.record.lock.duration.ms=3000'])
    expect(set.stderr).toBe('')
    expect(set.out).toBe('Completed updating config for group cli-group.\n')
    const shown = await skein([...base, '--describe'])
    expect(shown.out).toContain('Dynamic configs for group cli-group are:\n')
    expect(shown.out).toContain('  share.auto.offset.reset=earliest sensitive=false synonyms={GROUP_CONFIG:share.auto.offset.reset=earliest}\n')
    expect(shown.out).toContain('  share.record.lock.duration.ms=3000 sensitive=false synonyms={GROUP_CONFIG:share.record.lock.duration.ms=3000, DEFAULT_CONFIG:group.share.record.lock.duration.ms=30000}\n')
    expect((await skein([...base, '--alter', '--delete-config', 'share.auto.offset.reset'])).out).toBe('Completed updating config for group cli-group.\n')
    const all = await skein([...base, '--describe', '--all'])
    expect(all.out).toContain('All configs for group cli-group are:\n')
    expect(all.out).toContain('  share.auto.offset.reset=latest sensitive=false synonyms={}\n')
    // Without --entity-name: every group the coordinators list (cg-with-config joined in the case above).
    const listed = await skein(['configs', '--bootstrap-server', `${tb.host}:${tb.port}`, '--entity-type', 'groups', '--describe'])
    expect(listed.out).toContain('Dynamic configs for group cg-with-config are:\n  consumer.heartbeat.interval.ms=300 sensitive=false')
    const bad = await skein([...base, '--alter', '--add-config', 'share.isolation.level=dirty'])
    expect(bad.code).not.toBe(0)
    expect(String(bad.stderr)).toMatch(/String must be one of: read_committed, read_uncommitted/)
  })

  it('group configs survive a restart', async () => {
    expect(await incremental(raw, 'durable', [['share.auto.offset.reset', SET, 'by_duration:PT1H']])).toEqual([ErrorCode.NONE, null])
    raw.close()
    tb = await tb.restart()
    raw = await RawClient.connect(tb.host, tb.port)
    expect(byName(await describeGroup(raw, 'durable')).get('share.auto.offset.reset')).toMatchObject({ value: 'by_duration:PT1H', configSource: Source.GROUP_CONFIG })
    expect(tb.broker.groupConfigs.effective('g1', 'share.record.lock.duration.ms')).toBe(3000)
  })
})

const MISSING = zookeeperMissing()

describe.skipIf(MISSING !== undefined)('group configs in a ZooKeeper cluster', () => {
  let cluster: TestCluster

  beforeAll(async () => {
    cluster = await startCluster({ brokerIds: [1, 2] })
  }, 120_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  it("a change through one broker is stored at /config/groups/<group> in Kafka's JSON and seen by the other", async () => {
    const one = await cluster.broker(1).client()
    const two = await cluster.broker(2).client()
    const zk = await ZooKeeperClient.connect(cluster.connect, { sessionTimeoutMs: 4000 })
    try {
      expect(await incremental(one, 'zk-group', [['share.auto.offset.reset', SET, 'earliest'], ['share.session.timeout.ms', SET, '50000']])).toEqual([ErrorCode.NONE, null])
      expect(JSON.parse((await zk.getData('/config/groups/zk-group')).data.toString())).toEqual({ version: 1, config: { 'share.auto.offset.reset': 'earliest', 'share.session.timeout.ms': '50000' } })
      let seen: DescribeConfigs.DescribeConfigsResourceResult | undefined
      for (let i = 0; i < 100; i++) {
        seen = byName(await describeGroup(two, 'zk-group')).get('share.auto.offset.reset')
        if (seen?.value === 'earliest') break
        await new Promise((res) => setTimeout(res, 100))
      }
      expect(seen).toMatchObject({ value: 'earliest', configSource: Source.GROUP_CONFIG })
      // And back: deleted through the other broker.
      expect(await incremental(two, 'zk-group', [['share.auto.offset.reset', DELETE, null]])).toEqual([ErrorCode.NONE, null])
      for (let i = 0; i < 100; i++) {
        seen = byName(await describeGroup(one, 'zk-group')).get('share.auto.offset.reset')
        if (seen?.value === 'latest') break
        await new Promise((res) => setTimeout(res, 100))
      }
      expect(seen).toMatchObject({ value: 'latest', configSource: Source.DEFAULT_CONFIG })
    } finally {
      one.close()
      two.close()
      await zk.close()
    }
  }, 60_000)
})
