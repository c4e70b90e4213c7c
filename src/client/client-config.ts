// Kafka's client configs (the names of AdminClientConfig / ProducerConfig / ConsumerConfig) mapped onto
// the Skein client's options: the one home of that mapping, used by the skein tools (--command-config,
// --producer-property, ...), Connect and MirrorMaker (producer.* / consumer.* of a worker), Streams
// (producer.* / consumer.* overrides) and the REST Proxy (producer.*). Each apply* returns the names it
// did not know, for the caller to warn about (Kafka's "supplied but isn't a known config") or ignore;
// a known name with a value the client cannot use throws ConfigException.
import type { ClientOptions } from './cluster-connections.js'
import type { ConsumerOptions, IsolationLevel, OffsetReset } from './consumer.js'
import { ConfigException } from './errors.js'
import type { ProducerOptions } from './producer.js'
import type { ShareConsumerOptions } from './share-consumer.js'
import { parseCompression } from './record-batches.js'
import { SECURITY_PROPERTIES, securityFromProps } from './client-security-config.js'

function int(name: string, v: string, min = 0): number {
  const n = Number(v.trim())
  if (!Number.isSafeInteger(n) || n < min) throw new ConfigException(`property ${name}=${v}: expected an integer >= ${min}`)
  return n
}

function bool(name: string, v: string): boolean {
  const s = v.trim().toLowerCase()
  if (s === 'true') return true
  if (s === 'false') return false
  throw new ConfigException(`property ${name}=${v}: expected true or false`)
}

export function parseAcks(v: string): number {
  const s = v.trim().toLowerCase()
  if (s === 'all' || s === '-1') return -1
  if (s === '0') return 0
  if (s === '1') return 1
  throw new ConfigException(`acks must be 0, 1, -1 or all, not '${v}'`)
}

const COMMON = new Set(['bootstrap.servers', 'client.id', 'request.timeout.ms', 'default.api.timeout.ms', 'retries', 'retry.backoff.ms', 'socket.connection.setup.timeout.ms'])

function applyCommon(opts: ClientOptions, name: string, v: string): boolean {
  switch (name) {
    case 'bootstrap.servers':
      opts.bootstrapServers = v
      return true
    case 'client.id':
      opts.clientId = v
      return true
    case 'request.timeout.ms':
      opts.requestTimeoutMs = int(name, v, 1)
      return true
    case 'default.api.timeout.ms':
      opts.apiTimeoutMs = int(name, v, 1)
      return true
    case 'retries':
      opts.retries = Math.min(int(name, v), 1_000_000)
      return true
    case 'retry.backoff.ms':
      opts.retryBackoffMs = int(name, v)
      return true
    case 'socket.connection.setup.timeout.ms':
      opts.connectTimeoutMs = int(name, v, 1)
      return true
  }
  return COMMON.has(name) || SECURITY_PROPERTIES.has(name)
}

/** security.protocol, sasl.* and ssl.* of the properties, when any was given. */
function applySecurity(opts: ClientOptions, props: ReadonlyMap<string, string>): void {
  if (![...props.keys()].some((k) => SECURITY_PROPERTIES.has(k))) return
  opts.security = securityFromProps(props)
}

/** Admin client properties (--command-config of kafka-topics, kafka-configs, kafka-consumer-groups). */
const ADMIN_ONLY = new Set(['connections.max.idle.ms', 'metadata.max.age.ms', 'receive.buffer.bytes', 'send.buffer.bytes', 'reconnect.backoff.ms', 'reconnect.backoff.max.ms', 'retry.backoff.max.ms', 'socket.connection.setup.timeout.max.ms'])

/** Applies admin client properties onto opts; returns the names it did not know. */
export function applyAdminProps(opts: ClientOptions, props: ReadonlyMap<string, string>): string[] {
  const unknown: string[] = []
  for (const [name, v] of props) {
    if (applyCommon(opts, name, v)) continue
    // Known to Kafka's admin client and without effect here.
    if (!ADMIN_ONLY.has(name)) unknown.push(name)
  }
  applySecurity(opts, props)
  return unknown
}

/** Applies producer properties onto opts; returns the names it did not know. */
export function applyProducerProps(opts: ProducerOptions, props: ReadonlyMap<string, string>): string[] {
  const unknown: string[] = []
  for (const [name, v] of props) {
    if (applyCommon(opts, name, v)) continue
    switch (name) {
      case 'acks':
        opts.acks = parseAcks(v)
        break
      case 'batch.size':
        opts.batchSize = int(name, v, 1)
        break
      case 'linger.ms':
        opts.lingerMs = int(name, v)
        break
      case 'compression.type':
        opts.compression = parseCompression(v)
        break
      case 'max.in.flight.requests.per.connection':
        opts.maxInFlight = int(name, v, 1)
        break
      case 'delivery.timeout.ms':
        opts.deliveryTimeoutMs = int(name, v, 1)
        break
      case 'max.request.size':
        opts.maxRequestSize = int(name, v, 1)
        break
      case 'buffer.memory':
        opts.bufferMemory = int(name, v, 1)
        break
      case 'max.block.ms':
        opts.maxBlockMs = int(name, v)
        break
      case 'partitioner.class':
        opts.partitioner = /RoundRobin/i.test(v) ? 'round-robin' : 'default'
        break
      case 'allow.auto.create.topics':
        opts.allowAutoTopicCreation = bool(name, v)
        break
      case 'enable.idempotence':
        opts.enableIdempotence = bool(name, v)
        break
      case 'transactional.id':
        if (v.trim() === '') throw new ConfigException('property transactional.id must not be empty')
        opts.transactionalId = v.trim()
        break
      case 'transaction.timeout.ms':
        opts.transactionTimeoutMs = int(name, v, 1)
        break
      case 'key.serializer':
      case 'value.serializer':
        // Bytes in, bytes out.
        break
      default:
        unknown.push(name)
    }
  }
  applySecurity(opts, props)
  return unknown
}

/** Applies consumer properties onto opts; returns the names it did not know. */
export function applyConsumerProps(opts: ConsumerOptions, props: ReadonlyMap<string, string>): string[] {
  const unknown: string[] = []
  for (const [name, v] of props) {
    if (applyCommon(opts, name, v)) continue
    switch (name) {
      case 'group.id':
        opts.groupId = v
        break
      case 'auto.offset.reset': {
        const s = v.trim().toLowerCase()
        if (s !== 'earliest' && s !== 'latest' && s !== 'none') throw new ConfigException(`auto.offset.reset must be earliest, latest or none, not '${v}'`)
        opts.autoOffsetReset = s as OffsetReset
        break
      }
      case 'isolation.level':
        opts.isolationLevel = parseIsolationLevel(v)
        break
      case 'fetch.max.wait.ms':
        opts.fetchMaxWaitMs = int(name, v)
        break
      case 'fetch.min.bytes':
        opts.fetchMinBytes = int(name, v)
        break
      case 'fetch.max.bytes':
        opts.fetchMaxBytes = int(name, v, 1)
        break
      case 'max.partition.fetch.bytes':
        opts.maxPartitionFetchBytes = int(name, v, 1)
        break
      case 'enable.auto.commit':
        opts.enableAutoCommit = bool(name, v)
        break
      case 'auto.commit.interval.ms':
        opts.autoCommitIntervalMs = int(name, v)
        break
      case 'session.timeout.ms':
        opts.sessionTimeoutMs = int(name, v, 1)
        break
      case 'max.poll.interval.ms':
        opts.rebalanceTimeoutMs = int(name, v, 1)
        break
      case 'heartbeat.interval.ms':
        opts.heartbeatIntervalMs = int(name, v, 1)
        break
      case 'partition.assignment.strategy': {
        const names = v.split(',').map((s) => s.trim()).filter((s) => s !== '').map((s) => (/RoundRobin/i.test(s) ? 'roundrobin' : /Range/i.test(s) || s === 'range' ? 'range' : null))
        if (names.some((n) => n === null)) throw new ConfigException(`partition.assignment.strategy '${v}': supported are range and roundrobin`)
        opts.assignors = names as ('range' | 'roundrobin')[]
        break
      }
      case 'max.poll.records':
        opts.maxPollRecords = int(name, v, 1)
        break
      case 'check.crcs':
        opts.checkCrcs = bool(name, v)
        break
      case 'key.deserializer':
      case 'value.deserializer':
        break
      default:
        unknown.push(name)
    }
  }
  applySecurity(opts, props)
  return unknown
}

/**
 * Consumer configs Kafka's share consumer refuses (ShareConsumerConfig: "not supported for
 * KafkaShareConsumer"): the share group, not the client, decides where to start (the group config
 * share.auto.offset.reset), isolation (share.isolation.level), assignment and session timeouts.
 */
const SHARE_UNSUPPORTED = new Set([
  'auto.offset.reset', 'enable.auto.commit', 'group.instance.id', 'isolation.level', 'partition.assignment.strategy',
  'interceptor.classes', 'session.timeout.ms', 'heartbeat.interval.ms', 'group.protocol', 'group.remote.assignor',
])

/** Share consumer properties (Kafka's KafkaShareConsumer) onto opts; returns the names it did not know. */
export function applyShareConsumerProps(opts: ShareConsumerOptions, props: ReadonlyMap<string, string>): string[] {
  const unknown: string[] = []
  for (const [name, v] of props) {
    if (applyCommon(opts, name, v)) continue
    if (SHARE_UNSUPPORTED.has(name)) throw new ConfigException(`property ${name} is not supported for a share consumer`)
    switch (name) {
      case 'group.id':
        opts.groupId = v
        break
      case 'share.acknowledgement.mode': {
        const s = v.trim().toLowerCase()
        if (s !== 'implicit' && s !== 'explicit') throw new ConfigException(`share.acknowledgement.mode must be implicit or explicit, not '${v}'`)
        opts.acknowledgementMode = s
        break
      }
      case 'share.acquire.mode': {
        // record_limit (KIP-1206) is asked for in ShareFetch v2; this client sends v1, whose acquisition is batch_optimized.
        const s = v.trim().toLowerCase()
        if (s !== 'batch_optimized') throw new ConfigException(`share.acquire.mode '${v}': this client supports batch_optimized only (record_limit needs ShareFetch v2)`)
        opts.acquireMode = s
        break
      }
      case 'max.poll.records':
        opts.maxPollRecords = int(name, v, 1)
        break
      case 'fetch.max.bytes':
        opts.fetchMaxBytes = int(name, v)
        break
      case 'fetch.min.bytes':
        opts.fetchMinBytes = int(name, v)
        break
      case 'fetch.max.wait.ms':
        opts.fetchMaxWaitMs = int(name, v)
        break
      case 'max.poll.interval.ms':
        opts.maxPollIntervalMs = int(name, v, 1)
        break
      case 'check.crcs':
        opts.checkCrcs = bool(name, v)
        break
      case 'client.rack':
        opts.clientRack = v.trim() === '' ? null : v.trim()
        break
      case 'max.partition.fetch.bytes':
        // Known to Kafka's share consumer, without effect here: ShareFetch v1 has no per-partition limit.
        int(name, v, 1)
        break
      case 'key.deserializer':
      case 'value.deserializer':
        break
      default:
        unknown.push(name)
    }
  }
  applySecurity(opts, props)
  return unknown
}

export function parseIsolationLevel(v: string): IsolationLevel {
  const s = v.trim().toLowerCase()
  if (s === 'read_committed' || s === 'read_uncommitted') return s
  throw new ConfigException(`isolation level must be read_committed or read_uncommitted, not '${v}'`)
}
