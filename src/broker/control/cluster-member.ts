// A broker's membership in its cluster (what Kafka's KafkaServer does around ZooKeeper): registering
// the broker (its epoch is the registration's), registering again after a lost session (a new epoch) and
// running for controller again, following config change notifications, and the controlled shutdown that
// moves leaderships away before the broker stops. Without ZooKeeper the same steps run over the embedded
// store, where this broker is the whole cluster.
import { BrokerConnection } from '../../client/connection.js'
import type { ClientSecurity } from '../../client/sasl.js'
import type { Controller } from '../../cluster/controller/controller.js'
import type { MetadataImage } from '../../cluster/metadata-image.js'
import type { BrokerRegistration, ConfigChange, MetadataStore, Unwatch } from '../../cluster/metadata-store.js'
import { ErrorCode, errorName } from '../../domain/errors.js'
import type { Logger } from '../../observability/logger.js'
import { ApiKey } from '../../protocol/api-keys.gen.js'
import * as ControlledShutdown from '../../protocol/messages/07-controlled-shutdown.gen.js'
import type { BrokerControlPlane } from './control-plane.js'

export interface ClusterMemberOptions {
  registration: BrokerRegistration
  store: MetadataStore
  image: MetadataImage
  /** This broker's side of the control plane (its broker epoch is set at each registration). */
  controlPlane: BrokerControlPlane
  /** The controller this broker runs (started here; it acts only while it is the active one). */
  ownController: Controller
  interBrokerListener: string
  /** The inter-broker listener's TLS and SASL (ControlledShutdown to the controller); undefined for PLAINTEXT. */
  interBrokerSecurity?: ClientSecurity | undefined
  /** How long a registration left by this broker's previous session is waited out (its session timeout). */
  registrationWaitMs: number
  onConfigChanges(changes: ConfigChange[]): void
  log: Logger
}

export interface ControlledShutdownSettings {
  maxRetries: number
  retryBackoffMs: number
}

export class ClusterMember {
  #unwatchConfig: Unwatch | undefined
  #stopped = false

  constructor(private readonly options: ClusterMemberOptions) {}

  get brokerId(): number {
    return this.options.registration.id
  }

  /** Registers, follows config changes and starts the controller (which runs for election). */
  async start(): Promise<void> {
    const { store, ownController: controller, log } = this.options
    store.onSession((event) => {
      if (this.#stopped) return
      if (event === 'expired') {
        log.warn('metadata store session lost: this broker is unregistered until a new session registers it again')
        controller.onSessionExpired()
      } else {
        controller.onSessionReestablished(() => this.#register())
      }
    })
    await this.#register()
    this.#unwatchConfig = store.watchConfigChanges((changes) => this.options.onConfigChanges(changes))
    controller.startup()
  }

  async #register(): Promise<void> {
    const epoch = await this.options.store.registerBroker(this.options.registration, this.options.registrationWaitMs)
    this.options.controlPlane.brokerEpoch = epoch
    this.options.log.info({ brokerId: this.brokerId, brokerEpoch: epoch.toString() }, `registered broker ${this.brokerId} in ${this.options.store.description}`)
  }

  /**
   * Resolves once the controller has told this broker about the cluster (an UpdateMetadata listing this
   * broker), or false after timeoutMs. With the controller in this process, also waits until the
   * requests of its failover are applied (so the broker is ready to serve when start() returns).
   */
  async waitForMetadata(timeoutMs: number): Promise<boolean> {
    const { image, ownController: controller } = this.options
    const deadline = Date.now() + timeoutMs
    const ok = await image.waitFor(() => image.updateCount > 0 && image.isLive(this.brokerId), timeoutMs)
    // Only this broker's own requests: another broker may be unreachable until its session expires.
    if (controller.isActive) await withTimeout(controller.drained(this.brokerId), deadline - Date.now())
    return ok
  }

  /**
   * Kafka's controlled shutdown: asks the controller to move this broker's leaderships away, retrying
   * (maxRetries, retryBackoffMs) while it still leads partitions that have other replicas. Resolves
   * whether the controller reported none left.
   */
  async controlledShutdown(settings: ControlledShutdownSettings): Promise<boolean> {
    const { log } = this.options
    log.info('starting controlled shutdown')
    for (let attempt = 1; attempt <= settings.maxRetries; attempt++) {
      try {
        const answer = await withTimeout(this.#askController(), CONTROLLED_SHUTDOWN_ATTEMPT_MS)
        if (answer === undefined) throw new Error(`no answer from the controller within ${CONTROLLED_SHUTDOWN_ATTEMPT_MS} ms`)
        const { errorCode, remaining } = answer
        if (errorCode !== ErrorCode.NONE) {
          log.info({ attempt, error: errorName(errorCode) }, 'controlled shutdown request failed')
        } else if (remaining.length === 0) {
          log.info({ attempt }, 'controlled shutdown succeeded')
          return true
        } else if (remaining.every((p) => this.#noOtherInSyncReplica(p.topic, p.partition))) {
          // Nowhere to move them: retrying cannot help (Kafka retries anyway).
          log.info({ remaining: remaining.slice(0, 20).map((p) => `${p.topic}-${p.partition}`), count: remaining.length }, 'controlled shutdown done; the partitions still led have no other in-sync replica')
          return true
        } else {
          log.info({ attempt, remaining: remaining.slice(0, 20).map((p) => `${p.topic}-${p.partition}`), count: remaining.length }, 'partitions still to move')
        }
      } catch (err) {
        log.warn({ attempt, err: (err as Error).message }, 'controlled shutdown request failed')
      }
      if (attempt < settings.maxRetries) await new Promise((r) => setTimeout(r, settings.retryBackoffMs))
    }
    log.warn('controlled shutdown did not complete; stopping anyway')
    return false
  }

  #noOtherInSyncReplica(topic: string, partition: number): boolean {
    const p = this.options.image.partition(topic, partition)
    return p === undefined || p.isr.every((r) => r === this.brokerId)
  }

  async #askController(): Promise<{ errorCode: number; remaining: { topic: string; partition: number }[] }> {
    const { ownController: controller, controlPlane: control, image, store, interBrokerListener, interBrokerSecurity } = this.options
    if (controller.isActive) return controller.controlledShutdown(this.brokerId, control.brokerEpoch)
    let controllerId = image.controllerId
    if (controllerId < 0 || !image.isLive(controllerId)) controllerId = await store.getControllerId()
    if (controllerId < 0) return { errorCode: ErrorCode.NOT_CONTROLLER, remaining: [] }
    const endpoint = image.liveBrokers().find((b) => b.id === controllerId)?.endpoints.find((e) => e.listenerName === interBrokerListener)
    if (endpoint === undefined) return { errorCode: ErrorCode.NOT_CONTROLLER, remaining: [] }
    const conn = await BrokerConnection.connect({ host: endpoint.host, port: endpoint.port, clientId: `broker-${this.brokerId}`, connectTimeoutMs: 5000, requestTimeoutMs: 30_000, security: interBrokerSecurity })
    try {
      const range = conn.brokerRange(ApiKey.ControlledShutdown)
      if (range === undefined) return { errorCode: ErrorCode.UNSUPPORTED_VERSION, remaining: [] }
      const version = Math.min(3, range.max)
      const body = ControlledShutdown.createControlledShutdownRequest({ brokerId: this.brokerId, brokerEpoch: control.brokerEpoch })
      const res = await conn.send(ApiKey.ControlledShutdown, (w) => ControlledShutdown.encodeControlledShutdownRequest(w, body, version), ControlledShutdown.decodeControlledShutdownResponse, { version })
      return { errorCode: res.errorCode, remaining: res.remainingPartitions.map((p) => ({ topic: p.topicName, partition: p.partitionIndex })) }
    } finally {
      conn.close()
    }
  }

  /** Stops the controller and ends the store session (the registration goes with it). */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#unwatchConfig?.()
    // A controller step waiting on an unreachable store is abandoned: the session ends anyway.
    if ((await withTimeout(this.options.ownController.shutdown().then(() => true), CONTROLLER_STOP_WAIT_MS)) === undefined) {
      this.options.log.warn({ waitedMs: CONTROLLER_STOP_WAIT_MS }, 'the controller did not stop in time; leaving anyway')
    }
    await this.options.store.close()
  }
}

/** How long one controlled shutdown request may take (the store or the controller may be unreachable). */
const CONTROLLED_SHUTDOWN_ATTEMPT_MS = 30_000
/** How long stopping waits for the controller's current step. */
const CONTROLLER_STOP_WAIT_MS = 5000

/** p's value, or undefined when it has not settled within ms (p keeps running). */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(0, ms))
  })
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer))
}
