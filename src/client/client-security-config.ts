// Kafka's client security properties (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.*) turned
// into the Skein client's ClientSecurity; client-config.ts applies it for every product that takes Kafka's
// client configs. Key and trust stores are PEM (ssl.keystore.type=PEM, ssl.truststore.type=PEM, or the
// inline ssl.keystore.certificate.chain / ssl.keystore.key / ssl.truststore.certificates) or a PKCS12
// key store; JKS cannot be read by node:tls and is refused with a message saying so.
import { readFileSync } from 'node:fs'
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls'
import { CLIENT_SECURITY_NAMES } from '../config/client-security-names.js'
import { ConfigException } from './errors.js'
import { credentialsFromJaas, type ClientSecurity, type SaslMechanism } from './sasl.js'

/** The names this module reads; their list has one home, config/client-security-names.ts (also the REST Proxy's and registry's rows). */
export const SECURITY_PROPERTIES: ReadonlySet<string> = new Set(CLIENT_SECURITY_NAMES)

const PROTOCOLS = ['PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL']
const MECHANISMS: readonly SaslMechanism[] = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']

function readFile(name: string, path: string): Buffer {
  try {
    return readFileSync(path)
  } catch (err) {
    throw new ConfigException(`${name}=${path}: ${(err as Error).message}`)
  }
}

function storeType(props: ReadonlyMap<string, string>, name: string, fallback: string): string {
  const t = (props.get(name) ?? fallback).trim().toUpperCase()
  if (t === 'JKS') throw new ConfigException(`${name}=JKS: JKS stores cannot be read here; use PEM (or PKCS12 for the key store)`)
  return t
}

/** The ClientSecurity the properties describe, or undefined for PLAINTEXT. Throws ConfigException on a bad combination. */
export function securityFromProps(props: ReadonlyMap<string, string>): ClientSecurity | undefined {
  const protocol = (props.get('security.protocol') ?? 'PLAINTEXT').trim().toUpperCase()
  if (!PROTOCOLS.includes(protocol)) throw new ConfigException(`security.protocol=${protocol}: expected one of ${PROTOCOLS.join(', ')}`)
  if (protocol === 'PLAINTEXT') return undefined
  const security: ClientSecurity = {}
  if (protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL') {
    const mechanism = (props.get('sasl.mechanism') ?? 'GSSAPI').trim().toUpperCase() as SaslMechanism
    if (!MECHANISMS.includes(mechanism)) throw new ConfigException(`sasl.mechanism=${mechanism}: supported are ${MECHANISMS.join(', ')}`)
    const jaas = props.get('sasl.jaas.config')
    if (jaas === undefined) throw new ConfigException(`security.protocol=${protocol} needs sasl.jaas.config with username and password`)
    const credentials = credentialsFromJaas(jaas)
    if (credentials === undefined) throw new ConfigException('sasl.jaas.config: expected username="..." password="..."')
    security.sasl = { mechanism, ...credentials }
  }
  if (protocol === 'SSL' || protocol === 'SASL_SSL') security.tls = tlsFromProps(props)
  return security
}

/** The TLS options of Kafka's ssl.* client settings (key and trust stores, versions, ciphers); also read by http-tls.ts for HTTPS. */
export function tlsFromProps(props: ReadonlyMap<string, string>): TlsConnectionOptions {
  const tls: TlsConnectionOptions = {}
  const trustInline = props.get('ssl.truststore.certificates')
  const trustPath = props.get('ssl.truststore.location')
  if (trustInline !== undefined) tls.ca = trustInline
  else if (trustPath !== undefined) {
    if (storeType(props, 'ssl.truststore.type', 'PEM') !== 'PEM') throw new ConfigException('ssl.truststore.type: only PEM trust stores can be read here')
    tls.ca = readFile('ssl.truststore.location', trustPath)
  }
  const keyPassword = props.get('ssl.key.password')
  const chain = props.get('ssl.keystore.certificate.chain')
  const inlineKey = props.get('ssl.keystore.key')
  const keyPath = props.get('ssl.keystore.location')
  if (chain !== undefined || inlineKey !== undefined) {
    if (chain === undefined || inlineKey === undefined) throw new ConfigException('ssl.keystore.certificate.chain and ssl.keystore.key go together')
    tls.cert = chain
    tls.key = inlineKey
    if (keyPassword !== undefined) tls.passphrase = keyPassword
  } else if (keyPath !== undefined) {
    const type = storeType(props, 'ssl.keystore.type', 'PEM')
    const bytes = readFile('ssl.keystore.location', keyPath)
    if (type === 'PKCS12') {
      tls.pfx = bytes
      tls.passphrase = props.get('ssl.keystore.password') ?? keyPassword
    } else if (type === 'PEM') {
      // One file with the certificate chain and the private key, as Kafka's PEM key store.
      tls.cert = bytes
      tls.key = bytes
      if (keyPassword !== undefined) tls.passphrase = keyPassword
    } else {
      throw new ConfigException(`ssl.keystore.type=${type}: expected PEM or PKCS12`)
    }
  }
  // ssl.endpoint.identification.algorithm: 'https' (Kafka's default) checks the host name; empty skips it.
  if ((props.get('ssl.endpoint.identification.algorithm') ?? 'https').trim() === '') tls.checkServerIdentity = () => undefined
  const enabled = (props.get('ssl.enabled.protocols') ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (enabled.length > 0) {
    const versions = enabled.filter((p) => p === 'TLSv1.2' || p === 'TLSv1.3') as ('TLSv1.2' | 'TLSv1.3')[]
    if (versions.length === 0) throw new ConfigException(`ssl.enabled.protocols=${enabled.join(',')}: supported are TLSv1.2 and TLSv1.3`)
    tls.minVersion = versions.includes('TLSv1.2') ? 'TLSv1.2' : 'TLSv1.3'
    tls.maxVersion = versions.includes('TLSv1.3') ? 'TLSv1.3' : 'TLSv1.2'
  }
  const ciphers = props.get('ssl.cipher.suites')
  if (ciphers !== undefined && ciphers.trim() !== '') tls.ciphers = ciphers.split(',').map((s) => s.trim()).join(':')
  return tls
}

/**
 * securityFromProps for a product that takes the settings under a prefix (the REST Proxy's client.*, the
 * registry's kafkastore.*): the error names the setting as the user wrote it.
 */
export function prefixedSecurity(prefix: string, props: ReadonlyMap<string, string>): ClientSecurity | undefined {
  try {
    return securityFromProps(props)
  } catch (err) {
    if (err instanceof ConfigException) throw new ConfigException(`${prefix}${err.message}`)
    throw err
  }
}
