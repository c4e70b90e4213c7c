// One validator for log settings: the config table. A value it refuses is refused before anything is
// written (no metadata entry, no partition directory); a value it accepts is one storage runs with.
// Raw CreateTopics / AlterConfigs frames against an in-process broker on a real socket and data dir.
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MIN_SEGMENT_BYTES, MIN_SEGMENT_INDEX_BYTES } from '../../../src/config/broker-configs.js'
import { ErrorCode } from '../../../src/domain/errors.js'
import * as IncrementalAlterConfigs from '../../../src/protocol/messages/44-incremental-alter-configs.gen.js'
import { RawClient, batchOf, startTestBroker, type TestBroker } from '../../harness/index.js'

const TOPIC = 2
const BROKER = 4
const SET = 0

describe('log config bounds through the broker', () => {
  let tb: TestBroker
  let raw: RawClient

  beforeAll(async () => {
    // A broker-level max.compaction.lag.ms, so a topic's min lag can conflict with a broker default.
    tb = await startTestBroker(['log.cleaner.max.compaction.lag.ms=60000'])
    raw = await RawClient.connect(tb.host, tb.port)
  })

  afterAll(async () => {
    raw?.close()
    await tb?.stop()
  })

  const alter = (resourceType: number, resourceName: string, name: string, value: string) =>
    raw.call(44, 1, (w) => IncrementalAlterConfigs.encodeIncrementalAlterConfigsRequest(w, IncrementalAlterConfigs.createIncrementalAlterConfigsRequest({
      resources: [IncrementalAlterConfigs.createAlterConfigsResource({ resourceType, resourceName, configs: [IncrementalAlterConfigs.createAlterableConfig({ name, configOperation: SET, value })] })],
    }), 1), IncrementalAlterConfigs.decodeIncrementalAlterConfigsResponse)

  /** Nothing of the topic exists: no metadata entry, no directory, Metadata does not know it. */
  async function expectNoTrace(name: string): Promise<void> {
    expect(tb.broker.topics.get(name)).toBeUndefined()
    expect(readdirSync(tb.dataDir).filter((e) => e.startsWith(`${name}-`))).toEqual([])
    const md = await raw.metadata([name], false)
    expect(md.topics[0]!.errorCode).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  }

  it('refuses segment.bytes below one batch header with INVALID_CONFIG and leaves no half-created topic', async () => {
    for (const value of ['14', String(MIN_SEGMENT_BYTES - 1)]) {
      const name = `bounds-seg-${value}`
      const res = await raw.createTopic(name, 2, { 'segment.bytes': value })
      expect(res.errorCode).toBe(ErrorCode.INVALID_CONFIG)
      expect(res.errorMessage).toMatch(new RegExp(`segment\\.bytes.*at least ${MIN_SEGMENT_BYTES}`))
      await expectNoTrace(name)
    }
  })

  it('refuses segment.index.bytes that holds no index entry', async () => {
    const res = await raw.createTopic('bounds-index', 1, { 'segment.index.bytes': String(MIN_SEGMENT_INDEX_BYTES - 1) })
    expect(res.errorCode).toBe(ErrorCode.INVALID_CONFIG)
    await expectNoTrace('bounds-index')
  })

  it('refuses overrides that conflict with a broker default, before writing anything', async () => {
    const res = await raw.createTopic('bounds-lag', 1, { 'min.compaction.lag.ms': '120000' })
    expect(res.errorCode).toBe(ErrorCode.INVALID_CONFIG)
    expect(res.errorMessage).toMatch(/min\.compaction\.lag\.ms \(120000\) > max\.compaction\.lag\.ms \(60000\)/)
    await expectNoTrace('bounds-lag')
  })

  it('runs a topic at the smallest accepted segment.bytes: each batch too large for it is refused, the log stays usable', async () => {
    const res = await raw.createTopic('bounds-min', 1, { 'segment.bytes': String(MIN_SEGMENT_BYTES), 'segment.index.bytes': String(MIN_SEGMENT_INDEX_BYTES) })
    expect(res.errorCode).toBe(ErrorCode.NONE)
    expect(existsSync(join(tb.dataDir, 'bounds-min-0'))).toBe(true)
    const tooLarge = await raw.produce('bounds-min', 0, batchOf([{ value: Buffer.from('a record') }]))
    expect(tooLarge.errorCode).toBe(ErrorCode.RECORD_LIST_TOO_LARGE)
    // Raising segment.bytes takes effect on the running log.
    expect((await alter(TOPIC, 'bounds-min', 'segment.bytes', '1024')).responses[0]!.errorCode).toBe(ErrorCode.NONE)
    const ok = await raw.produce('bounds-min', 0, batchOf([{ value: Buffer.from('a record') }]))
    expect(ok).toMatchObject({ errorCode: ErrorCode.NONE, baseOffset: 0n })
  })

  it('refuses the same bounds when altering a topic or the broker defaults', async () => {
    expect((await raw.createTopic('bounds-alter', 1)).errorCode).toBe(ErrorCode.NONE)
    const topic = await alter(TOPIC, 'bounds-alter', 'segment.bytes', '20')
    expect(topic.responses[0]!.errorCode).toBe(ErrorCode.INVALID_CONFIG)
    expect(tb.broker.topics.get('bounds-alter')!.configs).toEqual({})
    // Kafka answers a bad broker config with INVALID_REQUEST.
    const broker = await alter(BROKER, '', 'log.segment.bytes', '20')
    expect(broker.responses[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST)
    expect(broker.responses[0]!.errorMessage).toMatch(new RegExp(`log\\.segment\\.bytes.*at least ${MIN_SEGMENT_BYTES}`))
    expect(tb.broker.config.getInt('log.segment.bytes')).toBe(1073741824)
  })
})
