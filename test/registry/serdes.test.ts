// The wire format and the serdes against a registry reached over real HTTP: a node:http server in the
// test passes requests to the registry's route table (the uWebSockets.js layer does not exist yet).
// Round trips for Avro, JSON Schema and Protobuf, subject name strategies, auto-registration versus
// lookup/latest, schema evolution on read, and malformed records.
import avsc from 'avsc'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryStore, SchemaRegistryService } from '../../src/registry/index.js'
import {
  AvroDeserializer,
  AvroSerializer,
  JsonSchemaDeserializer,
  JsonSchemaSerializer,
  ProtobufDeserializer,
  ProtobufSerializer,
  RecordNameStrategy,
  RegistryClientError,
  SchemaRegistryClient,
  SerializationError,
  TopicRecordNameStrategy,
  decodeHeader,
  decodeMessageIndexes,
  encodeHeader,
  encodeMessageIndexes,
} from '../../src/registry/serdes/index.js'
import { type RegistryHttp, serveRegistry } from './http-adapter.js'

let http: RegistryHttp
let svc: SchemaRegistryService
let client: SchemaRegistryClient

beforeAll(async () => {
  svc = new SchemaRegistryService(new MemoryStore())
  http = await serveRegistry(svc)
  client = new SchemaRegistryClient({ url: http.url })
})

afterAll(async () => {
  await http.close()
})

describe('wire format', () => {
  it('frames a schema id after the magic byte, big-endian', () => {
    expect([...encodeHeader(258)]).toEqual([0, 0, 0, 1, 2])
    expect(decodeHeader(Buffer.from([0, 0, 0, 1, 2, 9]))).toEqual({ id: 258, offset: 5 })
    expect(() => decodeHeader(Buffer.from([1, 0, 0, 0, 1]))).toThrow('Unknown magic byte!')
    expect(() => decodeHeader(Buffer.from([0, 0]))).toThrow(SerializationError)
  })

  it('writes message indexes as zigzag varints, [0] as a single zero', () => {
    expect([...encodeMessageIndexes([0])]).toEqual([0])
    expect([...encodeMessageIndexes([1])]).toEqual([2, 2])
    expect([...encodeMessageIndexes([0, 1, 0])]).toEqual([6, 0, 2, 0])
    expect([...encodeMessageIndexes([70])]).toEqual([2, 0x8c, 0x01])
    for (const path of [[0], [3], [0, 0], [2, 5, 1], [200]]) {
      const bytes = Buffer.concat([encodeMessageIndexes(path), Buffer.from([0xff])])
      const decoded = decodeMessageIndexes(bytes, 0)
      expect(decoded.indexes).toEqual(path)
      expect(bytes[decoded.offset]).toBe(0xff)
    }
    expect(() => decodeMessageIndexes(Buffer.from([0x80]), 0)).toThrow(SerializationError)
    expect(() => decodeMessageIndexes(Buffer.from([100, 0]), 0)).toThrow(SerializationError)
  })
})

const USER_V1 = JSON.stringify({ type: 'record', name: 'User', namespace: 'com.acme', fields: [{ name: 'name', type: 'string' }, { name: 'age', type: 'int' }] })
const USER_V2 = JSON.stringify({ type: 'record', name: 'User', namespace: 'com.acme', fields: [{ name: 'name', type: 'string' }, { name: 'email', type: ['null', 'string'], default: null }] })

describe('Avro serdes', () => {
  it('registers the schema under topic-value and round-trips a record', async () => {
    const ser = new AvroSerializer({ client, schema: USER_V1 })
    const bytes = await ser.serialize('users', { name: 'ann', age: 41 })
    const { id, offset } = decodeHeader(bytes)
    expect(svc.versions('users-value')).toEqual([1])
    expect(svc.version('users-value', 1).id).toBe(id)
    // The payload is plain Avro binary.
    expect(avsc.Type.forSchema(JSON.parse(USER_V1)).fromBuffer(bytes.subarray(offset))).toEqual({ name: 'ann', age: 41 })
    expect(await new AvroDeserializer({ client }).deserialize('users', bytes)).toEqual({ name: 'ann', age: 41 })
  })

  it('uses the record name with RecordNameStrategy and TopicRecordNameStrategy', async () => {
    await new AvroSerializer({ client, schema: USER_V1, subjectNameStrategy: RecordNameStrategy }).serialize('any', { name: 'a', age: 1 })
    await new AvroSerializer({ client, schema: USER_V1, subjectNameStrategy: TopicRecordNameStrategy, isKey: true }).serialize('orders', { name: 'a', age: 1 })
    expect(svc.subjects()).toEqual(expect.arrayContaining(['com.acme.User', 'orders-com.acme.User']))
  })

  it('resolves old data into a newer reader schema', async () => {
    const bytes = await new AvroSerializer({ client, schema: USER_V1 }).serialize('evolve', { name: 'bo', age: 7 })
    expect(await new AvroDeserializer({ client, readerSchema: USER_V2 }).deserialize('evolve', bytes)).toEqual({ name: 'bo', email: null })
  })

  it('without auto-registration, looks the schema up or takes the latest', async () => {
    const lookupOnly = new AvroSerializer({ client, schema: USER_V2, autoRegister: false })
    await expect(lookupOnly.serialize('fresh', { name: 'x', email: null })).rejects.toMatchObject({ errorCode: 40401 })
    await new AvroSerializer({ client, schema: USER_V1 }).serialize('fresh', { name: 'x', age: 1 })
    await expect(lookupOnly.serialize('fresh', { name: 'x', email: null })).rejects.toBeInstanceOf(RegistryClientError)
    const latest = new AvroSerializer({ client, useLatestVersion: true })
    const bytes = await latest.serialize('fresh', { name: 'y', age: 2 })
    expect(decodeHeader(bytes).id).toBe(svc.version('fresh-value', 'latest').id)
  })

  it('refuses values that do not match and records it cannot read', async () => {
    await expect(new AvroSerializer({ client, schema: USER_V1 }).serialize('users', { name: 3 })).rejects.toBeInstanceOf(SerializationError)
    await expect(new AvroDeserializer({ client }).deserialize('users', Buffer.from([0, 0, 0, 0, 99, 1]))).rejects.toMatchObject({ errorCode: 40403 })
    const good = await new AvroSerializer({ client, schema: USER_V1 }).serialize('users', { name: 'a', age: 1 })
    await expect(new AvroDeserializer({ client }).deserialize('users', good.subarray(0, 6))).rejects.toBeInstanceOf(SerializationError)
  })
})

describe('JSON Schema serdes', () => {
  const schema = JSON.stringify({ title: 'Order', type: 'object', properties: { id: { type: 'integer' }, item: { type: 'string' } }, required: ['id'] })

  it('writes JSON after the header and validates when asked', async () => {
    const ser = new JsonSchemaSerializer({ client, schema, validate: true })
    const bytes = await ser.serialize('orders', { id: 1, item: 'pen' })
    expect(bytes.subarray(5).toString()).toBe('{"id":1,"item":"pen"}')
    expect(svc.version('orders-value', 'latest').schemaType).toBe('JSON')
    expect(await new JsonSchemaDeserializer({ client, validate: true }).deserialize('orders', bytes)).toEqual({ id: 1, item: 'pen' })
    await expect(ser.serialize('orders', { item: 'no id' })).rejects.toBeInstanceOf(SerializationError)
    await new JsonSchemaSerializer({ client, schema, subjectNameStrategy: RecordNameStrategy }).serialize('x', { id: 2 })
    expect(svc.subjects()).toContain('Order')
  })
})

describe('Protobuf serdes', () => {
  const proto = 'syntax = "proto3";\npackage shop;\nmessage Order { int64 id = 1; string item = 2; Line line = 3; message Line { int32 qty = 1; } }\nmessage Refund { int64 order_id = 1; }\n'

  it('writes message indexes and decodes by them', async () => {
    const first = await new ProtobufSerializer({ client, schema: proto }).serialize('shop', { id: 5, item: 'pen', line: { qty: 2 } })
    const { id, offset } = decodeHeader(first)
    expect(first[offset]).toBe(0) // [0]: the first message
    expect(await new ProtobufDeserializer({ client }).deserializeWithType('shop', first)).toEqual({ message: { id: '5', item: 'pen', line: { qty: 2 } }, typeName: 'shop.Order' })

    const refund = await new ProtobufSerializer({ client, schema: proto, messageName: 'shop.Refund' }).serialize('shop', { order_id: 5 })
    expect(decodeHeader(refund).id).toBe(id)
    expect([...refund.subarray(5, 7)]).toEqual([2, 2]) // [1]
    expect(await new ProtobufDeserializer({ client }).deserializeWithType('shop', refund)).toEqual({ message: { order_id: '5' }, typeName: 'shop.Refund' })

    const nested = await new ProtobufSerializer({ client, schema: proto, messageName: 'shop.Order.Line', subjectNameStrategy: RecordNameStrategy }).serialize('shop', { qty: 9 })
    expect([...nested.subarray(5, 8)]).toEqual([4, 0, 0]) // [0, 0]
    expect(svc.subjects()).toContain('shop.Order.Line')
    expect((await new ProtobufDeserializer({ client }).deserialize('shop', nested))).toEqual({ qty: 9 })
    await expect(new ProtobufDeserializer({ client }).deserialize('shop', Buffer.concat([first.subarray(0, 5), encodeMessageIndexes([7])]))).rejects.toBeInstanceOf(SerializationError)
  })

  it('encodes messages whose types come from a referenced schema', async () => {
    const common = 'syntax = "proto3";\npackage common;\nmessage Money { int64 units = 1; string currency = 2; }\n'
    await client.register('common.proto', { schema: common, schemaType: 'PROTOBUF', references: [] })
    const invoice = 'syntax = "proto3";\npackage billing;\nimport "common.proto";\nmessage Invoice { common.Money total = 1; }\n'
    const refs = [{ name: 'common.proto', subject: 'common.proto', version: 1 }]
    const bytes = await new ProtobufSerializer({ client, schema: invoice, references: refs }).serialize('invoices', { total: { units: 12, currency: 'EUR' } })
    expect(await new ProtobufDeserializer({ client }).deserialize('invoices', bytes)).toEqual({ total: { units: '12', currency: 'EUR' } })
    expect(svc.version('invoices-value', 1).references).toEqual(refs)
  })
})
