// A small Schema Registry REST client on plain fetch: what the serializers need (register, look up, fetch
// by id, latest version), with caches so that a record costs no request once its schema is known, as
// Confluent's CachedSchemaRegistryClient does. Works against Skein's registry or Confluent's.
import type { ConnectionOptions } from 'node:tls'
import { fetchWithTls } from '../../http/fetch.js'
import type { SchemaReference, SchemaType } from '../schema-type/types.js'

export const REGISTRY_CONTENT_TYPE = 'application/vnd.schemaregistry.v1+json'

export class RegistryClientError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: number,
    message: string,
  ) {
    super(message)
    this.name = 'RegistryClientError'
  }
}

export interface RegisteredSchema {
  schema: string
  schemaType: SchemaType
  references: SchemaReference[]
}

export interface SubjectVersion extends RegisteredSchema {
  subject: string
  version: number
  id: number
}

export interface RegistryClientOptions {
  /** Base URL(s); the first that answers is used. */
  url: string | string[]
  /** basic.auth.user.info: "user:password". */
  basicAuth?: string
  /** Per-request timeout in milliseconds. */
  timeoutMs?: number
  /** For https:// URLs: the trust store (and a client certificate), Confluent's schema.registry.ssl.* (client/http-tls.ts). */
  tls?: ConnectionOptions
}

export class SchemaRegistryClient {
  private readonly urls: string[]
  private readonly headers: Record<string, string>
  private readonly timeoutMs: number
  private readonly tls: ConnectionOptions | undefined
  private readonly byId = new Map<string, Promise<RegisteredSchema>>()
  private readonly idBySchema = new Map<string, Promise<number>>()

  constructor(options: RegistryClientOptions) {
    this.urls = (Array.isArray(options.url) ? options.url : options.url.split(',')).map((u) => u.trim().replace(/\/+$/, '')).filter((u) => u.length > 0)
    if (this.urls.length === 0) throw new Error('schema registry url is empty')
    this.headers = { 'Content-Type': REGISTRY_CONTENT_TYPE, Accept: `${REGISTRY_CONTENT_TYPE}, application/json` }
    if (options.basicAuth) this.headers['Authorization'] = `Basic ${Buffer.from(options.basicAuth).toString('base64')}`
    this.timeoutMs = options.timeoutMs ?? 30_000
    this.tls = options.tls
  }

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let lastError: unknown
    for (const base of this.urls) {
      let res: Response
      try {
        res = await fetchWithTls(base + path, {
          method,
          headers: this.headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.timeoutMs),
        }, this.tls)
      } catch (e) {
        lastError = e
        continue
      }
      const text = await res.text()
      let json: unknown
      try {
        json = text === '' ? undefined : JSON.parse(text)
      } catch {
        json = text
      }
      if (!res.ok) {
        const err = json as { error_code?: number; message?: string } | undefined
        throw new RegistryClientError(res.status, err?.error_code ?? res.status, err?.message ?? `HTTP ${res.status}`)
      }
      return json as T
    }
    throw new RegistryClientError(0, 50003, `schema registry unreachable: ${(lastError as Error)?.message ?? 'no url'}`)
  }

  private static subjectPath(subject: string): string {
    return encodeURIComponent(subject)
  }

  private static normalizeEntry(e: { schema: string; schemaType?: SchemaType; references?: SchemaReference[] }): RegisteredSchema {
    return { schema: e.schema, schemaType: e.schemaType ?? 'AVRO', references: e.references ?? [] }
  }

  /** Registers a schema under a subject (or finds it registered) and returns its id. */
  register(subject: string, schema: RegisteredSchema, normalize = false): Promise<number> {
    const key = `${subject}\u0000${normalize}\u0000${schema.schemaType}\u0000${JSON.stringify(schema.references)}\u0000${schema.schema}`
    let p = this.idBySchema.get(key)
    if (!p) {
      const body: Record<string, unknown> = { schema: schema.schema }
      if (schema.schemaType !== 'AVRO') body['schemaType'] = schema.schemaType
      if (schema.references.length > 0) body['references'] = schema.references
      p = this.request<{ id: number }>('POST', `/subjects/${SchemaRegistryClient.subjectPath(subject)}/versions${normalize ? '?normalize=true' : ''}`, body).then((r) => r.id)
      this.idBySchema.set(key, p)
      p.catch(() => this.idBySchema.delete(key))
    }
    return p
  }

  /** Finds the version of a subject holding a schema (POST /subjects/{subject}). */
  async lookup(subject: string, schema: RegisteredSchema, normalize = false): Promise<SubjectVersion> {
    const body: Record<string, unknown> = { schema: schema.schema }
    if (schema.schemaType !== 'AVRO') body['schemaType'] = schema.schemaType
    if (schema.references.length > 0) body['references'] = schema.references
    const e = await this.request<SubjectVersion & { schemaType?: SchemaType }>('POST', `/subjects/${SchemaRegistryClient.subjectPath(subject)}${normalize ? '?normalize=true' : ''}`, body)
    return { ...e, ...SchemaRegistryClient.normalizeEntry(e) }
  }

  /** The schema with an id (cached: ids are immutable). */
  schemaById(id: number, subject?: string): Promise<RegisteredSchema> {
    const key = `${id}\u0000${subject ?? ''}`
    let p = this.byId.get(key)
    if (!p) {
      const q = subject !== undefined ? `?subject=${encodeURIComponent(subject)}` : ''
      p = this.request<{ schema: string; schemaType?: SchemaType; references?: SchemaReference[] }>('GET', `/schemas/ids/${id}${q}`).then(SchemaRegistryClient.normalizeEntry)
      this.byId.set(key, p)
      p.catch(() => this.byId.delete(key))
    }
    return p
  }

  async version(subject: string, version: number | 'latest'): Promise<SubjectVersion> {
    const e = await this.request<SubjectVersion & { schemaType?: SchemaType }>('GET', `/subjects/${SchemaRegistryClient.subjectPath(subject)}/versions/${version}`)
    return { ...e, ...SchemaRegistryClient.normalizeEntry(e) }
  }

  latest(subject: string): Promise<SubjectVersion> {
    return this.version(subject, 'latest')
  }

  /** The referenced schemas' texts by reference name, fetched recursively (for parsing a schema). */
  async resolveReferences(references: SchemaReference[], depth = 0): Promise<import('../schema-type/types.js').ResolvedReference[]> {
    if (depth > 32) throw new RegistryClientError(0, 42201, 'references nested too deeply')
    const out: import('../schema-type/types.js').ResolvedReference[] = []
    for (const ref of references) {
      const v = await this.version(ref.subject, ref.version)
      out.push({ name: ref.name, subject: ref.subject, version: v.version, schemaType: v.schemaType, schema: v.schema, references: await this.resolveReferences(v.references, depth + 1) })
    }
    return out
  }
}
