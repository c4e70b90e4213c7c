// Long-poll support for Fetch (Kafka's DelayedFetch purgatory): a fetch that has less than min.bytes
// waits until one of its partitions receives data or max.wait.ms passes, whichever comes first.
// Appends call notify() for the partitions they wrote; the waiter re-reads and answers. The replica
// manager keeps two (consumer and follower fetches); partitionKey is the key every purgatory here uses.

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
  private waiting = 0

  /** Number of fetches currently parked (for metrics and tests). */
  get size(): number {
    return this.waiting
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

  /** Wakes every fetch waiting on this partition. */
  notify(key: string): void {
    const set = this.byPartition.get(key)
    if (set === undefined) return
    for (const entry of [...set]) entry.wake(true)
  }

  /** Wakes everything (shutdown). */
  wakeAll(): void {
    for (const set of [...this.byPartition.values()]) {
      for (const entry of [...set]) entry.wake(false)
    }
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
