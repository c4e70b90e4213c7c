// Idempotent producers of real clients: kafkajs (idempotent: true), @platformatic/kafka (idempotent) and
// librdkafka (enable.idempotence via kcat -X and python3-confluent-kafka). Each one produces through a
// TCP proxy that cuts connections: some Produce requests are cut halfway (the broker never sees them
// whole), others reach the broker and the connection is cut before its answer goes back, so the client
// retries a batch the broker already wrote. Every record must then be in the log exactly once, in the
// order sent, in batches carrying the client's producer id. The broker advertises the proxy, so clients
// reconnect through it.
import { connect, createServer, type Server, type Socket } from 'node:net'
import { createRequire } from 'node:module'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Producer } from '@platformatic/kafka'
import {
  RawClient, decodeBatches, freePort, hasKcat, hasPythonModule, recordsBuffer, runOk, startTestBroker, SYSTEM_PYTHON, type TestBroker,
} from '../harness/index.js'

const require = createRequire(import.meta.url)
/* eslint-disable @typescript-eslint/no-explicit-any */
const { Kafka, logLevel } = require('kafkajs') as any

const PRODUCE = 0

/**
 * Forwards 127.0.0.1:port to the broker, frame by frame. Of the Produce requests it sees, every
 * `cutEvery`-th is sabotaged, alternately: cut halfway (both sockets destroyed) or forwarded whole with
 * its answer swallowed and the connection cut when the answer arrives.
 */
class CuttingProxy {
  readonly sockets = new Set<Socket>()
  produceSeen = 0
  cutMidRequest = 0
  cutBeforeAnswer = 0
  enabled = true

  private constructor(readonly server: Server, readonly port: number) {}

  static async start(port: number, target: () => number, cutEvery: number): Promise<CuttingProxy> {
    const server = createServer()
    const proxy = new CuttingProxy(server, port)
    server.on('connection', (client) => proxy.pipe(client, target(), cutEvery))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen({ host: '127.0.0.1', port }, resolve)
    })
    return proxy
  }

  private pipe(client: Socket, targetPort: number, cutEvery: number): void {
    const upstream = connect({ host: '127.0.0.1', port: targetPort })
    this.sockets.add(client)
    this.sockets.add(upstream)
    const cut = (): void => {
      client.destroy()
      upstream.destroy()
    }
    for (const s of [client, upstream]) {
      s.on('error', cut)
      s.on('close', () => {
        this.sockets.delete(s)
        cut()
      })
    }
    const swallow = new Set<number>()
    frames(client, (frame) => {
      if (this.enabled && frame.readInt16BE(4) === PRODUCE && ++this.produceSeen % cutEvery === 0) {
        if ((this.cutMidRequest + this.cutBeforeAnswer) % 2 === 0) {
          this.cutMidRequest++
          upstream.write(frame.subarray(0, frame.length >> 1), cut)
          return
        }
        this.cutBeforeAnswer++
        swallow.add(frame.readInt32BE(8))
      }
      upstream.write(frame)
    })
    frames(upstream, (frame) => {
      if (swallow.has(frame.readInt32BE(4))) cut()
      else client.write(frame)
    })
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}

/** Calls onFrame with each whole size-prefixed frame (prefix included) read from s. */
function frames(s: Socket, onFrame: (frame: Buffer) => void): void {
  let buf: Buffer = Buffer.alloc(0)
  s.on('data', (d: Buffer) => {
    buf = buf.length === 0 ? d : Buffer.concat([buf, d])
    while (buf.length >= 4 && buf.length >= 4 + buf.readInt32BE(0)) {
      const size = 4 + buf.readInt32BE(0)
      onFrame(buf.subarray(0, size))
      buf = buf.subarray(size)
    }
  })
}

let tb: TestBroker
let proxy: CuttingProxy
let raw: RawClient

beforeAll(async () => {
  const proxyPort = await freePort()
  tb = await startTestBroker([`advertised.listeners=PLAINTEXT://127.0.0.1:${proxyPort}`])
  // tb.port is the advertised (proxy) port; the broker itself listens on its bound port.
  const brokerPort = tb.broker.bound[0]!.port
  proxy = await CuttingProxy.start(proxyPort, () => brokerPort, 3)
  raw = await RawClient.connect(tb.host, brokerPort)
})

afterAll(async () => {
  raw?.close()
  await proxy?.close()
  await tb?.stop()
})

/** Every batch of partition 0 (the raw client fetches directly from the broker). */
async function batches(topic: string): Promise<ReturnType<typeof decodeBatches>> {
  const p = await raw.fetch(topic, 0, 0)
  expect(p.errorCode).toBe(0)
  return decodeBatches(recordsBuffer(p))
}

async function producerIdsOf(topic: string): Promise<Set<bigint>> {
  const p = await raw.fetch(topic, 0, 0)
  const buf = recordsBuffer(p)
  const ids = new Set<bigint>()
  for (let pos = 0; pos + 61 <= buf.length; pos += 12 + buf.readInt32BE(pos + 8)) ids.add(buf.readBigInt64BE(pos + 43))
  return ids
}

async function expectExactlyOnce(topic: string, want: string[]): Promise<void> {
  const got = (await batches(topic)).flatMap((b) => b.records)
  expect(got.map((r) => r.value!.toString())).toEqual(want)
  expect(got.map((r) => r.offset)).toEqual(want.map((_, i) => i))
  const ids = await producerIdsOf(topic)
  expect(ids.size).toBeGreaterThanOrEqual(1)
  for (const id of ids) expect(id).toBeGreaterThanOrEqual(0n)
}

function cutsSoFar(): number {
  return proxy.cutMidRequest + proxy.cutBeforeAnswer
}

describe('kafkajs idempotent producer', () => {
  it('retries over cut connections without duplicates', async () => {
    const topic = 'idem-kafkajs'
    expect((await raw.createTopic(topic, 1)).errorCode).toBe(0)
    const kafka = new Kafka({ clientId: 'skein-idem', brokers: [`127.0.0.1:${proxy.port}`], logLevel: logLevel.NOTHING, retry: { retries: 10, initialRetryTime: 50, maxRetryTime: 500 }, requestTimeout: 5000 })
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
    await producer.connect()
    const before = cutsSoFar()
    const want: string[] = []
    try {
      for (let i = 0; i < 18; i++) {
        const values = [`kjs-${i}-a`, `kjs-${i}-b`]
        const res = await producer.send({ topic, acks: -1, messages: values.map((v) => ({ value: v, partition: 0 })) })
        expect(res[0].errorCode).toBe(0)
        expect(Number(res[0].baseOffset)).toBe(want.length)
        want.push(...values)
      }
    } finally {
      await producer.disconnect()
    }
    expect(cutsSoFar() - before).toBeGreaterThanOrEqual(4)
    await expectExactlyOnce(topic, want)
  })
})

describe('@platformatic/kafka idempotent producer', () => {
  it('retries over cut connections without duplicates', async () => {
    const topic = 'idem-platformatic'
    expect((await raw.createTopic(topic, 1)).errorCode).toBe(0)
    const producer = new Producer({ clientId: 'skein-idem-pk', bootstrapBrokers: [`127.0.0.1:${proxy.port}`], idempotent: true, retries: 10, retryDelay: 50, timeout: 5000 })
    const before = cutsSoFar()
    const want: string[] = []
    try {
      for (let i = 0; i < 18; i++) {
        const values = [`pk-${i}-a`, `pk-${i}-b`]
        const res = await producer.send({ messages: values.map((v) => ({ topic, partition: 0, value: Buffer.from(v) })) })
        expect(res.offsets?.[0]?.offset).toBe(BigInt(want.length))
        want.push(...values)
      }
    } finally {
      await producer.close()
    }
    expect(cutsSoFar() - before).toBeGreaterThanOrEqual(4)
    await expectExactlyOnce(topic, want)
  })
})

const PYTHON = hasPythonModule('confluent_kafka')
// librdkafka: one message per flush, so each is its own Produce request; every delivery report must
// be a success at the offset that follows the previous one.
const CONFLUENT_SCRIPT = `
import json, sys
from confluent_kafka import Producer
req = json.load(sys.stdin)
p = Producer({"bootstrap.servers": req["bootstrap"], "enable.idempotence": True, "acks": "all", "linger.ms": 0,
              "message.timeout.ms": 30000, "retry.backoff.ms": 50, "socket.timeout.ms": 5000,
              "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 200})
reports = []
def cb(err, msg):
    reports.append({"error": None if err is None else str(err), "offset": msg.offset()})
for v in req["values"]:
    p.produce(req["topic"], value=v.encode(), partition=0, on_delivery=cb)
    if p.flush(30) != 0:
        raise SystemExit("not delivered within 30 s")
print(json.dumps(reports))
`

describe.skipIf(!PYTHON)('librdkafka (python3-confluent-kafka) with enable.idempotence', () => {
  it('retries over cut connections without duplicates', async () => {
    const topic = 'idem-confluent'
    expect((await raw.createTopic(topic, 1)).errorCode).toBe(0)
    const want = Array.from({ length: 15 }, (_, i) => `ck-${i}`)
    const before = cutsSoFar()
    const r = await runOk(SYSTEM_PYTHON, ['-c', CONFLUENT_SCRIPT], { input: JSON.stringify({ bootstrap: `127.0.0.1:${proxy.port}`, topic, values: want }), timeoutMs: 90000 })
    const reports = JSON.parse(r.stdout.toString()) as { error: string | null; offset: number }[]
    expect(reports).toEqual(want.map((_, i) => ({ error: null, offset: i })))
    expect(cutsSoFar() - before).toBeGreaterThanOrEqual(3)
    await expectExactlyOnce(topic, want)
  })
})

describe.skipIf(!hasKcat())('librdkafka (kcat -X enable.idempotence=true)', () => {
  it('produces with a producer id and sequences, each record once', async () => {
    const topic = 'idem-kcat'
    expect((await raw.createTopic(topic, 1)).errorCode).toBe(0)
    const want = Array.from({ length: 40 }, (_, i) => `kc-${i}`)
    proxy.enabled = false
    try {
      await runOk('kcat', ['-P', '-b', `127.0.0.1:${proxy.port}`, '-t', topic, '-p', '0', '-X', 'enable.idempotence=true', '-X', 'linger.ms=5', '-X', 'batch.num.messages=7'], {
        input: want.join('\n') + '\n',
        timeoutMs: 60000,
      })
    } finally {
      proxy.enabled = true
    }
    await expectExactlyOnce(topic, want)
    // librdkafka numbers its batches from 0 per partition: sequences follow the offsets.
    const p = await raw.fetch(topic, 0, 0)
    const buf = recordsBuffer(p)
    for (let pos = 0; pos + 61 <= buf.length; pos += 12 + buf.readInt32BE(pos + 8)) {
      expect(buf.readInt32BE(pos + 53)).toBe(Number(buf.readBigInt64BE(pos)))
    }
  })
})
