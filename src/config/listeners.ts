// Listener URIs (`listeners`, `advertised.listeners`): NAME://host:port, as Kafka writes them.
// An empty host means all interfaces; an IPv6 host is bracketed ([::1]); port 0 picks a free port.

import type { Validator } from './config-def.js'

export interface Listener {
  /** Listener name, upper case (PLAINTEXT, SASL_PLAINTEXT, or a custom name mapped to a protocol). */
  name: string
  /** Host without brackets; '' means all interfaces. */
  host: string
  port: number
}

const LISTENER_RE = /^([A-Za-z0-9_]+):\/\/(\[[0-9A-Fa-f:.]*\]|[^:/[\]]*):(\d{1,5})$/

/** Parses one listener URI; throws Error with the reason when it is malformed. */
export function parseListener(uri: string): Listener {
  const m = LISTENER_RE.exec(uri.trim())
  if (m === null) throw new Error(`malformed listener '${uri}', expected NAME://host:port`)
  const port = Number(m[3])
  if (port > 65535) throw new Error(`listener '${uri}' has port ${port} outside 0..65535`)
  let host = m[2]!
  if (host.startsWith('[')) host = host.slice(1, -1)
  return { name: m[1]!.toUpperCase(), host, port }
}

/** Parses a listener list; names must be distinct, and so must non-zero ports. */
export function parseListeners(uris: readonly string[]): Listener[] {
  const out = uris.map(parseListener)
  const names = new Set<string>()
  const ports = new Set<number>()
  for (const l of out) {
    if (names.has(l.name)) throw new Error(`each listener must have a different name; ${l.name} appears twice`)
    names.add(l.name)
    if (l.port !== 0 && ports.has(l.port)) throw new Error(`each listener must have a different port; ${l.port} appears twice`)
    ports.add(l.port)
  }
  return out
}

/** Formats a listener back to its URI form. */
export function formatListener(l: Listener): string {
  const host = l.host.includes(':') ? `[${l.host}]` : l.host
  return `${l.name}://${host}:${l.port}`
}

export function listenersValidator(allowEmpty: boolean): Validator {
  return (v) => {
    if (!Array.isArray(v)) return undefined
    if (v.length === 0) return allowEmpty ? undefined : 'at least one listener is required'
    try {
      parseListeners(v)
      return undefined
    } catch (err) {
      return (err as Error).message
    }
  }
}

/** Parses listener.security.protocol.map (LISTENER:PROTOCOL,...) into a map keyed by listener name. */
export function parseSecurityProtocolMap(items: readonly string[]): Map<string, string> {
  const out = new Map<string, string>()
  for (const item of items) {
    const i = item.indexOf(':')
    if (i <= 0 || i === item.length - 1) throw new Error(`malformed entry '${item}', expected LISTENER:PROTOCOL`)
    const protocol = item.slice(i + 1).toUpperCase()
    if (!['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'].includes(protocol)) {
      throw new Error(`unknown security protocol ${protocol} in '${item}'`)
    }
    out.set(item.slice(0, i).toUpperCase(), protocol)
  }
  return out
}

export function securityProtocolMapValidator(): Validator {
  return (v) => {
    if (!Array.isArray(v)) return undefined
    try {
      parseSecurityProtocolMap(v)
      return undefined
    } catch (err) {
      return (err as Error).message
    }
  }
}
