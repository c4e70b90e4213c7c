// StreamsConfig: Kafka Streams' settings by their Kafka names (application.id, bootstrap.servers,
// num.stream.threads, processing.guarantee, commit.interval.ms, state.dir, num.standby.replicas, ...),
// from a plain object, a Map or a .properties text, checked once. Values may be given as strings (as in a
// properties file) or as numbers. Serdes and exception handlers are objects or functions, or the names
// of the built-in ones ('String', 'Long', ...; 'logAndContinue', 'logAndFail').
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseProperties } from '../../config/properties.js'
import type { Logger } from '../../observability/logger.js'
import { silentLogger } from '../../observability/logger.js'
import { StreamsException } from '../core/errors.js'
import { Serdes, type Serde } from '../core/serdes.js'
import { deserializationHandler, productionHandler, type DeserializationExceptionHandler, type HandlerSetting, type ProductionExceptionHandler } from './handlers.js'

export type ProcessingGuarantee = 'at_least_once' | 'exactly_once_v2'

export type StreamsConfigInput = Record<string, unknown> | Map<string, unknown>

const SERDE_NAMES: Record<string, () => Serde<unknown>> = {
  String: Serdes.String as () => Serde<unknown>,
  Integer: Serdes.Integer as () => Serde<unknown>,
  Short: Serdes.Short as () => Serde<unknown>,
  Long: Serdes.Long as () => Serde<unknown>,
  Double: Serdes.Double as () => Serde<unknown>,
  Float: Serdes.Float as () => Serde<unknown>,
  Bytes: Serdes.Bytes as () => Serde<unknown>,
  ByteArray: Serdes.ByteArray as () => Serde<unknown>,
  Json: Serdes.Json as () => Serde<unknown>,
  Void: Serdes.Void as () => Serde<unknown>,
  UUID: Serdes.UUID as () => Serde<unknown>,
}

/** Settings this implementation reads; others are kept for appConfigs() but otherwise ignored. */
export const STREAMS_CONFIG_NAMES = [
  'application.id',
  'bootstrap.servers',
  'client.id',
  'num.stream.threads',
  'processing.guarantee',
  'commit.interval.ms',
  'state.dir',
  'num.standby.replicas',
  'application.server',
  'replication.factor',
  'default.key.serde',
  'default.value.serde',
  'default.deserialization.exception.handler',
  'default.production.exception.handler',
  'acceptable.recovery.lag',
  'max.warmup.replicas',
  'probing.rebalance.interval.ms',
  'poll.ms',
  'max.poll.records',
  'session.timeout.ms',
  'heartbeat.interval.ms',
  'request.timeout.ms',
  'statestore.cache.max.bytes',
  'cache.max.bytes.buffering',
  'state.cleanup.delay.ms',
] as const

export class StreamsConfig {
  readonly applicationId: string
  readonly bootstrapServers: string
  readonly clientId: string
  readonly numStreamThreads: number
  readonly processingGuarantee: ProcessingGuarantee
  readonly commitIntervalMs: number
  readonly stateDir: string
  readonly numStandbyReplicas: number
  /** host:port of this instance for interactive queries, or '' when not set. */
  readonly applicationServer: string
  readonly replicationFactor: number
  readonly defaultKeySerde: Serde<unknown>
  readonly defaultValueSerde: Serde<unknown>
  readonly deserializationHandler: DeserializationExceptionHandler
  readonly productionHandler: ProductionExceptionHandler
  readonly acceptableRecoveryLag: number
  readonly maxWarmupReplicas: number
  readonly probingRebalanceIntervalMs: number
  readonly pollMs: number
  readonly maxPollRecords: number
  readonly sessionTimeoutMs: number
  readonly heartbeatIntervalMs: number
  readonly requestTimeoutMs: number
  /** statestore.cache.max.bytes: the record caches' budget, shared by the threads (0: no caching). */
  readonly cacheMaxBytes: number
  /** Internal topic configs given with the 'topic.' prefix (e.g. topic.segment.bytes). */
  readonly topicConfigs: Record<string, string>
  readonly log: Logger
  readonly originals: Readonly<Record<string, unknown>>

  constructor(input: StreamsConfigInput, opts: { requireBootstrap?: boolean; logger?: Logger } = {}) {
    const o: Record<string, unknown> = input instanceof Map ? Object.fromEntries(input) : { ...input }
    this.originals = Object.freeze({ ...o })
    const str = (k: string, d?: string): string => {
      const v = o[k]
      if (v === undefined || v === null) {
        if (d === undefined) throw new StreamsException(`missing required configuration '${k}'`)
        return d
      }
      return String(v).trim()
    }
    const int = (k: string, d: number, min = 0): number => {
      const v = o[k]
      if (v === undefined || v === null || v === '') return d
      const n = typeof v === 'number' ? v : Number(String(v).trim())
      if (!Number.isSafeInteger(n) || n < min) throw new StreamsException(`invalid value '${String(v)}' for configuration '${k}': an integer of at least ${min} is expected`)
      return n
    }
    this.applicationId = str('application.id')
    if (!/^[a-zA-Z0-9._-]+$/.test(this.applicationId)) throw new StreamsException(`invalid value '${this.applicationId}' for configuration 'application.id': use ASCII letters, digits, '.', '_' and '-'`)
    this.bootstrapServers = opts.requireBootstrap === false ? str('bootstrap.servers', '') : str('bootstrap.servers')
    this.clientId = str('client.id', this.applicationId)
    this.numStreamThreads = int('num.stream.threads', 1, 1)
    const pg = str('processing.guarantee', 'at_least_once')
    if (pg !== 'at_least_once' && pg !== 'exactly_once_v2') throw new StreamsException(`invalid value '${pg}' for configuration 'processing.guarantee': at_least_once or exactly_once_v2`)
    this.processingGuarantee = pg
    // Kafka's defaults: 30 s, and 100 ms under exactly-once (a transaction per commit interval).
    this.commitIntervalMs = int('commit.interval.ms', pg === 'exactly_once_v2' ? 100 : 30_000, 0)
    this.stateDir = str('state.dir', join(tmpdir(), 'kafka-streams'))
    this.numStandbyReplicas = int('num.standby.replicas', 0, 0)
    this.applicationServer = str('application.server', '')
    if (this.applicationServer !== '' && !/^[^:\s]+:\d+$/.test(this.applicationServer)) throw new StreamsException(`invalid value '${this.applicationServer}' for configuration 'application.server': host:port is expected`)
    this.replicationFactor = int('replication.factor', -1, -1)
    this.defaultKeySerde = serdeSetting('default.key.serde', o['default.key.serde'])
    this.defaultValueSerde = serdeSetting('default.value.serde', o['default.value.serde'])
    this.deserializationHandler = deserializationHandler(o['default.deserialization.exception.handler'] as HandlerSetting<DeserializationExceptionHandler> | undefined)
    this.productionHandler = productionHandler(o['default.production.exception.handler'] as HandlerSetting<ProductionExceptionHandler> | undefined)
    this.acceptableRecoveryLag = int('acceptable.recovery.lag', 10_000, 0)
    this.maxWarmupReplicas = int('max.warmup.replicas', 2, 1)
    this.probingRebalanceIntervalMs = int('probing.rebalance.interval.ms', 600_000, 1)
    this.pollMs = int('poll.ms', 100, 0)
    this.maxPollRecords = int('max.poll.records', 1000, 1)
    this.sessionTimeoutMs = int('session.timeout.ms', 45_000, 1)
    this.heartbeatIntervalMs = int('heartbeat.interval.ms', 3000, 1)
    this.requestTimeoutMs = int('request.timeout.ms', 30_000, 1)
    // Kafka's default 10 MiB; cache.max.bytes.buffering is the name it had before 3.4 (deprecated).
    this.cacheMaxBytes = int('statestore.cache.max.bytes', int('cache.max.bytes.buffering', 10 * 1024 * 1024, 0), 0)
    this.topicConfigs = {}
    for (const [k, v] of Object.entries(o)) if (k.startsWith('topic.') && v !== undefined) this.topicConfigs[k.slice(6)] = String(v)
    this.log = opts.logger ?? (o['logger'] as Logger | undefined) ?? silentLogger()
  }

  /** From a .properties text (as a Java application's streams.properties). */
  static fromProperties(text: string, extra: Record<string, unknown> = {}): StreamsConfig {
    return new StreamsConfig({ ...Object.fromEntries(parseProperties(text)), ...extra })
  }

  get exactlyOnce(): boolean {
    return this.processingGuarantee === 'exactly_once_v2'
  }
}

function serdeSetting(key: string, v: unknown): Serde<unknown> {
  if (v === undefined || v === null) return Serdes.Bytes() as Serde<unknown>
  if (typeof v === 'string') {
    const name = v.replace(/^.*\$/, '').replace(/Serde$/, '')
    const f = SERDE_NAMES[name]
    if (f === undefined) throw new StreamsException(`invalid value '${v}' for configuration '${key}': one of ${Object.keys(SERDE_NAMES).join(', ')}, or a Serde object`)
    return f()
  }
  const s = v as Serde<unknown>
  if (typeof s.serializer?.serialize !== 'function' || typeof s.deserializer?.deserialize !== 'function') throw new StreamsException(`invalid value for configuration '${key}': not a Serde`)
  return s
}
