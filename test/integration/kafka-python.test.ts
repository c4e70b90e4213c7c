// kafka-python (Debian's python3-kafka, /usr/bin/python3): KafkaAdminClient create/list/delete,
// KafkaProducer with acks 0/1/-1 and the codecs whose Python modules import, and a KafkaConsumer with
// group_id=None using assign() + seek_to_beginning(). The Python side is
// test/integration/python/kafka_python_client.py; bytes cross as base64 and are compared exactly.
import { randomBytes } from 'node:crypto'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeBatches, hasPythonModule, RawClient, recordsBuffer, runOk, startTestBroker, SYSTEM_PYTHON, type TestBroker } from '../harness/index.js'

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'python', 'kafka_python_client.py')
const AVAILABLE = hasPythonModule('kafka')
let tb: TestBroker
let codecs: Record<string, boolean> = {}

/* eslint-disable @typescript-eslint/no-explicit-any */
async function py(op: string, req: Record<string, unknown>, timeoutMs = 45000): Promise<any> {
  const r = await runOk(SYSTEM_PYTHON, [SCRIPT, op], { input: JSON.stringify({ bootstrap: tb.bootstrap, ...req }), timeoutMs })
  return JSON.parse(r.stdout.toString())
}

const b64 = (b: Buffer | null): string | null => (b === null ? null : b.toString('base64'))

beforeAll(async () => {
  if (!AVAILABLE) return
  tb = await startTestBroker()
  codecs = await py('codecs', {})
  const missing = Object.entries(codecs).filter(([, ok]) => !ok).map(([c]) => c)
  if (missing.length > 0) console.warn(`[skein tests] kafka-python codecs without their Python module (SKIPPED): ${missing.join(', ')}; install python3-snappy, python3-lz4, python3-zstandard to test them`)
})

afterAll(async () => {
  await tb?.stop()
})

describe.skipIf(!AVAILABLE)('kafka-python', () => {
  it('creates and lists topics', async () => {
    expect(await py('create_topics', { topics: [{ name: 'kp-data', partitions: 3 }, { name: 'kp-codecs', partitions: 4 }, { name: 'kp-doomed', partitions: 1 }] })).toEqual({ 'kp-data': 0, 'kp-codecs': 0, 'kp-doomed': 0 })
    expect(await py('create_topics', { topics: [{ name: 'kp-data', partitions: 3 }] })).toEqual({ 'kp-data': 36 }) // TOPIC_ALREADY_EXISTS
    expect(await py('list_topics', {})).toEqual(expect.arrayContaining(['kp-data', 'kp-codecs', 'kp-doomed']))
  })

  it('produces with acks 1, -1 and 0 and consumes everything back with group_id=None', async () => {
    const sent = new Map<number, any[]>([[0, []], [1, []], [2, []]])
    const ts = Date.now() - 20_000
    let n = 0
    for (const acks of [1, -1, 0]) {
      const msgs = Array.from({ length: 12 }, (_, i) => ({
        key: i % 3 === 0 ? null : b64(randomBytes(1 + i)),
        value: i === 4 ? null : b64(randomBytes(3 + i * 17)),
        partition: i % 3,
        headers: i % 2 === 0 ? [['h', b64(Buffer.from(`acks ${acks}`))]] : [],
        timestamp: ts + n++,
      }))
      const res = await py('produce', { topic: 'kp-data', acks, messages: msgs })
      for (const [i, r] of res.reports.entries()) {
        expect(r.partition).toBe(msgs[i]!.partition)
        // acks=0: kafka-python reports offset -1 (nothing comes back).
        const before = sent.get(msgs[i]!.partition)!.length + msgs.slice(0, i).filter((m) => m.partition === msgs[i]!.partition).length
        expect(r.offset).toBe(acks === 0 ? -1 : before)
      }
      for (const m of msgs) sent.get(m.partition)!.push(m)
    }
    const got = await py('consume', { topic: 'kp-data', partitions: [0, 1, 2] })
    expect(got.end).toEqual({ '0': sent.get(0)!.length, '1': sent.get(1)!.length, '2': sent.get(2)!.length })
    for (const [p, want] of sent) {
      const mine = got.messages.filter((m: any) => m.partition === p)
      expect(mine.map((m: any) => m.offset)).toEqual(want.map((_, i) => i))
      expect(mine.map((m: any) => ({ key: m.key, value: m.value, timestamp: m.timestamp, headers: m.headers }))).toEqual(
        want.map((w) => ({ key: w.key, value: w.value, timestamp: w.timestamp, headers: w.headers })),
      )
    }
  })

  for (const [partition, codec] of ['gzip', 'snappy', 'lz4', 'zstd'].entries()) {
    it(`produces ${codec}-compressed batches that come back intact (when kafka-python has the codec)`, async (ctx) => {
      if (!codecs[codec]) {
        ctx.skip()
        return
      }
      const msgs = Array.from({ length: 25 }, (_, i) => ({ key: b64(Buffer.from(`${codec}-${i}`)), value: b64(Buffer.from(`${codec} value ${i} `.repeat(15))), partition }))
      await py('produce', { topic: 'kp-codecs', acks: 1, compression: codec, messages: msgs })
      const got = await py('consume', { topic: 'kp-codecs', partitions: [partition] })
      expect(got.messages.map((m: any) => [m.key, m.value])).toEqual(msgs.map((m) => [m.key, m.value]))
      const raw = await RawClient.connect(tb.host, tb.port)
      try {
        const batches = decodeBatches(recordsBuffer(await raw.fetch('kp-codecs', partition, 0)))
        expect(new Set(batches.map((b) => b.compression))).toEqual(new Set([codec]))
      } finally {
        raw.close()
      }
    })
  }

  it('offsets_for_times answers the first record at or after each time, with that record\'s timestamp', async () => {
    expect(await py('create_topics', { topics: [{ name: 'kp-times', partitions: 1 }] })).toEqual({ 'kp-times': 0 })
    // One send of ten records 10 ms apart: kafka-python puts them in one batch (linger.ms 20).
    const ts = Date.now() - 60_000
    const msgs = Array.from({ length: 10 }, (_, i) => ({ value: b64(Buffer.from(`t${i}`)), partition: 0, timestamp: ts + 10 * i }))
    await py('produce', { topic: 'kp-times', acks: 1, messages: msgs })
    const raw = await RawClient.connect(tb.host, tb.port)
    try {
      expect(decodeBatches(recordsBuffer(await raw.fetch('kp-times', 0, 0))).length).toBeLessThan(10)
    } finally {
      raw.close()
    }
    expect(await py('offsets_for_times', { topic: 'kp-times', partition: 0, times: [ts - 1, ts + 25, ts + 30, ts + 90, ts + 91] })).toEqual([
      { offset: 0, timestamp: ts },
      { offset: 3, timestamp: ts + 30 },
      { offset: 3, timestamp: ts + 30 },
      { offset: 9, timestamp: ts + 90 },
      null,
    ])
  })

  it('deletes topics', async () => {
    expect(await py('delete_topics', { topics: ['kp-doomed'] })).toEqual({ 'kp-doomed': 0 })
    expect(await py('list_topics', {})).not.toContain('kp-doomed')
  })
})
