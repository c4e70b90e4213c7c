// This broker's side of failure detection (the controller's is cluster/controller/broker-liveness.ts; the
// why and the safety argument are in docs/cluster.md, "Failure detection"):
//
// - Watching the controller: another broker's active controller is pinged every
//   broker.heartbeat.interval.ms over a connection of its own. When its port refuses connections (the
//   process is gone) or it has not answered for broker.session.timeout.ms while ZooKeeper still answers
//   this broker, this broker deletes its /controller registration (store.removeDeadController, guarded by
//   that controller's epoch), and the brokers elect another at once instead of after its session expires.
//   A controller deposed that way but alive is fenced by the controller epoch (its writes fail, brokers
//   refuse its requests) and resigns when it sees the registration change.
// - The lease: this broker acts as a leader only while it has heard, within half of
//   broker.session.timeout.ms, from ZooKeeper or from the cluster (the controller's answers; for the
//   controller, another broker's), and from ZooKeeper within two thirds of its session timeout (past that
//   the session may have expired). The controller fences a broker only after a full
//   broker.session.timeout.ms of silence, so a broker cut off from both stops acting as leader before
//   another can be elected in its place. Lapsed, it answers NOT_LEADER_OR_FOLLOWER, fails the appends
//   waiting for acks with it, and leaves itself out of the brokers its Metadata names, so clients go
//   elsewhere. It takes leadership up again when contact is back and either the controller has spoken to
//   it since (it may have been fenced and taken back with new roles) or a full session timeout has passed
//   with contact (the controller had every chance to fence it and did not).
import type { ProbeLink, ProbeLinkFactory } from '../../cluster/controller/broker-liveness.js'
import { isRefused, ownStallMs, TICK_MS } from '../../cluster/controller/broker-liveness.js'
import type { Controller } from '../../cluster/controller/controller.js'
import type { MetadataImage } from '../../cluster/metadata-image.js'
import type { MetadataStore } from '../../cluster/metadata-store.js'
import type { Logger } from '../../observability/logger.js'

export interface BrokerLeaseOptions {
  brokerId: number
  store: MetadataStore
  image: MetadataImage
  ownController: Controller
  probe: ProbeLinkFactory
  interBrokerListener: string
  /** broker.heartbeat.interval.ms */
  intervalMs: number
  /** broker.session.timeout.ms */
  sessionTimeoutMs: number
  /** zookeeper.session.timeout.ms */
  zkSessionTimeoutMs: number
  /** The lease lapsed (true) or is held again (false). */
  onChange(lapsed: boolean): void
  log: Logger
}

export class BrokerLease {
  #timer: NodeJS.Timeout | undefined
  #stopped = false
  #held = true
  #evaluatedAt = -Infinity
  /** When contact came back after a lapse (performance.now), until leadership is taken up again. */
  #contactBackAt: number | undefined
  #controllerSpokeSinceLapse = false
  // The controller being watched.
  #watchedId = -1
  #link: ProbeLink | undefined
  #connecting = false
  #pinging = false
  #lastPingAt = -Infinity
  #lastControllerAnswer = performance.now()
  /** The watched controller has answered since it was elected (a silent one is removed only then). */
  #controllerAnswered = false
  #removalTriedAt = -Infinity
  #lastTickAt = 0
  /** This process's own stalls since the controller last answered (left out of its silence for removal). */
  #ownStallSinceAnswerMs = 0

  constructor(private readonly options: BrokerLeaseOptions) {}

  start(): void {
    this.#schedule()
  }

  stop(): void {
    this.#stopped = true
    clearTimeout(this.#timer)
    this.#link?.close()
    this.#link = undefined
  }

  /** Whether this broker may act as a leader now (asked by every leader check; cheap). */
  held(): boolean {
    const now = performance.now()
    if (now - this.#evaluatedAt < 20) return this.#held
    return this.#evaluate(now)
  }

  /** The active controller's request was applied here (it may have changed this broker's roles). */
  controllerSpoke(): void {
    this.#lastControllerAnswer = performance.now()
    this.#ownStallSinceAnswerMs = 0
    this.#controllerAnswered = true
    if (!this.#held) this.#controllerSpokeSinceLapse = true
  }

  /** When this broker last heard the active controller (performance.now), for a new controller's first look. */
  lastHeardFrom(brokerId: number): number | undefined {
    return brokerId === this.#watchedId ? this.#lastControllerAnswer : undefined
  }

  #schedule(): void {
    if (this.#stopped) return
    // One turn after the timer: answers that came in while this process was stalled are read first.
    this.#timer = setTimeout(() => setImmediate(() => this.#tick()), TICK_MS(this.options.intervalMs))
    this.#timer.unref?.()
  }

  #tick(): void {
    if (this.#stopped) return
    const now = performance.now()
    // A stall of this process (over a heartbeat interval) is not the controller's silence: no ping went
    // out meanwhile. Left out of it, so a busy broker does not depose a controller for its own stall
    // (removal comes later by at most that long, never sooner). The lease below counts it: a stalled
    // broker cannot know it was not fenced meanwhile.
    if (this.#lastTickAt > 0) this.#ownStallSinceAnswerMs += ownStallMs(now - this.#lastTickAt, this.options.intervalMs)
    this.#lastTickAt = now
    try {
      this.#watchController(now)
      this.#evaluate(now)
    } catch (err) {
      this.options.log.error({ err }, 'broker lease check failed')
    }
    this.#schedule()
  }

  /** Milliseconds since the cluster (other than ZooKeeper) last answered this broker. */
  #clusterSilence(now: number): number {
    const c = this.options.ownController
    if (c.isActive) return c.msSinceAnyBrokerAnswered()
    return now - this.#lastControllerAnswer
  }

  #evaluate(now: number): boolean {
    this.#evaluatedAt = now
    const { store, sessionTimeoutMs, zkSessionTimeoutMs } = this.options
    const zkSilence = store.msSinceContact()
    const half = sessionTimeoutMs / 2
    const inContact = (zkSilence < half || this.#clusterSilence(now) < half) && zkSilence < (zkSessionTimeoutMs * 2) / 3
    if (this.#held) {
      if (!inContact) {
        this.#held = false
        this.#contactBackAt = undefined
        this.#controllerSpokeSinceLapse = false
        this.options.log.warn({ zookeeperSilenceMs: Math.round(zkSilence), clusterSilenceMs: Math.round(this.#clusterSilence(now)) }, 'lease lapsed: no word from ZooKeeper or the cluster; not acting as leader until contact is back')
        this.options.onChange(true)
      }
      return this.#held
    }
    if (!inContact) {
      this.#contactBackAt = undefined
      return false
    }
    this.#contactBackAt ??= now
    if (this.#controllerSpokeSinceLapse || now - this.#contactBackAt >= sessionTimeoutMs) {
      this.#held = true
      this.options.log.info({ after: this.#controllerSpokeSinceLapse ? 'the controller spoke' : 'a session timeout in contact' }, 'lease held again: acting as leader where the controller says so')
      this.options.onChange(false)
    }
    return this.#held
  }

  #watchController(now: number): void {
    const { ownController, intervalMs } = this.options
    const controllerId = ownController.isActive ? this.options.brokerId : ownController.activeControllerId
    if (controllerId !== this.#watchedId) {
      this.#link?.close()
      this.#link = undefined
      this.#watchedId = controllerId
      this.#lastControllerAnswer = now
      this.#ownStallSinceAnswerMs = 0
      this.#controllerAnswered = false
      this.#removalTriedAt = -Infinity
    }
    if (controllerId < 0 || controllerId === this.options.brokerId) return
    if (this.#link === undefined) {
      void this.#connect(controllerId)
    } else if (now - this.#lastPingAt >= intervalMs) {
      this.#lastPingAt = now
      void this.#ping(this.#link)
    }
    // A controller is removed for silence only once it has answered since its election: a new controller
    // busy with its failover is not deposed before it has ever spoken (that would chain failovers on a
    // loaded machine); one that never answers leaves with its session.
    const silence = now - this.#lastControllerAnswer - this.#ownStallSinceAnswerMs
    if (silence >= this.options.sessionTimeoutMs && this.#controllerAnswered) this.#removeController(controllerId, `no answer for ${Math.round(silence)} ms`)
  }

  async #connect(controllerId: number): Promise<void> {
    if (this.#connecting) return
    const endpoint = this.options.image.liveBrokers().find((b) => b.id === controllerId)?.endpoints.find((e) => e.listenerName === this.options.interBrokerListener)
    if (endpoint === undefined) return
    this.#connecting = true
    try {
      const link = await this.options.probe({ host: endpoint.host, port: endpoint.port, clientId: `broker-${this.options.brokerId}-controller-watch`, timeoutMs: this.options.sessionTimeoutMs })
      if (this.#stopped || this.#watchedId !== controllerId) {
        link.close()
        return
      }
      this.#link = link
      link.onClose(() => {
        if (this.#link !== link) return
        this.#link = undefined
        // A closed connection is how a killed controller shows first: look again at once.
        if (!this.#stopped) void this.#connect(controllerId)
      })
      this.#lastPingAt = performance.now()
      void this.#ping(link)
    } catch (err) {
      if (isRefused(err) && this.#watchedId === controllerId) this.#removeController(controllerId, 'its port refuses connections')
    } finally {
      this.#connecting = false
    }
  }

  async #ping(link: ProbeLink): Promise<void> {
    if (this.#pinging) return
    this.#pinging = true
    // Contact counts from when the ping was sent: an answer read after this process was stopped proves
    // nothing about the time it was stopped.
    const sentAt = performance.now()
    try {
      await link.ping()
      if (this.#link === link) {
        this.#lastControllerAnswer = Math.max(this.#lastControllerAnswer, sentAt)
        this.#ownStallSinceAnswerMs = 0
        this.#controllerAnswered = true
      }
    } catch {
      link.close()
    } finally {
      this.#pinging = false
    }
  }

  /** Deletes the registration of a controller found dead, while ZooKeeper answers this broker; at most once per session timeout. */
  #removeController(controllerId: number, reason: string): void {
    const now = performance.now()
    if (now - this.#removalTriedAt < this.options.sessionTimeoutMs) return
    if (this.options.store.msSinceContact() >= this.options.sessionTimeoutMs / 2) return
    this.#removalTriedAt = now
    this.options.store.removeDeadController(controllerId).then(
      (removed) => {
        if (removed) this.options.log.warn({ controllerId, reason }, `controller ${controllerId} is unreachable (${reason}): removed its registration, the brokers elect another`)
      },
      (err: unknown) => this.options.log.warn({ controllerId, err: (err as Error).message }, 'cannot remove an unreachable controller\'s registration'),
    )
  }
}
