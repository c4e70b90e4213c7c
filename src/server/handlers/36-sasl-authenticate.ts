// SaslAuthenticate: v0-2
//
// Behavior:
// * Carries one SASL token of the mechanism chosen by SaslHandshake v1 and answers the mechanism's
//   challenge. A failed exchange (wrong password, unknown user, bad message) gets SASL_AUTHENTICATION_FAILED
//   with the reason, then the connection closes; one without a handshake before it gets ILLEGAL_SASL_STATE
//   and the same.
// * On a PLAINTEXT or SSL listener: ILLEGAL_SASL_STATE.
// Version notes:
// * v1+: session_lifetime_ms, connections.max.reauth.ms when set (KIP-368), else 0. v2: flexible.
import { ErrorCode } from '../../domain/errors.js'
import * as SaslAuthenticate from '../../protocol/messages/36-sasl-authenticate.gen.js'
import { defineHandler } from './common/handler.js'

export const saslAuthenticateHandler = defineHandler<SaslAuthenticate.SaslAuthenticateRequest, SaslAuthenticate.SaslAuthenticateResponse>({
  api: SaslAuthenticate.SaslAuthenticateApi,
  minVersion: 0,
  maxVersion: 2,
  decodeRequest: SaslAuthenticate.decodeSaslAuthenticateRequest,
  encodeResponse: SaslAuthenticate.encodeSaslAuthenticateResponse,
  authorizes: true,
  async handle(req, ctx) {
    const sasl = ctx.connection.sasl
    if (sasl === undefined) {
      return SaslAuthenticate.createSaslAuthenticateResponse({ errorCode: ErrorCode.ILLEGAL_SASL_STATE, errorMessage: 'SASL is not enabled on this listener' })
    }
    return SaslAuthenticate.createSaslAuthenticateResponse(await sasl.authenticate(req.authBytes))
  },
})
