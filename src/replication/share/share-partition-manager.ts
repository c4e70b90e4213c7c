// The share-partitions this broker leads and the share sessions of the members fetching from it
// (KIP-932, Kafka's SharePartitionManager): what ShareFetch and ShareAcknowledge do once the handler has
// checked the request, its session, authorization and leadership.
//
// * A share-partition (share-partition.ts) is loaded on first use for a (group, topic id, partition) from
//   the persister, and only when its state was initialized there: the group coordinator initializes it
//   when it assigns the partition to a member of the group (as Kafka's does). Any other is answered
//   UNKNOWN_TOPIC_OR_PARTITION and nothing is made, in memory or in the persister. State initialized
//   without a start offset (-1) starts at the group's share.auto.offset.reset (latest by default: the
//   high watermark; earliest: the log start offset; by_duration: the first offset at or after now minus
//   the duration), saved at once.
// * Idle share-partitions (nothing acquired, no session naming them, no fetch or save under way) leave
//   memory after memoryLimits.idleMs, and the least recently used idle ones as soon as more than
//   memoryLimits.maxPartitions are held; their state is in the persister and the next use loads it.
// * A fetch reads each partition from its next fetch offset through the same partition service as Fetch
//   (whole batches as file regions, never read into memory), reads only the batch headers to know the
//   offsets, acquires up to MaxRecords records for the member, and answers the batches holding them with
//   AcquiredRecords. MaxBytes bounds the answer except that the first partition with records gets one
//   whole batch (MaxBytes 0: no records). With less than MinBytes to give, it waits up to MaxWaitMs for
//   new records (the high watermark moving) or released ones (acknowledged RELEASE, lock timeouts,
//   closed sessions), and acquires only when it answers.
// * share.isolation.level=read_committed reads up to the last stable offset; control batches are never
//   acquired under either level, nor aborted transactions' batches under read_committed.
// * Locks: one timer for the earliest lock deadline of every share-partition; when it fires, due locks end.
// * A share-partition whose leadership leaves this broker is saved and dropped; the next use loads it again.
// * A save that fails drops the copy held here (see #save): memory never keeps a change the persister
//   refused, so an acknowledgement answered with an error is undone and its records are delivered again.
import { readSync } from 'node:fs'
import { ErrorCode } from '../../domain/errors.js'
import type { FileRegion } from '../../domain/file-region.js'
import type { Outcome } from '../../domain/outcome.js'
import type { ConfigValue } from '../../config/index.js'
import {
  BATCH_LENGTH_OFFSET, CONTROL_MASK, LOG_OVERHEAD, MIN_BATCH_LENGTH, PRODUCER_ID_OFFSET, RECORD_BATCH_OVERHEAD, TRANSACTIONAL_MASK, batchInfoAt, readInt64,
} from '../../protocol/records/batch.js'
import { parseIsoDuration } from '../../config/group-configs.js'
import type { ShardReadResult } from '../../shard/router.js'
import type { ReplicaManager } from '../replica-manager.js'
import { SharePartition, type AcknowledgementBatch, type AcquiredRange, type BatchHeader, type ShareLimits } from './share-partition.js'
import {
  SHARE_FINAL_EPOCH, SHARE_INITIAL_EPOCH, ShareSessionCache, nextShareEpoch, type SessionConnection, type ShareSession,
} from './share-sessions.js'
import type { SharePersister, ShareStateKey } from './share-state-persister.js'

export type { ShareSession }

/** What the manager reads of the log (the replica manager, as the Fetch handler reads it). */
export type ShareLogPort = Pick<ReplicaManager, 'read' | 'releaseLeases' | 'waitForAppends' | 'listOffsets'> &
  /** The partition's leader epoch when a share-partition is loaded (its persister writes are fenced by it); optional. */
  Partial<Pick<ReplicaManager, 'hosted'>>

export interface ShareConfigPort {
  /** A broker config's int value now (group.share.delivery.count.limit, ...). */
  brokerInt(name: string): number
  /** A group config's effective value (share.record.lock.duration.ms, share.auto.offset.reset, ...). */
  group(group: string, name: string): ConfigValue
}

/** One share-partition named by a request, resolved by the handler. */
export interface SharePartitionRef {
  topic: string
  topicId: string
  partition: number
}

export interface ShareAcknowledgeItem extends SharePartitionRef {
  batches: readonly AcknowledgementBatch[]
}

export interface ShareFetchParams {
  group: string
  memberId: string
  maxWaitMs: number
  minBytes: number
  maxBytes: number
  maxRecords: number
  /** When the request arrived (ms): MaxWaitMs counts from there. */
  receivedAt: number
  /** True once nobody waits for the answer (the connection closed). */
  abandoned(): boolean
}

export interface ShareFetchPartitionResult extends SharePartitionRef {
  errorCode: number
  /** The whole batches holding the acquired records (empty when none). */
  records: FileRegion[]
  acquired: AcquiredRange[]
}

export interface ShareFetchAnswer {
  partitions: ShareFetchPartitionResult[]
  /** Reads whose segments stay pinned until the answer is written (releaseLeases). */
  held: ShardReadResult[]
}

/** The outcome of a session step: the session, or the error that answers the request. */
export type ShareSessionStep = { errorCode: 0; session: ShareSession; final: boolean } | { errorCode: number; session?: undefined }

/** What the ShareFetch and ShareAcknowledge handlers use (handlers/common/ports.ts re-exports it). */
export type SharePartitionService = Pick<
  SharePartitionManager,
  'beginRequest' | 'closeSession' | 'acknowledge' | 'fetch' | 'releaseLeases' | 'lockDurationMs'
>

interface Entry {
  readonly key: string
  readonly stateKey: ShareStateKey
  readonly topic: string
  readonly tp: string
  sp: SharePartition | undefined
  loading: Promise<SharePartition> | undefined
  stateEpoch: number
  /** The partition's leader epoch when the share-partition was loaded (-1: unknown), sent with its reads and writes. */
  leaderEpoch: number
  /** When a request last used it (ms). */
  lastUsedMs: number
  /** Writes of its state not yet settled. */
  saving: number
  /** Fetches using it now. */
  busy: number
}

/** How long a share-partition idle (nothing acquired, no session, no save under way) stays in memory, and how many are held before the idle go. */
export interface ShareMemoryLimits {
  idleMs: number
  maxPartitions: number
}

const DEFAULT_MEMORY_LIMITS: ShareMemoryLimits = { idleMs: 5 * 60_000, maxPartitions: 10_000 }

/** A batch read, with where its bytes are. */
interface ReadBatch extends BatchHeader {
  region: number
  position: number
  size: number
}

const SESSION_SWEEP_MS = 1000
const header = Buffer.allocUnsafe(RECORD_BATCH_OVERHEAD)

export class SharePartitionManager {
  readonly #entries = new Map<string, Entry>()
  /** topic\0partition -> the entries of that partition (every group). */
  readonly #byPartition = new Map<string, Set<Entry>>()
  /** topic\0partition -> the persisted states of that partition, kept or not (deleted with the partition). */
  readonly #persisted = new Map<string, Map<string, ShareStateKey>>()
  readonly #sessions: ShareSessionCache
  /** Fetches waiting for released records, by entry key. */
  readonly #waiters = new Map<string, Set<() => void>>()
  #lockTimer: NodeJS.Timeout | undefined
  #lockTimerAt = Infinity
  #sessionSweep: NodeJS.Timeout | undefined
  #idleSweep: NodeJS.Timeout | undefined
  /** The bounds of dropIdle (changeable, for tests and tuning). */
  memoryLimits: ShareMemoryLimits
  #closed = false

  constructor(
    private readonly log: ShareLogPort,
    private readonly persister: SharePersister,
    private readonly configs: ShareConfigPort,
    private readonly now: () => number = Date.now,
    memory: Partial<ShareMemoryLimits> = {},
  ) {
    this.#sessions = new ShareSessionCache(() => configs.brokerInt('group.share.max.share.sessions'))
    this.memoryLimits = { ...DEFAULT_MEMORY_LIMITS, ...memory }
  }

  /** Records acquired again after an earlier delivery (delivery count above 1), in all. */
  redeliveredRecords = 0
  /** Records whose acquisition lock timed out, in all (share-partitions dropped from memory included). */
  lockTimeouts = 0

  /** The share-partitions held in memory with their in-flight record counts (what /metrics shows). */
  inFlight(): { group: string; topic: string; partition: number; records: number }[] {
    const out: { group: string; topic: string; partition: number; records: number }[] = []
    for (const e of this.#entries.values()) if (e.sp !== undefined) out.push({ group: e.stateKey.group, topic: e.topic, partition: e.stateKey.partition, records: e.sp.inFlightCount })
    return out
  }

  /** Share-partitions held in memory. */
  get size(): number {
    return this.#entries.size
  }

  get sessionCount(): number {
    return this.#sessions.size
  }

  /** The group's acquisition lock duration (AcquisitionLockTimeoutMs). */
  lockDurationMs(group: string): number {
    return this.configs.group(group, 'share.record.lock.duration.ms') as number
  }

  // -------------------------------------------------------------------------------------------------
  // Sessions

  /**
   * The session step of a ShareFetch (`fetch`) or ShareAcknowledge: epoch 0 opens a session (ShareFetch
   * only: ShareAcknowledge gets INVALID_SHARE_SESSION_EPOCH), -1 names the session to close after the
   * request (`final`), any other must be the session's epoch, which then moves on.
   */
  beginRequest(group: string, memberId: string, epoch: number, connection: SessionConnection | undefined, fetch: boolean): ShareSessionStep {
    const now = this.now()
    if (epoch === SHARE_INITIAL_EPOCH) {
      if (!fetch) return { errorCode: ErrorCode.INVALID_SHARE_SESSION_EPOCH }
      const { session, evicted } = this.#sessions.create(group, memberId, connection, now)
      for (const s of evicted) this.#releaseSessionRecords(s)
      if (session === undefined) return { errorCode: ErrorCode.SHARE_SESSION_LIMIT_REACHED }
      this.#startSessionSweep()
      return { errorCode: 0, session, final: false }
    }
    const session = this.#sessions.get(group, memberId)
    if (session === undefined) return { errorCode: ErrorCode.SHARE_SESSION_NOT_FOUND }
    if (epoch === SHARE_FINAL_EPOCH) return { errorCode: 0, session, final: true }
    if (epoch !== session.epoch) return { errorCode: ErrorCode.INVALID_SHARE_SESSION_EPOCH }
    session.epoch = nextShareEpoch(session.epoch)
    session.lastUsedMs = now
    if (connection !== undefined) session.connection = connection
    return { errorCode: 0, session, final: false }
  }

  /** Closes a session (epoch -1, after its final acknowledgements): the member's records are released. */
  closeSession(session: ShareSession): void {
    this.#sessions.remove(session)
    this.#releaseSessionRecords(session)
  }

  /**
   * Releases what a member holds in every share-partition of its group here (its session closed, its
   * connection closed, or it left the group).
   */
  releaseMember(group: string, memberId: string): void {
    const limits = this.#limits()
    for (const e of this.#entries.values()) {
      if (e.stateKey.group !== group || e.sp === undefined) continue
      if (e.sp.releaseMember(memberId, limits)) this.#wake(e.key)
      void this.#save(e)
    }
    this.#scheduleLocks()
  }

  #releaseSessionRecords(session: ShareSession): void {
    this.releaseMember(session.group, session.memberId)
  }

  /** Sessions of closed connections end (their records released) within SESSION_SWEEP_MS. */
  #startSessionSweep(): void {
    if (this.#sessionSweep !== undefined || this.#closed) return
    this.#sessionSweep = setInterval(() => {
      for (const s of this.#sessions.dropClosed()) this.#releaseSessionRecords(s)
      if (this.#sessions.size === 0) {
        clearInterval(this.#sessionSweep)
        this.#sessionSweep = undefined
      }
    }, SESSION_SWEEP_MS)
    this.#sessionSweep.unref()
  }

  // -------------------------------------------------------------------------------------------------
  // Acknowledgements

  /** Applies acknowledgements, one error code (and message) per item, in order. */
  async acknowledge(group: string, memberId: string, items: readonly ShareAcknowledgeItem[]): Promise<{ errorCode: number; message: string | null }[]> {
    const out: { errorCode: number; message: string | null }[] = []
    const saves: Promise<void>[] = []
    const limits = this.#limits()
    for (const item of items) {
      const loaded = await this.#load(group, item)
      if (!loaded.ok) {
        out.push({ errorCode: loaded.errorCode, message: loaded.message })
        continue
      }
      const { entry, sp } = loaded.value
      const result = sp.acknowledge(memberId, item.batches, limits)
      if (!result.ok) {
        out.push({ errorCode: result.errorCode, message: result.message })
        continue
      }
      if (result.released) this.#wake(entry.key)
      // Answered once the state is saved (Kafka's acknowledgement completes with the persister's write).
      const at = out.length
      out.push({ errorCode: ErrorCode.NONE, message: null })
      saves.push(this.#save(entry).then((failed) => {
        if (failed !== undefined) out[at] = failed
      }))
    }
    this.#scheduleLocks()
    await Promise.all(saves)
    return out
  }

  // -------------------------------------------------------------------------------------------------
  // Fetch

  /** Acquires records for the member from the partitions (see the file header); one result per partition. */
  async fetch(params: ShareFetchParams, parts: readonly SharePartitionRef[]): Promise<ShareFetchAnswer> {
    const results: ShareFetchPartitionResult[] = parts.map((p) => ({ ...p, errorCode: ErrorCode.NONE, records: [], acquired: [] }))
    const loaded: ({ entry: Entry; sp: SharePartition } | undefined)[] = []
    for (const r of results) {
      const l = await this.#load(params.group, r)
      if (l.ok) {
        loaded.push(l.value)
        l.value.entry.busy++
      } else {
        r.errorCode = l.errorCode
        loaded.push(undefined)
      }
    }
    try {
      return await this.#fetchLoaded(params, results, loaded)
    } finally {
      for (const l of loaded) if (l !== undefined) l.entry.busy--
    }
  }

  async #fetchLoaded(
    params: ShareFetchParams,
    results: ShareFetchPartitionResult[],
    loaded: readonly ({ entry: Entry; sp: SharePartition } | undefined)[],
  ): Promise<ShareFetchAnswer> {
    const deadline = params.receivedAt + Math.max(0, params.maxWaitMs)
    const isolation = this.configs.group(params.group, 'share.isolation.level') === 'read_committed' ? 'read_committed' : 'read_uncommitted'
    for (;;) {
      const limits = this.#limits()
      // MaxBytes 0 gives no records; the fetch still waits as a long poll would.
      const reading: number[] = []
      if (params.maxBytes > 0) {
        for (let i = 0; i < loaded.length; i++) {
          const l = loaded[i]
          if (l === undefined || results[i]!.errorCode !== ErrorCode.NONE) continue
          // Dropped while this fetch waited: the leadership moved away.
          if (l.entry.sp !== l.sp) results[i]!.errorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER
          else if (l.sp.canAcquire(limits)) reading.push(i)
        }
      }
      const reads = reading.length === 0 ? [] : await this.log.read(reading.map((i) => ({
        topic: results[i]!.topic, partition: results[i]!.partition, offset: loaded[i]!.sp.nextFetchOffset(), maxBytes: params.maxBytes, isolation,
      })))
      // From here to the answer nothing awaits: what was read is acquired before anyone else can move.
      let bytes = 0
      for (const r of reads) if (r.ok) bytes += r.value.bytes
      const remaining = deadline - this.now()
      // MinBytes 0 answers at once, with or without records (as Fetch does).
      const noWait = params.minBytes <= 0 || remaining <= 0 || params.abandoned() || this.#closed
      if (noWait || (bytes > 0 && bytes >= params.minBytes)) {
        const held = this.#acquire(params, reading, reads, loaded, results, limits)
        if (noWait || held.some((h) => h !== undefined)) {
          this.#scheduleLocks()
          return { partitions: results, held: held.filter((h): h is ShardReadResult => h !== undefined) }
        }
        // Read but nothing left to take (another member was quicker): wait for more.
      } else {
        const leases = reads.flatMap((r) => (r.ok && r.value.regions.length > 0 ? [r.value] : []))
        if (leases.length > 0) this.log.releaseLeases(leases)
      }
      for (let i = 0; i < reads.length; i++) {
        const r = reads[i]!
        const l = loaded[reading[i]!]!
        if (r.ok) l.sp.advanceToLogStart(r.value.logStartOffset)
        else if (r.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) await this.#catchUpLogStart(results[reading[i]!]!, l.sp)
        else results[reading[i]!]!.errorCode = r.errorCode
      }
      if (results.some((r) => r.errorCode !== ErrorCode.NONE)) return { partitions: results, held: [] }
      const wait = Math.max(0, deadline - this.now())
      if (wait <= 0) continue
      await this.#waitForRecords(results, loaded, wait)
    }
  }

  /** Lets go of the segments behind an answer's records (once written). */
  releaseLeases(held: readonly ShardReadResult[]): void {
    if (held.length > 0) this.log.releaseLeases(held)
  }

  /** Acquires from the reads; answers, at the index of each read, the read when its regions are kept. */
  #acquire(
    params: ShareFetchParams,
    reading: readonly number[],
    reads: readonly Outcome<ShardReadResult>[],
    loaded: readonly ({ entry: Entry; sp: SharePartition } | undefined)[],
    results: ShareFetchPartitionResult[],
    limits: ShareLimits,
  ): (ShardReadResult | undefined)[] {
    const held: (ShardReadResult | undefined)[] = []
    const release: ShardReadResult[] = []
    let budget = params.maxBytes
    let recordsLeft = Math.max(1, params.maxRecords)
    let first = true
    const lockUntil = this.now() + this.lockDurationMs(params.group)
    for (let k = 0; k < reads.length; k++) {
      const r = reads[k]!
      const i = reading[k]!
      const result = results[i]!
      const { entry, sp } = loaded[i]!
      if (!r.ok) {
        if (r.errorCode !== ErrorCode.OFFSET_OUT_OF_RANGE) result.errorCode = r.errorCode
        held.push(undefined)
        continue
      }
      const read = r.value
      sp.advanceToLogStart(read.logStartOffset)
      let kept = false
      if (read.bytes > 0 && recordsLeft > 0 && (budget > 0 || first)) {
        // No more can be taken than the in-flight window holds: a hostile MaxRecords must not make the walk long.
        const batches = walkBatches(read, Math.min(recordsLeft, limits.maxInFlightRecords), first ? Math.max(budget, 1) : budget, first, 2 * limits.maxInFlightRecords)
        const acquired = sp.acquire(params.memberId, batches, recordsLeft, lockUntil, limits)
        for (const a of acquired) if (a.deliveryCount > 1) this.redeliveredRecords += a.lastOffset - a.firstOffset + 1
        if (acquired.length > 0) {
          result.acquired = acquired
          result.records = regionsFor(read.regions, batches, acquired)
          for (const c of result.records) budget -= c.length
          for (const a of acquired) recordsLeft -= a.lastOffset - a.firstOffset + 1
          first = false
          kept = true
        }
        // Archived control or aborted records may have moved the SPSO: saved with the rest.
        void this.#save(entry)
      }
      if (kept) held.push(read)
      else {
        held.push(undefined)
        if (read.regions.length > 0) release.push(read)
      }
    }
    if (release.length > 0) this.log.releaseLeases(release)
    return held
  }

  /** The log start passed the share-partition's fetch offset (DeleteRecords, retention): the SPSO follows it. */
  async #catchUpLogStart(ref: SharePartitionRef, sp: SharePartition): Promise<void> {
    const [earliest] = await this.log.listOffsets([{ topic: ref.topic, partition: ref.partition, timestamp: -2 }])
    if (earliest !== undefined && earliest.ok && earliest.value.offset >= 0) sp.advanceToLogStart(earliest.value.offset)
  }

  /** Waits until one of the partitions gets records or releases some, or timeoutMs passes. */
  async #waitForRecords(results: readonly ShareFetchPartitionResult[], loaded: readonly ({ entry: Entry } | undefined)[], timeoutMs: number): Promise<void> {
    const keys: string[] = []
    for (const l of loaded) if (l !== undefined) keys.push(l.entry.key)
    let wake!: () => void
    const released = new Promise<void>((resolve) => (wake = resolve))
    for (const k of keys) {
      let set = this.#waiters.get(k)
      if (set === undefined) this.#waiters.set(k, (set = new Set()))
      set.add(wake)
    }
    try {
      const tps = results.filter((_, i) => loaded[i] !== undefined).map((r) => ({ topic: r.topic, partition: r.partition }))
      await Promise.race([released, this.log.waitForAppends(tps, timeoutMs)])
    } finally {
      for (const k of keys) {
        const set = this.#waiters.get(k)
        set?.delete(wake)
        if (set?.size === 0) this.#waiters.delete(k)
      }
    }
  }

  #wake(key: string): void {
    const set = this.#waiters.get(key)
    if (set !== undefined) for (const w of [...set]) w()
  }

  // -------------------------------------------------------------------------------------------------
  // Share-partitions

  #limits(): ShareLimits {
    return {
      deliveryCountLimit: this.configs.brokerInt('group.share.delivery.count.limit'),
      maxInFlightRecords: this.configs.brokerInt('group.share.partition.max.record.locks'),
    }
  }

  /** The share-partition of (group, partition), loaded or initialized on first use. */
  async #load(group: string, ref: SharePartitionRef): Promise<Outcome<{ entry: Entry; sp: SharePartition }>> {
    const key = `${group}\u0000${ref.topicId}\u0000${ref.partition}`
    let entry = this.#entries.get(key)
    if (entry === undefined) {
      const tp = `${ref.topic}\u0000${ref.partition}`
      entry = { key, stateKey: { group, topicId: ref.topicId, partition: ref.partition }, topic: ref.topic, tp, sp: undefined, loading: undefined, stateEpoch: 0, leaderEpoch: -1, lastUsedMs: 0, saving: 0, busy: 0 }
      this.#entries.set(key, entry)
      if (this.#entries.size > this.memoryLimits.maxPartitions) this.dropIdle(true)
      this.#startIdleSweep()
      let set = this.#byPartition.get(tp)
      if (set === undefined) this.#byPartition.set(tp, (set = new Set()))
      set.add(entry)
    }
    entry.lastUsedMs = this.now()
    if (entry.sp !== undefined) return { ok: true, value: { entry, sp: entry.sp } }
    const e = entry
    e.loading ??= this.#initialize(e, group, ref).finally(() => (e.loading = undefined))
    try {
      const sp = await e.loading
      // Known to have state only once it was read (a refused one leaves nothing behind).
      let states = this.#persisted.get(e.tp)
      if (states === undefined) this.#persisted.set(e.tp, (states = new Map()))
      states.set(key, e.stateKey)
      return { ok: true, value: { entry: e, sp } }
    } catch (err) {
      if (this.#entries.get(key) === e && e.sp === undefined) this.#forget(e)
      const code = (err as { code?: unknown }).code
      return { ok: false, errorCode: typeof code === 'number' ? code : ErrorCode.UNKNOWN_SERVER_ERROR, message: (err as Error).message }
    }
  }

  async #initialize(entry: Entry, group: string, ref: SharePartitionRef): Promise<SharePartition> {
    entry.leaderEpoch = this.log.hosted?.(ref.topic, ref.partition)?.leaderEpoch ?? -1
    const state = await this.persister.readState(entry.stateKey, entry.leaderEpoch)
    let sp: SharePartition
    if (state === undefined) {
      // Never initialized by the group coordinator (no member was assigned it): nothing is made.
      throw Object.assign(new Error(`the share-partition of group ${group} is not initialized`), { code: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION })
    }
    entry.stateEpoch = state.stateEpoch
    if (state.startOffset >= 0) sp = new SharePartition(state.startOffset, state)
    else {
      // Initialized without a start offset (Kafka's -1): the group's share.auto.offset.reset decides, saved at once.
      sp = new SharePartition(await this.#resetOffset(group, ref))
      await this.persister.writeState(entry.stateKey, { stateEpoch: entry.stateEpoch, leaderEpoch: entry.leaderEpoch, ...sp.snapshot() })
    }
    // Dropped meanwhile (leadership moved): the caller still gets a consistent partition to answer from.
    if (this.#entries.get(entry.key) === entry) entry.sp = sp
    return sp
  }

  /** share.auto.offset.reset for a new share-partition: latest (the high watermark), earliest, or by_duration. */
  async #resetOffset(group: string, ref: SharePartitionRef): Promise<number> {
    const reset = String(this.configs.group(group, 'share.auto.offset.reset'))
    let timestamp = -1
    if (reset === 'earliest') timestamp = -2
    else if (reset.toLowerCase().startsWith('by_duration:')) timestamp = this.now() - (parseIsoDuration(reset.slice('by_duration:'.length)) ?? 0)
    const [found] = await this.log.listOffsets([{ topic: ref.topic, partition: ref.partition, timestamp }])
    if (found === undefined || !found.ok) {
      const err = new Error(found === undefined || found.ok ? 'cannot find the start offset' : found.message) as Error & { code: number }
      err.code = found === undefined || found.ok ? ErrorCode.UNKNOWN_SERVER_ERROR : found.errorCode
      throw err
    }
    if (found.value.offset >= 0) return found.value.offset
    // No record at or after the time: start at the end, as Kafka does.
    const [latest] = await this.log.listOffsets([{ topic: ref.topic, partition: ref.partition, timestamp: -1 }])
    return latest !== undefined && latest.ok ? latest.value.offset : 0
  }

  /**
   * Saves the state; settles (never rejects) with the persister's error, or undefined once written.
   * A failed save drops the copy held here, so what the share-partition holds is what was saved: the next
   * use loads the last saved state again. That undoes the change the save carried (an acknowledgement
   * answered with the error leaves its records unacknowledged, delivered again, as Kafka rolls back an
   * acknowledgement whose write failed), and ends the locks of what was acquired, as a leader change does.
   */
  #save(entry: Entry): Promise<{ errorCode: number; message: string } | undefined> {
    if (entry.sp === undefined) return Promise.resolve(undefined)
    entry.saving++
    return this.persister.writeState(entry.stateKey, { stateEpoch: entry.stateEpoch, leaderEpoch: entry.leaderEpoch, ...entry.sp.snapshot() }).then(
      () => {
        entry.saving--
        return undefined
      },
      (err: unknown) => {
        entry.saving--
        if (this.#entries.get(entry.key) === entry) {
          this.#forget(entry)
          this.#wake(entry.key)
        }
        const code = (err as { code?: unknown }).code
        return { errorCode: typeof code === 'number' ? code : ErrorCode.UNKNOWN_SERVER_ERROR, message: (err as Error)?.message ?? String(err) }
      },
    )
  }

  #forget(entry: Entry): void {
    this.#entries.delete(entry.key)
    const set = this.#byPartition.get(entry.tp)
    set?.delete(entry)
    if (set?.size === 0) this.#byPartition.delete(entry.tp)
  }

  /**
   * Drops the share-partitions nobody uses (no acquired record, no session naming it, no fetch waiting on
   * it, no save under way): those idle for idleMs, and, when more than maxPartitions are held (`overLimit`),
   * the idle ones least recently used first until the count is back under it. Their state is saved; the
   * next use loads it again. Answers how many went.
   */
  dropIdle(overLimit = false): number {
    const inUse = new Set<string>()
    for (const s of this.#sessions.values()) for (const p of s.partitions.values()) inUse.add(`${s.group}\u0000${p.topicId}\u0000${p.partition}`)
    const now = this.now()
    const idle: Entry[] = []
    for (const e of this.#entries.values()) {
      if (e.sp === undefined || e.loading !== undefined || e.saving > 0 || e.busy > 0 || e.sp.nextLockExpiry() !== undefined) continue
      if (inUse.has(e.key) || this.#waiters.has(e.key)) continue
      idle.push(e)
    }
    let dropped = 0
    const excess = overLimit ? this.#entries.size - this.memoryLimits.maxPartitions : 0
    idle.sort((a, b) => a.lastUsedMs - b.lastUsedMs)
    for (const e of idle) {
      if (now - e.lastUsedMs < this.memoryLimits.idleMs && dropped >= excess) break
      this.#forget(e)
      dropped++
    }
    return dropped
  }

  #startIdleSweep(): void {
    if (this.#idleSweep !== undefined || this.#closed) return
    this.#idleSweep = setInterval(() => {
      this.dropIdle()
      if (this.#entries.size === 0) {
        clearInterval(this.#idleSweep)
        this.#idleSweep = undefined
      }
    }, Math.max(100, Math.min(this.memoryLimits.idleMs / 2, 30_000)))
    this.#idleSweep.unref()
  }

  /**
   * The share-partition's state was initialized again or deleted by an admin (AlterShareGroupOffsets,
   * DeleteShareGroupOffsets, only for an empty group): the copy held here is dropped unsaved, so the next
   * fetch loads the new state.
   */
  onStateReset(group: string, topicId: string, partition: number): void {
    const e = this.#entries.get(`${group}\u0000${topicId}\u0000${partition}`)
    if (e === undefined) return
    this.#forget(e)
    this.#wake(e.key)
  }

  /**
   * The replica manager's leadership listener: a partition this broker no longer leads drops its
   * share-partitions (saved first; their records' locks end with them, as on a leader change in Kafka).
   */
  onLeadershipChange(topic: string, partition: number, isLeader: boolean): void {
    if (isLeader) return
    const set = this.#byPartition.get(`${topic}\u0000${partition}`)
    if (set === undefined) return
    for (const e of [...set]) {
      void this.#save(e)
      this.#forget(e)
      this.#wake(e.key)
    }
  }

  /**
   * Partitions deleted here (DeleteTopics, StopReplica with deletion): their share-partitions and saved
   * states go; a topic created again under the name has another id and starts afresh.
   */
  onPartitionsDeleted(partitions: readonly { topic: string; partition: number }[]): void {
    for (const p of partitions) {
      const tp = `${p.topic}\u0000${p.partition}`
      for (const e of [...(this.#byPartition.get(tp) ?? [])]) {
        this.#forget(e)
        this.#wake(e.key)
      }
      for (const key of this.#persisted.get(tp)?.values() ?? []) this.persister.deleteState(key).catch(() => undefined)
      this.#persisted.delete(tp)
    }
  }

  // -------------------------------------------------------------------------------------------------
  // Acquisition locks

  /** Arms the lock timer for the earliest deadline of every share-partition. */
  #scheduleLocks(): void {
    if (this.#closed) return
    let next = Infinity
    for (const e of this.#entries.values()) {
      const at = e.sp?.nextLockExpiry()
      if (at !== undefined && at < next) next = at
    }
    if (next === this.#lockTimerAt) return
    if (this.#lockTimer !== undefined) clearTimeout(this.#lockTimer)
    this.#lockTimer = undefined
    this.#lockTimerAt = next
    if (next === Infinity) return
    this.#lockTimer = setTimeout(() => this.#expireLocks(), Math.max(0, next - this.now()))
    this.#lockTimer.unref()
  }

  #expireLocks(): void {
    this.#lockTimer = undefined
    this.#lockTimerAt = Infinity
    const now = this.now()
    const limits = this.#limits()
    for (const e of this.#entries.values()) {
      const at = e.sp?.nextLockExpiry()
      if (at === undefined || at > now) continue
      const before = e.sp!.lockTimeouts
      if (e.sp!.expireLocks(now, limits)) this.#wake(e.key)
      this.lockTimeouts += e.sp!.lockTimeouts - before
      void this.#save(e)
    }
    this.#scheduleLocks()
  }

  /** Stops the timers and wakes waiting fetches (broker shutdown). */
  close(): void {
    this.#closed = true
    if (this.#lockTimer !== undefined) clearTimeout(this.#lockTimer)
    if (this.#sessionSweep !== undefined) clearInterval(this.#sessionSweep)
    if (this.#idleSweep !== undefined) clearInterval(this.#idleSweep)
    for (const key of [...this.#waiters.keys()]) this.#wake(key)
  }
}

/**
 * The batch headers of a read, in order, from the file (61 bytes each): up to about `records` records,
 * `budget` bytes (at least one batch when `atLeastOne`) and `maxBatches` batches. Aborted batches under read_committed are
 * marked from the read's aborted transactions (a producer's batches from its aborted transaction's first
 * offset to its next marker).
 */
function walkBatches(read: ShardReadResult, records: number, budget: number, atLeastOne: boolean, maxBatches: number): ReadBatch[] {
  const out: ReadBatch[] = []
  const aborted = [...read.abortedTransactions].sort((a, b) => a.firstOffset - b.firstOffset)
  let nextAborted = 0
  const open = new Set<number>()
  let bytes = 0
  let count = 0
  for (let ri = 0; ri < read.regions.length; ri++) {
    const region = read.regions[ri]!
    const end = region.position + region.length
    let pos = region.position
    while (pos + RECORD_BATCH_OVERHEAD <= end) {
      if (readFully(region.fd, header, RECORD_BATCH_OVERHEAD, pos) < RECORD_BATCH_OVERHEAD) return out
      const batchLength = header.readInt32BE(BATCH_LENGTH_OFFSET)
      if (batchLength < MIN_BATCH_LENGTH || pos + LOG_OVERHEAD + batchLength > end) return out
      const info = batchInfoAt(header, 0, pos)
      if (bytes + info.size > budget && !(atLeastOne && out.length === 0)) return out
      const producerId = readInt64(header, PRODUCER_ID_OFFSET)
      while (nextAborted < aborted.length && aborted[nextAborted]!.firstOffset <= info.lastOffset) open.add(aborted[nextAborted++]!.producerId)
      const isControl = (info.attributes & CONTROL_MASK) !== 0
      let isAborted = false
      if (isControl) open.delete(producerId)
      else if ((info.attributes & TRANSACTIONAL_MASK) !== 0 && open.has(producerId)) isAborted = true
      out.push({ firstOffset: info.baseOffset, lastOffset: info.lastOffset, isControl, aborted: isAborted, region: ri, position: pos, size: info.size })
      bytes += info.size
      if (!isControl && !isAborted) count += info.lastOffset - info.baseOffset + 1
      pos += info.size
      if (count >= records || out.length >= maxBatches) return out
    }
  }
  return out
}

function readFully(fd: number, buf: Buffer, length: number, position: number): number {
  let done = 0
  while (done < length) {
    const n = readSync(fd, buf, done, length - done, position + done)
    if (n === 0) break
    done += n
  }
  return done
}

/** The file regions of the batches from the first to the last one holding acquired records. */
function regionsFor(regions: readonly FileRegion[], batches: readonly ReadBatch[], acquired: readonly AcquiredRange[]): FileRegion[] {
  const lo = acquired[0]!.firstOffset
  const hi = acquired[acquired.length - 1]!.lastOffset
  let from = -1
  let to = -1
  for (let i = 0; i < batches.length; i++) {
    const b = batches[i]!
    if (b.lastOffset < lo || b.firstOffset > hi) continue
    if (from < 0) from = i
    to = i
  }
  if (from < 0) return []
  const out: FileRegion[] = []
  for (let i = from; i <= to; i++) {
    const b = batches[i]!
    const fd = regions[b.region]!.fd
    const prev = out[out.length - 1]
    if (prev !== undefined && prev.fd === fd && prev.position + prev.length === b.position) prev.length += b.size
    else out.push({ fd, position: b.position, length: b.size })
  }
  return out
}
