// Several listeners at once (PLAINTEXT, SSL, SSL with required client certificates, SASL_PLAINTEXT,
// SASL_SSL), certificates made by openssl at run time, and real clients over each: KafkaJS,
// @platformatic/kafka, librdkafka (kcat and confluent-kafka-python) and kafka-python (whose SASL uses
// SaslHandshake v0 and raw tokens). PLAIN users come from the listener's JAAS config, SCRAM users from
// AlterUserScramCredentials; a wrong password or an unknown user gets SASL_AUTHENTICATION_FAILED and a
// closed connection, and requests sent before authenticating close the connection.
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Kafka, logLevel } from 'kafkajs'
import { Producer as PlatformaticProducer, stringSerializers } from '@platformatic/kafka'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import * as SaslAuthenticate from '../../src/protocol/messages/36-sasl-authenticate.gen.js'
import * as SaslHandshake from '../../src/protocol/messages/17-sasl-handshake.gen.js'
import { hasKcat, hasOpenssl, hasPythonModule, makeTestCertificates, RawClient, run, runOk, startTestBroker, SYSTEM_PYTHON, upsertScramUser, type TestBroker, type TestCertificates } from '../harness/index.js'

const SCRIPT = join(dirname(fileURLToPath(import.meta.url)), 'python', 'secure_client.py')
const OPENSSL = hasOpenssl()
let tb: TestBroker
let certs: TestCertificates
const ports = new Map<string, number>()
const TOPIC = 'secured'

const PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'

beforeAll(async () => {
  if (!OPENSSL) return
  certs = makeTestCertificates()
  tb = await startTestBroker([
    'listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL',
    'ssl.keystore.type=PEM',
    `ssl.keystore.location=${certs.serverKeystore}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${certs.ca}`,
    // The MTLS listener: an encrypted key (ssl.key.password) and required client certificates.
    `listener.name.mtls.ssl.keystore.location=${certs.serverEncryptedKeystore}`,
    `listener.name.mtls.ssl.key.password=${certs.keyPassword}`,
    'listener.name.mtls.ssl.client.auth=required',
    'sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
    `listener.name.sasl_plaintext.plain.sasl.jaas.config=${PLAIN_JAAS}`,
    `listener.name.sasl_ssl.plain.sasl.jaas.config=${PLAIN_JAAS}`,
  ])
  for (const e of tb.broker.endpoints) ports.set(e.listenerName, e.port)
  const raw = await RawClient.connect('127.0.0.1', ports.get('PLAINTEXT')!)
  await raw.createTopic(TOPIC, 1)
  raw.close()
  const res = await upsertScramUser('127.0.0.1', ports.get('PLAINTEXT')!, 'scram-user', 'scram-secret')
  expect(res.results).toEqual([expect.objectContaining({ user: 'scram-user', errorCode: 0 })])
}, 60_000)

afterAll(async () => {
  await tb?.stop()
  certs?.cleanup()
})

const bootstrap = (listener: string): string => `127.0.0.1:${ports.get(listener)}`

async function kafkajsRoundTrip(listener: string, opts: { ssl?: object; sasl?: { mechanism: string; username: string; password: string } }, value: string): Promise<string[]> {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const kafka = new Kafka({ clientId: 'kjs-secure', brokers: [bootstrap(listener)], ssl: opts.ssl as any, sasl: opts.sasl as any, logLevel: logLevel.NOTHING, retry: { retries: 0 }, connectionTimeout: 5000 })
  const producer = kafka.producer()
  await producer.connect()
  try {
    const [meta] = await producer.send({ topic: TOPIC, messages: [{ value, partition: 0 }] })
    const admin = kafka.admin()
    await admin.connect()
    const offsets = await admin.fetchTopicOffsets(TOPIC)
    await admin.disconnect()
    expect(Number(offsets[0]!.high)).toBeGreaterThan(Number(meta!.baseOffset))
    return [meta!.baseOffset!]
  } finally {
    await producer.disconnect()
  }
}

describe.skipIf(!OPENSSL)('listeners with TLS and SASL', () => {
  it('binds every listener and advertises each one on its own connections', async () => {
    expect([...ports.keys()].sort()).toEqual(['MTLS', 'PLAINTEXT', 'SASL_PLAINTEXT', 'SASL_SSL', 'SSL'])
    expect(new Set(ports.values()).size).toBe(5)
  })

  it('KafkaJS over SSL, SASL_PLAINTEXT (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and SASL_SSL', async () => {
    const ssl = { ca: [readFileSync(certs.ca, 'utf8')] }
    expect(await kafkajsRoundTrip('SSL', { ssl }, 'kjs-ssl')).toHaveLength(1)
    expect(await kafkajsRoundTrip('SASL_PLAINTEXT', { sasl: { mechanism: 'plain', username: 'alice', password: 'alice-secret' } }, 'kjs-plain')).toHaveLength(1)
    expect(await kafkajsRoundTrip('SASL_PLAINTEXT', { sasl: { mechanism: 'scram-sha-256', username: 'scram-user', password: 'scram-secret' } }, 'kjs-256')).toHaveLength(1)
    expect(await kafkajsRoundTrip('SASL_PLAINTEXT', { sasl: { mechanism: 'scram-sha-512', username: 'scram-user', password: 'scram-secret' } }, 'kjs-512')).toHaveLength(1)
    expect(await kafkajsRoundTrip('SASL_SSL', { ssl, sasl: { mechanism: 'scram-sha-512', username: 'scram-user', password: 'scram-secret' } }, 'kjs-sasl-ssl')).toHaveLength(1)
    expect(
      await kafkajsRoundTrip('MTLS', { ssl: { ca: [readFileSync(certs.ca, 'utf8')], cert: readFileSync(certs.clientCert, 'utf8'), key: readFileSync(certs.clientKey, 'utf8') } }, 'kjs-mtls'),
    ).toHaveLength(1)
  })

  it('KafkaJS: a wrong password and an unknown user fail with SASL_AUTHENTICATION_FAILED', async () => {
    for (const sasl of [
      { mechanism: 'plain', username: 'alice', password: 'wrong' },
      { mechanism: 'plain', username: 'nobody', password: 'alice-secret' },
      { mechanism: 'scram-sha-256', username: 'scram-user', password: 'wrong' },
      { mechanism: 'scram-sha-512', username: 'nobody', password: 'x' },
    ]) {
      const err = await kafkajsRoundTrip('SASL_PLAINTEXT', { sasl }, 'never').then(
        () => null,
        (e: Error) => e,
      )
      expect(err, JSON.stringify(sasl)).not.toBeNull()
      expect(`${err!.name}: ${err!.message}`).toMatch(/SASL|Authentication failed/)
    }
  })

  it('@platformatic/kafka produces over SASL_SSL with SCRAM-SHA-256 and over SASL_PLAINTEXT with PLAIN', async () => {
    for (const [listener, sasl, tls] of [
      ['SASL_SSL', { mechanism: 'SCRAM-SHA-256', username: 'scram-user', password: 'scram-secret' }, { ca: readFileSync(certs.ca, 'utf8') }],
      ['SASL_PLAINTEXT', { mechanism: 'PLAIN', username: 'admin', password: 'admin-secret' }, undefined],
    ] as const) {
      const producer = new PlatformaticProducer({ clientId: 'pf-secure', bootstrapBrokers: [bootstrap(listener)], serializers: stringSerializers, sasl: { ...sasl }, tls, retries: 0 })
      try {
        const res = await producer.send({ messages: [{ topic: TOPIC, value: `pf-${listener}`, partition: 0 }] })
        expect(res.offsets?.[0]?.topic).toBe(TOPIC)
      } finally {
        await producer.close()
      }
    }
  })

  it('a raw connection: requests before authentication close it; a wrong password is answered, then closed', async () => {
    const port = ports.get('SASL_PLAINTEXT')!
    const early = await RawClient.connect('127.0.0.1', port)
    await expect(early.metadata(null)).rejects.toThrow(/closed/)
    expect(early.closed).toBe(true)

    const raw = await RawClient.connect('127.0.0.1', port)
    const hs = await raw.call(17, 1, (w) => SaslHandshake.encodeSaslHandshakeRequest(w, { mechanism: 'GSSAPI' }, 1), SaslHandshake.decodeSaslHandshakeResponse)
    expect(hs).toMatchObject({ errorCode: 33, mechanisms: ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] }) // UNSUPPORTED_SASL_MECHANISM
    expect(await raw.waitClosed(5000)).toBe(true)

    const bad = await RawClient.connect('127.0.0.1', port)
    expect(await bad.call(17, 1, (w) => SaslHandshake.encodeSaslHandshakeRequest(w, { mechanism: 'PLAIN' }, 1), SaslHandshake.decodeSaslHandshakeResponse)).toMatchObject({ errorCode: 0 })
    const auth = await bad.call(36, 2, (w) => SaslAuthenticate.encodeSaslAuthenticateRequest(w, { authBytes: Buffer.from('\u0000alice\u0000nope') }, 2), SaslAuthenticate.decodeSaslAuthenticateResponse)
    expect(auth.errorCode).toBe(58) // SASL_AUTHENTICATION_FAILED
    expect(auth.errorMessage).toBe('Authentication failed: Invalid username or password')
    expect(auth.errorMessage).not.toContain('nope')
    expect(await bad.waitClosed(5000)).toBe(true)

    // The pre-authentication frame cap (sasl.server.max.receive.size, 512 KiB).
    const big = await RawClient.connect('127.0.0.1', port)
    const head = Buffer.alloc(4)
    head.writeInt32BE(600 * 1024)
    await big.write(head)
    expect(await big.waitClosed(5000)).toBe(true)
  })

  it('SaslHandshake on a PLAINTEXT listener answers ILLEGAL_SASL_STATE and keeps the connection', async () => {
    const raw = await RawClient.connect('127.0.0.1', ports.get('PLAINTEXT')!)
    const hs = await raw.call(17, 1, (w) => SaslHandshake.encodeSaslHandshakeRequest(w, { mechanism: 'PLAIN' }, 1), SaslHandshake.decodeSaslHandshakeResponse)
    expect(hs.errorCode).toBe(34)
    expect((await raw.metadata(null)).brokers.length).toBe(1)
    raw.close()
  })

  describe.skipIf(!hasKcat())('librdkafka (kcat)', () => {
    const kcat = (listener: string, props: Record<string, string>, extra: string[], input?: string): ReturnType<typeof run> =>
      run('kcat', ['-b', bootstrap(listener), ...Object.entries(props).flatMap(([k, v]) => ['-X', `${k}=${v}`]), '-X', 'socket.timeout.ms=8000', '-m', '4', ...extra], { input, timeoutMs: 30000 })
    const produceConsume = async (listener: string, props: Record<string, string>, value: string): Promise<void> => {
      await runOk('kcat', ['-b', bootstrap(listener), ...Object.entries(props).flatMap(([k, v]) => ['-X', `${k}=${v}`]), '-P', '-t', TOPIC, '-p', '0'], { input: `${value}\n`, timeoutMs: 30000 })
      const r = await kcat(listener, props, ['-C', '-t', TOPIC, '-p', '0', '-o', '-1', '-e', '-f', '%s\\n'])
      expect(r.stdout.toString().trim().split('\n')).toContain(value)
    }

    it('SSL, mutual TLS, SASL_PLAINTEXT and SASL_SSL with each mechanism', async () => {
      await produceConsume('SSL', { 'security.protocol': 'ssl', 'ssl.ca.location': certs.ca }, 'kcat-ssl')
      await produceConsume('MTLS', { 'security.protocol': 'ssl', 'ssl.ca.location': certs.ca, 'ssl.certificate.location': certs.clientCert, 'ssl.key.location': certs.clientKey }, 'kcat-mtls')
      await produceConsume('SASL_PLAINTEXT', { 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'alice', 'sasl.password': 'alice-secret' }, 'kcat-plain')
      for (const m of ['SCRAM-SHA-256', 'SCRAM-SHA-512']) {
        await produceConsume('SASL_SSL', { 'security.protocol': 'sasl_ssl', 'ssl.ca.location': certs.ca, 'sasl.mechanisms': m, 'sasl.username': 'scram-user', 'sasl.password': 'scram-secret' }, `kcat-${m}`)
      }
    })

    it('mutual TLS refuses a client without a certificate and one signed by an unknown CA', async () => {
      // Each refused kcat waits out its metadata timeout (-m 4): both at once.
      const refused = await Promise.all([
        { 'security.protocol': 'ssl', 'ssl.ca.location': certs.ca } as Record<string, string>,
        { 'security.protocol': 'ssl', 'ssl.ca.location': certs.ca, 'ssl.certificate.location': certs.strangerCert, 'ssl.key.location': certs.strangerKey },
      ].map((props) => kcat('MTLS', props, ['-L'])))
      for (const r of refused) expect(r.code).not.toBe(0)
    })

    it('a wrong SCRAM password reports an authentication failure', async () => {
      const r = await kcat('SASL_PLAINTEXT', { 'security.protocol': 'sasl_plaintext', 'sasl.mechanisms': 'SCRAM-SHA-256', 'sasl.username': 'scram-user', 'sasl.password': 'wrong' }, ['-L'])
      expect(r.code).not.toBe(0)
      expect(String(r.stderr)).toMatch(/Authentication failed|SASL authentication error/i)
    })
  })

  /* eslint-disable @typescript-eslint/no-explicit-any */
  const py = async (client: string, listener: string, security: Record<string, unknown>, value: string): Promise<any> => {
    const r = await runOk(SYSTEM_PYTHON, [SCRIPT], { input: JSON.stringify({ client, bootstrap: bootstrap(listener), topic: TOPIC, value, security }), timeoutMs: 60000 })
    return JSON.parse(r.stdout.toString())
  }

  describe.skipIf(!hasPythonModule('kafka'))('kafka-python (SaslHandshake v0, raw tokens)', () => {
    it('SSL, mutual TLS, PLAIN and SCRAM over SASL_PLAINTEXT and SASL_SSL', async () => {
      expect(await py('kafka-python', 'SSL', { security_protocol: 'SSL', ssl_cafile: certs.ca }, 'kp-ssl')).toMatchObject({ ok: true, values: ['kp-ssl'] })
      expect(await py('kafka-python', 'MTLS', { security_protocol: 'SSL', ssl_cafile: certs.ca, ssl_certfile: certs.clientCert, ssl_keyfile: certs.clientKey }, 'kp-mtls')).toMatchObject({ ok: true, values: ['kp-mtls'] })
      expect(await py('kafka-python', 'SASL_PLAINTEXT', { security_protocol: 'SASL_PLAINTEXT', sasl_mechanism: 'PLAIN', sasl_plain_username: 'alice', sasl_plain_password: 'alice-secret' }, 'kp-plain')).toMatchObject({ ok: true, values: ['kp-plain'] })
      for (const m of ['SCRAM-SHA-256', 'SCRAM-SHA-512']) {
        expect(await py('kafka-python', 'SASL_SSL', { security_protocol: 'SASL_SSL', ssl_cafile: certs.ca, sasl_mechanism: m, sasl_plain_username: 'scram-user', sasl_plain_password: 'scram-secret' }, `kp-${m}`)).toMatchObject({ ok: true, values: [`kp-${m}`] })
      }
    })

    it('a wrong password fails authentication', async () => {
      const res = await py('kafka-python', 'SASL_PLAINTEXT', { security_protocol: 'SASL_PLAINTEXT', sasl_mechanism: 'PLAIN', sasl_plain_username: 'alice', sasl_plain_password: 'bad' }, 'never')
      expect(res.ok).toBe(false)
      expect(res.error).toMatch(/Authentication|NoBrokersAvailable|KafkaTimeoutError/)
    })
  })

  describe.skipIf(!hasPythonModule('confluent_kafka'))('confluent-kafka-python', () => {
    it('SASL_SSL with SCRAM-SHA-512 and mutual TLS', async () => {
      expect(await py('confluent', 'SASL_SSL', { 'security.protocol': 'SASL_SSL', 'ssl.ca.location': certs.ca, 'sasl.mechanisms': 'SCRAM-SHA-512', 'sasl.username': 'scram-user', 'sasl.password': 'scram-secret' }, 'ck-512')).toMatchObject({ ok: true, values: ['ck-512'] })
      expect(await py('confluent', 'MTLS', { 'security.protocol': 'SSL', 'ssl.ca.location': certs.ca, 'ssl.certificate.location': certs.clientCert, 'ssl.key.location': certs.clientKey }, 'ck-mtls')).toMatchObject({ ok: true, values: ['ck-mtls'] })
    })

    it('an unknown SCRAM user fails authentication', async () => {
      const res = await py('confluent', 'SASL_PLAINTEXT', { 'security.protocol': 'SASL_PLAINTEXT', 'sasl.mechanisms': 'SCRAM-SHA-256', 'sasl.username': 'ghost', 'sasl.password': 'x' }, 'never')
      expect(res.ok).toBe(false)
      expect(res.error).toMatch(/Authentication failed/i)
    })
  })
})
