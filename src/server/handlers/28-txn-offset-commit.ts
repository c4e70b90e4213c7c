// TxnOffsetCommit: v1-3
//
// Behavior:
// * The group coordinator writes the offsets to the group's __consumer_offsets partition as one
//   transactional batch of the producer; they are pending, not visible to OffsetFetch (and answered
//   UNSTABLE_OFFSET_COMMIT to requireStable fetches) until the transaction's COMMIT marker reaches that
//   partition (EndTxn), and dropped by an ABORT marker. A restart replays batches and markers the same way.
// * v3 (KIP-447): generationId/memberId/groupInstanceId are checked against the group like an
//   OffsetCommit's (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID), so a zombie member of an
//   old generation cannot commit; -1/''/null skip the check.
// * Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION, oversize metadata OFFSET_METADATA_TOO_LARGE; a
//   fenced producer (older epoch) INVALID_PRODUCER_EPOCH from the partition's producer state.
// * Authorization (Kafka's): Write on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for
//   every partition), Read on the group (else GROUP_AUTHORIZATION_FAILED), Read on each topic (else
//   TOPIC_AUTHORIZATION_FAILED for its partitions, the others committed).
// Version notes:
// * v3+: flexible, group metadata. v2+: committed leader epoch.
// Not implemented:
// * v0: not advertised (no client of the four sends it). v4+: not advertised.
// * The coordinator does not check that AddOffsetsToTxn came first (Kafka 3.x does not either).
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as TxnOffsetCommit from '../../protocol/messages/28-txn-offset-commit.gen.js'
import { defineHandler } from './common/handler.js'
import type { PartitionErrors } from './common/ports.js'
import { producerIdOf } from './common/transactional.js'

export const txnOffsetCommitHandler = defineHandler<TxnOffsetCommit.TxnOffsetCommitRequest, TxnOffsetCommit.TxnOffsetCommitResponse>({
  api: TxnOffsetCommit.TxnOffsetCommitApi,
  minVersion: 1,
  maxVersion: 3,
  decodeRequest: TxnOffsetCommit.decodeTxnOffsetCommitRequest,
  encodeResponse: TxnOffsetCommit.encodeTxnOffsetCommitResponse,
  authorizes: true,
  async handle(req, ctx) {
    const all = (errorCode: number): PartitionErrors[] =>
      req.topics.map((t) => ({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: errorCode as ErrorCode })) }))
    let results: PartitionErrors[]
    const producerId = producerIdOf(req.producerId)
    const unreadable = req.topics.filter((t) => !ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.TOPIC, t.name))
    const readable = req.topics.filter((t) => !unreadable.includes(t))
    if (!ctx.acl.authorize(ctx.connection, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactionalId)) results = all(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) results = all(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    else if (req.groupId === '') results = all(ErrorCode.INVALID_GROUP_ID)
    else if (producerId === null) results = all(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    else {
      try {
        const groups = await ctx.groups.coordinator()
        const v3 = ctx.apiVersion >= 3
        results = await groups.txnCommitOffsets({
          transactionalId: req.transactionalId,
          groupId: req.groupId,
          producerId,
          producerEpoch: req.producerEpoch,
          generationId: v3 ? req.generationId : -1,
          memberId: v3 ? req.memberId : '',
          groupInstanceId: v3 ? req.groupInstanceId : null,
          topics: readable.map((t) => ({
            name: t.name,
            partitions: t.partitions.map((p) => ({
              partitionIndex: p.partitionIndex,
              committedOffset: p.committedOffset,
              committedLeaderEpoch: ctx.apiVersion >= 2 ? p.committedLeaderEpoch : -1,
              committedMetadata: p.committedMetadata,
            })),
          })),
        })
        for (const t of unreadable) results.push({ name: t.name, partitions: t.partitions.map((p) => ({ partitionIndex: p.partitionIndex, errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED })) })
      } catch (err) {
        results = all(err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE)
      }
    }
    return TxnOffsetCommit.createTxnOffsetCommitResponse({
      topics: results.map((t) =>
        TxnOffsetCommit.createTxnOffsetCommitResponseTopic({
          name: t.name,
          partitions: t.partitions.map((p) => TxnOffsetCommit.createTxnOffsetCommitResponsePartition({ partitionIndex: p.partitionIndex, errorCode: p.errorCode })),
        }),
      ),
    })
  },
})
