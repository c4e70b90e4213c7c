// A client nobody here wrote: @kafkajs/confluent-schema-registry against Skein's registry (over the
// test HTTP front): register, ids, latest, fetch by id, encode/decode for Avro, JSON Schema and Protobuf,
// its compatibility failure, and records crossing between its serdes and Skein's in both directions.
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryStore, SchemaRegistryService } from '../../src/registry/index.js'
import { AvroDeserializer, AvroSerializer, JsonSchemaDeserializer, JsonSchemaSerializer, ProtobufSerializer, SchemaRegistryClient } from '../../src/registry/serdes/index.js'
import { type RegistryHttp, serveRegistry } from './http-adapter.js'

let http: RegistryHttp
let svc: SchemaRegistryService
let theirs: SchemaRegistry
let ours: SchemaRegistryClient

beforeAll(async () => {
  svc = new SchemaRegistryService(new MemoryStore())
  http = await serveRegistry(svc)
  theirs = new SchemaRegistry({ host: http.url, retry: { retries: 0 } })
  ours = new SchemaRegistryClient({ url: http.url })
})

afterAll(async () => {
  await http.close()
})

const PERSON = { type: 'record', name: 'Person', namespace: 'com.acme', fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }] }

describe('@kafkajs/confluent-schema-registry against Skein', () => {
  it('registers Avro, reads ids back and round-trips records', async () => {
    const { id } = await theirs.register({ type: SchemaType.AVRO, schema: JSON.stringify(PERSON) }, { subject: 'people-value' })
    expect(id).toBe(svc.version('people-value', 'latest').id)
    // It set the subject's compatibility on first registration (PUT /config/{subject}).
    expect(svc.config('people-value').compatibilityLevel).toBe('BACKWARD')
    expect(await theirs.getLatestSchemaId('people-value')).toBe(id)
    expect(await theirs.getRegistryId('people-value', 1)).toBe(id)
    expect(await theirs.getRegistryIdBySchema('people-value', { type: SchemaType.AVRO, schema: JSON.stringify(PERSON) })).toBe(id)
    const encoded = await theirs.encode(id, { name: 'ann', age: 3 })
    expect(await theirs.decode(encoded)).toEqual({ name: 'ann', age: 3 })
    // Their bytes through our deserializer, ours through theirs.
    expect(await new AvroDeserializer({ client: ours }).deserialize('people', encoded)).toEqual({ name: 'ann', age: 3 })
    const mine = await new AvroSerializer({ client: ours, schema: JSON.stringify(PERSON) }).serialize('people', { name: 'bo', age: 4 })
    expect(await new SchemaRegistry({ host: http.url }).decode(mine)).toEqual({ name: 'bo', age: 4 })
  })

  it('surfaces an incompatible schema as its documented error', async () => {
    const incompatible = { ...PERSON, fields: [...PERSON.fields, { name: 'email', type: 'string' }] }
    const err = await theirs.register({ type: SchemaType.AVRO, schema: JSON.stringify(incompatible) }, { subject: 'people-value' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Error)
    expect((err as { status?: number }).status).toBe(409)
    expect(String((err as Error).message)).toContain('incompatible')
  })

  it('registers and round-trips JSON Schema', async () => {
    const schema = JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', title: 'Order', type: 'object', properties: { id: { type: 'integer' } }, required: ['id'] })
    const { id } = await theirs.register({ type: SchemaType.JSON, schema }, { subject: 'orders-value' })
    expect(svc.version('orders-value', 1).schemaType).toBe('JSON')
    const encoded = await theirs.encode(id, { id: 7 })
    expect(await new JsonSchemaDeserializer({ client: ours, validate: true }).deserialize('orders', encoded)).toEqual({ id: 7 })
    const mine = await new JsonSchemaSerializer({ client: ours, schema }).serialize('orders', { id: 8 })
    expect(await theirs.decode(mine)).toEqual({ id: 8 })
  })

  it('registers Protobuf and decodes Skein-encoded messages', async () => {
    const schema = 'syntax = "proto3";\npackage shop;\nmessage Item { string sku = 1; int32 qty = 2; }\n'
    const { id } = await theirs.register({ type: SchemaType.PROTOBUF, schema }, { subject: 'items-value' })
    expect(svc.version('items-value', 1).schemaType).toBe('PROTOBUF')
    const mine = await new ProtobufSerializer({ client: ours, schema }).serialize('items', { sku: 'a-1', qty: 2 })
    expect(mine.readInt32BE(1)).toBe(id)
    // This library writes no message-index bytes and skips leading zero bytes when reading, so it
    // reads Confluent's (and Skein's) single 0 for the first message.
    const decoded = await theirs.decode(mine)
    expect({ sku: decoded.sku, qty: decoded.qty }).toEqual({ sku: 'a-1', qty: 2 })
  })
})
