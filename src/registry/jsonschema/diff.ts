// JSON Schema compatibility as Confluent defines it. JSON Schema has no resolution rules of its own, so
// Confluent compares an original (writer) and an update (reader) schema and classifies every difference;
// the update can read what the original allowed when every difference is one of the compatible kinds.
// Sources: Confluent's documentation "JSON Schema Serializer and Deserializer", section "JSON Schema
// compatibility rules" (open, closed and partially open content models), Robert Yokota's "Understanding
// JSON Schema Compatibility" (2021, the design this follows), and the behaviour of Confluent's
// io.confluent.kafka.schemaregistry.json.diff package, whose difference names are used here:
//   - a property added to an OPEN content model (additionalProperties absent or true) is incompatible,
//     because old data may hold anything under that name; added to a CLOSED model
//     (additionalProperties: false) it is compatible unless it is required without a default;
//     added to a PARTIALLY OPEN model it must be compatible with the additionalProperties/pattern schema;
//   - a property removed is compatible only if the update's model is open, or it is covered by the
//     update's partially open schema, or its schema was `false`;
//   - type narrowing (number→integer), a new or stricter bound (maxLength decreased, minimum increased,
//     pattern added or changed, multipleOf expanded), enum values removed, required added without a
//     default, oneOf/anyOf branches removed, allOf branches added are incompatible; the reverse are
//     compatible; title, description, default and $id changes are compatible.
import type { ArrayNode, JNode, ObjectNode } from './model.js'

export const JSON_DIFFERENCE_TYPES = [
  'ID_CHANGED', 'DESCRIPTION_CHANGED', 'TITLE_CHANGED', 'DEFAULT_CHANGED', 'SCHEMA_ADDED', 'SCHEMA_REMOVED',
  'TYPE_EXTENDED', 'TYPE_NARROWED', 'TYPE_CHANGED',
  'MAX_LENGTH_ADDED', 'MAX_LENGTH_REMOVED', 'MAX_LENGTH_INCREASED', 'MAX_LENGTH_DECREASED',
  'MIN_LENGTH_ADDED', 'MIN_LENGTH_REMOVED', 'MIN_LENGTH_INCREASED', 'MIN_LENGTH_DECREASED',
  'PATTERN_ADDED', 'PATTERN_REMOVED', 'PATTERN_CHANGED',
  'MAXIMUM_ADDED', 'MAXIMUM_REMOVED', 'MAXIMUM_INCREASED', 'MAXIMUM_DECREASED',
  'MINIMUM_ADDED', 'MINIMUM_REMOVED', 'MINIMUM_INCREASED', 'MINIMUM_DECREASED',
  'EXCLUSIVE_MAXIMUM_ADDED', 'EXCLUSIVE_MAXIMUM_REMOVED', 'EXCLUSIVE_MAXIMUM_INCREASED', 'EXCLUSIVE_MAXIMUM_DECREASED',
  'EXCLUSIVE_MINIMUM_ADDED', 'EXCLUSIVE_MINIMUM_REMOVED', 'EXCLUSIVE_MINIMUM_INCREASED', 'EXCLUSIVE_MINIMUM_DECREASED',
  'MULTIPLE_OF_ADDED', 'MULTIPLE_OF_REMOVED', 'MULTIPLE_OF_EXPANDED', 'MULTIPLE_OF_REDUCED', 'MULTIPLE_OF_CHANGED',
  'REQUIRED_ATTRIBUTE_ADDED', 'REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED', 'REQUIRED_ATTRIBUTE_REMOVED',
  'MAX_PROPERTIES_ADDED', 'MAX_PROPERTIES_REMOVED', 'MAX_PROPERTIES_INCREASED', 'MAX_PROPERTIES_DECREASED',
  'MIN_PROPERTIES_ADDED', 'MIN_PROPERTIES_REMOVED', 'MIN_PROPERTIES_INCREASED', 'MIN_PROPERTIES_DECREASED',
  'ADDITIONAL_PROPERTIES_ADDED', 'ADDITIONAL_PROPERTIES_REMOVED', 'ADDITIONAL_PROPERTIES_EXTENDED', 'ADDITIONAL_PROPERTIES_NARROWED',
  'DEPENDENCY_ARRAY_ADDED', 'DEPENDENCY_ARRAY_REMOVED', 'DEPENDENCY_ARRAY_EXTENDED', 'DEPENDENCY_ARRAY_NARROWED', 'DEPENDENCY_ARRAY_CHANGED',
  'DEPENDENCY_SCHEMA_ADDED', 'DEPENDENCY_SCHEMA_REMOVED',
  'REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL', 'REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL',
  'OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL', 'PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL',
  'REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL', 'REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL',
  'OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL', 'PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL',
  'PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL', 'PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL',
  'PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL', 'PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL',
  'PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL', 'PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL',
  'UNEVALUATED_PROPERTIES_ADDED', 'UNEVALUATED_PROPERTIES_REMOVED', 'UNEVALUATED_PROPERTIES_EXTENDED', 'UNEVALUATED_PROPERTIES_NARROWED',
  'MAX_ITEMS_ADDED', 'MAX_ITEMS_REMOVED', 'MAX_ITEMS_INCREASED', 'MAX_ITEMS_DECREASED',
  'MIN_ITEMS_ADDED', 'MIN_ITEMS_REMOVED', 'MIN_ITEMS_INCREASED', 'MIN_ITEMS_DECREASED',
  'MAX_CONTAINS_ADDED', 'MAX_CONTAINS_REMOVED', 'MAX_CONTAINS_INCREASED', 'MAX_CONTAINS_DECREASED',
  'MIN_CONTAINS_ADDED', 'MIN_CONTAINS_REMOVED', 'MIN_CONTAINS_INCREASED', 'MIN_CONTAINS_DECREASED',
  'UNIQUE_ITEMS_ADDED', 'UNIQUE_ITEMS_REMOVED',
  'ADDITIONAL_ITEMS_ADDED', 'ADDITIONAL_ITEMS_REMOVED', 'ADDITIONAL_ITEMS_EXTENDED', 'ADDITIONAL_ITEMS_NARROWED',
  'UNEVALUATED_ITEMS_ADDED', 'UNEVALUATED_ITEMS_REMOVED', 'UNEVALUATED_ITEMS_EXTENDED', 'UNEVALUATED_ITEMS_NARROWED',
  'ITEM_ADDED_TO_OPEN_CONTENT_MODEL', 'ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL', 'ITEM_ADDED_TO_CLOSED_CONTENT_MODEL',
  'ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL', 'ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL', 'ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL',
  'ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL', 'ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL',
  'ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL', 'ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL',
  'ENUM_ARRAY_EXTENDED', 'ENUM_ARRAY_NARROWED', 'ENUM_ARRAY_CHANGED',
  'COMBINED_TYPE_EXTENDED', 'COMBINED_TYPE_CHANGED', 'PRODUCT_TYPE_EXTENDED', 'PRODUCT_TYPE_NARROWED',
  'SUM_TYPE_EXTENDED', 'SUM_TYPE_NARROWED', 'COMBINED_TYPE_SUBSCHEMAS_CHANGED', 'NOT_TYPE_EXTENDED', 'NOT_TYPE_NARROWED',
] as const
export type JsonDifferenceType = (typeof JSON_DIFFERENCE_TYPES)[number]

/** The differences under which the update still reads everything the original allowed (STRICT policy). */
export const COMPATIBLE_CHANGES_STRICT: ReadonlySet<JsonDifferenceType> = new Set<JsonDifferenceType>([
  'ID_CHANGED', 'DESCRIPTION_CHANGED', 'TITLE_CHANGED', 'DEFAULT_CHANGED', 'SCHEMA_REMOVED', 'TYPE_EXTENDED',
  'MAX_LENGTH_INCREASED', 'MAX_LENGTH_REMOVED', 'MIN_LENGTH_DECREASED', 'MIN_LENGTH_REMOVED', 'PATTERN_REMOVED',
  'MAXIMUM_INCREASED', 'MAXIMUM_REMOVED', 'MINIMUM_DECREASED', 'MINIMUM_REMOVED',
  'EXCLUSIVE_MAXIMUM_INCREASED', 'EXCLUSIVE_MAXIMUM_REMOVED', 'EXCLUSIVE_MINIMUM_DECREASED', 'EXCLUSIVE_MINIMUM_REMOVED',
  'MULTIPLE_OF_REDUCED', 'MULTIPLE_OF_REMOVED', 'REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED', 'REQUIRED_ATTRIBUTE_REMOVED',
  'DEPENDENCY_ARRAY_NARROWED', 'DEPENDENCY_ARRAY_REMOVED', 'DEPENDENCY_SCHEMA_REMOVED',
  'MAX_PROPERTIES_INCREASED', 'MAX_PROPERTIES_REMOVED', 'MIN_PROPERTIES_DECREASED', 'MIN_PROPERTIES_REMOVED',
  'ADDITIONAL_PROPERTIES_ADDED', 'ADDITIONAL_PROPERTIES_EXTENDED', 'UNEVALUATED_PROPERTIES_ADDED', 'UNEVALUATED_PROPERTIES_EXTENDED',
  'PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL', 'REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL',
  'OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL', 'PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL',
  'PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL', 'PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL',
  'PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL',
  'MAX_ITEMS_INCREASED', 'MAX_ITEMS_REMOVED', 'MIN_ITEMS_DECREASED', 'MIN_ITEMS_REMOVED',
  'MAX_CONTAINS_INCREASED', 'MAX_CONTAINS_REMOVED', 'MIN_CONTAINS_DECREASED', 'MIN_CONTAINS_REMOVED', 'UNIQUE_ITEMS_REMOVED',
  'ADDITIONAL_ITEMS_ADDED', 'ADDITIONAL_ITEMS_EXTENDED', 'UNEVALUATED_ITEMS_ADDED', 'UNEVALUATED_ITEMS_EXTENDED',
  'ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL', 'ITEM_ADDED_TO_CLOSED_CONTENT_MODEL',
  'ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL', 'ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL',
  'ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL', 'ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL',
  'ENUM_ARRAY_EXTENDED', 'COMBINED_TYPE_EXTENDED', 'PRODUCT_TYPE_NARROWED', 'SUM_TYPE_EXTENDED', 'NOT_TYPE_NARROWED',
])

export interface JsonDifference {
  type: JsonDifferenceType
  path: string
}

/** Above this many schema pairs compared, a pathological schema is reported rather than computed. */
const MAX_COMPARISONS = 200_000

export class JsonDiffTooComplex extends Error {}

class Context {
  diffs: { type: JsonDifferenceType; path: string[] }[] = []
  path: string[] = []
  constructor(readonly shared: Shared) {}

  sub(): Context {
    const c = new Context(this.shared)
    c.path = [...this.path]
    return c
  }
  add(type: JsonDifferenceType, ...segments: string[]): void {
    this.diffs.push({ type, path: [...this.path, ...segments] })
  }
  enter<T>(segment: string, body: () => T): T {
    this.path.push(...segment.split('/'))
    try {
      return body()
    } finally {
      this.path.length -= segment.split('/').length
    }
  }
  isCompatible(): boolean {
    return this.diffs.every((d) => this.shared.compatible.has(d.type))
  }
}

interface Shared {
  compatible: ReadonlySet<JsonDifferenceType>
  memo: Map<JNode, Map<JNode, { type: JsonDifferenceType; path: string[] }[]>>
  inProgress: Map<JNode, Set<JNode>>
  /** Counts cycles cut short by assuming compatibility; results that depend on one are not cached. */
  assumptions: number
  comparisons: number
}

/** The differences between an original and an update schema, with JSON paths like "#/properties/a". */
export function diffJsonSchemas(original: JNode, update: JNode, compatible: ReadonlySet<JsonDifferenceType> = COMPATIBLE_CHANGES_STRICT): JsonDifference[] {
  const ctx = new Context({ compatible, memo: new Map(), inProgress: new Map(), assumptions: 0, comparisons: 0 })
  compare(ctx, original, update)
  return ctx.diffs.map((d) => ({ type: d.type, path: '#/' + d.path.join('/') }))
}

function deref(n: JNode): JNode {
  return n.kind === 'ref' ? n.resolve() : n
}

function compare(ctx: Context, original: JNode | undefined, update: JNode | undefined): void {
  if (!original && !update) return
  if (!original) return ctx.add('SCHEMA_ADDED')
  if (!update) return ctx.add('SCHEMA_REMOVED')
  const o = deref(original)
  const u = deref(update)
  const shared = ctx.shared
  if (++shared.comparisons > MAX_COMPARISONS) throw new JsonDiffTooComplex('schemas too complex to compare')
  const cached = shared.memo.get(o)?.get(u)
  if (cached) {
    for (const d of cached) ctx.diffs.push({ type: d.type, path: [...ctx.path, ...d.path] })
    return
  }
  let running = shared.inProgress.get(o)
  if (running?.has(u)) {
    // A recursive schema met the same pair again: compatible unless proven otherwise elsewhere.
    shared.assumptions++
    return
  }
  if (!running) shared.inProgress.set(o, (running = new Set()))
  running.add(u)
  const before = shared.assumptions
  const local = new Context(shared)
  try {
    compareTypes(local, o, u)
  } finally {
    running.delete(u)
  }
  if (shared.assumptions === before) {
    let byUpdate = shared.memo.get(o)
    if (!byUpdate) shared.memo.set(o, (byUpdate = new Map()))
    byUpdate.set(u, local.diffs)
  }
  for (const d of local.diffs) ctx.diffs.push({ type: d.type, path: [...ctx.path, ...d.path] })
}

const isEmptyKind = (n: JNode) => n.kind === 'empty' || n.kind === 'true'

function compareTypes(ctx: Context, original: JNode, update: JNode): void {
  if (original.kind !== 'combined' && update.kind === 'combined') {
    if (update.subschemas.length === 1) {
      const sub = ctx.sub()
      compare(sub, original, update.subschemas[0])
      if (sub.isCompatible()) return void ctx.diffs.push(...sub.diffs)
    } else if (update.criterion === 'anyOf' || update.criterion === 'oneOf') {
      for (const s of update.subschemas) {
        const sub = ctx.sub()
        compare(sub, original, s)
        if (sub.isCompatible()) {
          ctx.diffs.push(...sub.diffs)
          return ctx.add('SUM_TYPE_EXTENDED')
        }
      }
    }
  } else if (original.kind === 'combined' && update.kind !== 'combined') {
    if (original.subschemas.length === 1) {
      const sub = ctx.sub()
      compare(sub, original.subschemas[0], update)
      if (sub.isCompatible()) return void ctx.diffs.push(...sub.diffs)
    } else if (original.criterion === 'allOf') {
      for (const s of original.subschemas) {
        const sub = ctx.sub()
        compare(sub, s, update)
        if (sub.isCompatible()) {
          ctx.diffs.push(...sub.diffs)
          return ctx.add('PRODUCT_TYPE_NARROWED')
        }
      }
    }
  }
  if (original.kind !== update.kind) {
    // Nothing was valid under `false`, and everything is valid under `{}`/`true`.
    if (original.kind === 'false' || isEmptyKind(update)) return
    // Kafka Connect's JSON converter writes decimals as bytes of varying JSON types: equivalent.
    if (original.common.connectType === 'bytes' && update.common.connectType === 'bytes') return
    return ctx.add('TYPE_CHANGED')
  }
  const oc = original.common
  const uc = update.common
  if (oc.id !== uc.id) ctx.add('ID_CHANGED')
  if (oc.title !== uc.title) ctx.add('TITLE_CHANGED')
  if (oc.description !== uc.description) ctx.add('DESCRIPTION_CHANGED')
  if (stableJson(oc.default) !== stableJson(uc.default)) ctx.add('DEFAULT_CHANGED')
  switch (original.kind) {
    case 'string':
      return compareString(ctx, original, update as typeof original)
    case 'number':
      return compareNumber(ctx, original, update as typeof original)
    case 'enum':
      return compareEnum(ctx, original.values, (update as typeof original).values)
    case 'const':
      if (stableJson(original.value) !== stableJson((update as typeof original).value)) ctx.add('ENUM_ARRAY_CHANGED', 'const')
      return
    case 'not':
      return ctx.enter('not', () => {
        // Reversed: the update's `not` may exclude less than the original's.
        const sub = ctx.sub()
        compare(sub, (update as typeof original).not, original.not)
        ctx.add(sub.isCompatible() ? 'NOT_TYPE_NARROWED' : 'NOT_TYPE_EXTENDED')
      })
    case 'combined':
      return compareCombined(ctx, original, update as typeof original)
    case 'object':
      return compareObject(ctx, original, update as ObjectNode)
    case 'array':
      return compareArray(ctx, original, update as ArrayNode)
  }
}

function bounds(ctx: Context, key: string, o: number | undefined, u: number | undefined, prefix: string): void {
  if (o === u) return
  const t = (suffix: string) => `${prefix}_${suffix}` as JsonDifferenceType
  if (o === undefined) ctx.add(t('ADDED'), key)
  else if (u === undefined) ctx.add(t('REMOVED'), key)
  else if (o < u) ctx.add(t('INCREASED'), key)
  else ctx.add(t('DECREASED'), key)
}

function compareString(ctx: Context, o: Extract<JNode, { kind: 'string' }>, u: Extract<JNode, { kind: 'string' }>): void {
  bounds(ctx, 'maxLength', o.maxLength, u.maxLength, 'MAX_LENGTH')
  bounds(ctx, 'minLength', o.minLength, u.minLength, 'MIN_LENGTH')
  if (o.pattern === undefined && u.pattern !== undefined) ctx.add('PATTERN_ADDED', 'pattern')
  else if (o.pattern !== undefined && u.pattern === undefined) ctx.add('PATTERN_REMOVED', 'pattern')
  else if (o.pattern !== u.pattern) ctx.add('PATTERN_CHANGED', 'pattern')
}

/** Whether a is a whole multiple of b, exactly for decimal fractions (0.3 is a multiple of 0.1). */
function isMultiple(a: number, b: number): boolean {
  if (b === 0) return false
  const scale = 10 ** Math.max(decimals(a), decimals(b))
  const ai = Math.round(a * scale)
  const bi = Math.round(b * scale)
  return Number.isSafeInteger(ai) && Number.isSafeInteger(bi) ? ai % bi === 0 : Math.abs(a / b - Math.round(a / b)) < 1e-12
}
function decimals(x: number): number {
  const s = String(x)
  const e = s.indexOf('e-')
  if (e >= 0) return Number(s.slice(e + 2)) + (s.slice(0, e).split('.')[1]?.length ?? 0)
  return s.split('.')[1]?.length ?? 0
}

function compareNumber(ctx: Context, o: Extract<JNode, { kind: 'number' }>, u: Extract<JNode, { kind: 'number' }>): void {
  bounds(ctx, 'maximum', o.maximum, u.maximum, 'MAXIMUM')
  bounds(ctx, 'minimum', o.minimum, u.minimum, 'MINIMUM')
  bounds(ctx, 'exclusiveMaximum', o.exclusiveMaximum, u.exclusiveMaximum, 'EXCLUSIVE_MAXIMUM')
  bounds(ctx, 'exclusiveMinimum', o.exclusiveMinimum, u.exclusiveMinimum, 'EXCLUSIVE_MINIMUM')
  if (o.multipleOf !== u.multipleOf) {
    if (o.multipleOf === undefined) ctx.add('MULTIPLE_OF_ADDED', 'multipleOf')
    else if (u.multipleOf === undefined) ctx.add('MULTIPLE_OF_REMOVED', 'multipleOf')
    else if (isMultiple(u.multipleOf, o.multipleOf)) ctx.add('MULTIPLE_OF_EXPANDED', 'multipleOf')
    else if (isMultiple(o.multipleOf, u.multipleOf)) ctx.add('MULTIPLE_OF_REDUCED', 'multipleOf')
    else ctx.add('MULTIPLE_OF_CHANGED', 'multipleOf')
  }
  if (o.integer !== u.integer) ctx.add(o.integer ? 'TYPE_EXTENDED' : 'TYPE_NARROWED')
}

function compareEnum(ctx: Context, o: unknown[], u: unknown[]): void {
  const os = new Set(o.map(stableJson))
  const us = new Set(u.map(stableJson))
  const oInU = [...os].every((v) => us.has(v))
  const uInO = [...us].every((v) => os.has(v))
  if (oInU && uInO) return
  if (oInU) ctx.add('ENUM_ARRAY_EXTENDED', 'enum')
  else if (uInO) ctx.add('ENUM_ARRAY_NARROWED', 'enum')
  else ctx.add('ENUM_ARRAY_CHANGED', 'enum')
}

type Combined = Extract<JNode, { kind: 'combined' }>

function compareCombined(ctx: Context, original: Combined, update: Combined): void {
  const oSingle = original.subschemas.length === 1
  const uSingle = update.subschemas.length === 1
  if (original.criterion !== update.criterion) {
    const extended =
      update.criterion === 'anyOf' || (oSingle && uSingle) || (oSingle && update.criterion === 'oneOf') || (uSingle && original.criterion === 'allOf')
    if (!extended) return ctx.add('COMBINED_TYPE_CHANGED')
    ctx.add('COMBINED_TYPE_EXTENDED')
  }
  const dedupe = (list: JNode[]) => {
    const seen = new Map<string, JNode>()
    for (const s of list) {
      const key = stableJson(s.common.source)
      if (!seen.has(key)) seen.set(key, s)
    }
    return [...seen.values()]
  }
  const os = dedupe(original.subschemas)
  const us = dedupe(update.subschemas)
  if (os.length < us.length) ctx.add(update.criterion === 'allOf' ? 'PRODUCT_TYPE_EXTENDED' : 'SUM_TYPE_EXTENDED')
  else if (os.length > us.length) ctx.add(original.criterion === 'allOf' ? 'PRODUCT_TYPE_NARROWED' : 'SUM_TYPE_NARROWED')
  // Every compatible (original branch, update branch) pair is an edge; a maximum matching must cover
  // the smaller side, or some branch lost its counterpart.
  const edges: (Context['diffs'] | undefined)[][] = []
  os.forEach((o, i) => {
    edges.push([])
    ctx.enter(`${original.criterion}/${i}`, () => {
      for (const u of us) {
        const sub = ctx.sub()
        compare(sub, o, u)
        edges[i]!.push(sub.isCompatible() ? sub.diffs : undefined)
      }
    })
  })
  const matchOfUpdate = new Array<number>(us.length).fill(-1)
  const tryAssign = (i: number, visited: boolean[]): boolean => {
    for (let j = 0; j < us.length; j++) {
      if (!edges[i]![j] || visited[j]) continue
      visited[j] = true
      if (matchOfUpdate[j] === -1 || tryAssign(matchOfUpdate[j]!, visited)) {
        matchOfUpdate[j] = i
        return true
      }
    }
    return false
  }
  let matched = 0
  for (let i = 0; i < os.length; i++) if (tryAssign(i, new Array<boolean>(us.length).fill(false))) matched++
  matchOfUpdate.forEach((i, j) => {
    if (i >= 0) ctx.diffs.push(...edges[i]![j]!)
  })
  if (matched < Math.min(os.length, us.length)) ctx.add('COMBINED_TYPE_SUBSCHEMAS_CHANGED')
}

// --- objects ---------------------------------------------------------------------------------------

function isOpenObject(n: ObjectNode): boolean {
  if (!n.permitsAdditionalProperties || n.additionalSchema || n.patternProperties.length > 0) return false
  return n.unevaluated === undefined || isEmptyKind(n.unevaluated)
}

function partialObjectSchema(n: ObjectNode, property: string): JNode | undefined {
  for (const [pattern, schema] of n.patternProperties) if (new RegExp(pattern, 'u').test(property)) return schema
  if (n.additionalSchema) return n.additionalSchema
  if (n.permitsAdditionalProperties && n.unevaluated && n.unevaluated.kind !== 'false' && !isEmptyKind(n.unevaluated)) return n.unevaluated
  return undefined
}

function compareObject(ctx: Context, o: ObjectNode, u: ObjectNode): void {
  ctx.enter('required', () => {
    for (const key of o.properties.keys()) {
      if (!u.properties.has(key)) continue
      const oReq = o.required.includes(key)
      const uReq = u.required.includes(key)
      if (oReq && !uReq) ctx.add('REQUIRED_ATTRIBUTE_REMOVED', key)
      else if (!oReq && uReq) ctx.add(u.properties.get(key)!.common.hasDefault ? 'REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED' : 'REQUIRED_ATTRIBUTE_ADDED', key)
    }
  })
  ctx.enter('properties', () => {
    const keys = new Set([...o.properties.keys(), ...u.properties.keys()])
    for (const key of keys) {
      ctx.enter(key, () => {
        const os = o.properties.get(key)
        const us = u.properties.get(key)
        if (!us) {
          // Removing a property is safe only if the update still accepts whatever old data held there.
          if (isOpenObject(u)) return ctx.add('PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL')
          const partial = partialObjectSchema(u, key)
          if (partial) {
            const sub = ctx.sub()
            compare(sub, os, partial)
            ctx.diffs.push(...sub.diffs)
            return ctx.add(sub.isCompatible() ? 'PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL' : 'PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL')
          }
          return ctx.add(os!.kind === 'false' ? 'PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL' : 'PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL')
        }
        if (!os) {
          // Adding a property is safe only if old data could not have held something else under it.
          if (isOpenObject(o)) {
            if (us.kind === 'empty' || us.kind === 'true') return ctx.add('PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL')
            if (u.required.includes(key)) {
              return ctx.add(us.common.hasDefault ? 'REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL' : 'REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL')
            }
            return ctx.add('OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL')
          }
          const partial = partialObjectSchema(o, key)
          if (partial) {
            const sub = ctx.sub()
            compare(sub, partial, us)
            ctx.diffs.push(...sub.diffs)
            ctx.add(sub.isCompatible() ? 'PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL' : 'PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL')
          }
          if (u.required.includes(key)) {
            return ctx.add(us.common.hasDefault ? 'REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL' : 'REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL')
          }
          return ctx.add('OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL')
        }
        compare(ctx, os, us)
      })
    }
  })
  ctx.enter('dependencies', () => {
    for (const key of new Set([...o.propertyDependencies.keys(), ...u.propertyDependencies.keys()])) {
      const od = o.propertyDependencies.get(key)
      const ud = u.propertyDependencies.get(key)
      if (!ud) ctx.add('DEPENDENCY_ARRAY_REMOVED', key)
      else if (!od) ctx.add('DEPENDENCY_ARRAY_ADDED', key)
      else {
        const uHasAll = od.every((d) => ud.includes(d))
        const oHasAll = ud.every((d) => od.includes(d))
        if (uHasAll && oHasAll) continue
        ctx.add(uHasAll ? 'DEPENDENCY_ARRAY_EXTENDED' : oHasAll ? 'DEPENDENCY_ARRAY_NARROWED' : 'DEPENDENCY_ARRAY_CHANGED', key)
      }
    }
    for (const key of new Set([...o.schemaDependencies.keys(), ...u.schemaDependencies.keys()])) {
      const os = o.schemaDependencies.get(key)
      const us = u.schemaDependencies.get(key)
      if (!us) ctx.add('DEPENDENCY_SCHEMA_REMOVED', key)
      else if (!os) ctx.add('DEPENDENCY_SCHEMA_ADDED', key)
      else ctx.enter(key, () => compare(ctx, os, us))
    }
  })
  ctx.enter('additionalProperties', () => {
    if (o.permitsAdditionalProperties !== u.permitsAdditionalProperties) ctx.add(u.permitsAdditionalProperties ? 'ADDITIONAL_PROPERTIES_ADDED' : 'ADDITIONAL_PROPERTIES_REMOVED')
    else if (!o.additionalSchema && u.additionalSchema) ctx.add('ADDITIONAL_PROPERTIES_NARROWED')
    else if (o.additionalSchema && !u.additionalSchema) ctx.add('ADDITIONAL_PROPERTIES_EXTENDED')
    else if (o.additionalSchema && u.additionalSchema) compare(ctx, o.additionalSchema, u.additionalSchema)
  })
  unevaluated(ctx, 'unevaluatedProperties', o.unevaluated, u.unevaluated, 'UNEVALUATED_PROPERTIES')
  bounds(ctx, 'maxProperties', o.maxProperties, u.maxProperties, 'MAX_PROPERTIES')
  bounds(ctx, 'minProperties', o.minProperties, u.minProperties, 'MIN_PROPERTIES')
}

function unevaluated(ctx: Context, key: string, o: JNode | undefined, u: JNode | undefined, prefix: 'UNEVALUATED_PROPERTIES' | 'UNEVALUATED_ITEMS'): void {
  if (!o && !u) return
  const t = (s: string) => `${prefix}_${s}` as JsonDifferenceType
  ctx.enter(key, () => {
    if (!o) ctx.add(u!.kind === 'false' ? t('REMOVED') : t('NARROWED'))
    else if (!u) ctx.add(o.kind === 'false' ? t('ADDED') : t('EXTENDED'))
    else if (o.kind === 'false' && u.kind !== 'false') ctx.add(t('ADDED'))
    else if (o.kind !== 'false' && u.kind === 'false') ctx.add(t('REMOVED'))
    else if (isEmptyKind(o) && !isEmptyKind(u)) ctx.add(t('NARROWED'))
    else if (!isEmptyKind(o) && isEmptyKind(u)) ctx.add(t('EXTENDED'))
    else compare(ctx, o, u)
  })
}

// --- arrays ----------------------------------------------------------------------------------------

function isOpenArray(n: ArrayNode): boolean {
  if (!n.permitsAdditionalItems || n.additionalSchema) return false
  return n.unevaluated === undefined || isEmptyKind(n.unevaluated)
}

function partialArraySchema(n: ArrayNode): JNode | undefined {
  if (n.additionalSchema) return n.additionalSchema
  if (n.permitsAdditionalItems && n.unevaluated && n.unevaluated.kind !== 'false' && !isEmptyKind(n.unevaluated)) return n.unevaluated
  return undefined
}

function compareArray(ctx: Context, o: ArrayNode, u: ArrayNode): void {
  ctx.enter('items', () => compare(ctx, o.items, u.items))
  const ot = o.tuple ?? []
  const ut = u.tuple ?? []
  for (let i = 0; i < Math.max(ot.length, ut.length); i++) {
    ctx.enter(`items/${i}`, () => {
      const os = ot[i]
      const us = ut[i]
      if (os && us) return compare(ctx, os, us)
      if (os) {
        if (isOpenArray(u)) return ctx.add('ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL')
        const partial = partialArraySchema(u)
        if (partial) {
          const sub = ctx.sub()
          compare(sub, os, partial)
          ctx.diffs.push(...sub.diffs)
          return ctx.add(sub.isCompatible() ? 'ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL' : 'ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL')
        }
        return ctx.add(os.kind === 'false' ? 'ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL' : 'ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL')
      }
      if (isOpenArray(o)) return ctx.add(isEmptyKind(us!) ? 'ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL' : 'ITEM_ADDED_TO_OPEN_CONTENT_MODEL')
      const partial = partialArraySchema(o)
      if (partial) {
        const sub = ctx.sub()
        compare(sub, partial, us)
        ctx.diffs.push(...sub.diffs)
        return ctx.add(sub.isCompatible() ? 'ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL' : 'ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL')
      }
      return ctx.add('ITEM_ADDED_TO_CLOSED_CONTENT_MODEL')
    })
  }
  ctx.enter('additionalItems', () => {
    if (o.permitsAdditionalItems !== u.permitsAdditionalItems) ctx.add(o.permitsAdditionalItems ? 'ADDITIONAL_ITEMS_REMOVED' : 'ADDITIONAL_ITEMS_ADDED')
    else if (!o.additionalSchema && u.additionalSchema) ctx.add('ADDITIONAL_ITEMS_NARROWED')
    else if (o.additionalSchema && !u.additionalSchema) ctx.add('ADDITIONAL_ITEMS_EXTENDED')
    else if (o.additionalSchema && u.additionalSchema) compare(ctx, o.additionalSchema, u.additionalSchema)
  })
  unevaluated(ctx, 'unevaluatedItems', o.unevaluated, u.unevaluated, 'UNEVALUATED_ITEMS')
  bounds(ctx, 'maxItems', o.maxItems, u.maxItems, 'MAX_ITEMS')
  bounds(ctx, 'minItems', o.minItems, u.minItems, 'MIN_ITEMS')
  if (o.uniqueItems !== u.uniqueItems) ctx.add(o.uniqueItems ? 'UNIQUE_ITEMS_REMOVED' : 'UNIQUE_ITEMS_ADDED', 'uniqueItems')
  bounds(ctx, 'maxContains', o.maxContains, u.maxContains, 'MAX_CONTAINS')
  bounds(ctx, 'minContains', o.minContains, u.minContains, 'MIN_CONTAINS')
}

/** JSON with object keys sorted: equal values give equal strings. */
export function stableJson(v: unknown): string {
  if (v === undefined) return 'undefined'
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`
  if (typeof v === 'object' && v !== null) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(',')}}`
  }
  return JSON.stringify(v)
}
