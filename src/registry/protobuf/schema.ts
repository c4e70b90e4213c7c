// Protobuf schemas for the registry: a .proto file (proto2 or proto3) parsed with protobufjs, its imports
// resolved through Confluent schema references (reference name = import path) and protobufjs's bundled
// google/protobuf well-known types; the stored form (the file re-printed from its tokens, so comments and
// layout do not make two registrations differ); and the message-index paths of Confluent's wire format.
import protobuf from 'protobufjs'
import type { ResolvedReference, SchemaReference } from '../schema-type/types.js'

export class ProtobufParseError extends Error {}

export type Syntax = 'proto2' | 'proto3'

/** One parsed file: its own definitions (for structure and order) inside a root that can resolve types. */
export interface ProtoFile {
  syntax: Syntax
  packageName: string
  imports: string[]
  /** The file's own top-level messages and enums, in declaration order. */
  types: (protobuf.Type | protobuf.Enum)[]
  /** Set for a file that came from a reference: which registered schema it is. */
  reference?: SchemaReference
}

const TOKEN_RE = /\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\.?[A-Za-z_][A-Za-z0-9_.]*|[0-9][A-Za-z0-9_.+-]*|\.[0-9][A-Za-z0-9_.+-]*|[{}[\]()<>;=,:+\-/.]/gy

/** The tokens of a .proto source without comments and whitespace; throws on characters protobuf forbids. */
export function tokenize(source: string): string[] {
  const tokens: string[] = []
  TOKEN_RE.lastIndex = 0
  while (TOKEN_RE.lastIndex < source.length) {
    const at = TOKEN_RE.lastIndex
    const m = TOKEN_RE.exec(source)
    if (!m || m.index !== at) throw new ProtobufParseError(`illegal character at offset ${at}: ${JSON.stringify(source.slice(at, at + 10))}`)
    const t = m[0]
    if (/^\s/.test(t) || t.startsWith('//') || t.startsWith('/*')) continue
    tokens.push(t)
  }
  return tokens
}

/** Re-prints tokens one statement a line, two spaces an indentation level: the stored form. */
export function formatTokens(tokens: string[]): string {
  let out = ''
  let depth = 0
  let lineStart = true
  const noSpaceBefore = new Set([';', ',', ')', ']', '>'])
  const noSpaceAfter = new Set(['(', '[', '<'])
  let prev = ''
  for (const t of tokens) {
    if (t === '}') {
      depth = Math.max(0, depth - 1)
      if (!lineStart) out += '\n'
      lineStart = true
    }
    if (lineStart) out += '  '.repeat(depth)
    else if (!noSpaceBefore.has(t) && !noSpaceAfter.has(prev) && !(t === '<' && prev === 'map')) out += ' '
    out += t
    lineStart = false
    if (t === '{') depth++
    if (t === '{' || t === ';' || t === '}') {
      out += '\n'
      lineStart = true
    }
    prev = t
  }
  return out.endsWith('\n') ? out : out + '\n'
}

export function detectSyntax(tokens: string[]): Syntax {
  const i = tokens.indexOf('syntax')
  if (i >= 0 && tokens[i + 1] === '=' && /^["']proto3["']$/.test(tokens[i + 2] ?? '')) return 'proto3'
  if (i < 0 && tokens.includes('edition')) return 'proto3'
  return 'proto2'
}

function topLevelTypes(fileRoot: protobuf.Root, packageName: string): (protobuf.Type | protobuf.Enum)[] {
  let ns: protobuf.NamespaceBase | null = fileRoot
  if (packageName) ns = fileRoot.lookup(packageName) as protobuf.Namespace | null
  if (!ns) return []
  return ns.nestedArray.filter((n): n is protobuf.Type | protobuf.Enum => n instanceof protobuf.Type || n instanceof protobuf.Enum)
}

function parseOne(source: string, into: protobuf.Root, reference?: SchemaReference): ProtoFile {
  let tokens: string[]
  try {
    tokens = tokenize(source)
  } catch (e) {
    throw new ProtobufParseError((e as Error).message)
  }
  let own: protobuf.IParserResult
  try {
    own = protobuf.parse(source, { keepCase: true, alternateCommentMode: true })
    protobuf.parse(source, into, { keepCase: true, alternateCommentMode: true })
  } catch (e) {
    throw new ProtobufParseError((e as Error).message)
  }
  const packageName = own.package ?? ''
  const types = topLevelTypes(own.root, packageName).map((t) => {
    const resolved = into.lookup(`${packageName ? packageName + '.' : ''}${t.name}`)
    if (!(resolved instanceof protobuf.Type) && !(resolved instanceof protobuf.Enum)) throw new ProtobufParseError(`cannot find ${t.name}`)
    return resolved
  })
  return { syntax: detectSyntax(tokens), packageName, imports: [...(own.imports ?? []), ...(own.weakImports ?? [])], types, reference }
}

export interface ParsedProto {
  main: ProtoFile
  /** Every file, the referenced ones first, sharing one root. */
  files: ProtoFile[]
  root: protobuf.Root
  canonical: string
}

const WELL_KNOWN = new Set(Object.keys(protobuf.common).filter((k) => k.endsWith('.proto')))

/** Parses a .proto text whose imports are given as resolved references (name = import path). */
export function parseProto(source: string, references: SchemaReference[] = [], resolved: ResolvedReference[] = []): ParsedProto {
  const root = new protobuf.Root()
  const files: ProtoFile[] = []
  const loaded = new Set<string>()
  const loadRefs = (refs: ResolvedReference[]) => {
    for (const r of refs) {
      if (loaded.has(r.name)) continue
      loaded.add(r.name)
      loadRefs(r.references)
      if (r.schemaType !== 'PROTOBUF') throw new ProtobufParseError(`reference ${r.name} is not a PROTOBUF schema`)
      files.push(parseOne(r.schema, root, { name: r.name, subject: r.subject, version: r.version }))
    }
  }
  loadRefs(resolved)
  const main = parseOne(source, root)
  files.push(main)
  for (const file of files) {
    for (const imp of file.imports) {
      if (loaded.has(imp)) continue
      if (WELL_KNOWN.has(imp)) {
        loaded.add(imp)
        root.addJSON((protobuf.common.get(imp) as { nested: Record<string, protobuf.AnyNestedObject> }).nested)
      }
    }
  }
  try {
    root.resolveAll()
  } catch (e) {
    throw new ProtobufParseError((e as Error).message)
  }
  void references
  return { main, files, root, canonical: formatTokens(tokenize(source)) }
}

// --- message indexes (Confluent's protobuf wire format) ----------------------------------------------

/** The path of message positions (messages only, in declaration order) leading to a message. */
export function messageIndexes(file: ProtoFile, fullName: string): number[] | undefined {
  const wanted = fullName.startsWith('.') ? fullName : `.${fullName}`
  const search = (types: protobuf.ReflectionObject[], path: number[]): number[] | undefined => {
    let i = 0
    for (const t of types) {
      if (!(t instanceof protobuf.Type)) continue
      const here = [...path, i]
      if (t.fullName === wanted) return here
      const found = search(t.nestedArray, here)
      if (found) return found
      i++
    }
    return undefined
  }
  return search(file.types, [])
}

/** The message a message-index path designates, or undefined if there is none. */
export function messageAt(file: ProtoFile, indexes: number[]): protobuf.Type | undefined {
  let candidates: protobuf.ReflectionObject[] = file.types
  let found: protobuf.Type | undefined
  for (const index of indexes) {
    const messages = candidates.filter((t): t is protobuf.Type => t instanceof protobuf.Type)
    found = messages[index]
    if (!found) return undefined
    candidates = found.nestedArray
  }
  return found
}
