// CreatePartitions: v0-1
//
// Behavior:
// * Grows each topic to `count` partitions: the new assignment goes to the metadata store (replicas
//   placed by Kafka's assignment, continuing from partition 0's first replica) and the answer comes once
//   the new partitions have leaders in this broker's metadata (REQUEST_TIMED_OUT after timeoutMs).
// * Unknown topic -> UNKNOWN_TOPIC_OR_PARTITION; count not above the current count (or above 100000)
//   -> INVALID_PARTITIONS; assignments whose number differs from the partitions added, whose replica
//   count differs from the topic's, or that name a broker that is not live ->
//   INVALID_REPLICA_ASSIGNMENT; a replication factor above the live brokers -> INVALID_REPLICATION_FACTOR.
// * Authorization: Alter on the topic, else TOPIC_AUTHORIZATION_FAILED for it (Kafka).
// * validateOnly checks everything and changes nothing.
// * A topic named twice in one request gets one result, INVALID_REQUEST "Duplicate topic in request.".
// Version notes:
// * v1: same as v0 (Kafka bumped it for throttling behaviour).
// Not implemented:
// * v2-3 (flexible): not advertised; every target client has a non-flexible version to use.
import { AclOperation, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as CreatePartitions from '../../protocol/messages/37-create-partitions.gen.js'
import { defineHandler } from './common/handler.js'
import { apiError, duplicatesOf } from './common/api-errors.js'
import { checkMutationQuota } from './common/mutation-quota.js'

export const createPartitionsHandler = defineHandler<CreatePartitions.CreatePartitionsRequest, CreatePartitions.CreatePartitionsResponse>({
  api: CreatePartitions.CreatePartitionsApi,
  minVersion: 0,
  maxVersion: 1,
  decodeRequest: CreatePartitions.decodeCreatePartitionsRequest,
  encodeResponse: CreatePartitions.encodeCreatePartitionsResponse,
  authorizes: true,
  async handle(req, ctx) {
    const duplicates = duplicatesOf(req.topics.map((t) => t.name))
    const answered = new Set<string>()
    const results: CreatePartitions.CreatePartitionsTopicResult[] = []
    // controller_mutation_rate: partitions added count; v0-1 are permissive (strict from v3).
    const quota = ctx.quotas.controllerMutationQuota(ctx.connection, ctx.clientId)
    for (const t of req.topics) {
      if (answered.has(t.name)) continue
      answered.add(t.name)
      if (duplicates.has(t.name)) {
        results.push(CreatePartitions.createCreatePartitionsTopicResult({ name: t.name, errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Duplicate topic in request.' }))
        continue
      }
      if (!ctx.acl.authorize(ctx.connection, AclOperation.ALTER, ResourceType.TOPIC, t.name)) {
        results.push(CreatePartitions.createCreatePartitionsTopicResult({ name: t.name, errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage: 'Authorization failed.' }))
        continue
      }
      try {
        const assignments = t.assignments === null ? null : t.assignments.map((a) => a.brokerIds)
        checkMutationQuota(quota, ctx.apiVersion >= 3)
        const before = ctx.metadata.topic(t.name)?.partitions ?? t.count
        await ctx.topics.addPartitions(t.name, t.count, assignments, req.validateOnly, req.timeoutMs)
        if (!req.validateOnly) quota?.record(Math.max(0, t.count - before))
        results.push(CreatePartitions.createCreatePartitionsTopicResult({ name: t.name, errorCode: ErrorCode.NONE, errorMessage: null }))
      } catch (err) {
        results.push(CreatePartitions.createCreatePartitionsTopicResult({ name: t.name, ...apiError(err, ctx.log, 'CreatePartitions') }))
      }
    }
    return CreatePartitions.createCreatePartitionsResponse({ throttleTimeMs: quota?.throttleTimeMs() ?? 0, results })
  },
})
