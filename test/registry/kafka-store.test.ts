// The registry stored in a real `_schemas` topic on a Skein broker started in the test: the topic is
// created compacted with one partition, writes are read back before they are acknowledged, a second
// instance following the same topic sees them, a restarted instance replays to the same state, and the
// records on the topic are Confluent's formats.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Consumer } from '../../src/client/index.js'
import { KafkaRegistryStore } from '../../src/registry/kafka-store.js'
import { SchemaRegistryService, handle } from '../../src/registry/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'

let tb: TestBroker
const stores: KafkaRegistryStore[] = []

async function open(topic: string): Promise<{ store: KafkaRegistryStore; svc: SchemaRegistryService }> {
  const store = new KafkaRegistryStore({ bootstrapServers: tb.bootstrap, topic })
  stores.push(store)
  await store.start()
  return { store, svc: new SchemaRegistryService(store) }
}

beforeAll(async () => {
  tb = await startTestBroker()
})

afterAll(async () => {
  for (const s of stores) await s.stop().catch(() => undefined)
  await tb?.stop()
})

const call = async (svc: SchemaRegistryService, method: string, path: string, body?: unknown, query: Record<string, string> = {}) =>
  (await handle(svc, { method, path, query, body: body === undefined ? undefined : JSON.stringify(body) })) as { status: number; body: any }

describe('KafkaRegistryStore', () => {
  it('creates a compacted single-partition topic and reads its own writes', async () => {
    const { svc } = await open('_schemas')
    const admin = new Admin({ bootstrapServers: tb.bootstrap })
    try {
      const [desc] = await admin.describeTopics(['_schemas'], { includeInternal: true })
      expect(desc!.partitions).toHaveLength(1)
      const [configs] = await admin.describeConfigs([{ type: 'topic', name: '_schemas', keys: ['cleanup.policy'] }])
      expect(configs!.configs.find((c) => c.name === 'cleanup.policy')?.value).toBe('compact')
    } finally {
      await admin.close()
    }
    expect((await call(svc, 'POST', '/subjects/a/versions', { schema: '"string"' })).body).toEqual({ id: 1 })
    // Acknowledged means applied: the next read sees it without waiting.
    expect((await call(svc, 'GET', '/subjects/a/versions/latest')).body).toEqual({ subject: 'a', version: 1, id: 1, schema: '"string"' })
    expect((await call(svc, 'PUT', '/config/a', { compatibility: 'NONE' })).body).toEqual({ compatibility: 'NONE' })
    expect((await call(svc, 'POST', '/subjects/a/versions', { schema: '"int"' })).body).toEqual({ id: 2 })
    expect((await call(svc, 'DELETE', '/subjects/a/versions/1')).body).toBe(1)
  })

  it('writes Confluent’s record formats to the topic', async () => {
    const consumer = new Consumer({ bootstrapServers: tb.bootstrap, autoOffsetReset: 'earliest' })
    try {
      consumer.assign([{ topic: '_schemas', partition: 0 }])
      consumer.seek('_schemas', 0, 'earliest')
      const seen: [string, string | null][] = []
      for (let i = 0; i < 50 && seen.length < 4; i++) {
        for (const r of await consumer.poll(200)) seen.push([r.key!.toString(), r.value === null ? null : r.value.toString()])
      }
      expect(seen).toEqual([
        ['{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}', '{"subject":"a","version":1,"id":1,"schema":"\\"string\\"","deleted":false}'],
        ['{"keytype":"CONFIG","subject":"a","magic":0}', '{"subject":"a","compatibilityLevel":"NONE"}'],
        ['{"keytype":"SCHEMA","subject":"a","version":2,"magic":1}', '{"subject":"a","version":2,"id":2,"schema":"\\"int\\"","deleted":false}'],
        ['{"keytype":"SCHEMA","subject":"a","version":1,"magic":1}', '{"subject":"a","version":1,"id":1,"schema":"\\"string\\"","deleted":true}'],
      ])
    } finally {
      await consumer.close()
    }
  })

  it('replays the topic into the same state on start, and follows another instance’s writes', async () => {
    const first = await open('_schemas_shared')
    await call(first.svc, 'POST', '/subjects/s/versions', { schema: '"string"' })
    const second = await open('_schemas_shared')
    expect((await call(second.svc, 'GET', '/subjects/s/versions')).body).toEqual([1])
    await call(first.svc, 'POST', '/subjects/t/versions', { schema: '"long"' })
    await second.store.sync()
    expect((await call(second.svc, 'GET', '/schemas/ids/2')).body).toEqual({ schema: '"long"' })
    // A restarted instance continues the id sequence.
    await first.store.stop()
    const again = await open('_schemas_shared')
    expect((await call(again.svc, 'POST', '/subjects/u/versions', { schema: '"boolean"' })).body).toEqual({ id: 3 })
  })
})
