// LeaderAndIsr: v0-7 (controller -> broker)
//
// Behavior:
// * The controller tells this broker which partitions it leads or follows, at which leader epoch, with
//   which replicas and ISR. Refused as a whole with STALE_CONTROLLER_EPOCH when the controller epoch is
//   older than the newest seen, STALE_BROKER_EPOCH when the broker epoch is older than this broker's
//   registration (every partition then carries the same code).
// * Each partition is applied only when its leader epoch is newer than this broker's (a partition it did
//   not host is created with its topic's config); not newer -> STALE_CONTROLLER_EPOCH, as Kafka answers;
//   a partition whose replicas do not include this broker -> UNKNOWN_TOPIC_OR_PARTITION.
// * Requests from the controller are applied one at a time in arrival order.
// * Authorization: ClusterAction on the cluster, else CLUSTER_AUTHORIZATION_FAILED (Kafka). Then admitted
//   only from the active controller (the control plane's network facet, broker/control/network-control.ts):
//   controller id and epoch confirmed in ZooKeeper, the broker epoch exactly this broker's registration;
//   a broker without ZooKeeper does not serve this API from the network at all (not in its API table).
// Version notes:
// * v0-1: partitions listed with their topic name (ungrouped). v2+: grouped by topic, broker epoch.
//   v3+: adding/removing replicas. v4+: flexible. v5+: topic ids and type; the answer is by topic id.
//   v6+: leader recovery state. v7: isKRaftController (ignored: the controller is ZooKeeper-mode).
import { ErrorCode } from '../../domain/errors.js'
import * as LeaderAndIsr from '../../protocol/messages/04-leader-and-isr.gen.js'
import { ZERO_UUID } from '../../protocol/primitives/types.js'
import { mayActAsBroker } from './common/cluster-action.js'
import { defineHandler } from './common/handler.js'

export const leaderAndIsrHandler = defineHandler<LeaderAndIsr.LeaderAndIsrRequest, LeaderAndIsr.LeaderAndIsrResponse>({
  api: LeaderAndIsr.LeaderAndIsrApi,
  minVersion: 0,
  maxVersion: 7,
  decodeRequest: LeaderAndIsr.decodeLeaderAndIsrRequest,
  encodeResponse: LeaderAndIsr.encodeLeaderAndIsrResponse,
  authorizes: true,
  async handle(req, ctx) {
    if (!mayActAsBroker(ctx)) return LeaderAndIsr.createLeaderAndIsrResponse({ errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED })
    const request = ctx.apiVersion < 2 ? grouped(req) : req
    const answer = await ctx.control.leaderAndIsr(request)
    if (ctx.apiVersion < 5) {
      return LeaderAndIsr.createLeaderAndIsrResponse({
        errorCode: answer.errorCode,
        partitionErrors: answer.partitionErrors.map((e) => LeaderAndIsr.createLeaderAndIsrPartitionError({ topicName: e.topic, partitionIndex: e.partition, errorCode: e.errorCode })),
      })
    }
    const ids = new Map(request.topicStates.map((t) => [t.topicName, t.topicId]))
    const byTopic = new Map<string, LeaderAndIsr.LeaderAndIsrTopicError>()
    for (const e of answer.partitionErrors) {
      let topic = byTopic.get(e.topic)
      if (topic === undefined) byTopic.set(e.topic, (topic = LeaderAndIsr.createLeaderAndIsrTopicError({ topicId: ids.get(e.topic) ?? ZERO_UUID, partitionErrors: [] })))
      topic.partitionErrors.push(LeaderAndIsr.createLeaderAndIsrPartitionError({ partitionIndex: e.partition, errorCode: e.errorCode }))
    }
    return LeaderAndIsr.createLeaderAndIsrResponse({ errorCode: answer.errorCode === ErrorCode.NONE ? ErrorCode.NONE : answer.errorCode, topics: [...byTopic.values()] })
  },
})

/** v0-1 partitions (each naming its topic) regrouped by topic, the shape of v2+. */
function grouped(req: LeaderAndIsr.LeaderAndIsrRequest): LeaderAndIsr.LeaderAndIsrRequest {
  const byTopic = new Map<string, LeaderAndIsr.LeaderAndIsrPartitionState[]>()
  for (const p of req.ungroupedPartitionStates) {
    let list = byTopic.get(p.topicName)
    if (list === undefined) byTopic.set(p.topicName, (list = []))
    list.push(p)
  }
  return { ...req, topicStates: [...byTopic].map(([topicName, partitionStates]) => LeaderAndIsr.createLeaderAndIsrTopicState({ topicName, partitionStates })) }
}
