// The Schema Registry formats as Streams serdes, against a broker and a registry over real HTTP
// (src/registry/http.ts): Avro records in (the writer schema fetched when the first record arrives), JSON
// Schema records out (the schema registered when the task starts); Protobuf both ways; a record whose
// schema id the registry does not know goes to the deserialization exception handler; Avro with schema
// references two deep; a value that fails JSON Schema validation goes to the production exception handler. Outputs are read
// back with the registry's own deserializers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MemoryStore, SchemaRegistryService } from '../../src/registry/index.js'
import { AvroDeserializer, AvroSerializer, JsonSchemaDeserializer, ProtobufDeserializer, ProtobufSerializer, SchemaRegistryClient, encodeHeader } from '../../src/registry/serdes/index.js'
import { AvroSerde, Consumed, type DeserializationExceptionHandler, type ProductionExceptionHandler, JsonSchemaSerde, KafkaStreams, Produced, ProtobufSerde, Serdes, StreamsBuilder } from '../../src/streams/index.js'
import { startTestBroker, type TestBroker } from '../harness/index.js'
import { serveRegistry, type RegistryHttp } from '../registry/http-adapter.js'
import { createTopics, produce, readAll, stateDir, waitForState } from './helpers.js'

let broker: TestBroker
let http: RegistryHttp
let client: SchemaRegistryClient
beforeAll(async () => {
  broker = await startTestBroker(['group.initial.rebalance.delay.ms=0'])
  http = await serveRegistry(new SchemaRegistryService(new MemoryStore()))
  client = new SchemaRegistryClient({ url: http.url })
})
afterAll(async () => {
  await http.close()
  await broker.stop()
})

const PAYMENT = JSON.stringify({ type: 'record', name: 'Payment', namespace: 'shop', fields: [{ name: 'id', type: 'string' }, { name: 'cents', type: 'long' }] })
const ORDER = 'syntax = "proto3";\npackage shop;\nmessage Order {\n  string id = 1;\n  int32 qty = 2;\n}\n'
const SHIPMENT = 'syntax = "proto3";\npackage shop;\nmessage Shipment {\n  string order_id = 1;\n  int32 boxes = 2;\n}\n'
const EURO = JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', title: 'Euros', type: 'object', properties: { id: { type: 'string' }, euros: { type: 'number' } } })

describe('Schema Registry serdes', () => {
  it('Avro in, JSON Schema out', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'payments', partitions: 2 },
      { name: 'payments-eur', partitions: 2 },
    ])
    const avroIn = new AvroSerializer({ client, schema: PAYMENT })
    await produce(broker.bootstrap, 'payments', [
      { key: 'a', value: await avroIn.serialize('payments', { id: 'a', cents: 1250 }) },
      { key: 'b', value: await avroIn.serialize('payments', { id: 'b', cents: 99 }) },
    ])
    const b = new StreamsBuilder()
    b.stream('payments', Consumed.with(Serdes.String(), AvroSerde<{ id: string; cents: number }>({ deserializer: { client: new SchemaRegistryClient({ url: http.url }) } })))
      .mapValues((p) => ({ id: p.id, euros: p.cents / 100 }))
      .to('payments-eur', Produced.with(Serdes.String(), JsonSchemaSerde<{ id: string; euros: number }>({ serializer: { client, schema: EURO } })))
    const streams = new KafkaStreams(b.build(), { 'application.id': 'registry-app', 'bootstrap.servers': broker.bootstrap, 'state.dir': stateDir('registry'), 'commit.interval.ms': 200 })
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      const out = await readAll(broker.bootstrap, 'payments-eur', { done: (n) => n >= 2 })
      const de = new JsonSchemaDeserializer({ client })
      const values = await Promise.all(out.map((r) => de.deserialize('payments-eur', r.value!)))
      expect(values.sort((x, y) => String((x as { id: string }).id).localeCompare(String((y as { id: string }).id)))).toEqual([{ id: 'a', euros: 12.5 }, { id: 'b', euros: 0.99 }])
      expect(await client.latest('payments-eur-value')).toMatchObject({ schemaType: 'JSON' })
    } finally {
      await streams.close()
    }
  })

  it('Protobuf in and out', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'orders', partitions: 2 },
      { name: 'shipments', partitions: 2 },
    ])
    const orderIn = new ProtobufSerializer({ client, schema: ORDER })
    await produce(broker.bootstrap, 'orders', [
      { key: 'o1', value: await orderIn.serialize('orders', { id: 'o1', qty: 7 }) },
      { key: 'o2', value: await orderIn.serialize('orders', { id: 'o2', qty: 24 }) },
    ])
    const b = new StreamsBuilder()
    b.stream('orders', Consumed.with(Serdes.String(), ProtobufSerde<{ id: string; qty: number }>({ deserializer: { client: new SchemaRegistryClient({ url: http.url }) } })))
      .mapValues((o) => ({ order_id: o.id, boxes: Math.ceil(o.qty / 6) }))
      .to('shipments', Produced.with(Serdes.String(), ProtobufSerde<{ order_id: string; boxes: number }>({ serializer: { client, schema: SHIPMENT } })))
    const streams = new KafkaStreams(b.build(), { 'application.id': 'registry-proto-app', 'bootstrap.servers': broker.bootstrap, 'state.dir': stateDir('registry-proto'), 'commit.interval.ms': 200 })
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      const out = await readAll(broker.bootstrap, 'shipments', { done: (n) => n >= 2 })
      const de = new ProtobufDeserializer({ client })
      const decoded = await Promise.all(out.map((r) => de.deserializeWithType('shipments', r.value!)))
      expect(decoded.map((d) => d.typeName)).toEqual(['shop.Shipment', 'shop.Shipment'])
      expect(decoded.map((d) => d.message).sort((x, y) => String(x['order_id']).localeCompare(String(y['order_id'])))).toEqual([
        { order_id: 'o1', boxes: 2 },
        { order_id: 'o2', boxes: 4 },
      ])
      expect(await client.latest('shipments-value')).toMatchObject({ schemaType: 'PROTOBUF' })
    } finally {
      await streams.close()
    }
  })

  it('a schema id the registry does not know goes to the deserialization exception handler', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'readings', partitions: 1 },
      { name: 'readings-out', partitions: 1 },
    ])
    const avroIn = new AvroSerializer({ client, schema: PAYMENT })
    const unknownId = Buffer.concat([encodeHeader(987_654), Buffer.from([2, 0x61, 4])])
    await produce(broker.bootstrap, 'readings', [
      { key: 'a', value: await avroIn.serialize('readings', { id: 'first', cents: 1 }), partition: 0 },
      { key: 'b', value: unknownId, partition: 0 },
      { key: 'c', value: await avroIn.serialize('readings', { id: 'third', cents: 3 }), partition: 0 },
    ])
    const skipped: { offset: number; error: string }[] = []
    const skipAndNote: DeserializationExceptionHandler = (_ctx, record, error) => {
      skipped.push({ offset: record.offset, error: error.message })
      return 'CONTINUE'
    }
    const b = new StreamsBuilder()
    b.stream('readings', Consumed.with(Serdes.String(), AvroSerde<{ id: string; cents: number }>({ deserializer: { client } })))
      .mapValues((p) => p.id)
      .to('readings-out', Produced.with(Serdes.String(), Serdes.String()))
    const streams = new KafkaStreams(b.build(), {
      'application.id': 'registry-unknown-id-app',
      'bootstrap.servers': broker.bootstrap,
      'state.dir': stateDir('registry-unknown'),
      'commit.interval.ms': 200,
      'default.deserialization.exception.handler': skipAndNote,
    })
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      const out = await readAll(broker.bootstrap, 'readings-out', { done: (n) => n >= 2 })
      expect(out.map((r) => r.value!.toString())).toEqual(['first', 'third'])
      expect(skipped).toHaveLength(1)
      expect(skipped[0]!.offset).toBe(1)
      expect(skipped[0]!.error).toContain('987654')
      expect(streams.state).toBe('RUNNING')
    } finally {
      await streams.close()
    }
  })

  it('a value that does not match its JSON schema goes to the production exception handler', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'prices', partitions: 1 },
      { name: 'prices-eur', partitions: 1 },
    ])
    await produce(broker.bootstrap, 'prices', [
      { key: 'a', value: '150', partition: 0 },
      { key: 'b', value: 'not a number', partition: 0 },
      { key: 'c', value: '275', partition: 0 },
    ])
    const refused: { kind: string; error: string }[] = []
    const skipAndNote: ProductionExceptionHandler = (_record, error, kind) => {
      refused.push({ kind, error: error.message })
      return 'CONTINUE'
    }
    const strictEuro = JSON.stringify({ title: 'StrictEuros', type: 'object', properties: { id: { type: 'string' }, euros: { type: 'number' } }, required: ['id', 'euros'] })
    const b = new StreamsBuilder()
    b.stream('prices', Consumed.with(Serdes.String(), Serdes.String()))
      .mapValues((cents, id) => ({ id, euros: /^[0-9]+$/.test(cents) ? Number(cents) / 100 : cents }))
      .to('prices-eur', Produced.with(Serdes.String(), JsonSchemaSerde<{ id: string; euros: number | string }>({ serializer: { client, schema: strictEuro, validate: true } })))
    const streams = new KafkaStreams(b.build(), {
      'application.id': 'registry-validate-app',
      'bootstrap.servers': broker.bootstrap,
      'state.dir': stateDir('registry-validate'),
      'commit.interval.ms': 200,
      'default.production.exception.handler': skipAndNote,
    })
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      const out = await readAll(broker.bootstrap, 'prices-eur', { done: (n) => n >= 2 })
      const de = new JsonSchemaDeserializer({ client, validate: true })
      expect(await Promise.all(out.map((r) => de.deserialize('prices-eur', r.value!)))).toEqual([
        { id: 'a', euros: 1.5 },
        { id: 'c', euros: 2.75 },
      ])
      expect(refused).toHaveLength(1)
      expect(refused[0]!.kind).toBe('serialization')
      expect(refused[0]!.error).toContain('JSON schema')
    } finally {
      await streams.close()
    }
  })

  it('Avro out with schema references two deep', async () => {
    await createTopics(broker.bootstrap, [
      { name: 'amounts', partitions: 1 },
      { name: 'invoices', partitions: 1 },
    ])
    const currency = JSON.stringify({ type: 'enum', name: 'Currency', namespace: 'shop', symbols: ['EUR', 'USD'] })
    const money = JSON.stringify({ type: 'record', name: 'Money', namespace: 'shop', fields: [{ name: 'cents', type: 'long' }, { name: 'currency', type: 'shop.Currency' }] })
    const invoice = JSON.stringify({ type: 'record', name: 'Invoice', namespace: 'shop', fields: [{ name: 'id', type: 'string' }, { name: 'total', type: 'shop.Money' }] })
    await client.register('shop.Currency', { schema: currency, schemaType: 'AVRO', references: [] })
    await client.register('shop.Money', { schema: money, schemaType: 'AVRO', references: [{ name: 'shop.Currency', subject: 'shop.Currency', version: 1 }] })
    await produce(broker.bootstrap, 'amounts', [
      { key: 'i1', value: '1999', partition: 0 },
      { key: 'i2', value: '5', partition: 0 },
    ])
    type Invoice = { id: string; total: { cents: number; currency: string } }
    const b = new StreamsBuilder()
    b.stream('amounts', Consumed.with(Serdes.String(), Serdes.String()))
      .mapValues((cents, id): Invoice => ({ id, total: { cents: Number(cents), currency: 'EUR' } }))
      .to('invoices', Produced.with(Serdes.String(), AvroSerde<Invoice>({ serializer: { client, schema: invoice, references: [{ name: 'shop.Money', subject: 'shop.Money', version: 1 }] } })))
    const streams = new KafkaStreams(b.build(), { 'application.id': 'registry-refs-app', 'bootstrap.servers': broker.bootstrap, 'state.dir': stateDir('registry-refs'), 'commit.interval.ms': 200 })
    await streams.start()
    try {
      await waitForState(streams, 'RUNNING')
      const out = await readAll(broker.bootstrap, 'invoices', { done: (n) => n >= 2 })
      const de = new AvroDeserializer({ client: new SchemaRegistryClient({ url: http.url }) })
      const values = await Promise.all(out.map((r) => de.deserialize('invoices', r.value!)))
      expect(JSON.parse(JSON.stringify(values))).toEqual([
        { id: 'i1', total: { cents: 1999, currency: 'EUR' } },
        { id: 'i2', total: { cents: 5, currency: 'EUR' } },
      ])
    } finally {
      await streams.close()
    }
  })
})
