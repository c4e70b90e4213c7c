// The controller's BrokerLink (src/cluster/controller/channel.ts) over Skein's client connection: one TCP
// connection to a broker (TLS and SASL as the inter-broker listener has them) with the ApiVersions handshake, requests sent at the version the controller picks.
import { BrokerConnection, CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION } from '../../client/connection.js'
import type { ClientSecurity } from '../../client/sasl.js'
import type { ProbeLinkFactory } from '../../cluster/controller/broker-liveness.js'
import type { BrokerLink, BrokerLinkFactory } from '../../cluster/controller/channel.js'
import { ApiKey } from '../../protocol/api-keys.gen.js'
import * as ApiVersions from '../../protocol/messages/18-api-versions.gen.js'

/** Links over the inter-broker listener's TLS and SASL (inter-broker-security.ts); undefined security = PLAINTEXT. */
export const brokerLinkFactory = (security: ClientSecurity | undefined): BrokerLinkFactory => async ({ host, port, clientId, requestTimeoutMs }) => {
  const conn = await BrokerConnection.connect({ host, port, clientId, requestTimeoutMs, connectTimeoutMs: Math.min(requestTimeoutMs, 10_000), security })
  const link: BrokerLink = {
    get closed() {
      return conn.closed
    },
    versionRange: (apiKey) => conn.brokerRange(apiKey),
    send: (apiKey, version, encode, decode) => conn.send(apiKey, (w) => encode(w), decode, { version }),
    close: () => conn.close(),
  }
  return link
}

/**
 * The controller's and the brokers' liveness pings (cluster/controller/broker-liveness.ts): ApiVersions,
 * which a broker answers at once whatever it is doing. A refused connection is marked `refused`.
 */
export const probeLinkFactory = (security: ClientSecurity | undefined): ProbeLinkFactory => async ({ host, port, clientId, timeoutMs }) => {
  let conn: BrokerConnection
  try {
    conn = await BrokerConnection.connect({ host, port, clientId, requestTimeoutMs: timeoutMs, connectTimeoutMs: timeoutMs, security })
  } catch (err) {
    const message = (err as Error).message
    throw Object.assign(new Error(message), { refused: message.includes('connection refused') })
  }
  const request = ApiVersions.createApiVersionsRequest({ clientSoftwareName: CLIENT_SOFTWARE_NAME, clientSoftwareVersion: CLIENT_SOFTWARE_VERSION })
  const version = Math.min(3, conn.brokerRange(ApiKey.ApiVersions)?.max ?? 0)
  let closed = false
  const listeners: (() => void)[] = []
  conn.onClose(() => {
    if (closed) return
    closed = true
    for (const l of listeners.splice(0)) l()
  })
  return {
    ping: async () => {
      await conn.send(ApiKey.ApiVersions, (w, v) => ApiVersions.encodeApiVersionsRequest(w, request, v), ApiVersions.decodeApiVersionsResponse, { version })
    },
    onClose: (listener) => {
      if (closed) listener()
      else listeners.push(listener)
    },
    close: () => conn.close(),
  }
}
