// The broker config schema, as data: Kafka's names, types, defaults (Kafka 4.0's documented broker
// configs unless a row says otherwise), docs and dynamic update mode. loadBrokerConfig validates
// server.properties against this table, renderConfigReference prints it, and the topic-config table
// names its broker defaults from here.

import { atLeast, between, listOf, nonEmptyString, oneOf, LONG_MAX, type ConfigDef, type DynamicMode, type Validator } from './config-def.js'

/** inter.broker.protocol.version: Kafka's form, e.g. 2.6, 2.7-IV1, 3.9 (0.x.y for the oldest). */
function interBrokerProtocolVersion(): Validator {
  return (v) => (typeof v === 'string' && !/^\d+\.\d+(\.\d+)?(-IV\d+)?$/.test(v) ? `${v} is not a version like 2.6 or 3.9` : undefined)
}
import { RECORD_BATCH_OVERHEAD } from '../protocol/records/batch.js'
import { COMPRESSION_TYPE_NAMES } from '../protocol/records/compression.js'
import { EMBEDDED_REST_PREFIX, REST_CONFIGS } from './client-rest.js'
import { REGISTRY_CONFIGS, embeddedRegistryName } from './client-registry.js'
import { listenersValidator, securityProtocolMapValidator } from './listeners.js'
import { BUILT_IN_ASSIGNOR_NAMES, assignorName } from '../domain/consumer-group-assignors.js'

export interface BrokerConfigDef extends ConfigDef {
  dynamic: DynamicMode
  /** Other names for the same setting (node.id for broker.id). Setting both to different values is an error. */
  aliases?: string[]
  /** Accepted so that Kafka's own server.properties loads, but has no effect in Skein (the doc says why). */
  ignored?: boolean
  /** May also be set for one listener as listener.name.<listener>.<name>. */
  listenerPrefixable?: boolean
}

/** compression.type values: the record format's (protocol/records/compression.ts maps each to its codec). */
export const COMPRESSION_TYPES = COMPRESSION_TYPE_NAMES
export const CLEANUP_POLICIES = ['compact', 'delete'] as const
export const TIMESTAMP_TYPES = ['CreateTime', 'LogAppendTime'] as const
/** Kafka's rack-aware replica selector (KIP-392), the one replica.selector.class Skein knows. */
export const RACK_AWARE_REPLICA_SELECTOR = 'org.apache.kafka.common.replica.RackAwareReplicaSelector'

/**
 * The smallest segment.bytes / log.segment.bytes Skein accepts: one RecordBatch v2 header (61 bytes,
 * protocol/records/batch.ts), so a segment can hold a batch. Kafka's topic-level floor of 14 is the
 * smallest message of the v0 format (LegacyRecord.RECORD_OVERHEAD_V0), which Skein never stores; Kafka
 * 4.0 raised the broker-level floor to 1 MiB, which Skein does not follow so that tests can roll segments
 * after a few records. A batch larger than segment.bytes is refused with RECORD_LIST_TOO_LARGE.
 */
export const MIN_SEGMENT_BYTES = RECORD_BATCH_OVERHEAD

/**
 * The smallest segment.index.bytes / log.index.size.max.bytes Skein accepts: room for one entry in each
 * index of a segment (offset index entries are 8 bytes, time index entries 12; storage/segment.ts).
 * Kafka accepts 4, which holds no entry at all.
 */
export const MIN_SEGMENT_INDEX_BYTES = 12

const def = (d: BrokerConfigDef): BrokerConfigDef => d

/** group.consumer.assignors: built-in assignors only (Skein loads no assignor classes), none twice. */
function consumerGroupAssignors(): Validator {
  return (v) => {
    if (!Array.isArray(v)) return undefined
    if (v.length === 0) return 'Empty list is not allowed'
    const bad = v.find((s) => assignorName(s) === undefined)
    if (bad !== undefined) return `Invalid assignor ${bad}; Skein has the built-in assignors ${BUILT_IN_ASSIGNOR_NAMES.join(' and ')}`
    if (new Set(v.map((s) => assignorName(s))).size !== v.length) return 'An assignor is listed twice'
    return undefined
  }
}

/** max.connections.per.ip.overrides: "host:count,host:count" (an IPv6 host is everything before the last colon). */
export function parseConnectionOverrides(text: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const item of text.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    const i = item.lastIndexOf(':')
    const count = Number(item.slice(i + 1))
    if (i <= 0 || !Number.isInteger(count) || count < 0) throw new Error(`malformed entry '${item}', expected host:count`)
    out.set(item.slice(0, i), count)
  }
  return out
}

function connectionOverridesValidator(v: unknown): string | undefined {
  if (typeof v !== 'string') return undefined
  try {
    parseConnectionOverrides(v)
    return undefined
  } catch (err) {
    return (err as Error).message
  }
}
const HOUR_MS = 3_600_000

/**
 * Why the row for `num.io.threads` / `num.network.threads` says "ignored": Kafka sizes a request handler
 * pool and a network thread pool with them. Skein's network runs on the main thread's event loop, and
 * partition work runs on `io.threads` shard workers; mapping Kafka's default 8 I/O threads onto shard
 * workers would oversubscribe small machines, so neither value changes Skein's threads.
 */
export const BROKER_CONFIGS: readonly BrokerConfigDef[] = [
  // Identity and listeners
  def({ name: 'broker.id', aliases: ['node.id'], type: 'int', default: 0, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'The id of this broker (node.id is accepted as an alias). Unique within a cluster.' }),
  def({ name: 'cluster.id', type: 'string', default: null, dynamic: 'read-only',
    doc: 'Skein: the cluster id. When absent, it is read from meta.properties in the first log dir, or generated (22-char base64url UUID) and persisted there.' }),
  def({ name: 'broker.rack', type: 'string', default: null, dynamic: 'read-only',
    doc: 'Rack of the broker: registered with the cluster, reported in Metadata, and used for rack-aware replica assignment when every broker has one.' }),
  def({ name: 'listeners', type: 'list', default: ['PLAINTEXT://127.0.0.1:9092'], dynamic: 'per-broker', validator: listenersValidator(false), validValues: 'NAME://host:port,...',
    doc: 'Comma-separated listener URIs NAME://host:port to accept connections on. An empty host binds all interfaces; port 0 picks a free port.' }),
  def({ name: 'advertised.listeners', type: 'list', default: null, dynamic: 'per-broker', validator: listenersValidator(false),
    doc: 'Listener URIs handed to clients in Metadata; defaults to listeners.' }),
  def({ name: 'listener.security.protocol.map', type: 'list', default: ['PLAINTEXT:PLAINTEXT', 'SSL:SSL', 'SASL_PLAINTEXT:SASL_PLAINTEXT', 'SASL_SSL:SASL_SSL'], dynamic: 'per-broker',
    validator: securityProtocolMapValidator(),
    doc: 'Map of listener names to security protocols, LISTENER:PROTOCOL,...' }),
  def({ name: 'inter.broker.listener.name', type: 'string', default: null, dynamic: 'read-only',
    doc: 'Listener brokers use to reach each other (controller requests, replication); its advertised endpoint is registered with the others. Defaults to the listener named by security.inter.broker.protocol when that is set, else the first listener (Kafka: the PLAINTEXT one). Any protocol: the broker\'s own connections use its TLS and SASL settings (see security.inter.broker.protocol).' }),

  // Security: TLS, SASL, authorization. Rows marked listener-prefixable may also be set for one listener
  // as listener.name.<listener>.<name> (listener name in lower case), and the SASL JAAS config per
  // mechanism as listener.name.<listener>.<mechanism>.sasl.jaas.config, as Kafka names them.
  def({ name: 'ssl.keystore.type', type: 'string', default: 'JKS', dynamic: 'per-broker', listenerPrefixable: true, validator: oneOf('JKS', 'PKCS12', 'PEM'), validValues: '[JKS, PKCS12, PEM]',
    doc: 'Format of the key store of SSL and SASL_SSL listeners. Skein reads PEM (a file with the private key and certificate chain, or ssl.keystore.key + ssl.keystore.certificate.chain inline) and PKCS12; JKS (Kafka\'s default) stops startup with a message naming the listener.' }),
  def({ name: 'ssl.keystore.location', type: 'string', default: null, dynamic: 'per-broker', listenerPrefixable: true,
    doc: 'Key store file: PEM (private key and certificate chain in one file) or PKCS12.' }),
  def({ name: 'ssl.keystore.password', type: 'password', default: null, dynamic: 'per-broker', listenerPrefixable: true,
    doc: 'Password of a PKCS12 key store (for PEM, the key is decrypted with ssl.key.password).' }),
  def({ name: 'ssl.key.password', type: 'password', default: null, dynamic: 'per-broker', listenerPrefixable: true,
    doc: 'Password of the private key in the key store (an encrypted PEM key).' }),
  def({ name: 'ssl.keystore.key', type: 'password', default: null, dynamic: 'per-broker', listenerPrefixable: true,
    doc: 'PEM private key inline (with ssl.keystore.type=PEM), instead of ssl.keystore.location.' }),
  def({ name: 'ssl.keystore.certificate.chain', type: 'password', default: null, dynamic: 'per-broker', listenerPrefixable: true,
    doc: 'PEM certificate chain inline (with ssl.keystore.type=PEM), instead of ssl.keystore.location.' }),
  def({ name: 'ssl.truststore.type', type: 'string', default: 'JKS', dynamic: 'per-broker', listenerPrefixable: true, validator: oneOf('JKS', 'PKCS12', 'PEM'), validValues: '[JKS, PKCS12, PEM]',
    doc: 'Format of the trust store that verifies client certificates (ssl.client.auth): PEM; JKS and PKCS12 are refused at startup when a trust store is set.' }),
  def({ name: 'ssl.truststore.location', type: 'string', default: null, dynamic: 'per-broker', listenerPrefixable: true,
    doc: 'Trust store file of PEM certificates.' }),
  def({ name: 'ssl.truststore.password', type: 'password', default: null, dynamic: 'per-broker', listenerPrefixable: true,
    doc: 'Accepted for Kafka compatibility: PEM trust stores have no password.' }),
  def({ name: 'ssl.truststore.certificates', type: 'password', default: null, dynamic: 'per-broker', listenerPrefixable: true,
    doc: 'PEM trusted certificates inline (with ssl.truststore.type=PEM), instead of ssl.truststore.location.' }),
  def({ name: 'ssl.client.auth', type: 'string', default: 'none', dynamic: 'read-only', listenerPrefixable: true, validator: oneOf('required', 'requested', 'none'), validValues: '[required, requested, none]',
    doc: 'Client certificates on SSL listeners: required (mutual TLS; a client without a certificate the trust store verifies is refused), requested (verified when sent), none. The principal of an SSL connection with a client certificate is its subject, mapped by ssl.principal.mapping.rules; without one it is ANONYMOUS.' }),
  def({ name: 'ssl.enabled.protocols', type: 'list', default: ['TLSv1.2', 'TLSv1.3'], dynamic: 'read-only', listenerPrefixable: true, validator: listOf(['TLSv1.2', 'TLSv1.3'], false), validValues: '[TLSv1.2, TLSv1.3]',
    doc: 'TLS versions accepted on SSL and SASL_SSL listeners.' }),
  def({ name: 'ssl.protocol', type: 'string', default: 'TLSv1.3', dynamic: 'read-only', listenerPrefixable: true, ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored: the versions come from ssl.enabled.protocols.' }),
  def({ name: 'ssl.cipher.suites', type: 'list', default: [], dynamic: 'read-only', listenerPrefixable: true,
    doc: 'Cipher suites allowed (empty: Node\'s defaults). OpenSSL names (ECDHE-RSA-AES128-GCM-SHA256) or TLS 1.3 names (TLS_AES_128_GCM_SHA256); Java\'s TLS 1.2 names are not translated.' }),
  def({ name: 'ssl.principal.mapping.rules', type: 'string', default: 'DEFAULT', dynamic: 'read-only', listenerPrefixable: true,
    doc: 'Rules mapping a client certificate\'s subject (RFC 2253 form, CN first) to a user name: RULE:pattern/replacement/[LU] entries separated by commas, then DEFAULT (the whole subject), as Kafka writes them.' }),
  def({ name: 'ssl.endpoint.identification.algorithm', type: 'string', default: 'https', dynamic: 'read-only', listenerPrefixable: true,
    doc: 'On the broker\'s own TLS connections to other brokers (an SSL or SASL_SSL inter-broker listener): https checks the other broker\'s host name or IP against its certificate; empty checks only the chain.' }),
  def({ name: 'sasl.enabled.mechanisms', type: 'list', default: ['GSSAPI'], dynamic: 'read-only', listenerPrefixable: true, validator: listOf(['GSSAPI', 'PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'], true),
    validValues: '[PLAIN, SCRAM-SHA-256, SCRAM-SHA-512]',
    doc: 'SASL mechanisms served on SASL_PLAINTEXT and SASL_SSL listeners. Skein serves PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; GSSAPI (Kafka\'s default) and OAUTHBEARER stop startup when a SASL listener would offer them.' }),
  def({ name: 'sasl.jaas.config', type: 'password', default: null, dynamic: 'read-only', listenerPrefixable: true,
    doc: 'JAAS login module config of a SASL mechanism, normally set as listener.name.<listener>.<mechanism>.sasl.jaas.config. PLAIN: org.apache.kafka.common.security.plain.PlainLoginModule required user_<name>="<password>" ...; SCRAM: ScramLoginModule (users come from the SCRAM credentials in the cluster metadata).' }),
  def({ name: 'sasl.mechanism.inter.broker.protocol', type: 'string', default: 'GSSAPI', dynamic: 'read-only',
    doc: 'SASL mechanism brokers authenticate to each other with when the inter-broker listener is SASL_PLAINTEXT or SASL_SSL: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka\'s default GSSAPI stops startup then), one of the listener\'s sasl.enabled.mechanisms. The broker logs in with the username and password options of listener.name.<listener>.<mechanism>.sasl.jaas.config; with SCRAM its credentials must exist in the cluster metadata before the brokers connect.' }),
  def({ name: 'security.inter.broker.protocol', type: 'string', default: 'PLAINTEXT', dynamic: 'read-only', validator: oneOf('PLAINTEXT', 'SSL', 'SASL_PLAINTEXT', 'SASL_SSL'), validValues: '[PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL]',
    doc: 'Security protocol between brokers, when inter.broker.listener.name is not set: the inter-broker listener is then the one of that name (Kafka\'s rule; set only one of the two). The broker\'s own connections to other brokers use the listener\'s protocol with its ssl.* stores (trust store, and key store for mutual TLS) and sasl.mechanism.inter.broker.protocol.' }),
  def({ name: 'connections.max.reauth.ms', type: 'long', default: 0, dynamic: 'read-only', listenerPrefixable: true, validator: atLeast(0), validValues: '[0,...]',
    doc: 'Above 0: a SASL session lasts at most this long (SaslAuthenticate v1+ tells the client, KIP-368); a client that does not re-authenticate in time has its connection closed at its next request. 0: sessions do not expire.' }),

  def({ name: 'authorizer.class.name', type: 'string', default: '', dynamic: 'read-only',
    doc: 'The authorizer: empty for none (every request allowed), or kafka.security.authorizer.AclAuthorizer / org.apache.kafka.metadata.authorizer.StandardAuthorizer for Skein\'s ACL authorizer (ACLs in the cluster metadata, managed with CreateAcls/DeleteAcls and skein acls).' }),
  def({ name: 'super.users', type: 'string', default: '', dynamic: 'read-only',
    doc: 'Principals allowed everything, separated by semicolons: User:admin;User:CN=broker,O=Example.' }),
  def({ name: 'allow.everyone.if.no.acl.found', type: 'boolean', default: false, dynamic: 'read-only',
    doc: 'With an authorizer: allow an operation on a resource that no ACL matches (otherwise it is denied).' }),

  // Cluster: ZooKeeper and the controller
  def({ name: 'zookeeper.connect', type: 'string', default: null, dynamic: 'read-only',
    doc: 'ZooKeeper connection string host:port[,host:port...][/chroot] of the cluster\'s metadata (Kafka\'s znode layout under the chroot, created if missing). Unset: a single broker with its metadata in cluster-metadata.json in its log dir.' }),
  def({ name: 'zookeeper.session.timeout.ms', type: 'int', default: 18000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'ZooKeeper session timeout: a broker whose session expires (silent this long) is dead to the cluster, and its partitions elect new leaders. The server clamps it to [2, 20] ticks.' }),
  def({ name: 'zookeeper.connection.timeout.ms', type: 'int', default: null, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How long the broker waits to connect to ZooKeeper at startup (and for each new session); defaults to zookeeper.session.timeout.ms.' }),
  def({ name: 'broker.heartbeat.interval.ms', type: 'int', default: 250, dynamic: 'read-only', validator: atLeast(10), validValues: '[10,...]',
    doc: 'How often the controller checks that each broker answers, and each broker that the controller answers (and pings ZooKeeper). Kafka\'s KRaft name; its default there is 2000.' }),
  def({ name: 'broker.session.timeout.ms', type: 'int', default: 2000, dynamic: 'read-only', validator: atLeast(100), validValues: '[100,...]',
    doc: 'The controller fences a broker that has not answered it for this long (or at once when its port refuses connections): its partitions elect new leaders before its ZooKeeper session expires, and it is taken back when it answers again. A broker that has heard from neither ZooKeeper nor the controller for half of it stops acting as leader (NOT_LEADER_OR_FOLLOWER) until it does; brokers delete the registration of a controller that refuses connections or stays silent this long. Kafka\'s KRaft name; its default there is 9000. See docs/cluster.md, "Failure detection".' }),
  def({ name: 'controller.socket.timeout.ms', type: 'int', default: 30000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Request timeout of the controller\'s connections to brokers (a request without an answer is sent again on a new connection).' }),
  def({ name: 'controlled.shutdown.enable', type: 'boolean', default: true, dynamic: 'read-only',
    doc: 'Before stopping, a broker of a ZooKeeper cluster asks the controller to move its partition leaderships to other in-sync replicas.' }),
  def({ name: 'controlled.shutdown.max.retries', type: 'int', default: 3, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Attempts of the controlled shutdown request before the broker stops anyway.' }),
  def({ name: 'controlled.shutdown.retry.backoff.ms', type: 'long', default: 5000, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Wait between controlled shutdown attempts.' }),

  // Skein threads, and Kafka's thread pools accepted for compatibility
  def({ name: 'io.threads', type: 'int', default: 0, dynamic: 'read-only', validator: between(0, 256), validValues: '[0,...,256]',
    doc: 'Skein: number of partition worker threads (shards, a Piscina pool). 0 (the default) runs partitions inline on the main thread, which used the least CPU per record and had the lowest latency in bench/results/RESULTS.md; workers keep file writes off the event loop when the disk stalls.' }),
  def({ name: 'num.io.threads', type: 'int', default: 8, dynamic: 'cluster-wide', ignored: true, validator: atLeast(1), validValues: '[1,...]',
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no request handler pool; use io.threads for partition worker threads.' }),
  def({ name: 'num.network.threads', type: 'int', default: 3, dynamic: 'cluster-wide', ignored: true, validator: atLeast(1), validValues: '[1,...]',
    doc: 'Accepted for Kafka compatibility and ignored: Skein serves all sockets from the main event loop.' }),
  def({ name: 'num.recovery.threads.per.data.dir', type: 'int', default: 2, dynamic: 'cluster-wide', ignored: true, validator: atLeast(1), validValues: '[1,...]',
    doc: 'Accepted for Kafka compatibility and ignored: each shard worker recovers its own partitions.' }),
  def({ name: 'background.threads', type: 'int', default: 10, dynamic: 'cluster-wide', ignored: true, validator: atLeast(1), validValues: '[1,...]',
    doc: 'Accepted for Kafka compatibility and ignored: retention and flush run on each shard worker.' }),

  // KRaft settings that appear in Kafka's own server.properties
  def({ name: 'process.roles', type: 'list', default: [], dynamic: 'read-only', ignored: true, validator: listOf(['broker', 'controller'], true),
    doc: 'Accepted for Kafka compatibility and ignored: a Skein node is always broker and controller.' }),
  def({ name: 'controller.quorum.voters', type: 'list', default: [], dynamic: 'read-only', ignored: true, doc: 'Accepted for Kafka compatibility and ignored.' }),
  def({ name: 'controller.quorum.bootstrap.servers', type: 'list', default: [], dynamic: 'read-only', ignored: true, doc: 'Accepted for Kafka compatibility and ignored.' }),
  def({ name: 'controller.listener.names', type: 'string', default: null, dynamic: 'read-only', ignored: true, doc: 'Accepted for Kafka compatibility and ignored.' }),

  // Sockets and requests
  def({ name: 'socket.request.max.bytes', type: 'int', default: 104857600, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'The maximum number of bytes in a socket request; larger requests close the connection.' }),
  def({ name: 'socket.send.buffer.bytes', type: 'int', default: 102400, dynamic: 'read-only', doc: 'SO_SNDBUF of server sockets; -1 uses the OS default.' }),
  def({ name: 'socket.receive.buffer.bytes', type: 'int', default: 102400, dynamic: 'read-only', doc: 'SO_RCVBUF of server sockets; -1 uses the OS default.' }),
  def({ name: 'connections.max.idle.ms', type: 'long', default: 600000, dynamic: 'read-only', doc: 'Idle connections are closed after this many milliseconds.' }),
  def({ name: 'queued.max.request.bytes', type: 'long', default: -1, dynamic: 'read-only', doc: 'Bytes of requests queued before the broker stops reading sockets; -1 means no limit.' }),
  def({ name: 'queued.max.requests', type: 'int', default: 500, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Requests in flight per broker before the broker stops reading sockets.' }),
  def({ name: 'request.max.list.elements', type: 'int', default: 100000, dynamic: 'read-only', validator: atLeast(1000), validValues: '[1000,...]',
    doc: 'Skein only: the most list elements (topics, partitions, groups, resources, ... counted at every depth together) one client request may declare; a request declaring more is refused before its lists are built and its connection closed, as Kafka does with a request it cannot decode. Bounds the memory and main-thread time one request can take. Requests between brokers are exempt.' }),
  def({ name: 'fetch.max.bytes', type: 'int', default: 57671680, dynamic: 'read-only', validator: atLeast(1024), validValues: '[1024,...]',
    doc: 'The maximum number of bytes we will return for a fetch request. Must be at least 1024.' }),
  def({ name: 'max.incremental.fetch.session.cache.slots', type: 'int', default: 1000, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'The maximum number of incremental fetch sessions (KIP-227) the broker keeps; 0 turns sessions off.' }),
  // Kafka's SASL login and Kerberos settings (GSSAPI, OAUTHBEARER token refresh), per-broker dynamic as
  // its listener configs: Skein has neither mechanism, so they are stored and described, with no effect.
  def({ name: 'sasl.kerberos.service.name', type: 'string', default: null, dynamic: 'per-broker', ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no Kerberos (GSSAPI) authentication.' }),
  def({ name: 'sasl.kerberos.kinit.cmd', type: 'string', default: '/usr/bin/kinit', dynamic: 'per-broker', ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no Kerberos (GSSAPI) authentication.' }),
  def({ name: 'sasl.kerberos.ticket.renew.window.factor', type: 'double', default: 0.8, dynamic: 'per-broker', ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no Kerberos (GSSAPI) authentication.' }),
  def({ name: 'sasl.kerberos.ticket.renew.jitter', type: 'double', default: 0.05, dynamic: 'per-broker', ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no Kerberos (GSSAPI) authentication.' }),
  def({ name: 'sasl.kerberos.min.time.before.relogin', type: 'long', default: 60000, dynamic: 'per-broker', ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no Kerberos (GSSAPI) authentication.' }),
  def({ name: 'sasl.kerberos.principal.to.local.rules', type: 'list', default: ['DEFAULT'], dynamic: 'per-broker', ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no Kerberos (GSSAPI) authentication.' }),
  def({ name: 'sasl.login.refresh.window.factor', type: 'double', default: 0.8, dynamic: 'per-broker', ignored: true, validator: between(0.5, 1), validValues: '[0.5,...,1.0]',
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no OAUTHBEARER login to refresh.' }),
  def({ name: 'sasl.login.refresh.window.jitter', type: 'double', default: 0.05, dynamic: 'per-broker', ignored: true, validator: between(0, 0.25), validValues: '[0.0,...,0.25]',
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no OAUTHBEARER login to refresh.' }),
  def({ name: 'sasl.login.refresh.min.period.seconds', type: 'short', default: 60, dynamic: 'per-broker', ignored: true, validator: between(0, 900), validValues: '[0,...,900]',
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no OAUTHBEARER login to refresh.' }),
  def({ name: 'sasl.login.refresh.buffer.seconds', type: 'short', default: 300, dynamic: 'per-broker', ignored: true, validator: between(0, 3600), validValues: '[0,...,3600]',
    doc: 'Accepted for Kafka compatibility and ignored: Skein has no OAUTHBEARER login to refresh.' }),
  def({ name: 'sasl.server.max.receive.size', type: 'int', default: 524288, dynamic: 'read-only', doc: 'The maximum receive size allowed before and during initial SASL authentication.' }),
  def({ name: 'message.max.bytes', type: 'int', default: 1048588, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'The largest record batch size allowed (after compression if enabled). Topic-level: max.message.bytes.' }),

  // Topic creation
  def({ name: 'num.partitions', type: 'int', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]', doc: 'Default number of partitions per topic.' }),
  def({ name: 'default.replication.factor', type: 'int', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Replication factor of topics created without one (auto-creation, CreateTopics with -1); above the number of live brokers: INVALID_REPLICATION_FACTOR.' }),
  def({ name: 'auto.create.topics.enable', type: 'boolean', default: true, dynamic: 'read-only', doc: 'Create a topic when a client asks for an unknown one in Metadata.' }),
  def({ name: 'delete.topic.enable', type: 'boolean', default: true, dynamic: 'read-only', doc: 'Allow topics to be deleted; when false DeleteTopics answers TOPIC_DELETION_DISABLED.' }),
  def({ name: 'min.insync.replicas', type: 'int', default: 1, dynamic: 'cluster-wide', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Minimum in-sync replicas for an acks=all produce to succeed.' }),
  def({ name: 'unclean.leader.election.enable', type: 'boolean', default: false, dynamic: 'cluster-wide', doc: 'Allow replicas not in the ISR to become leader (may lose data).' }),
  def({ name: 'compression.type', type: 'string', default: 'producer', dynamic: 'cluster-wide', validator: oneOf(...COMPRESSION_TYPES), validValues: `[${COMPRESSION_TYPES.join(', ')}]`,
    doc: "Final compression type of stored batches; 'producer' keeps the producer's codec." }),
  def({ name: 'compression.gzip.level', type: 'int', default: -1, dynamic: 'cluster-wide', validator: between(-1, 9), validValues: '[1,...,9] or -1', doc: 'Level of gzip compression when compression.type=gzip.' }),
  def({ name: 'compression.lz4.level', type: 'int', default: 9, dynamic: 'cluster-wide', validator: between(1, 17), validValues: '[1,...,17]', doc: 'Level of lz4 compression when compression.type=lz4.' }),
  def({ name: 'compression.zstd.level', type: 'int', default: 3, dynamic: 'cluster-wide', validator: between(-131072, 22), validValues: '[-131072,...,22]', doc: 'Level of zstd compression when compression.type=zstd.' }),

  // Log dirs and segments
  def({ name: 'log.dirs', type: 'list', default: null, dynamic: 'read-only',
    doc: 'Directories for log data, comma-separated (Kafka\'s JBOD); defaults to log.dir. Relative paths resolve against the working directory. Each holds its own meta.properties and its partitions (checkpoints included); a new partition goes to the directory with the fewest partitions. A directory that fails (an I/O error, in a cluster a full disk too, or unwritable to the periodic probe) takes its replicas offline on this broker (KAFKA_STORAGE_ERROR; the controller elects other leaders) while the others keep serving; with every directory failed the broker shuts down, unless one is only full (log.dir.failure.retry.interval.ms). AlterReplicaLogDirs moves a replica between them.' }),
  def({ name: 'log.dir', type: 'string', default: './data', dynamic: 'read-only', validator: nonEmptyString(),
    doc: 'The log directory when log.dirs is not set (Skein default ./data; Kafka uses /tmp/kafka-logs).' }),
  def({ name: 'log.segment.bytes', type: 'int', default: 1073741824, dynamic: 'cluster-wide', validator: atLeast(MIN_SEGMENT_BYTES), validValues: `[${MIN_SEGMENT_BYTES},...]`,
    doc: `Maximum size of a single log segment file. Skein's minimum is ${MIN_SEGMENT_BYTES}, one record batch header (Kafka 4.0: 1 MiB; Kafka's topic-level segment.bytes: 14).` }),
  def({ name: 'log.roll.ms', type: 'long', default: null, dynamic: 'cluster-wide', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Maximum time before a new segment is rolled; when unset, log.roll.hours is used.' }),
  def({ name: 'log.roll.hours', type: 'int', default: 168, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]', doc: 'Maximum time in hours before a new segment is rolled (secondary to log.roll.ms).' }),
  def({ name: 'log.roll.jitter.ms', type: 'long', default: null, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Maximum jitter subtracted from the roll time; when unset, log.roll.jitter.hours is used.' }),
  def({ name: 'log.roll.jitter.hours', type: 'int', default: 0, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]', doc: 'Maximum roll jitter in hours (secondary to log.roll.jitter.ms).' }),
  def({ name: 'log.index.size.max.bytes', type: 'int', default: 10485760, dynamic: 'cluster-wide', validator: atLeast(MIN_SEGMENT_INDEX_BYTES), validValues: `[${MIN_SEGMENT_INDEX_BYTES},...]`,
    doc: `Maximum size in bytes of an offset or time index. Skein's minimum is ${MIN_SEGMENT_INDEX_BYTES}, one entry of each index (Kafka: 4).` }),
  def({ name: 'log.index.interval.bytes', type: 'int', default: 4096, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]', doc: 'Bytes of log between offset index entries.' }),
  def({ name: 'log.dir.probe.interval.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Skein (Kafka has no such setting): how often each log dir is probed by writing and removing a small file, so that a failed directory whose partitions are idle is noticed too (Kafka notices only through the I/O of its logs). 0 disables the probe.' }),
  def({ name: 'log.dir.failure.retry.interval.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Skein (Kafka has no such setting): in a cluster, how often a log dir taken offline by a full disk (ENOSPC, EDQUOT) is checked for room again: once its filesystem has log.dir.failure.retry.min.free.bytes free and a probe file can be written and fsynced, its partitions are reopened with the recovery of an unclean start, the controller is told, and its replicas catch up and rejoin the ISRs, without a restart. While such a dir may come back, the broker stays up even with no dir online. A dir failed by any other I/O error (EIO, EROFS, ...) stays offline until a restart, as in Kafka. 0: never retried (Kafka\'s behaviour).' }),
  def({ name: 'log.dir.failure.retry.min.free.bytes', type: 'long', default: 1073741824, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Skein (Kafka has no such setting): the free space a log dir taken offline by a full disk needs before it comes back (see log.dir.failure.retry.interval.ms), so that it does not fill again at once; on a filesystem smaller than twice this, half the filesystem. Default one log.segment.bytes default (1 GiB).' }),
  def({ name: 'log.segment.open.files.max', type: 'int', default: 10000, dynamic: 'read-only', validator: atLeast(16), validValues: '[16,...]',
    doc: 'Skein (Kafka has no such setting): how many segment files the broker keeps open at most, each open .log descriptor and each mapped index counting one. Files are opened on first use and the least recently used are closed when the bound is reached, so the number of partitions is bounded by the disk, not by the open-file limit. Capped at half of the process\'s open-file limit (ulimit -n) and divided among the io.threads shards.' }),
  def({ name: 'log.preallocate', type: 'boolean', default: false, dynamic: 'cluster-wide', doc: 'Preallocate segment files when rolling (accepted; Skein does not preallocate).' }),
  def({ name: 'log.segment.delete.delay.ms', type: 'long', default: 60000, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Time to wait before deleting a file from the filesystem after it leaves the log.' }),

  // Retention
  def({ name: 'log.retention.ms', type: 'long', default: null, dynamic: 'cluster-wide', validator: atLeast(-1), validValues: '[-1,...]',
    doc: 'Time to keep a segment before deleting it; -1 means no time limit. When unset, log.retention.minutes is used.' }),
  def({ name: 'log.retention.minutes', type: 'int', default: null, dynamic: 'read-only',
    doc: 'Retention in minutes (secondary to log.retention.ms); when unset, log.retention.hours is used. Any negative value means no time limit.' }),
  def({ name: 'log.retention.hours', type: 'int', default: 168, dynamic: 'read-only',
    doc: 'Retention in hours (tertiary to log.retention.ms). Any negative value means no time limit.' }),
  def({ name: 'log.retention.bytes', type: 'long', default: -1, dynamic: 'cluster-wide', doc: 'Maximum size of a partition log before old segments are deleted; -1 means no size limit.' }),
  def({ name: 'log.retention.check.interval.ms', type: 'long', default: 300000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How often the retention check runs on each shard.' }),
  def({ name: 'log.cleanup.policy', type: 'list', default: ['delete'], dynamic: 'cluster-wide', validator: listOf(CLEANUP_POLICIES, true), validValues: '[compact, delete]',
    doc: "Cleanup policy for segments beyond the retention window: 'delete', 'compact' or both." }),
  def({ name: 'log.cleaner.enable', type: 'boolean', default: true, dynamic: 'read-only', doc: 'Enable the log cleaner (compaction) process.' }),
  def({ name: 'log.cleaner.backoff.ms', type: 'long', default: 15000, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'How long each shard\'s cleaner sleeps when no log is eligible for cleaning. A dynamic change takes effect at the next start.' }),
  def({ name: 'log.cleaner.io.max.bytes.per.second', type: 'double', default: Number.MAX_VALUE, dynamic: 'cluster-wide',
    doc: 'Cap on the bytes per second each shard\'s cleaner reads plus writes; it yields between slices either way. A dynamic change takes effect at the next start.' }),
  def({ name: 'log.cleaner.dedupe.buffer.size', type: 'long', default: 134217728, dynamic: 'cluster-wide', validator: atLeast(1024 * 1024), validValues: '[1048576,...]',
    doc: 'Memory for the cleaners\' offset maps (24 bytes a key), divided among the shards; a shard allocates only what a pass needs. A dynamic change takes effect at the next start.' }),
  def({ name: 'log.cleaner.delete.retention.ms', type: 'long', default: 86400000, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'How long tombstones are retained on compacted topics.' }),
  def({ name: 'log.cleaner.min.cleanable.ratio', type: 'double', default: 0.5, dynamic: 'cluster-wide', validator: between(0, 1), validValues: '[0,...,1]',
    doc: 'Minimum ratio of dirty log to total log for a log to be eligible for cleaning.' }),
  def({ name: 'log.cleaner.min.compaction.lag.ms', type: 'long', default: 0, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Minimum time a record stays uncompacted.' }),
  def({ name: 'log.cleaner.max.compaction.lag.ms', type: 'long', default: LONG_MAX, dynamic: 'cluster-wide', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Maximum time a record stays ineligible for compaction.' }),

  // Flush
  def({ name: 'log.flush.interval.messages', type: 'long', default: LONG_MAX, dynamic: 'cluster-wide', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Records appended to a partition before its data is fsynced.' }),
  def({ name: 'log.flush.interval.ms', type: 'long', default: null, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Maximum time data stays in the page cache before an fsync; when unset, log.flush.scheduler.interval.ms is used.' }),
  def({ name: 'log.flush.scheduler.interval.ms', type: 'long', default: LONG_MAX, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How often each shard checks whether a log needs flushing. (Kafka documents no bound, but a period below 1 ms stops its scheduler from starting.)' }),
  def({ name: 'log.flush.offset.checkpoint.interval.ms', type: 'int', default: 60000, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'How often the recovery point checkpoint is written.' }),

  // Timestamps
  def({ name: 'log.message.timestamp.type', type: 'string', default: 'CreateTime', dynamic: 'cluster-wide', validator: oneOf(...TIMESTAMP_TYPES), validValues: '[CreateTime, LogAppendTime]',
    doc: 'Whether record timestamps are the producer\'s (CreateTime) or the broker\'s append time (LogAppendTime).' }),
  def({ name: 'log.message.timestamp.before.max.ms', type: 'long', default: LONG_MAX, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Largest allowed age of a CreateTime timestamp relative to the broker clock.' }),
  def({ name: 'log.message.timestamp.after.max.ms', type: 'long', default: HOUR_MS, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Largest allowed lead of a CreateTime timestamp over the broker clock (Kafka 4.0 default: 1 hour).' }),

  // Replication
  def({ name: 'replica.lag.time.max.ms', type: 'long', default: 30000, dynamic: 'read-only', doc: 'A follower that has not caught up for this long leaves the ISR.' }),
  def({ name: 'replica.selector.class', type: 'string', default: null, dynamic: 'read-only',
    validator: oneOf(RACK_AWARE_REPLICA_SELECTOR), validValues: `[${RACK_AWARE_REPLICA_SELECTOR}]`,
    doc: 'KIP-392 fetch from follower: unset (the default), a leader serves every consumer itself; org.apache.kafka.common.replica.RackAwareReplicaSelector points a consumer whose client.rack (Fetch v11+) matches an in-sync follower\'s broker.rack to that follower (PreferredReadReplica). Followers serve consumer fetches (v11+) up to their high watermark whatever this says.' }),
  def({ name: 'replica.fetch.max.bytes', type: 'int', default: 1048576, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Bytes a follower asks for per partition in one fetch (the first batch comes whole even when larger).' }),
  def({ name: 'replica.fetch.response.max.bytes', type: 'int', default: 10485760, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Bytes a follower asks for in one whole fetch.' }),
  def({ name: 'replica.fetch.wait.max.ms', type: 'int', default: 500, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'How long a follower fetch waits on the leader for new records.' }),
  def({ name: 'replica.fetch.min.bytes', type: 'int', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Bytes a follower fetch waits for on the leader before answering.' }),
  def({ name: 'replica.fetch.backoff.ms', type: 'int', default: 1000, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'How long a follower waits before fetching again after an error (a dropped connection is opened again at once the first time, then after this wait).' }),
  def({ name: 'replica.socket.timeout.ms', type: 'int', default: 30000, dynamic: 'read-only', doc: 'Request timeout of a follower\'s connection to its leader.' }),
  def({ name: 'replica.high.watermark.checkpoint.interval.ms', type: 'long', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How often replicated partitions write their high watermark to replication-offset-checkpoint.' }),
  def({ name: 'leader.replication.throttled.rate', type: 'long', default: LONG_MAX, dynamic: 'per-broker', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Bytes per second this broker, as leader, sends to followers for the partitions whose topic lists its replica in leader.replication.throttled.replicas (set by skein reassign-partitions --throttle): over the rate, followers out of the ISR get no records for them; in-sync followers are never held back but their bytes count.' }),
  def({ name: 'follower.replication.throttled.rate', type: 'long', default: LONG_MAX, dynamic: 'per-broker', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Bytes per second this broker, as follower, fetches for its replicas listed in their topic\'s follower.replication.throttled.replicas (set by skein reassign-partitions --throttle): the bytes of all of them count; over the rate, those whose last fetch did not reach the leader\'s high watermark are not fetched (replicas in sync are never held back).' }),
  def({ name: 'replication.quota.window.num', type: 'int', default: 11, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Samples the replication throttles average over.' }),
  def({ name: 'replication.quota.window.size.seconds', type: 'int', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Length of one replication throttle sample.' }),
  def({ name: 'auto.leader.rebalance.enable', type: 'boolean', default: true, dynamic: 'read-only',
    doc: 'The controller moves leadership back to preferred replicas (the first of each assignment) when a broker leads too few of the partitions that prefer it.' }),
  def({ name: 'leader.imbalance.check.interval.seconds', type: 'long', default: 300, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How often the controller checks the preferred-leader balance.' }),
  def({ name: 'leader.imbalance.per.broker.percentage', type: 'int', default: 10, dynamic: 'read-only', validator: between(0, 100), validValues: '[0,...,100]',
    doc: 'The share of a broker\'s preferred partitions that others may lead before the controller elects it again.' }),

  // Internal topics and coordinators
  def({ name: 'offsets.topic.num.partitions', type: 'int', default: 50, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]', doc: 'Partitions of __consumer_offsets.' }),
  def({ name: 'offsets.topic.replication.factor', type: 'short', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Replication factor of __consumer_offsets (Skein default 1; Kafka uses 3).' }),
  def({ name: 'offsets.topic.segment.bytes', type: 'int', default: 104857600, dynamic: 'read-only', validator: atLeast(MIN_SEGMENT_BYTES), validValues: `[${MIN_SEGMENT_BYTES},...]`,
    doc: 'Segment size of __consumer_offsets (its segment.bytes, so it has the same minimum; Kafka: 1).' }),
  def({ name: 'offsets.retention.minutes', type: 'int', default: 10080, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Committed offsets of a group that became empty are kept this long.' }),
  def({ name: 'offsets.retention.check.interval.ms', type: 'long', default: 600000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]', doc: 'How often stale offsets are purged.' }),
  def({ name: 'offsets.commit.timeout.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]', doc: 'An offset commit waits at most this long for replication.' }),
  def({ name: 'offset.metadata.max.bytes', type: 'int', default: 4096, dynamic: 'read-only', doc: 'Maximum size of the metadata string of an offset commit.' }),
  def({ name: 'group.initial.rebalance.delay.ms', type: 'int', default: 3000, dynamic: 'read-only', doc: 'How long the first rebalance of a new group waits for more members.' }),
  def({ name: 'group.min.session.timeout.ms', type: 'int', default: 6000, dynamic: 'read-only', doc: 'Minimum session timeout a member may ask for.' }),
  def({ name: 'group.max.session.timeout.ms', type: 'int', default: 1800000, dynamic: 'read-only', doc: 'Maximum session timeout a member may ask for.' }),
  def({ name: 'group.max.size', type: 'int', default: 2147483647, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]', doc: 'Maximum number of members in one group.' }),
  // KIP-848 consumer groups (ConsumerGroupHeartbeat)
  def({ name: 'group.consumer.session.timeout.ms', type: 'int', default: 45000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'A consumer-group member that sends no heartbeat for this long is removed from its group.' }),
  def({ name: 'group.consumer.min.session.timeout.ms', type: 'int', default: 45000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Lowest value group.consumer.session.timeout.ms may have.' }),
  def({ name: 'group.consumer.max.session.timeout.ms', type: 'int', default: 60000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Highest value group.consumer.session.timeout.ms may have.' }),
  def({ name: 'group.consumer.heartbeat.interval.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'The heartbeat interval given to consumer-group members (below the session timeout).' }),
  def({ name: 'group.consumer.min.heartbeat.interval.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Lowest value group.consumer.heartbeat.interval.ms may have.' }),
  def({ name: 'group.consumer.max.heartbeat.interval.ms', type: 'int', default: 15000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Highest value group.consumer.heartbeat.interval.ms may have.' }),
  def({ name: 'group.consumer.max.size', type: 'int', default: 2147483647, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Maximum number of members in one consumer group (classic groups: group.max.size).' }),
  def({ name: 'group.consumer.assignors', type: 'list', default: ['uniform', 'range'], dynamic: 'read-only', validator: consumerGroupAssignors(), validValues: '[uniform, range]',
    doc: "Server-side assignors of consumer groups, the first the default for members that name none: 'uniform' (balanced, sticky) and 'range' (contiguous ranges per topic); Kafka's class names of the two are accepted too." }),
  // KIP-932 share groups and KIP-1071 streams groups: the broker defaults and bounds of the group configs
  // (config/group-configs.ts) share.* and streams.*, as Kafka 4.1 has them, and the share coordinator's own.
  def({ name: 'group.share.session.timeout.ms', type: 'int', default: 45000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'A share-group member that sends no heartbeat for this long is removed from its group (the default of the group config share.session.timeout.ms).' }),
  def({ name: 'group.share.min.session.timeout.ms', type: 'int', default: 45000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Lowest value group.share.session.timeout.ms and the group config share.session.timeout.ms may have.' }),
  def({ name: 'group.share.max.session.timeout.ms', type: 'int', default: 60000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Highest value group.share.session.timeout.ms and the group config share.session.timeout.ms may have.' }),
  def({ name: 'group.share.heartbeat.interval.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'The heartbeat interval given to share-group members (the default of the group config share.heartbeat.interval.ms).' }),
  def({ name: 'group.share.min.heartbeat.interval.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Lowest value group.share.heartbeat.interval.ms and the group config share.heartbeat.interval.ms may have.' }),
  def({ name: 'group.share.max.heartbeat.interval.ms', type: 'int', default: 15000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Highest value group.share.heartbeat.interval.ms and the group config share.heartbeat.interval.ms may have.' }),
  def({ name: 'group.share.max.size', type: 'int', default: 200, dynamic: 'read-only', validator: between(1, 1000), validValues: '[1,...,1000]',
    doc: 'Maximum number of members in one share group; one more joining is answered GROUP_MAX_SIZE_REACHED.' }),
  def({ name: 'group.share.record.lock.duration.ms', type: 'int', default: 30000, dynamic: 'read-only', validator: atLeast(1000), validValues: '[1000,...]',
    doc: 'How long a share-group member holds the records it was given before they can go to another (the default of the group config share.record.lock.duration.ms).' }),
  def({ name: 'group.share.min.record.lock.duration.ms', type: 'int', default: 15000, dynamic: 'read-only', validator: atLeast(1000), validValues: '[1000,...]',
    doc: 'Lowest value group.share.record.lock.duration.ms and the group config share.record.lock.duration.ms may have.' }),
  def({ name: 'group.share.max.record.lock.duration.ms', type: 'int', default: 60000, dynamic: 'read-only', validator: atLeast(1000), validValues: '[1000,...]',
    doc: 'Highest value group.share.record.lock.duration.ms and the group config share.record.lock.duration.ms may have.' }),
  def({ name: 'group.share.delivery.count.limit', type: 'int', default: 5, dynamic: 'read-only', validator: between(2, 10), validValues: '[2,...,10]',
    doc: 'How many times a record is delivered to a share group at most: released or timed out after that many deliveries, it is archived instead of delivered again.' }),
  def({ name: 'group.share.partition.max.record.locks', type: 'int', default: 2000, dynamic: 'read-only', validator: between(100, 10000), validValues: '[100,...,10000]',
    doc: 'Records in flight (between the share-partition start and end offsets) per share-partition: no more are acquired past it until some are acknowledged (one whole batch may go over).' }),
  def({ name: 'group.share.max.share.sessions', type: 'int', default: 2000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Share sessions (ShareFetch / ShareAcknowledge) one broker keeps; a member that opens one more is answered SHARE_SESSION_LIMIT_REACHED.' }),
  def({ name: 'group.streams.session.timeout.ms', type: 'int', default: 45000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'A streams-group member that sends no heartbeat for this long is removed from its group (the default of the group config streams.session.timeout.ms).' }),
  def({ name: 'group.streams.min.session.timeout.ms', type: 'int', default: 45000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Lowest value group.streams.session.timeout.ms and the group config streams.session.timeout.ms may have.' }),
  def({ name: 'group.streams.max.session.timeout.ms', type: 'int', default: 60000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Highest value group.streams.session.timeout.ms and the group config streams.session.timeout.ms may have.' }),
  def({ name: 'group.streams.heartbeat.interval.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'The heartbeat interval given to streams-group members (the default of the group config streams.heartbeat.interval.ms).' }),
  def({ name: 'group.streams.min.heartbeat.interval.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Lowest value group.streams.heartbeat.interval.ms and the group config streams.heartbeat.interval.ms may have.' }),
  def({ name: 'group.streams.max.heartbeat.interval.ms', type: 'int', default: 15000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Highest value group.streams.heartbeat.interval.ms and the group config streams.heartbeat.interval.ms may have.' }),
  def({ name: 'group.streams.num.standby.replicas', type: 'int', default: 0, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Standby replicas of each task of a streams group (the default of the group config streams.num.standby.replicas).' }),
  def({ name: 'group.streams.max.standby.replicas', type: 'int', default: 2, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'Highest value group.streams.num.standby.replicas and the group config streams.num.standby.replicas may have.' }),
  def({ name: 'transaction.state.log.num.partitions', type: 'int', default: 50, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]', doc: 'Partitions of __transaction_state.' }),
  def({ name: 'transaction.state.log.replication.factor', type: 'short', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Replication factor of __transaction_state (Skein default 1; Kafka uses 3).' }),
  def({ name: 'transaction.state.log.min.isr', type: 'int', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'min.insync.replicas of __transaction_state (Skein default 1; Kafka uses 2).' }),
  def({ name: 'transaction.state.log.segment.bytes', type: 'int', default: 104857600, dynamic: 'read-only', validator: atLeast(MIN_SEGMENT_BYTES), validValues: `[${MIN_SEGMENT_BYTES},...]`,
    doc: 'Segment size of __transaction_state (its segment.bytes, so it has the same minimum; Kafka: 1).' }),
  def({ name: 'share.coordinator.state.topic.num.partitions', type: 'int', default: 50, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Partitions of __share_group_state, where the share coordinator keeps share-partition state (KIP-932).' }),
  def({ name: 'share.coordinator.state.topic.replication.factor', type: 'short', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Replication factor of __share_group_state (Skein default 1, as offsets.topic.replication.factor; Kafka uses 3).' }),
  def({ name: 'share.coordinator.state.topic.min.isr', type: 'short', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'min.insync.replicas of __share_group_state (Skein default 1, as transaction.state.log.min.isr; Kafka uses 2).' }),
  def({ name: 'share.coordinator.state.topic.segment.bytes', type: 'int', default: 104857600, dynamic: 'read-only', validator: atLeast(MIN_SEGMENT_BYTES), validValues: `[${MIN_SEGMENT_BYTES},...]`,
    doc: 'Segment size of __share_group_state (its segment.bytes, so it has the same minimum; Kafka: 1).' }),
  def({ name: 'share.coordinator.snapshot.update.records.per.snapshot', type: 'int', default: 500, dynamic: 'read-only', validator: atLeast(0), validValues: '[0,...]',
    doc: 'ShareUpdate records the share coordinator writes for a share-partition before it writes its whole state again as a ShareSnapshot (so a load replays at most this many per snapshot).' }),
  def({ name: 'share.coordinator.state.topic.prune.interval.ms', type: 'int', default: 300000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How often the share coordinator deletes the records of __share_group_state that no share-partition needs any more (those before the oldest last snapshot).' }),
  def({ name: 'share.coordinator.write.timeout.ms', type: 'int', default: 5000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How long a write to __share_group_state may wait for the in-sync replicas.' }),
  def({ name: 'transaction.max.timeout.ms', type: 'int', default: 900000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]', doc: 'Largest transaction timeout a producer may ask for.' }),
  def({ name: 'transaction.abort.timed.out.transaction.cleanup.interval.ms', type: 'int', default: 10000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How often the transaction coordinator looks for transactions open longer than their timeout, and aborts them.' }),
  def({ name: 'transaction.remove.expired.transaction.cleanup.interval.ms', type: 'int', default: 3600000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How often the transaction coordinator removes transactional ids idle for transactional.id.expiration.ms.' }),
  def({ name: 'transactional.id.expiration.ms', type: 'int', default: 604800000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'A transactional id with no transaction status update for this long expires.' }),
  def({ name: 'producer.id.expiration.ms', type: 'int', default: 86400000, dynamic: 'cluster-wide', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Idempotent producer state of a partition is dropped after this long without writes (counted from the last batch timestamp, as Kafka does). A dynamic change takes effect at the next start.' }),
  def({ name: 'producer.id.expiration.check.interval.ms', type: 'int', default: 600000, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'How often each shard removes producer state older than producer.id.expiration.ms.' }),

  // Kafka's dynamic broker configs (DynamicBrokerConfig.AllDynamicConfigs) for machinery Skein does not
  // have: accepted, statically and dynamically, so that Kafka's tools and files work, and ignored.
  def({ name: 'log.cleaner.threads', type: 'int', default: 1, dynamic: 'cluster-wide', ignored: true, validator: atLeast(0), validValues: '[0,...]',
    doc: 'Accepted for Kafka compatibility and ignored: Skein runs one cleaner on each shard thread (io.threads).' }),
  def({ name: 'log.cleaner.io.buffer.size', type: 'int', default: 524288, dynamic: 'cluster-wide', ignored: true, validator: atLeast(0), validValues: '[0,...]',
    doc: 'Accepted for Kafka compatibility and ignored: Skein\'s cleaner sizes its buffers per segment.' }),
  def({ name: 'log.cleaner.io.buffer.load.factor', type: 'double', default: 0.9, dynamic: 'cluster-wide', ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored (the load factor of Kafka\'s offset map).' }),
  def({ name: 'num.replica.fetchers', type: 'int', default: 1, dynamic: 'cluster-wide', validator: atLeast(1), validValues: '[1,...]',
    doc: 'Fetchers (each with its own connection) per leader broker that replicate its partitions to this broker; a partition goes to fetcher abs(31 * topic.hashCode + partition) % num.replica.fetchers, as in Kafka. A dynamic change applies to partitions that start being followed afterwards (Kafka also moves those already followed at once).' }),
  def({ name: 'inter.broker.protocol.version', type: 'string', default: '3.9', dynamic: 'read-only', validator: interBrokerProtocolVersion(),
    doc: 'The inter-broker protocol version (Kafka\'s ZooKeeper-mode setting, e.g. 2.6 or 3.9). Skein uses it for the followers\' Fetch: from 2.7 on Fetch v12 (the leader reports a diverging epoch and the follower truncates while fetching); below 2.7 Fetch v11 and truncation through OffsetForLeaderEpoch whenever a partition starts being followed, Kafka\'s pre-2.7 path.' }),
  def({ name: 'max.connections', type: 'int', default: 2147483647, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'The most connections the broker holds at once, over all listeners; beyond it a new connection is closed at once (Kafka holds it in the accept queue instead), except on the inter-broker listener, which is never refused by this limit (KIP-402). Served connections are not affected.' }),
  def({ name: 'max.connections.per.ip', type: 'int', default: 2147483647, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'The most connections from one address; a connection beyond it is closed at once, as Kafka does.' }),
  def({ name: 'max.connections.per.ip.overrides', type: 'string', default: '', dynamic: 'cluster-wide', validator: connectionOverridesValidator, validValues: 'host:count,...',
    doc: 'Per-address exceptions to max.connections.per.ip: a comma-separated list of address:count.' }),
  def({ name: 'max.connection.creation.rate', type: 'int', default: 2147483647, dynamic: 'cluster-wide', validator: atLeast(0), validValues: '[0,...]',
    doc: 'The most new connections per second the broker accepts over all listeners except the inter-broker one (KIP-612); a connection beyond the rate is closed at once (Kafka delays accepting it instead). Served connections are not affected.' }),
  def({ name: 'metric.reporters', type: 'list', default: [], dynamic: 'cluster-wide', ignored: true, doc: 'Accepted for Kafka compatibility and ignored: Skein has no metrics reporters.' }),
  def({ name: 'transaction.partition.verification.enable', type: 'boolean', default: true, dynamic: 'cluster-wide', ignored: true,
    doc: 'Accepted for Kafka compatibility and ignored: Skein does not ask the transaction coordinator before a transactional append (KIP-890).' }),
  // Client quotas (src/quota/): the sample windows rates are measured over, as Kafka's.
  def({ name: 'quota.window.num', type: 'int', default: 11, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'The number of samples to retain in memory for client quotas.' }),
  def({ name: 'quota.window.size.seconds', type: 'int', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'The time span of each sample for client quotas.' }),
  def({ name: 'controller.quota.window.num', type: 'int', default: 11, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'The number of samples to retain in memory for controller mutation quotas.' }),
  def({ name: 'controller.quota.window.size.seconds', type: 'int', default: 1, dynamic: 'read-only', validator: atLeast(1), validValues: '[1,...]',
    doc: 'The time span of each sample for controller mutations quotas.' }),
  // The REST Proxy embedded in the broker process (src/main.ts starts it when rest.listeners is set): the
  // proxy's own settings (config/client-rest.ts) under the prefix rest.
  ...REST_CONFIGS.filter((d) => d.embeddable).map((d) =>
    def({
      ...d,
      name: EMBEDDED_REST_PREFIX + d.name,
      default: d.name === 'listeners' ? [] : d.default,
      dynamic: 'read-only',
      doc: `Embedded REST Proxy: ${d.doc}`,
    }),
  ),
  // The Schema Registry embedded in the broker process (src/main.ts starts it when
  // schema.registry.listeners is set): its own settings (config/client-registry.ts) under schema.registry.
  ...REGISTRY_CONFIGS.filter((d) => d.embeddable).map((d) =>
    def({
      ...d,
      name: embeddedRegistryName(d.name),
      default: d.name === 'listeners' ? [] : d.default,
      dynamic: 'read-only',
      doc: `Embedded Schema Registry: ${d.doc}`,
    }),
  ),
]

const byName = new Map<string, BrokerConfigDef>()
for (const d of BROKER_CONFIGS) {
  byName.set(d.name, d)
  for (const a of d.aliases ?? []) byName.set(a, d)
}

/** The definition for a broker config name or alias. */
export function brokerConfigDef(name: string): BrokerConfigDef | undefined {
  return byName.get(name)
}

/** Every accepted broker key, canonical names and aliases. */
export function brokerConfigNames(): string[] {
  return [...byName.keys()]
}
