// librdkafka through python3-confluent-kafka (Debian's /usr/bin/python3): AdminClient create/list/
// describe/alter/delete, Producer with every compression type and acks value, a Consumer using assign()
// with explicit offsets (no group coordinator), watermarks and offsets_for_times. The Python side is
// test/integration/python/confluent_client.py; bytes cross as base64 and are compared exactly.
import { randomBytes } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { batchOf, decodeBatches, hasPythonModule, RawClient, recordsBuffer, runOk, startTestBroker, SYSTEM_PYTHON, type TestBroker } from '../harness/index.js'

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'python', 'confluent_client.py')
const AVAILABLE = hasPythonModule('confluent_kafka')
let tb: TestBroker

/* eslint-disable @typescript-eslint/no-explicit-any */
async function py(op: string, req: Record<string, unknown>, timeoutMs = 45000): Promise<any> {
  const r = await runOk(SYSTEM_PYTHON, [SCRIPT, op], { input: JSON.stringify({ bootstrap: tb.bootstrap, ...req }), timeoutMs })
  return JSON.parse(r.stdout.toString())
}

const b64 = (b: Buffer | null): string | null => (b === null ? null : b.toString('base64'))

interface Msg {
  key: Buffer | null
  value: Buffer | null
  partition: number
  headers: [string, Buffer][]
  timestamp: number
}

function wire(m: Msg): Record<string, unknown> {
  return { key: b64(m.key), value: b64(m.value), partition: m.partition, headers: m.headers.map(([k, v]) => [k, b64(v)]), timestamp: m.timestamp }
}

beforeAll(async () => {
  if (!AVAILABLE) return
  tb = await startTestBroker()
})

afterAll(async () => {
  await tb?.stop()
})

describe.skipIf(!AVAILABLE)('librdkafka via python3-confluent-kafka', () => {
  it('creates topics and lists them with partitions led by this broker', async () => {
    const created = await py('create_topics', { topics: [{ name: 'ck-data', partitions: 3 }, { name: 'ck-codecs', partitions: 5, config: { 'retention.ms': '86400000' } }, { name: 'ck-doomed', partitions: 1 }] })
    expect(created).toEqual({ 'ck-data': { ok: true, error: null }, 'ck-codecs': { ok: true, error: null }, 'ck-doomed': { ok: true, error: null } })
    const again = await py('create_topics', { topics: [{ name: 'ck-data', partitions: 3 }] })
    expect(again['ck-data'].ok).toBe(false)
    expect(again['ck-data'].error).toMatch(/TOPIC_ALREADY_EXISTS/)
    const md = await py('list_topics', {})
    expect(md.brokers).toEqual([{ id: tb.broker.nodeId, host: tb.host, port: tb.port }])
    expect(md.controller).toBe(tb.broker.nodeId)
    expect(md.topics['ck-data'].error).toBeNull()
    expect(md.topics['ck-data'].partitions).toEqual([0, 1, 2].map((id) => ({ id, leader: tb.broker.nodeId, replicas: [tb.broker.nodeId], isrs: [tb.broker.nodeId] })))
    expect(md.topics['ck-codecs'].partitions.length).toBe(5)
  })

  it('produces with acks 1, -1 and 0 (keys, null values, headers) and consumes everything back with assign()', async () => {
    const sent = new Map<number, Msg[]>([[0, []], [1, []], [2, []]])
    const ts = Date.now() - 30_000
    let n = 0
    for (const acks of [1, -1, 0]) {
      const msgs: Msg[] = Array.from({ length: 15 }, (_, i) => ({
        key: i % 4 === 0 ? null : randomBytes(1 + (i % 9)),
        value: i === 7 ? null : randomBytes(i * 11),
        partition: i % 3,
        headers: i % 2 === 0 ? [['h1', Buffer.from(`acks=${acks}`)], ['bin', randomBytes(4)]] : [],
        timestamp: ts + n++,
      }))
      const res = await py('produce', { topic: 'ck-data', acks, messages: msgs.map(wire) })
      for (const [i, r] of res.reports.entries()) {
        expect(r.error).toBeNull()
        expect(r.partition).toBe(msgs[i]!.partition)
        // With acks=0 librdkafka cannot know the offset and reports -1001 (OFFSET_INVALID).
        if (acks !== 0) expect(r.offset).toBe(sent.get(msgs[i]!.partition)!.length + msgs.slice(0, i).filter((m) => m.partition === msgs[i]!.partition).length)
      }
      for (const m of msgs) sent.get(m.partition)!.push(m)
    }
    const got = await py('consume', { topic: 'ck-data', partitions: [0, 1, 2], offset: 0 })
    for (const [p, want] of sent) {
      const mine = got.messages.filter((m: any) => m.partition === p)
      expect(mine.map((m: any) => m.offset)).toEqual(want.map((_, i) => i))
      expect(mine.map((m: any) => ({ key: m.key, value: m.value, timestamp: m.timestamp, headers: m.headers }))).toEqual(
        want.map((w) => ({ key: b64(w.key), value: b64(w.value), timestamp: w.timestamp, headers: w.headers.map(([k, v]) => [k, b64(v)]) })),
      )
    }
    // An explicit start offset in the middle.
    const mid = await py('consume', { topic: 'ck-data', partitions: [1], offset: 7 })
    expect(mid.messages.map((m: any) => m.offset)).toEqual(Array.from({ length: sent.get(1)!.length - 7 }, (_, i) => 7 + i))
  })

  for (const [partition, codec] of ['none', 'gzip', 'snappy', 'lz4', 'zstd'].entries()) {
    it(`produces ${codec}-compressed batches that come back intact`, async () => {
      const msgs: Msg[] = Array.from({ length: 30 }, (_, i) => ({ key: Buffer.from(`${codec}-${i}`), value: Buffer.from(`${codec} ${i} `.repeat(20 + i)), partition, headers: [], timestamp: Date.now() - 1000 + i }))
      const res = await py('produce', { topic: 'ck-codecs', acks: -1, compression: codec, messages: msgs.map(wire) })
      expect(res.reports.every((r: any) => r.error === null)).toBe(true)
      const got = await py('consume', { topic: 'ck-codecs', partitions: [partition], offset: 0 })
      expect(got.messages.map((m: any) => [m.key, m.value])).toEqual(msgs.map((m) => [b64(m.key), b64(m.value)]))
      const raw = await RawClient.connect(tb.host, tb.port)
      try {
        const batches = decodeBatches(recordsBuffer(await raw.fetch('ck-codecs', partition, 0)))
        // librdkafka 2.0 enables LZ4 only when FindCoordinator v0 is advertised, as Skein does (FINDINGS.md).
        expect(new Set(batches.map((b) => b.compression))).toEqual(new Set([codec]))
      } finally {
        raw.close()
      }
    })
  }

  it('reads watermarks and offsets for times', async () => {
    const raw = await RawClient.connect(tb.host, tb.port)
    const t0 = Date.now() - 100_000
    expect((await raw.createTopic('ck-times', 1)).errorCode).toBe(0)
    for (let i = 0; i < 6; i++) expect((await raw.produce('ck-times', 0, batchOf([{ value: Buffer.from(`t${i}`), timestamp: t0 + i * 100 }]))).errorCode).toBe(0)
    raw.close()
    const res = await py('offsets', { topic: 'ck-times', partition: 0, timestamps: [t0 - 1, t0 + 100, t0 + 150, t0 + 500, t0 + 10_000] })
    expect(res.low).toBe(0)
    expect(res.high).toBe(6)
    expect(res.for_times).toEqual([0, 1, 2, 5, -1])
  })

  it('describes and alters topic configs', async () => {
    const before = await py('describe_configs', { topic: 'ck-codecs' })
    expect(before['retention.ms']).toEqual(expect.objectContaining({ value: '86400000', is_default: false }))
    expect(before['cleanup.policy']).toEqual(expect.objectContaining({ value: 'delete', is_default: true }))
    const altered = await py('alter_configs', { topic: 'ck-codecs', config: { 'retention.ms': '3600000', 'cleanup.policy': 'compact' } })
    expect(Object.values(altered)).toEqual([{ ok: true, error: null }])
    const after = await py('describe_configs', { topic: 'ck-codecs' })
    expect(after['retention.ms'].value).toBe('3600000')
    expect(after['cleanup.policy'].value).toBe('compact')
    const bad = await py('alter_configs', { topic: 'ck-codecs', config: { 'retention.ms': 'not-a-number' } })
    expect(Object.values(bad)).toEqual([{ ok: false, error: expect.stringMatching(/INVALID_CONFIG|Invalid/i) }])
  })

  it('deletes topics', async () => {
    expect(await py('delete_topics', { topics: ['ck-doomed'] })).toEqual({ 'ck-doomed': { ok: true, error: null } })
    const md = await py('list_topics', {})
    expect(Object.keys(md.topics)).not.toContain('ck-doomed')
    const missing = await py('delete_topics', { topics: ['ck-doomed'] })
    expect(missing['ck-doomed'].error).toMatch(/UNKNOWN_TOPIC/)
  })
})
