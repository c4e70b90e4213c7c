// WebSocket streaming at /ws/topics/{topic} against a broker, through real sockets: records from an
// offset, a timestamp or a consumer group, as JSON or binary frames, live as they are written; produce
// over the same socket with an acknowledgement per message; refusals of bad upgrades with Confluent's
// error bodies; and backpressure: a client that reads slowly gets everything in order with the server's
// queue bounded, a client that stops reading is disconnected (close code 1008), never buffered for.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer, Producer, tpKey } from '../../src/client/index.js'
import { TestWebSocket, type WsMessage } from '../harness/ws-client.js'
import { eventually, startWebFront, type WebFrontSetup } from './helpers.js'

const PAUSE_BYTES = 64 * 1024
const MAX_BUFFERED = 1024 * 1024
const SLOW_TIMEOUT_MS = 1500

let web: WebFrontSetup
let admin: Admin
let producer: Producer
beforeAll(async () => {
  web = await startWebFront({
    settings: {
      'websocket.pause.bytes': String(PAUSE_BYTES),
      'websocket.max.buffered.bytes': String(MAX_BUFFERED),
      'websocket.slow.client.timeout.ms': String(SLOW_TIMEOUT_MS),
      'websocket.max.inflight.produce': '50',
    },
  })
  admin = new Admin({ bootstrapServers: web.broker.bootstrap })
  producer = new Producer({ bootstrapServers: web.broker.bootstrap, lingerMs: 0 })
  await admin.createTopics([
    { name: 'stream', numPartitions: 2 },
    { name: 'stream-produce', numPartitions: 1 },
    { name: 'stream-group', numPartitions: 2 },
    { name: 'stream-big', numPartitions: 1 },
  ])
})
afterAll(async () => {
  await producer?.close()
  await admin?.close()
  await web?.stop()
})

interface JsonRecord {
  partition: number
  offset: number
  timestamp: number
  key: unknown
  value: unknown
  keyFormat?: string
  valueFormat?: string
  headers?: { key: string; value: string | null }[]
}

const json = (m: WsMessage): any => JSON.parse(m.data.toString('utf8'))

/** Every record of the JSON frames received so far. */
function jsonRecords(ws: TestWebSocket): JsonRecord[] {
  return ws.messages.filter((m) => !m.binary).map(json).filter((m) => m.type === 'records').flatMap((m) => m.records as JsonRecord[])
}

async function waitForRecords(ws: TestWebSocket, n: number, read: (ws: TestWebSocket) => unknown[] = jsonRecords, timeoutMs = 10_000): Promise<void> {
  await eventually(() => (read(ws).length >= n ? true : undefined), timeoutMs, `${n} records (got ${read(ws).length})`)
}

/** Decodes the binary records frame (layout in src/console/streams.ts encodeBinaryRecords). */
function decodeBinary(b: Buffer): { partition: number; offset: number; timestamp: number; key: Buffer | null; value: Buffer | null; headers: { key: string; value: Buffer | null }[] }[] {
  expect(b[0]).toBe(1)
  const count = b.readUInt32BE(1)
  let at = 5
  const bytes = (): Buffer | null => {
    const n = b.readInt32BE(at)
    at += 4
    if (n < 0) return null
    const out = b.subarray(at, at + n)
    at += n
    return out
  }
  const out = []
  for (let i = 0; i < count; i++) {
    const partition = b.readInt32BE(at)
    const offset = b.readDoubleBE(at + 4)
    const timestamp = b.readDoubleBE(at + 12)
    at += 20
    const key = bytes()
    const value = bytes()
    const nh = b.readUInt16BE(at)
    at += 2
    const headers = []
    for (let h = 0; h < nh; h++) {
      const kl = b.readUInt16BE(at)
      const hk = b.subarray(at + 2, at + 2 + kl).toString('utf8')
      at += 2 + kl
      headers.push({ key: hk, value: bytes() })
    }
    out.push({ partition, offset, timestamp, key, value, headers })
  }
  expect(at).toBe(b.length)
  return out
}

describe('WebSocket streaming: consuming', () => {
  it('refuses a WebSocket from another origin\'s page (issue 31: any web page could read and write topics)', async () => {
    await expect(TestWebSocket.open(web.port, '/ws/topics/stream?offset=earliest', { Origin: 'http://evil.example' })).rejects.toThrow(/403/)
    const ws = await TestWebSocket.open(web.port, '/ws/topics/stream?offset=earliest', { Origin: 'http://127.0.0.1' })
    ws.close()
  })

  it('from earliest as JSON frames: every record with key, value and headers, then new records as they are written', async () => {
    for (let i = 0; i < 6; i++) await producer.send({ topic: 'stream', partition: i % 2, key: `k${i}`, value: `v${i}`, headers: { source: 'test' } })
    await producer.send({ topic: 'stream', partition: 0, key: null, value: Buffer.from([0xff, 0xfe, 0x00]) })
    const ws = await TestWebSocket.open(web.port, '/ws/topics/stream?offset=earliest')
    try {
      const [first] = await ws.waitFor(1)
      expect(json(first!)).toMatchObject({ type: 'subscribed', topic: 'stream', partitions: [0, 1], group: null, format: 'json', from: { offset: 'earliest' } })
      await waitForRecords(ws, 7)
      const records = jsonRecords(ws)
      const values = records.map((r) => r.value)
      expect(values.filter((v) => typeof v === 'string' && v.startsWith('v')).sort()).toEqual(['v0', 'v1', 'v2', 'v3', 'v4', 'v5'])
      const v2 = records.find((r) => r.value === 'v2')!
      expect(v2).toMatchObject({ partition: 0, key: 'k2', keyFormat: 'string', valueFormat: 'string', headers: [{ key: 'source', value: 'test' }] })
      // Bytes that are not UTF-8 come as base64, and say so.
      const raw = records.find((r) => r.valueFormat === 'base64')!
      expect(Buffer.from(raw.value as string, 'base64')).toEqual(Buffer.from([0xff, 0xfe, 0x00]))
      expect(raw.key).toBeNull()
      // Per partition in offset order.
      for (const p of [0, 1]) {
        const offsets = records.filter((r) => r.partition === p).map((r) => r.offset)
        expect(offsets).toEqual([...offsets].sort((a, b) => a - b))
      }
      // Live: a record written now arrives on the open socket within a second.
      const sent = Date.now()
      await producer.send({ topic: 'stream', partition: 1, value: 'live one' })
      await eventually(() => (jsonRecords(ws).some((r) => r.value === 'live one') ? true : undefined), 5000, 'the live record')
      expect(Date.now() - sent).toBeLessThan(1000)
    } finally {
      ws.close()
    }
  })

  it('from an offset of one partition, as binary frames', async () => {
    const ws = await TestWebSocket.open(web.port, '/ws/topics/stream?partition=1&offset=1&format=binary')
    try {
      const [first] = await ws.waitFor(1)
      expect(json(first!)).toMatchObject({ type: 'subscribed', partitions: [1], format: 'binary', from: { offset: 1 } })
      const binary = (w: TestWebSocket) => w.messages.filter((m) => m.binary).flatMap((m) => decodeBinary(m.data))
      await waitForRecords(ws, 3, binary)
      const records = binary(ws)
      expect(records.map((r) => r.offset)).toEqual([1, 2, 3])
      expect(records.every((r) => r.partition === 1)).toBe(true)
      expect(records[0]!.key!.toString()).toBe('k3')
      expect(records[0]!.value!.toString()).toBe('v3')
      expect(records[0]!.headers).toEqual([{ key: 'source', value: Buffer.from('test') }])
      expect(records[2]!.value!.toString()).toBe('live one')
      expect(records[2]!.timestamp).toBeGreaterThan(Date.now() - 60_000)
    } finally {
      ws.close()
    }
  })

  it('from a timestamp: the first record at or after it', async () => {
    // Every record of partition 0 so far was written before `at`; the next one is stamped after it.
    const at = Date.now() + 60_000
    await producer.send({ topic: 'stream', partition: 0, value: 'old', timestamp: 1_000_000 })
    await producer.send({ topic: 'stream', partition: 0, value: 'newer', timestamp: at + 1 })
    const ws = await TestWebSocket.open(web.port, `/ws/topics/stream?partition=0&timestamp=${at}`)
    try {
      await waitForRecords(ws, 1)
      expect(jsonRecords(ws).map((r) => r.value)).toEqual(['newer'])
    } finally {
      ws.close()
    }
  })

  it('as a member of a consumer group: partitions shared with the group, its offsets committed', async () => {
    for (let i = 0; i < 10; i++) await producer.send({ topic: 'stream-group', partition: i % 2, value: `g${i}` })
    const ws = await TestWebSocket.open(web.port, '/ws/topics/stream-group?group=ws-group&offset=earliest')
    try {
      const [first] = await ws.waitFor(1)
      expect(json(first!)).toMatchObject({ type: 'subscribed', group: 'ws-group' })
      await waitForRecords(ws, 10, jsonRecords, 20_000)
      expect(jsonRecords(ws).map((r) => r.value).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `g${i}`).sort())
      const committed = await eventually(async () => {
        const c = await admin.fetchOffsets('ws-group')
        return c.get(tpKey('stream-group', 0)) === 5 && c.get(tpKey('stream-group', 1)) === 5 ? c : undefined
      }, 15_000, "the group's committed offsets")
      expect(committed.size).toBe(2)
    } finally {
      ws.close()
    }
  })

  it('every upgrade lives: sockets opened one after another each get their records (uWS closed a socket sent to from open)', async () => {
    for (let i = 0; i < 8; i++) {
      const ws = await TestWebSocket.open(web.port, `/ws/topics/stream?partition=1&offset=0${i % 2 === 1 ? '&format=binary' : ''}`)
      try {
        await eventually(() => (ws.messages.length >= 2 ? true : undefined), 5000, `records on socket ${i}`)
        expect(ws.closeCode).toBeNull()
      } finally {
        ws.close()
      }
    }
  })

  it('refuses bad upgrades with an HTTP status and a Confluent error body', async () => {
    await expect(TestWebSocket.open(web.port, '/ws/topics/no-such-topic')).rejects.toThrow(/404[\s\S]*40403/)
    await expect(TestWebSocket.open(web.port, '/ws/topics/stream?partition=9')).rejects.toThrow(/404[\s\S]*40402/)
    await expect(TestWebSocket.open(web.port, '/ws/topics/stream?offset=-3')).rejects.toThrow(/400[\s\S]*40002/)
    await expect(TestWebSocket.open(web.port, '/ws/topics/stream?format=xml')).rejects.toThrow(/400[\s\S]*40002/)
    await expect(TestWebSocket.open(web.port, '/ws/topics/stream?offset=1&timestamp=5')).rejects.toThrow(/400/)
    await expect(TestWebSocket.open(web.port, '/ws/topics/stream?group=g&partition=0')).rejects.toThrow(/400/)
  })
})

describe('WebSocket streaming: producing', () => {
  it('acknowledges each message with its seq, id, partition and offset; the records are in the topic', async () => {
    const ws = await TestWebSocket.open(web.port, '/ws/topics/stream-produce')
    try {
      await ws.waitFor(1)
      ws.send(JSON.stringify({ type: 'produce', id: 'a', key: 'k', value: 'hello', headers: { h: 'v' } }))
      ws.send(JSON.stringify({ id: 'b', value: { any: ['json'] }, encoding: 'json' }))
      ws.send(JSON.stringify({ id: 'c', value: Buffer.from('bytes').toString('base64'), encoding: 'base64' }))
      ws.send(Buffer.from('a binary message'))
      ws.send('not json')
      ws.send(JSON.stringify({ id: 'f', value: 'x', partition: 7 }))
      const acks = (): any[] => ws.messages.map(json).filter((m) => m.type === 'ack')
      await eventually(() => (acks().length >= 6 ? true : undefined), 10_000, 'six acks')
      const bySeq = new Map(acks().map((a) => [a.seq, a]))
      expect(bySeq.get(1)).toMatchObject({ id: 'a', partition: 0, offset: 0 })
      expect(bySeq.get(2)).toMatchObject({ id: 'b', partition: 0, offset: 1 })
      expect(bySeq.get(3)).toMatchObject({ id: 'c', offset: 2 })
      expect(bySeq.get(4)).toMatchObject({ offset: 3 })
      expect(bySeq.get(5)).toMatchObject({ error_code: 40001 })
      // A partition the topic does not have is refused for that message alone.
      expect(bySeq.get(6)!.error_code).toBeGreaterThanOrEqual(400)
      expect(bySeq.get(6)!.offset).toBeUndefined()

      const consumer = new Consumer({ bootstrapServers: web.broker.bootstrap })
      consumer.assign([{ topic: 'stream-produce', partition: 0 }])
      consumer.seek('stream-produce', 0, 'earliest')
      const got: { key: string | undefined; value: string; headers: string[] }[] = []
      const deadline = Date.now() + 10_000
      while (got.length < 4 && Date.now() < deadline) for (const r of await consumer.poll(300)) got.push({ key: r.key?.toString(), value: r.value!.toString(), headers: r.headers.map((h) => `${h.key}=${h.value}`) })
      await consumer.close()
      expect(got).toEqual([
        { key: 'k', value: 'hello', headers: ['h=v'] },
        { key: undefined, value: '{"any":["json"]}', headers: [] },
        { key: undefined, value: 'bytes', headers: [] },
        { key: undefined, value: 'a binary message', headers: [] },
      ])
    } finally {
      ws.close()
    }
  })
})

describe('WebSocket streaming: producing past the in-flight bound', () => {
  it('messages beyond websocket.max.inflight.produce are answered 42901 at once and not written', async () => {
    const ws = await TestWebSocket.open(web.port, '/ws/topics/stream-produce?offset=latest')
    try {
      await ws.waitFor(1)
      const before = (await admin.listOffsets([{ topic: 'stream-produce', partition: 0, timestamp: -1 }])).get(tpKey('stream-produce', 0))!.offset
      // 200 messages in one TCP write: the server reads them in one go, before any acknowledgement can
      // come back, so 50 (the bound set above) are in flight and the other 150 are refused.
      ws.socket.cork()
      for (let i = 0; i < 200; i++) ws.send(JSON.stringify({ id: i, value: `burst ${i}` }))
      ws.socket.uncork()
      const acks = (): any[] => ws.messages.map(json).filter((m) => m.type === 'ack')
      await eventually(() => (acks().length >= 200 ? true : undefined), 15_000, '200 acks')
      const refused = acks().filter((a) => a.error_code === 42901)
      const written = acks().filter((a) => a.offset !== undefined)
      expect(written).toHaveLength(50)
      expect(refused).toHaveLength(150)
      expect(new Set(written.map((a) => a.id))).toEqual(new Set(Array.from({ length: 50 }, (_, i) => i)))
      const after = (await admin.listOffsets([{ topic: 'stream-produce', partition: 0, timestamp: -1 }])).get(tpKey('stream-produce', 0))!.offset
      expect(after - before).toBe(50)
      // Once acknowledged, the socket takes messages again.
      ws.send(JSON.stringify({ id: 'again', value: 'after the burst' }))
      await eventually(() => (acks().some((a) => a.id === 'again' && a.offset !== undefined) ? true : undefined), 10_000, 'the next ack')
    } finally {
      ws.close()
    }
  })
})

describe('WebSocket streaming: backpressure', () => {
  const VALUE = Buffer.alloc(16 * 1024, 'x')
  const COUNT = 600 // about 10 MB: more than the kernel's socket buffers hold for a client that stops reading

  it('a slow reader gets every record in order while the server queues at most its bound', async () => {
    const sends: Promise<unknown>[] = []
    for (let i = 0; i < COUNT; i++) sends.push(producer.send({ topic: 'stream-big', partition: 0, value: Buffer.concat([Buffer.from(`${i}:`), VALUE]) }))
    await Promise.all(sends)
    web.app.streams!.maxBufferedSeen = 0
    const ws = await TestWebSocket.open(web.port, '/ws/topics/stream-big?offset=earliest&format=binary')
    try {
      ws.pause()
      // Paused for less than websocket.slow.client.timeout.ms: the stream waits instead of dropping the client.
      await new Promise((r) => setTimeout(r, SLOW_TIMEOUT_MS / 2))
      ws.resume()
      const binary = (w: TestWebSocket) => w.messages.filter((m) => m.binary).flatMap((m) => decodeBinary(m.data))
      await waitForRecords(ws, COUNT, binary, 30_000)
      expect(binary(ws).map((r) => r.offset)).toEqual(Array.from({ length: COUNT }, (_, i) => i))
      expect(ws.closeCode).toBeNull()
      // The queue passed pauseBytes at most by one poll's frames, and never reached the disconnect bound.
      expect(web.app.streams!.maxBufferedSeen).toBeLessThanOrEqual(MAX_BUFFERED)
    } finally {
      ws.close()
    }
  })

  it('a client that stops reading is disconnected after websocket.slow.client.timeout.ms, and its memory let go', async () => {
    const metric = async (): Promise<number> => {
      const text = await (await fetch(`${web.base}/metrics`)).text()
      return Number(/^skein_websocket_slow_client_disconnects_total (\S+)$/m.exec(text)?.[1] ?? 'NaN')
    }
    const before = await metric()
    const open = web.app.streams!.size
    const ws = await TestWebSocket.open(web.port, '/ws/topics/stream-big?offset=earliest&format=binary')
    ws.pause()
    await eventually(async () => ((await metric()) === before + 1 ? true : undefined), 20_000, 'the slow client disconnect')
    expect(web.app.streams!.maxBufferedSeen).toBeLessThanOrEqual(MAX_BUFFERED)
    await eventually(() => (web.app.streams!.size === open ? true : undefined), 5000, 'the stream closed')
    ws.resume()
    await ws.waitClosed(10_000)
    // The data queued before the close still arrived; the records stop well short of the topic's end.
    const received = ws.messages.filter((m) => m.binary).flatMap((m) => decodeBinary(m.data)).length
    expect(received).toBeLessThan(COUNT)
  })
})
