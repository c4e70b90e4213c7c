// The share consumer (KIP-932; Kafka's KafkaShareConsumer): members of a share group consume the same
// partitions together, each record delivered to one member at a time under an acquisition lock, and
// settled by the member: ACCEPT (done), RELEASE (deliver again, to anyone) or REJECT (never again).
//
// Membership is share-membership.ts (ShareGroupHeartbeat at the group coordinator). Records come from
// one share session per partition leader (share-acks.ts keeps its epochs): a ShareFetch names the
// partitions added to and forgotten from the session and carries the acknowledgements waiting for that
// leader; its answer's records are decoded and limited to the AcquiredRecords ranges (other members hold
// the rest of those batches). poll() hands out at most max.poll.records; the rest waits, still acquired,
// for the next polls, and only an empty buffer sends the next ShareFetch (as Kafka's client: records
// fetched ahead would sit under their locks). One request at a time per leader, as the session's epochs
// require.
//
// Acknowledgement (share.acknowledgement.mode): implicit (the default) accepts the records of a poll on
// the next poll, commitSync, commitAsync or close; explicit needs acknowledge(record, type) for each
// before the next poll (else IllegalStateError, as Kafka). Acknowledgements ride on the next ShareFetch to
// the leader; commitSync / commitAsync send a ShareAcknowledge instead, and close() sends the last ones on
// the ShareAcknowledge that closes each session (epoch -1), which releases what the member still holds.
// Each partition's outcome goes to the acknowledgement commit callback, run inside poll, commitSync,
// commitAsync and close as Kafka runs it on the application thread.
import { ApiKey } from '../protocol/api-keys.gen.js'
import * as ShareAcknowledge from '../protocol/messages/79-share-acknowledge.gen.js'
import * as ShareFetch from '../protocol/messages/78-share-fetch.gen.js'
import { ErrorCode, KafkaError } from '../domain/errors.js'
import { Cluster, type ClientOptions } from './cluster-connections.js'
import { ConfigException, IllegalStateError } from './errors.js'
import { tpKey } from './offsets.js'
import {
  AcknowledgeType,
  SHARE_FINAL_EPOCH,
  ShareSessionState,
  WireAckType,
  acknowledgementBatches,
  acquiredRecords,
  sessionKey,
  wireAckType,
  type AckRange,
  type SessionPartition,
  type ShareConsumerRecord,
} from './share-acks.js'
import { ShareGroupMembership } from './share-membership.js'

export { AcknowledgeType }
export type { ShareConsumerRecord }

export type ShareAcknowledgementMode = 'implicit' | 'explicit'
/** share.acquire.mode (KIP-1206): record_limit needs ShareFetch v2, which this client does not send. */
export type ShareAcquireMode = 'batch_optimized'

export interface ShareConsumerOptions extends ClientOptions {
  /** group.id: the share group. */
  groupId: string
  /** share.acknowledgement.mode. Default 'implicit'. */
  acknowledgementMode?: ShareAcknowledgementMode
  /** max.poll.records: most records one poll() returns, and the MaxRecords of each ShareFetch. Default 500. */
  maxPollRecords?: number
  /** fetch.max.bytes. Default 52428800. */
  fetchMaxBytes?: number
  /** fetch.min.bytes. Default 1. */
  fetchMinBytes?: number
  /** fetch.max.wait.ms: the longest a ShareFetch waits at the broker for fetch.min.bytes. Default 500. */
  fetchMaxWaitMs?: number
  /** max.poll.interval.ms: without a poll for this long the member leaves the group, and rejoins at the next poll. Default 300000. */
  maxPollIntervalMs?: number
  /** check.crcs. Default true. */
  checkCrcs?: boolean
  /** client.rack, sent to the coordinator. */
  clientRack?: string | null
  /** share.acquire.mode: only batch_optimized (ShareFetch v1). */
  acquireMode?: ShareAcquireMode
}

/** The outcome of one partition's acknowledgements (Kafka's AcknowledgementCommitCallback gets one per partition). */
export interface AcknowledgementResult {
  topic: string
  partition: number
  topicId: string
  /** The offsets of the records acknowledged (acquired offsets without a record are left out). */
  offsets: number[]
  /** null when the broker applied them; INVALID_RECORD_STATE when the member no longer held the records (a lock expired), ... */
  error: Error | null
}

export type AcknowledgementCommitCallback = (result: AcknowledgementResult) => void

interface Tip extends SessionPartition {
  topic: string
}

/** Acknowledgements waiting to be sent for one partition. */
interface PartitionAcks {
  tip: Tip
  /** Records: offset -> wire type. */
  records: Map<number, number>
  /** Gaps and rejected stretches of a corrupt batch. */
  ranges: AckRange[]
}

/** Acknowledgements carried by one request, for its outcome. */
type SentAcks = Map<string, PartitionAcks>

interface BufferedPartition {
  tip: Tip
  records: ShareConsumerRecord[]
  next: number
}

interface Leader {
  nodeId: number
  session: ShareSessionState
  /** The request in flight to this leader (one at a time: the session's epochs are a sequence). */
  busy: Promise<void> | null
  /** No request before this time after a failure. */
  backoffUntil: number
}

/** A record of the last poll not acknowledged yet (explicit mode). */
const UNSET = -1

/** Partition errors after which the leader or the topic id may have changed. */
const REFRESH_ERRORS: ReadonlySet<number> = new Set([
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.UNKNOWN_TOPIC_ID,
  ErrorCode.FENCED_LEADER_EPOCH,
  ErrorCode.UNKNOWN_LEADER_EPOCH,
  ErrorCode.KAFKA_STORAGE_ERROR,
])

export class ShareConsumer {
  readonly cluster: Cluster
  readonly groupId: string
  private readonly opts: ShareConsumerOptions
  private readonly membership: ShareGroupMembership
  private readonly explicit: boolean
  private readonly leaders = new Map<number, Leader>()
  private readonly pending = new Map<string, PartitionAcks>()
  /** The records the last poll handed out, by tpKey: offset -> wire type (UNSET until acknowledged). */
  private delivered = new Map<string, { tip: Tip; acks: Map<number, number> }>()
  private readonly buffer: BufferedPartition[] = []
  private readonly results: AcknowledgementResult[] = []
  private callback: AcknowledgementCommitCallback | null = null
  /** An error for the application found while applying an answer (a corrupt batch, a topic not authorized). */
  private pendingError: Error | null = null
  private metadataStale = true
  private lastMetadataRefresh = 0
  private lockTimeoutMs: number | null = null
  private closed = false
  private readonly wakers = new Set<() => void>()
  private pollTimer: NodeJS.Timeout | null = null
  private leftForPollInterval = false
  /** The leave of a member that stopped polling, while it goes on. */
  private leaving: Promise<void> | null = null

  constructor(opts: ShareConsumerOptions) {
    if (opts.groupId === undefined || opts.groupId === '') throw new KafkaError(ErrorCode.INVALID_GROUP_ID, 'a share consumer needs a group.id')
    if (opts.acquireMode !== undefined && opts.acquireMode !== 'batch_optimized') {
      throw new ConfigException(`share.acquire.mode '${String(opts.acquireMode)}' needs ShareFetch v2; this client sends v1 (batch_optimized)`)
    }
    this.opts = opts
    this.groupId = opts.groupId
    this.explicit = opts.acknowledgementMode === 'explicit'
    this.cluster = new Cluster(opts)
    this.membership = new ShareGroupMembership(this.cluster, opts.groupId, opts.clientRack ?? null, () => {
      this.metadataStale = true
      this.wake()
    })
  }

  /** The member id this consumer chose (a Kafka Uuid), kept across rejoins. */
  get memberId(): string {
    return this.membership.memberId
  }

  /** The member epoch the coordinator gave (0 before joining). */
  get memberEpoch(): number {
    return this.membership.memberEpoch
  }

  /** Subscribes to topics by name (replacing any earlier subscription); the coordinator assigns partitions. */
  subscribe(topics: readonly string[]): void {
    this.ensureOpen()
    if (topics.some((t) => typeof t !== 'string' || t.trim() === '')) throw new TypeError('topic names must be non-empty strings')
    if (topics.length === 0) {
      // Kafka's subscribe(empty) is unsubscribe(); its failures surface at the next call instead.
      void this.unsubscribe().catch((err: unknown) => {
        this.pendingError ??= err as Error
      })
      return
    }
    this.membership.subscribe(topics)
    this.metadataStale = true
  }

  subscription(): string[] {
    return this.membership.active ? [...this.membership.subscribed] : []
  }

  /** Leaves the group after acknowledging what the last poll returned (implicit mode) and closing the share sessions. */
  async unsubscribe(): Promise<void> {
    this.ensureOpen()
    this.settleDelivered(false)
    await this.closeSessions(Date.now() + this.cluster.apiTimeoutMs)
    this.buffer.length = 0
    await this.membership.leave()
    this.runCallbacks()
  }

  /** Kafka's setAcknowledgementCommitCallback: called once per partition whose acknowledgements completed. */
  setAcknowledgementCommitCallback(callback: AcknowledgementCommitCallback | null): void {
    this.callback = callback
  }

  /** The acquisition lock timeout the last ShareFetch answer gave (the group's share.record.lock.duration.ms), null before one. */
  acquisitionLockTimeoutMs(): number | null {
    return this.lockTimeoutMs
  }

  /**
   * Explicit mode: settles a record the last poll returned (ACCEPT by default). The type may be changed
   * until the acknowledgements are sent (next poll, commitSync, commitAsync, close).
   */
  acknowledge(record: { topic: string; partition: number; offset: number }, type: AcknowledgeType = AcknowledgeType.ACCEPT): void {
    this.ensureOpen()
    if (!this.explicit) throw new IllegalStateError('acknowledge() needs share.acknowledgement.mode=explicit')
    const wire = wireAckType(type)
    const d = this.delivered.get(tpKey(record.topic, record.partition))
    if (d === undefined || !d.acks.has(record.offset)) throw new IllegalStateError(`the record ${record.topic}-${record.partition}@${record.offset} cannot be acknowledged: it is not one the last poll returned`)
    d.acks.set(record.offset, wire)
  }

  /**
   * Returns the records acquired for this member, at most max.poll.records, waiting up to timeoutMs.
   * First acknowledges the last poll's records (implicit mode) or checks that each was acknowledged
   * (explicit mode).
   */
  async poll(timeoutMs = this.opts.fetchMaxWaitMs ?? 500): Promise<ShareConsumerRecord[]> {
    this.ensureOpen()
    if (!this.membership.active && this.membership.fatalError === null && !this.leftForPollInterval) throw new IllegalStateError('poll() needs a subscription')
    if (this.pollTimer !== null) clearTimeout(this.pollTimer)
    this.pollTimer = null
    const deadline = Date.now() + Math.max(0, timeoutMs)
    try {
      if (this.leaving !== null) await this.leaving
      if (this.leftForPollInterval) {
        this.leftForPollInterval = false
        this.membership.rejoin()
      }
      this.settleDelivered(true)
      this.runCallbacks()
      this.throwPending()
      while (!this.membership.joined) {
        this.throwPending()
        const left = deadline - Date.now()
        if (left <= 0) return []
        await this.membership.waitForHeartbeat(left)
      }
      for (;;) {
        if (this.metadataStale) await this.refreshMetadata()
        if (this.buffer.length > 0) return this.handOut()
        const backoff = this.sendFetches(deadline)
        // Metadata still to refresh (a topic id or leader unknown): look again after the backoff.
        const wait = this.metadataStale ? Math.min(backoff, this.cluster.retryBackoffMs) : backoff
        const left = deadline - Date.now()
        if (left <= 0) return []
        await this.waitForWake(Math.min(left, wait))
        this.runCallbacks()
        this.throwPending()
        if (this.buffer.length > 0) return this.handOut()
        if (Date.now() >= deadline) return []
      }
    } finally {
      this.armPollTimer()
    }
  }

  /**
   * Sends the acknowledgements made so far (implicit mode: every record of the last poll, accepted) on a
   * ShareAcknowledge to each leader, and waits for the outcome, per partition.
   */
  async commitSync(timeoutMs = this.cluster.apiTimeoutMs): Promise<AcknowledgementResult[]> {
    this.ensureOpen()
    this.settleDelivered(false)
    const mine: AcknowledgementResult[] = []
    await this.sendAcknowledgements(Date.now() + timeoutMs, false, mine)
    this.runCallbacks()
    return mine
  }

  /** As commitSync, without waiting: the outcomes go to the acknowledgement commit callback. */
  commitAsync(): void {
    this.ensureOpen()
    this.settleDelivered(false)
    void this.sendAcknowledgements(Date.now() + this.cluster.apiTimeoutMs, false).catch(() => {})
  }

  /**
   * Acknowledges what is left (implicit mode: the last poll's records, accepted; explicit mode: those
   * acknowledged), closes each share session with the ShareAcknowledge of epoch -1 (the broker releases
   * the records this member still holds to the others), leaves the group and closes the connections.
   */
  async close(timeoutMs = 30_000): Promise<void> {
    if (this.closed) return
    if (this.pollTimer !== null) clearTimeout(this.pollTimer)
    this.pollTimer = null
    try {
      if (this.leaving !== null) await this.leaving
      this.settleDelivered(false)
      await this.closeSessions(Date.now() + timeoutMs)
      await this.membership.leave()
      this.closed = true
      this.runCallbacks()
    } finally {
      this.closed = true
      this.buffer.length = 0
      this.wake()
      await this.cluster.close()
    }
  }

  private ensureOpen(): void {
    if (this.closed) throw new IllegalStateError('the share consumer is closed')
  }

  private throwPending(): void {
    if (this.membership.fatalError !== null) throw this.membership.fatalError
    const err = this.pendingError
    if (err !== null) {
      this.pendingError = null
      throw err
    }
  }

  /**
   * max.poll.interval.ms: a member that stops polling is taken for stuck. It gives back what it holds (the
   * records of its last poll are not accepted, the share sessions are closed, which releases them to the
   * other members) and leaves the group; its next poll joins again with the same member id.
   */
  private armPollTimer(): void {
    if (this.closed) return
    const ms = this.opts.maxPollIntervalMs ?? 300_000
    this.pollTimer = setTimeout(() => {
      this.pollTimer = null
      if (this.closed || !this.membership.active) return
      this.leftForPollInterval = true
      this.delivered.clear()
      this.buffer.length = 0
      this.leaving = (async () => {
        await this.closeSessions(Date.now() + this.cluster.requestTimeoutMs).catch(() => {})
        // Records a fetch in flight brought meanwhile went back with the sessions too.
        this.buffer.length = 0
        this.delivered.clear()
        await this.membership.leave()
      })().finally(() => {
        this.leaving = null
      })
    }, ms)
    this.pollTimer.unref()
  }

  private wake(): void {
    for (const w of [...this.wakers]) w()
  }

  private waitForWake(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t)
        this.wakers.delete(done)
        resolve()
      }
      const t = setTimeout(done, Math.max(0, ms))
      this.wakers.add(done)
    })
  }

  private runCallbacks(): void {
    const cb = this.callback
    const results = this.results.splice(0)
    if (cb === null) return
    for (const r of results) cb(r)
  }

  /**
   * Moves the last poll's acknowledgements to those waiting to be sent. Implicit mode accepts every record;
   * explicit mode takes those acknowledged, and before a poll refuses to go on while any is not.
   */
  private settleDelivered(forPoll: boolean): void {
    if (this.explicit && forPoll) {
      for (const d of this.delivered.values()) {
        for (const t of d.acks.values()) if (t === UNSET) throw new IllegalStateError('all records must be acknowledged in explicit acknowledgement mode before the next poll')
      }
    }
    const keep = new Map<string, { tip: Tip; acks: Map<number, number> }>()
    for (const [k, d] of this.delivered) {
      const rest = new Map<number, number>()
      for (const [offset, t] of d.acks) {
        if (t !== UNSET) this.addAck(d.tip, offset, t)
        else if (!this.explicit) this.addAck(d.tip, offset, WireAckType.ACCEPT)
        else rest.set(offset, t)
      }
      if (rest.size > 0) keep.set(k, { tip: d.tip, acks: rest })
    }
    this.delivered = keep
  }

  private acksOf(tip: Tip): PartitionAcks {
    const k = sessionKey(tip.topicId, tip.partition)
    let a = this.pending.get(k)
    if (a === undefined) this.pending.set(k, (a = { tip, records: new Map(), ranges: [] }))
    return a
  }

  private addAck(tip: Tip, offset: number, type: number): void {
    this.acksOf(tip).records.set(offset, type)
  }

  /** Hands out up to max.poll.records buffered records; they become the records to acknowledge. */
  private handOut(): ShareConsumerRecord[] {
    const max = Math.max(1, this.opts.maxPollRecords ?? 500)
    const out: ShareConsumerRecord[] = []
    while (out.length < max && this.buffer.length > 0) {
      const b = this.buffer[0]!
      const n = Math.min(max - out.length, b.records.length - b.next)
      const key = tpKey(b.tip.topic, b.tip.partition)
      let d = this.delivered.get(key)
      if (d === undefined) this.delivered.set(key, (d = { tip: b.tip, acks: new Map() }))
      for (let i = 0; i < n; i++) {
        const r = b.records[b.next + i]!
        out.push(r)
        d.acks.set(r.offset, UNSET)
      }
      b.next += n
      if (b.next >= b.records.length) this.buffer.shift()
    }
    return out
  }

  /** Topic id -> name, from the cluster metadata. */
  private topicNames(): Map<string, string> {
    const m = new Map<string, string>()
    for (const t of this.cluster.metadata.topics.values()) m.set(t.topicId, t.name)
    return m
  }

  private async refreshMetadata(): Promise<void> {
    // At most one refresh per retry.backoff.ms: a topic id that stays unknown (a deleted topic still in the
    // assignment) must not make every answer cost a Metadata request.
    if (Date.now() - this.lastMetadataRefresh < this.cluster.retryBackoffMs) return
    this.lastMetadataRefresh = Date.now()
    this.metadataStale = false
    const topics = [...this.membership.subscribed]
    if (topics.length === 0) return
    try {
      await this.cluster.refreshMetadata(topics)
    } catch {
      this.metadataStale = true
    }
  }

  /** The assigned partitions, by leader. Unknown topic ids or leaders ask for a metadata refresh. */
  private assignmentByLeader(): Map<number, Map<string, Tip>> {
    const names = this.topicNames()
    const out = new Map<number, Map<string, Tip>>()
    for (const [topicId, partitions] of this.membership.assignment) {
      const topic = names.get(topicId)
      const info = topic === undefined ? undefined : this.cluster.metadata.topics.get(topic)
      if (topic === undefined || info === undefined) {
        this.metadataStale = true
        continue
      }
      for (const partition of partitions) {
        const leader = info.partitions[partition]?.leader ?? -1
        if (leader < 0) {
          this.metadataStale = true
          continue
        }
        let m = out.get(leader)
        if (m === undefined) out.set(leader, (m = new Map()))
        m.set(sessionKey(topicId, partition), { topicId, topic, partition })
      }
    }
    return out
  }

  private leader(nodeId: number): Leader {
    let l = this.leaders.get(nodeId)
    if (l === undefined) this.leaders.set(nodeId, (l = { nodeId, session: new ShareSessionState(), busy: null, backoffUntil: 0 }))
    return l
  }

  /** The current leader of a partition, or -1. */
  private leaderOf(tip: Tip): number {
    return this.cluster.metadata.topics.get(tip.topic)?.partitions[tip.partition]?.leader ?? -1
  }

  /** Takes the pending acknowledgements of partitions led by nodeId. */
  private takeAcks(nodeId: number): SentAcks {
    const out: SentAcks = new Map()
    for (const [k, a] of this.pending) {
      if (this.leaderOf(a.tip) !== nodeId) continue
      out.set(k, a)
      this.pending.delete(k)
    }
    return out
  }

  /**
   * Sends a ShareFetch to every leader of the assignment (and to leaders whose session must shrink) that
   * has no request in flight. Returns how long the caller may wait before trying again (a backoff).
   */
  private sendFetches(deadline: number): number {
    const byLeader = this.assignmentByLeader()
    const now = Date.now()
    let wait = Infinity
    for (const l of this.leaders.values()) if (!byLeader.has(l.nodeId) && (l.session.partitions.size > 0 || this.hasAcksFor(l.nodeId))) byLeader.set(l.nodeId, new Map())
    for (const [nodeId, wanted] of byLeader) {
      const l = this.leader(nodeId)
      if (l.busy !== null) continue
      if (l.backoffUntil > now) {
        wait = Math.min(wait, l.backoffUntil - now)
        continue
      }
      // Nothing to fetch there any more: a request with no wait forgets the partitions and carries the acks.
      const maxWaitMs = wanted.size === 0 ? 0 : Math.max(0, Math.min(this.opts.fetchMaxWaitMs ?? 500, deadline - now))
      this.fetchFrom(l, wanted, maxWaitMs)
    }
    return wait
  }

  private hasAcksFor(nodeId: number): boolean {
    for (const a of this.pending.values()) if (this.leaderOf(a.tip) === nodeId) return true
    return false
  }

  private fetchFrom(l: Leader, wanted: Map<string, Tip>, maxWaitMs: number): void {
    const session = l.session
    const { added, forgotten } = session.diff(wanted)
    // A request that opens a session cannot carry acknowledgements: they wait for the next one.
    const acks: SentAcks = session.isNew ? new Map() : this.takeAcks(l.nodeId)
    const entries = new Map<string, { tip: SessionPartition; batches: ShareFetch.AcknowledgementBatch[] }>()
    for (const p of added) entries.set(sessionKey(p.topicId, p.partition), { tip: p, batches: [] })
    const forget = [...forgotten]
    for (const [k, a] of acks) {
      const e = entries.get(k)
      const batches = acknowledgementBatches(rangesOf(a)).map((b) => ShareFetch.createAcknowledgementBatch(b))
      if (e !== undefined) e.batches = batches
      else {
        entries.set(k, { tip: a.tip, batches })
        // Acknowledgements for a partition no longer fetched from here: named for them, forgotten again.
        if (!wanted.has(k) && !forgotten.some((f) => sessionKey(f.topicId, f.partition) === k)) forget.push(a.tip)
      }
    }
    const req = ShareFetch.createShareFetchRequest({
      groupId: this.groupId,
      memberId: this.membership.memberId,
      shareSessionEpoch: session.epoch,
      maxWaitMs,
      minBytes: this.opts.fetchMinBytes ?? 1,
      maxBytes: this.opts.fetchMaxBytes ?? 52428800,
      maxRecords: Math.max(1, this.opts.maxPollRecords ?? 500),
      batchSize: Math.max(1, this.opts.maxPollRecords ?? 500),
      topics: byTopic([...entries.values()], (e) => e.tip, (e) => ShareFetch.createFetchPartition({ partitionIndex: e.tip.partition, acknowledgementBatches: e.batches })).map(([topicId, partitions]) =>
        ShareFetch.createFetchTopic({ topicId, partitions }),
      ),
      forgottenTopicsData: byTopic(forget, (f) => f, (f) => f.partition).map(([topicId, partitions]) => ShareFetch.createForgottenTopic({ topicId, partitions })),
    })
    l.busy = (async () => {
      try {
        const conn = await this.cluster.nodeConnection(l.nodeId)
        const res = await conn.send(ApiKey.ShareFetch, (w, v) => ShareFetch.encodeShareFetchRequest(w, req, v), ShareFetch.decodeShareFetchResponse, { extraTimeoutMs: maxWaitMs })
        this.applyFetch(l, wanted, acks, res)
      } catch (err) {
        this.requestFailed(l, acks, err)
      } finally {
        l.busy = null
        this.wake()
      }
    })()
  }

  private requestFailed(l: Leader, acks: SentAcks, err: unknown, sink?: AcknowledgementResult[]): void {
    l.session.failed(err)
    l.backoffUntil = Date.now() + this.cluster.retryBackoffMs
    this.metadataStale = true
    for (const a of acks.values()) this.report(a, err as Error, undefined, sink)
    if (err instanceof KafkaError && !err.retriable && !isSessionError(err.code)) this.pendingError ??= err
  }

  /** Queues one partition's outcome for the callback (and for commitSync's answer, through sink). */
  private report(a: PartitionAcks, error: Error | null, code?: number, sink?: AcknowledgementResult[]): void {
    const offsets = [...a.records.keys()].sort((x, y) => x - y)
    const err = code !== undefined && code !== ErrorCode.NONE ? new KafkaError(code as ErrorCode, `acknowledging ${a.tip.topic}-${a.tip.partition}`) : error
    // Gaps alone are the client's own bookkeeping: nothing the application acknowledged.
    if (offsets.length === 0) return
    const r = { topic: a.tip.topic, partition: a.tip.partition, topicId: a.tip.topicId, offsets, error: err }
    this.results.push(r)
    sink?.push(r)
  }

  private applyFetch(l: Leader, wanted: Map<string, Tip>, acks: SentAcks, res: ShareFetch.ShareFetchResponse): void {
    if (res.errorCode !== ErrorCode.NONE) {
      if (res.errorCode === ErrorCode.UNKNOWN_TOPIC_ID) this.metadataStale = true
      this.requestFailed(l, acks, new KafkaError(res.errorCode as ErrorCode, res.errorMessage ?? `ShareFetch from broker ${l.nodeId}`))
      return
    }
    l.session.fetched(wanted)
    if (res.acquisitionLockTimeoutMs > 0) this.lockTimeoutMs = res.acquisitionLockTimeoutMs
    const names = this.topicNames()
    for (const t of res.responses) {
      for (const p of t.partitions) {
        const k = sessionKey(t.topicId, p.partitionIndex)
        const sent = acks.get(k)
        if (sent !== undefined) {
          acks.delete(k)
          this.report(sent, null, p.acknowledgeErrorCode)
        }
        if (p.errorCode !== ErrorCode.NONE) {
          // Not fetched again from this leader at once: the answer would come back the same.
          l.backoffUntil = Date.now() + this.cluster.retryBackoffMs
          if (REFRESH_ERRORS.has(p.errorCode)) this.metadataStale = true
          else if (p.errorCode === ErrorCode.TOPIC_AUTHORIZATION_FAILED) this.pendingError ??= new KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, `share fetch of topic ${names.get(t.topicId) ?? t.topicId}`)
          continue
        }
        if (p.acquiredRecords.length === 0) continue
        const topic = wanted.get(k)?.topic ?? sent?.tip.topic ?? names.get(t.topicId)
        if (topic === undefined) {
          // Records of a partition this member cannot name: given back at once rather than held to their lock's end.
          const tip = { topicId: t.topicId, topic: '', partition: p.partitionIndex }
          for (const a of p.acquiredRecords) this.acksOf(tip).ranges.push(...releaseRange(a.firstOffset, a.lastOffset))
          continue
        }
        const tip: Tip = { topicId: t.topicId, topic, partition: p.partitionIndex }
        const got = acquiredRecords(p.records as Buffer | null, p.acquiredRecords, { topic, partition: p.partitionIndex, checkCrcs: this.opts.checkCrcs })
        if (got.gaps.length > 0 || got.rejected.length > 0) this.acksOf(tip).ranges.push(...got.gaps, ...got.rejected)
        if (got.error !== null) this.pendingError ??= got.error
        if (got.records.length > 0) this.buffer.push({ tip, records: got.records, next: 0 })
      }
    }
    // Acknowledgements of partitions the answer left out: the broker did not apply them.
    for (const a of acks.values()) this.report(a, null, ErrorCode.INVALID_RECORD_STATE)
  }

  /**
   * Sends the pending acknowledgements on a ShareAcknowledge to each leader (epoch -1 when closing, which
   * also closes its session), after the request in flight there. Those for a leader without an open
   * session fail: a ShareAcknowledge cannot open one.
   */
  private async sendAcknowledgements(deadline: number, closing: boolean, sink?: AcknowledgementResult[]): Promise<void> {
    const nodes = new Set<number>()
    for (const a of this.pending.values()) nodes.add(this.leaderOf(a.tip))
    if (closing) for (const l of this.leaders.values()) if (!l.session.isNew) nodes.add(l.nodeId)
    await Promise.all([...nodes].map((nodeId) => this.acknowledgeTo(nodeId, deadline, closing, sink)))
  }

  private async acknowledgeTo(nodeId: number, deadline: number, closing: boolean, sink?: AcknowledgementResult[]): Promise<void> {
    const l = nodeId >= 0 ? this.leader(nodeId) : null
    while (l !== null && l.busy !== null && Date.now() < deadline) await withTimeout(l.busy, deadline - Date.now())
    const acks = this.takeAcks(nodeId)
    if (l === null || l.session.isNew || l.busy !== null) {
      const why = l === null ? new KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, 'no known leader to acknowledge to') : l.busy !== null ? new KafkaError(ErrorCode.REQUEST_TIMED_OUT, 'acknowledgements not sent in time') : new KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, `no share session open with broker ${nodeId}`)
      for (const a of acks.values()) this.report(a, why, undefined, sink)
      return
    }
    if (acks.size === 0 && !closing) return
    const epoch = closing ? SHARE_FINAL_EPOCH : l.session.epoch
    const req = ShareAcknowledge.createShareAcknowledgeRequest({
      groupId: this.groupId,
      memberId: this.membership.memberId,
      shareSessionEpoch: epoch,
      topics: byTopic([...acks.values()], (a) => a.tip, (a) => ShareAcknowledge.createAcknowledgePartition({
        partitionIndex: a.tip.partition,
        acknowledgementBatches: acknowledgementBatches(rangesOf(a)).map((b) => ShareAcknowledge.createAcknowledgementBatch(b)),
      })).map(([topicId, partitions]) => ShareAcknowledge.createAcknowledgeTopic({ topicId, partitions })),
    })
    const done = (async () => {
      try {
        const conn = await this.cluster.nodeConnection(nodeId)
        const res = await conn.send(ApiKey.ShareAcknowledge, (w, v) => ShareAcknowledge.encodeShareAcknowledgeRequest(w, req, v), ShareAcknowledge.decodeShareAcknowledgeResponse)
        if (res.errorCode !== ErrorCode.NONE) {
          this.requestFailed(l, acks, new KafkaError(res.errorCode as ErrorCode, res.errorMessage ?? `ShareAcknowledge to broker ${nodeId}`), sink)
          return
        }
        if (closing) l.session.reset()
        else l.session.acknowledged()
        for (const t of res.responses) {
          for (const p of t.partitions) {
            const k = sessionKey(t.topicId, p.partitionIndex)
            const a = acks.get(k)
            if (a === undefined) continue
            acks.delete(k)
            if (REFRESH_ERRORS.has(p.errorCode)) this.metadataStale = true
            this.report(a, null, p.errorCode, sink)
          }
        }
        for (const a of acks.values()) this.report(a, null, ErrorCode.INVALID_RECORD_STATE, sink)
      } catch (err) {
        this.requestFailed(l, acks, err, sink)
        if (closing) l.session.reset()
      } finally {
        l.busy = null
        this.wake()
      }
    })()
    l.busy = done
    await withTimeout(done, deadline - Date.now())
  }

  /** close() and unsubscribe(): the last acknowledgements, on the requests that close every session. */
  private async closeSessions(deadline: number): Promise<void> {
    await this.sendAcknowledgements(deadline, true)
    // Pending ones left (no session with their leader) are reported as not sent.
    for (const a of this.pending.values()) this.report(a, new KafkaError(ErrorCode.SHARE_SESSION_NOT_FOUND, 'no share session to carry the acknowledgements'))
    this.pending.clear()
    for (const l of this.leaders.values()) l.session.reset()
  }
}

function isSessionError(code: number): boolean {
  return code === ErrorCode.SHARE_SESSION_NOT_FOUND || code === ErrorCode.INVALID_SHARE_SESSION_EPOCH || code === ErrorCode.SHARE_SESSION_LIMIT_REACHED
}

function rangesOf(a: PartitionAcks): AckRange[] {
  const out: AckRange[] = [...a.ranges]
  for (const [offset, type] of a.records) out.push({ first: offset, last: offset, type })
  return out
}

function releaseRange(first: bigint, last: bigint): AckRange[] {
  if (first < 0n || last < first || last > BigInt(Number.MAX_SAFE_INTEGER)) return []
  return [{ first: Number(first), last: Number(last), type: WireAckType.RELEASE }]
}

/** Groups items by topic id, keeping the order of first appearance. */
function byTopic<T, P>(items: readonly T[], tipOf: (item: T) => SessionPartition, partOf: (item: T) => P): [string, P[]][] {
  const m = new Map<string, P[]>()
  for (const item of items) {
    const id = tipOf(item).topicId
    let list = m.get(id)
    if (list === undefined) m.set(id, (list = []))
    list.push(partOf(item))
  }
  return [...m]
}

async function withTimeout(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  try {
    await Promise.race([p.catch(() => {}), new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, ms))))])
  } finally {
    clearTimeout(timer)
  }
}
