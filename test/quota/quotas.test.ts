// Client quotas end to end against an in-process broker: DescribeClientQuotas / AlterClientQuotas
// round trips with Skein's admin client (defaults, user+client-id, filters, validateOnly, Kafka's
// errors), `skein configs` for users and clients, and enforcement with kafkajs: a producer held to its
// producer_byte_rate while an unthrottled one on the same broker is not, a consumer held to its
// consumer_byte_rate, quotas changed while the clients run. Short windows (quota.window.num=3,
// 1 s windows) keep it to a few seconds; the 20 s measurement is test/quota/quota-rate.long.ts.
import { Kafka, logLevel } from 'kafkajs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/admin.js'
import { KafkaError } from '../../src/domain/errors.js'
import { renderPrometheusText } from '../../src/observability/prometheus.js'
import { MAIN_JS, runOk, startTestBroker, type TestBroker } from '../harness/index.js'

async function errorOf(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (err) {
    if (err instanceof KafkaError) return err.message
    throw err
  }
  throw new Error('expected a failure')
}

describe('client quotas', () => {
  let tb: TestBroker
  let admin: Admin
  let kafka: Kafka

  beforeAll(async () => {
    tb = await startTestBroker(['quota.window.num=3', 'quota.window.size.seconds=1', 'num.partitions=1', 'group.initial.rebalance.delay.ms=0'])
    admin = new Admin({ bootstrapServers: [tb.bootstrap], clientId: 'quota-admin' })
    kafka = new Kafka({ brokers: [tb.bootstrap], logLevel: logLevel.NOTHING, retry: { retries: 2 } })
  })
  afterAll(async () => {
    await admin?.close()
    await tb?.stop()
  })

  it('AlterClientQuotas and DescribeClientQuotas round trip, with defaults and filters', async () => {
    await admin.alterClientQuotas([
      { entity: { user: 'alice' }, ops: { producer_byte_rate: 1024, request_percentage: 25.5 } },
      { entity: { user: null }, ops: { consumer_byte_rate: 2048 } },
      { entity: { user: 'alice', 'client-id': 'app' }, ops: { producer_byte_rate: 4096 } },
      { entity: { 'client-id': null }, ops: { controller_mutation_rate: 10 } },
    ])
    expect(await admin.describeClientQuotas([{ entityType: 'user' }], true)).toEqual([
      { entity: { user: null }, values: { consumer_byte_rate: 2048 } },
      { entity: { user: 'alice' }, values: { producer_byte_rate: 1024, request_percentage: 25.5 } },
    ])
    expect(await admin.describeClientQuotas([{ entityType: 'user', match: 'alice' }], false)).toEqual([
      { entity: { user: 'alice' }, values: { producer_byte_rate: 1024, request_percentage: 25.5 } },
      { entity: { user: 'alice', 'client-id': 'app' }, values: { producer_byte_rate: 4096 } },
    ])
    expect(await admin.describeClientQuotas([{ entityType: 'client-id', match: null }], true)).toEqual([{ entity: { 'client-id': null }, values: { controller_mutation_rate: 10 } }])
    // validateOnly writes nothing; removing the last quota removes the entity from the answers.
    await admin.alterClientQuotas([{ entity: { 'client-id': 'x' }, ops: { producer_byte_rate: 1 } }], { validateOnly: true })
    await admin.alterClientQuotas([{ entity: { user: 'alice' }, ops: { producer_byte_rate: null, request_percentage: null } }])
    expect(await admin.describeClientQuotas([{ entityType: 'client-id', match: 'x' }], true)).toEqual([])
    expect(await admin.describeClientQuotas([{ entityType: 'user', match: 'alice' }], true)).toEqual([])
    // The broker applies what is stored, Kafka's precedence.
    const table = tb.broker.clientQuotas.quotas.table
    expect(table.resolve('producer_byte_rate', 'alice', 'app')?.bound).toBe(4096)
    expect(table.resolve('consumer_byte_rate', 'bob', 'any')?.bound).toBe(2048)
    await admin.alterClientQuotas([
      { entity: { user: null }, ops: { consumer_byte_rate: null } },
      { entity: { user: 'alice', 'client-id': 'app' }, ops: { producer_byte_rate: null } },
      { entity: { 'client-id': null }, ops: { controller_mutation_rate: null } },
    ])
    expect(await admin.describeClientQuotas([], false)).toEqual([])
  })

  it('refuses malformed entities, keys and filters with Kafka errors', async () => {
    expect(await errorOf(admin.alterClientQuotas([{ entity: { user: 'a' }, ops: { bogus_rate: 1 } }]))).toMatch(/INVALID_REQUEST.*Invalid configuration key bogus_rate/)
    expect(await errorOf(admin.alterClientQuotas([{ entity: { user: 'a' }, ops: { producer_byte_rate: 1.5 } }]))).toMatch(/INVALID_REQUEST.*not a valid LONG/)
    expect(await errorOf(admin.alterClientQuotas([{ entity: { user: 'a' }, ops: { consumer_byte_rate: -1 } }]))).toMatch(/INVALID_REQUEST/)
    expect(await errorOf(admin.alterClientQuotas([{ entity: {}, ops: { producer_byte_rate: 1 } }]))).toMatch(/INVALID_REQUEST.*empty/)
    expect(await errorOf(admin.alterClientQuotas([{ entity: { ip: '1.2.3.4' }, ops: { producer_byte_rate: 1 } }]))).toMatch(/INVALID_REQUEST/)
    expect(await errorOf(admin.alterClientQuotas([{ entity: { group: 'g' }, ops: { producer_byte_rate: 1 } }]))).toMatch(/INVALID_REQUEST.*Unhandled client quota entity type: group/)
    expect(await errorOf(admin.describeClientQuotas([{ entityType: 'user' }, { entityType: 'user', match: 'a' }], false))).toMatch(/INVALID_REQUEST.*more than once/)
    expect(await errorOf(admin.describeClientQuotas([{ entityType: 'ip' }, { entityType: 'user' }], false))).toMatch(/INVALID_REQUEST/)
  })

  it('needs DescribeConfigs / AlterConfigs on the cluster when an authorizer is set', async () => {
    const secured = await startTestBroker(['authorizer.class.name=kafka.security.authorizer.AclAuthorizer'])
    const denied = new Admin({ bootstrapServers: [secured.bootstrap], clientId: 'quota-admin' })
    try {
      expect(await errorOf(denied.describeClientQuotas([], false))).toMatch(/CLUSTER_AUTHORIZATION_FAILED/)
      expect(await errorOf(denied.alterClientQuotas([{ entity: { user: 'a' }, ops: { producer_byte_rate: 1 } }]))).toMatch(/CLUSTER_AUTHORIZATION_FAILED/)
    } finally {
      await denied.close()
      await secured.stop()
    }
  })

  it('skein configs --entity-type users|clients alters and describes quotas', async () => {
    const skein = (...args: string[]): Promise<string> => runOk('node', [MAIN_JS.replace(/main\.js$/, 'skein.js'), 'configs', '--bootstrap-server', tb.bootstrap, ...args]).then((r) => String(r.stdout))
    expect(await skein('--entity-type', 'users', '--entity-name', 'carol', '--entity-type', 'clients', '--entity-name', 'app', '--alter', '--add-config', 'producer_byte_rate=1048576,consumer_byte_rate=2097152')).toBe(
      'Completed updating config for user carol, client-id app.\n',
    )
    expect(await skein('--entity-type', 'users', '--entity-name', 'carol', '--entity-type', 'clients', '--entity-name', 'app', '--describe')).toBe(
      "Quota configs for user-principal 'carol', client-id 'app' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0\n",
    )
    await skein('--user', 'carol', '--client', 'app', '--alter', '--delete-config', 'producer_byte_rate,consumer_byte_rate')
    // The default client-id, through the Admin client; described by the tool.
    await admin.alterClientQuotas([{ entity: { 'client-id': null }, ops: { request_percentage: 50 } }])
    expect(await skein('--client-defaults', '--describe')).toBe('Quota configs for the default client-id are request_percentage=50.0\n')
    await admin.alterClientQuotas([{ entity: { 'client-id': null }, ops: { request_percentage: null } }])
  })

  it('holds a kafkajs producer to producer_byte_rate, applied live, while another producer runs free', async () => {
    const topic = 'quota-produce'
    const payload = Buffer.alloc(20_000, 1)
    const throttled = kafka.producer({ allowAutoTopicCreation: true })
    const free = new Kafka({ brokers: [tb.bootstrap], clientId: 'free', logLevel: logLevel.NOTHING }).producer({ allowAutoTopicCreation: true })
    const slowKafka = new Kafka({ brokers: [tb.bootstrap], clientId: 'slow', logLevel: logLevel.NOTHING })
    const slow = slowKafka.producer({ allowAutoTopicCreation: true })
    await Promise.all([throttled.connect(), free.connect(), slow.connect()])
    try {
      await slow.send({ topic, messages: [{ value: 'warm-up' }] })
      // Set while the producer is connected: applied without a restart.
      await admin.alterClientQuotas([{ entity: { 'client-id': 'slow' }, ops: { producer_byte_rate: 200_000 } }])
      const pump = async (p: typeof slow, ms: number): Promise<number> => {
        const start = Date.now()
        let bytes = 0
        while (Date.now() - start < ms) {
          await p.send({ topic, acks: 1, messages: [{ value: payload }] })
          bytes += payload.length
        }
        return bytes / ((Date.now() - start) / 1000)
      }
      const [slowRate, freeRate] = await Promise.all([pump(slow, 3000), pump(free, 3000)])
      // 200 kB/s over 3 x 1 s windows: at most the first two windows' burst above the quota in 3 s.
      expect(slowRate).toBeLessThan(200_000 * 1.8)
      expect(slowRate).toBeGreaterThan(200_000 * 0.5)
      expect(freeRate).toBeGreaterThan(slowRate * 3)
      const sensors = tb.broker.clientQuotas.quotas.produce.snapshot(Date.now())
      expect(sensors.find((s) => s.clientId === 'slow')?.throttleTimeMs).toBeGreaterThan(0)
      // Kafka's quota metrics (kafka.server:type=Produce,user=,client-id=slow) in the broker's registry.
      const text = renderPrometheusText(await tb.broker.metrics.registry.scrape())
      expect(text).toMatch(/^kafka_server_produce_byte_rate\{client_id="slow"\} [1-9]/m)
      expect(text).toMatch(/^kafka_server_produce_throttle_time\{client_id="slow"\} [1-9]/m)
      // Removed live: the same producer runs free again once its measured windows have passed.
      await admin.alterClientQuotas([{ entity: { 'client-id': 'slow' }, ops: { producer_byte_rate: null } }])
      await new Promise((r) => setTimeout(r, 1200))
      expect(await pump(slow, 700)).toBeGreaterThan(200_000 * 3)
    } finally {
      await Promise.all([throttled.disconnect(), free.disconnect(), slow.disconnect()])
    }
  }, 30_000)

  it('holds a kafkajs consumer to consumer_byte_rate', async () => {
    const topic = 'quota-fetch'
    const producer = kafka.producer({ allowAutoTopicCreation: true })
    await producer.connect()
    const value = Buffer.alloc(10_000, 2)
    for (let i = 0; i < 20; i++) await producer.send({ topic, messages: Array.from({ length: 10 }, () => ({ value })) })
    await producer.disconnect()
    await admin.alterClientQuotas([{ entity: { 'client-id': 'slow-consumer' }, ops: { consumer_byte_rate: 100_000 } }])
    const consume = async (clientId: string, ms: number): Promise<number> => {
      const consumer = new Kafka({ brokers: [tb.bootstrap], clientId, logLevel: logLevel.NOTHING }).consumer({ groupId: `g-${clientId}`, maxBytes: 64 * 1024, maxBytesPerPartition: 64 * 1024 })
      await consumer.connect()
      await consumer.subscribe({ topic, fromBeginning: true })
      let bytes = 0
      let first = 0
      await consumer.run({
        eachMessage: async ({ message }) => {
          if (first === 0) first = Date.now()
          bytes += message.value?.length ?? 0
        },
      })
      const start = Date.now()
      while (Date.now() - start < ms + 10_000 && (first === 0 || Date.now() - first < ms)) await new Promise((r) => setTimeout(r, 50))
      await consumer.disconnect()
      return bytes
    }
    const [slowBytes, freeBytes] = await Promise.all([consume('slow-consumer', 2000), consume('free-consumer', 2000)])
    expect(freeBytes).toBeGreaterThan(slowBytes * 2)
    // 100 kB/s for 2 s, plus what the measured windows allow up front (the first window ages out after
    // 3 s) and the responses over the quota (each at least one 100 kB batch): far below the free consumer.
    expect(slowBytes).toBeLessThan(100_000 * 5 + 2 * 110_000)
    expect(slowBytes).toBeGreaterThan(100_000)
    await admin.alterClientQuotas([{ entity: { 'client-id': 'slow-consumer' }, ops: { consumer_byte_rate: null } }])
  }, 40_000)
})
