// Records in Confluent's wire format (magic byte, schema id) are shown decoded with their writer's schema
// when the web front has a Schema Registry (schema.registry.url): in the console's message browser and in
// the WebSocket stream; bytes that only look like the wire format stay base64.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Producer } from '../../src/client/index.js'
import type { HttpServer } from '../../src/http/index.js'
import { startRegistryHttp } from '../../src/registry/http.js'
import { handle, MemoryStore, SchemaRegistryService } from '../../src/registry/index.js'
import { AvroSerializer, SchemaRegistryClient } from '../../src/registry/serdes/index.js'
import { call } from '../rest/helpers.js'
import { TestWebSocket } from '../harness/ws-client.js'
import { eventually, startWebFront, type WebFrontSetup } from './helpers.js'

const ORDER = JSON.stringify({ type: 'record', name: 'Order', fields: [{ name: 'id', type: 'string' }, { name: 'amount', type: 'int' }] })

let registry: HttpServer
let web: WebFrontSetup
let schemaId: number
beforeAll(async () => {
  const service = new SchemaRegistryService(new MemoryStore())
  registry = await startRegistryHttp((req) => handle(service, req), { listeners: ['http://127.0.0.1:0'] })
  const registryUrl = registry.listeners[0]!.url
  web = await startWebFront({ settings: { 'schema.registry.url': registryUrl } })
  const admin = new Admin({ bootstrapServers: web.broker.bootstrap })
  await admin.createTopics([{ name: 'orders', numPartitions: 1 }])
  await admin.close()
  const serializer = new AvroSerializer({ client: new SchemaRegistryClient({ url: [registryUrl] }), schema: ORDER })
  const value = await serializer.serialize('orders', { id: 'o-1', amount: 42 })
  schemaId = value.readInt32BE(1)
  const producer = new Producer({ bootstrapServers: web.broker.bootstrap, lingerMs: 0 })
  await producer.send({ topic: 'orders', key: 'o-1', value })
  // Looks like the wire format (magic byte 0) but names a schema id the registry does not have.
  await producer.send({ topic: 'orders', key: 'odd', value: Buffer.from([0, 0, 0, 0x7f, 0xff, 1, 2]) })
  await producer.close()
})
afterAll(async () => {
  await web?.stop()
  await registry?.close()
})

describe('records decoded with the Schema Registry', () => {
  it('in the message browser', async () => {
    const info = await call(web.base, 'GET', '/console/api/info')
    expect(info.body.schemaRegistry).toBe(true)
    const r = await call(web.base, 'GET', '/console/api/topics/orders/records?partition=0&offset=0')
    expect(r.body.records[0]).toMatchObject({ key: 'o-1', keyFormat: 'string', value: { id: 'o-1', amount: 42 }, valueFormat: 'avro', valueSchemaId: schemaId })
    expect(r.body.records[1]).toMatchObject({ key: 'odd', valueFormat: 'base64', value: Buffer.from([0, 0, 0, 0x7f, 0xff, 1, 2]).toString('base64') })
    // encoding=base64 shows the bytes as they are.
    const raw = await call(web.base, 'GET', '/console/api/topics/orders/records?partition=0&offset=0&limit=1&encoding=base64')
    expect(raw.body.records[0].valueFormat).toBe('base64')
  })

  it('in the WebSocket stream', async () => {
    const ws = await TestWebSocket.open(web.port, '/ws/topics/orders?offset=earliest')
    try {
      const records = await eventually(() => {
        const rs = ws.messages.map((m) => JSON.parse(m.data.toString())).filter((m) => m.type === 'records').flatMap((m) => m.records)
        return rs.length >= 2 ? rs : undefined
      }, 10_000, 'two records')
      expect(records[0]).toMatchObject({ offset: 0, value: { id: 'o-1', amount: 42 }, valueFormat: 'avro', valueSchemaId: schemaId })
      expect(records[1]).toMatchObject({ offset: 1, valueFormat: 'base64' })
    } finally {
      ws.close()
    }
  })
})
