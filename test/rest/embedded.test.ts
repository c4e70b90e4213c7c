// The REST Proxy as users start it: inside the broker process (`node dist/src/main.js` with
// rest.listeners, what `npm start` does with the shipped config/server.properties) and standalone
// (`skein rest --bootstrap-server ... --listeners ...`); both answer over HTTP, write through the Kafka
// protocol, and stop cleanly on SIGTERM. Runs dist/: `npx tsc -p tsconfig.json` first.
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Consumer } from '../../src/client/index.js'
import { parseProperties } from '../../src/config/properties.js'
import { freePort, REPO_ROOT, startBrokerProcess, startTestBroker, type BrokerProcess, type TestBroker } from '../harness/broker.js'
import { SKEIN_JS } from '../cli/helpers.js'
import { call } from './helpers.js'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
})

async function consumeOne(bootstrap: string, topic: string): Promise<string | null> {
  const c = new Consumer({ bootstrapServers: bootstrap })
  c.assign([{ topic, partition: 0 }])
  c.seek(topic, 0, 'earliest')
  const deadline = Date.now() + 10000
  try {
    while (Date.now() < deadline) {
      const [r] = await c.poll(300)
      if (r !== undefined) return r.value?.toString() ?? null
    }
    return null
  } finally {
    await c.close()
  }
}

describe('REST Proxy embedded in the broker and standalone', () => {
  it('the shipped config/server.properties turns it on at http://127.0.0.1:8082', () => {
    const props = parseProperties(readFileSync(join(REPO_ROOT, 'config', 'server.properties'), 'utf8'))
    expect(props.get('rest.listeners')).toBe('http://127.0.0.1:8082')
  })

  it('runs inside the broker process with rest.listeners, as a Kafka client of that broker', async () => {
    const restPort = await freePort()
    const broker: BrokerProcess = await startBrokerProcess({ overrides: [`rest.listeners=http://127.0.0.1:${restPort}`, 'rest.consumer.instance.timeout.ms=60000'] })
    cleanups.push(() => broker.kill('SIGKILL'))
    // The broker logs ready when its Kafka listener is up; the proxy starts right after and logs its own line.
    const deadline = Date.now() + 15000
    while (!broker.output().includes('REST Proxy listening') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(broker.output()).toContain(`http://127.0.0.1:${restPort}`)
    const base = `http://127.0.0.1:${restPort}`
    const clusters = await call(base, 'GET', '/v3/clusters')
    expect(clusters.status).toBe(200)
    const clusterId = clusters.body.data[0].cluster_id as string
    const created = await call(base, 'POST', `/v3/clusters/${clusterId}/topics`, { body: { topic_name: 'embedded', partitions_count: 1 } })
    expect(created.status).toBe(201)
    const produced = await call(base, 'POST', `/v3/clusters/${clusterId}/topics/embedded/records`, { body: { value: { type: 'STRING', data: 'through the proxy' } } })
    expect(produced.body).toMatchObject({ error_code: 200, offset: 0 })
    expect(await consumeOne(broker.bootstrap, 'embedded')).toBe('through the proxy')
    // The embedded proxy reached the broker over its Kafka listener, as a client does.
    const groups = await call(base, 'GET', '/topics')
    expect(groups.body).toContain('embedded')
    // The same port serves the web front; /metrics shows the broker's own metrics (its BrokerTopicMetrics).
    const metrics = await (await fetch(`${base}/metrics`)).text()
    expect(metrics).toMatch(/^kafka_server_brokertopicmetrics_messagesin_total\{topic="embedded"\} 1$/m)
    expect((await fetch(`${base}/console/`)).status).toBe(200)
    expect((await fetch(`${base}/ready`)).status).toBe(200)
    expect(await broker.kill('SIGTERM')).toBe(0)
    await expect(fetch(`${base}/topics`)).rejects.toThrow()
  })

  it('a broker refuses a malformed rest.listeners at start', async () => {
    await expect(startBrokerProcess({ overrides: ['rest.listeners=8082'], readyTimeoutMs: 10000 })).rejects.toThrow(/rest.listeners/)
  })

  it('a second broker refuses the REST port the first holds, naming rest.listeners (no shared port)', async () => {
    // Issue 31: uWS's SO_REUSEPORT let a second broker with the same config share 8082, the kernel
    // alternating requests between the two processes.
    const port = await freePort()
    const first = await startBrokerProcess({ overrides: [`rest.listeners=http://127.0.0.1:${port}`] })
    cleanups.push(() => first.kill('SIGKILL'))
    // The Kafka listener comes up first (its ready line), then the embedded services: the process exits.
    const second = await startBrokerProcess({ overrides: [`rest.listeners=http://127.0.0.1:${port}`] })
    cleanups.push(() => second.kill('SIGKILL'))
    const exited = await new Promise<number | null>((resolve) => {
      if (!second.alive()) resolve(second.child.exitCode)
      second.child.once('exit', (code) => resolve(code))
      setTimeout(() => resolve(null), 15_000)
    })
    expect(exited).toBe(1)
    expect(second.output()).toMatch(/rest.listeners: cannot listen on http:\/\/127.0.0.1:\d+: EADDRINUSE \(address already in use\)/)
    const clusters = new Set<string>()
    for (let i = 0; i < 8; i++) clusters.add(((await (await fetch(`http://127.0.0.1:${port}/v3/clusters`)).json()) as { data: { cluster_id: string }[] }).data[0]!.cluster_id)
    expect(clusters.size).toBe(1)
  })

  it('skein rest serves a cluster standalone and stops on SIGTERM', async () => {
    const broker: TestBroker = await startTestBroker()
    cleanups.push(() => broker.stop())
    const restPort = await freePort()
    const child = spawn(process.execPath, [SKEIN_JS, 'rest', '--bootstrap-server', broker.bootstrap, '--listeners', `http://127.0.0.1:${restPort}`, '--override', 'consumer.request.timeout.ms=500'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKEIN_LOG_LEVEL: 'warn' } })
    cleanups.push(async () => child.kill('SIGKILL'))
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (out += d.toString()))
    const deadline = Date.now() + 15000
    while (!out.includes('REST Proxy listening') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    expect(out).toContain(`REST Proxy listening on http://127.0.0.1:${restPort} (loopback only`)
    expect(out).not.toMatch(/WARNING/)
    const base = `http://127.0.0.1:${restPort}`
    const produced = await call(base, 'POST', '/topics/standalone', { contentType: 'application/vnd.kafka.json.v2+json', body: { records: [{ value: 'x' }] } })
    expect(produced.status).toBe(404) // no auto-creation through the proxy
    const brokers = await call(base, 'GET', '/brokers')
    expect(brokers.body).toEqual({ brokers: [0] })
    // Standalone, the web front is served too; /metrics shows this process's own registry (no broker here).
    expect((await fetch(`${base}/console/`)).status).toBe(200)
    expect((await fetch(`${base}/ready`)).status).toBe(200)
    const metrics = await (await fetch(`${base}/metrics`)).text()
    expect(metrics).toMatch(/^skein_websocket_connections 0$/m)
    expect(metrics).not.toContain('kafka_server_brokertopicmetrics')
    expect((await call(base, 'GET', '/console/api/info')).body).toMatchObject({ throughputSource: 'offsets' })
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
    child.kill('SIGTERM')
    expect(await exit).toBe(0)
  })

  it('skein rest refuses unknown settings with one line', async () => {
    const child = spawn(process.execPath, [SKEIN_JS, 'rest', '--override', 'no.such.setting=1'], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let err = ''
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
    expect(code).toBe(1)
    expect(err.trim()).toBe("skein rest: Unknown REST Proxy config 'no.such.setting'")
  })
})
