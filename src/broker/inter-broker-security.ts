// The client side of the broker's own connections to other brokers (replica fetchers, the controller's
// channel, AlterPartition, ControlledShutdown, WriteTxnMarkers), derived from the broker config as Kafka
// does: the inter-broker listener (inter.broker.listener.name, or the listener named by
// security.inter.broker.protocol), its protocol from listener.security.protocol.map, and for SSL and
// SASL_SSL the listener's own ssl.* stores (the trust store verifies the other broker, the key store is
// this broker's certificate for mutual TLS), for SASL_PLAINTEXT and SASL_SSL the mechanism
// sasl.mechanism.inter.broker.protocol and the username/password options of the listener's JAAS config
// (listener.name.<l>.<mechanism>.sasl.jaas.config). Built once at startup; a setting that cannot work
// stops startup with a message naming it.
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls'
import { listenerTlsOptions } from '../auth/tls.js'
import { parseJaasConfig } from '../auth/sasl/jaas.js'
import type { ClientSecurity, SaslMechanism } from '../client/sasl.js'
import type { BrokerConfig } from '../config/broker-config.js'
import type { SecurityProtocol } from '../server/listener-security.js'

const CLIENT_MECHANISMS: readonly SaslMechanism[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']

export interface InterBrokerSecurity {
  /** The listener other brokers are reached on (its advertised endpoint is the one registered). */
  listener: string
  protocol: SecurityProtocol
  /** What every inter-broker connection uses; undefined for PLAINTEXT. */
  security: ClientSecurity | undefined
}

/** The inter-broker listener: inter.broker.listener.name, else the listener named by security.inter.broker.protocol, else the first listener. */
export function interBrokerListenerName(config: BrokerConfig): string {
  const named = config.getString('inter.broker.listener.name')
  const protocolSet = config.isSet('security.inter.broker.protocol')
  if (named !== null && protocolSet) {
    throw new Error('only one of inter.broker.listener.name and security.inter.broker.protocol may be set')
  }
  // Kafka's ListenerName.forSecurityProtocol: the listener named like the protocol.
  const listener = named ?? (protocolSet ? config.getString('security.inter.broker.protocol')! : config.listeners[0]!.name)
  if (!config.listeners.some((l) => l.name === listener)) {
    const setting = named !== null ? 'inter.broker.listener.name' : protocolSet ? 'security.inter.broker.protocol' : 'the first listener'
    throw new Error(`${setting} ${listener} is not one of the listeners (${config.listeners.map((l) => l.name).join(', ')})`)
  }
  return listener
}

/**
 * The inter-broker listener and the client security of the broker's connections to the others; throws a
 * message naming the setting when it cannot work. A single broker (no zookeeper.connect) has no other
 * broker to reach: there only the listener is checked, so a single broker with a SASL listener first
 * needs no inter-broker login.
 */
export function interBrokerClientSecurity(config: BrokerConfig): InterBrokerSecurity {
  const listener = interBrokerListenerName(config)
  const protocol = (config.securityProtocolMap.get(listener) ?? 'PLAINTEXT') as SecurityProtocol
  if (protocol === 'PLAINTEXT') return { listener, protocol, security: undefined }
  if (config.getString('zookeeper.connect') === null) return { listener, protocol, security: undefined }
  return { listener, protocol, security: brokerLoginOn(config, listener) }
}

/**
 * The broker's own client login on one of its listeners: the listener's TLS stores (SSL, SASL_SSL) and
 * the sasl.mechanism.inter.broker.protocol login from the listener's JAAS config (SASL_PLAINTEXT,
 * SASL_SSL); undefined for PLAINTEXT. The inter-broker connections use it, and so do the broker's
 * embedded Schema Registry and REST Proxy when they are given no identity of their own (main.ts).
 * Throws a message naming the setting when it cannot work.
 */
export function brokerLoginOn(config: BrokerConfig, listener: string): ClientSecurity | undefined {
  const protocol = (config.securityProtocolMap.get(listener) ?? 'PLAINTEXT') as SecurityProtocol
  if (protocol === 'PLAINTEXT') return undefined
  const prefix = `listener.name.${listener.toLowerCase()}.`
  const security: ClientSecurity = {}
  if (protocol === 'SSL' || protocol === 'SASL_SSL') security.tls = clientTls(config, listener)
  if (protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL') {
    const mechanism = (config.getString('sasl.mechanism.inter.broker.protocol') ?? 'GSSAPI').trim().toUpperCase()
    if (!(CLIENT_MECHANISMS as readonly string[]).includes(mechanism)) {
      throw new Error(`sasl.mechanism.inter.broker.protocol=${mechanism}: the inter-broker listener ${listener} is ${protocol}, and brokers authenticate to each other with ${CLIENT_MECHANISMS.join(', ')} only (Kafka's default GSSAPI is not supported); set it to one of them`)
    }
    const enabled = (config.forListener(listener, 'sasl.enabled.mechanisms') as string[] | null) ?? []
    if (!enabled.includes(mechanism)) {
      throw new Error(`sasl.mechanism.inter.broker.protocol=${mechanism} is not in sasl.enabled.mechanisms of the inter-broker listener ${listener} (${enabled.join(', ')})`)
    }
    const jaasKey = `${prefix}${mechanism.toLowerCase()}.sasl.jaas.config`
    const jaas = config.forListener(listener, 'sasl.jaas.config', mechanism) as string | null
    if (jaas === null) throw new Error(`inter-broker SASL (${mechanism} on listener ${listener}) needs ${jaasKey} with username="..." password="..." (the broker's own login)`)
    let options: Map<string, string>
    try {
      options = parseJaasConfig(jaas).options
    } catch (err) {
      throw new Error(`${jaasKey}: ${(err as Error).message}`)
    }
    const username = options.get('username')
    const password = options.get('password')
    if (username === undefined || password === undefined) {
      throw new Error(`${jaasKey}: the broker's own login needs username="..." and password="..." options (inter-broker ${mechanism} on listener ${listener})`)
    }
    security.sasl = { mechanism: mechanism as SaslMechanism, username, password }
  }
  return security
}

/**
 * TLS client options from the listener's ssl.* settings (read through the same function as the
 * listener's server side, so both accept the same stores): the trust store verifies the other broker
 * (absent: Node's default CAs), the key store is offered when the other broker asks for a certificate.
 */
function clientTls(config: BrokerConfig, listener: string): TlsConnectionOptions {
  const cfg = (name: string): ReturnType<BrokerConfig['get']> => config.forListener(listener, name)
  const server = listenerTlsOptions(listener, cfg).options
  const tls: TlsConnectionOptions = {}
  if (server.key !== undefined) tls.key = server.key
  if (server.cert !== undefined) tls.cert = server.cert
  if (server.pfx !== undefined) tls.pfx = server.pfx
  if (server.passphrase !== undefined) tls.passphrase = server.passphrase
  if (server.ca !== undefined) tls.ca = server.ca
  if (server.minVersion !== undefined) tls.minVersion = server.minVersion
  if (server.maxVersion !== undefined) tls.maxVersion = server.maxVersion
  if (server.ciphers !== undefined) tls.ciphers = server.ciphers
  // ssl.endpoint.identification.algorithm: https (Kafka's default) checks the other broker's host name
  // or IP against its certificate; empty skips that check (the chain is still verified).
  const identification = ((cfg('ssl.endpoint.identification.algorithm') as string | null) ?? 'https').trim()
  if (identification === '') tls.checkServerIdentity = () => undefined
  else if (identification.toLowerCase() !== 'https') throw new Error(`ssl.endpoint.identification.algorithm=${identification} (inter-broker listener ${listener}): expected https or empty`)
  return tls
}
