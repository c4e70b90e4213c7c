// HTTP BASIC authentication as Confluent's services do it (authentication.method=BASIC,
// authentication.realm, authentication.roles): users and their roles come from a file in Jetty's
// PropertyFileLoginModule format (`user: password[,role...]`). The server (uws.ts) asks the authenticator
// about every request and WebSocket upgrade before any route runs; what it decides is here, so it can be
// tested without sockets.
import { createHash, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'

/** Who sent a request, as BASIC authentication established it. */
export interface HttpPrincipal {
  readonly user: string
  readonly roles: readonly string[]
  /**
   * The password the caller sent: the REST Proxy logs in to Kafka as the caller with it (SASL), so it is
   * kept on the principal of the request only, never logged (toJSON leaves it out).
   */
  readonly password: string
}

/** A user of the property file. */
export interface HttpUser {
  readonly password: string
  readonly roles: readonly string[]
}

export interface BasicAuthOptions {
  /** authentication.realm: named in WWW-Authenticate. */
  realm: string
  /** authentication.roles: a user must hold one of these; ['*'] (the default) lets any authenticated user in. */
  roles?: readonly string[]
  /** authentication.skip.paths: paths served without authentication (exact, or a prefix ending in `/*`). */
  skipPaths?: readonly string[]
  users: ReadonlyMap<string, HttpUser>
  /**
   * Requests let through without credentials, principal null, for the service to verify another way
   * (Kafka Connect's internal worker-to-worker requests, which carry a signature of their body instead).
   */
  exempt?: (request: RequestHead) => boolean
}

/** What is known of a request when it is authenticated: before its body has arrived. */
export interface RequestHead {
  /** Upper case. */
  readonly method: string
  readonly path: string
  /** A header's value, '' when absent (name in lower case). */
  header(name: string): string
}

/** The verdict on one request. */
export type AuthVerdict =
  | { kind: 'ok'; principal: HttpPrincipal | null }
  | { kind: 'refused'; status: 401 | 403; message: string; headers: Readonly<Record<string, string>> }

/**
 * Longest Authorization header read. Jetty's whole request header is 8 KiB; a name and password take far
 * less, and decoding stops here instead of at whatever a client sends.
 */
export const MAX_AUTHORIZATION_BYTES = 4096

export class BasicAuthenticator {
  readonly realm: string
  private readonly anyRole: boolean
  private readonly roles: ReadonlySet<string>
  private readonly skipExact: ReadonlySet<string>
  private readonly skipPrefixes: readonly string[]
  /** Per user: the SHA-256 of the password, compared in constant time with the SHA-256 of what is sent. */
  private readonly digests: ReadonlyMap<string, { digest: Buffer; roles: readonly string[] }>
  /** Compared against when the user is unknown, so that an unknown user takes as long as a wrong password. */
  private readonly decoy = createHash('sha256').update('skein-no-such-user').digest()
  private readonly challenge: Readonly<Record<string, string>>
  private readonly exempt: ((request: RequestHead) => boolean) | null

  constructor(opts: BasicAuthOptions) {
    if (/["\\\r\n]/.test(opts.realm) || opts.realm === '') throw new Error(`authentication.realm '${opts.realm}' must be non-empty, without quotes, backslashes or line breaks`)
    this.realm = opts.realm
    const roles = opts.roles ?? ['*']
    this.anyRole = roles.includes('*')
    this.roles = new Set(roles)
    const skip = opts.skipPaths ?? []
    this.skipExact = new Set(skip.filter((p) => !p.endsWith('/*')))
    this.skipPrefixes = skip.filter((p) => p.endsWith('/*')).map((p) => p.slice(0, -1))
    this.digests = new Map([...opts.users].map(([name, u]) => [name, { digest: sha256(u.password), roles: u.roles }]))
    this.challenge = { 'WWW-Authenticate': `Basic realm="${opts.realm}"` }
    this.exempt = opts.exempt ?? null
  }

  /** Whether a path is served without authentication (authentication.skip.paths). */
  skips(path: string): boolean {
    return this.skipExact.has(path) || this.skipPrefixes.some((p) => path.startsWith(p))
  }

  /**
   * The verdict for a request to path with this Authorization header ('' when there is none); head (the
   * method and headers) is asked only when the options name an exemption.
   */
  check(path: string, authorization: string, head?: RequestHead): AuthVerdict {
    if (this.skips(path)) return { kind: 'ok', principal: null }
    if (this.exempt !== null && head !== undefined && this.exempt(head)) return { kind: 'ok', principal: null }
    const credentials = parseBasic(authorization)
    if (credentials === null) return this.refuse(401, 'Unauthorized: this service needs HTTP BASIC credentials')
    const known = this.digests.get(credentials.user)
    const sent = sha256(credentials.password)
    // Always one comparison of equal lengths: the time says nothing about whether the user exists.
    const match = timingSafeEqual(sent, known?.digest ?? this.decoy) && known !== undefined
    if (!match) return this.refuse(401, 'Unauthorized: unknown user or wrong password')
    if (!this.anyRole && !known.roles.some((r) => this.roles.has(r))) {
      return { kind: 'refused', status: 403, message: `Forbidden: user '${credentials.user}' has none of the roles allowed here (authentication.roles)`, headers: {} }
    }
    return { kind: 'ok', principal: principal(credentials.user, known.roles, credentials.password) }
  }

  private refuse(status: 401, message: string): AuthVerdict {
    return { kind: 'refused', status, message, headers: this.challenge }
  }
}

function sha256(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest()
}

/** A principal whose password stays out of JSON (logs serialize objects with JSON). */
function principal(user: string, roles: readonly string[], password: string): HttpPrincipal {
  const p = { user, roles }
  Object.defineProperty(p, 'password', { value: password, enumerable: false })
  return p as HttpPrincipal
}

/** `Basic base64(user:password)` → the pair; null when absent, too long or malformed. */
export function parseBasic(header: string): { user: string; password: string } | null {
  if (header.length === 0 || header.length > MAX_AUTHORIZATION_BYTES) return null
  const m = /^basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i.exec(header)
  if (m === null) return null
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return null
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
}

/**
 * Users from text in Jetty's PropertyFileLoginModule format: one `user: password[,role...]` a line (`=`
 * also separates, as in any .properties file), `#` and `!` start comments. Jetty's obfuscated forms
 * (OBF:, MD5:, CRYPT:) are refused by name rather than taken as the literal password.
 */
export function parseUsersFile(text: string, source = 'the users file'): Map<string, HttpUser> {
  return parseUserLines(text, source, "'user: password[,role...]'", (value, where, user) => {
    const [password = '', ...roles] = value.split(',').map((s) => s.trim())
    if (password === '') throw new Error(`${where}: user '${user}' has no password`)
    const scheme = /^(OBF|MD5|CRYPT):/i.exec(password)
    if (scheme !== null) throw new Error(`${where}: ${scheme[1]!.toUpperCase()}: passwords are not supported (the REST Proxy needs the password itself to log in to Kafka as the user)`)
    return { password, roles: roles.filter((r) => r !== '') }
  })
}

/**
 * Users from a Java properties file of `user=password` (or `user: password`) lines, the format of Kafka
 * Connect's PropertyFileLoginModule: the whole value is the password (commas included), there are no
 * roles. `#` and `!` start comments.
 */
export function parsePasswordProperties(text: string, source = 'the password file'): Map<string, HttpUser> {
  return parseUserLines(text, source, "'user=password'", (value, where, user) => {
    const password = value.trim()
    if (password === '') throw new Error(`${where}: user '${user}' has no password`)
    return { password, roles: [] }
  })
}

/** The lines of a users file: `user<:|=>value`, blank lines and `#`/`!` comments skipped, each user once. */
function parseUserLines(text: string, source: string, expected: string, parseValue: (value: string, where: string, user: string) => HttpUser): Map<string, HttpUser> {
  const users = new Map<string, HttpUser>()
  const lines = text.split(/\r?\n/)
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim()
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue
    const where = `${source}, line ${i + 1}`
    const sep = line.search(/[:=]/)
    if (sep <= 0) throw new Error(`${where}: expected ${expected}`)
    const user = line.slice(0, sep).trim()
    if (users.has(user)) throw new Error(`${where}: user '${user}' is listed twice`)
    users.set(user, parseValue(line.slice(sep + 1), where, user))
  }
  return users
}

/** Reads a users file (see parseUsersFile). */
export function loadUsersFile(path: string): Map<string, HttpUser> {
  return parseUsersFile(readFileSync(path, 'utf8'), path)
}

/** The settings an authenticator is built from (config/client-http-auth.ts's HttpAuthSettings). */
export interface BasicAuthSettings {
  method: 'NONE' | 'BASIC'
  realm: string
  roles: readonly string[]
  skipPaths: readonly string[]
  usersFile: string | null
}

/** The authenticator the settings ask for, or null for authentication.method=NONE; throws on a bad users file. */
export function basicAuthenticatorFrom(s: BasicAuthSettings): BasicAuthenticator | null {
  if (s.method === 'NONE') return null
  if (s.usersFile === null || s.usersFile === '') throw new Error('authentication.method=BASIC needs authentication.users.file (the users, one `user: password[,role...]` a line)')
  return new BasicAuthenticator({ realm: s.realm, roles: s.roles, skipPaths: s.skipPaths, users: loadUsersFile(s.usersFile) })
}
