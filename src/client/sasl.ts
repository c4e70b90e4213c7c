// The client's side of SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) and the security a connection uses:
// TLS options for node:tls and SASL credentials, as Kafka clients take them from security.protocol,
// sasl.mechanism, sasl.jaas.config and ssl.*. The exchange runs over SaslHandshake v1 and
// SaslAuthenticate (connection.ts); this module only makes and checks the tokens.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto'
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls'

export type SaslMechanism = 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'

export interface SaslCredentials {
  mechanism: SaslMechanism
  username: string
  password: string
}

/** What a connection needs beyond host and port: TLS (SSL, SASL_SSL) and SASL (SASL_PLAINTEXT, SASL_SSL). */
export interface ClientSecurity {
  /** node:tls options (ca, cert, key, passphrase, checkServerIdentity, ...); absent = no TLS. */
  tls?: TlsConnectionOptions
  sasl?: SaslCredentials
}

/** One SASL exchange: each step takes the server's last token (empty at first) and gives the next one, or null when done. */
export interface SaslClient {
  step(challenge: Buffer): Buffer | null
}

export function saslClient(c: SaslCredentials): SaslClient {
  if (c.mechanism === 'PLAIN') return plainClient(c.username, c.password)
  return new ScramClient(c.mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha512', c.username, c.password)
}

function plainClient(username: string, password: string): SaslClient {
  let sent = false
  return {
    step() {
      if (sent) return null
      sent = true
      // authzid NUL authcid NUL password (RFC 4616), with an empty authzid.
      return Buffer.from(`\u0000${username}\u0000${password}`, 'utf8')
    },
  }
}

/** SCRAM's name escaping (RFC 5802): ',' and '=' in a user name. */
const saslName = (s: string): string => s.replace(/=/g, '=3D').replace(/,/g, '=2C')

function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const part of message.split(',')) {
    const eq = part.indexOf('=')
    if (eq > 0) out.set(part.slice(0, eq), part.slice(eq + 1))
  }
  return out
}

/** RFC 5802 / RFC 7677 client: client-first, client-final with the proof, then the server signature checked. */
class ScramClient implements SaslClient {
  private state: 'first' | 'final' | 'verify' | 'done' = 'first'
  private readonly nonce = randomBytes(24).toString('base64')
  private clientFirstBare = ''
  private serverSignature: Buffer | undefined

  constructor(
    private readonly hash: 'sha256' | 'sha512',
    private readonly username: string,
    private readonly password: string,
  ) {}

  step(challenge: Buffer): Buffer | null {
    switch (this.state) {
      case 'first':
        this.state = 'final'
        this.clientFirstBare = `n=${saslName(this.username)},r=${this.nonce}`
        return Buffer.from(`n,,${this.clientFirstBare}`, 'utf8')
      case 'final': {
        this.state = 'verify'
        const serverFirst = challenge.toString('utf8')
        const a = attributes(serverFirst)
        const nonce = a.get('r') ?? ''
        const salt = Buffer.from(a.get('s') ?? '', 'base64')
        const iterations = Number(a.get('i'))
        if (!nonce.startsWith(this.nonce) || salt.length === 0 || !Number.isSafeInteger(iterations) || iterations < 1 || iterations > 1_000_000) {
          throw new Error('SCRAM: invalid server-first message')
        }
        const keyLength = this.hash === 'sha256' ? 32 : 64
        const salted = pbkdf2Sync(this.password, salt, iterations, keyLength, this.hash)
        const clientKey = createHmac(this.hash, salted).update('Client Key').digest()
        const storedKey = createHash(this.hash).update(clientKey).digest()
        const withoutProof = `c=biws,r=${nonce}`
        const authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`
        const clientSignature = createHmac(this.hash, storedKey).update(authMessage).digest()
        const proof = Buffer.alloc(clientKey.length)
        for (let i = 0; i < proof.length; i++) proof[i] = clientKey[i]! ^ clientSignature[i]!
        const serverKey = createHmac(this.hash, salted).update('Server Key').digest()
        this.serverSignature = createHmac(this.hash, serverKey).update(authMessage).digest()
        return Buffer.from(`${withoutProof},p=${proof.toString('base64')}`, 'utf8')
      }
      case 'verify': {
        this.state = 'done'
        const a = attributes(challenge.toString('utf8'))
        if (a.has('e')) throw new Error(`SCRAM: the server refused: ${a.get('e')}`)
        const v = Buffer.from(a.get('v') ?? '', 'base64')
        if (this.serverSignature === undefined || v.length !== this.serverSignature.length || !timingSafeEqual(v, this.serverSignature)) {
          throw new Error('SCRAM: the server signature does not match (not the server that holds the credential)')
        }
        return null
      }
      default:
        return null
    }
  }
}

/**
 * username and password from a JAAS line (sasl.jaas.config), as Kafka's PlainLoginModule and
 * ScramLoginModule take them: `<module> required username="u" password="p";`.
 */
export function credentialsFromJaas(jaas: string): { username: string; password: string } | undefined {
  const options = new Map<string, string>()
  for (const m of jaas.matchAll(/([A-Za-z_][\w.-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))/g)) options.set(m[1]!, m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3]!)
  const username = options.get('username')
  const password = options.get('password')
  return username === undefined || password === undefined ? undefined : { username, password }
}
