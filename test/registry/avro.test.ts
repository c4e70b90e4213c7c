// Avro parsing, string forms and the compatibility corpus: reader/writer pairs from the Avro
// specification's "Schema Resolution" section and Confluent's schema evolution documentation, each
// asserted to be compatible or not, with the incompatibility type Avro Java reports.
import { describe, expect, it } from 'vitest'
import { AvroParseError, AvroSchema, parseAvro, parsingCanonicalForm } from '../../src/registry/avro/index.js'

const rec = (fields: unknown[], extra: Record<string, unknown> = {}) => JSON.stringify({ type: 'record', name: 'R', namespace: 'ns', fields, ...extra })
const avro = (s: unknown) => AvroSchema.parse(typeof s === 'string' ? s : JSON.stringify(s))

/** Incompatibility types found when `reader` reads data written with `writer`. */
function problems(reader: unknown, writer: unknown): string[] {
  return avro(reader)
    .checkCanRead(avro(writer))
    .map((i) => i.errorType)
}

describe('Avro parsing', () => {
  it('accepts primitives, named types, references by name and recursion', () => {
    expect(avro('"string"').canonical).toBe('"string"')
    expect(avro({ type: 'int' }).canonical).toBe('"int"')
    const linked = avro({ type: 'record', name: 'Node', fields: [{ name: 'value', type: 'int' }, { name: 'next', type: ['null', 'Node'], default: null }] })
    expect(linked.canonical).toBe('{"type":"record","name":"Node","fields":[{"name":"value","type":"int"},{"name":"next","type":["null","Node"],"default":null}]}')
  })

  it('resolves names against the enclosing namespace and keeps aliases full', () => {
    const s = avro({ type: 'record', name: 'Outer', namespace: 'a.b', aliases: ['Old'], fields: [{ name: 'e', type: { type: 'enum', name: 'E', symbols: ['X'] } }, { name: 'e2', type: 'E' }, { name: 'f', type: { type: 'fixed', name: 'c.F', size: 2 } }] })
    const root = s.root as { name: string; aliases: string[]; fields: { type: { name?: string } }[] }
    expect(root.name).toBe('a.b.Outer')
    expect(root.aliases).toEqual(['a.b.Old'])
    expect(root.fields[0]!.type.name).toBe('a.b.E')
    expect(root.fields[1]!.type).toBe(root.fields[0]!.type)
    expect(root.fields[2]!.type.name).toBe('c.F')
  })

  it.each([
    ['not JSON', '{"type":'],
    ['unknown type name', '"foo"'],
    ['record without fields', '{"type":"record","name":"R"}'],
    ['record without name', '{"type":"record","fields":[]}'],
    ['bad field name', rec([{ name: '1x', type: 'int' }])],
    ['duplicate field', rec([{ name: 'a', type: 'int' }, { name: 'a', type: 'long' }])],
    ['redefined name', rec([{ name: 'a', type: { type: 'enum', name: 'R', symbols: ['A'] } }])],
    ['duplicate enum symbol', '{"type":"enum","name":"E","symbols":["A","A"]}'],
    ['enum default not a symbol', '{"type":"enum","name":"E","symbols":["A"],"default":"B"}'],
    ['fixed without size', '{"type":"fixed","name":"F"}'],
    ['nested union', '["null",["int","long"]]'],
    ['duplicate union branch', '["int","int"]'],
    ['string default for int', rec([{ name: 'a', type: 'int', default: 'x' }])],
    ['int default out of range', rec([{ name: 'a', type: 'int', default: 2147483648 }])],
    ['union default not of first branch', rec([{ name: 'a', type: ['null', 'string'], default: 'x' }])],
    ['array without items', '{"type":"array"}'],
  ])('rejects %s', (_what, text) => {
    expect(() => AvroSchema.parse(text)).toThrow(AvroParseError)
  })

  it('takes named types from references', () => {
    const address = '{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"street","type":"string"}]}'
    const person = '{"type":"record","name":"Person","namespace":"com.acme","fields":[{"name":"home","type":"Address"}]}'
    const s = AvroSchema.parse(person, [{ name: 'com.acme.Address', subject: 'address', version: 1 }], [
      { name: 'com.acme.Address', subject: 'address', version: 1, schemaType: 'AVRO', schema: address, references: [] },
    ])
    // The referenced type stays a reference in the stored form.
    expect(s.canonical).toBe('{"type":"record","name":"Person","namespace":"com.acme","fields":[{"name":"home","type":"Address"}]}')
    expect(() => AvroSchema.parse(person)).toThrow(AvroParseError)
  })
})

describe('Avro string forms', () => {
  it('gives the same canonical string for differently formatted texts', () => {
    const a = avro('{ "type" : "record", "name": "R", "fields" : [ {"name":"a","type":"int"} ] }')
    const b = avro('{"fields":[{"type":"int","name":"a"}],"name":"R","type":"record"}')
    expect(a.canonical).toBe(b.canonical)
  })

  it('keeps docs and defaults in the canonical string but not in Parsing Canonical Form', () => {
    const a = avro(rec([{ name: 'a', type: 'int', default: 1, doc: 'the a' }], { doc: 'a record' }))
    expect(a.canonical).toContain('"default":1')
    expect(a.canonical).toContain('"doc":"the a"')
    expect(a.parsingCanonicalForm()).toBe('{"name":"ns.R","type":"record","fields":[{"name":"a","type":"int"}]}')
  })

  it('produces the specification’s Parsing Canonical Form', () => {
    const s = parseAvro('{"type":"record","name":"R","namespace":"x.y","doc":"d","aliases":["Q"],"fields":[{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}},{"name":"m","type":{"type":"map","values":{"type":"array","items":"long"}}},{"name":"f","type":{"type":"fixed","name":"F","size":16}},{"name":"again","type":"E"},{"name":"u","type":["null",{"type":"string","logicalType":"uuid"}]}]}')
    expect(parsingCanonicalForm(s.root)).toBe(
      '{"name":"x.y.R","type":"record","fields":[{"name":"e","type":{"name":"x.y.E","type":"enum","symbols":["A","B"]}},{"name":"m","type":{"type":"map","values":{"type":"array","items":"long"}}},{"name":"f","type":{"name":"x.y.F","type":"fixed","size":16}},{"name":"again","type":"x.y.E"},{"name":"u","type":["null","string"]}]}',
    )
  })

  it('normalizes to full names and sorted properties', () => {
    const a = avro({ type: 'record', name: 'R', namespace: 'n', fields: [{ name: 'a', type: 'int', 'z-prop': 1, 'a-prop': 2 }] })
    const b = avro({ namespace: 'n', type: 'record', name: 'n.R', fields: [{ 'a-prop': 2, name: 'a', type: 'int', 'z-prop': 1 }] })
    expect(a.normalized()).toBe(b.normalized())
    expect(a.normalized()).toBe('{"name":"n.R","type":"record","fields":[{"name":"a","type":"int","a-prop":2,"z-prop":1}]}')
  })
})

// Reader/writer corpus. `reader` reads data that `writer` wrote; `expected` is the list of Avro
// incompatibility types (empty = compatible). Cases follow the specification's resolution rules in order.
const INT_RECORD = rec([{ name: 'a', type: 'int' }])
const cases: [string, unknown, unknown, string[]][] = [
  // Primitive types: same type, and the promotions the specification allows (and only those).
  ['same primitive', '"int"', '"int"', []],
  ['int promoted to long', '"long"', '"int"', []],
  ['int promoted to float', '"float"', '"int"', []],
  ['int promoted to double', '"double"', '"int"', []],
  ['long promoted to float', '"float"', '"long"', []],
  ['long promoted to double', '"double"', '"long"', []],
  ['float promoted to double', '"double"', '"float"', []],
  ['string read as bytes', '"bytes"', '"string"', []],
  ['bytes read as string', '"string"', '"bytes"', []],
  ['long not narrowed to int', '"int"', '"long"', ['TYPE_MISMATCH']],
  ['double not narrowed to float', '"float"', '"double"', ['TYPE_MISMATCH']],
  ['float not read as long', '"long"', '"float"', ['TYPE_MISMATCH']],
  ['int not read as string', '"string"', '"int"', ['TYPE_MISMATCH']],
  ['boolean not read as int', '"int"', '"boolean"', ['TYPE_MISMATCH']],
  ['null only as null', '"null"', '"int"', ['TYPE_MISMATCH']],
  ['logical type does not change resolution', { type: 'long', logicalType: 'timestamp-millis' }, '"long"', []],
  // Records: fields matched by name, defaults for reader-only fields, writer-only fields ignored.
  ['identical records', INT_RECORD, INT_RECORD, []],
  ['field added with default', rec([{ name: 'a', type: 'int' }, { name: 'b', type: 'string', default: 'x' }]), INT_RECORD, []],
  ['field added without default', rec([{ name: 'a', type: 'int' }, { name: 'b', type: 'string' }]), INT_RECORD, ['READER_FIELD_MISSING_DEFAULT_VALUE']],
  ['field added with null default in optional union', rec([{ name: 'a', type: 'int' }, { name: 'b', type: ['null', 'string'], default: null }]), INT_RECORD, []],
  ['field removed (writer has more)', INT_RECORD, rec([{ name: 'a', type: 'int' }, { name: 'b', type: 'string' }]), []],
  ['all fields replaced', rec([{ name: 'z', type: 'int' }]), INT_RECORD, ['READER_FIELD_MISSING_DEFAULT_VALUE']],
  ['fields reordered', rec([{ name: 'b', type: 'long' }, { name: 'a', type: 'int' }]), rec([{ name: 'a', type: 'int' }, { name: 'b', type: 'long' }]), []],
  ['field type promoted', rec([{ name: 'a', type: 'long' }]), INT_RECORD, []],
  ['field type narrowed', INT_RECORD, rec([{ name: 'a', type: 'long' }]), ['TYPE_MISMATCH']],
  ['field renamed with alias', rec([{ name: 'b', type: 'int', aliases: ['a'] }]), INT_RECORD, []],
  ['field renamed without alias', rec([{ name: 'b', type: 'int' }]), INT_RECORD, ['READER_FIELD_MISSING_DEFAULT_VALUE']],
  ['record renamed', { type: 'record', name: 'S', namespace: 'ns', fields: [{ name: 'a', type: 'int' }] }, INT_RECORD, ['NAME_MISMATCH']],
  ['record renamed with alias', { type: 'record', name: 'S', namespace: 'ns', aliases: ['R'], fields: [{ name: 'a', type: 'int' }] }, INT_RECORD, []],
  ['record moved to another namespace', { type: 'record', name: 'R', namespace: 'other', fields: [{ name: 'a', type: 'int' }] }, INT_RECORD, ['NAME_MISMATCH']],
  ['record moved with a full alias', { type: 'record', name: 'R', namespace: 'other', aliases: ['ns.R'], fields: [{ name: 'a', type: 'int' }] }, INT_RECORD, []],
  ['record read as map', { type: 'map', values: 'int' }, INT_RECORD, ['TYPE_MISMATCH']],
  ['nested record gains a field with default',
    rec([{ name: 'inner', type: { type: 'record', name: 'I', fields: [{ name: 'x', type: 'int' }, { name: 'y', type: 'int', default: 0 }] } }]),
    rec([{ name: 'inner', type: { type: 'record', name: 'I', fields: [{ name: 'x', type: 'int' }] } }]), []],
  ['nested record gains a field without default',
    rec([{ name: 'inner', type: { type: 'record', name: 'I', fields: [{ name: 'x', type: 'int' }, { name: 'y', type: 'int' }] } }]),
    rec([{ name: 'inner', type: { type: 'record', name: 'I', fields: [{ name: 'x', type: 'int' }] } }]), ['READER_FIELD_MISSING_DEFAULT_VALUE']],
  ['recursive record against itself',
    { type: 'record', name: 'L', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'L'] }] },
    { type: 'record', name: 'L', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'L'] }] }, []],
  ['recursive record with a promoted field',
    { type: 'record', name: 'L', fields: [{ name: 'v', type: 'long' }, { name: 'next', type: ['null', 'L'] }] },
    { type: 'record', name: 'L', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'L'] }] }, []],
  ['recursive record with a narrowed field',
    { type: 'record', name: 'L', fields: [{ name: 'v', type: 'int' }, { name: 'next', type: ['null', 'L'] }] },
    { type: 'record', name: 'L', fields: [{ name: 'v', type: 'long' }, { name: 'next', type: ['null', 'L'] }] }, ['TYPE_MISMATCH']],
  // Enums: names match, writer symbols known to the reader, or the reader has a default.
  ['same enum', { type: 'enum', name: 'E', symbols: ['A', 'B'] }, { type: 'enum', name: 'E', symbols: ['A', 'B'] }, []],
  ['enum symbol added in reader', { type: 'enum', name: 'E', symbols: ['A', 'B', 'C'] }, { type: 'enum', name: 'E', symbols: ['A', 'B'] }, []],
  ['enum symbol removed from reader', { type: 'enum', name: 'E', symbols: ['A'] }, { type: 'enum', name: 'E', symbols: ['A', 'B'] }, ['MISSING_ENUM_SYMBOLS']],
  ['enum symbol removed but reader has a default', { type: 'enum', name: 'E', symbols: ['A', 'U'], default: 'U' }, { type: 'enum', name: 'E', symbols: ['A', 'B'] }, []],
  ['enum symbols reordered', { type: 'enum', name: 'E', symbols: ['B', 'A'] }, { type: 'enum', name: 'E', symbols: ['A', 'B'] }, []],
  ['enum renamed', { type: 'enum', name: 'F', symbols: ['A'] }, { type: 'enum', name: 'E', symbols: ['A'] }, ['NAME_MISMATCH']],
  ['enum renamed with alias', { type: 'enum', name: 'F', aliases: ['E'], symbols: ['A'] }, { type: 'enum', name: 'E', symbols: ['A'] }, []],
  ['enum read as string', '"string"', { type: 'enum', name: 'E', symbols: ['A'] }, ['TYPE_MISMATCH']],
  // Fixed: names and sizes.
  ['same fixed', { type: 'fixed', name: 'F', size: 4 }, { type: 'fixed', name: 'F', size: 4 }, []],
  ['fixed resized', { type: 'fixed', name: 'F', size: 8 }, { type: 'fixed', name: 'F', size: 4 }, ['FIXED_SIZE_MISMATCH']],
  ['fixed renamed', { type: 'fixed', name: 'G', size: 4 }, { type: 'fixed', name: 'F', size: 4 }, ['NAME_MISMATCH']],
  ['fixed renamed and resized', { type: 'fixed', name: 'G', size: 2 }, { type: 'fixed', name: 'F', size: 4 }, ['NAME_MISMATCH', 'FIXED_SIZE_MISMATCH']],
  ['fixed read as bytes', '"bytes"', { type: 'fixed', name: 'F', size: 4 }, ['TYPE_MISMATCH']],
  // Arrays and maps resolve their items and values.
  ['array items promoted', { type: 'array', items: 'long' }, { type: 'array', items: 'int' }, []],
  ['array items narrowed', { type: 'array', items: 'int' }, { type: 'array', items: 'long' }, ['TYPE_MISMATCH']],
  ['map values promoted', { type: 'map', values: 'double' }, { type: 'map', values: 'float' }, []],
  ['map values changed', { type: 'map', values: 'string' }, { type: 'map', values: 'int' }, ['TYPE_MISMATCH']],
  ['array read as map', { type: 'map', values: 'int' }, { type: 'array', items: 'int' }, ['TYPE_MISMATCH']],
  // Unions: every writer branch must resolve against the reader.
  ['same union', ['null', 'string'], ['null', 'string'], []],
  ['union branch added in reader', ['null', 'string', 'int'], ['null', 'string'], []],
  ['union branch removed from reader', ['null'], ['null', 'string'], ['MISSING_UNION_BRANCH']],
  ['union branches reordered', ['string', 'null'], ['null', 'string'], []],
  ['writer union branch promoted in reader union', ['null', 'long'], ['null', 'int'], []],
  ['non-union writer, reader union containing it', ['null', 'string'], '"string"', []],
  ['non-union writer, reader union with a promotion', ['null', 'double'], '"int"', []],
  ['non-union writer, reader union without it', ['null', 'int'], '"string"', ['MISSING_UNION_BRANCH']],
  ['union writer, non-union reader covering all branches', '"double"', ['int', 'float'], []],
  ['union writer, non-union reader missing a branch', '"string"', ['null', 'string'], ['TYPE_MISMATCH']],
  ['optional field made required', rec([{ name: 'a', type: 'string' }]), rec([{ name: 'a', type: ['null', 'string'], default: null }]), ['TYPE_MISMATCH']],
  ['required field made optional', rec([{ name: 'a', type: ['null', 'string'], default: null }]), rec([{ name: 'a', type: 'string' }]), []],
  ['union with records by name', ['null', { type: 'record', name: 'A', fields: [] }, { type: 'record', name: 'B', fields: [] }], ['null', { type: 'record', name: 'B', fields: [] }], []],
  ['union writer record missing from reader union', ['null', { type: 'record', name: 'A', fields: [] }], ['null', { type: 'record', name: 'B', fields: [] }], ['MISSING_UNION_BRANCH']],
]

describe('Avro compatibility corpus (reader reads writer)', () => {
  it.each(cases)('%s', (_name, reader, writer, expected) => {
    expect(problems(reader, writer)).toEqual(expected)
  })

  it('reports where and what, as Confluent prints it', () => {
    const [i] = avro(rec([{ name: 'a', type: 'int' }, { name: 'b', type: 'string' }])).checkCanRead(avro(INT_RECORD))
    expect(i!.path).toBe('/fields/1')
    expect(i!.render('new', 'old')).toBe(
      "{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE', description:'The field 'b' at path '/fields/1' in the new schema has no default value and is missing in the old schema', additionalInfo:'b'}",
    )
    const [t] = avro(INT_RECORD).checkCanRead(avro(rec([{ name: 'a', type: 'string' }])))
    expect(t!.path).toBe('/fields/0/type')
    expect(t!.additionalInfo).toBe('reader type: INT not compatible with writer type: STRING')
    const [e] = avro({ type: 'enum', name: 'E', symbols: ['A'] }).checkCanRead(avro({ type: 'enum', name: 'E', symbols: ['A', 'C', 'B'] }))
    expect(e!.path).toBe('/symbols')
    expect(e!.additionalInfo).toBe('[B, C]')
    const [u] = avro(['null']).checkCanRead(avro(['null', 'string']))
    expect(u!.path).toBe('/1')
    expect(u!.additionalInfo).toBe('reader union lacking writer type: STRING')
  })
})
