// AlterShareGroupOffsets: v0 (KIP-932; what Kafka 4.1 serves)
//
// Behavior (Kafka's KafkaApis.handleAlterShareGroupOffsetsRequest and the group coordinator's
// alterShareGroupOffsets):
// * Sets the start offset of share-partitions of an empty share group: each is initialized again by its
//   share coordinator (InitializeShareGroupState) with a state epoch one above its current one and no
//   in-flight records, so what was acquired, acknowledged or archived above it is forgotten and the group
//   next reads from the new start offset. The share-partition this broker holds in memory is dropped.
// * The group must be a share group coordinated here, and empty (NON_EMPTY_GROUP): common/share-group-offsets.ts.
//   A group-level error is the top-level ErrorCode and every partition's. Kafka 4.1 can alter the offsets
//   of a group that does not exist yet (it creates it); Skein answers GROUP_ID_NOT_FOUND.
// * A topic that does not exist, or a partition beyond its count: UNKNOWN_TOPIC_OR_PARTITION; a negative
//   start offset: INVALID_REQUEST.
// * Authorization (Kafka 4.x): Read on the group, else GROUP_AUTHORIZATION_FAILED; Read on each topic,
//   else TOPIC_AUTHORIZATION_FAILED for its partitions.
// Bounds: at most request.max.list.elements topics and partitions (the decoder refuses more); the
// share-partitions are initialized concurrently.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as Alter from '../../protocol/messages/91-alter-share-group-offsets.gen.js'
import { defineHandler } from './common/handler.js'
import { shareGroupTarget } from './common/share-group-offsets.js'

const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA'

export const alterShareGroupOffsetsHandler = defineHandler<Alter.AlterShareGroupOffsetsRequest, Alter.AlterShareGroupOffsetsResponse>({
  api: Alter.AlterShareGroupOffsetsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: Alter.decodeAlterShareGroupOffsetsRequest,
  encodeResponse: Alter.encodeAlterShareGroupOffsetsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const everyPartition = (errorCode: number, errorMessage: string | null): Alter.AlterShareGroupOffsetsResponse =>
      Alter.createAlterShareGroupOffsetsResponse({
        errorCode,
        errorMessage,
        responses: req.topics.map((t) =>
          Alter.createAlterShareGroupOffsetsResponseTopic({
            topicName: t.topicName,
            topicId: ctx.metadata.topic(t.topicName)?.topicId || ZERO_UUID,
            partitions: t.partitions.map((p) => Alter.createAlterShareGroupOffsetsResponsePartition({ partitionIndex: p.partitionIndex, errorCode, errorMessage })),
          }),
        ),
      })
    if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) return everyPartition(ErrorCode.GROUP_AUTHORIZATION_FAILED, null)
    const target = await shareGroupTarget(ctx, req.groupId, true)
    if (!target.ok) return everyPartition(target.errorCode, target.errorMessage)

    type Item = { topic: string; topicId: string; partition: number; startOffset: number; errorCode?: number; errorMessage?: string }
    const items: Item[][] = req.topics.map((t) => {
      const allowed = ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.TOPIC, t.topicName)
      const info = allowed ? ctx.metadata.topic(t.topicName) : undefined
      return t.partitions.map((p): Item => {
        const base = { topic: t.topicName, topicId: info?.topicId ?? '', partition: p.partitionIndex, startOffset: Number(p.startOffset) }
        if (!allowed) return { ...base, errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED }
        if (info === undefined || p.partitionIndex < 0 || p.partitionIndex >= info.partitions) return { ...base, errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION }
        if (p.startOffset < 0n || !Number.isSafeInteger(base.startOffset)) return { ...base, errorCode: ErrorCode.INVALID_REQUEST, errorMessage: `invalid start offset ${p.startOffset}` }
        return base
      })
    })
    const toReset = items.flat().filter((i) => i.errorCode === undefined)
    const answers = await target.offsets.reset(req.groupId, toReset)
    const answerOf = new Map(toReset.map((i, n) => [i, answers[n]!]))
    // The group's record of share-partitions with state gets those now initialized.
    const initialized = new Map<string, number[]>()
    toReset.forEach((i, n) => {
      if (answers[n]!.errorCode === ErrorCode.NONE) initialized.set(i.topicId, [...(initialized.get(i.topicId) ?? []), i.partition])
    })
    if (initialized.size > 0) await ctx.groups.current?.shareGroupStateChanged(req.groupId, { initialized: [...initialized] }).catch(() => undefined)
    return Alter.createAlterShareGroupOffsetsResponse({
      responses: req.topics.map((t, ti) =>
        Alter.createAlterShareGroupOffsetsResponseTopic({
          topicName: t.topicName,
          topicId: items[ti]![0]?.topicId || ZERO_UUID,
          partitions: items[ti]!.map((i) => {
            const a = answerOf.get(i)
            return Alter.createAlterShareGroupOffsetsResponsePartition({
              partitionIndex: i.partition,
              errorCode: a?.errorCode ?? i.errorCode ?? ErrorCode.NONE,
              errorMessage: a?.errorMessage ?? i.errorMessage ?? null,
            })
          }),
        }),
      ),
    })
  },
})
