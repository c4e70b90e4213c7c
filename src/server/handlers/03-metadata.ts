// Metadata: v0-12
//
// Behavior:
// * Brokers, controller, and each partition's leader, leader epoch, replicas, ISR and offline replicas
//   come from the metadata image the controller feeds (UpdateMetadata). Brokers are listed at the
//   endpoints of the listener the request came on (a broker without that listener is left out), with
//   their broker.rack (v1+). A partition without a leader answers LEADER_NOT_AVAILABLE with leader -1
//   and its replicas and ISR.
// * All topics when the request's topic list is null (v1+) or empty (v0).
// * Topics by id (v12): when any requested entry carries a non-zero topic id, only the ids are looked
//   up (entries that only name a topic are ignored, as Kafka does); an unknown id answers
//   UNKNOWN_TOPIC_ID with a null name. v10-11 requests with a topic id or a null name are refused whole:
//   every requested topic answers INVALID_REQUEST (Kafka's error response), and no brokers.
// * Unknown topics are created when auto.create.topics.enable=true and the request allows it (always
//   for v0-3, allowAutoTopicCreation from v4), with num.partitions and default.replication.factor.
//   The answer waits (up to 10 s) until the new topic's partitions have leaders, so it is returned ready
//   (Kafka answers LEADER_NOT_AVAILABLE at once; clients accept both). Invalid names, and names colliding with an
//   existing topic's by '.' and '_', get INVALID_TOPIC_EXCEPTION; internal topics are never auto-created here.
//   A topic another request created that this broker's image does not show yet answers
//   LEADER_NOT_AVAILABLE (Kafka's answer), never TOPIC_ALREADY_EXISTS.
// * Authorized operations: those the authorizer allows the principal (all without one); the bit sets
//   are filled when the request asks for them (v8+; the cluster's only up to v10), else Kafka's
//   "omitted" value.
// Version notes:
// * v12: topics by id, nullable names in the answer. v11: no cluster authorized operations.
//   v10: topic ids. v9: flexible. v7+: leader epoch. v5+: offline replicas. v2+: cluster id.
//   v1+: controller, racks, isInternal.
// Bounds (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes. The loops over
// topics (named or all) run in ~10 ms slices of main-thread time, others served in between.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode, KafkaError } from '../../domain/errors.js'
import * as Metadata from '../../protocol/messages/03-metadata.gen.js'
import { ZERO_UUID } from '../../protocol/primitives/types.js'
import { AUTHORIZED_OPERATIONS_OMITTED, authorizedOperations, CLUSTER_OPERATION_LIST, TOPIC_OPERATION_LIST } from './common/authorized-operations.js'
import type { RequestContext } from './common/context.js'
import { defineHandler, requestSlices } from './common/handler.js'
import type { TopicInfo } from './common/ports.js'

export const metadataHandler = defineHandler<Metadata.MetadataRequest, Metadata.MetadataResponse>({
  api: Metadata.MetadataApi,
  minVersion: 0,
  maxVersion: 12,
  decodeRequest: Metadata.decodeMetadataRequest,
  encodeResponse: Metadata.encodeMetadataResponse,
  authorizes: true,
  async handle(req, ctx) {
    const { metadata } = ctx
    const allowAutoCreate = (ctx.apiVersion < 4 || req.allowAutoTopicCreation) && ctx.configs.broker.getBoolean('auto.create.topics.enable')
    const all = req.topics === null || (ctx.apiVersion === 0 && req.topics.length === 0)
    const brokers = metadata.brokers(ctx.connection.listenerName)
    const reachable = new Set(brokers.map((b) => b.nodeId))
    const topics: Metadata.MetadataResponseTopic[] = []
    const { acl, connection } = ctx
    // With an authorizer: all-topics requests list only what the principal may Describe; a named topic
    // it may not Describe is TOPIC_AUTHORIZATION_FAILED (whether or not it exists).
    const mayDescribe = (name: string): boolean => acl.authorize(connection, AclOperation.DESCRIBE, ResourceType.TOPIC, name)
    // Every loop over topics runs in ~10 ms slices of main-thread time (100,000 named, or a cluster's all).
    const slices = requestSlices(ctx)
    if (all) {
      for (const t of metadata.topics()) {
        const turn = slices.turn()
        if (turn !== undefined) await turn
        if (mayDescribe(t.name)) topics.push(describeTopic(t, ctx, req, reachable))
      }
    } else if (ctx.apiVersion >= 10 && ctx.apiVersion < 12 && req.topics!.some((t) => t.name === null || t.topicId !== ZERO_UUID)) {
      return refusedWhole(req.topics!, ErrorCode.INVALID_REQUEST)
    } else if (ctx.apiVersion >= 12 && req.topics!.some((t) => t.topicId !== ZERO_UUID)) {
      const seen = new Set<string>()
      for (const requested of req.topics!) {
        const turn = slices.turn()
        if (turn !== undefined) await turn
        const id = requested.topicId
        if (id === ZERO_UUID || seen.has(id)) continue
        seen.add(id)
        const topic = metadata.topicById(id)
        if (topic !== undefined && !mayDescribe(topic.name)) {
          topics.push(failedTopic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, null, id, false))
          continue
        }
        topics.push(topic !== undefined ? describeTopic(topic, ctx, req, reachable) : failedTopic(ErrorCode.UNKNOWN_TOPIC_ID, null, id, false))
      }
    } else {
      const seen = new Set<string>()
      for (const requested of req.topics!) {
        const turn = slices.turn()
        if (turn !== undefined) await turn
        const name = requested.name
        if (name === null || seen.has(name)) continue
        seen.add(name)
        if (!mayDescribe(name)) {
          topics.push(failedTopic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, name, ZERO_UUID, metadata.isInternalTopic(name)))
          continue
        }
        topics.push(await lookup(name, allowAutoCreate, ctx, req, reachable))
      }
    }
    return Metadata.createMetadataResponse({
      brokers: brokers.map((b) => Metadata.createMetadataResponseBroker({ nodeId: b.nodeId, host: b.host, port: b.port, rack: b.rack })),
      clusterId: metadata.clusterId,
      controllerId: metadata.controllerId,
      topics,
      clusterAuthorizedOperations: req.includeClusterAuthorizedOperations && ctx.apiVersion <= 10 ? authorizedOperations(ctx.acl, ctx.connection, ResourceType.CLUSTER, CLUSTER_NAME, CLUSTER_OPERATION_LIST) : AUTHORIZED_OPERATIONS_OMITTED,
    })
  },
})

/** Kafka's error response for a Metadata request it cannot serve: each requested topic with the error. */
function refusedWhole(requested: readonly Metadata.MetadataRequestTopic[], errorCode: ErrorCode): Metadata.MetadataResponse {
  return Metadata.createMetadataResponse({ topics: requested.map((t) => failedTopic(errorCode, t.name ?? '', t.topicId, false)) })
}

function failedTopic(errorCode: number, name: string | null, topicId: string, isInternal: boolean): Metadata.MetadataResponseTopic {
  return Metadata.createMetadataResponseTopic({ errorCode, name, topicId, isInternal, partitions: [], topicAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED })
}

async function lookup(name: string, allowAutoCreate: boolean, ctx: RequestContext, req: Metadata.MetadataRequest, reachable: ReadonlySet<number>): Promise<Metadata.MetadataResponseTopic> {
  const { metadata } = ctx
  const existing = metadata.topic(name)
  if (existing !== undefined) return describeTopic(existing, ctx, req, reachable)
  const failed = (errorCode: number): Metadata.MetadataResponseTopic => failedTopic(errorCode, name, ZERO_UUID, metadata.isInternalTopic(name))
  try {
    metadata.validateTopicName(name)
  } catch {
    return failed(ErrorCode.INVALID_TOPIC_EXCEPTION)
  }
  if (!allowAutoCreate || metadata.isInternalTopic(name)) return failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
  // Auto-creation needs Create on the cluster or on the topic.
  if (!ctx.acl.authorize(ctx.connection, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME) && !ctx.acl.authorize(ctx.connection, AclOperation.CREATE, ResourceType.TOPIC, name)) {
    return failed(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
  }
  try {
    return describeTopic(await ctx.topics.autoCreate(name), ctx, req, reachable)
  } catch (err) {
    // Another request created it meanwhile: answer with what exists now.
    const now = metadata.topic(name)
    if (now !== undefined) return describeTopic(now, ctx, req, reachable)
    // Created but not in this broker's image yet: Kafka answers LEADER_NOT_AVAILABLE there too (its
    // auto-creation lets TopicExistsException go), and clients ask again.
    if (err instanceof KafkaError && err.code === ErrorCode.TOPIC_ALREADY_EXISTS) return failed(ErrorCode.LEADER_NOT_AVAILABLE)
    return failed(err instanceof KafkaError ? err.code : ErrorCode.UNKNOWN_SERVER_ERROR)
  }
}

function describeTopic(t: TopicInfo, ctx: RequestContext, req: Metadata.MetadataRequest, reachable: ReadonlySet<number>): Metadata.MetadataResponseTopic {
  const partitions: Metadata.MetadataResponsePartition[] = []
  for (let p = 0; p < t.partitions; p++) {
    const leadership = ctx.metadata.partition(t.name, p)
    // A leader that is not a live broker on this listener is no leader for this client (Kafka's metadata cache).
    const leaderUp = leadership !== undefined && reachable.has(leadership.leaderId)
    partitions.push(
      leadership === undefined
        ? Metadata.createMetadataResponsePartition({ errorCode: ErrorCode.LEADER_NOT_AVAILABLE, partitionIndex: p, leaderId: -1, leaderEpoch: -1 })
        : Metadata.createMetadataResponsePartition({
            errorCode: leaderUp ? ErrorCode.NONE : ErrorCode.LEADER_NOT_AVAILABLE,
            partitionIndex: p,
            leaderId: leaderUp ? leadership.leaderId : -1,
            leaderEpoch: leadership.leaderEpoch,
            replicaNodes: [...leadership.replicas],
            isrNodes: [...leadership.isr],
            offlineReplicas: [...leadership.offlineReplicas],
          }),
    )
  }
  return Metadata.createMetadataResponseTopic({
    errorCode: ErrorCode.NONE,
    name: t.name,
    topicId: t.topicId,
    isInternal: ctx.metadata.isInternalTopic(t.name),
    partitions,
    topicAuthorizedOperations: req.includeTopicAuthorizedOperations ? authorizedOperations(ctx.acl, ctx.connection, ResourceType.TOPIC, t.name, TOPIC_OPERATION_LIST) : AUTHORIZED_OPERATIONS_OMITTED,
  })
}
