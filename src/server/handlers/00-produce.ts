// Produce: v0-11
//
// Behavior:
// * Each partition's record batches are appended as leader by the partition service, one message per
//   shard for the whole request. The shard validates every batch as Kafka's LogValidator does (header,
//   CRC, then every record, compressed batches decompressed in bounded chunks: see
//   protocol/records/validate.ts), assigns offsets in place and writes; nothing of a partition's payload
//   is written if any of its batches is bad, and the partition gets the storage's error code
//   (CORRUPT_MESSAGE for records that do not decode or decompress, INVALID_RECORD, MESSAGE_TOO_LARGE ...).
// * A batch refused for some of its records (KIP-467: keyless records on a compacted topic, records whose
//   CreateTime is out of message.timestamp.before/after.max.ms) is refused whole, as Kafka does: v8+
//   answers list those records in recordErrors (their index in the batch and why) and errorMessage is
//   Kafka's summary ("One or more records have been rejected due to ..."). Other errors carry the
//   storage's message as errorMessage (Kafka leaves it null for them).
// * acks=-1 waits until the in-sync replicas have the records (the high watermark passes them; on a
//   single broker the leader alone, i.e. the same as acks=1): NOT_ENOUGH_REPLICAS when the ISR is below
//   min.insync.replicas at append, NOT_ENOUGH_REPLICAS_AFTER_APPEND when it fell below meanwhile,
//   REQUEST_TIMED_OUT after the request's timeoutMs. acks=1 answers after the leader's append; acks=0
//   gets no response at all; any other value gets INVALID_REQUIRED_ACKS.
// * Internal topics (__consumer_offsets, __transaction_state) are written by their coordinators only:
//   a client's produce to them gets INVALID_TOPIC_EXCEPTION, as Kafka answers.
// * Appends wake long-polling fetches of the partitions written (the partition service does it).
// * Idempotent producers (batches with producerId >= 0): the partition's shard checks epoch and
//   sequence before writing (storage/producer-state.ts) and answers OUT_OF_ORDER_SEQUENCE_NUMBER,
//   INVALID_PRODUCER_EPOCH or UNKNOWN_PRODUCER_ID; a retry of one of the producer's last 5 batches is
//   answered NONE with the offsets it was first written at, and nothing is written again.
// * Transactional producers (batches flagged transactional, after InitProducerId with a transactional
//   id and AddPartitionsToTxn): a batch opens or extends the producer's transaction on the partition,
//   which holds back the last stable offset until the transaction coordinator writes the COMMIT or
//   ABORT marker (EndTxn); a non-transactional batch while one is open gets INVALID_TXN_STATE
//   (storage/producer-state.ts). Whether AddPartitionsToTxn came first is not verified here (Kafka 3.6+
//   can ask its coordinator, KIP-890).
// * The broker accepts idempotent batches with any acks (acks=all is the client's rule, as in Kafka).
// * With an authorizer: Write on each topic (TOPIC_AUTHORIZATION_FAILED for its partitions) and, with a
//   transactional id, Write on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for every partition).
// * v0-2 carry legacy message sets (magic 0/1), served as Kafka 3.x serves them (Kafka 4 removed them,
//   KIP-896): each partition's set is checked whole and up-converted on this thread to ONE RecordBatch v2
//   (protocol/records/legacy-message-set.ts: sizes, CRC-32, one magic, a compressed wrapper alone and
//   holding no wrapper, decompression bounded by decodedSizeLimit(max.message.bytes); producer id -1;
//   magic 0 records get timestamp -1 as in Kafka's LogValidator, and a LogAppendTime topic stamps the
//   batch at append as for any batch). A compressed set is stored recompressed with its own codec (what
//   Kafka does with compression.type=producer), an uncompressed one uncompressed. The batch then takes
//   the normal append path above. A set that fails a check answers its partition with Kafka's code
//   (CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE, INVALID_TIMESTAMP, UNSUPPORTED_COMPRESSION_TYPE)
//   and nothing of it is written. Old clients need them (Debian's kafka-go 0.2.1 produces with v2,
//   sarama's default version with v0), and librdkafka 2.0 turns compression off unless Produce v0 is in
//   the advertised range (KAFKA-18659), which Kafka 4 advertises for that reason while refusing it.
// Version notes:
// * v10+ (KIP-951): a NOT_LEADER_OR_FOLLOWER partition carries the current leader and epoch from the
//   metadata view (on one broker: this broker, when the partition still exists), and the response the
//   leaders' endpoints. v11 only adds TRANSACTION_ABORTABLE to the codes a client may see (KIP-890).
// * v9+: flexible. v8+: recordErrors, errorMessage. v5+: log start offset in the response.
//   v3+: transactionalId, record batches v2. v2+: log append time. v1+: throttle time.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as Produce from '../../protocol/messages/00-produce.gen.js'
import { isRecordsPayload } from '../../protocol/primitives/types.js'
import { upConvertMessageSet, type UpConvertPolicy } from '../../protocol/records/legacy-message-set.js'
import { stripCodeName } from './common/api-errors.js'
import type { RequestContext } from './common/context.js'
import { defineHandler } from './common/handler.js'
import { topicSetting } from './common/legacy-formats.js'
import type { LeaderAppend, RequiredAcks } from './common/ports.js'

interface Pending {
  topicIndex: number
  response: Produce.PartitionProduceResponse
}

export const produceHandler = defineHandler<Produce.ProduceRequest, Produce.ProduceResponse>({
  api: Produce.ProduceApi,
  minVersion: 0,
  maxVersion: 11,
  decodeRequest: Produce.decodeProduceRequest,
  encodeResponse: Produce.encodeProduceResponse,
  authorizes: true,
  async handle(req, ctx) {
    const { partitions } = ctx
    const responses: Produce.TopicProduceResponse[] = []
    const appends: LeaderAppend[] = []
    const waiting: Pending[] = []
    const acks = requiredAcks(req.acks)
    const legacy = ctx.apiVersion < 3
    let anyNotLeader = false
    // Authorization (Kafka's): a transactional produce needs Write on its transactional id; each topic
    // needs Write. Checked per topic, never per record.
    const { acl, connection } = ctx
    const txnDenied = req.transactionalId !== null && !acl.authorize(connection, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, req.transactionalId)
    for (let topicIndex = 0; topicIndex < req.topicData.length; topicIndex++) {
      const topicData = req.topicData[topicIndex]!
      const partitionResponses: Produce.PartitionProduceResponse[] = []
      responses.push(Produce.createTopicProduceResponse({ name: topicData.name, partitionResponses }))
      // Only the coordinators write the internal topics (Kafka: "Cannot append to internal topic").
      const internal = ctx.metadata.isInternalTopic(topicData.name)
      const denied = txnDenied ? ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED : acl.authorize(connection, AclOperation.WRITE, ResourceType.TOPIC, topicData.name) ? ErrorCode.NONE : ErrorCode.TOPIC_AUTHORIZATION_FAILED
      for (const p of topicData.partitionData) {
        const response = Produce.createPartitionProduceResponse({ index: p.index, baseOffset: -1n, logAppendTimeMs: -1n, logStartOffset: -1n })
        partitionResponses.push(response)
        if (denied !== ErrorCode.NONE) {
          response.errorCode = denied
          continue
        }
        response.errorCode = acks !== null ? partitions.leaderError(topicData.name, p.index) : ErrorCode.INVALID_REQUIRED_ACKS
        if (response.errorCode !== ErrorCode.NONE) {
          if (response.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER) anyNotLeader = true
          continue
        }
        if (internal) {
          response.errorCode = ErrorCode.INVALID_TOPIC_EXCEPTION
          continue
        }
        if (p.records === null || isRecordsPayload(p.records) || p.records.length === 0) {
          response.errorCode = ErrorCode.INVALID_RECORD
          response.errorMessage = 'the partition has no record batches'
          continue
        }
        let records = p.records
        if (legacy) {
          // Produce v0-2: a magic 0/1 message set, up-converted to one batch v2 (see the file header).
          try {
            records = upConvertMessageSet(records, legacyPolicy(ctx, topicData.name)).batch
          } catch (err) {
            if (!(err instanceof KafkaError)) throw err
            response.errorCode = err.code
            response.errorMessage = stripCodeName(err.code, err.message)
            continue
          }
        }
        appends.push({ topic: topicData.name, partition: p.index, records })
        waiting.push({ topicIndex, response })
      }
    }
    if (appends.length > 0 && acks !== null) {
      const results = await partitions.appendAsLeader(appends, { acks, timeoutMs: req.timeoutMs })
      for (let i = 0; i < results.length; i++) {
        const result = results[i]!
        const response = waiting[i]!.response
        if (result.ok) {
          response.baseOffset = BigInt(result.value.baseOffset)
          response.logAppendTimeMs = BigInt(result.value.logAppendTime)
          response.logStartOffset = BigInt(result.value.logStartOffset)
        } else {
          response.errorCode = result.errorCode
          response.errorMessage = stripCodeName(result.errorCode, result.message)
          if (result.recordErrors !== undefined && ctx.apiVersion >= 8) {
            response.recordErrors = result.recordErrors.map((e) => Produce.createBatchIndexAndErrorMessage({ batchIndex: e.batchIndex, batchIndexErrorMessage: e.message }))
          }
          if (result.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER) anyNotLeader = true
        }
      }
    }
    if (req.acks === 0) return null
    const nodeEndpoints = anyNotLeader && ctx.apiVersion >= 10 ? currentLeaders(responses, ctx) : []
    return Produce.createProduceResponse({ responses, nodeEndpoints })
  },
})

/**
 * KIP-951: each NOT_LEADER_OR_FOLLOWER partition learns its current leader and epoch, and the response
 * carries those leaders' endpoints, so the client can move without a metadata round trip.
 */
function currentLeaders(responses: Produce.TopicProduceResponse[], ctx: RequestContext): Produce.NodeEndpoint[] {
  const leaders = new Set<number>()
  for (const t of responses) {
    for (const p of t.partitionResponses) {
      if (p.errorCode !== ErrorCode.NOT_LEADER_OR_FOLLOWER) continue
      const leadership = ctx.metadata.partition(t.name, p.index)
      if (leadership === undefined) continue
      p.currentLeader = Produce.createLeaderIdAndEpoch({ leaderId: leadership.leaderId, leaderEpoch: leadership.leaderEpoch })
      leaders.add(leadership.leaderId)
    }
  }
  const endpoints: Produce.NodeEndpoint[] = []
  for (const b of ctx.metadata.brokers(ctx.connection.listenerName)) {
    if (leaders.has(b.nodeId)) endpoints.push(Produce.createNodeEndpoint({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack }))
  }
  return endpoints
}

/** What up-converting a v0-2 message set for a topic follows: its max.message.bytes and timestamp type. */
function legacyPolicy(ctx: RequestContext, topic: string): UpConvertPolicy {
  return {
    maxMessageBytes: topicSetting(ctx, topic, 'max.message.bytes') as number,
    timestampType: topicSetting(ctx, topic, 'message.timestamp.type') === 'LogAppendTime' ? 'LogAppendTime' : 'CreateTime',
  }
}

/** The acks values Kafka accepts; null for anything else (INVALID_REQUIRED_ACKS). */
function requiredAcks(acks: number): RequiredAcks | null {
  return acks === 0 || acks === 1 || acks === -1 ? acks : null
}
