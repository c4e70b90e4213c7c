// The controller's BrokerLink (src/cluster/controller/channel.ts) over Skein's client connection: one TCP
// connection to a broker (TLS and SASL as the inter-broker listener has them) with the ApiVersions handshake, requests sent at the version the controller picks.
import { BrokerConnection } from '../../client/connection.js'
import type { ClientSecurity } from '../../client/sasl.js'
import type { BrokerLink, BrokerLinkFactory } from '../../cluster/controller/channel.js'

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
