// What a server-side SASL mechanism does: take the client's token, answer with a challenge, and say when
// the exchange is complete and for which user. A failed exchange throws SaslAuthenticationError, whose
// message is what the client is told (never a password or key).

export interface SaslStep {
  challenge: Buffer
  complete: boolean
  /** The authenticated user name, once complete. */
  user?: string
}

export interface SaslMechanismServer {
  evaluate(token: Buffer): SaslStep | Promise<SaslStep>
}

export class SaslAuthenticationError extends Error {
  override readonly name = 'SaslAuthenticationError'
}

export const SUPPORTED_SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const
