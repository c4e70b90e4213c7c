// Schema'd records through the console tools and a serializer nobody here wrote: `skein produce` with
// --schema-registry-url writes Avro, JSON Schema and Protobuf values in the registry wire format, `skein
// consume` prints them back as JSON, and confluent-kafka-python's serdes (Debian's python3-confluent-kafka
// with python3-requests, python3-jsonschema, python3-protobuf) read what Skein wrote and write what Skein
// reads. A real broker and Skein's registry over HTTP; the Python side is python/serdes_client.py.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer } from '../../src/client/index.js'
import { MemoryStore, SchemaRegistryService } from '../../src/registry/index.js'
import { hasPythonModule, runOk, startTestBroker, SYSTEM_PYTHON, type TestBroker } from '../harness/index.js'
import { oneLine, skein } from '../cli/helpers.js'
import { type RegistryHttp, serveRegistry } from './http-adapter.js'

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'python', 'serdes_client.py')
const PYTHON_SERDES = hasPythonModule('confluent_kafka.schema_registry.json_schema') && hasPythonModule('google.protobuf')

let tb: TestBroker
let registry: RegistryHttp
let admin: Admin
let dir: string

beforeAll(async () => {
  tb = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
  registry = await serveRegistry(new SchemaRegistryService(new MemoryStore()))
  admin = new Admin({ bootstrapServers: tb.bootstrap })
  dir = mkdtempSync(join(tmpdir(), 'skein-serdes-'))
})

afterAll(async () => {
  await admin?.close()
  await registry?.close()
  await tb?.stop()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

async function topic(name: string): Promise<string> {
  await admin.createTopics([{ name, numPartitions: 1, replicationFactor: 1 }])
  return name
}

async function rawValues(name: string, count: number): Promise<Buffer[]> {
  const c = new Consumer({ bootstrapServers: tb.bootstrap })
  c.assign([{ topic: name, partition: 0 }])
  c.seek(name, 0, 'earliest')
  const out: Buffer[] = []
  const deadline = Date.now() + 15000
  try {
    while (out.length < count && Date.now() < deadline) for (const r of await c.poll(200)) out.push(r.value!)
  } finally {
    await c.close()
  }
  return out
}

async function consumeLines(name: string, count: number, extra: string[] = []): Promise<string[]> {
  const r = await skein(['consume', '--bootstrap-server', tb.bootstrap, '--topic', name, '--from-beginning', '--max-messages', String(count), '--schema-registry-url', registry.url, ...extra])
  expect(r.code, r.stderr).toBe(0)
  return r.out.trim().split('\n')
}

/* eslint-disable @typescript-eslint/no-explicit-any */
async function py(op: string, req: Record<string, unknown>): Promise<any> {
  const r = await runOk(SYSTEM_PYTHON, [SCRIPT, op], { input: JSON.stringify({ bootstrap: tb.bootstrap, registry: registry.url, ...req }), timeoutMs: 60000 })
  return JSON.parse(r.stdout.toString())
}

const ORDER = JSON.stringify({ type: 'record', name: 'Order', namespace: 'shop', fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: 'int' }, { name: 'note', type: ['null', 'string'], default: null }] })

describe('skein produce and consume with a Schema Registry', () => {
  it('Avro: registers the schema under <topic>-value, writes the wire format, prints Avro JSON back', async () => {
    const t = await topic('cli-avro')
    const input = '{"id":"o-1","amount":3,"note":null}\n{"id":"o-2","amount":4,"note":{"string":"gift"}}\n{"id":"o-3","amount":5,"note":"plain unions fit too"}\n'
    const p = await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', t, '--schema-registry-url', registry.url, '--value-schema', ORDER], { input })
    expect(p.code, p.stderr).toBe(0)
    const versions = (await (await fetch(`${registry.url}/subjects/cli-avro-value/versions/latest`)).json()) as any
    expect(versions).toMatchObject({ subject: 'cli-avro-value', version: 1 })
    const raw = await rawValues(t, 3)
    // magic 0, the schema id, then Avro binary: "o-1" (zig-zag length 6), 3 (zig-zag 6), union branch 0.
    expect([...raw[0]!]).toEqual([0, 0, 0, 0, versions.id, 6, 0x6f, 0x2d, 0x31, 6, 0])
    expect(await consumeLines(t, 3)).toEqual([
      '{"id":"o-1","amount":3,"note":null}',
      '{"id":"o-2","amount":4,"note":{"string":"gift"}}',
      '{"id":"o-3","amount":5,"note":{"string":"plain unions fit too"}}',
    ])
  })

  it('--value-schema-id writes with a registered schema; Confluent\'s --property names work too', async () => {
    const t = await topic('cli-avro-id')
    const id = ((await (await fetch(`${registry.url}/subjects/cli-avro-value/versions/1`)).json()) as any).id as number
    const p = await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', t, '--property', `schema.registry.url=${registry.url}`, '--property', `value.schema.id=${id}`], { input: '{"id":"o-9","amount":9,"note":null}\n' })
    expect(p.code, p.stderr).toBe(0)
    expect((await rawValues(t, 1))[0]!.readInt32BE(1)).toBe(id)
    // Nothing was registered under this topic's subject: the id was used as given.
    expect((await fetch(`${registry.url}/subjects/cli-avro-id-value/versions`)).status).toBe(404)
    expect(await consumeLines(t, 1, ['--formatter', 'json'])).toEqual([expect.stringContaining('"value":{"id":"o-9","amount":9,"note":null}')])
  })

  it('JSON Schema and Protobuf from schema files', async () => {
    const jt = await topic('cli-json')
    const schemaFile = join(dir, 'reading.json')
    writeFileSync(schemaFile, JSON.stringify({ type: 'object', properties: { sensor: { type: 'string' }, value: { type: 'number' } }, required: ['sensor', 'value'] }))
    const pj = await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', jt, '--schema-registry-url', registry.url, '--value-schema-file', schemaFile, '--value-schema-type', 'JSON'], { input: '{"sensor":"s1","value":1.5}\n' })
    expect(pj.code, pj.stderr).toBe(0)
    expect(await consumeLines(jt, 1)).toEqual(['{"sensor":"s1","value":1.5}'])

    const pt = await topic('cli-protobuf')
    const protoFile = join(dir, 'reading.proto')
    writeFileSync(protoFile, 'syntax = "proto3";\npackage iot;\nmessage Reading {\n  string sensor = 1;\n  int64 value = 2;\n}\n')
    const pp = await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', pt, '--schema-registry-url', registry.url, '--value-schema-file', protoFile, '--value-schema-type', 'PROTOBUF'], { input: '{"sensor":"s2","value":42}\n' })
    expect(pp.code, pp.stderr).toBe(0)
    const raw = (await rawValues(pt, 1))[0]!
    // After the header, the message-index list [0] is the single byte 0 (Confluent's shortcut).
    expect(raw[5]).toBe(0)
    expect(await consumeLines(pt, 1)).toEqual(['{"sensor":"s2","value":"42"}'])
  })

  it('a value that does not fit stops with one line naming the input line; a missing registry is a usage error', async () => {
    const t = await topic('cli-avro-bad')
    const p = await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', t, '--schema-registry-url', registry.url, '--value-schema', ORDER], { input: '{"id":"o-1","amount":1,"note":null}\n{"id":"o-2","amount":"two"}\n' })
    expect(p.code).toBe(1)
    expect(p.stderr).toMatch(/line 2: .*Avro schema/)
    expect(await rawValues(t, 1)).toHaveLength(1)
    const u = await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', t, '--value-schema', ORDER], { input: '' })
    expect(u.code).toBe(1)
    expect(oneLine(u.stderr)).toMatch(/need --schema-registry-url/)
    // A record that is not in the wire format cannot be decoded: said once, with where it is.
    const plain = await topic('cli-plain')
    await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', plain], { input: 'not framed\n' })
    const c = await skein(['consume', '--bootstrap-server', tb.bootstrap, '--topic', plain, '--from-beginning', '--max-messages', '1', '--schema-registry-url', registry.url])
    expect(c.code).toBe(1)
    expect(oneLine(c.stderr)).toMatch(/cli-plain-0@0: .*[Mm]agic byte/)
  })
})

describe.skipIf(!PYTHON_SERDES)('confluent-kafka-python serdes and Skein', () => {
  const READING = JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', title: 'Reading', type: 'object', properties: { sensor: { type: 'string' }, value: { type: 'number' } }, required: ['sensor'] })

  it('JSON Schema: what Python writes, skein consume prints; what skein produce writes, Python reads', async () => {
    const fromPython = await topic('py-json-in')
    expect(await py('produce_json', { topic: fromPython, schema: READING, values: [{ sensor: 'a', value: 1 }, { sensor: 'b', value: 2.5 }] })).toEqual({ errors: [] })
    // Python registered it under the topic's subject, through Skein's registry.
    expect(((await (await fetch(`${registry.url}/subjects/py-json-in-value/versions/latest`)).json()) as any).schemaType).toBe('JSON')
    expect(await consumeLines(fromPython, 2)).toEqual(['{"sensor":"a","value":1}', '{"sensor":"b","value":2.5}'])

    const fromSkein = await topic('py-json-out')
    const p = await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', fromSkein, '--schema-registry-url', registry.url, '--value-schema', READING, '--value-schema-type', 'JSON'], { input: '{"sensor":"c","value":3}\n' })
    expect(p.code, p.stderr).toBe(0)
    expect(await py('consume_json', { topic: fromSkein, schema: READING, count: 1 })).toEqual({ values: [{ sensor: 'c', value: 3 }] })
  }, 120_000)

  it('Protobuf: Python\'s ProtobufDeserializer reads what skein produce wrote (message indexes included)', async () => {
    const t = await topic('py-protobuf')
    const proto = 'syntax = "proto3";\npackage iot;\nmessage Other {\n  string x = 1;\n}\nmessage Reading {\n  string sensor = 1;\n  int64 value = 2;\n}\n'
    const protoFile = join(dir, 'two-messages.proto')
    writeFileSync(protoFile, proto)
    // Registered first by hand; skein produce finds it (same schema, same id) and writes the file's first
    // message, as Confluent's console producer does.
    const id = ((await (await fetch(`${registry.url}/subjects/py-protobuf-value/versions`, { method: 'POST', headers: { 'Content-Type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify({ schema: proto, schemaType: 'PROTOBUF' }) })).json()) as any).id as number
    const p = await skein(['produce', '--bootstrap-server', tb.bootstrap, '--topic', t, '--schema-registry-url', registry.url, '--value-schema-file', protoFile, '--value-schema-type', 'PROTOBUF'], { input: '{"x":"first message"}\n' })
    expect(p.code, p.stderr).toBe(0)
    expect((await rawValues(t, 1))[0]!.readInt32BE(1)).toBe(id)
    const answer = await py('consume_protobuf', { topic: t, count: 1, package: 'iot', message: 'Other', fields: [{ name: 'x', number: 1, type: 'string' }] })
    expect(answer).toEqual({ values: [{ x: 'first message' }] })
  }, 120_000)
})
