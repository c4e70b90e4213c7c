// HTTP BASIC authentication in the HTTP adapter (issue 31), over real sockets: no credentials or wrong
// ones get 401 with the realm's challenge, before any route runs (routes, the 404/405 fallback, static
// assets and WebSocket upgrades alike); a user without an allowed role gets 403; handlers see the user
// and roles; authentication.skip.paths stay open; the users file is Jetty's PropertyFileLoginModule format.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { BasicAuthenticator, basicAuthenticatorFrom, createHttpServer, MAX_AUTHORIZATION_BYTES, parseBasic, parseUsersFile, type HttpServer } from '../../src/http/index.js'
import { TestWebSocket } from '../harness/ws-client.js'

const servers: HttpServer[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
})

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

const USERS = parseUsersFile(['# users of the test realm', 'alice: alice-secret,admin,developer', 'bob = bob-secret, viewer', 'carol: carol-secret', ''].join('\n'))

async function start(roles: string[] = ['*'], skipPaths: string[] = []): Promise<{ base: string; port: number; seen: unknown[] }> {
  const server = await createHttpServer({ authenticator: new BasicAuthenticator({ realm: 'KafkaRest', roles, skipPaths, users: USERS }) })
  servers.push(server)
  const seen: unknown[] = []
  server.route('GET', '/whoami', (req, res) => res.send(200, { 'Content-Type': 'application/json' }, JSON.stringify(req.principal)))
  server.route('POST', '/topics/:topic', (req, res) => {
    seen.push(req.body.toString())
    res.send(200, null, 'ok')
  })
  server.route('GET', '/health', (req, res) => res.send(200, null, req.principal === null ? 'open' : 'authenticated'))
  server.ws('/ws', { upgrade: (req) => req.principal?.user ?? 'nobody', open: (ws) => ws.send(String(ws.data)) })
  const l = await server.listen('http://127.0.0.1:0')
  return { base: l.url, port: l.port, seen }
}

describe('HTTP BASIC authentication', () => {
  it('parses Authorization headers and refuses malformed or oversized ones', () => {
    expect(parseBasic(basic('alice', 'a:b'))).toEqual({ user: 'alice', password: 'a:b' })
    expect(parseBasic('basic ' + Buffer.from('u:').toString('base64'))).toEqual({ user: 'u', password: '' })
    expect(parseBasic('')).toBeNull()
    expect(parseBasic('Bearer abc')).toBeNull()
    expect(parseBasic('Basic !!!')).toBeNull()
    expect(parseBasic(`Basic ${Buffer.from('no-colon').toString('base64')}`)).toBeNull()
    expect(parseBasic(basic('u', 'x'.repeat(MAX_AUTHORIZATION_BYTES)))).toBeNull()
  })

  it("reads Jetty's PropertyFileLoginModule format and refuses what it cannot use", () => {
    expect(USERS.get('alice')).toEqual({ password: 'alice-secret', roles: ['admin', 'developer'] })
    expect(USERS.get('bob')).toEqual({ password: 'bob-secret', roles: ['viewer'] })
    expect(USERS.get('carol')).toEqual({ password: 'carol-secret', roles: [] })
    expect(() => parseUsersFile('dave: OBF:1v2j1uum1xtv')).toThrow(/line 1: OBF: passwords are not supported/)
    expect(() => parseUsersFile('x: a\nx: b')).toThrow(/line 2: user 'x' is listed twice/)
    expect(() => parseUsersFile('nopassword:')).toThrow(/has no password/)
    expect(() => parseUsersFile('just-a-name')).toThrow(/expected/)
    expect(() => new BasicAuthenticator({ realm: 'a"b', users: USERS })).toThrow(/realm/)
  })

  it('builds from settings: NONE is no authenticator, BASIC needs a users file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'skein-auth-'))
    const file = join(dir, 'users.properties')
    writeFileSync(file, 'alice: pw,admin\n')
    expect(basicAuthenticatorFrom({ method: 'NONE', realm: 'r', roles: ['*'], skipPaths: [], usersFile: null })).toBeNull()
    expect(() => basicAuthenticatorFrom({ method: 'BASIC', realm: 'r', roles: ['*'], skipPaths: [], usersFile: null })).toThrow(/authentication.users.file/)
    const a = basicAuthenticatorFrom({ method: 'BASIC', realm: 'r', roles: ['*'], skipPaths: [], usersFile: file })!
    expect(a.check('/x', basic('alice', 'pw'))).toMatchObject({ kind: 'ok', principal: { user: 'alice', roles: ['admin'] } })
  })

  it('answers 401 with the realm to requests without valid credentials, before any route or body', async () => {
    const { base, seen } = await start()
    for (const authorization of [undefined, basic('alice', 'wrong'), basic('mallory', 'alice-secret'), 'Basic', `Basic ${'A'.repeat(6000)}`]) {
      const headers: Record<string, string> = authorization === undefined ? {} : { Authorization: authorization }
      for (const [method, path] of [['GET', '/whoami'], ['POST', '/topics/t'], ['GET', '/nowhere'], ['DELETE', '/whoami']] as const) {
        const r = await fetch(`${base}${path}`, { method, headers, body: method === 'POST' ? 'payload' : undefined })
        expect(r.status, `${method} ${path} with ${authorization?.slice(0, 20)}`).toBe(401)
        expect(r.headers.get('www-authenticate')).toBe('Basic realm="KafkaRest"')
        const text = await r.text()
        expect(text).not.toContain('alice-secret')
      }
    }
    expect(seen).toEqual([])
    // The unknown path answers 404 only once authenticated: a caller without credentials learns nothing.
    expect((await fetch(`${base}/nowhere`, { headers: { Authorization: basic('alice', 'alice-secret') } })).status).toBe(404)
  })

  it('hands the user and roles to handlers, never the password in JSON', async () => {
    const { base, seen } = await start()
    const r = await fetch(`${base}/whoami`, { headers: { Authorization: basic('alice', 'alice-secret') } })
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({ user: 'alice', roles: ['admin', 'developer'] })
    const p = await fetch(`${base}/topics/t`, { method: 'POST', headers: { Authorization: basic('bob', 'bob-secret') }, body: 'hello' })
    expect(p.status).toBe(200)
    expect(seen).toEqual(['hello'])
  })

  it('lets in only users holding one of authentication.roles (403 for the others)', async () => {
    const { base } = await start(['admin', 'viewer'])
    expect((await fetch(`${base}/whoami`, { headers: { Authorization: basic('alice', 'alice-secret') } })).status).toBe(200)
    expect((await fetch(`${base}/whoami`, { headers: { Authorization: basic('bob', 'bob-secret') } })).status).toBe(200)
    const r = await fetch(`${base}/whoami`, { headers: { Authorization: basic('carol', 'carol-secret') } })
    expect(r.status).toBe(403)
    expect(await r.text()).toMatch(/carol.*authentication.roles/)
  })

  it('serves authentication.skip.paths without credentials', async () => {
    const { base } = await start(['*'], ['/health'])
    const r = await fetch(`${base}/health`)
    expect(r.status).toBe(200)
    expect(await r.text()).toBe('open')
    expect((await fetch(`${base}/whoami`)).status).toBe(401)
  })

  it('authenticates WebSocket upgrades: none without credentials, the user reaches the upgrade with them', async () => {
    const { port } = await start()
    await expect(TestWebSocket.open(port, '/ws')).rejects.toThrow(/401/)
    await expect(TestWebSocket.open(port, '/ws', { Authorization: basic('bob', 'nope') })).rejects.toThrow(/401/)
    const ws = await TestWebSocket.open(port, '/ws', { Authorization: basic('bob', 'bob-secret') })
    expect((await ws.waitFor(1))[0]!.data.toString()).toBe('bob')
    ws.close()
  })
})
