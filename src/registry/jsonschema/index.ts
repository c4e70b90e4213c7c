// The registry's JSON schema type: parsing (with references to other registered JSON schemas by name),
// the stored and normalized forms, validation of documents with Ajv, and Confluent's compatibility rules.
import { Ajv, type AnySchema, type ValidateFunction } from 'ajv'
import { Ajv2019 } from 'ajv/dist/2019.js'
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { Incompatibility, ParsedSchema, ResolvedReference, SchemaReference } from '../schema-type/types.js'
import { fillLabels } from '../schema-type/types.js'
import { COMPATIBLE_CHANGES_STRICT, type JsonDifference, type JsonDifferenceType, JsonDiffTooComplex, diffJsonSchemas, stableJson } from './diff.js'
import { type JNode, JsonSchemaLoadError, JsonSchemaLoader } from './model.js'

export * from './diff.js'
export * from './model.js'

export class JsonSchemaParseError extends Error {}

// Difference.error() in Confluent's json.diff package groups the types into these sentences.
const KEYWORD_ADDED_OR_REMOVED = new Set<JsonDifferenceType>([
  'MAXIMUM_ADDED', 'MINIMUM_ADDED', 'EXCLUSIVE_MAXIMUM_ADDED', 'EXCLUSIVE_MINIMUM_ADDED', 'MULTIPLE_OF_ADDED', 'MAX_LENGTH_ADDED',
  'MIN_LENGTH_ADDED', 'PATTERN_ADDED', 'REQUIRED_ATTRIBUTE_ADDED', 'MAX_PROPERTIES_ADDED', 'MIN_PROPERTIES_ADDED',
  'DEPENDENCY_ARRAY_ADDED', 'DEPENDENCY_SCHEMA_ADDED', 'MAX_ITEMS_ADDED', 'MIN_ITEMS_ADDED', 'MAX_CONTAINS_ADDED',
  'MIN_CONTAINS_ADDED', 'UNIQUE_ITEMS_ADDED', 'ADDITIONAL_ITEMS_REMOVED', 'ADDITIONAL_PROPERTIES_REMOVED',
  'UNEVALUATED_PROPERTIES_REMOVED', 'UNEVALUATED_ITEMS_REMOVED',
])
const VALUE_INCREASED = new Set<JsonDifferenceType>(['MIN_LENGTH_INCREASED', 'MINIMUM_INCREASED', 'EXCLUSIVE_MINIMUM_INCREASED', 'MIN_PROPERTIES_INCREASED', 'MULTIPLE_OF_EXPANDED', 'MIN_ITEMS_INCREASED', 'MIN_CONTAINS_INCREASED'])
const VALUE_DECREASED = new Set<JsonDifferenceType>(['MAX_LENGTH_DECREASED', 'MAXIMUM_DECREASED', 'MAX_ITEMS_DECREASED', 'MAX_CONTAINS_DECREASED', 'EXCLUSIVE_MAXIMUM_DECREASED', 'MAX_PROPERTIES_DECREASED'])
const VALUE_CHANGED = new Set<JsonDifferenceType>(['PATTERN_CHANGED', 'MULTIPLE_OF_CHANGED', 'DEPENDENCY_ARRAY_CHANGED'])
const TYPE_NARROWED = new Set<JsonDifferenceType>(['ADDITIONAL_ITEMS_NARROWED', 'ENUM_ARRAY_NARROWED', 'SUM_TYPE_NARROWED', 'ADDITIONAL_PROPERTIES_NARROWED', 'UNEVALUATED_PROPERTIES_NARROWED', 'UNEVALUATED_ITEMS_NARROWED'])
const TYPE_EXTENDED = new Set<JsonDifferenceType>(['DEPENDENCY_ARRAY_EXTENDED', 'PRODUCT_TYPE_EXTENDED', 'SUM_TYPE_EXTENDED', 'NOT_TYPE_EXTENDED'])
const TYPE_CHANGED = new Set<JsonDifferenceType>(['TYPE_CHANGED', 'TYPE_NARROWED', 'COMBINED_TYPE_CHANGED', 'COMBINED_TYPE_SUBSCHEMAS_CHANGED', 'ENUM_ARRAY_CHANGED'])
const ADDED_TO_OPEN = new Set<JsonDifferenceType>(['REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL', 'REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL', 'OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL', 'ITEM_ADDED_TO_OPEN_CONTENT_MODEL'])

/** The sentence Confluent prints for a difference; `%s` are the reader's then the writer's label. */
export function describeJsonDifference(d: JsonDifference): string {
  const p = d.path
  const t = d.type
  if (KEYWORD_ADDED_OR_REMOVED.has(t)) return `The keyword at path '${p}' in the %s schema is not present in the %s schema`
  if (VALUE_INCREASED.has(t)) return `The value at path '${p}' in the %s schema is more than its value in the %s schema`
  if (VALUE_DECREASED.has(t)) return `The value at path '${p}' in the %s schema is less than its value in the %s schema`
  if (VALUE_CHANGED.has(t)) return `The value at path '${p}' is different between the %s and %s schema`
  if (TYPE_NARROWED.has(t)) return `An array or combined type at path '${p}' has fewer elements in the %s schema than the %s schema`
  if (TYPE_EXTENDED.has(t)) return `An array or combined type at path '${p}' has more elements in the %s schema than the %s schema`
  if (TYPE_CHANGED.has(t)) return `A type at path '${p}' is different between the %s schema and the %s schema`
  if (ADDED_TO_OPEN.has(t)) return `The %s schema has an open content model and has a property or item at path '${p}' which is missing in the %s schema`
  switch (t) {
    case 'REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL':
      return `The %s schema has an unopen content model and has a required property at path '${p}' which is missing in the %s schema`
    case 'PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL':
    case 'ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL':
      return `The %s has a closed content model and is missing a property or item present at path '${p}' in the %s schema`
    case 'PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL':
    case 'ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL':
      return `A property or item is missing in the %s schema but present at path '${p}' in the %s schema and is not covered by its partially open content model`
    case 'PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL':
    case 'ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL':
      return `The %s schema has a property or item at path '${p}' which is missing in the %s schema and is not covered by its partially open content model`
    default:
      return ''
  }
}

function toIncompatibility(d: JsonDifference): Incompatibility {
  const description = describeJsonDifference(d)
  return {
    errorType: d.type,
    path: d.path,
    description,
    render: (reader, writer) => `{errorType:"${d.type}", description:"${fillLabels(description, reader, writer)}"}`,
  }
}

function ajvFor(json: unknown): Ajv | undefined {
  const dialect = typeof json === 'object' && json !== null ? (json as Record<string, unknown>)['$schema'] : undefined
  const opts = { strict: false, allErrors: false, validateFormats: false, allowUnionTypes: true } as const
  if (typeof dialect !== 'string' || /draft-07|draft-06/.test(dialect)) return new Ajv(opts)
  if (dialect.includes('2019-09')) return new Ajv2019(opts) as unknown as Ajv
  if (dialect.includes('2020-12')) return new Ajv2020(opts) as unknown as Ajv
  // Draft 4 and unknown dialects: Ajv has no meta-schema for them; structure is still checked by the loader.
  return undefined
}

// One Ajv per dialect for checking schemas against their meta-schema: building one compiles the
// meta-schema, which is far slower than the check itself.
const metaValidators = new Map<string, Ajv | undefined>()
function metaValidatorFor(json: unknown): Ajv | undefined {
  const dialect = typeof json === 'object' && json !== null ? String((json as Record<string, unknown>)['$schema'] ?? '') : ''
  if (!metaValidators.has(dialect)) metaValidators.set(dialect, ajvFor(json))
  return metaValidators.get(dialect)
}

export class JsonSchema implements ParsedSchema {
  readonly schemaType = 'JSON' as const
  readonly canonical: string
  private validator?: ValidateFunction

  private constructor(
    readonly json: unknown,
    readonly root: JNode,
    readonly references: SchemaReference[],
    private readonly referenced: Map<string, unknown>,
  ) {
    this.canonical = JSON.stringify(json)
  }

  static parse(text: string, references: SchemaReference[] = [], resolved: ResolvedReference[] = []): JsonSchema {
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (e) {
      throw new JsonSchemaParseError(`Invalid JSON ${text.slice(0, 200)}: ${(e as Error).message}`)
    }
    if (typeof json !== 'boolean' && (typeof json !== 'object' || json === null || Array.isArray(json))) {
      throw new JsonSchemaParseError('A JSON schema must be an object or a boolean')
    }
    const referenced = new Map<string, unknown>()
    const collect = (refs: ResolvedReference[]) => {
      for (const r of refs) {
        if (referenced.has(r.name)) continue
        try {
          referenced.set(r.name, JSON.parse(r.schema))
        } catch (e) {
          throw new JsonSchemaParseError(`Invalid referenced schema ${r.name}: ${(e as Error).message}`)
        }
        collect(r.references)
      }
    }
    collect(resolved)
    const ajv = metaValidatorFor(json)
    if (ajv && !ajv.validateSchema(json as AnySchema)) {
      throw new JsonSchemaParseError(`Invalid JSON schema: ${ajv.errorsText(ajv.errors)}`)
    }
    let root: JNode
    try {
      root = new JsonSchemaLoader(referenced).load(json)
      JsonSchemaLoader.checkRefs(root)
    } catch (e) {
      if (e instanceof JsonSchemaLoadError) throw new JsonSchemaParseError(e.message)
      throw e
    }
    return new JsonSchema(json, root, references, referenced)
  }

  normalized(): string {
    return stableJson(this.json)
  }

  checkCanRead(writer: ParsedSchema): Incompatibility[] {
    if (!(writer instanceof JsonSchema)) throw new JsonSchemaParseError('not a JSON schema')
    let diffs: JsonDifference[]
    try {
      diffs = diffJsonSchemas(writer.root, this.root)
    } catch (e) {
      if (e instanceof JsonDiffTooComplex || e instanceof JsonSchemaLoadError) {
        return [{ errorType: 'TYPE_CHANGED', path: '#/', description: e.message, render: () => e.message }]
      }
      throw e
    }
    return diffs.filter((d) => !COMPATIBLE_CHANGES_STRICT.has(d.type)).map(toIncompatibility)
  }

  /** Validates a document against this schema (references included); the errors if it does not conform. */
  validate(document: unknown): string | undefined {
    if (!this.validator) {
      const ajv = ajvFor(this.json) ?? new Ajv({ strict: false, validateFormats: false, allowUnionTypes: true })
      for (const [name, schema] of this.referenced) {
        if (typeof schema === 'object' && schema !== null) ajv.addSchema({ ...(schema as object), $id: (schema as { $id?: string }).$id ?? name } as AnySchema, name)
      }
      this.validator = ajv.compile(this.json as AnySchema)
    }
    return this.validator(document) ? undefined : ajvErrors(this.validator)
  }
}

function ajvErrors(v: ValidateFunction): string {
  return (v.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`).join('; ')
}
