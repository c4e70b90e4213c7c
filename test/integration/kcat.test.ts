// librdkafka through kcat: metadata listing, producing (keys, explicit partitions, headers, every codec,
// acks 0/1/-1), consuming from the beginning with a format string, and offsets for times (-Q). What
// kcat sends is also read back with the raw client and decoded, so keys, values and headers are compared
// byte for byte with what went in, not only through kcat's own printing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { batchOf, decodeBatches, hasKcat, RawClient, recordsBuffer, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

const KCAT = hasKcat()
let tb: TestBroker
let raw: RawClient

const common = (): string[] => ['-b', tb.bootstrap, '-X', 'socket.timeout.ms=10000', '-X', 'api.version.request=true', '-m', '15']

async function produce(topic: string, partition: number, lines: string[], extra: string[] = []): Promise<void> {
  await runOk('kcat', ['-P', ...common(), '-t', topic, '-p', String(partition), '-K', ':', ...extra], { input: lines.join('\n') + '\n', timeoutMs: 30000 })
}

interface Line {
  key: string
  value: string
  partition: number
  offset: number
  timestamp: number
  headers: string
}

/** Consumes one partition from the beginning to the end with kcat (-e), no consumer group. */
async function consume(topic: string, partition: number): Promise<Line[]> {
  const r = await runOk('kcat', ['-C', ...common(), '-t', topic, '-p', String(partition), '-o', 'beginning', '-e', '-f', '%k\\t%s\\t%p\\t%o\\t%T\\t%h\\n'], { timeoutMs: 30000 })
  return r.stdout
    .toString()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const [key, value, p, o, t, h] = l.split('\t')
      return { key: key!, value: value!, partition: Number(p), offset: Number(o), timestamp: Number(t), headers: h ?? '' }
    })
}

async function rawRecords(topic: string, partition: number): Promise<ReturnType<typeof decodeBatches>> {
  return decodeBatches(recordsBuffer(await raw.fetch(topic, partition, 0)))
}

beforeAll(async () => {
  if (!KCAT) return
  tb = await startTestBroker()
  raw = await RawClient.connect(tb.host, tb.port)
  for (const [name, n] of [['kcat-data', 3], ['kcat-codecs', 5]] as const) expect((await raw.createTopic(name, n)).errorCode).toBe(0)
})

afterAll(async () => {
  raw?.close()
  await tb?.stop()
})

describe.skipIf(!KCAT)('librdkafka via kcat', () => {
  it('lists metadata (-L -J) with every partition led by this broker', async () => {
    const r = await runOk('kcat', ['-L', '-J', ...common()], { timeoutMs: 30000 })
    const meta = JSON.parse(r.stdout.toString())
    expect(meta.brokers).toEqual([{ id: tb.broker.nodeId, name: `${tb.host}:${tb.port}` }])
    const topics = new Map<string, any>(meta.topics.map((t: any) => [t.topic, t]))
    const data = topics.get('kcat-data')
    expect(data.partitions.map((p: any) => p.partition).sort()).toEqual([0, 1, 2])
    for (const p of data.partitions) {
      expect(p.leader).toBe(tb.broker.nodeId)
      expect(p.replicas).toEqual([{ id: tb.broker.nodeId }])
      expect(p.isrs).toEqual([{ id: tb.broker.nodeId }])
    }
    expect(topics.get('kcat-codecs').partitions.length).toBe(5)
  })

  it('produces keyed records with headers at acks -1, 1 and 0 to several partitions and consumes them back', async () => {
    const expected = new Map<number, { key: string; value: string }[]>([[0, []], [1, []], [2, []]])
    const before = Date.now()
    for (const [i, acks] of ['-1', '1', '0'].entries()) {
      for (const partition of [0, 1, 2]) {
        const lines = Array.from({ length: 5 }, (_, j) => ({ key: `k${i}-${partition}-${j}`, value: `value ${acks}/${partition}/${j}: ünïcødé; colons: a:b` }))
        await produce('kcat-data', partition, lines.map((l) => `${l.key}:${l.value}`), ['-X', `acks=${acks}`, '-H', `acks=${acks}`, '-H', `part=${partition}`])
        expected.get(partition)!.push(...lines)
      }
    }
    const after = Date.now()
    for (const [partition, exp] of expected) {
      const got = await consume('kcat-data', partition)
      expect(got.map((g) => ({ key: g.key, value: g.value }))).toEqual(exp)
      got.forEach((g, n) => {
        expect(g.partition).toBe(partition)
        expect(g.offset).toBe(n)
        expect(g.timestamp).toBeGreaterThanOrEqual(before - 1000)
        expect(g.timestamp).toBeLessThanOrEqual(after + 1000)
        const acks = ['-1', '1', '0'][Math.floor(n / 5)]
        expect(g.headers).toBe(`acks=${acks},part=${partition}`)
      })
      // Byte for byte on the wire: what the broker stored is exactly what kcat was given.
      const records = (await rawRecords('kcat-data', partition)).flatMap((b) => b.records)
      expect(records.map((r) => [r.key?.toString('utf8'), r.value?.toString('utf8')])).toEqual(exp.map((e) => [e.key, e.value]))
      expect(records.map((r) => r.offset)).toEqual(exp.map((_, n) => n))
      for (const r of records) expect(r.headers.map((h) => `${h.key}=${h.value?.toString()}`)).toEqual([expect.stringMatching(/^acks=/), `part=${partition}`])
    }
  })

  for (const [partition, codec] of ['none', 'gzip', 'snappy', 'lz4', 'zstd'].entries()) {
    it(`round-trips ${codec}-compressed batches`, async () => {
      const lines = Array.from({ length: 50 }, (_, j) => ({ key: `${codec}-${j}`, value: `${codec} payload ${j} `.repeat(1 + (j % 9)) }))
      await produce('kcat-codecs', partition, lines.map((l) => `${l.key}:${l.value}`), ['-z', codec, '-X', 'acks=1', '-X', 'linger.ms=50'])
      const got = await consume('kcat-codecs', partition)
      expect(got.map((g) => ({ key: g.key, value: g.value }))).toEqual(lines)
      const batches = await rawRecords('kcat-codecs', partition)
      expect(batches.length).toBeGreaterThan(0)
      // librdkafka 2.0 enables LZ4 only when the broker advertises FindCoordinator v0 (its proxy for
      // "broker >= 0.8.2"), which Skein does: every codec is stored as sent.
      for (const b of batches) expect(b.compression).toBe(codec)
      expect(batches.flatMap((b) => b.records).map((r) => r.value?.toString())).toEqual(lines.map((l) => l.value))
    })
  }

  it('answers offsets for times (-Q) and earliest/latest', async () => {
    expect((await raw.createTopic('kcat-times', 1)).errorCode).toBe(0)
    // Batches with known timestamps, written with the raw client (kcat -P cannot set timestamps).
    const t0 = Date.now() - 50_000
    for (let i = 0; i < 5; i++) {
      const res = await raw.produce('kcat-times', 0, batchOf([{ value: Buffer.from(`t${i}`), timestamp: t0 + i * 1000 }]))
      expect(res.errorCode).toBe(0)
    }
    const q = async (ts: number): Promise<number> => {
      const r = await runOk('kcat', ['-Q', ...common(), '-t', `kcat-times:0:${ts}`], { timeoutMs: 30000 })
      const m = /offset (-?\d+)/.exec(r.stdout.toString())
      expect(m, r.stdout.toString()).not.toBeNull()
      return Number(m![1])
    }
    expect(await q(t0 - 5)).toBe(0)
    expect(await q(t0 + 2000)).toBe(2)
    expect(await q(t0 + 2001)).toBe(3)
    expect(await q(-2)).toBe(0) // earliest
    expect(await q(-1)).toBe(5) // latest
    // Past every timestamp: Kafka's answer is offset -1.
    expect(await q(t0 + 100_000)).toBe(-1)
  })

  it('consumes from an explicit offset and from the end with -o', async () => {
    const r = await runOk('kcat', ['-C', ...common(), '-t', 'kcat-data', '-p', '1', '-o', '12', '-e', '-f', '%o:%k\\n'], { timeoutMs: 30000 })
    expect(r.stdout.toString().trim().split('\n')).toEqual(['12:k2-1-2', '13:k2-1-3', '14:k2-1-4'])
    const tail = await runOk('kcat', ['-C', ...common(), '-t', 'kcat-data', '-p', '1', '-o', '-2', '-e', '-f', '%o\\n'], { timeoutMs: 30000 })
    expect(tail.stdout.toString().trim().split('\n')).toEqual(['13', '14'])
  })
})
