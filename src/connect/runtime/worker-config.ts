// The worker's settings with Kafka Connect's names and defaults (WorkerConfig, DistributedConfig,
// StandaloneConfig). Settings a client takes are passed on: `producer.*`, `consumer.*` and `admin.*` to
// the worker's clients, converter settings as `key.converter.*` / `value.converter.*`.
import { ConfigDef, NO_DEFAULT, Validators, type Value } from '../api/config-def.js'

export type WorkerMode = 'distributed' | 'standalone'

function common(): ConfigDef {
  return new ConfigDef()
    .define('bootstrap.servers', 'LIST', ['localhost:9092'], 'HIGH', 'A list of host/port pairs to use for establishing the initial connection to the Kafka cluster.')
    .define('client.id', 'STRING', '', 'LOW', 'An id string to pass to the server when making requests.')
    .define('key.converter', 'CLASS', NO_DEFAULT, 'HIGH', 'Converter class used to convert between Kafka Connect format and the serialized form that is written to Kafka. This controls the format of the keys in messages written to or read from Kafka.')
    .define('value.converter', 'CLASS', NO_DEFAULT, 'HIGH', 'Converter class used to convert between Kafka Connect format and the serialized form that is written to Kafka. This controls the format of the values in messages written to or read from Kafka.')
    .define('header.converter', 'CLASS', 'org.apache.kafka.connect.storage.SimpleHeaderConverter', 'LOW', 'HeaderConverter class used to convert between Kafka Connect format and the serialized form that is written to Kafka.')
    .define('plugin.path', 'LIST', null, 'LOW', 'List of paths separated by commas (,) that contain plugins: directories whose subdirectories are npm packages or folders with a package.json or an index module, or such folders themselves.')
    .define('listeners', 'LIST', ['http://:8083'], 'LOW', 'List of comma-separated URIs the REST API will listen on: http:// or https:// (TLS from listeners.https.ssl.*, else ssl.*). Leave hostname empty to bind to 127.0.0.1.')
    .define('access.control.allow.origin', 'STRING', '', 'LOW', "Origins (comma-separated, or * for any) whose browser pages may, besides the listener's own, send state-changing REST requests; others get 403. Kafka sets this as the CORS Access-Control-Allow-Origin value; Skein also refuses cross-origin writes without it.")
    .define('rest.host.name', 'STRING', null, 'LOW', 'Deprecated: hostname for the REST API (use listeners).')
    .define('rest.port', 'INT', null, 'LOW', 'Deprecated: port for the REST API to listen on (use listeners).')
    .define('rest.advertised.host.name', 'STRING', null, 'LOW', 'If this is set, this is the hostname that will be given out to other workers to connect to.')
    .define('rest.advertised.port', 'INT', null, 'LOW', 'If this is set, this is the port that will be given out to other workers to connect to.')
    .define('rest.advertised.listener', 'STRING', null, 'LOW', 'Sets the advertised listener (HTTP) which will be given to other workers to use.')
    .define('offset.flush.interval.ms', 'LONG', 60000, 'LOW', 'Interval at which to try committing offsets for tasks.', { validator: Validators.atLeast(1) })
    .define('offset.flush.timeout.ms', 'LONG', 5000, 'LOW', 'Maximum number of milliseconds to wait for records to flush and partition offset data to be committed to offset storage before cancelling the process and restoring the offset data to be committed in a future attempt.')
    .define('task.shutdown.graceful.timeout.ms', 'LONG', 5000, 'LOW', 'Amount of time to wait for tasks to shutdown gracefully.')
    .define('connector.client.config.override.policy', 'STRING', 'All', 'MEDIUM', 'Which client configurations connectors may override (producer.override.*, consumer.override.*, admin.override.*): None, Principal or All.', {
      validator: Validators.in('None', 'Principal', 'All'),
    })
    .define('topic.creation.enable', 'BOOLEAN', true, 'LOW', 'Whether to allow automatic creation of topics used by source connectors, when source connectors are configured with `topic.creation.` properties.')
    .define('rest.extension.classes', 'LIST', '', 'LOW', `REST extensions to load. Skein provides ${'org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension'} (HTTP BASIC authentication of every REST request, users from the KafkaConnect section of the JAAS file); any other class stops the worker at start-up.`)
    .define('java.security.auth.login.config', 'STRING', null, 'LOW', 'Skein: the JAAS file the BASIC authentication REST extension reads its KafkaConnect section from (Kafka takes it as the JVM flag -Djava.security.auth.login.config=...; without this setting Skein reads that flag from KAFKA_OPTS).')
    .define('response.http.headers.config', 'STRING', '', 'LOW', 'Rules for REST API HTTP response headers')
    .define('admin.listeners', 'LIST', null, 'LOW', 'List of comma-separated URIs the Admin REST API will listen on (default: the main listeners).')
}

export function distributedConfigDef(): ConfigDef {
  return common()
    .define('group.id', 'STRING', NO_DEFAULT, 'HIGH', 'A unique string that identifies the Connect cluster group this worker belongs to.')
    .define('session.timeout.ms', 'INT', 10000, 'HIGH', 'The timeout used to detect worker failures.')
    .define('heartbeat.interval.ms', 'INT', 3000, 'HIGH', 'The expected time between heartbeats to the group coordinator when using Kafka\'s group management facilities.')
    .define('rebalance.timeout.ms', 'INT', 60000, 'HIGH', 'The maximum allowed time for each worker to join the group once a rebalance has begun.')
    .define('worker.sync.timeout.ms', 'INT', 3000, 'MEDIUM', 'When the worker is out of sync with other workers and needs to resynchronize configurations, wait up to this amount of time before giving up, leaving the group, and waiting a backoff period before rejoining.')
    .define('worker.unsync.backoff.ms', 'INT', 300000, 'MEDIUM', 'When the worker is out of sync with other workers and fails to catch up within worker.sync.timeout.ms, leave the Connect cluster for this long before rejoining.')
    .define('config.storage.topic', 'STRING', NO_DEFAULT, 'HIGH', 'The name of the Kafka topic where connector configurations are stored')
    .define('config.storage.replication.factor', 'SHORT', 3, 'LOW', 'Replication factor used when creating the configuration storage topic (-1: the broker default).', { validator: (_n, v) => (v === 0 || (typeof v === 'number' && v < -1) ? 'Value must be -1 or at least 1' : undefined) })
    .define('offset.storage.topic', 'STRING', NO_DEFAULT, 'HIGH', 'The name of the Kafka topic where source connector offsets are stored')
    .define('offset.storage.partitions', 'INT', 25, 'LOW', 'The number of partitions used when creating the offset storage topic (-1: the broker default).')
    .define('offset.storage.replication.factor', 'SHORT', 3, 'LOW', 'Replication factor used when creating the offset storage topic (-1: the broker default).')
    .define('status.storage.topic', 'STRING', NO_DEFAULT, 'HIGH', 'The name of the Kafka topic where connector and task status are stored')
    .define('status.storage.partitions', 'INT', 5, 'LOW', 'The number of partitions used when creating the status storage topic (-1: the broker default).')
    .define('status.storage.replication.factor', 'SHORT', 3, 'LOW', 'Replication factor used when creating the status storage topic (-1: the broker default).')
    .define('connect.protocol', 'STRING', 'sessioned', 'LOW', 'Compatibility mode for Kafka Connect Protocol: eager, compatible or sessioned.', { validator: Validators.inIgnoreCase('eager', 'compatible', 'sessioned') })
    .define('scheduled.rebalance.max.delay.ms', 'INT', 300000, 'LOW', 'The maximum delay that is scheduled in order to wait for the return of one or more departed workers before rebalancing and reassigning their connectors and tasks to the group.', { validator: Validators.atLeast(0) })
    .define('exactly.once.source.support', 'STRING', 'disabled', 'HIGH', 'Whether to enable exactly-once support for source connectors in the cluster by using transactions to write source records and their source offsets: disabled, preparing or enabled.', {
      validator: Validators.inIgnoreCase('disabled', 'preparing', 'enabled'),
    })
    .define('transactional.id', 'STRING', null, 'LOW', 'Not used: transactional producers of exactly-once source tasks get ids from group.id, connector and task.')
}

export function standaloneConfigDef(): ConfigDef {
  return common().define('offset.storage.file.filename', 'STRING', NO_DEFAULT, 'HIGH', 'File to store source connector offsets in')
}

export interface WorkerConfig {
  mode: WorkerMode
  values: Record<string, Value>
  /** Every setting as given, for prefixed pass-through (producer.*, key.converter.*). */
  originals: Record<string, string>
}

export function parseWorkerConfig(mode: WorkerMode, props: Record<string, string>): WorkerConfig {
  const def = mode === 'distributed' ? distributedConfigDef() : standaloneConfigDef()
  return { mode, values: def.parse(props), originals: { ...props } }
}

/** The settings under a prefix, with the prefix removed (Kafka's originalsWithPrefix). */
export function withPrefix(props: Record<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(props)) if (k.startsWith(prefix)) out[k.slice(prefix.length)] = v
  return out
}

/** The TLS settings of https listeners Kafka Connect reads (SSLUtils: the listener's key and trust stores). */
const REST_TLS_NAMES = [
  'ssl.keystore.location', 'ssl.keystore.type', 'ssl.keystore.password', 'ssl.key.password', 'ssl.keystore.certificate.chain', 'ssl.keystore.key',
  'ssl.truststore.location', 'ssl.truststore.type', 'ssl.truststore.password', 'ssl.truststore.certificates',
  'ssl.client.auth', 'ssl.enabled.protocols', 'ssl.cipher.suites', 'ssl.endpoint.identification.algorithm',
]

/**
 * The https listeners' ssl.* settings and the prefix they were given under: as Kafka Connect's
 * valuesWithPrefixAllOrNothing, listeners.https.ssl.* when any of them is set, else the worker's ssl.*.
 * Also the TLS of the worker's calls to other workers (forwarding to the leader).
 */
export function restTlsProps(c: Pick<WorkerConfig, 'originals'>): { props: Map<string, string>; prefix: string } {
  const httpsPrefix = 'listeners.https.'
  const prefixed = Object.keys(c.originals).some((k) => k.startsWith(httpsPrefix))
  const prefix = prefixed ? httpsPrefix : ''
  const props = new Map<string, string>()
  for (const name of REST_TLS_NAMES) {
    const v = c.originals[prefix + name]
    if (v !== undefined && v.trim() !== '') props.set(name, v.trim())
  }
  return { props, prefix }
}

/** The REST listeners, with rest.host.name / rest.port as the deprecated fallback. */
export function restListeners(c: WorkerConfig): string[] {
  const given = c.originals['listeners']
  if (given === undefined && (c.values['rest.port'] !== null || c.values['rest.host.name'] !== null)) {
    return [`http://${(c.values['rest.host.name'] as string | null) ?? '127.0.0.1'}:${(c.values['rest.port'] as number | null) ?? 8083}`]
  }
  // An empty host binds to 127.0.0.1 here (Kafka binds every interface; a loopback default is safer).
  return (c.values['listeners'] as string[]).map((l) => l.replace(/^(https?):\/\/:/, '$1://127.0.0.1:'))
}
