// How the controller's requests reach brokers (Kafka's ControllerChannelManager): one queue per live
// broker, sent in order, one request in flight per broker, each retried until it is answered or the
// broker leaves the channel (it died: its registration is gone). Remote brokers are reached over their
// inter-broker listener (inter.broker.listener.name) over a BrokerLink (the server provides it, on Skein's
// client connection: cluster/ does not import the client); the controller's own broker gets the same
// requests by a direct call into its control plane (no socket), through the same kind of queue, so
// ordering is the same either way.
//
// Requests and responses are Kafka's messages (the newest shapes of the generated codecs). A broker must
// serve LeaderAndIsr v5+, UpdateMetadata v7+ and StopReplica v3+ (topic ids, per-partition leader
// epochs); Skein brokers serve all of them.
import { ApiKey } from '../../protocol/api-keys.gen.js'
import * as LeaderAndIsr from '../../protocol/messages/04-leader-and-isr.gen.js'
import * as StopReplica from '../../protocol/messages/05-stop-replica.gen.js'
import * as UpdateMetadata from '../../protocol/messages/06-update-metadata.gen.js'
import type { Reader } from '../../protocol/primitives/reader.js'
import type { Writer } from '../../protocol/primitives/writer.js'
import type { Logger } from '../../observability/logger.js'
import type { RegisteredBroker } from '../metadata-store.js'

/** A connection to a broker, as the channel uses it. */
export interface BrokerLink {
  readonly closed: boolean
  /** The broker's version range for an API (from its ApiVersions), undefined when it does not serve it. */
  versionRange(apiKey: number): { min: number; max: number } | undefined
  send<Res>(apiKey: number, version: number, encode: (w: Writer) => void, decode: (r: Reader, version: number) => Res): Promise<Res>
  close(): void
}

/** Opens a BrokerLink (connects and learns the broker's API versions); rejects when it cannot. */
export type BrokerLinkFactory = (target: { host: string; port: number; clientId: string; requestTimeoutMs: number }) => Promise<BrokerLink>

/** One partition's error in a controller request's answer. */
export interface ControlPartitionError {
  topic: string
  partition: number
  errorCode: number
}

export interface ControlResponse {
  errorCode: number
  partitionErrors: ControlPartitionError[]
}

export type ControlRequest =
  | { apiKey: typeof ApiKey.LeaderAndIsr; body: LeaderAndIsr.LeaderAndIsrRequest }
  | { apiKey: typeof ApiKey.UpdateMetadata; body: UpdateMetadata.UpdateMetadataRequest }
  | { apiKey: typeof ApiKey.StopReplica; body: StopReplica.StopReplicaRequest }

/** The controller's own broker, taking requests by direct call (its control plane). */
export interface LocalControlTarget {
  leaderAndIsr(req: LeaderAndIsr.LeaderAndIsrRequest): Promise<ControlResponse>
  updateMetadata(req: UpdateMetadata.UpdateMetadataRequest): Promise<ControlResponse>
  stopReplica(req: StopReplica.StopReplicaRequest): Promise<ControlResponse>
}

/** Lowest versions this controller sends, and the highest it knows. */
const VERSIONS: Record<number, { min: number; max: number }> = {
  [ApiKey.LeaderAndIsr]: { min: 5, max: 7 },
  [ApiKey.UpdateMetadata]: { min: 7, max: 8 },
  [ApiKey.StopReplica]: { min: 3, max: 4 },
}

const RETRY_BACKOFF_MS = 200

interface QueuedRequest {
  request: ControlRequest
  onResponse: ((response: ControlResponse) => void) | undefined
}

export interface ControllerChannelOptions {
  localBrokerId: number
  local: LocalControlTarget
  connect: BrokerLinkFactory
  interBrokerListener: string
  /** controller.socket.timeout.ms */
  requestTimeoutMs: number
  log: Logger
}

export class ControllerChannel {
  readonly #queues = new Map<number, BrokerQueue>()

  constructor(private readonly options: ControllerChannelOptions) {}

  /** Starts a queue for a broker (again with a new registration: its endpoint may have changed). */
  addBroker(broker: RegisteredBroker): void {
    this.#queues.get(broker.id)?.stop()
    this.#queues.set(broker.id, new BrokerQueue(broker, this.options))
  }

  /** Drops a broker's queue and whatever waits in it (it died). */
  removeBroker(brokerId: number): void {
    this.#queues.get(brokerId)?.stop()
    this.#queues.delete(brokerId)
  }

  hasBroker(brokerId: number): boolean {
    return this.#queues.has(brokerId)
  }

  send(brokerId: number, request: ControlRequest, onResponse?: (response: ControlResponse) => void): void {
    const q = this.#queues.get(brokerId)
    if (q === undefined) {
      this.options.log.warn({ brokerId, apiKey: request.apiKey }, 'controller request for a broker not in the channel dropped')
      return
    }
    q.enqueue({ request, onResponse })
  }

  /** Resolves once every queue (or the given broker's) is empty. */
  async drained(brokerId?: number): Promise<void> {
    const queues = brokerId === undefined ? [...this.#queues.values()] : [this.#queues.get(brokerId)].filter((q): q is BrokerQueue => q !== undefined)
    await Promise.all(queues.map((q) => q.idle()))
  }

  shutdown(): void {
    for (const q of this.#queues.values()) q.stop()
    this.#queues.clear()
  }
}

class BrokerQueue {
  readonly #items: QueuedRequest[] = []
  #running = false
  #stopped = false
  #connection: BrokerLink | undefined
  #idleWaiters: (() => void)[] = []

  constructor(
    private readonly broker: RegisteredBroker,
    private readonly options: ControllerChannelOptions,
  ) {}

  enqueue(item: QueuedRequest): void {
    if (this.#stopped) return
    this.#items.push(item)
    if (!this.#running) void this.#run()
  }

  idle(): Promise<void> {
    if (!this.#running && this.#items.length === 0) return Promise.resolve()
    return new Promise((resolve) => this.#idleWaiters.push(resolve))
  }

  stop(): void {
    this.#stopped = true
    this.#items.length = 0
    this.#connection?.close()
    this.#connection = undefined
    for (const w of this.#idleWaiters.splice(0)) w()
  }

  async #run(): Promise<void> {
    this.#running = true
    let failures = 0
    while (!this.#stopped && this.#items.length > 0) {
      const item = this.#items[0]!
      let response: ControlResponse | undefined
      try {
        response = this.broker.id === this.options.localBrokerId ? await this.#deliverLocally(item.request) : await this.#deliverRemotely(item.request)
      } catch (err) {
        if (this.#stopped) break
        failures++
        // Logged once per run of failures, then quietly retried (a broker that is starting or stopping).
        if (failures === 1 || failures % 50 === 0) {
          this.options.log.warn({ brokerId: this.broker.id, apiKey: item.request.apiKey, err: (err as Error).message, attempts: failures }, 'controller request failed; retrying')
        }
        this.#connection?.close()
        this.#connection = undefined
        if (err instanceof UnsupportedRequestError) {
          this.#items.shift()
          continue
        }
        await new Promise((r) => setTimeout(r, RETRY_BACKOFF_MS))
        continue
      }
      failures = 0
      if (this.#stopped) break
      this.#items.shift()
      try {
        item.onResponse?.(response)
      } catch (err) {
        this.options.log.error({ err }, 'controller response callback failed')
      }
    }
    this.#running = false
    if (this.#items.length === 0 || this.#stopped) for (const w of this.#idleWaiters.splice(0)) w()
  }

  #deliverLocally(request: ControlRequest): Promise<ControlResponse> {
    const { local } = this.options
    switch (request.apiKey) {
      case ApiKey.LeaderAndIsr:
        return local.leaderAndIsr(request.body)
      case ApiKey.UpdateMetadata:
        return local.updateMetadata(request.body)
      case ApiKey.StopReplica:
        return local.stopReplica(request.body)
    }
  }

  async #connect(): Promise<BrokerLink> {
    if (this.#connection !== undefined && !this.#connection.closed) return this.#connection
    const endpoint =
      this.broker.endpoints.find((e) => e.listenerName === this.options.interBrokerListener) ??
      (() => {
        throw new Error(`broker ${this.broker.id} has no endpoint for the inter-broker listener ${this.options.interBrokerListener}`)
      })()
    const connection = await this.options.connect({
      host: endpoint.host,
      port: endpoint.port,
      clientId: `controller-${this.options.localBrokerId}`,
      requestTimeoutMs: this.options.requestTimeoutMs,
    })
    // stop() ran while connecting: it had nothing to close, so this connection is closed here (an open
    // socket keeps a stopped broker's process alive).
    if (this.#stopped) {
      connection.close()
      throw new Error(`the channel to broker ${this.broker.id} is stopped`)
    }
    this.#connection = connection
    return connection
  }

  async #deliverRemotely(request: ControlRequest): Promise<ControlResponse> {
    const conn = await this.#connect()
    const range = conn.versionRange(request.apiKey)
    const ours = VERSIONS[request.apiKey]!
    const version = range === undefined ? -1 : Math.min(ours.max, range.max)
    if (range === undefined || version < ours.min || version < range.min) {
      throw new UnsupportedRequestError(`broker ${this.broker.id} does not serve API ${request.apiKey} at a version this controller sends`)
    }
    switch (request.apiKey) {
      case ApiKey.LeaderAndIsr: {
        const res = await conn.send(ApiKey.LeaderAndIsr, version, (w) => LeaderAndIsr.encodeLeaderAndIsrRequest(w, request.body, version), LeaderAndIsr.decodeLeaderAndIsrResponse)
        const names = new Map(request.body.topicStates.map((t) => [t.topicId, t.topicName]))
        return {
          errorCode: res.errorCode,
          partitionErrors: res.topics.flatMap((t) => t.partitionErrors.map((p) => ({ topic: names.get(t.topicId) ?? t.topicId, partition: p.partitionIndex, errorCode: p.errorCode }))),
        }
      }
      case ApiKey.UpdateMetadata: {
        const res = await conn.send(ApiKey.UpdateMetadata, version, (w) => UpdateMetadata.encodeUpdateMetadataRequest(w, request.body, version), UpdateMetadata.decodeUpdateMetadataResponse)
        return { errorCode: res.errorCode, partitionErrors: [] }
      }
      case ApiKey.StopReplica: {
        const res = await conn.send(ApiKey.StopReplica, version, (w) => StopReplica.encodeStopReplicaRequest(w, request.body, version), StopReplica.decodeStopReplicaResponse)
        return { errorCode: res.errorCode, partitionErrors: res.partitionErrors.map((p) => ({ topic: p.topicName, partition: p.partitionIndex, errorCode: p.errorCode })) }
      }
    }
  }
}

class UnsupportedRequestError extends Error {
  override readonly name = 'UnsupportedRequestError'
}
