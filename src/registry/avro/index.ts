// The registry's AVRO schema type: parsing with references, the stored and normalized forms, and
// compatibility (this schema as the reader of data written with another).
import type { Incompatibility, ParsedSchema, ResolvedReference, SchemaReference } from '../schema-type/types.js'
import { checkAvroCompatibility } from './compatibility.js'
import { AvroParseError, type AvroType, canonicalString, checkWithAvsc, normalizedString, parseAvro, parsingCanonicalForm } from './schema.js'

export { checkAvroCompatibility } from './compatibility.js'
export * from './schema.js'

/** The referenced schemas' texts, depth first, each once: the order Avro needs to know their names. */
export function flattenReferences(refs: ResolvedReference[], seen = new Set<string>()): string[] {
  const out: string[] = []
  for (const ref of refs) {
    const key = `${ref.subject}\u0000${ref.version}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push(...flattenReferences(ref.references, seen), ref.schema)
  }
  return out
}

export class AvroSchema implements ParsedSchema {
  readonly schemaType = 'AVRO' as const
  readonly canonical: string
  private readonly external: Set<string>

  constructor(
    readonly root: AvroType,
    readonly references: SchemaReference[],
    external: Set<string>,
  ) {
    this.external = external
    this.canonical = canonicalString(root, external)
  }

  static parse(text: string, references: SchemaReference[] = [], resolved: ResolvedReference[] = []): AvroSchema {
    const referenced = flattenReferences(resolved)
    const parsed = parseAvro(text, referenced)
    checkWithAvsc(text, referenced)
    // Named types that come from references are written by name in the stored form, as Confluent does.
    const external = new Set<string>()
    for (const t of allNamed(parsed.root)) if (!parsed.defined.includes(t)) external.add(t.name)
    return new AvroSchema(parsed.root, references, external)
  }

  normalized(): string {
    return normalizedString(this.root, this.external)
  }

  parsingCanonicalForm(): string {
    return parsingCanonicalForm(this.root)
  }

  checkCanRead(writer: ParsedSchema): Incompatibility[] {
    if (!(writer instanceof AvroSchema)) throw new AvroParseError('not an Avro schema')
    return checkAvroCompatibility(this.root, writer.root)
  }
}

function allNamed(root: AvroType): Extract<AvroType, { name: string }>[] {
  const found = new Set<Extract<AvroType, { name: string }>>()
  const walk = (t: AvroType): void => {
    switch (t.type) {
      case 'record':
      case 'error':
        if (found.has(t)) return
        found.add(t)
        for (const f of t.fields) walk(f.type)
        return
      case 'enum':
      case 'fixed':
        found.add(t)
        return
      case 'array':
        return walk(t.items)
      case 'map':
        return walk(t.values)
      case 'union':
        return t.branches.forEach(walk)
    }
  }
  walk(root)
  return [...found]
}
