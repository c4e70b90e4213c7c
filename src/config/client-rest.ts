// The REST Proxy's config table, with Confluent REST Proxy's names (kafka-rest's KafkaRestConfig) where
// it has one, and its defaults. `skein rest` reads these from a .properties file and flags; a broker
// embeds the proxy with the same settings prefixed `rest.` (rest.listeners, rest.consumer.instance.timeout.ms,
// ...), rows that broker-configs.ts derives from this table, so each default has one home.
import { atLeast, httpListeners, type ConfigDef, type ConfigValue, parseValue } from './config-def.js'
import { clientSecurityProps, clientSecurityRows } from './client-security-names.js'
import { HTTP_CLIENT_TLS_NAMES, HTTP_LISTENER_TLS_CONFIGS, HTTP_LISTENER_TLS_NAMES, httpClientTlsRows, tlsProps } from './client-http-tls.js'
import { HTTP_AUTH_CONFIGS, type HttpAuthSettings, httpAuthSettings, REST_CALLER_CONFIGS, type RestCallerSettings, restCallerSettings } from './client-http-auth.js'


/** A REST Proxy setting; embeddable: also a broker config `rest.<name>`. */
export interface RestConfigDef extends ConfigDef {
  embeddable: boolean
}

const def = (d: RestConfigDef): RestConfigDef => d

/** The prefix of the proxy's Kafka client security settings (Confluent's client.security.protocol, ...). */
export const CLIENT_PREFIX = 'client.'

/** The prefix of the Schema Registry client's TLS settings (Confluent's schema.registry.ssl.*). */
export const SCHEMA_REGISTRY_CLIENT_PREFIX = 'schema.registry.'

export const REST_CONFIGS: readonly RestConfigDef[] = [
  def({ name: 'listeners', type: 'list', default: ['http://127.0.0.1:8082'], validator: httpListeners, validValues: 'http[s]://host:port,...', embeddable: true,
    doc: 'HTTP listeners of the REST Proxy, http:// or https:// (TLS from ssl.keystore.location) (loopback by default: name 0.0.0.0 or a host to serve other machines). In a broker (rest.listeners) the default is none: the proxy runs only when this is set.' }),
  def({ name: 'access.control.allow.origin', type: 'list', default: null, embeddable: true,
    doc: "Origins (http://host:port, comma-separated, or * for any) whose browser pages may, besides the listener's own, send state-changing requests (POST, PUT, PATCH, DELETE) or open WebSockets; other origins get 403. Default: the listener's own origin only." }),
  def({ name: 'bootstrap.servers', type: 'list', default: null, embeddable: false,
    doc: 'Kafka brokers the proxy connects to (standalone only: a broker\'s embedded proxy connects to the broker\'s own listener).' }),
  def({ name: 'id', type: 'string', default: '', embeddable: true, doc: 'Identifier of this proxy instance, part of generated consumer instance names.' }),
  def({ name: 'schema.registry.url', type: 'list', default: null, embeddable: true,
    doc: 'Schema Registry URL(s) for the avro, jsonschema and protobuf embedded formats; without it those formats are refused (422, error_code 42206).' }),
  def({ name: 'consumer.instance.timeout.ms', type: 'int', default: 300000, validator: atLeast(1), validValues: '[1,...]', embeddable: true,
    doc: 'Idle time after which a v2 consumer instance is closed and removed.' }),
  def({ name: 'consumer.request.timeout.ms', type: 'int', default: 1000, validator: atLeast(0), validValues: '[0,...]', embeddable: true,
    doc: 'Longest a v2 records request waits for records (the request\'s timeout parameter may shorten it).' }),
  def({ name: 'consumer.request.max.bytes', type: 'long', default: 67108864, validator: atLeast(1), validValues: '[1,...]', embeddable: true,
    doc: 'Most bytes of keys and values one v2 records request returns (max_bytes may lower it).' }),
  def({ name: 'request.body.max.bytes', type: 'int', default: 16777216, validator: atLeast(1024), validValues: '[1024,...]', embeddable: true,
    doc: 'Skein: largest request body read whole; a larger one is refused with 413 before it is read. Also the largest single record of a v3 streaming produce when api.v3.produce.request.size.limit.max.bytes is 0.' }),
  def({ name: 'api.v3.produce.request.size.limit.max.bytes', type: 'long', default: 0, validator: atLeast(0), validValues: '[0,...]', embeddable: true,
    doc: 'Largest single record (its JSON) of a v3 produce request; a larger one is answered with error_code 413 and the connection is closed. 0: request.body.max.bytes.' }),
  def({ name: 'streaming.connection.max.duration.ms', type: 'long', default: 86400000, validator: atLeast(1), validValues: '[1,...]', embeddable: true,
    doc: 'Longest a v3 streaming produce connection stays open; later records are answered with error_code 408 and the stream is closed.' }),
  def({ name: 'api.v2.enable', type: 'boolean', default: true, embeddable: true, doc: 'Serve the v2 API (topics, produce, consumer instances).' }),
  def({ name: 'api.v3.enable', type: 'boolean', default: true, embeddable: true, doc: 'Serve the v3 API (/v3/clusters/...).' }),
  def({ name: 'console.enable', type: 'boolean', default: true, embeddable: true,
    doc: 'Skein: serve the web console at /console/ (brokers, topics, messages, consumer groups, throughput).' }),
  def({ name: 'websocket.enable', type: 'boolean', default: true, embeddable: true,
    doc: 'Skein: serve WebSocket streaming at /ws/topics/{topic} (consume from an offset, a timestamp or a group; produce with acknowledgements).' }),
  def({ name: 'websocket.pause.bytes', type: 'int', default: 1048576, validator: atLeast(1024), validValues: '[1024,...]', embeddable: true,
    doc: 'Skein: a WebSocket stream stops reading from Kafka while more than this many bytes wait to be sent to its client.' }),
  def({ name: 'websocket.max.buffered.bytes', type: 'int', default: 16777216, validator: atLeast(1024), validValues: '[1024,...]', embeddable: true,
    doc: 'Skein: a WebSocket client with more than this many bytes waiting to be sent is disconnected (close code 1008).' }),
  def({ name: 'websocket.slow.client.timeout.ms', type: 'int', default: 30000, validator: atLeast(1), validValues: '[1,...]', embeddable: true,
    doc: 'Skein: a WebSocket client that keeps websocket.pause.bytes unread this long is disconnected (close code 1008).' }),
  def({ name: 'websocket.max.inflight.produce', type: 'int', default: 1000, validator: atLeast(1), validValues: '[1,...]', embeddable: true,
    doc: 'Skein: messages of one WebSocket being produced at once; more are answered with error_code 42901 at once.' }),
  def({ name: 'producer.linger.ms', type: 'int', default: 5, validator: atLeast(0), validValues: '[0,...]', embeddable: true,
    doc: 'linger.ms of the proxy\'s producer (records of concurrent requests share its batches).' }),
  def({ name: 'producer.acks', type: 'string', default: 'all', validator: (v) => (['all', '-1', '0', '1'].includes(String(v)) ? undefined : 'String must be one of: all, -1, 0, 1'), validValues: '[all, -1, 0, 1]', embeddable: true,
    doc: 'acks of the proxy\'s producer.' }),
  // Confluent's client.* security settings: the identity the proxy's Kafka clients log in with.
  ...clientSecurityRows<RestConfigDef>(CLIENT_PREFIX, "the proxy's Kafka clients (admin, producer, consumers)", { embeddable: true }),
  ...HTTP_AUTH_CONFIGS,
  ...HTTP_LISTENER_TLS_CONFIGS,
  ...httpClientTlsRows(SCHEMA_REGISTRY_CLIENT_PREFIX, "the proxy's Schema Registry client"),
  ...REST_CALLER_CONFIGS,
]

const byName = new Map(REST_CONFIGS.map((d) => [d.name, d]))

export function restConfigDef(name: string): RestConfigDef | undefined {
  return byName.get(name)
}

/** The prefix of the REST Proxy's settings among a broker's configs. */
export const EMBEDDED_REST_PREFIX = 'rest.'

/** The prefix of the settings passed on to the proxy's producer (Kafka producer configs). */
const PRODUCER_PREFIX = 'producer.'

/** Validates raw settings (Confluent names) into typed values; unknown names throw with the name. */
export function parseRestProperties(entries: Iterable<readonly [string, string]>): Map<string, ConfigValue> {
  const out = new Map<string, ConfigValue>()
  for (const [key, raw] of entries) {
    const d = byName.get(key)
    if (d === undefined) throw new Error(`Unknown REST Proxy config '${key}'`)
    out.set(d.name, parseValue(d, raw))
  }
  return out
}

/** The typed settings of a proxy: given values over the table's defaults. */
export interface RestSettings {
  listeners: string[]
  /** access.control.allow.origin: origins besides the listener's own (see src/http). */
  allowedOrigins: string[]
  bootstrapServers: string[] | null
  id: string
  schemaRegistryUrl: string[] | null
  consumerInstanceTimeoutMs: number
  consumerRequestTimeoutMs: number
  consumerRequestMaxBytes: number
  requestBodyMaxBytes: number
  produceRecordMaxBytes: number
  streamingConnectionMaxDurationMs: number
  apiV2Enable: boolean
  apiV3Enable: boolean
  /** The producer.* settings, prefix removed: Kafka producer configs for client/client-config.ts to apply. */
  producerConfigs: ReadonlyMap<string, string>
  /** The client.* security settings, prefix removed (security.protocol, sasl.*, ssl.*); empty: none set. */
  clientSecurityConfigs: ReadonlyMap<string, string>
  consoleEnable: boolean
  websocketEnable: boolean
  websocketPauseBytes: number
  websocketMaxBufferedBytes: number
  websocketSlowClientTimeoutMs: number
  websocketMaxInflightProduce: number
  /** authentication.* (config/client-http-auth.ts). */
  httpAuth: HttpAuthSettings
  /** The ssl.* settings of https listeners (config/client-http-tls.ts), as strings for client/http-tls.ts. */
  httpTls: ReadonlyMap<string, string>
  /** schema.registry.ssl.*, prefix removed: the TLS of the Schema Registry client for https:// URLs. */
  schemaRegistryTls: ReadonlyMap<string, string>
  /** authentication.kafka.*: whether requests act in Kafka as their caller (config/client-http-auth.ts). */
  caller: RestCallerSettings
}

export function restSettings(values: ReadonlyMap<string, ConfigValue>): RestSettings {
  const get = (name: string): ConfigValue => (values.has(name) ? values.get(name)! : byName.get(name)!.default)
  const bodyMax = get('request.body.max.bytes') as number
  const recordMax = get('api.v3.produce.request.size.limit.max.bytes') as number
  return {
    listeners: (get('listeners') as string[] | null) ?? [],
    allowedOrigins: (get('access.control.allow.origin') as string[] | null) ?? [],
    bootstrapServers: get('bootstrap.servers') as string[] | null,
    id: (get('id') as string | null) ?? '',
    schemaRegistryUrl: get('schema.registry.url') as string[] | null,
    consumerInstanceTimeoutMs: get('consumer.instance.timeout.ms') as number,
    consumerRequestTimeoutMs: get('consumer.request.timeout.ms') as number,
    consumerRequestMaxBytes: get('consumer.request.max.bytes') as number,
    requestBodyMaxBytes: bodyMax,
    produceRecordMaxBytes: recordMax > 0 ? recordMax : bodyMax,
    streamingConnectionMaxDurationMs: get('streaming.connection.max.duration.ms') as number,
    apiV2Enable: get('api.v2.enable') as boolean,
    apiV3Enable: get('api.v3.enable') as boolean,
    producerConfigs: new Map(REST_CONFIGS.filter((d) => d.name.startsWith(PRODUCER_PREFIX)).map((d) => [d.name.slice(PRODUCER_PREFIX.length), String(get(d.name))])),
    clientSecurityConfigs: clientSecurityProps(CLIENT_PREFIX, (name) => values.get(name)),
    consoleEnable: get('console.enable') as boolean,
    websocketEnable: get('websocket.enable') as boolean,
    websocketPauseBytes: get('websocket.pause.bytes') as number,
    websocketMaxBufferedBytes: get('websocket.max.buffered.bytes') as number,
    websocketSlowClientTimeoutMs: get('websocket.slow.client.timeout.ms') as number,
    websocketMaxInflightProduce: get('websocket.max.inflight.produce') as number,
    httpAuth: httpAuthSettings(get, 'KafkaRest'),
    httpTls: tlsProps('', HTTP_LISTENER_TLS_NAMES, get),
    schemaRegistryTls: tlsProps(SCHEMA_REGISTRY_CLIENT_PREFIX, HTTP_CLIENT_TLS_NAMES, (name) => values.get(name)),
    caller: restCallerSettings(get),
  }
}
