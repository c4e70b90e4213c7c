// Connection strings and znode paths.
//
// Connection string (ZooKeeper's and Kafka's `zookeeper.connect`): comma-separated host:port list, then
// optionally a chroot, e.g. `127.0.0.1:2181,127.0.0.1:2182/skein`. IPv6 hosts go in brackets
// (`[::1]:2181`); a missing port means 2181. Every path the caller uses is relative to the chroot: the
// client prefixes it on the wire and strips it from paths the server returns (created sequential names,
// watch events).
import { ZooKeeperErrorCode } from './protocol.js'
import { ZooKeeperError } from './errors.js'

export const DEFAULT_PORT = 2181

export interface ServerAddress {
  host: string
  port: number
}

export interface ConnectString {
  servers: ServerAddress[]
  /** '' when there is none; otherwise a valid absolute path without a trailing slash. */
  chroot: string
}

export function parseConnectString(connectString: string): ConnectString {
  const trimmed = connectString.trim()
  const slash = trimmed.indexOf('/')
  const hostPart = slash < 0 ? trimmed : trimmed.slice(0, slash)
  let chroot = slash < 0 ? '' : trimmed.slice(slash)
  if (chroot === '/') chroot = ''
  if (chroot !== '') {
    const problem = pathProblem(chroot, false)
    if (problem !== undefined) throw new Error(`invalid chroot in ZooKeeper connect string '${connectString}': ${problem}`)
  }
  const servers: ServerAddress[] = []
  for (const raw of hostPart.split(',')) {
    const entry = raw.trim()
    if (entry === '') continue
    servers.push(parseServer(entry, connectString))
  }
  if (servers.length === 0) throw new Error(`ZooKeeper connect string '${connectString}' names no server`)
  return { servers, chroot }
}

function parseServer(entry: string, whole: string): ServerAddress {
  let host: string
  let portText: string | undefined
  if (entry.startsWith('[')) {
    const close = entry.indexOf(']')
    if (close < 0) throw new Error(`invalid server '${entry}' in ZooKeeper connect string '${whole}'`)
    host = entry.slice(1, close)
    const rest = entry.slice(close + 1)
    if (rest !== '') {
      if (!rest.startsWith(':')) throw new Error(`invalid server '${entry}' in ZooKeeper connect string '${whole}'`)
      portText = rest.slice(1)
    }
  } else {
    const colon = entry.lastIndexOf(':')
    host = colon < 0 ? entry : entry.slice(0, colon)
    portText = colon < 0 ? undefined : entry.slice(colon + 1)
  }
  const port = portText === undefined ? DEFAULT_PORT : Number(portText)
  if (host === '' || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new Error(`invalid server '${entry}' in ZooKeeper connect string '${whole}'`)
  }
  return { host, port }
}

/**
 * Why `path` is not a valid znode path (PathUtils.validatePath), or undefined when it is. A sequential
 * create may end in '/' (the server appends the counter).
 */
export function pathProblem(path: string, sequential: boolean): string | undefined {
  if (typeof path !== 'string' || path.length === 0) return 'path must not be empty'
  if (path[0] !== '/') return 'path must start with /'
  if (path.length === 1) return undefined
  if (path.endsWith('/') && !sequential) return 'path must not end with /'
  const segments = path.slice(1).split('/')
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i]
    if (s === '') {
      if (sequential && i === segments.length - 1) continue
      return 'empty path segment'
    }
    if (s === '.' || s === '..') return `relative segment '${s}'`
  }
  for (let i = 0; i < path.length; i++) {
    const c = path.charCodeAt(i)
    if (c <= 0x1f || (c >= 0x7f && c <= 0x9f) || (c >= 0xd800 && c <= 0xf8ff) || (c >= 0xfff0 && c <= 0xffff)) {
      return `invalid character \\u${c.toString(16).padStart(4, '0')}`
    }
  }
  return undefined
}

/** Throws ZooKeeperError(BADARGUMENTS) for an invalid path. */
export function validatePath(path: string, sequential = false): void {
  const problem = pathProblem(path, sequential)
  if (problem !== undefined) throw new ZooKeeperError(ZooKeeperErrorCode.BADARGUMENTS, String(path), problem)
}

/** Maps client paths to server paths and back for one chroot ('' for none). */
export class Chroot {
  constructor(readonly prefix: string) {}

  toServer(clientPath: string): string {
    if (this.prefix === '') return clientPath
    return clientPath === '/' ? this.prefix : this.prefix + clientPath
  }

  /** A path from the server without the chroot; paths outside it (should not happen) are kept whole. */
  toClient(serverPath: string): string {
    if (this.prefix === '') return serverPath
    if (serverPath === this.prefix) return '/'
    if (serverPath.startsWith(this.prefix + '/')) return serverPath.slice(this.prefix.length)
    return serverPath
  }
}

/** Every ancestor of path, shortest first, then path itself: '/a/b/c' gives ['/a', '/a/b', '/a/b/c']. */
export function pathPrefixes(path: string): string[] {
  const out: string[] = []
  let at = path.indexOf('/', 1)
  while (at > 0) {
    out.push(path.slice(0, at))
    at = path.indexOf('/', at + 1)
  }
  if (path !== '/') out.push(path)
  return out
}
