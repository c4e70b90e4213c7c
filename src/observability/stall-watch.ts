// Main-thread stalls, logged: every socket, timer and ZooKeeper ping of a broker waits on its one event
// loop, so a stall of a second or more is what the failure detectors of the other brokers see as silence
// (docs/cluster.md, "Failure detection"). A warning names how long the loop was held, so a fenced broker's or
// deposed controller's log says whether it was busy or cut off. A timer that should fire every
// CHECK_INTERVAL_MS and fires late measures the stall; the cost is one timer callback per interval.
import type { Logger } from './logger.js'

const CHECK_INTERVAL_MS = 100

export class StallWatch {
  #timer: NodeJS.Timeout | undefined
  #last = performance.now()
  /** Stalls at or over thresholdMs so far, and the longest (for tests and a glance in a debugger). */
  stalls = 0
  longestMs = 0

  constructor(
    private readonly log: Logger,
    private readonly thresholdMs: number,
  ) {}

  start(): void {
    if (this.#timer !== undefined) return
    this.#last = performance.now()
    this.#timer = setInterval(() => this.#check(), CHECK_INTERVAL_MS)
    this.#timer.unref()
  }

  stop(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  #check(): void {
    const now = performance.now()
    const stalledMs = now - this.#last - CHECK_INTERVAL_MS
    this.#last = now
    if (stalledMs < this.thresholdMs) return
    this.stalls++
    this.longestMs = Math.max(this.longestMs, stalledMs)
    this.log.warn({ stalledMs: Math.round(stalledMs) }, `the main thread was held for ${Math.round(stalledMs)} ms: sockets, timers and pings waited that long`)
  }
}
