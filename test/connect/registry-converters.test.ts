// Confluent's Schema Registry converters against Skein's registry over HTTP (src/registry/http.ts on a
// free port): a Connect struct written by AvroConverter, JsonSchemaConverter and ProtobufConverter is in
// Confluent's wire format (magic byte 0, the registered schema id), registered under <topic>-value in the
// format's schema language, and reads back to the same values; records written by the registry's own
// serializers (what other producers send) are read by the converters.
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { AvroConverter, DataException, Decimal, JsonSchemaConverter, ProtobufConverter, SchemaBuilder, Schemas, Struct, TimestampType } from '../../src/connect/index.js'
import type { HttpServer } from '../../src/http/index.js'
import { startRegistryHttp } from '../../src/registry/http.js'
import { handle, MemoryStore, SchemaRegistryService } from '../../src/registry/index.js'
import { AvroSerializer, SchemaRegistryClient } from '../../src/registry/serdes/index.js'

describe('Schema Registry converters', () => {
  let registry: HttpServer
  let url: string

  beforeAll(async () => {
    const svc = new SchemaRegistryService(new MemoryStore())
    registry = await startRegistryHttp((req) => handle(svc, req), { listeners: ['http://127.0.0.1:0'] })
    url = registry.listeners[0]!.url
  })
  afterAll(async () => {
    await registry?.close()
  })

  const ADDRESS = SchemaBuilder.struct().name('Address').field('city', Schemas.STRING).build()
  const PERSON = SchemaBuilder.struct().name('Person')
    .field('id', Schemas.INT32)
    .field('name', Schemas.STRING)
    .field('email', Schemas.OPTIONAL_STRING)
    .field('score', Schemas.FLOAT64)
    .field('tags', SchemaBuilder.array(Schemas.STRING).build())
    .field('address', ADDRESS)
    .build()
  const person = (): Struct => new Struct(PERSON).put('id', 7).put('name', 'ann').put('email', null).put('score', 2.5).put('tags', ['a', 'b'])
    .put('address', new Struct(ADDRESS).put('city', 'Oslo'))

  async function subjects(): Promise<string[]> {
    return (await (await fetch(`${url}/subjects`)).json()) as string[]
  }

  async function schemaType(subject: string): Promise<string> {
    const v = (await (await fetch(`${url}/subjects/${subject}/versions/latest`)).json()) as { schemaType?: string }
    return v.schemaType ?? 'AVRO'
  }

  for (const [name, make, format] of [
    ['AvroConverter', () => new AvroConverter(), 'AVRO'],
    ['JsonSchemaConverter', () => new JsonSchemaConverter(), 'JSON'],
    ['ProtobufConverter', () => new ProtobufConverter(), 'PROTOBUF'],
  ] as const) {
    test(`${name}: wire format, registration under <topic>-value, round trip`, async () => {
      const c = make()
      const topic = `people-${format.toLowerCase()}`
      c.configure({ 'schema.registry.url': url }, false)
      const bytes = (await c.fromConnectData(topic, null, PERSON, person()))!
      expect(bytes[0]).toBe(0)
      const id = bytes.readInt32BE(1)
      expect(id).toBeGreaterThan(0)
      expect(await subjects()).toContain(`${topic}-value`)
      expect(await schemaType(`${topic}-value`)).toBe(format)
      const back = await c.toConnectData(topic, null, bytes)
      const v = back.value as Struct
      expect(back.schema!.type).toBe('struct')
      expect([v.get('id'), v.get('name'), v.get('email'), v.get('score'), v.get('tags'), (v.get('address') as Struct).get('city')]).toEqual([7, 'ann', null, 2.5, ['a', 'b'], 'Oslo'])
      // Not this format's bytes: a DataException, which the error handler can tolerate.
      await expect(c.toConnectData(topic, null, Buffer.from('plain text'))).rejects.toBeInstanceOf(DataException)
      expect(await c.toConnectData(topic, null, null)).toEqual({ schema: null, value: null })
    })
  }

  test('AvroConverter: logical types (decimal, timestamp-millis) and records from another producer', async () => {
    const s = SchemaBuilder.struct().name('Payment').field('amount', Decimal.schema(2)).field('at', TimestampType.schema()).build()
    const c = new AvroConverter()
    c.configure({ 'schema.registry.url': url }, false)
    const bytes = (await c.fromConnectData('payments', null, s, new Struct(s).put('amount', '19.99').put('at', new Date(1700000000000))))!
    const v = (await c.toConnectData('payments', null, bytes)).value as Struct
    expect([v.get('amount'), (v.get('at') as Date).getTime()]).toEqual(['19.99', 1700000000000])

    const schema = JSON.stringify({ type: 'record', name: 'Click', fields: [{ name: 'page', type: 'string' }, { name: 'n', type: 'long' }] })
    const other = await new AvroSerializer({ client: new SchemaRegistryClient({ url }), schema }).serialize('clicks', { page: '/home', n: 3 })
    const read = await c.toConnectData('clicks', null, other)
    expect(read.schema!.name).toBe('Click')
    expect([(read.value as Struct).get('page'), Number((read.value as Struct).get('n'))]).toEqual(['/home', 3])
  })

  test('AvroConverter reads records whose schema references others, references of references included', async () => {
    const client = new SchemaRegistryClient({ url })
    const register = async (subject: string, schema: object, references: object[] = []): Promise<void> => {
      const r = await fetch(`${url}/subjects/${subject}/versions`, { method: 'POST', headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' }, body: JSON.stringify({ schema: JSON.stringify(schema), references }) })
      expect(r.status).toBe(200)
    }
    await register('city', { type: 'record', name: 'City', fields: [{ name: 'name', type: 'string' }] })
    await register('place', { type: 'record', name: 'Place', fields: [{ name: 'city', type: 'City' }] }, [{ name: 'City', subject: 'city', version: 1 }])
    const visit = JSON.stringify({ type: 'record', name: 'Visit', fields: [{ name: 'where', type: 'Place' }, { name: 'n', type: 'int' }] })
    const bytes = await new AvroSerializer({ client, schema: visit, references: [{ name: 'Place', subject: 'place', version: 1 }] }).serialize('visits', { where: { city: { name: 'Oslo' } }, n: 2 })
    const c = new AvroConverter()
    c.configure({ 'schema.registry.url': url }, false)
    const read = await c.toConnectData('visits', null, bytes)
    const where = (read.value as Struct).get('where') as Struct
    expect([((where.get('city') as Struct).get('name')), (read.value as Struct).get('n')]).toEqual(['Oslo', 2])
  })
})
