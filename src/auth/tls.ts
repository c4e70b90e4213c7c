// TLS settings of an SSL or SASL_SSL listener, from Kafka's ssl.* configs (each may be listener-prefixed),
// as node:tls server options. Key stores: PEM (one file holding the private key and the certificate
// chain, or ssl.keystore.key + ssl.keystore.certificate.chain inline; an encrypted key is opened with
// ssl.key.password) and PKCS12 (ssl.keystore.password). Trust stores: PEM (a file of certificates, or
// ssl.truststore.certificates inline). JKS, Kafka's
// default type, cannot be read by node:tls: a listener that would need it stops startup.
import { readFileSync } from 'node:fs'
import type { TlsOptions } from 'node:tls'
import type { ConfigValue } from '../config/config-def.js'

/** One listener's view of the broker config (BrokerConfig.forListener bound to the listener). */
export type ListenerConfig = (name: string) => ConfigValue

export interface ListenerTls {
  options: TlsOptions
  clientAuth: 'required' | 'requested' | 'none'
}

const PROTOCOL_ORDER = ['TLSv1.2', 'TLSv1.3'] as const

function str(cfg: ListenerConfig, name: string): string | null {
  const v = cfg(name)
  return typeof v === 'string' && v !== '' ? v : null
}

function readFile(path: string, what: string, listener: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new Error(`listener ${listener}: cannot read ${what} ${path}: ${(err as Error).message}`)
  }
}

/** The node:tls server options of a listener; throws an Error naming the listener and setting when they cannot work. */
export function listenerTlsOptions(listener: string, cfg: ListenerConfig): ListenerTls {
  const options: TlsOptions = {}
  const keystoreType = (str(cfg, 'ssl.keystore.type') ?? 'JKS').toUpperCase()
  const keystoreLocation = str(cfg, 'ssl.keystore.location')
  const keyPassword = str(cfg, 'ssl.key.password')
  if (keystoreType === 'PEM') {
    const inlineKey = str(cfg, 'ssl.keystore.key')
    const inlineChain = str(cfg, 'ssl.keystore.certificate.chain')
    if (inlineKey !== null || inlineChain !== null) {
      if (inlineKey === null || inlineChain === null) throw new Error(`listener ${listener}: ssl.keystore.key and ssl.keystore.certificate.chain must be set together`)
      if (keystoreLocation !== null) throw new Error(`listener ${listener}: set ssl.keystore.location or the inline ssl.keystore.key/ssl.keystore.certificate.chain, not both`)
      options.key = inlineKey
      if (keyPassword !== null) options.passphrase = keyPassword
      options.cert = inlineChain
    } else {
      if (keystoreLocation === null) throw new Error(`listener ${listener}: an SSL listener needs a key store (ssl.keystore.location, or ssl.keystore.key and ssl.keystore.certificate.chain)`)
      // One PEM file holds the key and the chain; node:tls picks each out of it.
      const pem = readFile(keystoreLocation, 'ssl.keystore.location', listener)
      options.key = pem
      if (keyPassword !== null) options.passphrase = keyPassword
      options.cert = pem
    }
  } else if (keystoreType === 'PKCS12') {
    if (keystoreLocation === null) throw new Error(`listener ${listener}: ssl.keystore.type=PKCS12 needs ssl.keystore.location`)
    options.pfx = readFile(keystoreLocation, 'ssl.keystore.location', listener)
    const password = str(cfg, 'ssl.keystore.password')
    if (password !== null) options.passphrase = password
  } else {
    throw new Error(`listener ${listener}: ssl.keystore.type=${keystoreType} is not supported; use PEM or PKCS12`)
  }

  const truststoreLocation = str(cfg, 'ssl.truststore.location')
  const inlineTrusted = str(cfg, 'ssl.truststore.certificates')
  if (truststoreLocation !== null || inlineTrusted !== null) {
    const truststoreType = (str(cfg, 'ssl.truststore.type') ?? 'JKS').toUpperCase()
    if (truststoreType === 'PEM') {
      options.ca = inlineTrusted ?? readFile(truststoreLocation!, 'ssl.truststore.location', listener)
    } else {
      throw new Error(`listener ${listener}: ssl.truststore.type=${truststoreType} is not supported; use PEM`)
    }
  }

  const clientAuth = (str(cfg, 'ssl.client.auth') ?? 'none') as ListenerTls['clientAuth']
  if (clientAuth !== 'none') {
    if (options.ca === undefined && truststoreLocation === null) throw new Error(`listener ${listener}: ssl.client.auth=${clientAuth} needs a trust store (ssl.truststore.location or ssl.truststore.certificates)`)
    options.requestCert = true
    // requested: a certificate that fails verification is not a failed handshake; the connection is
    // then ANONYMOUS (Kafka's "requested" lets clients without a certificate in).
    options.rejectUnauthorized = clientAuth === 'required'
  }

  const enabled = (cfg('ssl.enabled.protocols') as string[] | null) ?? ['TLSv1.2', 'TLSv1.3']
  const versions = PROTOCOL_ORDER.filter((p) => enabled.includes(p))
  if (versions.length === 0) throw new Error(`listener ${listener}: ssl.enabled.protocols enables none of ${PROTOCOL_ORDER.join(', ')}`)
  options.minVersion = versions[0]
  options.maxVersion = versions[versions.length - 1]
  const ciphers = (cfg('ssl.cipher.suites') as string[] | null) ?? []
  if (ciphers.length > 0) {
    // TLS 1.3 suites go to ciphersuites-style names in the same list; node:tls accepts both in `ciphers`.
    options.ciphers = ciphers.join(':')
  }
  return { options, clientAuth }
}
