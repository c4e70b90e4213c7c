// A JSON Schema document loaded into the shapes Confluent's compatibility rules are written against
// (the everit library's schema classes that its json.diff package compares): empty/true, false, string,
// number (integer or not), boolean, null, object, array, enum, const, not, combined (allOf/anyOf/oneOf)
// and references. A schema object that constrains several aspects at once (a type plus an enum, or a type
// plus allOf, ...) becomes an allOf of those aspects; a list of types becomes an anyOf of one schema per
// type. Draft 7 keywords are read, and the draft 2019-09/2020-12 ones where they map directly ($defs,
// dependentRequired, dependentSchemas, prefixItems, unevaluated*, min/maxContains).

export interface Common {
  id?: string
  title?: string
  description?: string
  hasDefault: boolean
  default?: unknown
  /** Unrecognized keywords, compared only for Connect's "connect.type". */
  connectType?: unknown
  /** The JSON this node was loaded from, for de-duplicating combined subschemas. */
  source: unknown
}

export type JNode =
  | { kind: 'true' | 'empty'; common: Common }
  | { kind: 'false'; common: Common }
  | { kind: 'string'; common: Common; minLength?: number; maxLength?: number; pattern?: string }
  | {
      kind: 'number'
      common: Common
      integer: boolean
      minimum?: number
      maximum?: number
      exclusiveMinimum?: number
      exclusiveMaximum?: number
      multipleOf?: number
    }
  | { kind: 'boolean' | 'null'; common: Common }
  | ObjectNode
  | ArrayNode
  | { kind: 'enum'; common: Common; values: unknown[] }
  | { kind: 'const'; common: Common; value: unknown }
  | { kind: 'not'; common: Common; not: JNode }
  | { kind: 'combined'; common: Common; criterion: 'allOf' | 'anyOf' | 'oneOf'; subschemas: JNode[] }
  | RefNode

export interface ObjectNode {
  kind: 'object'
  common: Common
  properties: Map<string, JNode>
  required: string[]
  permitsAdditionalProperties: boolean
  additionalSchema?: JNode
  patternProperties: [string, JNode][]
  propertyDependencies: Map<string, string[]>
  schemaDependencies: Map<string, JNode>
  minProperties?: number
  maxProperties?: number
  unevaluated?: JNode
}

export interface ArrayNode {
  kind: 'array'
  common: Common
  items?: JNode
  tuple?: JNode[]
  permitsAdditionalItems: boolean
  additionalSchema?: JNode
  minItems?: number
  maxItems?: number
  uniqueItems: boolean
  minContains?: number
  maxContains?: number
  unevaluated?: JNode
}

export interface RefNode {
  kind: 'ref'
  common: Common
  ref: string
  resolve: () => JNode
}

export class JsonSchemaLoadError extends Error {}

const STRING_KEYS = ['minLength', 'maxLength', 'pattern', 'format', 'contentEncoding', 'contentMediaType']
const NUMBER_KEYS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']
const OBJECT_KEYS = [
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'minProperties',
  'maxProperties',
  'dependencies',
  'dependentRequired',
  'dependentSchemas',
  'propertyNames',
  'unevaluatedProperties',
]
const ARRAY_KEYS = ['items', 'additionalItems', 'prefixItems', 'minItems', 'maxItems', 'uniqueItems', 'contains', 'minContains', 'maxContains', 'unevaluatedItems']
const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'] as const
type TypeName = (typeof TYPES)[number]

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined
}

/** A JSON pointer fragment ("#/definitions/a~1b") resolved inside a document. */
function pointer(doc: unknown, fragment: string): unknown {
  if (fragment === '' || fragment === '/') return doc
  if (!fragment.startsWith('/')) return undefined
  let node: unknown = doc
  for (const raw of fragment.slice(1).split('/')) {
    const token = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~')
    if (Array.isArray(node)) node = node[Number(token)]
    else if (isObject(node)) node = node[token]
    else return undefined
  }
  return node
}

interface Doc {
  root: unknown
  /** Subschemas by their $id, for references by id within this document. */
  ids: Map<string, unknown>
}

/**
 * Loads a schema and the documents it may reference. `referenced` maps a reference name (Confluent's
 * SchemaReference.name, typically a file name or URL used in "$ref") to its parsed JSON.
 */
export class JsonSchemaLoader {
  private readonly nodes = new Map<unknown, JNode>()
  private readonly docs = new Map<string, Doc>()
  private readonly docOf = new Map<unknown, Doc>()

  constructor(referenced: Map<string, unknown> = new Map()) {
    for (const [name, json] of referenced) {
      const doc = this.index(json)
      this.docs.set(name, doc)
      if (isObject(json) && typeof json['$id'] === 'string') this.docs.set(json['$id'], doc)
    }
  }

  load(json: unknown): JNode {
    const doc = this.index(json)
    return this.node(json, doc)
  }

  private index(root: unknown): Doc {
    const doc: Doc = { root, ids: new Map() }
    const walk = (v: unknown, depth: number): void => {
      if (depth > 500) throw new JsonSchemaLoadError('schema nested too deeply')
      if (Array.isArray(v)) return v.forEach((x) => walk(x, depth + 1))
      if (!isObject(v)) return
      if (this.docOf.has(v)) return
      this.docOf.set(v, doc)
      if (typeof v['$id'] === 'string' && v !== root) doc.ids.set(v['$id'], v)
      for (const [k, x] of Object.entries(v)) if (k !== 'enum' && k !== 'const' && k !== 'default' && k !== 'examples') walk(x, depth + 1)
    }
    walk(root, 0)
    return doc
  }

  private node(json: unknown, doc: Doc): JNode {
    if (typeof json === 'boolean') {
      // Boolean schemas are values, not objects: a fresh node each time is fine for them.
      return { kind: json ? 'true' : 'false', common: { hasDefault: false, source: json } }
    }
    if (!isObject(json)) throw new JsonSchemaLoadError(`Not a JSON schema: ${JSON.stringify(json)?.slice(0, 200)}`)
    const known = this.nodes.get(json)
    if (known) return known
    const built = this.build(json, doc)
    this.nodes.set(json, built)
    return built
  }

  private common(json: Record<string, unknown>): Common {
    return {
      id: typeof json['$id'] === 'string' ? json['$id'] : typeof json['id'] === 'string' ? json['id'] : undefined,
      title: typeof json['title'] === 'string' ? json['title'] : undefined,
      description: typeof json['description'] === 'string' ? json['description'] : undefined,
      hasDefault: 'default' in json,
      default: json['default'],
      connectType: json['connect.type'],
      source: json,
    }
  }

  private build(json: Record<string, unknown>, doc: Doc): JNode {
    const common = this.common(json)
    const aspects: JNode[] = []
    const bare = (): Common => ({ hasDefault: false, source: json })
    const type = json['type']
    if (type !== undefined) {
      const names = Array.isArray(type) ? type : [type]
      if (names.length === 0 || names.some((t) => typeof t !== 'string' || !(TYPES as readonly string[]).includes(t))) {
        throw new JsonSchemaLoadError(`Invalid type: ${JSON.stringify(type)}`)
      }
      const typed = (names as TypeName[]).map((t) => this.typed(t, json, doc, bare()))
      aspects.push(typed.length === 1 ? typed[0]! : { kind: 'combined', criterion: 'anyOf', subschemas: typed, common: bare() })
    } else {
      // No "type": the type-specific keywords present say which types are constrained.
      const implied: TypeName[] = []
      if (STRING_KEYS.some((k) => k in json)) implied.push('string')
      if (NUMBER_KEYS.some((k) => k in json)) implied.push('number')
      if (OBJECT_KEYS.some((k) => k in json)) implied.push('object')
      if (ARRAY_KEYS.some((k) => k in json)) implied.push('array')
      const typed = implied.map((t) => this.typed(t, json, doc, bare()))
      if (typed.length === 1) aspects.push(typed[0]!)
      else if (typed.length > 1) aspects.push({ kind: 'combined', criterion: 'anyOf', subschemas: typed, common: bare() })
    }
    if ('enum' in json) {
      if (!Array.isArray(json['enum'])) throw new JsonSchemaLoadError('enum must be an array')
      aspects.push({ kind: 'enum', values: json['enum'], common: bare() })
    }
    if ('const' in json) aspects.push({ kind: 'const', value: json['const'], common: bare() })
    if ('not' in json) aspects.push({ kind: 'not', not: this.node(json['not'], doc), common: bare() })
    for (const criterion of ['allOf', 'anyOf', 'oneOf'] as const) {
      if (!(criterion in json)) continue
      const list = json[criterion]
      if (!Array.isArray(list) || list.length === 0) throw new JsonSchemaLoadError(`${criterion} must be a non-empty array`)
      aspects.push({ kind: 'combined', criterion, subschemas: list.map((s) => this.node(s, doc)), common: bare() })
    }
    if (typeof json['$ref'] === 'string') aspects.push(this.ref(json['$ref'], doc))
    if (aspects.length === 0) return { kind: 'empty', common }
    if (aspects.length === 1) {
      aspects[0]!.common = common
      return aspects[0]!
    }
    return { kind: 'combined', criterion: 'allOf', subschemas: aspects, common }
  }

  private ref(ref: string, doc: Doc): RefNode {
    let resolved: JNode | undefined
    const node: RefNode = {
      kind: 'ref',
      ref,
      common: { hasDefault: false, source: { $ref: ref } },
      resolve: () => {
        if (resolved) return resolved
        const hash = ref.indexOf('#')
        const base = hash >= 0 ? ref.slice(0, hash) : ref
        const fragment = hash >= 0 ? ref.slice(hash + 1) : ''
        let target: { json: unknown; doc: Doc } | undefined
        if (base === '') {
          target = { json: pointer(doc.root, fragment), doc }
        } else if (doc.ids.has(base) && fragment === '') {
          target = { json: doc.ids.get(base), doc }
        } else {
          const other = this.docs.get(base) ?? this.docs.get(base.replace(/^.*\//, ''))
          if (other) target = { json: pointer(other.root, fragment), doc: other }
        }
        if (!target || target.json === undefined) throw new JsonSchemaLoadError(`Unresolved $ref '${ref}'`)
        resolved = this.node(target.json, target.doc)
        // A reference to a reference: follow it, guarding against a cycle of references alone.
        const seen = new Set<JNode>()
        while (resolved.kind === 'ref' && !seen.has(resolved)) {
          seen.add(resolved)
          resolved = resolved.resolve()
        }
        if (resolved.kind === 'ref') throw new JsonSchemaLoadError(`Cyclic $ref '${ref}'`)
        return resolved
      },
    }
    return node
  }

  /** Checks every reference resolves, so that an invalid schema is refused when registered. */
  static checkRefs(root: JNode): void {
    const seen = new Set<JNode>()
    const walk = (n: JNode | undefined): void => {
      if (!n || seen.has(n)) return
      seen.add(n)
      switch (n.kind) {
        case 'ref':
          return walk(n.resolve())
        case 'object':
          n.properties.forEach(walk)
          walk(n.additionalSchema)
          n.patternProperties.forEach(([, s]) => walk(s))
          n.schemaDependencies.forEach(walk)
          return walk(n.unevaluated)
        case 'array':
          walk(n.items)
          n.tuple?.forEach(walk)
          walk(n.additionalSchema)
          return walk(n.unevaluated)
        case 'not':
          return walk(n.not)
        case 'combined':
          return n.subschemas.forEach(walk)
      }
    }
    walk(root)
  }

  private typed(type: TypeName, json: Record<string, unknown>, doc: Doc, common: Common): JNode {
    switch (type) {
      case 'string': {
        if ('pattern' in json) {
          try {
            new RegExp(String(json['pattern']), 'u')
          } catch {
            throw new JsonSchemaLoadError(`Invalid pattern: ${String(json['pattern'])}`)
          }
        }
        return {
          kind: 'string',
          common,
          minLength: num(json['minLength']),
          maxLength: num(json['maxLength']),
          pattern: typeof json['pattern'] === 'string' ? json['pattern'] : undefined,
        }
      }
      case 'number':
      case 'integer': {
        // Draft 4's boolean exclusiveMaximum/exclusiveMinimum turn the limit itself exclusive.
        let maximum = num(json['maximum'])
        let minimum = num(json['minimum'])
        let exclusiveMaximum = num(json['exclusiveMaximum'])
        let exclusiveMinimum = num(json['exclusiveMinimum'])
        if (json['exclusiveMaximum'] === true && maximum !== undefined) [exclusiveMaximum, maximum] = [maximum, undefined]
        if (json['exclusiveMinimum'] === true && minimum !== undefined) [exclusiveMinimum, minimum] = [minimum, undefined]
        return { kind: 'number', common, integer: type === 'integer', maximum, minimum, exclusiveMaximum, exclusiveMinimum, multipleOf: num(json['multipleOf']) }
      }
      case 'boolean':
      case 'null':
        return { kind: type, common }
      case 'object':
        return this.object(json, doc, common)
      case 'array':
        return this.array(json, doc, common)
    }
  }

  private object(json: Record<string, unknown>, doc: Doc, common: Common): ObjectNode {
    const properties = new Map<string, JNode>()
    if (isObject(json['properties'])) for (const [k, v] of Object.entries(json['properties'])) properties.set(k, this.node(v, doc))
    const required = Array.isArray(json['required']) ? json['required'].filter((r): r is string => typeof r === 'string') : []
    const additional = json['additionalProperties']
    const patternProperties: [string, JNode][] = []
    if (isObject(json['patternProperties'])) {
      for (const [k, v] of Object.entries(json['patternProperties'])) {
        try {
          new RegExp(k, 'u')
        } catch {
          throw new JsonSchemaLoadError(`Invalid patternProperties regex: ${k}`)
        }
        patternProperties.push([k, this.node(v, doc)])
      }
    }
    const propertyDependencies = new Map<string, string[]>()
    const schemaDependencies = new Map<string, JNode>()
    const deps = { ...(isObject(json['dependencies']) ? json['dependencies'] : {}) }
    if (isObject(json['dependentRequired'])) Object.assign(deps, json['dependentRequired'])
    for (const [k, v] of Object.entries(deps)) {
      if (Array.isArray(v)) propertyDependencies.set(k, v.filter((x): x is string => typeof x === 'string'))
      else schemaDependencies.set(k, this.node(v, doc))
    }
    if (isObject(json['dependentSchemas'])) for (const [k, v] of Object.entries(json['dependentSchemas'])) schemaDependencies.set(k, this.node(v, doc))
    return {
      kind: 'object',
      common,
      properties,
      required,
      permitsAdditionalProperties: additional !== false,
      additionalSchema: isObject(additional) ? this.node(additional, doc) : undefined,
      patternProperties,
      propertyDependencies,
      schemaDependencies,
      minProperties: num(json['minProperties']),
      maxProperties: num(json['maxProperties']),
      unevaluated: 'unevaluatedProperties' in json ? this.node(json['unevaluatedProperties'], doc) : undefined,
    }
  }

  private array(json: Record<string, unknown>, doc: Doc, common: Common): ArrayNode {
    let items: JNode | undefined
    let tuple: JNode[] | undefined
    let additional: unknown = json['additionalItems']
    if (Array.isArray(json['prefixItems'])) {
      // Draft 2020-12: prefixItems is the tuple and items applies to the rest.
      tuple = json['prefixItems'].map((s) => this.node(s, doc))
      additional = json['items']
    } else if (Array.isArray(json['items'])) {
      tuple = json['items'].map((s) => this.node(s, doc))
    } else if (json['items'] !== undefined) {
      items = this.node(json['items'], doc)
    }
    return {
      kind: 'array',
      common,
      items,
      tuple,
      permitsAdditionalItems: additional !== false,
      additionalSchema: isObject(additional) ? this.node(additional, doc) : undefined,
      minItems: num(json['minItems']),
      maxItems: num(json['maxItems']),
      uniqueItems: json['uniqueItems'] === true,
      minContains: num(json['minContains']),
      maxContains: num(json['maxContains']),
      unevaluated: 'unevaluatedItems' in json ? this.node(json['unevaluatedItems'], doc) : undefined,
    }
  }
}
