// The Schema Registry's config table, with Confluent Schema Registry's names (SchemaRegistryConfig) and
// defaults. `skein schema-registry` reads these from a schema-registry.properties file and flags; a broker
// embeds the registry with the same settings under the prefix `schema.registry.` (schema.registry.listeners,
// schema.registry.kafkastore.topic, ...; a name that already starts with it, schema.registry.group.id, is
// used as it is), rows that broker-configs.ts derives from this table, so each default has one home.
import { atLeast, httpListeners, type ConfigDef, type ConfigValue, parseValue, type Validator } from './config-def.js'
import { clientSecurityProps, clientSecurityRows } from './client-security-names.js'
import { HTTP_AUTH_CONFIGS, type HttpAuthSettings, httpAuthSettings, REGISTRY_AUTH_CONFIGS } from './client-http-auth.js'
import { HTTP_LISTENER_TLS_CONFIGS, HTTP_LISTENER_TLS_NAMES, tlsProps } from './client-http-tls.js'


const LEVELS = ['NONE', 'BACKWARD', 'BACKWARD_TRANSITIVE', 'FORWARD', 'FORWARD_TRANSITIVE', 'FULL', 'FULL_TRANSITIVE']

const compatibilityLevel: Validator = (v) => (LEVELS.includes(String(v).toUpperCase()) ? undefined : `String must be one of: ${LEVELS.join(', ')}`)

/** A Schema Registry setting; embeddable: also a broker config (see embeddedRegistryName). */
export interface RegistryConfigDef extends ConfigDef {
  embeddable: boolean
}

const def = (d: RegistryConfigDef): RegistryConfigDef => d

/** The prefix of the registry's Kafka client settings (Confluent's kafkastore.security.protocol, ...). */
export const KAFKASTORE_PREFIX = 'kafkastore.'

export const REGISTRY_CONFIGS: readonly RegistryConfigDef[] = [
  def({ name: 'listeners', type: 'list', default: ['http://127.0.0.1:8081'], validator: httpListeners, validValues: 'http[s]://host:port,...', embeddable: true,
    doc: 'HTTP listeners of the Schema Registry, http:// or https:// (TLS from ssl.keystore.location) (loopback by default: name 0.0.0.0 or a host to serve other machines). In a broker (schema.registry.listeners) the default is none: the registry runs only when this is set.' }),
  def({ name: 'access.control.allow.origin', type: 'list', default: null, embeddable: true,
    doc: "Origins (http://host:port, comma-separated, or * for any) whose browser pages may, besides the listener's own, send state-changing requests (POST, PUT, PATCH, DELETE) or open WebSockets; other origins get 403. Default: the listener's own origin only." }),
  def({ name: 'kafkastore.bootstrap.servers', type: 'list', default: null, embeddable: false,
    doc: "Kafka brokers holding the registry's topic (standalone only: a broker's embedded registry connects to the broker's own listener)." }),
  def({ name: 'kafkastore.topic', type: 'string', default: '_schemas', embeddable: true, doc: 'The compacted topic that stores schemas, configs and modes.' }),
  def({ name: 'kafkastore.topic.replication.factor', type: 'int', default: 3, validator: atLeast(1), validValues: '[1,...]', embeddable: true,
    doc: "Replication factor of the registry's topic when the registry creates it: the smaller of this and the number of live brokers." }),
  def({ name: 'kafkastore.timeout.ms', type: 'int', default: 500, validator: atLeast(1), validValues: '[1,...]', embeddable: true,
    doc: 'How long a write may take to be produced and read back before the request fails.' }),
  def({ name: 'kafkastore.init.timeout.ms', type: 'int', default: 60000, validator: atLeast(1), validValues: '[1,...]', embeddable: true,
    doc: "How long the start-up replay of the registry's topic may take." }),
  def({ name: 'schema.registry.group.id', type: 'string', default: 'schema-registry', embeddable: true,
    doc: 'The group through which instances elect their primary (only the primary assigns ids).' }),
  def({ name: 'host.name', type: 'string', default: '', embeddable: true,
    doc: "The host other instances use to forward writes to this one; empty: the first listener's host (0.0.0.0 and :: become 127.0.0.1 and ::1)." }),
  def({ name: 'leader.eligibility', type: 'boolean', default: true, embeddable: true, doc: 'Whether this instance may be elected primary.' }),
  def({ name: 'schema.compatibility.level', type: 'string', default: 'backward', validator: compatibilityLevel, validValues: `[${LEVELS.join(', ')}]`, embeddable: true,
    doc: 'Compatibility level used when neither the subject, its context nor the global config sets one.' }),
  def({ name: 'request.body.max.bytes', type: 'int', default: 8388608, validator: atLeast(1024), validValues: '[1024,...]', embeddable: true,
    doc: 'Skein: largest request body read (schemas are text); a larger one is refused with 413 before it is read.' }),
  // Confluent's kafkastore.* security settings: the identity the registry's Kafka clients log in with.
  ...clientSecurityRows<RegistryConfigDef>(KAFKASTORE_PREFIX, "the registry's Kafka clients", { embeddable: true }),
  ...HTTP_AUTH_CONFIGS,
  ...REGISTRY_AUTH_CONFIGS,
  ...HTTP_LISTENER_TLS_CONFIGS,
]

const byName = new Map(REGISTRY_CONFIGS.map((d) => [d.name, d]))

export function registryConfigDef(name: string): RegistryConfigDef | undefined {
  return byName.get(name)
}

/** The prefix of the Schema Registry's settings among a broker's configs. */
export const EMBEDDED_REGISTRY_PREFIX = 'schema.registry.'

/** A registry setting's name among a broker's configs: schema.registry.<name>, unless it already starts so. */
export function embeddedRegistryName(name: string): string {
  return name.startsWith(EMBEDDED_REGISTRY_PREFIX) ? name : EMBEDDED_REGISTRY_PREFIX + name
}

/** Validates raw settings (Confluent names) into typed values; unknown names throw with the name. */
export function parseRegistryProperties(entries: Iterable<readonly [string, string]>): Map<string, ConfigValue> {
  const out = new Map<string, ConfigValue>()
  for (const [key, raw] of entries) {
    const d = byName.get(key)
    if (d === undefined) throw new Error(`Unknown Schema Registry config '${key}'`)
    out.set(d.name, parseValue(d, raw))
  }
  return out
}

/** The typed settings of a registry instance: given values over the table's defaults. */
export interface RegistrySettings {
  listeners: string[]
  /** access.control.allow.origin: origins besides the listener's own (see src/http). */
  allowedOrigins: string[]
  bootstrapServers: string[] | null
  topic: string
  replicationFactor: number
  timeoutMs: number
  initTimeoutMs: number
  groupId: string
  hostName: string
  leaderEligibility: boolean
  defaultCompatibility: string
  requestBodyMaxBytes: number
  /** The kafkastore.* security settings, prefix removed (security.protocol, sasl.*, ssl.*); empty: none set. */
  kafkastoreSecurityConfigs: ReadonlyMap<string, string>
  /** authentication.* (config/client-http-auth.ts). */
  httpAuth: HttpAuthSettings
  /** authentication.write.roles: roles that may change the registry. */
  writeRoles: string[]
  /**
   * The ssl.* settings of https listeners (config/client-http-tls.ts), as strings for client/http-tls.ts;
   * the trust store also checks the primary's certificate when a secondary forwards to it.
   */
  httpTls: ReadonlyMap<string, string>
}

export function registrySettings(values: ReadonlyMap<string, ConfigValue>): RegistrySettings {
  const get = (name: string): ConfigValue => (values.has(name) ? values.get(name)! : byName.get(name)!.default)
  return {
    listeners: (get('listeners') as string[] | null) ?? [],
    allowedOrigins: (get('access.control.allow.origin') as string[] | null) ?? [],
    bootstrapServers: get('kafkastore.bootstrap.servers') as string[] | null,
    topic: get('kafkastore.topic') as string,
    replicationFactor: get('kafkastore.topic.replication.factor') as number,
    timeoutMs: get('kafkastore.timeout.ms') as number,
    initTimeoutMs: get('kafkastore.init.timeout.ms') as number,
    groupId: get('schema.registry.group.id') as string,
    hostName: (get('host.name') as string | null) ?? '',
    leaderEligibility: get('leader.eligibility') as boolean,
    defaultCompatibility: String(get('schema.compatibility.level')).toUpperCase(),
    requestBodyMaxBytes: get('request.body.max.bytes') as number,
    kafkastoreSecurityConfigs: clientSecurityProps(KAFKASTORE_PREFIX, (name) => values.get(name)),
    httpAuth: httpAuthSettings(get, 'SchemaRegistry'),
    writeRoles: (get('authentication.write.roles') as string[] | null) ?? ['*'],
    httpTls: tlsProps('', HTTP_LISTENER_TLS_NAMES, get),
  }
}
