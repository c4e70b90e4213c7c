// AddPartitionsToTxn: v0-3
//
// Behavior:
// * Adds partitions to the producer's transaction (the transaction coordinator on this broker, which
//   leads every partition of __transaction_state): Empty/Complete* -> Ongoing, its start time set; a
//   partition already in the ongoing transaction is answered NONE without a write.
// * Every partition gets the same answer: INVALID_PRODUCER_ID_MAPPING (unknown transactional id or a
//   producer id that is not its current one), PRODUCER_FENCED for an older epoch (INVALID_PRODUCER_EPOCH
//   before v2, as Kafka answers older clients), CONCURRENT_TRANSACTIONS while the previous transaction's
//   markers are written (retriable), COORDINATOR_LOAD_IN_PROGRESS while __transaction_state replays.
// * A partition that does not exist gets UNKNOWN_TOPIC_OR_PARTITION and the others
//   OPERATION_NOT_ATTEMPTED; nothing is added (Kafka's rule).
// * Authorization (Kafka's): Write on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED for
//   every partition; Write on each topic, else TOPIC_AUTHORIZATION_FAILED for its partitions and
//   OPERATION_NOT_ATTEMPTED for the others (nothing is added).
// Version notes:
// * v3+: flexible. v2: PRODUCER_FENCED. v4+ (batched, broker-to-broker verification): not advertised.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as AddPartitionsToTxn from '../../protocol/messages/24-add-partitions-to-txn.gen.js'
import { defineHandler } from './common/handler.js'
import { fencedForVersion, producerIdOf } from './common/transactional.js'

export const addPartitionsToTxnHandler = defineHandler<AddPartitionsToTxn.AddPartitionsToTxnRequest, AddPartitionsToTxn.AddPartitionsToTxnResponse>({
  api: AddPartitionsToTxn.AddPartitionsToTxnApi,
  minVersion: 0,
  maxVersion: 3,
  decodeRequest: AddPartitionsToTxn.decodeAddPartitionsToTxnRequest,
  encodeResponse: AddPartitionsToTxn.encodeAddPartitionsToTxnResponse,
  authorizes: true,
  async handle(req, ctx) {
    const topics = req.v3AndBelowTopics
    const answer = (codeFor: (topic: string, partition: number) => number): AddPartitionsToTxn.AddPartitionsToTxnResponse =>
      AddPartitionsToTxn.createAddPartitionsToTxnResponse({
        resultsByTopicV3AndBelow: topics.map((t) =>
          AddPartitionsToTxn.createAddPartitionsToTxnTopicResult({
            name: t.name,
            resultsByPartition: t.partitions.map((p) => AddPartitionsToTxn.createAddPartitionsToTxnPartitionResult({ partitionIndex: p, partitionErrorCode: codeFor(t.name, p) })),
          }),
        ),
      })
    if (!ctx.acl.authorize(ctx.connection, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.v3AndBelowTransactionalId)) return answer(() => ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    const unwritable = new Set(topics.filter((t) => !ctx.acl.authorize(ctx.connection, AclOperation.WRITE, ResourceType.TOPIC, t.name)).map((t) => t.name))
    const unknown = new Set<string>()
    for (const t of topics) {
      if (unwritable.has(t.name)) continue
      // Any broker may lead the partition (the coordinator only records it): the cluster's metadata decides.
      for (const p of t.partitions) if (ctx.metadata.partition(t.name, p) === undefined) unknown.add(`${t.name}\u0000${p}`)
    }
    if (unknown.size > 0 || unwritable.size > 0) {
      return answer((t, p) => (unwritable.has(t) ? ErrorCode.TOPIC_AUTHORIZATION_FAILED : unknown.has(`${t}\u0000${p}`) ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : ErrorCode.OPERATION_NOT_ATTEMPTED))
    }
    const producerId = producerIdOf(req.v3AndBelowProducerId)
    if (producerId === null) return answer(() => ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    let code: number
    try {
      const coordinator = await ctx.transactions.coordinator()
      const partitions = topics.flatMap((t) => t.partitions.map((partition) => ({ topic: t.name, partition })))
      code = await coordinator.addPartitions(req.v3AndBelowTransactionalId, producerId, req.v3AndBelowProducerEpoch, partitions)
    } catch (err) {
      code = (err as { code?: number }).code ?? ErrorCode.COORDINATOR_NOT_AVAILABLE
    }
    const final = fencedForVersion(code, ctx.apiVersion < 2)
    return answer(() => final)
  },
})
