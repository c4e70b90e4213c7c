// Dynamic SSL reconfiguration (Kafka's): IncrementalAlterConfigs of
// listener.name.<listener>.ssl.keystore.location on the broker resource makes new connections of that
// listener use the new certificate at once, without a restart; a key store that cannot be used is refused
// with INVALID_REQUEST and the listener keeps its certificate. The replacement certificate is signed by
// another CA made by openssl in this test, so a client tells the two apart by the CA it trusts.
import { execFileSync } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Admin } from '../../src/client/index.js'
import { hasOpenssl, makeTestCertificates, startTestBroker, type TestBroker, type TestCertificates } from '../harness/index.js'

const OPENSSL = hasOpenssl()
let tb: TestBroker
let certs: TestCertificates
let sslPort = 0
let plainBootstrap = ''

beforeAll(async () => {
  if (!OPENSSL) return
  certs = makeTestCertificates()
  tb = await startTestBroker([
    'listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL',
    'ssl.keystore.type=PEM',
    `listener.name.ssl.ssl.keystore.location=${certs.serverKeystore}`,
  ])
  sslPort = tb.broker.endpointFor('SSL').port
  plainBootstrap = `127.0.0.1:${tb.broker.endpointFor('PLAINTEXT').port}`
}, 60_000)

afterAll(async () => {
  await tb?.stop()
  certs?.cleanup()
})

/** A server key store signed by the test's second CA (other-ca.pem), made with openssl. */
function replacementKeystore(): string {
  const run = (args: string[]): void => {
    execFileSync('openssl', args, { cwd: certs.dir, stdio: ['ignore', 'ignore', 'pipe'] })
  }
  run(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'next.key'])
  run(['req', '-new', '-key', 'next.key', '-subj', '/CN=localhost', '-out', 'next.csr'])
  writeFileSync(join(certs.dir, 'next.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  run(['x509', '-req', '-in', 'next.csr', '-CA', 'other-ca.pem', '-CAkey', 'other-ca.key', '-CAcreateserial', '-days', '2', '-extfile', 'next.ext', '-out', 'next.crt'])
  const path = join(certs.dir, 'next-keystore.pem')
  writeFileSync(path, Buffer.concat([readFileSync(join(certs.dir, 'next.key')), readFileSync(join(certs.dir, 'next.crt'))]))
  return path
}

async function connectsTrusting(caFile: string): Promise<boolean> {
  const admin = new Admin({ bootstrapServers: `127.0.0.1:${sslPort}`, security: { tls: { ca: readFileSync(caFile) } }, retries: 0, apiTimeoutMs: 5000 })
  try {
    await admin.listTopics()
    return true
  } catch {
    return false
  } finally {
    await admin.close()
  }
}

describe.skipIf(!OPENSSL)('certificate reload without restart', () => {
  it('AlterConfigs of listener.name.ssl.ssl.keystore.location serves the new certificate to new connections; a bad store is refused', async () => {
    const otherCa = join(certs.dir, 'other-ca.pem')
    expect(await connectsTrusting(certs.ca)).toBe(true)
    expect(await connectsTrusting(otherCa)).toBe(false)

    const admin = new Admin({ bootstrapServers: plainBootstrap, retries: 0 })
    try {
      const broker = { type: 'broker' as const, name: String(tb.broker.nodeId) }
      await admin.alterConfigs(broker, [{ name: 'listener.name.ssl.ssl.keystore.location', op: 'set', value: replacementKeystore() }])
      expect(await connectsTrusting(otherCa)).toBe(true)
      expect(await connectsTrusting(certs.ca)).toBe(false)

      // A key store that cannot be read: INVALID_REQUEST, and the listener keeps the certificate it has.
      await expect(admin.alterConfigs(broker, [{ name: 'listener.name.ssl.ssl.keystore.location', op: 'set', value: join(certs.dir, 'missing.pem') }])).rejects.toThrow(/INVALID_REQUEST|cannot/)
      expect(await connectsTrusting(otherCa)).toBe(true)
    } finally {
      await admin.close()
    }
  })
})
