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
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as DescribeTransactions from '../../protocol/messages/65-describe-transactions.gen.js'
import { defineHandler } from './common/handler.js'

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
    const allowed = req.transactionalIds.filter((id) => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, id))
    const denied = req.transactionalIds.filter((id) => !allowed.includes(id)).map((id) => failed(id, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    if (!ctx.transactions.topicExists()) {
      return DescribeTransactions.createDescribeTransactionsResponse({ transactionStates: [...allowed.map((id) => failed(id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)), ...denied] })
    }
    try {
      const coordinator = await ctx.transactions.coordinator()
      const described = allowed.length === 0 ? [] : await coordinator.describeTransactions(allowed)
      const describable = (topic: string): boolean => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
      return DescribeTransactions.createDescribeTransactionsResponse({
        transactionStates: [...described.map((d) =>
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
        ), ...denied],
      })
    } catch (err) {
      const code = err instanceof KafkaError ? err.code : ErrorCode.COORDINATOR_NOT_AVAILABLE
      return DescribeTransactions.createDescribeTransactionsResponse({ transactionStates: [...allowed.map((id) => failed(id, code)), ...denied] })
    }
  },
})
