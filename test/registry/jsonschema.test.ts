// JSON Schema parsing, validation and the compatibility corpus. Each case is an (old, new) pair as
// Confluent's documentation ("JSON Schema compatibility rules": open, closed and partially open content
// models) and Robert Yokota's "Understanding JSON Schema Compatibility" describe it: whether the new schema
// can read data written with the old one (BACKWARD), and the difference types reported if not.
import { describe, expect, it } from 'vitest'
import { JsonSchema, JsonSchemaParseError } from '../../src/registry/jsonschema/index.js'

const js = (s: unknown) => JsonSchema.parse(JSON.stringify(s))

/** Incompatible difference types when `reader` reads data valid under `writer`. */
function problems(writer: unknown, reader: unknown): string[] {
  return js(reader)
    .checkCanRead(js(writer))
    .map((i) => i.errorType)
}

const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'object', properties, ...extra })
const closed = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => obj(properties, { additionalProperties: false, ...extra })
const S = { type: 'string' }
const I = { type: 'integer' }
const N = { type: 'number' }

// [name, writer (old), reader (new), expected incompatible difference types]
const cases: [string, unknown, unknown, string[]][] = [
  // Types
  ['identical', S, S, []],
  ['integer widened to number', I, N, []],
  ['number narrowed to integer', N, I, ['TYPE_NARROWED']],
  ['string changed to integer', S, I, ['TYPE_CHANGED']],
  ['type widened to a union', S, { type: ['string', 'null'] }, []],
  ['union narrowed to one type', { type: ['string', 'null'] }, S, ['TYPE_CHANGED']],
  ['anything narrowed to a string', {}, S, ['TYPE_CHANGED']],
  ['string widened to anything', S, {}, []],
  ['string widened to true', S, true, []],
  ['false widened to a string', false, S, []],
  ['title, description, default and $id changes', { ...S, title: 'a', description: 'b', default: 'x', $id: 'u1' }, { ...S, title: 'c', description: 'd', default: 'y', $id: 'u2' }, []],
  // String constraints
  ['maxLength increased', { ...S, maxLength: 5 }, { ...S, maxLength: 10 }, []],
  ['maxLength decreased', { ...S, maxLength: 10 }, { ...S, maxLength: 5 }, ['MAX_LENGTH_DECREASED']],
  ['maxLength added', S, { ...S, maxLength: 5 }, ['MAX_LENGTH_ADDED']],
  ['maxLength removed', { ...S, maxLength: 5 }, S, []],
  ['minLength increased', { ...S, minLength: 1 }, { ...S, minLength: 2 }, ['MIN_LENGTH_INCREASED']],
  ['minLength decreased', { ...S, minLength: 2 }, { ...S, minLength: 1 }, []],
  ['pattern added', S, { ...S, pattern: '^a' }, ['PATTERN_ADDED']],
  ['pattern removed', { ...S, pattern: '^a' }, S, []],
  ['pattern changed', { ...S, pattern: '^a' }, { ...S, pattern: '^b' }, ['PATTERN_CHANGED']],
  // Numeric bounds
  ['maximum increased', { ...N, maximum: 10 }, { ...N, maximum: 20 }, []],
  ['maximum decreased', { ...N, maximum: 20 }, { ...N, maximum: 10 }, ['MAXIMUM_DECREASED']],
  ['maximum added', N, { ...N, maximum: 10 }, ['MAXIMUM_ADDED']],
  ['minimum decreased', { ...N, minimum: 5 }, { ...N, minimum: 0 }, []],
  ['minimum increased', { ...N, minimum: 0 }, { ...N, minimum: 5 }, ['MINIMUM_INCREASED']],
  ['minimum removed', { ...N, minimum: 0 }, N, []],
  ['exclusiveMaximum decreased', { ...N, exclusiveMaximum: 10 }, { ...N, exclusiveMaximum: 5 }, ['EXCLUSIVE_MAXIMUM_DECREASED']],
  ['exclusiveMinimum increased', { ...N, exclusiveMinimum: 0 }, { ...N, exclusiveMinimum: 1 }, ['EXCLUSIVE_MINIMUM_INCREASED']],
  ['exclusiveMinimum removed', { ...N, exclusiveMinimum: 0 }, N, []],
  ['multipleOf reduced (divisor)', { ...N, multipleOf: 10 }, { ...N, multipleOf: 5 }, []],
  ['multipleOf expanded (multiple)', { ...N, multipleOf: 5 }, { ...N, multipleOf: 10 }, ['MULTIPLE_OF_EXPANDED']],
  ['multipleOf changed', { ...N, multipleOf: 3 }, { ...N, multipleOf: 5 }, ['MULTIPLE_OF_CHANGED']],
  ['multipleOf added', N, { ...N, multipleOf: 2 }, ['MULTIPLE_OF_ADDED']],
  ['decimal multipleOf reduced', { ...N, multipleOf: 0.3 }, { ...N, multipleOf: 0.1 }, []],
  // Enums
  ['enum extended', { enum: ['a', 'b'] }, { enum: ['a', 'b', 'c'] }, []],
  ['enum narrowed', { enum: ['a', 'b'] }, { enum: ['a'] }, ['ENUM_ARRAY_NARROWED']],
  ['enum changed', { enum: ['a', 'b'] }, { enum: ['a', 'c'] }, ['ENUM_ARRAY_CHANGED']],
  ['enum reordered', { enum: ['a', 'b'] }, { enum: ['b', 'a'] }, []],
  ['typed enum extended', { type: 'string', enum: ['a'] }, { type: 'string', enum: ['a', 'b'] }, []],
  ['const changed', { const: 1 }, { const: 2 }, ['ENUM_ARRAY_CHANGED']],
  // Objects: open content model (additionalProperties absent or true)
  ['open: optional property added', obj({ a: S }), obj({ a: S, b: I }), ['OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL']],
  ['open: required property added', obj({ a: S }), obj({ a: S, b: I }, { required: ['b'] }), ['REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL']],
  ['open: property with empty schema added', obj({ a: S }), obj({ a: S, b: {} }), []],
  ['open: property removed', obj({ a: S, b: I }), obj({ a: S }), []],
  ['open with additionalProperties true: property removed', obj({ a: S, b: I }, { additionalProperties: true }), obj({ a: S }, { additionalProperties: true }), []],
  // Closed content model (additionalProperties: false)
  ['closed: optional property added', closed({ a: S }), closed({ a: S, b: I }), []],
  ['closed: required property added', closed({ a: S }), closed({ a: S, b: I }, { required: ['b'] }), ['REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL']],
  ['closed: required property with default added', closed({ a: S }), closed({ a: S, b: { ...I, default: 0 } }, { required: ['b'] }), []],
  ['closed: property removed', closed({ a: S, b: I }), closed({ a: S }), ['PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL']],
  ['closed: property with false schema removed', closed({ a: S, b: false }), closed({ a: S }), []],
  ['closed to open', closed({ a: S }), obj({ a: S }), []],
  ['open to closed', obj({ a: S }), closed({ a: S }), ['ADDITIONAL_PROPERTIES_REMOVED']],
  // Partially open content model (additionalProperties or patternProperties with a schema)
  ['partial: property removed, covered', obj({ a: S, b: I }, { additionalProperties: I }), obj({ a: S }, { additionalProperties: I }), []],
  ['partial: property removed, not covered', obj({ a: S, b: S }, { additionalProperties: I }), obj({ a: S }, { additionalProperties: I }), ['TYPE_CHANGED', 'PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL']],
  ['partial: property added, covered', obj({ a: S }, { additionalProperties: I }), obj({ a: S, b: N }, { additionalProperties: I }), []],
  ['partial: property added, not covered', obj({ a: S }, { additionalProperties: I }), obj({ a: S, b: S }, { additionalProperties: I }), ['TYPE_CHANGED', 'PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL']],
  ['partial: property added, covered by a pattern', obj({ a: S }, { patternProperties: { '^x': I } }), obj({ a: S, x1: I }, { patternProperties: { '^x': I } }), []],
  ['additionalProperties schema narrowed', obj({}), obj({}, { additionalProperties: S }), ['ADDITIONAL_PROPERTIES_NARROWED']],
  ['additionalProperties schema widened', obj({}, { additionalProperties: I }), obj({}, { additionalProperties: N }), []],
  // Required
  ['required added', obj({ a: S }), obj({ a: S }, { required: ['a'] }), ['REQUIRED_ATTRIBUTE_ADDED']],
  ['required with default added', obj({ a: S }), obj({ a: { ...S, default: 'x' } }, { required: ['a'] }), []],
  ['required removed', obj({ a: S }, { required: ['a'] }), obj({ a: S }), []],
  ['nested property type changed', obj({ a: obj({ b: S }) }), obj({ a: obj({ b: I }) }), ['TYPE_CHANGED']],
  ['nested property type widened', obj({ a: obj({ b: I }) }), obj({ a: obj({ b: N }) }), []],
  ['maxProperties decreased', obj({}, { maxProperties: 5 }), obj({}, { maxProperties: 3 }), ['MAX_PROPERTIES_DECREASED']],
  ['minProperties decreased', obj({}, { minProperties: 3 }), obj({}, { minProperties: 1 }), []],
  ['dependency array extended', obj({}, { dependencies: { a: ['b'] } }), obj({}, { dependencies: { a: ['b', 'c'] } }), ['DEPENDENCY_ARRAY_EXTENDED']],
  ['dependency array narrowed', obj({}, { dependencies: { a: ['b', 'c'] } }), obj({}, { dependencies: { a: ['b'] } }), []],
  // Arrays
  ['array items widened', { type: 'array', items: I }, { type: 'array', items: N }, []],
  ['array items narrowed', { type: 'array', items: N }, { type: 'array', items: I }, ['TYPE_NARROWED']],
  ['array maxItems decreased', { type: 'array', maxItems: 5 }, { type: 'array', maxItems: 2 }, ['MAX_ITEMS_DECREASED']],
  ['array minItems decreased', { type: 'array', minItems: 2 }, { type: 'array', minItems: 1 }, []],
  ['uniqueItems added', { type: 'array' }, { type: 'array', uniqueItems: true }, ['UNIQUE_ITEMS_ADDED']],
  ['uniqueItems removed', { type: 'array', uniqueItems: true }, { type: 'array' }, []],
  ['tuple item added to open array', { type: 'array', items: [S] }, { type: 'array', items: [S, I] }, ['ITEM_ADDED_TO_OPEN_CONTENT_MODEL']],
  ['tuple item added to closed array', { type: 'array', items: [S], additionalItems: false }, { type: 'array', items: [S, I], additionalItems: false }, []],
  ['tuple item removed from open array', { type: 'array', items: [S, I] }, { type: 'array', items: [S] }, []],
  ['tuple item removed from closed array', { type: 'array', items: [S, I], additionalItems: false }, { type: 'array', items: [S], additionalItems: false }, ['ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL']],
  ['2020-12 prefixItems item added to closed array',
    { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [S], items: false },
    { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [S, I], items: false }, []],
  // Combined types
  ['oneOf branch added', { oneOf: [S, I] }, { oneOf: [S, I, { type: 'boolean' }] }, []],
  ['oneOf branch removed', { oneOf: [S, I] }, { oneOf: [S] }, ['SUM_TYPE_NARROWED']],
  ['anyOf branch removed', { anyOf: [S, I, { type: 'boolean' }] }, { anyOf: [S, I] }, ['SUM_TYPE_NARROWED']],
  ['allOf branch added', { allOf: [obj({ a: S })] }, { allOf: [obj({ a: S }), obj({}, { required: ['a'] })] }, ['PRODUCT_TYPE_EXTENDED']],
  ['allOf branch removed', { allOf: [obj({ a: S }), obj({}, { required: ['a'] })] }, { allOf: [obj({ a: S })] }, []],
  ['oneOf changed to anyOf', { oneOf: [S, I] }, { anyOf: [S, I] }, []],
  ['anyOf changed to oneOf', { anyOf: [S, I] }, { oneOf: [S, I] }, ['COMBINED_TYPE_CHANGED']],
  ['oneOf branch type changed', { oneOf: [S, I] }, { oneOf: [S, { type: 'boolean' }] }, ['COMBINED_TYPE_SUBSCHEMAS_CHANGED']],
  ['single type into a oneOf', S, { oneOf: [S, I] }, []],
  ['allOf narrowed into a single type', { allOf: [S, { maxLength: 3 }] }, S, []],
  ['not narrowed', { not: { type: 'string' } }, { not: { type: 'string', maxLength: 3 } }, []],
  ['not extended', { not: { type: 'string', maxLength: 3 } }, { not: { type: 'string' } }, ['NOT_TYPE_EXTENDED']],
  // References
  ['local $ref target widened', { definitions: { a: I }, type: 'object', properties: { x: { $ref: '#/definitions/a' } } }, { definitions: { a: N }, type: 'object', properties: { x: { $ref: '#/definitions/a' } } }, []],
  ['local $ref target narrowed', { $defs: { a: N }, type: 'object', properties: { x: { $ref: '#/$defs/a' } } }, { $defs: { a: I }, type: 'object', properties: { x: { $ref: '#/$defs/a' } } }, ['TYPE_NARROWED']],
  ['recursive schema unchanged',
    { definitions: { node: obj({ next: { $ref: '#/definitions/node' }, v: I }) }, $ref: '#/definitions/node' },
    { definitions: { node: obj({ next: { $ref: '#/definitions/node' }, v: I }) }, $ref: '#/definitions/node' }, []],
  ['recursive schema with a narrowed field',
    { definitions: { node: obj({ next: { $ref: '#/definitions/node' }, v: N }) }, $ref: '#/definitions/node' },
    { definitions: { node: obj({ next: { $ref: '#/definitions/node' }, v: I }) }, $ref: '#/definitions/node' }, ['TYPE_NARROWED']],
]

describe('JSON Schema compatibility corpus (new reads old)', () => {
  it.each(cases)('%s', (_name, writer, reader, expected) => {
    expect(problems(writer, reader)).toEqual(expected)
  })

  it('prints the path and Confluent’s sentence', () => {
    const [i] = js(obj({ a: S, b: I })).checkCanRead(js(obj({ a: S })))
    expect(i!.path).toBe('#/properties/b')
    expect(i!.render('new', 'old')).toBe(
      '{errorType:"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", description:"The new schema has an open content model and has a property or item at path \'#/properties/b\' which is missing in the old schema"}',
    )
    const [m] = js({ ...S, maxLength: 2 }).checkCanRead(js({ ...S, maxLength: 5 }))
    expect(m!.render('new', 'old')).toBe('{errorType:"MAX_LENGTH_DECREASED", description:"The value at path \'#/maxLength\' in the new schema is less than its value in the old schema"}')
  })
})

describe('JSON Schema parsing and validation', () => {
  it.each([
    ['not JSON', '{'],
    ['an array', '[1]'],
    ['a bad type', '{"type":"strng"}'],
    ['a bad minLength', '{"type":"string","minLength":-1}'],
    ['an unresolved $ref', '{"$ref":"#/definitions/missing"}'],
    ['an unknown external $ref', '{"$ref":"other.json"}'],
  ])('rejects %s', (_what, text) => {
    expect(() => JsonSchema.parse(text)).toThrow(JsonSchemaParseError)
  })

  it('keeps the text compact as the stored form and sorts keys when normalizing', () => {
    const a = JsonSchema.parse('{ "type": "object", "properties": { "b": {"type":"string"}, "a": {"type":"integer"} } }')
    expect(a.canonical).toBe('{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"integer"}}}')
    expect(a.normalized()).toBe('{"properties":{"a":{"type":"integer"},"b":{"type":"string"}},"type":"object"}')
  })

  it('resolves references to other registered schemas by name and validates through them', () => {
    const address = '{"type":"object","properties":{"street":{"type":"string"}},"required":["street"]}'
    const person = JsonSchema.parse('{"type":"object","properties":{"home":{"$ref":"address.json"}}}', [{ name: 'address.json', subject: 'address', version: 1 }], [
      { name: 'address.json', subject: 'address', version: 1, schemaType: 'JSON', schema: address, references: [] },
    ])
    expect(person.validate({ home: { street: 'Main' } })).toBeUndefined()
    expect(person.validate({ home: { street: 3 } })).toMatch(/string/)
    expect(person.validate({ home: {} })).toMatch(/street/)
  })

  it('validates documents against draft 7 and 2020-12 schemas', () => {
    const d7 = js({ type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] })
    expect(d7.validate({ n: 2 })).toBeUndefined()
    expect(d7.validate({ n: 0 })).toMatch(/>= 1/)
    expect(d7.validate({})).toMatch(/n/)
    const d2020 = js({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{ type: 'string' }], items: false })
    expect(d2020.validate(['a'])).toBeUndefined()
    expect(d2020.validate(['a', 1])).toBeDefined()
  })
})
