// Share sessions (KIP-932, Kafka's ShareSessionCache): one per (share group, member) on each broker a
// member fetches from. ShareFetch with epoch 0 opens one (replacing the member's old one) naming its
// partitions; each later ShareFetch or ShareAcknowledge carries the session's epoch, adds partitions
// (ShareFetch topics) and forgets some (ForgottenTopicsData), and moves the epoch on (wrapping to 1);
// epoch -1 closes it. A session is tied to the connection it was last used on: once that connection is
// closed, the session is gone and the member's records are released (Kafka 4.1 does the same).
//
// The cache is bounded by group.share.max.share.sessions: a member opening one more session is refused
// SHARE_SESSION_LIMIT_REACHED, after the sessions of closed connections are dropped.

/** The epoch that opens a session. */
export const SHARE_INITIAL_EPOCH = 0
/** The epoch that closes a session. */
export const SHARE_FINAL_EPOCH = -1

/** The epoch after `epoch` (Kafka's ShareRequestMetadata.nextEpoch: wraps to 1, never back to 0). */
export function nextShareEpoch(epoch: number): number {
  if (epoch < 0) return SHARE_FINAL_EPOCH
  if (epoch >= 0x7fffffff) return 1
  return epoch + 1
}

/** What a session needs of a connection: whether it is still open. */
export interface SessionConnection {
  readonly isClosed: boolean
}

export interface ShareSessionPartition {
  topicId: string
  partition: number
}

export function sharePartitionKey(topicId: string, partition: number): string {
  return `${topicId}:${partition}`
}

export class ShareSession {
  /** The epoch the next request must carry. */
  epoch = 1
  readonly partitions = new Map<string, ShareSessionPartition>()
  lastUsedMs: number

  constructor(
    readonly group: string,
    readonly memberId: string,
    public connection: SessionConnection | undefined,
    now: number,
  ) {
    this.lastUsedMs = now
  }

  add(topicId: string, partition: number): void {
    const key = sharePartitionKey(topicId, partition)
    if (!this.partitions.has(key)) this.partitions.set(key, { topicId, partition })
  }

  forget(topicId: string, partition: number): void {
    this.partitions.delete(sharePartitionKey(topicId, partition))
  }
}

export class ShareSessionCache {
  readonly #sessions = new Map<string, ShareSession>()

  constructor(private readonly maxSessions: () => number) {}

  get size(): number {
    return this.#sessions.size
  }

  get(group: string, memberId: string): ShareSession | undefined {
    return this.#sessions.get(sessionKey(group, memberId))
  }

  values(): IterableIterator<ShareSession> {
    return this.#sessions.values()
  }

  /**
   * Opens a session for the member, replacing its old one (returned in `replaced`, its records are not
   * released: the member still holds them). `evicted` are sessions of closed connections dropped to make
   * room; undefined session when the cache is still full (SHARE_SESSION_LIMIT_REACHED).
   */
  create(group: string, memberId: string, connection: SessionConnection | undefined, now: number): { session: ShareSession | undefined; evicted: ShareSession[] } {
    const key = sessionKey(group, memberId)
    this.#sessions.delete(key)
    const evicted: ShareSession[] = []
    if (this.#sessions.size >= this.maxSessions()) evicted.push(...this.dropClosed())
    if (this.#sessions.size >= this.maxSessions()) return { session: undefined, evicted }
    const session = new ShareSession(group, memberId, connection, now)
    this.#sessions.set(key, session)
    return { session, evicted }
  }

  remove(session: ShareSession): void {
    const key = sessionKey(session.group, session.memberId)
    if (this.#sessions.get(key) === session) this.#sessions.delete(key)
  }

  /** Removes and returns the sessions whose connection has closed. */
  dropClosed(): ShareSession[] {
    const out: ShareSession[] = []
    for (const [key, s] of this.#sessions) {
      if (s.connection?.isClosed !== true) continue
      this.#sessions.delete(key)
      out.push(s)
    }
    return out
  }
}

function sessionKey(group: string, memberId: string): string {
  return `${group}\u0000${memberId}`
}
