// DeleteRecords: v1-2
//
// Behavior:
// * Raises each partition's log start offset to the given offset (-1 = the high watermark) and deletes
//   the segments wholly below it; the answer's lowWatermark is the new log start offset (never lowered:
//   an offset below the current start answers the current start).
// * Unknown topic or partition -> UNKNOWN_TOPIC_OR_PARTITION; an offset above the high watermark, or
//   negative other than -1 -> OFFSET_OUT_OF_RANGE. Failed partitions answer lowWatermark -1 (Kafka's
//   INVALID_LOW_WATERMARK).
// * Authorization: Delete on the topic, else TOPIC_AUTHORIZATION_FAILED for its partitions (Kafka).
// * The change is done when the answer is sent (no replicas to wait for), so timeoutMs never expires.
// * A partition named twice in one request -> INVALID_REQUEST for the repeats.
// * Internal topics (__consumer_offsets, __transaction_state) -> INVALID_TOPIC_EXCEPTION, as Kafka's
//   ReplicaManager answers: only their coordinators remove what they hold.
// Version notes:
// * v2: flexible. No other differences.
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as DeleteRecords from '../../protocol/messages/21-delete-records.gen.js'
import { defineHandler } from './common/handler.js'
import type { RecordsDeletion } from './common/ports.js'

const INVALID_LOW_WATERMARK = -1n

export const deleteRecordsHandler = defineHandler<DeleteRecords.DeleteRecordsRequest, DeleteRecords.DeleteRecordsResponse>({
  api: DeleteRecords.DeleteRecordsApi,
  minVersion: 1,
  maxVersion: 2,
  decodeRequest: DeleteRecords.decodeDeleteRecordsRequest,
  encodeResponse: DeleteRecords.encodeDeleteRecordsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const { partitions } = ctx
    const topics: DeleteRecords.DeleteRecordsTopicResult[] = []
    const items: RecordsDeletion[] = []
    const targets: DeleteRecords.DeleteRecordsPartitionResult[] = []
    const seen = new Set<string>()
    for (const t of req.topics) {
      const results: DeleteRecords.DeleteRecordsPartitionResult[] = []
      topics.push(DeleteRecords.createDeleteRecordsTopicResult({ name: t.name, partitions: results }))
      for (const p of t.partitions) {
        const result = DeleteRecords.createDeleteRecordsPartitionResult({ partitionIndex: p.partitionIndex, lowWatermark: INVALID_LOW_WATERMARK })
        results.push(result)
        const key = `${t.name}\u0000${p.partitionIndex}`
        if (seen.has(key)) {
          result.errorCode = ErrorCode.INVALID_REQUEST
          continue
        }
        seen.add(key)
        if (!ctx.acl.authorize(ctx.connection, AclOperation.DELETE, ResourceType.TOPIC, t.name)) {
          result.errorCode = ErrorCode.TOPIC_AUTHORIZATION_FAILED
          continue
        }
        result.errorCode = partitions.leaderError(t.name, p.partitionIndex)
        if (result.errorCode !== ErrorCode.NONE) continue
        if (ctx.metadata.isInternalTopic(t.name)) {
          result.errorCode = ErrorCode.INVALID_TOPIC_EXCEPTION
          continue
        }
        // Offsets travel as int64; anything outside a safe integer is beyond any high watermark.
        if (p.offset < -1n || p.offset > BigInt(Number.MAX_SAFE_INTEGER)) {
          result.errorCode = ErrorCode.OFFSET_OUT_OF_RANGE
          continue
        }
        items.push({ topic: t.name, partition: p.partitionIndex, offset: Number(p.offset) })
        targets.push(result)
      }
    }
    const outcomes = await partitions.deleteRecords(items)
    for (const [i, outcome] of outcomes.entries()) {
      const result = targets[i]!
      if (outcome.ok) {
        result.lowWatermark = BigInt(outcome.value)
      } else {
        result.errorCode = outcome.errorCode
        if (outcome.errorCode === ErrorCode.UNKNOWN_SERVER_ERROR) ctx.log.error({ error: outcome.message }, 'DeleteRecords failed')
      }
    }
    return DeleteRecords.createDeleteRecordsResponse({ topics })
  },
})
