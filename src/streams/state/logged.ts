// The layer every store's writes go through (Kafka's ChangeLogging and Caching layers in one): a write
// lands in `unlogged`, the entries not yet sent to the store's changelog, keyed by key bytes so that a
// key written many times within a commit interval is sent once with its last value; the task drains it
// into the changelog topic at each commit (and sooner when it grows past a bound). For a persistent
// store, writes also wait in `unwritten` and reach LMDB in one transaction at the commit (or before a
// range read, which LMDB serves), so a record costs no disk write of its own. Reads look at `unwritten`
// first. Restoration writes straight into the store underneath, logging nothing.
import type { BytesStore } from './stores.js'

/** Where a store's changelog goes: its topic and the task's partition. */
export interface ChangelogPartition {
  topic: string
  partition: number
}

/** Past this many distinct unsent keys, a store asks its task to send its changelog entries now. */
export const UNLOGGED_FLUSH_THRESHOLD = 10_000

export class LoggedBytesStore implements BytesStore {
  private readonly unwritten: Map<string, [Buffer, Buffer | null]> | null
  private unlogged: Map<string, [Buffer, Buffer | null, number]> | null
  /** The timestamp that changelog records of the next writes carry (the record being processed). */
  timestamp: () => number = () => Date.now()
  /** Called once when unlogged passes UNLOGGED_FLUSH_THRESHOLD. */
  onPressure: (() => void) | null = null

  constructor(
    readonly inner: BytesStore,
    readonly changelog: ChangelogPartition | null,
  ) {
    this.unwritten = inner.persistent ? new Map() : null
    this.unlogged = changelog !== null ? new Map() : null
  }

  get name(): string {
    return this.inner.name
  }

  get persistent(): boolean {
    return this.inner.persistent
  }

  open(dir: string | null): void {
    this.inner.open(dir)
  }

  isOpen(): boolean {
    return this.inner.isOpen()
  }

  get(key: Buffer): Buffer | undefined {
    if (this.unwritten !== null && this.unwritten.size > 0) {
      const e = this.unwritten.get(key.toString('latin1'))
      if (e !== undefined) return e[1] ?? undefined
    }
    return this.inner.get(key)
  }

  /** ts: the changelog record's timestamp (default: the record being processed; the cache's own when it flushes). */
  put(key: Buffer, value: Buffer | null, ts = this.timestamp()): void {
    // The typed stores hand in buffers of their own (fresh serializations, copied when a serde returns
    // the caller's buffer): they are kept as they are, without another copy.
    const k = key.toString('latin1')
    if (this.unwritten !== null) {
      const e = this.unwritten.get(k)
      if (e !== undefined) e[1] = value
      else this.unwritten.set(k, [key, value])
    } else {
      this.inner.put(key, value)
    }
    if (this.unlogged !== null) {
      const e = this.unlogged.get(k)
      if (e !== undefined) {
        e[1] = value
        e[2] = ts
      } else {
        this.unlogged.set(k, [key, value, ts])
        if (this.unlogged.size === UNLOGGED_FLUSH_THRESHOLD) this.onPressure?.()
      }
    }
  }

  putAll(entries: Iterable<readonly [Buffer, Buffer | null]>): void {
    for (const [k, v] of entries) this.put(k, v)
  }

  /** Puts the waiting writes into the store underneath (not the changelog). */
  writeThrough(): void {
    if (this.unwritten === null || this.unwritten.size === 0) return
    this.inner.putAll(this.unwritten.values())
    this.unwritten.clear()
  }

  range(from: Buffer | null, to: Buffer | null, reverse = false): IterableIterator<[Buffer, Buffer]> {
    this.writeThrough()
    return this.inner.range(from, to, reverse)
  }

  approximateNumEntries(): number {
    return this.inner.approximateNumEntries() + (this.unwritten?.size ?? 0)
  }

  /** Hands the unsent changelog entries to send (one per key, its last value) and forgets them. */
  drainChangelog(send: (topic: string, partition: number, key: Buffer, value: Buffer | null, timestamp: number) => void): number {
    const cl = this.changelog
    if (cl === null || this.unlogged === null || this.unlogged.size === 0) return 0
    const entries = this.unlogged
    this.unlogged = new Map()
    for (const [k, v, ts] of entries.values()) send(cl.topic, cl.partition, k, v, ts)
    return entries.size
  }

  get pendingChangelogEntries(): number {
    return this.unlogged?.size ?? 0
  }

  /** Writes through and makes the store durable. */
  async flush(): Promise<void> {
    this.writeThrough()
    await this.inner.flush()
  }

  /** Deletes without logging (expired windows: the changelog's own retention drops them there). */
  expire(keys: readonly Buffer[]): void {
    this.writeThrough()
    this.inner.putAll(keys.map((k) => [k, null] as const))
  }

  /** Restoration: writes a batch of changelog records straight into the store underneath. */
  restore(batch: readonly (readonly [Buffer, Buffer | null])[]): void {
    this.writeThrough()
    this.inner.putAll(batch)
  }

  clear(): void {
    this.unwritten?.clear()
    this.unlogged?.clear()
    this.inner.clear()
  }

  close(): void {
    this.unwritten?.clear()
    this.inner.close()
  }
}
