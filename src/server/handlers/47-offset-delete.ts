// OffsetDelete: v0
//
// Behavior:
// * Deletes committed offsets of a group (tombstones in __consumer_offsets). Allowed for an empty
//   group; a consumer group with members may lose offsets only of topics none of them subscribes to
//   (others: GROUP_SUBSCRIBED_TO_TOPIC); any other group with members: NON_EMPTY_GROUP. An unknown
//   group: GROUP_ID_NOT_FOUND.
import { ErrorCode } from '../../domain/errors.js'
import * as OffsetDelete from '../../protocol/messages/47-offset-delete.gen.js'
import { defineHandler } from './common/handler.js'

export const offsetDeleteHandler = defineHandler<OffsetDelete.OffsetDeleteRequest, OffsetDelete.OffsetDeleteResponse>({
  api: OffsetDelete.OffsetDeleteApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: OffsetDelete.decodeOffsetDeleteRequest,
  encodeResponse: OffsetDelete.encodeOffsetDeleteResponse,
  async handle(req, ctx) {
    let result
    try {
      const coordinator = await ctx.groups.coordinator()
      result = await coordinator.deleteOffsets(req.groupId, req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => p.partitionIndex) })))
    } catch {
      result = { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, topics: [] }
    }
    return OffsetDelete.createOffsetDeleteResponse({
      errorCode: result.errorCode,
      topics: result.topics.map((t) =>
        OffsetDelete.createOffsetDeleteResponseTopic({
          name: t.name,
          partitions: t.partitions.map((p) => OffsetDelete.createOffsetDeleteResponsePartition({ partitionIndex: p.partitionIndex, errorCode: p.errorCode })),
        }),
      ),
    })
  },
})
