// A single Skein broker: configuration, the partition shards, the topic store, the services handlers
// see (the partition service with its fetch purgatory, the metadata view, topic and config
// administration, the coordinators, producer ids) and the socket server, started and stopped in the
// right order. This is what `npm start` runs and what the library API's startBroker() returns.
import { mkdirSync } from 'node:fs'
import { validateBrokerProperties, type BrokerConfig } from '../config/broker-config.js'
import type { Listener } from '../config/listeners.js'
import { loadOrCreateMetaProperties } from '../storage/meta-properties.js'
import { TopicStore } from '../cluster/topic-store.js'
import { createLogger, type Logger } from '../observability/logger.js'
import type { MetricsRegistry } from '../observability/metrics.js'
import { ShardRouter } from '../shard/router.js'
import { BrokerMetrics } from './broker-metrics.js'
import type { FrameHandler } from './connection.js'
import { createDispatcher } from './dispatcher.js'
import { DynamicConfigService } from './dynamic-configs.js'
import { GroupService } from './groups.js'
import { HANDLERS } from './handlers/index.js'
import { BrokerMetadataView } from './metadata-view.js'
import { ProducerIdManager } from './producer-ids.js'
import { HandlerRegistry } from './registry.js'
import { ReplicaManager } from './replica-manager.js'
import { SocketServer, type BoundListener } from './socket-server.js'
import { TopicManager } from './topics.js'
import { TransactionService } from './transactions.js'

export interface BrokerEndpoint {
  listenerName: string
  host: string
  port: number
}

export interface StartBrokerOptions {
  logger?: Logger
  /** How long a graceful stop waits for in-flight requests (ms). Default 5000. */
  shutdownGraceMs?: number
  /** The registry the broker's metrics go to (default: a new one, Broker.metrics.registry). */
  metrics?: MetricsRegistry
}

export class Broker {
  readonly registry = new HandlerRegistry(HANDLERS)
  /** The partitions as leader: appends, reads, offsets, fetch long-polling (the only user of the router's partition data). */
  readonly partitions: ReplicaManager
  /** Brokers, topics and partition leaders, read-only. */
  readonly metadata: BrokerMetadataView
  /** The broker configuration and its dynamic layers. */
  readonly configs: DynamicConfigService
  /** InitProducerId's producer ids, reserved in blocks in the data dir (read on first use). */
  readonly producerIds: ProducerIdManager
  /** The group coordinator (consumer groups and committed offsets over __consumer_offsets). */
  readonly groups: GroupService
  /** The transaction coordinator (transactional producers over __transaction_state). */
  readonly transactions: TransactionService
  /** Kafka's broker metrics under the JMX exporter's names (GET /metrics renders metrics.registry). */
  readonly metrics: BrokerMetrics
  private readonly dispatcher: FrameHandler
  private stopping: Promise<void> | null = null

  private constructor(
    public config: BrokerConfig,
    readonly log: Logger,
    readonly nodeId: number,
    readonly clusterId: string,
    readonly dataDir: string,
    readonly router: ShardRouter,
    readonly store: TopicStore,
    readonly topics: TopicManager,
    private readonly server: SocketServer,
    /** Where clients are told to connect (advertised.listeners, with bound ports filled in). */
    readonly endpoints: BrokerEndpoint[],
    readonly bound: BoundListener[],
    private readonly shutdownGraceMs: number,
    registry: MetricsRegistry | undefined,
  ) {
    this.metrics = new BrokerMetrics(
      {
        logs: () => this.partitions.states(),
        fetchPurgatorySize: () => this.partitions.fetchPurgatorySize,
        connections: () => this.server.connectionsByListener(),
        consumerLag: () => this.consumerLag(),
        isController: () => this.metadata.controllerId === this.nodeId,
        topicExists: (name) => this.topics.get(name) !== undefined,
      },
      registry,
    )
    this.partitions = new ReplicaManager(router, store, dataDir, log, this.metrics)
    this.metadata = new BrokerMetadataView(nodeId, clusterId, (listenerName) => this.endpointFor(listenerName), topics, () => this.config)
    this.configs = new DynamicConfigService(store, () => this.config, (c) => this.applyBrokerConfig(c), log)
    this.producerIds = new ProducerIdManager(dataDir)
    this.groups = new GroupService(this)
    this.transactions = new TransactionService(this)
    // Built once: every request's context carries these same services.
    this.dispatcher = createDispatcher(
      {
        partitions: this.partitions,
        metadata: this.metadata,
        topics,
        configs: this.configs,
        groups: this.groups,
        transactions: this.transactions,
        producerIds: this.producerIds,
        log,
        apiVersions: this.registry.apiVersions(),
      },
      this.registry,
      this.metrics,
    )
  }

  /** Committed offsets and lag of every group this broker coordinates (the consumer lag metrics). */
  private async consumerLag(): Promise<{ group: string; topic: string; partition: number; committedOffset: number; lag: number }[]> {
    const coordinator = this.groups.current
    if (coordinator === undefined) return []
    const { groups } = await coordinator.listGroups()
    const out: { group: string; topic: string; partition: number; committedOffset: number; lag: number }[] = []
    for (const g of groups) {
      for (const l of await coordinator.groupLag(g.groupId)) out.push({ group: g.groupId, topic: l.topic, partition: l.partition, committedOffset: l.committedOffset, lag: l.lag })
    }
    return out
  }

  static async start(config: BrokerConfig, opts: StartBrokerOptions = {}): Promise<Broker> {
    const log = opts.logger ?? createLogger()
    const dirs = config.logDirs
    if (dirs.length !== 1) throw new Error(`log.dirs lists ${dirs.length} directories; this broker supports exactly one`)
    const dataDir = dirs[0]!
    mkdirSync(dataDir, { recursive: true })
    const meta = loadOrCreateMetaProperties(dataDir, { nodeId: config.brokerId, clusterId: config.clusterId })
    const store = TopicStore.open(dataDir)
    const dynamic = store.dynamicBrokerConfigs()
    // The store keeps the string forms; the config layers hold parsed values.
    config = config.withDynamic({
      perBroker: validateBrokerProperties(Object.entries(dynamic.perBroker)),
      clusterDefault: validateBrokerProperties(Object.entries(dynamic.clusterDefault)),
    })
    const router = await ShardRouter.start({
      dataDir,
      ioThreads: config.ioThreads,
      defaults: config.logDefaults(),
      retentionCheckIntervalMs: config.logRetentionCheckIntervalMs,
      flushSchedulerIntervalMs: config.logFlushSchedulerIntervalMs,
      checkpointIntervalMs: config.getInt('log.flush.offset.checkpoint.interval.ms'),
      cleaner: {
        enable: config.getBoolean('log.cleaner.enable'),
        backoffMs: config.getInt('log.cleaner.backoff.ms'),
        ioMaxBytesPerSecond: config.getDouble('log.cleaner.io.max.bytes.per.second'),
        dedupeBufferBytes: config.getInt('log.cleaner.dedupe.buffer.size'),
      },
      producerExpiration: {
        expirationMs: config.getInt('producer.id.expiration.ms'),
        checkIntervalMs: config.getInt('producer.id.expiration.check.interval.ms'),
      },
      logger: log,
    })
    const topics = new TopicManager(store, router, config, meta.nodeId, log)
    try {
      await topics.recover()
    } catch (err) {
      await router.close()
      throw err
    }
    const limits = {
      maxRequestBytes: config.getInt('socket.request.max.bytes'),
      idleTimeoutMs: config.getInt('connections.max.idle.ms'),
      maxInFlightBytes: Math.max(config.getInt('socket.request.max.bytes'), 64 * 1024 * 1024),
      maxInFlightRequests: 64,
    }
    // The dispatcher needs the broker and the broker needs the server: tie them through a holder.
    let broker: Broker | undefined
    const dispatch: FrameHandler = (frame, conn) => {
      if (broker === undefined) return Promise.reject(new Error('broker not started'))
      return broker.dispatcher(frame, conn)
    }
    const server = new SocketServer(limits, dispatch, log)
    let bound: BoundListener[]
    try {
      bound = await server.listen(config.listeners)
    } catch (err) {
      await router.close()
      throw err
    }
    const endpoints = advertise(config.advertisedListeners, bound)
    broker = new Broker(config, log, meta.nodeId, meta.clusterId, dataDir, router, store, topics, server, endpoints, bound, opts.shutdownGraceMs ?? 5000, opts.metrics)
    broker.groups.startIfPresent()
    broker.transactions.startIfPresent()
    log.info(
      { nodeId: meta.nodeId, clusterId: meta.clusterId, dataDir, ioThreads: config.ioThreads, listeners: endpoints.map((e) => `${e.listenerName}://${e.host}:${e.port}`) },
      `Skein broker ${meta.nodeId} ready on ${endpoints.map((e) => `${e.host}:${e.port}`).join(', ')} (data in ${dataDir})`,
    )
    return broker
  }

  /** The endpoint clients on this listener should use (the first advertised one for an unknown listener). */
  endpointFor(listenerName?: string): BrokerEndpoint {
    return this.endpoints.find((e) => e.listenerName === listenerName) ?? this.endpoints[0]!
  }

  /** Applies a new dynamic broker configuration (AlterConfigs on the broker resource). */
  async applyBrokerConfig(config: BrokerConfig): Promise<void> {
    this.config = config
    this.topics.setBrokerConfig(config)
    await this.topics.refreshAllLogConfigs()
  }

  /** Graceful stop: no new connections, answer what is in flight, close shards and write the marker. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop()
    return this.stopping
  }

  private async doStop(): Promise<void> {
    this.log.info('shutting down')
    // Pending JoinGroup/SyncGroup answers go out now (NOT_COORDINATOR) instead of holding the drain.
    this.groups.close()
    this.transactions.close()
    this.partitions.wakeAllWaiters()
    await this.server.shutdown(this.shutdownGraceMs)
    this.partitions.wakeAllWaiters()
    await this.router.close()
    this.log.info('shut down cleanly')
  }
}

function advertise(advertised: Listener[], bound: BoundListener[]): BrokerEndpoint[] {
  return advertised.map((a) => {
    const b = bound.find((x) => x.listener.name === a.name)
    const port = a.port === 0 && b !== undefined ? b.port : a.port
    let host = a.host
    if (host === '' || host === '0.0.0.0' || host === '::') host = '127.0.0.1'
    return { listenerName: a.name, host, port }
  })
}
