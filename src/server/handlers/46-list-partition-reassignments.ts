// ListPartitionReassignments: v0 (admin -> controller, KIP-455)
//
// Behavior:
// * Answered by the active controller only, else NOT_CONTROLLER. Needs Describe on the Cluster
//   resource, else CLUSTER_AUTHORIZATION_FAILED.
// * topics null = every reassignment in progress; else those of the named partitions (partitions without
//   one, or unknown, are left out, as Kafka). Each with its replicas (target and original), and the
//   replicas being added and removed.
// Bound (docs/broker.md, "Requests are bounded"): the request's lists hold at most request.max.list.elements
// elements in all (100,000 by default); the decoder refuses more and the connection closes.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as ListPartitionReassignments from '../../protocol/messages/46-list-partition-reassignments.gen.js'
import { defineHandler } from './common/handler.js'

export const listPartitionReassignmentsHandler = defineHandler<ListPartitionReassignments.ListPartitionReassignmentsRequest, ListPartitionReassignments.ListPartitionReassignmentsResponse>({
  api: ListPartitionReassignments.ListPartitionReassignmentsApi,
  minVersion: 0,
  maxVersion: 0,
  authorizes: true,
  decodeRequest: ListPartitionReassignments.decodeListPartitionReassignmentsRequest,
  encodeResponse: ListPartitionReassignments.encodeListPartitionReassignmentsResponse,
  async handle(req, ctx) {
    if (!ctx.acl.authorize(ctx.connection, AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME)) {
      return ListPartitionReassignments.createListPartitionReassignmentsResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, errorMessage: 'Cluster authorization failed.' })
    }
    const asked = req.topics === null ? null : req.topics.flatMap((t) => t.partitionIndexes.map((partition) => ({ topic: t.name, partition })))
    const ongoing = await ctx.control.listPartitionReassignments(asked)
    if (ongoing === undefined) return ListPartitionReassignments.createListPartitionReassignmentsResponse({ errorCode: ErrorCode.NOT_CONTROLLER, errorMessage: 'This is not the correct controller for this cluster.' })
    const byTopic = new Map<string, ListPartitionReassignments.OngoingPartitionReassignment[]>()
    for (const r of ongoing) {
      let list = byTopic.get(r.topic)
      if (list === undefined) byTopic.set(r.topic, (list = []))
      list.push(ListPartitionReassignments.createOngoingPartitionReassignment({ partitionIndex: r.partition, replicas: r.replicas, addingReplicas: r.addingReplicas, removingReplicas: r.removingReplicas }))
    }
    return ListPartitionReassignments.createListPartitionReassignmentsResponse({
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      topics: [...byTopic].map(([name, partitions]) => ListPartitionReassignments.createOngoingTopicReassignment({ name, partitions })),
    })
  },
})
