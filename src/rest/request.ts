// Reading REST requests: content types (v2's application/vnd.kafka[.format].v2+json, v3's
// application/json), JSON bodies and the typed fields in them. Every problem becomes a RestError with
// Confluent's status and code, so that a handler only meets well-formed input.
import { jsonNestedDeeperThan, tooDeepMessage, type BufferedRequest, type HttpRequest } from '../http/index.js'
import { Errors, RestError } from './errors.js'

export type EmbeddedFormat = 'binary' | 'json' | 'avro' | 'jsonschema' | 'protobuf'
export const EMBEDDED_FORMATS: readonly EmbeddedFormat[] = ['binary', 'json', 'avro', 'jsonschema', 'protobuf']

export const V2_JSON = 'application/vnd.kafka.v2+json'
export const V3_JSON = 'application/json'

export function v2ContentType(format: EmbeddedFormat): string {
  return `application/vnd.kafka.${format}.v2+json`
}

/** The media type of a header value, lower case, without parameters. */
export function mediaType(header: string | undefined): string | undefined {
  if (header === undefined) return undefined
  const t = header.split(';')[0]!.trim().toLowerCase()
  return t === '' ? undefined : t
}

const V2_TYPE = /^application\/vnd\.kafka(?:\.([a-z]+))?\.v2\+json$/

/** The embedded format a v2 content type names: binary for application/vnd.kafka.binary.v2+json. */
export function v2Format(type: string): EmbeddedFormat | null | undefined {
  const m = V2_TYPE.exec(type)
  if (m === null) return undefined
  if (m[1] === undefined) return null
  return (EMBEDDED_FORMATS as readonly string[]).includes(m[1]) ? (m[1] as EmbeddedFormat) : undefined
}

/**
 * v2 produce: the Content-Type must name an embedded format (kafka-rest @Consumes), else 415.
 */
export function v2ProduceFormat(req: HttpRequest): EmbeddedFormat {
  const type = mediaType(req.header('content-type'))
  const format = type === undefined ? undefined : v2Format(type)
  if (format === undefined || format === null) throw Errors.unsupportedMediaType()
  return format
}

/** v2 requests other than produce: application/vnd.kafka[.format].v2+json (or none, for an empty body). */
export function checkV2ContentType(req: BufferedRequest): void {
  const type = mediaType(req.header('content-type'))
  if (type === undefined) return
  if (v2Format(type) === undefined && type !== 'application/json' && type !== 'application/octet-stream') throw Errors.unsupportedMediaType()
}

/** v3 requests with a body: application/json. */
export function checkV3ContentType(req: HttpRequest): void {
  const type = mediaType(req.header('content-type'))
  if (type !== undefined && type !== V3_JSON) throw Errors.unsupportedMediaType()
}

/**
 * The format a v2 records request asks for with Accept (kafka-rest picks the method by media type):
 * a named embedded format, or binary when the client accepts anything.
 */
export function acceptedV2Format(req: HttpRequest): EmbeddedFormat {
  const accept = req.header('accept')
  if (accept === undefined || accept.trim() === '') return 'binary'
  let anything = false
  for (const part of accept.split(',')) {
    const type = mediaType(part)
    if (type === undefined) continue
    const f = v2Format(type)
    if (f !== undefined && f !== null) return f
    if (f === null || type === '*/*' || type === 'application/*' || type === V3_JSON) anything = true
  }
  if (anything) return 'binary'
  throw Errors.notAcceptable()
}

/** The JSON body; undefined when empty and not required. Malformed JSON: 400 with the parser's message. */
export function jsonBody(req: BufferedRequest, required: true): unknown
export function jsonBody(req: BufferedRequest, required: false): unknown | undefined
export function jsonBody(req: BufferedRequest, required: boolean): unknown | undefined {
  const text = req.body.toString('utf8')
  if (text.trim() === '') {
    if (required) throw Errors.emptyBody()
    return undefined
  }
  if (jsonNestedDeeperThan(text)) throw new RestError(400, 400, tooDeepMessage())
  try {
    return JSON.parse(text)
  } catch (e) {
    throw new RestError(400, 400, `Unexpected JSON in the request body: ${(e as Error).message}`)
  }
}

/** Field readers: a wrong type is Confluent's 400 "Cannot deserialize ...", a missing required one 422. */
export type Json = Record<string, unknown>

export function asObject(v: unknown, what = 'request body'): Json {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new RestError(400, 400, `Cannot deserialize ${what}: expected a JSON object`)
  return v as Json
}

function wrongType(name: string, expected: string, v: unknown): RestError {
  return new RestError(400, 400, `Cannot deserialize value of type \`${expected}\` from ${JSON.stringify(v)?.slice(0, 100) ?? 'undefined'} (field ${name})`)
}

export function optString(o: Json, name: string): string | undefined {
  const v = o[name]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw wrongType(name, 'java.lang.String', v)
  return v
}

export function reqString(o: Json, name: string): string {
  const v = optString(o, name)
  if (v === undefined) throw new RestError(422, 422, `${name} may not be null`)
  return v
}

export function optInt(o: Json, name: string, min = -(2 ** 31), max = 2 ** 31 - 1): number | undefined {
  const v = o[name]
  if (v === undefined || v === null) return undefined
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw wrongType(name, 'java.lang.Integer', v)
  return n
}

export function reqInt(o: Json, name: string, min?: number, max?: number): number {
  const v = optInt(o, name, min, max)
  if (v === undefined) throw new RestError(422, 422, `${name} may not be null`)
  return v
}

export function optLong(o: Json, name: string): number | undefined {
  const v = o[name]
  if (v === undefined || v === null) return undefined
  const n = typeof v === 'string' && /^-?\d+$/.test(v) ? Number(v) : v
  if (typeof n !== 'number' || !Number.isSafeInteger(n)) throw wrongType(name, 'java.lang.Long', v)
  return n
}

export function optBool(o: Json, name: string): boolean | undefined {
  const v = o[name]
  if (v === undefined || v === null) return undefined
  if (typeof v === 'boolean') return v
  if (v === 'true' || v === 'false') return v === 'true'
  throw wrongType(name, 'boolean', v)
}

export function optArray(o: Json, name: string): unknown[] | undefined {
  const v = o[name]
  if (v === undefined || v === null) return undefined
  if (!Array.isArray(v)) throw wrongType(name, 'java.util.List', v)
  return v
}

/** A path parameter that must be a non-negative int (a partition id, a broker id); else 404. */
export function intParam(value: string | undefined, notFound: () => RestError): number {
  if (value === undefined || !/^\d{1,10}$/.test(value)) throw notFound()
  const n = Number(value)
  if (n > 2 ** 31 - 1) throw notFound()
  return n
}

/** The base URL clients used to reach this proxy, for the `self` and `related` links of v3 answers. */
export function baseUrl(req: HttpRequest, fallback: string): string {
  const host = req.header('host')
  return host !== undefined && /^[A-Za-z0-9.\-:[\]]+$/.test(host) ? `http://${host}` : fallback
}
