// AddOffsetsToTxn: v0-1
//
// Behavior:
// * Adds the group's __consumer_offsets partition (abs(hash(groupId)) % partitions, created with the
//   group coordinator if needed) to the producer's transaction, so that EndTxn writes the marker there
//   too and the group coordinator commits or drops the TxnOffsetCommit offsets on it.
// * Errors as AddPartitionsToTxn: INVALID_PRODUCER_ID_MAPPING, INVALID_PRODUCER_EPOCH (PRODUCER_FENCED
//   from v2, not served), CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS; an empty group id
//   gets INVALID_GROUP_ID.
// * Authorization (Kafka's): Write on the transactional id (else TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
//   then Read on the group (else GROUP_AUTHORIZATION_FAILED).
// Version notes:
// * v1: same as v0 (throttle on quota violation). v2 (PRODUCER_FENCED) and v3+ (flexible) are not
//   advertised (no client of the four needs them).
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as AddOffsetsToTxn from '../../protocol/messages/25-add-offsets-to-txn.gen.js'
import { defineHandler } from './common/handler.js'
import { fencedForVersion, producerIdOf } from './common/transactional.js'

export const addOffsetsToTxnHandler = defineHandler<AddOffsetsToTxn.AddOffsetsToTxnRequest, AddOffsetsToTxn.AddOffsetsToTxnResponse>({
  api: AddOffsetsToTxn.AddOffsetsToTxnApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: AddOffsetsToTxn.decodeAddOffsetsToTxnRequest,
  encodeResponse: AddOffsetsToTxn.encodeAddOffsetsToTxnResponse,
  authorizes: true,
  async handle(req, ctx) {
    const answer = (errorCode: number) => AddOffsetsToTxn.createAddOffsetsToTxnResponse({ errorCode: fencedForVersion(errorCode, ctx.apiVersion < 2) })
    if (!ctx.acl.authorize(ctx.connection, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactionalId)) return answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if (!ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.GROUP, req.groupId)) return answer(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if (req.groupId === '') return answer(ErrorCode.INVALID_GROUP_ID)
    const producerId = producerIdOf(req.producerId)
    if (producerId === null) return answer(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    try {
      const groups = await ctx.groups.coordinator()
      const transactions = await ctx.transactions.coordinator()
      const partition = groups.partitionFor(req.groupId)
      return answer(await transactions.addPartitions(req.transactionalId, producerId, req.producerEpoch, [{ topic: ctx.groups.topicName, partition }]))
    } catch (err) {
      return answer(err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE)
    }
  },
})
