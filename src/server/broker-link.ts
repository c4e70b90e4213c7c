// The controller's BrokerLink (src/cluster/controller/channel.ts) over Skein's client connection: one TCP
// connection to a broker with the ApiVersions handshake, requests sent at the version the controller picks.
import { BrokerConnection } from '../client/connection.js'
import type { BrokerLink, BrokerLinkFactory } from '../cluster/controller/channel.js'

export const connectBrokerLink: BrokerLinkFactory = async ({ host, port, clientId, requestTimeoutMs }) => {
  const conn = await BrokerConnection.connect({ host, port, clientId, requestTimeoutMs, connectTimeoutMs: Math.min(requestTimeoutMs, 10_000) })
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
