// The broker's metrics, under the names Prometheus' JMX exporter gives Kafka's MBeans with its Kafka
// rules (lowercaseOutputName; `kafka.<domain><type=T, name=NPerSec, k=v><>Count` becomes
// `kafka_<domain>_<t>_<n>_total{k="v"}`, `...<>Value` becomes `kafka_<domain>_<t>_<n>`, a histogram's
// `<>99thPercentile` becomes `kafka_<domain>_<t>_<n>{quantile="0.99"}`). README.md's metrics table lists
// each name with its Kafka MBean. Consumer lag is not a broker MBean in Kafka: it takes the names of
// kafka_exporter (kafka_consumergroup_lag), which dashboards use for it.
//
// Hot paths hold handles: topic(name) resolves a topic's counters once and is then looked up by
// ReplicaManager with a one-entry cache (a produce names each topic once, its partitions in a row);
// request metrics are arrays indexed by API key and version. Values that live elsewhere (log sizes,
// lag, connection counts, purgatory sizes) are read at scrape time.
import { type Counter, type CounterFamily, Gauge, type Histogram, MetricsRegistry, type SummaryFamily } from './metrics.js'

/** BrokerTopicMetrics of one topic, or of all topics (the MBean without a topic). */
export interface TopicMetrics {
  readonly messagesIn: Counter
  readonly bytesIn: Counter
  readonly bytesOut: Counter
  readonly failedProduceRequests: Counter
  readonly failedFetchRequests: Counter
  readonly totalProduceRequests: Counter
  readonly totalFetchRequests: Counter
}

interface RequestHandles {
  totalTime: Histogram
  throttleTime: Histogram
  /** Fetch is also counted as FetchConsumer, as Kafka does for fetches from consumers. */
  alsoTotalTime: Histogram | null
  alsoThrottleTime: Histogram | null
  /** By version, created on first use. */
  requests: (Counter | undefined)[]
}

/** A partition's log as the log metrics show it. */
export interface LogState {
  topic: string
  partition: number
  sizeBytes: number
  logStartOffset: number
  logEndOffset: number
  segmentCount: number
}

/** What the scrape-time metrics read from the broker. */
export interface BrokerMetricSources {
  /** Every partition's log (one shard round trip). */
  logs(): Promise<readonly LogState[]>
  /** Fetches parked waiting for data (Kafka's Fetch purgatory). */
  fetchPurgatorySize(): number
  /** Open client connections per listener name. */
  connections(): ReadonlyMap<string, number>
  /** Committed offsets and lag of every group this broker coordinates, per partition. */
  consumerLag(): Promise<readonly { group: string; topic: string; partition: number; committedOffset: number; lag: number }[]>
  /** Whether this broker is the active controller. */
  isController(): boolean
  /** Partitions this broker leads, and those of them whose ISR is smaller than their replicas. */
  leadership(): { leaders: number; underReplicated: number }
  /** Partitions of the cluster without a leader (read on the active controller only, as Kafka reports it). */
  offlinePartitions(): number
  /** Whether a topic exists (the metrics of deleted topics are dropped before a scrape). */
  topicExists(name: string): boolean
  /**
   * The measured rate (bytes/s) of the replication bytes counted against leader.replication.throttled.rate
   * or follower.replication.throttled.rate: those of the replicas the topics list as throttled.
   */
  replicationQuotaRate(side: 'leader' | 'follower'): number
  /** Log dirs of this broker taken offline by an I/O error (or a full disk) and not back. */
  offlineLogDirs(): number
  /** The fetch session cache (KIP-227): sessions held, the partitions they hold, sessions evicted so far. */
  fetchSessions(): { sessions: number; partitions: number; evictions: number }
  /**
   * Share groups (KIP-932) this broker coordinates: each share-partition's start offset and lag (the
   * partition's high watermark minus the start offset; -1 when the high watermark is not known here).
   */
  shareGroupLag?(): Promise<readonly { group: string; topic: string; partition: number; startOffset: number; lag: number }[]>
  /**
   * The share-partitions this broker leads (KIP-932): records delivered again and locks timed out so far,
   * and each share-partition held in memory with its in-flight records (SPEO minus SPSO).
   */
  sharePartitions?(): { redeliveredRecords: number; lockTimeouts: number; inFlight(): readonly { group: string; topic: string; partition: number; records: number }[] }
}

/** Kafka's AcknowledgeType names (the ackType tag of RecordAcknowledgementsPerSec), by type id. */
const ACK_TYPES = ['Gap', 'Accept', 'Release', 'Reject'] as const

const PER_SEC = (meter: string, what: string): string => `${what} (Kafka's ${meter}PerSec meter count)`

export class BrokerMetrics {
  readonly registry: MetricsRegistry
  /** The BrokerTopicMetrics MBean without a topic: every topic together. */
  readonly allTopics: TopicMetrics
  /** kafka.server:type=ReplicaManager,name=IsrShrinksPerSec (the replica manager counts committed ISR changes). */
  readonly isrShrinks: Counter
  /** kafka.server:type=ReplicaManager,name=IsrExpandsPerSec */
  readonly isrExpands: Counter
  /**
   * kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesInPerSec: record bytes this broker's fetchers
   * received from leaders (BytesInPerSec counts only appends as leader). Broker-wide only, as in Kafka.
   */
  readonly replicationBytesIn: Counter
  /** kafka.server:type=BrokerTopicMetrics,name=ReplicationBytesOutPerSec: record bytes sent to followers (not in BytesOutPerSec). */
  readonly replicationBytesOut: Counter
  /** kafka.server:type=DelayedOperationPurgatory,name=PurgatorySize,delayedOperation=Produce (acks=all waits: replication sets it). */
  readonly producePurgatorySize: Gauge
  private readonly topicFamilies: Record<keyof TopicMetrics, CounterFamily>
  private readonly byTopic = new Map<string, TopicMetrics>()
  /** Bumped when a topic's metrics are dropped: a handle cached by a caller is then resolved again. */
  generation = 0
  /**
   * kafka.server:type=ShareGroupMetrics,name=RecordAcknowledgementsPerSec,ackType=Accept|Release|Reject:
   * records acknowledged by share consumers, by AcknowledgeType id (1-3; gaps are not counted, as Kafka).
   */
  readonly shareRecordAcknowledgements: readonly (Counter | undefined)[]
  private readonly requestsFamily: CounterFamily
  private readonly totalTimeFamily: SummaryFamily
  private readonly throttleTimeFamily: SummaryFamily
  private readonly byApi: (RequestHandles | undefined)[] = []

  constructor(sources: BrokerMetricSources, registry = new MetricsRegistry()) {
    this.registry = registry
    const r = registry
    const topic = ['topic']
    this.topicFamilies = {
      messagesIn: r.counter('kafka_server_brokertopicmetrics_messagesin_total', PER_SEC('MessagesIn', 'records appended'), topic),
      bytesIn: r.counter('kafka_server_brokertopicmetrics_bytesin_total', PER_SEC('BytesIn', 'record batch bytes appended'), topic),
      bytesOut: r.counter('kafka_server_brokertopicmetrics_bytesout_total', PER_SEC('BytesOut', 'record batch bytes sent to consumers'), topic),
      failedProduceRequests: r.counter('kafka_server_brokertopicmetrics_failedproducerequests_total', PER_SEC('FailedProduceRequests', 'partition appends that failed'), topic),
      failedFetchRequests: r.counter('kafka_server_brokertopicmetrics_failedfetchrequests_total', PER_SEC('FailedFetchRequests', 'partition reads that failed'), topic),
      totalProduceRequests: r.counter('kafka_server_brokertopicmetrics_totalproducerequests_total', PER_SEC('TotalProduceRequests', 'partition appends'), topic),
      totalFetchRequests: r.counter('kafka_server_brokertopicmetrics_totalfetchrequests_total', PER_SEC('TotalFetchRequests', 'partition reads answered'), topic),
    }
    this.allTopics = this.resolveTopic('')
    this.replicationBytesIn = r.counter('kafka_server_brokertopicmetrics_replicationbytesin_total', PER_SEC('ReplicationBytesIn', 'record bytes fetched from leaders by this broker as follower')).labels()
    this.replicationBytesOut = r.counter('kafka_server_brokertopicmetrics_replicationbytesout_total', PER_SEC('ReplicationBytesOut', 'record bytes sent to followers by this broker as leader')).labels()
    // ReplicationQuotaManager's sensors (Kafka metrics kafka.server:type=LeaderReplication|FollowerReplication,
    // attribute byte-rate): a rate, read when scraped.
    r.collected('kafka_server_leaderreplication_byte_rate', 'Bytes/s sent to followers for replicas listed in leader.replication.throttled.replicas, as measured against leader.replication.throttled.rate (LeaderReplication byte-rate)', 'gauge', [], (emit) => emit([], sources.replicationQuotaRate('leader')))
    r.collected('kafka_server_followerreplication_byte_rate', 'Bytes/s fetched for replicas listed in follower.replication.throttled.replicas, as measured against follower.replication.throttled.rate (FollowerReplication byte-rate)', 'gauge', [], (emit) => emit([], sources.replicationQuotaRate('follower')))
    registry.onScrape(() => {
      for (const name of this.byTopic.keys()) if (!sources.topicExists(name)) this.removeTopic(name)
    })
    this.requestsFamily = r.counter('kafka_network_requestmetrics_requests_total', "Requests served, by API and version (Kafka's RequestsPerSec meter count)", ['request', 'version'])
    this.totalTimeFamily = r.summary('kafka_network_requestmetrics_totaltimems', 'Time from a request fully read to its response written, ms (TotalTimeMs)', ['request'])
    this.throttleTimeFamily = r.summary('kafka_network_requestmetrics_throttletimems', 'Throttle time the broker answered with, ms (ThrottleTimeMs)', ['request'])
    const producePurgatory = (this.producePurgatorySize = new Gauge())
    r.collected('kafka_server_delayedoperationpurgatory_purgatorysize', 'Requests waiting in a purgatory (PurgatorySize)', 'gauge', ['delayedOperation'], (emit) => {
      emit(['Produce'], producePurgatory.value)
      emit(['Fetch'], sources.fetchPurgatorySize())
    })
    // kafka.server:type=FetchSessionCache (consumers' and followers' incremental fetch sessions).
    r.collected('kafka_server_fetchsessioncache_numincrementalfetchsessions', 'Incremental fetch sessions held (FetchSessionCache NumIncrementalFetchSessions)', 'gauge', [], (emit) => emit([], sources.fetchSessions().sessions))
    r.collected('kafka_server_fetchsessioncache_numincrementalfetchpartitionscached', 'Partitions held by all incremental fetch sessions (FetchSessionCache NumIncrementalFetchPartitionsCached)', 'gauge', [], (emit) => emit([], sources.fetchSessions().partitions))
    r.collected('kafka_server_fetchsessioncache_incrementalfetchsessionevictions_total', "Fetch sessions evicted to make room (Kafka's IncrementalFetchSessionEvictionsPerSec meter count)", 'counter', [], (emit) => emit([], sources.fetchSessions().evictions))
    r.collected('kafka_server_replicamanager_underreplicatedpartitions', 'Partitions led here with fewer in-sync replicas than replicas (UnderReplicatedPartitions)', 'gauge', [], (emit) => emit([], sources.leadership().underReplicated))
    this.isrShrinks = r.counter('kafka_server_replicamanager_isrshrinks_total', "ISR shrinks (Kafka's IsrShrinksPerSec meter count)").labels()
    this.isrExpands = r.counter('kafka_server_replicamanager_isrexpands_total', "ISR expands (Kafka's IsrExpandsPerSec meter count)").labels()
    r.collected('kafka_controller_kafkacontroller_offlinepartitionscount', 'Partitions without an available leader, on the active controller (OfflinePartitionsCount)', 'gauge', [], (emit) => emit([], sources.isController() ? sources.offlinePartitions() : 0))
    r.collected('kafka_controller_kafkacontroller_activecontrollercount', 'Whether this broker is the active controller (ActiveControllerCount)', 'gauge', [], (emit) => emit([], sources.isController() ? 1 : 0))
    r.collected('kafka_server_socket_server_metrics_connection_count', 'Open client connections (socket-server-metrics connection-count)', 'gauge', ['listener', 'networkProcessor'], (emit) => {
      // One network thread (Node's event loop) serves every connection: networkProcessor 0.
      for (const [listener, n] of sources.connections()) emit([listener, '0'], n)
    })
    // The log metrics of one scrape share one read of the partitions' states.
    let logs: { at: number; states: Promise<readonly LogState[]> } | null = null
    const logStates = (): Promise<readonly LogState[]> => {
      const now = Date.now()
      if (logs === null || now - logs.at > 500) logs = { at: now, states: sources.logs() }
      return logs.states
    }
    const tp = ['topic', 'partition']
    const logGauge = (name: string, help: string, value: (s: LogState) => number): void =>
      r.collected(name, help, 'gauge', tp, async (emit) => {
        for (const s of await logStates()) emit([s.topic, String(s.partition)], value(s))
      })
    logGauge('kafka_log_log_size', "Bytes of a partition's log segments (Log Size)", (s) => s.sizeBytes)
    logGauge('kafka_log_log_logstartoffset', 'First offset of the log (LogStartOffset)', (s) => s.logStartOffset)
    logGauge('kafka_log_log_logendoffset', 'Offset the next record gets (LogEndOffset)', (s) => s.logEndOffset)
    logGauge('kafka_log_log_numlogsegments', 'Segments of the log (NumLogSegments)', (s) => s.segmentCount)
    r.collected('kafka_log_logmanager_offlinelogdirectorycount', 'Log dirs of this broker that are offline (LogManager OfflineLogDirectoryCount)', 'gauge', [], (emit) => emit([], sources.offlineLogDirs()))
    r.collected('kafka_server_replicamanager_partitioncount', 'Partitions on this broker (PartitionCount)', 'gauge', [], async (emit) => emit([], (await logStates()).length))
    r.collected('kafka_server_replicamanager_leadercount', 'Partitions this broker leads (LeaderCount)', 'gauge', [], (emit) => emit([], sources.leadership().leaders))
    const acks = r.counter('kafka_server_sharegroupmetrics_recordacknowledgements_total', "Records acknowledged by share consumers, by type (Kafka's ShareGroupMetrics RecordAcknowledgementsPerSec meter count)", ['ackType'])
    this.shareRecordAcknowledgements = ACK_TYPES.map((t, i) => (i === 0 ? undefined : acks.labels(t)))
    // Redeliveries: Kafka counts only the lock timeouts (SharePartitionMetrics AcquisitionLockTimeoutPerSec,
    // here summed over share-partitions); records acquired again for any reason (RELEASE, lock timeout,
    // closed session) have no Kafka metric, so they are named after the acknowledgement counter.
    r.collected('kafka_server_sharegroupmetrics_recordredeliveries_total', 'Records acquired again by share consumers after an earlier delivery (delivery count above 1)', 'counter', [], (emit) => {
      const s = sources.sharePartitions?.()
      if (s !== undefined) emit([], s.redeliveredRecords)
    })
    r.collected('kafka_server_sharepartitionmetrics_acquisitionlocktimeouts_total', "Records whose acquisition lock timed out (Kafka's SharePartitionMetrics AcquisitionLockTimeoutPerSec count, over all share-partitions)", 'counter', [], (emit) => {
      const s = sources.sharePartitions?.()
      if (s !== undefined) emit([], s.lockTimeouts)
    })
    r.collected('kafka_server_sharepartitionmetrics_inflightmessagecount', "Records in flight in a share-partition led here: between its start and end offsets (Kafka's SharePartitionMetrics InFlightMessageCount)", 'gauge', ['group', 'topic', 'partition'], (emit) => {
      for (const p of sources.sharePartitions?.().inFlight() ?? []) emit([p.group, p.topic, String(p.partition)], p.records)
    })
    // Share groups' start offsets and lag: Kafka 4.1 has no metric for them (4.2 gives the lag to admin
    // clients only), so they are named as the consumer lag below is, after kafka_exporter's.
    let shareLag: { at: number; rows: Promise<readonly { group: string; topic: string; partition: number; startOffset: number; lag: number }[]> } | null = null
    const shareLagRows = (): Promise<readonly { group: string; topic: string; partition: number; startOffset: number; lag: number }[]> => {
      const now = Date.now()
      if (shareLag === null || now - shareLag.at > 500) shareLag = { at: now, rows: sources.shareGroupLag?.() ?? Promise.resolve([]) }
      return shareLag.rows
    }
    r.collected('kafka_sharegroup_start_offset', "A share group's start offset of a share-partition (KIP-932; the groups this broker coordinates)", 'gauge', ['sharegroup', 'topic', 'partition'], async (emit) => {
      for (const l of await shareLagRows()) emit([l.group, l.topic, String(l.partition)], l.startOffset)
    })
    r.collected('kafka_sharegroup_lag', "High watermark minus a share group's start offset: records not yet finished with, in flight included", 'gauge', ['sharegroup', 'topic', 'partition'], async (emit) => {
      for (const l of await shareLagRows()) if (l.lag >= 0) emit([l.group, l.topic, String(l.partition)], l.lag)
    })
    // Lag: kafka_exporter's names, since Kafka's broker has no lag MBean.
    let lag: { at: number; rows: ReturnType<BrokerMetricSources['consumerLag']> } | null = null
    const lagRows = (): ReturnType<BrokerMetricSources['consumerLag']> => {
      const now = Date.now()
      if (lag === null || now - lag.at > 500) lag = { at: now, rows: sources.consumerLag() }
      return lag.rows
    }
    r.collected('kafka_consumergroup_current_offset', "A group's committed offset of a partition (kafka_exporter's name)", 'gauge', ['consumergroup', 'topic', 'partition'], async (emit) => {
      for (const l of await lagRows()) emit([l.group, l.topic, String(l.partition)], l.committedOffset)
    })
    r.collected('kafka_consumergroup_lag', "High watermark minus a group's committed offset (kafka_exporter's name)", 'gauge', ['consumergroup', 'topic', 'partition'], async (emit) => {
      for (const l of await lagRows()) if (l.lag >= 0) emit([l.group, l.topic, String(l.partition)], l.lag)
    })
    r.collected('kafka_consumergroup_lag_sum', "A group's lag over a topic's partitions (kafka_exporter's name)", 'gauge', ['consumergroup', 'topic'], async (emit) => {
      const sums = new Map<string, { group: string; topic: string; lag: number }>()
      for (const l of await lagRows()) {
        if (l.lag < 0) continue
        const key = `${l.group}\u0000${l.topic}`
        const s = sums.get(key)
        if (s === undefined) sums.set(key, { group: l.group, topic: l.topic, lag: l.lag })
        else s.lag += l.lag
      }
      for (const s of sums.values()) emit([s.group, s.topic], s.lag)
    })
  }

  private resolveTopic(name: string): TopicMetrics {
    const f = this.topicFamilies
    return {
      messagesIn: f.messagesIn.labels(name),
      bytesIn: f.bytesIn.labels(name),
      bytesOut: f.bytesOut.labels(name),
      failedProduceRequests: f.failedProduceRequests.labels(name),
      failedFetchRequests: f.failedFetchRequests.labels(name),
      totalProduceRequests: f.totalProduceRequests.labels(name),
      totalFetchRequests: f.totalFetchRequests.labels(name),
    }
  }

  /** A topic's BrokerTopicMetrics, resolved once and kept: callers keep it instead of asking per partition. */
  topic(name: string): TopicMetrics {
    let m = this.byTopic.get(name)
    if (m === undefined) {
      m = this.resolveTopic(name)
      this.byTopic.set(name, m)
    }
    return m
  }

  /** A deleted topic's metrics are no longer scraped (Kafka removes its BrokerTopicMetrics MBeans). */
  removeTopic(name: string): void {
    if (name === '') return
    this.generation++
    this.byTopic.delete(name)
    for (const f of Object.values(this.topicFamilies)) f.remove(name)
  }

  private requestHandles(apiKey: number, apiName: string): RequestHandles {
    let h = this.byApi[apiKey]
    if (h === undefined) {
      const also = apiName === 'Fetch' ? 'FetchConsumer' : null
      h = {
        totalTime: this.totalTimeFamily.labels(apiName),
        throttleTime: this.throttleTimeFamily.labels(apiName),
        alsoTotalTime: also === null ? null : this.totalTimeFamily.labels(also),
        alsoThrottleTime: also === null ? null : this.throttleTimeFamily.labels(also),
        requests: [],
      }
      this.byApi[apiKey] = h
    }
    return h
  }

  /** A request was answered (its response written): RequestsPerSec, TotalTimeMs and ThrottleTimeMs. */
  requestCompleted(apiKey: number, apiName: string, apiVersion: number, totalTimeMs: number, throttleTimeMs: number): void {
    const h = this.requestHandles(apiKey, apiName)
    let c = h.requests[apiVersion]
    if (c === undefined) c = h.requests[apiVersion] = this.requestsFamily.labels(apiName, String(apiVersion))
    c.inc()
    h.totalTime.record(totalTimeMs)
    h.throttleTime.record(throttleTimeMs)
    if (h.alsoTotalTime !== null) {
      h.alsoTotalTime.record(totalTimeMs)
      h.alsoThrottleTime!.record(throttleTimeMs)
    }
  }
}
