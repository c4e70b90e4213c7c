// The HTTP authentication settings shared by the REST Proxy and the Schema Registry, with Confluent's
// names (rest-utils' RestConfig: authentication.method, authentication.realm, authentication.roles,
// authentication.skip.paths) plus Skein's authentication.users.file, which names the users file directly
// where Confluent names it through a JVM JAAS file (docs/security.md, "The HTTP side", says why). Kept in
// a file of its own so the products' tables only spread these rows in.
import type { ConfigDef, ConfigValue } from './config-def.js'

/** A setting of this table; embeddable: also a broker config under the product's prefix. */
export interface HttpAuthConfigDef extends ConfigDef {
  embeddable: boolean
}

const def = (d: HttpAuthConfigDef): HttpAuthConfigDef => d

export const HTTP_AUTH_CONFIGS: readonly HttpAuthConfigDef[] = [
  def({ name: 'authentication.method', type: 'string', default: 'NONE', embeddable: true, validValues: '[NONE, BASIC]',
    validator: (v) => (['NONE', 'BASIC'].includes(String(v).toUpperCase()) ? undefined : 'String must be one of: NONE, BASIC'),
    doc: 'NONE: no authentication. BASIC: every request and WebSocket upgrade needs HTTP BASIC credentials of a user of authentication.users.file (401 otherwise).' }),
  def({ name: 'authentication.realm', type: 'string', default: '', embeddable: true,
    doc: 'The realm named in the 401 challenge (WWW-Authenticate: Basic realm="..."). Empty: KafkaRest for the REST Proxy, SchemaRegistry for the registry.' }),
  def({ name: 'authentication.roles', type: 'list', default: ['*'], embeddable: true,
    doc: 'Roles allowed in: an authenticated user holding none of them gets 403. * lets every user of the file in.' }),
  def({ name: 'authentication.skip.paths', type: 'list', default: null, embeddable: true,
    doc: 'Paths served without authentication: exact paths, or prefixes ending in /* (e.g. /health,/ready,/metrics). Default: none, every path needs credentials.' }),
  def({ name: 'authentication.users.file', type: 'string', default: null, embeddable: true,
    doc: "Skein: the users, in Jetty's PropertyFileLoginModule format: one `user: password[,role...]` a line. Needed with authentication.method=BASIC." }),
]

/** The registry's one more row: which roles may change it (its other roles only read). */
export const REGISTRY_AUTH_CONFIGS: readonly HttpAuthConfigDef[] = [
  def({ name: 'authentication.write.roles', type: 'list', default: ['*'], embeddable: true,
    doc: 'Skein: roles whose users may change the registry (POST, PUT, DELETE); other authenticated users get 403 for those and may only read. * lets every authenticated user write.' }),
]

const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']

/** The REST Proxy's rows for acting in Kafka as the authenticated caller (src/rest/caller-identity.ts). */
export const REST_CALLER_CONFIGS: readonly HttpAuthConfigDef[] = [
  def({ name: 'authentication.kafka.sasl.mechanism', type: 'string', default: '', embeddable: true, validValues: `[, ${SASL_MECHANISMS.join(', ')}]`,
    validator: (v) => (v === '' || v === null || SASL_MECHANISMS.includes(String(v).toUpperCase()) ? undefined : `String must be empty or one of: ${SASL_MECHANISMS.join(', ')}`),
    doc: "Skein: with authentication.method=BASIC, the caller is the principal: each user's requests (v2 and v3 produce, consume, admin; console pages) go through Kafka clients that log in to the broker as that user with this SASL mechanism and the user's HTTP password, so Kafka's ACLs apply to them. Empty: every request uses the proxy's own client identity." }),
  def({ name: 'authentication.kafka.bootstrap.servers', type: 'list', default: null, embeddable: true,
    doc: "Skein: the SASL_PLAINTEXT or SASL_SSL listener(s) the callers' clients connect to (authentication.kafka.security.protocol says which). Default: the proxy's own bootstrap servers." }),
  def({ name: 'authentication.kafka.security.protocol', type: 'string', default: 'SASL_PLAINTEXT', embeddable: true, validValues: '[SASL_PLAINTEXT, SASL_SSL]',
    validator: (v) => (['SASL_PLAINTEXT', 'SASL_SSL'].includes(String(v).toUpperCase()) ? undefined : 'String must be one of: SASL_PLAINTEXT, SASL_SSL'),
    doc: "Skein: how the callers' clients reach authentication.kafka.bootstrap.servers. SASL_SSL: over TLS, trusting (and, with a key store, presenting) what the proxy's own client.ssl.* settings name, as the proxy's own clients do; without client.ssl.* settings, the TLS of the proxy's own identity (inside a broker by default the inter-broker listener's stores)." }),
  def({ name: 'authentication.kafka.max.users', type: 'int', default: 100, embeddable: true, validValues: '[1,...]',
    validator: (v) => (typeof v === 'number' && v >= 1 ? undefined : 'Value must be at least 1'),
    doc: 'Skein: most users whose Kafka clients are held at once; the least recently used idle one is closed for a new one (a new user while all are busy gets 429, error_code 42901).' }),
  def({ name: 'authentication.kafka.idle.ms', type: 'long', default: 300000, embeddable: true, validValues: '[1000,...]',
    validator: (v) => (typeof v === 'number' && v >= 1000 ? undefined : 'Value must be at least 1000'),
    doc: "Skein: a user's Kafka clients unused this long are closed." }),
]

/** The REST Proxy's caller-identity settings. */
export interface RestCallerSettings {
  /** null: requests use the proxy's own identity. */
  mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512' | null
  bootstrapServers: string[] | null
  /** SASL_SSL: the callers' clients use TLS built from the proxy's client.ssl.* settings. */
  securityProtocol: 'SASL_PLAINTEXT' | 'SASL_SSL'
  maxUsers: number
  idleMs: number
}

export function restCallerSettings(get: (name: string) => ConfigValue): RestCallerSettings {
  const mechanism = String(get('authentication.kafka.sasl.mechanism') ?? '').toUpperCase()
  return {
    mechanism: mechanism === '' ? null : (mechanism as RestCallerSettings['mechanism']),
    bootstrapServers: get('authentication.kafka.bootstrap.servers') as string[] | null,
    securityProtocol: String(get('authentication.kafka.security.protocol') ?? 'SASL_PLAINTEXT').toUpperCase() === 'SASL_SSL' ? 'SASL_SSL' : 'SASL_PLAINTEXT',
    maxUsers: get('authentication.kafka.max.users') as number,
    idleMs: get('authentication.kafka.idle.ms') as number,
  }
}

/** The typed settings: what src/http's BasicAuthenticator is built from. */
export interface HttpAuthSettings {
  method: 'NONE' | 'BASIC'
  realm: string
  roles: string[]
  skipPaths: string[]
  usersFile: string | null
}

/** The settings among a product's values (get: the product's value-or-default lookup). */
export function httpAuthSettings(get: (name: string) => ConfigValue, defaultRealm: string): HttpAuthSettings {
  const realm = (get('authentication.realm') as string | null) ?? ''
  return {
    method: String(get('authentication.method')).toUpperCase() === 'BASIC' ? 'BASIC' : 'NONE',
    realm: realm === '' ? defaultRealm : realm,
    roles: (get('authentication.roles') as string[] | null) ?? ['*'],
    skipPaths: (get('authentication.skip.paths') as string[] | null) ?? [],
    usersFile: get('authentication.users.file') as string | null,
  }
}
