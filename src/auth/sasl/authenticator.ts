// One connection's SASL exchange on the broker, Kafka's SaslServerAuthenticator as a state machine:
//   SaslHandshake (mechanism chosen) → SaslAuthenticate ... until the mechanism completes.
// SaslHandshake v0 (kafka-python's older path) switches to raw tokens: the following frames are bare
// size-prefixed SASL tokens, answered the same way, with no Kafka header. A failure is final: the caller
// sends the error and closes the connection. With connections.max.reauth.ms the session expires and the
// client may authenticate again on the same connection (KIP-368), as the same principal.
import { ErrorCode } from '../../domain/errors.js'
import { userPrincipal } from '../principal.js'
import { SaslAuthenticationError, type SaslMechanismServer } from './mechanism.js'

export interface SaslListenerSettings {
  /** sasl.enabled.mechanisms of the listener, each one Skein serves. */
  mechanisms: readonly string[]
  /** A new server for one exchange of a mechanism. */
  createMechanism(mechanism: string): SaslMechanismServer
  /** connections.max.reauth.ms (0: sessions do not expire). */
  reauthMs: number
}

export interface SaslAuthenticateResult {
  errorCode: number
  errorMessage: string | null
  authBytes: Buffer
  sessionLifetimeMs: bigint
}

type State = 'handshake' | 'authenticate' | 'raw-token' | 'complete' | 'failed'

export class SaslServerAuthenticator {
  private state: State = 'handshake'
  private mechanism: SaslMechanismServer | undefined
  /** "User:<name>" once authenticated. */
  principal: string | undefined
  /** When the session ends (ms since epoch); Infinity without connections.max.reauth.ms. */
  sessionExpiresAt = Number.POSITIVE_INFINITY
  private reauthenticating = false

  constructor(
    private readonly settings: SaslListenerSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** True once a first exchange succeeded (stays true while re-authenticating). */
  get authenticated(): boolean {
    return this.principal !== undefined && this.state !== 'failed'
  }

  get failed(): boolean {
    return this.state === 'failed'
  }

  /** The next frame is a raw SASL token (after SaslHandshake v0). */
  get expectsRawToken(): boolean {
    return this.state === 'raw-token'
  }

  get mechanisms(): readonly string[] {
    return this.settings.mechanisms
  }

  handshake(mechanism: string, version: number): { errorCode: number; mechanisms: string[] } {
    const mechanisms = [...this.settings.mechanisms]
    const reauth = this.state === 'complete'
    if (this.state !== 'handshake' && !reauth) {
      this.state = 'failed'
      return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms }
    }
    if (reauth && version === 0) {
      // Re-authentication needs SaslAuthenticate (KIP-368 requires SaslHandshake v1+).
      this.state = 'failed'
      return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms }
    }
    if (!mechanisms.includes(mechanism)) {
      this.state = 'failed'
      return { errorCode: ErrorCode.UNSUPPORTED_SASL_MECHANISM, mechanisms }
    }
    this.mechanism = this.settings.createMechanism(mechanism)
    this.reauthenticating = reauth
    this.state = version === 0 ? 'raw-token' : 'authenticate'
    return { errorCode: ErrorCode.NONE, mechanisms }
  }

  async authenticate(token: Buffer): Promise<SaslAuthenticateResult> {
    if (this.state !== 'authenticate') {
      this.state = 'failed'
      return { errorCode: ErrorCode.ILLEGAL_SASL_STATE, errorMessage: 'Unexpected SaslAuthenticate request: no SaslHandshake v1+ before it', authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n }
    }
    try {
      const challenge = await this.step(token)
      const lifetime = (this.state as State) === 'complete' && this.settings.reauthMs > 0 ? BigInt(this.settings.reauthMs) : 0n
      return { errorCode: ErrorCode.NONE, errorMessage: null, authBytes: challenge, sessionLifetimeMs: lifetime }
    } catch (err) {
      this.state = 'failed'
      const message = err instanceof SaslAuthenticationError ? err.message : 'Authentication failed'
      return { errorCode: ErrorCode.SASL_AUTHENTICATION_FAILED, errorMessage: message, authBytes: Buffer.alloc(0), sessionLifetimeMs: 0n }
    }
  }

  /** A raw token after SaslHandshake v0: the challenge to send back, or a throw (the connection closes). */
  async rawToken(token: Buffer): Promise<Buffer> {
    if (this.state !== 'raw-token') throw new SaslAuthenticationError('unexpected raw SASL token')
    this.state = 'authenticate'
    try {
      const challenge = await this.step(token)
      if (this.state === 'authenticate') this.state = 'raw-token'
      return challenge
    } catch (err) {
      this.state = 'failed'
      throw err
    }
  }

  /** Whether the session has run out (the connection is closed at its next request, as Kafka does). */
  expired(): boolean {
    return this.now() > this.sessionExpiresAt
  }

  private async step(token: Buffer): Promise<Buffer> {
    const result = await this.mechanism!.evaluate(token)
    if (!result.complete) return result.challenge
    const principal = userPrincipal(result.user!)
    if (this.reauthenticating && principal !== this.principal) {
      throw new SaslAuthenticationError(`Cannot change principals during re-authentication from ${this.principal}: ${principal}`)
    }
    this.principal = principal
    this.state = 'complete'
    this.reauthenticating = false
    this.mechanism = undefined
    this.sessionExpiresAt = this.settings.reauthMs > 0 ? this.now() + this.settings.reauthMs : Number.POSITIVE_INFINITY
    return result.challenge
  }
}
