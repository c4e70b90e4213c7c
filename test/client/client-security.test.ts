// Skein's own client over secured listeners: SSL (with a client certificate on a listener that requires
// one), SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, and SASL_SSL; a wrong password gets
// SASL_AUTHENTICATION_FAILED; and the skein tools reach a SASL_SSL listener with --command-config
// (Kafka's client properties). Certificates are made by openssl at run time.
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin, Producer, type ClientSecurity } from '../../src/client/index.js'
import { hasOpenssl, makeTestCertificates, RawClient, startTestBroker, upsertScramUser, type TestBroker, type TestCertificates } from '../harness/index.js'
import { skein } from '../cli/helpers.js'

const OPENSSL = hasOpenssl()
let tb: TestBroker
let certs: TestCertificates
const ports = new Map<string, number>()
const JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";'

beforeAll(async () => {
  if (!OPENSSL) return
  certs = makeTestCertificates()
  tb = await startTestBroker([
    'listeners=PLAINTEXT://127.0.0.1:0,MTLS://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL',
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${certs.serverKeystore}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${certs.ca}`,
    'listener.name.mtls.ssl.client.auth=required',
    'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=${JAAS}`,
    `listener.name.sasl_ssl.plain.sasl.jaas.config=${JAAS}`,
  ])
  for (const e of tb.broker.endpoints) ports.set(e.listenerName, e.port)
  const raw = await RawClient.connect('127.0.0.1', ports.get('PLAINTEXT')!)
  await raw.createTopic('sec-client', 1)
  raw.close()
  await upsertScramUser('127.0.0.1', ports.get('PLAINTEXT')!, 'scram-user', 'scram-secret')
}, 60_000)

afterAll(async () => {
  await tb?.stop()
  certs?.cleanup()
})

async function roundTrip(listener: string, security: ClientSecurity, value: string): Promise<string[]> {
  const bootstrapServers = `127.0.0.1:${ports.get(listener)}`
  const producer = new Producer({ bootstrapServers, security, retries: 0 })
  await producer.connect()
  try {
    await producer.send({ topic: 'sec-client', partition: 0, value: Buffer.from(value) })
  } finally {
    await producer.close()
  }
  const admin = new Admin({ bootstrapServers, security, retries: 0 })
  try {
    return await admin.listTopics()
  } finally {
    await admin.close()
  }
}

describe.skipIf(!OPENSSL)('the Skein client over TLS and SASL', () => {
  it('SSL with a client certificate, SASL_PLAINTEXT with PLAIN and both SCRAMs, SASL_SSL', async () => {
    const ca = readFileSync(certs.ca)
    const mtls = { ca, cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) }
    expect(await roundTrip('MTLS', { tls: mtls }, 'mtls')).toContain('sec-client')
    expect(await roundTrip('SASL_PLAINTEXT', { sasl: { mechanism: 'PLAIN', username: 'alice', password: 'alice-secret' } }, 'plain')).toContain('sec-client')
    expect(await roundTrip('SASL_PLAINTEXT', { sasl: { mechanism: 'SCRAM-SHA-256', username: 'scram-user', password: 'scram-secret' } }, 's256')).toContain('sec-client')
    expect(await roundTrip('SASL_PLAINTEXT', { sasl: { mechanism: 'SCRAM-SHA-512', username: 'scram-user', password: 'scram-secret' } }, 's512')).toContain('sec-client')
    expect(await roundTrip('SASL_SSL', { tls: { ca }, sasl: { mechanism: 'SCRAM-SHA-512', username: 'scram-user', password: 'scram-secret' } }, 'sasl-ssl')).toContain('sec-client')
  })

  it('a wrong password or an unknown user is SASL_AUTHENTICATION_FAILED; no client certificate on MTLS fails to connect', async () => {
    const attempt = async (listener: string, security: ClientSecurity): Promise<string> => {
      const admin = new Admin({ bootstrapServers: `127.0.0.1:${ports.get(listener)}`, security, retries: 0, apiTimeoutMs: 5000 })
      try {
        await admin.listTopics()
        return 'connected'
      } catch (err) {
        return (err as Error).message
      } finally {
        await admin.close()
      }
    }
    expect(await attempt('SASL_PLAINTEXT', { sasl: { mechanism: 'SCRAM-SHA-256', username: 'scram-user', password: 'wrong' } })).toMatch(/SASL_AUTHENTICATION_FAILED/)
    expect(await attempt('SASL_PLAINTEXT', { sasl: { mechanism: 'PLAIN', username: 'nobody', password: 'x' } })).toMatch(/SASL_AUTHENTICATION_FAILED/)
    expect(await attempt('MTLS', { tls: { ca: readFileSync(certs.ca) } })).not.toBe('connected')
  })

  it('skein topics and skein produce reach a SASL_SSL listener with --command-config', async () => {
    const file = join(certs.dir, 'client.properties')
    writeFileSync(
      file,
      [
        'security.protocol=SASL_SSL',
        'sasl.mechanism=SCRAM-SHA-256',
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="scram-user" password="scram-secret";',
        'ssl.truststore.type=PEM',
        `ssl.truststore.location=${certs.ca}`,
      ].join('\n'),
    )
    const bootstrap = `127.0.0.1:${ports.get('SASL_SSL')}`
    const listed = await skein(['topics', '--bootstrap-server', bootstrap, '--command-config', file, '--list'])
    expect(listed.code, listed.stderr.toString()).toBe(0)
    expect(listed.out.split('\n')).toContain('sec-client')
    const produced = await skein(['produce', '--bootstrap-server', bootstrap, '--producer.config', file, '--topic', 'sec-client'], { input: 'from-cli\n' })
    expect(produced.code, produced.stderr.toString()).toBe(0)
    // Without the properties the same listener is unreachable.
    const refused = await skein(['topics', '--bootstrap-server', bootstrap, '--list', '--command-property', 'default.api.timeout.ms=3000'])
    expect(refused.code).not.toBe(0)
  })
})
