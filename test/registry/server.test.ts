// The Schema Registry as users start it: inside the broker process (`node dist/src/main.js` with
// schema.registry.listeners, what `npm start` does with the shipped config/server.properties), where the
// embedded REST Proxy uses it for its avro format, and standalone (`skein schema-registry`), where two
// instances elect one primary, the secondary forwards writes, and takes over when the primary stops.
// Runs dist/: `npx tsc -p tsconfig.json` first.
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { Admin, Consumer } from '../../src/client/index.js'
import { parseProperties } from '../../src/config/properties.js'
import { REPO_ROOT, freePort, runOk, startBrokerProcess, startTestBroker, type BrokerProcess } from '../harness/index.js'
import { SKEIN_JS, oneLine, skein } from '../cli/helpers.js'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
})

const JSON_TYPE = 'application/vnd.schemaregistry.v1+json'

async function registry(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(base + path, { method, headers: body === undefined ? {} : { 'Content-Type': JSON_TYPE }, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, body: text === '' ? null : JSON.parse(text) }
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

/** `skein schema-registry` as a child process; resolves once it prints its listening line. */
async function startRegistryProcess(args: string[]): Promise<{ child: ChildProcess; output: () => string; exit: Promise<number | null> }> {
  const child = spawn(process.execPath, [SKEIN_JS, 'schema-registry', ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SKEIN_LOG_FORMAT: 'json' } })
  let out = ''
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  cleanups.push(async () => {
    if (child.exitCode === null) child.kill('SIGKILL')
  })
  await Promise.race([
    waitFor('the registry to listen', () => out.includes('Schema Registry listening on')),
    exit.then((code) => {
      throw new Error(`skein schema-registry exited (${code}):\n${out}`)
    }),
  ])
  return { child, output: () => out, exit }
}

describe('Schema Registry embedded in the broker and standalone', () => {
  it('the shipped config/server.properties turns it on at http://127.0.0.1:8081', () => {
    const props = parseProperties(readFileSync(join(REPO_ROOT, 'config', 'server.properties'), 'utf8'))
    expect(props.get('schema.registry.listeners')).toBe('http://127.0.0.1:8081')
  })

  it('runs inside the broker process, stores schemas in _schemas, and serves the embedded REST Proxy', async () => {
    const [registryPort, restPort] = [await freePort(), await freePort()]
    const broker: BrokerProcess = await startBrokerProcess({
      overrides: [`schema.registry.listeners=http://127.0.0.1:${registryPort}`, `rest.listeners=http://127.0.0.1:${restPort}`, 'group.initial.rebalance.delay.ms=0'],
    })
    cleanups.push(() => broker.kill('SIGKILL'))
    await waitFor('the REST Proxy', () => broker.output().includes('REST Proxy listening'))
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    cleanups.push(() => admin.close())
    await admin.createTopics([{ name: 'orders', numPartitions: 1, replicationFactor: 1 }])
    const base = `http://127.0.0.1:${registryPort}`
    const schema = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'amount', type: 'int' }] })
    expect(await registry(base, 'POST', '/subjects/orders-value/versions', { schema })).toEqual({ status: 200, body: { id: 1 } })
    // The REST Proxy's avro format resolves schema ids in the embedded registry without being told its URL.
    const produced = await fetch(`http://127.0.0.1:${restPort}/topics/orders`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/vnd.kafka.avro.v2+json' },
      body: JSON.stringify({ value_schema_id: 1, records: [{ value: { amount: 7 } }] }),
    })
    const answer = (await produced.json()) as any
    expect(answer.value_schema_id, JSON.stringify(answer)).toBe(1)
    expect(answer.offsets[0].error).toBeNull()
    // What reached the topic: Confluent's framing (magic 0, schema id 1) and Avro's zig-zag int 7.
    const c = new Consumer({ bootstrapServers: broker.bootstrap })
    cleanups.push(() => c.close())
    c.assign([{ topic: 'orders', partition: 0 }, { topic: '_schemas', partition: 0 }])
    c.seek('orders', 0, 'earliest')
    c.seek('_schemas', 0, 'earliest')
    const seen = new Map<string, Buffer[]>()
    await waitFor('the record and the schema', async () => {
      for (const r of await c.poll(200)) seen.set(r.topic, [...(seen.get(r.topic) ?? []), r.value!])
      return seen.has('orders') && seen.has('_schemas')
    })
    expect([...seen.get('orders')![0]!]).toEqual([0, 0, 0, 0, 1, 14])
    expect(seen.get('_schemas')!.map((v) => v.toString()).some((v) => v.includes('"subject":"orders-value"'))).toBe(true)
    expect(await broker.kill('SIGTERM')).toBe(0)
    await expect(fetch(`${base}/subjects`)).rejects.toThrow()
  }, 90_000)

  it('a broker stopped while the registry\'s election round is held by the coordinator stops at once, not after the round', async () => {
    // The coordinator holds the first JoinGroup for group.initial.rebalance.delay.ms (60 s here): stopping
    // must not wait for it (it did: the broker stopped only after the delay, ~6 s with the shipped 3 s).
    const broker: BrokerProcess = await startBrokerProcess({
      overrides: [`schema.registry.listeners=http://127.0.0.1:${await freePort()}`, 'group.initial.rebalance.delay.ms=60000'],
    })
    cleanups.push(() => broker.kill('SIGKILL'))
    await waitFor('the registry\'s election round', () => broker.output().includes('preparing to rebalance group'))
    const started = Date.now()
    expect(await broker.kill('SIGTERM')).toBe(0)
    expect(Date.now() - started).toBeLessThan(20_000)
    expect(broker.output()).toContain('shut down cleanly')
  }, 60_000)

  it("serves the broker's /metrics, /health and /ready on schema.registry.listeners alone (no rest.listeners)", async () => {
    const registryPort = await freePort()
    const broker: BrokerProcess = await startBrokerProcess({ overrides: [`schema.registry.listeners=http://127.0.0.1:${registryPort}`] })
    cleanups.push(() => broker.kill('SIGKILL'))
    await waitFor('the Schema Registry', () => broker.output().includes('Schema Registry started'))
    const base = `http://127.0.0.1:${registryPort}`
    const metrics = await fetch(`${base}/metrics`)
    expect(metrics.status).toBe(200)
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    // The broker's own registry: Kafka's metrics under the JMX exporter's names.
    expect(await metrics.text()).toContain('# TYPE kafka_controller_kafkacontroller_activecontrollercount gauge')
    const health = await fetch(`${base}/health`)
    expect(health.status).toBe(200)
    expect(await health.json()).toEqual({ status: 'UP' })
    await waitFor('/ready', async () => (await fetch(`${base}/ready`)).status === 200)
    // The registry still answers every other path.
    expect((await registry(base, 'GET', '/subjects')).status).toBe(200)
    expect(await broker.kill('SIGTERM')).toBe(0)
  }, 90_000)

  it('skein schema-registry: two instances, one primary, writes forwarded, the secondary takes over', async () => {
    const tb = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
    cleanups.push(() => tb.stop())
    const dir = mkdtempSync(join(tmpdir(), 'skein-registry-'))
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }))
    // The election picks the smallest URL: the first instance gets the port that sorts first.
    const ports = [await freePort(), await freePort()].sort((a, b) => (String(a) < String(b) ? -1 : 1))
    const file = join(dir, 'schema-registry.properties')
    writeFileSync(file, `kafkastore.bootstrap.servers=${tb.bootstrap}\nkafkastore.topic=_team_schemas\nschema.compatibility.level=full\n`)
    const first = await startRegistryProcess(['--config', file, '--listeners', `http://127.0.0.1:${ports[0]}`])
    const second = await startRegistryProcess(['--config', file, '--listeners', `http://127.0.0.1:${ports[1]}`, '--override', 'schema.registry.group.id=schema-registry'])
    const [a, b] = ports.map((p) => `http://127.0.0.1:${p}`) as [string, string]
    // Written through the secondary, assigned by the primary; both read it back.
    expect(await registry(b, 'POST', '/subjects/s/versions', { schema: '"string"' })).toEqual({ status: 200, body: { id: 1 } })
    expect((await registry(a, 'GET', '/subjects/s/versions/1')).body).toMatchObject({ subject: 's', id: 1 })
    expect((await registry(b, 'GET', '/config')).body).toEqual({ compatibilityLevel: 'FULL' })
    first.child.kill('SIGTERM')
    expect(await first.exit).toBe(0)
    // The survivor is elected (the primary left the group) and assigns the next id, never a used one.
    expect(await registry(b, 'POST', '/subjects/t/versions', { schema: '"int"' })).toEqual({ status: 200, body: { id: 2 } })
    expect(await registry(b, 'POST', '/subjects/s/versions', { schema: '"string"' })).toEqual({ status: 200, body: { id: 1 } })
    second.child.kill('SIGTERM')
    expect(await second.exit).toBe(0)
    // Everything lives in the configured topic.
    const c = new Consumer({ bootstrapServers: tb.bootstrap })
    cleanups.push(() => c.close())
    c.assign([{ topic: '_team_schemas', partition: 0 }])
    c.seek('_team_schemas', 0, 'earliest')
    const subjects = new Set<string>()
    await waitFor('both schemas in _team_schemas', async () => {
      for (const r of await c.poll(200)) {
        const m = /"subject":"([^"]+)"/.exec(r.value?.toString() ?? '')
        if (m !== null && r.key?.toString().includes('SCHEMA')) subjects.add(m[1]!)
      }
      return subjects.has('s') && subjects.has('t')
    })
  }, 120_000)

  it('refuses an unknown setting and a malformed listener with one line', async () => {
    const unknown = await skein(['schema-registry', '--override', 'kafkastore.topik=x'])
    expect(unknown.code).toBe(1)
    expect(oneLine(unknown.stderr)).toMatch(/Unknown Schema Registry config 'kafkastore.topik'/)
    const listener = await skein(['schema-registry', '--listeners', '8081'])
    expect(listener.code).toBe(1)
    expect(oneLine(listener.stderr)).toMatch(/listeners/)
    await expect(startBrokerProcess({ overrides: ['schema.registry.listeners=8081'], readyTimeoutMs: 10000 })).rejects.toThrow(/schema.registry.listeners/)
  }, 60_000)

  it('a library user imports the serializers and the registry from skein/registry', async () => {
    // In the package (dist/), so that the bare specifier resolves through package.json's exports.
    const script = join(REPO_ROOT, 'dist', `registry-exports-${process.pid}.mjs`)
    writeFileSync(script, "import { AvroSerializer, AvroDeserializer, JsonSchemaSerializer, ProtobufSerializer, SchemaRegistryClient, SchemaRegistryServer } from 'skein/registry'\nconsole.log([AvroSerializer, AvroDeserializer, JsonSchemaSerializer, ProtobufSerializer, SchemaRegistryClient, SchemaRegistryServer].map((c) => c.name).join(' '))\n")
    cleanups.push(async () => rmSync(script, { force: true }))
    const r = await runOk(process.execPath, [script], { timeoutMs: 30_000 })
    expect(r.stdout.toString().trim()).toBe('AvroSerializer AvroDeserializer JsonSchemaSerializer ProtobufSerializer SchemaRegistryClient SchemaRegistryServer')
  })

  it('--help names Confluent\'s settings file and the flags', async () => {
    const r = await skein(['schema-registry', '--help'])
    expect(r.code).toBe(0)
    expect(r.out).toContain('skein schema-registry [--bootstrap-server HOST:PORT]')
    expect(r.out).toContain('schema-registry.properties')
  })
})
