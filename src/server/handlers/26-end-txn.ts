// EndTxn: v1-3
//
// Behavior:
// * committed=true/false ends the producer's ongoing transaction: PrepareCommit/PrepareAbort is written
//   to __transaction_state and the answer goes out; the coordinator then writes a COMMIT/ABORT marker
//   to every partition of the transaction (the group's __consumer_offsets partition included, which
//   commits or drops its TxnOffsetCommit offsets) and finally CompleteCommit/CompleteAbort. Until then
//   the producer's next AddPartitionsToTxn gets CONCURRENT_TRANSACTIONS (retriable).
// * A retried EndTxn of a completed transaction with the same outcome is answered NONE; the other
//   outcome, or no transaction at all, INVALID_TXN_STATE; unknown id or producer id
//   INVALID_PRODUCER_ID_MAPPING; an older epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2).
// * Authorization: Write on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka).
// Version notes:
// * v3+: flexible. v2: PRODUCER_FENCED. v4+ (transaction version 2, epoch in the answer): not advertised.
// Not implemented:
// * v0: not advertised (no client of the four sends it; Kafka 4 removed it).
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as EndTxn from '../../protocol/messages/26-end-txn.gen.js'
import { defineHandler } from './common/handler.js'
import { fencedForVersion, producerIdOf } from './common/transactional.js'

export const endTxnHandler = defineHandler<EndTxn.EndTxnRequest, EndTxn.EndTxnResponse>({
  api: EndTxn.EndTxnApi,
  minVersion: 1,
  maxVersion: 3,
  decodeRequest: EndTxn.decodeEndTxnRequest,
  encodeResponse: EndTxn.encodeEndTxnResponse,
  authorizes: true,
  async handle(req, ctx) {
    const answer = (errorCode: number) => EndTxn.createEndTxnResponse({ errorCode: fencedForVersion(errorCode, ctx.apiVersion < 2) })
    if (!ctx.acl.authorize(ctx.connection, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactionalId)) return answer(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    const producerId = producerIdOf(req.producerId)
    if (producerId === null) return answer(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
    try {
      const coordinator = await ctx.transactions.coordinator()
      return answer((await coordinator.endTxn(req.transactionalId, producerId, req.producerEpoch, req.committed)).errorCode)
    } catch (err) {
      return answer(err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE)
    }
  },
})
