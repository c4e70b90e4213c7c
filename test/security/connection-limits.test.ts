// max.connections, max.connections.per.ip and its overrides on real sockets (127.0.0.1, .2 and .3 are all
// loopback on Linux, so several client addresses are available): a connection beyond a limit is closed at
// once, the ones already served keep working, and a slot given back is usable again. Thousands of refused
// attempts leave the served connections answering.
import { connect, type Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RawClient, startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let port: number

beforeAll(async () => {
  // Clients use CLIENT; the inter-broker listener (PLAINTEXT) is exempt from max.connections (KIP-402).
  tb = await startTestBroker([
    'listeners=PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    'max.connections=6',
    'max.connections.per.ip=2',
    'max.connections.per.ip.overrides=127.0.0.3:4',
  ])
  port = tb.broker.endpointFor('CLIENT').port
})

afterAll(async () => {
  await tb?.stop()
})

/** Opens a socket from `from`; resolves true when the broker keeps it open for `holdMs`, false when it closes it. */
function attempt(from: string, holdMs = 300, keep?: Socket[], to = port): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ host: '127.0.0.1', port: to, localAddress: from })
    let closed = false
    s.on('error', () => {})
    s.on('close', () => {
      closed = true
      resolve(false)
    })
    s.on('connect', () =>
      setTimeout(() => {
        if (closed) return
        if (keep !== undefined) keep.push(s)
        else s.destroy()
        resolve(true)
      }, holdMs),
    )
  })
}

describe('connection limits', () => {
  it('refuses connections beyond max.connections.per.ip (with overrides) and max.connections, and serves the others', async () => {
    const kept: Socket[] = []
    const served = await RawClient.connect('127.0.0.1', port)
    expect((await served.metadata(null)).brokers).toHaveLength(1)
    expect(await attempt('127.0.0.1', 300, kept)).toBe(true) // the second from 127.0.0.1
    expect(await attempt('127.0.0.1')).toBe(false) // per ip: 2
    for (let i = 0; i < 4; i++) expect(await attempt('127.0.0.3', 300, kept)).toBe(true) // override: 4
    expect(await attempt('127.0.0.3')).toBe(false)
    expect(await attempt('127.0.0.2')).toBe(false) // max.connections: 6 in all
    // The inter-broker listener is not refused by max.connections (127.0.0.2 is under its per-address limit).
    expect(await attempt('127.0.0.2', 300, undefined, tb.port)).toBe(true)

    // 10,000 attempts beyond the limits (the figure) do not disturb the served connection.
    let refused = 0
    for (let round = 0; round < 100; round++) {
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => attempt(`127.0.0.${1 + (i % 3)}`, 3000)))
      refused += results.filter((r) => !r).length
    }
    expect(refused).toBe(10_000)
    expect((await served.metadata(null)).brokers).toHaveLength(1)

    // A slot given back is usable again.
    kept.shift()!.destroy()
    await new Promise((r) => setTimeout(r, 100))
    expect(await attempt('127.0.0.1')).toBe(true)
    served.close()
    for (const s of kept) s.destroy()
  }, 60_000)
})

describe('max.connection.creation.rate', () => {
  it('refuses new connections beyond the rate, not on the inter-broker listener, and serves the others; the rate refills', async () => {
    const rated = await startTestBroker([
      'listeners=PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT',
      'inter.broker.listener.name=PLAINTEXT',
      'max.connection.creation.rate=5',
    ])
    try {
      const client = rated.broker.endpointFor('CLIENT').port
      const served = await RawClient.connect('127.0.0.1', client)
      const burst = await Promise.all(Array.from({ length: 20 }, () => attempt('127.0.0.1', 300, undefined, client)))
      // Five tokens at most (the served connection took one), plus what refilled during the burst.
      const admitted = burst.filter((ok) => ok).length
      expect(admitted).toBeGreaterThanOrEqual(3)
      expect(admitted).toBeLessThanOrEqual(7)
      expect((await served.metadata(null)).brokers).toHaveLength(1)
      // The inter-broker listener is exempt (KIP-612).
      const interBroker = await Promise.all(Array.from({ length: 10 }, () => attempt('127.0.0.1', 300, undefined, rated.port)))
      expect(interBroker.every((ok) => ok)).toBe(true)
      await new Promise((r) => setTimeout(r, 1100))
      expect(await attempt('127.0.0.1', 300, undefined, client)).toBe(true)
      served.close()
    } finally {
      await rated.stop()
    }
  }, 30_000)
})
