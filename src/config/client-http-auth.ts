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
