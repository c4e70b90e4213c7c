// The record cache of key-value stores (Kafka's ThreadCache and CachingKeyValueStore), on by default for
// the stores of the DSL's aggregations (count, reduce, aggregate; Materialized.withCachingDisabled() or
// statestore.cache.max.bytes=0 turn it off). A write stays in the cache, one entry per key with its last
// value, until the task commits, or until the thread's cache holds more than its share of
// statestore.cache.max.bytes and the entry is the least recently written of its store. Then the value
// goes to the store underneath (and so to its changelog) and the store's flush listener (the aggregation)
// forwards it downstream with the value it replaces, the one flushed before. A key updated many times
// between commits so costs one store write, one changelog record and one downstream record, as in Kafka.
// Reads look at the cache first. Range reads and counts write the cache through to the store first (the
// entries stay due for forwarding). Nothing here is on disk: a crash loses the cache, and with it only
// what the uncommitted input offsets will produce again. An entry's size counts its key bytes, its
// value's serialized bytes when it entered the cache, and a fixed overhead for the entry.
import type { Headers } from '../core/headers.js'
import { KeyValue } from '../core/record.js'
import type { KeyValueStoreFacade } from './typed.js'
import { keyValueStoreDefaults, type TimestampedKeyValueStore, type ValueAndTimestamp } from './stores.js'
import type { InternalStore, StoreKind } from './typed.js'

/** Bytes an entry is counted for beyond its key and value (its object, the map slot). */
const ENTRY_OVERHEAD = 100

/** One stream thread's budget (statestore.cache.max.bytes / num.stream.threads), shared by its stores. */
export class ThreadCache {
  bytes = 0

  constructor(readonly maxBytes: number) {}
}

/** Where a write came from (Kafka's ProcessorRecordContext): forwarded records of a flush carry it. */
export interface CachedRecordContext {
  changelogTimestamp: number
  headers: Headers | undefined
  topic: string | null
  partition: number
  offset: number
}

/** What the task gives its caching stores: its processor and record context. */
export interface CacheBinding {
  /** The processor node running now (the one registering a flush listener). */
  currentNode(): unknown
  /** A number that changes with every record (and punctuation) the task processes. */
  recordSeq(): number
  /** Copies the context of the record being processed into e. */
  capture(e: CachedRecordContext): void
  /** Runs fn as node with e's record context (a flush forwards from the listener's processor). */
  runAs(node: unknown, e: CachedRecordContext, fn: () => void): void
}

/** Called with each flushed entry: the key, its value now and the value flushed before it. */
export type CacheFlushListener<K, V> = (key: K, newValue: V | null, oldValue: V | null, timestamp: number, headers: Headers | undefined) => void

interface Entry<K, V> extends CachedRecordContext {
  key: K
  keyBytes: Buffer
  value: V | null
  timestamp: number
  /** The value in the store underneath when the entry became dirty (what downstream saw last). */
  old: V | null
  /** Already written to the store underneath (a range read wrote the cache through). */
  stored: boolean
  size: number
}

export class CachingKeyValueStore<K, V> implements TimestampedKeyValueStore<K, V>, InternalStore {
  /** Dirty entries, least recently written first (a write moves its key to the end). */
  private entries = new Map<string, Entry<K, V>>()
  private bytes = 0
  private listener: CacheFlushListener<K, V> | null = null
  private owner: unknown = null
  private binding: CacheBinding | null = null
  /** The last read that missed the cache, for the write that usually follows it (an aggregation's). */
  private missId: string | null = null
  private missValue: ValueAndTimestamp<V> | null = null
  private lastKey: unknown = undefined
  private lastId = ''
  private lastSeq = -1

  constructor(
    readonly inner: KeyValueStoreFacade<K, V>,
    private readonly thread: ThreadCache,
  ) {}

  get name(): string {
    return this.inner.name
  }

  get kind(): StoreKind {
    return this.inner.kind
  }

  get logged(): InternalStore['logged'] {
    return this.inner.logged
  }

  persistent(): boolean {
    return this.inner.persistent()
  }

  isOpen(): boolean {
    return this.inner.isOpen()
  }

  /** The task's hooks (set when the task opens or adopts the store). */
  bind(binding: CacheBinding): void {
    this.binding = binding
  }

  /** The processor to forward flushed entries (Kafka's setFlushListener), called from its init. */
  setFlushListener(listener: CacheFlushListener<K, V>): void {
    this.listener = listener
    this.owner = this.binding?.currentNode() ?? null
  }

  /** Entries waiting to be flushed. */
  get dirtyCount(): number {
    return this.entries.size
  }

  private idOf(key: K): string {
    // The same key again while the same record is processed (an aggregation's read, then its write): its
    // id without serializing it twice. Strings and numbers cannot change; a buffer could, between records.
    const t = typeof key
    const seq = this.binding === null ? -1 : this.binding.recordSeq()
    if (key === this.lastKey && (t === 'string' || t === 'number' || (seq >= 0 && seq === this.lastSeq))) return this.lastId
    const id = this.inner.keyId(key)
    this.lastKey = key
    this.lastId = id
    this.lastSeq = seq
    return id
  }

  get(key: K): V | null {
    return this.getWithTimestamp(key)?.value ?? null
  }

  getWithTimestamp(key: K): ValueAndTimestamp<V> | null {
    const id = this.idOf(key)
    const e = this.entries.get(id)
    if (e !== undefined) return e.value === null ? null : { value: e.value, timestamp: e.timestamp }
    const v = this.inner.getWithTimestamp(key)
    this.missId = id
    this.missValue = v
    return v
  }

  put(key: K, value: V | null): void {
    this.putWithTimestamp(key, value, this.inner.logged.timestamp())
  }

  putWithTimestamp(key: K, value: V | null, timestamp: number): void {
    if (!this.inner.isOpen()) this.inner.get(key) // throws InvalidStateStoreException
    const id = this.idOf(key)
    // A Buffer value may be a view of a whole fetch response: the cache keeps its own copy.
    const v = Buffer.isBuffer(value) ? (Buffer.from(value) as V) : value
    let e = this.entries.get(id)
    if (e !== undefined) {
      this.entries.delete(id)
      e.value = v
      e.timestamp = timestamp
      e.stored = false
    } else {
      const old = id === this.missId ? (this.missValue?.value ?? null) : (this.inner.getWithTimestamp(key)?.value ?? null)
      const keyBytes = this.inner.keyCopy(key)
      const size = keyBytes.length + this.inner.valueSize(v) + ENTRY_OVERHEAD
      e = { key: this.inner.keyFromBytes(keyBytes), keyBytes, value: v, timestamp, old, stored: false, size, changelogTimestamp: timestamp, headers: undefined, topic: null, partition: -1, offset: -1 }
      this.bytes += size
      this.thread.bytes += size
    }
    this.entries.set(id, e)
    this.missId = null
    this.missValue = null
    if (this.binding !== null) this.binding.capture(e)
    else e.changelogTimestamp = this.inner.logged.timestamp()
    if (this.thread.bytes > this.thread.maxBytes) this.evict()
  }

  putIfAbsent(key: K, value: V): V | null {
    return keyValueStoreDefaults.putIfAbsent(this, key, value)
  }

  putAll(entries: readonly KeyValue<K, V | null>[]): void {
    keyValueStoreDefaults.putAll(this, entries)
  }

  delete(key: K): V | null {
    return keyValueStoreDefaults.delete(this, key)
  }

  /** Writes every dirty entry to the store underneath, without forwarding (they stay due for that). */
  private writeThrough(): void {
    this.missId = null
    for (const e of this.entries.values()) {
      if (e.stored) continue
      this.inner.writeEntry(e.keyBytes, e.value, e.timestamp, e.changelogTimestamp)
      e.stored = true
    }
  }

  range(from: K | null, to: K | null): KeyValue<K, V>[] {
    this.writeThrough()
    return this.inner.range(from, to)
  }

  reverseRange(from: K | null, to: K | null): KeyValue<K, V>[] {
    this.writeThrough()
    return this.inner.reverseRange(from, to)
  }

  all(): KeyValue<K, V>[] {
    this.writeThrough()
    return this.inner.all()
  }

  reverseAll(): KeyValue<K, V>[] {
    this.writeThrough()
    return this.inner.reverseAll()
  }

  prefixScan<P>(prefix: P, prefixSerializer: { serialize(topic: string, data: P): Buffer | null }): KeyValue<K, V>[] {
    this.writeThrough()
    return this.inner.prefixScan(prefix, prefixSerializer)
  }

  approximateNumEntries(): number {
    this.writeThrough()
    return this.inner.approximateNumEntries()
  }

  /** Flushes the least recently written entries until the thread's cache fits its budget (or this one is empty). */
  private evict(): void {
    while (this.thread.bytes > this.thread.maxBytes && this.entries.size > 0) {
      const [id, e] = this.entries.entries().next().value as [string, Entry<K, V>]
      this.entries.delete(id)
      this.bytes -= e.size
      this.thread.bytes -= e.size
      this.flushEntry(e)
    }
  }

  /** Flushes every entry: to the store underneath, and downstream through the flush listener (a commit). */
  flushCache(): void {
    if (this.entries.size === 0) return
    const entries = this.entries
    this.entries = new Map()
    this.thread.bytes -= this.bytes
    this.bytes = 0
    for (const e of entries.values()) this.flushEntry(e)
  }

  private flushEntry(e: Entry<K, V>): void {
    this.missId = null
    if (!e.stored) this.inner.writeEntry(e.keyBytes, e.value, e.timestamp, e.changelogTimestamp)
    const listener = this.listener
    // Kafka forwards nothing for a delete of an absent key.
    if (listener === null || (e.value === null && e.old === null)) return
    if (this.binding === null) listener(e.key, e.value, e.old, e.timestamp, e.headers)
    else this.binding.runAs(this.owner, e, () => listener(e.key, e.value, e.old, e.timestamp, e.headers))
  }

  /** Drops the entries unflushed (a task closed without commit: its input is processed again). */
  private drop(): void {
    this.entries.clear()
    this.thread.bytes -= this.bytes
    this.bytes = 0
    this.missId = null
  }

  close(): void {
    this.drop()
    this.inner.close()
  }
}
