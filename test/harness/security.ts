// TLS and SASL material for tests: a throwaway CA, a server certificate for 127.0.0.1/localhost and
// client certificates, made with Debian's openssl at run time in a temp dir (nothing is committed), and
// SCRAM credentials created through AlterUserScramCredentials on a real connection.
import { execFileSync } from 'node:child_process'
import { pbkdf2Sync, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as AlterScram from '../../src/protocol/messages/51-alter-user-scram-credentials.gen.js'
import { RawClient } from './raw-client.js'

export interface TestCertificates {
  dir: string
  /** The CA certificate (PEM file path). */
  ca: string
  /** Server key + certificate chain in one PEM file (ssl.keystore.type=PEM, ssl.keystore.location). */
  serverKeystore: string
  /** The server's private key encrypted as PKCS#8 with `keyPassword`, and its certificate, in one file. */
  serverEncryptedKeystore: string
  keyPassword: string
  /** A client certificate signed by the CA (subject CN=alice,OU=dev,O=Skein) and its key. */
  clientCert: string
  clientKey: string
  /** A client certificate from another CA that the broker does not trust. */
  strangerCert: string
  strangerKey: string
  cleanup(): void
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] })
}

function ecKey(cwd: string, out: string): void {
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', out], cwd)
}

function signed(cwd: string, name: string, subject: string, caName: string, ext: string | null): void {
  ecKey(cwd, `${name}.key`)
  openssl(['req', '-new', '-key', `${name}.key`, '-subj', subject, '-out', `${name}.csr`], cwd)
  const args = ['x509', '-req', '-in', `${name}.csr`, '-CA', `${caName}.pem`, '-CAkey', `${caName}.key`, '-CAcreateserial', '-days', '2', '-out', `${name}.crt`]
  if (ext !== null) {
    writeFileSync(join(cwd, `${name}.ext`), ext)
    args.push('-extfile', `${name}.ext`)
  }
  openssl(args, cwd)
}

export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** A CA, a server certificate (SAN IP:127.0.0.1, DNS:localhost) and client certificates, in a new temp dir. */
export function makeTestCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'skein-tls-'))
  for (const ca of ['ca', 'other-ca']) {
    ecKey(dir, `${ca}.key`)
    openssl(['req', '-x509', '-new', '-key', `${ca}.key`, '-subj', `/CN=Skein Test ${ca}`, '-days', '2', '-out', `${ca}.pem`], dir)
  }
  signed(dir, 'server', '/CN=localhost', 'ca', 'subjectAltName=DNS:localhost,IP:127.0.0.1\n')
  signed(dir, 'client', '/O=Skein/OU=dev/CN=alice', 'ca', null)
  signed(dir, 'stranger', '/CN=mallory', 'other-ca', null)
  const keyPassword = 'key-secret'
  openssl(['pkcs8', '-topk8', '-v2', 'aes-256-cbc', '-in', 'server.key', '-passout', `pass:${keyPassword}`, '-out', 'server-enc.key'], dir)
  const cat = (out: string, ...files: string[]): string => {
    writeFileSync(join(dir, out), files.map((f) => readFileSync(join(dir, f), 'utf8')).join(''))
    return join(dir, out)
  }
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    serverKeystore: cat('server-keystore.pem', 'server.key', 'server.crt'),
    serverEncryptedKeystore: cat('server-enc-keystore.pem', 'server-enc.key', 'server.crt'),
    keyPassword,
    clientCert: join(dir, 'client.crt'),
    clientKey: join(dir, 'client.key'),
    strangerCert: join(dir, 'stranger.crt'),
    strangerKey: join(dir, 'stranger.key'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  }
}

/** Creates or replaces SCRAM credentials with AlterUserScramCredentials (as kafka-configs does: salted by the client). */
export async function upsertScramUser(host: string, port: number, user: string, password: string, mechanisms: ('SCRAM-SHA-256' | 'SCRAM-SHA-512')[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512'], iterations = 4096): Promise<AlterScram.AlterUserScramCredentialsResponse> {
  const raw = await RawClient.connect(host, port)
  try {
    const upsertions = mechanisms.map((m) => {
      const salt = randomBytes(24)
      const sha = m === 'SCRAM-SHA-256' ? 'sha256' : 'sha512'
      return { name: user, mechanism: m === 'SCRAM-SHA-256' ? 1 : 2, iterations, salt, saltedPassword: pbkdf2Sync(password, salt, iterations, sha === 'sha256' ? 32 : 64, sha) }
    })
    const req = AlterScram.createAlterUserScramCredentialsRequest({ deletions: [], upsertions })
    return await raw.call(51, 0, (w) => AlterScram.encodeAlterUserScramCredentialsRequest(w, req, 0), AlterScram.decodeAlterUserScramCredentialsResponse)
  } finally {
    raw.close()
  }
}
