// Builds sample messages from the spec model: every field present in a version gets a value
// that differs from its default (so it is really written), arrays get 2 elements, nested structs
// are filled, and flexible versions carry an unknown tagged field on every struct.

import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { contains, defaultSpecFolders, isPresent, loadModel, type DefaultValue, type FieldSpec, type FieldType, type MessageSpec, type ProtocolModel, type StructSpec } from '../../scripts/gen-protocol/model.js'
import { ZERO_UUID } from '../../src/protocol/primitives/types.js'

export const REPO = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..')
export const SPEC_DIR = process.env['SKEIN_PROTOCOL_SPECS'] ?? join(REPO, '..', 'shared', 'kafka-protocol')
/** The shared specs and the repo's extra ones (scripts/kafka-protocol-extra), as the generator reads them. */
export const SPEC_FOLDERS = defaultSpecFolders(REPO)

/**
 * Whether Kafka's JSON specs are here. The spec-driven protocol tests (generator output, round trips of
 * every API and version, fuzzing, version rules) need them and are skipped, with this warning, where
 * they are absent; the committed codecs themselves are still exercised by every broker and client test.
 */
export const HAVE_SPECS = existsSync(SPEC_DIR)
if (!HAVE_SPECS) console.warn(`protocol specs not found at ${SPEC_DIR}: the spec-driven protocol tests are skipped (set SKEIN_PROTOCOL_SPECS)`)

let cached: ProtocolModel | undefined
export function model(): ProtocolModel {
  // Without specs the suites that iterate over the model at collection time are skipped; they see none.
  if (!HAVE_SPECS) return { apis: [], data: [], headers: [], specPaths: [] }
  cached ??= loadModel(SPEC_FOLDERS)
  return cached
}

export function versionsOf(msg: MessageSpec): number[] {
  const out: number[] = []
  for (let v = msg.validVersions.min; v <= msg.validVersions.max; v++) out.push(v)
  return out
}

/** Deterministic PRNG (mulberry32). */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function defaultValue(d: DefaultValue): unknown {
  switch (d.kind) {
    case 'null':
      return null
    case 'number':
    case 'bigint':
    case 'bool':
    case 'string':
      return d.value
    case 'uuid':
      return ZERO_UUID
    case 'bytes':
      return Buffer.alloc(0)
    case 'array':
      return []
    case 'struct':
      return defaultStruct(d.struct)
  }
}

export function defaultStruct(s: StructSpec): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const f of s.fields) out[f.prop] = defaultValue(f.default)
  return out
}

export interface SampleOptions {
  version: number
  flexible: boolean
  /** Put null into every field that is nullable in this version. */
  nulls: boolean
  /** Add an unknown tagged field to every struct in flexible versions. */
  unknownTags: boolean
}

class SampleBuilder {
  private n = 1
  constructor(private readonly o: SampleOptions) {}

  struct(s: StructSpec): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const f of s.fields) out[f.prop] = isPresent(f, this.o.version) ? this.field(f) : defaultValue(f.default)
    if (this.o.flexible && this.o.unknownTags) {
      const k = this.n++
      out['_unknownTaggedFields'] = [{ tag: 1000 + (k % 50), data: Buffer.from([k & 0xff, 0xab]) }]
    }
    return out
  }

  private field(f: FieldSpec): unknown {
    if (this.o.nulls && contains(f.nullableVersions, this.o.version)) return null
    const v = this.value(f.type)
    return this.differ(v, f.default) ? v : this.bump(v)
  }

  private differ(v: unknown, d: DefaultValue): boolean {
    const dv = defaultValue(d)
    if (typeof v === 'object') return true
    return v !== dv
  }

  private bump(v: unknown): unknown {
    if (typeof v === 'number') return v === 1 ? 2 : 1
    if (typeof v === 'bigint') return v + 1n
    if (typeof v === 'boolean') return !v
    if (typeof v === 'string') return `${v}x`
    return v
  }

  value(t: FieldType): unknown {
    const k = this.n++
    if (t.kind === 'array') return [this.value(t.element), this.value(t.element)]
    if (t.kind === 'struct') return this.struct(t.struct)
    switch (t.name) {
      case 'bool':
        return k % 2 === 0
      case 'int8':
        return (k % 200) - 100
      case 'int16':
        return (k * 257) % 30000 - 15000
      case 'uint16':
        return (k * 257) % 65536
      case 'int32':
        return k % 3 === 0 ? -2147483648 + k : k * 100003
      case 'uint32':
        return 4294967295 - k
      case 'int64':
        return k % 3 === 0 ? -(2n ** 62n) - BigInt(k) : BigInt(k) * 10000000019n
      case 'float64':
        return k + 0.25
      case 'string':
        return k % 4 === 0 ? `näme-${k}-✓` : `name-${k}`
      case 'uuid': {
        const b = Buffer.alloc(16)
        for (let i = 0; i < 16; i++) b[i] = (k * 31 + i * 7) & 0xff
        return b.toString('base64url')
      }
      case 'bytes':
        return Buffer.from([k & 0xff, 1, 2, 3])
      case 'records':
        return Buffer.from(`records-${k}`)
    }
  }
}

export function sample(msg: MessageSpec, o: Omit<SampleOptions, 'flexible'>): Record<string, unknown> {
  return new SampleBuilder({ ...o, flexible: contains(msg.flexibleVersions, o.version) }).struct(msg.root)
}
