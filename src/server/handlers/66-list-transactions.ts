// ListTransactions: v0-1
//
// Behavior:
// * Every transactional id this broker coordinates (all of them: it leads every partition of
//   __transaction_state), filtered by state names (Kafka's), producer ids and (v1) duration: only
//   transactions started more than durationFilter ms ago; -1 = no filter. State names Kafka does not
//   know are answered in unknownStateFilters and match nothing.
// * No __transaction_state yet: an empty list. While it replays: COORDINATOR_LOAD_IN_PROGRESS with
//   what is loaded so far.
// * Authorization: only the transactional ids the principal may Describe are listed (Kafka).
// Version notes:
// * v1: durationFilter. v0 is flexible.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as ListTransactions from '../../protocol/messages/66-list-transactions.gen.js'
import { defineHandler } from './common/handler.js'

export const listTransactionsHandler = defineHandler<ListTransactions.ListTransactionsRequest, ListTransactions.ListTransactionsResponse>({
  api: ListTransactions.ListTransactionsApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: ListTransactions.decodeListTransactionsRequest,
  encodeResponse: ListTransactions.encodeListTransactionsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const unknownStateFilters = req.stateFilters.filter((s) => !ctx.transactions.isStateName(s))
    if (!ctx.transactions.topicExists()) return ListTransactions.createListTransactionsResponse({ unknownStateFilters })
    const producerIds = req.producerIdFilters.filter((p) => p >= 0n && p <= BigInt(Number.MAX_SAFE_INTEGER)).map(Number)
    // A filter naming only ids that cannot exist matches nothing.
    if (req.producerIdFilters.length > 0 && producerIds.length === 0) return ListTransactions.createListTransactionsResponse({ unknownStateFilters })
    try {
      const coordinator = await ctx.transactions.coordinator()
      const known = req.stateFilters.filter((s) => ctx.transactions.isStateName(s))
      if (req.stateFilters.length > 0 && known.length === 0) return ListTransactions.createListTransactionsResponse({ unknownStateFilters })
      const r = await coordinator.listTransactions({ states: known, producerIds, durationMs: ctx.apiVersion >= 1 ? Number(req.durationFilter) : -1 })
      return ListTransactions.createListTransactionsResponse({
        errorCode: r.errorCode,
        unknownStateFilters,
        transactionStates: r.transactions.filter((t) => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactionalId)).map((t) => ListTransactions.createTransactionState({ transactionalId: t.transactionalId, producerId: BigInt(t.producerId), transactionState: t.state })),
      })
    } catch (err) {
      return ListTransactions.createListTransactionsResponse({ errorCode: err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE, unknownStateFilters })
    }
  },
})
