// Schema Registry benchmark (npm run bench:registry): a broker child process (dist/src/main.js) and one
// registry instance in this process as `skein schema-registry` runs it (Kafka-backed `_schemas`, HTTP on
// uWebSockets.js), measured side by side in one run:
// 1. registrations/s: distinct Avro schemas registered over HTTP, one at a time and 8 in flight (each is
//    produced to `_schemas` with acks=all and read back before its answer, as Confluent's);
// 2. lookups by id/s: GET /schemas/ids/{id} over HTTP (node:http, 16 in flight, keep-alive; the client
//    shares this process, so the figure is bounded by both ends' CPU), and the serializers'
//    cached lookup (SchemaRegistryClient.schemaById after the first fetch);
// 3. produce throughput of Avro records (AvroSerializer: wire header + Avro binary, schema id cached)
//    against the same records' raw bytes, through Skein's producer to the same broker: records/s and the
//    ratio of the two.
// Env: BENCH_SECONDS (per timed run, default 3), BENCH_RECORDS (per produce run, default 200000).
import { rmSync } from 'node:fs'
import { Agent as HttpAgent, get as httpGet } from 'node:http'
import { Admin, Producer } from '../src/client/index.js'
import { parseRegistryProperties, registrySettings } from '../src/config/client-registry.js'
import { AvroSerializer, SchemaRegistryClient } from '../src/registry/serdes/index.js'
import { SchemaRegistryServer } from '../src/registry/server.js'
import { benchDir, startBroker } from './broker/broker-process.js'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3)
const RECORDS = Number(process.env.BENCH_RECORDS ?? 200_000)
const JSON_TYPE = 'application/vnd.schemaregistry.v1+json'

const schemaText = (i: number): string => JSON.stringify({ type: 'record', name: `Bench${i}`, fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: 'int' }] })

async function register(base: string, subject: string, schema: string): Promise<number> {
  const res = await fetch(`${base}/subjects/${subject}/versions`, { method: 'POST', headers: { 'Content-Type': JSON_TYPE }, body: JSON.stringify({ schema }) })
  const body = (await res.json()) as { id?: number; message?: string }
  if (body.id === undefined) throw new Error(`registration failed: ${JSON.stringify(body)}`)
  return body.id
}

/** Runs `op` with `inFlight` concurrent loops for SECONDS; operations per second. */
async function timed(inFlight: number, op: (i: number) => Promise<unknown>): Promise<{ perSecond: number; count: number }> {
  let next = 0
  const deadline = performance.now() + SECONDS * 1000
  const start = performance.now()
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < deadline) await op(next++)
    }),
  )
  return { perSecond: next / ((performance.now() - start) / 1000), count: next }
}

async function produceRun(producer: Producer, topic: string, value: (i: number) => Buffer | Promise<Buffer>): Promise<number> {
  let acked = 0
  let failed: Error | null = null
  const start = performance.now()
  for (let i = 0; i < RECORDS; i++) {
    const v = value(i)
    producer.append(topic, undefined, null, v instanceof Promise ? await v : v, undefined, (err) => {
      if (err !== null) failed ??= err
      else acked++
    })
    if (!producer.hasCapacity) await producer.waitForCapacity()
  }
  await producer.flush()
  if (failed !== null || acked !== RECORDS) throw new Error(`produce run: ${acked} of ${RECORDS} acknowledged (${failed})`)
  return RECORDS / ((performance.now() - start) / 1000)
}

async function main(): Promise<void> {
  const dataDir = benchDir('registry')
  const broker = await startBroker({ dataDir, overrides: ['group.initial.rebalance.delay.ms=0'] })
  const registry = await SchemaRegistryServer.start({ settings: registrySettings(parseRegistryProperties([['listeners', 'http://127.0.0.1:0']])), bootstrapServers: [broker.bootstrap] })
  const base = registry.urls[0]!
  const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
  try {
    console.log(`Schema Registry benchmark: broker child process, registry in this process (${base}), ${SECONDS} s per timed run`)
    let schemaNo = 0
    const one = await timed(1, async () => register(base, `bench-${schemaNo}`, schemaText(schemaNo++)))
    const eight = await timed(8, async () => register(base, `bench-${schemaNo}`, schemaText(schemaNo++)))
    console.log(`registrations/s (new schema each, written to _schemas and read back): 1 in flight ${fmt(one.perSecond)}, 8 in flight ${fmt(eight.perSecond)}`)

    const ids = Math.max(1, schemaNo)
    // node:http with keep-alive: fetch (undici) costs several times more client CPU per request.
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 16 })
    const lookup = (id: number): Promise<void> =>
      new Promise((done, fail) => {
        httpGet(`${base}/schemas/ids/${id}`, { agent }, (res) => {
          if (res.statusCode !== 200) fail(new Error(`lookup answered ${res.statusCode}`))
          res.resume()
          res.on('end', () => done())
        }).on('error', fail)
      })
    const http = await timed(16, async (i) => lookup((i % ids) + 1))
    agent.destroy()
    const client = new SchemaRegistryClient({ url: base })
    for (let id = 1; id <= Math.min(ids, 100); id++) await client.schemaById(id)
    const cached = await timed(1, async (i) => client.schemaById((i % Math.min(ids, 100)) + 1))
    console.log(`lookups by id/s: over HTTP (16 in flight) ${fmt(http.perSecond)}; the serializers' cached lookup ${fmt(cached.perSecond)}`)

    const admin = new Admin({ bootstrapServers: broker.bootstrap })
    await admin.createTopics([
      { name: 'bench-avro', numPartitions: 1, replicationFactor: 1 },
      { name: 'bench-raw', numPartitions: 1, replicationFactor: 1 },
    ])
    await admin.close()
    const serializer = new AvroSerializer({ client: new SchemaRegistryClient({ url: base }), schema: schemaText(0) })
    const sample = { id: 'order-000000', amount: 0 }
    const rawSize = (await serializer.serialize('bench-avro', sample)).length
    const raw = Buffer.alloc(rawSize, 0x61)
    const producer = new Producer({ bootstrapServers: broker.bootstrap, acks: 1, lingerMs: 5 })
    await producer.topicInfo('bench-raw')
    await producer.topicInfo('bench-avro')
    // Alternated twice, so that drift on a shared machine shows in the figures rather than in the ratio.
    const rawRates: number[] = []
    const avroRates: number[] = []
    for (let round = 0; round < 2; round++) {
      rawRates.push(await produceRun(producer, 'bench-raw', () => raw))
      avroRates.push(await produceRun(producer, 'bench-avro', (i) => serializer.serialize('bench-avro', { id: `order-${String(i % 1_000_000).padStart(6, '0')}`, amount: i })))
    }
    await producer.close()
    const best = (xs: number[]): number => Math.max(...xs)
    console.log(`produce ${fmt(RECORDS)} records of ${rawSize} bytes, acks=1: raw bytes ${rawRates.map(fmt).join(' / ')} records/s; Avro serializer ${avroRates.map(fmt).join(' / ')} records/s; Avro/raw ${(best(avroRates) / best(rawRates)).toFixed(2)}x`)
  } finally {
    await registry.stop()
    await broker.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err)
    process.exit(1)
  },
)
