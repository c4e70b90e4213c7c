// InitProducerId: v0-3
//
// Behavior:
// * transactionalId null (an idempotent producer): a producer id never handed out before, epoch 0,
//   from blocks reserved in <dataDir>/producer-id-block (producer-ids.ts), so ids stay unique across
//   restarts. Any broker answers it (kafkajs asks the controller, librdkafka any broker that advertises
//   v0, its IdempotentProducer feature).
// * v3+ with producerId and producerEpoch (KIP-360, after the client hit an error it recovers from by
//   bumping its epoch): the same id with epoch + 1 when they match the last ones handed out, the same
//   answer again for a retried bump, INVALID_PRODUCER_EPOCH for an older epoch; a producer id this
//   broker no longer remembers (handed out before a restart) or whose epoch is exhausted gets a new id
//   at epoch 0, as Kafka answers every idempotent InitProducerId.
// * producerId given without an epoch or the other way round -> INVALID_REQUEST (as Kafka).
// * transactionTimeoutMs is ignored for idempotent producers, as in Kafka.
// Version notes:
// * v2+: flexible. v3+: producerId and producerEpoch in the request. v4+ (not served): an
//   ongoing-transaction retry semantics change; v5+: transaction version 2.
// Not implemented:
// * transactionalId non-null (transactional producers): there is no transaction coordinator yet, and
//   the answer is TRANSACTIONAL_ID_AUTHORIZATION_FAILED, what Kafka answers a client that may not use
//   transactions. It is not retriable, so clients fail at once with a fatal error instead of retrying
//   a COORDINATOR_NOT_AVAILABLE until their timeout.
import { ErrorCode, errorCodeOf } from '../../domain/errors.js'
import * as InitProducerId from '../../protocol/messages/22-init-producer-id.gen.js'
import { defineHandler } from '../registry.js'

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
  async handle(req, ctx) {
    if (req.transactionalId !== null) return failed(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    const givenId = req.producerId !== NO_PRODUCER_ID
    const givenEpoch = req.producerEpoch !== NO_PRODUCER_EPOCH
    if (givenId !== givenEpoch || req.producerId < NO_PRODUCER_ID || req.producerEpoch < NO_PRODUCER_EPOCH) return failed(ErrorCode.INVALID_REQUEST)
    try {
      // An id beyond 2^53 was never handed out here: like any unknown id, it gets a new one.
      const known = givenId && req.producerId <= BigInt(Number.MAX_SAFE_INTEGER)
      const current = known ? { producerId: Number(req.producerId), producerEpoch: req.producerEpoch } : null
      const { producerId, producerEpoch } = await ctx.broker.producerIds.initProducerId(current)
      return InitProducerId.createInitProducerIdResponse({ producerId: BigInt(producerId), producerEpoch })
    } catch (err) {
      const code = errorCodeOf(err)
      if (code === ErrorCode.UNKNOWN_SERVER_ERROR) ctx.broker.log.error({ err }, 'InitProducerId failed')
      return failed(code)
    }
  },
})
