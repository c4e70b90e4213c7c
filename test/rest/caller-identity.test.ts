// The per-user client pool behind "the caller is the principal" (issue 31): one admin client and
// producer per user, reused while the password is the same, replaced when it changes, at most
// max.users held (the least recently used idle user's closed for a new one; 429 when all are busy), and
// closed after idle.ms unused. The clients connect lazily, so no broker is needed to count them.
import { afterEach, describe, expect, it } from 'vitest'
import { CallerClientPool, currentCaller } from '../../src/rest/caller-identity.js'
import { RestError } from '../../src/rest/errors.js'
import { silentLogger } from '../../src/observability/logger.js'

const pools: CallerClientPool[] = []
afterEach(async () => {
  for (const p of pools.splice(0)) await p.close()
})

function pool(maxUsers: number, idleMs = 60_000): CallerClientPool {
  const p = new CallerClientPool({ mechanism: 'SCRAM-SHA-512', bootstrapServers: null, securityProtocol: 'SASL_PLAINTEXT', maxUsers, idleMs }, ['127.0.0.1:1'], {}, silentLogger())
  pools.push(p)
  return p
}

const user = (name: string, password = `${name}-pw`) => ({ user: name, roles: [], password })

describe('CallerClientPool', () => {
  it("gives each user their own clients, logging in as them, and the same ones while the password is the same", () => {
    const p = pool(10)
    const a = p.clientsFor(user('alice'))
    expect(a.security.sasl).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'alice', password: 'alice-pw' })
    expect(p.clientsFor(user('alice'))).toBe(a)
    const b = p.clientsFor(user('bob'))
    expect(b.admin).not.toBe(a.admin)
    // A changed password (the user's HTTP and Kafka password changed): new clients with it.
    const a2 = p.clientsFor(user('alice', 'new-pw'))
    expect(a2).not.toBe(a)
    expect(a2.security.sasl?.password).toBe('new-pw')
    expect(p.size).toBe(2)
  })

  it('runs a handler with the caller as currentCaller, across awaits, and none outside', async () => {
    const p = pool(10)
    expect(currentCaller()).toBeUndefined()
    const seen = await p.run(user('carol'), async () => {
      await new Promise((r) => setTimeout(r, 5))
      return currentCaller()?.user
    })
    expect(seen).toBe('carol')
    expect(currentCaller()).toBeUndefined()
    expect(await p.run(null, async () => currentCaller())).toBeUndefined()
  })

  it('holds at most max.users: the least recently used idle user goes, and 429 when every user is busy', async () => {
    const p = pool(2)
    const u1 = p.clientsFor(user('u1'))
    const u2 = p.clientsFor(user('u2'))
    p.clientsFor(user('u1')) // u1 used last: u2 is the one to go
    const u3 = p.clientsFor(user('u3'))
    expect(p.size).toBe(2)
    expect(p.clientsFor(user('u1'))).toBe(u1)
    expect(p.clientsFor(user('u3'))).toBe(u3)
    expect(u2.admin).not.toBe(u1.admin)
    // Two requests in flight hold both users: a third user cannot be served now.
    let release!: () => void
    const busy = new Promise<void>((r) => (release = r))
    const r1 = p.run(user('u1'), () => busy)
    const r3 = p.run(user('u3'), () => busy)
    let refused: unknown
    try {
      p.clientsFor(user('u4'))
    } catch (e) {
      refused = e
    }
    expect(refused).toBeInstanceOf(RestError)
    expect(refused).toMatchObject({ status: 429, errorCode: 42901 })
    release()
    await Promise.all([r1, r3])
    expect(p.clientsFor(user('u4')).user).toBe('u4')
    expect(p.size).toBe(2)
  })

  it('closes the clients of users idle for idle.ms, never those of a request in flight', async () => {
    const p = pool(10, 1000)
    p.clientsFor(user('idle'))
    let release!: () => void
    const inFlight = p.run(user('busy'), () => new Promise<void>((r) => (release = r)))
    await new Promise((r) => setTimeout(r, 1600))
    expect(p.size).toBe(1)
    release()
    await inFlight
    await new Promise((r) => setTimeout(r, 1600))
    expect(p.size).toBe(0)
  })
})
