// ShareFetch: v1 (KIP-932; what librdkafka 2.15 sends)
//
// Behavior (Kafka's KafkaApis.handleShareFetchRequest and SharePartitionManager):
// * Request-level errors, answered with no partition: INVALID_GROUP_ID for an empty group id,
//   INVALID_REQUEST for an empty member id or acknowledgements in a request that opens a session,
//   GROUP_AUTHORIZATION_FAILED without Read on the group, and the share session's errors:
//   SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED
//   (group.share.max.share.sessions).
// * Share sessions (replication/share/share-sessions.ts): epoch 0 opens the member's session with the
//   partitions named; later epochs add the partitions named and drop ForgottenTopicsData; every fetch
//   acquires from all of the session's partitions. Epoch -1 applies the acknowledgements, fetches
//   nothing, closes the session and releases the records the member still holds.
// * Each partition: UNKNOWN_TOPIC_ID (unknown topic id), TOPIC_AUTHORIZATION_FAILED (no Read on the
//   topic), UNKNOWN_TOPIC_OR_PARTITION or NOT_LEADER_OR_FOLLOWER (with CurrentLeader, and the leaders in
//   NodeEndpoints). Kafka's ShareFetch does not check the group's assignment; neither does this.
// * Acknowledgements carried by the request are applied first (AcknowledgeErrorCode per partition:
//   INVALID_RECORD_STATE for records the member does not hold, INVALID_REQUEST for malformed batches);
//   then records are acquired (replication/share/share-partition-manager.ts: MaxRecords, MaxBytes with
//   one batch at least unless it is 0, MinBytes / MaxWaitMs long poll) and answered as the log holds them
//   (whole batches, sent with sendfile) with AcquiredRecords. Records is an empty field, never null, when
//   there are none (librdkafka fails on a null one). The session's partitions are taken in an order
//   rotated by the session epoch, so none is starved by the answer's limits.
// * The answer holds every partition named by the request, and of the rest of the session those with
//   records or an error. AcquisitionLockTimeoutMs is the group's share.record.lock.duration.ms.
import { ErrorCode } from '../../domain/errors.js'
import * as ShareFetch from '../../protocol/messages/78-share-fetch.gen.js'
import type { RequestContext } from './common/context.js'
import { defineHandler } from './common/handler.js'
import type { ShareAcknowledgeItem, ShareFetchPartitionResult, SharePartitionRef } from './common/ports.js'
import { ackBatches, currentLeaders, sharePartitionResolver, shareRequestError } from './common/share-requests.js'

const EMPTY = Buffer.alloc(0)
const SHARE_INITIAL_EPOCH = 0

/** One partition of the answer as it is being built. */
interface Slot {
  topicId: string
  partition: number
  named: boolean
  errorCode: number
  ackErrorCode: number
  ackErrorMessage: string | null
  /** The partition when it is served here. */
  ref?: SharePartitionRef
  fetched?: ShareFetchPartitionResult
}

export const shareFetchHandler = defineHandler<ShareFetch.ShareFetchRequest, ShareFetch.ShareFetchResponse>({
  api: ShareFetch.ShareFetchApi,
  minVersion: 1,
  maxVersion: 1,
  decodeRequest: ShareFetch.decodeShareFetchRequest,
  encodeResponse: ShareFetch.encodeShareFetchResponse,
  authorizes: true,
  async handle(req, ctx) {
    const shares = ctx.sharePartitions
    const requestError = shareRequestError(ctx, req.groupId, req.memberId)
    if (requestError !== ErrorCode.NONE) return failed(requestError)
    const group = req.groupId!
    const memberId = req.memberId!
    const hasAcks = req.topics.some((t) => t.partitions.some((p) => p.acknowledgementBatches.length > 0))
    if (req.shareSessionEpoch === SHARE_INITIAL_EPOCH && hasAcks) return failed(ErrorCode.INVALID_REQUEST, 'Acknowledge data present in the request that opens a share session')
    const step = shares.beginRequest(group, memberId, req.shareSessionEpoch, ctx.connection, true)
    if (step.session === undefined) return failed(step.errorCode)
    const { session, final } = step

    const resolve = sharePartitionResolver(ctx)
    const slots = new Map<string, Slot>()
    const acks = new Map<string, ShareAcknowledgeItem>()
    for (const t of req.topics) {
      for (const p of t.partitions) {
        const key = `${t.topicId}:${p.partitionIndex}`
        let slot = slots.get(key)
        if (slot === undefined) {
          const resolved = resolve(t.topicId, p.partitionIndex)
          slot = { topicId: t.topicId, partition: p.partitionIndex, named: true, errorCode: resolved.errorCode, ackErrorCode: ErrorCode.NONE, ackErrorMessage: null, ref: resolved.ref }
          slots.set(key, slot)
          // Only partitions served here join the session: named garbage must not grow it.
          if (!final && resolved.ref !== undefined) session.add(t.topicId, p.partitionIndex)
          if (resolved.ref !== undefined && p.acknowledgementBatches.length > 0) acks.set(key, { ...resolved.ref, batches: [] })
        }
        if (p.acknowledgementBatches.length === 0) continue
        const item = acks.get(key)
        if (item === undefined) slot.ackErrorCode = slot.errorCode
        else (item.batches as ReturnType<typeof ackBatches>).push(...ackBatches(p.acknowledgementBatches))
      }
    }
    if (!final) for (const f of req.forgottenTopicsData) for (const p of f.partitions) session.forget(f.topicId, p)

    // Acknowledgements first: the records they release may be acquired by this very fetch.
    if (acks.size > 0) {
      const keys = [...acks.keys()]
      const results = await shares.acknowledge(group, memberId, [...acks.values()])
      keys.forEach((key, i) => {
        const slot = slots.get(key)!
        slot.ackErrorCode = results[i]!.errorCode
        slot.ackErrorMessage = results[i]!.message
      })
    }

    if (final) {
      shares.closeSession(session)
    } else {
      const refs: SharePartitionRef[] = []
      const refSlots: Slot[] = []
      for (const [key, sp] of session.partitions) {
        let slot = slots.get(key)
        if (slot === undefined) {
          const resolved = resolve(sp.topicId, sp.partition)
          slot = { topicId: sp.topicId, partition: sp.partition, named: false, errorCode: resolved.errorCode, ackErrorCode: ErrorCode.NONE, ackErrorMessage: null, ref: resolved.ref }
          slots.set(key, slot)
        }
        if (slot.ref === undefined) continue
        refs.push(slot.ref)
        refSlots.push(slot)
      }
      // Round robin by session epoch (Kafka's PartitionRotateStrategy): the first partitions get the
      // answer's MaxBytes and MaxRecords first, so each takes a turn at the front.
      const turn = req.shareSessionEpoch > 0 && refs.length > 1 ? req.shareSessionEpoch % refs.length : 0
      if (turn > 0) {
        refs.push(...refs.splice(0, turn))
        refSlots.push(...refSlots.splice(0, turn))
      }
      const answer = await shares.fetch(
        {
          group, memberId, maxWaitMs: req.maxWaitMs, minBytes: req.minBytes, maxBytes: req.maxBytes, maxRecords: req.maxRecords,
          receivedAt: ctx.receivedAt, abandoned: () => ctx.connection.isClosed,
        },
        refs,
      )
      if (answer.held.length > 0) ctx.onResponseDone(() => shares.releaseLeases(answer.held))
      answer.partitions.forEach((r, i) => {
        const slot = refSlots[i]!
        slot.fetched = r
        if (r.errorCode !== ErrorCode.NONE) slot.errorCode = r.errorCode
      })
    }
    return answerOf(slots, ctx, shares.lockDurationMs(group), req.shareSessionEpoch === SHARE_INITIAL_EPOCH)
  },
})

function failed(errorCode: number, errorMessage: string | null = null): ShareFetch.ShareFetchResponse {
  return ShareFetch.createShareFetchResponse({ errorCode, errorMessage })
}

function answerOf(slots: Map<string, Slot>, ctx: RequestContext, lockMs: number, full: boolean): ShareFetch.ShareFetchResponse {
  const leaders = currentLeaders(ctx)
  const byTopic = new Map<string, ShareFetch.ShareFetchableTopicResponse>()
  for (const slot of slots.values()) {
    const acquired = slot.fetched?.acquired ?? []
    if (!full && !slot.named && slot.errorCode === ErrorCode.NONE && acquired.length === 0) continue
    const p = ShareFetch.createPartitionData({
      partitionIndex: slot.partition,
      errorCode: slot.errorCode,
      acknowledgeErrorCode: slot.ackErrorCode,
      acknowledgeErrorMessage: slot.ackErrorMessage,
      currentLeader: ShareFetch.createLeaderIdAndEpoch({ leaderId: -1, leaderEpoch: -1 }),
      records: slot.fetched !== undefined && slot.fetched.records.length > 0 ? { chunks: slot.fetched.records } : EMPTY,
      acquiredRecords: acquired.map((a) => ShareFetch.createAcquiredRecords({ firstOffset: BigInt(a.firstOffset), lastOffset: BigInt(a.lastOffset), deliveryCount: a.deliveryCount })),
    })
    if (slot.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER) p.currentLeader = ShareFetch.createLeaderIdAndEpoch(leaders.leaderOf(slot.topicId, slot.partition))
    let t = byTopic.get(slot.topicId)
    if (t === undefined) byTopic.set(slot.topicId, (t = ShareFetch.createShareFetchableTopicResponse({ topicId: slot.topicId })))
    t.partitions.push(p)
  }
  return ShareFetch.createShareFetchResponse({
    acquisitionLockTimeoutMs: lockMs,
    responses: [...byTopic.values()],
    nodeEndpoints: leaders.endpoints().map((e) => ShareFetch.createNodeEndpoint(e)),
  })
}
