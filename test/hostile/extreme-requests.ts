// Spec-driven hostile requests for the hostile-neighbour suite (issue 30): for an API and version, a request
// built from the JSON spec's field list with every field at an extreme (largest or smallest numbers,
// longest strings, widest arrays up to and beyond request.max.list.elements, hostile record batches), then
// encoded with the generated encoder, plus frames made wrong on purpose (truncated, lying lengths).
import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { contains, defaultSpecFolders, isPresent, loadModel, type ApiSpec, type FieldSpec, type FieldType, type ProtocolModel, type StructSpec } from '../../scripts/gen-protocol/model.js'
import { encodeRequestFrame } from '../../src/protocol/frame.js'
import { API_CODECS } from '../../src/protocol/messages/index.gen.js'
import type { Writer } from '../../src/protocol/primitives/writer.js'
import { hostileBatches } from '../records/hostile-batches.js'

/** What a request's fields are pushed to. */
export type Extreme =
  /** Numbers at their maximum, booleans true, strings at the int16 length limit, 64 KiB bytes, one element per array. */
  | 'max'
  /** Numbers at their minimum, booleans false, empty strings, null where nullable, empty arrays. */
  | 'min'
  /** One array (by path) with `width` small elements, every other array with one. */
  | 'wide'

export interface ExtremeOptions {
  extreme: Extreme
  /** For 'wide': how many elements the chosen array gets. */
  width?: number
  /** For 'wide': the dotted path of the array to widen (default: the message's first array field). */
  arrayPath?: string
  /** Which hostile batch a records field carries (cycled by name). */
  batchIndex?: number
}

export interface HostileRequest {
  /** e.g. 'Fetch v12 max' */
  name: string
  apiKey: number
  version: number
  bytes: Buffer
}

/** The spec folders: $SKEIN_PROTOCOL_SPECS or the repo's sibling shared/kafka-protocol, and the repo's extra specs. */
export function specFolders(): { dir: string; label: string }[] | undefined {
  const folders = defaultSpecFolders(repoRoot())
  return existsSync(folders[0]!.dir) ? folders : undefined
}

/** The repo root from this file's place, run from test/ (vitest) or dist/test/ (the attacker process). */
function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json'))) dir = dirname(dir)
  return dir
}

let cachedModel: ProtocolModel | undefined
/** The protocol model read from the specs, or undefined when the shared specs are not on this machine. */
export function protocolModel(): ProtocolModel | undefined {
  const folders = specFolders()
  if (folders === undefined) return undefined
  cachedModel ??= loadModel(folders)
  return cachedModel
}

/** Strings at the largest length a non-compact string can carry (int16 length). */
const LONG_STRING = 'h'.repeat(32767)
const BIG_BYTES = Buffer.alloc(64 * 1024, 0xa5)
const BATCHES = Object.values(hostileBatchesOnce())

function hostileBatchesOnce(): Record<string, Buffer> {
  // Built once per process: a few of them are large (the zip bombs).
  return hostileBatches()
}

/** The dotted paths of every array field of a struct (nested ones included), in definition order. */
export function arrayPaths(s: StructSpec, version: number, prefix = ''): string[] {
  const out: string[] = []
  for (const f of s.fields) {
    if (!isPresent(f, version)) continue
    const path = prefix === '' ? f.prop : `${prefix}.${f.prop}`
    if (f.type.kind === 'array') {
      out.push(path)
      const el = f.type.element
      if (el.kind === 'struct') out.push(...arrayPaths(el.struct, version, path))
    } else if (f.type.kind === 'struct') out.push(...arrayPaths(f.type.struct, version, path))
  }
  return out
}

class ExtremeBuilder {
  constructor(
    private readonly version: number,
    private readonly o: ExtremeOptions,
    private readonly widePath: string | undefined,
  ) {}

  struct(s: StructSpec, path: string, small: boolean): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    for (const f of s.fields) {
      const p = path === '' ? f.prop : `${path}.${f.prop}`
      // Fields absent from this version keep the spec default: the encoder refuses anything else there.
      out[f.prop] = isPresent(f, this.version) ? this.field(f, p, small) : defaultOf(f)
    }
    return out
  }

  private field(f: FieldSpec, path: string, small: boolean): unknown {
    const nullable = contains(f.nullableVersions, this.version)
    if (this.o.extreme === 'min' && nullable) return null
    return this.value(f.type, path, small)
  }

  private value(t: FieldType, path: string, small: boolean): unknown {
    if (t.kind === 'array') {
      if (this.o.extreme === 'min') return []
      const n = path === this.widePath ? (this.o.width ?? 1) : 1
      // Elements of the widened array are small (short strings) so the frame stays under socket.request.max.bytes.
      const inWide = small || path === this.widePath
      if (t.element.kind === 'struct') {
        const one = this.struct(t.element.struct, path, inWide)
        return new Array<unknown>(n).fill(one)
      }
      const one = this.value(t.element, path, inWide)
      return new Array<unknown>(n).fill(one)
    }
    if (t.kind === 'struct') return this.struct(t.struct, path, small)
    const max = this.o.extreme !== 'min'
    switch (t.name) {
      case 'bool':
        return max
      case 'int8':
        return max ? 127 : -128
      case 'int16':
        return max ? 32767 : -32768
      case 'uint16':
        return max ? 65535 : 0
      case 'int32':
        return max ? 2147483647 : -2147483648
      case 'uint32':
        return max ? 4294967295 : 0
      case 'int64':
        return max ? 2n ** 63n - 1n : -(2n ** 63n)
      case 'float64':
        return max ? Number.MAX_VALUE : -Number.MAX_VALUE
      case 'string':
        return !max ? '' : small ? 'w' : LONG_STRING
      case 'uuid':
        return max ? '_____________________w' : 'AAAAAAAAAAAAAAAAAAAAAA'
      case 'bytes':
        return !max ? Buffer.alloc(0) : small ? Buffer.from([1]) : BIG_BYTES
      case 'records':
        return !max ? Buffer.alloc(0) : BATCHES[(this.o.batchIndex ?? 0) % BATCHES.length]!
    }
  }
}

function defaultOf(f: FieldSpec): unknown {
  const d = f.default
  switch (d.kind) {
    case 'null':
      return null
    case 'number':
    case 'bigint':
    case 'bool':
    case 'string':
      return d.value
    case 'uuid':
      return 'AAAAAAAAAAAAAAAAAAAAAA'
    case 'bytes':
      return Buffer.alloc(0)
    case 'array':
      return []
    case 'struct': {
      const out: Record<string, unknown> = {}
      for (const g of d.struct.fields) out[g.prop] = defaultOf(g)
      return out
    }
  }
}

/** The spec of an API key, if the model has it. */
export function apiSpec(model: ProtocolModel, apiKey: number): ApiSpec | undefined {
  return model.apis.find((a) => a.apiKey === apiKey)
}

/** One request frame for apiKey/version with every field at `o.extreme`; undefined when the encoder refuses it. */
export function extremeRequest(model: ProtocolModel, apiKey: number, version: number, o: ExtremeOptions, correlationId: number): HostileRequest | undefined {
  const api = apiSpec(model, apiKey)
  const codec = API_CODECS.find((c) => c.api.apiKey === apiKey)
  if (api === undefined || codec === undefined) return undefined
  const widePath = o.extreme === 'wide' ? (o.arrayPath ?? arrayPaths(api.request.root, version)[0]) : undefined
  if (o.extreme === 'wide' && widePath === undefined) return undefined
  const msg = new ExtremeBuilder(version, o, widePath).struct(api.request.root, '', false)
  const label = `${api.name} v${version} ${o.extreme}${widePath !== undefined ? `(${widePath} x${o.width})` : ''}`
  try {
    const bytes = encodeRequestFrame({ requestApiKey: apiKey, requestApiVersion: version, correlationId, clientId: 'hostile' }, (w: Writer) => codec.encodeRequest(w, msg, version))
    return { name: label, apiKey, version, bytes }
  } catch (err) {
    // A value the encoder cannot put on the wire (e.g. a nullable-only null): not a request Kafka clients can send.
    if (process.env['HOSTILE_DEBUG'] !== undefined) console.warn(`${label}: ${(err as Error).message}`)
    return undefined
  }
}

/** Frames that lie about their own shape, derived from a well-formed one. */
export function brokenFrames(good: Buffer): { name: string; bytes: Buffer; thenClose: boolean }[] {
  const body = good.subarray(4)
  const withSize = (size: number, b: Buffer): Buffer => {
    const head = Buffer.alloc(4)
    head.writeInt32BE(size, 0)
    return Buffer.concat([head, b])
  }
  return [
    // Body cut in half, size prefix matching the cut: the request decoder runs out of bytes.
    { name: 'truncated body', bytes: withSize(Math.floor(body.length / 2), body.subarray(0, Math.floor(body.length / 2))), thenClose: false },
    // Size prefix promises more than is sent, then the client goes quiet and hangs up.
    { name: 'size larger than sent', bytes: withSize(body.length + 1000, body), thenClose: true },
    // Size prefix shorter than the body: the rest is read as the next frame's size.
    { name: 'size shorter than body', bytes: withSize(Math.max(8, body.length - 7), body), thenClose: false },
    { name: 'negative size', bytes: withSize(-1, body), thenClose: false },
    { name: 'size above socket.request.max.bytes', bytes: withSize(0x7fffffff, body.subarray(0, 64)), thenClose: false },
    { name: 'header only', bytes: withSize(8, body.subarray(0, 8)), thenClose: false },
    { name: 'size prefix cut', bytes: Buffer.from([0, 0]), thenClose: true },
  ]
}

/** An array length prefix claiming `claimed` elements right after the request header, with nothing behind it. */
export function lyingArrayFrame(apiKey: number, version: number, flexible: boolean, claimed: number, correlationId: number): Buffer {
  return encodeRequestFrame({ requestApiKey: apiKey, requestApiVersion: version, correlationId, clientId: 'hostile' }, (w: Writer) => {
    if (flexible) w.writeUvarint(claimed + 1)
    else w.writeInt32(claimed)
  })
}
