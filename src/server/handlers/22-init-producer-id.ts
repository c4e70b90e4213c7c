// InitProducerId: v0-3
//
// Behavior:
// * transactionalId null (an idempotent producer): a producer id never handed out before, epoch 0,
//   from blocks reserved in the metadata store (producer-ids.ts: /latest_producer_id_block in ZooKeeper,
//   <log.dir>/producer-id-block on a single broker), so ids stay unique across restarts and brokers. Any broker answers it (kafkajs asks the controller, librdkafka any broker that advertises
//   v0, its IdempotentProducer feature).
// * v3+ with producerId and producerEpoch (KIP-360, after the client hit an error it recovers from by
//   bumping its epoch): the same id with epoch + 1 when they match the last ones handed out, the same
//   answer again for a retried bump, INVALID_PRODUCER_EPOCH for an older epoch; a producer id this
//   broker no longer remembers (handed out before a restart) or whose epoch is exhausted gets a new id
//   at epoch 0, as Kafka answers every idempotent InitProducerId.
// * producerId given without an epoch or the other way round -> INVALID_REQUEST (as Kafka).
// * transactionTimeoutMs is ignored for idempotent producers, as in Kafka.
// * transactionalId non-null and non-empty (a transactional producer): the transaction coordinator
//   (src/coordinator/transaction) answers, on this broker, which leads every partition of
//   __transaction_state (created by the first such request): a new id at epoch 0 for a new
//   transactional id, else the same id with epoch + 1 (a new id once the epoch is exhausted); an open
//   transaction of the previous epoch is aborted first (its producer is fenced); a transaction being
//   completed gets CONCURRENT_TRANSACTIONS (retriable); a timeout above transaction.max.timeout.ms or
//   below 1 gets INVALID_TRANSACTION_TIMEOUT; with v3+ producerId/epoch naming an older producer,
//   PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v4, as Kafka answers older clients). An empty
//   transactionalId is an idempotent producer, as in Kafka.
// Version notes:
// * v2+: flexible. v3+: producerId and producerEpoch in the request. v4+ (not served): an
//   ongoing-transaction retry semantics change; v5+: transaction version 2.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode, errorCodeOf } from '../../domain/errors.js'
import * as InitProducerId from '../../protocol/messages/22-init-producer-id.gen.js'
import { defineHandler } from './common/handler.js'

const NO_PRODUCER_ID = -1n
const NO_PRODUCER_EPOCH = -1

function failed(errorCode: ErrorCode): InitProducerId.InitProducerIdResponse {
  return InitProducerId.createInitProducerIdResponse({ errorCode, producerId: NO_PRODUCER_ID, producerEpoch: NO_PRODUCER_EPOCH })
}

export const initProducerIdHandler = defineHandler<InitProducerId.InitProducerIdRequest, InitProducerId.InitProducerIdResponse>({
  api: InitProducerId.InitProducerIdApi,
  minVersion: 0,
  maxVersion: 3,
  decodeRequest: InitProducerId.decodeInitProducerIdRequest,
  encodeResponse: InitProducerId.encodeInitProducerIdResponse,
  authorizes: true,
  async handle(req, ctx) {
    const givenId = req.producerId !== NO_PRODUCER_ID
    const givenEpoch = req.producerEpoch !== NO_PRODUCER_EPOCH
    if (givenId !== givenEpoch || req.producerId < NO_PRODUCER_ID || req.producerEpoch < NO_PRODUCER_EPOCH) return failed(ErrorCode.INVALID_REQUEST)
    if (req.transactionalId !== null && req.transactionalId !== '') {
      if (!ctx.acl.authorize(ctx.connection, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactionalId)) return failed(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
      try {
        const coordinator = await ctx.transactions.coordinator()
        const expected = givenId && req.producerId <= BigInt(Number.MAX_SAFE_INTEGER) ? { producerId: Number(req.producerId), producerEpoch: req.producerEpoch } : null
        const r = await coordinator.initProducerId(req.transactionalId, req.transactionTimeoutMs, expected)
        if (r.errorCode !== ErrorCode.NONE) return failed(r.errorCode === ErrorCode.PRODUCER_FENCED && ctx.apiVersion < 4 ? ErrorCode.INVALID_PRODUCER_EPOCH : r.errorCode)
        return InitProducerId.createInitProducerIdResponse({ producerId: BigInt(r.producerId), producerEpoch: r.producerEpoch })
      } catch (err) {
        const code = errorCodeOf(err)
        if (code === ErrorCode.UNKNOWN_SERVER_ERROR) ctx.log.error({ err }, 'InitProducerId failed')
        return failed(code)
      }
    }
    // An idempotent producer needs IdempotentWrite on the cluster or, as Kafka 3.0+ (KIP-679), Write on
    // some topic.
    if (!ctx.acl.authorize(ctx.connection, AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME) && !ctx.acl.authorizeByResourceType(ctx.connection, AclOperation.WRITE, ResourceType.TOPIC)) {
      return failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    }
    try {
      // An id beyond 2^53 was never handed out here: like any unknown id, it gets a new one.
      const known = givenId && req.producerId <= BigInt(Number.MAX_SAFE_INTEGER)
      const current = known ? { producerId: Number(req.producerId), producerEpoch: req.producerEpoch } : null
      const { producerId, producerEpoch } = await ctx.producerIds.initProducerId(current)
      return InitProducerId.createInitProducerIdResponse({ producerId: BigInt(producerId), producerEpoch })
    } catch (err) {
      const code = errorCodeOf(err)
      if (code === ErrorCode.UNKNOWN_SERVER_ERROR) ctx.log.error({ err }, 'InitProducerId failed')
      return failed(code)
    }
  },
})
