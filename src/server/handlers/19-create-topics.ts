// CreateTopics: v0-7
//
// Behavior:
// * Each topic is created (or, with validateOnly, only checked) on its own; one failing topic does not
//   stop the others. The broker writes the topic's assignment and config to the metadata store (Kafka's
//   ZooKeeper mode) and answers once every partition has a leader in its metadata; REQUEST_TIMED_OUT when
//   timeoutMs passes first (the topic is created anyway, later). timeoutMs 0 answers once written (a
//   broker without ZooKeeper still waits for its in-process controller, which is immediate).
// * Replicas are placed by Kafka's assignment over the live brokers (rack-aware when every broker has a
//   rack).
// * Invalid name -> INVALID_TOPIC_EXCEPTION; existing topic -> TOPIC_ALREADY_EXISTS; numPartitions or
//   replicationFactor -1 -> num.partitions / default.replication.factor (accepted in every served
//   version, as Kafka's broker does); other counts below 1 -> INVALID_PARTITIONS /
//   INVALID_REPLICATION_FACTOR; a replication factor above the number of live brokers ->
//   INVALID_REPLICATION_FACTOR.
// * Manual assignments: partitions 0..n-1, same replica count each, no broker twice, only live brokers;
//   else INVALID_REPLICA_ASSIGNMENT; with numPartitions/replicationFactor also set -> INVALID_REQUEST.
// * Configs are validated like AlterConfigs (unknown key, null or bad value -> INVALID_CONFIG with the
//   reason); a key named twice keeps its last value (Kafka).
// * A topic named twice in one request gets one result, INVALID_REQUEST "Duplicate topic name.".
// Version notes:
// * v0-v1 are served as Kafka 3.x serves them (Kafka 4 removed them, KIP-896; Debian's kafka-go 0.2.1
//   creates topics with v0). v0 has no validateOnly (always false), and its answer no throttle time and
//   no error message (the code alone); v1 adds validateOnly and the error message.
// * v2 and v3 are the same on the wire; v3+ clients throttle themselves (KIP-219), so a v0-v2 answer over
//   a quota is sent after the throttle time instead (request-quotas.ts).
// * v1+: errorMessage. v4+: -1 defaults documented. v5+: numPartitions, replicationFactor and the
//   topic's resolved configs in the answer (also for validateOnly); flexible. v7: topicId.
// * controller_mutation_rate (common/mutation-quota.ts): partitions created count; strict from v6.
// Not implemented:
// * CreateTopicPolicy (create.topic.policy.class.name).
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { resolveTopicConfigs, validateTopicConfigs } from '../../config/index.js'
import { ErrorCode } from '../../domain/errors.js'
import * as CreateTopics from '../../protocol/messages/19-create-topics.gen.js'
import { ZERO_UUID } from '../../protocol/primitives/types.js'
import { defineHandler } from './common/handler.js'
import { apiError, duplicatesOf } from './common/api-errors.js'
import { checkMutationQuota } from './common/mutation-quota.js'

export const createTopicsHandler = defineHandler<CreateTopics.CreateTopicsRequest, CreateTopics.CreateTopicsResponse>({
  api: CreateTopics.CreateTopicsApi,
  minVersion: 0,
  maxVersion: 7,
  decodeRequest: CreateTopics.decodeCreateTopicsRequest,
  encodeResponse: CreateTopics.encodeCreateTopicsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const duplicates = duplicatesOf(req.topics.map((t) => t.name))
    const answered = new Set<string>()
    const topics: CreateTopics.CreatableTopicResult[] = []
    const quota = ctx.quotas.controllerMutationQuota(ctx.connection, ctx.clientId)
    for (const t of req.topics) {
      if (answered.has(t.name)) continue
      answered.add(t.name)
      if (duplicates.has(t.name)) {
        topics.push(failed(t.name, ErrorCode.INVALID_REQUEST, 'Duplicate topic name.'))
        continue
      }
      // Create on the cluster or on the topic.
      if (!ctx.acl.authorize(ctx.connection, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME) && !ctx.acl.authorize(ctx.connection, AclOperation.CREATE, ResourceType.TOPIC, t.name)) {
        topics.push(failed(t.name, ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'Authorization failed.'))
        continue
      }
      const configs: Record<string, string | null> = {}
      for (const c of t.configs) configs[c.name] = c.value
      try {
        checkMutationQuota(quota, ctx.apiVersion >= 6)
        const record = await ctx.topics.create({
          name: t.name,
          numPartitions: t.numPartitions,
          replicationFactor: t.replicationFactor,
          assignments: t.assignments.map((a) => ({ partitionIndex: a.partitionIndex, brokerIds: a.brokerIds })),
          configs,
          validateOnly: req.validateOnly,
          timeoutMs: req.timeoutMs,
        })
        if (!req.validateOnly) quota?.record(record.partitions)
        const resolved = resolveTopicConfigs(ctx.configs.broker, validateTopicConfigs(record.configs))
        topics.push(CreateTopics.createCreatableTopicResult({
          name: t.name,
          // validateOnly creates nothing, so there is no id yet (Kafka answers the zero UUID too).
          topicId: record.topicId === '' ? ZERO_UUID : record.topicId,
          errorCode: ErrorCode.NONE,
          errorMessage: null,
          numPartitions: record.partitions,
          replicationFactor: record.replicationFactor,
          configs: resolved.map((c) => CreateTopics.createCreatableTopicConfigs({
            name: c.name,
            value: c.sensitive ? null : c.value,
            readOnly: c.readOnly,
            configSource: c.source,
            isSensitive: c.sensitive,
          })),
        }))
      } catch (err) {
        const { errorCode, errorMessage } = apiError(err, ctx.log, 'CreateTopics')
        topics.push(failed(t.name, errorCode, errorMessage))
      }
    }
    return CreateTopics.createCreateTopicsResponse({ throttleTimeMs: quota?.throttleTimeMs() ?? 0, topics })
  },
})

function failed(name: string, errorCode: number, errorMessage: string | null): CreateTopics.CreatableTopicResult {
  return CreateTopics.createCreatableTopicResult({ name, errorCode, errorMessage, numPartitions: -1, replicationFactor: -1, configs: [] })
}
