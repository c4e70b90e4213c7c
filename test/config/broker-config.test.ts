import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import {
  BROKER_CONFIGS, BrokerConfig, ConfigException, ConfigSource, LONG_MAX, loadBrokerConfig,
  renderConfigReference, TOPIC_CONFIGS,
} from '../../src/config/index.js'
import { ErrorCode } from '../../src/domain/errors.js'

const dirs: string[] = []
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), 'skein-config-'))
  dirs.push(d)
  return d
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

function configError(fn: () => unknown): ConfigException {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigException)
    return err as ConfigException
  }
  throw new Error('expected a ConfigException')
}

describe('broker config defaults', () => {
  it('has Kafka defaults and Skein defaults', () => {
    const c = BrokerConfig.fromProperties({}, { cwd: '/srv/skein' })
    expect(c.brokerId).toBe(0)
    expect(c.listeners).toEqual([{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }])
    expect(c.advertisedListeners).toEqual(c.listeners)
    expect(c.logDirs).toEqual(['/srv/skein/data'])
    expect(c.getInt('num.partitions')).toBe(1)
    expect(c.getInt('log.segment.bytes')).toBe(1073741824)
    expect(c.logRetentionMs).toBe(168 * 3600000)
    expect(c.logRollMs).toBe(168 * 3600000)
    expect(c.getInt('message.max.bytes')).toBe(1048588)
    expect(c.getInt('log.flush.interval.messages')).toBe(LONG_MAX)
    expect(c.logFlushIntervalMs).toBe(LONG_MAX)
    expect(c.getInt('offsets.topic.num.partitions')).toBe(50)
    expect(c.getInt('group.initial.rebalance.delay.ms')).toBe(3000)
    expect(c.getBoolean('auto.create.topics.enable')).toBe(true)
    expect(c.getString('compression.type')).toBe('producer')
    expect(c.ioThreads).toBe(0)
    expect(c.clusterId).toBeNull()
  })

  it('every table entry has a doc, and every topic synonym is a broker config', () => {
    for (const d of [...BROKER_CONFIGS, ...TOPIC_CONFIGS]) expect(d.doc.length, d.name).toBeGreaterThan(10)
    const names = new Set(BROKER_CONFIGS.map((d) => d.name))
    for (const t of TOPIC_CONFIGS) for (const s of t.synonyms) expect(names.has(s.name), `${t.name} <- ${s.name}`).toBe(true)
  })
})

describe('precedence', () => {
  it('log.retention.ms over minutes over hours', () => {
    expect(BrokerConfig.fromProperties({ 'log.retention.hours': '2' }).logRetentionMs).toBe(7200000)
    expect(BrokerConfig.fromProperties({ 'log.retention.hours': '2', 'log.retention.minutes': '3' }).logRetentionMs).toBe(180000)
    expect(BrokerConfig.fromProperties({ 'log.retention.hours': '2', 'log.retention.minutes': '3', 'log.retention.ms': '1234' }).logRetentionMs).toBe(1234)
    expect(BrokerConfig.fromProperties({ 'log.retention.hours': '-1' }).logRetentionMs).toBe(-1)
    expect(BrokerConfig.fromProperties({ 'log.retention.minutes': '-5' }).logRetentionMs).toBe(-1)
  })

  it('log.roll.ms over hours, flush.interval.ms over the scheduler interval', () => {
    expect(BrokerConfig.fromProperties({ 'log.roll.hours': '1' }).logRollMs).toBe(3600000)
    expect(BrokerConfig.fromProperties({ 'log.roll.hours': '1', 'log.roll.ms': '500' }).logRollMs).toBe(500)
    expect(BrokerConfig.fromProperties({ 'log.flush.scheduler.interval.ms': '2000' }).logFlushIntervalMs).toBe(2000)
    expect(BrokerConfig.fromProperties({ 'log.flush.scheduler.interval.ms': '2000', 'log.flush.interval.ms': '10' }).logFlushIntervalMs).toBe(10)
  })

  it('log.dirs over log.dir, node.id as an alias of broker.id', () => {
    const c = BrokerConfig.fromProperties({ 'log.dir': 'one', 'log.dirs': '/abs/a, rel/b' }, { cwd: '/w' })
    expect(c.logDirs).toEqual(['/abs/a', '/w/rel/b'])
    expect(BrokerConfig.fromProperties({ 'log.dir': 'one' }, { cwd: '/w' }).logDirs).toEqual(['/w/one'])
    expect(BrokerConfig.fromProperties({ 'node.id': '7' }).brokerId).toBe(7)
    expect(BrokerConfig.fromProperties({ 'node.id': '7', 'broker.id': '7' }).brokerId).toBe(7)
    expect(configError(() => BrokerConfig.fromProperties({ 'node.id': '7', 'broker.id': '8' })).message).toMatch(/broker.id.*node.id|node.id.*broker.id/)
  })

  it('dynamic layers beat static values, which beat defaults', () => {
    const c = BrokerConfig.fromProperties({ 'log.retention.hours': '5', 'message.max.bytes': '2000' })
    const d = c.withDynamic({ perBroker: new Map([['message.max.bytes', 3000]]), clusterDefault: new Map([['log.retention.ms', 99]]) })
    expect(d.getInt('message.max.bytes')).toBe(3000)
    expect(d.logRetentionMs).toBe(99)
    const entry = d.describe().find((e) => e.name === 'message.max.bytes')!
    expect(entry.source).toBe(ConfigSource.DYNAMIC_BROKER_CONFIG)
    expect(entry.synonyms.map((s) => s.source)).toEqual([ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.STATIC_BROKER_CONFIG, ConfigSource.DEFAULT_CONFIG])
    expect(configError(() => c.withDynamic({ perBroker: new Map([['log.dirs', ['/x']]]) })).key).toBe('log.dirs')
  })
})

describe('loadBrokerConfig', () => {
  it('reads the default server.properties shipped in config/', () => {
    const c = loadBrokerConfig({ file: 'config/server.properties', cwd: process.cwd() })
    expect(c.listeners).toEqual([{ name: 'PLAINTEXT', host: '127.0.0.1', port: 9092 }])
    expect(c.logDirs).toEqual([join(process.cwd(), 'data')])
    expect(c.isSet('log.retention.hours')).toBe(true)
  })

  it('applies overrides after the file, relative to cwd', () => {
    const d = tmp()
    writeFileSync(join(d, 'broker.properties'), 'num.partitions=3\nlog.dirs=logs\n')
    const c = loadBrokerConfig({ file: 'broker.properties', cwd: d, overrides: ['num.partitions=5', 'io.threads=0', 'listeners=PLAINTEXT://:0'] })
    expect(c.getInt('num.partitions')).toBe(5)
    expect(c.ioThreads).toBe(0)
    expect(c.logDirs).toEqual([join(d, 'logs')])
    expect(c.listeners).toEqual([{ name: 'PLAINTEXT', host: '', port: 0 }])
  })

  it('stops on an unknown or misspelt key, suggesting the closest one', () => {
    const d = tmp()
    writeFileSync(join(d, 's.properties'), 'log.retention.hour=3\n')
    const e = configError(() => loadBrokerConfig({ file: join(d, 's.properties') }))
    expect(e.key).toBe('log.retention.hour')
    expect(e.code).toBe(ErrorCode.INVALID_CONFIG)
    expect(e.message).toContain("did you mean 'log.retention.hours'")
    expect(e.message).toContain('s.properties')
    expect(configError(() => loadBrokerConfig({ overrides: ['totally.unknown.thing=1'] })).message).not.toContain('did you mean')
  })

  it('names the key and expected type on bad values', () => {
    expect(configError(() => loadBrokerConfig({ overrides: ['num.partitions=many'] })).message).toMatch(/num\.partitions.*INT/)
    expect(configError(() => loadBrokerConfig({ overrides: ['num.partitions=0'] })).message).toMatch(/num\.partitions.*at least 1/)
    expect(configError(() => loadBrokerConfig({ overrides: ['num.partitions=3000000000'] })).key).toBe('num.partitions')
    expect(configError(() => loadBrokerConfig({ overrides: ['auto.create.topics.enable=yes'] })).message).toMatch(/true or false/)
    expect(configError(() => loadBrokerConfig({ overrides: ['log.cleanup.policy=delete,shred'] })).key).toBe('log.cleanup.policy')
    expect(configError(() => loadBrokerConfig({ overrides: ['log.message.timestamp.type=Now'] })).key).toBe('log.message.timestamp.type')
    expect(configError(() => loadBrokerConfig({ overrides: ['listeners=127.0.0.1:9092'] })).key).toBe('listeners')
    expect(configError(() => loadBrokerConfig({ overrides: ['listeners=PLAINTEXT://a:1,PLAINTEXT://b:2'] })).key).toBe('listeners')
    expect(configError(() => loadBrokerConfig({ overrides: ['listeners=FOO://a:1'] })).key).toBe('listener.security.protocol.map')
    expect(configError(() => loadBrokerConfig({ overrides: ['advertised.listeners=PLAINTEXT://0.0.0.0:9092'] })).key).toBe('advertised.listeners')
    expect(configError(() => loadBrokerConfig({ overrides: ['num.partitions'] })).message).toMatch(/key=value/)
  })

  it('accepts Long.MAX and rejects values beyond it', () => {
    expect(loadBrokerConfig({ overrides: ['log.flush.interval.messages=9223372036854775807'] }).getInt('log.flush.interval.messages')).toBe(LONG_MAX)
    expect(configError(() => loadBrokerConfig({ overrides: ['log.flush.interval.messages=9223372036854775808'] })).key).toBe('log.flush.interval.messages')
  })

  it('reports a missing file and a syntax error with the file name', () => {
    expect(() => loadBrokerConfig({ file: '/nonexistent/skein.properties' })).toThrow(/cannot read config file \/nonexistent\/skein.properties/)
    const d = tmp()
    writeFileSync(join(d, 'bad.properties'), 'a=\\uZZZZ\n')
    expect(() => loadBrokerConfig({ file: join(d, 'bad.properties') })).toThrow(/bad\.properties: line 1/)
  })

  it('describes broker configs with sources and read-only flags', () => {
    const c = loadBrokerConfig({ overrides: ['log.retention.hours=5'] })
    const byName = new Map(c.describe().map((e) => [e.name, e]))
    expect(byName.get('log.retention.hours')).toMatchObject({ value: '5', source: ConfigSource.STATIC_BROKER_CONFIG, readOnly: true })
    expect(byName.get('log.segment.bytes')).toMatchObject({ value: '1073741824', source: ConfigSource.DEFAULT_CONFIG, readOnly: false })
    expect(byName.get('log.flush.interval.messages')!.value).toBe('9223372036854775807')
    expect(byName.get('log.retention.hours')!.synonyms).toEqual([
      { name: 'log.retention.hours', value: '5', source: ConfigSource.STATIC_BROKER_CONFIG },
      { name: 'log.retention.hours', value: '168', source: ConfigSource.DEFAULT_CONFIG },
    ])
    // Kafka lists nothing before the first entry named log.retention.ms, and nothing sets that name.
    expect(byName.get('log.retention.ms')).toMatchObject({ value: null, source: ConfigSource.DEFAULT_CONFIG, synonyms: [] })
  })
})

describe('renderConfigReference', () => {
  it('lists every broker and topic config with its default', () => {
    const md = renderConfigReference()
    for (const d of [...BROKER_CONFIGS, ...TOPIC_CONFIGS]) expect(md).toContain(`\`${d.name}\``)
    expect(md).toContain('| `num.partitions` | int | `1` |')
    expect(md).toContain('| `retention.ms` | long | `604800000` |')
    expect(md).toMatch(/`num\.io\.threads` \| int \| `8` .*\*Ignored\.\*/)
  })
})
