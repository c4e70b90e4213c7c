// HTTP listener URLs as Confluent's services write them (`listeners=http://0.0.0.0:8082`): scheme, host
// and port. http and https (TLS with the service's ssl.* settings, src/http/tls-front.ts) are served. An
// empty host or 0.0.0.0 binds every interface; port 0 binds any free port (tests). IPv6 hosts are
// bracketed: http://[::1]:8082.

export interface HttpListener {
  scheme: 'http' | 'https'
  /** Host without brackets; '' means every interface. */
  host: string
  port: number
}

const LISTENER_RE = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(\[[0-9A-Fa-f:.]*\]|[^:/[\]]*):(\d{1,5})\/?$/

/** Parses one listener URL; throws an Error saying what is wrong. */
export function parseHttpListener(url: string): HttpListener {
  const m = LISTENER_RE.exec(url.trim())
  if (m === null) throw new Error(`malformed HTTP listener '${url}', expected http://host:port or https://host:port`)
  const scheme = m[1]!.toLowerCase()
  if (scheme !== 'http' && scheme !== 'https') throw new Error(`listener '${url}': only http and https are supported`)
  const port = Number(m[3])
  if (port > 65535) throw new Error(`listener '${url}' has port ${port} outside 0..65535`)
  let host = m[2]!
  if (host.startsWith('[')) host = host.slice(1, -1)
  return { scheme, host, port }
}

/** The URL of a listener (with the given port, e.g. the one bound for port 0). */
export function formatHttpListener(l: HttpListener, port = l.port): string {
  const host = l.host === '' ? '0.0.0.0' : l.host.includes(':') ? `[${l.host}]` : l.host
  return `${l.scheme}://${host}:${port}`
}

/** Whether a bound host is reachable only from this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
}

/**
 * What a standalone HTTP service says at start-up about who can reach it (issue 31): loopback listeners
 * are named as such, and each listener other hosts can reach without authentication gets a warning,
 * since anyone who reaches it acts with the service's own Kafka rights. With authentication
 * (authentication.method=BASIC) no listener is open to anyone: no warning; nor is an https listener that
 * requires client certificates (mutualTls).
 */
export function exposureNotice(product: string, urls: readonly string[], authenticated = false, mutualTls = false): { line: string; warnings: string[] } {
  // mutualTls (ssl.client.authentication=REQUIRED): https listeners admit only holders of a trusted certificate.
  const reachable = urls.filter((u) => !isLoopbackHost(parseHttpListener(u).host))
  const open = authenticated ? [] : reachable.filter((u) => !(mutualTls && parseHttpListener(u).scheme === 'https'))
  const line = reachable.length === 0 ? `${product} listening on ${urls.join(', ')} (loopback only: set listeners to serve other hosts)` : `${product} listening on ${urls.join(', ')}`
  const warnings = open.map((u) => `WARNING: ${product} listens on ${u}, reachable from other hosts, without authentication: anyone who reaches it acts with this service's Kafka rights`)
  return { line, warnings }
}
