// ListOffsets: v0-5
//
// Behavior:
// * -2 (earliest) answers the log start offset; -1 (latest) the high watermark, or with isolation level
//   read_committed (1, v2+) the last stable offset (the first offset of the oldest open transaction), -3 the offset of the largest timestamp, any other value the
//   first offset whose batch timestamp is >= it (offset -1, timestamp -1 when there is none, as Kafka).
// * A current leader epoch newer than this broker's gives UNKNOWN_LEADER_EPOCH, an older one
//   FENCED_LEADER_EPOCH; -1 skips the check.
// * A partition named twice in one request gets INVALID_REQUEST (Kafka).
// Bounds (docs/broker.md, "Requests are bounded"):
// * A request names at most request.max.list.elements topics and partitions in all (100,000 by
//   default; the decoder refuses more and the connection closes), so its memory is bounded by that.
// * The loops over its partitions (checks, then the answers) run in slices of 10 ms of main-thread time
//   (src/domain/main-thread-slices.ts), each followed by a turn of the event loop: other clients' requests
//   are served while a large one is answered; a request whose connection closes meanwhile stops there.
// Version notes:
// * v2+: isolation level. v4+: current leader epoch and leader epoch in the answer.
// * v0 (deprecated; Kafka 4.0 removed it, Kafka 3.x serves it): the answer is a list of offsets, at most
//   MaxNumOffsets of them. Served because tools still send it: Burrow's sarama asks every leader for its
//   log end with a bare v0 request (test/compat/go/RESULTS.md). -1 answers [high watermark], -2 [log start
//   offset], a timestamp [the v1 answer's offset] (none when there is none).
// Differs from Kafka:
// * v0 answers one offset at most. Kafka's legacy lookup also lists older segments' base offsets when
//   MaxNumOffsets > 1, and for a timestamp it uses the segments' file modification times, not the records'
//   timestamps; no client this project knows asks for more than one.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as ListOffsets from '../../protocol/messages/02-list-offsets.gen.js'
import { defineHandler, requestSlices } from './common/handler.js'
import type { OffsetLookup } from './common/ports.js'

const READ_COMMITTED = 1

export const listOffsetsHandler = defineHandler<ListOffsets.ListOffsetsRequest, ListOffsets.ListOffsetsResponse>({
  api: ListOffsets.ListOffsetsApi,
  minVersion: 0,
  maxVersion: 5,
  decodeRequest: ListOffsets.decodeListOffsetsRequest,
  encodeResponse: ListOffsets.encodeListOffsetsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const { partitions } = ctx
    const topics: ListOffsets.ListOffsetsTopicResponse[] = []
    const lookups: OffsetLookup[] = []
    const isolation = ctx.apiVersion >= 2 && req.isolationLevel === READ_COMMITTED ? 'read_committed' : 'read_uncommitted'
    const targets: ListOffsets.ListOffsetsPartitionResponse[] = []
    // v0: how many offsets each target may list (its MaxNumOffsets).
    const maxOffsets: number[] = []
    // The partitions named so far, per topic.
    const seen = new Map<string, Set<number>>()
    const slices = requestSlices(ctx)
    for (const t of req.topics) {
      const responses: ListOffsets.ListOffsetsPartitionResponse[] = []
      topics.push(ListOffsets.createListOffsetsTopicResponse({ name: t.name, partitions: responses }))
      const denied = !ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)
      let seenOfTopic = seen.get(t.name)
      if (seenOfTopic === undefined) seen.set(t.name, (seenOfTopic = new Set()))
      for (const p of t.partitions) {
        const turn = slices.turn()
        if (turn !== undefined) await turn
        const response = ListOffsets.createListOffsetsPartitionResponse({ partitionIndex: p.partitionIndex, timestamp: -1n, offset: -1n, leaderEpoch: -1 })
        responses.push(response)
        if (denied) {
          response.errorCode = ErrorCode.TOPIC_AUTHORIZATION_FAILED
          continue
        }
        if (seenOfTopic.has(p.partitionIndex)) {
          response.errorCode = ErrorCode.INVALID_REQUEST
          continue
        }
        seenOfTopic.add(p.partitionIndex)
        response.errorCode = partitions.leaderError(t.name, p.partitionIndex, p.currentLeaderEpoch)
        if (response.errorCode !== ErrorCode.NONE) continue
        lookups.push({ topic: t.name, partition: p.partitionIndex, timestamp: Number(p.timestamp), isolation })
        targets.push(response)
        maxOffsets.push(p.maxNumOffsets)
      }
    }
    if (lookups.length > 0) {
      const results = await partitions.listOffsets(lookups)
      for (const [i, result] of results.entries()) {
        const turn = slices.turn()
        if (turn !== undefined) await turn
        const response = targets[i]!
        if (result.ok && ctx.apiVersion === 0) {
          // Kafka lists nothing for a MaxNumOffsets of 0 (or below); no offset found lists nothing either.
          if (maxOffsets[i]! >= 1 && result.value.offset >= 0) response.oldStyleOffsets = [BigInt(result.value.offset)]
        } else if (result.ok) {
          response.offset = BigInt(result.value.offset)
          response.timestamp = BigInt(result.value.timestamp)
          // v0-3 answers carry no leader epoch; the codec refuses anything but the default there.
          response.leaderEpoch = ctx.apiVersion >= 4 ? result.value.leaderEpoch : -1
        } else {
          response.errorCode = result.errorCode
        }
      }
    }
    return ListOffsets.createListOffsetsResponse({ topics })
  },
})
