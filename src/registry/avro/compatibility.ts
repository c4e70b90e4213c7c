// Avro reader/writer compatibility, by the specification's "Schema Resolution" rules, checked statically
// the way Avro Java's SchemaCompatibility does (Confluent's AvroSchema.isBackwardCompatible calls it):
//   - same primitive type: compatible; promotions int→long/float/double, long→float/double, float→double,
//     string↔bytes;
//   - records: names match (reader's full name or one of its aliases equals the writer's full name); each
//     reader field is found in the writer by name or by one of the reader field's aliases and its type
//     resolves, or else it must have a default (a reader enum field with an enum default may take it);
//     writer fields the reader lacks are ignored;
//   - enums: names match and every writer symbol is a reader symbol, unless the reader has a default;
//   - fixed: names and sizes match; arrays by items, maps by values;
//   - unions: every writer branch must resolve against the reader (reader union: some branch of it);
//     a non-union writer against a reader union needs one compatible branch.
// Each incompatibility carries Avro's type (NAME_MISMATCH, FIXED_SIZE_MISMATCH, MISSING_ENUM_SYMBOLS,
// READER_FIELD_MISSING_DEFAULT_VALUE, TYPE_MISMATCH, MISSING_UNION_BRANCH), a JSON-pointer location such
// as /fields/1/type, and the description Confluent's avro.Difference prints.
import type { Incompatibility } from '../schema-type/types.js'
import { fillLabels } from '../schema-type/types.js'
import { type AvroField, type AvroNamed, type AvroRecord, type AvroType, javaTypeName } from './schema.js'

export type AvroIncompatibilityType =
  | 'NAME_MISMATCH'
  | 'FIXED_SIZE_MISMATCH'
  | 'MISSING_ENUM_SYMBOLS'
  | 'READER_FIELD_MISSING_DEFAULT_VALUE'
  | 'TYPE_MISMATCH'
  | 'MISSING_UNION_BRANCH'

function location(path: string[]): string {
  return '/' + path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')
}

function describe(type: AvroIncompatibilityType, path: string, info: string): string {
  switch (type) {
    case 'FIXED_SIZE_MISMATCH':
      return `The size of FIXED type field at path '${path}' in the %s schema does not match with the %s schema`
    case 'TYPE_MISMATCH':
      return `The type (path '${path}') of a field in the %s schema does not match with the %s schema`
    case 'NAME_MISMATCH':
      return `The name of the schema has changed (path '${path}')`
    case 'MISSING_ENUM_SYMBOLS':
      return `The %s schema is missing enum symbols '${info}' at path '${path}' in the %s schema`
    case 'MISSING_UNION_BRANCH':
      return `The %s schema is missing a type inside a union field at path '${path}' in the %s schema`
    case 'READER_FIELD_MISSING_DEFAULT_VALUE':
      return `The field '${info}' at path '${path}' in the %s schema has no default value and is missing in the %s schema`
  }
}

function incompatibility(type: AvroIncompatibilityType, path: string[], info: string): Incompatibility {
  const loc = location(path)
  const description = describe(type, loc, info)
  return {
    errorType: type,
    path: loc,
    description,
    additionalInfo: info,
    render: (reader, writer) => `{errorType:'${type}', description:'${fillLabels(description, reader, writer)}', additionalInfo:'${info}'}`,
  }
}

interface Result {
  compatible: boolean
  incompatibilities: Incompatibility[]
}
const COMPATIBLE: Result = { compatible: true, incompatibilities: [] }
const merge = (a: Result, b: Result): Result =>
  b.compatible && b.incompatibilities.length === 0 ? a : { compatible: a.compatible && b.compatible, incompatibilities: [...a.incompatibilities, ...b.incompatibilities] }

/** Whether `reader` can read everything written with `writer`; the incompatibilities found if not. */
export function checkAvroCompatibility(reader: AvroType, writer: AvroType): Incompatibility[] {
  return new Checker().check(reader, writer, []).incompatibilities
}

function namesMatch(reader: AvroNamed, writer: AvroNamed): boolean {
  return reader.name === writer.name || reader.aliases.includes(writer.name)
}

function lookupWriterField(writer: AvroRecord, readerField: AvroField): AvroField | undefined {
  const direct = writer.fields.find((f) => f.name === readerField.name)
  if (direct) return direct
  for (const alias of readerField.aliases) {
    const aliased = writer.fields.find((f) => f.name === alias)
    if (aliased) return aliased
  }
  return undefined
}

const PROMOTIONS: Record<string, string[]> = {
  long: ['int'],
  float: ['int', 'long'],
  double: ['int', 'long', 'float'],
  bytes: ['string'],
  string: ['bytes'],
}

class Checker {
  // Pairs being checked or checked already, by identity: recursive schemas meet the same pair again, and
  // a pair met while it is still being checked is taken as compatible unless proven otherwise.
  private readonly memo = new Map<AvroType, Map<AvroType, Result | 'in-progress'>>()

  check(reader: AvroType, writer: AvroType, path: string[]): Result {
    let byWriter = this.memo.get(reader)
    if (!byWriter) this.memo.set(reader, (byWriter = new Map()))
    const known = byWriter.get(writer)
    if (known === 'in-progress') return COMPATIBLE
    if (known) return known
    byWriter.set(writer, 'in-progress')
    const result = this.calculate(reader, writer, path)
    byWriter.set(writer, result)
    return result
  }

  private calculate(reader: AvroType, writer: AvroType, path: string[]): Result {
    const rt = reader.type === 'error' ? 'record' : reader.type
    const wt = writer.type === 'error' ? 'record' : writer.type
    if (rt === wt) {
      switch (reader.type) {
        case 'array':
          return this.check(reader.items, (writer as typeof reader).items, [...path, 'items'])
        case 'map':
          return this.check(reader.values, (writer as typeof reader).values, [...path, 'values'])
        case 'fixed': {
          const w = writer as typeof reader
          let r = this.names(reader, w, path)
          if (reader.size !== w.size) r = merge(r, fail('FIXED_SIZE_MISMATCH', [...path, 'size'], `expected: ${w.size}, found: ${reader.size}`))
          return r
        }
        case 'enum': {
          const w = writer as typeof reader
          let r = this.names(reader, w, path)
          const missing = w.symbols.filter((s) => !reader.symbols.includes(s)).sort()
          if (missing.length > 0 && reader.default === undefined) {
            r = merge(r, fail('MISSING_ENUM_SYMBOLS', [...path, 'symbols'], `[${missing.join(', ')}]`))
          }
          return r
        }
        case 'record':
        case 'error':
          return merge(this.names(reader, writer as AvroRecord, path), this.fields(reader, writer as AvroRecord, path))
        case 'union': {
          let r = COMPATIBLE
          ;(writer as typeof reader).branches.forEach((branch, i) => {
            if (!this.check(reader, branch, [...path, String(i)]).compatible) {
              r = merge(r, fail('MISSING_UNION_BRANCH', [...path, String(i)], `reader union lacking writer type: ${javaTypeName(branch)}`))
            }
          })
          return r
        }
        default:
          return COMPATIBLE
      }
    }
    // A writer union: each of its branches must be readable.
    if (writer.type === 'union') {
      let r = COMPATIBLE
      writer.branches.forEach((branch, i) => {
        r = merge(r, this.check(reader, branch, [...path, String(i)]))
      })
      return r
    }
    if (reader.type === 'union') {
      for (const branch of reader.branches) {
        if (this.check(branch, writer, path).compatible) return COMPATIBLE
      }
      return fail('MISSING_UNION_BRANCH', path, `reader union lacking writer type: ${javaTypeName(writer)}`)
    }
    if (PROMOTIONS[rt]?.includes(wt)) return COMPATIBLE
    return fail('TYPE_MISMATCH', path, `reader type: ${javaTypeName(reader)} not compatible with writer type: ${javaTypeName(writer)}`)
  }

  private names(reader: AvroNamed, writer: AvroNamed, path: string[]): Result {
    return namesMatch(reader, writer) ? COMPATIBLE : fail('NAME_MISMATCH', [...path, 'name'], `expected: ${writer.name}`)
  }

  private fields(reader: AvroRecord, writer: AvroRecord, path: string[]): Result {
    let r = COMPATIBLE
    for (const readerField of reader.fields) {
      const at = [...path, 'fields', String(readerField.pos)]
      const writerField = lookupWriterField(writer, readerField)
      if (writerField) {
        r = merge(r, this.check(readerField.type, writerField.type, [...at, 'type']))
      } else if (!readerField.hasDefault) {
        // As Avro Java: an enum field with an enum default is checked against the writer record itself,
        // which fails with a type mismatch: the enum default does not stand in for a missing field.
        if (readerField.type.type === 'enum' && readerField.type.default !== undefined) {
          r = merge(r, this.check(readerField.type, writer, [...at, 'type']))
        } else {
          r = merge(r, fail('READER_FIELD_MISSING_DEFAULT_VALUE', at, readerField.name))
        }
      }
    }
    return r
  }
}

function fail(type: AvroIncompatibilityType, path: string[], info: string): Result {
  return { compatible: false, incompatibilities: [incompatibility(type, path, info)] }
}
