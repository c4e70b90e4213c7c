// A broker, a Schema Registry (the registry's route table over src/registry/http.ts, in memory) and a
// REST Proxy in front of them, all on real sockets, for the REST tests; and fetch helpers that check
// every v3 answer against Confluent's OpenAPI spec.
import { request } from 'node:http'
import { parseRestProperties, restSettings } from '../../src/config/client-rest.js'
import type { HttpServer } from '../../src/http/index.js'
import { MemoryStore, SchemaRegistryService, handle } from '../../src/registry/index.js'
import { startRegistryHttp } from '../../src/registry/http.js'
import { RestProxy } from '../../src/rest/index.js'
import { startTestBroker, type TestBroker } from '../harness/broker.js'
import { assertMatchesSpec } from './openapi.js'

export interface RestSetup {
  broker: TestBroker
  proxy: RestProxy
  base: string
  registryUrl: string | null
  clusterId: string
  stop(): Promise<void>
}

export async function startRest(opts: { settings?: Record<string, string>; registry?: boolean; brokerOverrides?: string[] } = {}): Promise<RestSetup> {
  const broker = await startTestBroker(['group.initial.rebalance.delay.ms=0', 'num.partitions=1', ...(opts.brokerOverrides ?? [])])
  let registry: HttpServer | null = null
  if (opts.registry === true) {
    const svc = new SchemaRegistryService(new MemoryStore())
    registry = await startRegistryHttp((req) => handle(svc, req), { listeners: ['http://127.0.0.1:0'] })
  }
  const entries: [string, string][] = [['listeners', 'http://127.0.0.1:0'], ['bootstrap.servers', broker.bootstrap], ...Object.entries(opts.settings ?? {})]
  if (registry !== null) entries.push(['schema.registry.url', registry.listeners[0]!.url])
  const settings = restSettings(parseRestProperties(entries))
  const proxy = await RestProxy.start({ settings, bootstrapServers: [broker.bootstrap] })
  const base = proxy.listeners[0]!.url
  const clusters = (await (await fetch(`${base}/v3/clusters`)).json()) as { data: { cluster_id: string }[] }
  return {
    broker,
    proxy,
    base,
    registryUrl: registry?.listeners[0]!.url ?? null,
    clusterId: clusters.data[0]!.cluster_id,
    async stop() {
      await proxy.stop()
      await registry?.close()
      await broker.stop()
    },
  }
}

export interface Answer<T = any> {
  status: number
  headers: Headers
  body: T
  text: string
}

/** A request; the body is parsed as JSON when there is one. */
export async function call<T = any>(base: string, method: string, path: string, opts: { body?: unknown; contentType?: string; accept?: string; headers?: Record<string, string> } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) }
  let body: string | undefined
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body)
    headers['Content-Type'] = opts.contentType ?? 'application/json'
  } else if (opts.contentType !== undefined) headers['Content-Type'] = opts.contentType
  if (opts.accept !== undefined) headers['Accept'] = opts.accept
  const r = await fetch(`${base}${path}`, { method, headers, body })
  const text = await r.text()
  let parsed: unknown = undefined
  if (text.trim() !== '') {
    try {
      parsed = JSON.parse(text)
    } catch {
      parsed = text
    }
  }
  return { status: r.status, headers: r.headers, body: parsed as T, text }
}

/** A request with node:http, which (unlike fetch) sends a body with GET, as kafka-rest's GET .../offsets takes. */
export function callWithBody(base: string, method: string, path: string, contentType: string, body: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body)
    const req = request(`${base}${path}`, { method, headers: { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text) } }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (d: Buffer) => parts.push(d))
      res.on('end', () => {
        const t = Buffer.concat(parts).toString()
        resolve({ status: res.statusCode ?? 0, body: t === '' ? undefined : JSON.parse(t) })
      })
    })
    req.on('error', reject)
    req.end(text)
  })
}

/** Operations of the spec this test run called, for the coverage check. */
export const exercised = new Set<string>()

/**
 * A v3 call by the spec's path template, e.g. ('GET', '/clusters/{cluster_id}/topics/{topic_name}',
 * { topic_name: 't' }): the answer must match the spec's schema for its status (204: no body).
 */
export async function v3<T = any>(s: { base: string; clusterId: string }, method: string, template: string, params: Record<string, string | number> = {}, opts: { body?: unknown; contentType?: string } = {}): Promise<Answer<T>> {
  const path = template.replace(/\{([a-z_]+)\}/g, (_, name: string) => encodeURIComponent(String(name === 'cluster_id' && params[name] === undefined ? s.clusterId : params[name])))
  const a = await call<T>(s.base, method, `/v3${path}`, opts)
  exercised.add(`${method} ${template}`)
  if (a.status === 204) {
    if (a.text !== '') throw new Error(`${method} ${template}: 204 with a body: ${a.text}`)
  } else {
    expectJson(a)
    assertMatchesSpec(method, template, a.status, a.body)
  }
  return a
}

export function expectJson(a: Answer): void {
  const type = a.headers.get('content-type')
  if (type !== 'application/json') throw new Error(`expected application/json, got ${type}: ${a.text.slice(0, 200)}`)
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Retries fn until it returns a value that passes check, or the time is up. */
export async function eventually<T>(fn: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 15000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (check(v)) return v
    if (Date.now() > deadline) return v
    await sleep(100)
  }
}
