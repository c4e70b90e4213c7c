// Calls from one of Skein's HTTP services to another (the REST Proxy's Schema Registry client, a registry
// secondary forwarding to its primary, a Connect worker forwarding to its leader): the global fetch, or,
// when TLS options are given (a trust store for the server's certificate, a client certificate for mutual
// TLS), the same request through node:https, since Node 20's fetch takes no CA of its own (its undici
// Agent is not importable without the undici package). The answer is a standard Response either way.
import { request } from 'node:https'
import type { ConnectionOptions } from 'node:tls'

export interface FetchInit {
  method?: string
  headers?: Record<string, string>
  body?: string | Uint8Array
  signal?: AbortSignal
}

/** fetch(url, init), over https with `tls` when it is given and the URL is https. */
export function fetchWithTls(url: string, init: FetchInit = {}, tls?: ConnectionOptions): Promise<Response> {
  if (tls === undefined || !url.startsWith('https:')) return fetch(url, init)
  return new Promise((resolve, reject) => {
    const body = init.body === undefined ? undefined : typeof init.body === 'string' ? Buffer.from(init.body) : init.body
    const headers: Record<string, string | number> = { ...(init.headers ?? {}) }
    if (body !== undefined) headers['Content-Length'] = body.byteLength
    const req = request(url, { ...tls, method: init.method ?? 'GET', headers, signal: init.signal }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (d: Buffer) => parts.push(d))
      res.on('error', reject)
      res.on('end', () => {
        const out = new Headers()
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(', ') : v)
        const status = res.statusCode ?? 500
        // A Response may not carry a body with these statuses.
        const empty = status === 204 || status === 304 || (status >= 100 && status < 200)
        resolve(new Response(empty ? null : Buffer.concat(parts), { status, statusText: res.statusMessage ?? '', headers: out }))
      })
    })
    req.on('error', reject)
    req.end(body)
  })
}
