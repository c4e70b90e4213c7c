// Turns the spec model into TypeScript: one interface per struct, one create/encode/decode triple
// per message, straight-line code per field with version conditionals (no descriptor
// interpreter at run time). Output is a pure function of the model, so check-generated can
// compare it byte for byte.

import {
  apiModuleFile,
  contains,
  formatVersions,
  isEmpty,
  isInline,
  isTagged,
  messageModuleFile,
  type ApiSpec,
  type CoordinatorRecordSet,
  type DefaultValue,
  type FieldSpec,
  type FieldType,
  type MessageSpec,
  type ProtocolModel,
  type StructSpec,
  type VersionRange,
} from './model.js'

const SPEC_PATH = 'shared/kafka-protocol'

/** `from a/*.json and b/*.json` for the index headers. */
function fromFolders(model: ProtocolModel): string {
  const paths = model.specPaths.length > 0 ? model.specPaths : [SPEC_PATH]
  return paths.map((p) => `${p}/*.json`).join(' and ')
}

/** Where a generated module's specs come from and where it finds the codec primitives. */
export interface ModuleLayout {
  /** Spec folder as named in the GENERATED header. */
  specPath: string
  /** Import path of src/protocol/primitives from the module's folder. */
  primitives: string
}

/** src/protocol/messages/*.gen.ts from shared/kafka-protocol. */
export const PROTOCOL_LAYOUT: ModuleLayout = { specPath: SPEC_PATH, primitives: '../primitives' }

function q(s: string): string {
  return `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`
}

function doc(text: string): string {
  return text.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim()
}

/** Indentation-aware line builder. */
class Code {
  readonly lines: string[] = []
  private depth = 0

  line(s = ''): void {
    this.lines.push(s === '' ? '' : '  '.repeat(this.depth) + s)
  }

  open(s: string): void {
    this.line(s)
    this.depth++
  }

  close(s = '}'): void {
    this.depth--
    this.line(s)
  }

  toString(): string {
    return this.lines.join('\n')
  }
}

/** Versions of the message, as a list (validVersions is always closed). */
function versionList(r: VersionRange): number[] {
  const out: number[] = []
  for (let v = r.min; v <= r.max; v++) out.push(v)
  return out
}

function rangeCond(lo: number, hi: number, all: number[]): string {
  const min = all[0]!
  const max = all[all.length - 1]!
  if (lo <= min && hi >= max) return 'true'
  if (lo === hi) return `version === ${lo}`
  if (lo <= min) return `version <= ${hi}`
  if (hi >= max) return `version >= ${lo}`
  return `(version >= ${lo} && version <= ${hi})`
}

/**
 * A condition on `version` that is true for every version in `yes`, false for every version in
 * `all` outside `yes` and `dontCare`, and anything for `dontCare` (used to drop tests that the
 * surrounding code already implies).
 */
function cond(yes: number[], all: number[], dontCare: number[] = []): string {
  if (yes.length === 0) return 'false'
  const ok = new Set([...yes, ...dontCare])
  if (all.every((v) => ok.has(v))) return 'true'
  let lo = Math.min(...yes)
  let hi = Math.max(...yes)
  while (ok.has(lo - 1)) lo--
  while (ok.has(hi + 1)) hi++
  let contiguous = true
  for (let v = lo; v <= hi; v++) if (!ok.has(v)) contiguous = false
  if (contiguous) return rangeCond(lo, hi, all)
  // Not contiguous: an OR of the runs of `yes`.
  const runs: string[] = []
  const sorted = [...yes].sort((a, b) => a - b)
  let start = sorted[0]!
  for (let i = 1; i <= sorted.length; i++) {
    if (i === sorted.length || sorted[i] !== sorted[i - 1]! + 1) {
      runs.push(rangeCond(start, sorted[i - 1]!, all))
      if (i < sorted.length) start = sorted[i]!
    }
  }
  return `(${runs.join(' || ')})`
}

function pickExpr(flex: string, compact: string, classic: string): string {
  if (flex === 'true') return compact
  if (flex === 'false') return classic
  return `(${flex} ? ${compact} : ${classic})`
}

function tsType(t: FieldType): string {
  switch (t.kind) {
    case 'array': {
      const e = tsType(t.element)
      return `${e}[]`
    }
    case 'struct':
      return t.struct.tsName
    case 'primitive':
      switch (t.name) {
        case 'bool':
          return 'boolean'
        case 'int64':
          return 'bigint'
        case 'string':
        case 'uuid':
          return 'string'
        case 'bytes':
          return 'Buffer'
        case 'records':
          return 'Records'
        default:
          return 'number'
      }
  }
}

function fieldTsType(f: FieldSpec): string {
  const base = tsType(f.type)
  if (f.type.kind === 'primitive' && f.type.name === 'records') return base
  return isEmpty(f.nullableVersions) ? base : `${base} | null`
}

function isNullableType(f: FieldSpec): boolean {
  return !isEmpty(f.nullableVersions) || (f.type.kind === 'primitive' && f.type.name === 'records')
}

/** Fewest bytes a value of this type takes on the wire in one version. */
function minWireSize(t: FieldType, version: number, flexible: boolean, nullable: boolean): number {
  switch (t.kind) {
    case 'array':
      return flexible ? 1 : 4
    case 'struct': {
      if (nullable) return 1
      let n = flexible ? 1 : 0
      for (const f of t.struct.fields) {
        if (!isInline(f, version)) continue
        const fflex = f.flexibleVersions === undefined ? flexible : flexible && contains(f.flexibleVersions, version)
        n += minWireSize(f.type, version, fflex, contains(f.nullableVersions, version))
      }
      return n
    }
    case 'primitive':
      switch (t.name) {
        case 'bool':
        case 'int8':
          return 1
        case 'int16':
        case 'uint16':
          return 2
        case 'int32':
        case 'uint32':
          return 4
        case 'int64':
        case 'float64':
          return 8
        case 'uuid':
          return 16
        case 'string':
          return flexible ? 1 : 2
        case 'bytes':
        case 'records':
          return flexible ? 1 : 4
      }
  }
}

class ModuleEmitter {
  private readonly imports = new Set<string>()
  private readonly needDefault = new Set<StructSpec>()

  constructor(private readonly hasFlexible: boolean) {}

  use(name: string): void {
    this.imports.add(name)
  }

  defaultExpr(d: DefaultValue): string {
    switch (d.kind) {
      case 'null':
        return 'null'
      case 'number':
        return Object.is(d.value, -0) ? '0' : String(d.value)
      case 'bigint':
        return `${d.value}n`
      case 'bool':
        return String(d.value)
      case 'string':
        return q(d.value)
      case 'uuid':
        this.use('ZERO_UUID')
        return 'ZERO_UUID'
      case 'bytes':
        return 'Buffer.alloc(0)'
      case 'array':
        return '[]'
      case 'struct':
        return `create${d.struct.tsName}()`
    }
  }

  /** An expression that is true when `e` differs from the field's default. */
  nonDefault(f: FieldSpec, e: string): string {
    const d = f.default
    const nullable = isNullableType(f)
    switch (d.kind) {
      case 'null':
        return `${e} !== null`
      case 'number':
      case 'bool':
      case 'bigint':
      case 'string':
      case 'uuid':
        return `${e} !== ${this.defaultExpr(d)}`
      case 'bytes':
      case 'array':
        return nullable ? `(${e} === null || ${e}.length !== 0)` : `${e}.length !== 0`
      case 'struct':
        this.needDefault.add(d.struct)
        return nullable ? `(${e} === null || !isDefault${d.struct.tsName}(${e}))` : `!isDefault${d.struct.tsName}(${e})`
    }
  }

  // ---- encode ----

  private writeValue(c: Code, t: FieldType, e: string, w: string, flex: string, nullAllowed: string, typeNullable: boolean, depth: number, what: string): void {
    if (t.kind === 'array') {
      const a = `a${depth}`
      c.open('{')
      c.line(`const ${a} = ${e}`)
      if (typeNullable) {
        c.line(`if (${a} === null) ${w}.writeArrayLength(-1, ${flex})`)
        c.open('else {')
      } else {
        // The type rules null out; this catches it at run time with a typed error.
        this.use('ProtocolEncodeError')
        c.line(`if (!Array.isArray(${a})) throw new ProtocolEncodeError(\`${what}: ${e.replace(/^m\./, '')} must be an array\`)`)
      }
      c.line(`${w}.writeArrayLength(${a}.length, ${flex})`)
      const el = `e${depth}`
      c.open(`for (const ${el} of ${a}) {`)
      this.writeValue(c, t.element, el, w, flex, 'false', false, depth + 1, what)
      c.close()
      if (typeNullable) c.close()
      c.close()
      return
    }
    if (t.kind === 'struct') {
      const call = (x: string): string => `write${t.struct.tsName}(${w}, ${x}, version)`
      if (nullAllowed !== 'false') {
        c.open(`if (${nullAllowed}) {`)
        c.line(`if (${e} === null) ${w}.writeInt8(-1)`)
        c.open('else {')
        c.line(`${w}.writeInt8(1)`)
        c.line(call(e))
        c.close()
        c.close()
        if (nullAllowed !== 'true') c.line(`else ${call(`${e}!`)}`)
      } else {
        c.line(call(typeNullable ? `${e}!` : e))
      }
      return
    }
    const stmt = (compact: string, classic: string): void => {
      if (flex === 'true') c.line(`${w}.${compact}(${e})`)
      else if (flex === 'false') c.line(`${w}.${classic}(${e})`)
      else {
        c.line(`if (${flex}) ${w}.${compact}(${e})`)
        c.line(`else ${w}.${classic}(${e})`)
      }
    }
    switch (t.name) {
      case 'bool':
        c.line(`${w}.writeBool(${e})`)
        return
      case 'int8':
        c.line(`${w}.writeInt8(${e})`)
        return
      case 'int16':
        c.line(`${w}.writeInt16(${e})`)
        return
      case 'uint16':
        c.line(`${w}.writeUint16(${e})`)
        return
      case 'int32':
        c.line(`${w}.writeInt32(${e})`)
        return
      case 'uint32':
        c.line(`${w}.writeUint32(${e})`)
        return
      case 'int64':
        c.line(`${w}.writeInt64(${e})`)
        return
      case 'float64':
        c.line(`${w}.writeFloat64(${e})`)
        return
      case 'uuid':
        c.line(`${w}.writeUuid(${e})`)
        return
      case 'string':
        if (typeNullable) stmt('writeCompactNullableString', 'writeNullableString')
        else stmt('writeCompactString', 'writeString')
        return
      case 'bytes':
        if (typeNullable) stmt('writeCompactNullableBytes', 'writeNullableBytes')
        else stmt('writeCompactBytes', 'writeBytes')
        return
      case 'records':
        c.line(`${w}.writeRecords(${e}, ${flex})`)
        return
    }
  }

  /**
   * Writes one present field. `present` are the versions in which this code runs, for working
   * out whether null must be rejected in some of them.
   */
  private writeField(c: Code, msg: MessageSpec, f: FieldSpec, e: string, w: string, flex: string, present: number[], all: number[]): void {
    const typeNullable = isNullableType(f)
    let nullAllowed = 'false'
    if (typeNullable) {
      const nullable = present.filter((v) => contains(f.nullableVersions, v))
      const notNullable = present.filter((v) => !contains(f.nullableVersions, v))
      const others = all.filter((v) => !present.includes(v))
      if (notNullable.length > 0) {
        const nn = cond(notNullable, all, others)
        this.use('ProtocolEncodeError')
        c.line(`if (${nn === 'true' ? '' : `${nn} && `}${e} === null) throw new ProtocolEncodeError(\`${msg.name}: ${f.prop} cannot be null in version \${version}\`)`)
      }
      nullAllowed = nullable.length === 0 ? 'false' : cond(nullable, all, others)
    }
    this.writeValue(c, f.type, e, w, flex, nullAllowed, typeNullable, 0, msg.name)
  }

  private fieldFlex(msg: MessageSpec, f: FieldSpec, flexVar: string, all: number[]): string {
    if (f.flexibleVersions === undefined) return flexVar
    const yes = all.filter((v) => contains(msg.flexibleVersions, v) && contains(f.flexibleVersions!, v))
    return cond(yes, all)
  }

  emitWriteStruct(c: Code, msg: MessageSpec, s: StructSpec): void {
    const all = versionList(msg.validVersions)
    const flexVersions = all.filter((v) => contains(msg.flexibleVersions, v))
    const flexCond = cond(flexVersions, all)
    const body = new Code()
    const flexVar = flexCond === 'true' || flexCond === 'false' ? flexCond : 'flexible'
    if (flexVar === 'flexible') body.line(`const flexible = ${flexCond}`)
    for (const f of s.fields) {
      const inline = all.filter((v) => isInline(f, v))
      const tagged = all.filter((v) => isTagged(f, v))
      const absent = all.filter((v) => !inline.includes(v) && !tagged.includes(v))
      const e = `m.${f.prop}`
      if (inline.length > 0) {
        const ic = cond(inline, all)
        const flex = this.fieldFlex(msg, f, flexVar, all)
        if (ic === 'true') {
          this.writeField(body, msg, f, e, 'w', flex, inline, all)
        } else {
          body.open(`if (${ic}) {`)
          this.writeField(body, msg, f, e, 'w', flex, inline, all)
          body.close()
        }
      }
      if (absent.length > 0 && !f.ignorable) {
        const ac = cond(absent, all)
        this.use('ProtocolEncodeError')
        body.line(
          `if (${ac === 'true' ? '' : `${ac} && `}${this.nonDefault(f, e)}) throw new ProtocolEncodeError(\`${msg.name}: ${f.prop} is not supported in version \${version}\`)`,
        )
      }
    }
    if (this.hasFlexible && flexVar !== 'false') {
      const taggedFields = s.fields.filter((f) => !isEmpty(f.taggedVersions)).sort((a, b) => a.tag! - b.tag!)
      if (flexVar === 'flexible') body.open('if (flexible) {')
      if (taggedFields.length === 0) {
        body.line('w.writeUnknownTaggedFields(m._unknownTaggedFields)')
      } else {
        body.line('const u = m._unknownTaggedFields')
        const counts: string[] = ['(u === undefined ? 0 : u.length)']
        for (const f of taggedFields) {
          const tagged = all.filter((v) => isTagged(f, v))
          const tc = cond(tagged, all, all.filter((v) => !flexVersions.includes(v)))
          body.line(`const t${f.tag} = ${tc === 'true' ? '' : `${tc} && `}${this.nonDefault(f, `m.${f.prop}`)}`)
          counts.push(`(t${f.tag} ? 1 : 0)`)
        }
        body.line(`w.writeUvarint(${counts.join(' + ')})`)
        body.line('let ui = 0')
        for (const f of taggedFields) {
          const tagged = all.filter((v) => isTagged(f, v))
          body.open(`if (t${f.tag}) {`)
          body.line(`ui = w.writeUnknownTagsBelow(u, ui, ${f.tag})`)
          this.use('WriterValue')
          body.line('const s = new Writer(64)')
          this.writeField(body, msg, f, `m.${f.prop}`, 's', 'true', tagged, all)
          body.line(`w.writeTaggedField(${f.tag}, s)`)
          body.close()
        }
        body.line('w.writeUnknownTagsBelow(u, ui, Infinity)')
      }
      if (flexVar === 'flexible') {
        body.close()
        this.use('ProtocolEncodeError')
        body.line(
          `else if (m._unknownTaggedFields !== undefined && m._unknownTaggedFields.length > 0) throw new ProtocolEncodeError(\`${msg.name}: tagged fields need a flexible version, not \${version}\`)`,
        )
      }
    }
    const text = body.toString()
    const wName = /\bw\./.test(text) ? 'w' : '_w'
    const mName = /\bm\./.test(text) ? 'm' : '_m'
    const vName = /\bversion\b/.test(text) ? 'version' : '_version'
    c.open(`function write${s.tsName}(${wName}: Writer, ${mName}: ${s.tsName}, ${vName}: number): void {`)
    for (const l of body.lines) c.line(l)
    c.close()
  }

  // ---- decode ----

  private readExpr(t: FieldType, flex: string, nullAllowed: string, zeroCopy: boolean): string {
    if (t.kind === 'struct') {
      const call = `read${t.struct.tsName}(r, version)`
      if (nullAllowed === 'false') return call
      return `(${nullAllowed === 'true' ? '' : `${nullAllowed} && `}r.readInt8() < 0 ? null : ${call})`
    }
    if (t.kind === 'array') throw new Error('arrays are read by readArray')
    const nn = (compact: string, classic: string, compactNull: string, classicNull: string, arg = ''): string => {
      if (nullAllowed === 'false') return pickExpr(flex, `r.${compact}(${arg})`, `r.${classic}(${arg})`)
      if (nullAllowed === 'true') return pickExpr(flex, `r.${compactNull}(${arg})`, `r.${classicNull}(${arg})`)
      return pickExpr(
        flex,
        `(${nullAllowed} ? r.${compactNull}(${arg}) : r.${compact}(${arg}))`,
        `(${nullAllowed} ? r.${classicNull}(${arg}) : r.${classic}(${arg}))`,
      )
    }
    switch (t.name) {
      case 'bool':
        return 'r.readBool()'
      case 'int8':
        return 'r.readInt8()'
      case 'int16':
        return 'r.readInt16()'
      case 'uint16':
        return 'r.readUint16()'
      case 'int32':
        return 'r.readInt32()'
      case 'uint32':
        return 'r.readUint32()'
      case 'int64':
        return 'r.readInt64()'
      case 'float64':
        return 'r.readFloat64()'
      case 'uuid':
        return 'r.readUuid()'
      case 'string':
        return nn('readCompactString', 'readString', 'readCompactNullableString', 'readNullableString')
      case 'bytes':
        return nn('readCompactBytes', 'readBytes', 'readCompactNullableBytes', 'readNullableBytes', zeroCopy ? 'true' : '')
      case 'records':
        return `r.readRecords(${flex}, ${nullAllowed})`
    }
  }

  /** Lines that read field `f` into `target`. */
  private readField(c: Code, msg: MessageSpec, f: FieldSpec, target: string, flex: string, present: number[], all: number[]): void {
    let nullAllowed = 'false'
    if (isNullableType(f)) {
      const nullable = present.filter((v) => contains(f.nullableVersions, v))
      nullAllowed = nullable.length === 0 ? 'false' : cond(nullable, all, all.filter((v) => !present.includes(v)))
    }
    if (f.type.kind !== 'array') {
      c.line(`${target} = ${this.readExpr(f.type, flex, nullAllowed, f.zeroCopy)}`)
      return
    }
    const el = f.type.element
    let min = Infinity
    for (const v of present) {
      const fv = flex === 'true' ? true : flex === 'false' ? false : contains(msg.flexibleVersions, v)
      min = Math.min(min, minWireSize(el, v, fv, false))
    }
    min = Math.max(1, min === Infinity ? 1 : min)
    const len = pickExpr(flex, `r.readCompactArrayLength(${min}, ${nullAllowed})`, `r.readArrayLength(${min}, ${nullAllowed})`)
    c.open('{')
    c.line(`const n = ${len}`)
    const elExpr = this.readExpr(el, flex, 'false', false)
    const fill = (): void => {
      c.line(`const a: ${tsType(el)}[] = new Array(n)`)
      c.line(`for (let i = 0; i < n; i++) a[i] = ${elExpr}`)
      c.line(`${target} = a`)
    }
    if (nullAllowed !== 'false') {
      c.line(`if (n < 0) ${target} = null`)
      c.open('else {')
      fill()
      c.close()
    } else {
      fill()
    }
    c.close()
  }

  emitReadStruct(c: Code, msg: MessageSpec, s: StructSpec): void {
    const all = versionList(msg.validVersions)
    const flexVersions = all.filter((v) => contains(msg.flexibleVersions, v))
    const flexCond = cond(flexVersions, all)
    const flexVar = flexCond === 'true' || flexCond === 'false' ? flexCond : 'flexible'
    const body = new Code()
    if (flexVar === 'flexible') body.line(`const flexible = ${flexCond}`)
    for (const f of s.fields) {
      const local = `f${f.name}`
      const inline = all.filter((v) => isInline(f, v))
      const type = fieldTsType(f)
      const flex = this.fieldFlex(msg, f, flexVar, all)
      const ic = cond(inline, all)
      if (ic === 'true') {
        if (f.type.kind === 'array') {
          body.line(`let ${local}: ${type}`)
          this.readField(body, msg, f, local, flex, inline, all)
        } else {
          const tmp = new Code()
          this.readField(tmp, msg, f, local, flex, inline, all)
          body.line(`const ${tmp.lines[0]!}`)
        }
        continue
      }
      body.line(`let ${local}: ${type} = ${this.defaultExpr(f.default)}`)
      if (inline.length > 0) {
        if (f.type.kind === 'array') {
          body.open(`if (${ic}) {`)
          this.readField(body, msg, f, local, flex, inline, all)
          body.close()
        } else {
          const tmp = new Code()
          this.readField(tmp, msg, f, local, flex, inline, all)
          body.line(`if (${ic}) ${tmp.lines[0]!}`)
        }
      }
    }
    let unknownVar = false
    if (this.hasFlexible && flexVar !== 'false') {
      const taggedFields = s.fields.filter((f) => !isEmpty(f.taggedVersions)).sort((a, b) => a.tag! - b.tag!)
      unknownVar = true
      if (taggedFields.length === 0) {
        body.line(`const unknown = ${flexVar === 'true' ? 'r.readUnknownTaggedFields()' : 'flexible ? r.readUnknownTaggedFields() : undefined'}`)
      } else {
        this.use('TaggedField')
        body.line('let unknown: TaggedField[] | undefined')
        if (flexVar === 'flexible') body.open('if (flexible) {')
        body.line('const count = r.readUvarint()')
        body.open('for (let i = 0; i < count; i++) {')
        body.line('const tag = r.readUvarint()')
        body.line('const size = r.readUvarint()')
        for (const f of taggedFields) {
          const tagged = all.filter((v) => isTagged(f, v))
          const tc = cond(tagged, all, all.filter((v) => !flexVersions.includes(v)))
          body.open(`if (tag === ${f.tag}${tc === 'true' ? '' : ` && ${tc}`}) {`)
          body.line('const limit = r.pushLimit(size)')
          this.readField(body, msg, f, `f${f.name}`, 'true', tagged, all)
          body.line('r.popLimit(limit)')
          body.line('continue')
          body.close()
        }
        body.line(';(unknown ??= []).push({ tag, data: r.readRaw(size) })')
        body.close()
        if (flexVar === 'flexible') body.close()
      }
    }
    const props = s.fields.map((f) => `${f.prop}: f${f.name}`)
    if (unknownVar) {
      body.line(`const out: ${s.tsName} = { ${props.join(', ')} }`)
      body.line('if (unknown !== undefined) out._unknownTaggedFields = unknown')
      body.line('return out')
    } else {
      body.line(`return { ${props.join(', ')} }`)
    }
    const text = body.toString()
    const rName = /\br\./.test(text) ? 'r' : '_r'
    const vName = /\bversion\b/.test(text) ? 'version' : '_version'
    c.open(`function read${s.tsName}(${rName}: Reader, ${vName}: number): ${s.tsName} {`)
    for (const l of body.lines) c.line(l)
    c.close()
  }

  // ---- types, defaults ----

  emitInterface(c: Code, msg: MessageSpec, s: StructSpec, about: string): void {
    if (about) c.line(`/** ${doc(about)} */`)
    c.open(`export interface ${s.tsName} {`)
    for (const f of s.fields) {
      const notes = [`versions ${formatVersions(f.versions)}`]
      if (!isEmpty(f.nullableVersions)) notes.push(`nullable ${formatVersions(f.nullableVersions)}`)
      if (!isEmpty(f.taggedVersions)) notes.push(`tag ${f.tag} in ${formatVersions(f.taggedVersions)}`)
      if (f.ignorable) notes.push('ignorable')
      const d = f.default
      if (d.kind === 'null' || d.kind === 'number' || d.kind === 'bigint' || d.kind === 'bool' || (d.kind === 'string' && d.value !== '')) {
        if (!(d.kind === 'number' && d.value === 0) && !(d.kind === 'bigint' && d.value === 0n) && !(d.kind === 'bool' && !d.value)) {
          notes.push(`default ${this.defaultExpr(d)}`)
        }
      }
      const aboutText = f.about ? `${doc(f.about)} ` : ''
      c.line(`/** ${aboutText}(${notes.join('; ')}) */`)
      c.line(`${f.prop}: ${fieldTsType(f)}`)
    }
    if (this.hasFlexible) {
      this.use('TaggedField')
      c.line('/** Tagged fields this codec does not know, kept for re-encoding. */')
      c.line('_unknownTaggedFields?: TaggedField[]')
    }
    c.close()
    void msg
  }

  emitCreate(c: Code, s: StructSpec): void {
    c.line(`/** A ${s.tsName} with every field at its spec default, overridden by \`partial\`. */`)
    c.open(`export function create${s.tsName}(partial?: Partial<${s.tsName}>): ${s.tsName} {`)
    const props = s.fields.map((f) => `${f.prop}: ${this.defaultExpr(f.default)}`)
    if (props.length === 0) c.line('return { ...partial }')
    else c.line(`return { ${props.join(', ')}, ...partial }`)
    c.close()
  }

  emitIsDefaults(c: Code): void {
    const done = new Set<StructSpec>()
    // nonDefault() may add structs while we emit; loop until closed.
    for (;;) {
      const next = [...this.needDefault].filter((s) => !done.has(s)).sort((a, b) => (a.tsName < b.tsName ? -1 : a.tsName > b.tsName ? 1 : 0))
      if (next.length === 0) break
      for (const s of next) {
        done.add(s)
        const checks = s.fields.map((f) => `!(${this.nonDefault(f, `v.${f.prop}`)})`)
        if (this.hasFlexible) checks.push('(v._unknownTaggedFields === undefined || v._unknownTaggedFields.length === 0)')
        c.line('')
        c.open(`function isDefault${s.tsName}(${checks.length === 0 ? '_v' : 'v'}: ${s.tsName}): boolean {`)
        c.line(`return ${checks.length === 0 ? 'true' : checks.join(' && ')}`)
        c.close()
      }
    }
  }

  /** The module's text: the GENERATED header naming `specFiles` (paths as the headers show them), imports, then `c`. */
  header(c: Code, specFiles: string[], imports: Code, layout: ModuleLayout = PROTOCOL_LAYOUT): string {
    const p = layout.primitives
    const lines: string[] = []
    lines.push(`// GENERATED by scripts/gen-protocol from ${specFiles.join(' and ')}. DO NOT EDIT.`)
    lines.push('')
    lines.push(`import type { Reader } from '${p}/reader.js'`)
    lines.push(this.imports.has('WriterValue') ? `import { Writer } from '${p}/writer.js'` : `import type { Writer } from '${p}/writer.js'`)
    const errs = ['ProtocolDecodeError', 'ProtocolEncodeError'].filter((n) => this.imports.has(n))
    if (errs.length > 0) lines.push(`import { ${errs.join(', ')} } from '${p}/errors.js'`)
    if (this.imports.has('ZERO_UUID')) lines.push(`import { ZERO_UUID } from '${p}/types.js'`)
    const types = ['Records', 'TaggedField'].filter((n) => this.imports.has(n))
    if (types.length > 0) lines.push(`import type { ${types.join(', ')} } from '${p}/types.js'`)
    for (const l of imports.lines) lines.push(l)
    lines.push('')
    return lines.join('\n') + c.toString() + '\n'
  }

  /** Interfaces, create, read and write functions for one message. */
  emitMessage(c: Code, msg: MessageSpec): void {
    const structs = [msg.root, ...msg.structs]
    for (const s of structs) {
      c.line('')
      this.emitInterface(c, msg, s, s === msg.root ? `${msg.name}, versions ${formatVersions(msg.validVersions)}, flexible ${formatVersions(msg.flexibleVersions)}.` : '')
    }
    for (const s of structs) {
      if (structHasRecords(s)) this.use('Records')
      c.line('')
      this.emitCreate(c, s)
    }
    for (const s of structs) {
      c.line('')
      this.emitWriteStruct(c, msg, s)
      c.line('')
      this.emitReadStruct(c, msg, s)
    }
  }

  emitEntryPoints(c: Code, msg: MessageSpec): void {
    const v = msg.validVersions
    this.use('ProtocolEncodeError')
    this.use('ProtocolDecodeError')
    const check = `!Number.isInteger(version) || version < ${v.min} || version > ${v.max}`
    c.line('')
    c.line(`/** Encodes a ${msg.name} (versions ${formatVersions(v)}) at the writer's end. */`)
    c.open(`export function encode${msg.name}(w: Writer, msg: ${msg.name}, version: number): void {`)
    c.line(`if (${check}) throw new ProtocolEncodeError(\`${msg.name} version \${version} is outside ${formatVersions(v)}\`)`)
    c.line(`write${msg.root.tsName}(w, msg, version)`)
    c.close()
    c.line('')
    c.line(`/** Decodes a ${msg.name} (versions ${formatVersions(v)}) from the reader's position. */`)
    c.open(`export function decode${msg.name}(r: Reader, version: number): ${msg.name} {`)
    c.line(`if (${check}) throw new ProtocolDecodeError(\`${msg.name} version \${version} is outside ${formatVersions(v)}\`)`)
    c.line(`return read${msg.root.tsName}(r, version)`)
    c.close()
  }
}

function structHasRecords(s: StructSpec): boolean {
  return s.fields.some((f) => f.type.kind === 'primitive' && f.type.name === 'records')
}

function flexMin(r: VersionRange): string {
  return isEmpty(r) ? 'null' : String(r.min)
}

function deprecated(r: VersionRange): string {
  return isEmpty(r) ? 'null' : `{ min: ${r.min}, max: ${r.max === Infinity ? 'Infinity' : r.max} }`
}

export function emitApiModule(api: ApiSpec): { file: string; text: string } {
  const hasFlexible = !isEmpty(api.request.flexibleVersions) || !isEmpty(api.response.flexibleVersions)
  const em = new ModuleEmitter(hasFlexible)
  const c = new Code()
  const req = api.request
  const res = api.response
  c.line('')
  c.line(`/** ${api.name} (API key ${api.apiKey}): the spec's version ranges. */`)
  c.open(`export const ${api.name}Api = {`)
  c.line(`apiKey: ${api.apiKey},`)
  c.line(`name: ${q(api.name)},`)
  c.line(`minVersion: ${req.validVersions.min},`)
  c.line(`maxVersion: ${req.validVersions.max},`)
  c.line(`flexibleMinVersion: ${flexMin(req.flexibleVersions)},`)
  c.line(`deprecatedVersions: ${deprecated(req.deprecatedVersions)},`)
  c.line(`latestVersionUnstable: ${req.latestVersionUnstable},`)
  c.line(`listeners: [${req.listeners.map(q).join(', ')}],`)
  c.close('} as const')
  if (req.validVersions.min !== res.validVersions.min || req.validVersions.max !== res.validVersions.max) {
    throw new Error(`${api.name}: request and response version ranges differ`)
  }
  // Per-message module bodies go into separate blocks so that the same emitter tracks imports.
  const body = new Code()
  em.emitMessage(body, req)
  em.emitEntryPoints(body, req)
  em.emitMessage(body, res)
  em.emitEntryPoints(body, res)
  em.emitIsDefaults(body)
  for (const l of body.lines) c.lines.push(l)
  return { file: apiModuleFile(api), text: em.header(c, [specFile(req), specFile(res)], new Code()) }
}

/** `shared/kafka-protocol/ProduceRequest.json`: the file as the folder it came from names it. */
function specFile(msg: MessageSpec): string {
  return `${msg.specPath === '' ? SPEC_PATH : msg.specPath}/${msg.file}`
}

export function emitMessageModule(msg: MessageSpec, layout: ModuleLayout = PROTOCOL_LAYOUT): { file: string; text: string } {
  const em = new ModuleEmitter(!isEmpty(msg.flexibleVersions))
  const c = new Code()
  c.line('')
  c.line(`/** ${msg.name} (${msg.kind}): the spec's version ranges. */`)
  c.open(`export const ${msg.name}Info = {`)
  c.line(`name: ${q(msg.name)},`)
  c.line(`minVersion: ${msg.validVersions.min},`)
  c.line(`maxVersion: ${msg.validVersions.max},`)
  c.line(`flexibleMinVersion: ${flexMin(msg.flexibleVersions)},`)
  c.close('} as const')
  const body = new Code()
  em.emitMessage(body, msg)
  em.emitEntryPoints(body, msg)
  em.emitIsDefaults(body)
  for (const l of body.lines) c.lines.push(l)
  return { file: messageModuleFile(msg), text: em.header(c, [layout === PROTOCOL_LAYOUT ? specFile(msg) : `${layout.specPath}/${msg.file}`], new Code(), layout) }
}

/** The version condition of a key range, on the variable `version`. */
function keyVersionCond(r: VersionRange): string {
  return r.min === r.max ? `version === ${r.min}` : `version >= ${r.min} && version <= ${r.max}`
}

/**
 * `records.gen.ts` of a coordinator record set: Kafka's record framing over the per-message codecs
 * (an int16 version before the key or value struct in that version) and the key decoder that
 * dispatches on that version, which names the record type.
 */
export function emitRecordSetIndex(set: CoordinatorRecordSet, layout: ModuleLayout): { file: string; text: string } {
  const p = layout.primitives
  const lines: string[] = []
  lines.push(`// GENERATED by scripts/gen-protocol from ${layout.specPath}/*.json. DO NOT EDIT.`)
  lines.push('//')
  lines.push("// Records framed as Kafka frames them (MessageUtil.toVersionPrefixedBytes): a key is an int16 version")
  lines.push('// and then the key struct in that version, a value is an int16 version and then the value struct in')
  lines.push('// that version; a null value is a tombstone. The key version also names the record type:')
  for (const t of set.types) {
    lines.push(`//   ${t.name}: key versions ${formatVersions(t.key.validVersions)}, value versions ${formatVersions(t.value.validVersions)} (flexible ${formatVersions(t.value.flexibleVersions)})`)
  }
  lines.push('')
  lines.push(`import { Reader } from '${p}/reader.js'`)
  lines.push(`import { Writer } from '${p}/writer.js'`)
  const modules: { spec: MessageSpec }[] = []
  for (const t of set.types) modules.push({ spec: t.key }, { spec: t.value })
  modules.sort((a, b) => (messageModuleFile(a.spec) < messageModuleFile(b.spec) ? -1 : 1))
  for (const { spec } of modules) {
    const n = spec.name
    lines.push(`import { decode${n}, encode${n}, type ${n} } from './${messageModuleFile(spec).replace(/\.ts$/, '.js')}'`)
  }
  const union = `${set.name}RecordKey`
  lines.push('')
  lines.push('/** A decoded record key: its record type, the version it was written in, and its fields. */')
  lines.push(`export type ${union} =`)
  for (const t of set.types) lines.push(`  | { type: ${q(t.name)}; version: number; key: ${t.key.name} }`)
  lines.push("  | { type: 'unknown'; version: number }")
  lines.push('')
  lines.push('/**')
  lines.push(' * Decodes a record key. A version no definition here covers is a record type this code does not')
  lines.push(" * know (`unknown`); a known one whose bytes do not parse throws ProtocolDecodeError.")
  lines.push(' */')
  lines.push(`export function decode${union}(buf: Buffer): ${union} {`)
  lines.push('  const r = new Reader(buf)')
  lines.push('  const version = r.readInt16()')
  for (const t of set.types) {
    lines.push(`  if (${keyVersionCond(t.key.validVersions)}) return { type: ${q(t.name)}, version, key: decode${t.key.name}(r, version) }`)
  }
  lines.push("  return { type: 'unknown', version }")
  lines.push('}')
  for (const t of set.types) {
    for (const spec of [t.key, t.value]) {
      const n = spec.name
      const arg = spec === t.key ? 'key' : 'value'
      lines.push('')
      lines.push(`/** ${n} bytes of a record: int16 version, then the ${arg} in that version (${formatVersions(spec.validVersions)}). */`)
      lines.push(`export function encode${n}Record(${arg}: ${n}, version: number): Buffer {`)
      lines.push('  const w = new Writer(64)')
      lines.push('  w.writeInt16(version)')
      lines.push(`  encode${n}(w, ${arg}, version)`)
      lines.push('  return w.toBuffer()')
      lines.push('}')
    }
    const v = t.value.name
    lines.push('')
    lines.push(`/** Decodes ${v} bytes of a record: the int16 version, then the value in that version. */`)
    lines.push(`export function decode${v}Record(buf: Buffer): { version: number; value: ${v} } {`)
    lines.push('  const r = new Reader(buf)')
    lines.push('  const version = r.readInt16()')
    lines.push(`  return { version, value: decode${v}(r, version) }`)
    lines.push('}')
  }
  return { file: 'records.gen.ts', text: lines.join('\n') + '\n' }
}

/** Every generated file of a coordinator record set: one module per definition, and records.gen.ts. */
export function emitRecordSet(set: CoordinatorRecordSet, layout: ModuleLayout): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = []
  for (const t of set.types) {
    for (const spec of [t.key, t.value]) {
      const m = emitMessageModule(spec, layout)
      out.push({ path: m.file, text: m.text })
    }
  }
  const idx = emitRecordSetIndex(set, layout)
  out.push({ path: idx.file, text: idx.text })
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** Namespace name under which a module is re-exported: `Produce`, `ConsumerProtocolSubscription`. */
export function namespaceOf(api: ApiSpec): string {
  return api.name
}

export function emitMessagesIndex(model: ProtocolModel): { file: string; text: string } {
  const lines: string[] = []
  lines.push(`// GENERATED by scripts/gen-protocol from ${fromFolders(model)}. DO NOT EDIT.`)
  lines.push('')
  lines.push("import type { Reader } from '../primitives/reader.js'")
  lines.push("import type { Writer } from '../primitives/writer.js'")
  for (const api of model.apis) lines.push(`import * as ${api.name} from './${apiModuleFile(api).replace(/\.ts$/, '.js')}'`)
  for (const msg of model.data) lines.push(`import * as ${msg.name} from './${messageModuleFile(msg).replace(/\.ts$/, '.js')}'`)
  lines.push('')
  lines.push('export {')
  for (const api of model.apis) lines.push(`  ${api.name},`)
  for (const msg of model.data) lines.push(`  ${msg.name},`)
  lines.push('}')
  lines.push('')
  lines.push('/** One API\'s codecs, for code that works on any API (dispatch tables, tests). */')
  lines.push('export interface ApiCodec {')
  lines.push('  readonly api: {')
  lines.push('    readonly apiKey: number')
  lines.push('    readonly name: string')
  lines.push('    readonly minVersion: number')
  lines.push('    readonly maxVersion: number')
  lines.push('    readonly flexibleMinVersion: number | null')
  lines.push('  }')
  lines.push('  encodeRequest(w: Writer, msg: object, version: number): void')
  lines.push('  decodeRequest(r: Reader, version: number): object')
  lines.push('  encodeResponse(w: Writer, msg: object, version: number): void')
  lines.push('  decodeResponse(r: Reader, version: number): object')
  lines.push('  createRequest(): object')
  lines.push('  createResponse(): object')
  lines.push('}')
  lines.push('')
  lines.push('/** Every API in the spec, ordered by key. */')
  lines.push('export const API_CODECS: readonly ApiCodec[] = [')
  for (const api of model.apis) {
    const n = api.name
    lines.push('  {')
    lines.push(`    api: ${n}.${n}Api,`)
    lines.push(`    encodeRequest: ${n}.encode${api.request.name},`)
    lines.push(`    decodeRequest: ${n}.decode${api.request.name},`)
    lines.push(`    encodeResponse: ${n}.encode${api.response.name},`)
    lines.push(`    decodeResponse: ${n}.decode${api.response.name},`)
    lines.push(`    createRequest: ${n}.create${api.request.root.tsName},`)
    lines.push(`    createResponse: ${n}.create${api.response.root.tsName},`)
    lines.push('  },')
  }
  lines.push(']')
  lines.push('')
  lines.push('const byKey: (ApiCodec | undefined)[] = []')
  lines.push('for (const c of API_CODECS) byKey[c.api.apiKey] = c')
  lines.push('')
  lines.push('/** The codecs of an API key, or undefined when the spec does not define it. */')
  lines.push('export function apiCodec(apiKey: number): ApiCodec | undefined {')
  lines.push('  return byKey[apiKey]')
  lines.push('}')
  return { file: 'index.gen.ts', text: lines.join('\n') + '\n' }
}

/** ControlledShutdown (key 7) is not in the spec set, but its v0 header exception is Kafka's. */
const CONTROLLED_SHUTDOWN_KEY = 7

export function emitApiKeys(model: ProtocolModel): { file: string; text: string } {
  const lines: string[] = []
  lines.push(`// GENERATED by scripts/gen-protocol from ${fromFolders(model)}. DO NOT EDIT.`)
  lines.push('//')
  lines.push('// API key <-> name, the version ranges the specs define (not what the broker serves), and the')
  lines.push('// header version rules: flexible requests use header v2, others v1; flexible responses use')
  lines.push('// header v1, others v0. Exceptions (Kafka generator): ApiVersions responses always use header')
  lines.push('// v0 so any client can read them, and ControlledShutdown v0 requests use header v0.')
  lines.push('')
  lines.push('export interface ApiKeyInfo {')
  lines.push('  readonly apiKey: number')
  lines.push('  readonly name: string')
  lines.push('  readonly minVersion: number')
  lines.push('  readonly maxVersion: number')
  lines.push('  /** First flexible version (flexible ranges are open-ended), or null if none. */')
  lines.push('  readonly flexibleMinVersion: number | null')
  lines.push('  /** KIP-896 deprecated versions, or null. */')
  lines.push('  readonly deprecatedVersions: { readonly min: number; readonly max: number } | null')
  lines.push('  readonly latestVersionUnstable: boolean')
  lines.push('}')
  lines.push('')
  lines.push('export const ApiKey = {')
  for (const api of model.apis) lines.push(`  ${api.name}: ${api.apiKey},`)
  lines.push('} as const')
  lines.push('')
  lines.push('export type ApiKey = (typeof ApiKey)[keyof typeof ApiKey]')
  lines.push('export type ApiName = keyof typeof ApiKey')
  lines.push('')
  lines.push('export const API_KEYS: readonly ApiKeyInfo[] = [')
  for (const api of model.apis) {
    const r = api.request
    lines.push(
      `  { apiKey: ${api.apiKey}, name: ${q(api.name)}, minVersion: ${r.validVersions.min}, maxVersion: ${r.validVersions.max}, flexibleMinVersion: ${flexMin(r.flexibleVersions)}, deprecatedVersions: ${deprecated(r.deprecatedVersions)}, latestVersionUnstable: ${r.latestVersionUnstable} },`,
    )
  }
  lines.push(']')
  lines.push('')
  lines.push('const byKey: (ApiKeyInfo | undefined)[] = []')
  lines.push('const byName = new Map<string, ApiKeyInfo>()')
  lines.push('for (const info of API_KEYS) {')
  lines.push('  byKey[info.apiKey] = info')
  lines.push('  byName.set(info.name, info)')
  lines.push('}')
  lines.push('')
  lines.push('export function apiKeyInfo(apiKey: number): ApiKeyInfo | undefined {')
  lines.push('  return byKey[apiKey]')
  lines.push('}')
  lines.push('')
  lines.push('/** `Produce` for 0; undefined for keys the specs do not define. */')
  lines.push('export function apiName(apiKey: number): string | undefined {')
  lines.push('  return byKey[apiKey]?.name')
  lines.push('}')
  lines.push('')
  lines.push('export function apiKeyOf(name: string): number | undefined {')
  lines.push('  return byName.get(name)?.apiKey')
  lines.push('}')
  lines.push('')
  lines.push('/** Whether a version of an API uses the compact (flexible) encoding; false for unknown keys. */')
  lines.push('export function isFlexibleVersion(apiKey: number, apiVersion: number): boolean {')
  lines.push('  const f = byKey[apiKey]?.flexibleMinVersion')
  lines.push('  return f !== undefined && f !== null && apiVersion >= f')
  lines.push('}')
  lines.push('')
  lines.push('/** Request header version (0-2) for an API version; unknown keys get the non-flexible v1. */')
  lines.push('export function requestHeaderVersion(apiKey: number, apiVersion: number): number {')
  lines.push(`  if (apiKey === ${CONTROLLED_SHUTDOWN_KEY} && apiVersion === 0) return 0`)
  lines.push('  return isFlexibleVersion(apiKey, apiVersion) ? 2 : 1')
  lines.push('}')
  lines.push('')
  lines.push('/** Response header version (0-1) for an API version; ApiVersions always answers with v0. */')
  lines.push('export function responseHeaderVersion(apiKey: number, apiVersion: number): number {')
  const av = model.apis.find((a) => a.name === 'ApiVersions')
  if (!av) throw new Error('no ApiVersions spec')
  lines.push(`  if (apiKey === ${av.apiKey}) return 0`)
  lines.push('  return isFlexibleVersion(apiKey, apiVersion) ? 1 : 0')
  lines.push('}')
  return { file: 'api-keys.gen.ts', text: lines.join('\n') + '\n' }
}

/** Every generated file: paths relative to src/protocol. */
export function emitAll(model: ProtocolModel): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = []
  for (const api of model.apis) {
    const m = emitApiModule(api)
    out.push({ path: `messages/${m.file}`, text: m.text })
  }
  for (const msg of [...model.data, ...model.headers]) {
    const m = emitMessageModule(msg)
    out.push({ path: `messages/${m.file}`, text: m.text })
  }
  const idx = emitMessagesIndex(model)
  out.push({ path: `messages/${idx.file}`, text: idx.text })
  const keys = emitApiKeys(model)
  out.push({ path: keys.file, text: keys.text })
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}
