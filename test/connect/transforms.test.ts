// Single message transforms and predicates configured as a connector config names them
// (transforms=a,b, transforms.a.type=..., predicates=...), built into the chain the runtime uses, with
// Kafka's outcomes for records with schemas (Struct) and without (maps).
import { spawnSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { ConnectHeaders, type ConnectRecord, SchemaBuilder, Schemas, Struct, sourceRecord, type SourceRecord } from '../../src/connect/index.js'
import { TransformationChain } from '../../src/connect/runtime/connector-config.js'
import { Plugins } from '../../src/connect/runtime/plugins.js'
import { REPO_ROOT } from '../harness/broker.js'

const plugins = new Plugins()

/** The chain as the worker applies it: a stage runs when it has no predicate or its predicate (negated or not) holds. */
function run(props: Record<string, string>, record: SourceRecord): SourceRecord | null {
  const chain = TransformationChain.build(props, plugins)
  let r: ConnectRecord | null = record
  for (const s of chain.stages) {
    if (r === null) break
    if (s.predicate !== null && s.predicate.test(r) === s.negate) continue
    r = s.transform.apply(r)
  }
  return r as SourceRecord | null
}

const PERSON = SchemaBuilder.struct().name('person').field('id', Schemas.INT32).field('name', Schemas.STRING).field('email', Schemas.OPTIONAL_STRING).build()

function person(id: number, name: string, email: string | null): Struct {
  return new Struct(PERSON).put('id', id).put('name', name).put('email', email)
}

describe('field transforms', () => {
  test('InsertField$Value adds topic, static and timestamp fields to a Struct (a new schema) and to a map', () => {
    const props = {
      transforms: 'ins', 'transforms.ins.type': 'org.apache.kafka.connect.transforms.InsertField$Value',
      'transforms.ins.topic.field': 'topic', 'transforms.ins.static.field': 'origin', 'transforms.ins.static.value': 'pg', 'transforms.ins.timestamp.field': 'ts',
    }
    const out = run(props, sourceRecord({ topic: 'people', valueSchema: PERSON, value: person(1, 'ann', null), timestamp: 1700000000000 }))!
    const v = out.value as Struct
    expect(out.valueSchema!.fields!.map((f) => f.name)).toEqual(['id', 'name', 'email', 'topic', 'ts', 'origin']) // Kafka's order: topic, partition, offset, timestamp, static
    expect([v.get('id'), v.get('topic'), v.get('origin'), (v.get('ts') as Date).getTime()]).toEqual([1, 'people', 'pg', 1700000000000])
    const schemaless = run(props, sourceRecord({ topic: 'people', value: { id: 2 }, timestamp: 5 }))!
    expect(schemaless.value).toEqual({ id: 2, topic: 'people', origin: 'pg', ts: 5 })
  })

  test('ReplaceField$Value excludes and renames; MaskField$Value blanks fields; ValueToKey and ExtractField$Key make a key', () => {
    const replaced = run({ transforms: 'r', 'transforms.r.type': 'ReplaceField$Value', 'transforms.r.exclude': 'email', 'transforms.r.renames': 'name:full_name' },
      sourceRecord({ topic: 't', valueSchema: PERSON, value: person(1, 'ann', 'a@x') }))!
    expect(replaced.valueSchema!.fields!.map((f) => f.name)).toEqual(['id', 'full_name'])
    expect((replaced.value as Struct).get('full_name')).toBe('ann')

    const masked = run({ transforms: 'm', 'transforms.m.type': 'MaskField$Value', 'transforms.m.fields': 'name,id' }, sourceRecord({ topic: 't', value: { id: 7, name: 'ann', email: 'a@x' } }))!
    expect(masked.value).toEqual({ id: 0, name: '', email: 'a@x' })
    const replacedMask = run({ transforms: 'm', 'transforms.m.type': 'MaskField$Value', 'transforms.m.fields': 'email', 'transforms.m.replacement': '***' }, sourceRecord({ topic: 't', value: { email: 'a@x' } }))!
    expect(replacedMask.value).toEqual({ email: '***' })

    const keyed = run({ transforms: 'k,x', 'transforms.k.type': 'ValueToKey', 'transforms.k.fields': 'id', 'transforms.x.type': 'ExtractField$Key', 'transforms.x.field': 'id' },
      sourceRecord({ topic: 't', valueSchema: PERSON, value: person(42, 'bob', null) }))!
    expect(keyed.key).toBe(42)
    expect(keyed.keySchema!.type).toBe('int32')
  })

  test('Cast$Value casts fields by spec; TimestampConverter$Value turns a string into a Timestamp and unix millis into a formatted string', () => {
    const cast = run({ transforms: 'c', 'transforms.c.type': 'Cast$Value', 'transforms.c.spec': 'id:string,score:int32' }, sourceRecord({ topic: 't', value: { id: 5, score: '17' } }))!
    expect(cast.value).toEqual({ id: '5', score: 17 })
    const parsed = run({ transforms: 't', 'transforms.t.type': 'TimestampConverter$Value', 'transforms.t.field': 'at', 'transforms.t.target.type': 'Timestamp', 'transforms.t.format': 'yyyy-MM-dd HH:mm:ss' },
      sourceRecord({ topic: 't', value: { at: '2024-02-29 13:14:15' } }))!
    expect(((parsed.value as { at: Date }).at).toISOString()).toBe('2024-02-29T13:14:15.000Z')
    const formatted = run({ transforms: 't', 'transforms.t.type': 'TimestampConverter$Value', 'transforms.t.field': 'at', 'transforms.t.target.type': 'string', 'transforms.t.format': 'yyyy-MM-dd' },
      sourceRecord({ topic: 't', value: { at: Date.UTC(2023, 11, 31, 23, 0, 0) } }))!
    expect(formatted.value).toEqual({ at: '2023-12-31' })
  })
})

describe('routing, headers, predicates', () => {
  test('RegexRouter and TimestampRouter rename the topic', () => {
    expect(run({ transforms: 'r', 'transforms.r.type': 'RegexRouter', 'transforms.r.regex': '(.*)-raw', 'transforms.r.replacement': '$1-clean' }, sourceRecord({ topic: 'orders-raw' }))!.topic).toBe('orders-clean')
    expect(run({ transforms: 'r', 'transforms.r.type': 'RegexRouter', 'transforms.r.regex': 'x', 'transforms.r.replacement': 'y' }, sourceRecord({ topic: 'orders-raw' }))!.topic).toBe('orders-raw')
    expect(run({ transforms: 'r', 'transforms.r.type': 'TimestampRouter', 'transforms.r.topic.format': '${topic}_${timestamp}', 'transforms.r.timestamp.format': 'yyyy-MM' }, sourceRecord({ topic: 'logs', timestamp: Date.UTC(2025, 6, 4) }))!.topic).toBe('logs_2025-07')
  })

  test('Filter with TopicNameMatches, negate, HasHeaderKey and RecordIsTombstone', () => {
    const props = {
      transforms: 'dropTest,dropTombstones', predicates: 'isTest,tomb',
      'transforms.dropTest.type': 'Filter', 'transforms.dropTest.predicate': 'isTest',
      'transforms.dropTombstones.type': 'Filter', 'transforms.dropTombstones.predicate': 'tomb',
      'predicates.isTest.type': 'org.apache.kafka.connect.transforms.predicates.TopicNameMatches', 'predicates.isTest.pattern': 'test-.*',
      'predicates.tomb.type': 'RecordIsTombstone',
    }
    expect(run(props, sourceRecord({ topic: 'test-1', value: 'x' }))).toBeNull()
    expect(run(props, sourceRecord({ topic: 'prod', value: null }))).toBeNull()
    expect(run(props, sourceRecord({ topic: 'prod', value: 'x' }))!.value).toBe('x')
    const keepOnlyTagged = { transforms: 'f', predicates: 'tagged', 'transforms.f.type': 'Filter', 'transforms.f.predicate': 'tagged', 'transforms.f.negate': 'true', 'predicates.tagged.type': 'HasHeaderKey', 'predicates.tagged.name': 'tag' }
    const tagged = new ConnectHeaders()
    tagged.addString('tag', 'yes')
    expect(run(keepOnlyTagged, sourceRecord({ topic: 'a', value: 1, headers: tagged }))!.value).toBe(1)
    expect(run(keepOnlyTagged, sourceRecord({ topic: 'a', value: 1 }))).toBeNull()
  })

  test('InsertHeader, HeaderFrom$Value (copy and move) and DropHeaders', () => {
    const out = run({
      transforms: 'ins,from,drop',
      'transforms.ins.type': 'InsertHeader', 'transforms.ins.header': 'source', 'transforms.ins.value.literal': 'skein',
      'transforms.from.type': 'HeaderFrom$Value', 'transforms.from.fields': 'id', 'transforms.from.headers': 'person-id', 'transforms.from.operation': 'move',
      'transforms.drop.type': 'DropHeaders', 'transforms.drop.headers': 'junk',
    }, sourceRecord({ topic: 't', value: { id: 3, name: 'c' }, headers: (() => { const h = new ConnectHeaders(); h.addString('junk', 'x'); return h })() }))!
    expect([...out.headers].map((h) => [h.key, h.value])).toEqual([['source', 'skein'], ['person-id', 3]])
    expect(out.value).toEqual({ name: 'c' })
  })

  test('a bad transform config is an error at build time, with the option named', () => {
    expect(() => TransformationChain.build({ transforms: 'c', 'transforms.c.type': 'Cast$Value', 'transforms.c.spec': 'id:complex' }, plugins)).toThrow(/complex|spec/)
    expect(() => TransformationChain.build({ transforms: 'x' }, plugins)).toThrow(/transforms\.x\.type/)
    expect(() => TransformationChain.build({ transforms: 'f', 'transforms.f.type': 'Filter', 'transforms.f.predicate': 'nope' }, plugins)).toThrow(/predicate nope/)
  })
})

test('plugin authors import the API from skein/connect (the package\'s subpath export)', () => {
  // In the package (dist/), so that the bare specifier resolves through package.json's exports.
  const script = join(REPO_ROOT, 'dist', `connect-exports-${process.pid}.mjs`)
  writeFileSync(script, "import { ConfigDef, SourceConnector, SourceTask, SinkConnector, SinkTask, Struct, SchemaBuilder, JsonConverter, startConnect } from 'skein/connect'\nconsole.log([ConfigDef, SourceConnector, SourceTask, SinkConnector, SinkTask, Struct, SchemaBuilder, JsonConverter, startConnect].map((c) => c.name).join(' '))\n")
  try {
    const r = spawnSync(process.execPath, [script], { encoding: 'utf8', timeout: 30000 })
    expect(r.stderr).toBe('')
    expect(r.stdout.trim()).toBe('ConfigDef SourceConnector SourceTask SinkConnector SinkTask Struct SchemaBuilder JsonConverter startConnect')
  } finally {
    rmSync(script, { force: true })
  }
})
