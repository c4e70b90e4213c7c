// AlterPartitionReassignments: v0 (admin -> controller, KIP-455)
//
// Behavior:
// * Answered by the active controller only, else NOT_CONTROLLER (top-level). Needs Alter on the
//   Cluster resource, else CLUSTER_AUTHORIZATION_FAILED.
// * Per partition: replicas = the target replica list (the first is the preferred leader), null = cancel
//   the reassignment in progress. The controller adds the new replicas, waits for them to join the ISR,
//   moves the leader into the target if needed and removes (and deletes) the old ones; the answer comes
//   once the reassignment is started, not finished (ListPartitionReassignments follows it).
// * Errors per partition: unknown partition or a topic being deleted -> UNKNOWN_TOPIC_OR_PARTITION; an
//   empty or duplicated list, or a broker that is not live -> INVALID_REPLICA_ASSIGNMENT; a
//   cancellation with nothing in progress -> NO_REASSIGNMENT_IN_PROGRESS.
// * A partition named twice in one request: INVALID_REQUEST for both.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as AlterPartitionReassignments from '../../protocol/messages/45-alter-partition-reassignments.gen.js'
import { defineHandler } from './common/handler.js'

export const alterPartitionReassignmentsHandler = defineHandler<AlterPartitionReassignments.AlterPartitionReassignmentsRequest, AlterPartitionReassignments.AlterPartitionReassignmentsResponse>({
  api: AlterPartitionReassignments.AlterPartitionReassignmentsApi,
  minVersion: 0,
  maxVersion: 0,
  authorizes: true,
  decodeRequest: AlterPartitionReassignments.decodeAlterPartitionReassignmentsRequest,
  encodeResponse: AlterPartitionReassignments.encodeAlterPartitionReassignmentsResponse,
  async handle(req, ctx) {
    const refuse = (errorCode: number, errorMessage: string): AlterPartitionReassignments.AlterPartitionReassignmentsResponse =>
      AlterPartitionReassignments.createAlterPartitionReassignmentsResponse({
        errorCode,
        errorMessage,
        responses: req.topics.map((t) =>
          AlterPartitionReassignments.createReassignableTopicResponse({
            name: t.name,
            partitions: t.partitions.map((p) => AlterPartitionReassignments.createReassignablePartitionResponse({ partitionIndex: p.partitionIndex, errorCode, errorMessage })),
          }),
        ),
      })
    if (!ctx.acl.authorize(ctx.connection, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)) return refuse(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 'Cluster authorization failed.')
    const seen = new Map<string, number>()
    for (const t of req.topics) for (const p of t.partitions) seen.set(`${t.name}:${p.partitionIndex}`, (seen.get(`${t.name}:${p.partitionIndex}`) ?? 0) + 1)
    const requests = req.topics.flatMap((t) =>
      t.partitions.filter((p) => seen.get(`${t.name}:${p.partitionIndex}`) === 1).map((p) => ({ tp: { topic: t.name, partition: p.partitionIndex }, replicas: p.replicas === null ? null : [...p.replicas] })),
    )
    const results = await ctx.control.alterPartitionReassignments(requests)
    if (results === undefined) return refuse(ErrorCode.NOT_CONTROLLER, 'This is not the correct controller for this cluster.')
    return AlterPartitionReassignments.createAlterPartitionReassignmentsResponse({
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      responses: req.topics.map((t) =>
        AlterPartitionReassignments.createReassignableTopicResponse({
          name: t.name,
          partitions: t.partitions.map((p) => {
            const key = `${t.name}:${p.partitionIndex}`
            const r = seen.get(key) === 1 ? results.get(key) : { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Duplicate partition in request.' }
            return AlterPartitionReassignments.createReassignablePartitionResponse({ partitionIndex: p.partitionIndex, errorCode: r?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: r?.errorMessage ?? null })
          }),
        }),
      ),
    })
  },
})
