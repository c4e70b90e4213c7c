// What each listener requires of a connection, from listener.security.protocol.map and the (listener-
// prefixed) ssl.* and sasl.* configs: TLS options for SSL and SASL_SSL, the SASL mechanisms and their
// user sources for SASL_PLAINTEXT and SASL_SSL. Built once at startup; a listener that cannot work
// (no key store, a JKS store, GSSAPI offered, a PLAIN listener without users) stops startup with a
// message naming the listener and the setting.
import { X509Certificate } from 'node:crypto'
import { createSecureContext, type TLSSocket, type TlsOptions } from 'node:tls'
import type { BrokerConfig } from '../config/broker-config.js'
import type { MetadataStore } from '../cluster/metadata-store.js'
import { ANONYMOUS, mapSubject, parsePrincipalMappingRules, rfc2253Subject, userPrincipal } from '../auth/principal.js'
import { sanitizeEntityName } from '../auth/sanitize.js'
import { listenerTlsOptions, type ListenerTls } from '../auth/tls.js'
import type { SaslListenerSettings } from '../auth/sasl/authenticator.js'
import { parseJaasConfig } from '../auth/sasl/jaas.js'
import { SUPPORTED_SASL_MECHANISMS } from '../auth/sasl/mechanism.js'
import { PlainServer, plainUsers } from '../auth/sasl/plain.js'
import { parseScramCredential, ScramServer, type ScramCredentialLookup, type ScramMechanism } from '../auth/sasl/scram.js'

export type SecurityProtocol = 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL'

export interface ListenerSecurity {
  protocol: SecurityProtocol
  tls?: ListenerTls
  /** The principal of a TLS connection from its client certificate (ANONYMOUS without one). */
  principalOf(socket: TLSSocket): string
  sasl?: SaslListenerSettings
  /** sasl.server.max.receive.size: the largest frame before authentication. */
  saslMaxReceiveBytes: number
}

/** SCRAM credentials from the user's config entity, as Kafka keeps them. */
export function scramLookup(store: MetadataStore): ScramCredentialLookup {
  return async (user, mechanism) => {
    const config = await store.getEntityConfig('users', sanitizeEntityName(user))
    const stored = config[mechanism]
    return stored === undefined ? undefined : parseScramCredential(stored)
  }
}

/**
 * The TLS options of every SSL and SASL_SSL listener under a (new) configuration, each checked by
 * building a secure context, so a key store that cannot be read or a key that does not open is refused
 * (dynamic SSL reconfiguration: AlterConfigs of listener.name.<l>.ssl.keystore.location and friends).
 */
export function listenerTlsContexts(config: BrokerConfig): Map<string, TlsOptions> {
  const out = new Map<string, TlsOptions>()
  for (const listener of config.listeners) {
    const protocol = config.securityProtocolMap.get(listener.name) ?? 'PLAINTEXT'
    if (protocol !== 'SSL' && protocol !== 'SASL_SSL') continue
    const { options } = listenerTlsOptions(listener.name, (name) => config.forListener(listener.name, name))
    try {
      createSecureContext(options)
    } catch (err) {
      throw new Error(`listener ${listener.name}: the key store or trust store cannot be used: ${(err as Error).message}`)
    }
    out.set(listener.name, options)
  }
  return out
}

export function buildListenerSecurity(config: BrokerConfig, store: MetadataStore): Map<string, ListenerSecurity> {
  const out = new Map<string, ListenerSecurity>()
  const protocols = config.securityProtocolMap
  const lookup = scramLookup(store)
  for (const listener of config.listeners) {
    const protocol = (protocols.get(listener.name) ?? 'PLAINTEXT') as SecurityProtocol
    const cfg = (name: string): ReturnType<BrokerConfig['get']> => config.forListener(listener.name, name)
    const security: ListenerSecurity = { protocol, principalOf: () => ANONYMOUS, saslMaxReceiveBytes: config.getInt('sasl.server.max.receive.size') }
    if (protocol === 'SSL' || protocol === 'SASL_SSL') {
      security.tls = listenerTlsOptions(listener.name, cfg)
      let rules: ReturnType<typeof parsePrincipalMappingRules>
      try {
        rules = parsePrincipalMappingRules((cfg('ssl.principal.mapping.rules') as string | null) ?? 'DEFAULT')
      } catch (err) {
        throw new Error(`listener ${listener.name}: ${(err as Error).message}`)
      }
      if (protocol === 'SSL') {
        security.principalOf = (socket) => {
          const cert = socket.getPeerX509Certificate?.() as X509Certificate | undefined
          // "requested" lets an unverified or absent certificate in: such a connection is ANONYMOUS.
          if (cert === undefined || !socket.authorized) return ANONYMOUS
          return userPrincipal(mapSubject(rules, rfc2253Subject(cert.subject)))
        }
      }
    }
    if (protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL') {
      const mechanisms = (cfg('sasl.enabled.mechanisms') as string[] | null) ?? []
      if (mechanisms.length === 0) throw new Error(`listener ${listener.name}: sasl.enabled.mechanisms is empty`)
      const unsupported = mechanisms.filter((m) => !(SUPPORTED_SASL_MECHANISMS as readonly string[]).includes(m))
      if (unsupported.length > 0) {
        throw new Error(`listener ${listener.name}: SASL mechanism ${unsupported.join(', ')} is not supported (sasl.enabled.mechanisms; Skein serves ${SUPPORTED_SASL_MECHANISMS.join(', ')})`)
      }
      let users = new Map<string, string>()
      if (mechanisms.includes('PLAIN')) {
        const jaas = config.forListener(listener.name, 'sasl.jaas.config', 'PLAIN') as string | null
        if (jaas === null) throw new Error(`listener ${listener.name}: PLAIN needs listener.name.${listener.name.toLowerCase()}.plain.sasl.jaas.config with user_<name>="<password>" entries`)
        try {
          users = plainUsers(parseJaasConfig(jaas).options)
        } catch (err) {
          throw new Error(`listener ${listener.name}: listener.name.${listener.name.toLowerCase()}.plain.${(err as Error).message}`)
        }
      }
      security.sasl = {
        mechanisms,
        reauthMs: cfg('connections.max.reauth.ms') as number,
        createMechanism: (m) => (m === 'PLAIN' ? new PlainServer(users) : new ScramServer(m as ScramMechanism, lookup)),
      }
    }
    out.set(listener.name, security)
  }
  return out
}
