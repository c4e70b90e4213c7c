// Making stores (Kafka's Stores, StoreBuilder and the *BytesStoreSupplier types): a supplier says where
// the bytes live (LMDB on disk, or memory) and, for windows and sessions, the retention; a builder adds
// the serdes and the changelog settings. The runtime calls build() once per task that uses the store.
import { TopologyException } from '../core/errors.js'
import type { Serde } from '../core/serdes.js'
import { CachingKeyValueStore, type ThreadCache } from './caching.js'
import { InMemoryBytesStore } from './in-memory.js'
import { LmdbBytesStore } from './lmdb.js'
import { LoggedBytesStore, type ChangelogPartition } from './logged.js'
import type { BytesStore, KeyValueStore, SessionStore, StateStore, TimestampedKeyValueStore, WindowStore } from './stores.js'
import { KeyValueStoreFacade, SessionStoreFacade, WindowStoreFacade, type InternalStore, type StoreKind } from './typed.js'

export interface BytesStoreSupplier {
  readonly name: string
  readonly persistent: boolean
  get(): BytesStore
}

export interface WindowBytesStoreSupplier extends BytesStoreSupplier {
  readonly retentionMs: number
  readonly windowSizeMs: number
  readonly retainDuplicates: boolean
}

export interface SessionBytesStoreSupplier extends BytesStoreSupplier {
  readonly retentionMs: number
}

function checkName(name: string): void {
  if (name === '' || !/^[a-zA-Z0-9._-]+$/.test(name)) throw new TopologyException(`store name '${name}' must be non-empty and use only ASCII letters, digits, '.', '_' and '-'`)
}

function kvSupplier(name: string, persistent: boolean): BytesStoreSupplier {
  checkName(name)
  return { name, persistent, get: () => (persistent ? new LmdbBytesStore(name) : new InMemoryBytesStore(name)) }
}

function windowSupplier(name: string, retentionMs: number, windowSizeMs: number, retainDuplicates: boolean, persistent: boolean): WindowBytesStoreSupplier {
  checkName(name)
  if (!(windowSizeMs > 0)) throw new RangeError(`window size of store '${name}' must be positive`)
  if (retentionMs < windowSizeMs) throw new RangeError(`retention period of store '${name}' (${retentionMs} ms) must be at least its window size (${windowSizeMs} ms)`)
  return { name, persistent, retentionMs, windowSizeMs, retainDuplicates, get: () => (persistent ? new LmdbBytesStore(name) : new InMemoryBytesStore(name)) }
}

function sessionSupplier(name: string, retentionMs: number, persistent: boolean): SessionBytesStoreSupplier {
  checkName(name)
  if (retentionMs < 0) throw new RangeError(`retention period of store '${name}' must not be negative`)
  return { name, persistent, retentionMs, get: () => (persistent ? new LmdbBytesStore(name) : new InMemoryBytesStore(name)) }
}

/** What the runtime passes to build(): where the store's files go and its changelog partition. */
export interface StoreContext {
  /** The task's directory for persistent stores (null in memory). */
  dir: string | null
  /** null when logging is disabled. */
  changelog: ChangelogPartition | null
  /** default.key.serde and default.value.serde, for builders made without serdes (the DSL's). */
  defaultKeySerde: Serde<unknown>
  defaultValueSerde: Serde<unknown>
  /** The thread's record cache (caching.ts); null or absent: no store caches. */
  cache?: ThreadCache | null
}

function serdes<K, V>(k: Serde<K> | undefined, v: Serde<V> | undefined, ctx: StoreContext): [Serde<K>, Serde<V>] {
  return [k ?? (ctx.defaultKeySerde as Serde<K>), v ?? (ctx.defaultValueSerde as Serde<V>)]
}

/** Builds one store per task (Kafka's StoreBuilder). */
export abstract class StoreBuilder<T extends StateStore> {
  loggingEnabled = true
  /** Key-value stores only (the record cache, caching.ts); off by default, as in Kafka, on for the DSL's aggregations. */
  cachingEnabled = false
  logConfig: Record<string, string> = {}
  abstract readonly kind: StoreKind

  constructor(readonly supplier: BytesStoreSupplier) {}

  get name(): string {
    return this.supplier.name
  }

  get persistent(): boolean {
    return this.supplier.persistent
  }

  withLoggingEnabled(config: Record<string, string> = {}): this {
    this.loggingEnabled = true
    this.logConfig = { ...config }
    return this
  }

  withLoggingDisabled(): this {
    this.loggingEnabled = false
    return this
  }

  /**
   * Puts a record cache in front of a key-value store (caching.ts): writes are deduplicated per key until
   * the commit. Window and session stores take no cache (their writes are still batched per commit, see logged.ts).
   */
  withCachingEnabled(): this {
    this.cachingEnabled = true
    return this
  }

  withCachingDisabled(): this {
    this.cachingEnabled = false
    return this
  }

  /** Opens a new store for one task. */
  build(ctx: StoreContext): T & InternalStore {
    const logged = new LoggedBytesStore(this.supplier.get(), this.loggingEnabled ? ctx.changelog : null)
    logged.open(this.supplier.persistent ? ctx.dir : null)
    return this.wrap(logged, ctx)
  }

  protected abstract wrap(logged: LoggedBytesStore, ctx: StoreContext): T & InternalStore

  /** Topic configs of the changelog beyond the defaults (window stores add retention). */
  changelogConfig(): Record<string, string> {
    return { 'cleanup.policy': 'compact', ...this.logConfig }
  }
}

export class KeyValueStoreBuilder<K, V> extends StoreBuilder<KeyValueStore<K, V>> {
  readonly kind: StoreKind = 'keyValue'
  constructor(supplier: BytesStoreSupplier, readonly keySerde: Serde<K> | undefined, readonly valueSerde: Serde<V> | undefined) {
    super(supplier)
  }
  protected wrap(logged: LoggedBytesStore, ctx: StoreContext): KeyValueStore<K, V> & InternalStore {
    return cached(this.cachingEnabled, new KeyValueStoreFacade(logged, ...serdes(this.keySerde, this.valueSerde, ctx), false), ctx)
  }
}

export class TimestampedKeyValueStoreBuilder<K, V> extends StoreBuilder<TimestampedKeyValueStore<K, V>> {
  readonly kind: StoreKind = 'timestampedKeyValue'
  constructor(supplier: BytesStoreSupplier, readonly keySerde: Serde<K> | undefined, readonly valueSerde: Serde<V> | undefined) {
    super(supplier)
  }
  protected wrap(logged: LoggedBytesStore, ctx: StoreContext): TimestampedKeyValueStore<K, V> & InternalStore {
    return cached(this.cachingEnabled, new KeyValueStoreFacade(logged, ...serdes(this.keySerde, this.valueSerde, ctx), true), ctx)
  }
}

/** The store, behind a record cache when caching is on and the thread has a cache budget. */
function cached<K, V>(enabled: boolean, store: KeyValueStoreFacade<K, V>, ctx: StoreContext): TimestampedKeyValueStore<K, V> & InternalStore {
  if (!enabled || ctx.cache == null || ctx.cache.maxBytes <= 0) return store
  return new CachingKeyValueStore(store, ctx.cache)
}

/** Kafka's windowstore.changelog.additional.retention.ms default: a day beyond the store's retention. */
const CHANGELOG_ADDITIONAL_RETENTION_MS = 86_400_000

export class WindowStoreBuilder<K, V> extends StoreBuilder<WindowStore<K, V>> {
  readonly kind: StoreKind = 'window'
  constructor(readonly windowSupplier: WindowBytesStoreSupplier, readonly keySerde: Serde<K> | undefined, readonly valueSerde: Serde<V> | undefined) {
    super(windowSupplier)
  }
  protected wrap(logged: LoggedBytesStore, ctx: StoreContext): WindowStore<K, V> & InternalStore {
    const s = this.windowSupplier
    return new WindowStoreFacade(logged, ...serdes(this.keySerde, this.valueSerde, ctx), s.retentionMs, s.windowSizeMs, s.retainDuplicates)
  }
  override changelogConfig(): Record<string, string> {
    // Duplicates (join windows) are never compacted away: each record is its own entry.
    return { 'cleanup.policy': this.windowSupplier.retainDuplicates ? 'delete' : 'compact,delete', 'retention.ms': String(this.windowSupplier.retentionMs + CHANGELOG_ADDITIONAL_RETENTION_MS), ...this.logConfig }
  }
}

export class SessionStoreBuilder<K, V> extends StoreBuilder<SessionStore<K, V>> {
  readonly kind: StoreKind = 'session'
  constructor(readonly sessionSupplier: SessionBytesStoreSupplier, readonly keySerde: Serde<K> | undefined, readonly valueSerde: Serde<V> | undefined) {
    super(sessionSupplier)
  }
  protected wrap(logged: LoggedBytesStore, ctx: StoreContext): SessionStore<K, V> & InternalStore {
    return new SessionStoreFacade(logged, ...serdes(this.keySerde, this.valueSerde, ctx), this.sessionSupplier.retentionMs)
  }
  override changelogConfig(): Record<string, string> {
    return { 'cleanup.policy': 'compact,delete', 'retention.ms': String(this.sessionSupplier.retentionMs + CHANGELOG_ADDITIONAL_RETENTION_MS), ...this.logConfig }
  }
}

/** Kafka's Stores factory. */
export const Stores = {
  persistentKeyValueStore: (name: string): BytesStoreSupplier => kvSupplier(name, true),
  persistentTimestampedKeyValueStore: (name: string): BytesStoreSupplier => kvSupplier(name, true),
  inMemoryKeyValueStore: (name: string): BytesStoreSupplier => kvSupplier(name, false),
  persistentWindowStore: (name: string, retentionMs: number, windowSizeMs: number, retainDuplicates = false): WindowBytesStoreSupplier => windowSupplier(name, retentionMs, windowSizeMs, retainDuplicates, true),
  persistentTimestampedWindowStore: (name: string, retentionMs: number, windowSizeMs: number, retainDuplicates = false): WindowBytesStoreSupplier => windowSupplier(name, retentionMs, windowSizeMs, retainDuplicates, true),
  inMemoryWindowStore: (name: string, retentionMs: number, windowSizeMs: number, retainDuplicates = false): WindowBytesStoreSupplier => windowSupplier(name, retentionMs, windowSizeMs, retainDuplicates, false),
  persistentSessionStore: (name: string, retentionMs: number): SessionBytesStoreSupplier => sessionSupplier(name, retentionMs, true),
  inMemorySessionStore: (name: string, retentionMs: number): SessionBytesStoreSupplier => sessionSupplier(name, retentionMs, false),
  keyValueStoreBuilder: <K, V>(supplier: BytesStoreSupplier, keySerde?: Serde<K>, valueSerde?: Serde<V>): KeyValueStoreBuilder<K, V> => new KeyValueStoreBuilder(supplier, keySerde, valueSerde),
  timestampedKeyValueStoreBuilder: <K, V>(supplier: BytesStoreSupplier, keySerde?: Serde<K>, valueSerde?: Serde<V>): TimestampedKeyValueStoreBuilder<K, V> => new TimestampedKeyValueStoreBuilder(supplier, keySerde, valueSerde),
  windowStoreBuilder: <K, V>(supplier: WindowBytesStoreSupplier, keySerde?: Serde<K>, valueSerde?: Serde<V>): WindowStoreBuilder<K, V> => new WindowStoreBuilder(supplier, keySerde, valueSerde),
  sessionStoreBuilder: <K, V>(supplier: SessionBytesStoreSupplier, keySerde?: Serde<K>, valueSerde?: Serde<V>): SessionStoreBuilder<K, V> => new SessionStoreBuilder(supplier, keySerde, valueSerde),
} as const
