// The consumer: either manual assignment (assign + seek) or a group subscription (subscribe: the group
// protocol in group.ts picks the partitions). poll() resolves missing positions (committed offset, else
// auto.offset.reset), sends one long-polled Fetch per leader and returns the decoded records, at most
// max.poll.records of them (the rest of the answer stays buffered and is decoded a batch at a time by
// later polls), moving each position past what it returned. When a poll returns records, the next
// Fetch to each leader is sent at once, from the end of what is buffered (pipelining, as librdkafka and
// the Java consumer do), so the broker prepares the next answer while the application handles these
// records; a seek or rebalance meanwhile drops the buffer and makes that answer stale. Offsets are
// committed on commit(), every auto.commit.interval.ms when enabled, before a rebalance and on close.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as Fetch from '../protocol/messages/01-fetch.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import type { AssignorName } from './assignors.js'
import { Cluster, sleep, type ClientOptions } from './cluster-connections.js'
import { IllegalStateError, isRetriableError } from './errors.js'
import { GroupMember, type ConsumerGroupMetadata, type GroupAssignor, type TopicPartitionOffset } from './group.js'
import { EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, listOffsets, tpKey } from './offsets.js'
import { FetchedRecordsCursor, type ConsumedRecord } from './record-batches.js'

export type OffsetReset = 'earliest' | 'latest' | 'none'
export type IsolationLevel = 'read_uncommitted' | 'read_committed'

export interface ConsumerOptions extends ClientOptions {
  groupId?: string
  isolationLevel?: IsolationLevel
  /** Where to start without a committed offset (or after OFFSET_OUT_OF_RANGE). Default 'latest'. */
  autoOffsetReset?: OffsetReset
  /** Default 500. */
  fetchMaxWaitMs?: number
  /** Default 1. */
  fetchMinBytes?: number
  /** Default 52428800. */
  fetchMaxBytes?: number
  /** Default 1048576. */
  maxPartitionFetchBytes?: number
  /** max.poll.records: most records one poll() returns; the rest stay buffered for the next. Default 500. */
  maxPollRecords?: number
  /** check.crcs: verify each fetched batch's CRC32C (a mismatch is CORRUPT_MESSAGE). Default true, as in Kafka. */
  checkCrcs?: boolean
  /** Default true with a group. */
  enableAutoCommit?: boolean
  /** Default 5000. */
  autoCommitIntervalMs?: number
  sessionTimeoutMs?: number
  rebalanceTimeoutMs?: number
  heartbeatIntervalMs?: number
  assignors?: AssignorName[]
  /** A custom assignor (Kafka's partition.assignment.strategy with a class of one's own), preferred over assignors. */
  assignor?: GroupAssignor
}

/**
 * Kafka's ConsumerRebalanceListener for this consumer's eager rebalances: onPartitionsRevoked gets the
 * whole assignment before the member rejoins (commit there what must be committed), and
 * onPartitionsAssigned the new one once the rebalance is over. Both may be async; poll() waits for them.
 */
export interface RebalanceListener {
  onPartitionsRevoked?(partitions: TopicPartition[]): Promise<void> | void
  onPartitionsAssigned?(partitions: TopicPartition[]): Promise<void> | void
}

export interface TopicPartition {
  topic: string
  partition: number
}

interface PartitionState {
  topic: string
  partition: number
  /** Next offset to fetch; null until resolved. */
  position: number | null
  /** A pending seek to the earliest/latest offset or to a timestamp. */
  reset: number | null
  /** High watermark seen in the last fetch (lag = hw - position). */
  highWatermark: number
  /** Fetched data not yet handed out, oldest first (at most one answer beyond the one being drained). */
  buffered: FetchedRecordsCursor[]
  /** pause(): neither fetched nor handed out until resume(). */
  paused: boolean
}

/** A Fetch sent to one leader: the offsets asked for (tpKey -> offset) and its outcome. */
interface PendingFetch {
  offsets: Map<string, number>
  maxWaitMs: number
  outcome: Promise<FetchOutcome>
  /** The outcome once it has settled (set before anyone awaiting `outcome` resumes). */
  settled: FetchOutcome | undefined
}

/** res null: a retriable failure (metadata refresh, then retry). */
type FetchOutcome = { ok: true; res: Fetch.FetchResponse | null; offsets: Map<string, number> } | { ok: false; error: Error }

/** Where the next fetch of a partition starts: after what is buffered, else at the position. */
function fetchPosition(s: PartitionState): number {
  const last = s.buffered[s.buffered.length - 1]
  return last !== undefined ? last.endOffset : s.position!
}

function matchesPositions(pre: PendingFetch, states: readonly PartitionState[]): boolean {
  if (pre.offsets.size !== states.length) return false
  for (const s of states) if (pre.offsets.get(tpKey(s.topic, s.partition)) !== fetchPosition(s)) return false
  return true
}

const yieldToIo = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** The promise's value, or null when ms pass first. */
async function waitAtMost<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), Math.max(0, ms))
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}

const REFRESH_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.FENCED_LEADER_EPOCH,
  ErrorCode.UNKNOWN_LEADER_EPOCH,
  ErrorCode.KAFKA_STORAGE_ERROR,
  ErrorCode.UNKNOWN_TOPIC_ID,
])

export class Consumer {
  readonly cluster: Cluster
  readonly group: GroupMember | null
  private readonly opts: ConsumerOptions
  private readonly partitions = new Map<string, PartitionState>()
  private subscription: string[] | null = null
  private listener: RebalanceListener | null = null
  private readonly autoCommit: boolean
  private lastCommit = Date.now()
  private closed = false
  /** Offsets committed by the last commit() (tpKey -> offset). */
  private readonly committed = new Map<string, number>()
  /** The next fetch per leader, sent when the last poll returned records (pipelining). */
  private readonly prefetched = new Map<number, PendingFetch>()

  constructor(opts: ConsumerOptions) {
    this.opts = opts
    this.cluster = new Cluster(opts)
    this.group = opts.groupId === undefined ? null : new GroupMember(this.cluster, {
      groupId: opts.groupId,
      sessionTimeoutMs: opts.sessionTimeoutMs,
      rebalanceTimeoutMs: opts.rebalanceTimeoutMs,
      heartbeatIntervalMs: opts.heartbeatIntervalMs,
      assignors: opts.assignors,
      assignor: opts.assignor,
    })
    this.autoCommit = this.group !== null && (opts.enableAutoCommit ?? true)
  }

  /** Manual assignment: consume exactly these partitions (replaces any previous assignment). */
  assign(tps: readonly TopicPartition[]): void {
    if (this.subscription !== null) throw new Error('assign() and subscribe() cannot be mixed')
    this.setAssignment(tps)
  }

  /** Group subscription: the group's assignor decides which partitions this member gets. */
  subscribe(topics: readonly string[], listener?: RebalanceListener): void {
    if (this.group === null) throw new KafkaError(ErrorCode.INVALID_GROUP_ID, 'subscribe() needs a groupId')
    this.subscription = [...topics]
    this.listener = listener ?? null
    this.group.needsRejoin = true
  }

  /** Asks for a rebalance at the next poll (Kafka's enforceRebalance), e.g. for a probing rebalance. */
  enforceRebalance(): void {
    if (this.group === null || this.subscription === null) throw new IllegalStateError('enforceRebalance() needs a group subscription')
    this.group.needsRejoin = true
  }

  /** Stops fetching and handing out records of these partitions until resume() (positions are kept). */
  pause(tps: readonly TopicPartition[]): void {
    for (const tp of tps) {
      const s = this.state(tp.topic, tp.partition)
      if (s.paused) continue
      s.paused = true
      // Records fetched ahead of the position are dropped: after resume they are fetched again.
      s.buffered = []
    }
  }

  resume(tps: readonly TopicPartition[]): void {
    for (const tp of tps) this.state(tp.topic, tp.partition).paused = false
  }

  paused(): TopicPartition[] {
    return [...this.partitions.values()].filter((s) => s.paused).map((s) => ({ topic: s.topic, partition: s.partition }))
  }

  assignment(): TopicPartition[] {
    return [...this.partitions.values()].map((p) => ({ topic: p.topic, partition: p.partition }))
  }

  private setAssignment(tps: readonly TopicPartition[]): void {
    const next = new Map<string, PartitionState>()
    for (const tp of tps) {
      const k = tpKey(tp.topic, tp.partition)
      next.set(k, this.partitions.get(k) ?? { topic: tp.topic, partition: tp.partition, position: null, reset: null, highWatermark: -1, buffered: [], paused: false })
    }
    this.partitions.clear()
    for (const [k, v] of next) this.partitions.set(k, v)
  }

  private state(topic: string, partition: number): PartitionState {
    const s = this.partitions.get(tpKey(topic, partition))
    if (s === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `${topic}-${partition} is not assigned to this consumer`)
    return s
  }

  /** Moves the position: an offset, 'earliest', 'latest', or { timestamp } (first offset at or after it). */
  seek(topic: string, partition: number, to: number | 'earliest' | 'latest' | { timestamp: number }): void {
    const s = this.state(topic, partition)
    s.buffered = []
    if (typeof to === 'number') {
      if (!Number.isSafeInteger(to) || to < 0) throw new RangeError(`offset must be a non-negative integer, not ${to}`)
      s.position = to
      s.reset = null
    } else {
      s.position = null
      s.reset = to === 'earliest' ? EARLIEST_TIMESTAMP : to === 'latest' ? LATEST_TIMESTAMP : to.timestamp
    }
  }

  position(topic: string, partition: number): number | null {
    return this.state(topic, partition).position
  }

  /** High watermark from the last fetch of the partition (-1 before any). */
  highWatermark(topic: string, partition: number): number {
    return this.state(topic, partition).highWatermark
  }

  /** Joins or rejoins the group when needed (committing first, as an eager rebalance revokes everything). */
  private async ensureGroup(): Promise<void> {
    const g = this.group
    if (g === null || this.subscription === null) return
    if (g.heartbeatError !== null) throw g.heartbeatError
    if (!g.needsRejoin) return
    if (this.autoCommit && g.generationId >= 0) await this.commit().catch(() => {})
    // Eager rebalancing: the whole assignment is given up before rejoining.
    if (this.listener?.onPartitionsRevoked !== undefined && this.partitions.size > 0) await this.listener.onPartitionsRevoked(this.assignment())
    this.prefetched.clear()
    // Make sure every subscribed topic exists before asking for partitions of it.
    for (const t of this.subscription) await this.cluster.topic(t, { refresh: true })
    const assigned = await g.join(this.subscription)
    this.setAssignment(assigned)
    for (const s of this.partitions.values()) {
      s.position = null
      s.reset = null
      s.buffered = []
      s.paused = false
    }
    if (this.listener?.onPartitionsAssigned !== undefined) await this.listener.onPartitionsAssigned(this.assignment())
  }

  /** The userData of the last assignment from a custom assignor (null otherwise). */
  assignmentUserData(): Buffer | null {
    return this.group?.assignmentUserData ?? null
  }

  /** Resolves missing positions: committed offsets first (group), then reset policy or pending seeks. */
  private async resolvePositions(): Promise<void> {
    const missing = [...this.partitions.values()].filter((s) => s.position === null)
    if (missing.length === 0) return
    const needReset: PartitionState[] = []
    const fromCommitted = missing.filter((s) => s.reset === null)
    if (this.group !== null && fromCommitted.length > 0) {
      const committed = await this.group.fetchCommitted(fromCommitted.map((s) => ({ topic: s.topic, partition: s.partition })))
      for (const s of fromCommitted) {
        const o = committed.get(tpKey(s.topic, s.partition))
        if (o !== undefined) s.position = o
      }
    }
    for (const s of missing) {
      if (s.position !== null) continue
      if (s.reset === null) {
        const policy = this.opts.autoOffsetReset ?? 'latest'
        if (policy === 'none') throw new KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, `no committed offset for ${s.topic}-${s.partition} and auto.offset.reset is none`)
        s.reset = policy === 'earliest' ? EARLIEST_TIMESTAMP : LATEST_TIMESTAMP
      }
      needReset.push(s)
    }
    if (needReset.length === 0) return
    const answers = await listOffsets(this.cluster, needReset.map((s) => ({ topic: s.topic, partition: s.partition, timestamp: s.reset! })), this.isolation())
    const latest = needReset.some((s) => s.reset! >= 0 && (answers.get(tpKey(s.topic, s.partition))?.offset ?? -1) < 0)
    const ends = latest ? await listOffsets(this.cluster, needReset.map((s) => ({ topic: s.topic, partition: s.partition, timestamp: LATEST_TIMESTAMP })), this.isolation()) : null
    for (const s of needReset) {
      const a = answers.get(tpKey(s.topic, s.partition))
      if (a === undefined) continue
      // A timestamp past the last record has no offset: start at the end, as Kafka's offsetsForTimes users do.
      s.position = a.offset >= 0 ? a.offset : (ends?.get(tpKey(s.topic, s.partition))?.offset ?? 0)
      s.reset = null
    }
  }

  private isolation(): number {
    return this.opts.isolationLevel === 'read_committed' ? 1 : 0
  }

  /**
   * Fetches from every leader of the assigned partitions that has no fetch in flight, waiting at most
   * timeoutMs for data (fetch.max.wait.ms caps each long poll), and returns as soon as one leader has
   * answered: the records buffered then, in partition order. Fetches still out answer a later poll.
   * atMost lowers max.poll.records for this call (a caller filling a batch of its own up to a size).
   */
  async poll(timeoutMs = this.opts.fetchMaxWaitMs ?? 500, atMost?: number): Promise<ConsumedRecord[]> {
    if (this.closed) throw new Error('the consumer is closed')
    await this.ensureGroup()
    try {
      await this.resolvePositions()
    } catch (err) {
      if (!isRetriableError(err)) throw err
      await this.cluster.refreshMetadata([...new Set([...this.partitions.values()].map((s) => s.topic))]).catch(() => {})
      return []
    }
    const ready = [...this.partitions.values()].filter((s) => s.position !== null && !s.paused)
    if (ready.length === 0) {
      await sleep(Math.min(timeoutMs, 100))
      return []
    }
    const byLeader = new Map<number, PartitionState[]>()
    let needRefresh = false
    for (const s of ready) {
      let leader: number
      try {
        leader = await this.cluster.leaderFor(s.topic, s.partition)
      } catch (err) {
        if (!isRetriableError(err)) throw err
        needRefresh = true
        continue
      }
      let list = byLeader.get(leader)
      if (list === undefined) byLeader.set(leader, (list = []))
      list.push(s)
    }
    const maxWait = Math.max(0, Math.min(timeoutMs, this.opts.fetchMaxWaitMs ?? 500))
    const maxPollRecords = Math.max(1, this.opts.maxPollRecords ?? 500)
    const maxRecords = atMost === undefined ? maxPollRecords : Math.max(1, Math.min(maxPollRecords, atMost))
    // Records fetched earlier and not handed out yet come first, without waiting for the network; one
    // turn of the event loop first, though, so that socket reads (the pipelined fetch's answer arriving)
    // go on while the application works through the buffer, instead of piling up in the kernel.
    if (this.hasBuffered()) await yieldToIo()
    let records = this.drainBuffered(maxRecords)
    if (records.length === 0) {
      const sent: [number, PendingFetch][] = []
      let mayOutwait = false
      for (const [leader, states] of byLeader) {
        const pre = this.prefetched.get(leader)
        this.prefetched.delete(leader)
        // A prefetch answers this poll only if it asked for exactly these partitions at their current
        // positions (a seek, a rebalance or a leader change since then makes it stale: it is dropped).
        if (pre !== undefined && matchesPositions(pre, states)) {
          sent.push([leader, pre])
          if (pre.maxWaitMs > timeoutMs) mayOutwait = true
        } else {
          sent.push([leader, this.sendFetch(leader, states, maxWait)])
        }
      }
      // Leaders no longer fetched from (reassignment): their prefetched answers are dropped unread.
      this.prefetched.clear()
      // The first answer ends the wait, as in Kafka's consumer (poll hands out what any fetch brought):
      // records one leader sent are not held back until every other leader has answered too (with
      // several leaders that made each poll as slow as the slowest of them). The fetches still out stay
      // in flight for the next poll.
      const first = Promise.race(sent.map(([, f]) => f.outcome))
      // A prefetch sent by an earlier poll may long-poll longer than this poll's timeout: poll waits at
      // most its timeout and leaves the fetches in flight for the next poll.
      const settled = mayOutwait ? await waitAtMost(first, timeoutMs) : await first
      const outcomes: FetchOutcome[] = []
      for (const [leader, f] of sent) {
        if (settled !== null && f.settled !== undefined) outcomes.push(f.settled)
        else this.prefetched.set(leader, f)
      }
      if (outcomes.length === 0) return []
      for (const o of outcomes) {
        if (!o.ok) throw o.error
        if (this.applyFetch(o)) needRefresh = true
      }
      records = this.drainBuffered(maxRecords)
    }
    if (needRefresh) {
      await this.cluster.refreshMetadata([...new Set(ready.map((s) => s.topic))]).catch(() => {})
      if (records.length === 0) await sleep(this.cluster.retryBackoffMs)
    } else if (records.length > 0 && !this.closed) {
      // Pipelining, as librdkafka and Kafka's Java consumer do: the next fetch goes out now, from the
      // end of what is buffered, while the application handles these records. One fetch per leader
      // at a time, so at most one answer waits behind the one being handed out.
      for (const [leader, states] of byLeader) {
        if (!this.prefetched.has(leader) && states.every((st) => st.buffered.length <= 1)) this.prefetched.set(leader, this.sendFetch(leader, states, maxWait))
      }
    }
    if (this.autoCommit && Date.now() - this.lastCommit >= (this.opts.autoCommitIntervalMs ?? 5000)) await this.commit().catch(() => {})
    return records
  }

  private hasBuffered(): boolean {
    for (const s of this.partitions.values()) if (s.buffered.length > 0 && !s.paused) return true
    return false
  }

  /**
   * Hands out up to max buffered records, partition by partition, moving each position past what it
   * returns. A batch that turns out corrupt ends the poll with the records before it; with none, the
   * error is thrown (the position stays before the bad batch, as in Kafka's consumer).
   */
  private drainBuffered(max: number): ConsumedRecord[] {
    const out: ConsumedRecord[] = []
    for (const s of this.partitions.values()) {
      if (s.paused) continue
      while (out.length < max && s.buffered.length > 0) {
        const cursor = s.buffered[0]!
        const before = out.length
        try {
          cursor.take(out, max - out.length)
        } catch (err) {
          s.buffered = []
          if (out.length > before) s.position = out[out.length - 1]!.offset + 1
          if (out.length === 0) throw err
          return out
        }
        if (out.length > before) s.position = out[out.length - 1]!.offset + 1
        if (!cursor.exhausted) break
        // Past the last batch (control and aborted batches included).
        s.position = cursor.nextOffset
        s.buffered.shift()
      }
      if (out.length >= max) break
    }
    return out
  }

  /** Sends one Fetch to a leader for the given partitions at their positions; never rejects. */
  private sendFetch(leader: number, states: PartitionState[], maxWaitMs: number): PendingFetch {
    const byTopic = new Map<string, Fetch.FetchPartition[]>()
    const offsets = new Map<string, number>()
    for (const s of states) {
      let list = byTopic.get(s.topic)
      if (list === undefined) byTopic.set(s.topic, (list = []))
      const at = fetchPosition(s)
      list.push(Fetch.createFetchPartition({ partition: s.partition, fetchOffset: BigInt(at), partitionMaxBytes: this.opts.maxPartitionFetchBytes ?? 1048576 }))
      offsets.set(tpKey(s.topic, s.partition), at)
    }
    const req = Fetch.createFetchRequest({
      replicaId: -1,
      maxWaitMs,
      minBytes: this.opts.fetchMinBytes ?? 1,
      maxBytes: this.opts.fetchMaxBytes ?? 52428800,
      isolationLevel: this.isolation(),
      sessionEpoch: -1,
      topics: [...byTopic].map(([topic, partitions]) => Fetch.createFetchTopic({ topic, partitions })),
    })
    const outcome = (async (): Promise<FetchOutcome> => {
      try {
        const conn = await this.cluster.nodeConnection(leader)
        const res = await conn.send(ApiKey.Fetch, (w, v) => Fetch.encodeFetchRequest(w, req, v), Fetch.decodeFetchResponse, { extraTimeoutMs: maxWaitMs })
        return { ok: true, res, offsets }
      } catch (err) {
        if (isRetriableError(err)) return { ok: true, res: null, offsets }
        return { ok: false, error: err as Error }
      }
    })()
    const pending: PendingFetch = { offsets, maxWaitMs, outcome, settled: undefined }
    void outcome.then((o) => {
      pending.settled = o
    })
    return pending
  }

  /**
   * Applies a Fetch answer: each partition's data is queued behind what is buffered. Partitions whose
   * fetch position moved since the fetch was sent (seek, rebalance) are skipped. Returns true when
   * metadata needs a refresh.
   */
  private applyFetch(o: FetchOutcome & { ok: true }): boolean {
    const res = o.res
    if (res === null) return true
    if (res.errorCode !== ErrorCode.NONE) throw new KafkaError(res.errorCode as ErrorCode, 'Fetch')
    let refresh = false
    for (const t of res.responses) {
      for (const p of t.partitions) {
        const key = tpKey(t.topic, p.partitionIndex)
        const s = this.partitions.get(key)
        if (s === undefined || s.position === null || s.paused) continue
        const at = fetchPosition(s)
        if (at !== o.offsets.get(key)) continue
        if (p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
          const policy = this.opts.autoOffsetReset ?? 'latest'
          if (policy === 'none') throw new KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE, `offset ${at} of ${s.topic}-${s.partition} is out of range`)
          s.position = null
          s.reset = policy === 'earliest' ? EARLIEST_TIMESTAMP : LATEST_TIMESTAMP
          s.buffered = []
          continue
        }
        if (REFRESH_ERRORS.has(p.errorCode)) {
          refresh = true
          continue
        }
        if (p.errorCode !== ErrorCode.NONE) throw new KafkaError(p.errorCode as ErrorCode, `fetching ${t.topic}-${p.partitionIndex}`)
        s.highWatermark = Number(p.highWatermark)
        const data = p.records as Buffer | null
        if (data === null || data.length === 0) continue
        s.buffered.push(
          new FetchedRecordsCursor(data, {
            topic: s.topic,
            partition: s.partition,
            fetchOffset: at,
            readCommitted: this.isolation() === 1,
            abortedTransactions: p.abortedTransactions,
            checkCrcs: this.opts.checkCrcs ?? true,
          }),
        )
      }
    }
    return refresh
  }

  /**
   * The member's place in its group (Kafka's groupMetadata()), for Producer.sendOffsetsToTransaction in a
   * consume-transform-produce loop: the coordinator then refuses offsets from a member that a rebalance
   * left behind. This consumer is a dynamic member (no group.instance.id).
   */
  groupMetadata(): ConsumerGroupMetadata {
    if (this.group === null) throw new KafkaError(ErrorCode.INVALID_GROUP_ID, 'groupMetadata() needs a groupId')
    return { groupId: this.group.groupId, generationId: this.group.generationId, memberId: this.group.memberId, groupInstanceId: null }
  }

  /** Commits offsets (default: the current positions of every assigned partition). Needs a group. */
  async commit(offsets?: readonly TopicPartitionOffset[]): Promise<void> {
    if (this.group === null) throw new KafkaError(ErrorCode.INVALID_GROUP_ID, 'commit() needs a groupId')
    const list = offsets ?? [...this.partitions.values()].filter((s) => s.position !== null && this.committed.get(tpKey(s.topic, s.partition)) !== s.position).map((s) => ({ topic: s.topic, partition: s.partition, offset: s.position! }))
    this.lastCommit = Date.now()
    if (list.length === 0) return
    await this.group.commit(list)
    for (const o of list) this.committed.set(tpKey(o.topic, o.partition), o.offset)
  }

  /** Commits (auto-commit or when asked), leaves the group and closes every connection. */
  async close(opts: { commit?: boolean } = {}): Promise<void> {
    if (this.closed) return
    this.closed = true
    try {
      if (this.group !== null && this.group.generationId >= 0) {
        if (opts.commit ?? this.autoCommit) await this.commit()
        await this.group.leave().catch(() => {})
      }
    } finally {
      this.group?.stopHeartbeat()
      await this.cluster.close()
    }
  }
}
