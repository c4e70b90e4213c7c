// DeleteTopics: v1-6
//
// Behavior:
// * Topics are named by `topicNames` (v1-5) or by `topics` entries with a name or a topic id (v6).
//   The topic is queued for deletion in the metadata store; the controller stops and deletes its
//   replicas on every broker. The answer comes once the topic is gone from this broker's metadata (and,
//   when all its replicas are up, from the store); REQUEST_TIMED_OUT when timeoutMs passes first (the
//   deletion stays queued and completes when the brokers holding replicas are back).
// * Authorization (Kafka's): Describe and Delete on the topic, else TOPIC_AUTHORIZATION_FAILED (checked
//   before existence); a topic id the principal may not Describe answers UNKNOWN_TOPIC_ID.
// * Every group's committed offsets of a deleted topic are removed from __consumer_offsets
//   (tombstones), as Kafka's group coordinator does on partition deletion: each broker does it for the
//   groups it coordinates when UpdateMetadata removes the topic, before its metadata forgets the topic,
//   so the answer comes after this broker's groups have lost them.
// * Unknown name -> UNKNOWN_TOPIC_OR_PARTITION; unknown id -> UNKNOWN_TOPIC_ID; an entry with both a
//   name and an id -> INVALID_REQUEST; a name or id listed twice -> one INVALID_REQUEST result for it.
// * Internal topics (__consumer_offsets, __transaction_state) -> INVALID_TOPIC_EXCEPTION "Cannot delete
//   internal topic". Kafka 4's controller deletes them when the client is authorized (only the old
//   ZooKeeper-era kafka-topics tool refused), and the group or transaction coordinator then loses its
//   whole state; Skein refuses, with the code Kafka uses for the other client operations it refuses on
//   internal topics (produce, DeleteRecords).
// * delete.topic.enable=false -> TOPIC_DELETION_DISABLED for every topic (INVALID_REQUEST below v3,
//   which predates that code, as Kafka).
// Version notes:
// * v4: flexible. v5+: errorMessage. v6: topics by name or id, topicId in the answer.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as DeleteTopics from '../../protocol/messages/20-delete-topics.gen.js'
import { ZERO_UUID } from '../../protocol/primitives/types.js'
import { defineHandler, requestSlices } from './common/handler.js'
import { apiError, duplicatesOf } from './common/api-errors.js'
import { checkMutationQuota } from './common/mutation-quota.js'

export const deleteTopicsHandler = defineHandler<DeleteTopics.DeleteTopicsRequest, DeleteTopics.DeleteTopicsResponse>({
  api: DeleteTopics.DeleteTopicsApi,
  minVersion: 1,
  maxVersion: 6,
  decodeRequest: DeleteTopics.decodeDeleteTopicsRequest,
  encodeResponse: DeleteTopics.encodeDeleteTopicsResponse,
  authorizes: true,
  async handle(req, ctx) {
    // v0-5 name topics only; v6 only through `topics`.
    const wanted = ctx.apiVersion >= 6 ? req.topics : req.topicNames.map((name) => DeleteTopics.createDeleteTopicState({ name }))
    const keyOf = (t: DeleteTopics.DeleteTopicState): string => (t.name !== null ? `n:${t.name}` : `i:${t.topicId}`)
    const duplicates = duplicatesOf(wanted.map(keyOf))
    const answered = new Set<string>()
    const responses: DeleteTopics.DeletableTopicResult[] = []
    const deletionEnabled = ctx.configs.broker.getBoolean('delete.topic.enable')
    // controller_mutation_rate: the deleted topic's partitions count; strict from v5.
    const quota = ctx.quotas.controllerMutationQuota(ctx.connection, ctx.clientId)
    // In ~10 ms slices of main-thread time: a request may name request.max.list.elements topics.
    const slices = requestSlices(ctx)
    for (const t of wanted) {
      const turn = slices.turn()
      if (turn !== undefined) await turn
      const key = keyOf(t)
      if (answered.has(key)) continue
      answered.add(key)
      const result = DeleteTopics.createDeletableTopicResult({ name: t.name, topicId: ZERO_UUID, errorMessage: null })
      responses.push(result)
      try {
        if (duplicates.has(key)) throw new KafkaError(ErrorCode.INVALID_REQUEST, t.name !== null ? 'Duplicate topic name.' : 'Duplicate topic id.')
        if (t.name !== null && t.topicId !== ZERO_UUID) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Topic name and topic ID can not both be specified.')
        if (t.name === null && t.topicId === ZERO_UUID) throw new KafkaError(ErrorCode.INVALID_REQUEST, 'Neither topic name nor id were specified.')
        if (!deletionEnabled) {
          throw new KafkaError(ctx.apiVersion < 3 ? ErrorCode.INVALID_REQUEST : ErrorCode.TOPIC_DELETION_DISABLED, 'Topic deletion is disabled.')
        }
        const deletable = (name: string): boolean => ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, name) && ctx.acl.authorize(ctx.connection, AclOperation.DELETE, ResourceType.TOPIC, name)
        // Kafka: a topic named without Describe and Delete is refused before its existence is told.
        if (t.name !== null && !deletable(t.name)) throw new KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'Authorization failed.')
        let topic
        if (t.name !== null) {
          topic = ctx.metadata.topic(t.name)
          if (topic === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic '${t.name}' does not exist.`)
        } else {
          topic = ctx.metadata.topicById(t.topicId)
          if (topic === undefined) throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, `Topic id ${t.topicId} does not exist.`)
        }
        result.name = topic.name
        // Kafka: a topic named by id that the principal may not Describe stays unknown; else Delete is needed.
        if (t.name === null && !ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name)) {
          result.name = null
          throw new KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, `Topic id ${t.topicId} does not exist.`)
        }
        if (!deletable(topic.name)) throw new KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'Authorization failed.')
        if (ctx.apiVersion >= 6) result.topicId = topic.topicId
        if (ctx.metadata.isInternalTopic(topic.name)) throw new KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, `Cannot delete internal topic ${topic.name}`)
        checkMutationQuota(quota, ctx.apiVersion >= 5)
        quota?.record(topic.partitions)
        await ctx.topics.delete(topic.name, req.timeoutMs)
      } catch (err) {
        const { errorCode, errorMessage } = apiError(err, ctx.log, 'DeleteTopics')
        result.errorCode = errorCode
        result.errorMessage = errorMessage
      }
    }
    return DeleteTopics.createDeleteTopicsResponse({ throttleTimeMs: quota?.throttleTimeMs() ?? 0, responses })
  },
})
