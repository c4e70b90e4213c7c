// Long-poll support for Fetch (Kafka's DelayedFetch purgatory): a fetch that has less than min.bytes
// waits until one of its partitions receives data or max.wait.ms passes, whichever comes first.
// Appends call notify() for the partitions they wrote; the waiter re-reads and answers. The replica
// manager keeps two (consumer and follower fetches); partitionKey is the key every purgatory here uses.
//
// A PartitionWatch is a standing interest instead of a one-shot wait: a follower's fetch session
// (KIP-227) watches its partitions for as long as it holds them, and each notify() marks the partition
// changed in the watch (and wakes a fetch parked on it). The session's next fetch reads what changed,
// not all it holds: registering and dropping one waiter per partition per fetch cost more than the reads
// at tens of thousands of idle partitions.

export interface Waiter {
  /** Resolves true when woken by new data, false on timeout or cancel. */
  promise: Promise<boolean>
  cancel(): void
}

interface Entry {
  keys: string[]
  wake: (byData: boolean) => void
}

export function partitionKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`
}

export class DelayedFetchPurgatory {
  private readonly byPartition = new Map<string, Set<Entry>>()
  private readonly watchers = new Map<string, Set<PartitionWatch>>()
  private waiting = 0

  /** Number of fetches currently parked (for metrics and tests). */
  get size(): number {
    return this.waiting
  }

  /** Whether a notify() can reach anything: a parked fetch or a watch. */
  get interested(): boolean {
    return this.waiting > 0 || this.watchers.size > 0
  }

  /** A standing watch over partitions (see the header); close() it when done. */
  watch(): PartitionWatch {
    return new PartitionWatch(this.watchers)
  }

  wait(keys: string[], timeoutMs: number): Waiter {
    let entry!: Entry
    let timer: NodeJS.Timeout | undefined
    const promise = new Promise<boolean>((resolve) => {
      entry = {
        keys,
        wake: (byData) => {
          if (timer !== undefined) clearTimeout(timer)
          this.remove(entry)
          resolve(byData)
        },
      }
    })
    this.waiting++
    for (const key of keys) {
      let set = this.byPartition.get(key)
      if (set === undefined) {
        set = new Set()
        this.byPartition.set(key, set)
      }
      set.add(entry)
    }
    timer = setTimeout(() => entry.wake(false), Math.max(0, timeoutMs))
    return { promise, cancel: () => entry.wake(false) }
  }

  /** Wakes every fetch waiting on this partition, and marks it changed in the watches holding it. */
  notify(key: string): void {
    const watches = this.watchers.get(key)
    if (watches !== undefined) for (const w of watches) w.changed(key, true)
    const set = this.byPartition.get(key)
    if (set === undefined) return
    for (const entry of [...set]) entry.wake(true)
  }

  /** Marks the partition changed in the watches holding it without waking anything (a new HW). */
  mark(key: string): void {
    const watches = this.watchers.get(key)
    if (watches !== undefined) for (const w of watches) w.changed(key, false)
  }

  /** Wakes everything (shutdown). */
  wakeAll(): void {
    for (const set of [...this.byPartition.values()]) {
      for (const entry of [...set]) entry.wake(false)
    }
    for (const watches of [...this.watchers.values()]) for (const w of watches) w.wakeParked()
  }

  private remove(entry: Entry): void {
    let removed = false
    for (const key of entry.keys) {
      const set = this.byPartition.get(key)
      if (set === undefined) continue
      if (set.delete(entry)) removed = true
      if (set.size === 0) this.byPartition.delete(key)
    }
    if (removed) this.waiting--
  }
}

/**
 * A standing interest in some partitions (a follower's fetch session): the keys notified since the last
 * takeChanged(), and at most one fetch parked until one is.
 */
export class PartitionWatch {
  #changed = new Set<string>()
  readonly #keys = new Set<string>()
  #parked: ((byData: boolean) => void) | undefined
  #closed = false

  constructor(private readonly watchers: Map<string, Set<PartitionWatch>>) {}

  add(key: string): void {
    if (this.#closed || this.#keys.has(key)) return
    this.#keys.add(key)
    let set = this.watchers.get(key)
    if (set === undefined) this.watchers.set(key, (set = new Set()))
    set.add(this)
  }

  delete(key: string): void {
    if (!this.#keys.delete(key)) return
    this.#changed.delete(key)
    const set = this.watchers.get(key)
    if (set === undefined) return
    set.delete(this)
    if (set.size === 0) this.watchers.delete(key)
  }

  /** The keys changed since the last call (and forgets them). */
  takeChanged(): ReadonlySet<string> {
    const changed = this.#changed
    this.#changed = new Set()
    return changed
  }

  /**
   * Resolves true at once when a key changed since the last takeChanged(), else when one is notified
   * (an append, a change of leadership), false after timeoutMs, at close or at shutdown.
   */
  wait(timeoutMs: number): Promise<boolean> {
    if (this.#changed.size > 0 || this.#closed) return Promise.resolve(this.#changed.size > 0)
    this.wakeParked()
    return new Promise((resolve) => {
      const timer = setTimeout(() => done(false), Math.max(0, timeoutMs))
      const done = (byData: boolean): void => {
        clearTimeout(timer)
        if (this.#parked === done) this.#parked = undefined
        resolve(byData)
      }
      this.#parked = done
    })
  }

  /** From the purgatory: `key` changed; `wake` wakes the parked fetch (new records, not a new HW). */
  changed(key: string, wake: boolean): void {
    this.#changed.add(key)
    if (wake) this.#parked?.(true)
  }

  /** Ends a parked wait (false). */
  wakeParked(): void {
    this.#parked?.(false)
  }

  /** Stops watching every key; a parked wait ends. */
  close(): void {
    if (this.#closed) return
    for (const key of [...this.#keys]) this.delete(key)
    this.#closed = true
    this.wakeParked()
  }
}
