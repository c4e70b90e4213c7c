// SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) on the broker, and SCRAM credentials as Kafka
// stores them: "salt=<base64>,stored_key=<base64>,server_key=<base64>,iterations=<n>" under the
// mechanism's name in the user's config entity (ZooKeeper /config/users/<user>, or the embedded store).
// The password itself is never stored: AlterUserScramCredentials carries the salted password, from which
// the stored and server keys are derived.
import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto'
import { SaslAuthenticationError, type SaslMechanismServer, type SaslStep } from './mechanism.js'

export type ScramMechanism = 'SCRAM-SHA-256' | 'SCRAM-SHA-512'

export interface ScramCredential {
  salt: Buffer
  storedKey: Buffer
  serverKey: Buffer
  iterations: number
}

/** Kafka's ScramMechanism ids (AlterUserScramCredentials, DescribeUserScramCredentials). */
export const SCRAM_MECHANISM_IDS: Readonly<Record<ScramMechanism, number>> = { 'SCRAM-SHA-256': 1, 'SCRAM-SHA-512': 2 }
export const SCRAM_MECHANISMS: readonly ScramMechanism[] = ['SCRAM-SHA-256', 'SCRAM-SHA-512']
/** Kafka's bounds on iterations (ScramMechanism.minIterations / maxIterations). */
export const SCRAM_MIN_ITERATIONS = 4096
export const SCRAM_MAX_ITERATIONS = 16384

export function scramMechanismById(id: number): ScramMechanism | undefined {
  return SCRAM_MECHANISMS.find((m) => SCRAM_MECHANISM_IDS[m] === id)
}

function hashName(m: ScramMechanism): 'sha256' | 'sha512' {
  return m === 'SCRAM-SHA-256' ? 'sha256' : 'sha512'
}

function hmac(m: ScramMechanism, key: Buffer, data: Buffer | string): Buffer {
  return createHmac(hashName(m), key).update(data).digest()
}

/** The stored form of a credential from its salted password (what AlterUserScramCredentials sends). */
export function credentialFromSaltedPassword(m: ScramMechanism, salt: Buffer, saltedPassword: Buffer, iterations: number): ScramCredential {
  const clientKey = hmac(m, saltedPassword, 'Client Key')
  return { salt, storedKey: createHash(hashName(m)).update(clientKey).digest(), serverKey: hmac(m, saltedPassword, 'Server Key'), iterations }
}

/** A credential from a password (skein configs --add-config 'SCRAM-SHA-256=[password=...]'). */
export function credentialFromPassword(m: ScramMechanism, password: string, iterations = SCRAM_MIN_ITERATIONS, salt = randomBytes(32)): ScramCredential {
  const salted = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, iterations, m === 'SCRAM-SHA-256' ? 32 : 64, hashName(m))
  return credentialFromSaltedPassword(m, salt, salted, iterations)
}

export function formatScramCredential(c: ScramCredential): string {
  return `salt=${c.salt.toString('base64')},stored_key=${c.storedKey.toString('base64')},server_key=${c.serverKey.toString('base64')},iterations=${c.iterations}`
}

/** Parses the stored form; undefined when it is not one (a hand-edited or foreign value). */
export function parseScramCredential(text: string): ScramCredential | undefined {
  const fields = new Map<string, string>()
  for (const part of text.split(',')) {
    const eq = part.indexOf('=')
    if (eq <= 0) return undefined
    fields.set(part.slice(0, eq), part.slice(eq + 1))
  }
  const salt = fields.get('salt')
  const storedKey = fields.get('stored_key')
  const serverKey = fields.get('server_key')
  const iterations = Number(fields.get('iterations'))
  if (salt === undefined || storedKey === undefined || serverKey === undefined || !Number.isInteger(iterations) || iterations <= 0) return undefined
  return { salt: Buffer.from(salt, 'base64'), storedKey: Buffer.from(storedKey, 'base64'), serverKey: Buffer.from(serverKey, 'base64'), iterations }
}

export type ScramCredentialLookup = (user: string, mechanism: ScramMechanism) => Promise<ScramCredential | undefined>

// RFC 5802 saslname: "=" is written =3D and "," =2C.
function decodeSaslName(s: string): string {
  if (/=(?!2C|3D)/.test(s)) throw new SaslAuthenticationError('Authentication failed: Invalid SCRAM user name encoding')
  return s.replace(/=2C/g, ',').replace(/=3D/g, '=')
}

function attributes(message: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const part of message.split(',')) {
    if (part.length < 2 || part[1] !== '=') throw new SaslAuthenticationError('Authentication failed: Invalid SCRAM message')
    out.set(part[0]!, part.slice(2))
  }
  return out
}

/** The server side of one SCRAM exchange: client-first → server-first, client-final → server-final. */
export class ScramServer implements SaslMechanismServer {
  private state: 'first' | 'final' | 'done' = 'first'
  private user = ''
  private nonce = ''
  private clientFirstBare = ''
  private serverFirst = ''
  private gs2Header = ''
  private credential: ScramCredential | undefined

  constructor(
    private readonly mechanism: ScramMechanism,
    private readonly lookup: ScramCredentialLookup,
  ) {}

  async evaluate(token: Buffer): Promise<SaslStep> {
    const message = token.toString('utf8')
    if (this.state === 'first') return this.first(message)
    if (this.state === 'final') return this.final(message)
    throw new SaslAuthenticationError('Authentication failed: SCRAM exchange already complete')
  }

  private async first(message: string): Promise<SaslStep> {
    // gs2-header: "n," or "y," (no channel binding), then an optional "a=authzid", then ",".
    const m = /^([ny]),(a=[^,]*)?,(.*)$/s.exec(message)
    if (m === null) throw new SaslAuthenticationError('Authentication failed: Invalid SCRAM client first message (channel binding is not supported)')
    this.gs2Header = `${m[1]},${m[2] ?? ''},`
    this.clientFirstBare = m[3]!
    const attrs = attributes(this.clientFirstBare)
    const name = attrs.get('n')
    const clientNonce = attrs.get('r')
    if (name === undefined || clientNonce === undefined || clientNonce === '') throw new SaslAuthenticationError('Authentication failed: Invalid SCRAM client first message')
    this.user = decodeSaslName(name)
    const authzid = m[2]?.slice(2)
    if (authzid !== undefined && authzid !== '' && decodeSaslName(authzid) !== this.user) {
      throw new SaslAuthenticationError('Authentication failed: Authorization id must be the same as the user name')
    }
    this.credential = await this.lookup(this.user, this.mechanism)
    if (this.credential === undefined) throw new SaslAuthenticationError('Authentication failed: Invalid user credentials')
    this.nonce = clientNonce + randomBytes(18).toString('base64')
    this.serverFirst = `r=${this.nonce},s=${this.credential.salt.toString('base64')},i=${this.credential.iterations}`
    this.state = 'final'
    return { challenge: Buffer.from(this.serverFirst, 'utf8'), complete: false }
  }

  private final(message: string): SaslStep {
    this.state = 'done'
    const cut = message.lastIndexOf(',p=')
    if (cut < 0) throw new SaslAuthenticationError('Authentication failed: Invalid SCRAM client final message')
    const withoutProof = message.slice(0, cut)
    const attrs = attributes(withoutProof)
    if (attrs.get('c') !== Buffer.from(this.gs2Header, 'utf8').toString('base64')) throw new SaslAuthenticationError('Authentication failed: Invalid SCRAM channel binding')
    // Kafka checks that the nonce ends with the server's (librdkafka 2.0 sends its own nonce in front of it).
    if (!(attrs.get('r') ?? '').endsWith(this.nonce)) throw new SaslAuthenticationError('Authentication failed: Invalid SCRAM nonce')
    const proof = Buffer.from(message.slice(cut + 3), 'base64')
    const c = this.credential!
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`
    const clientSignature = hmac(this.mechanism, c.storedKey, authMessage)
    if (proof.length !== clientSignature.length) throw new SaslAuthenticationError('Authentication failed: Invalid user credentials')
    const clientKey = Buffer.alloc(proof.length)
    for (let i = 0; i < proof.length; i++) clientKey[i] = proof[i]! ^ clientSignature[i]!
    const computedStoredKey = createHash(hashName(this.mechanism)).update(clientKey).digest()
    if (!timingSafeEqual(computedStoredKey, c.storedKey)) throw new SaslAuthenticationError('Authentication failed: Invalid user credentials')
    const serverSignature = hmac(this.mechanism, c.serverKey, authMessage)
    return { challenge: Buffer.from(`v=${serverSignature.toString('base64')}`, 'utf8'), complete: true, user: this.user }
  }
}
