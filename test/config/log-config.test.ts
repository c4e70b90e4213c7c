// The config table is the one home of log defaults and bounds: topic configs share them with their
// broker synonyms, DEFAULT_LOG_CONFIG is the table's defaults, and storage checks with the same table.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  BROKER_CONFIGS, BrokerConfig, brokerConfigDef, buildLogConfig, checkLogConfig, ConfigException, DEFAULT_LOG_CONFIG, LOG_CONFIG_FIELDS,
  LONG_MAX, mergeLogConfig, MIN_SEGMENT_BYTES, MIN_SEGMENT_INDEX_BYTES, STORAGE_DEFAULTS, TOPIC_CONFIGS, validateTopicConfigs,
} from '../../src/config/index.js'
import { ErrorCode, KafkaError } from '../../src/domain/errors.js'
import { RECORD_BATCH_OVERHEAD } from '../../src/protocol/records/batch.js'
import { LogManager } from '../../src/storage/index.js'

function configError(fn: () => unknown): ConfigException {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigException)
    expect((err as KafkaError).code).toBe(ErrorCode.INVALID_CONFIG)
    return err as ConfigException
  }
  throw new Error('expected a ConfigException')
}

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

describe('one home for log defaults and bounds', () => {
  it('gives every topic config with a broker synonym that synonym\'s type, bounds and default', () => {
    for (const t of TOPIC_CONFIGS) {
      const primary = t.synonyms[0]
      if (primary === undefined) continue
      const b = brokerConfigDef(primary.name)!
      expect(t.type, t.name).toBe(b.type)
      // cleanup.policy: a topic must name a policy, the broker default may be empty (Kafka's rule).
      if (t.name !== 'cleanup.policy') expect(t.validValues, t.name).toBe(b.validValues)
      const fallback = t.synonyms.map((s) => ({ s, d: brokerConfigDef(s.name)!.default })).find((x) => x.d !== null)!
      expect(t.default, t.name).toEqual(typeof fallback.d === 'number' && fallback.s.factor !== undefined ? fallback.d * fallback.s.factor : fallback.d)
    }
  })

  it('refuses the same values at topic and broker level', () => {
    for (const [topic, broker, value] of [
      ['segment.bytes', 'log.segment.bytes', String(MIN_SEGMENT_BYTES - 1)],
      ['segment.index.bytes', 'log.index.size.max.bytes', String(MIN_SEGMENT_INDEX_BYTES - 1)],
      ['flush.ms', 'log.flush.interval.ms', '-1'],
      ['retention.ms', 'log.retention.ms', '-2'],
    ] as const) {
      expect(configError(() => validateTopicConfigs({ [topic]: value })).key).toBe(topic)
      expect(configError(() => BrokerConfig.fromProperties({ [broker]: value })).key).toBe(broker)
    }
    expect(validateTopicConfigs({ 'segment.bytes': String(MIN_SEGMENT_BYTES) }).get('segment.bytes')).toBe(MIN_SEGMENT_BYTES)
    // The internal topics' segment sizes become their segment.bytes, so they have its floor.
    for (const name of ['offsets.topic.segment.bytes', 'transaction.state.log.segment.bytes']) {
      expect(configError(() => BrokerConfig.fromProperties({ [name]: String(MIN_SEGMENT_BYTES - 1) })).key).toBe(name)
    }
  })

  it('sets the segment floor at one RecordBatch v2 header', () => {
    expect(MIN_SEGMENT_BYTES).toBe(RECORD_BATCH_OVERHEAD)
    expect(MIN_SEGMENT_BYTES).toBe(61)
  })

  it('builds DEFAULT_LOG_CONFIG from the table: what a broker with no settings runs', () => {
    expect(DEFAULT_LOG_CONFIG).toEqual(buildLogConfig(BrokerConfig.fromProperties({})))
    expect(DEFAULT_LOG_CONFIG).toEqual(BrokerConfig.fromProperties({}).logDefaults())
    expect(DEFAULT_LOG_CONFIG.messageTimestampAfterMaxMs).toBe(3_600_000)
    expect(DEFAULT_LOG_CONFIG.flushMs).toBe(LONG_MAX)
    expect(Object.keys(DEFAULT_LOG_CONFIG).sort()).toEqual(LOG_CONFIG_FIELDS.map(([f]) => f).sort())
    expect(Object.isFrozen(DEFAULT_LOG_CONFIG)).toBe(true)
  })

  it('takes the storage options\' defaults from the broker table', () => {
    const byName = new Map(BROKER_CONFIGS.map((d) => [d.name, d.default]))
    expect(STORAGE_DEFAULTS).toEqual({
      checkpointIntervalMs: byName.get('log.flush.offset.checkpoint.interval.ms'),
      producerIdExpirationMs: byName.get('producer.id.expiration.ms'),
      cleanerDedupeBufferBytes: byName.get('log.cleaner.dedupe.buffer.size'),
      cleanerIoMaxBytesPerSecond: byName.get('log.cleaner.io.max.bytes.per.second'),
      segmentOpenFilesMax: byName.get('log.segment.open.files.max'),
    })
  })
})

describe('checkLogConfig', () => {
  it('checks each field with its topic config\'s type and validator, naming the topic config', () => {
    expect(checkLogConfig({ ...DEFAULT_LOG_CONFIG })).toEqual(DEFAULT_LOG_CONFIG)
    expect(configError(() => checkLogConfig({ ...DEFAULT_LOG_CONFIG, segmentBytes: MIN_SEGMENT_BYTES - 1 })).key).toBe('segment.bytes')
    expect(configError(() => checkLogConfig({ ...DEFAULT_LOG_CONFIG, segmentBytes: 2 ** 31 })).key).toBe('segment.bytes')
    expect(configError(() => checkLogConfig({ ...DEFAULT_LOG_CONFIG, segmentMs: 1.5 })).key).toBe('segment.ms')
    expect(configError(() => checkLogConfig({ ...DEFAULT_LOG_CONFIG, minCleanableDirtyRatio: 2 })).key).toBe('min.cleanable.dirty.ratio')
    expect(configError(() => checkLogConfig({ ...DEFAULT_LOG_CONFIG, cleanupPolicy: 'sweep' as 'delete' })).key).toBe('cleanup.policy')
    expect(configError(() => checkLogConfig({ ...DEFAULT_LOG_CONFIG, compressionType: 'brotli' as 'zstd' })).key).toBe('compression.type')
    expect(configError(() => checkLogConfig({ ...DEFAULT_LOG_CONFIG, minCompactionLagMs: 10, maxCompactionLagMs: 5 })).key).toBe('min.compaction.lag.ms')
    // What the table accepts, storage runs with: any negative retention.bytes means "no limit".
    expect(checkLogConfig({ ...DEFAULT_LOG_CONFIG, retentionBytes: -5, cleanupPolicy: 'compact,delete' }).retentionBytes).toBe(-5)
  })

  it('refuses unknown fields when merging overrides', () => {
    expect(configError(() => mergeLogConfig(DEFAULT_LOG_CONFIG, { segmentSize: 5 } as never)).key).toBe('segmentSize')
    expect(mergeLogConfig(DEFAULT_LOG_CONFIG, { segmentBytes: 4096, retentionMs: undefined })).toEqual({ ...DEFAULT_LOG_CONFIG, segmentBytes: 4096 })
  })

  it('checks a topic\'s overrides together with the broker defaults', () => {
    const broker = BrokerConfig.fromProperties({ 'log.cleaner.max.compaction.lag.ms': '1000' })
    const overrides = validateTopicConfigs({ 'min.compaction.lag.ms': '5000' })
    expect(configError(() => broker.logConfig(overrides)).key).toBe('min.compaction.lag.ms')
    expect(configError(() => BrokerConfig.fromProperties({ 'log.cleaner.max.compaction.lag.ms': '1000', 'log.cleaner.min.compaction.lag.ms': '5000' }).logDefaults()).key)
      .toBe('min.compaction.lag.ms')
  })

  it('is what storage checks with: a LogManager refuses what the table refuses, before creating anything', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'skein-log-config-'))
    dirs.push(dataDir)
    expect(configError(() => LogManager.open({ dataDir, defaults: { ...DEFAULT_LOG_CONFIG, segmentBytes: MIN_SEGMENT_BYTES - 1 }, cleanShutdown: true })).key).toBe('segment.bytes')
    const m = LogManager.open({ dataDir, defaults: DEFAULT_LOG_CONFIG, cleanShutdown: true })
    expect(configError(() => m.create('t', 0, { segmentIndexBytes: MIN_SEGMENT_INDEX_BYTES - 1 })).key).toBe('segment.index.bytes')
    expect(readdirSync(dataDir)).toEqual([])
    const log = m.create('t', 0, { segmentBytes: MIN_SEGMENT_BYTES, segmentIndexBytes: MIN_SEGMENT_INDEX_BYTES })
    expect(configError(() => log.updateConfig({ segmentBytes: 14 })).key).toBe('segment.bytes')
    expect(log.config.segmentBytes).toBe(MIN_SEGMENT_BYTES)
    await m.close()
  })
})
