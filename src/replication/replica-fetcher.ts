// A follower's fetcher from one source broker (Kafka's ReplicaFetcherThread and AbstractFetcherThread:
// num.replica.fetchers of them per leader broker, each partition on the one fetcherIdFor picks, each with
// its own connection). It fetches every partition it was given on that leader in one Fetch (this broker's replica id, replica.fetch.* sizes and wait), appends the
// leader's batches verbatim at their offsets, and takes the leader's high watermark and log start.
//
// Truncation by leader epoch: every fetch names the epoch of the follower's last batch (Fetch v12+
// lastFetchedEpoch); when the leader's log has that epoch ending earlier (or not at all), it answers the
// diverging epoch and its end offset instead of records, and the follower truncates to the smaller of
// that end and its own end of the same epoch, then fetches again from there. So a returning ex-leader
// drops exactly the tail the new leader does not have, never more (Kafka's fix of KIP-101/KIP-279 for
// the data loss of truncating to the high watermark).
// Without the diverging epoch in Fetch (the endpoint's truncatesOnFetch false: Fetch v11, inter.broker.
// protocol.version below 2.7) every partition starts in the truncating state, Kafka's pre-2.7 path
// (AbstractFetcherThread.truncateToEpochEndOffsets): before its first fetch the follower asks the leader
// with OffsetForLeaderEpoch for the end offset of its own latest epoch and truncates to the smaller of
// that and its own end of the epoch the leader answered; when the leader answered an older epoch than the
// follower's, it truncates to its own end of that older epoch and asks again; when the leader knows no
// epoch, it truncates to its high watermark.
// Out of range (the leader's log no longer has, or never had, the fetch offset): a follower ahead of
// the leader's log end truncates to it; one behind the leader's log start starts again, empty, there.
// Errors: FENCED_LEADER_EPOCH / NOT_LEADER_OR_FOLLOWER / UNKNOWN_TOPIC_OR_PARTITION wait for the
// controller's next word (the partition is retried after replica.fetch.backoff.ms); UNKNOWN_LEADER_EPOCH
// (the leader has not applied its LeaderAndIsr yet) is retried sooner. A connection that drops is opened
// again at once; a second drop within the backoff, or a failed connect, waits the backoff.
//
// Throttling (follower.replication.throttled.rate, KIP-73; Kafka's RemoteLeaderEndPoint.shouldFollowerThrottle
// and ReplicaFetcherThread.processPartitionData): the bytes fetched for every replica listed in
// follower.replication.throttled.replicas count against the rate, and while it is exceeded the listed
// partitions that are not in sync are left out of the fetches; the others are fetched as ever. In sync is
// the fetcher's own view, as Kafka's PartitionFetchState.isReplicaInSync: the partition's last answer
// brought it to the leader's high watermark (lag 0); a partition just added, or behind the HW its leader
// last answered, is not. Every answer's record bytes are counted once as ReplicationBytesInPerSec.
// Partitions are added and removed by the replica manager; removal waits until the answer being
// processed (if any) is done, so no append of an old leadership lands after a partition changed role.
import { ErrorCode } from '../domain/errors.js'
import type { Logger } from '../observability/logger.js'
import type { Counter } from '../observability/metrics.js'
import type { FollowerFetchAnswer, FollowerFetchResult, FollowerFetchSettings, FollowerLog, FollowerLogState, LeaderEndpoint } from './leader-endpoint.js'

export interface FetcherPartition {
  topic: string
  partition: number
  leaderEpoch: number
  /** The follower's LEO and newest epoch when fetching starts. */
  fetchOffset: number
  lastFetchedEpoch: number
  highWatermark: number
}

interface FetchState extends FetcherPartition {
  /** fetchKey(topic, partition) */
  key: string
  delayedUntil: number
  /** Waiting for truncation through OffsetForLeaderEpoch before fetching (a leader without Fetch v12). */
  truncating: boolean
  /**
   * The leader's high watermark minus the fetch offset after the last answer that brought records (or the
   * first answer); undefined before it. 0: in sync, never held back by the throttle.
   */
  lag: number | undefined
  /**
   * In the leader's fetch session with the parameters below (what it was last named with): an incremental
   * fetch names it again only when one of them changed (KIP-227).
   */
  inSession: boolean
  sentFetchOffset: number
  sentLeaderEpoch: number
  sentLastFetchedEpoch: number
  /** The fetch that last named it: its answer is applied only from that fetch, or while in the session. */
  sentRound: number
}

export interface ReplicaFetcherSettings extends FollowerFetchSettings {
  /** replica.fetch.max.bytes */
  partitionMaxBytes: number
  /** replica.fetch.backoff.ms */
  backoffMs: number
}

const UNKNOWN_EPOCH_RETRY_MS = 50
/** KIP-227: a full fetch (asks for a session; with a session id, closes that one first). */
const INITIAL_SESSION_EPOCH = 0
const SESSION_ERRORS: ReadonlySet<number> = new Set([ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH, ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR])

/** The session epoch after `epoch` (Kafka's FetchMetadata.nextEpoch: wraps to 1, never back to 0). */
function nextSessionEpoch(epoch: number): number {
  return epoch === 0x7fffffff ? 1 : epoch + 1
}
/** How long a fetcher with only throttled partitions waits before looking at the rate again. */
const THROTTLED_WAIT_MS = 100

/** The follower side of replication throttling (replication-quota.ts). */
export interface FollowerThrottle {
  /** The topic's follower.replication.throttled.replicas lists anything at all (else none of its partitions is throttled). */
  listsReplicas(topic: string): boolean
  /** This broker's replica is listed in the topic's follower.replication.throttled.replicas. */
  isThrottled(topic: string, partition: number): boolean
  isQuotaExceeded(): boolean
  record(bytes: number): void
}

/**
 * Which of num.replica.fetchers fetchers of a leader replicates a partition (Kafka's
 * AbstractFetcherManager.getFetcherId: Utils.abs(31 * topic.hashCode + partition) % numFetchers, with
 * Java's String.hashCode and int arithmetic), so the partitions spread over the fetchers as in Kafka.
 */
export function fetcherIdFor(topic: string, partition: number, numFetchers: number): number {
  let h = 0
  for (let i = 0; i < topic.length; i++) h = (Math.imul(31, h) + topic.charCodeAt(i)) | 0
  const v = (Math.imul(31, h) + partition) | 0
  return (v === -0x80000000 ? 0 : Math.abs(v)) % Math.max(1, numFetchers)
}

export function fetchKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`
}

export class ReplicaFetcher {
  readonly #partitions = new Map<string, FetchState>()
  #endpoint: LeaderEndpoint | undefined
  #processing: Promise<void> = Promise.resolve()
  #stopped = false
  #wake: (() => void) | undefined
  #loop: Promise<void> | undefined
  /** When a fetch last failed on an open connection (ms). */
  #lastDropAt = 0
  /** The leader's fetch session (KIP-227): its id (0: none) and the epoch the next fetch carries (0: a full fetch). */
  #sessionId = 0
  #sessionEpoch = INITIAL_SESSION_EPOCH
  /** Partitions the session holds that the next incremental fetch drops, by key. */
  readonly #forgotten = new Map<string, { topic: string; partition: number }>()
  #round = 0
  /** When the leader last answered with a session error (ms). */
  #lastSessionErrorAt = 0
  // What lets an incremental round skip walking every partition (100,000 partitions: a third of an idle
  // broker's busy time was this walk, twice a second per fetcher):
  /** Partitions whose position or epochs changed, or that are out of the session, since the last round. */
  readonly #changed = new Set<FetchState>()
  /** The latest delayedUntil given to any partition: before it, some partition may be held back. */
  #latestDelay = 0
  /** Some partition may be waiting to truncate (set with `truncating`; cleared by a walk that finds none). */
  #mayTruncate = false
  /** Partitions per topic, for the throttle's per-topic question. */
  readonly #topics = new Map<string, number>()

  constructor(
    readonly sourceBrokerId: number,
    private readonly connect: () => Promise<LeaderEndpoint>,
    private readonly log: FollowerLog,
    private readonly settings: ReplicaFetcherSettings,
    private readonly logger: Logger,
    private readonly throttle?: FollowerThrottle,
    /** ReplicationBytesInPerSec: the record bytes of every answer. */
    private readonly replicationBytesIn?: Counter,
  ) {}

  get partitionCount(): number {
    return this.#partitions.size
  }

  has(topic: string, partition: number): boolean {
    return this.#partitions.has(fetchKey(topic, partition))
  }

  /** Starts (or restarts) fetching these partitions. */
  add(partitions: readonly FetcherPartition[]): void {
    for (const p of partitions) {
      const key = fetchKey(p.topic, p.partition)
      // The leader's session may hold the old state's position: it is named again with the new one, or dropped.
      const previous = this.#partitions.get(key)
      if (previous?.inSession === true) this.#forgotten.set(key, { topic: p.topic, partition: p.partition })
      if (previous === undefined) this.#topics.set(p.topic, (this.#topics.get(p.topic) ?? 0) + 1)
      const state: FetchState = {
        ...p,
        key,
        delayedUntil: 0,
        truncating: true,
        lag: undefined,
        inSession: false,
        sentFetchOffset: -1,
        sentLeaderEpoch: -1,
        sentLastFetchedEpoch: -1,
        sentRound: 0,
      }
      this.#partitions.set(key, state)
      this.#changed.add(state)
      this.#mayTruncate = true
    }
    this.#wake?.()
    this.#loop ??= this.#run()
  }

  /** Stops fetching these partitions; resolves once no answer for them is being applied. */
  async remove(keys: readonly string[]): Promise<void> {
    for (const k of keys) {
      const s = this.#partitions.get(k)
      if (s === undefined) continue
      if (s.inSession) this.#forgotten.set(k, { topic: s.topic, partition: s.partition })
      this.#partitions.delete(k)
      this.#changed.delete(s)
      const left = (this.#topics.get(s.topic) ?? 1) - 1
      if (left > 0) this.#topics.set(s.topic, left)
      else this.#topics.delete(s.topic)
    }
    await this.#processing
  }

  /** Stops the fetcher; resolves when its loop has ended. */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#partitions.clear()
    this.#changed.clear()
    this.#topics.clear()
    this.#wake?.()
    this.#endpoint?.close()
    this.#endpoint = undefined
    await this.#loop
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      const now = Date.now()
      // An incremental round with nothing held back (no delay, truncation or throttle) names only what
      // changed: it need not walk every partition.
      const skipWalk = this.#sessionEpoch !== INITIAL_SESSION_EPOCH && !this.#mayTruncate && now >= this.#latestDelay && this.#partitions.size > 0 && !this.#anyTopicThrottled()
      const ready: FetchState[] = []
      let nextDelay = Infinity
      // Listed partitions (their bytes count against the rate); over the rate, those not in sync wait.
      // The quota is asked once per round, when a listed partition not in sync is first met.
      const throttled = new Set<FetchState>()
      let overQuota: boolean | undefined
      // Partitions that must truncate before they fetch (just added; a leader without Fetch v12).
      let truncating: FetchState[] | undefined
      // Whether the topic lists any throttled replica, asked once per run of partitions of one topic: this
      // loop visits every partition of the fetcher every round, tens of thousands at scale.
      let lastTopic: string | undefined
      let topicListed = false
      let anyTruncating = false
      if (!skipWalk) this.#changed.clear()
      for (const s of skipWalk ? [] : this.#partitions.values()) {
        if (s.truncating) anyTruncating = true
        if (this.throttle !== undefined && s.topic !== lastTopic) {
          lastTopic = s.topic
          topicListed = this.throttle.listsReplicas(s.topic)
        }
        const listed = topicListed && this.throttle!.isThrottled(s.topic, s.partition)
        if (listed) throttled.add(s)
        if (listed && s.lag !== 0 && (overQuota ??= this.throttle!.isQuotaExceeded())) nextDelay = Math.min(nextDelay, THROTTLED_WAIT_MS)
        else if (s.delayedUntil <= now) {
          ready.push(s)
          if (s.truncating) (truncating ??= []).push(s)
          continue
        } else nextDelay = Math.min(nextDelay, s.delayedUntil - now)
        // Not fetched this round: the session drops it (Kafka's fetch builder leaves it out), so the
        // leader stops reading it at a position that may no longer be the follower's.
        if (s.inSession) {
          s.inSession = false
          this.#forgotten.set(s.key, { topic: s.topic, partition: s.partition })
        }
        // Out of the session: a round that skips the walk must still name it once it is ready.
        this.#changed.add(s)
      }
      if (!skipWalk) this.#mayTruncate = anyTruncating
      if (!skipWalk && ready.length === 0) {
        await this.#sleep(Math.min(nextDelay, 1000))
        continue
      }
      try {
        if (this.#endpoint === undefined) {
          const endpoint = await this.connect()
          // stop() ran while connecting: it had no connection to close, so this one is closed here (an open
          // socket would keep the stopped broker's process alive).
          if (this.#stopped) {
            endpoint.close()
            break
          }
          this.#endpoint = endpoint
        }
      } catch (err) {
        this.logger.warn({ leader: this.sourceBrokerId, err: (err as Error).message }, 'cannot connect to the leader; retrying')
        await this.#sleep(this.settings.backoffMs)
        continue
      }
      // Partitions that must truncate first (OffsetForLeaderEpoch), one at a time, then fetch.
      const endpoint = this.#endpoint
      if (truncating !== undefined) {
        if (endpoint.truncatesOnFetch) {
          for (const s of truncating) s.truncating = false
        } else {
          const work = truncating.map((s) =>
            this.#truncateToEpochEndOffset(endpoint, s).catch((err: unknown) => {
              this.logger.warn({ topic: s.topic, partition: s.partition, err: (err as Error).message }, 'OffsetForLeaderEpoch failed; retrying')
              this.#delay(s, Date.now() + this.settings.backoffMs)
            }))
          this.#processing = Promise.all(work).then(() => undefined)
          await this.#processing
          continue
        }
      }
      // KIP-227: a full fetch names every ready partition; an incremental one those not in the session or
      // changed since last named, and the ones it drops.
      const full = this.#sessionEpoch === INITIAL_SESSION_EPOCH
      const round = ++this.#round
      const toSend: FetchState[] = []
      const candidates: Iterable<FetchState> = skipWalk ? this.#changed : ready
      for (const s of candidates) {
        if (skipWalk && this.#partitions.get(s.key) !== s) continue
        if (full || !s.inSession || s.sentFetchOffset !== s.fetchOffset || s.sentLeaderEpoch !== s.leaderEpoch || s.sentLastFetchedEpoch !== s.lastFetchedEpoch) toSend.push(s)
      }
      if (skipWalk) this.#changed.clear()
      for (const s of toSend) {
        this.#forgotten.delete(s.key)
        s.sentRound = round
        s.sentFetchOffset = s.fetchOffset
        s.sentLeaderEpoch = s.leaderEpoch
        s.sentLastFetchedEpoch = s.lastFetchedEpoch
      }
      const forgotten = full ? [] : [...this.#forgotten.values()]
      this.#forgotten.clear()
      let result: FollowerFetchResult
      try {
        result = await this.#endpoint.fetch(
          {
            sessionId: this.#sessionId,
            sessionEpoch: this.#sessionEpoch,
            partitions: toSend.map((s) => ({
              topic: s.topic,
              partition: s.partition,
              fetchOffset: s.fetchOffset,
              currentLeaderEpoch: s.leaderEpoch,
              lastFetchedEpoch: s.lastFetchedEpoch,
              maxBytes: this.settings.partitionMaxBytes,
            })),
            forgotten,
          },
          this.settings,
        )
      } catch (err) {
        if (this.#stopped) break
        this.logger.warn({ leader: this.sourceBrokerId, err: (err as Error).message }, 'fetch from the leader failed; reconnecting')
        this.#endpoint?.close()
        this.#endpoint = undefined
        // The next connection starts with a full fetch that closes this session (Kafka's nextCloseExisting).
        this.#resetSession(true)
        // The first drop in a while reconnects at once (a leader that is gone refuses the connect, which
        // backs off): a follower waiting replica.fetch.backoff.ms here held acks=all of the partitions it
        // is the other ISR member of for a second when its connection dropped during a controlled shutdown.
        const now = Date.now()
        const again = now - this.#lastDropAt < this.settings.backoffMs
        this.#lastDropAt = now
        if (again) await this.#sleep(this.settings.backoffMs)
        continue
      }
      if (result.errorCode !== ErrorCode.NONE) {
        // A session the leader no longer has (evicted, restarted) or an epoch it did not expect (a lost
        // answer): start again with a full fetch; a second such answer within the backoff waits it out.
        this.logger.info({ leader: this.sourceBrokerId, errorCode: result.errorCode, sessionId: this.#sessionId }, 'the leader refused the fetch session; fetching in full')
        this.#resetSession(result.errorCode !== ErrorCode.FETCH_SESSION_ID_NOT_FOUND && SESSION_ERRORS.has(result.errorCode))
        const now = Date.now()
        const again = now - this.#lastSessionErrorAt < this.settings.backoffMs || !SESSION_ERRORS.has(result.errorCode)
        this.#lastSessionErrorAt = now
        if (again) await this.#sleep(this.settings.backoffMs)
        continue
      }
      if (result.sessionId === 0) {
        // No session (the leader keeps none, or its cache is full; or an incremental fetch emptied it): the
        // next fetch is a full one.
        if (!full) this.#resetSession(false)
        this.#sessionId = 0
      } else {
        this.#sessionId = result.sessionId
        this.#sessionEpoch = full ? nextSessionEpoch(INITIAL_SESSION_EPOCH) : nextSessionEpoch(this.#sessionEpoch)
        for (const s of toSend) s.inSession = true
      }
      let received = 0
      let receivedThrottled = 0
      const work: Promise<void>[] = []
      for (const answer of result.answers) {
        const state = this.#partitions.get(fetchKey(answer.topic, answer.partition))
        // Only an answer to the position this follower named: in this fetch, or earlier and unchanged in the session.
        if (state === undefined || (state.sentRound !== round && !state.inSession)) continue
        if (answer.errorCode === ErrorCode.NONE) {
          received += answer.records.length
          if (throttled.has(state)) receivedThrottled += answer.records.length
        }
        work.push(this.#apply(state, state.sentFetchOffset, answer).catch((err: unknown) => {
          this.logger.error({ topic: state.topic, partition: state.partition, err: (err as Error).message }, 'cannot apply the leader\'s answer; retrying later')
          this.#delay(state, Date.now() + this.settings.backoffMs)
        }))
      }
      // One add per answer, not per partition.
      if (received > 0) this.replicationBytesIn?.inc(received)
      if (receivedThrottled > 0) this.throttle!.record(receivedThrottled)
      this.#processing = Promise.all(work).then(() => undefined)
      await this.#processing
    }
  }

  /**
   * Forgets the leader's session: the next fetch is a full one, closing the session it names when
   * `closeExisting` (Kafka's nextCloseExisting), or naming none.
   */
  #resetSession(closeExisting: boolean): void {
    this.#sessionEpoch = INITIAL_SESSION_EPOCH
    if (!closeExisting) this.#sessionId = 0
    this.#forgotten.clear()
    for (const s of this.#partitions.values()) s.inSession = false
  }

  /** Whether `state` is still the partition's current fetch state (not removed or replaced). */
  #current(state: FetchState): boolean {
    return !this.#stopped && this.#partitions.get(fetchKey(state.topic, state.partition)) === state
  }

  async #apply(s: FetchState, fetchOffset: number, a: FollowerFetchAnswer): Promise<void> {
    if (!this.#current(s) || s.fetchOffset !== fetchOffset) return
    switch (a.errorCode) {
      case ErrorCode.NONE:
        break
      case ErrorCode.OFFSET_OUT_OF_RANGE:
        await this.#outOfRange(s)
        return
      case ErrorCode.UNKNOWN_LEADER_EPOCH:
        this.#delay(s, Date.now() + UNKNOWN_EPOCH_RETRY_MS)
        return
      default:
        this.#delay(s, Date.now() + this.settings.backoffMs)
        return
    }
    if (a.divergingEpoch !== undefined && a.divergingEpoch.epoch >= 0) {
      const local = await this.log.endOffsetForEpoch(s.topic, s.partition, a.divergingEpoch.epoch)
      let target = Math.min(a.divergingEpoch.endOffset, s.fetchOffset)
      if (local.endOffset >= 0) target = Math.min(target, local.endOffset)
      this.logger.info({ topic: s.topic, partition: s.partition, from: s.fetchOffset, to: target, divergingEpoch: a.divergingEpoch.epoch }, 'truncating the log where it diverged from the leader\'s')
      if (!this.#current(s)) return
      this.#take(s, await this.log.truncate(s.topic, s.partition, target))
      return
    }
    // Kafka's fetch-state lag: set by answers with records, or by the first answer.
    const lagMoves = a.records.length > 0 || s.lag === undefined
    if (a.records.length === 0 && a.highWatermark <= s.highWatermark) {
      if (lagMoves) s.lag = Math.max(0, a.highWatermark - s.fetchOffset)
      return
    }
    if (!this.#current(s)) return
    const r = await this.log.append(s.topic, s.partition, a.records, a.highWatermark, a.logStartOffset)
    this.#take(s, r)
    if (r.lastEpoch >= 0 && s.lastFetchedEpoch !== r.lastEpoch) {
      s.lastFetchedEpoch = r.lastEpoch
      this.#changed.add(s)
    }
    if (lagMoves) s.lag = Math.max(0, a.highWatermark - s.fetchOffset)
  }

  /** One step of Kafka's pre-2.7 truncation (see the header); clears s.truncating when done. */
  async #truncateToEpochEndOffset(endpoint: LeaderEndpoint, s: FetchState): Promise<void> {
    const fetchOffset = s.fetchOffset
    let target: number
    let done = true
    if (s.lastFetchedEpoch < 0) {
      // No epoch known here: the high watermark is what is known to be committed.
      target = Math.min(s.highWatermark, fetchOffset)
    } else {
      const leader = await endpoint.epochEndOffset(s.topic, s.partition, s.leaderEpoch, s.lastFetchedEpoch)
      if (!this.#current(s) || s.fetchOffset !== fetchOffset) return
      if (leader.errorCode !== ErrorCode.NONE) {
        this.#delay(s, Date.now() + (leader.errorCode === ErrorCode.UNKNOWN_LEADER_EPOCH ? UNKNOWN_EPOCH_RETRY_MS : this.settings.backoffMs))
        return
      }
      if (leader.endOffset < 0) {
        target = Math.min(s.highWatermark, fetchOffset)
      } else if (leader.leaderEpoch < 0) {
        target = Math.min(leader.endOffset, fetchOffset)
      } else {
        const local = await this.log.endOffsetForEpoch(s.topic, s.partition, leader.leaderEpoch)
        if (local.endOffset < 0) {
          target = Math.min(leader.endOffset, fetchOffset)
        } else if (local.leaderEpoch !== leader.leaderEpoch) {
          // The leader's epoch is not ours: cut to where our older epoch ends and ask again.
          target = Math.min(local.endOffset, fetchOffset)
          done = target >= fetchOffset
        } else {
          target = Math.min(leader.endOffset, local.endOffset, fetchOffset)
        }
      }
    }
    if (!this.#current(s) || s.fetchOffset !== fetchOffset) return
    if (target < fetchOffset) {
      this.logger.info({ topic: s.topic, partition: s.partition, from: fetchOffset, to: target, epoch: s.lastFetchedEpoch }, 'truncating to the leader\'s epoch end offset (OffsetForLeaderEpoch)')
      this.#take(s, await this.log.truncate(s.topic, s.partition, target))
    }
    s.truncating = !done
  }

  async #outOfRange(s: FetchState): Promise<void> {
    const leader = await this.#endpoint!.offsets(s.topic, s.partition, s.leaderEpoch)
    if (!this.#current(s)) return
    if (leader.errorCode !== ErrorCode.NONE) {
      this.#delay(s, Date.now() + this.settings.backoffMs)
      return
    }
    if (leader.logEndOffset < s.fetchOffset) {
      // Ahead of the leader (an unclean election): its log end is where the logs can agree.
      this.logger.warn({ topic: s.topic, partition: s.partition, from: s.fetchOffset, to: leader.logEndOffset }, 'truncating to the leader\'s log end offset')
      this.#take(s, await this.log.truncate(s.topic, s.partition, leader.logEndOffset))
    } else {
      this.logger.warn({ topic: s.topic, partition: s.partition, at: leader.logStartOffset }, 'the leader no longer has the fetch offset; starting again at its log start offset')
      this.#take(s, await this.log.truncateFullyAndStartAt(s.topic, s.partition, leader.logStartOffset))
    }
  }

  #take(s: FetchState, r: FollowerLogState): void {
    s.fetchOffset = r.logEndOffset
    s.lastFetchedEpoch = r.latestEpoch
    s.highWatermark = r.highWatermark
    this.#changed.add(s)
  }

  /** Holds a partition back until `until` (ms). */
  #delay(s: FetchState, until: number): void {
    s.delayedUntil = until
    if (until > this.#latestDelay) this.#latestDelay = until
  }

  /** Whether any topic of this fetcher lists throttled replicas (a question per topic, not per partition). */
  #anyTopicThrottled(): boolean {
    if (this.throttle === undefined) return false
    for (const topic of this.#topics.keys()) if (this.throttle.listsReplicas(topic)) return true
    return false
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms)
      function done(): void {
        clearTimeout(timer)
        resolve()
      }
      this.#wake = () => {
        this.#wake = undefined
        done()
      }
    })
  }
}
