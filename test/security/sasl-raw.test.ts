// SASL on the wire without a client library: session expiry and re-authentication (KIP-368,
// connections.max.reauth.ms), and the SCRAM credential APIs' results and errors.
import { pbkdf2Sync, randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as AlterScram from '../../src/protocol/messages/51-alter-user-scram-credentials.gen.js'
import * as DescribeScram from '../../src/protocol/messages/50-describe-user-scram-credentials.gen.js'
import * as SaslAuthenticate from '../../src/protocol/messages/36-sasl-authenticate.gen.js'
import * as SaslHandshake from '../../src/protocol/messages/17-sasl-handshake.gen.js'
import { RawClient, startTestBroker, upsertScramUser, type TestBroker } from '../harness/index.js'

let tb: TestBroker
let saslPort: number

beforeAll(async () => {
  tb = await startTestBroker([
    'listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0',
    'sasl.enabled.mechanisms=PLAIN',
    'listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret" user_bob="bob-secret";',
    'listener.name.sasl_plaintext.connections.max.reauth.ms=1500',
  ])
  saslPort = tb.broker.endpointFor('SASL_PLAINTEXT').port
})

afterAll(async () => {
  await tb?.stop()
})

async function plain(raw: RawClient, user: string): Promise<SaslAuthenticate.SaslAuthenticateResponse> {
  const hs = await raw.call(17, 1, (w) => SaslHandshake.encodeSaslHandshakeRequest(w, { mechanism: 'PLAIN' }, 1), SaslHandshake.decodeSaslHandshakeResponse)
  expect(hs.errorCode).toBe(0)
  return raw.call(36, 1, (w) => SaslAuthenticate.encodeSaslAuthenticateRequest(w, { authBytes: Buffer.from(`\u0000${user}\u0000${user}-secret`) }, 1), SaslAuthenticate.decodeSaslAuthenticateResponse)
}

describe('SASL sessions (KIP-368)', () => {
  it('tells the session lifetime, closes an expired session at its next request, and extends it on re-authentication', async () => {
    const raw = await RawClient.connect('127.0.0.1', saslPort)
    const first = await plain(raw, 'alice')
    expect(first.errorCode).toBe(0)
    expect(first.sessionLifetimeMs).toBe(1500n)
    expect((await raw.metadata(null)).brokers).toHaveLength(1)
    await new Promise((r) => setTimeout(r, 1000))
    expect((await plain(raw, 'alice')).errorCode).toBe(0) // re-authenticated before expiry
    await new Promise((r) => setTimeout(r, 1000))
    expect((await raw.metadata(null)).brokers).toHaveLength(1) // 2 s after the first, 1 s after the second
    await new Promise((r) => setTimeout(r, 1000))
    await expect(raw.metadata(null)).rejects.toThrow(/closed/)

    // Re-authenticating as someone else fails and closes the connection.
    const other = await RawClient.connect('127.0.0.1', saslPort)
    expect((await plain(other, 'alice')).errorCode).toBe(0)
    const swap = await plain(other, 'bob')
    expect(swap.errorCode).toBe(58)
    expect(swap.errorMessage).toMatch(/Cannot change principals/)
    expect(await other.waitClosed(5000)).toBe(true)
  })
})

describe('SCRAM credential APIs', () => {
  const describeUsers = async (users: string[] | null): Promise<DescribeScram.DescribeUserScramCredentialsResponse> => {
    const raw = await RawClient.connect('127.0.0.1', tb.port)
    try {
      const req = DescribeScram.createDescribeUserScramCredentialsRequest({ users: users === null ? null : users.map((name) => ({ name })) })
      return await raw.call(50, 0, (w) => DescribeScram.encodeDescribeUserScramCredentialsRequest(w, req, 0), DescribeScram.decodeDescribeUserScramCredentialsResponse)
    } finally {
      raw.close()
    }
  }

  it('describes mechanisms and iterations, never keys, and answers Kafka\'s errors', async () => {
    expect((await upsertScramUser('127.0.0.1', tb.port, 'carol', 'pw', ['SCRAM-SHA-512'], 8192)).results[0]!.errorCode).toBe(0)
    const all = await describeUsers(null)
    expect(all.results).toEqual([expect.objectContaining({ user: 'carol', errorCode: 0, credentialInfos: [expect.objectContaining({ mechanism: 2, iterations: 8192 })] })])
    const named = await describeUsers(['carol', 'nobody', 'carol'])
    expect(named.results.find((r) => r.user === 'nobody')?.errorCode).toBe(91) // RESOURCE_NOT_FOUND
    expect(named.results.find((r) => r.user === 'carol')?.errorCode).toBe(92) // DUPLICATE_RESOURCE

    expect((await upsertScramUser('127.0.0.1', tb.port, 'dave', 'pw', ['SCRAM-SHA-256'], 1000)).results[0]!.errorCode).toBe(93) // UNACCEPTABLE_CREDENTIAL
    const raw = await RawClient.connect('127.0.0.1', tb.port)
    const salt = randomBytes(16)
    const req = AlterScram.createAlterUserScramCredentialsRequest({
      deletions: [{ name: 'erin', mechanism: 1 }, { name: 'carol', mechanism: 2 }],
      upsertions: [{ name: 'frank', mechanism: 3, iterations: 4096, salt, saltedPassword: pbkdf2Sync('x', salt, 4096, 32, 'sha256') }],
    })
    const res = await raw.call(51, 0, (w) => AlterScram.encodeAlterUserScramCredentialsRequest(w, req, 0), AlterScram.decodeAlterUserScramCredentialsResponse)
    raw.close()
    expect(Object.fromEntries(res.results.map((r) => [r.user, r.errorCode]))).toEqual({ erin: 91, carol: 0, frank: 33 })
    expect((await describeUsers(['carol'])).results[0]!.errorCode).toBe(91)
  })
})
