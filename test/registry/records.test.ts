// The `_schemas` topic formats and their replay: keys byte for byte as Confluent writes them (a compacted
// topic only merges equal key bytes), values read from Confluent's and Karapace's forms, and replay
// semantics for soft delete, hard delete (tombstones), DELETE_SUBJECT, config and mode, contexts, and
// records this registry does not understand.
import { describe, expect, it } from 'vitest'
import { Keys, RegistryState, Values, parseKey, parseSchemaValue } from '../../src/registry/index.js'

describe('_schemas record formats', () => {
  it('writes keys exactly as Confluent does', () => {
    expect(Keys.schema('orders-value', 3)).toBe('{"keytype":"SCHEMA","subject":"orders-value","version":3,"magic":1}')
    expect(Keys.config(null)).toBe('{"keytype":"CONFIG","subject":null,"magic":0}')
    expect(Keys.config('orders-value')).toBe('{"keytype":"CONFIG","subject":"orders-value","magic":0}')
    expect(Keys.mode(null)).toBe('{"keytype":"MODE","subject":null,"magic":0}')
    expect(Keys.deleteSubject('s')).toBe('{"keytype":"DELETE_SUBJECT","subject":"s","magic":0}')
    expect(Keys.noop()).toBe('{"keytype":"NOOP","magic":0}')
  })

  it('writes values as Confluent does', () => {
    expect(Values.schema({ subject: 's', version: 1, id: 7, schemaType: 'AVRO', references: [], schema: '"string"', deleted: false })).toBe(
      '{"subject":"s","version":1,"id":7,"schema":"\\"string\\"","deleted":false}',
    )
    expect(Values.schema({ subject: 's', version: 2, id: 8, schemaType: 'PROTOBUF', references: [{ name: 'a.proto', subject: 'a', version: 1 }], schema: 'x', deleted: true })).toBe(
      '{"subject":"s","version":2,"id":8,"schemaType":"PROTOBUF","references":[{"name":"a.proto","subject":"a","version":1}],"schema":"x","deleted":true}',
    )
    expect(Values.config(null, { compatibilityLevel: 'FULL', extra: {} })).toBe('{"compatibilityLevel":"FULL"}')
    expect(Values.config('s', { compatibilityLevel: 'NONE', normalize: true, extra: {} })).toBe('{"subject":"s","normalize":true,"compatibilityLevel":"NONE"}')
    expect(Values.mode(null, { mode: 'READONLY' })).toBe('{"mode":"READONLY"}')
    expect(Values.deleteSubject({ subject: 's', version: 3 })).toBe('{"subject":"s","version":3}')
  })

  it('reads keys in any property order, and Karapace’s older layout', () => {
    expect(parseKey('{"subject":"test","version":1,"magic":1,"keytype":"SCHEMA"}')).toEqual({ keytype: 'SCHEMA', subject: 'test', version: 1, magic: 1 })
    expect(parseKey('{"magic":0,"keytype":"CONFIG"}')).toEqual({ keytype: 'CONFIG', subject: null, magic: 0 })
    expect(parseKey('{"keytype":"ASSOC","subject":"x"}')).toBeUndefined()
    expect(() => parseKey('{"keytype":"SCHEMA","subject":"x","version":1,"magic":7}')).toThrow()
  })

  it('reads schema values with defaults for what older writers left out', () => {
    const v = parseSchemaValue('{"subject":"s","version":1,"id":1,"schema":"\\"int\\"","md5":"AAAA","offset":5,"ts":1}')
    expect(v).toEqual({ subject: 's', version: 1, id: 1, schemaType: 'AVRO', references: [], schema: '"int"', deleted: false })
  })
})

const schema = (subject: string, version: number, id: number, deleted = false, schemaText = '"string"', references: { name: string; subject: string; version: number }[] = []) => ({
  key: Keys.schema(subject, version),
  value: Values.schema({ subject, version, id, schemaType: 'AVRO', references, schema: schemaText, deleted }),
})

describe('replaying _schemas', () => {
  it('rebuilds subjects, versions, ids and settings', () => {
    const state = new RegistryState().applyAll([
      { key: Keys.noop(), value: '{}' },
      schema('a', 1, 1),
      schema('a', 2, 2, false, '"int"'),
      schema('b', 1, 1),
      { key: Keys.config(null), value: Values.config(null, { compatibilityLevel: 'FULL', extra: {} }) },
      { key: Keys.config('a'), value: Values.config('a', { compatibilityLevel: 'NONE', extra: {} }) },
      { key: Keys.mode('b'), value: Values.mode('b', { mode: 'READONLY' }) },
    ])
    expect(state.versions('a', false).map((v) => v.version)).toEqual([1, 2])
    expect(state.schemaById('.', 2)?.schema).toBe('"int"')
    expect(state.versionsById('.', 1).map((v) => `${v.subject}/${v.version}`)).toEqual(['a/1', 'b/1'])
    expect(state.maxId('.')).toBe(2)
    expect(state.configs.get(null)?.compatibilityLevel).toBe('FULL')
    expect(state.configs.get('a')?.compatibilityLevel).toBe('NONE')
    expect(state.modes.get('b')?.mode).toBe('READONLY')
    expect(state.skipped).toBe(0)
  })

  it('applies soft deletes, DELETE_SUBJECT and tombstones', () => {
    const state = new RegistryState().applyAll([
      schema('a', 1, 1),
      schema('a', 2, 2, false, '"int"'),
      schema('a', 3, 3, false, '"long"'),
      schema('a', 2, 2, true, '"int"'),
      { key: Keys.deleteSubject('a'), value: Values.deleteSubject({ subject: 'a', version: 1 }) },
    ])
    expect(state.versions('a', false).map((v) => v.version)).toEqual([3])
    expect(state.versions('a', true).map((v) => [v.version, v.deleted])).toEqual([[1, true], [2, true], [3, false]])
    state.apply(Keys.schema('a', 1), null)
    state.apply(Keys.schema('a', 2), null)
    expect(state.versions('a', true).map((v) => v.version)).toEqual([3])
    // A hard-deleted id no longer resolves, but is never handed out again.
    expect(state.schemaById('.', 1)).toBeUndefined()
    expect(state.maxId('.')).toBe(3)
    state.apply(Keys.schema('a', 3), null)
    expect(state.subjects.has('a')).toBe(false)
    expect(state.maxId('.')).toBe(3)
  })

  it('removes config and mode on tombstones and keeps other contexts apart', () => {
    const state = new RegistryState().applyAll([
      { key: Keys.config('a'), value: Values.config('a', { compatibilityLevel: 'NONE', extra: {} }) },
      { key: Keys.config('a'), value: null },
      schema(':.staging:a', 1, 1, false, '"int"'),
      schema('a', 1, 1),
    ])
    expect(state.configs.has('a')).toBe(false)
    expect(state.contexts.has('.staging')).toBe(true)
    expect(state.schemaById('.staging', 1)?.schema).toBe('"int"')
    expect(state.schemaById('.', 1)?.schema).toBe('"string"')
  })

  it('tracks references for referencedby', () => {
    const state = new RegistryState().applyAll([schema('base', 1, 1), schema('user', 1, 2, false, '"x"', [{ name: 'base', subject: 'base', version: 1 }])])
    expect(state.referencedBy('base', 1).map((v) => v.id)).toEqual([2])
    state.apply(Keys.schema('user', 1), null)
    expect(state.referencedBy('base', 1)).toEqual([])
  })

  it('skips records it cannot read without losing the rest', () => {
    const state = new RegistryState().applyAll([
      { key: 'not json', value: '{}' },
      { key: Keys.schema('a', 1), value: '{"subject":"a"}' },
      { key: '{"keytype":"ASSOC","subject":"a"}', value: '{}' },
      schema('a', 1, 5),
    ])
    expect(state.skipped).toBe(2)
    expect(state.versions('a', false).map((v) => v.id)).toEqual([5])
  })
})
