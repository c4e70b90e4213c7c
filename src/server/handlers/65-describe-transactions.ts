// DescribeTransactions: v0
//
// Behavior:
// * For each transactional id: its state (Kafka's names: Empty, Ongoing, PrepareCommit, PrepareAbort,
//   CompleteCommit, CompleteAbort), timeout, start time of the open transaction (-1 when none),
//   producer id and epoch, and the partitions of the open transaction. An unknown id gets
//   TRANSACTIONAL_ID_NOT_FOUND; while __transaction_state replays COORDINATOR_LOAD_IN_PROGRESS; when the
//   topic does not exist yet every id is unknown (nothing is created for a describe).
// Version notes:
// * v0 is flexible.
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as DescribeTransactions from '../../protocol/messages/65-describe-transactions.gen.js'
import { defineHandler } from './common/handler.js'

export const describeTransactionsHandler = defineHandler<DescribeTransactions.DescribeTransactionsRequest, DescribeTransactions.DescribeTransactionsResponse>({
  api: DescribeTransactions.DescribeTransactionsApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: DescribeTransactions.decodeDescribeTransactionsRequest,
  encodeResponse: DescribeTransactions.encodeDescribeTransactionsResponse,
  async handle(req, ctx) {
    const failed = (transactionalId: string, errorCode: number) =>
      DescribeTransactions.createTransactionState({ transactionalId, errorCode, transactionState: '', transactionTimeoutMs: 0, transactionStartTimeMs: -1n, producerId: -1n, producerEpoch: -1 })
    if (!ctx.transactions.topicExists()) {
      return DescribeTransactions.createDescribeTransactionsResponse({ transactionStates: req.transactionalIds.map((id) => failed(id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)) })
    }
    try {
      const coordinator = await ctx.transactions.coordinator()
      const described = await coordinator.describeTransactions(req.transactionalIds)
      return DescribeTransactions.createDescribeTransactionsResponse({
        transactionStates: described.map((d) =>
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
                topics: d.topics.map((t) => DescribeTransactions.createTopicData({ topic: t.topic, partitions: t.partitions })),
              }),
        ),
      })
    } catch (err) {
      const code = err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE
      return DescribeTransactions.createDescribeTransactionsResponse({ transactionStates: req.transactionalIds.map((id) => failed(id, code)) })
    }
  },
})
