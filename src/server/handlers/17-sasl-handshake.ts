// SaslHandshake: v0-1
//
// Behavior:
// * On a SASL listener: chooses the mechanism of the connection's exchange. An unknown or disabled
//   mechanism gets UNSUPPORTED_SASL_MECHANISM with the enabled ones, then the connection closes; a second
//   handshake before the first exchange ends gets ILLEGAL_SASL_STATE and the same.
// * On a PLAINTEXT or SSL listener: ILLEGAL_SASL_STATE (Kafka's KafkaApis answer), the connection stays.
// Version notes:
// * v0: the SASL tokens that follow are bare size-prefixed frames (no Kafka header); v1: they travel in
//   SaslAuthenticate. Re-authentication (KIP-368) needs v1.
import { ErrorCode } from '../../domain/errors.js'
import * as SaslHandshake from '../../protocol/messages/17-sasl-handshake.gen.js'
import { defineHandler } from './common/handler.js'

export const saslHandshakeHandler = defineHandler<SaslHandshake.SaslHandshakeRequest, SaslHandshake.SaslHandshakeResponse>({
  api: SaslHandshake.SaslHandshakeApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: SaslHandshake.decodeSaslHandshakeRequest,
  encodeResponse: SaslHandshake.encodeSaslHandshakeResponse,
  authorizes: true,
  handle(req, ctx) {
    const sasl = ctx.connection.sasl
    if (sasl === undefined) return SaslHandshake.createSaslHandshakeResponse({ errorCode: ErrorCode.ILLEGAL_SASL_STATE, mechanisms: [] })
    return SaslHandshake.createSaslHandshakeResponse(sasl.handshake(req.mechanism, ctx.apiVersion))
  },
})
