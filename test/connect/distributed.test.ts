// Two Connect workers in distributed mode, as separate processes, against a broker, a Schema Registry and
// a real PostgreSQL: connectors created and checked through the REST API (either worker: writes to a
// follower are forwarded to the leader); a FileStreamSink; PostgreSQL sinks fed JSON-with-schemas and
// Avro records (upserts, deletes on tombstones); one worker SIGKILLed, its tasks moving to the other
// with every record in the table exactly once; the PostgreSQL source capturing inserts and updates in
// order; a failing record going to the dead letter queue with its error context headers; bad configs
// answered with validation errors, not crashes.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { Admin, Consumer, type ConsumedRecord, Producer } from '../../src/client/index.js'
import type { HttpServer } from '../../src/http/index.js'
import { MemoryStore, SchemaRegistryService, handle } from '../../src/registry/index.js'
import { startRegistryHttp } from '../../src/registry/http.js'
import { AvroSerializer, SchemaRegistryClient } from '../../src/registry/serdes/index.js'
import { startTestBroker, type TestBroker } from '../harness/broker.js'
import { PostgresServer, postgresMissing } from '../harness/postgres.js'
import { rest, startWorker, waitFor, type WorkerProcess } from './helpers.js'

const skip = postgresMissing()

const PERSON_KEY_SCHEMA = { type: 'struct', optional: false, fields: [{ type: 'int32', optional: false, field: 'id' }] }
const PERSON_SCHEMA = {
  type: 'struct', optional: false, name: 'person',
  fields: [{ type: 'int32', optional: false, field: 'id' }, { type: 'string', optional: true, field: 'name' }, { type: 'int64', optional: true, field: 'score' }],
}

function jsonKey(id: number): string {
  return JSON.stringify({ schema: PERSON_KEY_SCHEMA, payload: { id } })
}

function jsonPerson(id: number, name: string): string {
  return JSON.stringify({ schema: PERSON_SCHEMA, payload: { id, name, score: id * 10 } })
}

async function readAll(bootstrap: string, topic: string, count: number, timeoutMs = 60000): Promise<ConsumedRecord[]> {
  // A source connector's topic is created by its first send: wait for it.
  const admin = new Admin({ bootstrapServers: bootstrap })
  let partitions: number
  try {
    partitions = await waitFor(`topic ${topic}`, async () => (await admin.describeTopics([topic]))[0]!.partitions.length, timeoutMs)
  } finally {
    await admin.close()
  }
  const c = new Consumer({ bootstrapServers: bootstrap, autoOffsetReset: 'earliest' })
  const tps = Array.from({ length: partitions }, (_v, partition) => ({ topic, partition }))
  c.assign(tps)
  for (const tp of tps) c.seek(tp.topic, tp.partition, 'earliest')
  const out: ConsumedRecord[] = []
  const deadline = Date.now() + timeoutMs
  try {
    while (out.length < count && Date.now() < deadline) out.push(...(await c.poll(500)))
  } finally {
    await c.close()
  }
  return out
}

describe.skipIf(skip !== undefined)('Connect distributed: two workers, PostgreSQL, Schema Registry', () => {
  let broker: TestBroker
  let registry: HttpServer
  let registryUrl: string
  let pgs: PostgresServer
  let workers: WorkerProcess[] = []
  let producer: Producer
  const dir = mkdtempSync(join(tmpdir(), 'skein-connect-it-'))

  const workerProps = (): Record<string, string> => ({
    'bootstrap.servers': broker.bootstrap,
    'group.id': 'connect-it',
    'config.storage.topic': 'connect-it-configs',
    'offset.storage.topic': 'connect-it-offsets',
    'status.storage.topic': 'connect-it-status',
    'config.storage.replication.factor': '1',
    'offset.storage.replication.factor': '1',
    'status.storage.replication.factor': '1',
    'offset.storage.partitions': '5',
    'status.storage.partitions': '2',
    'key.converter': 'org.apache.kafka.connect.json.JsonConverter',
    'value.converter': 'org.apache.kafka.connect.json.JsonConverter',
    listeners: 'http://127.0.0.1:0',
    'scheduled.rebalance.max.delay.ms': '4000',
    'session.timeout.ms': '6000',
    'heartbeat.interval.ms': '1000',
    'rebalance.timeout.ms': '30000',
    'offset.flush.interval.ms': '1000',
    // The sink tasks' consumers (Kafka's default session is 45 s): a dead worker's task consumer leaves its
    // group within seconds, so the moved task is not held waiting for it.
    'consumer.session.timeout.ms': '6000',
    'consumer.heartbeat.interval.ms': '1000',
  })

  beforeAll(async () => {
    broker = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'num.partitions=1', 'group.min.session.timeout.ms=1000'])
    const svc = new SchemaRegistryService(new MemoryStore())
    registry = await startRegistryHttp((req) => handle(svc, req), { listeners: ['http://127.0.0.1:0'] })
    registryUrl = registry.listeners[0]!.url
    pgs = await PostgresServer.start({ settings: { fsync: 'off' } })
    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics([
      { name: 'people', numPartitions: 4, replicationFactor: 1 },
      { name: 'people-avro', numPartitions: 2, replicationFactor: 1 },
      { name: 'events', numPartitions: 1, replicationFactor: 1 },
    ])
    await admin.close()
    producer = new Producer({ bootstrapServers: broker.bootstrap, lingerMs: 1 })
    workers = await Promise.all([startWorker('distributed', workerProps()), startWorker('distributed', workerProps())])
    for (const w of workers) await waitFor(`${w.url} healthy`, async () => (await rest(w.url, 'GET', '/health')).status === 200)
  }, 120000)

  afterAll(async () => {
    for (const w of workers) await w.kill('SIGTERM').catch(() => {})
    await producer?.close().catch(() => {})
    await pgs?.stop().catch(() => {})
    await registry?.close().catch(() => {})
    await broker?.stop().catch(() => {})
  }, 60000)

  test('the REST API answers on both workers: root, plugins, validation of a bad config, no crash', async () => {
    const [a, b] = workers as [WorkerProcess, WorkerProcess]
    const root = await rest(a.url, 'GET', '/')
    expect(root.status).toBe(200)
    expect(root.body.kafka_cluster_id).toEqual(expect.any(String))
    const plugins = await rest(b.url, 'GET', '/connector-plugins')
    expect(plugins.body.map((p: { class: string }) => p.class)).toEqual(expect.arrayContaining([
      'org.apache.kafka.connect.file.FileStreamSinkConnector', 'skein.connect.postgres.PostgresSinkConnector', 'skein.connect.postgres.PostgresSourceConnector', 'skein.connect.datagen.DatagenConnector',
    ]))
    const bad = { 'connector.class': 'PostgresSinkConnector', topics: 'people', 'insert.mode': 'bogus', 'pk.mode': 'record_key', 'tasks.max': '0' }
    const v = await rest(a.url, 'PUT', '/connector-plugins/PostgresSinkConnector/config/validate', { ...bad, name: 'bad' })
    expect(v.status).toBe(200)
    expect(v.body.name).toBe('skein.connect.postgres.PostgresSinkConnector')
    const errorsOf = (name: string): string[] => v.body.configs.find((c: { value: { name: string } }) => c.value.name === name).value.errors
    expect(errorsOf('insert.mode').join()).toMatch(/insert\.mode/)
    expect(errorsOf('connection.url').join()).toMatch(/Missing required configuration "connection.url"/)
    expect(errorsOf('tasks.max').join()).toMatch(/at least 1/)
    expect(v.body.error_count).toBeGreaterThanOrEqual(3)
    const created = await rest(b.url, 'POST', '/connectors', { name: 'bad', config: bad })
    expect(created.status).toBe(400)
    expect(created.body.error_code).toBe(400)
    expect(created.body.message).toMatch(/Connector configuration is invalid/)
    const unknown = await rest(a.url, 'POST', '/connectors', { name: 'nope', config: { 'connector.class': 'com.example.Nope', topics: 'x' } })
    expect(unknown.status).toBe(400)
    expect((await rest(a.url, 'GET', '/connectors/bad')).status).toBe(404)
    // Each worker's GET /metrics has its rebalance metrics: it joined the group at least once.
    for (const w of workers) {
      const text = await (await fetch(`${w.url}/metrics`)).text()
      const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1])
      expect(value('kafka_connect_connect_worker_rebalance_metrics_completed_rebalances_total')).toBeGreaterThanOrEqual(1)
      expect(value('kafka_connect_connect_worker_rebalance_metrics_epoch')).toBeGreaterThanOrEqual(1)
      expect(value('kafka_connect_connect_worker_rebalance_metrics_time_since_last_rebalance_ms')).toBeGreaterThanOrEqual(0)
    }
    expect(workers.every((w) => w.alive())).toBe(true)
  }, 60000)

  test('a FileStreamSink with errors.tolerance=all: good records in the file, the bad one in the DLQ with its error context headers', async () => {
    const [a, b] = workers as [WorkerProcess, WorkerProcess]
    const file = join(dir, 'events.txt')
    const res = await rest(b.url, 'POST', '/connectors', {
      name: 'file-sink',
      config: {
        'connector.class': 'FileStreamSink', topics: 'events', file, 'tasks.max': '1',
        'value.converter': 'org.apache.kafka.connect.json.JsonConverter', 'value.converter.schemas.enable': 'false',
        'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
        'errors.tolerance': 'all', 'errors.deadletterqueue.topic.name': 'dlq-events', 'errors.deadletterqueue.topic.replication.factor': '1',
        'errors.deadletterqueue.context.headers.enable': 'true', 'errors.log.enable': 'true',
      },
    })
    expect(res.status).toBe(201)
    expect(res.body).toMatchObject({ name: 'file-sink', type: 'sink' })
    await waitFor('file-sink running', async () => {
      const s = await rest(a.url, 'GET', '/connectors/file-sink/status')
      return s.body?.connector?.state === 'RUNNING' && s.body.tasks.length === 1 && s.body.tasks[0].state === 'RUNNING'
    })
    for (const v of ['{"n":1}', 'this is not json', '{"n":2}']) await producer.send({ topic: 'events', key: 'k', value: v })
    await waitFor('two lines in the file', async () => existsSync(file) && readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').length === 2, 60000)
    expect(readFileSync(file, 'utf8')).toBe('{"n":1}\n{"n":2}\n')
    const [dead] = await readAll(broker.bootstrap, 'dlq-events', 1)
    expect(dead!.value!.toString()).toBe('this is not json')
    const h = Object.fromEntries(dead!.headers.map((x) => [x.key, x.value?.toString()]))
    expect(h).toMatchObject({
      '__connect.errors.topic': 'events',
      '__connect.errors.partition': '0',
      '__connect.errors.offset': '1',
      '__connect.errors.connector.name': 'file-sink',
      '__connect.errors.task.id': '0',
      '__connect.errors.stage': 'VALUE_CONVERTER',
      '__connect.errors.class.name': 'JsonConverter',
      '__connect.errors.exception.class.name': 'org.apache.kafka.connect.errors.DataException',
    })
    expect(h['__connect.errors.exception.message']).toMatch(/Converting byte\[\] to Kafka Connect data failed/)
    expect(h['__connect.errors.exception.stacktrace']).toMatch(/DataException/)
    const topics = await rest(a.url, 'GET', '/connectors/file-sink/topics')
    expect(topics.body).toEqual({ 'file-sink': { topics: ['events'] } })
  }, 120000)

  test('a PostgreSQL sink of JSON records with schemas: upserts and deletes on tombstones land exactly', async () => {
    const [a] = workers as [WorkerProcess, WorkerProcess]
    const res = await rest(a.url, 'PUT', '/connectors/pg-sink/config', {
      'connector.class': 'skein.connect.postgres.PostgresSinkConnector', topics: 'people', 'tasks.max': '2',
      'connection.url': pgs.jdbcUrl, 'connection.user': 'skein', 'table.name.format': 'people_json',
      'insert.mode': 'upsert', 'pk.mode': 'record_key', 'pk.fields': 'id', 'delete.enabled': 'true', 'auto.create': 'true', 'auto.evolve': 'true', 'batch.size': '100',
    })
    expect(res.status).toBe(201)
    for (let i = 1; i <= 60; i++) await producer.send({ topic: 'people', key: jsonKey(i), value: jsonPerson(i, `p${i}-v1`) })
    for (let i = 2; i <= 60; i += 2) await producer.send({ topic: 'people', key: jsonKey(i), value: jsonPerson(i, `p${i}-v2`) })
    for (let i = 10; i <= 60; i += 10) await producer.send({ topic: 'people', key: jsonKey(i), value: null })
    const expected = new Map<number, string>()
    for (let i = 1; i <= 60; i++) if (i % 10 !== 0) expected.set(i, `p${i}-${i % 2 === 0 ? 'v2' : 'v1'}`)
    const rows = await waitFor('people_json to hold the final state', async () => {
      const r = await pgs.query<{ id: number; name: string; score: string }>('SELECT id, name, score FROM people_json ORDER BY id').catch(() => [])
      return r.length === expected.size && r.every((x) => expected.get(x.id) === x.name) ? r : undefined
    }, 90000)
    expect(rows.map((r) => Number(r.score))).toEqual(rows.map((r) => r.id * 10))
    const status = await rest(a.url, 'GET', '/connectors/pg-sink/status')
    expect(status.body.tasks).toHaveLength(2)
    // Sink offsets are the consumer group's commits, made after put and flush (every offset.flush.interval.ms):
    // in the end they cover all 96 records of the 4 partitions.
    const offsets = await waitFor('pg-sink offsets committed for every record', async () => {
      const o = await rest<{ offsets: { partition: { kafka_topic: string; kafka_partition: number }; offset: { kafka_offset: number } }[] }>(a.url, 'GET', '/connectors/pg-sink/offsets')
      return o.status === 200 && o.body.offsets.reduce((n, x) => n + x.offset.kafka_offset, 0) === 96 ? o.body.offsets : undefined
    }, 30000)
    expect(offsets.every((o) => o.partition.kafka_topic === 'people')).toBe(true)
  }, 150000)

  test('a PostgreSQL sink of Avro records through the Schema Registry', async () => {
    const [, b] = workers as [WorkerProcess, WorkerProcess]
    const res = await rest(b.url, 'POST', '/connectors', {
      name: 'pg-avro',
      config: {
        'connector.class': 'PostgresSinkConnector', topics: 'people-avro', 'tasks.max': '1',
        'connection.url': pgs.jdbcUrl, 'connection.user': 'skein', 'table.name.format': 'people_avro',
        'insert.mode': 'upsert', 'pk.mode': 'record_value', 'pk.fields': 'id', 'auto.create': 'true',
        'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
        'value.converter': 'io.confluent.connect.avro.AvroConverter', 'value.converter.schema.registry.url': registryUrl,
      },
    })
    expect(res.status).toBe(201)
    const schema = JSON.stringify({ type: 'record', name: 'Person', namespace: 'test', fields: [{ name: 'id', type: 'int' }, { name: 'name', type: 'string' }, { name: 'email', type: ['null', 'string'], default: null }] })
    const ser = new AvroSerializer({ client: new SchemaRegistryClient({ url: registryUrl }), schema })
    for (let i = 1; i <= 20; i++) await producer.send({ topic: 'people-avro', key: String(i), value: await ser.serialize('people-avro', { id: i, name: `a${i}`, email: i % 3 === 0 ? null : `a${i}@example.com` }) })
    for (let i = 1; i <= 5; i++) await producer.send({ topic: 'people-avro', key: String(i), value: await ser.serialize('people-avro', { id: i, name: `a${i}-new`, email: null }) })
    const rows = await waitFor('people_avro to hold the final state', async () => {
      const r = await pgs.query<{ id: number; name: string; email: string | null }>('SELECT id, name, email FROM people_avro ORDER BY id').catch(() => [])
      return r.length === 20 && r[0]!.name === 'a1-new' && r[4]!.name === 'a5-new' ? r : undefined
    }, 90000)
    expect(rows[5]).toEqual({ id: 6, name: 'a6', email: null })
    expect(rows[6]).toEqual({ id: 7, name: 'a7', email: 'a7@example.com' })
  }, 150000)

  test('SIGKILL of a worker: its tasks move to the other, and the sink ends with every record exactly once', async () => {
    const status = await rest(workers[0]!.url, 'GET', '/connectors/pg-sink/status')
    const victimId = status.body.tasks[0].worker_id as string
    const victim = workers.find((w) => w.url.endsWith(victimId))!
    const survivor = workers.find((w) => w !== victim)!
    expect(victim).toBeDefined()
    await victim.kill('SIGKILL')
    const survivorId = survivor.url.replace('http://', '')
    // Records written while the worker is dead and its tasks wait for scheduled.rebalance.max.delay.ms.
    for (let i = 61; i <= 300; i++) await producer.send({ topic: 'people', key: jsonKey(i), value: jsonPerson(i, `p${i}-v1`) })
    for (let i = 61; i <= 300; i += 3) await producer.send({ topic: 'people', key: jsonKey(i), value: jsonPerson(i, `p${i}-v3`) })
    await waitFor('every task of pg-sink and pg-avro running on the survivor', async () => {
      for (const c of ['pg-sink', 'pg-avro', 'file-sink']) {
        const s = await rest(survivor.url, 'GET', `/connectors/${c}/status`)
        if (s.status !== 200 || s.body.connector.worker_id !== survivorId || s.body.tasks.some((t: { state: string; worker_id: string }) => t.state !== 'RUNNING' || t.worker_id !== survivorId)) return false
      }
      return true
    }, 90000, 500)
    const expected = new Map<number, string>()
    for (let i = 1; i <= 60; i++) if (i % 10 !== 0) expected.set(i, `p${i}-${i % 2 === 0 ? 'v2' : 'v1'}`)
    for (let i = 61; i <= 300; i++) expected.set(i, `p${i}-${(i - 61) % 3 === 0 ? 'v3' : 'v1'}`)
    const rows = await waitFor('people_json to hold every record once', async () => {
      const r = await pgs.query<{ id: number; name: string }>('SELECT id, name FROM people_json ORDER BY id')
      return r.length === expected.size && r.every((x) => expected.get(x.id) === x.name) ? r : undefined
    }, 90000)
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length)
    workers = [survivor]
  }, 200000)

  test('the PostgreSQL source captures inserts and updates into a topic, in order', async () => {
    const [w] = workers as [WorkerProcess]
    await pgs.query(`CREATE TABLE items (id SERIAL PRIMARY KEY, name TEXT NOT NULL, price NUMERIC(10,2), updated_at TIMESTAMP NOT NULL DEFAULT (now() AT TIME ZONE 'UTC'))`)
    await pgs.query(`INSERT INTO items (name, price) VALUES ('apple', 1.50), ('pear', 2.25), ('plum', 0.99)`)
    const res = await rest(w.url, 'POST', '/connectors', {
      name: 'pg-source',
      config: {
        'connector.class': 'PostgresSourceConnector', 'connection.url': pgs.jdbcUrl, 'connection.user': 'skein',
        mode: 'timestamp+incrementing', 'incrementing.column.name': 'id', 'timestamp.column.name': 'updated_at',
        'table.whitelist': 'items', 'topic.prefix': 'pg-', 'poll.interval.ms': '300', 'value.converter.schemas.enable': 'true',
      },
    })
    expect(res.status).toBe(201)
    await readAll(broker.bootstrap, 'pg-items', 3, 60000)
    await new Promise((r) => setTimeout(r, 20))
    await pgs.query(`UPDATE items SET name = 'pear (ripe)', updated_at = now() AT TIME ZONE 'UTC' WHERE id = 2`)
    await pgs.query(`INSERT INTO items (name, price) VALUES ('fig', 3.00)`)
    const records = await readAll(broker.bootstrap, 'pg-items', 5, 60000)
    const values = records.map((r) => JSON.parse(r.value!.toString()) as { schema: { name: string; fields: { field: string }[] }; payload: { id: number; name: string; price: string } })
    expect(values.map((v) => `${v.payload.id}:${v.payload.name}`)).toEqual(['1:apple', '2:pear', '3:plum', '2:pear (ripe)', '4:fig'])
    expect(values[0]!.schema.name).toBe('items')
    expect(values[0]!.schema.fields.map((f) => f.field)).toEqual(['id', 'name', 'price', 'updated_at'])
    // Source offsets are committed after the records are acknowledged, every offset.flush.interval.ms.
    const offsets = await waitFor('pg-source offsets committed through id 4', async () => {
      const o = await rest(w.url, 'GET', '/connectors/pg-source/offsets')
      return o.body.offsets.length === 1 && o.body.offsets[0].offset.incrementing === 4 ? o.body.offsets : undefined
    }, 30000)
    expect(offsets).toEqual([{ partition: { protocol: '1', table: 'postgres.public.items' }, offset: expect.objectContaining({ incrementing: 4 }) }])
  }, 150000)

  test('stop, offsets reset and delete through the REST API', async () => {
    const [w] = workers as [WorkerProcess]
    expect((await rest(w.url, 'PATCH', '/connectors/pg-source/offsets', { offsets: [] })).status).toBe(400)
    expect((await rest(w.url, 'PUT', '/connectors/pg-source/stop')).status).toBe(204)
    await waitFor('pg-source stopped', async () => (await rest(w.url, 'GET', '/connectors/pg-source/status')).body.connector.state === 'STOPPED')
    const reset = await rest(w.url, 'DELETE', '/connectors/pg-source/offsets')
    expect(reset).toEqual({ status: 200, body: { message: 'The offsets for this connector have been reset successfully' } })
    expect((await rest(w.url, 'GET', '/connectors/pg-source/offsets')).body).toEqual({ offsets: [] })
    expect((await rest(w.url, 'DELETE', '/connectors/pg-source')).status).toBe(204)
    await waitFor('pg-source gone', async () => !(await rest(w.url, 'GET', '/connectors')).body.includes('pg-source'))
  }, 60000)
})
