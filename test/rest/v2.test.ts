// REST Proxy v2 against a real broker and a Schema Registry (the registry's route table over
// src/registry/http.ts), over HTTP from fetch: topics, partitions and offsets, brokers, produce in every
// embedded format (binary, json, avro, jsonschema, protobuf; value_schema and value_schema_id), the
// consumer instance lifecycle (subscribe, assign, seek, records, commit, delete), instance expiry, and
// Confluent's error answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer, Producer } from '../../src/client/index.js'
import { AvroDeserializer, SchemaRegistryClient } from '../../src/registry/serdes/index.js'
import { call, callWithBody, eventually, sleep, startRest, type RestSetup } from './helpers.js'

const V2 = 'application/vnd.kafka.v2+json'
const ct = (format: string): string => `application/vnd.kafka.${format}.v2+json`

let s: RestSetup
let admin: Admin
beforeAll(async () => {
  s = await startRest({ registry: true, settings: { 'consumer.instance.timeout.ms': '1500', 'request.body.max.bytes': '65536' } })
  admin = new Admin({ bootstrapServers: s.broker.bootstrap })
  await admin.createTopics([
    { name: 'v2-topic', numPartitions: 2, configs: { 'retention.ms': '86400000' } },
    { name: 'v2-avro', numPartitions: 1 },
    { name: 'v2-jsonschema', numPartitions: 1 },
    { name: 'v2-proto', numPartitions: 1 },
    { name: 'v2-consume', numPartitions: 2 },
    { name: 'v2-poison', numPartitions: 1 },
  ])
})
afterAll(async () => {
  await admin?.close()
  await s?.stop()
})

async function read(topic: string, partition: number, count: number): Promise<{ key: Buffer | null; value: Buffer | null }[]> {
  const c = new Consumer({ bootstrapServers: s.broker.bootstrap })
  c.assign([{ topic, partition }])
  c.seek(topic, partition, 'earliest')
  const out: { key: Buffer | null; value: Buffer | null }[] = []
  const deadline = Date.now() + 10000
  while (out.length < count && Date.now() < deadline) out.push(...(await c.poll(300)).map((r) => ({ key: r.key, value: r.value })))
  await c.close()
  return out
}

describe('REST Proxy v2: metadata', () => {
  it('lists and describes topics, partitions, offsets and brokers', async () => {
    const topics = await call(s.base, 'GET', '/topics', { accept: V2 })
    expect(topics.status).toBe(200)
    expect(topics.headers.get('content-type')).toBe(V2)
    expect(topics.body).toEqual(expect.arrayContaining(['v2-topic', 'v2-avro']))
    expect(topics.body).not.toContain('__consumer_offsets')
    const t = await call(s.base, 'GET', '/topics/v2-topic')
    expect(t.body.name).toBe('v2-topic')
    expect(t.body.configs['retention.ms']).toBe('86400000')
    expect(t.body.partitions).toEqual([
      { partition: 0, leader: 0, replicas: [{ broker: 0, leader: true, in_sync: true }] },
      { partition: 1, leader: 0, replicas: [{ broker: 0, leader: true, in_sync: true }] },
    ])
    expect((await call(s.base, 'GET', '/topics/v2-topic/partitions')).body).toHaveLength(2)
    expect((await call(s.base, 'GET', '/topics/v2-topic/partitions/1')).body.partition).toBe(1)
    expect((await call(s.base, 'GET', '/topics/nope')).body).toEqual({ error_code: 40401, message: 'Topic not found.' })
    const np = await call(s.base, 'GET', '/topics/v2-topic/partitions/5')
    expect(np.status).toBe(404)
    expect(np.body).toEqual({ error_code: 40402, message: 'Partition not found.' })
    expect((await call(s.base, 'GET', '/topics/v2-topic/partitions/0/offsets')).body).toEqual({ beginning_offset: 0, end_offset: 0 })
    expect((await call(s.base, 'GET', '/brokers')).body).toEqual({ brokers: [0] })
  })
})

describe('REST Proxy v2: produce', () => {
  it('binary and json records to a topic and to a partition', async () => {
    const bin = await call(s.base, 'POST', '/topics/v2-topic/partitions/1', {
      contentType: ct('binary'),
      body: { records: [{ key: Buffer.from('k').toString('base64'), value: Buffer.from([1, 2, 3]).toString('base64') }, { value: null }] },
    })
    expect(bin.status).toBe(200)
    expect(bin.body).toEqual({
      offsets: [
        { partition: 1, offset: 0, error_code: null, error: null },
        { partition: 1, offset: 1, error_code: null, error: null },
      ],
      key_schema_id: null,
      value_schema_id: null,
    })
    const json = await call(s.base, 'POST', '/topics/v2-topic', { contentType: ct('json'), body: { records: [{ partition: 0, key: { id: 1 }, value: { name: 'ann', tags: [1, 2] } }] } })
    expect(json.body.offsets).toEqual([{ partition: 0, offset: 0, error_code: null, error: null }])
    const [p1a, p1b] = await read('v2-topic', 1, 2)
    expect(p1a!.key!.toString()).toBe('k')
    expect([...p1a!.value!]).toEqual([1, 2, 3])
    expect(p1b!.value).toBeNull()
    const [p0] = await read('v2-topic', 0, 1)
    expect(JSON.parse(p0!.value!.toString())).toEqual({ name: 'ann', tags: [1, 2] })
    expect((await call(s.base, 'GET', '/topics/v2-topic/partitions/1/offsets')).body).toEqual({ beginning_offset: 0, end_offset: 2 })
  })

  it('refuses bad produce requests with Confluent error bodies', async () => {
    const noType = await call(s.base, 'POST', '/topics/v2-topic', { body: { records: [{ value: 1 }] }, contentType: 'application/json' })
    expect(noType.body).toEqual({ error_code: 415, message: 'HTTP 415 Unsupported Media Type' })
    const unknown = await call(s.base, 'POST', '/topics/nope', { contentType: ct('json'), body: { records: [{ value: 1 }] } })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error_code).toBe(40401)
    const badPartition = await call(s.base, 'POST', '/topics/v2-topic/partitions/9', { contentType: ct('json'), body: { records: [{ value: 1 }] } })
    expect(badPartition.body.error_code).toBe(40402)
    const malformed = await call(s.base, 'POST', '/topics/v2-topic', { contentType: ct('json'), body: '{"records": [' })
    expect(malformed.status).toBe(400)
    expect(malformed.body.error_code).toBe(400)
    const empty = await call(s.base, 'POST', '/topics/v2-topic', { contentType: ct('json'), body: { records: [] } })
    expect(empty.status).toBe(422)
    const notBase64 = await call(s.base, 'POST', '/topics/v2-topic', { contentType: ct('binary'), body: { records: [{ value: '***' }] } })
    expect(notBase64.status).toBe(422)
    expect(notBase64.body.error_code).toBe(42206)
    const tooBig = await call(s.base, 'POST', '/topics/v2-topic', { contentType: ct('json'), body: { records: [{ value: 'x'.repeat(70000) }] } })
    expect(tooBig.status).toBe(413)
    expect(tooBig.body.error_code).toBe(413)
    const noSchema = await call(s.base, 'POST', '/topics/v2-avro', { contentType: ct('avro'), body: { records: [{ value: { a: 1 } }] } })
    expect(noSchema.status).toBe(422)
    expect(noSchema.body.error_code).toBe(42202)
  })

  it('avro with value_schema (registered), then value_schema_id; records in the wire format', async () => {
    const schema = JSON.stringify({ type: 'record', name: 'Order', namespace: 'shop', fields: [{ name: 'id', type: 'long' }, { name: 'note', type: ['null', 'string'], default: null }] })
    const first = await call(s.base, 'POST', '/topics/v2-avro', { contentType: ct('avro'), body: { value_schema: schema, records: [{ value: { id: 1, note: { string: 'gift' } } }, { value: { id: 2, note: null } }] } })
    expect(first.status).toBe(200)
    const id = first.body.value_schema_id as number
    expect(id).toBeGreaterThan(0)
    const second = await call(s.base, 'POST', '/topics/v2-avro', { contentType: ct('avro'), body: { value_schema_id: id, records: [{ value: { id: 3, note: null } }] } })
    expect(second.body.offsets[0]).toMatchObject({ offset: 2, error_code: null })
    expect(second.body.value_schema_id).toBe(id)
    const bad = await call(s.base, 'POST', '/topics/v2-avro', { contentType: ct('avro'), body: { value_schema_id: id, records: [{ value: { id: 'one' } }] } })
    expect(bad.status).toBe(422)
    expect(bad.body.error_code).toBe(42203)
    const records = await read('v2-avro', 0, 3)
    expect(records[0]!.value![0]).toBe(0) // magic byte
    expect(records[0]!.value!.readInt32BE(1)).toBe(id)
    const client = new SchemaRegistryClient({ url: s.registryUrl! })
    const subjects = (await (await fetch(`${s.registryUrl}/subjects`)).json()) as string[]
    expect(subjects).toContain('v2-avro-value')
    const decoded = await Promise.all(records.map((r) => new AvroDeserializer({ client }).deserialize('v2-avro', r.value!)))
    expect(decoded.map((d) => ({ ...(d as object) }))).toEqual([
      { id: 1, note: 'gift' },
      { id: 2, note: null },
      { id: 3, note: null },
    ])
  })

  it('jsonschema and protobuf with their schemas', async () => {
    const jsonSchema = JSON.stringify({ type: 'object', title: 'Point', properties: { x: { type: 'integer' }, y: { type: 'integer' } }, required: ['x'] })
    const js = await call(s.base, 'POST', '/topics/v2-jsonschema', { contentType: ct('jsonschema'), body: { value_schema: jsonSchema, records: [{ value: { x: 1, y: 2 } }] } })
    expect(js.status).toBe(200)
    expect(js.body.value_schema_id).toBeGreaterThan(0)
    const invalid = await call(s.base, 'POST', '/topics/v2-jsonschema', { contentType: ct('jsonschema'), body: { value_schema_id: js.body.value_schema_id, records: [{ value: { y: 'no' } }] } })
    expect(invalid.status).toBe(422)
    const proto = 'syntax = "proto3";\npackage shop;\nmessage Item {\n  string name = 1;\n  int32 count = 2;\n}\n'
    const pb = await call(s.base, 'POST', '/topics/v2-proto', { contentType: ct('protobuf'), body: { value_schema: proto, records: [{ value: { name: 'pen', count: 3 } }] } })
    expect(pb.status).toBe(200)
    const [jsRec] = await read('v2-jsonschema', 0, 1)
    expect(JSON.parse(jsRec!.value!.subarray(5).toString())).toEqual({ x: 1, y: 2 })
    const [pbRec] = await read('v2-proto', 0, 1)
    expect(pbRec!.value!.readInt32BE(1)).toBe(pb.body.value_schema_id)
  })
})

describe('REST Proxy v2: consumer instances', () => {
  it('create, subscribe, read, commit, committed offsets, unsubscribe, delete', async () => {
    const producer = new Producer({ bootstrapServers: s.broker.bootstrap })
    for (let i = 0; i < 6; i++) await producer.send({ topic: 'v2-consume', partition: i % 2, key: JSON.stringify(`k${i}`), value: JSON.stringify({ n: i }) })
    await producer.close()
    const created = await call(s.base, 'POST', '/consumers/g-json', { contentType: V2, body: { name: 'c1', format: 'json', 'auto.offset.reset': 'earliest', 'auto.commit.enable': 'false' } })
    expect(created.status).toBe(200)
    expect(created.body).toEqual({ instance_id: 'c1', base_uri: `${s.base}/consumers/g-json/instances/c1` })
    const dup = await call(s.base, 'POST', '/consumers/g-json', { contentType: V2, body: { name: 'c1', format: 'json' } })
    expect(dup.status).toBe(409)
    expect(dup.body.error_code).toBe(40902)
    const inst = '/consumers/g-json/instances/c1'
    expect((await call(s.base, 'POST', `${inst}/subscription`, { contentType: V2, body: { topics: ['v2-consume'] } })).status).toBe(204)
    expect((await call(s.base, 'GET', `${inst}/subscription`)).body).toEqual({ topics: ['v2-consume'] })
    const assignedWhileSubscribed = await call(s.base, 'POST', `${inst}/assignments`, { contentType: V2, body: { partitions: [{ topic: 'v2-consume', partition: 0 }] } })
    expect(assignedWhileSubscribed.status).toBe(409)
    expect(assignedWhileSubscribed.body.error_code).toBe(40903)
    const got: { topic: string; key: string; value: { n: number }; partition: number; offset: number }[] = []
    await eventually(
      async () => {
        const r = await call(s.base, 'GET', `${inst}/records?timeout=1000`, { accept: ct('json') })
        expect(r.status).toBe(200)
        expect(r.headers.get('content-type')).toBe(ct('json'))
        got.push(...r.body)
        return got.length
      },
      (n) => n >= 6,
    )
    expect(got.map((r) => r.value.n).sort()).toEqual([0, 1, 2, 3, 4, 5])
    expect(got[0]).toEqual(expect.objectContaining({ topic: 'v2-consume', key: expect.any(String) }))
    // A read asking for another format than the instance's: 406 / 40601.
    const mismatch = await call(s.base, 'GET', `${inst}/records`, { accept: ct('binary') })
    expect(mismatch.status).toBe(406)
    expect(mismatch.body.error_code).toBe(40601)
    // Commit what was consumed (no body), then read the committed offsets back.
    const committed = await call(s.base, 'POST', `${inst}/offsets`, { contentType: V2 })
    expect(committed.status).toBe(200)
    const offsets = await callWithBody(s.base, 'GET', `${inst}/offsets`, V2, { partitions: [{ topic: 'v2-consume', partition: 0 }, { topic: 'v2-consume', partition: 1 }] })
    expect(offsets.body.offsets.map((o: { offset: number }) => o.offset)).toEqual([3, 3])
    // An explicit commit.
    await call(s.base, 'POST', `${inst}/offsets`, { contentType: V2, body: { offsets: [{ topic: 'v2-consume', partition: 0, offset: 1 }] } })
    const after = await callWithBody(s.base, 'GET', `${inst}/offsets`, V2, { partitions: [{ topic: 'v2-consume', partition: 0 }] })
    expect(after.body.offsets).toEqual([{ topic: 'v2-consume', partition: 0, offset: 1, metadata: '' }])
    expect((await call(s.base, 'DELETE', `${inst}/subscription`)).status).toBe(204)
    expect((await call(s.base, 'GET', `${inst}/subscription`)).body).toEqual({ topics: [] })
    expect((await call(s.base, 'DELETE', inst)).status).toBe(204)
    const gone = await call(s.base, 'GET', `${inst}/records`, { accept: ct('json') })
    expect(gone.status).toBe(404)
    expect(gone.body).toEqual({ error_code: 40403, message: 'Consumer instance not found.' })
    expect((await call(s.base, 'DELETE', inst)).status).toBe(404)
  })

  it('a record that is not JSON: the records before it delivered, then reported with its partition and offset, the position and commits kept on it (issue 31)', async () => {
    const producer = new Producer({ bootstrapServers: s.broker.bootstrap })
    for (const v of ['{"n":0}', '{"n":1}', '{"n":2}', 'not json', '{"n":4}', '{"n":5}']) await producer.send({ topic: 'v2-poison', partition: 0, value: v })
    await producer.close()
    const inst = '/consumers/g-poison/instances/p1'
    await call(s.base, 'POST', '/consumers/g-poison', { contentType: V2, body: { name: 'p1', format: 'json', 'auto.offset.reset': 'earliest', 'auto.commit.enable': 'false' } })
    await call(s.base, 'POST', `${inst}/assignments`, { contentType: V2, body: { partitions: [{ topic: 'v2-poison', partition: 0 }] } })
    const got: number[] = []
    let failure: { status: number; body: { error_code: number; message: string } } | null = null
    const deadline = Date.now() + 15_000
    while (failure === null && Date.now() < deadline) {
      const r = await call(s.base, 'GET', `${inst}/records?timeout=1000`, { accept: ct('json') })
      if (r.status === 200) got.push(...(r.body as { value: { n: number } }[]).map((x) => x.value.n))
      else failure = r
    }
    // The three valid records before the bad one were delivered, none after it.
    expect(got).toEqual([0, 1, 2])
    expect(failure!.status).toBe(500)
    expect(failure!.body.error_code).toBe(50002)
    expect(failure!.body.message).toMatch(/partition v2-poison-0 at offset 3/)
    // The position stays on the bad record: asking again gives the same answer, and a commit stops before it.
    expect((await call(s.base, 'GET', `${inst}/records?timeout=500`, { accept: ct('json') })).body.message).toMatch(/offset 3/)
    const committed = await call(s.base, 'POST', `${inst}/offsets`, { contentType: V2 })
    expect(committed.body).toEqual([{ topic: 'v2-poison', partition: 0, consumed: 2, committed: 3 }])
    // Seeking past it reads on.
    expect((await call(s.base, 'POST', `${inst}/positions`, { contentType: V2, body: { offsets: [{ topic: 'v2-poison', partition: 0, offset: 4 }] } })).status).toBe(204)
    const rest: number[] = []
    await eventually(
      async () => {
        const r = await call(s.base, 'GET', `${inst}/records?timeout=1000`, { accept: ct('json') })
        rest.push(...(r.body as { value: { n: number } }[]).map((x) => x.value.n))
        return rest.length
      },
      (n) => n >= 2,
    )
    expect(rest).toEqual([4, 5])
    await call(s.base, 'DELETE', inst)
  })

  it('assign, seek to beginning, end, an offset and a timestamp, binary records', async () => {
    const created = await call(s.base, 'POST', '/consumers/g-bin', { contentType: V2, body: { format: 'binary' } })
    const inst = new URL(created.body.base_uri as string).pathname
    expect(created.body.instance_id).toMatch(/^rest-consumer-/)
    expect((await call(s.base, 'POST', `${inst}/assignments`, { contentType: V2, body: { partitions: [{ topic: 'v2-consume', partition: 1 }] } })).status).toBe(204)
    expect((await call(s.base, 'GET', `${inst}/assignments`)).body).toEqual({ partitions: [{ topic: 'v2-consume', partition: 1 }] })
    const readAll = async (): Promise<{ offset: number; value: string }[]> => {
      const out: { offset: number; value: string }[] = []
      for (let i = 0; i < 10; i++) {
        const r = await call(s.base, 'GET', `${inst}/records?timeout=500`, { accept: ct('binary') })
        expect(r.status).toBe(200)
        out.push(...r.body)
        if (r.body.length === 0 && out.length > 0) break
      }
      return out
    }
    await call(s.base, 'POST', `${inst}/positions/beginning`, { contentType: V2, body: { partitions: [{ topic: 'v2-consume', partition: 1 }] } })
    const all = await readAll()
    expect(all.map((r) => r.offset)).toEqual([0, 1, 2])
    expect(Buffer.from(all[0]!.value, 'base64').toString()).toBe('{"n":1}')
    await call(s.base, 'POST', `${inst}/positions`, { contentType: V2, body: { offsets: [{ topic: 'v2-consume', partition: 1, offset: 2 }] } })
    expect((await readAll()).map((r) => r.offset)).toEqual([2])
    await call(s.base, 'POST', `${inst}/positions`, { contentType: V2, body: { timestamps: [{ topic: 'v2-consume', partition: 1, timestamp: '2000-01-01T00:00:00Z' }] } })
    expect((await readAll()).map((r) => r.offset)).toEqual([0, 1, 2])
    await call(s.base, 'POST', `${inst}/positions/end`, { contentType: V2, body: { partitions: [{ topic: 'v2-consume', partition: 1 }] } })
    // As KafkaConsumer.seekToEnd, the end is looked up at the next read: read once before producing.
    expect((await call(s.base, 'GET', `${inst}/records?timeout=200`, { accept: ct('binary') })).body).toEqual([])
    const producer = new Producer({ bootstrapServers: s.broker.bootstrap })
    await producer.send({ topic: 'v2-consume', partition: 1, value: 'late' })
    await producer.close()
    const late = await readAll()
    expect(late.map((r) => Buffer.from(r.value, 'base64').toString())).toEqual(['late'])
    const notAssigned = await call(s.base, 'POST', `${inst}/positions`, { contentType: V2, body: { offsets: [{ topic: 'v2-consume', partition: 0, offset: 0 }] } })
    expect(notAssigned.status).toBe(409)
    expect(notAssigned.body.error_code).toBe(40903)
    expect((await call(s.base, 'DELETE', inst)).status).toBe(204)
  })

  it('reads avro records decoded with their schema', async () => {
    const created = await call(s.base, 'POST', '/consumers/g-avro', { contentType: V2, body: { name: 'a1', format: 'avro', 'auto.offset.reset': 'earliest' } })
    expect(created.status).toBe(200)
    await call(s.base, 'POST', '/consumers/g-avro/instances/a1/subscription', { contentType: V2, body: { topic_pattern: 'v2-av.*' } })
    const got: { value: unknown }[] = []
    await eventually(
      async () => {
        const r = await call(s.base, 'GET', '/consumers/g-avro/instances/a1/records?timeout=1000', { accept: ct('avro') })
        expect(r.status).toBe(200)
        got.push(...r.body)
        return got.length
      },
      (n) => n >= 3,
    )
    // Avro's JSON encoding: the union value is wrapped with its branch name.
    expect(got.map((r) => r.value)).toEqual([
      { id: 1, note: { string: 'gift' } },
      { id: 2, note: null },
      { id: 3, note: null },
    ])
    await call(s.base, 'DELETE', '/consumers/g-avro/instances/a1')
  })

  it('expires an instance after consumer.instance.timeout.ms without requests', async () => {
    const before = s.proxy.consumerInstances
    await call(s.base, 'POST', '/consumers/g-exp', { contentType: V2, body: { name: 'idle' } })
    await call(s.base, 'POST', '/consumers/g-exp', { contentType: V2, body: { name: 'busy' } })
    expect(s.proxy.consumerInstances).toBeGreaterThanOrEqual(Math.min(before + 2, 2))
    // "busy" is used every 500 ms, so it stays; "idle" goes after 1.5 s.
    for (let i = 0; i < 6; i++) {
      await sleep(500)
      expect((await call(s.base, 'GET', '/consumers/g-exp/instances/busy/subscription')).status).toBe(200)
    }
    const idle = await call(s.base, 'GET', '/consumers/g-exp/instances/idle/subscription')
    expect(idle.status).toBe(404)
    expect(idle.body.error_code).toBe(40403)
    // Every other instance of this file has been idle for longer than 1.5 s by now, too.
    expect(s.proxy.consumerInstances).toBe(1)
    await call(s.base, 'DELETE', '/consumers/g-exp/instances/busy')
  })

  it('refuses bad consumer requests', async () => {
    const badFormat = await call(s.base, 'POST', '/consumers/g-bad', { contentType: V2, body: { format: 'xml' } })
    expect(badFormat.status).toBe(422)
    const badReset = await call(s.base, 'POST', '/consumers/g-bad', { contentType: V2, body: { 'auto.offset.reset': 'sometimes' } })
    expect(badReset.body.error_code).toBe(42204)
    const wrongType = await call(s.base, 'POST', '/consumers/g-bad', { contentType: 'text/plain', body: '{}' })
    expect(wrongType.status).toBe(415)
    const noInstance = await call(s.base, 'POST', '/consumers/g-bad/instances/none/subscription', { contentType: V2, body: { topics: ['x'] } })
    expect(noInstance.body).toEqual({ error_code: 40403, message: 'Consumer instance not found.' })
    const malformed = await call(s.base, 'POST', '/consumers/g-bad', { contentType: V2, body: '{"name":' })
    expect(malformed.status).toBe(400)
  })
})
