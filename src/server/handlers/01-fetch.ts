// Fetch: v0-17
//
// Behavior:
// * v4+: record data is never read into memory: the partition service answers file regions of whole
//   batches and the connection sends them with sendfile, straight from the segment files. The leases
//   pinning those segments are released once the response has been written.
// * v0-3 (consumers only; Kafka 4 removed them, KIP-896, Kafka 3.x served them): read as v4 reads with
//   read_uncommitted (they have no isolation level), then each partition's v2 batches are read into
//   memory and down-converted to a legacy message set, magic 0 for v0-1 and magic 1 for v2-3 (Kafka's
//   rule; protocol/records/legacy-message-set.ts): control batches and record headers dropped,
//   compressed batches decompressed (bounded by decodedSizeLimit(max.message.bytes)) and sent
//   uncompressed, records below the fetch offset skipped. No zero copy: the bytes pass through memory
//   and the main thread, at most the answer's byte budget (plus a first batch beyond it), and the
//   segments' leases are released as soon as they have been read. Each partition is cut at a message
//   boundary within its partitionMaxBytes and what the budget has left; the first partition with data
//   sends at least one whole message (minOneMessage; Kafka's v0-2 had a hard limit and sent a partial
//   message instead). Debian's kafka-go 0.2.1 consumes with v2 and parses magic 0/1 only.
// * Each partition returns at most partitionMaxBytes; min(the request's maxBytes, the broker's
//   fetch.max.bytes) bounds the total, except that the first partition with data always returns at least
//   one whole batch (Kafka's minOneMessage), so a batch larger than the limits still makes progress.
//   Partitions past the budget return no data.
// * A partition named more than once is read and answered once, at its first position with its last
//   fetch offset and limits (Kafka's FetchRequest.fetchData, a LinkedHashMap): a small request naming
//   one partition thousands of times cannot multiply the response.
// * Long polling: with less than minBytes available the fetch waits until one of its partitions gets
//   data or maxWaitMs passes, then answers with what there is.
// * Consumers read up to the high watermark; read_committed (isolation level 1) up to the last stable
//   offset (the first offset of the oldest open transaction), and the answer lists the aborted
//   transactions overlapping the returned batches: the client drops their records. The broker still
//   sends file regions, it never filters bytes. read_uncommitted answers carry a null list.
// * Fetch sessions (KIP-227, v7+; see common/fetch-sessions.ts for the cache and its eviction rules):
//   - a full fetch with epoch 0 opens a session when the cache has room, and the answer carries its id
//     (0 when none was opened); epoch -1 opens none. A full fetch naming a session id closes that
//     session first.
//   - an incremental fetch (the session id, the session's epoch) updates the partitions it names, drops
//     the forgotten ones, and reads every partition of the session at its remembered offset; the answer
//     holds only partitions with records, a new high watermark or log start offset, or an error.
//     Partitions that got records move to the end of the session's order. A session left with no
//     partition is closed (answered with id 0).
//   - an unknown session id -> FETCH_SESSION_ID_NOT_FOUND; another epoch than the session's (a
//     duplicate or lost request) -> INVALID_FETCH_SESSION_EPOCH; a v13+ request in a session opened
//     with names, or the reverse -> FETCH_SESSION_TOPIC_ID_ERROR. Such answers carry no partitions and
//     session id 0, and the client starts over with a full fetch.
// * Topics by id (v13+): an id the broker does not know (e.g. of a deleted topic) -> UNKNOWN_TOPIC_ID
//   for its partitions. A session opened with ids looks every id up again at each fetch, so a topic
//   deleted and created again under the same name is a different topic to it.
// Version notes:
// * v16+ (KIP-951): NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH partitions carry the current leader
//   and epoch, and the answer the leaders' endpoints on the listener used. v17: the follower's directory
//   id (ignored). v15: the replica id moves into ReplicaState. v14: may answer
//   OFFSET_MOVED_TO_TIERED_STORAGE (never here: no tiered storage). v13: topic ids.
// * v12: flexible. v11: rack id / preferred read replica (KIP-392, below). v9+: current leader epoch.
//   v7+: sessions.
//   v5+: log start offset. v4: isolation level, aborted transactions. v3: maxBytes (the answer's limit;
//   v0-2 have only fetch.max.bytes). v1+: throttle time.
// * Follower fetches (replica id >= 0; v15+ in ReplicaState) are served by the partition service's
//   readForFollower: records up to the log end offset (not the high watermark), the follower's position
//   recorded by the leader (HW, ISR), and with lastFetchedEpoch (v12+) the diverging epoch instead of
//   records when the follower's log went another way. Followers open fetch sessions as consumers do
//   (privileged ones, see common/fetch-sessions.ts), so an idle partition is named once, not in every
//   fetch. A session by topic name watches its partitions (the follower purgatory's PartitionWatch): an
//   incremental fetch reads only what the request named, what changed since the last fetch (records, a
//   new HW or log start offset, an ISR or leadership change), and what must be read again (an error, a
//   follower out of the ISR, records left unsent), and all of it every FOLLOWER_SESSION_SWEEP_MS; it
//   long-polls on the watch. An idle partition costs the leader nothing, and its follower stays in the
//   ISR: one at the leader's log end is caught up however long ago it fetched (Kafka's isCaughtUp). The
//   answer holds those with records, a new HW or log start offset, a diverging epoch or an error. A
//   session is continued or closed only by the replica that opened it.
//   A follower that is not a replica of the partition gets NOT_LEADER_OR_FOLLOWER. With an authorizer
//   the principal needs ClusterAction on the cluster, else every partition is TOPIC_AUTHORIZATION_FAILED
//   and nothing is read (Kafka's KafkaApis.handleFetchRequest; CVE-2018-1288). They long-poll as
//   consumers do. Their records count as ReplicationBytesOutPerSec, never BytesOutPerSec (Kafka's
//   BrokerTopicStats.updateBytesOut), once per answer.
// * Fetch from follower (KIP-392), v11+ consumers only (their clients know a follower's answers; older
//   ones get NOT_LEADER_OR_FOLLOWER from a follower, as from Kafka):
//   - a follower of the partition serves the read as a leader would, up to its own high watermark; a
//     fetch offset past its log end is OFFSET_OUT_OF_RANGE when the request carries a leader epoch (the
//     client asks the leader what is true), and an empty answer without one (the client may just be on
//     stale metadata; Kafka's KAFKA-14288 rule). Below its log start: OFFSET_OUT_OF_RANGE.
//   - with replica.selector.class = RackAwareReplicaSelector the leader sends a consumer whose rack id
//     matches the broker.rack of an in-sync follower holding the fetch offset (and not its own rack) to
//     that follower: PreferredReadReplica, its offsets and no records, answered without waiting. Among
//     several, the one with the highest log end, then the most recently caught up (Kafka's selector).
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
import { RACK_AWARE_REPLICA_SELECTOR } from '../../config/broker-configs.js'
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import type { Outcome } from '../../domain/outcome.js'
import * as Fetch from '../../protocol/messages/01-fetch.gen.js'
import { ZERO_UUID } from '../../protocol/primitives/types.js'
import { decodedSizeLimit } from '../../protocol/records/inflate.js'
import { downConvertBatches } from '../../protocol/records/legacy-message-set.js'
import { FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, nextEpoch, partitionKey, type CachedPartition, type FetchSession } from './common/fetch-sessions.js'
import type { RequestContext } from './common/context.js'
import { defineHandler, UnservableRequestError } from './common/handler.js'
import { readRegionsAsync, topicSetting } from './common/legacy-formats.js'
import type { ConsumerRead, FollowerPartitionRead, FollowerRead, PartitionRead, PartitionService, PartitionWatchPort } from './common/ports.js'

const EMPTY = Buffer.alloc(0)
const READ_COMMITTED = 1
// The tagged fields a partition answer rarely sets: one shared default each instead of three objects per
// partition (the encoder only compares them with the defaults).
const NO_DIVERGING_EPOCH: Fetch.EpochEndOffset = Object.freeze(Fetch.createEpochEndOffset())
const NO_LEADER: Fetch.LeaderIdAndEpoch = Object.freeze(Fetch.createLeaderIdAndEpoch())
const NO_SNAPSHOT: Fetch.SnapshotId = Object.freeze(Fetch.createSnapshotId())

/** One partition being fetched: its answer, and in a session its cache entry. */
interface Slot {
  /** The topic's name, '' for an unknown id. */
  topic: string
  topicId: string
  response: Fetch.PartitionData
  cached: CachedPartition | undefined
}

export const fetchHandler = defineHandler<Fetch.FetchRequest, Fetch.FetchResponse>({
  api: Fetch.FetchApi,
  minVersion: 0,
  maxVersion: 17,
  decodeRequest: Fetch.decodeFetchRequest,
  encodeResponse: Fetch.encodeFetchResponse,
  authorizes: true,
  async handle(req, ctx) {
    const version = ctx.apiVersion
    const replicaId = version >= 15 ? req.replicaState.replicaId : req.replicaId
    if (replicaId >= 0) {
      if (version < 4) throw new UnservableRequestError(`Fetch v${version} is served to consumers only; followers fetch with v4 or later`)
      return followerFetch(req, ctx, replicaId)
    }
    const usesTopicIds = version >= 13
    const sessions = ctx.fetchSessions
    const started = startSession(req, ctx, usesTopicIds, CONSUMER_REPLICA_ID)
    if (started.error !== undefined) return started.error
    const { session, openSession } = started

    const { partitions } = ctx
    const slots: Slot[] = []
    // The partitions to read and, at the same index, their answers.
    const reads: ConsumerRead[] = []
    const targets: Fetch.PartitionData[] = []
    const totalMax = fetchBudget(req, ctx)
    const readCommitted = req.isolationLevel === READ_COMMITTED
    // Checks one partition and queues its read; `topic` is '' for an unknown topic id.
    // Authorization: a consumer needs Read on each topic; asked once per topic, not per partition.
    // KIP-392: v11+ consumers may read from followers, and may be sent to one in their rack.
    const fromFollower = version >= 11
    const rackSelector = fromFollower && req.rackId !== '' ? rackAwareSelector(req.rackId, ctx) : undefined
    // Answers past a follower's log end that are empty rather than OFFSET_OUT_OF_RANGE (no leader epoch given).
    let emptyPastLogEnd: Set<Fetch.PartitionData> | undefined
    const { acl, connection } = ctx
    let lastTopic: string | undefined
    let lastDenied = ErrorCode.NONE as number
    const deniedCode = (topic: string): number => {
      if (!acl.enabled) return ErrorCode.NONE
      if (topic !== lastTopic) {
        lastTopic = topic
        lastDenied = acl.authorize(connection, AclOperation.READ, ResourceType.TOPIC, topic) ? ErrorCode.NONE : ErrorCode.TOPIC_AUTHORIZATION_FAILED
      }
      return lastDenied
    }
    const serve = (topic: string, response: Fetch.PartitionData, partition: number, fetchOffset: number, partitionMaxBytes: number, currentLeaderEpoch: number): void => {
      if (topic === '') {
        response.errorCode = ErrorCode.UNKNOWN_TOPIC_ID
        return
      }
      response.errorCode = deniedCode(topic)
      if (response.errorCode !== ErrorCode.NONE) return
      response.errorCode = fromFollower ? partitions.readError(topic, partition, currentLeaderEpoch, true) : partitions.leaderError(topic, partition, currentLeaderEpoch)
      if (response.errorCode !== ErrorCode.NONE) return
      if (partitionMaxBytes < 0) {
        response.errorCode = ErrorCode.INVALID_FETCH_SIZE
        return
      }
      if (fromFollower) {
        if (rackSelector !== undefined) response.preferredReadReplica = rackSelector(topic, partition, fetchOffset)
        if (currentLeaderEpoch < 0 && partitions.followerLog(topic, partition) !== undefined) (emptyPastLogEnd ??= new Set()).add(response)
      }
      const read: ConsumerRead = { topic, partition, offset: fetchOffset, maxBytes: Math.min(partitionMaxBytes, Math.max(totalMax, 1)) }
      if (readCommitted) read.isolation = 'read_committed'
      reads.push(read)
      targets.push(response)
    }

    // Full and sessionless fetches answer every partition they name, grouped as they were asked.
    const responses: Fetch.FetchableTopicResponse[] = []
    if (session === undefined) {
      for (const named of namedPartitions(req, usesTopicIds, ctx, responses, readCommitted)) {
        const { topic, topicId, p, response } = named
        serve(topic, response, p.partition, Number(p.fetchOffset), p.partitionMaxBytes, p.currentLeaderEpoch)
        // The session's cache entries are made only when one may be opened (sessionless fetches pay nothing).
        if (openSession) slots.push({ topic, topicId, response, cached: cacheEntry(topic, topicId, p, -1) })
      }
    } else {
      for (const cached of session.partitions.values()) {
        const topic = usesTopicIds ? (ctx.metadata.topicById(cached.topicId)?.name ?? '') : cached.topic
        if (usesTopicIds) cached.topic = topic
        const response = partitionAnswer(cached.partition, readCommitted)
        slots.push({ topic, topicId: cached.topicId, response, cached })
        serve(topic, response, cached.partition, cached.fetchOffset, cached.maxBytes, cached.currentLeaderEpoch)
      }
    }

    const deadline = ctx.receivedAt + Math.max(0, req.maxWaitMs)
    let held: PartitionRead[] = []
    for (;;) {
      held = await readAll(reads, targets, totalMax, partitions, emptyPastLogEnd)
      if (version < 4) {
        // Legacy message sets are answered from memory: the segments are let go once they have been read.
        // MinBytes counts the converted bytes, so a read of nothing but control batches (a transaction's
        // marker at the log end) waits as an empty read does instead of answering an empty set at once,
        // which an old consumer would ask again for in a loop.
        try {
          await downConvertAnswers(reads, targets, totalMax, version < 2 ? 0 : 1, ctx)
        } finally {
          if (held.length > 0) partitions.releaseLeases(held)
          held = []
        }
      }
      let bytes = 0
      let anyError = false
      for (const t of targets) {
        bytes += recordsBytes(t)
        // A consumer sent to another replica is answered at once (Kafka's hasPreferredReadReplica).
        if (t.errorCode !== ErrorCode.NONE || t.preferredReadReplica >= 0) anyError = true
      }
      const remaining = deadline - Date.now()
      if (bytes >= Math.min(req.minBytes, totalMax) || anyError || remaining <= 0 || targets.length === 0 || ctx.connection.isClosed) break
      partitions.releaseLeases(held)
      await partitions.waitForAppends(reads, remaining)
    }
    if (held.length > 0) {
      const sent = held
      ctx.onResponseDone(() => partitions.releaseLeases(sent))
    }
    for (let i = 0; i < targets.length; i++) partitions.countFetched(reads[i]!.topic, recordsBytes(targets[i]!), targets[i]!.errorCode !== ErrorCode.NONE)

    if (session !== undefined) {
      // A duplicate of this request may have moved the session on while it waited.
      if (session.epoch !== nextEpoch(req.sessionEpoch) || sessions.get(session.id) !== session) {
        return sessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id)
      }
      const answer = incrementalAnswer(session, slots, usesTopicIds)
      const res = Fetch.createFetchResponse({ errorCode: ErrorCode.NONE, sessionId: session.id, responses: answer })
      if (version >= 16) addCurrentLeaders(res, ctx)
      return res
    }
    const sessionId = openSession ? openSessionWith(ctx, CONSUMER_REPLICA_ID, usesTopicIds, slots) : INVALID_SESSION_ID
    const res = Fetch.createFetchResponse({ errorCode: ErrorCode.NONE, sessionId, responses })
    if (version >= 16) addCurrentLeaders(res, ctx)
    return res
  },
})

/**
 * How often a follower's session by name reads all its partitions, not only those its watch saw change:
 * what changes no watch sees (a log start moved by retention on the leader) reaches the follower within it.
 * A sweep reads every partition the follower has, so it is what an idle cluster costs: at 100,000
 * partitions (RF 3, three brokers) each broker used 34-49% of a core idle with a 5 s sweep and 10-11% with
 * 60 s (bench/results/PROFILE-FAILOVER-SCALE.md). A follower the watch misses entirely still catches up:
 * out of the ISR after replica.lag.time.max.ms, it is read on every fetch.
 */
const FOLLOWER_SESSION_SWEEP_MS = 60_000

/** The replica id of a consumer's fetch (and its sessions). */
const CONSUMER_REPLICA_ID = -1

/** The session a request continues, or whether it asks for one; or the session error that answers it. */
type SessionStart = { session: FetchSession | undefined; openSession: boolean; error?: undefined } | { error: Fetch.FetchResponse }

/**
 * KIP-227 at the start of a fetch (see the file header). A full fetch (epoch 0 or -1) closes the session it
 * names; epoch 0 asks for a new one. An incremental fetch continues its session: the named partitions are
 * added or updated, the forgotten ones dropped, and the epoch moves on. A session is continued or closed
 * only by the kind of fetch that opened it, from the same replica: a consumer that guessed a follower's
 * session id can neither read as that follower nor end its session.
 */
function startSession(req: Fetch.FetchRequest, ctx: RequestContext, usesTopicIds: boolean, replicaId: number): SessionStart {
  if (ctx.apiVersion < 7) return { session: undefined, openSession: false }
  const sessions = ctx.fetchSessions
  if (req.sessionEpoch === INITIAL_EPOCH || req.sessionEpoch === FINAL_EPOCH) {
    if (req.sessionId !== INVALID_SESSION_ID && sessions.get(req.sessionId)?.replicaId === replicaId) sessions.remove(req.sessionId)
    return { session: undefined, openSession: req.sessionEpoch === INITIAL_EPOCH }
  }
  const session = sessions.get(req.sessionId)
  if (session === undefined || session.replicaId !== replicaId) return { error: sessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, INVALID_SESSION_ID) }
  if (session.epoch !== req.sessionEpoch) return { error: sessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID) }
  if (session.usesTopicIds !== usesTopicIds) return { error: sessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, INVALID_SESSION_ID) }
  updateSession(session, req, usesTopicIds, ctx)
  if (session.size === 0) {
    // Everything forgotten: the session ends, and the (empty) request is answered without one.
    sessions.remove(session.id)
    return { session: undefined, openSession: false }
  }
  sessions.touch(session, ctx.receivedAt)
  session.epoch = nextEpoch(session.epoch)
  return { session, openSession: false }
}

/** Opens a session holding the answered partitions of a full fetch; its id, or 0 when the cache keeps what it has. */
function openSessionWith(ctx: RequestContext, replicaId: number, usesTopicIds: boolean, slots: readonly Slot[], watch?: PartitionWatchPort): number {
  const opened = ctx.fetchSessions.create(ctx.receivedAt, replicaId, usesTopicIds, slots.length, (s) => {
    s.watch = watch
    for (const slot of slots) {
      const c = slot.cached!
      c.highWatermark = Number(slot.response.highWatermark)
      c.logStartOffset = Number(slot.response.logStartOffset)
      s.partitions.set(partitionKey(usesTopicIds, c.topic, c.topicId, c.partition), c)
    }
  })
  if (opened === undefined) watch?.close()
  return opened?.id ?? INVALID_SESSION_ID
}

/** Kafka's budget for a whole answer: min(the request's maxBytes, fetch.max.bytes). */
function fetchBudget(req: Fetch.FetchRequest, ctx: RequestContext): number {
  return Math.max(0, Math.min(req.maxBytes, ctx.configs.broker.getInt('fetch.max.bytes')))
}

/** A partition a full or sessionless fetch names, repeats merged, with its answer already in `responses`. */
interface NamedPartition {
  /** The topic's name, '' for an unknown id. */
  topic: string
  topicId: string
  /** The request's last entry for the partition. */
  p: Fetch.FetchPartition
  response: Fetch.PartitionData
}

/**
 * The partitions a request names, each once: a repeat keeps the first one's place in the answer and
 * takes its fetch offset, limits and epoch (Kafka keeps the request's partitions in a LinkedHashMap).
 * Fills `responses` with the answers, grouped by topic as asked; a topic entry left with nothing new
 * (all repeats) adds no topic to the answer.
 */
function namedPartitions(req: Fetch.FetchRequest, usesTopicIds: boolean, ctx: RequestContext, responses: Fetch.FetchableTopicResponse[], readCommitted: boolean): NamedPartition[] {
  const named: NamedPartition[] = []
  const byKey = new Map<string, NamedPartition>()
  for (const t of req.topics) {
    const topic = usesTopicIds ? (ctx.metadata.topicById(t.topicId)?.name ?? '') : t.topic
    let topicPartitions: Fetch.PartitionData[] | undefined
    for (const p of t.partitions) {
      const key = partitionKey(usesTopicIds, t.topic, t.topicId, p.partition)
      const earlier = byKey.get(key)
      if (earlier !== undefined) {
        earlier.p = p
        continue
      }
      if (topicPartitions === undefined) {
        topicPartitions = []
        responses.push(Fetch.createFetchableTopicResponse({ topic, topicId: t.topicId, partitions: topicPartitions }))
      }
      const response = partitionAnswer(p.partition, readCommitted)
      topicPartitions.push(response)
      const entry: NamedPartition = { topic, topicId: t.topicId, p, response }
      byKey.set(key, entry)
      named.push(entry)
    }
  }
  return named
}

function sessionError(errorCode: ErrorCode, sessionId: number): Fetch.FetchResponse {
  return Fetch.createFetchResponse({ errorCode, sessionId, responses: [] })
}

function partitionAnswer(partitionIndex: number, readCommitted: boolean): Fetch.PartitionData {
  return {
    partitionIndex,
    errorCode: ErrorCode.NONE,
    highWatermark: -1n,
    lastStableOffset: -1n,
    logStartOffset: -1n,
    divergingEpoch: NO_DIVERGING_EPOCH,
    currentLeader: NO_LEADER,
    snapshotId: NO_SNAPSHOT,
    abortedTransactions: readCommitted ? [] : null,
    preferredReadReplica: -1,
    records: EMPTY,
  }
}

function cacheEntry(topic: string, topicId: string, p: Fetch.FetchPartition, lastFetchedEpoch: number): CachedPartition {
  return {
    topic,
    topicId,
    partition: p.partition,
    fetchOffset: Number(p.fetchOffset),
    maxBytes: p.partitionMaxBytes,
    currentLeaderEpoch: p.currentLeaderEpoch,
    lastFetchedEpoch,
    readNext: true,
    highWatermark: -1,
    logStartOffset: -1,
  }
}

/** A follower's epoch of its last batch (v12+); -1 before, and from consumers (who send -1). */
function lastFetchedEpochOf(p: Fetch.FetchPartition, version: number): number {
  return version >= 12 ? p.lastFetchedEpoch : -1
}

/** Applies an incremental request to its session: named partitions added or updated, forgotten ones dropped. */
function updateSession(session: FetchSession, req: Fetch.FetchRequest, usesTopicIds: boolean, ctx: RequestContext): void {
  for (const t of req.topics) {
    const topic = usesTopicIds ? (ctx.metadata.topicById(t.topicId)?.name ?? '') : t.topic
    const topicId = usesTopicIds ? t.topicId : ZERO_UUID
    for (const p of t.partitions) {
      const key = partitionKey(usesTopicIds, topic, topicId, p.partition)
      const cached = session.partitions.get(key)
      if (cached === undefined) {
        session.partitions.set(key, {
          topic,
          topicId,
          partition: p.partition,
          fetchOffset: Number(p.fetchOffset),
          maxBytes: p.partitionMaxBytes,
          currentLeaderEpoch: p.currentLeaderEpoch,
          lastFetchedEpoch: lastFetchedEpochOf(p, ctx.apiVersion),
          readNext: true,
          highWatermark: -1,
          logStartOffset: -1,
        })
        session.watch?.add(key)
      } else {
        cached.fetchOffset = Number(p.fetchOffset)
        cached.maxBytes = p.partitionMaxBytes
        cached.currentLeaderEpoch = p.currentLeaderEpoch
        cached.lastFetchedEpoch = lastFetchedEpochOf(p, ctx.apiVersion)
        cached.readNext = true
      }
    }
  }
  for (const f of req.forgottenTopicsData) {
    for (const partition of f.partitions) {
      const key = partitionKey(usesTopicIds, f.topic, usesTopicIds ? f.topicId : ZERO_UUID, partition)
      if (session.partitions.delete(key)) session.watch?.delete(key)
    }
  }
}

/**
 * The partitions of an incremental answer, in session order: those with records, a new high watermark
 * or log start offset, a preferred read replica, a diverging epoch, or an error (Kafka's CachedPartition.maybeUpdateResponseData). The session
 * remembers what was answered; partitions that got records move to the end of its order.
 */
function incrementalAnswer(session: FetchSession, slots: readonly Slot[], usesTopicIds: boolean): Fetch.FetchableTopicResponse[] {
  const responses: Fetch.FetchableTopicResponse[] = []
  let current: Fetch.FetchableTopicResponse | undefined
  let moved: CachedPartition[] | undefined
  for (const slot of slots) {
    const cached = slot.cached!
    const r = slot.response
    let mustRespond = false
    const withRecords = recordsBytes(r) > 0
    if (withRecords) mustRespond = true
    const highWatermark = Number(r.highWatermark)
    const logStartOffset = Number(r.logStartOffset)
    if (cached.highWatermark !== highWatermark) {
      mustRespond = true
      cached.highWatermark = highWatermark
    }
    if (cached.logStartOffset !== logStartOffset) {
      mustRespond = true
      cached.logStartOffset = logStartOffset
    }
    // A consumer sent to another replica (KIP-392) must hear it, a follower whose log diverged too.
    if (r.preferredReadReplica >= 0 || r.divergingEpoch.epoch >= 0) mustRespond = true
    if (r.errorCode !== ErrorCode.NONE) {
      // Answered again once the error is gone.
      cached.highWatermark = -1
      mustRespond = true
    }
    if (!mustRespond) continue
    if (withRecords) (moved ??= []).push(cached)
    const same = current !== undefined && (usesTopicIds ? current.topicId === slot.topicId : current.topic === slot.topic)
    if (!same) {
      current = Fetch.createFetchableTopicResponse({ topic: slot.topic, topicId: slot.topicId, partitions: [] })
      responses.push(current)
    }
    current!.partitions.push(r)
  }
  if (moved !== undefined) {
    for (const c of moved) {
      const key = partitionKey(usesTopicIds, c.topic, c.topicId, c.partition)
      session.partitions.delete(key)
      session.partitions.set(key, c)
    }
  }
  return responses
}

/**
 * KIP-951 (v16+): partitions answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH carry the current
 * leader and epoch, and the answer the leaders' endpoints.
 */
function addCurrentLeaders(res: Fetch.FetchResponse, ctx: RequestContext): void {
  let leaders: Set<number> | undefined
  for (const t of res.responses) {
    for (const p of t.partitions) {
      if (p.errorCode !== ErrorCode.NOT_LEADER_OR_FOLLOWER && p.errorCode !== ErrorCode.FENCED_LEADER_EPOCH) continue
      // Answers carry the resolved topic name whatever the version (only v12- encode it).
      const leadership = ctx.metadata.partition(t.topic, p.partitionIndex)
      if (leadership === undefined) continue
      leaders ??= new Set()
      p.currentLeader = Fetch.createLeaderIdAndEpoch({ leaderId: leadership.leaderId, leaderEpoch: leadership.leaderEpoch })
      leaders.add(leadership.leaderId)
    }
  }
  if (leaders === undefined) return
  for (const b of ctx.metadata.brokers(ctx.connection.listenerName)) {
    if (leaders.has(b.nodeId)) res.nodeEndpoints.push(Fetch.createNodeEndpoint({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack }))
  }
}

function recordsBytes(p: Fetch.PartitionData): number {
  const r = p.records
  if (r === null) return 0
  if (Buffer.isBuffer(r)) return r.length
  let n = 0
  for (const c of r.chunks) n += c.length
  return n
}

/**
 * A partition read's outcome into its answer, records left empty: the error with unknown offsets, or the
 * offsets; returns the read when it succeeded. Consumer and follower fetches answer the same way.
 */
function answerOffsets<T extends { highWatermark: number; lastStableOffset: number; logStartOffset: number }>(result: Outcome<T>, response: Fetch.PartitionData): T | undefined {
  response.records = EMPTY
  if (!result.ok) {
    response.errorCode = result.errorCode
    response.highWatermark = -1n
    response.lastStableOffset = -1n
    response.logStartOffset = -1n
    return undefined
  }
  const r = result.value
  response.errorCode = ErrorCode.NONE
  response.highWatermark = BigInt(r.highWatermark)
  response.lastStableOffset = BigInt(r.lastStableOffset)
  response.logStartOffset = BigInt(r.logStartOffset)
  return r
}

/**
 * Reads every partition once (one message per shard) and fills the answers; returns the reads holding
 * segments. Answers in `emptyPastLogEnd` (a follower's, without a leader epoch) that fail
 * OFFSET_OUT_OF_RANGE at or above the follower's log start are answered empty instead; answers with a
 * preferred read replica get their offsets and no records.
 */
async function readAll(reads: ConsumerRead[], targets: Fetch.PartitionData[], totalMax: number, partitions: PartitionService, emptyPastLogEnd: ReadonlySet<Fetch.PartitionData> | undefined): Promise<PartitionRead[]> {
  const held: PartitionRead[] = []
  if (reads.length === 0) return held
  const results = await partitions.read(reads)
  let budget = totalMax
  let firstWithData = true
  for (let i = 0; i < results.length; i++) {
    const result = results[i]!
    const response = targets[i]!
    const r = answerOffsets(result, response)
    if (r === undefined) {
      if (response.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE && emptyPastLogEnd?.has(response) === true) answerPastFollowerLogEnd(reads[i]!, response, partitions)
      continue
    }
    if (r.regions.length > 0) held.push(r)
    if (response.abortedTransactions !== null) response.abortedTransactions = []
    if (r.bytes === 0 || response.preferredReadReplica >= 0) continue
    if (r.bytes <= budget || firstWithData) {
      response.records = { chunks: r.regions }
      if (response.abortedTransactions !== null) {
        response.abortedTransactions = r.abortedTransactions.map((a) => Fetch.createAbortedTransaction({ producerId: BigInt(a.producerId), firstOffset: BigInt(a.firstOffset) }))
      }
      budget = Math.max(0, budget - r.bytes)
      firstWithData = false
    }
  }
  return held
}

/**
 * Fetch v0-3: the records read for each answer, v2 batches in file regions, become a legacy message set
 * in memory (magic 0 for v0-1, 1 for v2-3; protocol/records/legacy-message-set.ts). Each partition is cut
 * at a message boundary within min(its read's maxBytes, what the answer's budget has left); the first
 * partition with data sends at least one whole message (minOneMessage). A partition whose stored batches
 * do not decode is answered with the error and no records. Only the regions answered are read, so the
 * memory is bounded by the budget, plus the one batch a minOneMessage read may return beyond it.
 */
async function downConvertAnswers(reads: readonly ConsumerRead[], targets: readonly Fetch.PartitionData[], totalMax: number, toMagic: 0 | 1, ctx: RequestContext): Promise<void> {
  let budget = totalMax
  let firstWithData = true
  for (let i = 0; i < targets.length; i++) {
    const response = targets[i]!
    const records = response.records
    if (records === null || Buffer.isBuffer(records)) continue
    const read = reads[i]!
    response.records = EMPTY
    const limit = Math.min(read.maxBytes, budget)
    if (limit <= 0 && !firstWithData) continue
    const data = await readRegionsAsync(records.chunks)
    try {
      const maxRecordBytes = decodedSizeLimit(topicSetting(ctx, read.topic, 'max.message.bytes') as number)
      const converted = downConvertBatches(data, { toMagic, fetchOffset: read.offset, maxBytes: limit, minOneMessage: firstWithData, maxRecordBytes })
      if (converted.count === 0) continue
      response.records = converted.set
      budget = Math.max(0, budget - converted.set.length)
      firstWithData = false
    } catch (err) {
      if (!(err instanceof KafkaError)) throw err
      ctx.log.warn({ topic: read.topic, partition: read.partition, offset: read.offset, err: err.message }, 'Fetch: stored batches could not be down-converted')
      response.errorCode = err.code === ErrorCode.INVALID_RECORD ? ErrorCode.CORRUPT_MESSAGE : err.code
    }
  }
}

/**
 * A follower's read past its log end by a client that gave no leader epoch (KIP-392, see the file header):
 * an empty answer at the follower's offsets, unless the offset is below its log start.
 */
function answerPastFollowerLogEnd(read: ConsumerRead, response: Fetch.PartitionData, partitions: PartitionService): void {
  const log = partitions.followerLog(read.topic, read.partition)
  if (log === undefined || read.offset < log.logStartOffset) return
  response.errorCode = ErrorCode.NONE
  response.highWatermark = BigInt(log.highWatermark)
  response.lastStableOffset = BigInt(log.highWatermark)
  response.logStartOffset = BigInt(log.logStartOffset)
  if (response.abortedTransactions !== null) response.abortedTransactions = []
}

/**
 * KIP-392's RackAwareReplicaSelector, when replica.selector.class names it: for a partition this broker
 * leads, the in-sync follower in the client's rack (holding the fetch offset) to send the client to, or
 * -1 to serve it here (not the leader, the leader in the client's rack, or no such follower). The
 * brokers' racks are looked up once per request, on first use.
 */
function rackAwareSelector(clientRack: string, ctx: RequestContext): ((topic: string, partition: number, fetchOffset: number) => number) | undefined {
  if (ctx.configs.broker.getString('replica.selector.class') !== RACK_AWARE_REPLICA_SELECTOR) return undefined
  let sameRack: Set<number> | undefined
  return (topic, partition, fetchOffset) => {
    const candidates = ctx.partitions.readReplicaCandidates(topic, partition, fetchOffset)
    if (candidates === undefined || candidates.length === 0) return -1
    if (sameRack === undefined) {
      // Live brokers with an endpoint on this listener (the client must be able to reach the follower).
      sameRack = new Set(ctx.metadata.brokers(ctx.connection.listenerName).filter((b) => b.rack === clientRack).map((b) => b.nodeId))
    }
    if (sameRack.has(ctx.metadata.nodeId)) return -1
    let best: (typeof candidates)[number] | undefined
    for (const c of candidates) {
      if (!sameRack.has(c.brokerId)) continue
      if (best === undefined || c.logEndOffset > best.logEndOffset || (c.logEndOffset === best.logEndOffset && c.lastCaughtUpMs > best.lastCaughtUpMs)) best = c
    }
    return best?.brokerId ?? -1
  }
}

/** A follower's fetch (see the file header): records up to the log end offset, in a session of its own kind. */
async function followerFetch(req: Fetch.FetchRequest, ctx: RequestContext, replicaId: number): Promise<Fetch.FetchResponse> {
  const version = ctx.apiVersion
  const usesTopicIds = version >= 13
  const { partitions, acl } = ctx
  const responses: Fetch.FetchableTopicResponse[] = []
  // Only brokers fetch as replicas (ClusterAction, CVE-2018-1288): a client that claimed a replica id would
  // read past the high watermark, skip its quotas, and move the leader's view of that replica (its ISR
  // membership, the HW, so acks=all answered for records no replica has). Refused as Kafka refuses it,
  // before any session is looked at.
  if (acl.enabled && !acl.authorize(ctx.connection, AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER, CLUSTER_NAME)) {
    for (const { response } of namedPartitions(req, usesTopicIds, ctx, responses, false)) response.errorCode = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return Fetch.createFetchResponse({ errorCode: ErrorCode.NONE, sessionId: INVALID_SESSION_ID, responses })
  }
  const started = startSession(req, ctx, usesTopicIds, replicaId)
  if (started.error !== undefined) return started.error
  const { session, openSession } = started
  const slots: Slot[] = []
  const reads: FollowerRead[] = []
  const targets: Fetch.PartitionData[] = []
  /** At the index of each read, its session entry (undefined for a sessionless fetch). */
  const readEntries: (CachedPartition | undefined)[] = []
  const serve = (topic: string, response: Fetch.PartitionData, partition: number, fetchOffset: number, maxBytes: number, currentLeaderEpoch: number, lastFetchedEpoch: number, cached: CachedPartition | undefined): void => {
    if (topic === '') {
      response.errorCode = ErrorCode.UNKNOWN_TOPIC_ID
      return
    }
    if (maxBytes < 0) {
      response.errorCode = ErrorCode.INVALID_FETCH_SIZE
      return
    }
    reads.push({ topic, partition, fetchOffset, maxBytes, currentLeaderEpoch, lastFetchedEpoch })
    targets.push(response)
    readEntries.push(cached)
  }
  const fromSession = (key: string, cached: CachedPartition): void => {
    const topic = usesTopicIds ? (ctx.metadata.topicById(cached.topicId)?.name ?? '') : cached.topic
    if (usesTopicIds) cached.topic = topic
    const response = partitionAnswer(cached.partition, false)
    slots.push({ topic, topicId: cached.topicId, response, cached })
    serve(topic, response, cached.partition, cached.fetchOffset, cached.maxBytes, cached.currentLeaderEpoch, cached.lastFetchedEpoch, cached)
    readKeys?.add(key)
  }
  // The watch a new session by name will have: made before the reads, so no append after them is missed.
  const watch = session?.watch ?? (openSession && !usesTopicIds ? partitions.watchForFollower() : undefined)
  /** The session partitions read by this fetch, when not all of them. */
  let readKeys: Set<string> | undefined
  if (session === undefined) {
    for (const { topic, topicId, p, response } of namedPartitions(req, usesTopicIds, ctx, responses, false)) {
      const lastFetchedEpoch = lastFetchedEpochOf(p, version)
      const cached = openSession ? cacheEntry(topic, topicId, p, lastFetchedEpoch) : undefined
      if (cached !== undefined) {
        slots.push({ topic, topicId, response, cached })
        watch?.add(partitionKey(false, topic, topicId, p.partition))
      }
      serve(topic, response, p.partition, Number(p.fetchOffset), p.partitionMaxBytes, p.currentLeaderEpoch, lastFetchedEpoch, cached)
    }
  } else if (watch === undefined || ctx.receivedAt - session.lastSweepMs >= FOLLOWER_SESSION_SWEEP_MS) {
    // Every partition of the session, at the position the follower last named: always for a session by
    // topic id, and every FOLLOWER_SESSION_SWEEP_MS for one by name (what no watch saw: a log start moved
    // by retention).
    session.lastSweepMs = ctx.receivedAt
    watch?.takeChanged()
    for (const [key, cached] of session.partitions) fromSession(key, cached)
  } else {
    // What changed since the last fetch (records, HW, log start, ISR or leadership), what the request named,
    // and what must be read again; an idle partition costs nothing. Its follower stays in the ISR: a
    // replica at the leader's log end is caught up however long ago it fetched (Kafka's isCaughtUp).
    const changed = watch.takeChanged()
    readKeys = new Set()
    for (const [key, cached] of session.partitions) if (cached.readNext || changed.has(key)) fromSession(key, cached)
  }
  const totalMax = fetchBudget(req, ctx)
  const deadline = ctx.receivedAt + Math.max(0, req.maxWaitMs)
  // What the answer carries (the last read's): ReplicationBytesOutPerSec and the leader's throttle count
  // it once, as Kafka's KafkaApis does, not the reads a long poll did before or the records past the budget.
  let bytes = 0
  let throttledBytes = 0
  let results: Outcome<FollowerPartitionRead>[] = []
  // A watch made for a session that this fetch fails to open must not outlive it.
  const newWatch = session === undefined ? watch : undefined
  for (;;) {
    const held: FollowerPartitionRead[] = []
    try {
      results = reads.length === 0 ? [] : await partitions.readForFollower(replicaId, reads)
    } catch (err) {
      newWatch?.close()
      throw err
    }
    let budget = totalMax
    let firstWithData = true
    bytes = 0
    throttledBytes = 0
    let anyError = false
    for (let i = 0; i < results.length; i++) {
      const result = results[i]!
      const response = targets[i]!
      response.divergingEpoch = NO_DIVERGING_EPOCH
      const r = answerOffsets(result, response)
      if (r === undefined) {
        anyError = true
        continue
      }
      if (r.regions.length > 0) held.push(r)
      if (r.divergingEpoch !== undefined) {
        response.divergingEpoch = Fetch.createEpochEndOffset({ epoch: r.divergingEpoch.leaderEpoch, endOffset: BigInt(r.divergingEpoch.endOffset) })
        anyError = true
        continue
      }
      if (r.bytes === 0) continue
      if (r.bytes <= budget || firstWithData) {
        response.records = { chunks: r.regions }
        budget = Math.max(0, budget - r.bytes)
        bytes += r.bytes
        if (r.throttled === true) throttledBytes += r.bytes
        firstWithData = false
      }
    }
    const remaining = deadline - Date.now()
    if (bytes >= req.minBytes || anyError || remaining <= 0 || (reads.length === 0 && session === undefined) || ctx.connection.isClosed) {
      if (held.length > 0) ctx.onResponseDone(() => partitions.releaseLeases(held))
      break
    }
    partitions.releaseLeases(held)
    if (session === undefined || watch === undefined) {
      await partitions.waitForAppends(reads, remaining, 'follower')
      continue
    }
    // A session waits on its watch, then reads again what it read and what changed meanwhile.
    await watch.wait(remaining)
    const changed = watch.takeChanged()
    if (readKeys !== undefined) for (const key of changed) if (!readKeys.has(key)) {
      const cached = session.partitions.get(key)
      if (cached !== undefined) fromSession(key, cached)
    }
  }
  // What the session's next fetch reads whatever its watch says (see CachedPartition.readNext).
  for (let i = 0; i < results.length; i++) {
    const cached = readEntries[i]
    if (cached === undefined) continue
    const result = results[i]!
    cached.readNext = !result.ok || result.value.divergingEpoch !== undefined || result.value.inSync === false || (result.value.bytes > 0 && recordsBytes(targets[i]!) === 0)
  }
  if (bytes > 0) partitions.countReplicationSent(bytes, throttledBytes)
  let res: Fetch.FetchResponse
  if (session !== undefined) {
    // A duplicate of this request may have moved the session on while it waited.
    if (session.epoch !== nextEpoch(req.sessionEpoch) || ctx.fetchSessions.get(session.id) !== session) return sessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id)
    res = Fetch.createFetchResponse({ errorCode: ErrorCode.NONE, sessionId: session.id, responses: incrementalAnswer(session, slots, usesTopicIds) })
  } else {
    const sessionId = openSession ? openSessionWith(ctx, replicaId, usesTopicIds, slots, watch) : INVALID_SESSION_ID
    res = Fetch.createFetchResponse({ errorCode: ErrorCode.NONE, sessionId, responses })
  }
  if (version >= 16) addCurrentLeaders(res, ctx)
  return res
}
