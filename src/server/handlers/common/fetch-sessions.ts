// Fetch sessions (KIP-227, Kafka's FetchSessionCache): a client that fetches the same partitions over and
// over opens a session with a full fetch (session id 0, epoch 0); the broker remembers each partition's
// fetch parameters and the high watermark and log start offset it last answered, and the client's
// incremental fetches (the session id, the next epoch) then name only the partitions whose parameters
// changed or that it adds or forgets. The broker answers only the partitions with something new.
//
// The cache is bounded by max.incremental.fetch.session.cache.slots (Kafka's default 1000; 0 turns
// sessions off). When it is full, a new session may evict, in Kafka's order: the least recently used
// session once it has been idle longer than the eviction time (120 s, Kafka's
// MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS); otherwise the "least valuable" evictable session, by
// (privileged, partition count, id), when the newcomer ranks above it. A session becomes evictable that
// way only once it was used when older than the eviction time; follower (privileged) sessions can only be
// evicted by other privileged ones until then. Nothing here survives a restart: clients whose session is
// gone get FETCH_SESSION_ID_NOT_FOUND and start over with a full fetch. A follower's session holds a
// watch over its partitions (01-fetch.ts), closed when the session is removed or evicted.
import { randomInt } from 'node:crypto'

/** Session id 0: no session (sessionless requests and answers). */
export const INVALID_SESSION_ID = 0
/** A full fetch that opens a session. */
export const INITIAL_EPOCH = 0
/** A full fetch that closes its session and opens none. */
export const FINAL_EPOCH = -1
/** Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS. */
export const SESSION_EVICTION_MS = 120_000

/** The epoch after `epoch` (Kafka's FetchMetadata.nextEpoch: wraps to 1, never back to 0). */
export function nextEpoch(epoch: number): number {
  if (epoch < 0) return FINAL_EPOCH
  if (epoch === 0x7fffffff) return 1
  return epoch + 1
}

/** One partition of a session: what the client asked last and what the broker answered last. */
export interface CachedPartition {
  /** The topic's name when the session names topics; resolved from the id otherwise ('' when unknown). */
  topic: string
  /** The topic id (sessions of Fetch v13+), else the zero uuid. */
  readonly topicId: string
  readonly partition: number
  fetchOffset: number
  maxBytes: number
  currentLeaderEpoch: number
  /** A follower's epoch of its last batch (Fetch v12+; -1 for consumers): the leader checks divergence with it. */
  lastFetchedEpoch: number
  /**
   * A follower session's partition to read at the next fetch whatever its watch says: named by the last
   * request, never answered, answered an error, its follower out of the ISR, or records left unsent.
   */
  readNext: boolean
  /** -1 until answered, and after an error: the partition is answered again once it is served. */
  highWatermark: number
  logStartOffset: number
}

/** The key of a session partition: by id for Fetch v13+ sessions, by name before. */
export function partitionKey(usesTopicIds: boolean, topic: string, topicId: string, partition: number): string {
  return `${usesTopicIds ? topicId : topic}\u0000${partition}`
}

/**
 * A standing watch over partitions for a follower's fetch session (KIP-227; delayed-fetch.ts): which of them
 * got records, a new HW or log start offset, an ISR or a leadership change since takeChanged() was last
 * called. Keys are `${topic}\u0000${partition}`.
 */
export interface PartitionWatchPort {
  add(key: string): void
  delete(key: string): void
  takeChanged(): ReadonlySet<string>
  /** True at once when something changed since takeChanged(), else when a partition gets records; false after timeoutMs. */
  wait(timeoutMs: number): Promise<boolean>
  close(): void
}

export class FetchSession {
  /** Session partitions in fetch order; one with new data moves to the end (round robin, as Kafka). */
  readonly partitions = new Map<string, CachedPartition>()
  lastUsedMs: number
  /** The epoch the next incremental request must carry. */
  epoch: number
  /** When every partition of the session was last read (a follower session's sweep). */
  lastSweepMs: number
  /** Set at each use: whether any newcomer may evict it, and whether a privileged one may. */
  evictableByAll = false
  evictableByPrivileged = false
  /**
   * A follower's session (by topic name) watches its partitions: an incremental fetch reads those that
   * changed, not all (PartitionWatchPort); closed with the session.
   */
  watch: PartitionWatchPort | undefined = undefined

  constructor(
    readonly id: number,
    /**
     * The follower that opened it (replica id >= 0; privileged: evicted by consumers only once old), or -1
     * for a consumer's. Only the same kind of fetch, from the same replica, may continue a session.
     */
    readonly replicaId: number,
    readonly usesTopicIds: boolean,
    readonly creationMs: number,
  ) {
    this.lastUsedMs = creationMs
    this.lastSweepMs = creationMs
    this.epoch = nextEpoch(INITIAL_EPOCH)
  }

  /** Opened by a follower: evicted by consumers only once old. */
  get privileged(): boolean {
    return this.replicaId >= 0
  }

  get size(): number {
    return this.partitions.size
  }
}

export class FetchSessionCache {
  readonly #sessions = new Map<number, FetchSession>()
  /** The same sessions, least recently used first (Map order; a use moves one to the end). */
  readonly #byLastUse = new Map<number, FetchSession>()
  #evictions = 0

  constructor(
    /** max.incremental.fetch.session.cache.slots */
    private readonly maxEntries: number,
    private readonly evictionMs = SESSION_EVICTION_MS,
  ) {}

  get size(): number {
    return this.#sessions.size
  }

  /** Sessions evicted to make room so far (Kafka's IncrementalFetchSessionEvictionsPerSec, as a count). */
  get evictions(): number {
    return this.#evictions
  }

  /** Partitions held by all sessions (Kafka's NumIncrementalFetchPartitionsCached). */
  get cachedPartitions(): number {
    let n = 0
    for (const s of this.#sessions.values()) n += s.size
    return n
  }

  get(id: number): FetchSession | undefined {
    return this.#sessions.get(id)
  }

  /**
   * Opens a session for a full fetch of `size` partitions (by a follower when replicaId >= 0) when there
   * is room or something may be evicted; `fill` then adds its partitions. Undefined when the cache keeps what it has (the fetch is
   * answered without a session, id 0).
   */
  create(now: number, replicaId: number, usesTopicIds: boolean, size: number, fill: (session: FetchSession) => void): FetchSession | undefined {
    if (this.#sessions.size >= this.maxEntries && !this.#tryEvict(replicaId >= 0, size, now)) return undefined
    const session = new FetchSession(this.#newId(), replicaId, usesTopicIds, now)
    fill(session)
    this.#sessions.set(session.id, session)
    this.touch(session, now)
    return session
  }

  remove(id: number): boolean {
    const s = this.#sessions.get(id)
    if (s === undefined) return false
    this.#sessions.delete(id)
    this.#byLastUse.delete(id)
    s.watch?.close()
    return true
  }

  /** Marks a use: last-used time, and whether the session may now be evicted (Kafka's touch). */
  touch(session: FetchSession, now: number): void {
    session.lastUsedMs = now
    this.#byLastUse.delete(session.id)
    this.#byLastUse.set(session.id, session)
    const old = now - session.creationMs > this.evictionMs
    session.evictableByAll = old
    session.evictableByPrivileged = !session.privileged || old
  }

  #newId(): number {
    for (;;) {
      const id = randomInt(1, 0x7fffffff)
      if (!this.#sessions.has(id)) return id
    }
  }

  /** Kafka's FetchSessionCacheShard.tryEvict. */
  #tryEvict(privileged: boolean, size: number, now: number): boolean {
    const lru = this.#byLastUse.values().next()
    if (lru.done === true) return false
    if (now - lru.value.lastUsedMs > this.evictionMs) {
      this.remove(lru.value.id)
      this.#evictions++
      return true
    }
    // The least valuable evictable session, by (privileged, size, id).
    let least: FetchSession | undefined
    for (const s of this.#sessions.values()) {
      if (!(privileged ? s.evictableByPrivileged : s.evictableByAll)) continue
      if (least === undefined || compareValue(s.privileged, s.size, s.id, least) < 0) least = s
    }
    // The newcomer's key is (privileged, size, 0): it must rank at least as high as the one it evicts.
    if (least === undefined || compareValue(privileged, size, 0, least) < 0) return false
    this.remove(least.id)
    this.#evictions++
    return true
  }
}

function compareValue(privileged: boolean, size: number, id: number, other: FetchSession): number {
  if (privileged !== other.privileged) return privileged ? 1 : -1
  if (size !== other.size) return size - other.size
  return id - other.id
}
