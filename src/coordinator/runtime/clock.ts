// Time for coordinators, injected so that state machines are deterministic under test: the system clock
// in the broker, a ManualClock in unit tests (advance() fires due timers in deadline order, synchronously).

export type TimerHandle = { readonly id: number }

export interface Clock {
  now(): number
  setTimeout(fn: () => void, delayMs: number): TimerHandle
  clearTimeout(handle: TimerHandle): void
}

/** Date.now and Node timers; timers are unref'd so a pending session timeout never keeps a process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, delayMs) {
    const t = setTimeout(fn, Math.max(0, delayMs))
    t.unref()
    return { id: 0, timer: t } as TimerHandle
  },
  clearTimeout(handle) {
    clearTimeout((handle as unknown as { timer: NodeJS.Timeout }).timer)
  },
}

interface ManualTimer {
  id: number
  deadline: number
  fn: () => void
}

/** A clock that moves only when told to. */
export class ManualClock implements Clock {
  #now: number
  #nextId = 1
  readonly #timers = new Map<number, ManualTimer>()

  constructor(start = 1_700_000_000_000) {
    this.#now = start
  }

  now(): number {
    return this.#now
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const id = this.#nextId++
    this.#timers.set(id, { id, deadline: this.#now + Math.max(0, delayMs), fn })
    return { id }
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle.id)
  }

  /** Number of timers not yet fired or cleared. */
  get pending(): number {
    return this.#timers.size
  }

  /** Moves time forward, firing every timer that falls due, earliest first (ties in creation order). */
  advance(ms: number): void {
    const target = this.#now + ms
    for (;;) {
      let next: ManualTimer | undefined
      for (const t of this.#timers.values()) {
        if (t.deadline <= target && (next === undefined || t.deadline < next.deadline || (t.deadline === next.deadline && t.id < next.id))) next = t
      }
      if (next === undefined) break
      this.#timers.delete(next.id)
      this.#now = Math.max(this.#now, next.deadline)
      next.fn()
    }
    this.#now = target
  }
}
