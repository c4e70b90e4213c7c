// TLS settings of the HTTP services, with Confluent rest-utils' names (RestConfig: ssl.keystore.location,
// ssl.client.authentication, ...): the key store of https:// listeners and the trust store that vouches
// for client certificates. The REST Proxy and the Schema Registry spread these rows into their tables (a
// broker embeds them as rest.ssl.* and schema.registry.ssl.*); Connect's worker config has its own names
// (listeners.https.ssl.* or ssl.*, read by src/connect/runtime/worker-config.ts's restTlsProps). The rows only carry strings:
// client/http-tls.ts is the one place that turns them into TLS options, with client/client-security-
// config.ts's store reading. Also the rows of an HTTP client's trust store (the REST Proxy's
// schema.registry.ssl.*, Confluent's names for the Schema Registry client).
import type { ConfigDef, ConfigValue } from './config-def.js'

/** A setting of these tables; embeddable: also a broker config under the product's prefix. */
export interface HttpTlsConfigDef extends ConfigDef {
  embeddable: boolean
}

const def = (d: HttpTlsConfigDef): HttpTlsConfigDef => d

export const CLIENT_AUTHENTICATION_VALUES = ['NONE', 'REQUESTED', 'REQUIRED'] as const

/** The https listeners' settings (rest-utils' names). */
export const HTTP_LISTENER_TLS_CONFIGS: readonly HttpTlsConfigDef[] = [
  def({ name: 'ssl.keystore.location', type: 'string', default: null, embeddable: true,
    doc: 'The key store of https:// listeners: with ssl.keystore.type=PEM one file holding the private key and the certificate chain, with PKCS12 a .p12 file. Needed when a listener is https.' }),
  def({ name: 'ssl.keystore.type', type: 'string', default: 'PEM', embeddable: true, validValues: '[PEM, PKCS12]',
    validator: (v) => (v === null || ['PEM', 'PKCS12'].includes(String(v).toUpperCase()) ? undefined : 'String must be one of: PEM, PKCS12 (JKS cannot be read here)'),
    doc: "Format of ssl.keystore.location. Confluent's default is JKS, which cannot be read here: the default is PEM." }),
  def({ name: 'ssl.keystore.password', type: 'password', default: null, embeddable: true, doc: 'The password of a PKCS12 key store.' }),
  def({ name: 'ssl.key.password', type: 'password', default: null, embeddable: true, doc: 'The password of an encrypted private key in a PEM key store.' }),
  def({ name: 'ssl.truststore.location', type: 'string', default: null, embeddable: true,
    doc: 'PEM file of the CA certificates that vouch for client certificates (ssl.client.authentication REQUESTED or REQUIRED).' }),
  def({ name: 'ssl.truststore.type', type: 'string', default: 'PEM', embeddable: true, validValues: '[PEM]',
    validator: (v) => (v === null || String(v).toUpperCase() === 'PEM' ? undefined : 'String must be PEM (JKS and PKCS12 trust stores cannot be read here)'),
    doc: 'Format of ssl.truststore.location: PEM.' }),
  def({ name: 'ssl.truststore.password', type: 'password', default: null, embeddable: true, doc: 'Accepted for compatibility; a PEM trust store has no password.' }),
  def({ name: 'ssl.client.authentication', type: 'string', default: 'NONE', embeddable: true, validValues: `[${CLIENT_AUTHENTICATION_VALUES.join(', ')}]`,
    validator: (v) => (v === null || (CLIENT_AUTHENTICATION_VALUES as readonly string[]).includes(String(v).toUpperCase()) ? undefined : `String must be one of: ${CLIENT_AUTHENTICATION_VALUES.join(', ')}`),
    doc: 'Client certificates on https listeners (mutual TLS). REQUIRED: a client without a certificate signed by a CA of ssl.truststore.location fails the TLS handshake. REQUESTED: a client may send none, but one it sends must be trusted. NONE: none asked for.' }),
  def({ name: 'ssl.client.auth', type: 'boolean', default: false, embeddable: true,
    doc: 'The older name: true means REQUIRED when ssl.client.authentication is NONE (a REQUESTED or REQUIRED ssl.client.authentication wins).' }),
  def({ name: 'ssl.enabled.protocols', type: 'list', default: null, embeddable: true, validValues: '[TLSv1.2, TLSv1.3]', doc: 'TLS versions the https listeners accept. Default: TLSv1.2 and TLSv1.3.' }),
  def({ name: 'ssl.cipher.suites', type: 'list', default: null, embeddable: true, doc: 'Cipher suites the https listeners accept (OpenSSL names). Default: node:tls defaults.' }),
]

/** The names of an HTTP client's TLS settings (a trust store for the server's certificate, a key store for its own). */
export const HTTP_CLIENT_TLS_NAMES: readonly string[] = [
  'ssl.truststore.location', 'ssl.truststore.type', 'ssl.truststore.password',
  'ssl.keystore.location', 'ssl.keystore.type', 'ssl.keystore.password', 'ssl.key.password',
  'ssl.endpoint.identification.algorithm',
]

const SECRET = new Set(['ssl.truststore.password', 'ssl.keystore.password', 'ssl.key.password'])

/** The rows of an HTTP client's TLS settings under `prefix` (the REST Proxy's schema.registry.ssl.*). */
export function httpClientTlsRows(prefix: string, whose: string): HttpTlsConfigDef[] {
  return HTTP_CLIENT_TLS_NAMES.map((name) => def({
    name: prefix + name,
    type: SECRET.has(name) ? 'password' : 'string',
    default: null,
    embeddable: true,
    doc: `${name} of ${whose} for https:// URLs (PEM trust store; PEM or PKCS12 key store for a client certificate).`,
  }))
}

/** The settings under `prefix` among `names`, prefix removed, as strings (what client/http-tls.ts reads). */
export function tlsProps(prefix: string, names: readonly string[], get: (name: string) => ConfigValue | undefined): Map<string, string> {
  const out = new Map<string, string>()
  for (const name of names) {
    const v = get(prefix + name)
    if (v !== null && v !== undefined) out.set(name, Array.isArray(v) ? v.join(',') : String(v))
  }
  return out
}

export const HTTP_LISTENER_TLS_NAMES: readonly string[] = HTTP_LISTENER_TLS_CONFIGS.map((d) => d.name)
