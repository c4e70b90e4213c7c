// Produce: v0-7 (v3-7 served; v0-2 advertised only for librdkafka, see below)
//
// Behavior:
// * Each partition's record batches go to the shard that owns the partition, one message per shard
//   for the whole request. The shard validates every batch header and CRC, assigns offsets in place
//   and writes; nothing of a partition's payload is written if any of its batches is bad, and the
//   partition gets the storage's error code (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE ...).
// * acks=-1 on a single broker waits for the ISR of one, i.e. the same as acks=1; acks=0 gets no
//   response at all; any other value gets INVALID_REQUIRED_ACKS.
// * Appends wake long-polling fetches of the partitions written.
// * Idempotent producers (batches with producerId >= 0): the partition's shard checks epoch and
//   sequence before writing (storage/producer-state.ts) and answers OUT_OF_ORDER_SEQUENCE_NUMBER,
//   INVALID_PRODUCER_EPOCH or UNKNOWN_PRODUCER_ID; a retry of one of the producer's last 5 batches is
//   answered NONE with the offsets it was first written at, and nothing is written again.
// * The broker accepts idempotent batches with any acks (acks=all is the client's rule, as in Kafka).
// * v0-2 (magic 0/1 message sets) are refused by closing the connection, as Kafka 4 does. They are
//   advertised only because librdkafka 2.0 turns compression off unless Produce v0 is in the range
//   (KAFKA-18659).
// Version notes:
// * v5+: log start offset in the response. v2+: log append time.
// Not implemented:
// * Transactional producers (transactionalId, transaction markers, LSO): step 4's second half. Their
//   batches get the idempotent checks only.
import { ErrorCode } from '../../domain/errors.js'
import * as Produce from '../../protocol/messages/00-produce.gen.js'
import { isRecordsPayload } from '../../protocol/primitives/types.js'
import { UnservableRequestError } from '../dispatcher.js'
import { partitionKey } from '../fetch-purgatory.js'
import { LEADER_EPOCH, leaderPartitionError } from '../partition-checks.js'
import { defineHandler } from '../registry.js'

interface Pending {
  topicIndex: number
  response: Produce.PartitionProduceResponse
}

export const produceHandler = defineHandler<Produce.ProduceRequest, Produce.ProduceResponse>({
  api: Produce.ProduceApi,
  minVersion: 0,
  maxVersion: 7,
  decodeRequest: Produce.decodeProduceRequest,
  encodeResponse: Produce.encodeProduceResponse,
  async handle(req, ctx) {
    if (ctx.apiVersion < 3) throw new UnservableRequestError(`Produce v${ctx.apiVersion} (message format v0/v1) is not supported; use v3 or later`)
    const { broker } = ctx
    const responses: Produce.TopicProduceResponse[] = []
    const appends: { topic: string; partition: number; records: Buffer; leaderEpoch: number }[] = []
    const waiting: Pending[] = []
    const validAcks = req.acks === 0 || req.acks === 1 || req.acks === -1
    for (let topicIndex = 0; topicIndex < req.topicData.length; topicIndex++) {
      const topicData = req.topicData[topicIndex]!
      const topic = broker.topics.get(topicData.name)
      const partitionResponses: Produce.PartitionProduceResponse[] = []
      responses.push(Produce.createTopicProduceResponse({ name: topicData.name, partitionResponses }))
      for (const p of topicData.partitionData) {
        const response = Produce.createPartitionProduceResponse({ index: p.index, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n })
        partitionResponses.push(response)
        response.errorCode = validAcks ? leaderPartitionError(topic, p.index) : ErrorCode.INVALID_REQUIRED_ACKS
        if (response.errorCode !== ErrorCode.NONE) continue
        if (p.records === null || isRecordsPayload(p.records) || p.records.length === 0) {
          response.errorCode = ErrorCode.INVALID_RECORD
          response.errorMessage = 'the partition has no record batches'
          continue
        }
        appends.push({ topic: topicData.name, partition: p.index, records: p.records, leaderEpoch: LEADER_EPOCH })
        waiting.push({ topicIndex, response })
      }
    }
    if (appends.length > 0) {
      const results = await broker.router.append(appends)
      for (let i = 0; i < results.length; i++) {
        const result = results[i]!
        const response = waiting[i]!.response
        if (result.ok) {
          response.baseOffset = BigInt(result.value.baseOffset)
          response.logAppendTimeMs = BigInt(result.value.logAppendTime)
          response.logStartOffset = BigInt(result.value.logStartOffset)
          // A duplicate wrote nothing: no fetch has anything new to wake for.
          if (result.value.duplicate !== true) broker.purgatory.notify(partitionKey(appends[i]!.topic, appends[i]!.partition))
        } else {
          response.errorCode = result.errorCode
          response.errorMessage = result.message
        }
      }
    }
    if (req.acks === 0) return null
    return Produce.createProduceResponse({ responses })
  },
})
