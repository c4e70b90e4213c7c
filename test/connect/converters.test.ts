// Kafka's converters: JsonConverter with the schemas.enable envelope (Kafka's schema JSON, logical types:
// Decimal as base64 of the unscaled bytes or NUMERIC, Date/Time/Timestamp as ints) and without it;
// StringConverter and ByteArrayConverter; SimpleHeaderConverter's inference; malformed input as a
// DataException (what the error handler and the dead letter queue see), never a crash.
import { describe, expect, test } from 'vitest'
import { ByteArrayConverter, DataException, DateType, Decimal, JsonConverter, SchemaBuilder, Schemas, SimpleHeaderConverter, StringConverter, Struct, TimestampType } from '../../src/connect/index.js'

function json(props: Record<string, string> = {}): JsonConverter {
  const c = new JsonConverter()
  c.configure(props, false)
  return c
}

describe('JsonConverter', () => {
  const ORDER = SchemaBuilder.struct().name('order')
    .field('id', Schemas.INT64)
    .field('amount', Decimal.schema(2))
    .field('day', DateType.schema())
    .field('at', TimestampType.schema())
    .field('note', Schemas.OPTIONAL_STRING)
    .field('tags', SchemaBuilder.array(Schemas.STRING).build())
    .field('blob', Schemas.BYTES)
    .build()

  const order = (): Struct => new Struct(ORDER)
    .put('id', 9007199254740993n)
    .put('amount', '12.34')
    .put('day', new Date(Date.UTC(2024, 0, 2)))
    .put('at', new Date(1700000000123))
    .put('note', null)
    .put('tags', ['a', 'b'])
    .put('blob', Buffer.from([1, 2, 3]))

  test('with schemas: the envelope in Kafka\'s schema JSON, logical types encoded as Kafka does, and back', () => {
    const c = json()
    const bytes = c.fromConnectData('t', null, ORDER, order())!
    const text = bytes.toString()
    const doc = JSON.parse(text)
    expect(doc.schema).toEqual({
      type: 'struct', optional: false, name: 'order',
      fields: [
        { type: 'int64', optional: false, field: 'id' },
        { type: 'bytes', optional: false, name: 'org.apache.kafka.connect.data.Decimal', version: 1, parameters: { scale: '2' }, field: 'amount' },
        { type: 'int32', optional: false, name: 'org.apache.kafka.connect.data.Date', version: 1, field: 'day' },
        { type: 'int64', optional: false, name: 'org.apache.kafka.connect.data.Timestamp', version: 1, field: 'at' },
        { type: 'string', optional: true, field: 'note' },
        { type: 'array', items: { type: 'string', optional: false }, optional: false, field: 'tags' },
        { type: 'bytes', optional: false, field: 'blob' },
      ],
    })
    // 1234 unscaled = 0x04D2; 2024-01-02 is day 19724; an int64 above 2^53 keeps every digit.
    expect(doc.payload).toMatchObject({ amount: 'BNI=', day: 19724, at: 1700000000123, note: null, tags: ['a', 'b'], blob: 'AQID' })
    expect(text).toContain('"id":9007199254740993')
    const back = c.toConnectData('t', null, bytes)
    const v = back.value as Struct
    expect(back.schema!.name).toBe('order')
    expect([v.get('id'), v.get('amount'), (v.get('day') as Date).toISOString(), (v.get('at') as Date).getTime(), v.get('note'), v.get('tags')]).toEqual([9007199254740993n, '12.34', '2024-01-02T00:00:00.000Z', 1700000000123, null, ['a', 'b']])
    expect(Buffer.from(v.get('blob') as Uint8Array)).toEqual(Buffer.from([1, 2, 3]))
  })

  test('decimal.format=NUMERIC writes decimals as JSON numbers, and long ones read back exactly', () => {
    const s = SchemaBuilder.struct().field('amount', Decimal.schema(2)).build()
    const out = json({ 'decimal.format': 'NUMERIC', 'schemas.enable': 'false' }).fromConnectData('t', null, s, new Struct(s).put('amount', '-0.50'))!
    expect(out.toString()).toBe('{"amount":-0.50}')
    const c = json({ 'decimal.format': 'NUMERIC' })
    const long = c.fromConnectData('t', null, s, new Struct(s).put('amount', '123456789012345678.91'))!
    expect(long.toString()).toContain('"payload":{"amount":123456789012345678.91}')
    expect((c.toConnectData('t', null, long).value as Struct).get('amount')).toBe('123456789012345678.91')
  })

  test('without schemas, integers beyond 2^53 stay exact (bigint); digits inside strings are left alone', () => {
    const c = json({ 'schemas.enable': 'false' })
    expect(c.toConnectData('t', null, Buffer.from('{"id":-9223372036854775808,"s":"12345678901234567890","f":1.5,"n":[18446744073709551615]}')).value)
      .toEqual({ id: -9223372036854775808n, s: '12345678901234567890', f: 1.5, n: [18446744073709551615n] })
    expect(c.fromConnectData('t', null, null, { id: 9223372036854775807n, small: 5n })!.toString()).toBe('{"id":9223372036854775807,"small":5}')
    expect(() => json().toConnectData('t', null, Buffer.from('{"schema":{"type":"int32","optional":false},"payload":12345678901234567890}'))).toThrow(DataException)
  })

  test('without schemas: plain JSON in and out, null for a tombstone', () => {
    const c = json({ 'schemas.enable': 'false' })
    expect(c.toConnectData('t', null, Buffer.from('{"a":1,"b":[true,null],"c":{"d":"x"}}'))).toEqual({ schema: null, value: { a: 1, b: [true, null], c: { d: 'x' } } })
    expect(c.fromConnectData('t', null, null, { a: 1, b: 'x' })!.toString()).toBe('{"a":1,"b":"x"}')
    expect(c.toConnectData('t', null, null)).toEqual({ schema: null, value: null })
    expect(c.fromConnectData('t', null, null, null)).toBeNull()
  })

  test('malformed input is a DataException with Kafka\'s messages', () => {
    expect(() => json({ 'schemas.enable': 'false' }).toConnectData('t', null, Buffer.from('{"a":'))).toThrow(DataException)
    expect(() => json().toConnectData('t', null, Buffer.from('{"a":1}'))).toThrow(/requires "schema" and "payload" fields/)
    expect(() => json().toConnectData('t', null, Buffer.from('{"schema":{"type":"nonsense"},"payload":1}'))).toThrow(DataException)
    expect(() => json().toConnectData('t', null, Buffer.from('{"schema":{"type":"int32","optional":false},"payload":"x"}'))).toThrow(DataException)
    expect(() => json().fromConnectData('t', null, Schemas.INT32, 'not a number')).toThrow(DataException)
  })

  test('the compact envelope (schema read by its text, cached) reads as the general form does, errors included', () => {
    const c = json()
    const compact = c.fromConnectData('t', null, ORDER, order())!
    const spaced = Buffer.from(`{ ${compact.toString().slice(1)}`)
    for (let i = 0; i < 2; i++) {
      const a = c.toConnectData('t', null, compact)
      const b = c.toConnectData('t', null, spaced)
      expect(a.schema).toEqual(b.schema)
      expect((a.value as Struct).get('id')).toBe(9007199254740993n)
      expect(a.value).toEqual(b.value)
    }
    // Brackets and quotes inside schema strings do not end the schema early.
    const odd = c.toConnectData('t', null, Buffer.from('{"schema":{"type":"string","optional":false,"doc":"a } ] \\" {"},"payload":"v"}'))
    expect(odd).toMatchObject({ schema: { type: 'string', doc: 'a } ] " {' }, value: 'v' })
    // A cached schema text does not let a bad payload or an extra field through.
    expect(() => c.toConnectData('t', null, Buffer.from('{"schema":{"type":"int32","optional":false},"payload":1,"x":2}'))).toThrow(/may not contain additional fields/)
    expect(() => c.toConnectData('t', null, Buffer.from('{"schema":{"type":"int32","optional":false},"payload":"x"}'))).toThrow(DataException)
    expect(() => c.toConnectData('t', null, Buffer.from('{"schema":{"type":"int32","optional":false},"payload":}'))).toThrow(DataException)
  })

  test('records sharing the last envelope\'s schema (compared as bytes, payload parsed alone) read as the general form does', () => {
    const FLAT = SchemaBuilder.struct().name('row').field('id', Schemas.INT32).field('big', Schemas.OPTIONAL_INT64).field('name', Schemas.OPTIONAL_STRING)
      .field('ratio', Schemas.OPTIONAL_FLOAT64).field('ok', Schemas.OPTIONAL_BOOLEAN).field('raw', Schemas.OPTIONAL_BYTES).field('at', TimestampType.builder().optional().build()).optional().build()
    const c = json()
    const written = JSON.parse(c.fromConnectData('t', null, FLAT, new Struct(FLAT).put('id', 1))!.toString()) as { schema: unknown }
    const prefix = `{"schema":${JSON.stringify(written.schema)},"payload":`
    const compact = (payload: string): Buffer => Buffer.from(`${prefix}${payload}}`)
    // The general form of the same record: a space after the first brace keeps it off both compact paths.
    const general = (payload: string): Buffer => Buffer.from(`{ ${prefix.slice(1)}${payload}}`)
    const payloads = [
      '{"id":1,"big":2,"name":"plain","ratio":0.5,"ok":true,"raw":"AQID","at":1700000000123}',
      '{"id":2,"big":9007199254740993,"name":"ünïcødé 🙂 \\" quote","ratio":1.2345678901234567,"ok":false,"raw":null,"at":null,"extra":12345678901234567890}',
      '{"id":3,"big":-1234567890123456,"name":null}',
      '{"id":4,"big":999999999999999,"ratio":1e300}',
      'null',
    ]
    // The first record caches the schema text and the prefix; the next ones are read by the prefix.
    expect(c.toConnectData('t', null, compact(payloads[0]!)).value).toEqual(c.toConnectData('t', null, general(payloads[0]!)).value)
    for (const p of payloads) {
      const fast = c.toConnectData('t', null, compact(p))
      expect(fast).toEqual(c.toConnectData('t', null, general(p)))
    }
    expect((c.toConnectData('t', null, compact(payloads[1]!)).value as Struct).get('big')).toBe(9007199254740993n)
    expect((c.toConnectData('t', null, compact(payloads[2]!)).value as Struct).get('big')).toBe(-1234567890123456n)
    expect(c.toConnectData('t', null, compact(payloads[4]!)).value).toBeNull()
    // Errors as the general form names them: an int32 out of range or given text, a missing required field, bad JSON.
    for (const bad of ['{"id":2147483648}', '{"id":"1"}', '{"name":"no id"}', '{"id":1,', '{"id":12345678901234567}']) {
      expect(() => c.toConnectData('t', null, general(bad))).toThrow(DataException)
      expect(() => c.toConnectData('t', null, compact(bad))).toThrow(DataException)
    }
    // Another schema in between, then the first again: each reads as its general form.
    const other = c.fromConnectData('t', null, Schemas.STRING, 'x')!
    expect(c.toConnectData('t', null, other)).toEqual({ schema: expect.objectContaining({ type: 'string' }), value: 'x' })
    expect(c.toConnectData('t', null, compact(payloads[0]!))).toEqual(c.toConnectData('t', null, general(payloads[0]!)))
  })
})

describe('String, ByteArray and header converters', () => {
  test('StringConverter writes any value as text and reads an optional string', () => {
    const c = new StringConverter()
    c.configure({}, true)
    expect(c.fromConnectData('t', null, null, 42)!.toString()).toBe('42')
    expect(c.toConnectData('t', null, Buffer.from('héllo'))).toEqual({ schema: Schemas.OPTIONAL_STRING, value: 'héllo' })
    expect(c.fromConnectData('t', null, null, null)).toBeNull()
  })

  test('ByteArrayConverter passes bytes through and refuses other schemas', () => {
    const c = new ByteArrayConverter()
    c.configure()
    expect(c.fromConnectData('t', null, Schemas.OPTIONAL_BYTES, Buffer.from([9]))).toEqual(Buffer.from([9]))
    expect(Buffer.from(c.toConnectData('t', null, Buffer.from([7, 8])).value as Uint8Array)).toEqual(Buffer.from([7, 8]))
    expect(() => c.fromConnectData('t', null, Schemas.STRING, 'x')).toThrow(DataException)
  })

  test('SimpleHeaderConverter infers booleans, integers by size, lists and maps; other text stays a string', () => {
    const h = new SimpleHeaderConverter()
    h.configure()
    const read = (s: string): { type: string | undefined; value: unknown } => {
      const r = h.toConnectHeader('t', 'k', Buffer.from(s))
      return { type: r.schema?.type, value: r.value }
    }
    expect(read('true')).toEqual({ type: 'boolean', value: true })
    expect(read('12')).toEqual({ type: 'int8', value: 12 })
    expect(read('40000')).toEqual({ type: 'int32', value: 40000 })
    // Lists and maps come back as their JSON values, without a schema (Values.parseString infers one; Skein does not yet).
    expect(read('[1,2]').value).toEqual([1, 2])
    expect(read('{"a":"b"}').value).toEqual({ a: 'b' })
    expect(read('hello world')).toEqual({ type: 'string', value: 'hello world' })
    expect(h.fromConnectHeader('t', 'k', Schemas.INT32, 5)!.toString()).toBe('5')
  })
})
