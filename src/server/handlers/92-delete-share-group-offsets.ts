// DeleteShareGroupOffsets: v0 (KIP-932; what Kafka 4.1 serves)
//
// Behavior (Kafka's KafkaApis.handleDeleteShareGroupOffsetsRequest and the group coordinator's
// deleteShareGroupOffsets):
// * Deletes the state of every share-partition of each topic named, for an empty share group: each
//   share coordinator forgets it (DeleteShareGroupState), so a member that fetches the topic again starts
//   it afresh from share.auto.offset.reset. The share-partitions this broker holds in memory are dropped.
// * The group must be a share group coordinated here, and empty (NON_EMPTY_GROUP): common/share-group-offsets.ts;
//   a group-level error is the top-level ErrorCode, with no topics.
// * Per topic: UNKNOWN_TOPIC_OR_PARTITION when it does not exist; a share coordinator's error for one of
//   its partitions is the topic's.
// * Authorization (Kafka 4.x): Delete on the group, else GROUP_AUTHORIZATION_FAILED; Read on each topic,
//   else TOPIC_AUTHORIZATION_FAILED for it.
// Bounds: at most request.max.list.elements topics (the decoder refuses more); their share-partitions are
// deleted concurrently.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as Delete from '../../protocol/messages/92-delete-share-group-offsets.gen.js'
import { defineHandler } from './common/handler.js'
import { shareGroupTarget, topicSharePartitions } from './common/share-group-offsets.js'

const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA'

export const deleteShareGroupOffsetsHandler = defineHandler<Delete.DeleteShareGroupOffsetsRequest, Delete.DeleteShareGroupOffsetsResponse>({
  api: Delete.DeleteShareGroupOffsetsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Delete.decodeDeleteShareGroupOffsetsRequest,
  encodeResponse: Delete.encodeDeleteShareGroupOffsetsResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.DELETE, ResourceType.GROUP, req.groupId)) {
      return Delete.createDeleteShareGroupOffsetsResponse({ errorCode: ErrorCode.GROUP_AUTHORIZATION_FAILED })
    }
    const target = await shareGroupTarget(ctx, req.groupId, true)
    if (!target.ok) return Delete.createDeleteShareGroupOffsetsResponse({ errorCode: target.errorCode, errorMessage: target.errorMessage })
    const responses = await Promise.all(
      req.topics.map(async (t) => {
        const answer = (errorCode: number, errorMessage: string | null = null, topicId = ZERO_UUID): Delete.DeleteShareGroupOffsetsResponseTopic =>
          Delete.createDeleteShareGroupOffsetsResponseTopic({ topicName: t.topicName, topicId, errorCode, errorMessage })
        if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.TOPIC, t.topicName)) return answer(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        const parts = topicSharePartitions(ctx, t.topicName)
        if (parts === undefined) return answer(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 'The topic does not exist.')
        const results = await target.offsets.remove(req.groupId, parts)
        const failed = results.find((r) => r.errorCode !== ErrorCode.NONE)
        // The topic leaves the group's record of share-partitions with state (initialized again when assigned).
        if (failed === undefined && parts.length > 0) await ctx.groups.current?.shareGroupStateChanged(req.groupId, { deletedTopicIds: [parts[0]!.topicId] }).catch(() => undefined)
        return answer(failed?.errorCode ?? ErrorCode.NONE, failed?.errorMessage ?? null, parts[0]?.topicId || ZERO_UUID)
      }),
    )
    return Delete.createDeleteShareGroupOffsetsResponse({ responses })
  },
})
