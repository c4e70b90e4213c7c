// Metadata: v0-9
//
// Behavior:
// * One broker (this one) is every partition's leader, sole replica and sole ISR member; it is also the
//   controller.
// * All topics when the request's topic list is null (v1+) or empty (v0).
// * Unknown topics are created when auto.create.topics.enable=true and the request allows it (always
//   for v0-3, allowAutoTopicCreation from v4), with num.partitions and default.replication.factor.
//   Creation completes before the answer, so the new topic is returned ready (Kafka may first answer
//   LEADER_NOT_AVAILABLE; clients accept both). Invalid names get INVALID_TOPIC_EXCEPTION; internal
//   topics are never auto-created here.
// * Authorized operations: no authorizer is configured, so every operation is allowed; the bit sets
//   are filled when the request asks for them (v8+), else Kafka's "omitted" value.
// Version notes:
// * v9: flexible. v7+: leader epoch. v5+: offline replicas. v2+: cluster id. v1+: controller, racks,
//   isInternal.
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as Metadata from '../../protocol/messages/03-metadata.gen.js'
import { ZERO_UUID } from '../../protocol/primitives/types.js'
import { validateTopicName } from '../../storage/index.js'
import type { RequestContext } from '../context.js'
import { defineHandler } from '../registry.js'
import { INTERNAL_TOPICS } from '../topics.js'
import type { TopicRecord } from '../../cluster/topic-store.js'

/** Kafka's value for "authorized operations not requested". */
export const AUTHORIZED_OPERATIONS_OMITTED = -2147483648
// AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
const TOPIC_OPERATIONS = [3, 4, 5, 6, 7, 8, 10, 11].reduce((bits, op) => bits | (1 << op), 0)
// CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12, CREATE_TOKENS 13, DESCRIBE_TOKENS 14
export const CLUSTER_OPERATIONS = [5, 7, 8, 9, 10, 11, 12, 13, 14].reduce((bits, op) => bits | (1 << op), 0)

export const metadataHandler = defineHandler<Metadata.MetadataRequest, Metadata.MetadataResponse>({
  api: Metadata.MetadataApi,
  minVersion: 0,
  maxVersion: 9,
  decodeRequest: Metadata.decodeMetadataRequest,
  encodeResponse: Metadata.encodeMetadataResponse,
  async handle(req, ctx) {
    const { broker } = ctx
    const allowAutoCreate = (ctx.apiVersion < 4 || req.allowAutoTopicCreation) && broker.config.getBoolean('auto.create.topics.enable')
    const all = req.topics === null || (ctx.apiVersion === 0 && req.topics.length === 0)
    const topics: Metadata.MetadataResponseTopic[] = []
    if (all) {
      for (const t of broker.topics.list()) topics.push(describeTopic(t, ctx, req))
    } else {
      const seen = new Set<string>()
      for (const requested of req.topics!) {
        const name = requested.name
        if (name === null || seen.has(name)) continue
        seen.add(name)
        topics.push(await lookup(name, allowAutoCreate, ctx, req))
      }
    }
    const endpoint = broker.endpointFor()
    return Metadata.createMetadataResponse({
      brokers: [Metadata.createMetadataResponseBroker({ nodeId: broker.nodeId, host: endpoint.host, port: endpoint.port, rack: null })],
      clusterId: broker.clusterId,
      controllerId: broker.nodeId,
      topics,
      clusterAuthorizedOperations: req.includeClusterAuthorizedOperations ? CLUSTER_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
    })
  },
})

async function lookup(name: string, allowAutoCreate: boolean, ctx: RequestContext, req: Metadata.MetadataRequest): Promise<Metadata.MetadataResponseTopic> {
  const existing = ctx.broker.topics.get(name)
  if (existing !== undefined) return describeTopic(existing, ctx, req)
  const failed = (errorCode: number): Metadata.MetadataResponseTopic =>
    Metadata.createMetadataResponseTopic({ errorCode, name, topicId: ZERO_UUID, isInternal: INTERNAL_TOPICS.has(name), partitions: [], topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED })
  try {
    validateTopicName(name)
  } catch {
    return failed(ErrorCode.INVALID_TOPIC_EXCEPTION)
  }
  if (!allowAutoCreate || INTERNAL_TOPICS.has(name)) return failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  try {
    return describeTopic(await ctx.broker.topics.autoCreate(name), ctx, req)
  } catch (err) {
    // Another request created it meanwhile: answer with what exists now.
    const now = ctx.broker.topics.get(name)
    if (now !== undefined) return describeTopic(now, ctx, req)
    return failed(err instanceof KafkaError ? err.code : ErrorCode.UNKNOWN_SERVER_ERROR)
  }
}

function describeTopic(t: TopicRecord, ctx: RequestContext, req: Metadata.MetadataRequest): Metadata.MetadataResponseTopic {
  const nodeId = ctx.broker.nodeId
  const partitions: Metadata.MetadataResponsePartition[] = []
  for (let p = 0; p < t.partitions; p++) {
    partitions.push(
      Metadata.createMetadataResponsePartition({
        errorCode: ErrorCode.NONE,
        partitionIndex: p,
        leaderId: nodeId,
        leaderEpoch: 0,
        replicaNodes: [nodeId],
        isrNodes: [nodeId],
        offlineReplicas: [],
      }),
    )
  }
  return Metadata.createMetadataResponseTopic({
    errorCode: ErrorCode.NONE,
    name: t.name,
    topicId: t.topicId,
    isInternal: INTERNAL_TOPICS.has(t.name),
    partitions,
    topicAuthorizedOperations: req.includeTopicAuthorizedOperations ? TOPIC_OPERATIONS : AUTHORIZED_OPERATIONS_OMITTED,
  })
}
