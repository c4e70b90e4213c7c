// The typed stores processors use, over a LoggedBytesStore: keys and values go through serdes (with the
// changelog topic as the serdes' topic, as in Kafka). Layouts of the bytes:
//   key-value:              key bytes -> value bytes
//   timestamped key-value:  key bytes -> [timestamp int64][value bytes]   (the DSL's KTable stores)
//   window:   [key length int32][key bytes][window start int64][sequence int32] -> value bytes
//   session:  [key length int32][key bytes][session end int64][session start int64] -> value bytes
// The key length comes first so that one key's windows are contiguous and ordered by time, and no key
// is a prefix of another's range. Window and session stores drop writes older than their retention
// (measured from the largest window time they have seen) and remove expired entries once per segment
// interval (retention / 2, at least 60 s), without logging the removal: the changelog's own retention
// (cleanup.policy=compact,delete) removes them there.
import { InvalidStateStoreException } from '../core/errors.js'
import { KeyValue } from '../core/record.js'
import type { Serde } from '../core/serdes.js'
import type { LoggedBytesStore } from './logged.js'
import {
  Window,
  Windowed,
  after,
  prefixEnd,
  readTime,
  writeTime,
  keyValueStoreDefaults,
  type SessionStore,
  type TimestampedKeyValueStore,
  type ValueAndTimestamp,
  type WindowStore,
} from './stores.js'

export type StoreKind = 'keyValue' | 'timestampedKeyValue' | 'window' | 'session'

/** What the runtime sees of every store: its kind and the logged bytes store under it. */
export interface InternalStore {
  readonly name: string
  readonly kind: StoreKind
  readonly logged: LoggedBytesStore
  persistent(): boolean
  isOpen(): boolean
  close(): void
}

abstract class TypedStore<K, V> implements InternalStore {
  abstract readonly kind: StoreKind
  /** The topic handed to the serdes: the changelog topic, or the store name when not logged. */
  protected readonly serdeTopic: string

  constructor(
    readonly logged: LoggedBytesStore,
    protected readonly keySerde: Serde<K>,
    protected readonly valueSerde: Serde<V>,
  ) {
    this.serdeTopic = logged.changelog?.topic ?? logged.name
  }

  get name(): string {
    return this.logged.name
  }

  persistent(): boolean {
    return this.logged.persistent
  }

  isOpen(): boolean {
    return this.logged.isOpen()
  }

  close(): void {
    this.logged.close()
  }

  protected live(): LoggedBytesStore {
    if (!this.logged.isOpen()) throw new InvalidStateStoreException(`store '${this.name}' is not open (closed, or its task moved)`)
    return this.logged
  }

  protected keyBytes(key: K): Buffer {
    if (key === null || key === undefined) throw new TypeError(`store '${this.name}': a key must not be null`)
    const b = this.keySerde.serializer.serialize(this.serdeTopic, key)
    if (b === null) throw new TypeError(`store '${this.name}': the key serializer returned null`)
    // A serde that returns the caller's own buffer (Bytes): the store keeps a copy, not the caller's.
    return (b as unknown) === key ? Buffer.from(b) : b
  }

  /** The key's bytes for a point lookup, which keeps nothing: a serde's own buffer is used without the copy keyBytes makes. */
  protected lookupKey(key: K): Buffer {
    if (key === null || key === undefined) throw new TypeError(`store '${this.name}': a key must not be null`)
    const b = this.keySerde.serializer.serialize(this.serdeTopic, key)
    if (b === null) throw new TypeError(`store '${this.name}': the key serializer returned null`)
    return b
  }

  protected keyOf(bytes: Buffer): K {
    return this.keySerde.deserializer.deserialize(this.serdeTopic, bytes) as K
  }

  protected valueBytes(value: V): Buffer | null {
    const b = this.valueSerde.serializer.serialize(this.serdeTopic, value)
    return b !== null && (b as unknown) === value ? Buffer.from(b) : b
  }

  protected valueOf(bytes: Buffer): V {
    return this.valueSerde.deserializer.deserialize(this.serdeTopic, bytes) as V
  }
}

export class KeyValueStoreFacade<K, V> extends TypedStore<K, V> implements TimestampedKeyValueStore<K, V> {
  readonly kind: StoreKind

  constructor(logged: LoggedBytesStore, keySerde: Serde<K>, valueSerde: Serde<V>, readonly timestamped: boolean) {
    super(logged, keySerde, valueSerde)
    this.kind = timestamped ? 'timestampedKeyValue' : 'keyValue'
  }

  private decode(bytes: Buffer): V {
    return this.valueOf(this.timestamped ? bytes.subarray(8) : bytes)
  }

  private encode(value: V | null, timestamp: number): Buffer | null {
    if (value === null || value === undefined) return null
    const v = this.valueBytes(value)
    if (v === null) return null
    if (!this.timestamped) return v
    const out = Buffer.allocUnsafe(8 + v.length)
    writeTime(out, 0, timestamp)
    v.copy(out, 8)
    return out
  }

  get(key: K): V | null {
    const b = this.live().get(this.lookupKey(key))
    return b === undefined ? null : this.decode(b)
  }

  // ---- for the record cache (caching.ts) ----

  /** The key's serialized bytes as a string (the cache's map key). */
  keyId(key: K): string {
    return this.lookupKey(key).toString('latin1')
  }

  /** The key's bytes, the store's own copy. */
  keyCopy(key: K): Buffer {
    return this.keyBytes(key)
  }

  keyFromBytes(bytes: Buffer): K {
    return this.keyOf(bytes)
  }

  /** Bytes of the value serialized (0 for null). */
  valueSize(value: V | null): number {
    if (value === null || value === undefined) return 0
    return this.valueSerde.serializer.serialize(this.serdeTopic, value)?.length ?? 0
  }

  /** A write from the cache: key bytes already the store's, the changelog record stamped changelogTimestamp. */
  writeEntry(keyBytes: Buffer, value: V | null, timestamp: number, changelogTimestamp: number): void {
    this.live().put(keyBytes, this.encode(value, timestamp), changelogTimestamp)
  }

  getWithTimestamp(key: K): ValueAndTimestamp<V> | null {
    const b = this.live().get(this.lookupKey(key))
    if (b === undefined) return null
    return { value: this.decode(b), timestamp: this.timestamped ? readTime(b, 0) : -1 }
  }

  put(key: K, value: V | null): void {
    this.putWithTimestamp(key, value, this.logged.timestamp())
  }

  putWithTimestamp(key: K, value: V | null, timestamp: number): void {
    this.live().put(this.keyBytes(key), this.encode(value, timestamp))
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

  private collect(it: Iterable<[Buffer, Buffer]>): KeyValue<K, V>[] {
    const out: KeyValue<K, V>[] = []
    for (const [k, v] of it) out.push(new KeyValue(this.keyOf(k), this.decode(v)))
    return out
  }

  range(from: K | null, to: K | null): KeyValue<K, V>[] {
    return this.collect(this.live().range(from === null ? null : this.keyBytes(from), to === null ? null : after(this.keyBytes(to))))
  }

  reverseRange(from: K | null, to: K | null): KeyValue<K, V>[] {
    return this.collect(this.live().range(from === null ? null : this.keyBytes(from), to === null ? null : after(this.keyBytes(to)), true))
  }

  all(): KeyValue<K, V>[] {
    return this.collect(this.live().range(null, null))
  }

  reverseAll(): KeyValue<K, V>[] {
    return this.collect(this.live().range(null, null, true))
  }

  prefixScan<P>(prefix: P, prefixSerializer: { serialize(topic: string, data: P): Buffer | null }): KeyValue<K, V>[] {
    const p = prefixSerializer.serialize(this.serdeTopic, prefix) ?? Buffer.alloc(0)
    return this.collect(this.live().range(p, prefixEnd(p)))
  }

  approximateNumEntries(): number {
    return this.live().approximateNumEntries()
  }
}

/** Removes expired entries of window and session stores, at most once per segment interval. */
class Expiry {
  observed = -1
  private lastRun = -1
  readonly segmentInterval: number

  constructor(readonly retentionMs: number) {
    this.segmentInterval = Math.max(60_000, Math.floor(retentionMs / 2))
  }

  /** Whether time t is too old to keep (given what was seen). */
  expired(t: number): boolean {
    return this.observed >= 0 && t < this.observed - this.retentionMs
  }

  observe(t: number): boolean {
    if (t > this.observed) this.observed = t
    if (this.lastRun < 0) this.lastRun = this.observed
    if (this.observed - this.lastRun < this.segmentInterval) return false
    this.lastRun = this.observed
    return true
  }
}

function lengthPrefixed(key: Buffer, extra: number): Buffer {
  const out = Buffer.allocUnsafe(4 + key.length + extra)
  out.writeUInt32BE(key.length, 0)
  key.copy(out, 4)
  return out
}

export class WindowStoreFacade<K, V> extends TypedStore<K, V> implements WindowStore<K, V> {
  readonly kind: StoreKind = 'window'
  private readonly expiry: Expiry
  private seq = 0

  constructor(
    logged: LoggedBytesStore,
    keySerde: Serde<K>,
    valueSerde: Serde<V>,
    readonly retentionMs: number,
    readonly windowSizeMs: number,
    readonly retainDuplicates: boolean,
  ) {
    super(logged, keySerde, valueSerde)
    this.expiry = new Expiry(retentionMs)
  }

  private composite(key: Buffer, start: number, seq: number): Buffer {
    const out = lengthPrefixed(key, 12)
    writeTime(out, 4 + key.length, start)
    out.writeUInt32BE(seq >>> 0, 12 + key.length)
    return out
  }

  private split(c: Buffer): { key: Buffer; start: number } {
    const len = c.readUInt32BE(0)
    return { key: c.subarray(4, 4 + len), start: readTime(c, 4 + len) }
  }

  put(key: K, value: V | null, windowStart: number): void {
    const store = this.live()
    if (this.expiry.expired(windowStart)) return
    const kb = this.keyBytes(key)
    if (this.retainDuplicates) {
      // Each record of a join window is kept, even with the same key and time; a null adds nothing.
      if (value === null) return
      this.seq = (this.seq + 1) >>> 0
    }
    const v = value === null ? null : this.valueBytes(value)
    store.put(this.composite(kb, windowStart, this.retainDuplicates ? this.seq : 0), v)
    if (this.expiry.observe(windowStart)) this.removeExpired()
  }

  private removeExpired(): void {
    const doomed: Buffer[] = []
    for (const [k] of this.logged.range(null, null)) if (this.expiry.expired(this.split(k).start)) doomed.push(Buffer.from(k))
    if (doomed.length > 0) this.logged.expire(doomed)
  }

  fetch(key: K, windowStart: number): V | null {
    if (this.retainDuplicates) return this.fetchRange(key, windowStart, windowStart)[0]?.value ?? null
    if (this.expiry.expired(windowStart)) return null
    const b = this.live().get(this.composite(this.lookupKey(key), windowStart, 0))
    return b === undefined ? null : this.valueOf(b)
  }

  fetchRange(key: K, timeFrom: number, timeTo: number): KeyValue<number, V>[] {
    const kb = this.keyBytes(key)
    const out: KeyValue<number, V>[] = []
    const lo = this.composite(kb, Math.max(0, timeFrom), 0)
    const hi = this.composite(kb, Math.max(0, timeTo) + 1, 0)
    for (const [k, v] of this.live().range(lo, hi)) {
      const start = this.split(k).start
      if (this.expiry.expired(start)) continue
      out.push(new KeyValue(start, this.valueOf(v)))
    }
    return out
  }

  fetchAll(timeFrom: number, timeTo: number): KeyValue<Windowed<K>, V>[] {
    const out: KeyValue<Windowed<K>, V>[] = []
    for (const [k, v] of this.live().range(null, null)) {
      const { key, start } = this.split(k)
      if (start < timeFrom || start > timeTo || this.expiry.expired(start)) continue
      out.push(new KeyValue(new Windowed(this.keyOf(key), new Window(start, start + this.windowSizeMs)), this.valueOf(v)))
    }
    return out
  }

  all(): KeyValue<Windowed<K>, V>[] {
    return this.fetchAll(0, Number.MAX_SAFE_INTEGER)
  }

  /** Restoration knows the windows' times: the expiry clock follows what is restored. */
  observeRestored(composite: Buffer): void {
    this.expiry.observe(this.split(composite).start)
  }
}

export class SessionStoreFacade<K, V> extends TypedStore<K, V> implements SessionStore<K, V> {
  readonly kind: StoreKind = 'session'
  private readonly expiry: Expiry

  constructor(
    logged: LoggedBytesStore,
    keySerde: Serde<K>,
    valueSerde: Serde<V>,
    readonly retentionMs: number,
  ) {
    super(logged, keySerde, valueSerde)
    this.expiry = new Expiry(retentionMs)
  }

  private composite(key: Buffer, end: number, start: number): Buffer {
    const out = lengthPrefixed(key, 16)
    writeTime(out, 4 + key.length, end)
    writeTime(out, 12 + key.length, start)
    return out
  }

  private split(c: Buffer): { key: Buffer; end: number; start: number } {
    const len = c.readUInt32BE(0)
    return { key: c.subarray(4, 4 + len), end: readTime(c, 4 + len), start: readTime(c, 12 + len) }
  }

  put(session: Windowed<K>, value: V | null): void {
    const store = this.live()
    if (this.expiry.expired(session.window.end)) return
    const v = value === null ? null : this.valueBytes(value)
    store.put(this.composite(this.keyBytes(session.key), session.window.end, session.window.start), v)
    if (this.expiry.observe(session.window.end)) this.removeExpired()
  }

  remove(session: Windowed<K>): void {
    this.live().put(this.composite(this.keyBytes(session.key), session.window.end, session.window.start), null)
  }

  private removeExpired(): void {
    const doomed: Buffer[] = []
    for (const [k] of this.logged.range(null, null)) if (this.expiry.expired(this.split(k).end)) doomed.push(Buffer.from(k))
    if (doomed.length > 0) this.logged.expire(doomed)
  }

  findSessions(key: K, earliestSessionEndTime: number, latestSessionStartTime: number): KeyValue<Windowed<K>, V>[] {
    const kb = this.keyBytes(key)
    const out: KeyValue<Windowed<K>, V>[] = []
    const lo = this.composite(kb, Math.max(0, earliestSessionEndTime), 0)
    const hi = prefixEnd(lengthPrefixed(kb, 0))
    for (const [k, v] of this.live().range(lo, hi)) {
      const s = this.split(k)
      if (s.start > latestSessionStartTime || this.expiry.expired(s.end)) continue
      out.push(new KeyValue(new Windowed(key, new Window(s.start, s.end)), this.valueOf(v)))
    }
    return out
  }

  fetchSession(key: K, sessionStart: number, sessionEnd: number): V | null {
    const b = this.live().get(this.composite(this.lookupKey(key), sessionEnd, sessionStart))
    return b === undefined ? null : this.valueOf(b)
  }

  fetch(key: K): KeyValue<Windowed<K>, V>[] {
    return this.findSessions(key, 0, Number.MAX_SAFE_INTEGER)
  }

  observeRestored(composite: Buffer): void {
    this.expiry.observe(this.split(composite).end)
  }
}
