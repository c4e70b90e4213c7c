// The in-memory BytesStore (Kafka's InMemoryKeyValueStore): a hash map for point reads and writes, and a
// sorted array of its keys built when a range is asked for after a write (ranges are rarer than puts in
// the DSL's stores; window and session stores ask ranges of one key at a time, in a sorted map that is
// then rebuilt only after writes). Nothing survives a restart: the changelog restores it.
import type { BytesStore } from './stores.js'

export class InMemoryBytesStore implements BytesStore {
  readonly persistent = false
  private readonly map = new Map<string, [Buffer, Buffer]>()
  private sorted: string[] | null = null
  private open_ = false

  constructor(readonly name: string) {}

  open(): void {
    this.open_ = true
  }

  isOpen(): boolean {
    return this.open_
  }

  get(key: Buffer): Buffer | undefined {
    return this.map.get(key.toString('latin1'))?.[1]
  }

  put(key: Buffer, value: Buffer | null): void {
    const k = key.toString('latin1')
    if (value === null) {
      if (this.map.delete(k)) this.sorted = null
      return
    }
    if (!this.map.has(k)) this.sorted = null
    // Keys and values are copied: callers may reuse their buffers (and fetched records are views).
    this.map.set(k, [Buffer.from(key), Buffer.from(value)])
  }

  putAll(entries: Iterable<readonly [Buffer, Buffer | null]>): void {
    for (const [k, v] of entries) this.put(k, v)
  }

  private sortedKeys(): string[] {
    // latin1 strings compare code unit by code unit, which is byte order.
    if (this.sorted === null) this.sorted = [...this.map.keys()].sort()
    return this.sorted
  }

  *range(from: Buffer | null, to: Buffer | null, reverse = false): IterableIterator<[Buffer, Buffer]> {
    const keys = this.sortedKeys()
    const lo = from === null ? 0 : lowerBound(keys, from.toString('latin1'))
    const hi = to === null ? keys.length : lowerBound(keys, to.toString('latin1'))
    // A snapshot of the bounds: writes during iteration (expiry) do not disturb it.
    const slice = keys.slice(lo, hi)
    if (reverse) slice.reverse()
    for (const k of slice) {
      const e = this.map.get(k)
      if (e !== undefined) yield [e[0], e[1]]
    }
  }

  approximateNumEntries(): number {
    return this.map.size
  }

  async flush(): Promise<void> {}

  clear(): void {
    this.map.clear()
    this.sorted = null
  }

  close(): void {
    this.open_ = false
  }
}

function lowerBound(keys: string[], k: string): number {
  let lo = 0
  let hi = keys.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (keys[mid]! < k) lo = mid + 1
    else hi = mid
  }
  return lo
}
