// SASL/PLAIN on the broker (RFC 4616): one message "authzid NUL authcid NUL password", checked against
// the user_<name>="<password>" options of the mechanism's JAAS config. The password comparison takes the
// same time whatever the input (CVE-2021-38153): both sides are hashed to equal length first.
import { createHash, timingSafeEqual } from 'node:crypto'
import { SaslAuthenticationError, type SaslMechanismServer, type SaslStep } from './mechanism.js'

export class PlainServer implements SaslMechanismServer {
  private done = false

  constructor(private readonly users: ReadonlyMap<string, string>) {}

  evaluate(token: Buffer): SaslStep {
    if (this.done) throw new SaslAuthenticationError('Authentication failed: PLAIN takes one message')
    this.done = true
    const text = token.toString('utf8')
    const parts = text.split('\u0000')
    if (parts.length !== 3) throw new SaslAuthenticationError('Authentication failed: Invalid SASL/PLAIN response: expected 3 tokens')
    const [authzid, username, password] = parts as [string, string, string]
    if (username === '') throw new SaslAuthenticationError('Authentication failed: Invalid SASL/PLAIN response: Authentication ID must not be empty')
    if (password === '') throw new SaslAuthenticationError('Authentication failed: Invalid SASL/PLAIN response: Password must not be empty')
    // CVE-2017-12610: no impersonation through the authorization id.
    if (authzid !== '' && authzid !== username) throw new SaslAuthenticationError('Authentication failed: Client requested an authorization id that is different from username')
    const expected = this.users.get(username)
    // An unknown user costs the same comparison as a known one.
    const ok = secretsEqual(password, expected ?? '\u0000unknown user') && expected !== undefined
    if (!ok) throw new SaslAuthenticationError('Authentication failed: Invalid username or password')
    return { challenge: Buffer.alloc(0), complete: true, user: username }
  }
}

export function secretsEqual(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest())
}

/** PLAIN's users from a JAAS config's options: user_<name>=<password>. */
export function plainUsers(options: ReadonlyMap<string, string>): Map<string, string> {
  const users = new Map<string, string>()
  for (const [k, v] of options) if (k.startsWith('user_') && k.length > 5) users.set(k.slice(5), v)
  return users
}
