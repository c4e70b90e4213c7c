// DescribeProducers: v0
//
// Behavior:
// * For each partition, the producers with state on it (Kafka's ProducerStateManager view): producer id
//   and epoch, the sequence of the last batch remembered, the time of its last write, the epoch of the
//   transaction coordinator that wrote its last marker here, and the first offset of its open
//   transaction (-1 when none). Operators use it to find a producer holding back the last stable offset.
// * The partition service's leader check decides: unknown topic or partition ->
//   UNKNOWN_TOPIC_OR_PARTITION, a partition led by another broker -> NOT_LEADER_OR_FOLLOWER (none today:
//   this broker leads every partition); other partitions are still answered. A partition named twice ->
//   INVALID_REQUEST for the repeat.
// * Authorization: Read on the topic, else TOPIC_AUTHORIZATION_FAILED for its partitions (Kafka).
// Version notes:
// * v0: flexible (the only version).
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, errorName } from '../../domain/errors.js'
import * as DescribeProducers from '../../protocol/messages/61-describe-producers.gen.js'
import { defineHandler } from './common/handler.js'
import type { TopicPartitionRef } from './common/ports.js'

export const describeProducersHandler = defineHandler<DescribeProducers.DescribeProducersRequest, DescribeProducers.DescribeProducersResponse>({
  api: DescribeProducers.DescribeProducersApi,
  minVersion: 0,
  maxVersion: 0,
  decodeRequest: DescribeProducers.decodeDescribeProducersRequest,
  encodeResponse: DescribeProducers.encodeDescribeProducersResponse,
  authorizes: true,
  async handle(req, ctx) {
    const { partitions } = ctx
    const topics: DescribeProducers.TopicResponse[] = []
    const items: TopicPartitionRef[] = []
    const targets: DescribeProducers.PartitionResponse[] = []
    const seen = new Set<string>()
    for (const t of req.topics) {
      const responses: DescribeProducers.PartitionResponse[] = []
      topics.push(DescribeProducers.createTopicResponse({ name: t.name, partitions: responses }))
      for (const index of t.partitionIndexes) {
        const response = DescribeProducers.createPartitionResponse({ partitionIndex: index })
        responses.push(response)
        const key = `${t.name}\u0000${index}`
        if (seen.has(key)) {
          response.errorCode = ErrorCode.INVALID_REQUEST
          response.errorMessage = `partition ${t.name}-${index} is named twice`
          continue
        }
        seen.add(key)
        response.errorCode = ctx.acl.authorize(ctx.connection, AclOperation.READ, ResourceType.TOPIC, t.name) ? partitions.leaderError(t.name, index) : ErrorCode.TOPIC_AUTHORIZATION_FAILED
        if (response.errorCode !== ErrorCode.NONE) {
          response.errorMessage = errorName(response.errorCode)
          continue
        }
        items.push({ topic: t.name, partition: index })
        targets.push(response)
      }
    }
    const outcomes = await partitions.describeProducers(items)
    for (const [i, outcome] of outcomes.entries()) {
      const response = targets[i]!
      if (!outcome.ok) {
        response.errorCode = outcome.errorCode
        response.errorMessage = outcome.message
        if (outcome.errorCode === ErrorCode.UNKNOWN_SERVER_ERROR) ctx.log.error({ error: outcome.message }, 'DescribeProducers failed')
        continue
      }
      response.activeProducers = outcome.value.map((p) => DescribeProducers.createProducerState({
        producerId: BigInt(p.producerId),
        producerEpoch: p.producerEpoch,
        lastSequence: p.lastSequence,
        lastTimestamp: BigInt(p.lastTimestamp),
        coordinatorEpoch: p.coordinatorEpoch,
        currentTxnStartOffset: BigInt(p.currentTxnStartOffset),
      }))
    }
    return DescribeProducers.createDescribeProducersResponse({ topics })
  },
})
