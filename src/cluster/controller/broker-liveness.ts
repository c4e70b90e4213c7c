// Failure detection between the controller and the brokers, faster than a ZooKeeper session expiry (see
// docs/cluster.md, "Failure detection"). The ZooKeeper session stays the registration's lifetime; this is
// what lets the controller act before it ends, as KRaft's broker heartbeats do.
//
// - The active controller keeps a probe connection to every other registered broker and pings it
//   (ApiVersions, answered at once by any broker) every broker.heartbeat.interval.ms.
// - A broker is unreachable when its port refuses a connection (nothing listens: the process is gone, so
//   a SIGKILL is seen within one connection attempt of the socket closing) or when no ping has been
//   answered for broker.session.timeout.ms (a paused process, a cut network) while another broker does
//   answer (a controller that hears nobody is more likely the one cut off, and fences no one for silence),
//   and only once it has answered since probing began (a broker busy loading when a new controller
//   starts is not fenced before it ever spoke; one that never answers leaves with its session).
//   The controller then fences it: its partitions elect new leaders at a new leader epoch, as for a dead
//   broker.
// - A fenced broker that answers pings again for two intervals in a row is reachable again: the controller
//   takes it back as it takes a restarted broker (UpdateMetadata, LeaderAndIsr as follower). Not one whose
//   port refused connections: that process is gone, and what answers there later is a new one, which
//   comes back with a registration of its own (a new broker epoch) once the old session has expired.
// - The checks run one event-loop turn after their timer (setImmediate), so answers that arrived while
//   the controller's own process was stalled are read before silence is judged; and a check that itself
//   ran far too late (this process was stalled) restarts every clock instead of fencing everyone. A
//   shorter stall of the controller's own (over a heartbeat interval) is left out of the silence it
//   measures: no ping went out meanwhile, so it says nothing of the brokers.
import type { Logger } from '../../observability/logger.js'
import type { RegisteredBroker } from '../metadata-store.js'

/** A connection the controller pings a broker over. */
export interface ProbeLink {
  /** One request the broker answers at once; rejects when the connection fails. */
  ping(): Promise<void>
  /** Called once when the connection closes (whoever closed it). */
  onClose(listener: () => void): void
  close(): void
}

/** Opens a ProbeLink; rejects with an error whose `refused` is true when nothing listens on the port. */
export type ProbeLinkFactory = (target: { host: string; port: number; clientId: string; timeoutMs: number }) => Promise<ProbeLink>

export interface LivenessSettings {
  /** broker.heartbeat.interval.ms */
  intervalMs: number
  /** broker.session.timeout.ms */
  sessionTimeoutMs: number
}

export interface BrokerLivenessOptions {
  localBrokerId: number
  connect: ProbeLinkFactory
  interBrokerListener: string
  settings: LivenessSettings
  /** A broker stopped answering (or refuses connections): the controller fences it. */
  onUnreachable(brokerId: number, brokerEpoch: bigint, reason: string): void
  /** A fenced broker answers again. */
  onReachable(brokerId: number, brokerEpoch: bigint): void
  /**
   * When this broker last heard from a broker before becoming controller (performance.now): the
   * controller it watched, found silent, starts out as silent as it was.
   */
  lastHeardFrom?: (brokerId: number) => number | undefined
  log: Logger
}

/** How often the checks run: twice per heartbeat interval. */
export const TICK_MS = (intervalMs: number): number => Math.max(10, Math.floor(intervalMs / 2))

/**
 * How long this process itself was held between two checks, when that is over a heartbeat interval (else
 * 0): no ping went out meanwhile, so a watcher leaves it out of the silence it measures (detection comes
 * later by at most that long, never sooner). Used by the controller's probes and the brokers' watch.
 */
export function ownStallMs(sinceLastTickMs: number, intervalMs: number): number {
  const late = sinceLastTickMs - TICK_MS(intervalMs)
  return late > intervalMs ? late : 0
}

/** True for a ProbeLinkFactory rejection that says nothing listens on the port. */
export function isRefused(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { refused?: unknown }).refused === true
}

export class BrokerLivenessMonitor {
  readonly #probes = new Map<number, BrokerProbe>()
  #timer: NodeJS.Timeout | undefined
  #lastTick = performance.now()
  #stopped = false

  constructor(private readonly options: BrokerLivenessOptions) {
    this.#schedule()
  }

  /** Starts probing a registered broker (again, for a new registration). */
  add(broker: RegisteredBroker): void {
    if (this.#stopped || broker.id === this.options.localBrokerId) return
    const known = this.#probes.get(broker.id)
    if (known !== undefined && known.broker.epoch === broker.epoch) return
    known?.stop()
    this.#probes.set(broker.id, new BrokerProbe(broker, this.options, (now) => this.#othersAnswering(broker.id, now)))
  }

  /** Stops probing a broker (its registration is gone). */
  remove(brokerId: number): void {
    this.#probes.get(brokerId)?.stop()
    this.#probes.delete(brokerId)
  }

  /**
   * Tries a connection to each broker at once (a new controller's first look): resolves the ids whose
   * port refused it, after at most timeoutMs. The others are probed as usual.
   */
  async refusing(brokers: readonly RegisteredBroker[], timeoutMs: number): Promise<number[]> {
    const results = await Promise.all(
      brokers
        .filter((b) => b.id !== this.options.localBrokerId)
        .map(async (b) => {
          this.add(b)
          return (await this.#probes.get(b.id)?.firstAttempt(timeoutMs)) === 'refused' ? b.id : -1
        }),
    )
    return results.filter((id) => id >= 0)
  }

  /** Milliseconds since any probed broker last answered; 0 when there is none to probe. */
  msSinceAnyAnswered(): number {
    if (this.#probes.size === 0) return 0
    const now = performance.now()
    let best = Infinity
    for (const p of this.#probes.values()) best = Math.min(best, now - p.lastAnswer)
    return best
  }

  #othersAnswering(brokerId: number, now: number): boolean {
    for (const p of this.#probes.values()) if (p.broker.id !== brokerId && now - p.lastAnswer < this.options.settings.sessionTimeoutMs) return true
    return false
  }

  stop(): void {
    this.#stopped = true
    clearTimeout(this.#timer)
    for (const p of this.#probes.values()) p.stop()
    this.#probes.clear()
  }

  #schedule(): void {
    const { intervalMs } = this.options.settings
    this.#timer = setTimeout(() => setImmediate(() => this.#tick()), TICK_MS(intervalMs))
    this.#timer.unref?.()
  }

  #tick(): void {
    if (this.#stopped) return
    const now = performance.now()
    const { intervalMs, sessionTimeoutMs } = this.options.settings
    // This process was stalled longer than the brokers may be silent: nobody could be heard meanwhile.
    const sinceLastTick = now - this.#lastTick
    const stalled = sinceLastTick > Math.max(intervalMs * 4, sessionTimeoutMs / 2)
    // A shorter stall of this process does not count as the brokers' silence (ownStallMs).
    const ownStall = ownStallMs(sinceLastTick, intervalMs)
    this.#lastTick = now
    for (const p of this.#probes.values()) p.tick(now, stalled, ownStall)
    this.#schedule()
  }
}

type ProbeState = 'reachable' | 'unreachable'

/** One broker's probe: a connection, its pings and the verdict. */
class BrokerProbe {
  #link: ProbeLink | undefined
  #connecting: Promise<'ok' | 'refused' | 'failed'> | undefined
  #pingInFlight = false
  #lastAnswer: number
  /** Since when pings are answered without a gap (for taking a fenced broker back). */
  #answeringSince: number | undefined
  #state: ProbeState = 'reachable'
  /** Its port refused a connection: this registration's process is gone for good. */
  #gone = false
  /** It has answered since probing began (or this broker heard it before): silence counts only then. */
  #everAnswered: boolean
  #stopped = false
  #lastPing = 0

  constructor(
    readonly broker: RegisteredBroker,
    private readonly options: BrokerLivenessOptions,
    private readonly othersAnswering: (now: number) => boolean,
  ) {
    const now = performance.now()
    const heard = options.lastHeardFrom?.(broker.id)
    this.#lastAnswer = Math.min(now, heard ?? now)
    this.#everAnswered = heard !== undefined
  }

  get lastAnswer(): number {
    return this.#lastAnswer
  }

  firstAttempt(timeoutMs: number): Promise<'ok' | 'refused' | 'failed' | 'timeout'> {
    const attempt = this.#connect()
    return Promise.race([attempt, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), timeoutMs).unref?.())])
  }

  stop(): void {
    this.#stopped = true
    this.#link?.close()
    this.#link = undefined
  }

  tick(now: number, stalled: boolean, ownStallMs: number): void {
    if (this.#stopped) return
    const { intervalMs, sessionTimeoutMs } = this.options.settings
    if (stalled) {
      this.#lastAnswer = now
      this.#answeringSince = undefined
    } else if (ownStallMs > 0) {
      this.#lastAnswer = Math.min(now, this.#lastAnswer + ownStallMs)
    }
    if (this.#state === 'reachable' && this.#everAnswered && now - this.#lastAnswer >= sessionTimeoutMs && this.othersAnswering(now)) {
      this.#unreachable(`no answer for ${Math.round(now - this.#lastAnswer)} ms`)
    }
    if (this.#state === 'unreachable' && !this.#gone && this.#answeringSince !== undefined && now - this.#answeringSince >= 2 * intervalMs) {
      this.#state = 'reachable'
      this.options.log.info({ brokerId: this.broker.id }, `broker ${this.broker.id} answers again`)
      this.options.onReachable(this.broker.id, this.broker.epoch)
    }
    // A ping unanswered for a whole session timeout: the connection is given up and opened again.
    if (this.#pingInFlight && now - this.#lastPing >= sessionTimeoutMs) {
      this.#link?.close()
      this.#link = undefined
    }
    if (now - this.#lastPing >= intervalMs && !this.#pingInFlight) {
      this.#lastPing = now
      void this.#ping()
    }
  }

  #unreachable(reason: string): void {
    if (this.#state === 'unreachable' || this.#stopped) return
    this.#state = 'unreachable'
    this.#answeringSince = undefined
    this.options.log.warn({ brokerId: this.broker.id, reason }, `broker ${this.broker.id} is unreachable: ${reason}`)
    this.options.onUnreachable(this.broker.id, this.broker.epoch, reason)
  }

  async #ping(): Promise<void> {
    if (this.#pingInFlight || this.#stopped) return
    this.#pingInFlight = true
    try {
      if (this.#link === undefined) {
        const outcome = await this.#connect()
        if (outcome !== 'ok') return
      }
      await this.#link!.ping()
      const now = performance.now()
      this.#lastAnswer = now
      this.#everAnswered = true
      this.#answeringSince ??= now
    } catch {
      this.#answeringSince = undefined
      this.#link?.close()
      this.#link = undefined
    } finally {
      this.#pingInFlight = false
    }
  }

  #connect(): Promise<'ok' | 'refused' | 'failed'> {
    this.#connecting ??= this.#open().finally(() => (this.#connecting = undefined))
    return this.#connecting
  }

  async #open(): Promise<'ok' | 'refused' | 'failed'> {
    const endpoint = this.broker.endpoints.find((e) => e.listenerName === this.options.interBrokerListener)
    if (endpoint === undefined) return 'failed'
    try {
      const link = await this.options.connect({
        host: endpoint.host,
        port: endpoint.port,
        clientId: `controller-${this.options.localBrokerId}-liveness`,
        timeoutMs: this.options.settings.sessionTimeoutMs,
      })
      if (this.#stopped) {
        link.close()
        return 'failed'
      }
      this.#link = link
      link.onClose(() => {
        if (this.#link !== link || this.#stopped) return
        this.#link = undefined
        this.#answeringSince = undefined
        // A broker's connection closing is how a killed process shows first: look again at once.
        void this.#connect()
      })
      return 'ok'
    } catch (err) {
      this.#answeringSince = undefined
      if (isRefused(err)) {
        this.#gone = true
        this.#unreachable('its port refuses connections')
        return 'refused'
      }
      return 'failed'
    }
  }
}
