// A Skein broker: configuration, the metadata store (ZooKeeper with zookeeper.connect, else the embedded
// file of a single broker), the partition shards, the cluster membership (registration, the controller
// every broker runs, config change notifications), the services handlers see (the partition service, the
// metadata image the controller feeds, topic and config administration, the coordinators, producer ids,
// fetch sessions, the control plane) and the socket server, started and stopped in the right order. This is what
// `npm start` runs and what the library API's startBroker() returns.
import type { BrokerConfig } from '../config/broker-config.js'
import type { Listener } from '../config/listeners.js'
import { randomKafkaUuid } from '../domain/uuid.js'
import { loadOrCreateMetaProperties, readMetaProperties, type MetaProperties } from '../storage/meta-properties.js'
import { validateTopicConfigs } from '../config/topic-configs.js'
import { BrokerControlPlane } from './control/control-plane.js'
import { ClusterMember } from './control/cluster-member.js'
import { Controller } from '../cluster/controller/controller.js'
import { EmbeddedStore } from '../cluster/embedded-store.js'
import { MetadataImage } from '../cluster/metadata-image.js'
import type { BrokerRegistration, MetadataStore } from '../cluster/metadata-store.js'
import { ZkStore } from '../cluster/zk-store.js'
import { createLogger, type Logger } from '../observability/logger.js'
import type { MetricsRegistry } from '../observability/metrics.js'
import { ShardRouter } from '../shard/router.js'
import { ensureDataDirectory } from '../storage/index.js'
import { BrokerMetrics } from '../observability/broker-metrics.js'
import { StallWatch } from '../observability/stall-watch.js'
import type { FrameHandler } from '../server/connection.js'
import { brokerLinkFactory, probeLinkFactory } from './control/broker-link.js'
import { BrokerLease } from './control/broker-lease.js'
import { interBrokerClientSecurity } from './inter-broker-security.js'
import type { ClientSecurity } from '../client/sasl.js'
import { ControllerRequests } from './control/controller-requests.js'
import { connectLeaderEndpoint } from './remote-leader-endpoint.js'
import { createDispatcher } from '../server/dispatcher.js'
import { DynamicConfigService, parseDynamicLayers, readDynamicBrokerConfigs, type DynamicBrokerConfigLayers } from './dynamic-configs.js'
import { FetchSessionCache } from '../server/handlers/common/fetch-sessions.js'
import { GroupService } from './coordinators/groups.js'
import { HANDLERS } from '../server/handlers/index.js'
import { servedHandlers } from './control/network-control.js'
import { ProducerIdManager } from './producer-ids.js'
import { ApiTable } from '../server/api-table.js'
import { ReplicaManager } from '../replication/replica-manager.js'
import { ReplicationQuota } from '../replication/replication-quota.js'
import { SharePartitionManager } from '../replication/share/share-partition-manager.js'
import { BrokerShareGroupStates } from './coordinators/share-group-states.js'
import { BrokerSharePersister, ShareStateService } from './coordinators/share-states.js'
import { BrokerShareGroupOffsets } from './coordinators/share-group-offsets.js'
import { countAcknowledgements, shareGroupLag } from './share-group-metrics.js'
import { AclService, AUTHORIZER_CLASS_NAMES } from './acls.js'
import { buildListenerSecurity, listenerTlsContexts } from '../server/listener-security.js'
import { ScramCredentialService } from './scram-credentials.js'
import { ClientQuotaService } from './client-quota-configs.js'
import { GroupConfigService } from './group-configs.js'
import { RequestThrottler } from '../server/request-quotas.js'
import { ClientQuotas } from '../quota/client-quotas.js'
import { SocketServer, type BoundListener, type ConnectionQuotas } from '../server/socket-server.js'
import { parseConnectionOverrides } from '../config/broker-configs.js'
import { TopicManager } from './topics.js'
import { TransactionService } from './coordinators/transactions.js'

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

/** How long start() waits for the controller's first word about the cluster before serving anyway. */
const FIRST_METADATA_WAIT_MS = 30_000
/** How long a broker waits before writing a refused log dir event notification again. */
const LOG_DIR_EVENT_RETRY_MS = 1000

export class Broker {
  /** The APIs served from the network; without ZooKeeper not the control plane's (network-control.ts). */
  readonly apiTable: ApiTable
  /** The partitions this broker holds, as leader or follower: appends, reads, offsets, fetch long-polling. */
  readonly partitions: ReplicaManager
  /** Brokers, topics and partition leaders as the controller last told this broker (read-only for handlers). */
  readonly metadata: MetadataImage
  /** The broker configuration and its dynamic layers. */
  readonly configs: DynamicConfigService
  /** InitProducerId's producer ids, reserved in blocks in the metadata store. */
  readonly producerIds: ProducerIdManager
  /** The group coordinator (consumer groups and committed offsets over __consumer_offsets). */
  readonly groups: GroupService
  /** The transaction coordinator (transactional producers over __transaction_state). */
  readonly transactions: TransactionService
  /** Incremental fetch sessions, at most max.incremental.fetch.session.cache.slots of them. */
  readonly fetchSessions: FetchSessionCache
  /**
   * Share-partitions (KIP-932) of the partitions this broker leads and the members' share sessions
   * (ShareFetch, ShareAcknowledge); their state is kept by the share coordinator (BrokerSharePersister).
   */
  readonly sharePartitions: SharePartitionManager
  /** The share coordinator (durable share-partition state over __share_group_state, KIP-932). */
  readonly shareStates: ShareStateService
  readonly #sharePersister: BrokerSharePersister
  readonly #shareGroupStates: BrokerShareGroupStates
  /**
   * This broker's side of the control plane: what the controller's LeaderAndIsr, UpdateMetadata and
   * StopReplica do here, and who answers AlterPartition / ControlledShutdown.
   */
  readonly controlPlane: BrokerControlPlane
  /**
   * The controller this broker runs: every broker runs for election, and this one acts only while it
   * is the active controller (isActive). Not the active controller of the cluster, which may be elsewhere.
   */
  readonly ownController: Controller
  /** Client quotas: their configs (DescribeClientQuotas, AlterClientQuotas) and the quota managers. */
  readonly clientQuotas: ClientQuotaService
  /** Group configs (GROUP config resources): each group's overrides of the group.* broker defaults. */
  readonly groupConfigs: GroupConfigService
  /** Registration, config change notifications, controlled shutdown. */
  readonly cluster: ClusterMember
  /** This broker's lease and its watch on the controller (a ZooKeeper cluster only; broker-lease.ts). */
  readonly lease: BrokerLease | undefined
  /** Logs main-thread stalls of 500 ms or more (what other brokers' failure detection sees as silence). */
  readonly stallWatch: StallWatch
  /** Topic administration through the metadata store. */
  readonly topics: TopicManager
  /** Requests from this broker to the active controller (AlterPartition), in process or over the network. */
  readonly controllerChannel: ControllerRequests
  /** The authorizer (authorizer.class.name) and the ACLs it holds. */
  readonly acls: AclService
  /** Kafka's broker metrics under the JMX exporter's names (GET /metrics renders metrics.registry). */
  readonly metrics: BrokerMetrics
  /** leader/follower.replication.throttled.rate: the replication quotas (Kafka's ReplicationQuotaManagers). */
  readonly replicationQuotas: { readonly leader: ReplicationQuota; readonly follower: ReplicationQuota }
  private readonly dispatcher: FrameHandler
  private stopping: Promise<void> | null = null
  readonly #fatalListeners: ((reason: string) => void)[] = []

  private constructor(
    public config: BrokerConfig,
    readonly log: Logger,
    readonly nodeId: number,
    readonly clusterId: string,
    readonly dataDir: string,
    readonly router: ShardRouter,
    /** The cluster's metadata: ZooKeeper, or the embedded file of a single broker. */
    readonly store: MetadataStore,
    dynamicLayers: DynamicBrokerConfigLayers,
    private readonly server: SocketServer,
    /** Where clients are told to connect (advertised.listeners, with bound ports filled in). */
    readonly endpoints: BrokerEndpoint[],
    readonly bound: BoundListener[],
    readonly interBrokerListener: string,
    /** TLS and SASL of this broker's connections to the others (inter-broker-security.ts); undefined for PLAINTEXT. */
    readonly interBrokerSecurity: ClientSecurity | undefined,
    private readonly shutdownGraceMs: number,
    registry: MetricsRegistry | undefined,
  ) {
    this.apiTable = new ApiTable(servedHandlers(HANDLERS, store.kind))
    this.metrics = new BrokerMetrics(
      {
        logs: () => this.partitions.states(),
        fetchPurgatorySize: () => this.partitions.fetchPurgatorySize,
        connections: () => this.server.connectionsByListener(),
        consumerLag: () => this.consumerLag(),
        isController: () => this.ownController.isActive,
        leadership: () => this.partitions.leadership(),
        offlinePartitions: () => {
          let n = 0
          for (const t of this.metadata.topics()) for (const p of t.partitionStates) if (p !== undefined && p.leaderId < 0) n++
          return n
        },
        topicExists: (name) => this.metadata.topic(name) !== undefined,
        replicationQuotaRate: (side) => this.replicationQuotas[side].rate(),
        offlineLogDirs: () => this.router.offlineDirs.size,
        fetchSessions: () => ({ sessions: this.fetchSessions.size, partitions: this.fetchSessions.cachedPartitions, evictions: this.fetchSessions.evictions }),
        sharePartitions: () => this.sharePartitions,
        shareGroupLag: () =>
          shareGroupLag({
            coordinator: () => this.groups.current,
            offsets: new BrokerShareGroupOffsets(this.#sharePersister, this.sharePartitions),
            metadata: this.metadata,
            highWatermark: (topic, partition) => this.partitions.hosted(topic, partition)?.leaderState?.highWatermark,
          }),
      },
      registry,
    )
    this.metadata = new MetadataImage(nodeId, clusterId, (listenerName) => this.endpointFor(listenerName), () => this.config)
    this.replicationQuotas = {
      leader: replicationQuota('leader', nodeId, () => this.config, () => this.metadata),
      follower: replicationQuota('follower', nodeId, () => this.config, () => this.metadata),
    }
    this.partitions = new ReplicaManager(router, log, {
      brokerId: nodeId,
      logConfigFor: async (topic) => this.config.logConfig(validateTopicConfigs(await this.controlPlane.topicConfigs(topic))),
      defaultLogConfig: () => this.config.logDefaults(),
      knowsPartition: (topic, partition) => this.metadata.partition(topic, partition) !== undefined,
      minInsyncReplicas: async (topic) => {
        const own = (await this.controlPlane.topicConfigs(topic))['min.insync.replicas']
        const n = own === undefined ? NaN : Number(own)
        return Number.isInteger(n) && n >= 1 ? n : this.config.getInt('min.insync.replicas')
      },
      brokerEpoch: () => this.controlPlane.brokerEpoch,
      alterPartition: (request) => this.controllerChannel.alterPartition(request),
      connectLeader: (leader, fetcherId) => connectLeaderEndpoint(nodeId, leader, config.getInt('replica.socket.timeout.ms'), { fetcherId, interBrokerProtocolVersion: config.getString('inter.broker.protocol.version') ?? undefined, security: interBrokerSecurity }),
      // Dynamic (cluster-wide): read at each role change.
      numReplicaFetchers: () => this.config.getInt('num.replica.fetchers'),
      replicaLagTimeMaxMs: config.getInt('replica.lag.time.max.ms'),
      leaseHeld: () => this.lease?.held() ?? true,
      followerThrottle: this.replicationQuotas.follower,
      leaderThrottle: this.replicationQuotas.leader,
      fetcher: {
        maxWaitMs: config.getInt('replica.fetch.wait.max.ms'),
        minBytes: config.getInt('replica.fetch.min.bytes'),
        maxBytes: config.getInt('replica.fetch.response.max.bytes'),
        partitionMaxBytes: config.getInt('replica.fetch.max.bytes'),
        backoffMs: config.getInt('replica.fetch.backoff.ms'),
      },
    }, this.metrics)
    this.controlPlane = new BrokerControlPlane({
      brokerId: nodeId,
      image: this.metadata,
      replicas: this.partitions,
      store,
      log,
      onTopicConfigChanged: (topic) => this.partitions.refreshLogConfigs(topic),
      onPartitionsDeleted: (partitions) => {
        this.sharePartitions.onPartitionsDeleted(partitions)
        return this.groups.onPartitionsDeleted(partitions)
      },
      onControllerRequest: () => this.lease?.controllerSpoke(),
    })
    const probe = store.kind === 'zookeeper' ? probeLinkFactory(interBrokerSecurity) : undefined
    this.ownController = new Controller({
      brokerId: nodeId,
      store,
      local: this.controlPlane,
      connect: brokerLinkFactory(interBrokerSecurity),
      probe,
      lastHeardFrom: (id) => this.lease?.lastHeardFrom(id),
      config: () => this.config,
      interBrokerListener,
      log,
    })
    this.lease =
      probe === undefined
        ? undefined
        : new BrokerLease({
            brokerId: nodeId,
            store,
            image: this.metadata,
            ownController: this.ownController,
            probe,
            interBrokerListener,
            intervalMs: config.getInt('broker.heartbeat.interval.ms'),
            sessionTimeoutMs: config.getInt('broker.session.timeout.ms'),
            zkSessionTimeoutMs: config.getInt('zookeeper.session.timeout.ms'),
            onChange: (lapsed) => {
              this.metadata.setSelfFenced(lapsed)
              if (lapsed) this.partitions.leaseLapsed()
            },
            log,
          })
    this.stallWatch = new StallWatch(log, 500)
    this.controlPlane.setController(this.ownController)
    this.controllerChannel = new ControllerRequests(nodeId, this.ownController, this.controlPlane, this.metadata, store, interBrokerListener, interBrokerSecurity)
    this.topics = new TopicManager(store, this.metadata, this.controlPlane, config, log, { brokerId: nodeId, router })
    this.configs = new DynamicConfigService(store, nodeId, dynamicLayers, () => this.config, (c) => this.applyBrokerConfig(c), log, (c) => void listenerTlsContexts(c))
    this.producerIds = new ProducerIdManager((blockSize) => store.allocateProducerIdBlock(nodeId, blockSize))
    this.cluster = new ClusterMember({
      registration: registrationOf(nodeId, config, endpoints),
      store,
      image: this.metadata,
      controlPlane: this.controlPlane,
      ownController: this.ownController,
      interBrokerListener,
      interBrokerSecurity,
      // A registration left by this broker's previous run vanishes when that session expires.
      registrationWaitMs: store.kind === 'zookeeper' ? config.getInt('zookeeper.session.timeout.ms') + 10_000 : 0,
      onConfigChanges: (changes) => {
        void this.controlPlane.onConfigChanges(changes)
        void this.configs.onConfigChanges(changes)
        void this.clientQuotas.onConfigChanges(changes)
        void this.groupConfigs.onConfigChanges(changes)
      },
      log,
    })
    this.acls = new AclService(store, config, log)
    const quotaWindow = (prefix: string): { samples: number; windowMs: number } => ({
      samples: config.getInt(`${prefix}quota.window.num`),
      windowMs: config.getInt(`${prefix}quota.window.size.seconds`) * 1000,
    })
    this.clientQuotas = new ClientQuotaService(store, new ClientQuotas(quotaWindow(''), quotaWindow('controller.')), log)
    const throttler = new RequestThrottler(this.clientQuotas.quotas)
    throttler.registerMetrics(this.metrics.registry)
    // The coordinators' services get what they use of the broker, not the broker (which would be a cycle).
    this.groupConfigs = new GroupConfigService(store, () => this.config, log)
    const internalTopicPorts = { config: () => this.config, log, topics: this.topics, partitions: this.partitions }
    this.#shareGroupStates = new BrokerShareGroupStates(() => this.#sharePersister, this.metadata, () => this.sharePartitions)
    this.groups = new GroupService({ ...internalTopicPorts, groupConfigs: this.groupConfigs, shareStates: this.#shareGroupStates })
    this.transactions = new TransactionService({
      ...internalTopicPorts,
      nodeId,
      metadata: this.metadata,
      interBrokerListener,
      interBrokerSecurity,
      groups: this.groups,
      producerIds: this.producerIds,
    })
    this.fetchSessions = new FetchSessionCache(config.getInt('max.incremental.fetch.session.cache.slots'))
    this.shareStates = new ShareStateService(internalTopicPorts)
    this.#sharePersister = new BrokerSharePersister(this.shareStates, { nodeId, log, metadata: this.metadata, interBrokerListener, interBrokerSecurity })
    this.sharePartitions = new SharePartitionManager(this.partitions, this.#sharePersister, {
      brokerInt: (name) => this.config.getInt(name),
      group: (group, name) => this.groupConfigs.effective(group, name),
    })
    this.partitions.onLeadershipChange((topic, partition, isLeader) => this.sharePartitions.onLeadershipChange(topic, partition, isLeader))
    // Built once: every request's context carries these same services.
    this.dispatcher = createDispatcher(
      {
        partitions: this.partitions,
        metadata: this.metadata,
        topics: this.topics,
        configs: this.configs,
        groups: this.groups,
        groupConfigs: this.groupConfigs,
        transactions: this.transactions,
        producerIds: this.producerIds,
        fetchSessions: this.fetchSessions,
        sharePartitions: countAcknowledgements(this.sharePartitions, this.metrics.shareRecordAcknowledgements),
        shareStates: this.shareStates,
        // A deleted state is initialized again at the group's next heartbeat: DeleteShareGroupOffsets takes
        // its topic out of the group's ShareGroupStatePartitionMetadata.
        shareGroupOffsets: new BrokerShareGroupOffsets(this.#sharePersister, this.sharePartitions),
        control: this.controlPlane.network,
        scram: new ScramCredentialService(store),
        quotas: this.clientQuotas,
        acl: this.acls,
        log,
        apiVersions: this.apiTable.apiVersions(),
      },
      this.apiTable,
      this.metrics,
      throttler,
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
    const dataDirs = [...new Set(config.logDirs)]
    for (const d of dataDirs) ensureDataDirectory(d)
    // The broker's own files (cluster-metadata.json of a single broker, producer-id-block) go in the first.
    const dataDir = dataDirs[0]!
    // The listener brokers reach each other on, and the TLS/SASL of those connections: checked here, before anything starts.
    const interBroker = interBrokerClientSecurity(config)
    const interBrokerListener = interBroker.listener
    const authorizer = config.getString('authorizer.class.name') ?? ''
    if (authorizer !== '' && !AUTHORIZER_CLASS_NAMES.includes(authorizer)) {
      throw new Error(`authorizer.class.name ${authorizer} is not available; Skein's ACL authorizer answers to ${AUTHORIZER_CLASS_NAMES.join(', ')}`)
    }
    const { store, meta } = await openMetadataStore(config, dataDirs, log)
    let router: ShardRouter | undefined
    let server: SocketServer | undefined
    try {
      const dynamicLayers = await readDynamicBrokerConfigs(store, meta.nodeId)
      // The store keeps the string forms; the config layers hold parsed values.
      config = config.withDynamic(parseDynamicLayers(dynamicLayers))
      let brokerForDirs: Broker | undefined
      const failedEarly: string[] = []
      router = await ShardRouter.start({
        dataDir,
        dataDirs,
        onLogDirFailure: (dir) => {
          if (brokerForDirs === undefined) failedEarly.push(dir)
          else void brokerForDirs.onLogDirFailure(dir)
        },
        onLogDirRecovered: (dir) => void brokerForDirs?.onLogDirRecovered(dir),
        logDirProbeIntervalMs: config.getInt('log.dir.probe.interval.ms'),
        logDirFailureRetryIntervalMs: config.getInt('log.dir.failure.retry.interval.ms'),
        logDirFailureRetryMinFreeBytes: config.getInt('log.dir.failure.retry.min.free.bytes'),
        // Kafka's answer to a full disk, a failed directory whose leaderships move, needs other replicas:
        // a single broker refuses the writes that do not fit instead and takes them again once space returns.
        diskFullFailsLogDir: store.kind !== 'embedded',
        ioThreads: config.ioThreads,
        defaults: config.logDefaults(),
        retentionCheckIntervalMs: config.logRetentionCheckIntervalMs,
        flushSchedulerIntervalMs: config.logFlushSchedulerIntervalMs,
        checkpointIntervalMs: config.getInt('log.flush.offset.checkpoint.interval.ms'),
        // A single broker's partitions open with the HW at their LEO, as ever; a cluster's replicas with
        // their checkpointed HW (the replica manager switches leaders whose ISR is themselves alone).
        highWatermarkFollowsLeo: store.kind === 'embedded',
        highWatermarkCheckpointIntervalMs: config.getInt('replica.high.watermark.checkpoint.interval.ms'),
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
        maxOpenFiles: config.getInt('log.segment.open.files.max'),
        logger: log,
      })
      // Partition directories the metadata does not list are moved aside, never served (nothing deleted comes back).
      await TopicManager.moveAsideStrays(store, router, log)
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
      const startConfig = config
      let quotaConfig: BrokerConfig | undefined
      let quotas: ConnectionQuotas | undefined
      // Parsed again only when a dynamic change gave the broker a new config object.
      const connectionQuotas = (): ConnectionQuotas => {
        const current = broker?.config ?? startConfig
        if (quotas === undefined || quotaConfig !== current) {
          quotaConfig = current
          quotas = {
            maxConnections: current.getInt('max.connections'),
            maxConnectionsPerIp: current.getInt('max.connections.per.ip'),
            perIpOverrides: parseConnectionOverrides(current.getString('max.connections.per.ip.overrides') ?? ''),
            maxConnectionCreationRate: current.getInt('max.connection.creation.rate'),
            interBrokerListener,
          }
        }
        return quotas
      }
      server = new SocketServer(limits, dispatch, log, buildListenerSecurity(config, store), connectionQuotas)
      const bound = await server.listen(config.listeners)
      const endpoints = advertise(config.advertisedListeners, bound)
      broker = new Broker(config, log, meta.nodeId, meta.clusterId, dataDir, router, store, dynamicLayers, server, endpoints, bound, interBrokerListener, interBroker.security, opts.shutdownGraceMs ?? 5000, opts.metrics)
      brokerForDirs = broker
      await broker.acls.start()
      await broker.clientQuotas.start()
      await broker.groupConfigs.start()
      await broker.cluster.start()
      broker.lease?.start()
      broker.stallWatch.start()
      // In the background: a broker whose store is slow to answer still starts.
      broker.producerIds.reserveFirstBlock().catch((err: unknown) => log.warn({ err: (err as Error).message }, 'cannot reserve producer ids yet; the first InitProducerId tries again'))
      for (const dir of failedEarly) await broker.onLogDirFailure(dir)
      if (!(await broker.cluster.waitForMetadata(FIRST_METADATA_WAIT_MS))) {
        log.warn({ waitedMs: FIRST_METADATA_WAIT_MS }, 'no metadata from the controller yet; serving with what this broker knows')
      }
      broker.groups.startIfPresent()
      broker.transactions.startIfPresent()
      broker.shareStates.startIfPresent()
      log.info(
        {
          nodeId: meta.nodeId,
          clusterId: meta.clusterId,
          dataDirs,
          ioThreads: config.ioThreads,
          metadata: store.description,
          listeners: endpoints.map((e) => `${e.listenerName}://${e.host}:${e.port}`),
        },
        `Skein broker ${meta.nodeId} ready on ${endpoints.map((e) => `${e.host}:${e.port}`).join(', ')} (data in ${dataDirs.join(', ')})`,
      )
      return broker
    } catch (err) {
      await server?.shutdown(0).catch(() => {})
      await store.close().catch(() => {})
      await router?.close().catch(() => {})
      throw err
    }
  }

  /** Called when the broker stops by itself (every log dir failed, as Kafka halts); main exits then. */
  onFatal(listener: (reason: string) => void): void {
    this.#fatalListeners.push(listener)
  }

  /**
   * A data directory failed (the router took it offline): its replicas go offline here, the controller
   * hears of it through the store (Kafka's /log_dir_event_notification) and moves their leaderships; with
   * every directory failed the broker stops (Kafka halts), unless one of them is only full and may come
   * back (log.dir.failure.retry.interval.ms): then it stays up, leading nothing, until it does.
   */
  async onLogDirFailure(dir: string): Promise<void> {
    await this.partitions.onLogDirFailure(dir).catch((err: unknown) => this.log.error({ err: (err as Error).message, dir }, 'taking replicas offline failed'))
    if (this.router.offlineDirs.size >= this.router.dataDirs.length && this.router.offlineForSpace.size === 0) {
      const reason = `every log directory failed (${this.router.dataDirs.join(', ')}): shutting down`
      this.log.fatal({ dirs: this.router.dataDirs }, reason)
      for (const l of this.#fatalListeners) l(reason)
      void this.stop()
      return
    }
    await this.reportLogDirEvent(dir, 'failure')
  }

  /**
   * Writes a /log_dir_event_notification for this broker, retried every second while ZooKeeper refuses
   * it (a lost session, say): without it the controller would keep counting the dir's replicas as they
   * were until the next event or a restart.
   */
  private async reportLogDirEvent(dir: string, what: 'failure' | 'recovery'): Promise<void> {
    for (let attempt = 1; this.stopping === null; attempt++) {
      try {
        await this.store.notifyLogDirFailure(this.nodeId)
        return
      } catch (err) {
        this.log.error({ err: (err as Error).message, dir, attempt }, `cannot report the log dir ${what} to the controller; retrying in 1 s`)
        await new Promise((resolve) => setTimeout(resolve, LOG_DIR_EVENT_RETRY_MS).unref())
      }
    }
  }

  /**
   * A directory that a full disk took offline has room again and its partitions are reopened (the router
   * did that): the controller hears of it as of a failure, through a log dir event, and sends this broker
   * LeaderAndIsr for every replica it has; those now answer without KAFKA_STORAGE_ERROR, so the controller
   * counts them online again, and they become followers, catch up and rejoin the ISRs (or lead a partition
   * that had no other replica left).
   */
  async onLogDirRecovered(dir: string): Promise<void> {
    await this.partitions.onLogDirRecovered(dir).catch((err: unknown) => this.log.error({ err: (err as Error).message, dir }, 'cannot list the reopened replicas'))
    if (this.stopping !== null) return
    await this.reportLogDirEvent(dir, 'recovery')
  }

  /** The endpoint clients on this listener should use (the first advertised one for an unknown listener). */
  endpointFor(listenerName?: string): BrokerEndpoint {
    return this.endpoints.find((e) => e.listenerName === listenerName) ?? this.endpoints[0]!
  }

  /** Applies a new dynamic broker configuration (AlterConfigs on the broker resource). */
  async applyBrokerConfig(config: BrokerConfig): Promise<void> {
    // New connections of TLS listeners use the key and trust stores as configured now (files read again,
    // so a certificate replaced at the same path is picked up too); open connections keep theirs.
    try {
      for (const [listener, options] of listenerTlsContexts(config)) this.server.setSecureContext(listener, options)
    } catch (err) {
      this.log.error({ err: (err as Error).message }, 'TLS listeners keep their certificates')
    }
    this.config = config
    this.topics.setBrokerConfig(config)
    await this.partitions.refreshLogConfigs()
  }

  /** Graceful stop: leaderships moved away (a ZooKeeper cluster), no new connections, what is in flight answered, shards closed. */
  stop(): Promise<void> {
    this.stopping ??= this.doStop()
    return this.stopping
  }

  private async doStop(): Promise<void> {
    this.log.info('shutting down')
    if (this.store.kind === 'zookeeper' && this.config.getBoolean('controlled.shutdown.enable')) {
      await this.cluster
        .controlledShutdown({ maxRetries: this.config.getInt('controlled.shutdown.max.retries'), retryBackoffMs: this.config.getInt('controlled.shutdown.retry.backoff.ms') })
        .catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'controlled shutdown failed'))
    }
    this.lease?.stop()
    this.stallWatch.stop()
    // Pending JoinGroup/SyncGroup answers go out now (NOT_COORDINATOR) instead of holding the drain.
    this.groups.close()
    this.transactions.close()
    this.sharePartitions.close()
    this.shareStates.close()
    this.#sharePersister.close()
    this.partitions.wakeAllWaiters()
    await this.server.shutdown(this.shutdownGraceMs)
    this.partitions.wakeAllWaiters()
    // The controller stops and the store session ends: this broker's registration goes at once.
    await this.cluster.stop().catch((err: unknown) => this.log.warn({ err: (err as Error).message }, 'leaving the cluster failed'))
    this.acls.stop()
    this.controllerChannel.close()
    await this.partitions.close()
    await this.router.close()
    this.log.info('shut down cleanly')
  }
}

/**
 * The metadata store and the identity of the log dirs (one meta.properties in each, with its own
 * directory.id, all with the same node.id and cluster.id). With ZooKeeper the cluster id is the cluster's
 * (created from cluster.id, or a log dir's, or a new one, by the first broker); a log dir that belongs
 * to another cluster or node stops startup, as Kafka's "the broker is trying to join the wrong cluster".
 */
async function openMetadataStore(config: BrokerConfig, dataDirs: readonly string[], log: Logger): Promise<{ store: MetadataStore; meta: MetaProperties }> {
  const connect = config.getString('zookeeper.connect')
  const existing = dataDirs.map((d) => ({ dir: d, meta: readMetaProperties(d) }))
  // Log dirs must agree with each other before any of them is written.
  const known = existing.filter((e) => e.meta !== undefined) as { dir: string; meta: MetaProperties }[]
  for (const e of known.slice(1)) {
    if (e.meta.clusterId !== known[0]!.meta.clusterId || e.meta.nodeId !== known[0]!.meta.nodeId) {
      throw new Error(`${e.dir}/meta.properties (cluster ${e.meta.clusterId}, node ${e.meta.nodeId}) disagrees with ${known[0]!.dir}/meta.properties (cluster ${known[0]!.meta.clusterId}, node ${known[0]!.meta.nodeId}): the log dirs belong to different brokers`)
    }
  }
  const onDisk = known[0]?.meta
  const writeAll = (clusterId: string | null): MetaProperties => {
    let first: MetaProperties | undefined
    for (const d of dataDirs) {
      const m = loadOrCreateMetaProperties(d, { nodeId: config.brokerId, clusterId: clusterId ?? first?.clusterId ?? null })
      first ??= m
    }
    return first!
  }
  if (connect === null) {
    const meta = writeAll(config.clusterId ?? onDisk?.clusterId ?? null)
    return { store: EmbeddedStore.open(dataDirs[0]!, meta.nodeId), meta }
  }
  const sessionTimeoutMs = config.getInt('zookeeper.session.timeout.ms')
  const connectionTimeoutMs = (config.get('zookeeper.connection.timeout.ms') as number | null) ?? sessionTimeoutMs
  const store = new ZkStore({ connect, sessionTimeoutMs, connectionTimeoutMs, pingIntervalMs: config.getInt('broker.heartbeat.interval.ms'), logger: log })
  try {
    await store.start()
  } catch (err) {
    throw new Error(`cannot connect to ZooKeeper at ${connect}: ${(err as Error).message}`)
  }
  try {
    const clusterId = await store.getOrCreateClusterId(config.clusterId ?? onDisk?.clusterId ?? randomKafkaUuid())
    if (config.clusterId !== null && config.clusterId !== clusterId) {
      throw new Error(`cluster.id ${config.clusterId} does not match the cluster id ${clusterId} in ZooKeeper (${connect}); is zookeeper.connect right?`)
    }
    for (const e of known) {
      if (e.meta.clusterId !== clusterId) {
        throw new Error(
          `the cluster id ${clusterId} in ZooKeeper does not match ${e.meta.clusterId} in ${e.dir}/meta.properties: this broker is trying to join the wrong cluster (is zookeeper.connect right?)`,
        )
      }
    }
    return { store, meta: writeAll(clusterId) }
  } catch (err) {
    await store.close().catch(() => {})
    throw err
  }
}

/**
 * Replication throttling of one side (replication-quota.ts): `<side>.replication.throttled.rate` (a dynamic
 * broker config, read at each use) over the replicas of this broker that their topic lists in
 * `<side>.replication.throttled.replicas`. The leader holds back followers out of the ISR, the follower
 * its partitions not at the leader's high watermark (replica-manager.ts, replica-fetcher.ts).
 */
function replicationQuota(side: 'leader' | 'follower', brokerId: number, config: () => BrokerConfig, metadata: () => MetadataImage): ReplicationQuota {
  // Looked up per topic of every replication round: the name is built once.
  const listConfig = `${side}.replication.throttled.replicas`
  return new ReplicationQuota({
    brokerId,
    bound: () => Number(config().get(`${side}.replication.throttled.rate`)),
    throttledReplicas: (topic) => metadata().topic(topic)?.configs[listConfig] ?? '',
    samples: config().getInt('replication.quota.window.num'),
    sampleMs: config().getInt('replication.quota.window.size.seconds') * 1000,
  })
}

/** What other brokers and clients learn about this broker: its advertised endpoints and rack. */
function registrationOf(brokerId: number, config: BrokerConfig, endpoints: BrokerEndpoint[]): BrokerRegistration {
  const protocols = config.securityProtocolMap
  return {
    id: brokerId,
    endpoints: endpoints.map((e) => ({ listenerName: e.listenerName, host: e.host, port: e.port, securityProtocol: protocols.get(e.listenerName) ?? 'PLAINTEXT' })),
    rack: config.getString('broker.rack'),
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
