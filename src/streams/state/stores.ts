// State stores. Every store is, at the bottom, a sorted map of bytes to bytes (a BytesStore): in memory,
// or on disk in LMDB (lmdb.ts). Window and session stores are that map with composite keys, so that one
// change-logging layer (logged.ts), one restore path and one checkpoint serve them all. The typed stores
// the processors use (KeyValueStore, WindowStore, SessionStore) put serdes over it (typed.ts).
import type { KeyValue } from '../core/record.js'

/** What every store is (Kafka's StateStore). */
export interface StateStore {
  readonly name: string
  persistent(): boolean
  isOpen(): boolean
}

/** A sorted map of bytes, the bottom of every store. Bounds of range are [from, to): to is exclusive. */
export interface BytesStore {
  readonly name: string
  readonly persistent: boolean
  /** Opens the store; persistent ones keep their files in dir. */
  open(dir: string | null): void
  get(key: Buffer): Buffer | undefined
  /** value null deletes. */
  put(key: Buffer, value: Buffer | null): void
  putAll(entries: Iterable<readonly [Buffer, Buffer | null]>): void
  range(from: Buffer | null, to: Buffer | null, reverse?: boolean): IterableIterator<[Buffer, Buffer]>
  approximateNumEntries(): number
  /** Makes what was written durable (persistent stores); resolves once it is on disk. */
  flush(): Promise<void>
  close(): void
  /** Drops every entry (a store restored from scratch). */
  clear(): void
  isOpen(): boolean
}

/** The window a windowed key belongs to: [start, end) for time windows, [start, end] for sessions. */
export class Window {
  constructor(
    readonly start: number,
    readonly end: number,
  ) {}

  overlap(o: Window): boolean {
    return this.start < o.end && o.start < this.end
  }

  toString(): string {
    return `Window{startMs=${this.start}, endMs=${this.end}}`
  }
}

/** A key with its window (Kafka's Windowed), the key type of windowed aggregations. */
export class Windowed<K> {
  constructor(
    readonly key: K,
    readonly window: Window,
  ) {}

  toString(): string {
    return `[${String(this.key)}@${this.window.start}/${this.window.end}]`
  }
}

export interface ReadOnlyKeyValueStore<K, V> extends StateStore {
  get(key: K): V | null
  /** Keys in [from, to] (both inclusive; null = unbounded), in key-byte order. */
  range(from: K | null, to: K | null): KeyValue<K, V>[]
  reverseRange(from: K | null, to: K | null): KeyValue<K, V>[]
  all(): KeyValue<K, V>[]
  reverseAll(): KeyValue<K, V>[]
  /** Keys whose serialized form starts with the serialized prefix. */
  prefixScan<P>(prefix: P, prefixSerializer: { serialize(topic: string, data: P): Buffer | null }): KeyValue<K, V>[]
  approximateNumEntries(): number
}

export interface KeyValueStore<K, V> extends ReadOnlyKeyValueStore<K, V> {
  put(key: K, value: V | null): void
  putIfAbsent(key: K, value: V): V | null
  putAll(entries: readonly KeyValue<K, V | null>[]): void
  delete(key: K): V | null
}

/**
 * putIfAbsent, putAll and delete as every key-value store here does them, on its own get and put (a null
 * value deletes): the typed store and the caching store in front of it share these.
 */
export const keyValueStoreDefaults = {
  putIfAbsent<K, V>(store: Pick<KeyValueStore<K, V>, 'get' | 'put'>, key: K, value: V): V | null {
    const old = store.get(key)
    if (old === null) store.put(key, value)
    return old
  },
  putAll<K, V>(store: Pick<KeyValueStore<K, V>, 'put'>, entries: readonly KeyValue<K, V | null>[]): void {
    for (const e of entries) store.put(e.key, e.value)
  },
  delete<K, V>(store: Pick<KeyValueStore<K, V>, 'get' | 'put'>, key: K): V | null {
    const old = store.get(key)
    if (old !== null) store.put(key, null)
    return old
  },
}

/** A value with the timestamp of the record that last wrote it (Kafka's ValueAndTimestamp). */
export interface ValueAndTimestamp<V> {
  value: V
  timestamp: number
}

export interface TimestampedKeyValueStore<K, V> extends KeyValueStore<K, V> {
  getWithTimestamp(key: K): ValueAndTimestamp<V> | null
  putWithTimestamp(key: K, value: V | null, timestamp: number): void
}

export interface ReadOnlyWindowStore<K, V> extends StateStore {
  /** The value of key in the window starting at windowStart. */
  fetch(key: K, windowStart: number): V | null
  /** The windows of key starting within [timeFrom, timeTo], oldest first, as [windowStart, value]. */
  fetchRange(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[]
  /** Every key's windows starting within [timeFrom, timeTo]. */
  fetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[]
  all(): KeyValue<Windowed<K>, V>[]
}

export interface WindowStore<K, V> extends ReadOnlyWindowStore<K, V> {
  put(key: K, value: V | null, windowStart: number): void
}

export interface ReadOnlySessionStore<K, V> extends StateStore {
  /** Sessions of key that end at or after earliestSessionEndTime and start at or before latestSessionStartTime. */
  findSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[]
  fetchSession(key: K, sessionStart: number, sessionEnd: number): V | null
  /** Every session of key. */
  fetch(key: K): KeyValue<Windowed<K>, V>[]
}

export interface SessionStore<K, V> extends ReadOnlySessionStore<K, V> {
  put(session: Windowed<K>, value: V | null): void
  remove(session: Windowed<K>): void
}

// ---- byte helpers shared by the store layouts ----

const TWO_32 = 4294967296

/** Writes a non-negative timestamp as 8 big-endian bytes, so that byte order is time order. */
export function writeTime(buf: Buffer, at: number, t: number): void {
  const v = Math.max(0, t)
  const hi = Math.floor(v / TWO_32)
  buf.writeUInt32BE(hi, at)
  buf.writeUInt32BE(v - hi * TWO_32, at + 4)
}

export function readTime(buf: Buffer, at: number): number {
  return buf.readUInt32BE(at) * TWO_32 + buf.readUInt32BE(at + 4)
}

/** The smallest key greater than every key that starts with prefix (null: none, the prefix is all 0xff). */
export function prefixEnd(prefix: Buffer): Buffer | null {
  const out = Buffer.from(prefix)
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i]! < 0xff) {
      out[i]!++
      return out.subarray(0, i + 1)
    }
  }
  return null
}

/** The smallest key greater than key (an inclusive bound made exclusive). */
export function after(key: Buffer): Buffer {
  return Buffer.concat([key, Buffer.alloc(1)])
}
