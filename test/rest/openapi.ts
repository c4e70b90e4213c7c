// Validates REST Proxy answers against Confluent's OpenAPI spec (openapi/kafka-rest-v3-openapi.json):
// the operation is found by method and path template, the response by status (or its 4XX/5XX range),
// and the body is checked with ajv against the response's application/json schema, whose $refs point
// into the spec's components. OpenAPI 3.0's `nullable` is ajv's; the formats the spec names (int32,
// int64, byte, date-time) are checked here. An error status the spec does not list for an operation
// (kafka-rest answers 404 for an unknown cluster on every path, the spec lists it on some) is checked
// against the spec's Error schema, the body of all its error answers. The spec is data: its one defect (type: int64) is read as
// an integer of format int64 when loaded, the file is not edited.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Ajv, type ValidateFunction } from 'ajv'

type Json = Record<string, unknown>

const SPEC_FILE = join(dirname(fileURLToPath(import.meta.url)), 'openapi', 'kafka-rest-v3-openapi.json')

function loadSpec(): Json {
  const spec = JSON.parse(readFileSync(SPEC_FILE, 'utf8')) as Json
  const fix = (v: unknown): void => {
    if (Array.isArray(v)) v.forEach(fix)
    else if (v !== null && typeof v === 'object') {
      const o = v as Json
      if (o['type'] === 'int64') {
        o['type'] = 'integer'
        o['format'] = 'int64'
      }
      for (const x of Object.values(o)) fix(x)
    }
  }
  fix(spec)
  return spec
}

const spec = loadSpec()
const ajv = new Ajv({ strict: false, allErrors: true })
ajv.addFormat('int32', { type: 'number', validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 })
ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isInteger(n) })
ajv.addFormat('byte', /^[A-Za-z0-9+/]*={0,2}$/)
ajv.addFormat('date-time', (s: string) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/.test(s) && !Number.isNaN(Date.parse(s)))
ajv.addSchema({ $id: 'spec', components: spec['components'] })

const paths = spec['paths'] as Record<string, Record<string, Json>>
const components = spec['components'] as { responses: Record<string, Json> }
const compiled = new Map<string, ValidateFunction>()

/** Rewrites the spec's local $refs to point into the schema registered as 'spec'. */
function rebase(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebase)
  if (schema !== null && typeof schema === 'object') {
    const out: Json = {}
    for (const [k, v] of Object.entries(schema as Json)) out[k] = k === '$ref' && typeof v === 'string' && v.startsWith('#/') ? `spec${v}` : rebase(v)
    return out
  }
  return schema
}

/** The operations of the spec, "METHOD /path/template" (the path without the /v3 server prefix). */
export function specOperations(): string[] {
  const out: string[] = []
  for (const [p, item] of Object.entries(paths)) for (const m of Object.keys(item)) if (['get', 'post', 'put', 'patch', 'delete'].includes(m)) out.push(`${m.toUpperCase()} ${p}`)
  return out
}

/** The validator of an operation's answer with this status; throws when the spec has no such answer. */
export function responseValidator(method: string, template: string, status: number): ValidateFunction {
  const key = `${method} ${template} ${status}`
  let v = compiled.get(key)
  if (v !== undefined) return v
  const op = paths[template]?.[method.toLowerCase()]
  if (op === undefined) throw new Error(`the spec has no operation ${method} ${template}`)
  const responses = op['responses'] as Record<string, Json>
  let response = responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses['default']
  if (response === undefined && status >= 400 && status < 500) response = { content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } }
  if (response === undefined) throw new Error(`the spec does not document status ${status} for ${method} ${template} (documented: ${Object.keys(responses).join(', ')})`)
  const ref = response['$ref']
  if (typeof ref === 'string') response = components.responses[ref.split('/').pop()!]!
  const content = response['content'] as Record<string, { schema: unknown }> | undefined
  const schema = content?.['application/json']?.schema
  if (schema === undefined) throw new Error(`${method} ${template} ${status}: the spec's answer has no application/json schema`)
  v = ajv.compile(rebase(schema) as Json)
  compiled.set(key, v)
  return v
}

/** Throws with ajv's errors when body does not match the spec's answer for method/template/status. */
export function assertMatchesSpec(method: string, template: string, status: number, body: unknown): void {
  const v = responseValidator(method, template, status)
  if (!v(body)) throw new Error(`${method} ${template} ${status} does not match Confluent's spec: ${ajv.errorsText(v.errors)}\n${JSON.stringify(body).slice(0, 600)}`)
}
