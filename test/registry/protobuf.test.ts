// Protobuf parsing, stored form, message indexes and the compatibility corpus: (old, new) pairs from the
// protobuf language guide's "Updating A Message Type" and Confluent's protobuf compatibility rules, each
// asserted compatible or not (the new schema reading data written with the old one).
import { describe, expect, it } from 'vitest'
import { ProtobufParseError, ProtobufSchema } from '../../src/registry/protobuf/index.js'

const p3 = (body: string, pkg = 'test') => `syntax = "proto3";\npackage ${pkg};\n${body}`
const p2 = (body: string) => `syntax = "proto2";\npackage test;\n${body}`
const pb = (text: string) => ProtobufSchema.parse(text)

function problems(writer: string, reader: string): string[] {
  return pb(reader)
    .checkCanRead(pb(writer))
    .map((i) => i.errorType)
}

const M = (fields: string) => p3(`message M {\n${fields}\n}`)

const cases: [string, string, string, string[]][] = [
  ['identical', M('int32 a = 1;'), M('int32 a = 1;'), []],
  ['field added', M('int32 a = 1;'), M('int32 a = 1; string b = 2;'), []],
  ['field removed', M('int32 a = 1; string b = 2;'), M('int32 a = 1;'), []],
  ['field renamed (same number)', M('int32 a = 1;'), M('int32 renamed = 1;'), []],
  ['field renumbered', M('int32 a = 1;'), M('int32 a = 2;'), []],
  ['int32 to int64', M('int32 a = 1;'), M('int64 a = 1;'), []],
  ['int32 to uint32', M('int32 a = 1;'), M('uint32 a = 1;'), []],
  ['int64 to bool', M('int64 a = 1;'), M('bool a = 1;'), []],
  ['int32 to enum', M('int32 a = 1;'), p3('enum E { X = 0; }\nmessage M { E a = 1; }'), []],
  ['sint32 to sint64', M('sint32 a = 1;'), M('sint64 a = 1;'), []],
  ['int32 to sint32', M('int32 a = 1;'), M('sint32 a = 1;'), ['FIELD_SCALAR_KIND_CHANGED']],
  ['string to bytes', M('string a = 1;'), M('bytes a = 1;'), []],
  ['string to int32', M('string a = 1;'), M('int32 a = 1;'), ['FIELD_SCALAR_KIND_CHANGED']],
  ['fixed32 to sfixed32', M('fixed32 a = 1;'), M('sfixed32 a = 1;'), []],
  ['fixed64 to sfixed64', M('fixed64 a = 1;'), M('sfixed64 a = 1;'), []],
  ['fixed32 to fixed64', M('fixed32 a = 1;'), M('fixed64 a = 1;'), ['FIELD_SCALAR_KIND_CHANGED']],
  ['float to double', M('float a = 1;'), M('double a = 1;'), ['FIELD_SCALAR_KIND_CHANGED']],
  ['scalar to message', M('int32 a = 1;'), p3('message N { int32 x = 1; }\nmessage M { N a = 1; }'), ['FIELD_KIND_CHANGED']],
  ['scalar to map', M('string a = 1;'), M('map<string, string> a = 1;'), ['FIELD_KIND_CHANGED']],
  ['repeated numeric made singular', M('repeated int32 a = 1;'), M('int32 a = 1;'), ['FIELD_NUMERIC_LABEL_CHANGED']],
  ['repeated string made singular', M('repeated string a = 1;'), M('string a = 1;'), []],
  ['map value type widened in group', M('map<string, int32> a = 1;'), M('map<string, int64> a = 1;'), []],
  ['map value type changed', M('map<string, int32> a = 1;'), M('map<string, string> a = 1;'), ['FIELD_SCALAR_KIND_CHANGED']],
  ['map key type changed', M('map<string, int32> a = 1;'), M('map<int32, int32> a = 1;'), ['FIELD_SCALAR_KIND_CHANGED']],
  ['message field type renamed', p3('message N { int32 x = 1; }\nmessage M { N a = 1; }'), p3('message O { int32 x = 1; }\nmessage M { O a = 1; }'), ['MESSAGE_REMOVED', 'FIELD_NAMED_TYPE_CHANGED']],
  ['message field type changed incompatibly', p3('message N { int32 x = 1; }\nmessage M { N a = 1; }'), p3('message N { string x = 1; }\nmessage M { N a = 1; }'), ['FIELD_SCALAR_KIND_CHANGED', 'FIELD_SCALAR_KIND_CHANGED', 'FIELD_NAMED_TYPE_CHANGED']],
  ['nested message field added', p3('message M { message N { int32 x = 1; } N a = 1; }'), p3('message M { message N { int32 x = 1; int32 y = 2; } N a = 1; }'), []],
  ['message added', M('int32 a = 1;'), p3('message M { int32 a = 1; }\nmessage Other { int32 b = 1; }'), []],
  ['message removed', p3('message M { int32 a = 1; }\nmessage Other { int32 b = 1; }'), M('int32 a = 1;'), ['MESSAGE_REMOVED']],
  ['messages reordered', p3('message A { int32 a = 1; }\nmessage B { int32 b = 1; }'), p3('message B { int32 b = 1; }\nmessage A { int32 a = 1; }'), []],
  ['package changed', M('int32 a = 1;'), p3('message M { int32 a = 1; }', 'other'), ['PACKAGE_CHANGED']],
  ['enum added', M('int32 a = 1;'), p3('enum E { X = 0; }\nmessage M { int32 a = 1; }'), []],
  ['enum removed', p3('enum E { X = 0; }\nmessage M { int32 a = 1; }'), M('int32 a = 1;'), []],
  ['enum constant added', p3('enum E { X = 0; }\nmessage M { E a = 1; }'), p3('enum E { X = 0; Y = 1; }\nmessage M { E a = 1; }'), []],
  ['enum constant removed', p3('enum E { X = 0; Y = 1; }\nmessage M { E a = 1; }'), p3('enum E { X = 0; }\nmessage M { E a = 1; }'), []],
  ['enum constant renamed', p3('enum E { X = 0; Y = 1; }\nmessage M { E a = 1; }'), p3('enum E { X = 0; Z = 1; }\nmessage M { E a = 1; }'), []],
  ['oneof added with new fields', M('int32 a = 1;'), M('int32 a = 1; oneof o { string b = 2; int32 c = 3; }'), []],
  ['oneof field added', M('oneof o { string b = 2; }'), M('oneof o { string b = 2; int32 c = 3; }'), []],
  ['oneof field removed', M('oneof o { string b = 2; int32 c = 3; }'), M('oneof o { string b = 2; }'), ['ONEOF_FIELD_REMOVED']],
  ['whole oneof removed', M('int32 a = 1; oneof o { string b = 2; int32 c = 3; }'), M('int32 a = 1;'), []],
  ['oneof renamed', M('oneof o { string b = 2; int32 c = 3; }'), M('oneof p { string b = 2; int32 c = 3; }'), []],
  ['field moved out of a oneof', M('oneof o { string b = 2; int32 c = 3; }'), M('string b = 2; oneof o { int32 c = 3; }'), []],
  ['one field moved into a new oneof', M('int32 a = 1;'), M('oneof o { int32 a = 1; }'), []],
  ['two fields moved into a oneof', M('int32 a = 1; int32 b = 2;'), M('oneof o { int32 a = 1; int32 b = 2; }'), ['MULTIPLE_FIELDS_MOVED_TO_ONEOF']],
  ['field moved into an existing oneof', M('int32 a = 1; oneof o { int32 b = 2; }'), M('oneof o { int32 a = 1; int32 b = 2; }'), ['FIELD_MOVED_TO_EXISTING_ONEOF']],
  ['proto3 optional added', M('int32 a = 1;'), M('int32 a = 1; optional string b = 2;'), []],
  ['proto3 optional is not a oneof', M('optional int32 a = 1; optional int32 b = 2;'), M('optional int32 a = 1;'), []],
  ['proto2 optional field added', p2('message M { optional int32 a = 1; }'), p2('message M { optional int32 a = 1; optional string b = 2; }'), []],
  ['proto2 required field added', p2('message M { optional int32 a = 1; }'), p2('message M { optional int32 a = 1; required string b = 2; }'), ['REQUIRED_FIELD_ADDED']],
  ['proto2 required field removed', p2('message M { optional int32 a = 1; required string b = 2; }'), p2('message M { optional int32 a = 1; }'), ['REQUIRED_FIELD_REMOVED']],
  ['proto2 optional made repeated (numeric)', p2('message M { optional int32 a = 1; }'), p2('message M { repeated int32 a = 1; }'), ['FIELD_NUMERIC_LABEL_CHANGED']],
  ['proto2 optional made repeated (string)', p2('message M { optional string a = 1; }'), p2('message M { repeated string a = 1; }'), []],
  ['proto2 optional made required', p2('message M { optional int32 a = 1; }'), p2('message M { required int32 a = 1; }'), ['FIELD_NUMERIC_LABEL_CHANGED']],
  ['reserved numbers added', M('int32 a = 1; int32 b = 2;'), M('int32 a = 1; reserved 2;'), []],
  ['comments and layout only', M('int32 a = 1;'), `// a comment\nsyntax="proto3"; package test; /* block */ message M{int32 a=1;}`, []],
]

describe('Protobuf compatibility corpus (new reads old)', () => {
  it.each(cases)('%s', (_name, writer, reader, expected) => {
    expect(problems(writer, reader)).toEqual(expected)
  })

  it('prints the path and Confluent’s sentence', () => {
    const [i] = pb(M('string a = 1;')).checkCanRead(pb(M('int32 a = 1;')))
    expect(i!.path).toBe('#/M/1')
    expect(i!.render('new', 'old')).toBe('{errorType:"FIELD_SCALAR_KIND_CHANGED", description:"The kind of a SCALAR field at path \'#/M/1\' in the new schema does not match its kind in the old schema"}')
  })
})

describe('Protobuf parsing', () => {
  it.each([
    ['a syntax error', M('int32 a = 1')],
    ['an unknown type', M('Missing a = 1;')],
    ['a duplicate field number', M('int32 a = 1; int32 b = 1;')],
    ['an unresolved import', p3('import "other.proto";\nmessage M { other.O o = 1; }')],
  ])('rejects %s', (_what, text) => {
    expect(() => pb(text)).toThrow(ProtobufParseError)
  })

  it('stores the file re-printed from its tokens', () => {
    const a = pb('syntax = "proto3";  // c\npackage x.y;\nmessage A {\n  /* b */ int32 a = 1 [deprecated = true];\n  map<string,int32> m = 2;\n  message B { repeated string s = 1; }\n}\n')
    expect(a.canonical).toBe('syntax = "proto3";\npackage x.y;\nmessage A {\n  int32 a = 1 [deprecated = true];\n  map<string, int32> m = 2;\n  message B {\n    repeated string s = 1;\n  }\n}\n')
    expect(pb(a.canonical).canonical).toBe(a.canonical)
  })

  it('resolves imports through references and google well-known types', () => {
    const other = p3('message O { string s = 1; }', 'other')
    const main = p3('import "other.proto";\nimport "google/protobuf/timestamp.proto";\nmessage M { other.O o = 1; google.protobuf.Timestamp at = 2; }')
    const s = ProtobufSchema.parse(main, [{ name: 'other.proto', subject: 'other', version: 1 }], [
      { name: 'other.proto', subject: 'other', version: 1, schemaType: 'PROTOBUF', schema: other, references: [] },
    ])
    const m = s.message('test.M')!
    expect(m.fields['o']!.resolvedType!.fullName).toBe('.other.O')
    expect(m.fields['at']!.resolvedType!.fullName).toBe('.google.protobuf.Timestamp')
    // The referenced file's types are not part of this schema's message indexes.
    expect(s.messageIndexes('other.O')).toBeUndefined()
  })

  it('numbers messages by position among messages, nested ones by path', () => {
    const s = pb(p3('enum E { X = 0; }\nmessage A { message A1 { int32 a = 1; } enum F { Y = 0; } message A2 { message Deep { int32 d = 1; } } }\nmessage B { int32 b = 1; }'))
    expect(s.messageIndexes('test.A')).toEqual([0])
    expect(s.messageIndexes('.test.A.A1')).toEqual([0, 0])
    expect(s.messageIndexes('test.A.A2.Deep')).toEqual([0, 1, 0])
    expect(s.messageIndexes('test.B')).toEqual([1])
    expect(s.messageAt([0, 1, 0])!.fullName).toBe('.test.A.A2.Deep')
    expect(s.messageAt([2])).toBeUndefined()
    expect(s.firstMessage()!.name).toBe('A')
  })
})
