// DescribeTransactions: v0
//
// Behavior:
// * For each transactional id: its state (Kafka's names: Empty, Ongoing, PrepareCommit, PrepareAbort,
//   CompleteCommit, CompleteAbort), timeout, start time of the open transaction (-1 when none),
//   producer id and epoch, and the partitions of the open transaction. An unknown id gets
//   TRANSACTIONAL_ID_NOT_FOUND; while __transaction_state replays COORDINATOR_LOAD_IN_PROGRESS; when the
//   topic does not exist yet every id is unknown (nothing is created for a describe).
// * Authorization (Kafka's): Describe on the transactional id, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//   for it; the partitions of topics the principal may not Describe are left out of the answer.
// Version notes:
// * v0 is flexible.
// Bounds (docs/broker.md, "Requests are bounded"): at most request.max.list.elements ids (the decoder refuses
// more); they are checked, described and answered in ~10 ms slices of main-thread time.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as DescribeTransactions from '../../protocol/messages/65-describe-transactions.gen.js'
import { AbandonedWorkError, inTimedChunks } from '../../domain/main-thread-slices.js'
import { defineHandler, requestAbandoned, requestSlices } from './common/handler.js'

export const describeTransactionsHandler = defineHandler<DescribeTransactions.DescribeTransactionsRequest, DescribeTransactions.DescribeTransactionsResponse>({
  api: DescribeTransactions.DescribeTransactionsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: DescribeTransactions.decodeDescribeTransactionsRequest,
  encodeResponse: DescribeTransactions.encodeDescribeTransactionsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const failed = (transactionalId: string, errorCode: number) =>
      DescribeTransactions.createTransactionState({ transactionalId, errorCode, transactionState: '', transactionTimeoutMs: 0, transactionStartTimeMs: -1n, producerId: -1n, producerEpoch: -1 })
    const slices = requestSlices(ctx)
    // One pass over the ids (a list of 100,000 is checked in slices, never compared with itself).
    const isAllowed = await slices.map(req.transactionalIds, (id) => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, id))
    const allowed = req.transactionalIds.filter((_, i) => isAllowed[i])
    const denied = req.transactionalIds.filter((_, i) => !isAllowed[i]).map((id) => failed(id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    if (!ctx.transactions.topicExists()) {
      return DescribeTransactions.createDescribeTransactionsResponse({ transactionStates: [...allowed.map((id) => failed(id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)), ...denied] })
    }
    try {
      const coordinator = await ctx.transactions.coordinator()
      // In chunks of ~10 ms of main-thread time, each answered before the next is asked.
      const described = await inTimedChunks(allowed, (chunk) => coordinator.describeTransactions(chunk), requestAbandoned(ctx))
      const describable = (topic: string): boolean => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
      return DescribeTransactions.createDescribeTransactionsResponse({
        transactionStates: [...(await slices.map(described, (d) =>
          d.errorCode !== ErrorCode.NONE
            ? failed(d.transactionalId, d.errorCode)
            : DescribeTransactions.createTransactionState({
                transactionalId: d.transactionalId,
                errorCode: ErrorCode.NONE,
                transactionState: d.state,
                transactionTimeoutMs: d.timeoutMs,
                transactionStartTimeMs: BigInt(d.startTimestamp),
                producerId: BigInt(d.producerId),
                producerEpoch: d.producerEpoch,
                topics: d.topics.filter((t) => describable(t.topic)).map((t) => DescribeTransactions.createTopicData({ topic: t.topic, partitions: t.partitions })),
              }),
        )), ...denied],
      })
    } catch (err) {
      if (err instanceof AbandonedWorkError) throw err
      const code = err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE
      return DescribeTransactions.createDescribeTransactionsResponse({ transactionStates: [...allowed.map((id) => failed(id, code)), ...denied] })
    }
  },
})
