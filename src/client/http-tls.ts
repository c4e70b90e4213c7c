// The TLS of Skein's HTTP services from their ssl.* settings (config/client-http-tls.ts): the server side
// of https:// listeners (key store, trust store for client certificates, ssl.client.authentication) and
// the client side of calls to https:// URLs (a trust store for the server's certificate). The stores are
// read by client-security-config.ts's tlsFromProps, the one reader of Kafka's ssl.* store settings on the
// client side, so PEM, encrypted PEM keys and PKCS12 behave as for the Kafka clients.
import { createSecureContext, type ConnectionOptions, type SecureContextOptions } from 'node:tls'
import type { HttpTls } from '../http/index.js'
import { tlsFromProps } from './client-security-config.js'
import { ConfigException } from './errors.js'

/** Reads the stores; errors name the setting as the user wrote it (prefix: '' standalone, 'rest.' in a broker). */
function readStores(props: ReadonlyMap<string, string>, prefix: string): ConnectionOptions {
  try {
    return tlsFromProps(props)
  } catch (err) {
    if (err instanceof ConfigException) throw new ConfigException(`${prefix}${err.message}`)
    throw err
  }
}

/** Opens the key the way node:tls will, so a wrong password or a broken file stops start-up with its setting named. */
function checkKeyStore(options: SecureContextOptions, props: ReadonlyMap<string, string>, prefix: string): void {
  try {
    createSecureContext(options)
  } catch (err) {
    const pkcs12 = (props.get('ssl.keystore.type') ?? 'PEM').toUpperCase() === 'PKCS12'
    const password = pkcs12 ? 'ssl.keystore.password' : 'ssl.key.password'
    throw new ConfigException(`${prefix}ssl.keystore.location=${props.get('ssl.keystore.location') ?? ''}: cannot load the key and certificate (${(err as Error).message}); check ${prefix}ssl.keystore.type and ${prefix}${password}`)
  }
}

/** ssl.client.authentication, or the older ssl.client.auth (true: REQUIRED; Connect's required|requested|none). */
function clientAuthentication(props: ReadonlyMap<string, string>, prefix: string): HttpTls['clientAuth'] {
  const modern = props.get('ssl.client.authentication')
  const older = props.get('ssl.client.auth')?.trim().toLowerCase()
  if (modern !== undefined && modern.trim().toUpperCase() !== 'NONE') return modern.trim().toLowerCase() as HttpTls['clientAuth']
  if (older === undefined || older === '' || older === 'false' || older === 'none') return 'none'
  if (older === 'true' || older === 'required') return 'required'
  if (older === 'requested') return 'requested'
  throw new ConfigException(`${prefix}ssl.client.auth=${older}: expected true, false, required, requested or none`)
}

/** Whether https listeners require a trusted client certificate (for the start-up exposure notice). */
export function requiresClientCertificates(props: ReadonlyMap<string, string>): boolean {
  return clientAuthentication(props, '') === 'required'
}

/**
 * The TLS of a service's https listeners, or undefined when none of `listeners` is https. Throws a
 * ConfigException naming the setting: an https listener without a key store, an unreadable store, a
 * wrong password, client authentication without a trust store.
 */
export function httpListenerTls(props: ReadonlyMap<string, string>, listeners: readonly string[], prefix = ''): HttpTls | undefined {
  const https = listeners.find((l) => /^https:/i.test(l.trim()))
  if (https === undefined) return undefined
  if (props.get('ssl.keystore.location') === undefined) throw new ConfigException(`${prefix}listeners=${https} is https and needs a key store: set ${prefix}ssl.keystore.location (and ${prefix}ssl.keystore.type)`)
  const clientAuth = clientAuthentication(props, prefix)
  if (clientAuth !== 'none' && props.get('ssl.truststore.location') === undefined) {
    throw new ConfigException(`${prefix}ssl.client.authentication=${clientAuth.toUpperCase()} needs ${prefix}ssl.truststore.location (PEM CA certificates that vouch for client certificates)`)
  }
  // The stores, versions and ciphers; none of the client-only options (host name checks).
  const { key, cert, pfx, passphrase, ca, minVersion, maxVersion, ciphers } = readStores(props, prefix)
  const options = { key, cert, pfx, passphrase, ca, minVersion, maxVersion, ciphers }
  checkKeyStore(options, props, prefix)
  return { options, clientAuth }
}

/** The TLS options for calls to https:// URLs (trust store, optional client certificate), or undefined when none is set. */
export function httpClientTls(props: ReadonlyMap<string, string>, prefix: string): ConnectionOptions | undefined {
  if (props.size === 0) return undefined
  const options = readStores(props, prefix)
  if (options.cert !== undefined || options.pfx !== undefined) checkKeyStore(options, props, prefix)
  return options
}
