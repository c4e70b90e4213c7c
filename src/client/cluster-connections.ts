// The client's view of a cluster: bootstrap servers, one connection per broker (opened on first use,
// reopened after a failure), the metadata cache (brokers, topics, partition leaders) and group
// coordinators. Producer, consumer and admin share one Cluster each.
//
// Two timeouts bound waiting, as in Kafka's clients: request.timeout.ms (requestTimeoutMs) for one request's
// answer, and default.api.timeout.ms (apiTimeoutMs) for one operation with all its retries, so that a peer
// that accepts connections and never answers cannot hold a caller longer than the latter.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as FindCoordinator from '../protocol/messages/10-find-coordinator.gen.js'
import * as Metadata from '../protocol/messages/03-metadata.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { BrokerConnection } from './connection.js'
import { ConnectionError, TimeoutError, isRetriableError } from './errors.js'
import type { ClientSecurity } from './sasl.js'

export interface ClientOptions {
  /** 'host:port' or a list; comma-separated strings are split. */
  bootstrapServers: string | readonly string[]
  clientId?: string
  /** request.timeout.ms: how long one request waits for its answer. Default 30000, as Kafka's clients. */
  requestTimeoutMs?: number
  /**
   * default.api.timeout.ms: how long one operation (a metadata refresh, a coordinator lookup, an admin call,
   * a commit), retries included, may take. Default 60000, as Kafka's clients.
   */
  apiTimeoutMs?: number
  /** The setting apiTimeoutMs came from, named in timeout errors. Default 'default.api.timeout.ms'. */
  apiTimeoutName?: string
  /** Default 10000. */
  connectTimeoutMs?: number
  /** TLS and SASL for every connection (security.protocol, sasl.*, ssl.*); absent = PLAINTEXT. */
  security?: ClientSecurity
  /** Retries of retriable failures (metadata refresh and backoff in between). Default 5. */
  retries?: number
  /** Default 100. */
  retryBackoffMs?: number
  /** Default 256 MiB. */
  maxResponseBytes?: number
}

export interface BrokerNode {
  nodeId: number
  host: string
  port: number
  rack: string | null
}

export interface PartitionInfo {
  partition: number
  errorCode: number
  leader: number
  leaderEpoch: number
  replicas: number[]
  isr: number[]
  offlineReplicas: number[]
}

export interface TopicInfo {
  name: string
  topicId: string
  isInternal: boolean
  errorCode: number
  /** Indexed by partition number. */
  partitions: PartitionInfo[]
}

export interface ClusterMetadata {
  clusterId: string | null
  controllerId: number
  brokers: Map<number, BrokerNode>
  topics: Map<string, TopicInfo>
}

export function parseBootstrap(servers: string | readonly string[]): { host: string; port: number }[] {
  const list = (typeof servers === 'string' ? [servers] : servers).flatMap((s) => s.split(',')).map((s) => s.trim()).filter((s) => s !== '')
  if (list.length === 0) throw new Error('no bootstrap server given')
  return list.map((s) => {
    const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(s)
    if (m === null) throw new Error(`bad bootstrap server '${s}': expected host:port`)
    const port = Number(m[2])
    if (port <= 0 || port > 65535) throw new Error(`bad port in bootstrap server '${s}'`)
    return { host: m[1]!, port }
  })
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000
export const DEFAULT_API_TIMEOUT_MS = 60_000

/** What a bounded operation knows of its deadline (Cluster.withDeadline). */
export interface DeadlineState {
  /** The deadline passed: the caller has its TimeoutError; stop trying. */
  expired: boolean
}

export class Cluster {
  readonly clientId: string
  readonly requestTimeoutMs: number
  readonly apiTimeoutMs: number
  readonly retries: number
  readonly retryBackoffMs: number
  private readonly bootstrap: { host: string; port: number }[]
  private readonly connections = new Map<string, Promise<BrokerConnection>>()
  private readonly opts: ClientOptions
  private meta: ClusterMetadata = { clusterId: null, controllerId: -1, brokers: new Map(), topics: new Map() }
  private readonly coordinators = new Map<string, number>()
  private closed = false
  /** The last retriable failure, named by a TimeoutError of withDeadline. */
  private lastFailure: { at: number; err: unknown } | null = null
  /** Aborts connections still being opened when the client closes. */
  private readonly closing = new AbortController()

  constructor(opts: ClientOptions) {
    this.opts = opts
    this.bootstrap = parseBootstrap(opts.bootstrapServers)
    this.clientId = opts.clientId ?? 'skein'
    this.requestTimeoutMs = opts.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS
    this.apiTimeoutMs = opts.apiTimeoutMs ?? DEFAULT_API_TIMEOUT_MS
    this.retries = opts.retries ?? 5
    this.retryBackoffMs = opts.retryBackoffMs ?? 100
  }

  get metadata(): ClusterMetadata {
    return this.meta
  }

  /** A connection to host:port, shared; a broken one is replaced on the next call. */
  connection(host: string, port: number): Promise<BrokerConnection> {
    if (this.closed) return Promise.reject(new ConnectionError('the client is closed'))
    const key = `${host}:${port}`
    const existing = this.connections.get(key)
    if (existing !== undefined) return existing
    const p = BrokerConnection.connect({
      host,
      port,
      clientId: this.clientId,
      connectTimeoutMs: this.opts.connectTimeoutMs,
      security: this.opts.security,
      requestTimeoutMs: this.requestTimeoutMs,
      maxResponseBytes: this.opts.maxResponseBytes,
      signal: this.closing.signal,
    }).then((conn) => {
      conn.onClose(() => {
        if (this.connections.get(key) === p) this.connections.delete(key)
      })
      return conn
    })
    p.catch(() => {
      if (this.connections.get(key) === p) this.connections.delete(key)
    })
    this.connections.set(key, p)
    return p
  }

  /** A connection to any reachable broker: known brokers first, then the bootstrap list. */
  async anyConnection(): Promise<BrokerConnection> {
    for (const p of this.connections.values()) {
      const c = await p.catch(() => null)
      if (c !== null && !c.closed) return c
    }
    const candidates = [...[...this.meta.brokers.values()].map((b) => ({ host: b.host, port: b.port })), ...this.bootstrap]
    let last: Error | null = null
    for (const c of candidates) {
      try {
        return await this.connection(c.host, c.port)
      } catch (err) {
        last = err as Error
      }
    }
    throw last ?? new ConnectionError('no broker to connect to')
  }

  /** The connection to broker nodeId (from metadata). */
  async nodeConnection(nodeId: number): Promise<BrokerConnection> {
    let node = this.meta.brokers.get(nodeId)
    if (node === undefined) {
      await this.refreshMetadata([])
      node = this.meta.brokers.get(nodeId)
      if (node === undefined) throw new KafkaError(ErrorCode.BROKER_NOT_AVAILABLE, `broker ${nodeId} is not in the cluster metadata`)
    }
    return this.connection(node.host, node.port)
  }

  /**
   * Runs fn, retrying retriable failures (broker unreachable, NOT_LEADER_OR_FOLLOWER, ...) up to `retries`
   * times with a backoff; onRetry runs before each new attempt (typically a metadata refresh). The whole
   * operation is bounded by default.api.timeout.ms (or timeoutMs).
   */
  withRetries<T>(fn: () => Promise<T>, onRetry?: (err: unknown) => Promise<void> | void, timeoutMs = this.apiTimeoutMs): Promise<T> {
    const deadline = Date.now() + timeoutMs
    return this.withDeadline(async (state) => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await fn()
        } catch (err) {
          this.lastFailure = { at: Date.now(), err }
          const backoff = this.retryBackoffMs * Math.min(2 ** attempt, 10)
          if (this.closed || state.expired || attempt >= this.retries || !isRetriableError(err) || Date.now() + backoff >= deadline) throw err
          await sleep(backoff)
          if (state.expired) throw err
          if (onRetry !== undefined) await onRetry(err)
        }
      }
    }, timeoutMs)
  }

  /**
   * Runs fn, failing with a TimeoutError once timeoutMs (default.api.timeout.ms) have passed; the error
   * names the last retriable failure seen meanwhile. fn sees state.expired turn true and should stop.
   */
  async withDeadline<T>(fn: (state: DeadlineState) => Promise<T>, timeoutMs = this.apiTimeoutMs): Promise<T> {
    const state: DeadlineState = { expired: false }
    const started = Date.now()
    let timer: NodeJS.Timeout | undefined
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        state.expired = true
        const f = this.lastFailure
        const last = f === null || f.at < started ? '' : `; last error: ${f.err instanceof Error ? f.err.message : String(f.err)}`
        reject(new TimeoutError(`timed out after ${timeoutMs} ms (${this.opts.apiTimeoutName ?? 'default.api.timeout.ms'})${last}`))
      }, timeoutMs)
    })
    try {
      return await Promise.race([fn(state), expired])
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * Fetches metadata for topics (null = all topics, [] = brokers only) and merges it into the cache.
   * With autoCreate the broker may create missing topics (auto.create.topics.enable).
   */
  async refreshMetadata(topics: readonly string[] | null, autoCreate = false): Promise<ClusterMetadata> {
    return this.withRetries(async () => {
      const conn = await this.anyConnection()
      const v = conn.version(ApiKey.Metadata)
      const req = Metadata.createMetadataRequest({
        topics: topics === null ? (v === 0 ? [] : null) : topics.map((name) => Metadata.createMetadataRequestTopic({ name })),
        allowAutoTopicCreation: autoCreate,
      })
      const res = await conn.send(ApiKey.Metadata, (w, ver) => Metadata.encodeMetadataRequest(w, req, ver), Metadata.decodeMetadataResponse)
      this.merge(res, topics === null)
      return this.meta
    })
  }

  private merge(res: Metadata.MetadataResponse, allTopics: boolean): void {
    const brokers = new Map<number, BrokerNode>()
    for (const b of res.brokers) brokers.set(b.nodeId, { nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack })
    const topics = allTopics ? new Map<string, TopicInfo>() : new Map(this.meta.topics)
    for (const t of res.topics) {
      if (t.name === null) continue
      if (t.errorCode !== ErrorCode.NONE && t.errorCode !== ErrorCode.LEADER_NOT_AVAILABLE) {
        topics.set(t.name, { name: t.name, topicId: t.topicId, isInternal: t.isInternal, errorCode: t.errorCode, partitions: [] })
        continue
      }
      const partitions: PartitionInfo[] = []
      for (const p of t.partitions) {
        partitions[p.partitionIndex] = {
          partition: p.partitionIndex,
          errorCode: p.errorCode,
          leader: p.leaderId,
          leaderEpoch: p.leaderEpoch,
          replicas: p.replicaNodes,
          isr: p.isrNodes,
          offlineReplicas: p.offlineReplicas,
        }
      }
      topics.set(t.name, { name: t.name, topicId: t.topicId, isInternal: t.isInternal, errorCode: t.errorCode, partitions })
    }
    this.meta = { clusterId: res.clusterId, controllerId: res.controllerId, brokers, topics }
  }

  /**
   * Metadata of one topic, fetched when not cached (or when refresh is set). Throws KafkaError
   * UNKNOWN_TOPIC_OR_PARTITION (or the topic's error) when the broker does not have it.
   */
  async topic(name: string, opts: { refresh?: boolean; autoCreate?: boolean } = {}): Promise<TopicInfo> {
    let t = this.meta.topics.get(name)
    if (t === undefined || opts.refresh === true || t.errorCode !== ErrorCode.NONE || t.partitions.length === 0) {
      await this.refreshMetadata([name], opts.autoCreate ?? false)
      t = this.meta.topics.get(name)
    }
    if (t === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `topic '${name}' does not exist`)
    if (t.errorCode !== ErrorCode.NONE) {
      const msg = t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION ? `topic '${name}' does not exist` : `topic '${name}'`
      throw new KafkaError(t.errorCode as ErrorCode, msg)
    }
    return t
  }

  /** Leader node of a partition (from the cache, refreshing once if unknown). */
  async leaderFor(topic: string, partition: number): Promise<number> {
    let t = await this.topic(topic)
    let p = t.partitions[partition]
    if (p === undefined || p.leader < 0) {
      t = await this.topic(topic, { refresh: true })
      p = t.partitions[partition]
    }
    if (p === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `partition ${topic}-${partition} does not exist`)
    if (p.leader < 0) throw new KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, `partition ${topic}-${partition} has no leader`)
    return p.leader
  }

  /** The connection to the group (keyType 0) or transaction (1) coordinator of key. */
  async coordinator(key: string, keyType = 0): Promise<BrokerConnection> {
    const cacheKey = `${keyType}:${key}`
    const known = this.coordinators.get(cacheKey)
    if (known !== undefined) {
      try {
        return await this.nodeConnection(known)
      } catch {
        this.coordinators.delete(cacheKey)
      }
    }
    return this.withRetries(async () => {
      const conn = await this.anyConnection()
      const v = conn.version(ApiKey.FindCoordinator)
      const req = FindCoordinator.createFindCoordinatorRequest(v >= 4 ? { keyType, coordinatorKeys: [key] } : { key, keyType })
      const res = await conn.send(ApiKey.FindCoordinator, (w, ver) => FindCoordinator.encodeFindCoordinatorRequest(w, req, ver), FindCoordinator.decodeFindCoordinatorResponse)
      let node: { nodeId: number; host: string; port: number; errorCode: number; errorMessage: string | null }
      if (v >= 4) {
        const c = res.coordinators.find((x) => x.key === key)
        if (c === undefined) throw new KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, `no coordinator answer for '${key}'`)
        node = c
      } else {
        node = res
      }
      if (node.errorCode !== ErrorCode.NONE) throw new KafkaError(node.errorCode as ErrorCode, node.errorMessage ?? `FindCoordinator '${key}'`)
      this.coordinators.set(cacheKey, node.nodeId)
      if (!this.meta.brokers.has(node.nodeId)) this.meta.brokers.set(node.nodeId, { nodeId: node.nodeId, host: node.host, port: node.port, rack: null })
      return this.connection(node.host, node.port)
    })
  }

  /** The broker that coordinates key, as last found by coordinator() (undefined when not looked up). */
  coordinatorNode(key: string, keyType = 0): BrokerNode | undefined {
    const id = this.coordinators.get(`${keyType}:${key}`)
    return id === undefined ? undefined : this.meta.brokers.get(id)
  }

  /** Forgets a coordinator after NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE. */
  forgetCoordinator(key: string, keyType = 0): void {
    this.coordinators.delete(`${keyType}:${key}`)
  }

  async close(): Promise<void> {
    this.closed = true
    this.closing.abort()
    const all = [...this.connections.values()]
    this.connections.clear()
    for (const p of all) {
      const c = await p.catch(() => null)
      c?.close()
    }
  }
}
