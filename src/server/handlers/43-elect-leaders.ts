// ElectLeaders: v0-2 (admin -> controller, KIP-183 preferred and KIP-460 unclean elections)
//
// Behavior:
// * Answered by the active controller only; elsewhere every partition gets NOT_CONTROLLER (the admin
//   client sends it to the controller named in Metadata). Needs Alter on the Cluster resource, else
//   CLUSTER_AUTHORIZATION_FAILED (top-level from v1, per partition in v0).
// * topicPartitions null = every partition. Per partition, as Kafka's ZooKeeper-mode controller:
//   unknown -> UNKNOWN_TOPIC_OR_PARTITION; topic being deleted -> INVALID_TOPIC_EXCEPTION;
//   PREFERRED: already led by its preferred replica -> ELECTION_NOT_NEEDED, preferred replica not live or
//   not in the ISR -> PREFERRED_LEADER_NOT_AVAILABLE; UNCLEAN: a live leader already ->
//   ELECTION_NOT_NEEDED, no live replica -> ELIGIBLE_LEADERS_NOT_AVAILABLE. Answered once the new leader
//   is written and LeaderAndIsr is on its way to the replicas.
// Version notes:
// * v0: preferred only (electionType is not on the wire), no top-level error. v1: electionType, top-level
//   error code. v2: flexible.
import { AclOperation, CLUSTER_NAME, ResourceType } from '../../domain/acl.js'
import { ErrorCode } from '../../domain/errors.js'
import * as ElectLeaders from '../../protocol/messages/43-elect-leaders.gen.js'
import { defineHandler } from './common/handler.js'

export const electLeadersHandler = defineHandler<ElectLeaders.ElectLeadersRequest, ElectLeaders.ElectLeadersResponse>({
  api: ElectLeaders.ElectLeadersApi,
  minVersion: 0,
  maxVersion: 2,
  authorizes: true,
  decodeRequest: ElectLeaders.decodeElectLeadersRequest,
  encodeResponse: ElectLeaders.encodeElectLeadersResponse,
  async handle(req, ctx) {
    const electionType = ctx.apiVersion === 0 ? 0 : req.electionType
    const asked = req.topicPartitions === null ? null : req.topicPartitions.flatMap((t) => t.partitions.map((partition) => ({ topic: t.topic, partition })))
    const answer = (code: number, message: string | null): ElectLeaders.ElectLeadersResponse =>
      ElectLeaders.createElectLeadersResponse({
        errorCode: ctx.apiVersion >= 1 ? code : ErrorCode.NONE,
        replicaElectionResults: (req.topicPartitions ?? []).map((t) =>
          ElectLeaders.createReplicaElectionResult({ topic: t.topic, partitionResult: t.partitions.map((partitionId) => ElectLeaders.createPartitionResult({ partitionId, errorCode: code, errorMessage: message })) }),
        ),
      })
    if (!ctx.acl.authorize(ctx.connection, AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)) return answer(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 'Cluster authorization failed.')
    if (electionType !== 0 && electionType !== 1) return answer(ErrorCode.INVALID_REQUEST, `Unknown election type ${electionType}.`)
    const results = await ctx.control.electLeaders(electionType, asked)
    if (results === undefined) return answer(ErrorCode.NOT_CONTROLLER, 'This is not the correct controller for this cluster.')
    const byTopic = new Map<string, ElectLeaders.PartitionResult[]>()
    for (const [key, r] of results) {
      const i = key.lastIndexOf(':')
      const topic = key.slice(0, i)
      let list = byTopic.get(topic)
      if (list === undefined) byTopic.set(topic, (list = []))
      list.push(ElectLeaders.createPartitionResult({ partitionId: Number(key.slice(i + 1)), errorCode: r.errorCode, errorMessage: r.errorMessage }))
    }
    return ElectLeaders.createElectLeadersResponse({
      errorCode: ErrorCode.NONE,
      replicaElectionResults: [...byTopic].map(([topic, partitionResult]) => ElectLeaders.createReplicaElectionResult({ topic, partitionResult })),
    })
  },
})
