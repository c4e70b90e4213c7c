import { describe, expect, it } from 'vitest'
import {
  BrokerConfig, buildLogConfig, ConfigException, ConfigSource, LONG_MAX, logConfigOverrides, resolveTopicConfigs, validateTopicConfigs,
} from '../../src/config/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'

function invalid(fn: () => unknown): ConfigException {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(KafkaError)
    expect((err as KafkaError).code).toBe(ErrorCode.INVALID_CONFIG)
    return err as ConfigException
  }
  throw new Error('expected INVALID_CONFIG')
}

describe('validateTopicConfigs', () => {
  it('parses known keys into typed values', () => {
    const v = validateTopicConfigs({ 'retention.ms': '1000', 'cleanup.policy': 'compact, delete', 'min.cleanable.dirty.ratio': '0.25', preallocate: 'TRUE' })
    expect(v.get('retention.ms')).toBe(1000)
    expect(v.get('cleanup.policy')).toEqual(['compact', 'delete'])
    expect(v.get('min.cleanable.dirty.ratio')).toBe(0.25)
    expect(v.get('preallocate')).toBe(true)
  })

  it('accepts entry lists as sent in CreateTopics', () => {
    expect(validateTopicConfigs([['segment.bytes', '1048576']]).get('segment.bytes')).toBe(1048576)
  })

  it('rejects unknown keys naming the key, with a suggestion', () => {
    const e = invalid(() => validateTopicConfigs({ 'retention.msx': '1' }))
    expect(e.key).toBe('retention.msx')
    expect(e.message).toContain('did you mean retention.ms')
    // A broker-level name is not a topic config.
    expect(invalid(() => validateTopicConfigs({ 'log.retention.ms': '1' })).key).toBe('log.retention.ms')
  })

  it('rejects bad values naming the key', () => {
    expect(invalid(() => validateTopicConfigs({ 'retention.ms': '-2' })).key).toBe('retention.ms')
    expect(invalid(() => validateTopicConfigs({ 'retention.ms': '1h' })).message).toMatch(/retention\.ms.*LONG/)
    expect(invalid(() => validateTopicConfigs({ 'segment.bytes': '10' })).key).toBe('segment.bytes')
    expect(invalid(() => validateTopicConfigs({ 'cleanup.policy': '' })).key).toBe('cleanup.policy')
    expect(invalid(() => validateTopicConfigs({ 'cleanup.policy': 'delete,delete' })).key).toBe('cleanup.policy')
    expect(invalid(() => validateTopicConfigs({ 'compression.type': 'brotli' })).key).toBe('compression.type')
    expect(invalid(() => validateTopicConfigs({ 'min.cleanable.dirty.ratio': '1.5' })).key).toBe('min.cleanable.dirty.ratio')
    expect(invalid(() => validateTopicConfigs({ 'max.message.bytes': '2147483648' })).key).toBe('max.message.bytes')
    expect(invalid(() => validateTopicConfigs({ 'retention.ms': null })).key).toBe('retention.ms')
    expect(invalid(() => validateTopicConfigs({ 'leader.replication.throttled.replicas': '0:1,x' })).key).toBe('leader.replication.throttled.replicas')
    expect(invalid(() => validateTopicConfigs({ 'min.compaction.lag.ms': '10', 'max.compaction.lag.ms': '5' })).key).toBe('min.compaction.lag.ms')
  })
})

describe('resolveTopicConfigs', () => {
  it('reports topic overrides, static broker values and defaults with their sources', () => {
    const broker = BrokerConfig.fromProperties({ 'log.retention.hours': '1', 'log.segment.bytes': '2000000' })
    const resolved = new Map(resolveTopicConfigs(broker, validateTopicConfigs({ 'segment.bytes': '1048576' })).map((r) => [r.name, r]))
    expect(resolved.get('segment.bytes')).toMatchObject({ value: '1048576', source: ConfigSource.DYNAMIC_TOPIC_CONFIG, readOnly: false, sensitive: false })
    expect(resolved.get('segment.bytes')!.synonyms).toEqual([
      { name: 'segment.bytes', value: '1048576', source: ConfigSource.DYNAMIC_TOPIC_CONFIG },
      { name: 'log.segment.bytes', value: '2000000', source: ConfigSource.STATIC_BROKER_CONFIG },
      { name: 'log.segment.bytes', value: '1073741824', source: ConfigSource.DEFAULT_CONFIG },
    ])
    // The value comes from log.retention.hours, but Kafka's list starts at the first log.retention.ms
    // entry, of which there is none: no synonyms, and the source DEFAULT_CONFIG.
    expect(resolved.get('retention.ms')).toMatchObject({ value: '3600000', source: ConfigSource.DEFAULT_CONFIG, synonyms: [] })
    expect(resolved.get('max.message.bytes')).toMatchObject({ value: '1048588', source: ConfigSource.DEFAULT_CONFIG })
    expect(resolved.get('flush.messages')!.value).toBe('9223372036854775807')
    expect(resolved.get('cleanup.policy')!.value).toBe('delete')
    expect(resolved.get('min.cleanable.dirty.ratio')!.value).toBe('0.5')
  })

  it('reports dynamic broker and cluster-default sources', () => {
    const broker = BrokerConfig.fromProperties({ 'message.max.bytes': '500' }).withDynamic({
      perBroker: new Map([['log.retention.ms', 42]]),
      clusterDefault: new Map([['message.max.bytes', 700]]),
    })
    const resolved = new Map(resolveTopicConfigs(broker).map((r) => [r.name, r]))
    expect(resolved.get('retention.ms')).toMatchObject({ value: '42', source: ConfigSource.DYNAMIC_BROKER_CONFIG })
    expect(resolved.get('max.message.bytes')).toMatchObject({ value: '700', source: ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG })
  })
})

describe('buildLogConfig', () => {
  it('maps broker defaults with precedence onto LogConfig', () => {
    const broker = BrokerConfig.fromProperties({
      'log.retention.minutes': '10', 'log.roll.hours': '2', 'log.segment.bytes': '5000', 'log.index.size.max.bytes': '4096',
      'log.index.interval.bytes': '100', 'message.max.bytes': '3000', 'log.cleanup.policy': 'delete,compact',
      'log.message.timestamp.type': 'LogAppendTime', 'log.segment.delete.delay.ms': '0', 'log.flush.scheduler.interval.ms': '1000',
    })
    expect(buildLogConfig(broker)).toEqual({
      segmentBytes: 5000,
      segmentMs: 7200000,
      segmentIndexBytes: 4096,
      indexIntervalBytes: 100,
      retentionMs: 600000,
      retentionBytes: -1,
      maxMessageBytes: 3000,
      flushMessages: LONG_MAX,
      flushMs: 1000,
      messageTimestampType: 'LogAppendTime',
      messageTimestampBeforeMaxMs: LONG_MAX,
      messageTimestampAfterMaxMs: 3600000,
      cleanupPolicy: 'compact,delete',
      fileDeleteDelayMs: 0,
      deleteRetentionMs: 86400000,
      minCleanableDirtyRatio: 0.5,
      minCompactionLagMs: 0,
      maxCompactionLagMs: LONG_MAX,
      compressionType: 'producer',
    })
  })

  it('applies topic overrides on top, and logConfigOverrides keeps only the overridden fields', () => {
    const broker = BrokerConfig.fromProperties({})
    const overrides = validateTopicConfigs({ 'retention.ms': '-1', 'cleanup.policy': 'compact', 'compression.type': 'lz4' })
    const lc = buildLogConfig(broker, overrides)
    expect(lc.retentionMs).toBe(-1)
    expect(lc.cleanupPolicy).toBe('compact')
    expect(lc.segmentBytes).toBe(1073741824)
    expect(logConfigOverrides(overrides)).toEqual({ retentionMs: -1, cleanupPolicy: 'compact', compressionType: 'lz4' })
    expect(broker.logConfig(overrides)).toEqual(lc)
  })
})
