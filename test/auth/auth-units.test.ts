// The pure parts of authentication: ssl.principal.mapping.rules, RFC 2253 subjects, the JAAS line,
// PLAIN's message rules and SCRAM against RFC 7677's test vector.
import { createHash, createHmac, pbkdf2Sync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { mapSubject, parsePrincipalMappingRules, rfc2253Subject } from '../../src/auth/principal.js'
import { parseJaasConfig } from '../../src/auth/sasl/jaas.js'
import { PlainServer, plainUsers } from '../../src/auth/sasl/plain.js'
import { credentialFromPassword, formatScramCredential, parseScramCredential, ScramServer } from '../../src/auth/sasl/scram.js'

describe('principals', () => {
  it('writes a subject most specific first and maps it by rules, as Kafka does', () => {
    const subject = rfc2253Subject('O=Skein\nOU=dev\nCN=alice')
    expect(subject).toBe('CN=alice,OU=dev,O=Skein')
    expect(mapSubject(parsePrincipalMappingRules('DEFAULT'), subject)).toBe(subject)
    const rules = parsePrincipalMappingRules('RULE:^CN=(.*?),OU=(.*?),O=(.*)$/$1@$2/U,DEFAULT')
    expect(mapSubject(rules, subject)).toBe('ALICE@DEV')
    expect(mapSubject(rules, 'CN=x')).toBe('CN=x')
    expect(rfc2253Subject('CN=a,b')).toBe('CN=a\\,b')
    expect(() => parsePrincipalMappingRules('RULE:nope')).toThrow(/invalid/)
  })
})

describe('JAAS and PLAIN', () => {
  it('parses the one-line JAAS entry and reads user_ options', () => {
    const e = parseJaasConfig('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a;b" user_admin="a;b" user_alice=alice-secret;')
    expect(e.loginModule).toBe('org.apache.kafka.common.security.plain.PlainLoginModule')
    expect([...plainUsers(e.options)]).toEqual([['admin', 'a;b'], ['alice', 'alice-secret']])
    expect(() => parseJaasConfig('Module required user_a="x"')).toThrow(/must end with ;/)
    expect(() => parseJaasConfig('Module sometimes;')).toThrow(/control flag/)
  })

  it('refuses impersonation, empty fields and wrong passwords without echoing them', () => {
    const users = new Map([['alice', 'pw']])
    expect(new PlainServer(users).evaluate(Buffer.from('\u0000alice\u0000pw'))).toMatchObject({ complete: true, user: 'alice' })
    expect(new PlainServer(users).evaluate(Buffer.from('alice\u0000alice\u0000pw'))).toMatchObject({ user: 'alice' })
    expect(() => new PlainServer(users).evaluate(Buffer.from('bob\u0000alice\u0000pw'))).toThrow(/authorization id/)
    expect(() => new PlainServer(users).evaluate(Buffer.from('\u0000alice\u0000'))).toThrow(/Password must not be empty/)
    expect(() => new PlainServer(users).evaluate(Buffer.from('\u0000alice\u0000secret-guess'))).toThrow(/^Authentication failed: Invalid username or password$/)
  })
})

describe('SCRAM', () => {
  it('completes RFC 7677 SCRAM-SHA-256 exchange with its test vector', async () => {
    // RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations.
    const salt = Buffer.from('W22ZaJ0SNY7soEsUEjb6gQ==', 'base64')
    const cred = credentialFromPassword('SCRAM-SHA-256', 'pencil', 4096, salt)
    const server = new ScramServer('SCRAM-SHA-256', async (user) => (user === 'user' ? cred : undefined))
    const first = await server.evaluate(Buffer.from('n,,n=user,r=rOprNGfwEbeRWgbNEkqO'))
    const serverFirst = first.challenge.toString()
    expect(serverFirst).toMatch(/^r=rOprNGfwEbeRWgbNEkqO[^,]+,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096$/)
    // The client's side, computed here independently.
    const nonce = /^r=([^,]+)/.exec(serverFirst)![1]!
    const salted = pbkdf2Sync('pencil', salt, 4096, 32, 'sha256')
    const clientKey = createHmac('sha256', salted).update('Client Key').digest()
    const withoutProof = `c=biws,r=${nonce}`
    const authMessage = `n=user,r=rOprNGfwEbeRWgbNEkqO,${serverFirst},${withoutProof}`
    const signature = createHmac('sha256', createHash('sha256').update(clientKey).digest()).update(authMessage).digest()
    const proof = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!))
    const final = await server.evaluate(Buffer.from(`${withoutProof},p=${proof.toString('base64')}`))
    const serverKey = createHmac('sha256', salted).update('Server Key').digest()
    expect(final).toMatchObject({ complete: true, user: 'user' })
    expect(final.challenge.toString()).toBe(`v=${createHmac('sha256', serverKey).update(authMessage).digest('base64')}`)

    const wrong = new ScramServer('SCRAM-SHA-256', async () => cred)
    await wrong.evaluate(Buffer.from('n,,n=user,r=abc'))
    await expect(wrong.evaluate(Buffer.from(`c=biws,r=${nonce},p=${proof.toString('base64')}`))).rejects.toThrow(/nonce/)
    await expect(new ScramServer('SCRAM-SHA-256', async () => undefined).evaluate(Buffer.from('n,,n=ghost,r=abc'))).rejects.toThrow(/Invalid user credentials/)
    await expect(new ScramServer('SCRAM-SHA-256', async () => cred).evaluate(Buffer.from('p=tls-unique,,n=user,r=abc'))).rejects.toThrow(/channel binding/)
  })

  it('stores credentials in Kafka\'s text form', () => {
    const c = credentialFromPassword('SCRAM-SHA-512', 'pw', 8192)
    const text = formatScramCredential(c)
    expect(text).toMatch(/^salt=[^,]+,stored_key=[^,]+,server_key=[^,]+,iterations=8192$/)
    expect(parseScramCredential(text)).toEqual(c)
    expect(parseScramCredential('garbage')).toBeUndefined()
  })
})

describe('the ACL authorizer', () => {
  it('follows Kafka: super users, deny wins, implied Describe, prefixed and wildcard patterns, no-ACL default', async () => {
    const { AclAuthorizer, AclOperation: Op, AclPermission: P, PatternType: Pt, ResourceType: R } = await import('../../src/auth/acl.js')
    const a = new AclAuthorizer({ superUsers: ['User:admin'], allowEveryoneIfNoAclFound: false })
    const bind = (name: string, patternType: number, principal: string, operation: number, permission: number, host = '*'): import('../../src/domain/acl.js').AclBinding => ({ resourceType: R.TOPIC, resourceName: name, patternType, principal, host, operation, permission })
    a.setBindings([
      bind('orders', Pt.LITERAL, 'User:alice', Op.READ, P.ALLOW),
      bind('log-', Pt.PREFIXED, 'User:*', Op.WRITE, P.ALLOW),
      bind('log-secret', Pt.LITERAL, 'User:bob', Op.ALL, P.DENY),
      bind('*', Pt.LITERAL, 'User:carol', Op.DESCRIBE, P.ALLOW, '10.0.0.1'),
    ])
    expect(a.authorize('User:admin', '1.2.3.4', Op.DELETE, R.TOPIC, 'anything')).toBe(true)
    expect(a.authorize('User:alice', 'h', Op.READ, R.TOPIC, 'orders')).toBe(true)
    expect(a.authorize('User:alice', 'h', Op.DESCRIBE, R.TOPIC, 'orders')).toBe(true) // implied by Read
    expect(a.authorize('User:alice', 'h', Op.WRITE, R.TOPIC, 'orders')).toBe(false)
    expect(a.authorize('User:bob', 'h', Op.WRITE, R.TOPIC, 'log-app')).toBe(true)
    expect(a.authorize('User:bob', 'h', Op.WRITE, R.TOPIC, 'log-secret')).toBe(false) // deny wins
    expect(a.authorize('User:carol', '10.0.0.1', Op.DESCRIBE, R.TOPIC, 'orders')).toBe(true)
    expect(a.authorize('User:carol', '10.0.0.2', Op.DESCRIBE, R.TOPIC, 'orders')).toBe(false)
    // A resource no ACL matches: allow.everyone.if.no.acl.found decides.
    expect(a.authorize('User:x', 'h', Op.READ, R.GROUP, 'g')).toBe(false)
    const open = new AclAuthorizer({ superUsers: [], allowEveryoneIfNoAclFound: true })
    expect(open.authorize('User:x', 'h', Op.READ, R.GROUP, 'g')).toBe(true)
  })

  it('caches decisions and forgets them when the ACLs change', async () => {
    const { AclAuthorizer, AclOperation: Op, AclPermission: P, PatternType: Pt, ResourceType: R } = await import('../../src/auth/acl.js')
    const a = new AclAuthorizer({ superUsers: [], allowEveryoneIfNoAclFound: false })
    const allowAlice = { resourceType: R.TOPIC, resourceName: 't', patternType: Pt.LITERAL, principal: 'User:alice', host: '*', operation: Op.WRITE, permission: P.ALLOW }
    a.setBindings([allowAlice])
    expect(a.authorize('User:alice', 'h', Op.WRITE, R.TOPIC, 't')).toBe(true)
    expect(a.authorize('User:alice', 'h', Op.WRITE, R.TOPIC, 't')).toBe(true) // from the cache
    a.setBindings([allowAlice, { ...allowAlice, permission: P.DENY }])
    expect(a.authorize('User:alice', 'h', Op.WRITE, R.TOPIC, 't')).toBe(false)
    a.setBindings([])
    expect(a.authorize('User:alice', 'h', Op.WRITE, R.TOPIC, 't')).toBe(false)
    // Keys do not run into each other: a principal or topic name with the separator inside stays apart.
    a.setBindings([{ ...allowAlice, resourceName: 'x' }])
    expect(a.authorize('User:alice', 'h', Op.WRITE, R.TOPIC, 'x')).toBe(true)
    expect(a.authorize('User:alice/1/h', 'x', Op.WRITE, R.TOPIC, '')).toBe(false)
    expect(a.authorize('User:alic', 'e', Op.WRITE, R.TOPIC, 'x')).toBe(false)
  })
})
