// OffsetDelete: v0
//
// Behavior:
// * Deletes committed offsets of a group (tombstones in __consumer_offsets). Allowed for an empty
//   group; a consumer group with members may lose offsets only of topics none of them subscribes to
//   (others: GROUP_SUBSCRIBED_TO_TOPIC); any other group with members: NON_EMPTY_GROUP. An unknown
//   group: GROUP_ID_NOT_FOUND.
// * Authorization (Kafka's): Delete on the group, else GROUP_AUTHORIZATION_FAILED for the request; Read
//   on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as OffsetDelete from '../../protocol/messages/47-offset-delete.gen.js'
import { defineHandler } from './common/handler.js'

export const offsetDeleteHandler = defineHandler<OffsetDelete.OffsetDeleteRequest, OffsetDelete.OffsetDeleteResponse>({
  api: OffsetDelete.OffsetDeleteApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: OffsetDelete.decodeOffsetDeleteRequest,
  encodeResponse: OffsetDelete.encodeOffsetDeleteResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.DELETE, ResourceType.GROUP, req.groupId)) return OffsetDelete.createOffsetDeleteResponse({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED })
    const readable = req.topics.filter((t) => ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.TOPIC, t.name))
    const denied = req.topics.filter((t) => !readable.includes(t)).map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED })) }))
    let result
    try {
      const coordinator = await ctx.groups.coordinator()
      result = await coordinator.deleteOffsets(req.groupId, readable.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => p.partitionIndex) })))
    } catch {
      result = { errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE, topics: [] }
    }
    return OffsetDelete.createOffsetDeleteResponse({
      errorCode: result.errorCode,
      topics: [...result.topics, ...(result.errorCode === ErrorCode.NONE ? denied : [])].map((t) =>
        OffsetDelete.createOffsetDeleteResponseTopic({
          name: t.name,
          partitions: t.partitions.map((p) => OffsetDelete.createOffsetDeleteResponsePartition({ partitionIndex: p.partitionIndex, errorCode: p.errorCode })),
        }),
      ),
    })
  },
})
